//! Deliveries by their handles: acknowledgements and visibility changes, checked against the
//! ledger, with the 12-hour clamp.

use super::Gateway;
use super::MAX_IN_FLIGHT;
use super::finishing::Finishing;
use crate::core::ErrorKind;
use crate::core::GatewayError;
use crate::core::access::Action;
use crate::core::access::Caller;
use crate::core::backend::BackendError;
use crate::core::handle::HandleClaims;
use crate::core::model::HandleOutcome;
use crate::core::model::{EntryOutcome, ExpiredFifoHandles, ExpiredVisibility};
use crate::core::operation::Operation;
use crate::core::spans::{self, Messaging};
use crate::core::state::DeliveryKey;
use crate::core::state::ledger::Standing;
use crate::core::state::ledger::UnknownDeliveries;
use chrono::DateTime;
use chrono::Utc;
use std::collections::BTreeMap;
use std::sync::Arc;

impl Gateway {
    /// Opened claims, if they are of the expected queue (if one is), and of a queue where the
    /// caller may do `action` (else the handle is as good as invalid: it acts nowhere, and says
    /// nothing of the queue it names).
    fn admit_claims(
        caller: &Caller,
        action: Action,
        claims: Option<HandleClaims>,
        expected_queue: Option<&str>,
    ) -> Option<HandleClaims> {
        let claims = claims?;
        let expected = expected_queue.is_none_or(|queue| claims.queue == queue);
        (expected && caller.may(action, &claims.queue)).then_some(claims)
    }
    /// Checks the queue a handle request addresses, if it addresses one, as a whole.
    fn admit_handles(
        &self,
        caller: &Caller,
        operation: Operation,
        expected_queue: Option<&str>,
    ) -> Result<(), GatewayError> {
        match expected_queue {
            Some(queue) => self.admit(caller, operation, queue),
            None => {
                operation.record();
                Ok(())
            }
        }
    }
    /// Opens handles once, for a dialect that looks at them (how many are invalid) before they
    /// act with [`Gateway::acknowledge_opened`].
    pub fn open_handles<'h>(&self, handles: impl Iterator<Item = &'h str>) -> OpenedHandles {
        OpenedHandles(
            handles
                .map(|handle| self.keyring.open(handle).ok())
                .collect(),
        )
    }
    /// Acknowledges (deletes) deliveries by their sealed handles; one outcome per handle, in order.
    ///
    /// Once claimed in the ledger, the backend call and its settlement run as a task of their own,
    /// so a client that goes away mid-request cannot leave a handle half-acknowledged.
    ///
    /// With `expected_queue` (a dialect that addresses a queue), a handle of another queue is
    /// `Invalid` and acts nowhere.
    pub async fn acknowledge(
        self: &Arc<Self>,
        caller: &Caller,
        handles: &[String],
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        self.acknowledge_by(caller, handles, expected_queue, ExpiredFifoHandles::Delete)
            .await
    }
    /// [`Gateway::acknowledge`], saying what the handle of an expired FIFO delivery does (the SQS
    /// endpoint refuses it, as SQS does: [`HandleOutcome::Expired`]).
    pub async fn acknowledge_by(
        self: &Arc<Self>,
        caller: &Caller,
        handles: &[String],
        expected_queue: Option<&str>,
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let open = || self.open_handles(handles.iter().map(String::as_str));
        self.acknowledge_in_span(caller, handles.len(), open, expected_queue, expired)
            .await
    }
    /// [`Gateway::acknowledge`] of handles opened with [`Gateway::open_handles`].
    pub async fn acknowledge_opened(
        self: &Arc<Self>,
        caller: &Caller,
        opened: OpenedHandles,
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let count = opened.0.len();
        let expired = ExpiredFifoHandles::Delete;
        self.acknowledge_in_span(caller, count, || opened, expected_queue, expired)
            .await
    }
    /// An acknowledgement in its span: the caller admitted, then the handles `open` gives
    /// (`count` of them) acted on.
    async fn acknowledge_in_span(
        self: &Arc<Self>,
        caller: &Caller,
        count: usize,
        open: impl FnOnce() -> OpenedHandles,
        expected_queue: Option<&str>,
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let span = spans::messaging(Messaging::Ack, expected_queue, count);
        let acknowledged = async {
            self.admit_handles(caller, Operation::Acknowledge, expected_queue)?;
            self.apply_acknowledge(caller, open(), expected_queue, expired)
                .await
        };
        spans::traced(span, acknowledged).await
    }
    async fn apply_acknowledge(
        self: &Arc<Self>,
        caller: &Caller,
        opened: OpenedHandles,
        expected_queue: Option<&str>,
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut outcomes = vec![HandleOutcome::Stale; opened.0.len()];
        let entries = opened.0.into_iter().map(|claims| (claims, ()));
        let by_queue = self
            .admitted(
                caller,
                Action::Acknowledge,
                entries,
                expected_queue,
                &mut outcomes,
                false,
            )
            .await?;
        let gateway = Arc::clone(self);
        let work = async move { gateway.apply_acks(by_queue, outcomes, expired).await };
        // Nobody is left to tell the outcomes to.
        Finishing::new(&self.tasks, work, |_| async {}).await
    }
    async fn apply_acks(
        &self,
        by_queue: BTreeMap<String, Vec<(usize, HandleClaims, ())>>,
        mut outcomes: Vec<HandleOutcome>,
        expired: ExpiredFifoHandles,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut first_error = None;
        for (queue, entries) in by_queue {
            let backend_handles: Vec<&str> = entries
                .iter()
                .map(|(_, claims, ())| claims.backend_handle.as_str())
                .collect();
            let result = self
                .batch_on_backend(&queue, |url| async move {
                    self.backend
                        .delete_batch(&url, &backend_handles, expired)
                        .await
                })
                .await;
            match result {
                Ok(results) => {
                    let (mut ended, mut aborted) = (Vec::new(), Vec::new());
                    for ((index, claims, ()), result) in entries.iter().zip(results) {
                        match result {
                            EntryOutcome::Ok => {
                                ended.push(claims);
                                outcomes[*index] = HandleOutcome::Ok;
                            }
                            EntryOutcome::Gone | EntryOutcome::NotInFlight => ended.push(claims),
                            // The message stays for the next receive; this delivery is over.
                            EntryOutcome::Expired => {
                                ended.push(claims);
                                outcomes[*index] = HandleOutcome::Expired;
                            }
                            EntryOutcome::Failed(detail) => {
                                aborted.push(claims);
                                first_error.get_or_insert_with(|| entry_failure(detail));
                            }
                        }
                    }
                    self.finish_acks(ended.into_iter()).await;
                    self.abort_acks(aborted.into_iter()).await;
                }
                Err(error) if error.kind == ErrorKind::QueueNotFound => {
                    self.finish_acks(entries.iter().map(|(_, claims, ())| claims))
                        .await;
                }
                Err(error) => {
                    self.abort_acks(entries.iter().map(|(_, claims, ())| claims))
                        .await;
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(outcomes),
        }
    }
    /// Sets how long deliveries stay in flight, counted from now; one outcome per entry, in order.
    ///
    /// An extension past 12 hours from the delivery's receive ends at that mark.
    /// With `expected_queue`, as for [`Gateway::acknowledge`].
    pub async fn change_visibility(
        self: &Arc<Self>,
        caller: &Caller,
        entries: &[(String, u32)],
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        self.change_visibility_by(caller, entries, expected_queue, ExpiredVisibility::Refuse)
            .await
    }
    /// [`Gateway::change_visibility`], saying what a delivery whose timeout ended does (the SQS
    /// endpoint hides it again, as SQS does; the REST dialects refuse to extend an ended lease).
    pub async fn change_visibility_by(
        self: &Arc<Self>,
        caller: &Caller,
        entries: &[(String, u32)],
        expected_queue: Option<&str>,
        expired: ExpiredVisibility,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let seconds: Vec<u32> = entries.iter().map(|(_, seconds)| *seconds).collect();
        let open = || self.open_handles(entries.iter().map(|(handle, _)| handle.as_str()));
        self.change_visibility_in_span(caller, open, &seconds, expected_queue, expired)
            .await
    }
    /// [`Gateway::change_visibility`] of handles opened with [`Gateway::open_handles`], each
    /// with its seconds (in the same order).
    pub async fn change_visibility_opened(
        self: &Arc<Self>,
        caller: &Caller,
        opened: OpenedHandles,
        seconds: &[u32],
        expected_queue: Option<&str>,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let expired = ExpiredVisibility::Refuse;
        self.change_visibility_in_span(caller, || opened, seconds, expected_queue, expired)
            .await
    }
    /// A visibility change in its span: the caller admitted, then the handles `open` gives (one
    /// per entry of `seconds`) acted on.
    async fn change_visibility_in_span(
        self: &Arc<Self>,
        caller: &Caller,
        open: impl FnOnce() -> OpenedHandles,
        seconds: &[u32],
        expected_queue: Option<&str>,
        expired: ExpiredVisibility,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let operation = visibility_operation(seconds);
        let span = spans::messaging(operation, expected_queue, seconds.len());
        let changed = async {
            self.admit_handles(caller, Operation::ChangeVisibility, expected_queue)?;
            self.apply_change_visibility(caller, open(), seconds, expected_queue, expired)
                .await
        };
        spans::traced(span, changed).await
    }
    async fn apply_change_visibility(
        self: &Arc<Self>,
        caller: &Caller,
        opened: OpenedHandles,
        seconds: &[u32],
        expected_queue: Option<&str>,
        expired: ExpiredVisibility,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut outcomes = vec![HandleOutcome::Stale; seconds.len()];
        let requested = opened.0.into_iter().zip(seconds.iter().copied());
        let mut by_queue = self
            .admitted(
                caller,
                Action::ChangeVisibility,
                requested,
                expected_queue,
                &mut outcomes,
                // As on SQS, an earlier delivery's handle changes the current delivery's
                // visibility (an acknowledged message's the backend finds gone).
                expired == ExpiredVisibility::Change,
            )
            .await?;
        // Clamped now: the 12 hours count from each delivery's receive.
        let now = self.clock.now();
        for (_, claims, seconds) in by_queue.values_mut().flatten() {
            *seconds = clamp_visibility(*seconds, claims.received_at, now);
        }
        let gateway = Arc::clone(self);
        let work = async move { gateway.apply_visibility(by_queue, outcomes, expired).await };
        // Nobody is left to tell the outcomes to.
        Finishing::new(&self.tasks, work, |_| async {}).await
    }
    /// One backend batch call on `queue` (`call` with its URL), its answer settled: a queue the
    /// backend no longer has leaves the registry.
    async fn batch_on_backend<R>(
        &self,
        queue: &str,
        call: impl FnOnce(String) -> R,
    ) -> Result<Vec<EntryOutcome>, GatewayError>
    where
        R: Future<Output = Result<Vec<EntryOutcome>, BackendError>>,
    {
        let resolved = self.registry.get(queue).await?;
        let answer = call(resolved.url.clone()).await;
        self.settle(queue, answer).await
    }
    async fn apply_visibility(
        &self,
        by_queue: BTreeMap<String, Vec<(usize, HandleClaims, u32)>>,
        mut outcomes: Vec<HandleOutcome>,
        expired: ExpiredVisibility,
    ) -> Result<Vec<HandleOutcome>, GatewayError> {
        let mut first_error = None;
        for (queue, entries) in by_queue {
            let backend_entries: Vec<(&str, u32)> = entries
                .iter()
                .map(|(_, claims, timeout)| (claims.backend_handle.as_str(), *timeout))
                .collect();
            let result = self
                .batch_on_backend(&queue, |url| async move {
                    self.backend
                        .change_visibility_batch(&url, &backend_entries, expired)
                        .await
                })
                .await;
            match result {
                Ok(results) => {
                    let mut gone = Vec::new();
                    for ((index, claims, timeout), result) in entries.iter().zip(results) {
                        outcomes[*index] = match result {
                            EntryOutcome::Ok => HandleOutcome::Ok,
                            // Already visible: a release asked for exactly that; an extension
                            // cannot apply, but the handle may still acknowledge.
                            EntryOutcome::NotInFlight if *timeout == 0 => HandleOutcome::Ok,
                            EntryOutcome::NotInFlight | EntryOutcome::Expired => {
                                HandleOutcome::Stale
                            }
                            EntryOutcome::Gone => {
                                gone.push(claims);
                                HandleOutcome::Stale
                            }
                            EntryOutcome::Failed(detail) => {
                                first_error.get_or_insert_with(|| entry_failure(detail));
                                HandleOutcome::Stale
                            }
                        };
                    }
                    self.finish_acks(gone.into_iter()).await;
                }
                Err(error) if error.kind == ErrorKind::QueueNotFound => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(outcomes),
        }
    }
    /// Takes each entry's opened handle (`None`: not one of ours) and asks the ledger whether it
    /// may act (an acknowledgement claims it, once): those that may, grouped by queue with their
    /// index and `extra`. A handle that is not one of ours (or not for this caller and queue) is
    /// `Invalid` in `outcomes`; one that may not act keeps the outcome it has (stale). With
    /// `stale_acts`, a handle the ledger calls stale goes to the backend too, which acts on the
    /// message's current delivery if it still has one.
    async fn admitted<T>(
        &self,
        caller: &Caller,
        action: Action,
        entries: impl Iterator<Item = (Option<HandleClaims>, T)>,
        expected_queue: Option<&str>,
        outcomes: &mut [HandleOutcome],
        stale_acts: bool,
    ) -> Result<BTreeMap<String, Vec<(usize, HandleClaims, T)>>, GatewayError> {
        let mut candidates = Vec::new();
        for (index, (claims, extra)) in entries.enumerate() {
            let Some(claims) = Self::admit_claims(caller, action, claims, expected_queue) else {
                outcomes[index] = HandleOutcome::Invalid;
                self.meters.invalid_handles(action_name(action), 1);
                continue;
            };
            if self.registry.contains(&claims.queue) {
                candidates.push((index, claims, extra));
            }
        }
        let keys: Vec<DeliveryKey<'_>> = candidates
            .iter()
            .map(|(_, claims, _)| delivery_key(claims))
            .collect();
        // Without the ledger's answer nothing may act: the request answers unavailable and
        // nothing changed (an acknowledgement never guesses).
        let standings = match action {
            Action::Acknowledge => {
                let claimed = self.state.begin_acks(&keys).await;
                if claimed.is_err() {
                    self.undo_claims_later(&keys);
                }
                self.state_required("begin_acks", claimed)?
            }
            _ => {
                let standings = self.state.standings(&keys).await;
                self.state_required("standings", standings)?
            }
        };
        let mut by_queue: BTreeMap<String, Vec<(usize, HandleClaims, T)>> = BTreeMap::new();
        for (candidate, standing) in candidates.into_iter().zip(standings) {
            if (stale_acts && standing == Standing::Stale) || self.may_act(standing, &candidate.1) {
                by_queue
                    .entry(candidate.1.queue.clone())
                    .or_default()
                    .push(candidate);
            }
        }
        Ok(by_queue)
    }
    /// Whether a handle with this standing may act on the backend. An unknown delivery the
    /// ledger may have pushed out to stay within its size goes to the backend, whatever the
    /// policy: another caller's deliveries must not turn a current one's acknowledgement into
    /// one that changes nothing (the embedded engine acts only on a current delivery; SQS as it
    /// would without the gateway). So does any unknown delivery when the backend itself knows
    /// which delivery is current across restarts: a handle from before a restart then acts if,
    /// and only if, it is still the current one.
    fn may_act(&self, standing: Standing, claims: &HandleClaims) -> bool {
        match standing {
            Standing::Current => true,
            Standing::Stale => false,
            Standing::Unknown => {
                let policy = if self.unknown_deliveries == UnknownDeliveries::PassThrough {
                    "pass_through"
                } else if self.backend.knows_current_deliveries() {
                    "backend"
                } else if self.state.may_have_evicted_since(claims.received_at) {
                    "evicted"
                } else {
                    "stale"
                };
                self.meters.unknown_deliveries(policy, 1);
                policy != "stale"
            }
        }
    }
    /// The deliveries are over (acknowledged, or gone from the backend). Recorded after the
    /// answer, off the request's path: until then each delivery stands claimed, which answers
    /// stale as an ended one does. Shutdown waits for it.
    async fn finish_acks<'c>(&self, claims: impl Iterator<Item = &'c HandleClaims>) {
        let owned: Vec<(String, String, u64)> = claims
            .map(|claims| {
                (
                    claims.queue.clone(),
                    claims.message_id.clone(),
                    claims.delivery_id,
                )
            })
            .collect();
        if owned.is_empty() {
            return;
        }
        let (state, meters) = (Arc::clone(&self.state), self.meters.clone());
        self.tasks.spawn(async move {
            let keys: Vec<DeliveryKey<'_>> = owned
                .iter()
                .map(|(queue, message_id, delivery_id)| DeliveryKey {
                    queue,
                    message_id,
                    delivery_id: *delivery_id,
                })
                .collect();
            // The backend acted; a store that cannot record it ends them with their TTL (a
            // second acknowledgement meanwhile answers stale: the claim stands).
            if let Err(error) = state.end_deliveries(&keys).await {
                meters.state_error("end_deliveries", "logged", &error);
            }
        });
    }
    /// A claim the store did not confirm may still land once it answers (a store that stalls
    /// runs a command it received after the gateway stopped waiting): the 503 that follows
    /// changed nothing only if that claim is undone. An abort turns this delivery's claim, and
    /// nothing else, back into a current delivery, so it is sent until the store takes one, with
    /// a growing pause, for up to [`UNDO_CLAIMS_WITHIN`] or until shutdown. Sent on the same
    /// connection after the claim, it lands after it.
    fn undo_claims_later(&self, keys: &[DeliveryKey<'_>]) {
        let owned: Vec<(String, String, u64)> = keys
            .iter()
            .map(|key| {
                (
                    key.queue.to_owned(),
                    key.message_id.to_owned(),
                    key.delivery_id,
                )
            })
            .collect();
        if owned.is_empty() {
            return;
        }
        let (state, meters) = (Arc::clone(&self.state), self.meters.clone());
        let shutdown = self.shutdown.clone();
        self.tasks.spawn(async move {
            let keys: Vec<DeliveryKey<'_>> = owned
                .iter()
                .map(|(queue, message_id, delivery_id)| DeliveryKey {
                    queue,
                    message_id,
                    delivery_id: *delivery_id,
                })
                .collect();
            let give_up = tokio::time::Instant::now() + UNDO_CLAIMS_WITHIN;
            let mut pause = UNDO_FIRST_PAUSE;
            loop {
                match state.abort_acks(&keys).await {
                    Ok(()) => return,
                    Err(error) if tokio::time::Instant::now() >= give_up => {
                        meters.state_error("undo_claims", "logged", &error);
                        return;
                    }
                    Err(_) => {}
                }
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = shutdown.cancelled() => return,
                }
                pause = (pause * 2).min(UNDO_MOST_PAUSE);
            }
        });
    }
    /// The acknowledgements did not happen: the handles may act again.
    async fn abort_acks<'c>(&self, claims: impl Iterator<Item = &'c HandleClaims>) {
        let keys: Vec<DeliveryKey<'_>> = claims.map(delivery_key).collect();
        if !keys.is_empty() {
            // Left claimed in a store that cannot answer: the claim ends with its TTL, and the
            // message reappears after its visibility timeout for a new delivery.
            let aborted = self.state.abort_acks(&keys).await;
            self.state_logged("abort_acks", aborted);
        }
    }
}

