//! A damaged or emptied store file stops the start with a clear error naming the file (exit 1),
//! never a panic and never an empty store in its place.

use crate::binary::{BIN, Running, run_to_exit};
use std::io::{Seek, SeekFrom, Write};
use std::process::Command;
use std::time::Duration;

/// A zero-config data directory after one start and stop, with its store written.
fn started_once() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut command = Command::new(BIN);
    command.args([
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data.to_str().unwrap(),
    ]);
    let mut running = Running::spawn(command);
    running.address(Duration::from_secs(30));
    running.signal("TERM");
    assert!(running.exit_within(Duration::from_secs(30)).is_some());
    assert!(data.join("queues.redb").exists());
    dir
}

fn start_again(dir: &tempfile::TempDir) -> (Option<i32>, String) {
    let data = dir.path().join("data");
    run_to_exit(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
        ],
        &[],
    )
}

#[test]
fn an_emptied_store_file_is_refused_not_taken_for_a_new_store() {
    let dir = started_once();
    std::fs::write(dir.path().join("data/queues.redb"), b"").unwrap();
    let (code, stderr) = start_again(&dir);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("queues.redb is empty"), "{stderr}");
}

#[test]
fn a_damaged_store_file_is_refused_by_name_without_a_panic() {
    let dir = started_once();
    let path = dir.path().join("data/queues.redb");
    let length = std::fs::metadata(&path).unwrap().len();
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    // Cut in half, with the header's first page overwritten.
    file.set_len(length / 2).unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    file.write_all(&[0xA5; 512]).unwrap();
    drop(file);
    let (code, stderr) = start_again(&dir);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("queues.redb"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
