//! Durability for the embedded engine: a write-ahead journal in front of a redb file, written by
//! one thread with group commit.
//!
//! Callers submit the journal of one engine operation and await its commit. The writer thread takes
//! every submission waiting at that moment, appends their records to the journal file in order and
//! syncs once, then answers them all: under load, hundreds of operations share a disk sync. The
//! applier thread then puts the same records into the redb tables, visible to readers at once and
//! synced by a checkpoint at most a second later; a reopen replays the journal frames the last
//! checkpoint does not hold (see `journal`). So a commit costs one sequential write and one sync
//! on the request's path, and the tables' B-tree work happens beside it.
//!
//! Nothing is answered before its records are in the journal on disk, but records whose loss in a
//! crash is harmless (a receive's: its messages are only delivered again) may be submitted
//! unsynced ([`Store::submit_unsynced`]): they wait in the writer, and reach the disk within a
//! second (the writer makes a commit for them if nothing else is written; closing the store also
//! commits them). A receive's state records wait until a later record of their message replaces
//! them (its delete, usually: they are then never written) or a flush writes them (`Held`);
//! other unsynced records join the next synced commit. So a receive costs no commit of its own.
//!
//! Bodies are read back on demand ([`Reader`]) from a snapshot of the tables, beside the writer;
//! a reopen reads only the states (which carry what places a message in its queue), so it does
//! not grow with body size. redb's page cache is bounded ([`Store::open`]'s `cache_bytes`): the
//! operating system's file cache does the rest, outside the process's resident memory.

mod applier;
mod apply;
mod error;
mod journal;
mod read;
mod record;
mod tables;
mod writer;

pub use error::StoreError;
pub use read::{Reader, Recovered, RecoveredMessage, RecoveredQueue};

