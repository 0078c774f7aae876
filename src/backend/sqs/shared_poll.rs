//! Shared long polls toward SQS: receives waiting on one queue join one `ReceiveMessage` long poll
//! instead of each making its own, so the SQS receives a gateway makes follow the messages it
//! moves, not the consumers that wait.
//!
//! Rules:
//! - Waiters are grouped by queue and visibility timeout (what SQS must be told). A waiter is
//!   answered once: with what one poll brought for it, or empty when its own wait ends or its
//!   client goes away (nothing was taken for it then).
//! - One poll runs per group while the queue is idle; while polls bring messages, up to the
//!   configured number run at once, each started for a full poll's worth (10 messages) that the
//!   waiters want beyond what the polls in flight ask.
//! - A poll asks for what its waiters want beyond what other polls ask (at most 10) and waits as
//!   long as the longest remaining wait. While messages flow, it first waits (twice the last
//!   poll's round trip, at most `backend.fan_in_gather_ms`) for as many waiters as waited at
//!   once in the last second, so consumers that come back together share one poll.
//! - Standard queue: each message goes to exactly one waiter, oldest waiter first, each up to what
//!   it asked for. FIFO queue: a poll asks for what its oldest waiter wants and its answer goes to
//!   one waiter, so the messages of a group that SQS hands out together go to one consumer, in
//!   order.
//! - Messages a poll brought after their waiters left are spare: the next waiter on the queue
//!   gets them (joining, or as its wait ends empty), its visibility timeout set from then, under
//!   the same SQS receipt (their take is not spent twice). One whose lease is nearly over is left
//!   to become visible on its own.
//!   On a FIFO queue a waiter gets a spare prefix up to what it wants and the rest is released
//!   (visible again at once, behind the delivered ones of its group).

use super::batcher::BATCH_ENTRIES;
use super::connections::PollSlots;
use crate::core::backend::BackendError;
use crate::core::metrics::meters::Meters;
use crate::core::model::{BackendMessage, EntryOutcome};
use async_trait::async_trait;
use futures_util::future::BoxFuture;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The longest long poll SQS allows.
const MAX_WAIT_SECONDS: u64 = crate::core::sqs_limits::MAX_WAIT_SECONDS as u64;

/// A spare message is handed on only with at least this much of its lease left, so the new
/// waiter's visibility change reaches SQS before the lease ends.
const LEASE_MARGIN: Duration = Duration::from_secs(2);

/// How long the most waiters seen at once is remembered (how many to gather for).
const REMEMBERED: Duration = Duration::from_secs(1);

/// The least remaining wait a poll is made for.
const MIN_POLL_WAIT: Duration = Duration::from_millis(500);

/// The most spare messages one queue keeps (ten full polls); past it they are released.
const MAX_SPARE: usize = 100;

/// What the shared polls need of SQS.
#[async_trait]
pub(super) trait PollPort: Send + Sync + 'static {
    /// One `ReceiveMessage` call.
    async fn poll(&self, url: &str, ask: PollAsk) -> Result<Vec<BackendMessage>, BackendError>;

    /// Sets these deliveries' visibility timeouts (one outcome each, in order).
    async fn set_visibility(
        &self,
        url: &str,
        entries: Vec<(String, u32)>,
    ) -> Result<Vec<EntryOutcome>, BackendError>;
}

/// What one poll asks SQS for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PollAsk {
    /// `MaxNumberOfMessages`, 1 to 10.
    pub max_messages: u32,
    /// `WaitTimeSeconds`, 1 to 20.
    pub wait_seconds: u32,
    /// `VisibilityTimeout`.
    pub visibility_timeout_seconds: u32,
}

/// One waiting receive, as it joins.
#[derive(Debug, Clone)]
pub(super) struct Join {
    /// The most messages it takes (1 to 10).
    pub max_messages: u32,
    /// How long it waits at most.
    pub wait: Duration,
    /// Its messages' visibility timeout.
    pub visibility_timeout_seconds: u32,
    /// Cancelled when its client went away.
    pub abandoned: CancellationToken,
}

type Answer = Result<Vec<BackendMessage>, BackendError>;