/// How long the gateway tries to undo a claim the store did not confirm: a store that stalls
/// longer has dropped the connection, and the command with it, long before.
const UNDO_CLAIMS_WITHIN: std::time::Duration = std::time::Duration::from_secs(3600);
/// The first pause between two undo attempts, doubled each time up to [`UNDO_MOST_PAUSE`].
const UNDO_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);
const UNDO_MOST_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

/// The ledger's key of the delivery a handle names.
fn delivery_key(claims: &HandleClaims) -> DeliveryKey<'_> {
    DeliveryKey {
        queue: &claims.queue,
        message_id: &claims.message_id,
        delivery_id: claims.delivery_id,
    }
}

/// Handles opened by [`Gateway::open_handles`], in order; `None` where one is not a handle of this
/// gateway (or was altered). Its `Debug` shows only how many of each.
pub struct OpenedHandles(Vec<Option<HandleClaims>>);

impl OpenedHandles {
    /// The claims of a delivery received with [`super::ReceiveOptions::keep_claims`], as if its
    /// handle had been opened.
    pub(crate) fn claimed(claims: HandleClaims) -> Self {
        Self(vec![Some(claims)])
    }

    /// How many are not handles of this gateway (or were altered).
    pub fn invalid(&self) -> usize {
        self.0.iter().filter(|claims| claims.is_none()).count()
    }
}

