//! The writer thread: group commit. It takes every submission waiting, appends their records to
//! the journal in order and syncs once, answers them, and hands the records to the applier; a
//! receive's states wait in it until a later record replaces them or a flush writes them.

use super::applier::{Checkpointed, ToApply};
use super::apply::{state_replaced_by, superseded_states};
use super::error::StoreError;
use super::journal::{FRAME_TARGET, Journal};
use super::record::Record;
use crate::backend::embedded::engine::Op;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Submissions applied in one transaction at most; bounds the latency of the first in a batch.
const MAX_BATCH: usize = 8_192;
/// How long unsynced records wait for the next synced commit before one is made for them alone:
/// what a crash can take back of a receive.
pub(super) const UNSYNCED_AT_MOST: Duration = Duration::from_secs(1);

/// The records of one operation, as submitted to the writer.
pub(super) struct Submission {
    /// The records.
    pub(super) ops: Vec<Op>,
    /// Whether the submitter needs the records on disk (else the next synced commit puts them
    /// there).
    pub(super) synced: bool,
    /// Answered once they are on disk (or replaced) with the journal's last frame then, or
    /// failed; a barrier's once the tables hold everything before it.
    pub(super) done: oneshot::Sender<Result<u64, String>>,
}

/// Transactions the writer committed, those of them that synced the disk, and the submissions
/// with records they carried.
#[derive(Debug, Default)]
pub(super) struct Counts {
    /// Transactions committed.
    pub(super) commits: AtomicU64,
    /// Those that synced the disk.
    pub(super) syncs: AtomicU64,
    /// Submissions with records that they carried.
    pub(super) writes: AtomicU64,
}

/// Receives' state records held back across commits. A received message is usually deleted
/// within milliseconds, and its delete makes the receive's state record moot: held, it is
/// dropped then instead of written and removed again. A held state is written by the first
/// commit that flushes (`UNSYNCED_AT_MOST` after the first was held, a barrier, many held, or
/// the store closing), unless a later record of its message (or its queue's purge or deletion)
/// replaces it first. Only ops that came after a held state drop it, so what is committed is
/// what applying every record in order would commit.
#[derive(Default)]
struct Held {
    /// Each message's latest held state, by queue and sequence number.
    states: foldhash::HashMap<(Arc<str>, u64), Op>,
    /// The submissions whose states are held, answered once none is held any more.
    waiting: Vec<oneshot::Sender<Result<u64, String>>>,
    /// When the first of them was held.
    since: Option<tokio::time::Instant>,
}

/// States held at most before a commit writes them all (a bound on the writer's memory).
const MAX_HELD: usize = 65_536;

impl Held {
    /// Whether `submission` is a receive's states only, which may be held.
    fn may_hold(submission: &Submission) -> bool {
        !submission.synced
            && !submission.ops.is_empty()
            && submission
                .ops
                .iter()
                .all(|op| matches!(op, Op::PutState { .. }))
    }

    fn hold(&mut self, submission: Submission) {
        for op in submission.ops {
            if let Op::PutState { queue, seq, .. } = &op {
                self.states.insert((Arc::clone(queue), *seq), op);
            }
        }
        self.waiting.push(submission.done);
        self.since.get_or_insert_with(tokio::time::Instant::now);
    }

    /// Drops the held states that `op`, which came after them, replaces or removes.
    fn drop_replaced_by(&mut self, op: &Op) {
        if self.states.is_empty() {
            return;
        }
        if let Some((queue, seq)) = state_replaced_by(op) {
            self.states.remove(&(Arc::clone(queue), seq));
            return;
        }
        match op {
            Op::Purge { queue } => self.states.retain(|(held, _), _| held != queue),
            Op::DeleteQueue { name } => self.states.retain(|(held, _), _| **held != **name),
            _ => {}
        }
    }

    fn overdue(&self) -> bool {
        self.since
            .is_some_and(|since| since.elapsed() >= UNSYNCED_AT_MOST)
    }

