//! A push subscription's loop: receive as a pull consumer would (a long poll, never more than
//! the window allows in flight, one message per FIFO group), post each delivery on a task of its
//! own, then acknowledge it, or release it after a backoff, by the claims it was received with.
//! One subscription's slow endpoint holds up only its own deliveries.

use super::board::{Attempt, Status};
use super::{Pushed, PushedMessage, Subscription, backoff};
use crate::core::Gateway;
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::gateway::{OpenedHandles, ReceiveOptions};
use crate::core::log_throttle::LogThrottle;
use crate::core::metrics::meters::PushMeters;
use crate::core::model::Delivery;
use crate::core::spans;
use governor::{Quota, RateLimiter};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;
use tracing::Instrument as _;

/// The long poll of each receive.
const WAIT_SECONDS: u32 = 20;
/// The longest pause before the next receive after failures in a row.
const MOST_PAUSE: Duration = Duration::from_secs(30);
/// How often a failing receive is logged.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// Starts `subscription`'s loop on the gateway's tracked tasks (it ends at shutdown, or once the
/// subscription is disabled); its status is on the gateway's board, its log keeping
/// `log_entries` attempts.
pub fn start(
    gateway: &Arc<Gateway>,
    subscription: Subscription,
    log_entries: usize,
) -> Arc<Status> {
    let status = gateway.push_board().register(&subscription, log_entries);
    let runner = Runner {
        caller: Caller::new(
            Principal::Subscription(subscription.name.clone()),
            Arc::new(Grants::none().allow(
                &subscription.queue,
                [
                    Action::Receive,
                    Action::Acknowledge,
                    Action::ChangeVisibility,
                    Action::Inspect,
                ],
            )),
        ),
        gateway: Arc::clone(gateway),
        meters: gateway.meters().push(
            &subscription.queue,
            &subscription.name,
            gateway.names_in_metrics(&subscription.queue),
            &super::Pushed::OUTCOMES,
        ),
        subscription: Arc::new(subscription),
        status: Arc::clone(&status),
    };
    gateway.spawn_tracked(runner.run());
    status
}

struct Runner {
    gateway: Arc<Gateway>,
    /// Its series, registered once.
    meters: PushMeters,
    subscription: Arc<Subscription>,
    caller: Caller,
    status: Arc<Status>,
}

impl Runner {
    async fn run(self) {
        let limiter = self
            .subscription
            .max_per_second
            .and_then(NonZeroU32::new)
            .map(|rate| RateLimiter::direct(Quota::per_second(rate)));
        let mut failing = LogThrottle::new(LOG_EVERY);
        // A runner replacing another shows its own state at once.
        self.report();
        let most = self.subscription.max_concurrency.clamp(1, 10);
        loop {
            if self.status.disabled() {
                break;
            }
            let failures = self.status.failures_in_a_row();
            if failures > 0 {
                let pause = Duration::from_millis(100)
                    .saturating_mul(1 << failures.min(9))
                    .min(MOST_PAUSE);
                if !self.sleep_unless_stopping(pause).await {
                    break;
                }
            }
            // Armed before the room is read: the last delivery ending in between still wakes it.
            let change = self.status.next_change();
            let room = self.status.room(most);
            if room == 0 {
                tokio::select! {
                    () = change => continue,
                    () = self.gateway.shutdown_started() => break,
                }
            }
            drop(change);
            let options = ReceiveOptions {
                max_messages: room,
                wait_seconds: Some(WAIT_SECONDS),
                visibility_timeout_seconds: Some(self.subscription.visibility_timeout_seconds),
                attempt_id: None,
                wait_out_over_limit: true,
                one_per_group: true,
                keep_claims: true,
            };
            // Dropped when the subscription is disabled meanwhile: the core gives back what an
            // abandoned receive took, uncounted.
            let received = tokio::select! {
                received = self.gateway.receive(&self.caller, &self.subscription.queue, options) => received,
                () = self.status.until_disabled() => break,
                () = self.gateway.shutdown_started() => break,
            };
            let deliveries = match received {
                Ok(deliveries) => deliveries,
                Err(error) => {
                    if let Some(count) = failing.due() {
                        tracing::warn!(
                            queue = self.subscription.queue,
                            subscription = self.subscription.name,
                            error = %error.message,
                            count,
                            "push subscription: receive failed"
                        );
                    }
                    if !self.sleep_unless_stopping(Duration::from_secs(1)).await {
                        break;
                    }
                    continue;
                }
            };
            self.status.started(deliveries.len() as u32);
            self.report();
            for delivery in deliveries {
                if let Some(limiter) = &limiter {
                    limiter.until_ready().await;
                }
                let posting = Posting {
                    gateway: Arc::clone(&self.gateway),
                    meters: self.meters.clone(),
                    subscription: Arc::clone(&self.subscription),
                    caller: self.caller.clone(),
                    status: Arc::clone(&self.status),
                };
                self.gateway.spawn_tracked(posting.post(delivery));
            }
        }
    }

