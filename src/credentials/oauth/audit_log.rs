//! The audit log file: one JSON line per change, appended under the store's directory lock, read
//! a page at a time from its end backwards, so a page costs what it holds, not the log's size.
//!
//! A change's line is first written into the connections file with the change itself (a
//! [`PendingLine`], naming the offset the line belongs at); [`settle`] appends what the log lacks,
//! so a crash between the change and its line never loses the line.

use super::store::{AuditEntry, StoreError, io, private_file};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

/// How much of the log is read backwards at once.
const CHUNK: u64 = 64 * 1024;
/// The most of the log one page reads: a workspace with few entries among many of others' gets a
/// short (even empty) page with a cursor, never a read of the whole log.
pub const SCAN_BUDGET: u64 = 1024 * 1024;

/// An audit line written with its change, until the log has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PendingLine {
    /// Where in the log the line belongs (the log's length when the change was made).
    pub offset: u64,
    /// The line's entry.
    pub entry: AuditEntry,
}

/// One page of a workspace's audit log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditPage {
    /// Newest first.
    pub entries: Vec<AuditEntry>,
    /// Where the next (older) page ends, when there may be older entries.
    pub next: Option<u64>,
}

/// An entry as its line in the log.
pub(super) fn line_of(entry: &AuditEntry) -> Result<Vec<u8>, StoreError> {
    let mut line =
        serde_json::to_vec(entry).map_err(|error| StoreError::Io(format!("encode: {error}")))?;
    line.push(b'\n');
    Ok(line)
}

/// The log's length, once it ends with a whole line: a line cut short by a crash is closed, so
/// the next line starts on a line of its own.
pub(super) fn end_of_log(path: &Path) -> Result<u64, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io(path)(error)),
    };
    let len = file.metadata().map_err(io(path))?.len();
    if len == 0 || last_byte(&mut file, len).map_err(io(path))? == b'\n' {
        return Ok(len);
    }
    let mut file = private_file(path, false)?;
    file.write_all(b"\n").map_err(io(path))?;
    file.sync_data().map_err(io(path))?;
    Ok(len + 1)
}

fn last_byte(file: &mut File, len: u64) -> std::io::Result<u8> {
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Appends `entry`'s line and syncs it.
pub(super) fn append(path: &Path, entry: &AuditEntry) -> Result<(), StoreError> {
    let line = line_of(entry)?;
    let mut file = private_file(path, false)?;
    file.write_all(&line).map_err(io(path))?;
    file.sync_data().map_err(io(path))
}

/// Whether every pending line is in the log where it belongs.
pub(super) fn has_all(path: &Path, pending: &[PendingLine]) -> Result<bool, StoreError> {
    for line in pending {
        if !has_line(path, line)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Appends the pending lines the log lacks (under the directory's lock); answers how many.
pub(super) fn settle(path: &Path, pending: &[PendingLine]) -> Result<usize, StoreError> {
    let mut appended = 0;
    for line in pending {
        if !has_line(path, line)? {
            end_of_log(path)?;
            append(path, &line.entry)?;
            appended += 1;
        }
    }
    Ok(appended)
}

fn has_line(path: &Path, pending: &PendingLine) -> Result<bool, StoreError> {
    let expected = line_of(&pending.entry)?;
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(io(path)(error)),
    };
    let len = file.metadata().map_err(io(path))?.len();
    if len < pending.offset + expected.len() as u64 {
        return Ok(false);
    }
    let mut found = vec![0u8; expected.len()];
    file.seek(SeekFrom::Start(pending.offset))
        .and_then(|_| file.read_exact(&mut found))
        .map_err(io(path))?;
    Ok(found == expected)
}

/// Up to `limit` entries of `workspace` that end before `before` (the log's end when `None`),
/// newest first, reading backwards at most [`SCAN_BUDGET`] bytes. Lines that don't parse (one
/// cut short by a crash) are skipped.
pub(super) fn read_page(
    path: &Path,
    workspace: &str,
    limit: usize,
    before: Option<u64>,
) -> Result<AuditPage, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        // No log yet: nothing older than any cursor either.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(AuditPage::default());
        }
        Err(error) => return Err(io(path)(error)),
    };
    let len = file.metadata().map_err(io(path))?.len();
    // A cursor past the log's end reads from the end: what is older than it is the whole log.
    let end = before.map_or(len, |before| before.min(len));
    let mut reader = Backwards::new(workspace, limit, end);
    while let Some(range) = reader.next_chunk() {
        let mut chunk = vec![0u8; (range.1 - range.0) as usize];
        file.seek(SeekFrom::Start(range.0))
            .and_then(|_| file.read_exact(&mut chunk))
            .map_err(io(path))?;
        reader.take(range.0, chunk);
    }
    Ok(reader.finish())
}

/// The state of a backwards read: the unread part of the log is `[0, unread)`, and `partial`
/// the start of a line whose rest was read already (its bytes end at `unread + partial.len()`).
struct Backwards<'a> {
    workspace: &'a str,
    limit: usize,
    unread: u64,
    partial: Vec<u8>,
    scanned: u64,
    page: AuditPage,
    done: bool,
}

impl<'a> Backwards<'a> {
    fn new(workspace: &'a str, limit: usize, end: u64) -> Self {
        Self {
            workspace,
            limit,
            unread: end,
            partial: Vec::new(),
            scanned: 0,
            page: AuditPage::default(),
            done: limit == 0,
        }
    }

