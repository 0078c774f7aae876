//! Where connections and their audit log live: a directory (the embedded data directory, or one
//! the config names for the sqs backend) or memory. Every change is a read-modify-write under an
//! exclusive file lock (waited for at most [`LOCK_WAIT`], then refused as busy), written to a new
//! file and renamed into place, so replicas that share the directory never lose each other's
//! changes and a crash leaves the old or the new state whole. A change's audit line is written
//! into that same file, then appended to the audit log ([`super::audit_log`]): a change is never
//! made without its line, and the next change (or start) appends a line a crash kept from the log.
//!
//! The file work blocks. Async callers run it on the blocking pool ([`LocalStore::run`]);
//! the lookups of the token and pull routes, which can't await, hand the runtime's other tasks to
//! another worker first (`block_in_place`) when the runtime has more than one.
//!
//! A directory whose audit log exists but whose connections file does not has lost its store: it
//! is refused (every call fails, naming the file) rather than taken for an empty one.

use super::audit_log::{self, AuditPage, PendingLine};
use super::connection::Connection;
use super::files::{io, private_file};
use super::records::{AuditEntry, StoreError};
use crate::core::clock::Clock;
use crate::private_dir::HoldError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const CONNECTIONS_FILE: &str = "connections.json";
const AUDIT_FILE: &str = "audit.jsonl";
const LOCK_FILE: &str = ".lock";
/// The stored format's version.
const FORMAT: u32 = 1;
/// How long a change waits for the directory's lock (held by another change, replica or tool)
/// before it is refused as [`StoreError::Busy`].
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    format: u32,
    connections: Vec<Connection>,
    /// The last change's audit line, written with the change (until the log surely has it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending_audit: Vec<PendingLine>,
}

/// What identifies a version of the connections file: a write renames a new file into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// Client ids are unique across workspaces (the token service knows a client by its id alone):
/// the ones an admin chooses carry their workspace (`{workspace}.{chosen}`), generated ones are
/// random.
type Key = String;

/// A file whose stamp did not change is still read again after this long: a shared directory
/// (NFS) may cache attributes, so the stamp alone could hide another replica's change. What a
/// lookup answers is dated by when its content was read ([`LocalStore::lookup`]), not by
/// when its stamp was last seen, so this delay never adds to a caller's bound.
const REREAD_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(5);

#[derive(Debug, Default)]
struct Loaded {
    connections: BTreeMap<Key, Connection>,
    stamp: Option<FileStamp>,
    /// When the connections file's content was last read (or written) by this process: what
    /// `connections` is known to be current as of.
    read_at: Option<DateTime<Utc>>,
    /// The SHA-256 of the content read then: content read again and found the same is not
    /// parsed again.
    digest: Option<[u8; 32]>,
    /// The audit log when the store is in memory.
    audit: Vec<AuditEntry>,
}

/// The connections and the audit log.
pub(super) struct LocalStore {
    dir: Option<PathBuf>,
    loaded: Mutex<Loaded>,
    clock: Arc<dyn Clock>,
    lock_wait: Duration,
}

impl std::fmt::Debug for LocalStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl LocalStore {
    /// A store in memory (nothing survives a restart: the in-memory embedded engine's companion).
    pub(super) fn in_memory(clock: Arc<dyn Clock>) -> Self {
        Self {
            dir: None,
            loaded: Mutex::default(),
            clock,
            lock_wait: LOCK_WAIT,
        }
    }

    /// A store in `dir`, read now. The directory is made (private to the user) by the first
    /// change, so a gateway that never manages a connection leaves nothing on disk. A damaged
    /// connections file is refused; a lost one is logged, and the store answers
    /// [`StoreError::Lost`] until it is back. An audit line a crash kept from the log is
    /// appended now.
    pub(super) fn open(dir: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let store = Self {
            dir: Some(dir.to_owned()),
            loaded: Mutex::default(),
            clock,
            lock_wait: LOCK_WAIT,
        };
        match store.refresh() {
            Ok(()) => {
                if let Err(error) = store.settle_at_start(dir) {
                    tracing::error!(%error, "the audit log could not get a change's line; the next change tries again");
                }
            }
            Err(StoreError::Lost(detail)) => {
                tracing::error!(%detail, "the sombus credential store is lost: its admin and token requests are refused until it is restored");
            }
            Err(error) => return Err(error),
        }
        Ok(store)
    }

