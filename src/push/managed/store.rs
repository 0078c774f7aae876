//! The records of push subscriptions made through the API, the queues' delivery pauses, and
//! their audit trail, in this
//! process's memory or in a directory ([`DirectoryStore`]: one gateway's): an adapter of the core's
//! [`RecordStore`] port.

use crate::core::delivery_pause::DeliveryPause;
use crate::core::push::admin::AuditEntry;
use crate::core::push::record::Record;
use crate::core::push::records::{
    AUDIT_KEPT_PER_QUEUE, RecordStore, Room, StoreFailure, Write, Written, kept_long_enough,
    room_in_trail,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Appends `line` to a queue's trail (oldest first) and lets go of the oldest lines beyond the
/// bound that have been kept long enough.
fn append_to_trail(trail: &mut VecDeque<AuditEntry>, line: AuditEntry) {
    let at = line.at;
    trail.push_back(line);
    while trail.len() > AUDIT_KEPT_PER_QUEUE
        && trail
            .front()
            .is_some_and(|oldest| kept_long_enough(oldest.at, at))
    {
        trail.pop_front();
    }
}

/// The records file's content.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Saved {
    version: u64,
    next_seq: u64,
    records: BTreeMap<String, Record>,
    /// The paused queues, by name.
    #[serde(default)]
    pauses: BTreeMap<String, DeliveryPause>,
}

struct Inner {
    saved: Saved,
    /// Each queue's trail, oldest first.
    audit: HashMap<String, VecDeque<AuditEntry>>,
}

/// The records in memory, and in a directory when given (`subscriptions.json`, rewritten whole
/// and renamed into place; `audit.jsonl`, appended): one gateway's, read at open. A change's
/// audit line is written before the change, so no change is ever missing from the trail.
pub struct DirectoryStore {
    dir: Option<PathBuf>,
    /// Held by the one change being written.
    writing: Arc<Mutex<()>>,
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for DirectoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectoryStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

const RECORDS_FILE: &str = "subscriptions.json";
const AUDIT_FILE: &str = "audit.jsonl";

fn io(what: &str, error: impl std::fmt::Display) -> StoreFailure {
    StoreFailure(format!("{what}: {error}"))
}

impl DirectoryStore {
    /// A store in memory: nothing outlives the process.
    pub fn in_memory() -> Self {
        Self {
            dir: None,
            writing: Arc::default(),
            inner: Arc::new(Mutex::new(Inner {
                saved: Saved::default(),
                audit: HashMap::new(),
            })),
        }
    }

