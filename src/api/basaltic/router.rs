//! The dialect's routes assembled, with the edge's answer to a wrong method in its shape.

use super::{BasalticState, batches, key, messages, metrics, queues, redrive, subscriptions};
use axum::Router;
use std::sync::Arc;

impl crate::api::common::Dialect for BasalticState {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::BasalticEdge
    }

    fn router(self: Arc<Self>) -> Router {
        metrics::start_sampling(&self);
        Router::new()
            .merge(metrics::routes())
            .merge(queues::routes())
            .merge(messages::routes())
            .merge(batches::routes())
            .merge(redrive::routes())
            .merge(key::routes())
            .merge(subscriptions::routes())
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::BasalticEdge, request)
            })
            .with_state(self)
    }
}