/// The shared polls of every queue.
pub(super) struct SharedPolls {
    groups: Mutex<HashMap<GroupKey, Arc<Group>>>,
    /// Spare messages by queue URL, oldest first.
    spare: Mutex<HashMap<String, VecDeque<Spare>>>,
    port: Arc<dyn PollPort>,
    /// Bounds the polls in flight over every group (`None`: unbounded).
    slots: Option<Arc<PollSlots>>,
    /// Polls one group may have in flight at once while messages flow.
    max_polls: usize,
    /// The longest a poll waits for consumers to come back while messages flow (zero: never).
    max_gather: Duration,
    meters: Meters,
    next_waiter: AtomicU64,
}

impl std::fmt::Debug for SharedPolls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedPolls")
            .field("max_polls", &self.max_polls)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    url: String,
    visibility_timeout_seconds: u32,
}

/// The waiters of one queue with one visibility timeout, and their polls.
struct Group {
    key: GroupKey,
    fifo: bool,
    state: Mutex<GroupState>,
    /// Told of every waiter that joins (a gathering poll waits for them).
    joined: tokio::sync::Notify,
}

#[derive(Default)]
struct GroupState {
    /// In the order they joined.
    waiters: VecDeque<Waiter>,
    /// Polls in flight, and the messages they asked for.
    polls: usize,
    asked: u32,
    /// Whether the last poll brought messages (more polls may then run at once).
    flowing: bool,
    /// The most waiters that waited at once within a window of [`REMEMBERED`] (how many
    /// consumers come back together), when that window began, and how long the last poll with
    /// messages took.
    peak_waiters: usize,
    peak_since: Option<Instant>,
    last_round_trip: Duration,
}

struct Waiter {
    id: u64,
    want: u32,
    deadline: Instant,
    reply: oneshot::Sender<Answer>,
}

