//! A connection's deadlines, from what moves on it: the idle timeout while no request is in
//! flight, the head deadline once a request's first bytes arrived, and none while a request is
//! in flight (its body has a deadline of its own). A waiting long poll is a request in flight.

use super::settings::ConnectionSettings;
use crate::server::per_address::Tenure;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The HTTP version a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Version {
    Http1,
    Http2,
}

/// What the connection's watchdog reads: when bytes last moved, whether a request head is on its
/// way, and how many requests are in flight. Times are milliseconds since the connection opened.
pub(super) struct Activity {
    /// HTTP/1.1 connections follow request heads and unread bodies in the byte stream; HTTP/2
    /// frames its requests, so only requests in flight count.
    version: Version,
    opened: Instant,
    last_io_ms: AtomicU64,
    /// When the first byte of the current request head arrived; `NONE` between requests.
    head_started_ms: AtomicU64,
    in_flight: AtomicU32,
    /// The current (or last) request's body has not been read to its end.
    body_pending: std::sync::atomic::AtomicBool,
    /// Wakes the watchdog when its deadline may have moved: a head started, a request ended.
    pub(super) changed: Notify,
    shutdown_begun: std::sync::atomic::AtomicBool,
    /// The connection's place among its address's, told of its requests (none for a refusal).
    tenure: Option<Arc<Tenure>>,
}

const NONE: u64 = u64::MAX;

impl Activity {
    pub(super) fn new(version: Version, tenure: Option<Arc<Tenure>>) -> Self {
        Self {
            version,
            opened: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            head_started_ms: AtomicU64::new(NONE),
            in_flight: AtomicU32::new(0),
            body_pending: std::sync::atomic::AtomicBool::new(false),
            changed: Notify::new(),
            shutdown_begun: std::sync::atomic::AtomicBool::new(false),
            tenure,
        }
    }

    /// Resolves when the connection is to close to make room for another client's (never for
    /// a connection without a tenure).
    pub(super) async fn evicted(&self) {
        match &self.tenure {
            Some(tenure) => tenure.evicted().cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// Whether the connection was told to close to make room for another client's.
    pub(super) fn is_evicted(&self) -> bool {
        self.tenure
            .as_ref()
            .is_some_and(|tenure| tenure.evicted().is_cancelled())
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(NONE - 1)
    }

    fn at(&self, ms: u64) -> Instant {
        self.opened + Duration::from_millis(ms)
    }

    pub(super) fn moved(&self) {
        self.last_io_ms.store(self.now_ms(), Ordering::Relaxed);
    }

    /// Bytes arrived: between requests, they start a request head.
    pub(super) fn read(&self) {
        self.moved();
        if self.between_requests()
            && self
                .head_started_ms
                .compare_exchange(NONE, self.now_ms(), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.changed.notify_one();
        }
    }

    /// A request head arrived; `body_done` when it has no body to read.
    pub(super) fn request_started(self: &Arc<Self>, body_done: bool) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        if let Some(tenure) = &self.tenure {
            tenure.request_started();
        }
        if self.version == Version::Http1 {
            self.body_pending.store(!body_done, Ordering::Relaxed);
        }
        self.head_started_ms.store(NONE, Ordering::Relaxed);
        InFlight(Arc::clone(self))
    }

    /// The current request's body was read to its end.
    pub(super) fn body_read(&self) {
        self.body_pending.store(false, Ordering::Relaxed);
    }

    /// The current request's body is not read to its end (HTTP/1.1).
    pub(super) fn body_unread(&self) -> bool {
        self.body_pending.load(Ordering::Relaxed)
    }

    /// No request in flight, and the last one's body read whole: bytes now start a new request.
    /// (A body its answer left unread is discarded to its end first, or the connection closed.)
    pub(super) fn between_requests(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && !self.body_pending.load(Ordering::Relaxed)
    }

    /// No request in flight.
    pub(super) fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0
    }

    pub(super) fn begin_shutdown(&self) {
        self.shutdown_begun.store(true, Ordering::Relaxed);
    }

    pub(super) fn shutdown_begun(&self) -> bool {
        self.shutdown_begun.load(Ordering::Relaxed)
    }

    /// When the connection times out if nothing changes; `None` while a request is in flight
    /// (the request's own deadlines apply then).
    pub(super) fn deadline(&self, settings: &ConnectionSettings) -> Option<Instant> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        match self.head_started_ms.load(Ordering::Relaxed) {
            NONE => Some(self.at(self.last_io_ms.load(Ordering::Relaxed)) + settings.idle_timeout),
            started => Some(self.at(started) + settings.header_timeout),
        }
    }

    pub(super) fn expired(&self, settings: &ConnectionSettings, now: Instant) -> bool {
        self.deadline(settings)
            .is_some_and(|deadline| now >= deadline)
    }
}

/// A request in flight; its end counts as activity, so the idle time starts after the answer.
pub(super) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.moved();
        activity.in_flight.fetch_sub(1, Ordering::Relaxed);
        if let Some(tenure) = &activity.tenure {
            tenure.request_ended();
        }
        // Answered without its body read whole: hyper drains what is at hand or closes. Whatever
        // comes next gets no more than a head's time (the request-line check stays off, since
        // the next bytes may still be that body).
        if activity.body_pending.load(Ordering::Relaxed) {
            activity
                .head_started_ms
                .store(activity.now_ms(), Ordering::Relaxed);
        }
        // The idle clock starts now: the watchdog has been waiting without a deadline.
        activity.changed.notify_one();
    }
}

pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_connection_state() {
        let settings = ConnectionSettings {
            max_connections: 1,
            max_connections_per_address: None,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            http2_max_streams: None,
        };
        let activity = Arc::new(Activity::new(Version::Http1, None));
        let opened = activity.opened;
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(60)),
            "idle from the start"
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(15)),
            "a head started: ten seconds to finish it"
        );
        let request = activity.request_started(false);
        assert_eq!(activity.deadline(&settings), None, "a request in flight");
        tokio::time::advance(Duration::from_secs(40)).await;
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            None,
            "body bytes of the request"
        );
        activity.body_read();
        drop(request);
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 60)),
            "idle again after the answer"
        );
        assert!(!activity.expired(&settings, opened + Duration::from_secs(104)));
        assert!(activity.expired(&settings, opened + Duration::from_secs(105)));

        // Answered with its body unread: what follows gets a head's time, not an idle one.
        let unread = activity.request_started(false);
        drop(unread);
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 10))
        );
        activity.read();
        assert_eq!(
            activity.deadline(&settings),
            Some(opened + Duration::from_secs(45 + 10)),
            "bytes after an unread body do not restart the clock"
        );
    }
}
