//! Messages in and out: sends (content rules, packed attributes) and receives (long polls,
//! sealing; attempt replays in `attempts.rs`, dead-letter sources in `dead_letter_source.rs`).

use super::Attempted;
use super::Gateway;
use super::ReceiveOptions;
use super::attempts::{Hand, Replay, attempt_key, replay_key};
use super::finishing::Finishing;
use super::handoff::Held;
use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::attributes;
use crate::core::backend::{Backend, BackendError};
use crate::core::delivery_pause::AfterPause;
use crate::core::handle::{ClaimsToSeal, HandleClaims};
use crate::core::limits::STATE_RETRY_AFTER;
use crate::core::message_rules;
use crate::core::model::BackendMessage;
use crate::core::model::BackendReceive;
use crate::core::model::Delivery;
use crate::core::model::EntryError;
use crate::core::model::EntryOutcome;
use crate::core::model::ExpiredVisibility;
use crate::core::model::OutgoingMessage;
use crate::core::model::PeekedMessage;
use crate::core::model::ResolvedQueue;
use crate::core::model::SentMessage;
use crate::core::operation::Operation;
use crate::core::spans::{self, Messaging};
use crate::core::state::{DeliveryKey, NewDelivery};
use chrono::Duration as ChronoDuration;
use chrono::{DateTime, SubsecRound as _, Utc};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio_util::sync::CancellationToken;

