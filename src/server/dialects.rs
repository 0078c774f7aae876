//! The one list of what the server plugs in: the four dialects, then the service's own paths (the
//! probes, the OpenAPI documents the dialects give, the console). The edge asks them in this
//! order, their documents are served from it and their upkeep runs from it: a new dialect is its
//! folder under `api/`, its section in the config, and one line here. Paths none serves answer in
//! the [`super::own_paths::FALLBACK`] shape.

use super::reload::LiveKeys;
use super::{console, documents::OpenApiDocuments, health::Health};
use crate::api;
use crate::api::common::{Dialect, PlugContext};
use crate::config::Config;
use std::sync::Arc;

/// Every plug, built.
pub(super) async fn plug_all(
    config: &Config,
    keys: &LiveKeys,
    context: &PlugContext,
) -> Vec<Arc<dyn Dialect>> {
    let mut plugs = vec![
        api::sombus::plug(&config.sombus, keys.admin.clone(), context).await,
        api::basaltic::plug(&config.basaltic, keys.basaltic.clone(), context),
        api::ezgh::plug(&config.ezgh, keys.api.clone(), context),
        api::sqs::plug(&config.sqs_api, keys.sqs.clone(), context),
    ];
    let documents = OpenApiDocuments::of(&plugs);
    let health = Health::new(Arc::clone(&context.gateway))
        .with_credential_store(Arc::clone(&context.credentials));
    plugs.extend([
        Arc::new(health) as Arc<dyn Dialect>,
        Arc::new(documents),
        Arc::new(console::Console),
    ]);
    plugs
}
