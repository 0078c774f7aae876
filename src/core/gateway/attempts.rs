//! Receive attempts: the answer of a receive with an attempt id is kept (sealed) so that its
//! retry gets the same messages with the same handles, and the handles of backends that replay
//! attempts themselves are found again.

use super::Attempted;
use super::Gateway;
use super::clamp_visibility;
use crate::core::GatewayError;
use crate::core::access::Principal;
use crate::core::handle::SealedHandle;
use crate::core::model::{
    BackendMessage, Delivery, EntryOutcome, ExpiredVisibility, ResolvedQueue,
};
use crate::core::state::DeliveryKey;
use crate::core::state::ledger::Standing;
use chrono::Duration as ChronoDuration;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

impl Gateway {
    /// The answer of an earlier receive with the same attempt id, again: the deliveries that are
    /// still the caller's (the ledger's current ones) are hidden again for `visibility` seconds
    /// from now (as a retry within the window resets the timeout on SQS) and answered with the
    /// same handles. Deliveries acknowledged, received by someone else, or visible again by now
    /// are left out.
    pub(super) async fn replay(
        &self,
        queue: &str,
        resolved: &ResolvedQueue,
        answered: &[Attempted],
        visibility: u32,
    ) -> Result<Vec<Delivery>, GatewayError> {
        let now = self.clock.now();
        let keys: Vec<DeliveryKey<'_>> = answered
            .iter()
            .map(|attempted| DeliveryKey {
                queue,
                message_id: &attempted.delivery.message.message_id,
                delivery_id: attempted.delivery_id,
            })
            .collect();
        let standings = self.state.standings(&keys).await;
        let standings = self.state_required("standings", standings)?;
        let current: Vec<&Attempted> = answered
            .iter()
            .zip(standings)
            .filter(|(_, standing)| *standing == Standing::Current)
            .map(|(attempted, _)| attempted)
            .collect();
        if current.is_empty() {
            return Ok(Vec::new());
        }
        let entries: Vec<(&str, u32)> = current
            .iter()
            .map(|attempted| {
                (
                    attempted.delivery.message.backend_handle.as_str(),
                    clamp_visibility(visibility, attempted.received_at, now),
                )
            })
            .collect();
        let answer = self
            .backend
            .change_visibility_batch(&resolved.url, &entries, ExpiredVisibility::Refuse)
            .await;
        let outcomes = self.settle(queue, answer).await?;
        Ok(current
            .into_iter()
            .zip(outcomes)
            .filter(|(_, outcome)| *outcome == EntryOutcome::Ok)
            .map(|(attempted, _)| Delivery {
                visible_at: now
                    + ChronoDuration::seconds(i64::from(clamp_visibility(
                        visibility,
                        attempted.received_at,
                        now,
                    ))),
                ..attempted.delivery.clone()
            })
            .collect())
    }

    /// The answer kept for an attempt, if any (and readable). A store that cannot tell
    /// answers unavailable: receiving anew could break the attempt's promise of the same
    /// answer, and nothing is taken yet.
    pub(super) async fn kept_answer(
        &self,
        key: &str,
    ) -> Result<Option<Vec<Attempted>>, GatewayError> {
        let bytes = self.state.answer(key).await;
        let bytes = self.state_required("answer", bytes)?;
        Ok(bytes
            .and_then(|sealed| self.kept_seal.open(key, &sealed))
            .and_then(|bytes| postcard::from_bytes(&bytes).ok()))
    }

    /// Keeps an attempt's answer for its retry (not kept: the retry receives anew).
    pub(super) async fn keep_answer(&self, key: &str, attempted: &[Attempted]) {
        match postcard::to_allocvec(attempted) {
            Ok(bytes) => {
                let sealed = self.kept_seal.seal(key, &bytes);
                let kept = self.state.keep_answer(key, sealed).await;
                self.state_logged("keep_answer", kept);
            }
            Err(error) => tracing::warn!(%error, "cannot keep a receive's answer for its retry"),
        }
    }

    /// The handle given earlier for a delivery a backend replayed itself (an attempt id it
    /// honours), if that delivery is still current.
    pub(super) async fn backend_replay(
        &self,
        queue: &str,
        message: &BackendMessage,
        replay_key: &str,
    ) -> Option<(u64, DateTime<Utc>, SealedHandle)> {
        // A store that cannot tell makes it a fresh delivery (whose recording then decides).
        let sealed = self.state.answer(replay_key).await.ok()??;
        let bytes = self.kept_seal.open(replay_key, &sealed)?;
        let replay: Replay = postcard::from_bytes(&bytes).ok()?;
        let key = DeliveryKey {
            queue,
            message_id: &message.message_id,
            delivery_id: replay.delivery_id,
        };
        let standing = self.state.standings(&[key]).await.ok()?;
        (standing.first() == Some(&Standing::Current)).then_some((
            replay.delivery_id,
            replay.received_at,
            replay.handle,
        ))
    }
}

/// How a received message is handed out: with the handle an earlier receive of the same
/// attempt gave it (its delivery id, receive time and handle), or as a fresh delivery.
pub(super) enum Hand {
    Replayed((u64, DateTime<Utc>, SealedHandle)),
    Fresh(u64),
}

/// The handle a backend delivery got, for a backend that replays attempts itself.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Replay {
    pub(super) delivery_id: u64,
    pub(super) received_at: DateTime<Utc>,
    pub(super) handle: SealedHandle,
}

/// Which receive an answer belongs to: queue, attempt id, caller (hashed: keys may travel to a
/// shared store).
pub(super) fn attempt_key(queue: &str, attempt_id: &str, caller: &Principal) -> String {
    let mut digest = Sha256::new();
    for part in [queue, attempt_id, &format!("{caller:?}")] {
        digest.update((part.len() as u64).to_be_bytes());
        digest.update(part.as_bytes());
    }
    format!("attempt:{}", hex::encode(digest.finalize()))
}

/// The key of a backend delivery's handle (hashed: a backend receipt never leaves the process).
pub(super) fn replay_key(queue: &str, backend_handle: &str) -> String {
    let mut digest = Sha256::new();
    digest.update((queue.len() as u64).to_be_bytes());
    digest.update(queue.as_bytes());
    digest.update(backend_handle.as_bytes());
    format!("replay:{}", hex::encode(digest.finalize()))
}
