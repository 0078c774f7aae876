//! The log lines' writer: lines gather in memory and one thread writes them out a few times a
//! second, so a request pays for a copy into a buffer, never for a system call or for waking a
//! thread.
//!
//! A writer that hands each line to its thread as it comes (as `tracing-appender`'s non-blocking
//! one does, with no interval to set) wakes that thread for nearly every line and makes a write
//! of its own for each. Why: docs/decisions/2026-12-02-batched-log-writer.md.
//!
//! Nothing is dropped: a writer finding [`MAX_PENDING`] bytes waiting (stderr blocked) waits for
//! the thread, as a direct write would. Lines waiting when the [`Flusher`] drops are written
//! before it returns; lines logged after that go straight to the output.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a line may wait in memory before the thread writes it.
const FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// Bytes waiting that make the thread write at once rather than at its next interval.
const FLUSH_AT: usize = 64 * 1024;

/// Bytes waiting beyond which a writer waits for the thread (the output is slower than the logs).
const MAX_PENDING: usize = 4 * 1024 * 1024;

/// What the writers and the thread share.
struct Shared<W> {
    state: Mutex<State<W>>,
    /// Tells the thread that [`FLUSH_AT`] bytes wait or that it should stop.
    wake_flusher: Condvar,
    /// Tells writers waiting on a full buffer that the thread took it.
    room: Condvar,
}

struct State<W> {
    pending: Vec<u8>,
    /// Set when the [`Flusher`] drops: writers write to `output` themselves from then on.
    stopped: bool,
    /// The output, here only while no thread owns it (after the stop).
    output: Option<W>,
}

impl<W> Shared<W> {
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        // A writer panicking mid-copy leaves at worst a partial line; logging goes on.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `MakeWriter` handed to `tracing-subscriber`: each formatted line is one `write` call.
pub(super) struct BatchedWriter<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for BatchedWriter<W> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Keeps the writing thread going; dropping it writes what waits and stops the thread.
#[must_use = "lines waiting when the flusher drops are written; later ones go straight out"]
pub(super) struct Flusher<W: Write + Send + 'static> {
    shared: Arc<Shared<W>>,
    thread: Option<JoinHandle<()>>,
}

/// A writer for `output` and the thread that writes to it.
pub(super) fn batched<W: Write + Send + 'static>(
    output: W,
    thread_name: &str,
) -> std::io::Result<(BatchedWriter<W>, Flusher<W>)> {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            pending: Vec::with_capacity(FLUSH_AT),
            stopped: false,
            output: None,
        }),
        wake_flusher: Condvar::new(),
        room: Condvar::new(),
    });
    let for_thread = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name(thread_name.to_owned())
        .spawn(move || write_until_stopped(&for_thread, output))?;
    Ok((
        BatchedWriter {
            shared: Arc::clone(&shared),
        },
        Flusher {
            shared,
            thread: Some(thread),
        },
    ))
}

/// The thread: every [`FLUSH_INTERVAL`] (sooner when [`FLUSH_AT`] bytes wait) it takes what
/// waits and writes it with one call; on the stop it writes the rest and hands the output back.
fn write_until_stopped<W: Write>(shared: &Shared<W>, mut output: W) {
    let mut batch = Vec::with_capacity(FLUSH_AT);
    loop {
        let mut state = shared.lock();
        if state.pending.len() < FLUSH_AT && !state.stopped {
            state = shared
                .wake_flusher
                .wait_timeout(state, FLUSH_INTERVAL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        std::mem::swap(&mut state.pending, &mut batch);
        let stopped = state.stopped;
        drop(state);
        shared.room.notify_all();
        if !batch.is_empty() {
            // Nowhere to report a failing stderr; the lines are lost as a direct write's would be.
            let _ = output.write_all(&batch).and_then(|()| output.flush());
            batch.clear();
        }
        if stopped {
            // Lines that came between the swap and now.
            let mut state = shared.lock();
            let _ = output
                .write_all(&state.pending)
                .and_then(|()| output.flush());
            state.pending.clear();
            state.output = Some(output);
            return;
        }
    }
}

impl<W: Write> Write for BatchedWriter<W> {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut state = self.shared.lock();
        while state.pending.len() >= MAX_PENDING && !state.stopped {
            state = self
                .shared
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if state.stopped
            && let Some(output) = state.output.as_mut()
        {
            output.write_all(line)?;
            output.flush()?;
            return Ok(line.len());
        }
        let before = state.pending.len();
        state.pending.extend_from_slice(line);
        if before < FLUSH_AT && state.pending.len() >= FLUSH_AT {
            self.shared.wake_flusher.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // The thread flushes within FLUSH_INTERVAL; a line is never half in the buffer.
        Ok(())
    }
}

impl<'a, W: Write + 'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchedWriter<W> {
    type Writer = Self;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl<W: Write + Send + 'static> Drop for Flusher<W> {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.wake_flusher.notify_one();
        self.shared.room.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read while the thread owns a clone of it.
    #[derive(Clone, Default)]
    struct Output(Arc<Mutex<Vec<u8>>>);

    impl Write for Output {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Output {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn lines_reach_the_output_within_the_interval_in_order_and_all_on_drop() {
        let output = Output::default();
        let (writer, flusher) = batched(output.clone(), "test-log").unwrap();
        let mut a = writer.clone();
        a.write_all(b"one\n").unwrap();
        a.write_all(b"two\n").unwrap();
        let mut waited = Duration::ZERO;
        while output.text().is_empty() && waited < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(5));
            waited += Duration::from_millis(5);
        }
        assert_eq!(
            output.text(),
            "one\ntwo\n",
            "written by the thread unprompted"
        );
        let mut b = writer.clone();
        b.write_all(b"three\n").unwrap();
        drop(flusher);
        assert_eq!(
            output.text(),
            "one\ntwo\nthree\n",
            "the drop writes what waits"
        );
        b.write_all(b"four\n").unwrap();
        assert_eq!(
            output.text(),
            "one\ntwo\nthree\nfour\n",
            "then lines go straight out"
        );
    }

    #[test]
    fn many_threads_lose_no_line_and_never_split_one() {
        let output = Output::default();
        let (writer, flusher) = batched(output.clone(), "test-log").unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000 {
                        // Past FLUSH_AT and MAX_PENDING many times over: writers wake the
                        // thread and wait on it.
                        writer
                            .write_all(format!("{t}-{i}-{}\n", "x".repeat(100)).as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        drop(flusher);
        let text = output.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 80_000);
        for t in 0..4 {
            let mine: Vec<usize> = lines
                .iter()
                .filter(|line| line.starts_with(&format!("{t}-")))
                .map(|line| line.split('-').nth(1).unwrap().parse().unwrap())
                .collect();
            assert_eq!(
                mine,
                (0..20_000).collect::<Vec<_>>(),
                "writer {t}'s lines in order"
            );
        }
        assert!(lines.iter().all(|line| line.ends_with(&"x".repeat(100))));
    }
}