struct Spare {
    message: BackendMessage,
    lease_ends: Instant,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl SharedPolls {
    /// Shared polls through `port`, each group running up to `max_polls` at once while messages
    /// flow (at least one).
    pub(super) fn new(
        port: Arc<dyn PollPort>,
        max_polls: usize,
        slots: Option<Arc<PollSlots>>,
        max_gather: Duration,
        meters: Meters,
    ) -> Self {
        Self {
            slots,
            max_gather,
            groups: Mutex::new(HashMap::new()),
            spare: Mutex::new(HashMap::new()),
            port,
            max_polls: max_polls.max(1),
            meters,
            next_waiter: AtomicU64::new(0),
        }
    }

    /// Releases every spare message (the gateway is stopping: no receive will take them). Polls
    /// in flight end with their waiters, which the stopping gateway answers.
    pub(super) fn shut_down(&self) {
        let spare: Vec<(String, VecDeque<Spare>)> = lock(&self.spare).drain().collect();
        for (url, messages) in spare {
            self.release(
                &url,
                messages.into_iter().map(|spare| spare.message).collect(),
            );
        }
    }

    /// Waits on the queue at `url` with the other receives waiting there; what one poll brought
    /// for this receive, or nothing once its wait ended or its client went away.
    pub(super) async fn wait(self: &Arc<Self>, url: &str, fifo: bool, join: &Join) -> Answer {
        let group = self.group(url, fifo, join.visibility_timeout_seconds);
        let deadline = Instant::now() + join.wait;
        let handed = self.spare_for(&group, join.max_messages).await;
        if !handed.is_empty() {
            self.meters.sqs_shared_poll_waiter("messages");
            return Ok(handed);
        }
        let id = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (reply, mut answer) = oneshot::channel();
        let start_poll = {
            let mut state = lock(&group.state);
            state.waiters.push_back(Waiter {
                id,
                want: join.max_messages.clamp(1, BATCH_ENTRIES as u32),
                deadline,
                reply,
            });
            let now = Instant::now();
            if state
                .peak_since
                .is_none_or(|since| now - since >= REMEMBERED)
            {
                state.peak_waiters = state.waiters.len();
                state.peak_since = Some(now);
            } else {
                state.peak_waiters = state.peak_waiters.max(state.waiters.len());
            }
            let start = state.polls == 0;
            if start {
                state.polls += 1;
            }
            start
        };
        if start_poll {
            tokio::spawn(Arc::clone(self).run(Arc::clone(&group)));
        }
        group.joined.notify_waiters();
        let answered = tokio::select! {
            biased;
            answer = &mut answer => answer,
            () = tokio::time::sleep_until(deadline) => {
                if group.leave(id) {
                    // What a poll of another group brought for nobody meanwhile is this one's.
                    Ok(Ok(self.spare_for(&group, join.max_messages).await))
                } else {
                    // Answered as it left: what it got is its own.
                    answer.await
                }
            }
            () = join.abandoned.cancelled() => {
                if group.leave(id) {
                    Ok(Ok(Vec::new()))
                } else {
                    answer.await
                }
            }
        };
        let answer = answered.unwrap_or_else(|_| Ok(Vec::new()));
        let outcome = match &answer {
            Ok(messages) if !messages.is_empty() => "messages",
            _ => "empty",
        };
        self.meters.sqs_shared_poll_waiter(outcome);
        answer
    }

    fn group(&self, url: &str, fifo: bool, visibility_timeout_seconds: u32) -> Arc<Group> {
        let key = GroupKey {
            url: url.to_owned(),
            visibility_timeout_seconds,
        };
        let mut groups = lock(&self.groups);
        Arc::clone(groups.entry(key.clone()).or_insert_with(|| {
            Arc::new(Group {
                key,
                fifo,
                state: Mutex::new(GroupState::default()),
                joined: tokio::sync::Notify::new(),
            })
        }))
    }

    /// Spare messages of the group's queue for a waiter wanting `want`, handed on.
    async fn spare_for(&self, group: &Group, want: u32) -> Vec<BackendMessage> {
        let (spare, release) = self.take_spare(&group.key.url, group.fifo, want);
        self.release(&group.key.url, release);
        if spare.is_empty() {
            return spare;
        }
        self.hand_on(&group.key, spare).await
    }

    /// Up to `want` spare messages of the queue at `url`, and those to release (on a FIFO queue,
    /// what follows the prefix taken).
    fn take_spare(
        &self,
        url: &str,
        fifo: bool,
        want: u32,
    ) -> (Vec<BackendMessage>, Vec<BackendMessage>) {
        let mut queues = lock(&self.spare);
        let Some(spare) = queues.get_mut(url) else {
            return (Vec::new(), Vec::new());
        };
        // One whose lease is nearly over becomes visible on its own.
        let before = spare.len();
        let now = Instant::now();
        spare.retain(|spare| spare.lease_ends > now + LEASE_MARGIN);
        self.meters.sqs_spare("lapsed", before - spare.len());
        let take = spare.len().min(want as usize);
        let taken = spare.drain(..take).map(|spare| spare.message).collect();
        let release = if fifo {
            spare.drain(..).map(|spare| spare.message).collect()
        } else {
            Vec::new()
        };
        if spare.is_empty() {
            queues.remove(url);
        }
        (taken, release)
    }

    /// Keeps messages nobody waited for as spare; answers those past the bound.
    fn hold_spare(
        &self,
        url: &str,
        mut messages: Vec<BackendMessage>,
        lease_ends: Instant,
    ) -> Vec<BackendMessage> {
        let mut queues = lock(&self.spare);
        let spare = queues.entry(url.to_owned()).or_default();
        let room = MAX_SPARE.saturating_sub(spare.len());
        let over = messages.split_off(messages.len().min(room));
        self.meters.sqs_spare("held", messages.len());
        spare.extend(messages.into_iter().map(|message| Spare {
            message,
            lease_ends,
        }));
        over
    }

    /// Sets spare messages' visibility to their new waiter's timeout; the ones SQS took it for.
    async fn hand_on(&self, key: &GroupKey, spare: Vec<BackendMessage>) -> Vec<BackendMessage> {
        let entries = spare
            .iter()
            .map(|message| {
                (
                    message.backend_handle.clone(),
                    key.visibility_timeout_seconds,
                )
            })
            .collect();
        match self.port.set_visibility(&key.url, entries).await {
            Ok(outcomes) => {
                let handed: Vec<BackendMessage> = spare
                    .into_iter()
                    .zip(outcomes)
                    .filter(|(_, outcome)| *outcome == EntryOutcome::Ok)
                    .map(|(message, _)| message)
                    .collect();
                self.meters.sqs_spare("handed_on", handed.len());
                handed
            }
            Err(error) => {
                tracing::warn!(
                    count = spare.len(),
                    %error,
                    "could not hand on messages a shared poll brought; they reappear after their visibility timeout"
                );
                self.meters.sqs_spare("lapsed", spare.len());
                Vec::new()
            }
        }
    }

    /// Releases (visibility 0) messages nobody gets, in the background.
    fn release(&self, url: &str, messages: Vec<BackendMessage>) {
        if messages.is_empty() {
            return;
        }
        self.meters.sqs_spare("released", messages.len());
        let port = Arc::clone(&self.port);
        let url = url.to_owned();
        tokio::spawn(async move {
            let entries: Vec<(String, u32)> = messages
                .into_iter()
                .map(|message| (message.backend_handle, 0))
                .collect();
            for chunk in entries.chunks(BATCH_ENTRIES) {
                if let Err(error) = port.set_visibility(&url, chunk.to_vec()).await {
                    tracing::warn!(
                        count = chunk.len(),
                        %error,
                        "could not release messages nobody waited for; they reappear after their visibility timeout"
                    );
                }
            }
        });
    }

    /// Polls for the group's waiters until none is left (or other polls serve them).
    fn run(self: Arc<Self>, group: Arc<Group>) -> BoxFuture<'static, ()> {
        Box::pin(async move { self.poll_while_waited(group).await })
    }

