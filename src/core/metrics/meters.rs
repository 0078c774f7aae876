//! What the gateway counts for its operators: one typed method per event, so every label value
//! comes from a closed set (dialects, operations, statuses, backend calls, scopes, queue names) and
//! never from a handle, an id or message data. The meters write to a `metrics` recorder the server
//! owns (one per service, not the process-global one, so services in one process count apart); the
//! server renders it for Prometheus.

use crate::core::backend::BackendError;
use crate::core::error::LimitScope;
use crate::core::model::{QueueStats, StoreCounts};
use metrics::{Key, Label, Metadata, Recorder};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Requests answered, by dialect, operation and status.
pub const REQUESTS: &str = "sqsgw_http_requests_total";
/// Request latency, by dialect and operation.
pub const REQUEST_SECONDS: &str = "sqsgw_http_request_duration_seconds";
/// Backend calls, by backend, call and outcome.
pub const BACKEND_CALLS: &str = "sqsgw_backend_calls_total";
/// Backend call latency, by backend and call.
pub const BACKEND_SECONDS: &str = "sqsgw_backend_call_duration_seconds";
/// Receives waiting in a long poll now.
pub const LONG_POLLS: &str = "sqsgw_long_polls_waiting";
/// Requests of the SQS endpoint, by action (as the client named it) and wire protocol.
pub const SQS_REQUESTS: &str = "sqsgw_sqs_requests_total";
/// Batch calls the sqs backend made toward SQS from coalesced requests, by call.
pub const SQS_BATCH_CALLS: &str = "sqsgw_sqs_batch_calls_total";
/// Entries those calls carried, by call (entries per call = this over the calls).
pub const SQS_BATCH_ENTRIES: &str = "sqsgw_sqs_batch_entries_total";
/// Gateway requests those calls served, by call (requests per call = this over the calls).
pub const SQS_BATCH_REQUESTS: &str = "sqsgw_sqs_batch_requests_total";
/// Shared long polls the sqs backend made toward SQS, by outcome (messages, empty, error).
pub const SQS_SHARED_POLLS: &str = "sqsgw_sqs_shared_polls_total";
/// Messages those polls brought.
pub const SQS_SHARED_POLL_MESSAGES: &str = "sqsgw_sqs_shared_poll_messages_total";
/// Receives that waited in a shared poll, by outcome (messages: a poll or a spare message
/// answered it; empty: its wait ended or its client left); waiters per poll = this over the polls.
pub const SQS_SHARED_POLL_WAITERS: &str = "sqsgw_sqs_shared_poll_waiters_total";
/// Messages a shared poll brought after their waiter left, by what became of them (held,
/// handed_on, released, lapsed).
pub const SQS_SPARE_MESSAGES: &str = "sqsgw_sqs_spare_messages_total";
/// Receives whose client went away before the answer, by what became of them.
pub const ABANDONED_RECEIVES: &str = "sqsgw_abandoned_receives_total";
/// Deliveries the ledger holds now.
pub const LEDGER_DELIVERIES: &str = "sqsgw_ledger_deliveries";
/// Deliveries the ledger dropped to stay within its size.
pub const LEDGER_EVICTIONS: &str = "sqsgw_ledger_evictions_total";
/// Calls made to a networked state store (each one round trip), since start.
pub const STATE_CALLS: &str = "sqsgw_state_store_calls_total";
/// Handles of deliveries the ledger did not know, by the policy that answered them.
pub const UNKNOWN_DELIVERIES: &str = "sqsgw_unknown_deliveries_total";
/// Handles that were not this gateway's (or altered, or of another queue), by operation.
pub const INVALID_HANDLES: &str = "sqsgw_invalid_handles_total";
/// Requests whose caller failed to authenticate, by dialect.
pub const AUTHENTICATION_FAILURES: &str = "sqsgw_authentication_failures_total";
/// Requests refused by a limit, by scope.
pub const RATE_LIMITED: &str = "sqsgw_rate_limited_total";
/// State store operations that failed, by operation and what the core did instead.
pub const STATE_ERRORS: &str = "sqsgw_state_errors_total";
/// Messages ready to receive, by queue (sampled).
pub const QUEUE_VISIBLE: &str = "sqsgw_queue_visible_messages";
/// Messages received and not yet visible again, by queue (sampled).
pub const QUEUE_IN_FLIGHT: &str = "sqsgw_queue_in_flight_messages";
/// Messages sent with a delay still running, by queue (sampled).
pub const QUEUE_DELAYED: &str = "sqsgw_queue_delayed_messages";
/// Age of the oldest message, by queue (sampled; absent where the backend does not tell).
pub const QUEUE_OLDEST_AGE: &str = "sqsgw_queue_oldest_message_age_seconds";
/// Transactions the embedded store committed (sampled; since the store was opened).
pub const STORE_COMMITS: &str = "sqsgw_store_commits_total";
/// Of them, those that synced the disk (sampled).
pub const STORE_SYNCS: &str = "sqsgw_store_syncs_total";
/// Operations' writes the commits carried (sampled): writes per sync is group commit's sharing.
pub const STORE_WRITES: &str = "sqsgw_store_writes_total";
/// Re-reads of the config file for its keys, by outcome (`applied`, `refused`).
pub const CONFIG_RELOADS: &str = "sqsgw_config_reloads_total";

