//! Durability for the embedded engine: a redb file, written by one thread with group commit.
//!
//! Callers submit the journal of one engine operation and await its commit. The writer thread takes
//! every submission waiting at that moment, applies them in order in one write transaction and
//! commits once (one fsync), then answers them all: under load, hundreds of operations share a
//! disk sync. Nothing is answered before its records are on disk, but records whose loss in a
//! crash is harmless (a receive's: its messages are only delivered again) may be submitted
//! unsynced ([`Store::submit_unsynced`]): they wait in the writer, and reach the disk within a
//! second (the writer makes a commit for them if nothing else is written; closing the store also
//! commits them). A receive's state records wait until a later record of their message replaces
//! them (its delete, usually: they are then never written) or a flush writes them (`Held`);
//! other unsynced records join the next synced commit. So a receive costs no commit of its own.
//!
//! Bodies are read back on demand ([`Reader`]) from a snapshot, beside the writer; a reopen reads
//! only the states (which carry what places a message in its queue), so it does not grow with
//! body size. redb's page cache is bounded ([`Store::open`]'s `cache_bytes`): the operating
//! system's file cache does the rest, outside the process's resident memory.

mod apply;
mod error;
mod read;
mod tables;
mod writer;

pub use error::StoreError;
pub use read::{Reader, Recovered, RecoveredMessage, RecoveredQueue};

use super::engine::Op;
use read::read_all;
use redb::Database;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use tables::{BODIES, DEDUP, QUEUES, SEQUENCES, STATES};
use tokio::sync::oneshot;
use writer::{Counts, Submission, write_loop};

/// A handle to the writer thread; dropping it finishes pending writes and closes the file.
pub struct Store {
    /// Shared with the writer thread and with [`Reader`]s.
    db: Arc<Database>,
    submissions: Option<mpsc::Sender<Submission>>,
    writer: Option<std::thread::JoinHandle<()>>,
    /// Set after a failed write: memory and disk may disagree, so nothing more is written.
    poisoned: Arc<AtomicBool>,
    /// What the writer has done since the store was opened.
    counts: Arc<Counts>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // Closing the channel ends the writer loop once it has applied what was queued.
        self.submissions.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

/// A pending commit.
pub struct Commit(Option<oneshot::Receiver<Result<(), String>>>);

impl Commit {
    /// A commit that is already done (nothing to write, or no disk).
    pub fn done() -> Self {
        Self(None)
    }

    /// A commit that failed: the store is down.
    pub fn failed() -> Self {
        let (done, receiver) = oneshot::channel();
        let _ = done.send(Err("the store is not open".into()));
        Self(Some(receiver))
    }

    /// Whether the commit has already failed (the store was down when it was submitted); a
    /// pending commit is not waited for.
    pub fn failed_already(&mut self) -> bool {
        matches!(
            self.0.as_mut().map(oneshot::Receiver::try_recv),
            Some(Ok(Err(_)))
        )
    }

    /// Waits until the submission is on disk.
    pub async fn wait(self) -> Result<(), StoreError> {
        match self.0 {
            None => Ok(()),
            Some(receiver) => match receiver.await {
                Ok(result) => result.map_err(StoreError),
                Err(_) => Err(StoreError("the writer thread stopped".into())),
            },
        }
    }
}

impl Store {
    /// Opens (or creates) `dir/queues.redb` with a page cache of `cache_bytes`, reads it back,
    /// and starts the writer thread.
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
            Self::open_database(&path, cache_bytes)
        }));
        let (db, recovered) = match opened {
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
        let db = Arc::new(db);
        let writer_db = Arc::clone(&db);
        let (submissions, receiver) = mpsc::channel();
        let poisoned = Arc::new(AtomicBool::new(false));
        let writer_poisoned = Arc::clone(&poisoned);
        let counts = Arc::new(Counts::default());
        let writer_counts = Arc::clone(&counts);
        let writer = std::thread::Builder::new()
            .name("sqs-gateway-store".into())
            .spawn(move || write_loop(&writer_db, receiver, &writer_poisoned, &writer_counts))
            .map_err(StoreError::from)?;
        Ok((
            Self {
                db,
                submissions: Some(submissions),
                writer: Some(writer),
                poisoned,
                counts,
            },
            recovered,
        ))
    }

    /// Opens (or creates) the database at `path`, makes its tables, and reads it back.
    fn open_database(path: &Path, cache_bytes: usize) -> Result<(Database, Recovered), StoreError> {
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
        {
            let txn = db.begin_write().map_err(StoreError::from)?;
            txn.open_table(QUEUES).map_err(StoreError::from)?;
            txn.open_table(SEQUENCES).map_err(StoreError::from)?;
            txn.open_table(BODIES).map_err(StoreError::from)?;
            txn.open_table(STATES).map_err(StoreError::from)?;
            txn.open_table(DEDUP).map_err(StoreError::from)?;
            txn.commit().map_err(StoreError::from)?;
        }
        let recovered = read_all(&db)?;
        Ok((db, recovered))
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

    /// A commit that completes once everything submitted before it is on disk.
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

    /// Transactions committed since the store was opened.
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
        let (done, receiver) = oneshot::channel();
        if self.is_poisoned() {
            let _ = done.send(Err(
                "an earlier write failed; the store is being reopened".into()
            ));
            return Commit(Some(receiver));
        }
        if let Some(submissions) = &self.submissions {
            // A failed send drops `done`, and waiting on the commit then reports the stopped writer.
            let _ = submissions.send(Submission { ops, synced, done });
        }
        Commit(Some(receiver))
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