    async fn poll_while_waited(self: Arc<Self>, group: Arc<Group>) {
        loop {
            // A slot first, so the ask is made for the waiters there are once it starts.
            let slot = match &self.slots {
                Some(slots) => Some(slots.enter(&group.key.url).await),
                None => None,
            };
            group.gather(self.max_gather).await;
            let Some(mut ask) = self.next_ask(&group) else {
                return;
            };
            if let Some(slots) = &self.slots {
                ask.wait_seconds = slots.wait_seconds(ask.wait_seconds);
            }
            let asked_at = Instant::now();
            let answer = self.port.poll(&group.key.url, ask).await;
            let round_trip = asked_at.elapsed();
            drop(slot);
            let (outcome, brought) = match &answer {
                Ok(messages) if messages.is_empty() => ("empty", 0),
                Ok(messages) => ("messages", messages.len()),
                Err(_) => ("error", 0),
            };
            let (release, more) = self.settle(&group, ask, answer, round_trip);
            self.meters.sqs_shared_poll(outcome, brought);
            self.release(&group.key.url, release);
            for _ in 0..more {
                tokio::spawn(Arc::clone(&self).run(Arc::clone(&group)));
            }
        }
    }

    /// What the next poll asks; `None` (and this poll counted out) when none is needed.
    fn next_ask(&self, group: &Group) -> Option<PollAsk> {
        let mut groups = None;
        loop {
            let mut state = lock(&group.state);
            let now = Instant::now();
            state
                .waiters
                .retain(|waiter| !waiter.reply.is_closed() && waiter.deadline > now);
            let longest = state
                .waiters
                .iter()
                .map(|waiter| waiter.deadline - now)
                .max()
                .unwrap_or_default();
            let wanted: u32 = if group.fifo {
                state.waiters.front().map_or(0, |waiter| waiter.want)
            } else {
                state.waiters.iter().map(|waiter| waiter.want).sum()
            };
            let ask = wanted
                .saturating_sub(if group.fifo { 0 } else { state.asked })
                .min(BATCH_ENTRIES as u32);
            // A wait nearly over gets no poll of its own (SQS waits whole seconds): it answers
            // empty at its end, as the poll just made for it would have.
            if ask > 0 && longest >= MIN_POLL_WAIT {
                state.asked += ask;
                // Whole seconds, rounded up: no waiter is cut short.
                let seconds = longest.as_secs() + u64::from(longest.subsec_nanos() > 0);
                return Some(PollAsk {
                    max_messages: ask,
                    wait_seconds: u32::try_from(seconds.min(MAX_WAIT_SECONDS)).unwrap_or(20),
                    visibility_timeout_seconds: group.key.visibility_timeout_seconds,
                });
            }
            // This poll ends; an idle group is forgotten (the map's lock first, as `group` takes
            // them, so no waiter joins a group no longer in the map).
            let Some(groups) = &mut groups else {
                drop(state);
                groups = Some(lock(&self.groups));
                continue;
            };
            state.polls -= 1;
            if state.polls == 0 && state.waiters.is_empty() {
                groups.remove(&group.key);
            }
            return None;
        }
    }

