//! Push subscriptions made at run time: each change authorized (`manage_queues` on the queue)
//! and handed to the admin port with who asked, for its audit trail.

use super::Gateway;
use crate::core::access::Caller;
use crate::core::operation::Operation;
use crate::core::push::admin::{
    Actor, AuditEntry, Change, Managed, Settings, SubscriptionAdmin, WithSecret,
};
use crate::core::{ErrorKind, GatewayError};
use std::sync::Arc;
use std::time::Duration;

impl Gateway {
    /// Plugs in where subscriptions made at run time are kept (once; later calls change nothing).
    pub fn set_push_admin(&self, admin: Arc<dyn SubscriptionAdmin>) {
        let _ = self.push_admin.set(admin);
    }

    /// The admin port, or `unsupported` when none is plugged in. A subscription receives and
    /// acknowledges the queue's messages, and its secret speaks for the gateway to its endpoint:
    /// managing one takes what managing the queue takes, and receiving and deleting there too.
    fn push_admin_for(
        &self,
        caller: &Caller,
        operation: Operation,
        queue: &str,
    ) -> Result<&Arc<dyn SubscriptionAdmin>, GatewayError> {
        self.admit(caller, operation, queue)?;
        for consumer in [Operation::Receive, Operation::Acknowledge] {
            self.allowed(caller, consumer, queue).map_err(|error| {
                if error.kind == ErrorKind::PermissionDenied {
                    GatewayError::permission_denied(
                        "a push subscription consumes the queue: managing one also takes receiving and deleting its messages",
                    )
                } else {
                    error
                }
            })?;
        }
        self.push_admin.get().ok_or_else(|| {
            GatewayError::new(
                ErrorKind::Unsupported,
                "this gateway does not manage push subscriptions at run time",
            )
        })
    }

    /// Makes a push subscription of `queue` (which must exist); its secret is answered once.
    pub async fn create_push_subscription(
        &self,
        caller: &Caller,
        queue: &str,
        name: &str,
        settings: Settings,
    ) -> Result<WithSecret, GatewayError> {
        let admin = self.push_admin_for(caller, Operation::ManageSubscriptions, queue)?;
        self.registry.get(queue).await?;
        let actor = caller.principal().audit_name();
        admin.create(Actor(&actor), queue, name, settings).await
    }

    /// Changes a push subscription of `queue`.
    pub async fn update_push_subscription(
        &self,
        caller: &Caller,
        queue: &str,
        name: &str,
        change: Change,
    ) -> Result<Managed, GatewayError> {
        let admin = self.push_admin_for(caller, Operation::ManageSubscriptions, queue)?;
        let actor = caller.principal().audit_name();
        admin.update(Actor(&actor), queue, name, change).await
    }

    /// Gives a push subscription of `queue` a new secret (answered once); the replaced one signs
    /// too for `overlap`.
    pub async fn rotate_push_secret(
        &self,
        caller: &Caller,
        queue: &str,
        name: &str,
        overlap: Duration,
    ) -> Result<WithSecret, GatewayError> {
        let admin = self.push_admin_for(caller, Operation::ManageSubscriptions, queue)?;
        let actor = caller.principal().audit_name();
        admin.rotate(Actor(&actor), queue, name, overlap).await
    }

    /// Removes a push subscription of `queue`.
    pub async fn delete_push_subscription(
        &self,
        caller: &Caller,
        queue: &str,
        name: &str,
    ) -> Result<(), GatewayError> {
        let admin = self.push_admin_for(caller, Operation::ManageSubscriptions, queue)?;
        let actor = caller.principal().audit_name();
        admin.delete(Actor(&actor), queue, name).await
    }

    /// The push subscriptions of `queue` made at run time (none where none can be); a caller
    /// that may not manage them (as [`Self::push_admin_for`] judges) sees each endpoint's
    /// scheme, host and port only.
    pub async fn managed_push_subscriptions(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<Vec<Managed>, GatewayError> {
        self.admit(caller, Operation::QueueStats, queue)?;
        let Some(admin) = self.push_admin.get() else {
            return Ok(Vec::new());
        };
        let mut managed = admin.list(queue).await?;
        let manages = [
            Operation::ManageSubscriptions,
            Operation::Receive,
            Operation::Acknowledge,
        ]
        .into_iter()
        .all(|operation| self.allowed(caller, operation, queue).is_ok());
        if !manages {
            for one in &mut managed {
                one.endpoint = crate::core::push::endpoint_for_readers(&one.endpoint);
            }
        }
        Ok(managed)
    }

    /// The audit trail of `queue`'s push subscriptions, newest first.
    pub async fn push_subscription_audit(
        &self,
        caller: &Caller,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, GatewayError> {
        self.admit(caller, Operation::QueueStats, queue)?;
        match self.push_admin.get() {
            Some(admin) => admin.audit(queue, limit, before).await,
            None => Ok(Vec::new()),
        }
    }
}
