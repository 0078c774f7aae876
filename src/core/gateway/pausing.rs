//! Pausing a queue's deliveries: authorized (`manage_queues` on the queue), kept and audited by
//! the admin port, and honoured by every receive ([`Gateway::receive`]).

use super::Gateway;
use crate::core::access::Caller;
use crate::core::delivery_pause::Pauses;
use crate::core::operation::Operation;
use crate::core::push::admin::{Actor, SubscriptionAdmin};
use crate::core::{ErrorKind, GatewayError};
use chrono::{DateTime, Utc};
use std::sync::Arc;

impl Gateway {
    /// The queues whose deliveries are paused, as this process knows them.
    pub fn delivery_pauses(&self) -> &Pauses {
        &self.pauses
    }

    /// Since when `queue`'s deliveries are paused, if they are.
    pub fn delivery_paused_since(&self, queue: &str) -> Option<DateTime<Utc>> {
        self.pauses.paused_since(queue)
    }

    /// The admin port, for a pause of `queue` (which must exist).
    async fn pause_admin(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<&Arc<dyn SubscriptionAdmin>, GatewayError> {
        self.admit(caller, Operation::PauseDelivery, queue)?;
        self.registry.get(queue).await?;
        self.push_admin.get().ok_or_else(|| {
            GatewayError::new(
                ErrorKind::Unsupported,
                "this gateway keeps no queue controls (pauses) at run time",
            )
        })
    }

    /// Pauses `queue`'s deliveries: every receive of it answers no message (after waiting out
    /// its long poll) and its push subscriptions post nothing, until resumed; sends go on.
    /// Answers since when it is paused.
    pub async fn pause_delivery(
        &self,
        caller: &Caller,
        queue: &str,
    ) -> Result<DateTime<Utc>, GatewayError> {
        let admin = self.pause_admin(caller, queue).await?;
        let actor = caller.principal().audit_name();
        admin.pause_delivery(Actor(&actor), queue).await
    }

    /// Ends `queue`'s pause: the receives waiting it out go on at once.
    pub async fn resume_delivery(&self, caller: &Caller, queue: &str) -> Result<(), GatewayError> {
        let admin = self.pause_admin(caller, queue).await?;
        let actor = caller.principal().audit_name();
        admin.resume_delivery(Actor(&actor), queue).await
    }
}
