//! The write-ahead journal: what makes a commit durable. Each group commit is appended as frames
//! to one of two files and synced (one sequential write and one `fdatasync`); the tables take the
//! same records afterwards, off the request's path, and a checkpoint of the tables makes the
//! frames before it unneeded, so the two files are written in turn, each overwritten from its
//! start once the tables hold all it carries.
//!
//! A file: a 40-byte header (magic, format version, the number of its first frame, a random
//! nonce drawn each time the file is started, a CRC-32), then frames: payload length (u32),
//! CRC-32 (u32) of the nonce, the numbers and the payload, the frame's number (u64, consecutive
//! across files), the first and last numbers of its group commit (u64 each), payload. A group is
//! replayed whole or not at all: one torn by a crash (it was never answered) ends the journal; a
//! damaged frame followed by a later group is refused as damage. What is left from a file's
//! earlier round fails the number and nonce checks. Files grow in zero-filled steps written and
//! synced ahead of the frames, so a frame's sync carries no change of the file's size.

use super::error::StoreError;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SQGWJRNL";
/// The journal format this release writes and reads.
const VERSION: u32 = 1;
const HEADER: u64 = 40;
const FRAME_HEADER: usize = 32;
/// How much a file grows at a time (zeros, synced before frames go there): by its size, from
/// 64 KiB to 4 MiB, so a store that is never busy keeps a small journal.
const MIN_GROWTH: u64 = 64 * 1024;
const MAX_GROWTH: u64 = 4 * 1024 * 1024;
/// A file is left for the other once it holds this much (a single larger group still fits);
/// small in unit tests, so that they hand files over.
#[cfg(not(test))]
const FILE_TARGET: u64 = 64 * 1024 * 1024;
#[cfg(test)]
const FILE_TARGET: u64 = 256 * 1024;
/// A frame's payload at most; a group commit larger than this takes several frames.
pub(super) const FRAME_TARGET: usize = 4 * 1024 * 1024;

/// The journal files of a store directory.
fn paths(dir: &Path) -> [PathBuf; 2] {
    [dir.join("queues.journal.0"), dir.join("queues.journal.1")]
}

/// A frame read back: its number and payload.
#[derive(Debug)]
pub(super) struct Frame {
    pub(super) number: u64,
    pub(super) payload: Vec<u8>,
}

/// The frames of both files with a number above `after` (a checkpoint always ends on a group's
/// last frame), in order; an error when one is missing between `after` and the last found (a
/// damaged file), never a silent gap.
pub(super) fn read_after(dir: &Path, after: u64) -> Result<Vec<Frame>, StoreError> {
    let mut runs = Vec::new();
    for path in paths(dir) {
        if let Some(run) = read_file(&path, after)? {
            runs.push(run);
        }
    }
    runs.sort_by_key(|(first, _)| *first);
    let mut frames: Vec<Frame> = Vec::new();
    for (_, run) in runs {
        for frame in run {
            if frame.number <= after {
                continue;
            }
            let expected = frames.last().map_or(after + 1, |last| last.number + 1);
            if frame.number != expected {
                return Err(StoreError(format!(
                    "the journal misses frames {expected} to {} (a damaged journal file): restore the store directory from a backup",
                    frame.number - 1
                )));
            }
            frames.push(frame);
        }
    }
    Ok(frames)
}

/// A frame's header as read.
struct FrameHead {
    length: usize,
    crc: u32,
    number: u64,
    first: u64,
    last: u64,
}

impl FrameHead {
    fn parse(head: &[u8; FRAME_HEADER]) -> Self {
        let word = |at: usize| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes"));
        Self {
            length: u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize,
            crc: u32::from_le_bytes(head[4..8].try_into().expect("4 bytes")),
            number: word(8),
            first: word(16),
            last: word(24),
        }
    }

    /// Whether it can be a frame numbered `number` at all (its payload not yet checked).
    fn plausible(&self, number: u64) -> bool {
        self.length > 0
            && self.length <= 1 << 30
            && self.number == number
            && self.first <= number
            && number <= self.last
    }
}

fn frame_crc(nonce: u64, head: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&nonce.to_le_bytes());
    hasher.update(&head[8..FRAME_HEADER]);
    hasher.update(payload);
    hasher.finalize()
}

