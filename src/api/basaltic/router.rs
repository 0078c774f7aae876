//! The dialect's routes assembled, with the edge's answer to a wrong method in its shape.

use super::{BasalticState, batches, messages, metrics, queues};
use axum::Router;
use std::sync::Arc;

impl crate::api::Dialect for BasalticState {
    fn router(self: Arc<Self>) -> Router {
        metrics::start_sampling(&self);
        Router::new()
            .merge(metrics::routes())
            .merge(queues::routes())
            .merge(messages::routes())
            .merge(batches::routes())
            .method_not_allowed_fallback(crate::api::edge::method_not_allowed)
            .with_state(self)
    }
}
