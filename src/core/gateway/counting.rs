//! Reading many queues' counts together (a basaltic metrics round, the depth gauges, a queue list
//! with counts): a few at a time, each within its own deadline and all within the caller's, so a
//! slow or failing queue is a gap for itself alone and the rest are read.

use super::Gateway;
use futures_util::StreamExt as _;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// The share of its interval a sampling round's reads may take: the rest is left for what
/// follows them (the append), so a round ends before the next one is due.
pub const ROUND_SHARE: f64 = 0.9;

/// How queues' counts are read when many are read together (`metrics.count_concurrency`,
/// `metrics.count_timeout_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountLimits {
    /// Counts asked of the backend at once.
    pub concurrency: usize,
    /// The longest one queue's count may take.
    pub per_queue: Duration,
}

impl Default for CountLimits {
    /// 16 at once, 2 s each: at Amazon SQS's 10 to 30 ms a count, about 5,000 queues a
    /// 10-second interval.
    fn default() -> Self {
        Self {
            concurrency: 16,
            per_queue: Duration::from_secs(2),
        }
    }
}

impl CountLimits {
    /// When a count that starts now must end, the caller's end being `until`.
    pub fn deadline(&self, until: Instant) -> Instant {
        until.min(Instant::now() + self.per_queue)
    }
}

impl Gateway {
    /// Reads many queues' counts with these limits.
    pub fn with_count_limits(mut self, limits: CountLimits) -> Self {
        self.count_limits = limits;
        self
    }

    /// How many queues' counts are read together, and each one's deadline.
    pub fn count_limits(&self) -> CountLimits {
        self.count_limits
    }

    /// Runs `reads` (one a queue) [`CountLimits::concurrency`] at a time and answers their
    /// outcomes in the order given: `None` for a read that did not end within
    /// [`CountLimits::per_queue`] of its start or by `until`, whichever comes first (one whose
    /// turn comes after `until` is `None` without being started).
    pub async fn read_counts<T, F>(&self, reads: Vec<F>, until: Instant) -> Vec<Option<T>>
    where
        F: Future<Output = T>,
    {
        let limits = self.count_limits;
        // Each read's deadline starts at its first poll: when a place is free for it. Unordered,
        // so a read that hangs holds its own place only, not the places behind it.
        let bounded: Vec<_> = reads
            .into_iter()
            .enumerate()
            .map(|(index, read)| async move {
                if Instant::now() >= until {
                    return (index, None);
                }
                let deadline = limits.deadline(until);
                (index, tokio::time::timeout_at(deadline, read).await.ok())
            })
            .collect();
        let mut outcomes: Vec<Option<T>> = std::iter::repeat_with(|| None)
            .take(bounded.len())
            .collect();
        let mut ended =
            futures_util::stream::iter(bounded).buffer_unordered(limits.concurrency.max(1));
        while let Some((index, outcome)) = ended.next().await {
            outcomes[index] = outcome;
        }
        outcomes
    }
}