    /// The store in `dir` (made if missing, private to this user).
    pub fn open(dir: &Path) -> Result<Self, StoreFailure> {
        std::fs::create_dir_all(dir).map_err(|error| io(&dir.display().to_string(), error))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        }
        let saved = match std::fs::read(dir.join(RECORDS_FILE)) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|error| io(&format!("{} is damaged", RECORDS_FILE), error))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Saved::default(),
            Err(error) => return Err(io(RECORDS_FILE, error)),
        };
        let mut audit: HashMap<String, VecDeque<AuditEntry>> = HashMap::new();
        let mut last_seq = 0;
        match std::fs::read_to_string(dir.join(AUDIT_FILE)) {
            Ok(text) => {
                for line in text.lines() {
                    // A line cut short by a crash is skipped, never fatal.
                    if let Ok(parsed) = serde_json::from_str::<AuditEntry>(line) {
                        last_seq = last_seq.max(parsed.seq);
                        let trail = audit.entry(parsed.queue.clone()).or_default();
                        append_to_trail(trail, parsed);
                    }
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io(AUDIT_FILE, error)),
        }
        let mut saved: Saved = saved;
        // Kept by name before names were scoped by queue: keyed anew.
        saved.records = std::mem::take(&mut saved.records)
            .into_values()
            .map(|record| (record.key(), record))
            .collect();
        saved.next_seq = saved.next_seq.max(last_seq + 1);
        Ok(Self {
            dir: Some(dir.to_owned()),
            writing: Arc::default(),
            inner: Arc::new(Mutex::new(Inner { saved, audit })),
        })
    }

    /// Writes one change: checked and given its place under a short hold of `inner`, written to
    /// the files under `writing` alone (readers never wait on a sync), then taken in.
    fn write_now(
        dir: Option<&Path>,
        writing: &Mutex<()>,
        inner: &Mutex<Inner>,
        write: &Write<'_>,
        expected: u64,
        audit: &AuditEntry,
        room: Room,
    ) -> Result<Written, StoreFailure> {
        let _writing = writing.lock().unwrap_or_else(|p| p.into_inner());
        let key = match write {
            Write::Put(record) => record.key(),
            Write::Remove(key) | Write::Resume(key) => (*key).to_owned(),
            Write::Pause(pause) => pause.queue.clone(),
        };
        let (next, line) = {
            let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
            let current = inner
                .saved
                .records
                .get(&key)
                .map_or(0, |record| record.revision);
            if write.checks_revision() && current != expected {
                return Ok(Written::ChangedMeanwhile);
            }
            let trail = inner.audit.get(&audit.queue);
            let (held, oldest) = trail.map_or((0, None), |trail| {
                (trail.len(), trail.front().map(|line| line.at))
            });
            if let Err(oldest) = room_in_trail(held, oldest, audit.at, room) {
                return Ok(Written::TrailFull { oldest });
            }
            let mut line = audit.clone();
            line.seq = inner.saved.next_seq.max(1);
            // Taken even if the writes below fail: a line that reached the log keeps its place.
            inner.saved.next_seq = line.seq + 1;
            let mut next = Saved {
                version: inner.saved.version + 1,
                next_seq: line.seq + 1,
                records: inner.saved.records.clone(),
                pauses: inner.saved.pauses.clone(),
            };
            match write {
                Write::Put(record) => {
                    next.records.insert(key, (*record).clone());
                }
                Write::Remove(_) => {
                    next.records.remove(&key);
                }
                Write::Pause(pause) => {
                    next.pauses.insert(key, (*pause).clone());
                }
                Write::Resume(_) => {
                    next.pauses.remove(&key);
                }
            }
            (next, line)
        };
        if let Some(dir) = dir {
            Self::persist(dir, &next, &line)?;
        }
        let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.saved = next;
        let trail = inner.audit.entry(line.queue.clone()).or_default();
        append_to_trail(trail, line);
        Ok(Written::Done)
    }

    /// Appends `line` to the audit file (synced), then puts `next` in place of the records file.
    fn persist(dir: &Path, next: &Saved, line: &AuditEntry) -> Result<(), StoreFailure> {
        let mut text = serde_json::to_string(line).map_err(|error| io("audit line", error))?;
        text.push('\n');
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options
            .open(dir.join(AUDIT_FILE))
            .map_err(|error| io(AUDIT_FILE, error))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_data())
            .map_err(|error| io(AUDIT_FILE, error))?;
        let bytes = serde_json::to_vec_pretty(next).map_err(|error| io("records", error))?;
        let mut staged =
            tempfile::NamedTempFile::new_in(dir).map_err(|error| io(RECORDS_FILE, error))?;
        staged
            .write_all(&bytes)
            .and_then(|()| staged.as_file().sync_all())
            .map_err(|error| io(RECORDS_FILE, error))?;
        staged
            .persist(dir.join(RECORDS_FILE))
            .map_err(|error| io(RECORDS_FILE, error.error))?;
        if let Ok(directory) = std::fs::File::open(dir) {
            let _ = directory.sync_all();
        }
        Ok(())
    }
}

/// A write, owned, to move onto a blocking task.
enum Owned {
    Put(Box<Record>),
    Remove(String),
    Pause(DeliveryPause),
    Resume(String),
}

impl Owned {
    fn of(write: &Write<'_>) -> Self {
        match write {
            Write::Put(record) => Owned::Put(Box::new((*record).clone())),
            Write::Remove(key) => Owned::Remove((*key).to_owned()),
            Write::Pause(pause) => Owned::Pause((*pause).clone()),
            Write::Resume(queue) => Owned::Resume((*queue).to_owned()),
        }
    }

    fn as_write(&self) -> Write<'_> {
        match self {
            Owned::Put(record) => Write::Put(record),
            Owned::Remove(key) => Write::Remove(key),
            Owned::Pause(pause) => Write::Pause(pause),
            Owned::Resume(queue) => Write::Resume(queue),
        }
    }
}