impl std::fmt::Debug for OpenedHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedHandles")
            .field("handles", &self.0.len())
            .field("invalid", &self.invalid())
            .finish()
    }
}

/// A visibility change's name: a release when every entry is one (zero seconds), else an
/// extension.
fn visibility_operation(seconds: &[u32]) -> Messaging {
    if seconds.iter().all(|seconds| *seconds == 0) {
        Messaging::Nack
    } else {
        Messaging::Extend
    }
}

/// The operation label of a handle action.
fn action_name(action: Action) -> &'static str {
    match action {
        Action::Acknowledge => Operation::Acknowledge.name(),
        _ => Operation::ChangeVisibility.name(),
    }
}

/// A per-entry backend failure other than "gone": transient as far as the client can tell.
fn entry_failure(detail: String) -> GatewayError {
    GatewayError::unavailable(crate::core::backend::DEFAULT_RETRY_AFTER).with_source(detail)
}

/// The visibility timeout to apply now so the delivery ends no later than 12 hours after its receive.
pub fn clamp_visibility(requested: u32, received_at: DateTime<Utc>, now: DateTime<Utc>) -> u32 {
    let remaining = (received_at + MAX_IN_FLIGHT - now).num_seconds().max(0);
    requested.min(u32::try_from(remaining).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration as ChronoDuration;
    use chrono::TimeZone;

    #[test]
    fn visibility_is_clamped_to_twelve_hours_after_the_receive() {
        let received = Utc.with_ymd_and_hms(2026, 11, 29, 8, 0, 0).unwrap();
        let at = |h: i64, m: i64, s: i64| received + ChronoDuration::seconds(h * 3600 + m * 60 + s);
        assert_eq!(clamp_visibility(120, received, at(0, 0, 0)), 120);
        assert_eq!(clamp_visibility(43_200, received, at(0, 0, 0)), 43_200);
        assert_eq!(clamp_visibility(43_200, received, at(1, 0, 0)), 39_600);
        assert_eq!(clamp_visibility(600, received, at(11, 55, 0)), 300);
        assert_eq!(clamp_visibility(600, received, at(11, 59, 59)), 1);
        // At and past the mark nothing is left: the extension ends now.
        assert_eq!(clamp_visibility(600, received, at(12, 0, 0)), 0);
        assert_eq!(clamp_visibility(600, received, at(13, 0, 0)), 0);
        // Sub-second remainders round down, never past the mark.
        assert_eq!(
            clamp_visibility(
                600,
                received,
                at(11, 59, 59) + ChronoDuration::milliseconds(500)
            ),
            0
        );
        assert_eq!(clamp_visibility(0, received, at(1, 0, 0)), 0);
    }
}
