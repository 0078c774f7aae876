//! The in-process tier, continued: each dialect's own rules that need no socket (bodies and query
//! parameters with their ranges and defaults, unknown and repeated fields, credentials checked
//! before a body is read, error shapes and codes, routes and methods no handler serves, SigV4,
//! receipt handles forged, altered, stale or of another queue, batch and attribute rules, the
//! basaltic permissions, the OpenAPI documents), on the service of `inprocess/router.rs` over the
//! fake backend, with tokio's time paused. Where a refusal could lose a message, the test checks
//! that it did not: the message is still where it was.
//!
//! Each dialect's rules are in `<dialect>.rs`, or in `<dialect>/<topic>.rs` once they outgrow one
//! file (the helpers its topics share in that folder's `mod.rs`); SigV4 is the SQS endpoint's
//! (`sqs/sigv4.rs`); `openapi.rs` holds the documents' rules.

use crate::harness::{ORG, PROJECT, SQS_KEY_ID, SQS_SECRET};
use crate::inprocess::router::{InProcess, Reply, TokioClock, messages};
use axum::body::{Body, Bytes};
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::Clock;
use sqs_gateway::core::model::{OutgoingMessage, QueueStats};
use sqs_gateway::credentials::api_keys;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

mod basaltic;
mod ezgh;
mod openapi;
mod sombus;
mod sqs;

#[allow(unused_imports)]
use basaltic::*;
#[allow(unused_imports)]
use ezgh::*;
#[allow(unused_imports)]
use openapi::*;
#[allow(unused_imports)]
use sombus::*;
#[allow(unused_imports)]
use sqs::*;

/// `InProcess::start_with` puts its text in the config right after the test organization's table
/// header: tables given after a blank line there are the config's own (`[basaltic]`, `[sombus]`,
/// more `[[api_keys]]`).
pub(super) async fn with_tables(tables: &str) -> InProcess {
    InProcess::start_with(&format!("\n{tables}\n")).await
}

/// A request with a JSON body (or none) and a Bearer key (or none).
pub(super) fn request(
    method: Method,
    uri: &str,
    bearer: Option<&str>,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut builder = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json");
    if let Some(key) = bearer {
        builder = builder.header("authorization", format!("Bearer {key}"));
    }
    builder.body(body.into()).unwrap()
}

/// A request body that fails if it is read, and says whether anyone tried: a refusal "before the
/// body is read" leaves it untouched. It may declare a length (`Content-Length`).
#[derive(Clone, Default)]
pub(super) struct Tripwire(Arc<AtomicBool>);

pub(super) struct TripwireBody {
    pub(super) read: Arc<AtomicBool>,
    pub(super) declared: Option<u64>,
}

impl http_body::Body for TripwireBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.read.store(true, Ordering::SeqCst);
        Poll::Ready(Some(Err(std::io::Error::other("the body was read"))))
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.declared.map_or_else(
            http_body::SizeHint::default,
            http_body::SizeHint::with_exact,
        )
    }
}

impl Tripwire {
    fn body(&self) -> Body {
        self.declaring(None)
    }

    fn declaring(&self, declared: Option<u64>) -> Body {
        Body::new(TripwireBody {
            read: Arc::clone(&self.0),
            declared,
        })
    }

    fn was_read(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A receipt handle with one character in its middle changed (to another of its alphabet): what
/// a client that altered a handle sends.
pub(super) fn altered(handle: &str) -> String {
    let mut chars: Vec<char> = handle.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// The backend's counts of the test queue `orders`.
pub(super) async fn depth(service: &InProcess) -> QueueStats {
    service.backend.stats(&service.queue_url).await.unwrap()
}

/// Puts `count` messages in `orders` straight into the backend.
pub(super) async fn send_many(service: &InProcess, count: usize) {
    for n in 0..count {
        service.send(&format!("message {n}")).await;
    }
}

pub(super) fn handle(message: &Value) -> String {
    message["receiptHandle"].as_str().unwrap().to_owned()
}