    /// The same store, waiting at most `wait` for the directory's lock.
    #[cfg(test)]
    pub(super) fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Whether changes survive a restart.
    pub(super) fn is_durable(&self) -> bool {
        self.dir.is_some()
    }

    /// Runs `work` on the store where blocking is harmless: the blocking pool when the store is
    /// on disk (its file work and its wait for the lock never hold a runtime thread), at once
    /// when it is in memory.
    pub(super) async fn run<T, F>(self: &Arc<Self>, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Self) -> Result<T, StoreError> + Send + 'static,
    {
        if self.dir.is_none() {
            return work(self);
        }
        let store = Arc::clone(self);
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|error| StoreError::Io(format!("store task: {error}")))?
    }

    /// Whether the store can be read now (readiness): its connections file parses, and is
    /// there when the directory shows it should be.
    pub(super) fn probe(&self) -> Result<(), StoreError> {
        self.refresh()
    }

    /// The connection as stored now (re-read when another process changed the file).
    pub(super) fn get(&self, client_id: &str) -> Result<Option<Connection>, StoreError> {
        Ok(self.lookup(client_id, REREAD_AFTER)?.0)
    }

    /// The connection as stored, and when that was current: at most `within` ago (the file's
    /// content is read again when the copy is older, whatever its stamp says; zero reads it
    /// now), so a caller that keeps the answer until that time plus its own bound holds to its
    /// bound on any filesystem.
    pub(super) fn lookup(
        &self,
        client_id: &str,
        within: chrono::TimeDelta,
    ) -> Result<(Option<Connection>, DateTime<Utc>), StoreError> {
        let as_of = off_the_runtime(|| self.refresh_within(within))?;
        Ok((self.lock().connections.get(client_id).cloned(), as_of))
    }

    /// The workspace's connections, by client id (those being created too).
    pub(super) fn list(&self, workspace: &str) -> Result<Vec<Connection>, StoreError> {
        off_the_runtime(|| self.refresh())?;
        Ok(self
            .lock()
            .connections
            .values()
            .filter(|connection| connection.workspace == workspace)
            .cloned()
            .collect())
    }

    /// The connections of every workspace still being created that were created before
    /// `cutoff`: creates that will never finish.
    pub(super) fn abandoned(&self, cutoff: DateTime<Utc>) -> Result<Vec<Connection>, StoreError> {
        off_the_runtime(|| self.refresh())?;
        Ok(self
            .lock()
            .connections
            .values()
            .filter(|connection| connection.creating && connection.created_at <= cutoff)
            .cloned()
            .collect())
    }

    /// Adds a connection, recording `audit`. Refused as [`StoreError::Exists`] when its client
    /// id is taken, or its workspace has a connection of the same local id (the part its queue
    /// names are made of): both can only be the same workspace's, so the refusal tells nothing
    /// of another workspace's ids.
    pub(super) fn create(
        &self,
        connection: Connection,
        audit: AuditEntry,
    ) -> Result<(), StoreError> {
        self.change(Some(audit), |connections| {
            insert_new(connections, connection)
        })
    }

    /// Marks the connection `client_id` of instance `instance` made whole (its queues exist):
    /// it gets tokens from now on. Part of its create, whose audit line came with its record;
    /// `NotFound` when it is not that create's record any more.
    pub(super) fn finish_create(
        &self,
        client_id: &str,
        instance: &str,
    ) -> Result<Connection, StoreError> {
        self.change(None, |connections| {
            let connection = being_created(connections, client_id, instance)?;
            connection.creating = false;
            Ok(connection.clone())
        })
    }

    /// Removes the connection `client_id` of instance `instance` whose create did not finish,
    /// recording `audit`; `NotFound` when it is not that create's record any more (finished, or
    /// undone by another replica).
    pub(super) fn undo_create(
        &self,
        client_id: &str,
        instance: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        self.change(Some(audit), |connections| {
            being_created(connections, client_id, instance)?;
            connections.remove(client_id).ok_or(StoreError::NotFound)
        })
    }

    /// Changes a connection with `apply`, recording `audit` when it applies; answers what
    /// `apply` answers and the connection as changed.
    pub(super) fn update<T>(
        &self,
        client_id: &str,
        audit: AuditEntry,
        apply: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<(T, Connection), StoreError> {
        self.change(Some(audit), |connections| {
            let connection = connections.get_mut(client_id).ok_or(StoreError::NotFound)?;
            let answer = apply(connection)?;
            Ok((answer, connection.clone()))
        })
    }

    /// Removes a connection, recording `audit`; answers it.
    pub(super) fn remove(
        &self,
        client_id: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        self.change(Some(audit), |connections| {
            connections.remove(client_id).ok_or(StoreError::NotFound)
        })
    }

    /// Records a change made elsewhere (a redrive of the connection's dead letters), or a
    /// refused attempt ([`Self::refusal_lines`] says which to record).
    pub(super) fn record(&self, mut audit: AuditEntry) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else {
            let mut loaded = self.lock();
            audit.seq = loaded.audit.len() as u64 + 1;
            loaded.audit.push(audit);
            return Ok(());
        };
        let lock = lock_dir(dir, self.lock_wait)?;
        let log = dir.join(AUDIT_FILE);
        audit_log::settle(&log, &read_stored(dir)?.pending_audit)?;
        audit_log::end_of_log(&log)?;
        audit_log::chain(&log, &mut audit)?;
        audit_log::append(&log, &audit)?;
        drop(lock);
        Ok(())
    }

    /// A page of the workspace's audit log: at most `limit` entries, newest first, of those
    /// older than the cursor `before` (a page's `next`; the newest when `None`).
    pub(super) fn audit(
        &self,
        workspace: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<AuditPage, StoreError> {
        match &self.dir {
            Some(dir) => audit_log::read_page(&dir.join(AUDIT_FILE), workspace, limit, before),
            None => self.audit_in_memory(workspace, limit, before),
        }
    }

    fn audit_in_memory(
        &self,
        workspace: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<AuditPage, StoreError> {
        let loaded = self.lock();
        let end = match before {
            None => loaded.audit.len(),
            // A cursor past the end reads from the end, as on disk.
            Some(before) => usize::try_from(before)
                .map_or(loaded.audit.len(), |end| end.min(loaded.audit.len())),
        };
        let mut page = AuditPage::default();
        for (index, entry) in loaded.audit[..end].iter().enumerate().rev() {
            if entry.workspace != workspace {
                continue;
            }
            page.entries.push(entry.clone());
            if page.entries.len() >= limit {
                page.next = (index > 0).then_some(index as u64);
                break;
            }
        }
        Ok(page)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Re-reads the file when it is not the version last read, or its copy is
    /// [`REREAD_AFTER`] old.
    fn refresh(&self) -> Result<(), StoreError> {
        self.refresh_within(REREAD_AFTER).map(|_| ())
    }

    /// Re-reads the file's content when its stamp changed or the copy is older than `within`
    /// (at most [`REREAD_AFTER`]); content found unchanged (by its hash) is not parsed again.
    /// Answers when the copy was current.
    fn refresh_within(&self, within: chrono::TimeDelta) -> Result<DateTime<Utc>, StoreError> {
        let now = self.clock.now();
        let Some(dir) = &self.dir else {
            return Ok(now);
        };
        let path = dir.join(CONNECTIONS_FILE);
        let stamp = stamp_of(&path)?;
        let within = within.min(REREAD_AFTER);
        {
            let loaded = self.lock();
            if let Some(at) = loaded.read_at
                && at <= now
                && now - at < within
                && loaded.stamp == stamp
                && stamp.is_some()
            {
                return Ok(at);
            }
        }
        let bytes = read_bytes(dir)?;
        // No file at all is told apart from an empty one (which is refused as damaged).
        let digest: [u8; 32] = bytes
            .as_deref()
            .map_or([0; 32], |bytes| Sha256::digest(bytes).into());
        {
            let mut loaded = self.lock();
            if loaded.read_at.is_some() && loaded.digest == Some(digest) {
                loaded.stamp = stamp;
                loaded.read_at = Some(now);
                return Ok(now);
            }
        }
        let connections = by_client_id(parse_stored(&path, bytes.as_deref())?);
        let mut loaded = self.lock();
        loaded.connections = connections;
        loaded.stamp = stamp;
        loaded.read_at = Some(now);
        loaded.digest = Some(digest);
        Ok(now)
    }

    /// Appends the audit lines a crash kept from the log. Changes do it too: a lock held
    /// elsewhere leaves it to the next one.
    fn settle_at_start(&self, dir: &Path) -> Result<(), StoreError> {
        let log = dir.join(AUDIT_FILE);
        if audit_log::has_all(&log, &read_stored(dir)?.pending_audit)? {
            return Ok(());
        }
        let lock = match lock_dir(dir, self.lock_wait) {
            Err(StoreError::Busy) => return Ok(()),
            lock => lock?,
        };
        let appended = audit_log::settle(&log, &read_stored(dir)?.pending_audit)?;
        drop(lock);
        if appended > 0 {
            tracing::warn!(
                appended,
                "the audit log got the lines of changes a crash had kept from it"
            );
        }
        Ok(())
    }

    /// One change: under the directory's lock, read the latest, append the last change's audit
    /// line if the log lacks it, apply, write with this change's line, append that line.
    fn change<T>(
        &self,
        audit: Option<AuditEntry>,
        apply: impl FnOnce(&mut BTreeMap<Key, Connection>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(dir) = &self.dir else {
            let mut loaded = self.lock();
            let answer = apply(&mut loaded.connections)?;
            if let Some(mut entry) = audit {
                entry.seq = loaded.audit.len() as u64 + 1;
                loaded.audit.push(entry);
            }
            return Ok(answer);
        };
        let lock = lock_dir(dir, self.lock_wait)?;
        let path = dir.join(CONNECTIONS_FILE);
        let log = dir.join(AUDIT_FILE);
        let stored = read_stored(dir)?;
        // No change is made while the log lacks the line of an earlier one.
        audit_log::settle(&log, &stored.pending_audit)?;
        let mut connections = by_client_id(stored);
        let answer = apply(&mut connections)?;
        let pending = match audit {
            Some(mut entry) => {
                let offset = audit_log::end_of_log(&log)?;
                audit_log::chain(&log, &mut entry)?;
                vec![PendingLine { offset, entry }]
            }
            None => Vec::new(),
        };
        let digest = write_connections(dir, &path, &connections, pending.clone())?;
        // The change is made, its line with it: a failed append is logged, not turned into a
        // failed change (whose caller would retry something already done, or never see a new
        // secret); the next change or start appends the line.
        if let Some(PendingLine { entry, .. }) = pending.first()
            && let Err(error) = audit_log::append(&log, entry)
        {
            tracing::error!(%error, action = %entry.action, client_id = %entry.client_id, "the audit log missed a change's line; the next change or start appends it");
        }
        let stamp = stamp_of(&path)?;
        let mut loaded = self.lock();
        loaded.connections = connections;
        loaded.stamp = stamp;
        loaded.read_at = Some(self.clock.now());
        loaded.digest = Some(digest);
        drop(loaded);
        // Dropping the file releases the lock.
        drop(lock);
        Ok(answer)
    }
}

/// Runs file work for a caller that can't await: on a multi-threaded runtime the worker hands
/// its other tasks to another thread first, so they don't wait behind the file.
fn off_the_runtime<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// Everything the store in `dir` holds, for a move to the shared store: its connections and
/// its audit log's lines (a crash's pending line appended first), read under the directory's
/// lock so that no change lands between the two. A directory without a connections file holds
/// nothing.
pub(super) fn export(dir: &Path) -> Result<(Vec<Connection>, Vec<Vec<u8>>), StoreError> {
    if !dir.join(CONNECTIONS_FILE).exists() {
        refuse_lost(dir, &dir.join(CONNECTIONS_FILE))?;
        return Ok((Vec::new(), Vec::new()));
    }
    let lock = lock_dir(dir, LOCK_WAIT)?;
    let stored = read_stored(dir)?;
    let log = dir.join(AUDIT_FILE);
    audit_log::settle(&log, &stored.pending_audit)?;
    let lines = match std::fs::read(&log) {
        Ok(bytes) => bytes
            .split(|byte| *byte == b'\n')
            .filter(|line| !line.is_empty())
            .map(<[u8]>::to_vec)
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => return Err(io(&log)(error)),
    };
    drop(lock);
    Ok((stored.connections, lines))
}

/// Adds `connection` unless its client id is taken, or its workspace has a connection of the
/// same local id ([`LocalStore::create`]).
pub(super) fn insert_new(
    connections: &mut BTreeMap<String, Connection>,
    connection: Connection,
) -> Result<(), StoreError> {
    let taken = connections.contains_key(&connection.client_id)
        || connections.values().any(|other| {
            other.workspace == connection.workspace && other.local_id() == connection.local_id()
        });
    if taken {
        return Err(StoreError::Exists);
    }
    connections.insert(connection.client_id.clone(), connection);
    Ok(())
}

/// The record of a create still under way: `client_id` of instance `instance`, being created.
pub(super) fn being_created<'a>(
    connections: &'a mut BTreeMap<Key, Connection>,
    client_id: &str,
    instance: &str,
) -> Result<&'a mut Connection, StoreError> {
    connections
        .get_mut(client_id)
        .filter(|connection| connection.creating && connection.instance == instance)
        .ok_or(StoreError::NotFound)
}

/// Takes the directory's exclusive lock (released when the file is dropped), making the
/// directory first if it isn't there; waits at most `wait` for a holder to let go.
fn lock_dir(dir: &Path, wait: Duration) -> Result<File, StoreError> {
    crate::private_dir::hold(dir, LOCK_FILE, wait).map_err(|error| match error {
        HoldError::Busy => StoreError::Busy,
        HoldError::Io { path, source } => io(&path)(source),
    })
}

fn stamp_of(path: &Path) -> Result<Option<FileStamp>, StoreError> {
    match std::fs::metadata(path) {
        Ok(metadata) => {
            #[cfg(unix)]
            let inode = std::os::unix::fs::MetadataExt::ino(&metadata);
            #[cfg(not(unix))]
            let inode = 0;
            Ok(Some(FileStamp {
                inode,
                len: metadata.len(),
                modified: metadata.modified().ok(),
            }))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io(path)(error)),
    }
}

fn by_client_id(stored: Stored) -> BTreeMap<Key, Connection> {
    stored
        .connections
        .into_iter()
        .map(|connection| (connection.client_id.clone(), connection))
        .collect()
}

/// The connections file of `dir`: empty when there is none in a fresh directory, refused as
/// lost when the directory's audit log shows it held connections.
fn read_stored(dir: &Path) -> Result<Stored, StoreError> {
    let path = dir.join(CONNECTIONS_FILE);
    parse_stored(&path, read_bytes(dir)?.as_deref())
}

/// The connections file's bytes (`None` for a fresh directory; refused as lost as
/// [`read_stored`] says).
fn read_bytes(dir: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    let path = dir.join(CONNECTIONS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            refuse_lost(dir, &path)?;
            Ok(None)
        }
        Err(error) => Err(io(&path)(error)),
    }
}