/// Basaltic metrics rounds appended, since start.
pub const METRICS_ROUNDS: &str = "sqsgw_basaltic_metrics_rounds_total";
/// How long the last basaltic metrics round took to count its queues.
pub const METRICS_ROUND_SECONDS: &str = "sqsgw_basaltic_metrics_round_seconds";
/// The last basaltic metrics round's queues, by outcome (`sampled`, `gap`).
pub const METRICS_ROUND_QUEUES: &str = "sqsgw_basaltic_metrics_round_queues";

/// Push subscriptions (queue and name) with series of their own; the others share
/// [`PUSH_OTHERS_LABEL`].
pub const PUSH_LABELLED_MOST: usize = 100;
/// The `queue` and `subscription` labels of the push series beyond [`PUSH_LABELLED_MOST`] (no
/// name can be it).
pub const PUSH_OTHERS_LABEL: &str = "sqsgw_*";

/// Push deliveries, by queue, subscription and outcome.
pub const PUSH_DELIVERIES: &str = "sqsgw_push_deliveries_total";
/// How long push deliveries took, by queue and subscription.
pub const PUSH_SECONDS: &str = "sqsgw_push_delivery_duration_seconds";
/// Push deliveries being posted now, by queue and subscription.
pub const PUSH_IN_FLIGHT: &str = "sqsgw_push_in_flight";
/// Failed push attempts since the subscription's last success (its backoff state).
pub const PUSH_FAILURES_IN_A_ROW: &str = "sqsgw_push_failures_in_a_row";
/// 1 for a push subscription that is disabled (its endpoint answered 410 Gone).
pub const PUSH_DISABLED: &str = "sqsgw_push_disabled";

/// The label a request gets when it ended before naming an operation (refused at the door, a
/// token request, an unknown route).
pub const NO_OPERATION: &str = "none";

static METADATA: Metadata<'static> =
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()));

/// A request's meters: by (dialect, operation, status).
type RequestKey = (&'static str, &'static str, u16);
/// A backend call's meters: by (backend, call, outcome).
type CallKey = (&'static str, &'static str, &'static str);
/// A counter and its latency histogram.
type Pair = (metrics::Counter, metrics::Histogram);

/// The meters every request and backend call counts in, kept once registered: registering builds
/// a key (label vector, status text) and hashes it in the recorder's registry, which cost every
/// request a handful of allocations. Both maps are bounded by the label values, all static. (The
/// recorder never drops a counter or a histogram, only idle gauges, so a kept handle stays the
/// one the scrape reads.)
#[derive(Default)]
struct HotMeters {
    requests: RwLock<HashMap<RequestKey, Pair>>,
    calls: RwLock<HashMap<CallKey, Pair>>,
    sqs_actions: RwLock<HashMap<(&'static str, &'static str), metrics::Counter>>,
}

/// The gateway's meters over a recorder.
#[derive(Clone)]
pub struct Meters {
    recorder: Arc<dyn Recorder + Send + Sync>,
    long_polls: Arc<AtomicI64>,
    hot: Arc<HotMeters>,
    /// The push subscriptions (queue, name) with series of their own (at most
    /// [`PUSH_LABELLED_MOST`]).
    push_labelled: Arc<std::sync::Mutex<std::collections::BTreeSet<(String, String)>>>,
    /// When a state store failure was last logged, and how many since (an outage fails every
    /// request: one warning per [`STATE_ERROR_LOG_EVERY`]).
    state_errors_logged: Arc<std::sync::Mutex<crate::core::log_throttle::LogThrottle>>,
}

/// State store failures are logged at most this often (each is counted).
const STATE_ERROR_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for Meters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Meters").finish_non_exhaustive()
    }
}

