//! The gateway core: receive, acknowledge and change visibility, dialect-neutral.
//!
//! It resolves queues through the registry, seals and opens receipt handles, keeps the delivery
//! ledger honest, and makes one batched backend call per queue. Dialects call only this.

use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::backend::{Backend, BackendError};
use crate::core::clock::Clock;
use crate::core::handle::Keyring;
use crate::core::limits::{Limits, STATE_RETRY_AFTER};
use crate::core::metrics::meters::Meters;
use crate::core::metrics::sample_history::Activity;
use crate::core::model::{Delivery, EntryError, SentMessage};
use crate::core::operation::Operation;
use crate::core::registry::QueueRegistry;
use crate::core::state::kept_seal::KeptSeal;
use crate::core::state::ledger::UnknownDeliveries;
use crate::core::state::{StateResult, StateStore};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long a receive's answer is kept for a retry with the same attempt id (as SQS promises).
pub const ATTEMPT_WINDOW: std::time::Duration = std::time::Duration::from_secs(300);

pub use sampling::{RESERVED_DEPTH_LABEL, SAMPLED_QUEUES};

/// A delivery stays in flight at most this long after its receive, whatever extensions ask for.
pub const MAX_IN_FLIGHT: ChronoDuration =
    ChronoDuration::seconds(crate::core::sqs_limits::MAX_VISIBILITY_SECONDS as i64);

/// What a client asked a receive for, already validated by its dialect.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiveOptions {
    /// 1 to 10.
    pub max_messages: u32,
    /// Long-poll seconds; `None` takes the queue's default.
    pub wait_seconds: Option<u32>,
    /// Visibility seconds; `None` takes the queue's default.
    pub visibility_timeout_seconds: Option<u32>,
    /// FIFO receive request attempt id.
    pub attempt_id: Option<String>,
    /// When the queue has as many messages in flight as it may: `false` answers `OverLimit` (as
    /// SQS does), `true` waits out the long poll, answering as soon as room frees (as ezgh does).
    pub wait_out_over_limit: bool,
    /// FIFO: at most one message of each message group in the answer (each group's first), so
    /// a group has at most one message in flight at a time.
    pub one_per_group: bool,
    /// Each fresh delivery carries its handle's claims too ([`Delivery::claims`]): for a consumer
    /// inside the gateway, which settles by them ([`OpenedHandles::claimed`]).
    pub keep_claims: bool,
}

/// The core service shared by every dialect.
pub struct Gateway {
    backend: Arc<dyn Backend>,
    registry: QueueRegistry,
    keyring: Keyring,
    /// Seals what the state store keeps of a receive.
    kept_seal: KeptSeal,
    /// The ledger, kept answers and limiter counts (shared by replicas when the store is).
    state: Arc<dyn StateStore>,
    limits: Limits,
    /// What a handle whose delivery the ledger does not know does.
    unknown_deliveries: UnknownDeliveries,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    /// Deliveries that receives took for clients that went away, for the next receive (on a
    /// backend that cannot give them back uncounted).
    handoff: handoff::Handoff,
    /// Backend receives still running whose client went away.
    abandoned_running: std::sync::atomic::AtomicUsize,
    /// How many may run before new receives look once instead of long-polling.
    abandoned_bound: usize,
    /// Sends, deliveries and repeated deliveries, per gateway queue, since start (metrics).
    activity: std::sync::Mutex<std::collections::HashMap<String, Activity>>,
    /// What operators see of it.
    meters: Meters,
    /// The queues operations named lately, and how the gauges label reserved queues.
    sampling: sampling::Sampling,
    /// How many queues' counts are read together, and each one's deadline.
    count_limits: CountLimits,
    /// The push subscriptions' statuses.
    push: crate::core::push::board::Board,
    /// Where subscriptions made at run time (and pauses) are kept, once the push adapter is
    /// plugged in.
    push_admin: std::sync::OnceLock<Arc<dyn crate::core::push::admin::SubscriptionAdmin>>,
    /// The queues whose deliveries are paused.
    pauses: crate::core::delivery_pause::Pauses,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("registry", &self.registry)
            .field("state", &"<state store>")
            .finish_non_exhaustive()
    }
}

mod aliases;
mod attempts;
mod counting;
mod dead_letter_source;
mod finishing;
mod handles;
mod handoff;
mod inspecting;
mod messages;
mod pausing;
mod push_admin;
mod queues;
mod redrive;
mod sampling;

