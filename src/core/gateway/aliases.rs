//! Aliases: the names each API knows gateway queues by, looked up for dialects and bound or
//! removed at runtime by callers who may manage the queue.

use super::Gateway;
use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::alias::{Alias, Namespace};
use crate::core::operation::Operation;

impl Gateway {
    /// The gateway queue `alias` names (`QueueNotFound` when none does). Dialects look a queue up
    /// this way; the operation they then call authorizes the caller on it.
    pub async fn queue_by_alias(&self, alias: &Alias) -> Result<String, GatewayError> {
        self.registry
            .queue_of_alias(alias)
            .await
            .ok_or_else(GatewayError::queue_not_found)
    }

    /// Every alias of `namespace` with the gateway queue it names (as this replica knows them:
    /// runtime aliases bound elsewhere arrive with the next read-back).
    pub fn aliases_in(&self, namespace: Namespace) -> Vec<(Alias, String)> {
        self.registry.aliases_in(namespace)
    }

    /// Every alias of `namespace` with its queue, the derived ones of every queue there is now
    /// included (what a dialect lists; callers see only what they hold something on).
    pub async fn listed_aliases(
        &self,
        namespace: Namespace,
    ) -> Result<Vec<(Alias, String)>, GatewayError> {
        self.registry.listed_aliases(namespace).await
    }

    /// Whether every API reaches `queue` by its own name (a queue the gateway maps, not one of
    /// its reserved ones) and basaltic names such queues too: then basaltic creates it under
    /// that name.
    pub fn basaltic_reaches_by_name(&self, queue: &str) -> bool {
        self.registry.derives_basaltic_ids() && self.registry.reaches_by_name(queue)
    }

    /// Changes whether basaltic names every queue the other APIs reach (`basaltic.all_queues`,
    /// on a config reload); answers whether that changed anything.
    pub fn set_basaltic_all_queues(&self, all_queues: bool) -> bool {
        self.registry.set_basaltic_ids(all_queues)
    }

    /// The aliases of `queue` in `namespace` (configured and runtime, then derived).
    pub fn aliases_of(&self, queue: &str, namespace: Namespace) -> Vec<Alias> {
        self.registry.aliases_of(queue, namespace)
    }

    /// Gives `queue` the name `alias`, kept on the backend queue so it survives restarts and is
    /// seen by other replicas. The caller must be allowed to manage the queue.
    pub async fn bind_alias(
        &self,
        caller: &Caller,
        alias: &Alias,
        queue: &str,
    ) -> Result<(), GatewayError> {
        self.admit(caller, Operation::BindAlias, queue)?;
        self.registry.bind(alias, queue).await
    }

    /// Takes the runtime alias `alias` away from its queue, which the caller must be allowed to
    /// manage.
    pub async fn unbind_alias(&self, caller: &Caller, alias: &Alias) -> Result<(), GatewayError> {
        Operation::UnbindAlias.record();
        let queue = self.queue_by_alias(alias).await.map_err(|_| {
            GatewayError::new(crate::core::ErrorKind::ResourceNotFound, "no such alias")
        })?;
        self.admit(caller, Operation::UnbindAlias, &queue)?;
        self.registry.unbind(alias).await
    }
}