impl Default for Meters {
    /// Meters that count nowhere (tools and tests that build a core without a server).
    fn default() -> Self {
        Self::new(Arc::new(metrics::NoopRecorder))
    }
}

impl Meters {
    /// Meters writing to `recorder`.
    pub fn new(recorder: Arc<dyn Recorder + Send + Sync>) -> Self {
        let meters = Self {
            recorder,
            long_polls: Arc::default(),
            hot: Arc::default(),
            push_labelled: Arc::default(),
            state_errors_logged: Arc::new(std::sync::Mutex::new(
                crate::core::log_throttle::LogThrottle::new(STATE_ERROR_LOG_EVERY),
            )),
        };
        meters.describe();
        meters
    }

    fn describe(&self) {
        use metrics::Unit;
        let describe = |name: &'static str, unit: Option<Unit>, help: &'static str| {
            self.recorder
                .describe_counter(name.into(), unit, help.into());
        };
        describe(
            REQUESTS,
            None,
            "HTTP requests answered, by dialect, operation and status.",
        );
        describe(
            SQS_BATCH_CALLS,
            None,
            "Batch calls toward SQS made of coalesced gateway requests, by call.",
        );
        describe(
            SQS_BATCH_ENTRIES,
            None,
            "Entries the coalesced batch calls toward SQS carried, by call.",
        );
        describe(
            SQS_BATCH_REQUESTS,
            None,
            "Gateway requests the coalesced batch calls toward SQS served, by call.",
        );
        describe(
            SQS_SHARED_POLLS,
            None,
            "Shared long polls toward SQS, by outcome.",
        );
        describe(
            SQS_SHARED_POLL_MESSAGES,
            None,
            "Messages the shared long polls toward SQS brought.",
        );
        describe(
            SQS_SHARED_POLL_WAITERS,
            None,
            "Receives that waited in a shared long poll, by outcome.",
        );
        describe(
            SQS_SPARE_MESSAGES,
            None,
            "Messages a shared poll brought after their waiter left, by what became of them.",
        );
        describe(
            BACKEND_CALLS,
            None,
            "Backend calls, by backend, call and outcome.",
        );
        describe(
            LEDGER_EVICTIONS,
            None,
            "Deliveries the ledger dropped to stay within max_entries.",
        );
        describe(
            STATE_CALLS,
            None,
            "Calls made to the shared state store, each one round trip (sampled).",
        );
        describe(
            UNKNOWN_DELIVERIES,
            None,
            "Handles whose delivery the ledger did not know, by the policy that answered.",
        );
        describe(
            INVALID_HANDLES,
            None,
            "Receipt handles that were not this gateway's, altered, or of another queue.",
        );
        describe(
            AUTHENTICATION_FAILURES,
            None,
            "Requests whose caller failed to authenticate, by dialect.",
        );
        describe(RATE_LIMITED, None, "Requests refused by a limit, by scope.");
        describe(
            METRICS_ROUNDS,
            None,
            "Basaltic metrics rounds appended since start.",
        );
        describe(
            CONFIG_RELOADS,
            None,
            "Re-reads of the config file for its keys, by outcome (applied, refused).",
        );
        describe(
            PUSH_DELIVERIES,
            None,
            "Push deliveries, by queue, subscription and outcome (accepted, refused, gone, timed_out, unreachable, forbidden).",
        );
        describe(
            STATE_ERRORS,
            None,
            "State store operations that failed, by operation and what the core did instead.",
        );
        describe(
            STORE_COMMITS,
            None,
            "Transactions the embedded store committed since it was opened (sampled).",
        );
        describe(
            STORE_SYNCS,
            None,
            "Embedded store commits that synced the disk (sampled).",
        );
        describe(
            STORE_WRITES,
            None,
            "Operations' writes the embedded store's commits carried (sampled).",
        );
        let histogram = |name: &'static str, help: &'static str| {
            self.recorder
                .describe_histogram(name.into(), Some(Unit::Seconds), help.into());
        };
        histogram(
            REQUEST_SECONDS,
            "HTTP request latency, by dialect and operation.",
        );
        histogram(
            BACKEND_SECONDS,
            "Backend call latency, by backend and call.",
        );
        histogram(
            PUSH_SECONDS,
            "How long push deliveries took (the post), by queue and subscription.",
        );
        let gauge = |name: &'static str, help: &'static str| {
            self.recorder.describe_gauge(name.into(), None, help.into());
        };
        gauge(LONG_POLLS, "Receives waiting in a long poll.");
        gauge(LEDGER_DELIVERIES, "Deliveries the ledger holds.");
        gauge(
            PUSH_IN_FLIGHT,
            "Push deliveries being posted, by queue and subscription.",
        );
        gauge(
            PUSH_FAILURES_IN_A_ROW,
            "Failed push attempts since the subscription's last success, by queue and subscription.",
        );
        gauge(
            PUSH_DISABLED,
            "1 for a push subscription disabled by its endpoint's 410 Gone.",
        );
        gauge(
            METRICS_ROUND_SECONDS,
            "How long the last basaltic metrics round took to count its queues, in seconds.",
        );
        gauge(
            METRICS_ROUND_QUEUES,
            "The last basaltic metrics round's queues, by outcome (sampled, gap).",
        );
        gauge(QUEUE_VISIBLE, "Messages ready to receive (sampled).");
        gauge(QUEUE_IN_FLIGHT, "Messages in flight (sampled).");
        gauge(QUEUE_DELAYED, "Messages delayed (sampled).");
        gauge(
            QUEUE_OLDEST_AGE,
            "Age of the oldest message in seconds (sampled; not on the sqs backend).",
        );
    }

