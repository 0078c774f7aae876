//! One node's in-process state across a graceful restart: written at the end of a drained
//! shutdown, read once at the next start and removed before anything is served. Only a clean
//! stop's state is ever taken in: after a crash there is none, so every handle from before the
//! crash answers stale instead of acting on a delivery that a later receive may have replaced.

use crate::core::state::{InProcessState, Restored, StateSnapshot};
use crate::private_dir::{self, HoldError};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The snapshot's file in the state directory.
const SNAPSHOT_FILE: &str = "state.snapshot";
/// Where a snapshot is written before it is renamed into place.
const PARTIAL_FILE: &str = "state.snapshot.partial";
/// Held (locked) by the process that keeps its state in the directory.
const LOCK_FILE: &str = "lock";
/// What a snapshot starts with: the format, so that another version's file is refused.
const MAGIC: &[u8; 12] = b"sqsgw-state\x01";

/// The state directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum RestartFileError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Another process keeps its state there.
    #[error("{0}: another process keeps its state in this directory")]
    Busy(PathBuf),
    /// The snapshot is not one this version wrote (it was removed).
    #[error("{0}: not a state snapshot of this version; left out")]
    Unreadable(PathBuf),
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> RestartFileError + '_ {
    move |source| RestartFileError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The state directory of this process, held (locked) for as long as it runs.
#[derive(Debug)]
pub struct RestartFile {
    dir: PathBuf,
    _lock: File,
}

impl RestartFile {
    /// Takes the directory (made if missing, readable by this user only); a partial snapshot a
    /// crash left mid-write is removed.
    pub fn open(dir: &Path) -> Result<Self, RestartFileError> {
        let lock =
            private_dir::hold(dir, LOCK_FILE, Duration::ZERO).map_err(|error| match error {
                HoldError::Busy => RestartFileError::Busy(dir.to_owned()),
                HoldError::Io { path, source } => RestartFileError::Io { path, source },
            })?;
        let partial = dir.join(PARTIAL_FILE);
        match std::fs::remove_file(&partial) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io(&partial)(error)),
        }
        Ok(Self {
            dir: dir.to_owned(),
            _lock: lock,
        })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The snapshot a graceful stop left, if any, removed from the disk (durably) before it is
    /// answered: it is taken in at most once. A file that cannot be removed is not answered.
    pub fn take(&self) -> Result<Option<StateSnapshot>, RestartFileError> {
        let path = self.dir.join(SNAPSHOT_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io(&path)(error)),
        };
        std::fs::remove_file(&path).map_err(io(&path))?;
        sync_dir(&self.dir)?;
        let snapshot = bytes
            .strip_prefix(MAGIC.as_slice())
            .and_then(|body| postcard::from_bytes(body).ok())
            .ok_or_else(|| RestartFileError::Unreadable(path.clone()))?;
        Ok(Some(snapshot))
    }

    /// Writes `snapshot` for the next start: in full or not at all (written aside, synced, then
    /// renamed into place). Answers its size in bytes.
    pub fn keep(&self, snapshot: &StateSnapshot) -> Result<u64, RestartFileError> {
        let partial = self.dir.join(PARTIAL_FILE);
        let mut options = OpenOptions::new();
        options.create(true).truncate(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&partial).map_err(io(&partial))?;
        let mut writer = BufWriter::new(file);
        writer.write_all(MAGIC).map_err(io(&partial))?;
        postcard::to_io(snapshot, &mut writer).map_err(|error| RestartFileError::Io {
            path: partial.clone(),
            source: std::io::Error::other(error),
        })?;
        let file = writer
            .into_inner()
            .map_err(|error| io(&partial)(error.into_error()))?;
        file.sync_all().map_err(io(&partial))?;
        let size = file.metadata().map_err(io(&partial))?.len();
        let path = self.dir.join(SNAPSHOT_FILE);
        std::fs::rename(&partial, &path).map_err(io(&path))?;
        sync_dir(&self.dir)?;
        Ok(size)
    }
}

fn sync_dir(dir: &Path) -> Result<(), RestartFileError> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(io(dir))?;
    Ok(())
}

/// The in-process state of a node that carries it across graceful restarts.
#[derive(Debug)]
pub struct CarriedState {
    state: Arc<InProcessState>,
    file: RestartFile,
    with_ledger: bool,
}

impl CarriedState {
    /// Takes the state directory `dir` for `state` and takes in what the last graceful stop
    /// left there; `with_ledger` when the backend does not know its own current deliveries
    /// (over SQS; the embedded engine does). `None`, said in a warning, when the directory is
    /// unusable: the state then lasts as long as the process.
    pub fn open(dir: &Path, state: Arc<InProcessState>, with_ledger: bool) -> Option<Self> {
        let file = match RestartFile::open(dir) {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(%error, "the state is this process's alone: a restart forgets its deliveries and quota counts");
                return None;
            }
        };
        match file.take() {
            Ok(Some(snapshot)) => {
                let Restored { deliveries, quotas } = state.restore(snapshot);
                tracing::info!(
                    dir = %file.dir().display(),
                    deliveries,
                    quotas,
                    "state carried over from the last graceful stop"
                );
            }
            Ok(None) => {
                tracing::info!(dir = %file.dir().display(), "state kept here at a graceful stop")
            }
            Err(error) => tracing::warn!(%error, "nothing carried over from the last stop"),
        }
        Some(Self {
            state,
            file,
            with_ledger,
        })
    }

    /// Writes the state down for the next start; only after a drained stop (nothing in flight
    /// can change it afterwards).
    pub fn keep(self) {
        let snapshot = self.state.snapshot(self.with_ledger);
        match self.file.keep(&snapshot) {
            Ok(bytes) => tracing::info!(
                dir = %self.file.dir().display(),
                bytes,
                "state kept for the next start"
            ),
            Err(error) => tracing::warn!(%error, "the state could not be kept for the next start"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SystemClock;
    use crate::core::state::ledger::UnknownDeliveries;
    use std::time::Duration;

    fn state() -> InProcessState {
        InProcessState::new(
            1_000,
            Duration::from_secs(3600),
            UnknownDeliveries::Stale,
            Arc::new(SystemClock),
        )
    }

    #[test]
    fn a_snapshot_is_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let file = RestartFile::open(dir.path()).unwrap();
        let snapshot = state().snapshot(true);
        file.keep(&snapshot).unwrap();
        assert_eq!(file.take().unwrap(), Some(snapshot));
        assert_eq!(file.take().unwrap(), None, "removed when taken");
        assert!(!dir.path().join(SNAPSHOT_FILE).exists());
    }

    #[test]
    fn one_process_holds_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let _held = RestartFile::open(dir.path()).unwrap();
        assert!(matches!(
            RestartFile::open(dir.path()),
            Err(RestartFileError::Busy(_))
        ));
    }

    #[test]
    fn a_damaged_or_foreign_file_is_removed_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SNAPSHOT_FILE), b"sqsgw-state\x02whatever").unwrap();
        std::fs::write(dir.path().join(PARTIAL_FILE), b"half").unwrap();
        let file = RestartFile::open(dir.path()).unwrap();
        assert!(
            !dir.path().join(PARTIAL_FILE).exists(),
            "a partial write goes"
        );
        assert!(matches!(file.take(), Err(RestartFileError::Unreadable(_))));
        assert_eq!(file.take().unwrap(), None);
    }
}
