//! Queues as wholes: addresses, counts, settings, tags, purges and dead-letter sources.

use super::Gateway;
use crate::core::ErrorKind;
use crate::core::GatewayError;
use crate::core::access::Action;
use crate::core::access::Caller;
use crate::core::alias;
use crate::core::model::QueueSettings;
use crate::core::model::QueueStats;
use crate::core::model::ResolvedQueue;
use crate::core::model::{QUEUE_NAME_RULE, valid_queue_name};
use crate::core::operation::Operation;
use std::collections::BTreeMap;
use std::sync::Arc;

impl Gateway {
    /// The backend queue behind `queue`, which must exist.
    pub async fn resolve_queue(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<Arc<ResolvedQueue>, GatewayError> {
        self.admit(caller, Operation::ResolveQueue, queue)?;
        self.registry.get(queue).await
    }
    /// The queue `queue` as the backend has it, for a caller about to do `operation` there: that
    /// operation's own permission admits it (a producer need not inspect the queue), and nothing
    /// is counted (the operation counts itself).
    pub async fn queue_for(
        &self,
        caller: &Caller,
        operation: Operation,
        queue: &str,
    ) -> Result<Arc<ResolvedQueue>, GatewayError> {
        self.allowed(caller, operation, queue)?;
        self.registry.get(queue).await
    }
    /// Gateway names of the queues starting with `prefix` that the caller may inspect.
    pub async fn list_queues(
        &self,
        caller: &Caller,
        prefix: &str,
    ) -> Result<Vec<String>, GatewayError> {
        Operation::ListQueues.record();
        let names = self.registry.names(prefix).await?;
        Ok(names
            .into_iter()
            .filter(|name| caller.lists(name))
            .collect())
    }
    /// The queue's settings and message counts.
    pub async fn queue_stats(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<(Arc<ResolvedQueue>, QueueStats), GatewayError> {
        self.admit(caller, Operation::QueueStats, queue)?;
        let resolved = self.registry.get(queue).await?;
        let answer = self.backend.stats(&resolved.url).await;
        let stats = self.settle(queue, answer).await?;
        Ok((resolved, stats))
    }
    /// The push subscriptions of the queue, as operators see them (their state, counts and
    /// latest attempts: never bodies, handles or secrets).
    pub fn push_subscriptions(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<Vec<crate::core::push::board::Snapshot>, GatewayError> {
        self.admit(caller, Operation::QueueStats, queue)?;
        Ok(self.push.of_queue(queue))
    }
    /// Deletes every message of the queue; every handle of it becomes stale.
    pub async fn purge(&self, caller: &Caller, queue: &str) -> Result<(), GatewayError> {
        self.admit(caller, Operation::Purge, queue)?;
        let resolved = self.registry.get(queue).await?;
        let answer = self.backend.purge(&resolved.url).await;
        self.settle(queue, answer).await?;
        // Every handle of the queue is stale now, whatever the backend does with old receipts.
        // Not ended in a store that cannot answer: they end with their TTL there, and the
        // backend no longer holds their messages.
        let ended = self.state.end_queue(queue).await;
        self.state_logged("end_queue", ended);
        Ok(())
    }
    /// Creates a queue in the backend (or finds the existing one) under the gateway name `name`.
    pub async fn create_queue(
        &self,
        caller: &Caller,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<Arc<ResolvedQueue>, GatewayError> {
        Operation::CreateQueue.record();
        caller.authorize(Action::ManageQueues, name)?;
        if !valid_queue_name(name) {
            return Err(GatewayError::invalid_request(QUEUE_NAME_RULE));
        }
        let locator = self
            .registry
            .locator_for_new(name)
            .ok_or_else(|| GatewayError::permission_denied("queue management is off"))?;
        self.backend
            .create_queue(&locator, settings)
            .await
            .map_err(GatewayError::from)?;
        self.registry.created(name).await;
        self.registry.get(name).await
    }
    /// Deletes the queue and its messages.
    pub async fn delete_queue(&self, caller: &Caller, name: &str) -> Result<(), GatewayError> {
        self.admit(caller, Operation::DeleteQueue, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self.backend.delete_queue(&resolved.url).await;
        self.registry.invalidate(name).await;
        let settled = self.settle(name, answer).await;
        // Its alias tags went with it (also when it was gone already: a retried delete).
        if settled.is_ok()
            || matches!(&settled, Err(error) if error.kind == ErrorKind::QueueNotFound)
        {
            self.registry.forget(name).await;
            // Its push subscriptions go with it: a queue made later under the name is not theirs.
            if let Some(admin) = self.push_admin.get() {
                let actor = caller.principal().audit_name();
                if let Err(error) = admin
                    .forget_queue(crate::core::push::admin::Actor(&actor), name)
                    .await
                {
                    error.log("delete_queue");
                }
            }
        }
        settled
    }
    /// Changes the settings `changes` gives.
    pub async fn set_queue_settings(
        &self,
        caller: &Caller,
        name: &str,
        changes: &QueueSettings,
    ) -> Result<(), GatewayError> {
        self.admit(caller, Operation::SetQueueSettings, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self
            .backend
            .set_queue_settings(&resolved.url, changes)
            .await;
        self.registry.invalidate(name).await;
        self.settle(name, answer).await
    }
    /// Adds the `add` tags and removes the `remove` keys.
    pub async fn change_tags(
        &self,
        caller: &Caller,
        name: &str,
        add: &BTreeMap<String, String>,
        remove: &[String],
    ) -> Result<(), GatewayError> {
        self.admit(caller, Operation::Tag, name)?;
        alias::check_client_tags(add.keys().chain(remove))?;
        let resolved = self.registry.get(name).await?;
        if !add.is_empty() {
            let answer = self.backend.tag_queue(&resolved.url, add).await;
            self.settle(name, answer).await?;
        }
        if !remove.is_empty() {
            let answer = self.backend.untag_queue(&resolved.url, remove).await;
            self.settle(name, answer).await?;
        }
        Ok(())
    }
    /// The queue's tags.
    pub async fn list_tags(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<BTreeMap<String, String>, GatewayError> {
        self.admit(caller, Operation::ListTags, name)?;
        let resolved = self.registry.get(name).await?;
        let answer = self.backend.list_queue_tags(&resolved.url).await;
        let mut tags = self.settle(name, answer).await?;
        // The gateway's own tags (aliases) are not the client's.
        tags.retain(|key, _| !alias::is_reserved_tag(key));
        Ok(tags)
    }
    /// Gateway names of the queues whose redrive policy targets `name` (those the caller may
    /// inspect).
    pub async fn dead_letter_source_queues(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<Vec<String>, GatewayError> {
        self.admit(caller, Operation::DeadLetterSources, name)?;
        let resolved = self.registry.get(name).await?;
        let sources = match resolved.attributes.arn.as_deref() {
            // Asked for by name: read now, not from what receives keep.
            Some(arn) => self.registry.read_dead_letter_sources(arn).await,
            None => Vec::new(),
        };
        Ok(sources
            .into_iter()
            .filter(|source| caller.may(Action::Inspect, source))
            .collect())
    }
    /// Whether the caller may make the queue with `arn` the dead-letter target of `source`: it
    /// must manage `source` (checked first, so no other caller makes the gateway look ARNs up)
    /// and may send to the target, a queue of this gateway, since the messages moved there are
    /// its doing. One answer whether the target is missing or not the caller's, so no queue's
    /// existence is learnt by it.
    pub async fn authorize_dead_letter_target(
        &self,
        caller: &Caller,
        source: &str,
        arn: &str,
    ) -> Result<(), GatewayError> {
        caller.authorize(Action::ManageQueues, source)?;
        match self.registry.name_of_arn(arn).await {
            Some(name) if caller.may(Action::Send, &name) => Ok(()),
            _ => Err(GatewayError::permission_denied(
                "the dead-letter target must be a queue of this gateway the credential may send to",
            )),
        }
    }
    /// The gateway queue whose backend ARN is `arn` (clients name queues by ARN in redrives).
    pub async fn queue_named_by_arn(&self, arn: &str) -> Result<String, GatewayError> {
        self.registry.name_of_arn(arn).await.ok_or_else(|| {
            GatewayError::new(
                ErrorKind::ResourceNotFound,
                "no queue of this gateway has this ARN",
            )
        })
    }
}
