//! Limits on callers: request rates with bursts (GCRA, governor), exact counts over a rolling
//! minute (the invalid-handle budget), and daily quotas. Keyed by whatever the caller is limited
//! as (a client address, a key, an organization, a queue, a connection), created on first use,
//! read against the injected clock, and kept in the [`StateStore`](crate::core::state::StateStore)
//! so that replicas can share them.
//!
//! When the store cannot answer, burst limits and the invalid-handle budget let the request
//! through (a store outage must not stop every consumer), and daily quotas refuse it with
//! "unavailable" unless configured to let it through ([`QuotaPolicy`]): a quota is a promise to
//! whoever pays for the traffic.

use crate::core::error::{ErrorKind, GatewayError, LimitScope};
use crate::core::metrics::meters::Meters;
pub use crate::core::state::counters::Allowance;
use crate::core::state::{LimitCheck, StateStore};
use std::sync::Arc;
use std::time::Duration;

/// Seconds to advertise in `Retry-After`: whole seconds, at least one.
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

/// What a daily quota does when the state store cannot count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaPolicy {
    /// Answer unavailable (503, `Retry-After`) until the store counts again.
    #[default]
    Refuse,
    /// Let the request through uncounted.
    Admit,
}

/// How long a client is told to wait when the state store cannot answer.
pub const STATE_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The limits the core and the dialects apply, over the shared state.
#[derive(Clone)]
pub struct Limits {
    state: Arc<dyn StateStore>,
    meters: Meters,
    quotas: QuotaPolicy,
}

impl std::fmt::Debug for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limits").finish_non_exhaustive()
    }
}

impl Limits {
    /// Limits kept in `state`; refusals are counted in `meters`.
    pub fn new(state: Arc<dyn StateStore>, meters: Meters) -> Self {
        Self {
            state,
            meters,
            quotas: QuotaPolicy::default(),
        }
    }

    /// What daily quotas do when the store cannot count.
    pub fn quota_policy(&self) -> QuotaPolicy {
        self.quotas
    }

    /// Daily quotas follow `policy` when the store cannot count.
    pub fn with_quota_policy(mut self, policy: QuotaPolicy) -> Self {
        self.quotas = policy;
        self
    }

    fn refused(&self, wait: Duration, scope: LimitScope, message: &str) -> GatewayError {
        self.meters.rate_limited(scope);
        limited(wait, scope, message)
    }

    /// Every limit of a request, in order, in one call to the store: the first that refuses
    /// answers `RateLimited` with its wait (the ones before it are counted, the ones after it
    /// are not). A store that cannot answer lets the request through, unless a daily quota is
    /// among its limits and the quota policy is `refuse`.
    pub async fn all(&self, limits: &[Limit<'_>]) -> Result<(), GatewayError> {
        let checks: Vec<LimitCheck<'_>> = limits
            .iter()
            .map(|limit| limit.check)
            .filter(|check| !matches!(check, LimitCheck::Window { amount: 0, .. }))
            .collect();
        if checks.is_empty() {
            return Ok(());
        }
        let answers = match self.state.admit(&checks).await {
            Ok(answers) => answers,
            Err(error) => {
                let quota = checks
                    .iter()
                    .any(|check| matches!(check, LimitCheck::Daily { .. }));
                if quota && self.quotas == QuotaPolicy::Refuse {
                    self.meters.state_error("admit", "refused", &error);
                    return Err(GatewayError::unavailable(STATE_RETRY_AFTER));
                }
                self.meters.state_error("admit", "admitted", &error);
                return Ok(());
            }
        };
        let counted = limits
            .iter()
            .filter(|limit| !matches!(limit.check, LimitCheck::Window { amount: 0, .. }));
        for (limit, answer) in counted.zip(answers) {
            if let Err(wait) = answer {
                let scope = match limit.check {
                    LimitCheck::Daily { .. } => LimitScope::DailyQuota,
                    LimitCheck::Rate { .. } | LimitCheck::Window { .. } => LimitScope::Rate,
                };
                return Err(self.refused(wait, scope, limit.message));
            }
        }
        Ok(())
    }

    /// One request of `key` under `allowance`, or `RateLimited` (rate) with the wait.
    pub async fn rate(
        &self,
        key: &str,
        allowance: Allowance,
        message: &str,
    ) -> Result<(), GatewayError> {
        self.all(&[Limit::rate(key, allowance, message)]).await
    }

    /// `amount` more of `key` in its rolling minute, at most `per_minute` in any minute; a count
    /// that would go past it is refused whole (and not counted).
    pub async fn per_minute(
        &self,
        key: LimitKey<'_>,
        amount: u32,
        per_minute: u32,
        message: &str,
    ) -> Result<(), GatewayError> {
        let key = key.to_string();
        self.all(&[Limit::per_minute(&key, amount, per_minute, message)])
            .await
    }

    /// `amount` more of `key` today (UTC), at most `per_day`; past it, `RateLimited` (daily
    /// quota) until the day rolls over.
    pub async fn per_day(
        &self,
        key: &str,
        amount: u32,
        per_day: u64,
        message: &str,
    ) -> Result<(), GatewayError> {
        self.all(&[Limit::per_day(key, amount, per_day, message)])
            .await
    }
}

/// What a limit counts, spelled in one place: the state keeps each count under this text, so a
/// spelling is kept across versions (replicas of two versions share the counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKey<'a> {
    /// An ezgh organization's requests.
    EzghOrganization(&'a str),
    /// A gateway queue's receives.
    QueueReceives(&'a str),
    /// Receipt handles from a client address that are not the gateway's.
    InvalidHandles(std::net::IpAddr),
    /// Failed token requests from a client address.
    TokenFailures(std::net::IpAddr),
    /// A sombus connection's requests (its rate and its daily quota).
    SombusConnection(&'a str),
}

impl std::fmt::Display for LimitKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EzghOrganization(organization) => write!(f, "ezgh.organization:{organization}"),
            Self::QueueReceives(queue) => write!(f, "queue.receive:{queue}"),
            Self::InvalidHandles(client) => write!(f, "invalid-handles:{client}"),
            Self::TokenFailures(client) => write!(f, "oauth.failures:{client}"),
            Self::SombusConnection(client_id) => write!(f, "sombus.connection:{client_id}"),
        }
    }
}

