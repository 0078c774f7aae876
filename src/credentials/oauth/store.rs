//! Where connections and their audit log live: a directory (the embedded data directory, or one
//! the config names for the sqs backend) or memory. Every change is a read-modify-write under an
//! exclusive file lock, written to a new file and renamed into place, so replicas that share the
//! directory never lose each other's changes and a crash leaves the old or the new state whole.
//! The audit log is one JSON line per change, appended under the same lock.

use super::connection::Connection;
use crate::core::clock::Clock;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const CONNECTIONS_FILE: &str = "connections.json";
const AUDIT_FILE: &str = "audit.jsonl";
const LOCK_FILE: &str = ".lock";
/// The stored format's version.
const FORMAT: u32 = 1;

/// One change, as the workspace's audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When.
    pub at: DateTime<Utc>,
    /// The workspace.
    pub workspace: String,
    /// Who: the admin key's name (or `cli:` and the operator for local commands).
    pub actor: String,
    /// What: `connection.create`, `secret.rotate`, …
    pub action: String,
    /// Which connection.
    pub client_id: String,
    /// Anything else worth knowing (the overlap chosen, the new credential version).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// The store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The files could not be read or written; detail for the log only.
    #[error("the credential store is unavailable: {0}")]
    Io(String),
    /// A connection with that id exists.
    #[error("a connection with that client id exists")]
    Exists,
    /// No such connection.
    #[error("no such connection")]
    NotFound,
    /// The change does not apply (its reason is safe to show).
    #[error("{0}")]
    NotApplicable(&'static str),
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    format: u32,
    connections: Vec<Connection>,
}

/// What identifies a version of the connections file: a write renames a new file into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

/// Client ids are unique across workspaces (the token service knows a client by its id alone).
type Key = String;

/// A file whose stamp did not change is still read again after this long: a shared directory
/// (NFS) may cache attributes, so the stamp alone could hide another replica's change.
const REREAD_AFTER: chrono::TimeDelta = chrono::TimeDelta::seconds(5);

#[derive(Debug, Default)]
struct Loaded {
    connections: BTreeMap<Key, Connection>,
    stamp: Option<FileStamp>,
    read_at: Option<DateTime<Utc>>,
    /// The audit log when the store is in memory.
    audit: Vec<AuditEntry>,
}

