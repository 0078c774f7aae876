//! The counting behind the limits, as this process keeps it: GCRA request rates (governor, on the
//! core's clock), exact counts over a rolling minute, and counts per UTC day. The in-process state
//! store holds these; [`crate::core::limits`] speaks to callers.

use crate::core::clock::Clock;
use governor::clock::Clock as _;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use std::collections::{HashMap, VecDeque};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request allowance: a steady rate and a burst (`{ per_second = N, burst = M }` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowance {
    /// Steady requests a second.
    pub per_second: NonZeroU32,
    /// Requests allowed at once.
    pub burst: NonZeroU32,
}

/// The core clock as governor reads time: the time since the epoch.
#[derive(Clone)]
struct GovernorClock(Arc<dyn Clock>);

impl governor::clock::Clock for GovernorClock {
    type Instant = Duration;

    fn now(&self) -> Duration {
        let millis = self.0.now().timestamp_millis();
        Duration::from_millis(u64::try_from(millis).unwrap_or(0))
    }
}

type KeyedLimiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, GovernorClock, NoOpMiddleware<Duration>>;

/// Request rates of any keys, one GCRA limiter per distinct allowance, keys created on demand.
pub(crate) struct Rates {
    clock: GovernorClock,
    by_allowance: Mutex<HashMap<Allowance, Arc<KeyedLimiter>>>,
}

impl Rates {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock: GovernorClock(clock),
            by_allowance: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn admit(&self, key: &str, allowance: Allowance) -> Result<(), Duration> {
        let limiter = {
            let mut limiters = self
                .by_allowance
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            Arc::clone(limiters.entry(allowance).or_insert_with(|| {
                let quota = Quota::per_second(allowance.per_second).allow_burst(allowance.burst);
                Arc::new(RateLimiter::new(
                    quota,
                    DefaultKeyedStateStore::default(),
                    self.clock.clone(),
                ))
            }))
        };
        limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Forgets keys whose limits have fully refilled.
    pub(crate) fn housekeeping(&self) {
        let limiters: Vec<Arc<KeyedLimiter>> = self
            .by_allowance
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .values()
            .cloned()
            .collect();
        for limiter in limiters {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

/// The rolling window of per-minute counts.
const WINDOW_SECONDS: i64 = 60;

/// Counts of one key by second (oldest first), within the last minute: an exact rolling window,
/// not a token bucket (which refills continuously, and so lets a paced caller through about
/// twice its budget in a minute).
#[derive(Debug, Default)]
pub(crate) struct Window {
    seconds: VecDeque<(i64, u32)>,
}

impl Window {
    /// Admits `amount` at `now_ms` if the last minute has room under `limit`, else answers the
    /// wait until it has.
    pub(crate) fn admit(&mut self, amount: u32, limit: u32, now_ms: i64) -> Result<(), Duration> {
        let now = now_ms.div_euclid(1000);
        while self
            .seconds
            .front()
            .is_some_and(|(second, _)| second + WINDOW_SECONDS <= now)
        {
            self.seconds.pop_front();
        }
        let counted: u64 = self
            .seconds
            .iter()
            .map(|(_, count)| u64::from(*count))
            .sum();
        let wanted = counted + u64::from(amount);
        if wanted > u64::from(limit) {
            let mut excess = wanted - u64::from(limit);
            let mut free_at = now + WINDOW_SECONDS;
            for (second, count) in &self.seconds {
                if excess <= u64::from(*count) {
                    free_at = second + WINDOW_SECONDS;
                    break;
                }
                excess -= u64::from(*count);
            }
            let wait_ms = (free_at * 1000 - now_ms).max(1);
            return Err(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(1)));
        }
        match self.seconds.back_mut() {
            Some((second, count)) if *second == now => *count = count.saturating_add(amount),
            _ => self.seconds.push_back((now, amount)),
        }
        Ok(())
    }
}

/// A count for one UTC day.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Daily {
    day: i64,
    count: u64,
}

impl Daily {
    /// Admits `amount` at `now_ms` if today's count stays within `limit`, else answers the wait
    /// until the day rolls over.
    pub(crate) fn admit(&mut self, amount: u32, limit: u64, now_ms: i64) -> Result<(), Duration> {
        const DAY_MS: i64 = 24 * 60 * 60 * 1000;
        let day = now_ms.div_euclid(DAY_MS);
        if day != self.day {
            *self = Self { day, count: 0 };
        }
        if self.count + u64::from(amount) > limit {
            let wait_ms = (day + 1) * DAY_MS - now_ms;
            return Err(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(1)));
        }
        self.count += u64::from(amount);
        Ok(())
    }
}
