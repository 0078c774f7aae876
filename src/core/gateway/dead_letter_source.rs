//! The source of dead-lettered messages a receive names: from the message's own record where the
//! backend keeps one, else from the queues whose redrive policy targets the receiving queue.

use super::Gateway;
use crate::core::model::{BackendMessage, DeadLetterInfo, DeadLetterReason, ResolvedQueue};
use std::collections::BTreeMap;
use std::sync::Arc;

impl Gateway {
    /// What this receive needs to name the source of dead-lettered messages, looked up once.
    pub(super) async fn dead_letter_source(
        &self,
        resolved: &ResolvedQueue,
        messages: &[BackendMessage],
    ) -> DeadLetterSource {
        let mut source = DeadLetterSource::default();
        if messages.is_empty() {
            return source;
        }
        for arn in messages
            .iter()
            .filter_map(|m| m.dead_letter_source_arn.as_ref())
        {
            if !source.names_by_arn.contains_key(arn) {
                let name = match self.registry.name_of_arn(arn).await {
                    Some(name) => name,
                    None => arn.rsplit(':').next().unwrap_or(arn).to_owned(),
                };
                source.names_by_arn.insert(arn.clone(), name);
            }
        }
        if messages.iter().any(|m| m.dead_letter_source_arn.is_none())
            && let Some(arn) = resolved.attributes.arn.as_deref()
        {
            source.by_redrive = Some(self.registry.dead_letter_sources(arn).await);
        }
        source
    }
}

/// The sources of dead-lettered messages of one receive.
#[derive(Debug, Default)]
pub(super) struct DeadLetterSource {
    /// Source ARN (as the backend records it on a message) -> gateway or backend queue name.
    names_by_arn: BTreeMap<String, String>,
    /// Configured queues whose redrive policy targets the receiving queue.
    by_redrive: Option<Arc<Vec<String>>>,
}

impl DeadLetterSource {
    pub(super) fn info(&self, message: &BackendMessage) -> Option<DeadLetterInfo> {
        if let Some(arn) = &message.dead_letter_source_arn {
            return Some(DeadLetterInfo {
                source_queue: self.names_by_arn.get(arn).cloned(),
                reason: DeadLetterReason::MaxReceiveCountExceeded,
            });
        }
        match self.by_redrive.as_deref()?.as_slice() {
            [] => None,
            [only] => Some(DeadLetterInfo {
                source_queue: Some(only.clone()),
                reason: DeadLetterReason::MaxReceiveCountExceeded,
            }),
            _ => Some(DeadLetterInfo {
                source_queue: None,
                reason: DeadLetterReason::MaxReceiveCountExceeded,
            }),
        }
    }
}
