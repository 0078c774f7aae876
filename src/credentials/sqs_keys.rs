//! Access keys of the SQS endpoint: the secret SigV4 needs, and the SQS actions a key may call,
//! in the core's terms.

use crate::core::access::{Action, Caller, Grants, Principal};
use std::collections::BTreeSet;
use std::sync::Arc;
use zeroize::Zeroizing;

/// Every SQS action the endpoint serves and what it needs in the core. A key's `actions` names
/// these (or `*`).
pub const SQS_ACTIONS: &[(&str, Action)] = &[
    ("SendMessage", Action::Send),
    ("SendMessageBatch", Action::Send),
    ("ReceiveMessage", Action::Receive),
    ("DeleteMessage", Action::Acknowledge),
    ("DeleteMessageBatch", Action::Acknowledge),
    ("ChangeMessageVisibility", Action::ChangeVisibility),
    ("ChangeMessageVisibilityBatch", Action::ChangeVisibility),
    ("GetQueueUrl", Action::Inspect),
    ("GetQueueAttributes", Action::Inspect),
    ("ListQueues", Action::Inspect),
    ("ListQueueTags", Action::Inspect),
    ("ListDeadLetterSourceQueues", Action::Inspect),
    ("PurgeQueue", Action::Purge),
    ("CreateQueue", Action::ManageQueues),
    ("DeleteQueue", Action::ManageQueues),
    ("SetQueueAttributes", Action::ManageQueues),
    ("TagQueue", Action::ManageQueues),
    ("UntagQueue", Action::ManageQueues),
    ("AddPermission", Action::ManageQueues),
    ("RemovePermission", Action::ManageQueues),
    ("StartMessageMoveTask", Action::Redrive),
    ("CancelMessageMoveTask", Action::Redrive),
    ("ListMessageMoveTasks", Action::Redrive),
];

/// What `*` grants: every message action and reading queues; purging, managing queues and
/// redriving only where queue management is on (`sqs_api.manage_queues`), or when named.
const EVERYDAY: [Action; 5] = [
    Action::Send,
    Action::Receive,
    Action::Acknowledge,
    Action::ChangeVisibility,
    Action::Inspect,
];
const MANAGING: [Action; 3] = [Action::Purge, Action::ManageQueues, Action::Redrive];

/// One access key of the SQS endpoint.
pub struct SqsKey {
    /// The key's id (public).
    pub access_key_id: String,
    /// SigV4 derives its signing key from the secret itself, so it is kept (never logged).
    pub secret: Zeroizing<String>,
    grants: Arc<Grants>,
    /// The SQS actions it may call, when its `actions` name them one by one (no `*`): exactly
    /// those, not every action of their class.
    named: Option<Arc<BTreeSet<&'static str>>>,
}

/// The SQS actions one key may call: every action of the classes it holds (`*`), or exactly
/// the ones it names.
#[derive(Debug, Clone, Default)]
pub struct CallableActions(Option<Arc<BTreeSet<&'static str>>>);

impl CallableActions {
    /// Whether the key may call the SQS action `name` (its classes' grants are checked apart).
    pub fn allow(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|named| named.contains(name))
    }
}

impl std::fmt::Debug for SqsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqsKey")
            .field("access_key_id", &self.access_key_id)
            .finish_non_exhaustive()
    }
}

impl SqsKey {
    /// A key allowed `actions` (SQS names, or `*`) on `queues` (gateway queues, or `*`).
    pub fn new(
        access_key_id: String,
        secret: Zeroizing<String>,
        queues: &[String],
        actions: &[String],
        manage_queues: bool,
    ) -> Result<Self, String> {
        let named = if actions.iter().any(|action| action == "*") {
            None
        } else {
            let names = actions
                .iter()
                .filter_map(|name| SQS_ACTIONS.iter().find(|(known, _)| known == name))
                .map(|(known, _)| *known)
                .collect();
            Some(Arc::new(names))
        };
        Ok(Self {
            access_key_id,
            secret,
            grants: Arc::new(grants(queues, actions, manage_queues)?),
            named,
        })
    }

    /// The SQS actions it may call.
    pub fn callable(&self) -> CallableActions {
        CallableActions(self.named.clone())
    }

    /// The key as a caller of the core.
    pub fn caller(&self) -> Caller {
        Caller::new(
            Principal::AccessKey(self.access_key_id.clone()),
            Arc::clone(&self.grants),
        )
    }
}

/// The grants of an SQS key (or of unsigned requests, where allowed: `*` on `*`).
pub fn grants(
    queues: &[String],
    actions: &[String],
    manage_queues: bool,
) -> Result<Grants, String> {
    let mut allowed = Vec::new();
    for name in actions {
        if name == "*" {
            allowed.extend(EVERYDAY);
            if manage_queues {
                allowed.extend(MANAGING);
            }
            continue;
        }
        match SQS_ACTIONS.iter().find(|(known, _)| known == name) {
            Some((_, action)) => allowed.push(*action),
            None => return Err(format!("unknown SQS action `{name}`")),
        }
    }
    Ok(queues.iter().fold(Grants::none(), |grants, queue| {
        grants.allow(queue, allowed.iter().copied())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn a_star_grants_message_actions_and_management_only_where_it_is_on() {
        let everyday = grants(&strings(&["*"]), &strings(&["*"]), false).unwrap();
        assert!(everyday.allows(Action::Send, "orders"));
        assert!(everyday.allows(Action::Inspect, "orders"));
        assert!(!everyday.allows(Action::Purge, "orders"));
        assert!(!everyday.allows(Action::ManageQueues, "orders"));
        let managing = grants(&strings(&["*"]), &strings(&["*"]), true).unwrap();
        assert!(managing.allows(Action::Purge, "orders"));
        assert!(managing.allows(Action::ManageQueues, "new"));
    }

    #[test]
    fn named_actions_grant_what_they_need_on_the_named_queues() {
        let purger = grants(&strings(&["orders"]), &strings(&["PurgeQueue"]), false).unwrap();
        assert!(purger.allows(Action::Purge, "orders"));
        assert!(!purger.allows(Action::Purge, "billing"));
        assert!(!purger.allows(Action::Send, "orders"));
        let error = grants(&strings(&["*"]), &strings(&["Fly"]), false).unwrap_err();
        assert!(error.contains("unknown SQS action `Fly`"));
    }
}
