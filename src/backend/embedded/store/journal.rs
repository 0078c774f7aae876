//! The write-ahead journal: what makes a commit durable. Each group commit is appended as frames
//! to one of two files and synced (one sequential write and one `fdatasync`); the tables take the
//! same records afterwards, off the request's path, and a checkpoint of the tables makes the
//! frames before it unneeded, so the two files are written in turn, each overwritten from its
//! start once the tables hold all it carries.
//!
//! A file: a 32-byte header (magic, format version, the number of its first frame, a CRC-32),
//! then frames: payload length (u32), CRC-32 of the number and payload (u32), number (u64,
//! consecutive across files), payload. Reading stops at the first frame that does not check out:
//! a frame torn by a crash, or one left from the file's earlier round (its number is too low).
//! Files grow in zero-filled steps written and synced ahead of the frames, so a frame's sync
//! carries no change of the file's size.

use super::error::StoreError;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"SQGWJRNL";
/// The journal format this release writes and reads.
const VERSION: u32 = 1;
const HEADER: u64 = 32;
const FRAME_HEADER: usize = 16;
/// How much a file grows at a time (zeros, synced before frames go there): by its size, from
/// 64 KiB to 4 MiB, so a store that is never busy keeps a small journal.
const MIN_GROWTH: u64 = 64 * 1024;
const MAX_GROWTH: u64 = 4 * 1024 * 1024;
/// A file is left for the other once it holds this much (a single larger frame still fits);
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

/// The frames of both files with a number above `after`, in order; an error when one is missing
/// between `after` and the last found (a damaged file), never a silent gap.
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

/// The number of a file's first frame and its frames numbered above `after` (those before are
/// passed over unread), or `None` for a file that is absent or has no valid header (never
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
    let Some(first) = parse_header(&header) else {
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
    let mut expected = first;
    loop {
        let mut head = [0u8; FRAME_HEADER];
        if reader.read_exact(&mut head).is_err() {
            break;
        }
        let length = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        let number = u64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        if length == 0 || number != expected {
            break;
        }
        expected += 1;
        if number <= after {
            // The tables hold it: neither read nor checked (a torn frame is only ever the last,
            // and what follows one fails the number check).
            if reader.seek_relative(length as i64).is_err() {
                break;
            }
            continue;
        }
        let mut payload = vec![0u8; length];
        if reader.read_exact(&mut payload).is_err() {
            break;
        }
        if frame_crc(&head[8..16], &payload) != crc {
            // A torn last frame ends the journal; a damaged one with its successor after it is
            // lost data, not an end.
            if next_frame_is(&mut reader, number + 1) {
                return Err(StoreError(format!(
                    "{}: journal frame {number} is damaged and frames follow it: restore the store directory from a backup",
                    path.display()
                )));
            }
            break;
        }
        frames.push(Frame { number, payload });
    }
    Ok(Some((first, frames)))
}

fn frame_crc(number: &[u8], payload: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(number);
    hasher.update(payload);
    hasher.finalize()
}

/// Whether the next bytes of `reader` are a valid frame numbered `number`.
fn next_frame_is(reader: &mut impl Read, number: u64) -> bool {
    let mut head = [0u8; FRAME_HEADER];
    if reader.read_exact(&mut head).is_err() {
        return false;
    }
    let length = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
    if length == 0 || head[8..16] != number.to_le_bytes() || length > 1 << 30 {
        return false;
    }
    let mut payload = vec![0u8; length];
    reader.read_exact(&mut payload).is_ok() && frame_crc(&head[8..16], &payload) == crc
}

fn header(first: u64) -> [u8; HEADER as usize] {
    let mut header = [0u8; HEADER as usize];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&first.to_le_bytes());
    let crc = crc32fast::hash(&header[..24]);
    header[24..28].copy_from_slice(&crc.to_le_bytes());
    header
}

/// The number of the first frame, when `header` is a valid header of this format.
fn parse_header(header: &[u8; HEADER as usize]) -> Option<u64> {
    let crc = u32::from_le_bytes(header[24..28].try_into().expect("4 bytes"));
    let version = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
    (&header[..8] == MAGIC && version == VERSION && crc32fast::hash(&header[..24]) == crc)
        .then(|| u64::from_le_bytes(header[16..24].try_into().expect("8 bytes")))
}

/// One of the two files, open for writing.
struct Open {
    file: File,
    path: PathBuf,
    /// Where the next frame goes.
    end: u64,
    /// Bytes written and synced ahead (zeros past `end`).
    ready: u64,
    /// The number of its last frame (0: none yet).
    last: u64,
}

impl Open {
    /// Opens file `path` and starts it anew with frame `first`: its header written and synced.
    fn start(path: PathBuf, first: u64) -> Result<Self, StoreError> {
        let fail = |error: std::io::Error| StoreError(format!("{}: {error}", path.display()));
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(fail)?;
        let ready = file.metadata().map_err(fail)?.len();
        let mut open = Open {
            file,
            path,
            end: HEADER,
            ready,
            last: 0,
        };
        open.make_room(0)?;
        open.file
            .write_all_at(&header(first), 0)
            .map_err(|error| open.fail(error))?;
        open.file.sync_data().map_err(|error| open.fail(error))?;
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
    /// Frames being assembled for the next sync.
    pending: Vec<u8>,
}

impl Journal {
    /// Starts the journal in `dir` with frame `next`, everything before it being in the tables.
    pub(super) fn start(dir: &Path, next: u64) -> Result<Self, StoreError> {
        let current = Open::start(paths(dir)[0].clone(), next)?;
        // The directory entry of a new file is made durable once.
        if let Ok(dir) = File::open(dir) {
            let _ = dir.sync_all();
        }
        Ok(Self {
            dir: dir.to_owned(),
            current,
            index: 0,
            other_last: 0,
            next,
            pending: Vec::new(),
        })
    }