    /// After a commit: the submissions whose states are all written or replaced now, answered
    /// with its result, and counted in `writes` when written (before they are answered, so a
    /// caller that waited sees its write counted).
    fn answer(&mut self, result: &Result<u64, String>, writes: &AtomicU64) {
        if !self.states.is_empty() && result.is_ok() {
            return;
        }
        // A failed commit poisons the store: what is held will never be written.
        self.states.clear();
        self.since = None;
        if result.is_ok() {
            writes.fetch_add(self.waiting.len() as u64, Ordering::Relaxed);
        }
        for done in self.waiting.drain(..) {
            let _ = done.send(result.clone());
        }
    }
}

/// What the writer writes to and hands on to.
pub(super) struct Outlet {
    pub(super) journal: Journal,
    pub(super) applier: mpsc::SyncSender<ToApply>,
    pub(super) checkpointed: Arc<Checkpointed>,
}

/// The writer thread's loop, until the store is dropped: then what waits is committed.
pub(super) fn write_loop(
    mut outlet: Outlet,
    submissions: mpsc::Receiver<Submission>,
    poisoned: &AtomicBool,
    counts: &Counts,
) {
    // Unsynced submissions not yet applied (but held states), in the order they came, and since
    // when the first of them waits: they join the next synced commit, or get one of their own
    // `UNSYNCED_AT_MOST` after the first came (a steady stream of receives does not put it off).
    let mut deferred: Vec<Submission> = Vec::new();
    let mut deferred_since: Option<tokio::time::Instant> = None;
    let mut held = Held::default();
    loop {
        let first_waiting = deferred_since.into_iter().chain(held.since).min();
        let received = if let Some(since) = first_waiting {
            let left = UNSYNCED_AT_MOST.saturating_sub(since.elapsed());
            match submissions.recv_timeout(left) {
                Ok(first) => Some(first),
                Err(mpsc::RecvTimeoutError::Timeout) => None,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match submissions.recv() {
                Ok(first) => Some(first),
                Err(_) => break,
            }
        };
        let mut arrived: Vec<Submission> = received.into_iter().collect();
        while arrived.len() < MAX_BATCH {
            match submissions.try_recv() {
                Ok(next) => arrived.push(next),
                Err(_) => break,
            }
        }
        // In the order they came: a receive's states are held, anything else drops the held
        // states it replaces and waits for (or makes) the next commit.
        let mut batch = std::mem::take(&mut deferred);
        let mut barrier = false;
        for submission in arrived {
            if Held::may_hold(&submission) {
                held.hold(submission);
                continue;
            }
            barrier |= submission.synced && submission.ops.is_empty();
            for op in &submission.ops {
                held.drop_replaced_by(op);
            }
            batch.push(submission);
        }
        let flush = held.overdue() || barrier || held.states.len() >= MAX_HELD;
        let overdue = deferred_since.is_some_and(|since| since.elapsed() >= UNSYNCED_AT_MOST);
        let wanted_on_disk = batch.iter().any(|submission| submission.synced);
        if !flush && !overdue && !wanted_on_disk && batch.len() < MAX_BATCH {
            if batch.is_empty() {
                // Only states held (or all held ones replaced): nothing to commit yet.
                held.answer(&Ok(outlet.journal.last()), &counts.writes);
            } else {
                deferred_since.get_or_insert_with(tokio::time::Instant::now);
            }
            deferred = batch;
            continue;
        }
        deferred_since = None;
        commit(&mut outlet, batch, &mut held, flush, poisoned, counts);
    }
    // Closing the store: what waits, held states too, reaches the disk before the file closes.
    commit(&mut outlet, deferred, &mut held, true, poisoned, counts);
}

/// Appends `batch` (then, when `flush`, every held state) to the journal and syncs it once,
/// answers every submission it settles and hands the records to the applier; a failure poisons
/// the store.
fn commit(
    outlet: &mut Outlet,
    batch: Vec<Submission>,
    held: &mut Held,
    flush: bool,
    poisoned: &AtomicBool,
    counts: &Counts,
) {
    if batch.is_empty() && held.states.is_empty() {
        // Nothing to write: the held states were all replaced by records already committed.
        held.answer(&Ok(outlet.journal.last()), &counts.writes);
        return;
    }
    let held_states: Vec<Op> = if flush {
        held.states.drain().map(|(_, op)| op).collect()
    } else {
        Vec::new()
    };
    let mut records = Vec::new();
    let result = if poisoned.load(Ordering::SeqCst) {
        Err("an earlier write failed; the store is being reopened".to_owned())
    } else {
        journal(outlet, &batch, &held_states, &mut records, poisoned)
            .inspect(|_| {
                counts.commits.fetch_add(1, Ordering::Relaxed);
                counts.syncs.fetch_add(1, Ordering::Relaxed);
                let writes = batch.iter().filter(|s| !s.ops.is_empty()).count();
                counts.writes.fetch_add(writes as u64, Ordering::Relaxed);
            })
            .map_err(|error| {
                outlet.journal.discard_pending();
                tracing::error!(%error, "embedded store write failed; refusing writes until it is reopened");
                poisoned.store(true, Ordering::SeqCst);
                error.to_string()
            })
    };
    held.answer(&result, &counts.writes);
    let mut readable = Vec::new();
    for submission in batch {
        if result.is_ok() && submission.synced && submission.ops.is_empty() {
            readable.push(submission.done);
        } else {
            let _ = submission.done.send(result.clone());
        }
    }
    if let Ok(last) = result
        && (!records.is_empty() || !readable.is_empty())
    {
        let handed = outlet.applier.send(ToApply::Records {
            last,
            records,
            readable,
        });
        if let Err(mpsc::SendError(ToApply::Records { readable, .. })) = handed {
            for done in readable {
                let _ = done.send(Err("the store's applier stopped".to_owned()));
            }
        }
    }
}

/// Encodes the records of `batch` and `held_states` (held states last: every op before them came
/// before them) into frames, each holding whole submissions, and syncs them; answers the last
/// frame's number and leaves the records in `records`.
fn journal(
    outlet: &mut Outlet,
    batch: &[Submission],
    held_states: &[Op],
    records: &mut Vec<Record>,
    poisoned: &AtomicBool,
) -> Result<u64, StoreError> {
    let ops: Vec<&Op> = batch
        .iter()
        .flat_map(|submission| &submission.ops)
        .chain(held_states)
        .collect();
    let mut superseded = superseded_states(ops.iter().copied()).into_iter();
    let mut ops = ops.into_iter();
    // Each submission is a unit a frame holds whole; the held states are one more.
    let units = batch
        .iter()
        .map(|submission| submission.ops.len())
        .chain(std::iter::once(held_states.len()));
    let mut frame_starts = 0;
    let mut frame_bytes = 0;
    for unit in units {
        for (op, superseded) in ops.by_ref().zip(superseded.by_ref()).take(unit) {
            if !superseded {
                let record = Record::of(op)?;
                frame_bytes += record.size_hint();
                records.push(record);
            }
        }
        if frame_bytes >= FRAME_TARGET {
            outlet
                .journal
                .add(Record::encode_all(&records[frame_starts..])?);
            frame_starts = records.len();
            frame_bytes = 0;
        }
    }
    if frame_starts < records.len() {
        outlet
            .journal
            .add(Record::encode_all(&records[frame_starts..])?);
    }
    if outlet.journal.wants_other_file() {
        // The other file is overwritten next: the tables must hold all it carries first.
        let needed = outlet.journal.other_last();
        let _ = outlet.applier.send(ToApply::Checkpoint);
        if !outlet.checkpointed.wait_for(needed, poisoned) {
            return Err(StoreError("the store's applier stopped".into()));
        }
    }
    outlet.journal.sync()?;
    Ok(outlet.journal.last())
}