    /// The next range to read, or `None` when the page is complete.
    fn next_chunk(&mut self) -> Option<(u64, u64)> {
        if self.done {
            return None;
        }
        if self.unread == 0 {
            // The first line of the log (no newline before it).
            let line = std::mem::take(&mut self.partial);
            self.line(0, &line);
            self.done = true;
            return None;
        }
        if self.scanned >= SCAN_BUDGET {
            // Stop at a line's end: the next page reads the partial line whole.
            self.page.next = Some(self.unread + self.partial.len() as u64);
            self.done = true;
            return None;
        }
        let start = self.unread.saturating_sub(CHUNK);
        Some((start, self.unread))
    }

    /// Takes the bytes read from `start` to `unread`.
    fn take(&mut self, start: u64, mut chunk: Vec<u8>) {
        self.scanned += chunk.len() as u64;
        chunk.extend_from_slice(&self.partial);
        let mut end = chunk.len();
        while let Some(newline) = chunk[..end].iter().rposition(|byte| *byte == b'\n') {
            let offset = start + newline as u64 + 1;
            self.line(offset, &chunk[newline + 1..end]);
            if self.done {
                return;
            }
            end = newline;
        }
        chunk.truncate(end);
        self.partial = chunk;
        self.unread = start;
    }

    /// One whole line starting at `offset`.
    fn line(&mut self, offset: u64, line: &[u8]) {
        if line.is_empty() {
            return;
        }
        let Ok(entry) = serde_json::from_slice::<AuditEntry>(line) else {
            return;
        };
        if entry.workspace != self.workspace {
            return;
        }
        self.page.entries.push(entry);
        if self.page.entries.len() >= self.limit {
            self.page.next = (offset > 0).then_some(offset);
            self.done = true;
        }
    }

    fn finish(self) -> AuditPage {
        self.page
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone as _;

    fn entry(workspace: &str, n: usize) -> AuditEntry {
        AuditEntry {
            at: chrono::Utc
                .with_ymd_and_hms(2026, 12, 1, 0, 0, 0)
                .single()
                .unwrap(),
            workspace: workspace.into(),
            actor: "test".into(),
            action: "secret.rotate".into(),
            client_id: format!("c{n}"),
            detail: String::new(),
        }
    }

    fn all_pages(path: &Path, workspace: &str, limit: usize) -> Vec<AuditEntry> {
        let mut seen = Vec::new();
        let mut before = None;
        loop {
            let page = read_page(path, workspace, limit, before).unwrap();
            seen.extend(page.entries);
            match page.next {
                Some(next) => before = Some(next),
                None => return seen,
            }
        }
    }

    #[test]
    fn pages_go_newest_first_through_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        for n in 0..2_500 {
            append(&path, &entry(if n % 3 == 0 { "w" } else { "x" }, n)).unwrap();
        }
        // A line cut short by a crash, then one after it.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"at\":\"20")
            .unwrap();
        end_of_log(&path).unwrap();
        append(&path, &entry("w", 2_500)).unwrap();
        let ours: Vec<String> = (0..=2_500)
            .rev()
            .filter(|n| n % 3 == 0 || *n == 2_500)
            .map(|n| format!("c{n}"))
            .collect();
        for limit in [1, 7, 100, 1000] {
            let seen: Vec<String> = all_pages(&path, "w", limit)
                .into_iter()
                .map(|entry| entry.client_id)
                .collect();
            assert_eq!(seen, ours, "limit {limit}");
        }
        let first = read_page(&path, "w", 2, None).unwrap();
        assert_eq!(first.entries.len(), 2);
        assert!(first.next.is_some());
        // A cursor past the end reads from the end: the same newest page.
        let past = read_page(&path, "w", 2, Some(u64::MAX)).unwrap();
        assert_eq!(past.entries.len(), first.entries.len());
    }

    #[test]
    fn a_page_reads_at_most_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        append(&path, &entry("w", 0)).unwrap();
        let line = line_of(&entry("x", 1)).unwrap();
        let others = (2 * SCAN_BUDGET) / line.len() as u64 + 1;
        let mut file = private_file(&path, false).unwrap();
        for _ in 0..others {
            file.write_all(&line).unwrap();
        }
        let first = read_page(&path, "w", 10, None).unwrap();
        assert!(first.entries.is_empty());
        assert!(first.next.is_some(), "a short page says where to go on");
        assert_eq!(all_pages(&path, "w", 10), [entry("w", 0)]);
    }

    #[test]
    fn settling_appends_only_the_missing_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        append(&path, &entry("w", 0)).unwrap();
        let written = PendingLine {
            offset: 0,
            entry: entry("w", 0),
        };
        let missing = PendingLine {
            offset: end_of_log(&path).unwrap(),
            entry: entry("w", 1),
        };
        assert!(has_all(&path, std::slice::from_ref(&written)).unwrap());
        assert!(!has_all(&path, std::slice::from_ref(&missing)).unwrap());
        let pending = [written, missing];
        assert_eq!(settle(&path, &pending).unwrap(), 1);
        assert_eq!(settle(&path, &pending).unwrap(), 0, "settled once");
        assert_eq!(all_pages(&path, "w", 10), [entry("w", 1), entry("w", 0)]);
    }
}