/// The connections file's content parsed (no file is an empty store).
fn parse_stored(path: &Path, bytes: Option<&[u8]>) -> Result<Stored, StoreError> {
    let Some(bytes) = bytes else {
        return Ok(Stored::default());
    };
    let stored: Stored = serde_json::from_slice(bytes)
        .map_err(|error| StoreError::Io(format!("{}: {error}", path.display())))?;
    if stored.format != FORMAT {
        return Err(StoreError::Io(format!(
            "{}: format {} is not {FORMAT}",
            path.display(),
            stored.format
        )));
    }
    Ok(stored)
}

/// A missing connections file is a fresh store, unless the audit log (written only after the
/// connections file) exists.
fn refuse_lost(dir: &Path, path: &Path) -> Result<(), StoreError> {
    let log = dir.join(AUDIT_FILE);
    if log.exists() {
        return Err(StoreError::Lost(format!(
            "{} is missing while {} shows the store held connections: restore it from a backup \
             (or move the whole directory away to start with no connections)",
            path.display(),
            log.display()
        )));
    }
    Ok(())
}

/// Writes the connections file whole; answers the SHA-256 of what it wrote.
fn write_connections(
    dir: &Path,
    path: &Path,
    connections: &BTreeMap<Key, Connection>,
    pending_audit: Vec<PendingLine>,
) -> Result<[u8; 32], StoreError> {
    let stored = Stored {
        format: FORMAT,
        connections: connections.values().cloned().collect(),
        pending_audit,
    };
    let text = serde_json::to_vec_pretty(&stored)
        .map_err(|error| StoreError::Io(format!("encode: {error}")))?;
    let staging = dir.join(format!("{CONNECTIONS_FILE}.new"));
    let mut file = private_file(&staging, true)?;
    file.write_all(&text).map_err(io(&staging))?;
    file.sync_all().map_err(io(&staging))?;
    std::fs::rename(&staging, path).map_err(io(path))?;
    File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(io(dir))?;
    Ok(Sha256::digest(&text).into())
}

#[cfg(test)]
mod tests;