/// Reads the next frame of `reader` into `payload`: its header when it is a valid frame numbered
/// `number`.
fn next_frame(
    reader: &mut impl Read,
    nonce: u64,
    number: u64,
    payload: &mut Vec<u8>,
) -> Option<FrameHead> {
    let mut head = [0u8; FRAME_HEADER];
    reader.read_exact(&mut head).ok()?;
    let parsed = FrameHead::parse(&head);
    if !parsed.plausible(number) {
        return None;
    }
    payload.resize(parsed.length, 0);
    reader.read_exact(payload).ok()?;
    (frame_crc(nonce, &head, payload) == parsed.crc).then_some(parsed)
}

/// The number of a file's first frame and its frames numbered above `after` (those before are
/// checked but not kept), or `None` for a file that is absent or has no valid header (never
/// written past its creation).
fn read_file(path: &Path, after: u64) -> Result<Option<(u64, Vec<Frame>)>, StoreError> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(StoreError(format!("{}: {error}", path.display()))),
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; HEADER as usize];
    if reader.read_exact(&mut header).is_err() {
        return Ok(None);
    }
    let Some((first, nonce)) = parse_header(&header) else {
        if &header[..8] == MAGIC {
            let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
            if version > VERSION {
                return Err(StoreError(format!(
                    "{}: journal format {version} is newer than this release reads",
                    path.display()
                )));
            }
        }
        return Ok(None);
    };
    let mut frames = Vec::new();
    // The frames of the group being read, kept once its last frame is.
    let mut group: Vec<Frame> = Vec::new();
    let mut scratch = Vec::new();
    let mut expected = first;
    // Where the frame numbered `expected` starts.
    let mut at = HEADER;
    loop {
        let Some(head) = next_frame(&mut reader, nonce, expected, &mut scratch) else {
            // The end, or a torn group (never answered), or damage: a damaged frame is
            // followed by more frames; if one of them begins a later group, that group was
            // written after this one was synced, so this one was answered and is lost.
            if later_group_follows(&mut reader, at, nonce, expected) {
                return Err(StoreError(format!(
                    "{}: journal frame {expected} is damaged and later frames follow it: restore the store directory from a backup",
                    path.display()
                )));
            }
            break;
        };
        if head.first == head.number && !group.is_empty() {
            // A group left unfinished before this one began: not how the writer writes.
            return Err(StoreError(format!(
                "{}: journal frame {} begins a group before frame {} ends the last: restore the store directory from a backup",
                path.display(),
                head.number,
                head.number - 1
            )));
        }
        if head.number > after {
            group.push(Frame {
                number: head.number,
                payload: std::mem::take(&mut scratch),
            });
        }
        if head.number == head.last {
            frames.append(&mut group);
        }
        expected += 1;
        at += (FRAME_HEADER + head.length) as u64;
    }
    Ok(Some((first, frames)))
}

/// After a frame at `at` that is not valid where frame `number` should be: whether a valid frame
/// of a later group follows it. (Its own header, when whole, says where the next frame starts;
/// a frame whose header is damaged hides what follows it.)
fn later_group_follows(reader: &mut BufReader<File>, at: u64, nonce: u64, number: u64) -> bool {
    let mut head = [0u8; FRAME_HEADER];
    if reader.seek(SeekFrom::Start(at)).is_err() || reader.read_exact(&mut head).is_err() {
        return false;
    }
    let parsed = FrameHead::parse(&head);
    if !parsed.plausible(number) || reader.seek_relative(parsed.length as i64).is_err() {
        return false;
    }
    let mut scratch = Vec::new();
    let mut next = number + 1;
    // Frames of the torn frame's own group may follow; the first of another group decides.
    for _ in 0..64 {
        match next_frame(reader, nonce, next, &mut scratch) {
            Some(head) if head.first == head.number => return true,
            Some(_) => next += 1,
            None => return false,
        }
    }
    false
}

fn header(first: u64, nonce: u64) -> [u8; HEADER as usize] {
    let mut header = [0u8; HEADER as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&first.to_le_bytes());
    header[24..32].copy_from_slice(&nonce.to_le_bytes());
    let crc = crc32fast::hash(&header[..32]);
    header[32..36].copy_from_slice(&crc.to_le_bytes());
    header
}