pub use counting::{CountLimits, ROUND_SHARE};
pub use handles::{OpenedHandles, clamp_visibility};
pub use inspecting::{MOST_SCANNED, MOST_SCANNED_BYTES, MatchingPage};

impl Gateway {
    /// Assembles the core. `shutdown` ends waiting long polls with an empty answer.
    pub fn new(
        backend: Arc<dyn Backend>,
        registry: QueueRegistry,
        keyring: Keyring,
        state: Arc<dyn StateStore>,
        unknown_deliveries: UnknownDeliveries,
        clock: Arc<dyn Clock>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            backend,
            registry,
            kept_seal: KeptSeal::new(&keyring),
            keyring,
            limits: Limits::new(Arc::clone(&state), Meters::default()),
            state,
            unknown_deliveries,
            clock,
            shutdown,
            tasks: TaskTracker::new(),
            handoff: handoff::Handoff::default(),
            abandoned_running: std::sync::atomic::AtomicUsize::new(0),
            abandoned_bound: messages::MAX_ABANDONED_RUNNING,
            activity: std::sync::Mutex::default(),
            push: crate::core::push::board::Board::default(),
            push_admin: std::sync::OnceLock::new(),
            pauses: crate::core::delivery_pause::Pauses::default(),
            meters: Meters::default(),
            sampling: sampling::Sampling::default(),
            count_limits: CountLimits::default(),
        }
    }

    /// Counts what the core does in `meters` (the backend is metered where it is built).
    pub fn with_meters(mut self, meters: Meters) -> Self {
        self.limits = Limits::new(Arc::clone(&self.state), meters.clone())
            .with_quota_policy(self.limits.quota_policy());
        self.meters = meters;
        self
    }

    /// At `bound` backend receives still running for clients that went away, new receives look
    /// once instead of long-polling (`server.max_abandoned_receives`).
    pub fn with_abandoned_receive_bound(mut self, bound: usize) -> Self {
        self.abandoned_bound = bound;
        self
    }

    /// Labels each reserved queue's depth gauges by its name (`metrics.name_reserved_queues`)
    /// instead of summing them under [`RESERVED_DEPTH_LABEL`].
    pub fn with_reserved_queues_named(mut self, named: bool) -> Self {
        self.sampling.name_reserved = named;
        self
    }

    /// Daily quotas follow `policy` when the state store cannot count.
    pub fn with_quota_policy(mut self, policy: crate::core::limits::QuotaPolicy) -> Self {
        self.limits = self.limits.clone().with_quota_policy(policy);
        self
    }

    /// The push subscriptions' statuses (their runners register there).
    pub fn push_board(&self) -> &crate::core::push::board::Board {
        &self.push
    }

    /// The meters the core counts in (the server counts requests in them too).
    pub fn meters(&self) -> &Meters {
        &self.meters
    }

    /// The region of the backend's made-up queue ARNs; `None` when they are real.
    pub fn made_up_arn_region(&self) -> Option<&'static str> {
        self.backend.made_up_arn_region()
    }

    /// Whether the backend keeps SQS's 60-second rules itself.
    pub fn backend_keeps_sqs_time_rules(&self) -> bool {
        self.backend.keeps_sqs_time_rules()
    }

    /// The core's time (dialects stamp what they record with it).
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// What this process counted of `queue` since it started: messages sent, deliveries handed
    /// out, and those with a receive count above 1 (counters; metrics take differences).
    pub fn activity(&self, queue: &str) -> Activity {
        self.activity
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(queue)
            .copied()
            .unwrap_or_default()
    }

    /// Counts `happened` in for `queue`.
    fn count_activity(&self, queue: &str, happened: Activity) {
        if happened.is_empty() {
            return;
        }
        let mut activity = self
            .activity
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let counted = activity.entry(queue.to_owned()).or_default();
        *counted = counted.plus(happened);
    }

    /// Counts the deliveries of a receive of `queue`.
    fn count_deliveries(&self, queue: &str, deliveries: &[Delivery]) {
        let repeated = deliveries
            .iter()
            .filter(|delivery| delivery.message.receive_count > 1)
            .count() as u64;
        self.count_activity(
            queue,
            Activity {
                receives: deliveries.len() as u64,
                repeated,
                ..Activity::default()
            },
        );
    }

    /// Counts the messages of a send of `queue` that were sent.
    fn count_sends(&self, queue: &str, sent: &[Result<SentMessage, EntryError>]) {
        let sends = sent.iter().filter(|entry| entry.is_ok()).count() as u64;
        self.count_activity(
            queue,
            Activity {
                sends,
                ..Activity::default()
            },
        );
    }
    /// Starts `operation` on `queue` for `caller`: names it on the request's span, and checks that
    /// the queue is one the gateway knows, then that the caller may do it there. Every operation
    /// does this itself; a dialect may call it first, to refuse before it parses the rest.
    pub fn check_access(
        &self,
        caller: &Caller,
        operation: Operation,
        queue: &str,
    ) -> Result<(), GatewayError> {
        // The span gets the operation's name from the operation itself, unless it ends here.
        self.allowed(caller, operation, queue)
            .inspect_err(|_| operation.record())
    }
    fn admit(
        &self,
        caller: &Caller,
        operation: Operation,
        queue: &str,
    ) -> Result<(), GatewayError> {
        operation.record();
        self.allowed(caller, operation, queue)
    }
    /// The queue is one the gateway knows, and the caller may do `operation` there.
    fn allowed(
        &self,
        caller: &Caller,
        operation: Operation,
        queue: &str,
    ) -> Result<(), GatewayError> {
        if !self.registry.contains(queue) {
            return Err(GatewayError::queue_not_found());
        }
        caller.authorize(operation.action(), queue)?;
        self.sampling.used(queue);
        Ok(())
    }
    /// Resolves all configured queues once (at start), logging the ones the backend lacks.
    pub async fn warm_up(&self) {
        self.registry.warm_up().await;
    }
    /// Whether the backend answers; for readiness.
    pub async fn ping(&self) -> Result<(), GatewayError> {
        self.backend.ping().await.map_err(GatewayError::from)
    }
    /// Whether the state store answers; for readiness.
    pub async fn ping_state(&self) -> Result<(), GatewayError> {
        self.state
            .ping()
            .await
            .map_err(|error| GatewayError::unavailable(STATE_RETRY_AFTER).with_source(error))
    }
    /// The limits callers are held to (their counts live in the state store).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Drops state that is no longer needed and reads runtime aliases back when due; the server
    /// calls it once a minute.
    pub async fn housekeeping(&self) {
        self.state.housekeeping();
        self.registry.refresh_aliases().await;
    }

    /// Completes when shutdown has begun.
    pub async fn shutdown_started(&self) {
        self.shutdown.cancelled().await;
    }
    /// What is cancelled when shutdown starts (for tasks that hold no gateway).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
    /// Tells the backend the gateway is stopping, so its waiting long polls can end.
    pub fn shutting_down(&self) {
        self.backend.shutting_down();
    }
    /// Runs `work` beside the requests, as background work the drain waits for: it must end
    /// soon once shutdown has begun ([`Self::shutdown_started`]).
    pub fn spawn_tracked(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(work);
    }
    /// Waits until background work (giving back what abandoned receives took) has finished,
    /// then releases what is still held for a next receive.
    pub async fn drain(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.release_handed_on().await;
    }
    /// A state read or claim the request cannot go on without: when the store cannot answer,
    /// the request answers unavailable (nothing has changed yet).
    fn state_required<T>(
        &self,
        operation: &'static str,
        answer: StateResult<T>,
    ) -> Result<T, GatewayError> {
        answer.map_err(|error| {
            self.meters.state_error(operation, "refused", &error);
            GatewayError::unavailable(STATE_RETRY_AFTER).with_source(error)
        })
    }
    /// A state write the request's outcome does not depend on (the backend already acted):
    /// a failure is logged and counted, and the outcome stands.
    fn state_logged(&self, operation: &'static str, answer: StateResult<()>) {
        if let Err(error) = answer {
            self.meters.state_error(operation, "logged", &error);
        }
    }
    /// Maps a backend answer about `queue`, forgetting the cached queue when the backend says it is gone.
    async fn settle<T>(
        &self,
        queue: &str,
        result: Result<T, BackendError>,
    ) -> Result<T, GatewayError> {
        if matches!(result, Err(BackendError::QueueNotFound)) {
            self.registry.invalidate(queue).await;
        }
        result.map_err(GatewayError::from)
    }
}

/// One delivery of an answer kept for a retry of its attempt.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Attempted {
    delivery: Delivery,
    /// The ledger's id of the delivery: a retry answers it only while it is still current.
    delivery_id: u64,
    /// When it was received, for the 12-hour mark.
    received_at: DateTime<Utc>,
}
