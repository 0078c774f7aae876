//! One queue: its messages and the indexes that answer every operation without a scan, and the
//! SQS rules of each operation, journaling every change it makes.

use super::bodies::{Body, BodyCache, Held};
use super::fifo::{Attempts, Dedup, Deduplication, FIFO_WINDOW_MS, Groups, sequence_number};
use super::journal::Op;
use super::message::{Message, Moving, State, first_receive_time};
use super::receive::{Delivered, InFlightLimits, Received, Take};
use super::settings::Settings;
use crate::core::model::{
    EntryError, EntryErrorKind, EntryOutcome, ExpiredVisibility, OutgoingMessage, QueueStats,
    SentMessage,
};
use crate::core::sqs_limits::MAX_DELAY_SECONDS;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::num::NonZeroU64;
use std::sync::Arc;

/// The account id in embedded queue ARNs.
pub const ACCOUNT: &str = "000000000000";
/// The region in embedded queue ARNs.
pub const REGION: &str = "us-east-1";

/// One queue.
#[derive(Debug)]
pub struct Queue {
    /// The queue's name.
    pub name: String,
    /// The same, shared by its journal records (one per message changed: no copy each).
    journal_name: Arc<str>,
    /// Set when the queue is deleted, so operations that already hold it change nothing.
    pub deleted: bool,
    /// Its ARN.
    pub arn: String,
    /// Its settings.
    pub settings: Settings,
    messages: BTreeMap<u64, Message>,
    /// Messages not yet taken as visible, by (visible_at, seq): [`Queue::expire`] moves those
    /// whose time came to `ready`.
    hidden: BTreeSet<(i64, u64)>,
    /// Visible messages by sequence number: a receive takes them in send order, so a message
    /// whose visibility timeout ended goes back before the messages sent after it (SQS's best
    /// effort).
    ready: BTreeSet<u64>,
    /// In-flight deliveries by (deadline, seq).
    in_flight: BTreeSet<(i64, u64)>,
    /// Every message by (sent_at, seq): retention and the oldest age without a scan (messages
    /// moved in from another queue keep their send time, so sequence order is not age order).
    by_age: BTreeSet<(i64, u64)>,
    /// FIFO: its message groups.
    groups: Groups,
    /// FIFO: its deduplication records.
    dedup: Deduplication,
    /// FIFO: its receive attempts, for replay.
    attempts: Attempts,
    next_seq: u64,
    /// Bodies held in memory only until the store has them, in sequence order.
    unsettled: VecDeque<u64>,
    /// The bound on bodies kept in memory, shared with the backend's other queues.
    cache: Arc<BodyCache>,
}

impl Queue {
    /// An empty queue that keeps every body in memory.
    pub fn new(name: &str, settings: Settings) -> Self {
        Self::with_cache(name, settings, Arc::new(BodyCache::unbounded()))
    }

    /// An empty queue whose bodies stay in memory within `cache` (the rest only on disk).
    pub fn with_cache(name: &str, settings: Settings, cache: Arc<BodyCache>) -> Self {
        Self {
            name: name.to_owned(),
            journal_name: Arc::from(name),
            deleted: false,
            arn: format!("arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"),
            settings,
            messages: BTreeMap::new(),
            hidden: BTreeSet::new(),
            ready: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            by_age: BTreeSet::new(),
            groups: Groups::default(),
            dedup: Deduplication::default(),
            attempts: Attempts::default(),
            next_seq: 1,
            unsettled: VecDeque::new(),
            cache,
        }
    }

