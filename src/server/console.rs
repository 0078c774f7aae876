//! The web console: a build-free page (HTML, one script, one style sheet) embedded in the binary
//! and served at `/console`. It is a browser client of the basaltic API and nothing more: every
//! action is that API's call with the signed-in key, so it has no back door. Its answers forbid
//! what the page never needs (a strict Content-Security-Policy: no inline script or style, no
//! other origin, no framing, no form posts) and are never cached.

use super::edge::CONSOLE;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use std::sync::Arc;

/// What the console's pages may load and do: their own script, style sheet and API, nothing else.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("../console/assets/index.html");
const SCRIPT: &str = include_str!("../console/assets/app.js");
const STYLE: &str = include_str!("../console/assets/app.css");

/// The console's routes (no state: the assets are constants).
#[derive(Debug, Clone, Copy, Default)]
pub struct Console;

/// One asset with the headers every console answer carries.
fn asset(content_type: &'static str, body: &'static str) -> Response {
    guarded(
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
            body,
        )
            .into_response(),
    )
}

/// `answer` with the headers every console answer carries.
fn guarded(answer: Response) -> Response {
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        ],
        answer,
    )
        .into_response()
}

impl crate::api::common::Dialect for Console {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &CONSOLE
    }

    fn router(self: Arc<Self>) -> Router {
        Router::new()
            // Relative asset links resolve under `/console/` only: send the bare path there.
            .route(
                "/console",
                get(|| async { guarded(Redirect::permanent("/console/").into_response()) }),
            )
            .route(
                "/console/",
                get(|| async { asset("text/html; charset=utf-8", INDEX) }),
            )
            .route(
                "/console/app.js",
                get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
            )
            .route(
                "/console/app.css",
                get(|| async { asset("text/css; charset=utf-8", STYLE) }),
            )
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&CONSOLE, request)
            })
    }
}

/// A browser that opens the gateway's root (`GET /` asking for HTML, with no query and no
/// credential: never an SQS client's request) is sent to the console instead of an SQS error.
pub async fn send_browsers_to_the_console(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let wants_page = request.method() == axum::http::Method::GET
        && request.uri().path() == "/"
        && request.uri().query().is_none()
        && !request.headers().contains_key(header::AUTHORIZATION)
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"));
    if wants_page {
        return Redirect::to("/console/").into_response();
    }
    next.run(request).await
}