/// The connections and the audit log.
pub struct ConnectionStore {
    dir: Option<PathBuf>,
    loaded: Mutex<Loaded>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for ConnectionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ConnectionStore {
    /// A store in memory (nothing survives a restart: the in-memory embedded engine's companion).
    pub fn in_memory(clock: Arc<dyn Clock>) -> Self {
        Self {
            dir: None,
            loaded: Mutex::default(),
            clock,
        }
    }

    /// A store in `dir`, read now. The directory is made (private to the user) by the first
    /// change, so a gateway that never manages a connection leaves nothing on disk.
    pub fn open(dir: &Path, clock: Arc<dyn Clock>) -> Result<Self, StoreError> {
        let store = Self {
            dir: Some(dir.to_owned()),
            loaded: Mutex::default(),
            clock,
        };
        store.refresh()?;
        Ok(store)
    }

    /// Whether changes survive a restart.
    pub fn is_durable(&self) -> bool {
        self.dir.is_some()
    }

    /// The connection as stored now (re-read when another process changed the file).
    pub fn get(&self, client_id: &str) -> Result<Option<Connection>, StoreError> {
        self.refresh()?;
        Ok(self.lock().connections.get(client_id).cloned())
    }

    /// The workspace's connections, by client id.
    pub fn list(&self, workspace: &str) -> Result<Vec<Connection>, StoreError> {
        self.refresh()?;
        Ok(self
            .lock()
            .connections
            .values()
            .filter(|connection| connection.workspace == workspace)
            .cloned()
            .collect())
    }

    /// Adds a connection, recording `audit`.
    pub fn create(&self, connection: Connection, audit: AuditEntry) -> Result<(), StoreError> {
        self.change(audit, |connections| {
            if connections.contains_key(&connection.client_id) {
                return Err(StoreError::Exists);
            }
            connections.insert(connection.client_id.clone(), connection);
            Ok(())
        })
    }

    /// Changes a connection with `apply`, recording `audit` when it applies; answers what
    /// `apply` answers and the connection as changed.
    pub fn update<T>(
        &self,
        client_id: &str,
        audit: AuditEntry,
        apply: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<(T, Connection), StoreError> {
        self.change(audit, |connections| {
            let connection = connections.get_mut(client_id).ok_or(StoreError::NotFound)?;
            let answer = apply(connection)?;
            Ok((answer, connection.clone()))
        })
    }

    /// Removes a connection, recording `audit`; answers it.
    pub fn remove(&self, client_id: &str, audit: AuditEntry) -> Result<Connection, StoreError> {
        self.change(audit, |connections| {
            connections.remove(client_id).ok_or(StoreError::NotFound)
        })
    }

    /// Records a change made elsewhere (a redrive of the connection's dead letters).
    pub fn record(&self, audit: AuditEntry) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else {
            self.lock().audit.push(audit);
            return Ok(());
        };
        let lock = Self::lock_dir(dir)?;
        append_audit(dir, &audit)?;
        drop(lock);
        Ok(())
    }

    /// The workspace's audit log, oldest first, at most the last `limit` entries.
    pub fn audit(&self, workspace: &str, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let entries: Vec<AuditEntry> = match &self.dir {
            None => self
                .lock()
                .audit
                .iter()
                .filter(|entry| entry.workspace == workspace)
                .cloned()
                .collect(),
            Some(dir) => {
                let path = dir.join(AUDIT_FILE);
                let text = match std::fs::read_to_string(&path) {
                    Ok(text) => text,
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
                    Err(error) => return Err(io(&path)(error)),
                };
                text.lines()
                    // A line cut short by a crash is skipped, not fatal.
                    .filter_map(|line| serde_json::from_str::<AuditEntry>(line).ok())
                    .filter(|entry| entry.workspace == workspace)
                    .collect()
            }
        };
        let skip = entries.len().saturating_sub(limit);
        Ok(entries.into_iter().skip(skip).collect())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Loaded> {
        self.loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Re-reads the file when it is not the version last read.
    fn refresh(&self) -> Result<(), StoreError> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let path = dir.join(CONNECTIONS_FILE);
        let stamp = stamp_of(&path)?;
        {
            let loaded = self.lock();
            let now = self.clock.now();
            let recent = loaded
                .read_at
                .is_some_and(|at| at <= now && now - at < REREAD_AFTER);
            if loaded.stamp == stamp && stamp.is_some() && recent {
                return Ok(());
            }
        }
        let connections = read_connections(&path)?;
        let mut loaded = self.lock();
        loaded.connections = connections;
        loaded.stamp = stamp;
        loaded.read_at = Some(self.clock.now());
        Ok(())
    }

    /// Takes the directory's exclusive lock (released when the file is dropped), making the
    /// directory first if it isn't there.
    fn lock_dir(dir: &Path) -> Result<File, StoreError> {
        if !dir.is_dir() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io(dir))?;
            }
        }
        let lock_path = dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        lock.lock().map_err(io(&lock_path))?;
        Ok(lock)
    }

    /// One change: under the directory's lock, read the latest, apply, write, audit.
    fn change<T>(
        &self,
        audit: AuditEntry,
        apply: impl FnOnce(&mut BTreeMap<Key, Connection>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let Some(dir) = &self.dir else {
            let mut loaded = self.lock();
            let answer = apply(&mut loaded.connections)?;
            loaded.audit.push(audit);
            return Ok(answer);
        };
        let lock = Self::lock_dir(dir)?;
        let path = dir.join(CONNECTIONS_FILE);
        let mut connections = read_connections(&path)?;
        let answer = apply(&mut connections)?;
        write_connections(dir, &path, &connections)?;
        // The change is made: a failed audit line is logged, not turned into a failed change
        // (whose caller would retry something already done, or never see a new secret).
        if let Err(error) = append_audit(dir, &audit) {
            tracing::error!(%error, action = %audit.action, client_id = %audit.client_id, "the audit log missed a change");
        }
        let stamp = stamp_of(&path)?;
        let mut loaded = self.lock();
        loaded.connections = connections;
        loaded.stamp = stamp;
        loaded.read_at = Some(self.clock.now());
        drop(loaded);
        // Dropping the file releases the lock.
        drop(lock);
        Ok(answer)
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io(format!("{}: {error}", path.display()))
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

fn read_connections(path: &Path) -> Result<BTreeMap<Key, Connection>, StoreError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(error) => return Err(io(path)(error)),
    };
    let stored: Stored = serde_json::from_str(&text)
        .map_err(|error| StoreError::Io(format!("{}: {error}", path.display())))?;
    if stored.format != FORMAT {
        return Err(StoreError::Io(format!(
            "{}: format {} is not {FORMAT}",
            path.display(),
            stored.format
        )));
    }
    Ok(stored
        .connections
        .into_iter()
        .map(|connection| (connection.client_id.clone(), connection))
        .collect())
}

