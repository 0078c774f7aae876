//! `POST /v1/oauth/token`: the client credentials grant (RFC 6749 §4.4). The client authenticates
//! with HTTP Basic before its body is read; errors come in OAuth 2.0's shape.

use super::SombusState;
use super::error::{OAuthError, OAuthErrorCode};
use super::wire::{self, TokenAnswer, TokenType};
use crate::api::common::{ClientAddress, read_body};
use crate::core::access::Principal;
use crate::core::limits::LimitKey;
use crate::core::request_scope;
use crate::credentials::oauth::Refusal;
use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine as _;
use std::sync::Arc;

/// The largest token request body.
const TOKEN_BODY_LIMIT: usize = 4096;
/// Failed token requests an address may make in any minute before it gets 429.
const FAILURES_PER_MINUTE: u32 = 60;

/// The token route, documented by its handler's `utoipa::path`.
pub(super) fn routes() -> axum::Router<Arc<SombusState>> {
    axum::Router::new().route("/v1/oauth/token", post(token))
}

#[utoipa::path(
    post,
    path = "/v1/oauth/token",
    operation_id = "token",
    tag = "token",
    summary = "Swap a client id and secret for an access token",
    description = "The client credentials grant (RFC 6749 §4.4): authenticate with HTTP Basic \
        (client id and secret) and send `grant_type=client_credentials`. Reuse the token for its \
        whole life. Errors come in OAuth 2.0's shape (RFC 6749 §5.2); every answer carries \
        `Cache-Control: no-store`. Failed authentications are counted per address: past 60 in a \
        minute, a request that presents credentials gets 429 (one that presents none still gets \
        401 and the challenge).",
    request_body(content = wire::TokenRequest, content_type = "application/x-www-form-urlencoded"),
    security(("client_credentials" = [])),
    responses(
        (status = 200, description = "An access token.", body = wire::TokenAnswer),
        (status = 400, body = super::error::OAuthErrorBody),
        (status = 401, body = super::error::OAuthErrorBody),
        (status = 429, body = super::error::OAuthErrorBody),
        (status = 503, body = super::error::OAuthErrorBody),
    )
)]
async fn token(
    State(state): State<Arc<SombusState>>,
    ClientAddress(client): ClientAddress,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, OAuthError> {
    let presented = basic_credentials(&headers);
    let guessed = presented.is_some();
    let claimed = presented.as_ref().map(|(client_id, _)| client_id.clone());
    let authenticated = match presented {
        Some((client_id, secret)) => state.check.authenticate_client(&client_id, &secret).await,
        None => Err(Refusal::Unauthenticated(
            "authenticate with HTTP Basic: the client id and secret",
        )),
    };
    let (connection, serial) = match authenticated {
        Ok(found) => {
            request_scope::note_caller(&Principal::Token(found.0.client_id.clone()));
            found
        }
        Err(Refusal::Unavailable) => {
            return Err(OAuthError::new(
                OAuthErrorCode::TemporarilyUnavailable,
                "the token service is unavailable; retry later",
            ));
        }
        Err(Refusal::Unauthenticated(why) | Refusal::NotRegistered(why)) => {
            request_scope::note_refused("client", claimed.as_deref());
            // Failures count against the caller's address; past the budget, a request that
            // presents credentials gets 429. One that presents none guesses nothing: it is still
            // told how to authenticate (401 with the Basic challenge).
            let budget = state
                .gateway
                .limits()
                .per_minute(
                    LimitKey::TokenFailures(client),
                    1,
                    FAILURES_PER_MINUTE,
                    "too many failed token requests from this address",
                )
                .await;
            return Err(match budget {
                Err(limited) if guessed => OAuthError::new(
                    OAuthErrorCode::TooManyFailures,
                    "too many failed token requests from this address; retry later",
                )
                .retry_after(limited.retry_after()),
                _ => OAuthError::new(OAuthErrorCode::InvalidClient, why),
            });
        }
    };
    let form_encoded = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_none_or(|value| {
            value.split(';').next().is_some_and(|kind| {
                kind.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !form_encoded {
        return Err(OAuthError::new(
            OAuthErrorCode::InvalidRequest,
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let body = read_body(body, TOKEN_BODY_LIMIT).await?;
    let mut grant_type = None;
    for (name, value) in form_urlencoded::parse(&body) {
        if name == "grant_type" {
            if grant_type.is_some() {
                return Err(OAuthError::new(
                    OAuthErrorCode::InvalidRequest,
                    "grant_type is given twice",
                ));
            }
            grant_type = Some(value.into_owned());
        }
    }
    match grant_type.as_deref() {
        Some("client_credentials") => {}
        Some(_) => {
            return Err(OAuthError::new(
                OAuthErrorCode::UnsupportedGrantType,
                "only grant_type=client_credentials is supported",
            ));
        }
        None => {
            return Err(OAuthError::new(
                OAuthErrorCode::InvalidRequest,
                "grant_type is required",
            ));
        }
    }
    let access_token = state.check.mint(&connection, serial);
    tracing::info!(client_id = %connection.client_id, workspace = %connection.workspace, "token issued");
    let mut response = Json(TokenAnswer {
        access_token,
        token_type: TokenType::Bearer,
        expires_in: state.check.tokens().lifetime().num_seconds(),
    })
    .into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// `client_id:client_secret` of an `Authorization: Basic` header.
fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    (!id.is_empty() && !secret.is_empty()).then(|| (id.to_owned(), secret.to_owned()))
}