impl Gateway {
    /// Sends messages to the gateway queue `queue`; one result per message, in order.
    pub async fn send(
        &self,
        caller: &Caller,
        queue: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, GatewayError> {
        let span = spans::messaging(Messaging::Send, Some(queue), messages.len());
        let sent = spans::traced(span, self.send_checked(caller, queue, messages)).await?;
        self.count_sends(queue, &sent);
        Ok(sent)
    }

    async fn send_checked(
        &self,
        caller: &Caller,
        queue: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<Result<SentMessage, EntryError>>, GatewayError> {
        self.admit(caller, Operation::Send, queue)?;
        let resolved = self.registry.get(queue).await?;
        // SQS's content rules, whatever the backend (LocalStack does not enforce them all), and the
        // queue's size limit counted on the attributes as sent (however they are stored).
        let max_bytes = resolved.attributes.max_message_bytes as usize;
        let checks: Vec<Result<(), EntryError>> = messages
            .iter()
            .map(|message| {
                message_rules::check_message(message)?;
                let size = message_rules::size(&message.body, &message.attributes);
                if size > max_bytes {
                    return Err(message_rules::too_long(max_bytes));
                }
                Ok(())
            })
            .collect();
        let packing = messages
            .iter()
            .any(|message| attributes::needs_packing(&message.attributes));
        if checks.iter().all(Result::is_ok) && !packing {
            let answer = self.backend.send_batch(&resolved.url, messages).await;
            return self.settle(queue, answer).await;
        }
        let valid: Vec<OutgoingMessage> = messages
            .iter()
            .zip(&checks)
            .filter(|(_, check)| check.is_ok())
            .map(|(message, _)| OutgoingMessage {
                attributes: attributes::pack(&message.attributes),
                ..message.clone()
            })
            .collect();
        let mut sent = if valid.is_empty() {
            Vec::new()
        } else {
            let answer = self.backend.send_batch(&resolved.url, &valid).await;
            self.settle(queue, answer).await?
        }
        .into_iter();
        checks
            .into_iter()
            .map(|check| match check {
                Err(refused) => Ok(Err(refused)),
                Ok(()) => sent
                    .next()
                    .ok_or_else(|| GatewayError::internal("the backend answered fewer entries")),
            })
            .collect()
    }
    /// Up to `max` messages of `queue` without a lease, from the one after position `after`:
    /// visibility and receive counts stay as they are. A backend that cannot (SQS) answers
    /// `Unsupported`, never a receive in disguise.
    pub async fn peek(
        &self,
        caller: &Caller,
        queue: &str,
        after: Option<u64>,
        max: usize,
    ) -> Result<Vec<PeekedMessage>, GatewayError> {
        self.admit(caller, Operation::Peek, queue)?;
        let resolved = self.registry.get(queue).await?;
        let answer = self.backend.peek(&resolved.url, after, max).await;
        let mut peeked = self.settle(queue, answer).await?;
        for each in &mut peeked {
            let attributes = std::mem::take(&mut each.message.attributes);
            each.message.attributes = attributes::unpack(attributes);
        }
        Ok(peeked)
    }

    /// Receives messages from the gateway queue `queue`.
    ///
    /// The backend call, the ledger records and the sealing run as one piece of work that finishes
    /// even when nobody waits for its answer any more (the client went away, or shutdown answered
    /// it empty). Such a receive takes nothing more where the backend can end its wait (the
    /// embedded engine), and what it took anyway is given back uncounted, or, on a backend that
    /// counts every take (SQS), handed to the next receive of the queue: a delivery attempt is
    /// spent only on a delivery a client got.
    pub async fn receive(
        self: &Arc<Self>,
        caller: &Caller,
        queue: &str,
        options: ReceiveOptions,
    ) -> Result<Vec<Delivery>, GatewayError> {
        let span = spans::messaging(Messaging::Receive, Some(queue), 0);
        let received = spans::traced(
            span.clone(),
            self.receive_deliveries(caller, queue, options),
        )
        .await;
        if let Ok(deliveries) = &received {
            spans::received(&span, deliveries.iter().map(|delivery| &delivery.message));
        }
        received
    }

    /// [`Gateway::receive`], in its span.
    async fn receive_deliveries(
        self: &Arc<Self>,
        caller: &Caller,
        queue: &str,
        options: ReceiveOptions,
    ) -> Result<Vec<Delivery>, GatewayError> {
        self.admit(caller, Operation::Receive, queue)?;
        if self.shutdown.is_cancelled() {
            return Ok(Vec::new());
        }
        // Boxed, and only for a paused queue: no other receive holds or allocates this wait.
        let options = if self.pauses.is_paused(queue) {
            match Box::pin(self.wait_while_paused(queue, options)).await? {
                Some(options) => options,
                None => return Ok(Vec::new()),
            }
        } else {
            options
        };
        // Cancelled when this request is dropped or answered: the work below, if still running,
        // then knows that nobody waits for it.
        let abandoned = CancellationToken::new();
        let _abandon_when_dropped = abandoned.clone().drop_guard();
        // Boxed, as is everything around the wait: a waiting receive's futures hold only what
        // the wait needs (ten thousand idle long polls are ten thousand of them).
        let PreparedReceive {
            resolved,
            attempt,
            request,
            wait_out_over_limit,
            keep_claims,
        } = match Box::pin(self.prepare_receive(caller, queue, options, abandoned)).await? {
            Prepared::Replayed(deliveries) => return Ok(deliveries),
            Prepared::Receive(prepared) => prepared,
        };

        let gateway = Arc::clone(self);
        let url = resolved.url.clone();
        let resolved_url = url.clone();
        let keeps_answer = request.attempt_id.is_some();
        let queue_name = queue;
        let queue = queue.to_owned();
        let work = async move {
            let result = gateway
                .receive_and_seal(
                    &queue,
                    &resolved,
                    &request,
                    wait_out_over_limit,
                    keep_claims,
                )
                .await;
            if let (Some(key), Ok((deliveries, attempted))) = (attempt, &result)
                && !deliveries.is_empty()
            {
                // Kept even when nobody waits for the answer: the retry gets it.
                Box::pin(gateway.keep_answer(&key, attempted)).await;
            }
            let result = result.map(|(deliveries, _)| deliveries);
            if let Ok(deliveries) = &result {
                gateway.count_deliveries(&queue, deliveries);
            }
            result
        };
        let owner = Arc::clone(self);
        let receiving = Finishing::new(&self.tasks, work, move |result| async move {
            match result {
                // With an attempt id the client retries to get these same deliveries back.
                Ok(deliveries) if !keeps_answer => owner.give_back(&url, deliveries).await,
                _ => owner.meters.abandoned_receive("kept_for_retry"),
            }
        });
        let received = tokio::select! {
            biased;
            result = receiving => result,
            // The receive, dropped here unfinished, finishes on its own and releases what it got.
            () = self.shutdown.cancelled() => Ok(Vec::new()),
        };
        match received {
            // Paused while the backend waited: what it took is given back, not delivered.
            Ok(deliveries)
                if !deliveries.is_empty() && !keeps_answer && self.pauses.is_paused(queue_name) =>
            {
                Box::pin(self.give_back(&resolved_url, deliveries)).await;
                Ok(Vec::new())
            }
            other => other,
        }
    }

    /// While `queue` is paused, waits out the receive's long poll or the pause, whichever ends
    /// first: `None` when the receive answers no message, else the options with what is left of
    /// its wait.
    async fn wait_while_paused(
        &self,
        queue: &str,
        mut options: ReceiveOptions,
    ) -> Result<Option<ReceiveOptions>, GatewayError> {
        let wait = match options.wait_seconds {
            Some(wait) => wait,
            None => {
                self.registry
                    .get(queue)
                    .await?
                    .attributes
                    .receive_wait_seconds
            }
        };
        let after = tokio::select! {
            biased;
            () = self.shutdown.cancelled() => return Ok(None),
            after = self.pauses.wait_out(queue, std::time::Duration::from_secs(wait.into())) => after,
        };
        Ok(match after {
            AfterPause::StillPaused => None,
            AfterPause::Deliver(left) => {
                options.wait_seconds = Some(u32::try_from(left.as_secs()).unwrap_or(wait));
                Some(options)
            }
        })
    }

    /// Resolves the queue and, for a retried attempt id, replays the earlier answer if any of it
    /// is still the caller's; else the backend receive to make.
    async fn prepare_receive(
        &self,
        caller: &Caller,
        queue: &str,
        options: ReceiveOptions,
        abandoned: CancellationToken,
    ) -> Result<Prepared, GatewayError> {
        let resolved = self.registry.get(queue).await?;
        let attempt = options
            .attempt_id
            .as_deref()
            .map(|id| attempt_key(queue, id, caller.principal()));
        if let Some(key) = &attempt
            && let Some(answered) = self.kept_answer(key).await?
        {
            let visibility = options
                .visibility_timeout_seconds
                .unwrap_or(resolved.attributes.visibility_timeout_seconds);
            let replayed = self.replay(queue, &resolved, &answered, visibility).await?;
            if !replayed.is_empty() {
                return Ok(Prepared::Replayed(replayed));
            }
            // Nothing of that answer is still the caller's: this is a new receive. Should the
            // store fail to forget it now, the new answer is not kept, and the next retry finds
            // this one's deliveries over again and forgets it then.
            let forgotten = self.state.forget_answer(key).await;
            self.state_logged("forget_answer", forgotten);
        }
        let request = BackendReceive {
            max_messages: options.max_messages,
            wait_seconds: options
                .wait_seconds
                .unwrap_or(resolved.attributes.receive_wait_seconds),
            visibility_timeout_seconds: options
                .visibility_timeout_seconds
                .unwrap_or(resolved.attributes.visibility_timeout_seconds),
            attempt_id: options.attempt_id,
            one_per_group: options.one_per_group,
            abandoned,
        };
        Ok(Prepared::Receive(PreparedReceive {
            resolved,
            attempt,
            request,
            wait_out_over_limit: options.wait_out_over_limit,
            keep_claims: options.keep_claims,
        }))
    }

    /// Receives from the backend and seals a handle per delivery; with an attempt id, also what a
    /// retry needs to give the same answer.
    async fn receive_and_seal(
        &self,
        queue: &str,
        resolved: &ResolvedQueue,
        request: &BackendReceive,
        wait_out_over_limit: bool,
        keep_claims: bool,
    ) -> Result<(Vec<Delivery>, Vec<Attempted>), GatewayError> {
        let sealed = Sealing {
            queue,
            resolved,
            request,
            keep_claims,
        };
        let deadline = tokio::time::Instant::now()
            + std::time::Duration::from_secs(request.wait_seconds.into());
        if let Some((received_at, handed)) = Box::pin(self.handed_on(resolved, request)).await {
            return Box::pin(self.seal_received(&sealed, received_at, Ok(handed))).await;
        }
        let _waiting = (request.wait_seconds > 0).then(|| self.meters.long_poll());
        let (received_at, answer) = loop {
            // Taken before the backend call, so our 12-hour mark is never later than the backend's.
            let received_at = self.clock.now();
            let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
            // Whole seconds, rounded up: the first look waits exactly the requested time.
            let seconds = rest.as_secs() + u64::from(rest.subsec_nanos() > 0);
            let attempt = BackendReceive {
                wait_seconds: u32::try_from(seconds).unwrap_or(request.wait_seconds),
                ..request.clone()
            };
            match self.backend_receive(&resolved.url, &attempt).await {
                Err(BackendError::OverLimit) if wait_out_over_limit => {
                    if rest.is_zero() {
                        tracing::warn!(queue, "too many messages in flight; answering none");
                        return Ok((Vec::new(), Vec::new()));
                    }
                    // Room frees when deliveries end; look again shortly, within the wait.
                    // Boxed: the rare pause would otherwise widen every waiting receive.
                    let paused = Box::pin(async {
                        tokio::select! {
                            () = tokio::time::sleep(rest.min(OVER_LIMIT_RETRY)) => true,
                            () = self.shutdown.cancelled() => false,
                            () = request.abandoned.cancelled() => false,
                        }
                    });
                    if !paused.await {
                        return Ok((Vec::new(), Vec::new()));
                    }
                }
                answer => break (received_at, answer),
            }
        };
        // What an abandoned receive took while this one waited at the backend is held now:
        // this one gets it, rather than answering empty with a message in hand.
        if request.wait_seconds > 0
            && matches!(&answer, Ok(messages) if messages.is_empty())
            && let Some((received_at, handed)) = Box::pin(self.handed_on(resolved, request)).await
        {
            return Box::pin(self.seal_received(&sealed, received_at, Ok(handed))).await;
        }
        Box::pin(self.seal_received(&sealed, received_at, answer)).await
    }

    /// Seals a handle per received message (recording each delivery in the ledger) and, with an
    /// attempt id, keeps what a retry needs to give the same answer.
    async fn seal_received(
        &self,
        sealing: &Sealing<'_>,
        received_at: DateTime<Utc>,
        answer: Result<Vec<BackendMessage>, BackendError>,
    ) -> Result<(Vec<Delivery>, Vec<Attempted>), GatewayError> {
        let Sealing {
            queue,
            resolved,
            request,
            keep_claims,
        } = *sealing;
        let messages = self.settle(queue, answer).await?;
        let dead_letter_source = self.dead_letter_source(resolved, &messages).await;
        // Each message's earlier handle (a backend replaying an attempt id) or a fresh delivery
        // id; the fresh ones are recorded in the ledger in one call, before any handle is out.
        let mut handed = Vec::with_capacity(messages.len());
        for mut message in messages {
            // As the client sent them, however the backend holds them.
            message.attributes = attributes::unpack(message.attributes);
            // Only a receive with an attempt id keeps or looks up replays.
            let replay_key = request
                .attempt_id
                .as_ref()
                .map(|_| replay_key(queue, &message.backend_handle));
            let replayed = match &replay_key {
                Some(key) => self.backend_replay(queue, &message, key).await,
                None => None,
            };
            let hand = replayed.map_or_else(|| Hand::Fresh(rand::random()), Hand::Replayed);
            handed.push((message, replay_key, hand));
        }
        let fresh: Vec<NewDelivery<'_>> = handed
            .iter()
            .filter_map(|(message, _, hand)| match hand {
                Hand::Fresh(delivery_id) => Some(NewDelivery {
                    key: DeliveryKey {
                        queue,
                        message_id: &message.message_id,
                        delivery_id: *delivery_id,
                    },
                    receive_count: message.receive_count,
                }),
                Hand::Replayed(_) => None,
            })
            .collect();
        if !fresh.is_empty()
            && let Err(error) = self.state.record_deliveries(&fresh).await
        {
            // No handle may go out that the ledger does not know: what was taken goes back
            // (uncounted where the backend can) and the request answers unavailable.
            self.meters
                .state_error("record_deliveries", "refused", &error);
            let lease_ends = received_at
                + ChronoDuration::seconds(i64::from(request.visibility_timeout_seconds));
            let taken = handed
                .into_iter()
                .map(|(message, _, _)| Held {
                    lease_ends,
                    message,
                })
                .collect();
            self.give_back_taken(&resolved.url, taken).await;
            return Err(GatewayError::unavailable(STATE_RETRY_AFTER).with_source(error));
        }
        let mut deliveries = Vec::with_capacity(handed.len());
        let mut attempted = Vec::new();
        for (message, replay_key, hand) in handed {
            let mut claims = None;
            let (receipt_handle, delivery_id, first_received_at) = match hand {
                Hand::Replayed((delivery_id, at, handle)) => (handle, delivery_id, at),
                Hand::Fresh(delivery_id) => {
                    // As the handle says them: its time is kept to the millisecond.
                    claims = keep_claims.then(|| HandleClaims {
                        queue: queue.to_owned(),
                        message_id: message.message_id.clone(),
                        backend_handle: message.backend_handle.clone(),
                        delivery: message.receive_count,
                        received_at: received_at.trunc_subsecs(3),
                        delivery_id,
                    });
                    let handle = self.keyring.seal(ClaimsToSeal {
                        queue,
                        message_id: &message.message_id,
                        backend_handle: &message.backend_handle,
                        delivery: message.receive_count,
                        received_at,
                        delivery_id,
                    });
                    if let Some(replay_key) = &replay_key {
                        let replay = Replay {
                            delivery_id,
                            received_at,
                            handle: handle.clone(),
                        };
                        if let Ok(bytes) = postcard::to_allocvec(&replay) {
                            // Not kept: a retry of the attempt receives anew (at least once).
                            let sealed = self.kept_seal.seal(replay_key, &bytes);
                            let kept = self.state.keep_answer(replay_key, sealed).await;
                            self.state_logged("keep_answer", kept);
                        }
                    }
                    (handle, delivery_id, received_at)
                }
            };
            let dead_letter = dead_letter_source.info(&message);
            let delivery = Delivery {
                message,
                receipt_handle,
                dead_letter,
                visible_at: received_at
                    + ChronoDuration::seconds(i64::from(request.visibility_timeout_seconds)),
                claims,
            };
            if request.attempt_id.is_some() {
                attempted.push(Attempted {
                    // A replay opens the handle it gives: claims are this answer's alone.
                    delivery: Delivery {
                        claims: None,
                        ..delivery.clone()
                    },
                    delivery_id,
                    received_at: first_received_at,
                });
            }
            deliveries.push(delivery);
        }
        Ok((deliveries, attempted))
    }
}

/// How often a receive that waits out an over-limit queue looks again.
const OVER_LIMIT_RETRY: std::time::Duration = std::time::Duration::from_millis(200);

/// What a receive does once its queue is resolved: answer a replay, or ask the backend.
enum Prepared {
    Replayed(Vec<Delivery>),
    Receive(PreparedReceive),
}

/// A receive to make: its queue, the key its answer is kept under (with an attempt id), the
/// backend request, and whether a full queue is waited out.
struct PreparedReceive {
    resolved: Arc<ResolvedQueue>,
    attempt: Option<String>,
    request: BackendReceive,
    wait_out_over_limit: bool,
    keep_claims: bool,
}

/// What a receive's handles are sealed for: the queue, and whether each fresh delivery carries
/// its claims too.
#[derive(Clone, Copy)]
struct Sealing<'a> {
    queue: &'a str,
    resolved: &'a ResolvedQueue,
    request: &'a BackendReceive,
    keep_claims: bool,
}

/// Backend receives left running for clients that went away (on a backend that cannot end its
/// wait without taking, SQS) at which new backend receives stop long-polling, unless configured
/// otherwise: they look once and answer (a call already made is never cut, since what SQS took
/// for it would be hidden and counted), so no more than about this many outlive their clients by
/// more than one look.
pub(super) const MAX_ABANDONED_RUNNING: usize = 1_000;

/// One backend receive still running for a client that went away; counted while it lives.
struct AbandonedRunning<'a>(&'a AtomicUsize);