fn write_connections(
    dir: &Path,
    path: &Path,
    connections: &BTreeMap<Key, Connection>,
) -> Result<(), StoreError> {
    let stored = Stored {
        format: FORMAT,
        connections: connections.values().cloned().collect(),
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
        .map_err(io(dir))
}

fn append_audit(dir: &Path, entry: &AuditEntry) -> Result<(), StoreError> {
    let path = dir.join(AUDIT_FILE);
    let mut line =
        serde_json::to_vec(entry).map_err(|error| StoreError::Io(format!("encode: {error}")))?;
    line.push(b'\n');
    let mut file = private_file(&path, false)?;
    file.write_all(&line).map_err(io(&path))?;
    file.sync_data().map_err(io(&path))
}

fn private_file(path: &Path, truncate: bool) -> Result<File, StoreError> {
    let mut options = OpenOptions::new();
    options.create(true);
    if truncate {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SystemClock;
    use crate::credentials::oauth::connection::ConnectionStatus;
    use chrono::TimeZone;

    fn connection(workspace: &str, client_id: &str) -> Connection {
        crate::credentials::oauth::connection::sample(workspace, client_id)
    }

    fn audit(workspace: &str, action: &str) -> AuditEntry {
        AuditEntry {
            at: Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap(),
            workspace: workspace.into(),
            actor: "test".into(),
            action: action.into(),
            client_id: "c1".into(),
            detail: String::new(),
        }
    }

    #[test]
    fn two_stores_on_one_directory_see_each_others_changes() {
        let dir = tempfile::tempdir().unwrap();
        let a = ConnectionStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
        let b = ConnectionStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
        a.create(connection("w", "c1"), audit("w", "connection.create"))
            .unwrap();
        assert!(b.get("c1").unwrap().is_some());
        b.update("c1", audit("w", "connection.revoke"), |c| {
            c.status = ConnectionStatus::Revoked;
            Ok(())
        })
        .unwrap();
        assert_eq!(
            a.get("c1").unwrap().unwrap().status,
            ConnectionStatus::Revoked
        );
        a.create(
            connection("other", "c2"),
            audit("other", "connection.create"),
        )
        .unwrap();
        assert!(matches!(
            b.create(connection("w", "c1"), audit("w", "x")),
            Err(StoreError::Exists)
        ));
        let log = a.audit("w", 100).unwrap();
        let actions: Vec<&str> = log.iter().map(|entry| entry.action.as_str()).collect();
        assert_eq!(actions, ["connection.create", "connection.revoke"]);
        assert_eq!(a.audit("w", 1).unwrap().len(), 1);
        // A restart reads it all back.
        drop((a, b));
        let reopened = ConnectionStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
        assert_eq!(reopened.list("w").unwrap().len(), 1);
        assert!(
            reopened
                .remove("c1", audit("w", "connection.remove"))
                .is_ok()
        );
        assert!(reopened.get("c1").unwrap().is_none());
    }

    #[test]
    fn the_directory_is_made_by_the_first_change_only() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("sombus");
        let store = ConnectionStore::open(&dir, Arc::new(SystemClock)).unwrap();
        assert!(store.get("c1").unwrap().is_none());
        assert!(store.list("w").unwrap().is_empty());
        assert!(store.audit("w", 10).unwrap().is_empty());
        assert!(!dir.exists(), "reading makes nothing");
        store
            .create(connection("w", "c1"), audit("w", "connection.create"))
            .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        assert!(store.get("c1").unwrap().is_some());
    }

    #[test]
    fn a_refused_change_writes_nothing() {
        let store = ConnectionStore::in_memory(Arc::new(SystemClock));
        assert!(matches!(
            store.update("nope", audit("w", "x"), |_| Ok(())),
            Err(StoreError::NotFound)
        ));
        assert!(store.audit("w", 10).unwrap().is_empty());
    }
}
