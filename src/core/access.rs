//! Who is calling and what they may do. The core authorizes every operation against the caller's
//! grants; a dialect only authenticates (proves who) and translates its credentials' grants into
//! these terms, so no dialect decides access on its own.

use crate::core::GatewayError;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What a caller may do on a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Receive messages (take a lease).
    Receive,
    /// Send messages.
    Send,
    /// Acknowledge (delete) a delivery by its handle.
    Acknowledge,
    /// Extend or release a delivery by its handle.
    ChangeVisibility,
    /// Read messages without a lease.
    Peek,
    /// Delete every message of a queue.
    Purge,
    /// Read a queue's address, settings, counts, tags and dead-letter sources; list queues.
    Inspect,
    /// Create and delete queues, change their settings and tags.
    ManageQueues,
    /// Move messages from a dead-letter queue back to their source.
    Redrive,
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 9] = [
        Action::Receive,
        Action::Send,
        Action::Acknowledge,
        Action::ChangeVisibility,
        Action::Peek,
        Action::Purge,
        Action::Inspect,
        Action::ManageQueues,
        Action::Redrive,
    ];

    /// A stable name, for logs and messages.
    pub fn name(self) -> &'static str {
        match self {
            Action::Receive => "receive",
            Action::Send => "send",
            Action::Acknowledge => "acknowledge",
            Action::ChangeVisibility => "change visibility",
            Action::Peek => "peek",
            Action::Purge => "purge",
            Action::Inspect => "inspect",
            Action::ManageQueues => "manage queues",
            Action::Redrive => "redrive",
        }
    }
}

/// Who is calling, as its dialect authenticated it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// An ezgh API key, by its public id.
    ApiKey(String),
    /// An SQS access key, by its id.
    AccessKey(String),
    /// A token's subject.
    Token(String),
    /// An admin key of the sombus admin API, by its label.
    AdminKey(String),
    /// Whoever holds a receipt handle: the handle itself is the credential (ezgh's ack and
    /// visibility).
    HandleHolder,
    /// Nobody proved anything (`sqs_api.allow_unsigned`, local development).
    Anonymous,
    /// The gateway itself (sampling queue metrics).
    System,
    /// A push subscription of the gateway's, by name: it receives, acknowledges and releases.
    Subscription(String),
}

impl Principal {
    /// Who it is, for an audit trail: its kind and public name (never a secret).
    pub fn audit_name(&self) -> String {
        self.to_string()
    }
}

/// The audit name: `api_key:<id>`, `access_key:<id>`, `token:<client id>`, `admin_key:<label>`,
/// `subscription:<name>`, or `anonymous` (an unsigned SQS request, a receipt-only ezgh ack or
/// visibility change: nobody proved who they are), `gateway`.
impl std::fmt::Display for Principal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::ApiKey(id) => write!(formatter, "api_key:{id}"),
            Principal::AccessKey(id) => write!(formatter, "access_key:{id}"),
            Principal::Token(subject) => write!(formatter, "token:{subject}"),
            Principal::AdminKey(label) => write!(formatter, "admin_key:{label}"),
            Principal::HandleHolder | Principal::Anonymous => formatter.write_str("anonymous"),
            Principal::System => formatter.write_str("gateway"),
            Principal::Subscription(name) => write!(formatter, "subscription:{name}"),
        }
    }
}

/// What the names of queues a dialect keeps for its own callers start with (the sombus
/// connections' queues): a grant on every queue (`*`) reaches them only to send and to inspect
/// (address, settings, counts); receiving, acknowledging, releasing, peeking, purging, managing
/// and redriving take a grant that names the queue. So producers with a `*` key publish into
/// them, and no other SQS key, ezgh receipt holder or anonymous caller touches their messages.
pub const RESERVED_QUEUE_PREFIX: &str = "sqsgw_";

/// What a `*` grant still allows on a reserved queue.
const EVERYWHERE_ON_RESERVED: [Action; 2] = [Action::Send, Action::Inspect];

/// The actions granted on each queue: `*` for every queue but the reserved ones, `prefix*` for
/// every queue whose name starts with `prefix` (reserved ones too: the grant names them), or a
/// queue's name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    everywhere: BTreeSet<Action>,
    by_queue: BTreeMap<String, BTreeSet<Action>>,
    by_prefix: BTreeMap<String, BTreeSet<Action>>,
}

impl Grants {
    /// No grant at all.
    pub fn none() -> Self {
        Self::default()
    }

    /// Every action on every queue.
    pub fn everything() -> Self {
        Self::none().allow("*", Action::ALL)
    }

    /// Adds `actions` on `queue` (`*` for every queue, `prefix*` for every queue whose name
    /// starts with `prefix`).
    pub fn allow(mut self, queue: &str, actions: impl IntoIterator<Item = Action>) -> Self {
        let set = if queue == "*" {
            &mut self.everywhere
        } else if let Some(prefix) = queue.strip_suffix('*') {
            self.by_prefix.entry(prefix.to_owned()).or_default()
        } else {
            self.by_queue.entry(queue.to_owned()).or_default()
        };
        set.extend(actions);
        self
    }

