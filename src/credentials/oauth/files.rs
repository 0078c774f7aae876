//! File helpers of the directory store: errors that name their file, and files only their owner
//! can read.

use super::records::StoreError;
use std::fs::{File, OpenOptions};
use std::path::Path;

pub(super) fn io(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |error| StoreError::Io(format!("{}: {error}", path.display()))
}

pub(super) fn private_file(path: &Path, truncate: bool) -> Result<File, StoreError> {
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