    fn counter(&self, name: &'static str, labels: Vec<Label>) -> metrics::Counter {
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &METADATA)
    }

    fn gauge(&self, name: &'static str, labels: Vec<Label>) -> metrics::Gauge {
        self.recorder
            .register_gauge(&Key::from_parts(name, labels), &METADATA)
    }

    fn histogram(&self, name: &'static str, labels: Vec<Label>) -> metrics::Histogram {
        self.recorder
            .register_histogram(&Key::from_parts(name, labels), &METADATA)
    }

    /// A counter and a duration histogram of one event: both carry `labels`, the counter also
    /// `outcome` (a duration is kept per operation, not per outcome).
    fn count_and_time(
        &self,
        (counter, histogram): (&'static str, &'static str),
        labels: [Label; 2],
        outcome: Label,
    ) -> Pair {
        let timed = self.histogram(histogram, labels.to_vec());
        let mut counted = labels.to_vec();
        counted.push(outcome);
        (self.counter(counter, counted), timed)
    }

    /// One answered HTTP request.
    pub fn request(
        &self,
        dialect: &'static str,
        operation: &'static str,
        status: u16,
        elapsed: Duration,
    ) {
        let (requests, seconds) =
            hot_meters(&self.hot.requests, (dialect, operation, status), || {
                self.count_and_time(
                    (REQUESTS, REQUEST_SECONDS),
                    [
                        Label::from_static_parts("dialect", dialect),
                        Label::from_static_parts("operation", operation),
                    ],
                    Label::new("status", status.to_string()),
                )
            });
        requests.increment(1);
        seconds.record(elapsed.as_secs_f64());
    }

    /// One backend call and how it ended.
    pub fn backend_call(
        &self,
        backend: &'static str,
        call: &'static str,
        error: Option<&BackendError>,
        elapsed: Duration,
    ) {
        let outcome = error.map_or("ok", backend_outcome);
        let (calls, seconds) = hot_meters(&self.hot.calls, (backend, call, outcome), || {
            self.count_and_time(
                (BACKEND_CALLS, BACKEND_SECONDS),
                [
                    Label::from_static_parts("backend", backend),
                    Label::from_static_parts("call", call),
                ],
                Label::from_static_parts("outcome", outcome),
            )
        });
        calls.increment(1);
        seconds.record(elapsed.as_secs_f64());
    }

    /// One batch call the sqs backend made toward SQS for `requests` coalesced requests carrying
    /// `entries` entries (`call`: `DeleteMessageBatch`, `ChangeMessageVisibilityBatch`).
    pub fn sqs_batch(&self, call: &'static str, requests: usize, entries: usize) {
        let label = || vec![Label::from_static_parts("call", call)];
        self.counter(SQS_BATCH_CALLS, label()).increment(1);
        self.counter(SQS_BATCH_ENTRIES, label())
            .increment(entries as u64);
        self.counter(SQS_BATCH_REQUESTS, label())
            .increment(requests as u64);
    }

    /// One shared long poll toward SQS answered (`outcome`: messages, empty, error) with
    /// `messages` messages.
    pub fn sqs_shared_poll(&self, outcome: &'static str, messages: usize) {
        self.counter(
            SQS_SHARED_POLLS,
            vec![Label::from_static_parts("outcome", outcome)],
        )
        .increment(1);
        if messages > 0 {
            self.counter(SQS_SHARED_POLL_MESSAGES, Vec::new())
                .increment(messages as u64);
        }
    }

    /// One receive that waited in a shared poll ended (`outcome`: messages, empty).
    pub fn sqs_shared_poll_waiter(&self, outcome: &'static str) {
        self.counter(
            SQS_SHARED_POLL_WAITERS,
            vec![Label::from_static_parts("outcome", outcome)],
        )
        .increment(1);
    }

    /// `count` messages a shared poll brought for a waiter that left met `outcome` (held,
    /// handed_on, released, lapsed).
    pub fn sqs_spare(&self, outcome: &'static str, count: usize) {
        if count > 0 {
            self.counter(
                SQS_SPARE_MESSAGES,
                vec![Label::from_static_parts("outcome", outcome)],
            )
            .increment(count as u64);
        }
    }

    /// A receive starts waiting; the gauge goes down when the guard drops.
    pub fn long_poll(&self) -> LongPollWaiting {
        let now = self.long_polls.fetch_add(1, Ordering::Relaxed) + 1;
        self.set_long_polls(now);
        LongPollWaiting {
            meters: self.clone(),
        }
    }

    fn set_long_polls(&self, waiting: i64) {
        self.gauge(LONG_POLLS, Vec::new()).set(waiting as f64);
    }

    /// A request of the SQS endpoint: its action (`unknown` when not one the endpoint serves)
    /// and protocol (`json`, `query`).
    pub fn sqs_request(&self, action: &'static str, protocol: &'static str) {
        let key = (action, protocol);
        let known = self
            .hot
            .sqs_actions
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .cloned();
        let counter = known.unwrap_or_else(|| {
            let counter = self.counter(
                SQS_REQUESTS,
                vec![
                    Label::from_static_parts("action", action),
                    Label::from_static_parts("protocol", protocol),
                ],
            );
            self.hot
                .sqs_actions
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(key)
                .or_insert(counter)
                .clone()
        });
        counter.increment(1);
    }

    /// One push subscription's series (labels `queue` and `subscription`: names are scoped by
    /// queue), registered now (each of `outcomes` at zero), so its deliveries register nothing.
    /// The first [`PUSH_LABELLED_MOST`] subscriptions that may be `named` have series of their
    /// own; those after, and those of queues the scrape may not name, share
    /// [`PUSH_OTHERS_LABEL`] (counters and latencies summed, no gauges), so making
    /// subscriptions cannot grow the scrape without bound nor name a tenant.
    pub fn push(
        &self,
        queue: &str,
        subscription: &str,
        named: bool,
        outcomes: &[&'static str],
    ) -> PushMeters {
        let own = named && {
            let mut labelled = self
                .push_labelled
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = (queue.to_owned(), subscription.to_owned());
            labelled.contains(&key) || (labelled.len() < PUSH_LABELLED_MOST && labelled.insert(key))
        };
        let (queue, subscription) = if own {
            (queue, subscription)
        } else {
            (PUSH_OTHERS_LABEL, PUSH_OTHERS_LABEL)
        };
        let labels = vec![
            Label::new("queue", queue.to_owned()),
            Label::new("subscription", subscription.to_owned()),
        ];
        let deliveries = outcomes
            .iter()
            .map(|outcome| {
                let mut labels = labels.clone();
                labels.push(Label::from_static_parts("outcome", outcome));
                (*outcome, self.counter(PUSH_DELIVERIES, labels))
            })
            .collect();
        PushMeters {
            deliveries,
            seconds: self.histogram(PUSH_SECONDS, labels.clone()),
            in_flight: self.own_gauge(own, PUSH_IN_FLIGHT, labels.clone()),
            failures: self.own_gauge(own, PUSH_FAILURES_IN_A_ROW, labels.clone()),
            disabled: self.own_gauge(own, PUSH_DISABLED, labels),
        }
    }

    /// A gauge of one subscription's own series; none for the shared label, where one
    /// subscription's value would overwrite another's.
    fn own_gauge(&self, own: bool, name: &'static str, labels: Vec<Label>) -> metrics::Gauge {
        if own {
            self.gauge(name, labels)
        } else {
            metrics::Gauge::noop()
        }
    }

    /// A receive whose client went away ended: `outcome` says what became of what it took.
    pub fn abandoned_receive(&self, outcome: &'static str) {
        self.counter(
            ABANDONED_RECEIVES,
            vec![Label::from_static_parts("outcome", outcome)],
        )
        .increment(1);
    }

    /// Handles of deliveries the ledger did not know, answered under `policy`.
    pub fn unknown_deliveries(&self, policy: &'static str, count: u64) {
        if count > 0 {
            self.counter(
                UNKNOWN_DELIVERIES,
                vec![Label::from_static_parts("policy", policy)],
            )
            .increment(count);
        }
    }

    /// A request of `dialect` whose caller failed to authenticate.
    pub fn authentication_failure(&self, dialect: &'static str) {
        self.counter(
            AUTHENTICATION_FAILURES,
            vec![Label::from_static_parts("dialect", dialect)],
        )
        .increment(1);
    }

    /// Handles that acted nowhere for `operation`.
    pub fn invalid_handles(&self, operation: &'static str, count: u64) {
        if count > 0 {
            self.counter(
                INVALID_HANDLES,
                vec![Label::from_static_parts("operation", operation)],
            )
            .increment(count);
        }
    }

    /// A re-read of the config file for its keys: applied (the new keys are in use) or refused
    /// (it did not parse or validate; the old keys stay).
    pub fn config_reload(&self, applied: bool) {
        self.config_reloads(applied).increment(1);
    }

    /// Shows both outcomes of [`Meters::config_reload`] at 0 until the first reload.
    pub fn config_reloads_watched(&self) {
        for applied in [true, false] {
            self.config_reloads(applied).increment(0);
        }
    }

    fn config_reloads(&self, applied: bool) -> metrics::Counter {
        let outcome = if applied { "applied" } else { "refused" };
        self.counter(
            CONFIG_RELOADS,
            vec![Label::from_static_parts("outcome", outcome)],
        )
    }

    /// A request refused by a limit.
    pub fn rate_limited(&self, scope: LimitScope) {
        let scope = match scope {
            LimitScope::Rate => "rate",
            LimitScope::DailyQuota => "daily_quota",
        };
        self.counter(RATE_LIMITED, vec![Label::from_static_parts("scope", scope)])
            .increment(1);
    }

    /// A state store operation failed; `then` is what the core did instead (`refused`: the
    /// request answered unavailable; `admitted`: a limit let it through; `logged`: the request's
    /// outcome stood).
    /// Logged at most once per 10 s, with how many failed since the last line.
    pub fn state_error(
        &self,
        operation: &'static str,
        then: &'static str,
        error: &crate::core::state::StateUnavailable,
    ) {
        let due = self
            .state_errors_logged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .due();
        if let Some(failed) = due {
            tracing::warn!(%error, operation, then, failed, "the state store is unavailable");
        }
        self.counter(
            STATE_ERRORS,
            vec![
                Label::from_static_parts("operation", operation),
                Label::from_static_parts("then", then),
            ],
        )
        .increment(1);
    }

    /// Calls made to a networked state store since start (sampled).
    pub fn state_calls(&self, calls: u64) {
        self.counter(STATE_CALLS, Vec::new()).absolute(calls);
    }

    /// The ledger's size and its evictions since start (sampled).
    pub fn ledger(&self, deliveries: u64, evictions: u64) {
        self.gauge(LEDGER_DELIVERIES, Vec::new())
            .set(deliveries as f64);
        self.counter(LEDGER_EVICTIONS, Vec::new())
            .absolute(evictions);
        // Sampled with the rest, so the gauge stays while it does not change.
        self.set_long_polls(self.long_polls.load(Ordering::Relaxed));
    }

    /// What the backend's disk store has done (sampled; a reopen after a failed write starts the
    /// counts again, which Prometheus reads as a counter reset).
    pub fn store(&self, counts: &StoreCounts) {
        self.counter(STORE_COMMITS, Vec::new())
            .absolute(counts.commits);
        self.counter(STORE_SYNCS, Vec::new()).absolute(counts.syncs);
        self.counter(STORE_WRITES, Vec::new())
            .absolute(counts.writes);
    }

    /// A basaltic metrics round was appended: its counts took `took`, `sampled` queues were
    /// counted and `gaps` were not.
    pub fn metrics_round(&self, took: Duration, sampled: usize, gaps: usize) {
        self.counter(METRICS_ROUNDS, Vec::new()).increment(1);
        self.gauge(METRICS_ROUND_SECONDS, Vec::new())
            .set(took.as_secs_f64());
        for (outcome, queues) in [("sampled", sampled), ("gap", gaps)] {
            self.gauge(
                METRICS_ROUND_QUEUES,
                vec![Label::from_static_parts("outcome", outcome)],
            )
            .set(queues as f64);
        }
    }

    /// A queue's depth (sampled).
    pub fn queue_depth(&self, queue: &str, stats: &QueueStats) {
        let label = || vec![Label::new("queue", queue.to_owned())];
        self.gauge(QUEUE_VISIBLE, label()).set(stats.visible as f64);
        self.gauge(QUEUE_IN_FLIGHT, label())
            .set(stats.in_flight as f64);
        self.gauge(QUEUE_DELAYED, label()).set(stats.delayed as f64);
        if let Some(age) = stats.oldest_age_seconds {
            self.gauge(QUEUE_OLDEST_AGE, label()).set(age as f64);
        }
    }
}