/// One limit of a request and what a refusal by it says.
#[derive(Debug, Clone, Copy)]
pub struct Limit<'a> {
    check: LimitCheck<'a>,
    message: &'a str,
}

impl<'a> Limit<'a> {
    /// One request of `key` under `allowance`.
    pub fn rate(key: &'a str, allowance: Allowance, message: &'a str) -> Self {
        Self {
            check: LimitCheck::Rate { key, allowance },
            message,
        }
    }

    /// `amount` more of `key` in its rolling minute, at most `per_minute`.
    pub fn per_minute(key: &'a str, amount: u32, per_minute: u32, message: &'a str) -> Self {
        Self {
            check: LimitCheck::Window {
                key,
                amount,
                per_minute,
            },
            message,
        }
    }

    /// `amount` more of `key` today (UTC), at most `per_day`.
    pub fn per_day(key: &'a str, amount: u32, per_day: u64, message: &'a str) -> Self {
        Self {
            check: LimitCheck::Daily {
                key,
                amount,
                per_day,
            },
            message,
        }
    }
}

fn limited(retry_after: Duration, scope: LimitScope, message: &str) -> GatewayError {
    GatewayError::new(ErrorKind::RateLimited { retry_after, scope }, message)
}

#[cfg(test)]
mod tests {

    #[test]
    fn limit_keys_keep_the_spellings_replicas_share() {
        let client: std::net::IpAddr = "2001:db8::7".parse().unwrap();
        for (key, text) in [
            (LimitKey::EzghOrganization("acme"), "ezgh.organization:acme"),
            (LimitKey::QueueReceives("orders"), "queue.receive:orders"),
            (
                LimitKey::InvalidHandles(client),
                "invalid-handles:2001:db8::7",
            ),
            (
                LimitKey::TokenFailures(client),
                "oauth.failures:2001:db8::7",
            ),
            (LimitKey::SombusConnection("w.c"), "sombus.connection:w.c"),
        ] {
            assert_eq!(key.to_string(), text);
        }
    }

    use super::*;
    use crate::core::clock::ManualClock;
    use crate::core::state::InProcessState;
    use chrono::{TimeDelta, TimeZone, Utc};
    use std::num::NonZeroU32;

    fn limits() -> (Limits, Arc<ManualClock>) {
        let start = Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap();
        let clock = Arc::new(ManualClock::new(start));
        let state = InProcessState::new(
            1_000,
            Duration::from_secs(3600),
            crate::core::state::ledger::UnknownDeliveries::Stale,
            clock.clone(),
        );
        (Limits::new(Arc::new(state), Meters::default()), clock)
    }