#[async_trait]
impl RecordStore for DirectoryStore {
    async fn load(&self) -> Result<Vec<Record>, StoreFailure> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Ok(inner.saved.records.values().cloned().collect())
    }

    async fn pauses(&self) -> Result<Vec<DeliveryPause>, StoreFailure> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        Ok(inner.saved.pauses.values().cloned().collect())
    }

    async fn write(
        &self,
        write: Write<'_>,
        expected: u64,
        audit: &AuditEntry,
        room: Room,
    ) -> Result<Written, StoreFailure> {
        let dir = self.dir.clone();
        let (writing, inner) = (Arc::clone(&self.writing), Arc::clone(&self.inner));
        let owned = Owned::of(&write);
        let audit = audit.clone();
        // File work off the async workers; one change at a time.
        tokio::task::spawn_blocking(move || {
            let write = owned.as_write();
            Self::write_now(
                dir.as_deref(),
                &writing,
                &inner,
                &write,
                expected,
                &audit,
                room,
            )
        })
        .await
        .map_err(|error| io("store task", error))?
    }

    async fn audit(
        &self,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, StoreFailure> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(trail) = inner.audit.get(queue) else {
            return Ok(Vec::new());
        };
        Ok(trail
            .iter()
            .rev()
            .filter(|line| line.on_page(queue, before))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn version(&self) -> Result<u64, StoreFailure> {
        Ok(self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .saved
            .version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::push::record::SealedSecret;
    use chrono::{DateTime, TimeZone, Utc};

    fn record(name: &str, revision: u64) -> Record {
        let at = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        Record {
            id: format!("id-{name}"),
            name: name.into(),
            queue: "orders".into(),
            url: "https://hooks.example.com/orders".into(),
            max_concurrency: 10,
            max_per_second: None,
            timeout_seconds: 15,
            visibility_timeout_seconds: None,
            raw_body: false,
            hold_on_202: false,
            enabled: true,
            disabled_because: None,
            created_at: at,
            created_by: "api_key:k".into(),
            updated_at: at,
            revision,
            secret: SealedSecret {
                key: 1,
                nonce: String::new(),
                sealed: String::new(),
            },
            secret_created_at: at,
            previous: None,
        }
    }

    fn line(action: &str) -> AuditEntry {
        AuditEntry {
            seq: 0,
            at: Utc.timestamp_opt(1_700_000_000, 0).unwrap(),
            actor: "api_key:k".into(),
            action: action.into(),
            queue: "orders".into(),
            subscription: Some("hook".into()),
            detail: String::new(),
        }
    }

    #[tokio::test]
    async fn a_change_is_written_over_the_revision_it_read_and_outlives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::open(dir.path()).unwrap();
        let first = record("hook", 7);
        fn put(record: &Record) -> Write<'_> {
            Write::Put(record)
        }
        assert_eq!(
            store
                .write(put(&first), 0, &line("created"), Room::Bounded)
                .await
                .unwrap(),
            Written::Done
        );
        assert_eq!(
            store
                .write(put(&first), 0, &line("created"), Room::Bounded)
                .await
                .unwrap(),
            Written::ChangedMeanwhile,
            "a second create of the name finds it made"
        );
        let changed = record("hook", 8);
        assert_eq!(
            store
                .write(put(&changed), 6, &line("updated"), Room::Bounded)
                .await
                .unwrap(),
            Written::ChangedMeanwhile
        );
        assert_eq!(
            store
                .write(put(&changed), 7, &line("updated"), Room::Bounded)
                .await
                .unwrap(),
            Written::Done
        );
        let version = store.version().await.unwrap();
        drop(store);

        let reopened = DirectoryStore::open(dir.path()).unwrap();
        assert_eq!(reopened.load().await.unwrap(), vec![changed.clone()]);
        assert_eq!(reopened.version().await.unwrap(), version);
        let trail = reopened.audit("orders", 10, None).await.unwrap();
        let seqs: Vec<(u64, &str)> = trail.iter().map(|l| (l.seq, l.action.as_str())).collect();
        assert_eq!(
            seqs,
            [(2, "updated"), (1, "created")],
            "refused writes leave no line"
        );
        assert_eq!(
            reopened
                .write(
                    Write::Remove("orders/hook"),
                    8,
                    &line("deleted"),
                    Room::Always
                )
                .await
                .unwrap(),
            Written::Done
        );
        assert!(reopened.load().await.unwrap().is_empty());
        assert_eq!(reopened.audit("orders", 1, None).await.unwrap()[0].seq, 3);
        assert_eq!(
            reopened.audit("orders", 10, Some(3)).await.unwrap().len(),
            2
        );
        assert!(
            reopened
                .audit("billing", 10, None)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// Names are scoped by queue: `hook` of `orders` and `hook` of `billing` are two records,
    /// and a file that kept records by name alone is keyed by queue and name when reopened.
    #[tokio::test]
    async fn one_name_on_two_queues_is_two_records_and_old_files_are_keyed_anew() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::open(dir.path()).unwrap();
        let orders = record("hook", 1);
        let mut billing = record("hook", 1);
        billing.queue = "billing".into();
        for made in [&orders, &billing] {
            assert_eq!(
                store
                    .write(Write::Put(made), 0, &line("created"), Room::Bounded)
                    .await
                    .unwrap(),
                Written::Done
            );
        }
        assert_eq!(store.load().await.unwrap().len(), 2);
        drop(store);
        let by_name = serde_json::json!({
            "version": 9,
            "next_seq": 3,
            "records": { "hook": orders },
        });
        std::fs::write(dir.path().join(RECORDS_FILE), by_name.to_string()).unwrap();
        let reopened = DirectoryStore::open(dir.path()).unwrap();
        assert_eq!(
            reopened
                .write(
                    Write::Remove("orders/hook"),
                    1,
                    &line("deleted"),
                    Room::Always
                )
                .await
                .unwrap(),
            Written::Done,
            "found under its queue and name"
        );
        assert!(reopened.load().await.unwrap().is_empty());
    }

    /// Each queue keeps its own trail: a full trail refuses a change that would push out a line
    /// younger than a week (a removal is written all the same), lets its oldest go once it is a
    /// week old, and another queue's trail is untouched throughout.
    #[tokio::test]
    async fn each_queue_keeps_its_own_trail_for_a_week_at_least() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirectoryStore::open(dir.path()).unwrap();
        let start = Utc.timestamp_opt(1_700_000_000, 0).unwrap();
        let on = |queue: &str, action: &str, at: DateTime<Utc>| AuditEntry {
            queue: queue.into(),
            at,
            ..line(action)
        };
        let mut billing = record("hook", 1);
        billing.queue = "billing".into();
        assert_eq!(
            store
                .write(
                    Write::Put(&billing),
                    0,
                    &on("billing", "created", start),
                    Room::Bounded
                )
                .await
                .unwrap(),
            Written::Done
        );
        let mut orders = record("other", 1);
        for n in 0..AUDIT_KEPT_PER_QUEUE as u64 {
            orders.revision = n + 1;
            let at = start + chrono::Duration::seconds(n as i64);
            assert_eq!(
                store
                    .write(
                        Write::Put(&orders),
                        n,
                        &on("orders", "updated", at),
                        Room::Bounded
                    )
                    .await
                    .unwrap(),
                Written::Done
            );
        }
        let full = AUDIT_KEPT_PER_QUEUE as u64;
        orders.revision = full + 1;
        let day_later = start + chrono::Duration::days(1);
        assert_eq!(
            store
                .write(
                    Write::Put(&orders),
                    full,
                    &on("orders", "updated", day_later),
                    Room::Bounded
                )
                .await
                .unwrap(),
            Written::TrailFull { oldest: start },
            "the oldest line is a day old: kept"
        );
        assert_eq!(
            store
                .write(
                    Write::Remove("orders/other"),
                    full,
                    &on("orders", "deleted", day_later),
                    Room::Always
                )
                .await
                .unwrap(),
            Written::Done,
            "a removal is written past the bound"
        );
        assert_eq!(
            store.audit("orders", 2_000, None).await.unwrap().len(),
            AUDIT_KEPT_PER_QUEUE + 1
        );
        let week_later = start + chrono::Duration::days(7) + chrono::Duration::seconds(1);
        orders.revision = 1;
        assert_eq!(
            store
                .write(
                    Write::Put(&orders),
                    0,
                    &on("orders", "created", week_later),
                    Room::Bounded
                )
                .await
                .unwrap(),
            Written::Done,
            "a week on, the oldest lines go"
        );
        let trail = store.audit("orders", 2_000, None).await.unwrap();
        assert_eq!(trail.len(), AUDIT_KEPT_PER_QUEUE);
        assert_eq!(trail[0].action, "created");
        let kept = store.audit("billing", 10, None).await.unwrap();
        assert_eq!(kept.len(), 1, "another queue's trail is its own");
        drop(store);
        let reopened = DirectoryStore::open(dir.path()).unwrap();
        assert_eq!(
            reopened.audit("orders", 2_000, None).await.unwrap().len(),
            AUDIT_KEPT_PER_QUEUE,
            "a reopen keeps what the store kept"
        );
        assert_eq!(reopened.audit("billing", 10, None).await.unwrap().len(), 1);
    }
}
