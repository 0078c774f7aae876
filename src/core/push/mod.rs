//! Push subscriptions: the gateway POSTs a queue's messages to an endpoint, as one more consumer
//! of the queue under the same lease rules as pull consumers (it receives, and each message goes
//! to whichever consumer claims it first). A 2xx acknowledges; anything else releases the message
//! after a backoff (its receive count, and so the queue's dead-letter rule, counts push attempts);
//! 410 Gone disables the subscription.
//!
//! The core owns the loop ([`runner`]), the rules ([`backoff`]) and what operators see of each
//! subscription ([`board`]); how a message is posted (HTTP, signing, which addresses may be
//! reached) is the port [`PushEndpoint`], implemented outside the core (`crate::push`).

pub mod admin;
pub mod board;
pub mod record;
pub mod records;
pub mod runner;

use crate::core::model::BackendMessage;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Where messages are posted, and how: the adapter's side of a subscription.
#[async_trait]
pub trait PushEndpoint: Send + Sync + 'static {
    /// Posts one delivery of a message; takes no longer than the subscription's timeout.
    async fn push(&self, message: &PushedMessage<'_>) -> Pushed;

    /// Where it posts, for people: as [`endpoint_for_readers`] shows it.
    fn describe(&self) -> String;
}

/// An endpoint as its managers see it: scheme, host and path, never a query or credentials.
pub(crate) fn url_without_query(url: &url::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.set_fragment(None);
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.to_string()
}

/// An endpoint as readers, logs and the audit trail see it: scheme, host and port, with `/…` for
/// a path or query (capability URLs, such as Slack's, Discord's and Zapier's hooks, carry their
/// secret there); only the subscription's managers see its path. Text that is not a URL is shown
/// as nothing.
pub fn endpoint_for_readers(url: &str) -> String {
    let Ok(url) = url::Url::parse(url) else {
        return String::new();
    };
    let origin = url.origin().ascii_serialization();
    if url.path() == "/" && url.query().is_none() {
        format!("{origin}/")
    } else {
        format!("{origin}/…")
    }
}

/// One delivery of a message, as the endpoint posts it.
pub struct PushedMessage<'a> {
    /// The gateway queue it comes from.
    pub queue: &'a str,
    /// The message (its backend handle never leaves the gateway).
    pub message: &'a BackendMessage,
    /// The delivery's sealed receipt handle: posted only where a 202 holds the lease, so the
    /// receiver can acknowledge or extend it later.
    pub receipt_handle: &'a str,
}

impl std::fmt::Debug for PushedMessage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The receipt handle is a credential for the message: never print it.
        f.debug_struct("PushedMessage")
            .field("queue", &self.queue)
            .field("message", &self.message)
            .field("receipt_handle", &"<redacted>")
            .finish()
    }
}

/// How a post ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// A 2xx: the message is acknowledged.
    Accepted {
        /// The status.
        status: u16,
    },
    /// Any other status but 410: released after a backoff, or after `Retry-After`.
    Refused {
        /// The status.
        status: u16,
        /// What `Retry-After` asked for, if anything.
        retry_after: Option<Duration>,
    },
    /// A 202 where the subscription holds the lease on one: the message stays in flight until
    /// the receiver acknowledges or releases it by its receipt handle, or its lease ends.
    Held,
    /// 410 Gone: the endpoint wants no more; the subscription is disabled.
    Gone,
    /// No answer within the timeout: released after a backoff.
    TimedOut,
    /// No connection (refused, reset, no such host, TLS): released after a backoff.
    Unreachable,
    /// The endpoint's address is one the gateway may not reach (private, loopback, link-local,
    /// metadata): released after a backoff; nothing was sent.
    Forbidden,
}

impl Pushed {
    /// Every outcome's name, as [`Pushed::outcome`] gives them.
    pub const OUTCOMES: [&'static str; 7] = [
        "accepted",
        "held",
        "refused",
        "gone",
        "timed_out",
        "unreachable",
        "forbidden",
    ];

    /// The outcome's name in metrics and the delivery log.
    pub fn outcome(&self) -> &'static str {
        match self {
            Pushed::Accepted { .. } => "accepted",
            Pushed::Held => "held",
            Pushed::Refused { .. } => "refused",
            Pushed::Gone => "gone",
            Pushed::TimedOut => "timed_out",
            Pushed::Unreachable => "unreachable",
            Pushed::Forbidden => "forbidden",
        }
    }

    /// The status the endpoint answered, if it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Pushed::Accepted { status } | Pushed::Refused { status, .. } => Some(*status),
            Pushed::Held => Some(202),
            Pushed::Gone => Some(410),
            _ => None,
        }
    }
}

/// A subscription as the runner takes it.
pub struct Subscription {
    /// Its name (metrics label, log field).
    pub name: String,
    /// The gateway queue it consumes.
    pub queue: String,
    /// The most deliveries in flight at once.
    pub max_concurrency: u32,
    /// The most deliveries started a second, if limited.
    pub max_per_second: Option<u32>,
    /// How long each delivery holds its message (longer than the endpoint's timeout).
    pub visibility_timeout_seconds: u32,
    /// Where and how messages are posted.
    pub endpoint: Arc<dyn PushEndpoint>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("name", &self.name)
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

/// The first retry's delay; each further attempt doubles it.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest backoff between two attempts of one message.
pub const MOST_BACKOFF: Duration = Duration::from_secs(300);
/// The longest `Retry-After` honoured: SQS's longest visibility timeout.
pub const MOST_RETRY_AFTER: Duration =
    Duration::from_secs(crate::core::sqs_limits::MAX_VISIBILITY_SECONDS as u64);

/// How long a message waits before its next attempt after its `attempt`-th failed (1 = the
/// first): what `Retry-After` asked for (up to [`MOST_RETRY_AFTER`]), else an exponential
/// backoff from [`FIRST_BACKOFF`], capped at [`MOST_BACKOFF`], with `jitter` (0 to 1) taking off up
/// to a fifth so that messages failed together do not come back together.
pub fn backoff(attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
    if let Some(asked) = retry_after {
        return asked.min(MOST_RETRY_AFTER);
    }
    let doublings = attempt.saturating_sub(1).min(16);
    let full = FIRST_BACKOFF
        .saturating_mul(1 << doublings)
        .min(MOST_BACKOFF);
    full.mul_f64(1.0 - jitter.clamp(0.0, 1.0) / 5.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_and_retry_after_wins() {
        let secs = |attempt| backoff(attempt, None, 0.0).as_secs();
        assert_eq!((secs(1), secs(2), secs(3), secs(9)), (1, 2, 4, 256));
        assert_eq!(secs(10), 300);
        assert_eq!(secs(u32::MAX), 300);
        assert_eq!(backoff(1, None, 1.0), Duration::from_millis(800));
        let asked = Some(Duration::from_secs(7));
        assert_eq!(backoff(5, asked, 0.5), Duration::from_secs(7));
        let too_long = Some(Duration::from_secs(999_999));
        assert_eq!(backoff(1, too_long, 0.0), MOST_RETRY_AFTER);
    }
}
