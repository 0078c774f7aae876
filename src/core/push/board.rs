//! What operators see of each push subscription, and what its runner steers by: whether it is
//! disabled and why, its deliveries in flight, the window slow start allows, failures in a row,
//! counts by outcome, and the last attempts (never bodies, handles or secrets).

use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One delivery attempt, as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// When it ended.
    pub at: DateTime<Utc>,
    /// The message's id (the `webhook-id` it was posted with).
    pub message_id: String,
    /// Its receive count: 1 for the first attempt.
    pub attempt: u32,
    /// How it ended ([`super::Pushed::outcome`]).
    pub outcome: &'static str,
    /// The status the endpoint answered, if it answered.
    pub status: Option<u16>,
    /// How long the post took.
    pub latency: Duration,
}

/// A subscription as operators see it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Its name.
    pub name: String,
    /// The gateway queue it consumes.
    pub queue: String,
    /// Where it posts (no query, no credentials).
    pub endpoint: String,
    /// `active`, `backing_off` (failures in a row: fewer deliveries at once) or `disabled`.
    pub state: &'static str,
    /// Why it is disabled, when it is.
    pub disabled_because: Option<String>,
    /// Deliveries being posted now.
    pub in_flight: u32,
    /// The most it allows in flight now (slow start after failures).
    pub window: u32,
    /// Its most in flight.
    pub max_concurrency: u32,
    /// Failed attempts since the last success.
    pub failures_in_a_row: u32,
    /// Attempts by outcome since the gateway started.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// The latest attempts, newest first.
    pub log: Vec<Attempt>,
}

#[derive(Debug)]
struct Inner {
    disabled_because: Option<String>,
    in_flight: u32,
    window: u32,
    failures_in_a_row: u32,
    outcomes: BTreeMap<&'static str, u64>,
    log: VecDeque<Attempt>,
}

/// One subscription's status, shared by its runner and its readers.
#[derive(Debug)]
pub struct Status {
    name: String,
    queue: String,
    endpoint: Mutex<String>,
    max_concurrency: u32,
    log_entries: usize,
    inner: Mutex<Inner>,
    /// Woken when a delivery ends (room in the window) or the subscription is disabled.
    changed: tokio::sync::Notify,
    /// Set once the subscription is disabled.
    disabled: tokio::sync::watch::Sender<bool>,
}

impl Status {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Shows it posting to `endpoint` (a change moved it).
    pub fn set_endpoint(&self, endpoint: String) {
        *self
            .endpoint
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = endpoint;
    }

    /// Whether it is disabled.
    pub fn disabled(&self) -> bool {
        self.lock().disabled_because.is_some()
    }

    /// Disables it: its runner takes no more messages.
    pub fn disable(&self, because: &str) {
        self.lock().disabled_because = Some(because.to_owned());
        self.disabled.send_replace(true);
        self.changed.notify_waiters();
    }

    /// Completes once the subscription is disabled.
    pub async fn until_disabled(&self) {
        let mut disabled = self.disabled.subscribe();
        // The sender lives as long as this status: the wait ends only when it is disabled.
        let _ = disabled.wait_for(|disabled| *disabled).await;
    }

    /// How many more deliveries the window allows now, at most `most`.
    pub fn room(&self, most: u32) -> u32 {
        let inner = self.lock();
        inner.window.saturating_sub(inner.in_flight).min(most)
    }

    /// Counts `count` deliveries as started.
    pub fn started(&self, count: u32) {
        self.lock().in_flight += count;
    }

    /// A delivery given back unposted (the subscription was disabled).
    pub fn abandoned(&self) {
        let mut inner = self.lock();
        inner.in_flight = inner.in_flight.saturating_sub(1);
    }

    /// Failures in a row: the runner pauses before its next receive.
    pub fn failures_in_a_row(&self) -> u32 {
        self.lock().failures_in_a_row
    }

    /// Records an attempt that ended. After a failure the window drops to one delivery at a
    /// time; each success doubles it, up to the most (slow start).
    pub fn ended(&self, attempt: Attempt, succeeded: bool) {
        let mut inner = self.lock();
        inner.in_flight = inner.in_flight.saturating_sub(1);
        if succeeded {
            inner.failures_in_a_row = 0;
            inner.window = (inner.window.saturating_mul(2)).clamp(1, self.max_concurrency);
        } else {
            inner.failures_in_a_row = inner.failures_in_a_row.saturating_add(1);
            inner.window = 1;
        }
        *inner.outcomes.entry(attempt.outcome).or_default() += 1;
        if inner.log.len() == self.log_entries {
            inner.log.pop_back();
        }
        inner.log.push_front(attempt);
        drop(inner);
        self.changed.notify_waiters();
    }

