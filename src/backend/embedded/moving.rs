//! Moving messages chosen by a read without a lease, on the embedded engine: each one leaves its
//! queue and enters the destination in the same journal submission (as a redrive's do), so a
//! crash never loses or doubles one. A message is named by its position and checked by its id,
//! so a position that another message took since (a queue deleted and made again) moves nothing.

use super::backend::EmbeddedBackend;
use super::durable::unavailable;
use super::redrive::lock_pair;
use super::slot::lock;
use crate::core::backend::BackendError;
use crate::core::model::{MessageAt, MoveOutcome};

impl EmbeddedBackend {
    pub(super) async fn move_chosen(
        &self,
        source_url: &str,
        destination_url: &str,
        messages: &[MessageAt],
    ) -> Result<Vec<MoveOutcome>, BackendError> {
        let source = self.slot(source_url)?;
        let destination = self.slot(destination_url)?;
        if std::ptr::eq(source.as_ref(), destination.as_ref()) {
            return Err(BackendError::Invalid(
                "The destination must be another queue than the source.".into(),
            ));
        }
        let source_name = {
            let (from, to) = lock_pair(&source, &destination);
            if from.settings.fifo != to.settings.fifo {
                return Err(BackendError::Invalid(
                    "The destination must be of the source's type (both FIFO or both standard)."
                        .into(),
                ));
            }
            from.name.clone()
        };
        // The ids are in the bodies, which may be on disk only: read them outside the locks.
        let held: Vec<_> = {
            let queue = lock(&source.queue);
            messages
                .iter()
                .filter_map(|at| {
                    queue
                        .at(at.position)
                        .map(|message| (at.position, message.held.clone()))
                })
                .collect()
        };
        let wanted: Vec<_> = held.iter().map(|(seq, held)| (*seq, held)).collect();
        let bodies = self.bodies_of(&source_name, &wanted).await?;
        // Each position's id now: an entry moves only the message its id names.
        let ids: std::collections::HashMap<u64, String> = held
            .iter()
            .zip(bodies)
            .filter_map(|((seq, _), body)| Some((*seq, body?.id.clone())))
            .collect();
        let now = self.now();
        let mut journal = Vec::new();
        let (outcomes, commit) = {
            let (mut from, mut to) = lock_pair(&source, &destination);
            if from.deleted || to.deleted {
                return Err(BackendError::QueueNotFound);
            }
            let outcomes: Vec<MoveOutcome> = messages
                .iter()
                .map(|at| {
                    if ids.get(&at.position) != Some(&at.message_id) {
                        return MoveOutcome::NotFound;
                    }
                    let Some(message) = from.at(at.position) else {
                        return MoveOutcome::NotFound;
                    };
                    if message.state.visible_at > now && message.state.receipt.is_some() {
                        return MoveOutcome::InFlight;
                    }
                    match from.take(at.position) {
                        Some(moving) => {
                            to.accept_redriven(moving, now, &mut journal);
                            MoveOutcome::Moved
                        }
                        None => MoveOutcome::NotFound,
                    }
                })
                .collect();
            let commit = (!journal.is_empty()).then(|| self.submit(journal));
            (outcomes, commit)
        };
        if let Some(commit) = commit {
            commit.wait().await.map_err(unavailable)?;
            destination.notify.notify_one();
        }
        Ok(outcomes)
    }
}