impl<'a> AbandonedRunning<'a> {
    /// Counts one more while it lives.
    fn enter(running: &'a AtomicUsize) -> Self {
        running.fetch_add(1, Ordering::Relaxed);
        Self(running)
    }
}

impl Drop for AbandonedRunning<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gateway {
    /// The backend receive. Once nobody waits for it, it counts among the abandoned ones still
    /// running (and runs to its end); while the bound's number run ([`MAX_ABANDONED_RUNNING`]
    /// unless configured), a new one looks once instead of long-polling.
    async fn backend_receive(
        &self,
        url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let short = (request.wait_seconds > 0
            && self.abandoned_running.load(Ordering::Relaxed) >= self.abandoned_bound)
            .then(|| {
                self.meters.abandoned_receive("bound_short_poll");
                BackendReceive {
                    wait_seconds: 0,
                    ..request.clone()
                }
            });
        let call = self.backend.receive(url, short.as_ref().unwrap_or(request));
        tokio::pin!(call);
        tokio::select! {
            biased;
            answer = &mut call => return answer,
            () = request.abandoned.cancelled() => {}
        }
        let _running = AbandonedRunning::enter(&self.abandoned_running);
        call.await
    }

    /// Deliveries held for the next receive of this queue, if any: extended to this receive's
    /// visibility timeout under their backend receipt, and answered with the time of the change.
    async fn handed_on(
        &self,
        resolved: &ResolvedQueue,
        request: &BackendReceive,
    ) -> Option<(DateTime<Utc>, Vec<BackendMessage>)> {
        let now = self.clock.now();
        let held = self
            .handoff
            .take(&resolved.url, request.max_messages as usize, now);
        if held.is_empty() {
            return None;
        }
        let entries: Vec<(&str, u32)> = held
            .iter()
            .map(|held| {
                (
                    held.message.backend_handle.as_str(),
                    request.visibility_timeout_seconds,
                )
            })
            .collect();
        let outcomes = match self
            .backend
            .change_visibility_batch(&resolved.url, &entries, ExpiredVisibility::Refuse)
            .await
        {
            Ok(outcomes) => outcomes,
            Err(error) => {
                tracing::warn!(
                    count = held.len(),
                    %error,
                    "could not hand on messages of an abandoned receive; they reappear after their visibility timeout"
                );
                return None;
            }
        };
        let messages: Vec<BackendMessage> = held
            .into_iter()
            .zip(outcomes)
            .filter(|(_, outcome)| *outcome == EntryOutcome::Ok)
            .map(|(held, _)| held.message)
            .collect();
        (!messages.is_empty()).then_some((now, messages))
    }

