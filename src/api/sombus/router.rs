//! The dialect's routes assembled, with the edge's answer to a wrong method in its shape.

use super::{SombusState, admin, pull, token};
use axum::Router;
use std::sync::Arc;

impl crate::api::Dialect for SombusState {
    fn router(self: Arc<Self>) -> Router {
        Router::new()
            .merge(token::routes())
            .merge(pull::routes())
            .merge(admin::routes())
            .method_not_allowed_fallback(crate::api::edge::method_not_allowed)
            .with_state(self)
    }
}
