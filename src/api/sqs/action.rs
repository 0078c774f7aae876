//! The actions the SQS endpoint knows, by the name clients send: one closed list that names each
//! in logs and metrics (a client's text never becomes a label), says what it needs of the caller,
//! and how its Query answer is framed.

use crate::core::operation::Operation;

macro_rules! actions {
    ($($action:ident),* $(,)?) => {
        /// An SQS action the endpoint knows by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(super) enum SqsAction {
            $($action),*
        }

        impl SqsAction {
            /// Every action the endpoint knows.
            pub(super) const ALL: &[SqsAction] = &[$(SqsAction::$action),*];

            /// The name clients send (`X-Amz-Target: AmazonSQS.<name>`, `Action=<name>`).
            pub(super) fn name(self) -> &'static str {
                match self {
                    $(SqsAction::$action => stringify!($action)),*
                }
            }
        }
    };
}

actions!(
    SendMessage,
    SendMessageBatch,
    ReceiveMessage,
    DeleteMessage,
    DeleteMessageBatch,
    ChangeMessageVisibility,
    ChangeMessageVisibilityBatch,
    GetQueueUrl,
    GetQueueAttributes,
    ListQueues,
    ListQueueTags,
    ListDeadLetterSourceQueues,
    PurgeQueue,
    CreateQueue,
    DeleteQueue,
    SetQueueAttributes,
    TagQueue,
    UntagQueue,
    StartMessageMoveTask,
    CancelMessageMoveTask,
    ListMessageMoveTasks,
    AddPermission,
    RemovePermission,
);

impl SqsAction {
    /// The action a client names; `None` for a name SQS does not have.
    pub(super) fn named(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|action| action.name() == name)
    }

    /// Whether a Query request may name the action at a queue's URL: as SQS, creating and
    /// listing queues are the service endpoint's alone.
    pub(super) fn valid_at_queue_url(self) -> bool {
        !matches!(self, SqsAction::CreateQueue | SqsAction::ListQueues)
    }

    /// What the action needs of the caller.
    pub(super) fn operation(self) -> Operation {
        use SqsAction as A;
        match self {
            A::SendMessage | A::SendMessageBatch => Operation::Send,
            A::ReceiveMessage => Operation::Receive,
            A::DeleteMessage | A::DeleteMessageBatch => Operation::Acknowledge,
            A::ChangeMessageVisibility | A::ChangeMessageVisibilityBatch => {
                Operation::ChangeVisibility
            }
            A::GetQueueUrl => Operation::ResolveQueue,
            A::GetQueueAttributes => Operation::QueueStats,
            A::ListQueues => Operation::ListQueues,
            A::ListQueueTags => Operation::ListTags,
            A::ListDeadLetterSourceQueues => Operation::DeadLetterSources,
            A::PurgeQueue => Operation::Purge,
            A::CreateQueue => Operation::CreateQueue,
            A::DeleteQueue => Operation::DeleteQueue,
            // A queue's access policy is one of its settings.
            A::SetQueueAttributes | A::AddPermission | A::RemovePermission => {
                Operation::SetQueueSettings
            }
            A::TagQueue | A::UntagQueue => Operation::Tag,
            A::StartMessageMoveTask | A::CancelMessageMoveTask | A::ListMessageMoveTasks => {
                Operation::Redrive
            }
        }
    }

    /// Whether its Query answer has no `{Action}Result` element (SQS sends none for these).
    pub(super) fn answers_without_result(self) -> bool {
        use SqsAction as A;
        matches!(
            self,
            A::DeleteMessage
                | A::ChangeMessageVisibility
                | A::PurgeQueue
                | A::DeleteQueue
                | A::SetQueueAttributes
                | A::TagQueue
                | A::UntagQueue
                | A::AddPermission
                | A::RemovePermission
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::sqs_keys::SQS_ACTIONS;

    /// A key granted an action by name may perform exactly what the endpoint does for it.
    #[test]
    fn every_grantable_action_is_an_operation_needing_that_grant() {
        for (name, action) in SQS_ACTIONS {
            let operation = SqsAction::named(name)
                .map(SqsAction::operation)
                .unwrap_or_else(|| panic!("{name} is not served"));
            assert_eq!(operation.action(), *action, "{name}");
        }
    }

    #[test]
    fn names_are_exact() {
        for action in SqsAction::ALL {
            assert_eq!(SqsAction::named(action.name()), Some(*action));
        }
        assert_eq!(SqsAction::named("sendmessage"), None);
        assert_eq!(SqsAction::named(""), None);
    }
}
