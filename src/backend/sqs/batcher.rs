//! Write coalescing toward SQS: the sends, acknowledgements and visibility changes that many
//! requests make on one queue go out together, up to ten entries (and, for sends, a bound on their
//! bytes) an SQS batch call, with group-commit timing (a
//! call goes at once when none is in flight; what arrives while calls are in flight waits for the
//! next one), so the SQS requests a gateway makes follow the messages it moves, not the requests.
//! Requests that came in a burst a moment ago (a call within the last second carried several) are
//! gathered: the next first call waits up to twice the last call's round trip (at most
//! `backend.fan_in_gather_ms`, 20 ms) for as many as the largest of those calls, so the
//! acknowledgements of consumers served together share one call; a lone request goes at once.
//!
//! A request's entries stay in one call (never split, never reordered), so it gets its own
//! per-entry outcomes, and a failed call answers each request in it with the call's error, exactly
//! as when each request made its own call.

use crate::core::backend::BackendError;
use futures_util::future::BoxFuture;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, oneshot};
use tokio::time::{Duration, Instant};

/// The most entries one SQS batch call takes.
pub(super) const BATCH_ENTRIES: usize = 10;

/// One SQS batch call on a queue: its entries in, one outcome each out, in order.
pub(super) type Call<E, R> =
    Arc<dyn Fn(Vec<E>) -> BoxFuture<'static, Result<Vec<R>, BackendError>> + Send + Sync>;

type Reply<R> = oneshot::Sender<Result<Vec<R>, BackendError>>;

/// The queues' lanes, by queue.
type Lanes<E, R> = Arc<Mutex<HashMap<String, Arc<Lane<E, R>>>>>;

/// Told of every call made.
pub(super) type Observe = Arc<dyn Fn(CallShape) + Send + Sync>;

/// What one batch call carried: its requests and their entries, and how many calls were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CallShape {
    /// Requests served by the call.
    pub requests: usize,
    /// Entries the call carried.
    pub entries: usize,
}

/// Gathers one kind of batch call's entries per queue.
pub(super) struct Batcher<E, R> {
    lanes: Lanes<E, R>,
    /// Calls one queue may have in flight at once: a second starts only once a full batch waits.
    max_in_flight: usize,
    /// What an entry weighs, and the most one call carries (a request heavier alone goes alone).
    weight: fn(&E) -> usize,
    max_weight: usize,
    /// Told of every call made.
    observe: Observe,
    /// The longest a first call waits for the requests of a burst (zero: it goes at once).
    max_gather: Duration,
}

impl<E, R> std::fmt::Debug for Batcher<E, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

struct Lane<E, R> {
    state: Mutex<LaneState<E, R>>,
    /// Told of every request that arrives (a gathering call waits for them).
    arrived: Notify,
}

struct LaneState<E, R> {
    in_flight: usize,
    /// Requests in arrival order, each with its weight.
    waiting: VecDeque<(Vec<E>, usize, Reply<R>)>,
    waiting_entries: usize,
    /// The most requests a call carried within [`REMEMBERED`] of the last one (a burst's size),
    /// how long the last call took and when it ended.
    last_requests: usize,
    last_round_trip: Duration,
    last_ended: Option<Instant>,
    /// When the window `last_requests` is the largest of began.
    peak_since: Option<Instant>,
}

/// How long after its last call a lane remembers how many requests came together.
const REMEMBERED: Duration = Duration::from_secs(1);

