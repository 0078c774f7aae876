//! Moving messages between queues: redrive (a dead-letter queue's messages, as tasks the
//! backend runs) and moves of messages chosen by a read without a lease.

use super::Gateway;
use crate::core::ErrorKind;
use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::model::{MessageAt, MoveOutcome, RedriveTask};
use crate::core::operation::Operation;

impl Gateway {
    /// Moves the messages named from `source` to `destination` (an outcome each, in order): takes
    /// moving messages out of `source` there and sending to `destination`. A backend that cannot
    /// name messages (SQS) answers `Unsupported`.
    pub async fn move_messages(
        &self,
        caller: &Caller,
        source: &str,
        destination: &str,
        messages: &[MessageAt],
    ) -> Result<Vec<MoveOutcome>, GatewayError> {
        self.admit(caller, Operation::MoveMessages, source)?;
        self.allowed(caller, Operation::Send, destination)?;
        if source == destination {
            return Err(GatewayError::invalid_request(
                "the destination must be another queue than the source",
            ));
        }
        let from = self.registry.get(source).await?;
        let to = self.registry.get(destination).await?;
        let answer = self
            .backend
            .move_messages(&from.url, &to.url, messages)
            .await;
        self.settle(source, answer).await
    }

    /// Starts moving the messages of the dead-letter queue `source` to `destination`, or each
    /// back to the queue it came from; answers the task's handle, as SQS forms it (base64 of its
    /// task id and the source queue's ARN), which names the source queue: only callers with
    /// redrive there can cancel it.
    pub async fn start_redrive(
        &self,
        caller: &Caller,
        source: &str,
        destination: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, GatewayError> {
        self.admit(caller, Operation::Redrive, source)?;
        if let Some(destination) = destination {
            self.allowed(caller, Operation::Redrive, destination)?;
        }
        let source_arn = self.arn_of(source).await?;
        let destination_arn = match destination {
            Some(destination) => Some(self.arn_of(destination).await?),
            None => None,
        };
        let answer = self
            .backend
            .start_redrive(&source_arn, destination_arn.as_deref(), max_per_second)
            .await;
        self.settle(source, answer).await
    }
    /// The latest redrive tasks of the dead-letter queue `source`, newest first, at most `max`.
    pub async fn list_redrives(
        &self,
        caller: &Caller,
        source: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, GatewayError> {
        self.admit(caller, Operation::Redrive, source)?;
        let source_arn = self.arn_of(source).await?;
        let answer = self.backend.list_redrives(&source_arn, max).await;
        self.settle(source, answer).await
    }
    /// Stops a running redrive task by its handle; answers how many messages it had moved. The
    /// handle's source queue must be one of this gateway's the caller may redrive, and the task
    /// one of that queue's running ones: a handle cannot reach another queue's task.
    pub async fn cancel_redrive(&self, caller: &Caller, handle: &str) -> Result<u64, GatewayError> {
        Operation::Redrive.record();
        let source_arn = task_handle::source_arn(handle).ok_or_else(|| {
            GatewayError::invalid_request("Value for parameter TaskHandle is invalid.")
        })?;
        let source = self
            .registry
            .name_of_arn(&source_arn)
            .await
            .ok_or_else(|| {
                GatewayError::new(
                    ErrorKind::ResourceNotFound,
                    "The resource that you specified for the SourceArn parameter doesn't exist.",
                )
            })?;
        self.allowed(caller, Operation::Redrive, &source)?;
        let answer = self.backend.list_redrives(&source_arn, 10).await;
        let running = self.settle(&source, answer).await?;
        if !running
            .iter()
            .any(|task| task.handle.as_deref() == Some(handle))
        {
            return Err(GatewayError::new(
                ErrorKind::ResourceNotFound,
                "Task does not exist.",
            ));
        }
        let answer = self.backend.cancel_redrive(handle).await;
        self.settle(&source, answer).await
    }
    async fn arn_of(&self, queue: &str) -> Result<String, GatewayError> {
        self.registry
            .get(queue)
            .await?
            .attributes
            .arn
            .clone()
            .ok_or_else(|| {
                GatewayError::new(
                    ErrorKind::Unsupported,
                    "the backend gives this queue no ARN, which redrives need",
                )
            })
    }
}

/// Message move task handles as SQS forms them (and both backends hand them out): base64 of a
/// JSON object with the task's id and the source queue's ARN.
mod task_handle {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Handle {
        task_id: String,
        source_arn: String,
    }

    /// The source queue's ARN a handle names; `None` for a handle not shaped as SQS shapes them.
    pub(super) fn source_arn(handle: &str) -> Option<String> {
        let bytes = STANDARD.decode(handle).ok()?;
        let handle: Handle = serde_json::from_slice(&bytes).ok()?;
        (!handle.task_id.is_empty()).then_some(handle.source_arn)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn handles_name_their_source_queue() {
            let handle = STANDARD.encode(
                br#"{"taskId":"0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13","sourceArn":"arn:aws:sqs:us-east-1:000000000000:dlq"}"#,
            );
            assert_eq!(
                source_arn(&handle).as_deref(),
                Some("arn:aws:sqs:us-east-1:000000000000:dlq")
            );
            for bad in [
                "",
                "not base64!",
                &STANDARD.encode(b"{}"),
                &STANDARD.encode(b"[1]"),
            ] {
                assert_eq!(source_arn(bad), None, "{bad}");
            }
        }
    }
}
