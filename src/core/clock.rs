//! Time as a dependency, so visibility clamps and expiries are tested without sleeping.

use chrono::{DateTime, Duration, Utc};
use std::sync::Mutex;

/// Where the gateway reads the current time.
pub trait Clock: Send + Sync + 'static {
    /// The current time, UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    // The clock is the one place the wall clock is read.
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// The wall clock plus an offset that tests move forward: time flows, and can also jump.
#[derive(Debug, Default)]
pub struct SkewClock {
    offset_ms: std::sync::atomic::AtomicI64,
}

impl SkewClock {
    /// Jumps the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.offset_ms
            .fetch_add(by.num_milliseconds(), std::sync::atomic::Ordering::SeqCst);
    }
}

impl Clock for SkewClock {
    #[allow(clippy::disallowed_methods)]
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
            + Duration::milliseconds(self.offset_ms.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// A clock that only moves when told to; for tests.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self
            .now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