    /// Whether `action` is granted on `queue`.
    pub fn allows(&self, action: Action, queue: &str) -> bool {
        (self.everywhere.contains(&action)
            && (!queue.starts_with(RESERVED_QUEUE_PREFIX)
                || EVERYWHERE_ON_RESERVED.contains(&action)))
            || self.named(queue).any(|actions| actions.contains(&action))
    }

    /// Whether a grant names `queue` (by its name or a prefix of it), rather than reaching it
    /// only as one of every queue (`*`).
    pub fn names(&self, queue: &str) -> bool {
        self.named(queue).next().is_some()
    }

    /// The action sets of the grants that name `queue`.
    fn named<'a>(&'a self, queue: &'a str) -> impl Iterator<Item = &'a BTreeSet<Action>> + 'a {
        self.by_queue.get(queue).into_iter().chain(
            self.by_prefix
                .iter()
                .filter(move |(prefix, _)| queue.starts_with(prefix.as_str()))
                .map(|(_, actions)| actions),
        )
    }
}

/// An authenticated caller: who, and what it may do.
#[derive(Debug, Clone)]
pub struct Caller {
    principal: Principal,
    grants: Arc<Grants>,
}

impl Caller {
    /// A caller with these grants.
    pub fn new(principal: Principal, grants: Arc<Grants>) -> Self {
        Self { principal, grants }
    }

    /// Who it is.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Whether it may do `action` on `queue`.
    pub fn may(&self, action: Action, queue: &str) -> bool {
        self.grants.allows(action, queue)
    }

    /// Whether `queue` is one it should see listed: any queue it may inspect, but a reserved
    /// one (a tenant's) only when a grant names it, not through `*`.
    pub fn lists(&self, queue: &str) -> bool {
        self.may(Action::Inspect, queue)
            && (!queue.starts_with(RESERVED_QUEUE_PREFIX) || self.grants.names(queue))
    }

    /// `PermissionDenied` unless it may do `action` on `queue`.
    pub fn authorize(&self, action: Action, queue: &str) -> Result<(), GatewayError> {
        if self.may(action, queue) {
            Ok(())
        } else {
            Err(GatewayError::permission_denied(format!(
                "the credential is not allowed to {} on this queue",
                action.name()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_grant_reaches_the_queues_it_starts_and_names_reserved_ones() {
        let producer = Grants::none().allow("sqsgw_sb_w1_*", [Action::Send, Action::Inspect]);
        assert!(producer.allows(Action::Send, "sqsgw_sb_w1_house1.fifo"));
        assert!(!producer.allows(Action::Send, "sqsgw_sb_w2_house2.fifo"));
        assert!(!producer.allows(Action::Send, "sqsgw_sb_w1x_house.fifo"));
        assert!(!producer.allows(Action::Receive, "sqsgw_sb_w1_house1.fifo"));
        let caller = Caller::new(Principal::Anonymous, Arc::new(producer));
        assert!(caller.lists("sqsgw_sb_w1_house1.fifo"));
        let everywhere = Caller::new(Principal::Anonymous, Arc::new(Grants::everything()));
        assert!(everywhere.lists("orders"));
        assert!(
            !everywhere.lists("sqsgw_sb_w1_house1.fifo"),
            "`*` reaches a tenant's queue to send, but does not list it"
        );
    }

    #[test]
    fn grants_are_per_queue_or_everywhere() {
        let grants = Grants::none()
            .allow("orders", [Action::Receive, Action::Acknowledge])
            .allow("*", [Action::Inspect]);
        assert!(grants.allows(Action::Receive, "orders"));
        assert!(!grants.allows(Action::Receive, "billing"));
        assert!(grants.allows(Action::Inspect, "billing"));
        assert!(!grants.allows(Action::Purge, "orders"));
        let caller = Caller::new(Principal::ApiKey("k1".into()), Arc::new(grants));
        let denied = caller.authorize(Action::Purge, "orders").unwrap_err();
        assert_eq!(denied.kind, crate::core::ErrorKind::PermissionDenied);
        assert!(denied.message.contains("purge"));
        assert!(Grants::everything().allows(Action::Redrive, "any"));
        // A reserved queue is reached only by a grant that names it.
        let reserved = "sqsgw_sb_w_c.fifo";
        assert!(!Grants::everything().allows(Action::Receive, reserved));
        assert!(!Grants::everything().allows(Action::Acknowledge, reserved));
        assert!(!Grants::everything().allows(Action::Purge, reserved));
        assert!(!Grants::everything().allows(Action::ManageQueues, reserved));
        assert!(Grants::everything().allows(Action::Send, reserved));
        assert!(
            Grants::none()
                .allow(reserved, [Action::Receive])
                .allows(Action::Receive, reserved)
        );
        assert!(!Grants::none().allows(Action::Inspect, "any"));
    }
}
