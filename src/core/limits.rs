//! Rate limits: per-client invalid-handle budget (an exact rolling minute) and per-organization
//! and per-queue request allowances (GCRA, governor).

use crate::core::clock::Clock;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use moka::sync::Cache;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Seconds to advertise in `Retry-After`: whole seconds, at least one.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// The rolling window of the invalid-handle budget.
const WINDOW_SECONDS: i64 = 60;
/// Client addresses tracked at most; the least recently seen are forgotten first.
const TRACKED_CLIENTS: u64 = 100_000;

/// Counts invalid receipt handles per client address over the last minute: a request that would
/// take the address past its budget is refused whole, until enough of its minute has passed.
///
/// An exact rolling window (per second), not a token bucket: a bucket refills continuously, so a
/// paced client would get well over the budget through in a minute.
pub struct InvalidHandleLimiter {
    per_minute: u32,
    clock: Arc<dyn Clock>,
    windows: Cache<IpAddr, Arc<Mutex<Window>>>,
}

impl std::fmt::Debug for InvalidHandleLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvalidHandleLimiter")
            .field("per_minute", &self.per_minute)
            .finish_non_exhaustive()
    }
}

/// Invalid handles of one address by second (oldest first), within the last minute.
#[derive(Debug, Default)]
struct Window {
    seconds: VecDeque<(i64, u32)>,
}

impl Window {
    fn forget_before(&mut self, now: i64) {
        while self
            .seconds
            .front()
            .is_some_and(|(second, _)| second + WINDOW_SECONDS <= now)
        {
            self.seconds.pop_front();
        }
    }

    fn total(&self) -> u64 {
        self.seconds
            .iter()
            .map(|(_, count)| u64::from(*count))
            .sum()
    }

    /// The second from which `excess` of the counted handles have left the window.
    fn free_from(&self, mut excess: u64, now: i64) -> i64 {
        for (second, count) in &self.seconds {
            if excess <= u64::from(*count) {
                return second + WINDOW_SECONDS;
            }
            excess -= u64::from(*count);
        }
        now + WINDOW_SECONDS
    }
}

impl InvalidHandleLimiter {
    /// Allows `per_minute` invalid handles per address in any minute, reading time from `clock`.
    pub fn new(per_minute: NonZeroU32, clock: Arc<dyn Clock>) -> Self {
        Self {
            per_minute: per_minute.get(),
            clock,
            windows: Cache::builder()
                .max_capacity(TRACKED_CLIENTS)
                .time_to_idle(Duration::from_secs(2 * WINDOW_SECONDS as u64))
                .build(),
        }
    }

    /// Admits a request carrying `invalid` invalid handles from `client` and counts them, or
    /// answers how long until the address's last minute has room for them.
    pub fn admit(&self, client: IpAddr, invalid: usize) -> Result<(), Duration> {
        if invalid == 0 {
            return Ok(());
        }
        let invalid = u32::try_from(invalid).unwrap_or(u32::MAX);
        let now_ms = self.clock.now().timestamp_millis();
        let now = now_ms.div_euclid(1000);
        let window = self
            .windows
            .get_with(client, || Arc::new(Mutex::new(Window::default())));
        let mut window = window
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        window.forget_before(now);
        let wanted = window.total() + u64::from(invalid);
        if wanted > u64::from(self.per_minute) {
            let free_at = window.free_from(wanted - u64::from(self.per_minute), now);
            let wait_ms = (free_at * 1000 - now_ms).max(1);
            return Err(Duration::from_millis(u64::try_from(wait_ms).unwrap_or(1)));
        }
        match window.seconds.back_mut() {
            Some((second, count)) if *second == now => *count = count.saturating_add(invalid),
            _ => window.seconds.push_back((now, invalid)),
        }
        Ok(())
    }
}

/// A request allowance: a steady rate and a burst (`{ per_second = N, burst = M }` in the config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Allowance {
    /// Steady requests a second.
    pub per_second: NonZeroU32,
    /// Requests allowed at once.
    pub burst: NonZeroU32,
}

/// One allowance per organization that has one.
#[derive(Default)]
pub struct RequestLimiter {
    limiters: HashMap<String, DefaultDirectRateLimiter>,
}

impl std::fmt::Debug for RequestLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLimiter")
            .field("organizations", &self.limiters.len())
            .finish()
    }
}

