//! The dialect built from its config section, and its routes assembled with the edge's answer to
//! a wrong method in its shape.

use super::config::BasalticConfig;
use super::{
    BasalticState, batches, delivery, inspecting, key, messages, metrics, queues, redrive,
    subscriptions,
};
use crate::api::common::{Dialect, Document, PlugContext};
use crate::credentials::basaltic_keys::BasalticKeys;
use crate::credentials::live::Live;
use axum::Router;
use std::sync::Arc;
use std::time::Duration;

/// The dialect from its config section; `keys` is the handle a config reload swaps the keys
/// behind. Its queues are sampled every `metrics_interval_seconds` into the context's history
/// (this process's, or the one the replicas share).
pub fn plug(
    section: &BasalticConfig,
    keys: Live<BasalticKeys>,
    context: &PlugContext,
) -> Arc<dyn Dialect> {
    Arc::new(BasalticState {
        gateway: Arc::clone(&context.gateway),
        keys,
        metrics: metrics::Metrics::new(
            Duration::from_secs(section.metrics_interval_seconds),
            Arc::clone(&context.sample_history),
        ),
        creating: tokio::sync::Mutex::new(()),
        export_disabled: section.export_disabled.clone(),
    })
}

impl Dialect for BasalticState {
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
            .merge(delivery::routes())
            .merge(inspecting::routes())
            .merge(key::routes())
            .merge(subscriptions::routes())
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&super::BasalticEdge, request)
            })
            .with_state(self)
    }

    fn document(&self) -> Option<Document> {
        Some(Document {
            path: "/openapi/basaltic.json",
            make: super::openapi::document,
        })
    }
}
