//! The queue registry: gateway queue names, the backend queues they map to, and cached attributes.

use crate::backend::{Backend, BackendError};
use crate::core::GatewayError;
use crate::core::model::ResolvedQueue;
use moka::future::Cache;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Maps gateway queue names to backend queues, resolving and caching them on first use.
pub struct QueueRegistry {
    backend: Arc<dyn Backend>,
    /// Gateway name -> backend locator (an SQS queue name or URL).
    locators: BTreeMap<String, String>,
    resolved: Cache<String, Arc<ResolvedQueue>>,
}

impl std::fmt::Debug for QueueRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueRegistry")
            .field("queues", &self.locators)
            .finish_non_exhaustive()
    }
}

impl QueueRegistry {
    /// A registry of `locators`; attributes are cached for `ttl`.
    pub fn new(
        backend: Arc<dyn Backend>,
        locators: BTreeMap<String, String>,
        ttl: Duration,
    ) -> Self {
        Self {
            backend,
            locators,
            resolved: Cache::builder().time_to_live(ttl).build(),
        }
    }

    /// Whether `name` is a configured gateway queue.
    pub fn contains(&self, name: &str) -> bool {
        self.locators.contains_key(name)
    }

    /// Every configured gateway queue name.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.locators.keys().map(String::as_str)
    }

    /// The backend queue behind `name`, resolved at most once per `ttl`.
    pub async fn get(&self, name: &str) -> Result<Arc<ResolvedQueue>, GatewayError> {
        let locator = self
            .locators
            .get(name)
            .ok_or_else(GatewayError::queue_not_found)?;
        self.resolved
            .try_get_with_by_ref(name, async {
                self.backend.resolve(locator).await.map(Arc::new)
            })
            .await
            .map_err(|error: Arc<BackendError>| GatewayError::from((*error).clone()))
    }

    /// Resolves every configured queue once and logs the ones the backend cannot find; start-up
    /// goes on either way (readiness reports an unreachable backend).
    pub async fn warm_up(&self) {
        for name in self.locators.keys() {
            match self.get(name).await {
                Ok(queue) => {
                    tracing::info!(queue = %name, fifo = queue.attributes.fifo, "queue resolved")
                }
                Err(error) => tracing::warn!(queue = %name, error = %error, "queue not resolved"),
            }
        }
    }

    /// Drops what is cached of `name`, after the backend said the queue is gone or changed.
    pub async fn invalidate(&self, name: &str) {
        self.resolved.invalidate(name).await;
    }

    /// The gateway name of the queue whose ARN is `arn`, if one is configured and resolvable.
    pub async fn name_of_arn(&self, arn: &str) -> Option<String> {
        for name in self.locators.keys() {
            if let Ok(queue) = self.get(name).await
                && queue.attributes.arn.as_deref() == Some(arn)
            {
                return Some(name.clone());
            }
        }
        None
    }

    /// Gateway names of the configured queues that dead-letter into the queue with `arn`.
    pub async fn dead_letter_sources(&self, arn: &str) -> Vec<String> {
        let mut sources = Vec::new();
        for name in self.locators.keys() {
            if let Ok(queue) = self.get(name).await
                && queue
                    .attributes
                    .redrive
                    .as_ref()
                    .is_some_and(|redrive| redrive.dead_letter_target_arn == arn)
            {
                sources.push(name.clone());
            }
        }
        sources
    }
}
