//! Warnings that come at request rate (an outage fails every request; refused connections come
//! as fast as a client opens them) are written at most once per period, with how many there were
//! since the last line.

use std::time::Duration;
use tokio::time::Instant;

/// Counts occurrences and says when one is due to be logged.
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    last: Option<Instant>,
    unlogged: u64,
}

impl LogThrottle {
    /// Lets one line through per `every`.
    pub const fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            unlogged: 0,
        }
    }

    /// Counts one occurrence; `Some(count since the last line, this one included)` when a line is
    /// due now, `None` when it is not.
    pub fn due(&mut self) -> Option<u64> {
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .last
            .is_some_and(|at| now.duration_since(at) < self.every)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.unlogged))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_carries_the_count_since_the_last() {
        let mut throttle = LogThrottle::new(Duration::from_secs(3600));
        assert_eq!(throttle.due(), Some(1));
        assert_eq!(throttle.due(), None);
        assert_eq!(throttle.due(), None);
        let mut open = LogThrottle::new(Duration::ZERO);
        assert_eq!(open.due(), Some(1));
        assert_eq!(open.due(), Some(1));
    }
}