/// The number of the first frame and the nonce, when `header` is a valid header of this format.
fn parse_header(header: &[u8; HEADER as usize]) -> Option<(u64, u64)> {
    let crc = u32::from_le_bytes(header[32..36].try_into().expect("4 bytes"));
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    (&header[..8] == MAGIC && version == VERSION && crc32fast::hash(&header[..32]) == crc).then(
        || {
            (
                u64::from_le_bytes(header[16..24].try_into().expect("8 bytes")),
                u64::from_le_bytes(header[24..32].try_into().expect("8 bytes")),
            )
        },
    )
}

/// One of the two files, open for writing.
struct Open {
    file: File,
    path: PathBuf,
    /// This round's nonce, in every frame's CRC.
    nonce: u64,
    /// Where the next frame goes.
    end: u64,
    /// Bytes written and synced ahead (zeros past `end`).
    ready: u64,
    /// The number of its last frame (0: none yet).
    last: u64,
}

impl Open {
    /// Opens file `path` in `dir` and starts it anew with frame `first`: its header written and
    /// synced (and the directory, when the file is new).
    fn start(dir: &Path, path: PathBuf, first: u64) -> Result<Self, StoreError> {
        let fail = |error: std::io::Error| StoreError(format!("{}: {error}", path.display()));
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(fail)?;
        let ready = file.metadata().map_err(fail)?.len();
        let mut open = Open {
            file,
            path,
            nonce: rand::random(),
            end: HEADER,
            ready,
            last: 0,
        };
        open.make_room(0)?;
        open.file
            .write_all_at(&header(first, open.nonce), 0)
            .map_err(|error| open.fail(error))?;
        open.file.sync_data().map_err(|error| open.fail(error))?;
        if ready == 0 {
            // A new file's directory entry is made durable once.
            File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(|error| open.fail(error))?;
        }
        Ok(open)
    }

    fn fail(&self, error: std::io::Error) -> StoreError {
        StoreError(format!("{}: {error}", self.path.display()))
    }

    /// Grows the file, zero-filled and synced, until `bytes` more fit after `end`.
    fn make_room(&mut self, bytes: usize) -> Result<(), StoreError> {
        let needed = self.end + bytes as u64;
        if needed <= self.ready {
            return Ok(());
        }
        let step = self.ready.clamp(MIN_GROWTH, MAX_GROWTH);
        let target = needed.max(self.ready + step).div_ceil(MIN_GROWTH) * MIN_GROWTH;
        let zeros = vec![0u8; (target - self.ready).min(MAX_GROWTH) as usize];
        self.file
            .seek(SeekFrom::Start(self.ready))
            .map_err(|error| self.fail(error))?;
        let mut at = self.ready;
        while at < target {
            let chunk = ((target - at) as usize).min(zeros.len());
            self.file
                .write_all(&zeros[..chunk])
                .map_err(|error| self.fail(error))?;
            at += chunk as u64;
        }
        // The size changed: a full sync, once per step, so frames' syncs need not carry it.
        self.file.sync_all().map_err(|error| self.fail(error))?;
        self.ready = target;
        Ok(())
    }
}

/// The journal as the writer appends to it.
pub(super) struct Journal {
    dir: PathBuf,
    /// The file written now, and which of the two it is.
    current: Open,
    index: usize,
    /// The number of the last frame in the other file (0: none): the tables must hold it before
    /// that file is started anew.
    other_last: u64,
    /// The number the next frame gets.
    next: u64,
    /// Payloads of the frames the next sync writes, as one group.
    pending: Vec<Vec<u8>>,
}

impl Journal {
    /// Starts the journal in `dir` with frame `next`, everything before it being in the tables.
    pub(super) fn start(dir: &Path, next: u64) -> Result<Self, StoreError> {
        let current = Open::start(dir, paths(dir)[0].clone(), next)?;
        Ok(Self {
            dir: dir.to_owned(),
            current,
            index: 0,
            other_last: 0,
            next,
            pending: Vec::new(),
        })
    }

    /// Adds a frame carrying `payload` to the group the next [`Journal::sync`] writes; answers
    /// its number.
    pub(super) fn add(&mut self, payload: Vec<u8>) -> u64 {
        assert!(
            u32::try_from(payload.len()).is_ok(),
            "frames stay far below 4 GiB"
        );
        self.pending.push(payload);
        self.next += 1;
        self.next - 1
    }

    fn pending_bytes(&self) -> u64 {
        self.pending
            .iter()
            .map(|payload| (FRAME_HEADER + payload.len()) as u64)
            .sum()
    }