/// A receive waiting in a long poll; counted while it lives.
#[derive(Debug)]
pub struct LongPollWaiting {
    meters: Meters,
}

impl Drop for LongPollWaiting {
    fn drop(&mut self) {
        let now = self.meters.long_polls.fetch_sub(1, Ordering::Relaxed) - 1;
        self.meters.set_long_polls(now);
    }
}

/// A backend error's outcome label.
fn backend_outcome(error: &BackendError) -> &'static str {
    match error {
        BackendError::QueueNotFound => "queue_not_found",
        BackendError::OverLimit => "over_limit",
        BackendError::Unavailable(_) => "unavailable",
        BackendError::AlreadyExists(_) => "already_exists",
        BackendError::Invalid(_) => "invalid",
        BackendError::Rejected(_) => "rejected",
        BackendError::ResourceNotFound(_) => "resource_not_found",
        BackendError::Unsupported(_) => "unsupported",
        BackendError::Other(_) => "error",
    }
}

/// The meters under `key`, registered by `register` the first time.
fn hot_meters<K: std::hash::Hash + Eq + Copy>(
    map: &RwLock<HashMap<K, Pair>>,
    key: K,
    register: impl FnOnce() -> Pair,
) -> Pair {
    let known = map
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
        .cloned();
    known.unwrap_or_else(|| {
        let meters = register();
        map.write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key)
            .or_insert(meters)
            .clone()
    })
}

/// One push subscription's series ([`Meters::push`]).
#[derive(Clone)]
pub struct PushMeters {
    deliveries: Vec<(&'static str, metrics::Counter)>,
    seconds: metrics::Histogram,
    in_flight: metrics::Gauge,
    failures: metrics::Gauge,
    disabled: metrics::Gauge,
}

impl std::fmt::Debug for PushMeters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushMeters").finish_non_exhaustive()
    }
}

impl PushMeters {
    /// A delivery ended with `outcome` (one of those registered) after `elapsed`.
    pub fn attempt(&self, outcome: &'static str, elapsed: Duration) {
        if let Some((_, counter)) = self.deliveries.iter().find(|(known, _)| *known == outcome) {
            counter.increment(1);
        }
        self.seconds.record(elapsed.as_secs_f64());
    }

    /// Its state: deliveries in flight, failures in a row, disabled or not.
    pub fn state(&self, in_flight: u32, failures: u32, disabled: bool) {
        self.in_flight.set(f64::from(in_flight));
        self.failures.set(f64::from(failures));
        self.disabled.set(if disabled { 1.0 } else { 0.0 });
    }
}
