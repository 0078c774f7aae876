//! Redrive: moving messages out of dead-letter queues, as tasks the backend runs.

use super::Gateway;
use crate::core::ErrorKind;
use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::model::RedriveTask;
use crate::core::operation::Operation;

impl Gateway {
    /// Starts moving the messages of the dead-letter queue `source` to `destination`, or each
    /// back to the queue it came from; answers the task's handle (the gateway's: it names the
    /// source queue, so only callers with redrive there can cancel it).
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
        let handle = self.settle(source, answer).await?;
        Ok(redrive_handle::wrap(source, &handle))
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
        let tasks = self.settle(source, answer).await?;
        Ok(tasks
            .into_iter()
            .map(|task| RedriveTask {
                handle: task
                    .handle
                    .as_deref()
                    .map(|handle| redrive_handle::wrap(source, handle)),
                ..task
            })
            .collect())
    }
    /// Stops a running redrive task by the handle the gateway gave; answers how many messages it
    /// had moved.
    pub async fn cancel_redrive(&self, caller: &Caller, handle: &str) -> Result<u64, GatewayError> {
        Operation::Redrive.record();
        let not_running = || {
            GatewayError::new(
                ErrorKind::ResourceNotFound,
                "no running message move task has this handle",
            )
        };
        let (source, backend_handle) = redrive_handle::unwrap(handle).ok_or_else(not_running)?;
        self.allowed(caller, Operation::Redrive, &source)?;
        // The backend's handle must be one of this queue's running tasks: a handle that names a
        // queue the caller may redrive cannot carry another queue's task.
        let source_arn = self.arn_of(&source).await?;
        let answer = self.backend.list_redrives(&source_arn, 10).await;
        let running = self.settle(&source, answer).await?;
        if !running
            .iter()
            .any(|task| task.handle.as_deref() == Some(backend_handle.as_str()))
        {
            return Err(not_running());
        }
        let answer = self.backend.cancel_redrive(&backend_handle).await;
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

/// The redrive task handles the gateway hands out: the source queue's gateway name beside the
/// backend's own handle, as base64url of a small JSON object.
mod redrive_handle {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Handle {
        queue: String,
        task: String,
    }

    pub(super) fn wrap(queue: &str, task: &str) -> String {
        let handle = Handle {
            queue: queue.to_owned(),
            task: task.to_owned(),
        };
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&handle).unwrap_or_default())
    }

    pub(super) fn unwrap(handle: &str) -> Option<(String, String)> {
        let bytes = URL_SAFE_NO_PAD.decode(handle).ok()?;
        let handle: Handle = serde_json::from_slice(&bytes).ok()?;
        Some((handle.queue, handle.task))
    }
}
