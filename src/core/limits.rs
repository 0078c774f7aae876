//! Rate limits: per-client invalid-handle budget and per-organization request allowances.

use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use moka::sync::Cache;
use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

/// Seconds to advertise in `Retry-After`: whole seconds, at least one.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// Counts invalid receipt handles per client address; past the budget, the address is refused.
pub struct InvalidHandleLimiter {
    budget: DefaultKeyedRateLimiter<IpAddr>,
    blocked_until: Cache<IpAddr, Instant>,
}

impl std::fmt::Debug for InvalidHandleLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvalidHandleLimiter")
            .finish_non_exhaustive()
    }
}

impl InvalidHandleLimiter {
    /// Allows `per_minute` invalid handles a minute per address.
    pub fn new(per_minute: NonZeroU32) -> Self {
        Self {
            budget: RateLimiter::keyed(Quota::per_minute(per_minute)),
            blocked_until: Cache::builder()
                .max_capacity(1_000_000)
                .time_to_live(Duration::from_secs(120))
                .build(),
        }
    }

    /// `Some(wait)` while the address is refused.
    pub fn blocked(&self, client: IpAddr) -> Option<Duration> {
        let until = self.blocked_until.get(&client)?;
        until.checked_duration_since(Instant::now())
    }

    /// Counts `invalid` more invalid handles from the address. When the budget cannot cover them
    /// all, the address is refused until it could: a paced client cannot slip past the limit.
    pub fn record_invalid(&self, client: IpAddr, invalid: usize) {
        let Some(count) = u32::try_from(invalid).ok().and_then(NonZeroU32::new) else {
            return;
        };
        let wait = match self.budget.check_key_n(&client, count) {
            Ok(Ok(())) => return,
            Ok(Err(not_until)) => not_until.wait_time_from(DefaultClock::default().now()),
            // More at once than the whole budget: refuse for a full period.
            Err(_) => Duration::from_secs(60),
        };
        self.blocked_until.insert(client, Instant::now() + wait);
    }

    /// Drops state of addresses that have been quiet; called periodically.
    pub fn housekeeping(&self) {
        self.budget.retain_recent();
        self.budget.shrink_to_fit();
    }
}

/// A request allowance: a steady rate and a burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    pub per_second: NonZeroU32,
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

    #[test]
    fn more_than_the_budget_of_invalid_handles_blocks_that_address_only() {
        let limiter = InvalidHandleLimiter::new(NonZeroU32::new(100).unwrap());
        let bad: IpAddr = "192.0.2.1".parse().unwrap();
        let good: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..10 {
            limiter.record_invalid(bad, 10);
        }
        assert_eq!(limiter.blocked(bad), None, "100 in a minute is allowed");
        limiter.record_invalid(bad, 1);
        let wait = limiter.blocked(bad).expect("the 101st is over");
        assert!(wait > Duration::ZERO && wait <= Duration::from_secs(1));
        assert_eq!(limiter.blocked(good), None);
    }

    #[test]
    fn a_batch_over_the_remaining_budget_blocks_until_all_of_it_is_refilled() {
        let limiter = InvalidHandleLimiter::new(NonZeroU32::new(100).unwrap());
        let client: IpAddr = "192.0.2.3".parse().unwrap();
        for _ in 0..10 {
            limiter.record_invalid(client, 10);
        }
        // Ten more need ten refills of 0.6 s each: about six seconds, not one refill step.
        limiter.record_invalid(client, 10);
        let wait = limiter.blocked(client).expect("blocked");
        assert!(wait > Duration::from_secs(5), "{wait:?}");
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
