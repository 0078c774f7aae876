//! Every operation the core performs, by name: what each needs of the caller, and the name spans
//! and metrics carry, whichever dialect asked (`Operation::record`, in `request_scope`, notes it
//! for the request).

use crate::core::access::Action;

/// One core operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Receive messages.
    Receive,
    /// Send messages.
    Send,
    /// Acknowledge deliveries.
    Acknowledge,
    /// Extend or release deliveries.
    ChangeVisibility,
    /// Read messages without a lease.
    Peek,
    /// Delete every message of a queue.
    Purge,
    /// A queue's address (and that it exists).
    ResolveQueue,
    /// A queue's settings and counts.
    QueueStats,
    /// List queues.
    ListQueues,
    /// The queues that dead-letter into a queue.
    DeadLetterSources,
    /// Read a queue's tags.
    ListTags,
    /// Create a queue.
    CreateQueue,
    /// Delete a queue.
    DeleteQueue,
    /// Change a queue's settings.
    SetQueueSettings,
    /// Add or remove tags.
    Tag,
    /// Move messages out of a dead-letter queue.
    Redrive,
    /// Move chosen messages to another queue.
    MoveMessages,
    /// Make, change or remove a queue's push subscriptions.
    ManageSubscriptions,
    /// Pause or resume a queue's deliveries.
    PauseDelivery,
    /// Give a queue a name in an API's namespace.
    BindAlias,
    /// Take such a name away.
    UnbindAlias,
}

impl Operation {
    /// The name spans carry.
    pub fn name(self) -> &'static str {
        match self {
            Operation::Receive => "receive",
            Operation::Send => "send",
            Operation::Acknowledge => "acknowledge",
            Operation::ChangeVisibility => "change_visibility",
            Operation::Peek => "peek",
            Operation::Purge => "purge",
            Operation::ResolveQueue => "resolve_queue",
            Operation::QueueStats => "queue_stats",
            Operation::ListQueues => "list_queues",
            Operation::DeadLetterSources => "dead_letter_sources",
            Operation::ListTags => "list_tags",
            Operation::CreateQueue => "create_queue",
            Operation::DeleteQueue => "delete_queue",
            Operation::SetQueueSettings => "set_queue_settings",
            Operation::Tag => "tag",
            Operation::Redrive => "redrive",
            Operation::MoveMessages => "move_messages",
            Operation::ManageSubscriptions => "manage_subscriptions",
            Operation::PauseDelivery => "pause_delivery",
            Operation::BindAlias => "bind_alias",
            Operation::UnbindAlias => "unbind_alias",
        }
    }

    /// What the caller needs on the queue the operation is about.
    pub fn action(self) -> Action {
        match self {
            Operation::Receive => Action::Receive,
            Operation::Send => Action::Send,
            Operation::Acknowledge => Action::Acknowledge,
            Operation::ChangeVisibility => Action::ChangeVisibility,
            Operation::Peek => Action::Peek,
            Operation::Purge => Action::Purge,
            Operation::ResolveQueue
            | Operation::QueueStats
            | Operation::ListQueues
            | Operation::DeadLetterSources
            | Operation::ListTags => Action::Inspect,
            Operation::CreateQueue
            | Operation::DeleteQueue
            | Operation::SetQueueSettings
            | Operation::Tag
            | Operation::BindAlias
            | Operation::UnbindAlias
            | Operation::ManageSubscriptions
            | Operation::PauseDelivery => Action::ManageQueues,
            Operation::Redrive | Operation::MoveMessages => Action::Redrive,
        }
    }
}
