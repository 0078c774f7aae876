//! What one scenario measured: messages, requests, elapsed time and every request's latency,
//! and the percentiles and rates read from them.

use std::time::Duration;

/// The kinds of request the bench times, as the tables name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum RequestKind {
    SendMessageBatch,
    ReceiveMessage,
    DeleteMessageBatch,
    EzghReceive,
    EzghAck,
}

impl RequestKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::SendMessageBatch => "SendMessageBatch",
            Self::ReceiveMessage => "ReceiveMessage",
            Self::DeleteMessageBatch => "DeleteMessageBatch",
            Self::EzghReceive => "ezgh receive",
            Self::EzghAck => "ezgh ack",
        }
    }
}

/// One scenario's run: how much got done in how long, and how long each request took. Requests
/// that only waited (a receive answered empty at the end of a drain) are not counted or timed.
#[derive(Debug, Clone, Default)]
pub(super) struct Run {
    pub messages: usize,
    pub elapsed: Duration,
    pub latencies: Vec<(RequestKind, Duration)>,
    /// Receives that came back empty (waited out their 1 s) before the drain was done.
    pub empty_receives: usize,
}

impl Run {
    /// Joins the records of concurrent clients of the same run.
    pub(super) fn absorb(&mut self, latencies: Vec<(RequestKind, Duration)>) {
        self.latencies.extend(latencies);
    }

    /// Joins a later run of the same scenario (a round of an alternation): its work and its time
    /// add up.
    pub(super) fn extend(&mut self, later: Run) {
        self.messages += later.messages;
        self.elapsed += later.elapsed;
        self.latencies.extend(later.latencies);
        self.empty_receives += later.empty_receives;
    }

    pub(super) fn requests(&self) -> usize {
        self.latencies.len()
    }

    pub(super) fn messages_per_second(&self) -> f64 {
        rate(self.messages, self.elapsed)
    }

    pub(super) fn requests_per_second(&self) -> f64 {
        rate(self.requests(), self.elapsed)
    }

    /// Latency percentile `q` (0..=1) over every request, or over one kind.
    pub(super) fn percentile(&self, kind: Option<RequestKind>, q: f64) -> Option<Duration> {
        let mut sorted: Vec<Duration> = self
            .latencies
            .iter()
            .filter(|(k, _)| kind.is_none_or(|kind| *k == kind))
            .map(|(_, latency)| *latency)
            .collect();
        sorted.sort_unstable();
        percentile(&sorted, q)
    }
}

/// Events a second.
pub(super) fn rate(count: usize, elapsed: Duration) -> f64 {
    let seconds = elapsed.as_secs_f64();
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

/// The nearest-rank percentile `q` (0..=1) of sorted values; `None` when there are none.
pub(super) fn percentile(sorted: &[Duration], q: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.saturating_sub(1)).copied()
}

/// Mebibytes, for tables.
pub(super) fn mebibytes(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// One request as a drain loop records it: its kind, its latency, and when it was asked.
pub(super) type Record = (RequestKind, Duration, std::time::Instant);

/// A drain loop's tasks: each answers its records and how many of its receives came back empty.
pub(super) type DrainTasks = Vec<tokio::task::JoinHandle<Result<(Vec<Record>, usize), String>>>;

/// The run of drain loops that took `total` messages out (`done` counts them, `finished` is when
/// the last went) from `started`: requests that ended after the last message do not count.
pub(super) async fn drained(
    tasks: DrainTasks,
    done: &std::sync::atomic::AtomicUsize,
    finished: &std::sync::OnceLock<std::time::Instant>,
    total: usize,
    started: std::time::Instant,
    limit: Duration,
) -> Result<Run, String> {
    let (mut records, mut empty_receives) = (Vec::new(), 0);
    for task in tasks {
        let (task_records, task_empty) = task.await.map_err(|e| e.to_string())??;
        records.extend(task_records);
        empty_receives += task_empty;
    }
    let taken = done.load(std::sync::atomic::Ordering::Relaxed);
    if taken < total {
        return Err(format!(
            "only {taken} of {total} messages came back within {limit:?}"
        ));
    }
    let end = finished
        .get()
        .copied()
        .unwrap_or_else(std::time::Instant::now);
    Ok(Run {
        messages: total,
        elapsed: end - started,
        latencies: records
            .into_iter()
            .filter(|(_, latency, at)| *at + *latency <= end)
            .map(|(kind, latency, _)| (kind, latency))
            .collect(),
        empty_receives,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(values: &[u64]) -> Vec<Duration> {
        values.iter().map(|v| Duration::from_millis(*v)).collect()
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted = ms(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(percentile(&sorted, 0.5), Some(Duration::from_millis(5)));
        assert_eq!(percentile(&sorted, 0.99), Some(Duration::from_millis(10)));
        assert_eq!(percentile(&sorted, 0.0), Some(Duration::from_millis(1)));
        assert_eq!(percentile(&sorted, 1.0), Some(Duration::from_millis(10)));
        assert_eq!(percentile(&[], 0.5), None);
        let hundred: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&hundred, 0.99), Some(Duration::from_millis(99)));
    }

    #[test]
    fn a_run_reads_rates_and_percentiles_per_kind() {
        let mut run = Run {
            messages: 20,
            elapsed: Duration::from_secs(2),
            ..Run::default()
        };
        run.absorb(vec![
            (RequestKind::ReceiveMessage, Duration::from_millis(4)),
            (RequestKind::DeleteMessageBatch, Duration::from_millis(1)),
        ]);
        run.absorb(vec![
            (RequestKind::ReceiveMessage, Duration::from_millis(6)),
            (RequestKind::DeleteMessageBatch, Duration::from_millis(2)),
        ]);
        assert_eq!(run.requests(), 4);
        assert!((run.messages_per_second() - 10.0).abs() < 1e-9);
        assert!((run.requests_per_second() - 2.0).abs() < 1e-9);
        assert_eq!(
            run.percentile(Some(RequestKind::ReceiveMessage), 0.5),
            Some(Duration::from_millis(4))
        );
        assert_eq!(run.percentile(None, 1.0), Some(Duration::from_millis(6)));
        assert_eq!(run.percentile(Some(RequestKind::EzghAck), 0.5), None);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
    }
}
