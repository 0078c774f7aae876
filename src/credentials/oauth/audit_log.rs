//! The audit log file: one JSON line per change, appended under the store's directory lock, read
//! a page at a time from its end backwards, so a page costs what it holds, not the log's size.
//!
//! A change's line is first written into the connections file with the change itself (a
//! [`PendingLine`], naming the offset the line belongs at); [`settle`] appends what the log lacks,
//! so a crash between the change and its line never loses the line.
//!
//! Lines are chained: each carries its place in the log (`seq`, 1, 2, …) and the SHA-256 of the
//! log's previous whole line (`prev`), set by [`chain`] just before it is written. A page checks
//! the links of the lines it reads and says what it found ([`AuditDamage`]): lines that don't
//! parse, lines missing from the sequence, links whose hash doesn't match (a line altered, or one
//! put in between). Lines written before the log was chained (no `seq`) are read as they are.

use super::files::{io, private_file};
use super::records::{AuditEntry, StoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
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
    /// What the page's read found wrong with the log (all zero when its lines are whole).
    pub damage: AuditDamage,
}

/// What a page's read of the log found broken, among every line it read (any workspace's: a
/// line that is gone or doesn't parse can't tell whose it was).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditDamage {
    /// Lines that don't parse as entries (damaged, or cut short by a crash).
    pub damaged_lines: u64,
    /// Lines missing from the sequence (removed).
    pub missing_lines: u64,
    /// Links whose hash doesn't match the line before (a line altered, or one put in between).
    pub broken_links: u64,
}

impl AuditDamage {
    /// Whether the lines read were whole and linked.
    pub fn is_none(&self) -> bool {
        *self == Self::default()
    }
}

/// `sha256:` and the hex SHA-256 of a line's bytes (without its newline).
fn line_hash(line: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(line)))
}

/// The line's link: what the line after it must say.
#[derive(Debug, Clone)]
struct Link {
    seq: u64,
    prev: String,
}

/// Sets `entry`'s place in the log and the hash of the log's last whole line (under the
/// directory's lock, just before the line is written at the log's end).
pub(super) fn chain(path: &Path, entry: &mut AuditEntry) -> Result<(), StoreError> {
    let last = last_entry(path)?;
    let (seq, prev) = match last {
        Some((line, last)) => (last.seq + 1, line_hash(&line)),
        None => (1, String::new()),
    };
    entry.seq = seq;
    entry.prev = prev;
    Ok(())
}

/// The log's last line that parses, with its bytes (looking back at most [`SCAN_BUDGET`]).
fn last_entry(path: &Path) -> Result<Option<(Vec<u8>, AuditEntry)>, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io(path)(error)),
    };
    let len = file.metadata().map_err(io(path))?.len();
    let mut end = len;
    // Bytes from `start` to `end` not yet split into lines (the head of a line read in part).
    let mut tail: Vec<u8> = Vec::new();
    let mut start = len;
    while start > 0 && len - start < SCAN_BUDGET {
        start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))
            .and_then(|_| file.read_exact(&mut chunk))
            .map_err(io(path))?;
        chunk.extend_from_slice(&tail);
        let mut cut = chunk.len();
        while let Some(newline) = chunk[..cut].iter().rposition(|byte| *byte == b'\n') {
            if let Some(found) = parsed(&chunk[newline + 1..cut]) {
                return Ok(Some((chunk[newline + 1..cut].to_vec(), found)));
            }
            cut = newline;
        }
        chunk.truncate(cut);
        tail = chunk;
        end = start;
    }
    if start == 0 {
        // The log's first line.
        if let Some(found) = parsed(&tail) {
            return Ok(Some((tail, found)));
        }
    }
    Ok(None)
}