impl RequestLimiter {
    /// Limiters for the given organizations.
    pub fn new(allowances: impl IntoIterator<Item = (String, Allowance)>) -> Self {
        let limiters = allowances
            .into_iter()
            .map(|(organization, allowance)| {
                let quota = Quota::per_second(allowance.per_second).allow_burst(allowance.burst);
                (organization, RateLimiter::direct(quota))
            })
            .collect();
        Self { limiters }
    }

    /// `Err(wait)` when the organization is over its allowance.
    pub fn check(&self, organization: &str) -> Result<(), Duration> {
        match self.limiters.get(organization) {
            None => Ok(()),
            Some(limiter) => limiter
                .check()
                .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::core::clock::ManualClock;
    use chrono::{TimeDelta, TimeZone, Utc};

    fn limiter() -> (InvalidHandleLimiter, Arc<ManualClock>) {
        let start = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let limiter = InvalidHandleLimiter::new(NonZeroU32::new(100).unwrap(), clock.clone());
        (limiter, clock)
    }

    #[test]
    fn more_than_the_budget_in_a_minute_is_refused_for_that_address_only() {
        let (limiter, clock) = limiter();
        let bad: IpAddr = "192.0.2.1".parse().unwrap();
        let good: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..10 {
            assert_eq!(limiter.admit(bad, 10), Ok(()));
            clock.advance(TimeDelta::seconds(1));
        }
        // 100 in the last minute: one more is too many, until the first second leaves the window.
        let wait = limiter.admit(bad, 1).expect_err("the 101st is over");
        assert_eq!(wait, Duration::from_secs(50));
        assert_eq!(limiter.admit(good, 10), Ok(()));
        assert_eq!(
            limiter.admit(bad, 0),
            Ok(()),
            "valid handles are not counted"
        );
        clock.advance(TimeDelta::seconds(50));
        assert_eq!(limiter.admit(bad, 10), Ok(()));
        assert!(limiter.admit(bad, 1).is_err());
    }

    #[test]
    fn a_paced_client_gets_no_more_than_the_budget_in_any_minute() {
        let (limiter, clock) = limiter();
        let client: IpAddr = "192.0.2.3".parse().unwrap();
        // Ten invalid handles every second for ten minutes, as fast as allowed.
        let mut admitted: Vec<(i64, u32)> = Vec::new();
        for second in 0..600 {
            if limiter.admit(client, 10).is_ok() {
                admitted.push((second, 10));
            }
            clock.advance(TimeDelta::seconds(1));
        }
        for start in 0..540 {
            let in_minute: u32 = admitted
                .iter()
                .filter(|(second, _)| (start..start + 60).contains(second))
                .map(|(_, count)| count)
                .sum();
            assert!(in_minute <= 100, "{in_minute} in the minute from {start}");
        }
        let total: u32 = admitted.iter().map(|(_, count)| count).sum();
        assert_eq!(total, 1000, "100 a minute over ten minutes");
    }

    #[test]
    fn the_wait_counts_to_when_enough_has_left_the_window() {
        let (limiter, clock) = limiter();
        let client: IpAddr = "192.0.2.4".parse().unwrap();
        assert_eq!(limiter.admit(client, 5), Ok(()));
        clock.advance(TimeDelta::seconds(10));
        for _ in 0..9 {
            assert_eq!(limiter.admit(client, 10), Ok(()));
        }
        assert_eq!(limiter.admit(client, 5), Ok(()));
        clock.advance(TimeDelta::milliseconds(20_500));
        // 100 counted: 5 at 0 s, 95 at 10 s. Ten more need the 10 s second to leave: 60 - 30.5.
        assert_eq!(
            limiter.admit(client, 10),
            Err(Duration::from_millis(39_500))
        );
        // Five fit once the first second has left (at 60 s).
        assert_eq!(limiter.admit(client, 5), Err(Duration::from_millis(29_500)));
    }

    #[test]
    fn organizations_have_their_own_allowance() {
        let allowance = Allowance {
            per_second: NonZeroU32::new(1).unwrap(),
            burst: NonZeroU32::new(2).unwrap(),
        };
        let limiter = RequestLimiter::new([("acme".to_owned(), allowance)]);
        assert!(limiter.check("acme").is_ok());
        assert!(limiter.check("acme").is_ok());
        assert!(limiter.check("acme").is_err());
        assert!(limiter.check("other").is_ok());
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2001)), 3);
    }
}
