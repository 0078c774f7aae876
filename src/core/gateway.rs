//! The gateway core: receive, acknowledge and change visibility, dialect-neutral.
//!
//! It resolves queues through the registry, seals and opens receipt handles, keeps the delivery
//! ledger honest, and makes one batched backend call per queue. Dialects call only this.

use crate::core::access::{Action, Caller, Principal};
use crate::core::attributes;
use crate::core::backend::{Backend, BackendError};
use crate::core::clock::Clock;
use crate::core::handle::{HandleClaims, Keyring, SealedHandle};
use crate::core::ledger::{DeliveryLedger, Standing, UnknownDeliveries};
use crate::core::message_rules;
use crate::core::model::{
    BackendMessage, BackendReceive, DeadLetterInfo, Delivery, EntryError, EntryOutcome,
    HandleOutcome, OutgoingMessage, QueueSettings, QueueStats, RedriveTask, ResolvedQueue,
    SentMessage,
};
use crate::core::operation::Operation;
use crate::core::registry::QueueRegistry;
use crate::core::{ErrorKind, GatewayError};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How often a receive that waits out an over-limit queue looks again.
const OVER_LIMIT_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// How long a receive's answer is kept for a retry with the same attempt id (as SQS promises).
pub const ATTEMPT_WINDOW: std::time::Duration = std::time::Duration::from_secs(300);

/// A delivery stays in flight at most this long after its receive, whatever extensions ask for.
pub const MAX_IN_FLIGHT: ChronoDuration = ChronoDuration::hours(12);

/// The reason recorded on dead-lettered messages: SQS moves a message only after too many receives.
pub const DEAD_LETTER_REASON: &str = "maxReceiveCountExceeded";

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
}

