//! The applier thread: puts what the journal made durable into the tables, off the request's
//! path. It applies everything waiting in one transaction that is visible to readers at once but
//! not synced, and makes a synced checkpoint at most a second after the first unsynced one (or
//! when the journal needs a file back): the tables then hold every frame up to the checkpoint's,
//! which the store records in the same transaction.

use super::apply::apply;
use super::error::StoreError;
use super::record::Record;
use super::tables::META;
use redb::{Database, Durability};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, mpsc};
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// The key under [`META`] of the last frame the tables hold.
pub(super) const APPLIED: &str = "journal_applied";
/// How long an applied frame waits at most for the checkpoint that makes the tables hold it.
pub(super) const CHECKPOINT_AT_MOST: Duration = Duration::from_secs(1);
/// Batches taken into one transaction at most.
const MAX_BATCHES: usize = 256;
/// How long the applier gathers group commits into one transaction after the first arrives:
/// fewer, larger transactions cost the tables less CPU per record. A reader waiting for what was
/// committed (a barrier, a readable commit) ends the wait.
const GATHER: Duration = Duration::from_millis(5);

/// What the writer hands the applier.
pub(super) enum ToApply {
    /// The records of a synced group commit, up to frame `last`; `readable` are answered once
    /// the tables hold them (barriers).
    Records {
        last: u64,
        records: Vec<Record>,
        readable: Vec<oneshot::Sender<Result<u64, String>>>,
    },
    /// The journal needs a file back: make a checkpoint now.
    Checkpoint,
    /// Someone waits to read what was committed: apply it now.
    Hurry,
}

impl ToApply {
    /// Whether it ends the applier's gathering.
    fn is_urgent(&self) -> bool {
        match self {
            ToApply::Records { readable, .. } => !readable.is_empty(),
            ToApply::Checkpoint | ToApply::Hurry => true,
        }
    }
}

/// The last frame a synced checkpoint put in the tables, which the writer waits on before it
/// overwrites a journal file.
#[derive(Debug, Default)]
pub(super) struct Checkpointed {
    last: Mutex<u64>,
    changed: Condvar,
}

impl Checkpointed {
    pub(super) fn new(last: u64) -> Self {
        Self {
            last: Mutex::new(last),
            changed: Condvar::new(),
        }
    }

    fn set(&self, last: u64) {
        *self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = last;
        self.changed.notify_all();
    }

    /// Waits until a checkpoint holds frame `frame`; `false` when `failed` is set first.
    pub(super) fn wait_for(&self, frame: u64, failed: &AtomicBool) -> bool {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while *last < frame {
            if failed.load(Ordering::SeqCst) {
                return false;
            }
            last = self
                .changed
                .wait_timeout(last, Duration::from_millis(100))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        true
    }
}

/// The applier's loop, until the writer lets go of its channel: then a last checkpoint.
pub(super) fn apply_loop(
    db: &Database,
    batches: mpsc::Receiver<ToApply>,
    applied: watch::Sender<u64>,
    checkpointed: &Checkpointed,
    poisoned: &AtomicBool,
) {
    let mut applied = Some(applied);
    let mut last = *checkpointed.last.lock().unwrap_or_else(|p| p.into_inner());
    // Since when the tables hold frames no checkpoint has synced.
    let mut unsynced_since: Option<Instant> = None;
    let mut open = true;
    let mut failed = false;
    while open {
        let first = match unsynced_since {
            Some(since) => {
                match batches.recv_timeout(CHECKPOINT_AT_MOST.saturating_sub(since.elapsed())) {
                    Ok(first) => Some(first),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        open = false;
                        None
                    }
                }
            }
            None => match batches.recv() {
                Ok(first) => Some(first),
                Err(_) => {
                    open = false;
                    None
                }
            },
        };
        let mut taken: Vec<ToApply> = first.into_iter().collect();
        // What came within `GATHER` of the first goes into the same transaction, unless someone
        // waits to read it.
        let until = Instant::now() + GATHER;
        let mut urgent = taken.iter().any(ToApply::is_urgent);
        while taken.len() < MAX_BATCHES {
            let left = until.saturating_duration_since(Instant::now());
            let next = if urgent || left.is_zero() || taken.is_empty() {
                batches.try_recv().ok()
            } else {
                match batches.recv_timeout(left) {
                    Ok(next) => Some(next),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        open = false;
                        None
                    }
                }
            };
            let Some(next) = next else { break };
            urgent |= next.is_urgent();
            taken.push(next);
        }
        let mut checkpoint =
            !open || unsynced_since.is_some_and(|since| since.elapsed() >= CHECKPOINT_AT_MOST);
        let mut records: Vec<Record> = Vec::new();
        let mut readable = Vec::new();
        let mut through = last;
        for batch in taken {
            match batch {
                ToApply::Records {
                    last,
                    records: more,
                    readable: waiting,
                } => {
                    through = through.max(last);
                    records.extend(more);
                    readable.extend(waiting);
                }
                ToApply::Checkpoint => checkpoint = true,
                ToApply::Hurry => {}
            }
        }
        if records.is_empty() && readable.is_empty() && !checkpoint {
            continue;
        }
        if records.is_empty() && !checkpoint {
            answer(readable, &Ok(through));
            continue;
        }
        if checkpoint && unsynced_since.is_none() && records.is_empty() && through == last {
            // Nothing the tables hold unsynced: the last checkpoint stands.
            checkpointed.set(last);
            answer(readable, &Ok(through));
            continue;
        }
        // What the writer hands over is in the journal and answered: it is applied even after
        // the writer failed; only the tables' own failure stops it.
        let result = if failed {
            Err("an earlier write failed; the store is being reopened".to_owned())
        } else {
            write(db, &records, through, checkpoint).map_err(|error| {
                tracing::error!(%error, "embedded store tables could not be written; refusing writes until the store is reopened");
                failed = true;
                poisoned.store(true, Ordering::SeqCst);
                // Commits waiting to be readable learn it from the closed channel.
                applied.take();
                error.to_string()
            })
        };
        if result.is_ok() {
            last = through;
            if let Some(applied) = &applied {
                applied.send_replace(through);
            }
            if checkpoint {
                unsynced_since = None;
                checkpointed.set(through);
            } else {
                unsynced_since.get_or_insert_with(Instant::now);
            }
        }
        answer(readable, &result.map(|()| through));
    }
}

/// Applies `records` in one transaction recording frame `through`, synced when `checkpoint`.
fn write(
    db: &Database,
    records: &[Record],
    through: u64,
    checkpoint: bool,
) -> Result<(), StoreError> {
    let mut txn = db.begin_write().map_err(StoreError::from)?;
    txn.set_durability(if checkpoint {
        Durability::Immediate
    } else {
        Durability::None
    });
    apply(&txn, records)?;
    {
        let mut meta = txn.open_table(META).map_err(StoreError::from)?;
        meta.insert(APPLIED, through).map_err(StoreError::from)?;
    }
    txn.commit().map_err(StoreError::from)
}

fn answer(waiting: Vec<oneshot::Sender<Result<u64, String>>>, result: &Result<u64, String>) {
    for done in waiting {
        let _ = done.send(result.clone());
    }
}