    /// Whether the file written now is full: the next [`Journal::sync`] starts the other, which
    /// needs the tables to hold [`Journal::other_last`] first.
    pub(super) fn wants_other_file(&self) -> bool {
        self.current.end > HEADER && self.current.end + self.pending_bytes() > FILE_TARGET
    }

    /// The last frame of the file not written now (0: none).
    pub(super) fn other_last(&self) -> u64 {
        self.other_last
    }

    /// Drops the frames added since the last sync (their commit failed before it was written).
    pub(super) fn discard_pending(&mut self) {
        self.next -= self.pending.len() as u64;
        self.pending.clear();
    }

    /// The number of the last frame added.
    pub(super) fn last(&self) -> u64 {
        self.next - 1
    }

    /// Writes the frames added since the last sync as one group and syncs them. When the file is
    /// full (see [`Journal::wants_other_file`]), the caller has made sure the tables hold every
    /// frame of the other file, which is started anew with them. A failed write leaves the
    /// frames unreadable where it can (their first header zeroed), so that a reopen does not
    /// replay what was answered as failed.
    pub(super) fn sync(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let first = self.next - self.pending.len() as u64;
        let last = self.next - 1;
        if self.wants_other_file() {
            let index = 1 - self.index;
            let started = Open::start(&self.dir, paths(&self.dir)[index].clone(), first)?;
            self.other_last = self.current.last;
            self.current = started;
            self.index = index;
        }
        let mut bytes = Vec::with_capacity(self.pending_bytes() as usize);
        for (number, payload) in (first..).zip(self.pending.drain(..)) {
            let mut head = [0u8; FRAME_HEADER];
            head[0..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
            head[8..16].copy_from_slice(&number.to_le_bytes());
            head[16..24].copy_from_slice(&first.to_le_bytes());
            head[24..32].copy_from_slice(&last.to_le_bytes());
            let crc = frame_crc(self.current.nonce, &head, &payload);
            head[4..8].copy_from_slice(&crc.to_le_bytes());
            bytes.extend_from_slice(&head);
            bytes.extend_from_slice(&payload);
        }
        self.current.make_room(bytes.len())?;
        let written = self
            .current
            .file
            .write_all_at(&bytes, self.current.end)
            .and_then(|()| self.current.file.sync_data());
        if let Err(error) = written {
            let _ = self
                .current
                .file
                .write_all_at(&[0u8; FRAME_HEADER], self.current.end);
            return Err(self.current.fail(error));
        }
        self.current.end += bytes.len() as u64;
        self.current.last = last;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(frames: &[Frame]) -> Vec<(u64, Vec<u8>)> {
        frames
            .iter()
            .map(|frame| (frame.number, frame.payload.clone()))
            .collect()
    }

    /// Flips one byte of the journal file `index` at `at`.
    fn damage(dir: &Path, index: usize, at: u64) {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&paths(dir)[index])
            .unwrap();
        let mut byte = [0u8; 1];
        file.read_exact_at(&mut byte, at).unwrap();
        file.write_all_at(&[byte[0] ^ 0xFF], at).unwrap();
    }

    #[test]
    fn frames_are_read_back_in_order_after_a_number() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 5).unwrap();
        assert_eq!(journal.add(b"five".to_vec()), 5);
        assert_eq!(journal.add(b"six".to_vec()), 6);
        journal.sync().unwrap();
        assert_eq!(journal.add(b"seven".to_vec()), 7);
        journal.sync().unwrap();
        let read = read_after(dir.path(), 4).unwrap();
        assert_eq!(
            payloads(&read),
            [
                (5, b"five".to_vec()),
                (6, b"six".to_vec()),
                (7, b"seven".to_vec())
            ]
        );
        assert_eq!(payloads(&read_after(dir.path(), 6).unwrap()).len(), 1);
        // Frames from 5 on, with the tables holding up to 2: 3 and 4 are missing.
        let error = read_after(dir.path(), 2).unwrap_err();
        assert!(
            error.to_string().contains("misses frames 3 to 4"),
            "{error}"
        );
        // Started again after 7: the old frames are left behind, never read as new ones.
        let mut journal = Journal::start(dir.path(), 8).unwrap();
        journal.add(b"eight".to_vec());
        journal.sync().unwrap();
        assert_eq!(
            payloads(&read_after(dir.path(), 7).unwrap()),
            [(8, b"eight".to_vec())]
        );
    }

    /// Frames of a commit that failed before its write are never written, nor their numbers
    /// skipped.
    #[test]
    fn frames_discarded_before_their_sync_leave_no_trace() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        assert_eq!(journal.add(b"failed".to_vec()), 1);
        journal.discard_pending();
        assert_eq!(journal.add(b"one".to_vec()), 1);
        journal.sync().unwrap();
        assert_eq!(
            payloads(&read_after(dir.path(), 0).unwrap()),
            [(1, b"one".to_vec())]
        );
    }

    /// A crash in the middle of a group's write: the group was never answered and is dropped
    /// whole, the groups before it stay.
    #[test]
    fn a_torn_last_group_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        journal.add(b"one".to_vec());
        journal.sync().unwrap();
        journal.add(b"two".to_vec());
        journal.add(b"three".to_vec());
        journal.sync().unwrap();
        let end = journal.current.end;
        drop(journal);
        // The last frame of the group 2-3 damaged (its first frame whole): as a disk that
        // wrote the group's pages out of order leaves it.
        damage(dir.path(), 0, end - 1);
        assert_eq!(
            payloads(&read_after(dir.path(), 0).unwrap()),
            [(1, b"one".to_vec())]
        );
        // The group's first frame damaged and its second whole: torn too, not damage.
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        journal.add(b"one".to_vec());
        journal.add(b"two".to_vec());
        journal.sync().unwrap();
        drop(journal);
        damage(dir.path(), 0, HEADER + FRAME_HEADER as u64);
        assert!(read_after(dir.path(), 0).unwrap().is_empty());
    }

    /// A damaged frame with a later group after it is lost data: refused, needed or not.
    #[test]
    fn a_damaged_frame_before_a_later_group_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        journal.add(b"one".to_vec());
        journal.sync().unwrap();
        journal.add(b"two".to_vec());
        journal.sync().unwrap();
        drop(journal);
        damage(dir.path(), 0, HEADER + FRAME_HEADER as u64);
        for after in [0, 1] {
            let error = read_after(dir.path(), after).unwrap_err();
            assert!(error.to_string().contains("frame 1 is damaged"), "{error}");
        }
    }

    /// A frame from the file's earlier round, right where the new round's next frame goes and
    /// with the number it would have, is not read as one: its nonce is the old round's.
    #[test]
    fn frames_of_an_earlier_round_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        for payload in [b"a", b"b", b"c"] {
            journal.add(payload.to_vec());
            journal.sync().unwrap();
        }
        drop(journal);
        // Started again with frame 2 (a checkpoint holding 1), whose payload is as long as the
        // old frames 1 and 2 together: the old frame 3 follows it where the new 3 would.
        let mut journal = Journal::start(dir.path(), 2).unwrap();
        journal.add(vec![b'B'; 1 + FRAME_HEADER + 1]);
        journal.sync().unwrap();
        drop(journal);
        let read = read_after(dir.path(), 1).unwrap();
        assert_eq!(
            read.iter().map(|frame| frame.number).collect::<Vec<_>>(),
            [2]
        );
    }

    #[test]
    fn a_full_file_hands_over_to_the_other_and_a_gap_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        let big = vec![7u8; 64 * 1024];
        let mut numbers = Vec::new();
        while journal.index == 0 {
            numbers.push(journal.add(big.clone()));
            if journal.wants_other_file() {
                assert_eq!(journal.other_last(), 0);
            }
            journal.sync().unwrap();
        }
        assert!(
            journal.other_last() > 0,
            "the first file's last frame is known"
        );
        let read = read_after(dir.path(), 0).unwrap();
        assert_eq!(
            read.iter().map(|frame| frame.number).collect::<Vec<_>>(),
            numbers
        );
        // Frames before the checkpoint are skipped; losing the first file's header loses the
        // frames after the first file's last one: an error, not a silent gap, when they were
        // needed.
        let last_of_first = journal.other_last();
        journal.add(b"after".to_vec());
        journal.sync().unwrap();
        let file = OpenOptions::new()
            .write(true)
            .open(dir.path().join("queues.journal.0"))
            .unwrap();
        file.write_all_at(&[0u8; 32], 0).unwrap();
        let error = read_after(dir.path(), 0).unwrap_err();
        assert!(error.to_string().contains("misses frames 1 to"), "{error}");
        assert_eq!(
            read_after(dir.path(), last_of_first).unwrap().len(),
            2,
            "from the checkpoint on, nothing is missing"
        );
    }
}