    /// Restores the messages read back from the store, in sequence order, into an empty queue
    /// (their bodies stay on disk). The indexes are built in bulk, so their nodes are full: a
    /// reopened backlog takes less memory than one grown message by message.
    pub fn restore_messages(
        &mut self,
        messages: Vec<(u64, State, i64, Option<Arc<str>>)>,
        now: i64,
    ) {
        debug_assert!(self.messages.is_empty(), "restore into an empty queue");
        let mut hidden = Vec::with_capacity(messages.len());
        let mut ready = Vec::with_capacity(messages.len());
        let mut by_age = Vec::with_capacity(messages.len());
        let mut restored = Vec::with_capacity(messages.len());
        for (seq, state, sent_at, group_id) in messages {
            let mut message = Message {
                state,
                sent_at,
                group_id,
                held: Held::Stored,
            };
            self.next_seq = self.next_seq.max(seq + 1);
            if state.visible_at <= now {
                ready.push(seq);
            } else {
                hidden.push((state.visible_at, seq));
            }
            by_age.push((sent_at, seq));
            self.join_group(seq, &mut message);
            if state.receipt.is_some() && state.visible_at > now {
                self.in_flight.insert((state.visible_at, seq));
            }
            restored.push((seq, message));
        }
        restored.sort_unstable_by_key(|(seq, _)| *seq);
        hidden.sort_unstable();
        ready.sort_unstable();
        by_age.sort_unstable();
        self.messages = restored.into_iter().collect();
        self.hidden = hidden.into_iter().collect();
        self.ready = ready.into_iter().collect();
        self.by_age = by_age.into_iter().collect();
    }

    /// Where the queue stands for [`Queue::settle_before`]: take it when submitting a journal.
    pub fn settle_mark(&self) -> u64 {
        self.next_seq
    }

    /// The store committed everything journaled before `mark`: bodies held only until then
    /// leave memory.
    pub fn settle_before(&mut self, mark: u64) {
        while let Some(&seq) = self.unsettled.front() {
            if seq >= mark {
                break;
            }
            self.unsettled.pop_front();
            if let Some(message) = self.messages.get_mut(&seq)
                && matches!(message.held, Held::Unsettled(_))
            {
                message.held = Held::Stored;
            }
        }
    }

    /// Bodies held in memory by this queue until the store has them.
    pub fn unsettled(&self) -> usize {
        self.unsettled.len()
    }

    /// Holds `body` for the message about to get `seq`: cached while the cache has room.
    fn hold(&mut self, seq: u64, body: Arc<Body>) -> Held {
        let held = self.cache.hold(body);
        if matches!(held, Held::Unsettled(_)) {
            self.unsettled.push_back(seq);
        }
        held
    }

    /// Lets go of a message's body (it is leaving the queue).
    fn drop_held(&self, held: &Held) {
        self.cache.let_go(held);
    }

    /// FIFO: files `seq` under its group; the message keeps the group's shared id.
    fn join_group(&mut self, seq: u64, message: &mut Message) {
        if let Some(group) = &message.group_id {
            message.group_id = Some(self.groups.join(seq, group));
        }
    }

    /// FIFO: takes `seq` out of its group.
    fn quit_group(&mut self, seq: u64, message: &Message) {
        if let Some(group) = &message.group_id {
            self.groups.quit(seq, group);
        }
    }

    /// Restores the deduplication records read back from the store, in any order.
    pub fn restore_dedup(&mut self, records: Vec<(String, Dedup)>) {
        self.dedup.restore(records);
    }

    /// Restores the sequence counter read back from the store.
    pub fn restore_next_seq(&mut self, next: u64) {
        self.next_seq = self.next_seq.max(next);
    }

