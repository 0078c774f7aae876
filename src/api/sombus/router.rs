//! The dialect built from its config section, and its routes assembled with the edge's answer to
//! a wrong method in its shape.

use super::{SombusState, admin, config::SombusConfig, pull, token};
use crate::api::common::{Dialect, Document, PlugContext, PublicUrl};
use crate::credentials::admin_keys::AdminKeys;
use crate::credentials::live::Live;
use crate::credentials::oauth::{CredentialCheck, TokenService};
use axum::Router;
use std::sync::Arc;
use std::time::Duration;

/// The dialect from its config section, its tokens signed with keys derived from the receipt
/// keys; `admin_keys` is the handle a config reload swaps the keys behind. Creates a crash left
/// half-made are undone before it serves; it then looks for them once a minute, and follows the
/// changes other replicas make to a shared store.
pub async fn plug(
    section: &SombusConfig,
    admin_keys: Live<AdminKeys>,
    context: &PlugContext,
) -> Arc<dyn Dialect> {
    let tokens = TokenService::new(
        &context.keyring,
        &section.environment,
        chrono::Duration::seconds(i64::from(section.token_lifetime_seconds)),
    );
    let check = CredentialCheck::new(
        tokens,
        Arc::clone(&context.credentials),
        Duration::from_secs(u64::from(section.credential_recheck_seconds)),
        Arc::clone(&context.clock),
    );
    let sombus = Arc::new(SombusState {
        gateway: Arc::clone(&context.gateway),
        check,
        admin_keys,
        tiers: section.tiers(),
        registrations: section.registrations_file.clone(),
        public_url: PublicUrl::new(section.public_url.as_deref(), context.tls),
        clock: Arc::clone(&context.clock),
    });
    sombus.recover_at_start(context.credentials_exclusive).await;
    tokio::spawn(Arc::clone(&sombus).upkeep());
    tokio::spawn(Arc::clone(&sombus).follow_changes());
    sombus
}

impl Dialect for SombusState {
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

    fn document(&self) -> Option<Document> {
        Some(Document {
            path: "/openapi/sombus.json",
            make: super::openapi::document,
        })
    }
}
