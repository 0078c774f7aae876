//! The sombus HTTPS pull API (its document "HTTPS pull API"): a consumer connection swaps its client id
//! and secret for an access token at `/v1/oauth/token`, then receives, acknowledges and releases
//! the messages of its own queue, and reads its skill registrations. Connections, their queues
//! and credentials are managed through the admin API (`/v1/admin/…`, its own keys).

mod admin;
pub mod config;
mod connections;
pub mod error;
pub mod openapi;
mod pull;
mod registrations;
mod router;

pub use router::plug;
mod token;
pub mod wire;

use crate::core::Gateway;
use crate::core::clock::Clock;
use crate::credentials::admin_keys::AdminKeys;
use crate::credentials::live::Live;
use crate::credentials::oauth::CredentialCheck;
use config::TierConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest request body of the pull, token and admin routes.
const BODY_LIMIT: usize = 64 * 1024;

/// What the sombus routes share.
pub struct SombusState {
    gateway: Arc<Gateway>,
    check: CredentialCheck,
    /// The admin keys, replaced whole when the config is reloaded.
    admin_keys: Live<AdminKeys>,
    tiers: BTreeMap<String, TierConfig>,
    registrations: Option<PathBuf>,
    public_url: crate::api::common::PublicUrl,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for SombusState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SombusState")
            .field("check", &self.check)
            .finish_non_exhaustive()
    }
}

/// The sombus API as the server's edge sees it: its pull, admin and token paths, each answered
/// in its own shape ([`edge_response`]).
#[derive(Debug, Clone, Copy)]
pub struct SombusEdge;

impl crate::api::common::EdgeShape for SombusEdge {
    fn name(&self) -> &'static str {
        "sombus"
    }

    fn serves(&self, path: &str) -> bool {
        path.starts_with("/v1/tenants/") || path.starts_with("/v1/admin/") || is_token_path(path)
    }

    fn render(
        &self,
        hints: &crate::api::common::RequestHints,
        error: crate::core::GatewayError,
    ) -> axum::response::Response {
        edge_response(&hints.path, error)
    }
}

/// An answer that arises outside the handlers (no route, a wrong method, a request line too long,
/// a request that ran too long, a connection over the limit) for a path of this API, in the shape
/// and rules its routes answer with: OAuth 2.0's for the token service, the admin API's rules under
/// `/v1/admin/`, the pull routes' elsewhere (so every answer on a path is one its OpenAPI document
/// allows).
pub fn edge_response(path: &str, error: crate::core::GatewayError) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if is_token_path(path) {
        error::OAuthError::from(error).into_response()
    } else if path.starts_with("/v1/admin/") {
        error::SombusError::admin(error).into_response()
    } else {
        error::SombusError::from(error).into_response()
    }
}

/// Whether a path is the token service's (its answers come in OAuth 2.0's shape).
pub fn is_token_path(path: &str) -> bool {
    path == "/v1/oauth/token" || path.starts_with("/v1/oauth/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{ErrorKind, GatewayError};

    async fn rule_of(path: &str, kind: ErrorKind) -> (u16, String) {
        let response = edge_response(path, GatewayError::new(kind, "edge"));
        let status = response.status().as_u16();
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let rule = body["violations"][0]["rule"]
            .as_str()
            .or(body["error"].as_str())
            .unwrap()
            .to_owned();
        (status, rule)
    }

    #[tokio::test]
    async fn edge_answers_carry_the_rules_of_the_paths_api() {
        let unavailable = || ErrorKind::Unavailable {
            retry_after: std::time::Duration::from_secs(1),
        };
        let admin = "/v1/admin/workspaces/w/connections";
        assert_eq!(
            rule_of(admin, unavailable()).await,
            (503, "admin.unavailable".into())
        );
        assert_eq!(
            rule_of(admin, ErrorKind::UriTooLong).await,
            (400, "admin.bad_request".into())
        );
        assert_eq!(
            rule_of("/v1/tenants/t/consumers/c/messages", unavailable()).await,
            (503, "consumer.queue_unavailable".into())
        );
        assert_eq!(
            rule_of("/v1/oauth/token", unavailable()).await,
            (503, "temporarily_unavailable".into())
        );
        for (path, rules) in [
            (admin, error::ADMIN_RULES),
            ("/v1/tenants/t/consumers/c/ack", error::PULL_RULES),
        ] {
            for kind in [
                ErrorKind::RouteNotFound,
                ErrorKind::MethodNotAllowed,
                ErrorKind::UriTooLong,
                ErrorKind::RequestTimeout,
                unavailable(),
            ] {
                let (_, rule) = rule_of(path, kind).await;
                assert!(rules.contains(&rule.as_str()), "{path}: {rule}");
            }
        }
    }
}