/// The core service shared by every dialect.
pub struct Gateway {
    backend: Arc<dyn Backend>,
    registry: QueueRegistry,
    keyring: Keyring,
    ledger: DeliveryLedger,
    unknown_deliveries: UnknownDeliveries,
    /// Handles given for receives with an attempt id, by backend delivery: a retried attempt that
    /// gets the same deliveries back from a backend that replays itself gets the same handles.
    replays: moka::sync::Cache<(String, String), (u64, DateTime<Utc>, SealedHandle)>,
    /// The answers given to receives with an attempt id, by (queue, attempt id, caller): a retry
    /// within [`ATTEMPT_WINDOW`] gets the same messages and handles again, on any queue and any
    /// backend.
    attempts: moka::sync::Cache<AttemptKey, Arc<Vec<Attempted>>>,
    clock: Arc<dyn Clock>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("registry", &self.registry)
            .field("ledger", &self.ledger)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Assembles the core. `shutdown` ends waiting long polls with an empty answer.
    pub fn new(
        backend: Arc<dyn Backend>,
        registry: QueueRegistry,
        keyring: Keyring,
        ledger: DeliveryLedger,
        unknown_deliveries: UnknownDeliveries,
        clock: Arc<dyn Clock>,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            backend,
            registry,
            keyring,
            ledger,
            unknown_deliveries,
            replays: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ATTEMPT_WINDOW)
                .build(),
            attempts: moka::sync::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ATTEMPT_WINDOW)
                .build(),
            clock,
            shutdown,
            tasks: TaskTracker::new(),
        }
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
        caller.authorize(operation.action(), queue)
    }

    /// Resolves all configured queues once (at start), logging the ones the backend lacks.
    pub async fn warm_up(&self) {
        self.registry.warm_up().await;
    }

    /// The backend queue behind `queue`, which must exist.
    pub async fn resolve_queue(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<Arc<ResolvedQueue>, GatewayError> {
        self.admit(caller, Operation::ResolveQueue, queue)?;
        self.registry.get(queue).await
    }

    /// Gateway names of the queues starting with `prefix` that the caller may inspect.
    pub async fn list_queues(
        &self,
        caller: &Caller,
        prefix: &str,
    ) -> Result<Vec<String>, GatewayError> {
        Operation::ListQueues.record();
        let names = self.registry.names(prefix).await?;
        Ok(names
            .into_iter()
            .filter(|name| caller.may(Action::Inspect, name))
            .collect())
    }

    /// Whether the backend answers; for readiness.
    pub async fn ping(&self) -> Result<(), GatewayError> {
        self.backend.ping().await.map_err(GatewayError::from)
    }

    /// Sends messages to the gateway queue `queue`; one result per message, in order.
    pub async fn send(
        &self,
        caller: &Caller,
        queue: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, GatewayError> {
        self.admit(caller, Operation::Send, queue)?;
        let resolved = self.registry.get(queue).await?;
        // SQS's content rules, whatever the backend (LocalStack does not enforce them all), and the
        // queue's size limit counted on the attributes as sent (however they are stored).
        let max_bytes = resolved.attributes.max_message_bytes as usize;
        let checks: Vec<Result<(), EntryError>> = messages
            .iter()
            .map(|message| {
                message_rules::check_message(message)?;
                let size = message_rules::size(&message.body, &message.attributes);
                if size > max_bytes {
                    return Err(EntryError::invalid(format!(
                        "the message is {size} bytes, over the queue's maximum of {max_bytes}"
                    )));
                }
                Ok(())
            })
            .collect();
        let packing = messages
            .iter()
            .any(|message| message.attributes.len() > attributes::BACKEND_MAX);
        if checks.iter().all(Result::is_ok) && !packing {
            let answer = self.backend.send_batch(&resolved.url, messages).await;
            return self.settle(queue, answer).await;
        }
        let valid: Vec<OutgoingMessage> = messages
            .iter()
            .zip(&checks)
            .filter(|(_, check)| check.is_ok())
            .map(|(message, _)| OutgoingMessage {
                attributes: attributes::pack(&message.attributes),
                ..message.clone()
            })
            .collect();
        let mut sent = if valid.is_empty() {
            Vec::new()
        } else {
            let answer = self.backend.send_batch(&resolved.url, &valid).await;
            self.settle(queue, answer).await?
        }
        .into_iter();
        checks
            .into_iter()
            .map(|check| match check {
                Err(refused) => Ok(Err(refused)),
                Ok(()) => sent
                    .next()
                    .ok_or_else(|| GatewayError::internal("the backend answered fewer entries")),
            })
            .collect()
    }

    /// The queue's settings and message counts.
    pub async fn queue_stats(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<(Arc<ResolvedQueue>, QueueStats), GatewayError> {
        self.admit(caller, Operation::QueueStats, queue)?;
        let resolved = self.registry.get(queue).await?;
        let answer = self.backend.stats(&resolved.url).await;
        let stats = self.settle(queue, answer).await?;
        Ok((resolved, stats))
    }

    /// Deletes every message of the queue; every handle of it becomes stale.
    pub async fn purge(&self, caller: &Caller, queue: &str) -> Result<(), GatewayError> {
        self.admit(caller, Operation::Purge, queue)?;
        let resolved = self.registry.get(queue).await?;
        let answer = self.backend.purge(&resolved.url).await;
        self.settle(queue, answer).await?;
        // Every handle of the queue is stale now, whatever the backend does with old receipts.
        self.ledger.end_queue(queue);
        Ok(())
    }

    /// Creates a queue in the backend (or finds the existing one) under the gateway name `name`.
    pub async fn create_queue(
        &self,
        caller: &Caller,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<Arc<ResolvedQueue>, GatewayError> {
        Operation::CreateQueue.record();
        caller.authorize(Action::ManageQueues, name)?;
        let locator = self
            .registry
            .locator_for_new(name)
            .ok_or_else(|| GatewayError::permission_denied("queue management is off"))?;
        self.backend
            .create_queue(&locator, settings)
            .await
            .map_err(GatewayError::from)?;
        self.registry.invalidate(name).await;
        self.registry.get(name).await
    }

    /// Deletes the queue and its messages.
    pub async fn delete_queue(&self, caller: &Caller, name: &str) -> Result<(), GatewayError> {
        self.admit(caller, Operation::DeleteQueue, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self.backend.delete_queue(&resolved.url).await;
        self.registry.invalidate(name).await;
        self.settle(name, answer).await
    }

    /// Changes the settings `changes` gives.
    pub async fn set_queue_settings(
        &self,
        caller: &Caller,
        name: &str,
        changes: &QueueSettings,
    ) -> Result<(), GatewayError> {
        self.admit(caller, Operation::SetQueueSettings, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self
            .backend
            .set_queue_settings(&resolved.url, changes)
            .await;
        self.registry.invalidate(name).await;
        self.settle(name, answer).await
    }

    /// Adds the `add` tags and removes the `remove` keys.
    pub async fn change_tags(
        &self,
        caller: &Caller,
        name: &str,
        add: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<(), GatewayError> {
        self.admit(caller, Operation::Tag, name)?;
        let resolved = self.registry.get(name).await?;
        if !add.is_empty() {
            let answer = self.backend.tag_queue(&resolved.url, add).await;
            self.settle(name, answer).await?;
        }
        if !remove.is_empty() {
            let answer = self.backend.untag_queue(&resolved.url, remove).await;
            self.settle(name, answer).await?;
        }
        Ok(())
    }

    /// The queue's tags.
    pub async fn list_tags(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<BTreeMap<String, String>, GatewayError> {
        self.admit(caller, Operation::ListTags, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self.backend.list_queue_tags(&resolved.url).await;
        self.settle(name, answer).await
    }

    /// Gateway names of the queues whose redrive policy targets `name` (those the caller may
    /// inspect).
    pub async fn dead_letter_source_queues(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Vec<String>, GatewayError> {
        self.admit(caller, Operation::DeadLetterSources, name)?;
        let resolved = self.registry.get(name).await?;
        let sources = match resolved.attributes.arn.as_deref() {
            Some(arn) => self.registry.dead_letter_sources(arn).await,
            None => Vec::new(),
        };
        Ok(sources
            .into_iter()
            .filter(|source| caller.may(Action::Inspect, source))
            .collect())
    }

    /// The gateway queue whose backend ARN is `arn` (clients name queues by ARN in redrives).
    pub async fn queue_named_by_arn(&self, arn: &str) -> Result<String, GatewayError> {
        self.registry.name_of_arn(arn).await.ok_or_else(|| {
            GatewayError::new(
                ErrorKind::ResourceNotFound,
                "no queue of this gateway has this ARN",
            )
        })
    }

    /// Starts moving the messages of the dead-letter queue `source` to `destination`, or each
    /// back to the queue it came from; answers the task's handle (the gateway's: it names the
    /// source queue, so only callers with redrive there can cancel it).
    pub async fn start_redrive(
        &self,
        caller: &Caller,
        source: &str,
        destination: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, GatewayError> {
        self.admit(caller, Operation::Redrive, source)?;
        if let Some(destination) = destination {
            self.allowed(caller, Operation::Redrive, destination)?;
        }
        let source_arn = self.arn_of(source).await?;
        let destination_arn = match destination {
            Some(destination) => Some(self.arn_of(destination).await?),
            None => None,
        };
        let answer = self
            .backend
            .start_redrive(&source_arn, destination_arn.as_deref(), max_per_second)
            .await;
        let handle = self.settle(source, answer).await?;
        Ok(redrive_handle::wrap(source, &handle))
    }

    /// The latest redrive tasks of the dead-letter queue `source`, newest first, at most `max`.
    pub async fn list_redrives(
        &self,
        caller: &Caller,
        source: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, GatewayError> {
        self.admit(caller, Operation::Redrive, source)?;
        let source_arn = self.arn_of(source).await?;
        let answer = self.backend.list_redrives(&source_arn, max).await;
        let tasks = self.settle(source, answer).await?;
        Ok(tasks
            .into_iter()
            .map(|task| RedriveTask {
                handle: task
                    .handle
                    .as_deref()
                    .map(|handle| redrive_handle::wrap(source, handle)),
                ..task
            })
            .collect())
    }

    /// Stops a running redrive task by the handle the gateway gave; answers how many messages it
    /// had moved.
    pub async fn cancel_redrive(&self, caller: &Caller, handle: &str) -> Result<u64, GatewayError> {
        Operation::Redrive.record();
        let not_running = || {
            GatewayError::new(
                ErrorKind::ResourceNotFound,
                "no running message move task has this handle",
            )
        };
        let (source, backend_handle) = redrive_handle::unwrap(handle).ok_or_else(not_running)?;
        self.allowed(caller, Operation::Redrive, &source)?;
        // The backend's handle must be one of this queue's running tasks: a handle that names a
        // queue the caller may redrive cannot carry another queue's task.
        let source_arn = self.arn_of(&source).await?;
        let answer = self.backend.list_redrives(&source_arn, 10).await;
        let running = self.settle(&source, answer).await?;
        if !running
            .iter()
            .any(|task| task.handle.as_deref() == Some(backend_handle.as_str()))
        {
            return Err(not_running());
        }
        let answer = self.backend.cancel_redrive(&backend_handle).await;
        self.settle(&source, answer).await
    }

    async fn arn_of(&self, queue: &str) -> Result<String, GatewayError> {
        self.registry
            .get(queue)
            .await?
            .attributes
            .arn
            .clone()
            .ok_or_else(|| {
                GatewayError::new(
                    ErrorKind::Unsupported,
                    "the backend gives this queue no ARN, which redrives need",
                )
            })
    }

    /// Completes when shutdown has begun.
    pub async fn shutdown_started(&self) {
        self.shutdown.cancelled().await;
    }

    /// Tells the backend the gateway is stopping, so its waiting long polls can end.
    pub fn shutting_down(&self) {
        self.backend.shutting_down();
    }

    /// Waits until background work (releasing abandoned receives) has finished.
    pub async fn drain(&self) {
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Receives messages from the gateway queue `queue`.
    ///
    /// The backend call, the ledger records and the sealing run as one task: if nobody waits for its
    /// answer any more (the client went away, or shutdown answered it empty), the messages it got are
    /// released at once instead of staying hidden for their visibility timeout.
    pub async fn receive(
        self: &Arc<Self>,
        caller: &Caller,
        queue: &str,
        options: ReceiveOptions,
    ) -> Result<Vec<Delivery>, GatewayError> {
        self.admit(caller, Operation::Receive, queue)?;
        if self.shutdown.is_cancelled() {
            return Ok(Vec::new());
        }
        let resolved = self.registry.get(queue).await?;
        let attempt = options
            .attempt_id
            .as_ref()
            .map(|id| (queue.to_owned(), id.clone(), caller.principal().clone()));
        if let Some(key) = &attempt
            && let Some(answered) = self.attempts.get(key)
        {
            let visibility = options
                .visibility_timeout_seconds
                .unwrap_or(resolved.attributes.visibility_timeout_seconds);
            let replayed = self.replay(queue, &resolved, &answered, visibility).await?;
            if !replayed.is_empty() {
                return Ok(replayed);
            }
            // Nothing of that answer is still the caller's: this is a new receive.
            self.attempts.invalidate(key);
        }
        let request = BackendReceive {
            max_messages: options.max_messages,
            wait_seconds: options
                .wait_seconds
                .unwrap_or(resolved.attributes.receive_wait_seconds),
            visibility_timeout_seconds: options
                .visibility_timeout_seconds
                .unwrap_or(resolved.attributes.visibility_timeout_seconds),
            attempt_id: options.attempt_id,
        };

        let (answer, answered) = oneshot::channel();
        let gateway = Arc::clone(self);
        let queue = queue.to_owned();
        let wait_out_over_limit = options.wait_out_over_limit;
        self.tasks.spawn(async move {
            let result = gateway
                .receive_and_seal(&queue, &resolved, &request, wait_out_over_limit)
                .await;
            if let (Some(key), Ok((deliveries, attempted))) = (attempt, &result)
                && !deliveries.is_empty()
            {
                // Kept even when nobody waits for the answer: the retry gets it.
                gateway.attempts.insert(key, Arc::new(attempted.clone()));
            }
            let result = result.map(|(deliveries, _)| deliveries);
            if let Err(Ok(abandoned)) = answer.send(result) {
                // With an attempt id the client retries to get these same deliveries back.
                if request.attempt_id.is_none() {
                    release_abandoned(gateway.backend.as_ref(), &resolved.url, abandoned).await;
                }
            }
        });
        tokio::select! {
            biased;
            result = answered => result.map_err(|_| GatewayError::internal("receive task ended without an answer"))?,
            () = self.shutdown.cancelled() => Ok(Vec::new()),
        }
    }

    /// Receives from the backend and seals a handle per delivery; with an attempt id, also what a
    /// retry needs to give the same answer.
    async fn receive_and_seal(
        &self,
        queue: &str,
        resolved: &ResolvedQueue,
        request: &BackendReceive,
        wait_out_over_limit: bool,
    ) -> Result<(Vec<Delivery>, Vec<Attempted>), GatewayError> {
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_secs(request.wait_seconds.into());
        let (received_at, answer) = loop {
            // Taken before the backend call, so our 12-hour mark is never later than the backend's.
            let received_at = self.clock.now();
            let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
            // Whole seconds, rounded up: the first look waits exactly the requested time.
            let seconds = rest.as_secs() + u64::from(rest.subsec_nanos() > 0);
            let attempt = BackendReceive {
                wait_seconds: u32::try_from(seconds).unwrap_or(request.wait_seconds),
                ..request.clone()
            };
            match self.backend.receive(&resolved.url, &attempt).await {
                Err(BackendError::OverLimit) if wait_out_over_limit => {
                    if rest.is_zero() {
                        tracing::warn!(queue, "too many messages in flight; answering none");
                        return Ok((Vec::new(), Vec::new()));
                    }
                    // Room frees when deliveries end; look again shortly, within the wait.
                    tokio::select! {
                        () = tokio::time::sleep(rest.min(OVER_LIMIT_RETRY)) => {}
                        () = self.shutdown.cancelled() => return Ok((Vec::new(), Vec::new())),
                    }
                }
                answer => break (received_at, answer),
            }
        };
        let messages = self.settle(queue, answer).await?;
        let dead_letter_source = self.dead_letter_source(resolved, &messages).await;
        let mut deliveries = Vec::with_capacity(messages.len());
        let mut attempted = Vec::new();
        for mut message in messages {
            // As the client sent them, however the backend holds them.
            message.attributes = attributes::unpack(message.attributes);
            let replay_key = (queue.to_owned(), message.backend_handle.clone());
            let replayed = request
                .attempt_id
                .as_ref()
                .and_then(|_| self.replays.get(&replay_key))
                .filter(|(delivery_id, _, _)| {
                    self.ledger
                        .standing(queue, &message.message_id, *delivery_id)
                        == Standing::Current
                });
            let (receipt_handle, delivery_id, first_received_at) = match replayed {
                Some((delivery_id, at, handle)) => (handle, delivery_id, at),
                None => {
                    let delivery_id = rand::random::<u64>();
                    self.ledger.record(queue, &message.message_id, delivery_id);
                    let handle = self.keyring.seal(&HandleClaims {
                        queue: queue.to_owned(),
                        message_id: message.message_id.clone(),
                        backend_handle: message.backend_handle.clone(),
                        delivery: message.receive_count,
                        received_at,
                        delivery_id,
                    });
                    if request.attempt_id.is_some() {
                        self.replays
                            .insert(replay_key, (delivery_id, received_at, handle.clone()));
                    }
                    (handle, delivery_id, received_at)
                }
            };
            let dead_letter = dead_letter_source.info(&message);
            let delivery = Delivery {
                message,
                receipt_handle,
                dead_letter,
                visible_at: received_at
                    + ChronoDuration::seconds(i64::from(request.visibility_timeout_seconds)),
            };
            if request.attempt_id.is_some() {
                attempted.push(Attempted {
                    delivery: delivery.clone(),
                    delivery_id,
                    received_at: first_received_at,
                });
            }
            deliveries.push(delivery);
        }
        Ok((deliveries, attempted))
    }

    /// The answer of an earlier receive with the same attempt id, again: the deliveries that are
    /// still the caller's (the ledger's current ones) are hidden again for `visibility` seconds
    /// from now (as a retry within the window resets the timeout on SQS) and answered with the
    /// same handles. Deliveries acknowledged, received by someone else, or visible again by now
    /// are left out.
    async fn replay(
        &self,
        queue: &str,
        resolved: &ResolvedQueue,
        answered: &[Attempted],
        visibility: u32,
    ) -> Result<Vec<Delivery>, GatewayError> {
        let now = self.clock.now();
        let current: Vec<&Attempted> = answered
            .iter()
            .filter(|attempted| {
                self.ledger.standing(
                    queue,
                    &attempted.delivery.message.message_id,
                    attempted.delivery_id,
                ) == Standing::Current
            })
            .collect();
        if current.is_empty() {
            return Ok(Vec::new());
        }
        let entries: Vec<(&str, u32)> = current
            .iter()
            .map(|attempted| {
                (
                    attempted.delivery.message.backend_handle.as_str(),
                    clamp_visibility(visibility, attempted.received_at, now),
                )
            })
            .collect();
        let answer = self
            .backend
            .change_visibility_batch(&resolved.url, &entries)
            .await;
        let outcomes = self.settle(queue, answer).await?;
        Ok(current
            .into_iter()
            .zip(outcomes)
            .filter(|(_, outcome)| *outcome == EntryOutcome::Ok)
            .map(|(attempted, _)| Delivery {
                visible_at: now
                    + ChronoDuration::seconds(i64::from(clamp_visibility(
                        visibility,
                        attempted.received_at,
                        now,
                    ))),
                ..attempted.delivery.clone()
            })
            .collect())
    }

    /// A handle's claims, if it is one of this gateway's, unaltered, of the expected queue (if
    /// one is), and of a queue where the caller may do `action` (else it is as good as invalid:
    /// it acts nowhere, and says nothing of the queue it names).
    fn open_handle(
        &self,
        caller: &Caller,
        action: Action,
        handle: &str,
        expected_queue: Option<&str>,
    ) -> Option<HandleClaims> {
        let claims = self.keyring.open(handle).ok()?;
        let expected = expected_queue.is_none_or(|queue| claims.queue == queue);
        (expected && caller.may(action, &claims.queue)).then_some(claims)
    }

    /// Checks the queue a handle request addresses, if it addresses one, as a whole.
    fn admit_handles(
        &self,
        caller: &Caller,
        operation: Operation,
        expected_queue: Option<&str>,
    ) -> Result<(), GatewayError> {
        match expected_queue {
            Some(queue) => self.admit(caller, operation, queue),
            None => {
                operation.record();
                Ok(())
            }
        }
    }

    /// How many of these handles are not receipt handles of this gateway (or were altered).
    pub fn count_invalid_handles<'h>(&self, handles: impl Iterator<Item = &'h str>) -> usize {
        handles
            .filter(|handle| self.keyring.open(handle).is_err())
            .count()
    }

    /// Acknowledges (deletes) deliveries by their sealed handles; one outcome per handle, in order.
    ///
    /// Once claimed in the ledger, the backend call and its settlement run as a task of their own,
    /// so a client that goes away mid-request cannot leave a handle half-acknowledged.
    ///
    /// With `expected_queue` (a dialect that addresses a queue), a handle of another queue is
    /// `Invalid` and acts nowhere.
    pub async fn acknowledge(
        self: &Arc<Self>,
        caller: &Caller,
        handles: &[String],
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        self.admit_handles(caller, Operation::Acknowledge, expected_queue)?;
        let mut outcomes = vec![HandleOutcome::Stale; handles.len()];
        let mut by_queue: BTreeMap<String, Vec<(usize, HandleClaims)>> = BTreeMap::new();
        for (index, handle) in handles.iter().enumerate() {
            let Some(claims) =
                self.open_handle(caller, Action::Acknowledge, handle, expected_queue)
            else {
                outcomes[index] = HandleOutcome::Invalid;
                continue;
            };
            if self.registry.contains(&claims.queue)
                && self.may_act(self.ledger.begin_ack(
                    &claims.queue,
                    &claims.message_id,
                    claims.delivery_id,
                ))
            {
                by_queue
                    .entry(claims.queue.clone())
                    .or_default()
                    .push((index, claims));
            }
        }
        let gateway = Arc::clone(self);
        self.tasks
            .spawn(async move { gateway.apply_acks(by_queue, outcomes).await })
            .await
            .map_err(GatewayError::internal)?
    }

    async fn apply_acks(
        &self,
        by_queue: BTreeMap<String, Vec<(usize, HandleClaims)>>,
        mut outcomes: Vec<HandleOutcome>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut first_error = None;
        for (queue, entries) in by_queue {
            let backend_handles: Vec<&str> = entries
                .iter()
                .map(|(_, c)| c.backend_handle.as_str())
                .collect();
            let result = match self.registry.get(&queue).await {
                Ok(resolved) => {
                    let answer = self
                        .backend
                        .delete_batch(&resolved.url, &backend_handles)
                        .await;
                    self.settle(&queue, answer).await
                }
                Err(error) => Err(error),
            };
            match result {
                Ok(results) => {
                    for ((index, claims), result) in entries.iter().zip(results) {
                        match result {
                            EntryOutcome::Ok => {
                                self.finish_ack(claims);
                                outcomes[*index] = HandleOutcome::Ok;
                            }
                            EntryOutcome::Gone | EntryOutcome::NotInFlight => {
                                self.finish_ack(claims)
                            }
                            EntryOutcome::Failed(detail) => {
                                self.abort_ack(claims);
                                first_error.get_or_insert_with(|| entry_failure(detail));
                            }
                        }
                    }
                }
                Err(error) if error.kind == ErrorKind::QueueNotFound => {
                    entries
                        .iter()
                        .for_each(|(_, claims)| self.finish_ack(claims));
                }
                Err(error) => {
                    entries
                        .iter()
                        .for_each(|(_, claims)| self.abort_ack(claims));
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(outcomes),
        }
    }

    /// Sets how long deliveries stay in flight, counted from now; one outcome per entry, in order.
    ///
    /// An extension past 12 hours from the delivery's receive ends at that mark.
    /// With `expected_queue`, as for [`Gateway::acknowledge`].
    pub async fn change_visibility(
        self: &Arc<Self>,
        caller: &Caller,
        entries: &[(String, u32)],
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        self.admit_handles(caller, Operation::ChangeVisibility, expected_queue)?;
        let now = self.clock.now();
        let mut outcomes = vec![HandleOutcome::Stale; entries.len()];
        let mut by_queue: BTreeMap<String, Vec<(usize, HandleClaims, u32)>> = BTreeMap::new();
        for (index, (handle, requested)) in entries.iter().enumerate() {
            let Some(claims) =
                self.open_handle(caller, Action::ChangeVisibility, handle, expected_queue)
            else {
                outcomes[index] = HandleOutcome::Invalid;
                continue;
            };
            if self.registry.contains(&claims.queue)
                && self.may_act(self.ledger.standing(
                    &claims.queue,
                    &claims.message_id,
                    claims.delivery_id,
                ))
            {
                let timeout = clamp_visibility(*requested, claims.received_at, now);
                by_queue
                    .entry(claims.queue.clone())
                    .or_default()
                    .push((index, claims, timeout));
            }
        }
        let gateway = Arc::clone(self);
        self.tasks
            .spawn(async move { gateway.apply_visibility(by_queue, outcomes).await })
            .await
            .map_err(GatewayError::internal)?
    }

    async fn apply_visibility(
        &self,
        by_queue: BTreeMap<String, Vec<(usize, HandleClaims, u32)>>,
        mut outcomes: Vec<HandleOutcome>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut first_error = None;
        for (queue, entries) in by_queue {
            let backend_entries: Vec<(&str, u32)> = entries
                .iter()
                .map(|(_, claims, timeout)| (claims.backend_handle.as_str(), *timeout))
                .collect();
            let result = match self.registry.get(&queue).await {
                Ok(resolved) => {
                    let answer = self
                        .backend
                        .change_visibility_batch(&resolved.url, &backend_entries)
                        .await;
                    self.settle(&queue, answer).await
                }
                Err(error) => Err(error),
            };
            match result {
                Ok(results) => {
                    for ((index, claims, timeout), result) in entries.iter().zip(results) {
                        outcomes[*index] = match result {
                            EntryOutcome::Ok => HandleOutcome::Ok,
                            // Already visible: a release asked for exactly that; an extension
                            // cannot apply, but the handle may still acknowledge.
                            EntryOutcome::NotInFlight if *timeout == 0 => HandleOutcome::Ok,
                            EntryOutcome::NotInFlight => HandleOutcome::Stale,
                            EntryOutcome::Gone => {
                                self.ledger.end(
                                    &claims.queue,
                                    &claims.message_id,
                                    claims.delivery_id,
                                );
                                HandleOutcome::Stale
                            }
                            EntryOutcome::Failed(detail) => {
                                first_error.get_or_insert_with(|| entry_failure(detail));
                                HandleOutcome::Stale
                            }
                        };
                    }
                }
                Err(error) if error.kind == ErrorKind::QueueNotFound => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(outcomes),
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

    /// Whether a handle with this standing may act on the backend.
    fn may_act(&self, standing: Standing) -> bool {
        match standing {
            Standing::Current => true,
            Standing::Stale => false,
            Standing::Unknown => self.unknown_deliveries == UnknownDeliveries::PassThrough,
        }
    }

    fn finish_ack(&self, claims: &HandleClaims) {
        self.ledger
            .end(&claims.queue, &claims.message_id, claims.delivery_id);
    }

    fn abort_ack(&self, claims: &HandleClaims) {
        self.ledger
            .abort_ack(&claims.queue, &claims.message_id, claims.delivery_id);
    }

    /// What this receive needs to name the source of dead-lettered messages, looked up once.
    async fn dead_letter_source(
        &self,
        resolved: &ResolvedQueue,
        messages: &[BackendMessage],
    ) -> DeadLetterSource {
        let mut source = DeadLetterSource::default();
        if messages.is_empty() {
            return source;
        }
        for arn in messages
            .iter()
            .filter_map(|m| m.dead_letter_source_arn.as_ref())
        {
            if !source.names_by_arn.contains_key(arn) {
                let name = match self.registry.name_of_arn(arn).await {
                    Some(name) => name,
                    None => arn.rsplit(':').next().unwrap_or(arn).to_owned(),
                };
                source.names_by_arn.insert(arn.clone(), name);
            }
        }
        if messages.iter().any(|m| m.dead_letter_source_arn.is_none())
            && let Some(arn) = resolved.attributes.arn.as_deref()
        {
            source.by_redrive = Some(self.registry.dead_letter_sources(arn).await);
        }
        source
    }
}

/// The redrive task handles the gateway hands out: the source queue's gateway name beside the
/// backend's own handle, as base64url of a small JSON object.
mod redrive_handle {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Handle {
        queue: String,
        task: String,
    }

    pub(super) fn wrap(queue: &str, task: &str) -> String {
        let handle = Handle {
            queue: queue.to_owned(),
            task: task.to_owned(),
        };
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&handle).unwrap_or_default())
    }

    pub(super) fn unwrap(handle: &str) -> Option<(String, String)> {
        let bytes = URL_SAFE_NO_PAD.decode(handle).ok()?;
        let handle: Handle = serde_json::from_slice(&bytes).ok()?;
        Some((handle.queue, handle.task))
    }
}

/// Which receive an answer belongs to: queue, attempt id, caller.
type AttemptKey = (String, String, Principal);

/// One delivery of an answer kept for a retry of its attempt.
#[derive(Debug, Clone)]
struct Attempted {
    delivery: Delivery,
    /// The ledger's id of the delivery: a retry answers it only while it is still current.
    delivery_id: u64,
    /// When it was received, for the 12-hour mark.
    received_at: DateTime<Utc>,
}

/// The sources of dead-lettered messages of one receive.
#[derive(Debug, Default)]
struct DeadLetterSource {
    /// Source ARN (as the backend records it on a message) -> gateway or backend queue name.
    names_by_arn: BTreeMap<String, String>,
    /// Configured queues whose redrive policy targets the receiving queue.
    by_redrive: Option<Vec<String>>,
}

impl DeadLetterSource {
    fn info(&self, message: &BackendMessage) -> Option<DeadLetterInfo> {
        if let Some(arn) = &message.dead_letter_source_arn {
            return Some(DeadLetterInfo {
                source_queue: self.names_by_arn.get(arn).cloned(),
                reason: DEAD_LETTER_REASON,
            });
        }
        match self.by_redrive.as_deref()? {
            [] => None,
            [only] => Some(DeadLetterInfo {
                source_queue: Some(only.clone()),
                reason: DEAD_LETTER_REASON,
            }),
            _ => Some(DeadLetterInfo {
                source_queue: None,
                reason: DEAD_LETTER_REASON,
            }),
        }
    }
}

/// A per-entry backend failure other than "gone": transient as far as the client can tell.
fn entry_failure(detail: String) -> GatewayError {
    GatewayError::unavailable(crate::core::backend::DEFAULT_RETRY_AFTER).with_source(detail)
}

/// The visibility timeout to apply now so the delivery ends no later than 12 hours after its receive.
pub fn clamp_visibility(requested: u32, received_at: DateTime<Utc>, now: DateTime<Utc>) -> u32 {
    let remaining = (received_at + MAX_IN_FLIGHT - now).num_seconds().max(0);
    requested.min(u32::try_from(remaining).unwrap_or(u32::MAX))
}

async fn release_abandoned(backend: &dyn Backend, url: &str, deliveries: Vec<Delivery>) {
    if deliveries.is_empty() {
        return;
    }
    let messages = deliveries;
    let entries: Vec<(&str, u32)> = messages
        .iter()
        .map(|delivery| (delivery.message.backend_handle.as_str(), 0))
        .collect();
    match backend.change_visibility_batch(url, &entries).await {
        Ok(_) => tracing::info!(
            count = messages.len(),
            "released messages of an abandoned receive"
        ),
        Err(error) => tracing::warn!(
            count = messages.len(),
            %error,
            "could not release messages of an abandoned receive; they reappear after their visibility timeout"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn visibility_is_clamped_to_twelve_hours_after_the_receive() {
        let received = Utc.with_ymd_and_hms(2026, 11, 29, 8, 0, 0).unwrap();
        let at = |h: i64, m: i64, s: i64| received + ChronoDuration::seconds(h * 3600 + m * 60 + s);
        assert_eq!(clamp_visibility(120, received, at(0, 0, 0)), 120);
        assert_eq!(clamp_visibility(43_200, received, at(0, 0, 0)), 43_200);
        assert_eq!(clamp_visibility(43_200, received, at(1, 0, 0)), 39_600);
        assert_eq!(clamp_visibility(600, received, at(11, 55, 0)), 300);
        assert_eq!(clamp_visibility(600, received, at(11, 59, 59)), 1);
        // At and past the mark nothing is left: the extension ends now.
        assert_eq!(clamp_visibility(600, received, at(12, 0, 0)), 0);
        assert_eq!(clamp_visibility(600, received, at(13, 0, 0)), 0);
        // Sub-second remainders round down, never past the mark.
        assert_eq!(
            clamp_visibility(
                600,
                received,
                at(11, 59, 59) + ChronoDuration::milliseconds(500)
            ),
            0
        );
        assert_eq!(clamp_visibility(0, received, at(1, 0, 0)), 0);
    }
}