use super::engine::Op;
use applier::{APPLIED, Checkpointed, ToApply, apply_loop};
use read::read_all;
use record::Record;
use redb::{Database, ReadableTable as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use tables::{BODIES, DEDUP, META, QUEUES, SEQUENCES, STATES};
use tokio::sync::{oneshot, watch};
use writer::{Counts, Outlet, Submission, write_loop};

/// Group commits the writer may hand the applier ahead of it before it waits.
const APPLIER_QUEUE: usize = 64;

/// A handle to the writer and applier threads; dropping it finishes pending writes, checkpoints
/// the tables and closes the files.
pub struct Store {
    /// Shared with the applier thread and with [`Reader`]s.
    db: Arc<Database>,
    submissions: Option<mpsc::Sender<Submission>>,
    writer: Option<std::thread::JoinHandle<()>>,
    applier: Option<std::thread::JoinHandle<()>>,
    /// Set after a failed write: memory and disk may disagree, so nothing more is written.
    poisoned: Arc<AtomicBool>,
    /// What the writer has done since the store was opened.
    counts: Arc<Counts>,
    /// The last journal frame the tables hold (readers see it).
    applied: watch::Receiver<u64>,
    /// The applier's queue, for commits waited for as readable (`None` once closing).
    applier_queue: Option<Arc<mpsc::SyncSender<ToApply>>>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // Closing the channel ends the writer loop once it has journaled what was queued; the
        // writer's end lets the applier put it in the tables and checkpoint them.
        self.submissions.take();
        self.applier_queue.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        if let Some(applier) = self.applier.take() {
            let _ = applier.join();
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// A pending commit.
pub struct Commit(Option<Pending>);

struct Pending {
    /// Answered with the journal's last frame once the submission is on disk.
    written: oneshot::Receiver<Result<u64, String>>,
    /// The last frame the tables hold.
    applied: watch::Receiver<u64>,
    /// Where to ask the applier not to wait for more; weak, so that a commit kept longer than
    /// its store does not keep the applier's queue open.
    applier: std::sync::Weak<mpsc::SyncSender<ToApply>>,
}

impl Commit {
    /// A commit that is already done (nothing to write, or no disk).
    pub fn done() -> Self {
        Self(None)
    }

    /// A commit that failed: the store is down.
    pub fn failed() -> Self {
        let (done, written) = oneshot::channel();
        let _ = done.send(Err("the store is not open".into()));
        let (_, applied) = watch::channel(0);
        Self(Some(Pending {
            written,
            applied,
            applier: std::sync::Weak::new(),
        }))
    }

    /// Whether the commit has already failed (the store was down when it was submitted); a
    /// pending commit is not waited for.
    pub fn failed_already(&mut self) -> bool {
        matches!(
            self.0.as_mut().map(|pending| pending.written.try_recv()),
            Some(Ok(Err(_)))
        )
    }

    /// Waits until the submission is on disk.
    pub async fn wait(self) -> Result<(), StoreError> {
        match self.0 {
            None => Ok(()),
            Some(pending) => written(pending.written).await.map(|_| ()),
        }
    }

    /// Waits until the submission is on disk and in the tables, where [`Reader`]s see it.
    pub async fn wait_readable(self) -> Result<(), StoreError> {
        let Some(mut pending) = self.0 else {
            return Ok(());
        };
        let frame = written(pending.written).await?;
        if *pending.applied.borrow() < frame
            && let Some(applier) = pending.applier.upgrade()
        {
            // A full queue means the applier has work to do without being asked.
            let _ = applier.try_send(ToApply::Hurry);
        }
        pending
            .applied
            .wait_for(|applied| *applied >= frame)
            .await
            .map(|_| ())
            .map_err(|_| StoreError("the store's tables could not be written".into()))
    }
}

async fn written(written: oneshot::Receiver<Result<u64, String>>) -> Result<u64, StoreError> {
    match written.await {
        Ok(result) => result.map_err(StoreError),
        Err(_) => Err(StoreError("the writer thread stopped".into())),
    }
}

impl Store {
    /// Opens (or creates) `dir/queues.redb` with a page cache of `cache_bytes` and its journal,
    /// puts in the tables what the journal holds beyond them, reads them back, and starts the
    /// writer and applier threads.
    pub fn open(dir: &Path, cache_bytes: usize) -> Result<(Self, Recovered), StoreError> {
        if !dir.is_dir() {
            // Readable by its owner only: it holds every message (an existing directory keeps
            // the mode its owner gave it).
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(StoreError::from)?;
        }
        let path = dir.join("queues.redb");
        // A store the gateway made is never empty (it starts with a header): an empty file is a
        // damaged or truncated store, not a new one, and is not silently made one.
        if std::fs::metadata(&path).is_ok_and(|meta| meta.len() == 0) {
            return Err(StoreError(format!(
                "{} is empty (0 bytes), so it is not a store this gateway wrote: restore it from a backup, or move it away to start with no messages",
                path.display()
            )));
        }
        // redb asserts on some damage instead of answering an error: either way the answer is
        // that the file is damaged, named, never a panic.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            Self::open_database(dir, &path, cache_bytes)
        }));
        let (db, recovered, last) = match opened {
            Ok(result) => {
                result.map_err(|error| StoreError(format!("{}: {}", path.display(), error.0)))?
            }
            Err(_) => {
                return Err(StoreError(format!(
                    "{} is damaged and cannot be read: restore it from a backup, or move it away to start with no messages",
                    path.display()
                )));
            }
        };
        let journal = journal::Journal::start(dir, last + 1)?;
        let db = Arc::new(db);
        let (to_applier, batches) = mpsc::sync_channel(APPLIER_QUEUE);
        let (applied_sender, applied) = watch::channel(last);
        let checkpointed = Arc::new(Checkpointed::new(last));
        let poisoned = Arc::new(AtomicBool::new(false));
        let applier = {
            let db = Arc::clone(&db);
            let checkpointed = Arc::clone(&checkpointed);
            let poisoned = Arc::clone(&poisoned);
            std::thread::Builder::new()
                .name("sqs-gateway-tables".into())
                .spawn(move || {
                    let applied = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        apply_loop(&db, batches, applied_sender, &checkpointed, &poisoned);
                    }));
                    if applied.is_err() {
                        // The writer must not wait for a checkpoint that will never come.
                        tracing::error!("embedded store tables: the applier stopped; refusing writes until the store is reopened");
                        poisoned.store(true, Ordering::SeqCst);
                    }
                })
                .map_err(StoreError::from)?
        };
        let (submissions, receiver) = mpsc::channel();
        let counts = Arc::new(Counts::default());
        let applier_queue = Some(Arc::new(to_applier.clone()));
        let outlet = Outlet {
            journal,
            applier: to_applier,
            checkpointed,
        };
        let writer = {
            let poisoned = Arc::clone(&poisoned);
            let counts = Arc::clone(&counts);
            std::thread::Builder::new()
                .name("sqs-gateway-store".into())
                .spawn(move || write_loop(outlet, receiver, &poisoned, &counts))
                .map_err(StoreError::from)?
        };
        Ok((
            Self {
                db,
                submissions: Some(submissions),
                writer: Some(writer),
                applier: Some(applier),
                poisoned,
                counts,
                applied,
                applier_queue,
            },
            recovered,
        ))
    }

    /// Opens (or creates) the database at `path`, makes its tables, puts in them the journal's
    /// frames they do not hold yet (synced), and reads them back; answers the last frame they
    /// hold.
    fn open_database(
        dir: &Path,
        path: &Path,
        cache_bytes: usize,
    ) -> Result<(Database, Recovered, u64), StoreError> {
        let db = Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(StoreError::from)?;
        // Message bodies are the owner's business only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(StoreError::from)?;
        }
        let last = {
            let txn = db.begin_write().map_err(StoreError::from)?;
            txn.open_table(QUEUES).map_err(StoreError::from)?;
            txn.open_table(SEQUENCES).map_err(StoreError::from)?;
            txn.open_table(BODIES).map_err(StoreError::from)?;
            txn.open_table(STATES).map_err(StoreError::from)?;
            txn.open_table(DEDUP).map_err(StoreError::from)?;
            let mut meta = txn.open_table(META).map_err(StoreError::from)?;
            let applied = meta
                .get(APPLIED)
                .map_err(StoreError::from)?
                .map_or(0, |value| value.value());
            let frames = journal::read_after(dir, applied)?;
            let last = frames.last().map_or(applied, |frame| frame.number);
            for frame in frames {
                apply::apply(&txn, &Record::decode_all(&frame.payload)?)?;
            }
            meta.insert(APPLIED, last).map_err(StoreError::from)?;
            drop(meta);
            txn.commit().map_err(StoreError::from)?;
            last
        };
        let recovered = read_all(&db)?;
        Ok((db, recovered, last))
    }

    /// Queues the records of one operation; call while holding the lock that ordered them.
    pub fn submit(&self, ops: Vec<Op>) -> Commit {
        if ops.is_empty() {
            return Commit::done();
        }
        self.enqueue(ops, true)
    }

    /// Like [`Store::submit`], for records whose loss in a crash is harmless: they wait in the
    /// writer (a receive's states until replaced or flushed, see `Held`; others for the next
    /// synced commit) and reach the disk within `UNSYNCED_AT_MOST`; the commit completes once
    /// they are written or replaced. Readers do not see them before (a [`Store::barrier`]
    /// commits them).
    pub fn submit_unsynced(&self, ops: Vec<Op>) -> Commit {
        if ops.is_empty() {
            return Commit::done();
        }
        self.enqueue(ops, false)
    }

    /// A commit that completes once everything submitted before it is on disk and in the tables
    /// (readers see it).
    pub fn barrier(&self) -> Commit {
        self.enqueue(Vec::new(), true)
    }

    /// Whether a write failed: the store then refuses every write; the backend reopens it.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// A reader of stored bodies, usable beside the writer (and off the queue locks).
    pub fn reader(&self) -> Reader {
        Reader(Arc::clone(&self.db))
    }

    /// Group commits since the store was opened.
    pub fn commits(&self) -> u64 {
        self.counts.commits.load(Ordering::Relaxed)
    }

    /// Those of them that synced the disk (every one: unsynced records wait for a synced commit).
    pub fn syncs(&self) -> u64 {
        self.counts.syncs.load(Ordering::Relaxed)
    }

    /// Submissions with records that those commits carried (a barrier carries none).
    pub fn writes(&self) -> u64 {
        self.counts.writes.load(Ordering::Relaxed)
    }

    fn enqueue(&self, ops: Vec<Op>, synced: bool) -> Commit {
        let (done, written) = oneshot::channel();
        let commit = Commit(Some(Pending {
            written,
            applied: self.applied.clone(),
            applier: self
                .applier_queue
                .as_ref()
                .map_or_else(std::sync::Weak::new, Arc::downgrade),
        }));
        if self.is_poisoned() {
            let _ = done.send(Err(
                "an earlier write failed; the store is being reopened".into()
            ));
            return commit;
        }
        if let Some(submissions) = &self.submissions {
            // A failed send drops `done`, and waiting on the commit then reports the stopped writer.
            let _ = submissions.send(Submission { ops, synced, done });
        }
        commit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::embedded::engine::{Body, Settings, State};
    use crate::backend::embedded::records;
    use std::collections::BTreeMap;
    use std::time::Duration;
    use writer::UNSYNCED_AT_MOST;

    fn hex(text: &str) -> Vec<u8> {
        hex::decode(text.split_whitespace().collect::<String>()).unwrap()
    }

    /// The records of message 1's send (`receive_count` 0: its queue, body and state), or of its
    /// `receive_count`-th receive (its state).
    fn message_ops(queue: &str, receive_count: u32) -> Vec<Op> {
        let queue: Arc<str> = Arc::from(queue);
        let state = State {
            receive_count,
            first_received_at: None,
            visible_at: 1_800_000_000_000,
            receipt: None,
        };
        let state = Op::PutState {
            queue: Arc::clone(&queue),
            seq: 1,
            state,
            sent_at: 1_800_000_000_000,
            group_id: None,
        };
        if receive_count > 0 {
            return vec![state];
        }
        let body = Body {
            id: "m".into(),
            body: "hello".into(),
            attributes: BTreeMap::new(),
            sent_at: 1_800_000_000_000,
            group_id: None,
            dead_letter_source_arn: None,
            deduplication_id: None,
            trace_header: None,
        };
        vec![
            Op::PutQueue {
                name: queue.to_string(),
                settings: Settings::new(&queue, &Default::default()).unwrap(),
            },
            Op::PutBody {
                queue: Arc::clone(&queue),
                seq: 1,
                body: Arc::new(body),
            },
            state,
        ]
    }

    /// `ops` about message `seq` instead of message 1.
    fn at_seq(ops: Vec<Op>, seq: u64) -> Vec<Op> {
        ops.into_iter()
            .map(|op| match op {
                Op::PutBody { queue, body, .. } => Op::PutBody { queue, seq, body },
                Op::PutState {
                    queue,
                    state,
                    sent_at,
                    group_id,
                    ..
                } => Op::PutState {
                    queue,
                    seq,
                    state,
                    sent_at,
                    group_id,
                },
                other => other,
            })
            .collect()
    }

    /// A later message's send: its records, without its queue's.
    fn send_of(seq: u64) -> Vec<Op> {
        let mut ops = at_seq(message_ops("q", 0), seq);
        ops.retain(|op| !matches!(op, Op::PutQueue { .. }));
        ops
    }

    fn recovered_counts(dir: &Path) -> Vec<(u64, u32)> {
        let (_store, recovered) = Store::open(dir, 1 << 20).unwrap();
        recovered.queues["q"]
            .messages
            .iter()
            .map(|message| (message.seq, message.state.receive_count))
            .collect()
    }

    /// A receive's state is held across other commits until the delete of its message replaces
    /// it: no commit writes it, and its commit completes with the delete's.
    #[tokio::test]
    async fn a_receive_s_state_is_held_until_its_delete_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            let received = store.submit_unsynced(message_ops("q", 1));
            store.submit(send_of(2)).wait().await.unwrap();
            assert_eq!(
                (store.commits(), store.writes()),
                (2, 2),
                "the held state joins no commit"
            );
            let delete = Op::DeleteMessage {
                queue: Arc::from("q"),
                seq: 1,
            };
            store.submit(vec![delete]).wait().await.unwrap();
            assert_eq!(
                (store.commits(), store.writes()),
                (3, 4),
                "the delete settles the held state"
            );
            received.wait().await.unwrap();
        }
        assert_eq!(recovered_counts(dir.path()), [(2, 0)]);
    }

    /// A held state is replaced only by what came after it: an earlier state of its message
    /// committed meanwhile leaves it the last word, a purge after it drops it.
    #[tokio::test]
    async fn a_held_state_is_replaced_only_by_what_came_after_it() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            store.submit(send_of(2)).wait().await.unwrap();
            // Message 1: a synced state (a visibility change), then a receive's, held.
            store.submit(message_ops("q", 5)).wait().await.unwrap();
            let _ = store.submit_unsynced(message_ops("q", 6));
            store.submit(send_of(3)).wait().await.unwrap();
        }
        // Closing the store wrote the held state.
        assert_eq!(recovered_counts(dir.path()), [(1, 6), (2, 0), (3, 0)]);
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            let _ = store.submit_unsynced(at_seq(message_ops("q", 7), 2));
            let purge = Op::Purge {
                queue: Arc::from("q"),
            };
            store.submit(vec![purge]).wait().await.unwrap();
        }
        assert_eq!(recovered_counts(dir.path()), []);
    }

    /// A receive's records wait for the next synced commit and join it; with nothing else
    /// written, the writer commits them on its own within `UNSYNCED_AT_MOST`.
    #[tokio::test]
    async fn unsynced_records_join_the_next_synced_commit_or_get_one_within_a_second() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            assert_eq!((store.commits(), store.syncs()), (1, 1));
            // With nothing else written, the writer commits them on its own within a second.
            let waited = tokio::time::Instant::now();
            store
                .submit_unsynced(message_ops("q", 1))
                .wait()
                .await
                .unwrap();
            assert!(waited.elapsed() >= Duration::from_millis(500));
            assert_eq!((store.commits(), store.syncs(), store.writes()), (2, 2, 2));
            // Followed by a synced submission, they join its commit: one commit for both.
            let unsynced = store.submit_unsynced(message_ops("q", 2));
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(store.commits(), 2, "unsynced records wait");
            store.barrier().wait().await.unwrap();
            unsynced.wait().await.unwrap();
            assert_eq!((store.commits(), store.syncs(), store.writes()), (3, 3, 3));
            // Closing the store commits what waits.
            let _ = store.submit_unsynced(message_ops("q", 3));
        }
        let (_store, recovered) = Store::open(dir.path(), 1 << 20).unwrap();
        let messages = &recovered.queues["q"].messages;
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0].state.receive_count, 3);
    }

    /// A receive's state followed by the delete of its message in one commit: the message is
    /// gone; a state another state replaces in the same commit leaves the later one; and a
    /// state written after its message's delete (a queue recreated under the same name starts
    /// its sequence again) is kept.
    #[tokio::test]
    async fn states_replaced_in_the_same_commit_leave_the_last_word() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            store
                .submit(at_seq(message_ops("q", 0), 2))
                .wait()
                .await
                .unwrap();
            let delete = |seq| Op::DeleteMessage {
                queue: Arc::from("q"),
                seq,
            };
            // Message 1: received, then deleted. Message 2: received twice.
            let mut ops = message_ops("q", 1);
            ops.push(delete(1));
            ops.extend(at_seq(message_ops("q", 1), 2));
            ops.extend(at_seq(message_ops("q", 2), 2));
            // Message 1 again after its delete (its queue recreated): sent and received.
            let mut again = message_ops("q", 0);
            again.retain(|op| !matches!(op, Op::PutQueue { .. }));
            ops.extend(again);
            ops.extend(message_ops("q", 4));
            let unsynced = store.submit_unsynced(ops);
            store.barrier().wait().await.unwrap();
            unsynced.wait().await.unwrap();
        }
        let (_store, recovered) = Store::open(dir.path(), 1 << 20).unwrap();
        let counts: Vec<(u64, u32)> = recovered.queues["q"]
            .messages
            .iter()
            .map(|message| (message.seq, message.state.receive_count))
            .collect();
        assert_eq!(counts, [(1, 4), (2, 2)]);
    }

    /// The counts the meters show: every commit, the synced ones, and the writes they carried
    /// (a barrier carries none).
    #[tokio::test]
    async fn commits_syncs_and_writes_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
        store.submit(message_ops("q", 0)).wait().await.unwrap();
        assert_eq!((store.commits(), store.syncs(), store.writes()), (1, 1, 1));
        store.barrier().wait().await.unwrap();
        assert_eq!((store.commits(), store.syncs(), store.writes()), (2, 2, 1));
        // Two writes queued before either is waited for: one commit or two, two writes either way.
        let (first, second) = (
            store.submit(message_ops("q", 1)),
            store.submit(message_ops("q", 2)),
        );
        first.wait().await.unwrap();
        second.wait().await.unwrap();
        assert_eq!(store.writes(), 3);
        assert!(store.commits() <= 4 && store.commits() == store.syncs());
    }

    /// Receives arriving steadily do not put the commit off: it comes within `UNSYNCED_AT_MOST`
    /// of the first waiting one.
    #[tokio::test]
    async fn a_steady_stream_of_unsynced_records_is_still_committed_every_second() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
        store.submit(message_ops("q", 0)).wait().await.unwrap();
        assert_eq!(store.syncs(), 1);
        let started = tokio::time::Instant::now();
        let mut receives = 0;
        let mut first_commit = None;
        while started.elapsed() < UNSYNCED_AT_MOST * 2 {
            receives += 1;
            let commit = store.submit_unsynced(message_ops("q", receives));
            first_commit.get_or_insert(commit);
            tokio::time::sleep(UNSYNCED_AT_MOST / 5).await;
        }
        assert!(receives >= 8);
        assert!(
            store.syncs() >= 2,
            "{} syncs in two seconds of receives",
            store.syncs() - 1
        );
        first_commit.unwrap().wait().await.unwrap();
    }

    /// What a crash leaves: journal frames the tables never took (no checkpoint after them).
    /// The next open puts them in the tables before it reads them back.
    #[tokio::test]
    async fn frames_the_tables_do_not_hold_are_replayed_at_open() {
        let crashed = tempfile::tempdir().unwrap();
        // A store whose tables hold nothing (a checkpoint at frame 0)...
        drop(Store::open(crashed.path(), 1 << 20).unwrap());
        // ...and a journal with frames 1 and on, written by another store.
        let written = tempfile::tempdir().unwrap();
        {
            let (store, _) = Store::open(written.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            store.submit(send_of(2)).wait().await.unwrap();
            store.submit(message_ops("q", 3)).wait().await.unwrap();
        }
        std::fs::copy(
            written.path().join("queues.journal.0"),
            crashed.path().join("queues.journal.0"),
        )
        .unwrap();
        assert_eq!(recovered_counts(crashed.path()), [(1, 3), (2, 0)]);
        // Replayed once: the tables hold them now, and the journal starts after them.
        assert_eq!(recovered_counts(crashed.path()), [(1, 3), (2, 0)]);
        let (store, _) = Store::open(crashed.path(), 1 << 20).unwrap();
        let read = store.reader().bodies("q", &[1, 2]).unwrap();
        assert!(read.iter().all(Option::is_some));
    }

    /// Sends enough to fill the journal's files several times over: each file is overwritten
    /// only once a checkpoint holds what it carried, and everything reads back.
    #[tokio::test]
    async fn the_journal_files_are_written_in_turn_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(8 * 1024);
        let sends = 400u64;
        {
            let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
            store.submit(message_ops("q", 0)).wait().await.unwrap();
            for seq in 2..=sends {
                let ops = send_of(seq)
                    .into_iter()
                    .map(|op| match op {
                        Op::PutBody { queue, seq, body } => {
                            let mut body = (*body).clone();
                            body.body = big.clone();
                            Op::PutBody {
                                queue,
                                seq,
                                body: Arc::new(body),
                            }
                        }
                        other => other,
                    })
                    .collect();
                store.submit(ops).wait().await.unwrap();
            }
            assert!(
                std::fs::metadata(dir.path().join("queues.journal.1")).is_ok(),
                "the second file was used"
            );
            // Readable from the tables: a barrier waits for them.
            store.barrier().wait().await.unwrap();
            let read = store.reader().bodies("q", &[sends]).unwrap();
            assert_eq!(
                read[0].as_ref().map(|body| body.body.len()),
                Some(big.len())
            );
        }
        let counts = recovered_counts(dir.path());
        assert_eq!(counts.len() as u64, sends);
        assert_eq!(counts.last(), Some(&(sends, 0)));
    }

    /// A commit waited for as readable is in the tables when it completes.
    #[tokio::test]
    async fn a_readable_commit_is_in_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(dir.path(), 1 << 20).unwrap();
        for seq in 1..=20 {
            let ops = if seq == 1 {
                message_ops("q", 0)
            } else {
                send_of(seq)
            };
            store.submit(ops).wait_readable().await.unwrap();
            let read = store.reader().bodies("q", &[seq]).unwrap();
            assert!(read[0].is_some(), "message {seq} is readable");
        }
    }

    /// A store of the previous release (state records without the message's placement) reopens:
    /// the placement comes from the body then, and only then.
    #[test]
    fn states_of_the_previous_release_are_placed_from_their_bodies() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = Database::create(dir.path().join("queues.redb")).unwrap();
            let txn = db.begin_write().unwrap();
            {
                let settings = Settings::new("q.fifo", &Default::default()).unwrap();
                let settings = serde_json::to_vec(&settings).unwrap();
                let mut queues = txn.open_table(QUEUES).unwrap();
                queues.insert("q.fifo", settings.as_slice()).unwrap();
                let mut sequences = txn.open_table(SEQUENCES).unwrap();
                sequences.insert("q.fifo", 9).unwrap();
                let body = Body {
                    id: "m".into(),
                    body: "hello".into(),
                    attributes: BTreeMap::new(),
                    sent_at: 1_800_000_000_000,
                    group_id: Some("g".into()),
                    dead_letter_source_arn: None,
                    deduplication_id: Some("d".into()),
                    trace_header: None,
                };
                let mut bodies = txn.open_table(BODIES).unwrap();
                let encoded = records::encode_body(&body).unwrap();
                bodies.insert(("q.fifo", 7), encoded.as_slice()).unwrap();
                // A version 1 state record, as the previous release wrote it.
                let mut states = txn.open_table(STATES).unwrap();
                let v1 = hex("ff01 03 01c0daee85e368 8084f685e368 01ef01");
                states.insert(("q.fifo", 7), v1.as_slice()).unwrap();
                // A state whose body is gone is not a message.
                states.insert(("q.fifo", 8), v1.as_slice()).unwrap();
            }
            txn.commit().unwrap();
        }
        let (store, recovered) = Store::open(dir.path(), 1 << 20).unwrap();
        let queue = &recovered.queues["q.fifo"];
        assert_eq!(queue.next_seq, 9);
        assert_eq!(queue.messages.len(), 1);
        let message = &queue.messages[0];
        assert_eq!(message.seq, 7);
        assert_eq!(message.sent_at, 1_800_000_000_000);
        assert_eq!(message.group_id.as_deref(), Some("g"));
        assert_eq!(message.state.receive_count, 3);
        let read = store.reader().bodies("q.fifo", &[7, 8]).unwrap();
        assert_eq!(
            read[0].as_ref().map(|body| body.body.as_str()),
            Some("hello")
        );
        assert!(read[1].is_none());
    }
}