fn parsed(line: &[u8]) -> Option<AuditEntry> {
    if line.is_empty() {
        return None;
    }
    serde_json::from_slice::<AuditEntry>(line).ok()
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
/// cut short by a crash) are skipped and counted, as are broken links between the lines read
/// (the page's [`AuditDamage`]).
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
    // One inside a line reads the lines that end before it (from that line's start).
    let end = match before.map_or(len, |before| before.min(len)) {
        end if end == len || end == 0 => end,
        end => line_start(&mut file, end).map_err(io(path))?,
    };
    let mut reader = Backwards::new(workspace, limit, end);
    // The line after the page's range, whose link to the range's last line this page checks.
    reader.after = line_at(&mut file, end, len)
        .map_err(io(path))?
        .and_then(|line| parsed(&line))
        .map(|entry| Link {
            seq: entry.seq,
            prev: entry.prev,
        });
    while let Some(range) = reader.next_chunk() {
        let mut chunk = vec![0u8; (range.1 - range.0) as usize];
        file.seek(SeekFrom::Start(range.0))
            .and_then(|_| file.read_exact(&mut chunk))
            .map_err(io(path))?;
        reader.take(range.0, chunk);
    }
    Ok(reader.finish())
}

/// Where the line holding byte `at` starts, or `at` itself when it is a line's end (a newline).
fn line_start(file: &mut File, at: u64) -> std::io::Result<u64> {
    let mut end = at;
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut byte)?;
    if byte[0] == b'\n' {
        return Ok(at);
    }
    while end > 0 && at - end < SCAN_BUDGET {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        if let Some(newline) = chunk.iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + newline as u64 + 1);
        }
        end = start;
    }
    Ok(end)
}

/// The whole line that starts at `at` (after the newline there, if `at` is one), when it ends
/// within [`CHUNK`] bytes.
fn line_at(file: &mut File, at: u64, len: u64) -> std::io::Result<Option<Vec<u8>>> {
    if at >= len {
        return Ok(None);
    }
    let mut chunk = vec![0u8; (len - at).min(CHUNK) as usize];
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(&mut chunk)?;
    let from = usize::from(chunk.first() == Some(&b'\n'));
    Ok(chunk[from..]
        .iter()
        .position(|byte| *byte == b'\n')
        .map(|newline| chunk[from..from + newline].to_vec()))
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
    /// The link of the line after the one read next (the last one read that parsed).
    after: Option<Link>,
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
            after: None,
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
            self.line(0, &line, true);
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
            self.line(offset, &chunk[newline + 1..end], offset == 0);
            if self.done {
                return;
            }
            end = newline;
        }
        chunk.truncate(end);
        self.partial = chunk;
        self.unread = start;
    }

    /// One whole line starting at `offset` (the cursor of the lines before it); `first` when
    /// it is the log's first line.
    fn line(&mut self, offset: u64, line: &[u8], first: bool) {
        if line.is_empty() {
            return;
        }
        let Ok(entry) = serde_json::from_slice::<AuditEntry>(line) else {
            self.page.damage.damaged_lines += 1;
            return;
        };
        self.link(line, &entry, first);
        if entry.workspace != self.workspace {
            return;
        }
        self.page.entries.push(entry);
        if self.page.entries.len() >= self.limit {
            self.page.next = (!first).then_some(offset);
            self.done = true;
        }
    }

    /// Checks the link from `entry` (whose bytes are `line`) to the line after it, and, for the
    /// log's first line, that nothing came before it.
    fn link(&mut self, line: &[u8], entry: &AuditEntry, first: bool) {
        let damage = &mut self.page.damage;
        if let Some(after) = self.after.take() {
            if after.seq == 0 {
                // An unchained line after a chained one was not written by the gateway.
                if entry.seq != 0 {
                    damage.broken_links += 1;
                }
            } else if entry.seq == 0 {
                // Only the first chained line follows an unchained one, linked to it.
                if after.seq != 1 || after.prev != line_hash(line) {
                    damage.broken_links += 1;
                }
            } else {
                let expected = entry.seq + 1;
                if after.seq > expected {
                    damage.missing_lines += after.seq - expected;
                } else if after.seq < expected || after.prev != line_hash(line) {
                    damage.broken_links += 1;
                }
            }
        }
        if first && entry.seq > 1 {
            damage.missing_lines += entry.seq - 1;
        } else if first && !entry.prev.is_empty() {
            damage.broken_links += 1;
        }
        self.after = Some(Link {
            seq: entry.seq,
            prev: entry.prev.clone(),
        });
    }

    fn finish(self) -> AuditPage {
        self.page
    }
}