    /// Shows the subscription's state in the gauges.
    fn report(&self) {
        report(&self.meters, &self.status);
    }

    /// Sleeps `pause`; `false` when shutdown began meanwhile.
    async fn sleep_unless_stopping(&self, pause: Duration) -> bool {
        tokio::select! {
            () = tokio::time::sleep(pause) => true,
            () = self.gateway.shutdown_started() => false,
        }
    }
}

/// One delivery being posted.
struct Posting {
    gateway: Arc<Gateway>,
    meters: PushMeters,
    subscription: Arc<Subscription>,
    caller: Caller,
    status: Arc<Status>,
}

impl Posting {
    /// Posts `delivery` in its span: a child of the message's producer context.
    async fn post(self, delivery: Delivery) {
        let span = spans::push_delivery(
            &self.subscription.queue,
            &self.subscription.name,
            &delivery.message,
            delivery.message.receive_count,
        );
        self.deliver(delivery, &span).instrument(span.clone()).await;
    }

    async fn deliver(self, mut delivery: Delivery, span: &tracing::Span) {
        let subscription = &self.subscription;
        // Settled by the claims it was received with (a receive that kept none, a replay, opens
        // its handle instead).
        let opened = match delivery.claims.take() {
            Some(claims) => OpenedHandles::claimed(claims),
            None => self
                .gateway
                .open_handles(std::iter::once(delivery.receipt_handle.expose())),
        };
        if self.status.disabled() {
            // Disabled since it was received: the message is the pull consumers' at once.
            let _ = self.release_after(opened, Duration::ZERO).await;
            self.status.abandoned();
            return;
        }
        let started = tokio::time::Instant::now();
        let pushed = subscription
            .endpoint
            .push(&PushedMessage {
                queue: &subscription.queue,
                message: &delivery.message,
                receipt_handle: delivery.receipt_handle.expose(),
            })
            .await;
        let latency = started.elapsed();
        if let Some(status) = pushed.status() {
            span.record("http.response.status_code", i64::from(status));
        }
        if !matches!(pushed, Pushed::Accepted { .. } | Pushed::Held) {
            spans::failed(span);
        }
        let attempt = delivery.message.receive_count;
        let queue = Some(subscription.queue.as_str());
        let settled = match pushed {
            Pushed::Accepted { .. } => {
                self.gateway
                    .acknowledge_opened(&self.caller, opened, queue)
                    .await
            }
            // The receiver acknowledges or extends it by its handle; or its lease ends.
            Pushed::Held => Ok(Vec::new()),
            Pushed::Gone => {
                tracing::warn!(
                    queue = subscription.queue,
                    subscription = subscription.name,
                    "push subscription disabled: its endpoint answered 410 Gone"
                );
                self.status.disable("the endpoint answered 410 Gone");
                self.gateway
                    .change_visibility_opened(&self.caller, opened, &[0], queue)
                    .await
            }
            Pushed::Refused { retry_after, .. } => {
                let wait = backoff(attempt, retry_after, rand::random::<f64>());
                self.release_after(opened, wait).await
            }
            Pushed::TimedOut | Pushed::Unreachable | Pushed::Forbidden => {
                if pushed == Pushed::Forbidden {
                    tracing::warn!(
                        queue = subscription.queue,
                        subscription = subscription.name,
                        "push subscription: the endpoint's address is not one the gateway may reach (push.allow_private_networks)"
                    );
                }
                let wait = backoff(attempt, None, rand::random::<f64>());
                self.release_after(opened, wait).await
            }
        };
        if let Err(error) = settled {
            tracing::warn!(
                queue = subscription.queue,
                subscription = subscription.name,
                error = %error.message,
                "push subscription: a delivery could not be settled; it comes back when its lease ends"
            );
        }
        self.meters.attempt(pushed.outcome(), latency);
        self.status.ended(
            Attempt {
                at: self.gateway.now(),
                message_id: delivery.message.message_id.clone(),
                attempt,
                outcome: pushed.outcome(),
                status: pushed.status(),
                latency,
            },
            matches!(pushed, Pushed::Accepted { .. } | Pushed::Held),
        );
        report(&self.meters, &self.status);
    }

    /// Releases the delivery once `wait` has passed (its lease now ends then).
    async fn release_after(
        &self,
        opened: OpenedHandles,
        wait: Duration,
    ) -> Result<Vec<crate::core::model::HandleOutcome>, crate::core::GatewayError> {
        // Whole seconds, rounded up: a backoff never ends sooner than it says.
        let seconds = u32::try_from(wait.as_millis().div_ceil(1000)).unwrap_or(u32::MAX);
        let queue = Some(self.subscription.queue.as_str());
        self.gateway
            .change_visibility_opened(&self.caller, opened, &[seconds], queue)
            .await
    }
}

/// Shows `status` in the gauges.
fn report(meters: &PushMeters, status: &Status) {
    let (in_flight, failures, disabled) = status.gauges();
    meters.state(in_flight, failures, disabled);
}