    fn wait_of(error: GatewayError) -> (Duration, LimitScope) {
        match error.kind {
            ErrorKind::RateLimited { retry_after, scope } => (retry_after, scope),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn more_than_the_budget_in_a_minute_is_refused_for_that_key_only() {
        let (limits, clock) = limits();
        for _ in 0..10 {
            assert!(
                limits
                    .per_minute(LimitKey::QueueReceives("bad"), 10, 100, "m")
                    .await
                    .is_ok()
            );
            clock.advance(TimeDelta::seconds(1));
        }
        // 100 in the last minute: one more is too many, until the first second leaves the window.
        let error = limits
            .per_minute(LimitKey::QueueReceives("bad"), 1, 100, "m")
            .await
            .unwrap_err();
        assert_eq!(wait_of(error), (Duration::from_secs(50), LimitScope::Rate));
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("good"), 10, 100, "m")
                .await
                .is_ok()
        );
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("bad"), 0, 100, "m")
                .await
                .is_ok(),
            "nothing to count"
        );
        clock.advance(TimeDelta::seconds(50));
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("bad"), 10, 100, "m")
                .await
                .is_ok()
        );
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("bad"), 1, 100, "m")
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_paced_caller_gets_no_more_than_the_budget_in_any_minute() {
        let (limits, clock) = limits();
        let mut admitted: Vec<i64> = Vec::new();
        for second in 0..600 {
            if limits
                .per_minute(LimitKey::QueueReceives("paced"), 10, 100, "m")
                .await
                .is_ok()
            {
                admitted.push(second);
            }
            clock.advance(TimeDelta::seconds(1));
        }
        for start in 0..540 {
            let in_minute = admitted
                .iter()
                .filter(|second| (start..start + 60).contains(*second))
                .count()
                * 10;
            assert!(in_minute <= 100, "{in_minute} in the minute from {start}");
        }
        assert_eq!(admitted.len() * 10, 1000, "100 a minute over ten minutes");
    }

    #[tokio::test]
    async fn the_wait_counts_to_when_enough_has_left_the_window() {
        let (limits, clock) = limits();
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("k"), 5, 100, "m")
                .await
                .is_ok()
        );
        clock.advance(TimeDelta::seconds(10));
        for _ in 0..9 {
            assert!(
                limits
                    .per_minute(LimitKey::QueueReceives("k"), 10, 100, "m")
                    .await
                    .is_ok()
            );
        }
        assert!(
            limits
                .per_minute(LimitKey::QueueReceives("k"), 5, 100, "m")
                .await
                .is_ok()
        );
        clock.advance(TimeDelta::milliseconds(20_500));
        // 100 counted: 5 at 0 s, 95 at 10 s. Ten more need the 10 s second to leave: 60 - 30.5.
        let error = limits
            .per_minute(LimitKey::QueueReceives("k"), 10, 100, "m")
            .await
            .unwrap_err();
        assert_eq!(wait_of(error).0, Duration::from_millis(39_500));
        let error = limits
            .per_minute(LimitKey::QueueReceives("k"), 5, 100, "m")
            .await
            .unwrap_err();
        assert_eq!(wait_of(error).0, Duration::from_millis(29_500));
    }

    #[tokio::test]
    async fn rates_are_per_key_created_on_demand_and_follow_the_clock() {
        let (limits, clock) = limits();
        let allowance = Allowance {
            per_second: NonZeroU32::new(1).unwrap(),
            burst: NonZeroU32::new(2).unwrap(),
        };
        assert!(limits.rate("connection-1", allowance, "m").await.is_ok());
        assert!(limits.rate("connection-1", allowance, "m").await.is_ok());
        let error = limits
            .rate("connection-1", allowance, "m")
            .await
            .unwrap_err();
        let (wait, scope) = wait_of(error);
        assert_eq!(scope, LimitScope::Rate);
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(limits.rate("connection-2", allowance, "m").await.is_ok());
        clock.advance(TimeDelta::seconds(1));
        assert!(
            limits.rate("connection-1", allowance, "m").await.is_ok(),
            "refilled"
        );
    }

    #[tokio::test]
    async fn a_daily_quota_holds_until_the_day_rolls_over() {
        let (limits, clock) = limits();
        for _ in 0..3 {
            assert!(limits.per_day("tenant", 1, 3, "m").await.is_ok());
        }
        let error = limits.per_day("tenant", 1, 3, "m").await.unwrap_err();
        // 12:00 UTC: twelve hours to midnight.
        assert_eq!(
            wait_of(error),
            (Duration::from_secs(12 * 3600), LimitScope::DailyQuota)
        );
        clock.advance(TimeDelta::hours(12));
        assert!(
            limits.per_day("tenant", 1, 3, "m").await.is_ok(),
            "a new day"
        );
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(Duration::from_secs(2)), 2);
        assert_eq!(retry_after_seconds(Duration::from_millis(2001)), 3);
    }
}
