//! One SQS request as a typed operation: its action and that action's input, read from either
//! protocol into the same types (a JSON 1.0 body, or the Query protocol's parameters shaped as
//! that body by `query`), so each action is handled once whatever the client spoke.

use super::action::SqsAction;
use super::error::SqsError;
use super::wire;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request of one action, its input parsed.
pub(super) enum SqsOp {
    GetQueueUrl(wire::GetQueueUrl),
    ListQueues(wire::ListQueues),
    GetQueueAttributes(wire::GetQueueAttributes),
    SendMessage(wire::SendMessage),
    SendMessageBatch(wire::SendMessageBatch),
    ReceiveMessage(wire::ReceiveMessage),
    DeleteMessage(wire::HandleRequest),
    DeleteMessageBatch(wire::HandleBatch),
    ChangeMessageVisibility(wire::HandleRequest),
    ChangeMessageVisibilityBatch(wire::HandleBatch),
    PurgeQueue(wire::QueueUrlOnly),
    CreateQueue(wire::CreateQueue),
    DeleteQueue(wire::QueueUrlOnly),
    SetQueueAttributes(wire::SetQueueAttributes),
    ListDeadLetterSourceQueues(wire::QueueUrlOnly),
    TagQueue(wire::Tags),
    UntagQueue(wire::Tags),
    ListQueueTags(wire::Tags),
    StartMessageMoveTask(wire::StartMessageMoveTask),
    ListMessageMoveTasks(wire::ListMessageMoveTasks),
    CancelMessageMoveTask(wire::CancelMessageMoveTask),
    AddPermission(wire::AddPermission),
    RemovePermission(wire::RemovePermission),
}

/// A request's input, as its protocol carried it.
pub(super) enum Input<'a> {
    /// The AWS JSON 1.0 body.
    Json(&'a [u8]),
    /// The Query protocol's parameters, shaped as the JSON body of the same action.
    Query(Value),
}

impl Input<'_> {
    fn decode<T: DeserializeOwned>(self) -> Result<T, SqsError> {
        match self {
            Input::Json(body) => {
                let body = if body.iter().all(u8::is_ascii_whitespace) {
                    b"{}" as &[u8]
                } else {
                    body
                };
                serde_json::from_slice(body).map_err(|error| {
                    SqsError::sender(
                        "SerializationException",
                        format!(
                            "the request body is not valid for this action (line {}, column {})",
                            error.line(),
                            error.column()
                        ),
                    )
                })
            }
            // The shaping made every value of the type the action takes, so what is left to
            // refuse is a name given twice or a missing piece; the words never echo a value.
            Input::Query(value) => serde_json::from_value(value).map_err(|_| {
                SqsError::sender(
                    "SerializationException",
                    "the request parameters are not valid for this action",
                )
            }),
        }
    }
}

impl SqsOp {
    /// Reads `input` as `action`'s request.
    pub(super) fn parse(action: SqsAction, input: Input<'_>) -> Result<Self, SqsError> {
        use SqsAction as A;
        Ok(match action {
            A::GetQueueUrl => Self::GetQueueUrl(input.decode()?),
            A::ListQueues => Self::ListQueues(input.decode()?),
            A::GetQueueAttributes => Self::GetQueueAttributes(input.decode()?),
            A::SendMessage => Self::SendMessage(input.decode()?),
            A::SendMessageBatch => Self::SendMessageBatch(input.decode()?),
            A::ReceiveMessage => Self::ReceiveMessage(input.decode()?),
            A::DeleteMessage => Self::DeleteMessage(input.decode()?),
            A::DeleteMessageBatch => Self::DeleteMessageBatch(input.decode()?),
            A::ChangeMessageVisibility => Self::ChangeMessageVisibility(input.decode()?),
            A::ChangeMessageVisibilityBatch => Self::ChangeMessageVisibilityBatch(input.decode()?),
            A::PurgeQueue => Self::PurgeQueue(input.decode()?),
            A::CreateQueue => Self::CreateQueue(input.decode()?),
            A::DeleteQueue => Self::DeleteQueue(input.decode()?),
            A::SetQueueAttributes => Self::SetQueueAttributes(input.decode()?),
            A::ListDeadLetterSourceQueues => Self::ListDeadLetterSourceQueues(input.decode()?),
            A::TagQueue => Self::TagQueue(input.decode()?),
            A::UntagQueue => Self::UntagQueue(input.decode()?),
            A::ListQueueTags => Self::ListQueueTags(input.decode()?),
            A::StartMessageMoveTask => Self::StartMessageMoveTask(input.decode()?),
            A::ListMessageMoveTasks => Self::ListMessageMoveTasks(input.decode()?),
            A::CancelMessageMoveTask => Self::CancelMessageMoveTask(input.decode()?),
            A::AddPermission => Self::AddPermission(input.decode()?),
            A::RemovePermission => Self::RemovePermission(input.decode()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_protocols_read_into_one_input() {
        let json = br#"{"QueueUrl":"http://h/000000000000/q","MaxNumberOfMessages":3}"#;
        let query = json!({ "QueueUrl": "http://h/000000000000/q", "MaxNumberOfMessages": 3 });
        for input in [Input::Json(json), Input::Query(query)] {
            let Ok(SqsOp::ReceiveMessage(request)) = SqsOp::parse(SqsAction::ReceiveMessage, input)
            else {
                panic!("not a receive");
            };
            assert_eq!(request.max_number_of_messages, Some(3));
            assert_eq!(
                request.queue_url.as_deref(),
                Some("http://h/000000000000/q")
            );
        }
    }

    #[test]
    fn an_empty_json_body_is_an_empty_request_and_a_malformed_one_is_refused() {
        assert!(matches!(
            SqsOp::parse(SqsAction::ListQueues, Input::Json(b"  ")),
            Ok(SqsOp::ListQueues(_))
        ));
        let Err(error) = SqsOp::parse(SqsAction::SendMessage, Input::Json(b"[1]")) else {
            panic!("an array is a send");
        };
        assert_eq!(error.code, "SerializationException");
    }
}