    /// Hands a poll's answer out; the messages to release and how many more polls to start.
    fn settle(
        &self,
        group: &Group,
        ask: PollAsk,
        answer: Answer,
        round_trip: Duration,
    ) -> (Vec<BackendMessage>, usize) {
        let mut state = lock(&group.state);
        state.asked -= ask.max_messages;
        let messages = match answer {
            Ok(messages) => messages,
            Err(error) => {
                // Each waiter would have had its own call's error.
                state.flowing = false;
                for waiter in state.waiters.drain(..) {
                    let _ = waiter.reply.send(Err(error.clone()));
                }
                return (Vec::new(), 0);
            }
        };
        state.flowing = !messages.is_empty();
        let mut release = Vec::new();
        let mut rest: VecDeque<BackendMessage> = messages.into();
        while !rest.is_empty() {
            let Some(waiter) = state.waiters.pop_front() else {
                break;
            };
            let take = rest.len().min(waiter.want as usize);
            let mine: Vec<BackendMessage> = rest.drain(..take).collect();
            if let Err(Ok(unsent)) = waiter.reply.send(Ok(mine)) {
                // It went without leaving: its messages go to the next one.
                for message in unsent.into_iter().rev() {
                    rest.push_front(message);
                }
                continue;
            }
            if group.fifo {
                // An answer goes to one waiter: the rest of it would split a group.
                release.extend(rest.drain(..));
            }
        }
        if state.flowing {
            state.last_round_trip = round_trip;
        }
        if !rest.is_empty() {
            let lease_ends =
                Instant::now() + Duration::from_secs(ask.visibility_timeout_seconds.into());
            release.extend(self.hold_spare(&group.key.url, Vec::from(rest), lease_ends));
        }
        let mut more = 0;
        if state.flowing && !group.fifo {
            let wanted: u32 = state.waiters.iter().map(|waiter| waiter.want).sum();
            let mut asked = state.asked;
            // Another poll only for a full poll's worth of waiting: fewer, fuller calls.
            while state.polls < self.max_polls && wanted >= asked + BATCH_ENTRIES as u32 {
                state.polls += 1;
                more += 1;
                asked += BATCH_ENTRIES as u32;
            }
        }
        (release, more)
    }
}

impl Group {
    /// While messages flow, waits (up to twice the last poll's round trip, at most
    /// `max_gather`) until as many waiters wait as waited at once within the last second: consumers busy with
    /// what it brought come back together, and one poll serves them all instead of each its own.
    async fn gather(&self, max_gather: Duration) {
        let deadline = {
            let state = lock(&self.state);
            if max_gather.is_zero()
                || !state.flowing
                || self.fifo
                || state.waiters.len() >= state.peak_waiters
            {
                return;
            }
            Instant::now() + (state.last_round_trip * 2).min(max_gather)
        };
        loop {
            let joined = self.joined.notified();
            tokio::pin!(joined);
            joined.as_mut().enable();
            {
                let state = lock(&self.state);
                let wanted: u32 = state.waiters.iter().map(|waiter| waiter.want).sum();
                if state.waiters.len() >= state.peak_waiters || wanted >= BATCH_ENTRIES as u32 {
                    return;
                }
            }
            tokio::select! {
                () = joined => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Leaves the group; false when it was answered first.
    fn leave(&self, id: u64) -> bool {
        let mut state = lock(&self.state);
        let before = state.waiters.len();
        state.waiters.retain(|waiter| waiter.id != id);
        state.waiters.len() < before
    }
}

#[cfg(test)]
mod tests;