    /// What a receive got for a client that went away: given back uncounted where the backend
    /// can, else held for the next receive of the queue (past the hold's bound, released).
    async fn give_back(&self, url: &str, deliveries: Vec<Delivery>) {
        if deliveries.is_empty() {
            self.meters.abandoned_receive("nothing_taken");
            return;
        }
        let taken = deliveries
            .into_iter()
            .map(|delivery| Held {
                lease_ends: delivery.visible_at,
                message: delivery.message,
            })
            .collect();
        self.give_back_taken(url, taken).await;
    }

    /// Messages taken that no client got: given back uncounted where the backend can, else held
    /// for the next receive of the queue (past the hold's bound, released).
    async fn give_back_taken(&self, url: &str, taken: Vec<Held>) {
        let handles: Vec<&str> = taken
            .iter()
            .map(|held| held.message.backend_handle.as_str())
            .collect();
        match self.backend.return_undelivered(url, &handles).await {
            Ok(_) => {
                self.meters.abandoned_receive("given_back");
                tracing::info!(
                    count = taken.len(),
                    "gave back messages no client got, uncounted"
                );
            }
            Err(BackendError::Unsupported(_)) => {
                self.meters.abandoned_receive("handed_on");
                let over = self.handoff.hold(url, taken);
                tracing::info!("holding messages no client got for the next receive");
                release(self.backend.as_ref(), url, &over).await;
            }
            Err(error) => tracing::warn!(
                count = taken.len(),
                %error,
                "could not give back messages no client got; they reappear after their visibility timeout"
            ),
        }
    }

    /// Releases (visibility 0) every delivery still held for a next receive (at shutdown).
    pub(super) async fn release_handed_on(&self) {
        for (url, held) in self.handoff.take_all() {
            release(self.backend.as_ref(), &url, &held).await;
        }
    }
}

/// Releases (visibility 0) held deliveries nobody will be handed; their take stays counted.
async fn release(backend: &dyn Backend, url: &str, held: &[Held]) {
    for chunk in held.chunks(10) {
        let entries: Vec<(&str, u32)> = chunk
            .iter()
            .map(|held| (held.message.backend_handle.as_str(), 0))
            .collect();
        match backend
            .change_visibility_batch(url, &entries, ExpiredVisibility::Refuse)
            .await
        {
            Ok(_) => tracing::info!(
                count = chunk.len(),
                "released messages of an abandoned receive"
            ),
            Err(error) => tracing::warn!(
                count = chunk.len(),
                %error,
                "could not release messages of an abandoned receive; they reappear after their visibility timeout"
            ),
        }
    }
}
