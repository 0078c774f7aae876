//! The dialect's routes assembled, with the edge's answer to a wrong method in its shape.

use super::{SombusState, admin, pull, token};
use axum::Router;
use std::sync::Arc;

impl crate::api::common::Dialect for SombusState {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::SombusEdge
    }

    fn router(self: Arc<Self>) -> Router {
        Router::new()
            .merge(token::routes())
            .merge(pull::routes())
            .merge(admin::routes())
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::SombusEdge, request)
            })
            .with_state(self)
    }
}