    /// Number of messages held.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the queue holds no message.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    fn index(&mut self, seq: u64, message: &Message, now: i64) {
        if message.state.visible_at <= now {
            self.ready.insert(seq);
        } else {
            self.hidden.insert((message.state.visible_at, seq));
        }
        if message.state.receipt.is_some() && message.state.visible_at > now {
            self.in_flight.insert((message.state.visible_at, seq));
        }
    }

    fn unindex(&mut self, seq: u64, message: &Message) {
        self.hidden.remove(&(message.state.visible_at, seq));
        self.ready.remove(&seq);
        self.in_flight.remove(&(message.state.visible_at, seq));
    }

    /// Applies the passage of time: in-flight deliveries whose timeout ended become visible,
    /// messages past retention are deleted, and old dedup and attempt records are dropped.
    pub fn expire(&mut self, now: i64, journal: &mut Vec<Op>) {
        while let Some(&(visible_at, seq)) = self.hidden.first() {
            if visible_at > now {
                break;
            }
            self.hidden.pop_first();
            self.ready.insert(seq);
        }
        while let Some(&(deadline, _)) = self.in_flight.first() {
            if deadline > now {
                break;
            }
            self.in_flight.pop_first();
        }
        let retention_ms = i64::from(self.settings.retention_seconds) * 1000;
        while let Some(&(sent_at, seq)) = self.by_age.first() {
            if sent_at + retention_ms > now {
                break;
            }
            self.remove(seq, journal);
        }
        for key in self.dedup.expire(now) {
            journal.push(Op::DeleteDedup {
                queue: Arc::clone(&self.journal_name),
                key,
            });
        }
        self.attempts.expire(now);
    }

    fn remove(&mut self, seq: u64, journal: &mut Vec<Op>) -> Option<Message> {
        let message = self.detach(seq)?;
        self.drop_held(&message.held);
        journal.push(Op::DeleteMessage {
            queue: Arc::clone(&self.journal_name),
            seq,
        });
        Some(message)
    }

    /// Takes `seq` out of memory and its indexes; the store is the caller's business.
    fn detach(&mut self, seq: u64) -> Option<Message> {
        let message = self.messages.remove(&seq)?;
        self.unindex(seq, &message);
        self.by_age.remove(&(message.sent_at, seq));
        self.quit_group(seq, &message);
        Some(message)
    }

    /// Takes `seq` out to move it into another queue: its records stay in the store until the
    /// other queue's [`Op::MoveBody`] copies them, in the same journal.
    fn detach_for_move(&mut self, seq: u64) -> Option<Moving> {
        let message = self.detach(seq)?;
        self.drop_held(&message.held);
        Some(Moving {
            from_queue: Arc::clone(&self.journal_name),
            from_seq: seq,
            message,
        })
    }

    /// Sends one message.
    pub fn send(
        &mut self,
        message: OutgoingMessage,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Result<SentMessage, EntryError> {
        self.expire(now, journal);
        let size = crate::core::message_rules::check_stored(&message)?;
        if size > self.settings.max_message_bytes as usize {
            return Err(crate::core::message_rules::too_long(
                self.settings.max_message_bytes as usize,
            ));
        }
        let delay = if self.settings.fifo {
            // As SQS: a FIFO message takes the queue's delay; `0` is the same as none.
            match message.delay_seconds {
                None | Some(0) => self.settings.delay_seconds,
                Some(delay) => {
                    return Err(not_for_this_queue_type("DelaySeconds", &delay.to_string()));
                }
            }
        } else {
            // A group id on a standard queue is a fair queue's tenant (kept and answered); a
            // deduplication id is FIFO's alone.
            if let Some(id) = &message.deduplication_id {
                return Err(not_for_this_queue_type("MessageDeduplicationId", id));
            }
            match message.delay_seconds {
                Some(delay) if delay > MAX_DELAY_SECONDS => {
                    return Err(EntryError::invalid(format!(
                        "Value {delay} for parameter DelaySeconds is invalid. Reason: Must be between 0 and {MAX_DELAY_SECONDS}, if provided."
                    )));
                }
                Some(delay) => delay,
                None => self.settings.delay_seconds,
            }
        };

        let dedup_key = if self.settings.fifo {
            let group = message.group_id.as_deref().unwrap_or_default();
            if group.is_empty() {
                return Err(EntryError::new(
                    EntryErrorKind::MissingParameter,
                    crate::core::message_rules::MISSING_GROUP_ID,
                ));
            }
            crate::core::message_rules::check_fifo_id("MessageGroupId", Some(group))?;
            let id = match (
                &message.deduplication_id,
                self.settings.content_based_deduplication,
            ) {
                (Some(id), _) => id.clone(),
                (None, true) => hex::encode(Sha256::digest(message.body.as_bytes())),
                (None, false) => {
                    return Err(EntryError::invalid(
                        crate::core::message_rules::MISSING_DEDUPLICATION_ID,
                    ));
                }
            };
            // Per message group, the same id in another group is another message. A NUL joins
            // them: ids and groups are printable, so no two pairs make one key.
            let key = if self.settings.per_group_deduplication {
                format!("{group}\u{0}{id}")
            } else {
                id.clone()
            };
            if let Some(previous) = self.dedup.get(&key) {
                return Ok(SentMessage {
                    message_id: previous.message_id,
                    sequence_number: Some(sequence_number(previous.seq)),
                });
            }
            Some((key, id))
        } else {
            None
        };

        let body = Arc::new(Body {
            id: uuid::Uuid::new_v4().to_string(),
            body: message.body,
            attributes: message.attributes,
            sent_at: now,
            group_id: message.group_id,
            dead_letter_source_arn: None,
            deduplication_id: dedup_key.as_ref().map(|(_, id)| id.clone()),
            trace_header: message.trace_header,
        });
        let state = State {
            receive_count: 0,
            first_received_at: None,
            visible_at: now + i64::from(delay) * 1000,
            receipt: None,
        };
        let message_id = body.id.clone();
        let seq = self.append(body, state, now, journal);
        let sent = SentMessage {
            message_id,
            sequence_number: self.settings.fifo.then(|| sequence_number(seq)),
        };
        if let Some((key, _)) = dedup_key {
            let dedup = Dedup {
                expires_at: now + FIFO_WINDOW_MS,
                message_id: sent.message_id.clone(),
                seq,
            };
            journal.push(Op::PutDedup {
                queue: Arc::clone(&self.journal_name),
                key: key.clone(),
                dedup: dedup.clone(),
            });
            self.dedup.insert(key, dedup);
        }
        Ok(sent)
    }

    /// Takes a message moved here by another queue's dead-letter rule.
    pub fn accept_dead_letter(
        &mut self,
        moving: Moving,
        source_arn: &str,
        now: i64,
        journal: &mut Vec<Op>,
    ) {
        let mut state = moving.message.state;
        state.visible_at = now;
        state.receipt = None;
        self.append_moved(moving, Some(source_arn.to_owned()), state, now, journal);
    }

    /// Takes back a message of its own past its max receive count, when the queue is its own
    /// dead-letter queue: at its end, with a new delivery history (else every receive would move
    /// it again and none deliver it).
    pub fn accept_own_dead_letter(&mut self, moving: Moving, now: i64, journal: &mut Vec<Op>) {
        let state = State {
            receive_count: 0,
            first_received_at: None,
            visible_at: now,
            receipt: None,
        };
        let arn = self.arn.clone();
        self.append_moved(moving, Some(arn), state, now, journal);
    }

    /// The first message visible now (not delayed, not in flight), in queue order.
    pub fn first_visible(&self, now: i64) -> Option<(u64, &Message)> {
        let due = self.hidden.range(..(now + 1, 0)).map(|(_, seq)| *seq).min();
        let seq = self.ready.first().copied().into_iter().chain(due).min()?;
        self.messages.get(&seq).map(|message| (seq, message))
    }

    /// The message at `seq`, if it is still in the queue.
    pub fn at(&self, seq: u64) -> Option<&Message> {
        self.messages.get(&seq)
    }

    /// Takes a message out for a move elsewhere (a redrive); the destination's
    /// [`Queue::accept_redriven`] journals the move.
    pub fn take(&mut self, seq: u64) -> Option<Moving> {
        self.detach_for_move(seq)
    }

    /// Takes a message moved back from a dead-letter queue: its id, body and attributes stay; its
    /// delivery history starts again (so it is not dead-lettered straight back), visible now.
    pub fn accept_redriven(&mut self, moving: Moving, now: i64, journal: &mut Vec<Op>) {
        let state = State {
            receive_count: 0,
            first_received_at: None,
            visible_at: now,
            receipt: None,
        };
        self.append_moved(moving, None, state, now, journal);
    }

    /// Adds a new message at the end of the queue under the next sequence number (answered),
    /// journaling the number, its body and its state.
    fn append(&mut self, body: Arc<Body>, state: State, now: i64, journal: &mut Vec<Op>) -> u64 {
        let seq = self.next_seq();
        journal.push(Op::PutBody {
            queue: Arc::clone(&self.journal_name),
            seq,
            body: Arc::clone(&body),
        });
        let message = Message {
            state,
            sent_at: body.sent_at,
            group_id: body.group_id.as_deref().map(Arc::from),
            held: self.hold(seq, body),
        };
        self.insert(seq, message, now, journal);
        seq
    }

    /// Adds a message moved from another queue at the end of this one: the store copies its body
    /// over ([`Op::MoveBody`]) with its new dead-letter source.
    fn append_moved(
        &mut self,
        moving: Moving,
        dead_letter_source_arn: Option<String>,
        state: State,
        now: i64,
        journal: &mut Vec<Op>,
    ) {
        let seq = self.next_seq();
        journal.push(Op::MoveBody {
            from_queue: moving.from_queue,
            from_seq: moving.from_seq,
            to_queue: Arc::clone(&self.journal_name),
            to_seq: seq,
            dead_letter_source_arn: dead_letter_source_arn.clone(),
        });
        let held = match moving.message.held.resident() {
            Some(body) => {
                let body = Arc::new(Body {
                    dead_letter_source_arn,
                    ..Body::clone(body)
                });
                self.hold(seq, body)
            }
            None => Held::Stored,
        };
        let message = Message {
            state,
            held,
            ..moving.message
        };
        self.insert(seq, message, now, journal);
    }

    fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    fn insert(&mut self, seq: u64, mut message: Message, now: i64, journal: &mut Vec<Op>) {
        self.join_group(seq, &mut message);
        journal.push(Op::PutSeq {
            queue: Arc::clone(&self.journal_name),
            next: self.next_seq,
        });
        journal.push(self.state_record(seq, &message));
        self.index(seq, &message, now);
        self.by_age.insert((message.sent_at, seq));
        self.messages.insert(seq, message);
    }

    /// The journal record of a message's (new) state.
    fn state_record(&self, seq: u64, message: &Message) -> Op {
        Op::PutState {
            queue: Arc::clone(&self.journal_name),
            seq,
            state: message.state,
            sent_at: message.sent_at,
            group_id: message.group_id.clone(),
        }
    }

    /// Receives up to `max` messages, hiding them for `visibility_seconds`.
    ///
    /// `dead_letter_ready` says whether this queue's dead-letter queue exists; only then are
    /// messages past their max receive count moved (on this receive, as SQS does) instead of
    /// delivered.
    pub fn receive(
        &mut self,
        max: usize,
        visibility_seconds: u32,
        attempt_id: Option<&str>,
        dead_letter_ready: bool,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Received {
        let limits = InFlightLimits::default();
        self.receive_within(
            Take::upto(max),
            visibility_seconds,
            attempt_id,
            dead_letter_ready,
            limits,
            now,
            journal,
        )
    }

    /// [`Queue::receive`] with in-flight limits other than SQS's.
    #[allow(clippy::too_many_arguments)]
    pub fn receive_within(
        &mut self,
        take: Take,
        visibility_seconds: u32,
        attempt_id: Option<&str>,
        dead_letter_ready: bool,
        limits: InFlightLimits,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> Received {
        self.expire(now, journal);
        let mut received = Received::default();
        if self.settings.fifo
            && let Some(deliveries) = attempt_id.and_then(|id| self.attempts.replay(id))
        {
            // A retried attempt gets the same deliveries back (those not deleted or received
            // again since), hidden anew for this receive's visibility timeout.
            for (seq, receipt) in deliveries {
                let Some(message) = self.messages.get(&seq).cloned() else {
                    continue;
                };
                if !message.state.is_delivery(receipt) {
                    continue;
                }
                self.unindex(seq, &message);
                let mut updated = message;
                updated.state.visible_at = now + i64::from(visibility_seconds) * 1000;
                self.index(seq, &updated, now);
                journal.push(self.state_record(seq, &updated));
                self.messages.insert(seq, updated.clone());
                received.delivered.push(Delivered {
                    seq,
                    receipt,
                    message: updated,
                });
            }
            if !received.delivered.is_empty() {
                return received;
            }
        }
        let limit = if self.settings.fifo {
            limits.fifo
        } else {
            limits.standard
        };
        let room = limit.saturating_sub(self.in_flight.len());
        if room == 0 && !self.settings.fifo {
            received.over_limit = true;
            return received;
        }
        let max = take.max;
        let candidates = if self.settings.fifo {
            self.fifo_candidates(max.min(room), take.one_per_group, now)
        } else {
            // `expire` above made every visible message ready.
            self.ready.iter().take(max.min(room)).copied().collect()
        };
        let max_receives = self
            .settings
            .dead_letter
            .as_ref()
            .filter(|_| dead_letter_ready)
            .map(|(_, count)| *count);
        for seq in candidates {
            let Some(message) = self.messages.get(&seq).cloned() else {
                continue;
            };
            if max_receives.is_some_and(|count| message.state.receive_count >= count) {
                if let Some(moving) = self.detach_for_move(seq) {
                    received.dead_lettered.push(moving);
                }
                continue;
            }
            self.unindex(seq, &message);
            let receipt = rand::random::<NonZeroU64>();
            let mut updated = message;
            updated.state.receive_count += 1;
            updated
                .state
                .first_received_at
                .get_or_insert(first_receive_time(now));
            updated.state.visible_at = now + i64::from(visibility_seconds) * 1000;
            updated.state.receipt = Some(receipt);
            self.index(seq, &updated, now);
            journal.push(self.state_record(seq, &updated));
            self.messages.insert(seq, updated.clone());
            received.delivered.push(Delivered {
                seq,
                receipt: receipt.get(),
                message: updated,
            });
        }
        if self.settings.fifo {
            for delivered in &received.delivered {
                if let Some(group) = &delivered.message.group_id {
                    self.groups.taken(group);
                }
            }
        }
        // Only an attempt that got messages is worth replaying; an empty one stays retryable.
        if self.settings.fifo
            && !received.delivered.is_empty()
            && let Some(id) = attempt_id
        {
            let deliveries = received.delivered.iter().map(|d| (d.seq, d.receipt));
            self.attempts.remember(id, deliveries.collect(), now);
        }
        received
    }

    /// FIFO: the messages a receive may take, group by group, never passing a group's message
    /// that is not visible (see [`Groups::candidates`]).
    fn fifo_candidates(&self, max: usize, one_per_group: bool, now: i64) -> Vec<u64> {
        let visible = |seq: u64| {
            self.messages
                .get(&seq)
                .is_some_and(|message| message.state.visible_at <= now)
        };
        self.groups.candidates(max, one_per_group, visible)
    }

    /// The time the next hidden message becomes visible, if any.
    pub fn next_visible_at(&self, now: i64) -> Option<i64> {
        self.hidden
            .range((now + 1, 0)..)
            .next()
            .map(|(visible_at, _)| *visible_at)
    }

    /// FIFO: whether `(seq, receipt)` is the message's current delivery and its visibility timeout
    /// ended (no receive took the message since).
    pub fn fifo_delivery_expired(&self, seq: u64, receipt: u64, now: i64) -> bool {
        self.settings.fifo
            && self.messages.get(&seq).is_some_and(|message| {
                message.state.is_delivery(receipt) && message.state.visible_at <= now
            })
    }

    /// Deletes the delivery `(seq, receipt)`: only the current delivery of a message can.
    pub fn delete(&mut self, seq: u64, receipt: u64, journal: &mut Vec<Op>) -> EntryOutcome {
        match self.messages.get(&seq) {
            Some(message) if message.state.is_delivery(receipt) => {
                self.remove(seq, journal);
                EntryOutcome::Ok
            }
            _ => EntryOutcome::Gone,
        }
    }

    /// Sets the delivery's visibility timeout to `seconds` from now. A delivery whose timeout
    /// ended (no receive took the message since) is changed, hidden again, as SQS does, or
    /// refused (`NotInFlight`), as `expired` says; under [`ExpiredVisibility::Change`] an earlier
    /// delivery's handle changes the current delivery's visibility, as on SQS.
    pub fn change_visibility(
        &mut self,
        seq: u64,
        receipt: u64,
        seconds: u32,
        expired: ExpiredVisibility,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> EntryOutcome {
        let receipt = match (expired, self.messages.get(&seq)) {
            (ExpiredVisibility::Change, Some(message)) => {
                message.state.receipt.map_or(receipt, NonZeroU64::get)
            }
            _ => receipt,
        };
        self.change_delivery(seq, receipt, now, journal, |state| {
            if state.visible_at <= now && expired == ExpiredVisibility::Refuse {
                return Err(EntryOutcome::NotInFlight);
            }
            state.visible_at = now + i64::from(seconds) * 1000;
            Ok(())
        })
    }

    /// Gives back the delivery `(seq, receipt)`, which no client got: visible now, its receive
    /// count and first receive time as before it was taken. Only the current delivery can.
    pub fn return_undelivered(
        &mut self,
        seq: u64,
        receipt: u64,
        now: i64,
        journal: &mut Vec<Op>,
    ) -> EntryOutcome {
        self.change_delivery(seq, receipt, now, journal, |state| {
            state.receive_count = state.receive_count.saturating_sub(1);
            if state.receive_count == 0 {
                state.first_received_at = None;
                state.receipt = None;
            }
            state.visible_at = state.visible_at.min(now);
            Ok(())
        })
    }

    /// Applies `change` to the state of the delivery `(seq, receipt)` if it is the message's
    /// current one (else `Gone`), re-indexing and journaling it; `change` may refuse with the
    /// outcome to answer, changing nothing.
    fn change_delivery(
        &mut self,
        seq: u64,
        receipt: u64,
        now: i64,
        journal: &mut Vec<Op>,
        change: impl FnOnce(&mut State) -> Result<(), EntryOutcome>,
    ) -> EntryOutcome {
        self.expire(now, journal);
        let Some(message) = self.messages.get(&seq).cloned() else {
            return EntryOutcome::Gone;
        };
        if !message.state.is_delivery(receipt) {
            return EntryOutcome::Gone;
        }
        let mut state = message.state;
        if let Err(refused) = change(&mut state) {
            return refused;
        }
        self.unindex(seq, &message);
        let mut updated = message;
        updated.state = state;
        self.index(seq, &updated, now);
        journal.push(self.state_record(seq, &updated));
        self.messages.insert(seq, updated);
        EntryOutcome::Ok
    }

    /// Deletes every message, in flight too, and forgets the deduplication ids (as SQS does).
    pub fn purge(&mut self, journal: &mut Vec<Op>) {
        for message in std::mem::take(&mut self.messages).into_values() {
            self.drop_held(&message.held);
        }
        self.unsettled.clear();
        self.hidden.clear();
        self.ready.clear();
        self.in_flight.clear();
        self.by_age.clear();
        self.groups.clear();
        self.attempts.clear();
        self.dedup.clear();
        journal.push(Op::Purge {
            queue: Arc::clone(&self.journal_name),
        });
    }

    /// Up to `max` messages in order from the one after sequence number `after` (from the
    /// first without), with their sequence numbers, without changing anything.
    pub fn peek(&self, after: Option<u64>, max: usize) -> Vec<(u64, Message)> {
        let from = match after {
            Some(seq) => std::ops::Bound::Excluded(seq),
            None => std::ops::Bound::Unbounded,
        };
        self.messages
            .range((from, std::ops::Bound::Unbounded))
            .take(max)
            .map(|(seq, message)| (*seq, message.clone()))
            .collect()
    }

    /// Counts by state.
    pub fn stats(&self, now: i64) -> QueueStats {
        let visible = (self.ready.len() + self.hidden.range(..(now + 1, 0)).count()) as u64;
        let in_flight = self.in_flight.range((now + 1, 0)..).count() as u64;
        let total = self.messages.len() as u64;
        QueueStats {
            visible,
            in_flight,
            delayed: total.saturating_sub(visible + in_flight),
            oldest_age_seconds: self
                .by_age
                .first()
                .map(|(sent_at, _)| u64::try_from((now - sent_at).max(0) / 1000).unwrap_or(0)),
        }
    }
}

/// SQS's refusal of a parameter the queue's type does not take.
fn not_for_this_queue_type(parameter: &str, value: &str) -> EntryError {
    let shown: String = value.chars().take(1024).collect();
    EntryError::invalid(format!(
        "Value {shown} for parameter {parameter} is invalid. Reason: The request include parameter that is not valid for this queue type."
    ))
}

impl Drop for Queue {
    /// The bodies it kept leave the shared cache's count.
    fn drop(&mut self) {
        for message in self.messages.values() {
            self.drop_held(&message.held);
        }
    }
}

#[cfg(test)]
mod tests;