    /// Adds a frame carrying `payload` to what the next [`Journal::sync`] writes; answers its
    /// number.
    pub(super) fn add(&mut self, payload: &[u8]) -> u64 {
        let number = self.next;
        self.next += 1;
        let length = u32::try_from(payload.len()).expect("frames stay far below 4 GiB");
        let crc = frame_crc(&number.to_le_bytes(), payload);
        self.pending.extend_from_slice(&length.to_le_bytes());
        self.pending.extend_from_slice(&crc.to_le_bytes());
        self.pending.extend_from_slice(&number.to_le_bytes());
        self.pending.extend_from_slice(payload);
        number
    }

    /// Whether the file written now is full: the next [`Journal::sync`] starts the other, which
    /// needs the tables to hold [`Journal::other_last`] first.
    pub(super) fn wants_other_file(&self) -> bool {
        self.current.end > HEADER && self.current.end + self.pending.len() as u64 > FILE_TARGET
    }

    /// The last frame of the file not written now (0: none).
    pub(super) fn other_last(&self) -> u64 {
        self.other_last
    }

    /// The number of the last frame added.
    pub(super) fn last(&self) -> u64 {
        self.next - 1
    }

    /// Writes the frames added since the last sync and syncs them. When the file is full (see
    /// [`Journal::wants_other_file`]), the caller has made sure the tables hold every frame of the
    /// other file, which is started anew with them.
    pub(super) fn sync(&mut self) -> Result<(), StoreError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let first = self.next - count_frames(&self.pending);
        if self.wants_other_file() {
            let index = 1 - self.index;
            let started = Open::start(paths(&self.dir)[index].clone(), first)?;
            self.other_last = self.current.last;
            self.current = started;
            self.index = index;
        }
        let bytes = std::mem::take(&mut self.pending);
        self.current.make_room(bytes.len())?;
        self.current
            .file
            .write_all_at(&bytes, self.current.end)
            .map_err(|error| self.current.fail(error))?;
        self.current
            .file
            .sync_data()
            .map_err(|error| self.current.fail(error))?;
        self.current.end += bytes.len() as u64;
        self.current.last = self.next - 1;
        self.pending = bytes;
        self.pending.clear();
        Ok(())
    }
}

/// How many frames `bytes` holds (each as [`Journal::add`] wrote it).
fn count_frames(mut bytes: &[u8]) -> u64 {
    let mut count = 0;
    while bytes.len() >= FRAME_HEADER {
        let length = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
        bytes = &bytes[FRAME_HEADER + length..];
        count += 1;
    }
    count
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

    #[test]
    fn frames_are_read_back_in_order_after_a_number() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 5).unwrap();
        assert_eq!(journal.add(b"five"), 5);
        assert_eq!(journal.add(b"six"), 6);
        journal.sync().unwrap();
        assert_eq!(journal.add(b"seven"), 7);
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
        journal.add(b"eight");
        journal.sync().unwrap();
        assert_eq!(
            payloads(&read_after(dir.path(), 7).unwrap()),
            [(8, b"eight".to_vec())]
        );
    }

    #[test]
    fn a_torn_last_frame_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        journal.add(b"one");
        journal.add(b"two");
        journal.sync().unwrap();
        let end = journal.current.end;
        drop(journal);
        // The last byte of frame 2 flipped, as a crash in the middle of its write leaves it.
        let file = OpenOptions::new()
            .write(true)
            .open(dir.path().join("queues.journal.0"))
            .unwrap();
        file.write_all_at(b"X", end - 1).unwrap();
        assert_eq!(
            payloads(&read_after(dir.path(), 0).unwrap()),
            [(1, b"one".to_vec())]
        );
    }

    #[test]
    fn frames_the_tables_hold_are_passed_over_unread() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        journal.add(b"one");
        journal.sync().unwrap();
        journal.add(b"two");
        journal.sync().unwrap();
        drop(journal);
        // Frame 1's payload damaged: it is not needed past 1, so it is not read.
        let file = OpenOptions::new()
            .write(true)
            .open(dir.path().join("queues.journal.0"))
            .unwrap();
        file.write_all_at(b"X", HEADER + FRAME_HEADER as u64)
            .unwrap();
        assert_eq!(
            payloads(&read_after(dir.path(), 1).unwrap()),
            [(2, b"two".to_vec())]
        );
        // Needed, and followed by frame 2: lost data, refused.
        let error = read_after(dir.path(), 0).unwrap_err();
        assert!(error.to_string().contains("frame 1 is damaged"), "{error}");
    }

    #[test]
    fn a_full_file_hands_over_to_the_other_and_a_gap_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::start(dir.path(), 1).unwrap();
        let big = vec![7u8; 64 * 1024];
        let mut numbers = Vec::new();
        while journal.index == 0 {
            numbers.push(journal.add(&big));
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
        journal.add(b"after");
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