impl<E, R> LaneState<E, R> {
    /// Whether requests came together a moment ago (the last call carried several): a first
    /// call then waits briefly for as many.
    fn gathering(&self, now: Instant) -> bool {
        self.last_requests > 1
            && self
                .last_ended
                .is_some_and(|ended| now - ended < REMEMBERED)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<E: Send + 'static, R: Send + 'static> Batcher<E, R> {
    /// A batcher letting each queue have up to `max_in_flight` calls at once (at least one).
    pub(super) fn new(max_in_flight: usize, observe: Observe) -> Self {
        Self::weighed(max_in_flight, observe, |_| 0, usize::MAX)
    }

    /// [`Batcher::new`], a call carrying at most `max_weight` of entries weighed by `weight`.
    pub(super) fn weighed(
        max_in_flight: usize,
        observe: Observe,
        weight: fn(&E) -> usize,
        max_weight: usize,
    ) -> Self {
        Self {
            lanes: Arc::new(Mutex::new(HashMap::new())),
            max_in_flight: max_in_flight.max(1),
            weight,
            max_weight,
            observe,
            max_gather: Duration::ZERO,
        }
    }

    /// The same, a first call after a burst waiting up to `max_gather` for its requests.
    pub(super) fn gathering(self, max_gather: Duration) -> Self {
        Self { max_gather, ..self }
    }

    /// Makes `entries` part of a batch call on the queue `key` (with `call`, which carries the
    /// queue's URL); their outcomes, in order, once that call answered.
    pub(super) async fn submit(
        &self,
        key: &str,
        entries: Vec<E>,
        call: Call<E, R>,
    ) -> Result<Vec<R>, BackendError> {
        let lane = {
            let mut lanes = lock(&self.lanes);
            Arc::clone(lanes.entry(key.to_owned()).or_insert_with(|| {
                Arc::new(Lane {
                    state: Mutex::new(LaneState {
                        in_flight: 0,
                        waiting: VecDeque::new(),
                        waiting_entries: 0,
                        last_requests: 0,
                        last_round_trip: Duration::ZERO,
                        last_ended: None,
                        peak_since: None,
                    }),
                    arrived: Notify::new(),
                })
            }))
        };
        let (reply, answer) = oneshot::channel();
        let weight = entries.iter().map(self.weight).sum();
        let start = {
            let mut state = lock(&lane.state);
            state.waiting_entries += entries.len();
            state.waiting.push_back((entries, weight, reply));
            let start = state.in_flight == 0
                || (state.in_flight < self.max_in_flight && state.waiting_entries >= BATCH_ENTRIES);
            if start {
                state.in_flight += 1;
            }
            start
        };
        lane.arrived.notify_waiters();
        if start {
            let drain = Drain {
                lane,
                lanes: Arc::clone(&self.lanes),
                max_weight: self.max_weight,
                observe: Arc::clone(&self.observe),
                max_gather: self.max_gather,
            };
            tokio::spawn(drain.run(call));
        }
        answer.await.unwrap_or_else(|_| {
            Err(BackendError::Unavailable(
                "a batched SQS call ended without an answer".into(),
            ))
        })
    }
}

/// One of a queue's calls in flight: it carries what waits, call after call, until nothing does.
struct Drain<E, R> {
    lane: Arc<Lane<E, R>>,
    lanes: Lanes<E, R>,
    max_weight: usize,
    observe: Observe,
    max_gather: Duration,
}

impl<E: Send + 'static, R: Send + 'static> Drain<E, R> {
    async fn run(self, call: Call<E, R>) {
        self.gather().await;
        while let Some(batch) = self.next_batch() {
            let sizes: Vec<usize> = batch.iter().map(|(entries, _)| entries.len()).collect();
            let (entries, replies): (Vec<Vec<E>>, Vec<Reply<R>>) = batch.into_iter().unzip();
            let entries: Vec<E> = entries.into_iter().flatten().collect();
            (self.observe)(CallShape {
                requests: replies.len(),
                entries: entries.len(),
            });
            let started = Instant::now();
            let answer = call(entries).await;
            {
                let mut state = lock(&self.lane.state);
                let now = Instant::now();
                // The largest within a window of [`REMEMBERED`], started afresh as it passes.
                if state
                    .peak_since
                    .is_none_or(|since| now - since >= REMEMBERED)
                {
                    state.last_requests = replies.len();
                    state.peak_since = Some(now);
                } else {
                    state.last_requests = state.last_requests.max(replies.len());
                }
                state.last_round_trip = started.elapsed();
                state.last_ended = Some(now);
            }
            match answer {
                Ok(outcomes) => {
                    let mut outcomes = outcomes.into_iter();
                    for (size, reply) in sizes.into_iter().zip(replies) {
                        let own: Vec<R> = outcomes.by_ref().take(size).collect();
                        // A request whose caller left has nobody to tell.
                        let _ = reply.send(Ok(own));
                    }
                }
                Err(error) => {
                    for reply in replies {
                        let _ = reply.send(Err(error.clone()));
                    }
                }
            }
        }
    }

    /// When requests came together a moment ago, waits (up to twice the last call's round trip,
    /// at most the configured gather bound) for as many as the last call carried, or a full batch: requests
    /// that come in bursts (the acknowledgements of one shared poll's consumers) then share one
    /// call instead of the first going alone. A lone request's call goes at once.
    async fn gather(&self) {
        let deadline = {
            let state = lock(&self.lane.state);
            let now = Instant::now();
            if self.max_gather.is_zero() || !state.gathering(now) {
                return;
            }
            now + (state.last_round_trip * 2).min(self.max_gather)
        };
        loop {
            let arrived = self.lane.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            {
                let state = lock(&self.lane.state);
                if state.waiting.len() >= state.last_requests
                    || state.waiting_entries >= BATCH_ENTRIES
                {
                    return;
                }
            }
            tokio::select! {
                () = arrived => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// The requests of the next call (whole requests in arrival order, up to ten entries and the
    /// weight bound, at least one request), or `None` when nothing waits: this call in flight then
    /// ends.
    fn next_batch(&self) -> Option<Vec<(Vec<E>, Reply<R>)>> {
        let mut state = lock(&self.lane.state);
        let mut batch = Vec::new();
        let (mut entries, mut weight) = (0, 0usize);
        while let Some((next, next_weight, _)) = state.waiting.front() {
            let too_many = entries + next.len() > BATCH_ENTRIES;
            let too_heavy = weight.saturating_add(*next_weight) > self.max_weight;
            if !batch.is_empty() && (too_many || too_heavy) {
                break;
            }
            let (next, next_weight, reply) = state.waiting.pop_front().expect("a front exists");
            entries += next.len();
            weight = weight.saturating_add(next_weight);
            batch.push((next, reply));
        }
        state.waiting_entries -= entries;
        if batch.is_empty() {
            state.in_flight -= 1;
            if state.in_flight == 0 {
                drop(state);
                self.forget_if_idle();
            }
            return None;
        }
        Some(batch)
    }

    /// Drops idle lanes that remember nothing worth keeping (no burst within [`REMEMBERED`]),
    /// this one and any other, so queues that come and go leave nothing behind (a request that
    /// took a lane meanwhile starts its own call on it).
    fn forget_if_idle(&self) {
        let mut lanes = lock(&self.lanes);
        let now = Instant::now();
        lanes.retain(|_, lane| {
            let state = lock(&lane.state);
            state.in_flight > 0 || !state.waiting.is_empty() || state.gathering(now)
        });
    }
}

impl<E, R> Drop for Drain<E, R> {
    /// A call that panicked answers its waiting requests `Unavailable` (their replies drop) and
    /// frees its place, so the queue's lane never stays busy.
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut state = lock(&self.lane.state);
            state.in_flight = state.in_flight.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::sync::Notify;

    fn recorder() -> (Arc<Mutex<Vec<CallShape>>>, Observe) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        (calls, Arc::new(move |shape| lock(&seen).push(shape)))
    }

    /// A call that waits for `gate` before answering each entry doubled.
    fn gated(gate: Arc<Notify>, made: Arc<AtomicUsize>) -> Call<u32, u32> {
        Arc::new(move |entries: Vec<u32>| {
            let gate = Arc::clone(&gate);
            made.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                gate.notified().await;
                Ok(entries.into_iter().map(|e| e * 2).collect())
            })
        })
    }

    #[tokio::test]
    async fn the_first_goes_at_once_and_the_rest_gather_while_it_is_in_flight() {
        let (calls, observe) = recorder();
        let batcher = Arc::new(Batcher::new(1, observe));
        let gate = Arc::new(Notify::new());
        let made = Arc::new(AtomicUsize::new(0));
        let call = gated(Arc::clone(&gate), Arc::clone(&made));
        let first = tokio::spawn({
            let (batcher, call) = (Arc::clone(&batcher), Arc::clone(&call));
            async move { batcher.submit("q", vec![1], call).await }
        });
        while made.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let mut later = Vec::new();
        for n in 2..=13u32 {
            let (batcher, call) = (Arc::clone(&batcher), Arc::clone(&call));
            later.push(tokio::spawn(async move {
                batcher.submit("q", vec![n], call).await
            }));
        }
        tokio::task::yield_now().await;
        assert_eq!(
            made.load(Ordering::SeqCst),
            1,
            "one call in flight at a time"
        );
        for _ in 0..3 {
            gate.notify_one();
            tokio::task::yield_now().await;
        }
        // Each caller gets its own outcome.
        assert_eq!(first.await.unwrap().unwrap(), [2]);
        for (n, task) in (2..=13u32).zip(later) {
            loop {
                if task.is_finished() {
                    break;
                }
                gate.notify_one();
                tokio::task::yield_now().await;
            }
            assert_eq!(task.await.unwrap().unwrap(), [n * 2]);
        }
        let shapes: Vec<usize> = lock(&calls).iter().map(|c| c.entries).collect();
        assert_eq!(shapes, [1, 10, 2], "twelve waiting went out as 10 and 2");
    }

    #[tokio::test]
    async fn a_request_stays_whole_and_a_failed_call_fails_each_request_in_it() {
        let (calls, observe) = recorder();
        let batcher = Arc::new(Batcher::new(1, observe));
        let gate = Arc::new(Notify::new());
        let calls_made = Arc::new(AtomicUsize::new(0));
        let failing: Call<u32, u32> = {
            let (gate, calls_made) = (Arc::clone(&gate), Arc::clone(&calls_made));
            Arc::new(move |entries: Vec<u32>| {
                let gate = Arc::clone(&gate);
                let n = calls_made.fetch_add(1, Ordering::SeqCst);
                Box::pin(async move {
                    gate.notified().await;
                    if n == 1 {
                        Err(BackendError::Unavailable("throttled".into()))
                    } else {
                        Ok(entries)
                    }
                })
            })
        };
        let submit = |entries: Vec<u32>| {
            let (batcher, call) = (Arc::clone(&batcher), Arc::clone(&failing));
            tokio::spawn(async move { batcher.submit("q", entries, call).await })
        };
        let first = submit(vec![0]);
        while calls_made.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        let six = submit((1..=6).collect());
        let five = submit((7..=11).collect());
        let two = submit(vec![12, 13]);
        tokio::task::yield_now().await;
        while !(first.is_finished() && six.is_finished() && five.is_finished() && two.is_finished())
        {
            gate.notify_one();
            tokio::task::yield_now().await;
        }
        assert_eq!(first.await.unwrap().unwrap(), [0]);
        // Six went alone (five more would pass ten), in the call that failed; five and two
        // went together, in order, in the next.
        assert!(matches!(
            six.await.unwrap(),
            Err(BackendError::Unavailable(_))
        ));
        assert_eq!(five.await.unwrap().unwrap(), (7..=11).collect::<Vec<_>>());
        assert_eq!(two.await.unwrap().unwrap(), [12, 13]);
        let shapes: Vec<(usize, usize)> = lock(&calls)
            .iter()
            .map(|c| (c.requests, c.entries))
            .collect();
        assert_eq!(shapes, [(1, 1), (1, 6), (2, 7)]);
        // The burst is remembered for a second; past that, any queue's next idle moment forgets
        // the lane.
        tokio::time::sleep(REMEMBERED + Duration::from_millis(100)).await;
        let other = {
            let batcher = Arc::clone(&batcher);
            let call: Call<u32, u32> =
                Arc::new(|entries: Vec<u32>| Box::pin(async { Ok(entries) }));
            tokio::spawn(async move { batcher.submit("other", vec![1], call).await })
        };
        other.await.unwrap().unwrap();
        assert!(lock(&batcher.lanes).is_empty(), "idle queues leave nothing");
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_burst_the_next_burst_is_gathered_into_one_call() {
        let (calls, observe) = recorder();
        let batcher = Arc::new(Batcher::new(4, observe).gathering(Duration::from_millis(20)));
        let call: Call<u32, u32> = Arc::new(|entries: Vec<u32>| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(entries)
            })
        });
        let burst = |numbers: std::ops::Range<u32>| {
            numbers
                .map(|n| {
                    let (batcher, call) = (Arc::clone(&batcher), Arc::clone(&call));
                    tokio::spawn(async move { batcher.submit("q", vec![n], call).await })
                })
                .collect::<Vec<_>>()
        };
        for task in burst(0..5) {
            task.await.unwrap().unwrap();
        }
        let first: Vec<usize> = lock(&calls).iter().map(|shape| shape.requests).collect();
        assert_eq!(first, [5], "arrived together");
        // The next burst arrives spread over a millisecond: one call carries it.
        let mut tasks = burst(10..11);
        tokio::time::sleep(Duration::from_micros(500)).await;
        tasks.extend(burst(11..15));
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let all: Vec<usize> = lock(&calls).iter().map(|shape| shape.requests).collect();
        assert_eq!(all, [5, 5]);
        // A lone request later on goes at once.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let started = Instant::now();
        for task in burst(20..21) {
            task.await.unwrap().unwrap();
        }
        assert!(started.elapsed() < Duration::from_millis(3));
    }

    #[tokio::test(start_paused = true)]
    async fn with_gathering_off_a_first_call_always_goes_at_once() {
        let (calls, observe) = recorder();
        let batcher = Arc::new(Batcher::new(4, observe));
        let call: Call<u32, u32> = Arc::new(|entries: Vec<u32>| {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                Ok(entries)
            })
        });
        let submit = |n: u32| {
            let (batcher, call) = (Arc::clone(&batcher), Arc::clone(&call));
            tokio::spawn(async move { batcher.submit("q", vec![n], call).await })
        };
        let burst: Vec<_> = (0..5).map(submit).collect();
        for task in burst {
            task.await.unwrap().unwrap();
        }
        let first = submit(10);
        tokio::time::sleep(Duration::from_micros(500)).await;
        let rest: Vec<_> = (11..15).map(submit).collect();
        first.await.unwrap().unwrap();
        for task in rest {
            task.await.unwrap().unwrap();
        }
        let shapes: Vec<usize> = lock(&calls).iter().map(|shape| shape.requests).collect();
        assert_eq!(shapes, [5, 1, 4], "the next burst's first went alone");
    }
}
