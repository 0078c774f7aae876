//! A directory only this user reads, held by one process at a time: what the sombus credential
//! store's directory and one node's restart state both are.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a held directory is tried again while waiting for it.
const POLL: Duration = Duration::from_millis(25);

/// Why a directory could not be held.
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    /// Making the directory, or opening or locking its lock file, failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The directory or the lock file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Another process holds it (past the wait given).
    #[error("held by another process")]
    Busy,
}

/// Takes `dir`'s exclusive lock on its file `lock_file` (released when the file is dropped),
/// making the directory first, readable by this user only, if it is not there; waits at most
/// `wait` for a holder to let go.
pub fn hold(dir: &Path, lock_file: &str, wait: Duration) -> Result<File, HoldError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| HoldError::Io { path, source }
    };
    if !dir.is_dir() {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(io(dir))?;
        }
    }
    let lock_path = dir.join(lock_file);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(&lock_path))?;
    let tries = wait.as_millis() / POLL.as_millis() + 1;
    for attempt in 1..=tries {
        match lock.try_lock() {
            Ok(()) => return Ok(lock),
            Err(TryLockError::WouldBlock) if attempt < tries => std::thread::sleep(POLL),
            Err(TryLockError::WouldBlock) => break,
            Err(TryLockError::Error(error)) => return Err(io(&lock_path)(error)),
        }
    }
    Err(HoldError::Busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_is_made_private_and_busy_until_let_go() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("held");
        let first = hold(&dir, "lock", Duration::ZERO).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
        }
        assert!(matches!(
            hold(&dir, "lock", Duration::from_millis(60)),
            Err(HoldError::Busy)
        ));
        drop(first);
        assert!(hold(&dir, "lock", Duration::ZERO).is_ok());
    }
}
