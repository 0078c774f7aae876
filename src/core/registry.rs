//! The queue registry: gateway queue names, the backend queues they map to, and cached attributes.
//!
//! Configured queues are always known. With queue management on (the SQS endpoint's CreateQueue and
//! friends), the registry is *open*: any name resolves to the backend queue of that name.

use crate::core::GatewayError;
use crate::core::backend::{Backend, BackendError};
use crate::core::model::ResolvedQueue;
use moka::future::Cache;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// Maps gateway queue names to backend queues, resolving and caching them on first use.
pub struct QueueRegistry {
    backend: Arc<dyn Backend>,
    /// Configured gateway name -> backend locator (a backend queue name or SQS URL).
    configured: BTreeMap<String, String>,
    /// Whether names beyond the configured ones map to backend queues of the same name.
    open: bool,
    resolved: Cache<String, Arc<ResolvedQueue>>,
}

impl std::fmt::Debug for QueueRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueRegistry")
            .field("queues", &self.configured)
            .field("open", &self.open)
            .finish_non_exhaustive()
    }
}

/// SQS's queue name rule: 1 to 80 of A-Z, a-z, 0-9, `-`, `_`, with an optional `.fifo` suffix.
pub fn valid_queue_name(name: &str) -> bool {
    let stem = name.strip_suffix(".fifo").unwrap_or(name);
    !stem.is_empty()
        && name.len() <= 80
        && stem
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl QueueRegistry {
    /// A registry of `configured` queues; attributes are cached for `ttl`.
    pub fn new(
        backend: Arc<dyn Backend>,
        configured: BTreeMap<String, String>,
        open: bool,
        ttl: Duration,
    ) -> Self {
        Self {
            backend,
            configured,
            open,
            resolved: Cache::builder().time_to_live(ttl).build(),
        }
    }

    /// Whether queues can be created and found beyond the configured ones.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether `name` may name a queue here (configured, or any valid name when open).
    pub fn contains(&self, name: &str) -> bool {
        self.configured.contains_key(name) || (self.open && valid_queue_name(name))
    }

    fn locator(&self, name: &str) -> Option<String> {
        match self.configured.get(name) {
            Some(locator) => Some(locator.clone()),
            None => (self.open && valid_queue_name(name)).then(|| name.to_owned()),
        }
    }

    /// The gateway queue names starting with `prefix`: configured ones, and when open the
    /// backend's own.
    pub async fn names(&self, prefix: &str) -> Result<Vec<String>, GatewayError> {
        let mut names: BTreeSet<String> = self
            .configured
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect();
        if self.open {
            let listed = self
                .backend
                .list_queues(prefix)
                .await
                .map_err(GatewayError::from)?;
            names.extend(listed);
        }
        Ok(names.into_iter().collect())
    }

    /// The backend queue behind `name`, resolved at most once per `ttl`.
    pub async fn get(&self, name: &str) -> Result<Arc<ResolvedQueue>, GatewayError> {
        let locator = self
            .locator(name)
            .ok_or_else(GatewayError::queue_not_found)?;
        self.resolved
            .try_get_with_by_ref(name, async {
                self.backend.resolve(&locator).await.map(Arc::new)
            })
            .await
            .map_err(|error: Arc<BackendError>| GatewayError::from((*error).clone()))
    }

    /// The backend locator a new queue named `name` gets.
    pub fn locator_for_new(&self, name: &str) -> Option<String> {
        self.locator(name)
    }

    /// Resolves every configured queue once and logs the ones the backend cannot find; start-up
    /// goes on either way (readiness reports an unreachable backend).
    pub async fn warm_up(&self) {
        for name in self.configured.keys() {
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

    /// The gateway name of the queue whose ARN is `arn`, if one is known and resolvable. An ARN
    /// ends with the backend queue's name: only the gateway queues that can be that one are
    /// resolved (the configured ones mapped to it, and the name itself when the registry is open).
    pub async fn name_of_arn(&self, arn: &str) -> Option<String> {
        let backend_name = arn.rsplit(':').next()?;
        let mut candidates: Vec<String> = self
            .configured
            .iter()
            .filter(|(_, locator)| locator.rsplit('/').next() == Some(backend_name))
            .map(|(name, _)| name.clone())
            .collect();
        if self.open && valid_queue_name(backend_name) {
            candidates.push(backend_name.to_owned());
        }
        for name in candidates {
            if let Ok(queue) = self.get(&name).await
                && queue.attributes.arn.as_deref() == Some(arn)
            {
                return Some(name);
            }
        }
        None
    }

    /// Gateway names of the known queues that dead-letter into the queue with `arn`.
    pub async fn dead_letter_sources(&self, arn: &str) -> Vec<String> {
        let mut sources = Vec::new();
        for name in self.names("").await.unwrap_or_default() {
            if let Ok(queue) = self.get(&name).await
                && queue
                    .attributes
                    .redrive
                    .as_ref()
                    .is_some_and(|redrive| redrive.dead_letter_target_arn == arn)
            {
                sources.push(name);
            }
        }
        sources
    }
}