/// A page made of lines read elsewhere (the shared store's stream), handed in newest first with
/// the same checks as a page of the file: each line with the cursor of the lines before it.
pub(super) struct LinePage<'a>(Backwards<'a>);

impl<'a> LinePage<'a> {
    /// A page of at most `limit` of `workspace`'s entries; `after` is the line just newer than
    /// the page's range (whose link to the range's newest line the page checks), if any.
    pub(super) fn new(workspace: &'a str, limit: usize, after: Option<&[u8]>) -> Self {
        let mut reader = Backwards::new(workspace, limit, 0);
        reader.after = after.and_then(parsed).map(|entry| Link {
            seq: entry.seq,
            prev: entry.prev,
        });
        Self(reader)
    }

    /// Whether the page is complete.
    pub(super) fn is_full(&self) -> bool {
        self.0.done
    }

    /// The next older line; `first` when it is the log's first.
    pub(super) fn line(&mut self, cursor: u64, line: &[u8], first: bool) {
        if !self.0.done {
            self.0.line(cursor, line, first);
        }
    }

    /// The page, ending at `cursor` when it stopped before the log's first line without
    /// filling up (the next page reads on from there).
    pub(super) fn finish(mut self, cursor: Option<u64>) -> AuditPage {
        if !self.0.done {
            self.0.page.next = cursor;
        }
        self.0.finish()
    }
}

/// The cursor-free parts of a shared log's line: its place and the hash the next line links.
pub(super) fn link_of(line: &[u8]) -> Option<(u64, String)> {
    parsed(line).map(|entry| (entry.seq, line_hash(line)))
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
            ..AuditEntry::default()
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

    /// Appends `entry` as the store does: chained to the log's last line.
    fn chained(path: &Path, mut entry: AuditEntry) {
        end_of_log(path).unwrap();
        chain(path, &mut entry).unwrap();
        append(path, &entry).unwrap();
    }

    #[test]
    fn a_page_shows_lines_removed_altered_or_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        // Lines from before the log was chained, then chained ones.
        append(&path, &entry("w", 0)).unwrap();
        for n in 1..=6 {
            chained(&path, entry(if n == 3 { "x" } else { "w" }, n));
        }
        let whole = std::fs::read_to_string(&path).unwrap();
        let page = read_page(&path, "w", 100, None).unwrap();
        assert!(page.damage.is_none(), "{:?}", page.damage);
        assert_eq!(page.entries.len(), 6);
        assert_eq!(page.entries[0].seq, 6);
        let with = |lines: &[&str]| {
            std::fs::write(&path, format!("{}\n", lines.join("\n"))).unwrap();
            read_page(&path, "w", 100, None).unwrap().damage
        };
        let lines: Vec<&str> = whole.lines().collect();
        // Another workspace's line removed: every workspace's page shows it.
        let mut removed = lines.clone();
        removed.remove(3);
        assert_eq!(
            (with(&removed).missing_lines, with(&removed).broken_links),
            (1, 0)
        );
        let altered_line = lines[2].replace("secret.rotate", "secret.revoke");
        let mut altered = lines.clone();
        altered[2] = &altered_line;
        assert_eq!(with(&altered).broken_links, 1);
        let mut damaged = lines.clone();
        damaged[4] = "{\"at\":";
        let damage = with(&damaged);
        assert_eq!((damage.damaged_lines, damage.missing_lines), (1, 1));
        // The first chained lines removed: the sequence shows it from the log's start.
        assert_eq!(with(&lines[3..]).missing_lines, 2);
        // A line inserted unchained among chained ones.
        let inserted = String::from_utf8(line_of(&entry("w", 9)).unwrap()).unwrap();
        let mut among = lines.clone();
        among.insert(4, inserted.trim_end());
        assert!(with(&among).broken_links >= 1);
        // Pages that end inside the log check the link across their edge too.
        std::fs::write(&path, format!("{}\n", altered.join("\n"))).unwrap();
        let mut before = None;
        let mut broken = 0;
        loop {
            let page = read_page(&path, "w", 1, before).unwrap();
            broken += page.damage.broken_links;
            match page.next {
                Some(next) => before = Some(next),
                None => break,
            }
        }
        assert_eq!(broken, 1, "seen once, on the page that holds the link");
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