    /// A wait for the next change (a delivery ended, or the subscription was disabled), armed
    /// now: a change between this call and its await is not missed.
    pub fn next_change(&self) -> std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut change = Box::pin(self.changed.notified());
        change.as_mut().enable();
        change
    }

    /// What the gauges show: deliveries in flight, failures in a row, and whether it is disabled
    /// (without copying the log, as [`Status::snapshot`] does).
    pub fn gauges(&self) -> (u32, u32, bool) {
        let inner = self.lock();
        (
            inner.in_flight,
            inner.failures_in_a_row,
            inner.disabled_because.is_some(),
        )
    }

    /// What operators see.
    pub fn snapshot(&self) -> Snapshot {
        let inner = self.lock();
        let state = match (&inner.disabled_because, inner.failures_in_a_row) {
            (Some(_), _) => "disabled",
            (None, 0) => "active",
            (None, _) => "backing_off",
        };
        Snapshot {
            name: self.name.clone(),
            queue: self.queue.clone(),
            endpoint: self
                .endpoint
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone(),
            state,
            disabled_because: inner.disabled_because.clone(),
            in_flight: inner.in_flight,
            window: inner.window,
            max_concurrency: self.max_concurrency,
            failures_in_a_row: inner.failures_in_a_row,
            outcomes: inner.outcomes.clone(),
            log: inner.log.iter().cloned().collect(),
        }
    }
}

/// Every subscription's status, by queue and name (names are scoped by queue).
#[derive(Debug, Default)]
pub struct Board {
    statuses: Mutex<BTreeMap<(String, String), Arc<Status>>>,
}

impl Board {
    /// Registers a subscription (its log keeps `log_entries` attempts); answers its status.
    pub fn register(&self, subscription: &super::Subscription, log_entries: usize) -> Arc<Status> {
        self.insert(
            &subscription.name,
            &subscription.queue,
            subscription.endpoint.describe(),
            subscription.max_concurrency,
            log_entries,
        )
    }

    /// Registers a subscription that cannot run, disabled `because`.
    pub fn register_disabled(
        &self,
        name: &str,
        queue: &str,
        endpoint: &str,
        because: &str,
        log_entries: usize,
    ) -> Arc<Status> {
        let shown = super::endpoint_for_readers(endpoint);
        let status = self.insert(name, queue, shown, 1, log_entries);
        status.disable(because);
        status
    }

    /// Takes `status` off the board (if it is still the one registered under its queue and
    /// name).
    pub fn remove(&self, status: &Arc<Status>) {
        let mut statuses = self
            .statuses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let key = (status.queue.clone(), status.name.clone());
        if statuses
            .get(&key)
            .is_some_and(|registered| Arc::ptr_eq(registered, status))
        {
            statuses.remove(&key);
        }
    }

    fn insert(
        &self,
        name: &str,
        queue: &str,
        endpoint: String,
        max_concurrency: u32,
        log_entries: usize,
    ) -> Arc<Status> {
        let status = Arc::new(Status {
            name: name.to_owned(),
            queue: queue.to_owned(),
            endpoint: Mutex::new(endpoint),
            max_concurrency: max_concurrency.max(1),
            log_entries: log_entries.max(1),
            inner: Mutex::new(Inner {
                disabled_because: None,
                in_flight: 0,
                window: max_concurrency.max(1),
                failures_in_a_row: 0,
                outcomes: BTreeMap::new(),
                log: VecDeque::new(),
            }),
            changed: tokio::sync::Notify::new(),
            disabled: tokio::sync::watch::Sender::new(false),
        });
        self.statuses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert((queue.to_owned(), name.to_owned()), Arc::clone(&status));
        status
    }

    /// The subscriptions of the gateway queue `queue`, by name.
    pub fn of_queue(&self, queue: &str) -> Vec<Snapshot> {
        self.statuses
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .filter(|status| status.queue == queue)
            .map(|status| status.snapshot())
            .collect()
    }
}
