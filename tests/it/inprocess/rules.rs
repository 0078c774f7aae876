//! The in-process tier, continued: each dialect's own rules that need no socket (bodies and query
//! parameters with their ranges and defaults, unknown and repeated fields, credentials checked
//! before a body is read, error shapes and codes, routes and methods no handler serves, SigV4,
//! receipt handles forged, altered, stale or of another queue, batch and attribute rules, the
//! basaltic permissions, the OpenAPI documents), on the service of `inprocess.rs` over the fake
//! backend, with tokio's time paused. Where a refusal could lose a message, the test checks that
//! it did not: the message is still where it was.

use crate::harness::{ORG, PROJECT, SQS_KEY_ID, SQS_SECRET};
use crate::inprocess::fake::FakeBackend;
use crate::inprocess::router::{InProcess, Reply, TokioClock, messages};
use axum::body::{Body, Bytes};
use http::{HeaderMap, Method, Request, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::config::Config;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::Clock;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::core::model::{OutgoingMessage, QueueSettings, QueueStats};
use sqs_gateway::credentials::api_keys;
use sqs_gateway::server::{App, Overrides};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// `InProcess::start_with` puts its text in the config right after the test organization's table
/// header: tables given after a blank line there are the config's own (`[basaltic]`, `[sombus]`,
/// more `[[api_keys]]`).
async fn with_tables(tables: &str) -> InProcess {
    InProcess::start_with(&format!("\n{tables}\n")).await
}

/// A request with a JSON body (or none) and a Bearer key (or none).
fn request(
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
struct Tripwire(Arc<AtomicBool>);

struct TripwireBody {
    read: Arc<AtomicBool>,
    declared: Option<u64>,
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

/// The headers of the service's last answer: `Reply` keeps the status and body only, so a layer
/// over the router copies them here.
#[derive(Clone, Default)]
struct LastHeaders(Arc<Mutex<HeaderMap>>);

impl LastHeaders {
    fn watch(service: &mut InProcess) -> Self {
        let last = Self::default();
        let slot = last.clone();
        service.router = service
            .router
            .clone()
            .layer(tower::util::MapResponseLayer::new(
                move |response: axum::response::Response| {
                    *slot.0.lock().unwrap() = response.headers().clone();
                    response
                },
            ));
        last
    }

    fn get(&self, name: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap()
            .get(name)
            .map(|value| value.to_str().unwrap().to_owned())
    }
}

/// A receipt handle with one character in its middle changed (to another of its alphabet): what
/// a client that altered a handle sends.
fn altered(handle: &str) -> String {
    let mut chars: Vec<char> = handle.chars().collect();
    let middle = chars.len() / 2;
    chars[middle] = if chars[middle] == 'A' { 'B' } else { 'A' };
    chars.into_iter().collect()
}

/// The backend's counts of the test queue `orders`.
async fn depth(service: &InProcess) -> QueueStats {
    service.backend.stats(&service.queue_url).await.unwrap()
}

/// Puts `count` messages in `orders` straight into the backend.
async fn send_many(service: &InProcess, count: usize) {
    for n in 0..count {
        service.send(&format!("message {n}")).await;
    }
}

fn handle(message: &Value) -> String {
    message["receiptHandle"].as_str().unwrap().to_owned()
}

// ---------------------------------------------------------------------------------------------
// ezgh: errors are `{"error", "message"}`
// ---------------------------------------------------------------------------------------------

fn receive_path(organization: &str, project: &str, queue: &str) -> String {
    format!("/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive")
}

async fn ezgh_receive_raw(service: &InProcess, key: Option<&str>, body: &str) -> Reply {
    service
        .call(request(
            Method::POST,
            &receive_path(ORG, PROJECT, "orders"),
            key,
            body.to_owned(),
        ))
        .await
}

async fn ezgh_ack_raw(service: &InProcess, body: Value) -> Reply {
    service
        .call(request(
            Method::POST,
            "/v1/receipts/ack",
            None,
            body.to_string(),
        ))
        .await
}

async fn ezgh_visibility(service: &InProcess, entries: Value) -> Reply {
    service
        .call(request(
            Method::POST,
            "/v1/receipts/visibility",
            None,
            json!({ "entries": entries }).to_string(),
        ))
        .await
}

fn ezgh_error(reply: &Reply) -> (StatusCode, &str) {
    assert!(reply.body["message"].is_string(), "{}", reply.text);
    (
        reply.status,
        reply.body["error"].as_str().unwrap_or_default(),
    )
}

fn results(reply: &Reply) -> &Vec<Value> {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["results"].as_array().unwrap()
}

/// Receive's ranges are the documented ones, at both ends; `null` is absent and `10.0` an
/// integer; a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_fields_hold_to_their_ranges() {
    let service = InProcess::start().await;
    service.send("kept").await;
    for body in [
        json!({ "maxMessages": 0 }),
        json!({ "maxMessages": 11 }),
        json!({ "waitSeconds": -1 }),
        json!({ "waitSeconds": 21 }),
        json!({ "visibilityTimeoutSeconds": -1 }),
        json!({ "visibilityTimeoutSeconds": 43_201 }),
        json!({ "maxMessages": 1e20 }),
    ] {
        let refused = service.receive(body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, "out_of_range"),
            "{body}"
        );
    }
    for body in [
        json!({ "maxMessages": "1" }),
        json!({ "maxMessages": 1.5 }),
        json!({ "waitSeconds": true }),
    ] {
        let refused = service.receive(body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, "invalid_request"),
            "{body}"
        );
    }
    assert_eq!(depth(&service).await.visible, 1, "nothing was leased");
    let edges = service
        .receive(
            json!({ "maxMessages": 10.0, "waitSeconds": null, "visibilityTimeoutSeconds": 43_200 }),
        )
        .await;
    assert_eq!(messages(&edges).len(), 1);
    assert_eq!(messages(&edges)[0]["receiveCount"], 1);
}

/// An empty body takes every default (one message, the queue's 30 s visibility); the body is
/// JSON whatever its `Content-Type`; an unknown field (a typo) is refused without being echoed.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_defaults_and_unknown_fields() {
    let service = InProcess::start().await;
    send_many(&service, 3).await;
    let typo = service.receive(json!({ "waitSecond": 5 })).await;
    assert_eq!(
        ezgh_error(&typo),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(!typo.text.contains("waitSecond\""), "{}", typo.text);

    let defaults = ezgh_receive_raw(&service, Some(&service.key), "").await;
    assert_eq!(messages(&defaults).len(), 1, "maxMessages defaults to 1");
    let as_text = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri(receive_path(ORG, PROJECT, "orders"))
                .header("authorization", format!("Bearer {}", service.key))
                .header("content-type", "text/plain")
                .body(Body::from(r#"{"maxMessages": 2}"#))
                .unwrap(),
        )
        .await;
    assert_eq!(messages(&as_text).len(), 2, "{}", as_text.text);
    // The first message comes back when the queue's 30 s visibility has passed, not before.
    tokio::time::advance(Duration::from_secs(29)).await;
    assert!(messages(&service.receive(json!({})).await).is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = service.receive(json!({})).await;
    assert_eq!(messages(&back)[0]["receiveCount"], 2);
}

/// A key given twice in a body is refused, naming the key and no value; nothing is received or
/// acknowledged.
#[tokio::test(start_paused = true)]
async fn ezgh_a_key_given_twice_is_refused() {
    let service = InProcess::start().await;
    service.send("one").await;
    let twice = ezgh_receive_raw(
        &service,
        Some(&service.key),
        r#"{"maxMessages": 1, "maxMessages": 7}"#,
    )
    .await;
    assert_eq!(
        ezgh_error(&twice),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    let message = twice.body["message"].as_str().unwrap();
    assert!(
        message.contains("\"maxMessages\"") && message.contains("more than once"),
        "{message}"
    );
    assert!(!message.contains('7'), "{message}");
    assert_eq!(depth(&service).await.visible, 1);

    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    let body = format!(r#"{{"receiptHandles": ["{current}"], "receiptHandles": ["AQAAAH8x"]}}"#);
    let refused = service
        .call(request(Method::POST, "/v1/receipts/ack", None, body))
        .await;
    assert_eq!(
        ezgh_error(&refused),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(!refused.text.contains(&current), "a handle was echoed");
    assert_eq!(depth(&service).await.in_flight, 1, "not acknowledged");
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
}

/// A receive without a valid key is 401 with the Bearer challenge, answered from the head: the
/// body is never read, and neither is the queue.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_refuses_missing_or_wrong_keys_before_reading_the_body() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    service.send("kept").await;
    let mut shortened = service.key.clone();
    shortened.pop();
    for authorization in [
        None,
        Some("Bearer ".to_owned()),
        Some("Bearer sqsgw_0000_notakey".to_owned()),
        Some(format!("Bearer {shortened}")),
        Some(format!("Basic {}", service.key)),
    ] {
        let tripwire = Tripwire::default();
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(receive_path(ORG, PROJECT, "orders"));
        if let Some(value) = &authorization {
            builder = builder.header("authorization", value);
        }
        let refused = service.call(builder.body(tripwire.body()).unwrap()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::UNAUTHORIZED, "unauthenticated"),
            "{authorization:?}"
        );
        assert_eq!(headers.get("www-authenticate").as_deref(), Some("Bearer"));
        assert!(!tripwire.was_read(), "{authorization:?}: the body was read");
        assert!(!refused.text.contains(&service.key), "a key was echoed");
    }
    assert_eq!(depth(&service).await.visible, 1);
    // The control: with the right key the body is read (and, failing, refused as cut short).
    let tripwire = Tripwire::default();
    let read = service
        .call(request(
            Method::POST,
            &receive_path(ORG, PROJECT, "orders"),
            Some(&service.key),
            tripwire.body(),
        ))
        .await;
    assert_eq!(
        ezgh_error(&read),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(tripwire.was_read());
}

/// 403 for a key of another organization or without the receive grant, 404 for a queue or
/// project the organization does not have; none of them leases anything.
#[tokio::test(start_paused = true)]
async fn ezgh_receive_checks_organization_grant_and_queue() {
    let bare = api_keys::generate_key();
    let service = with_tables(&format!(
        "[[api_keys]]\nid = \"{}\"\norganization = \"{ORG}\"\nhash = \"{}\"\ngrants = {{}}\n",
        bare.id, bare.hash
    ))
    .await;
    service.send("kept").await;
    let bare_answer = ezgh_receive_raw(&service, Some(&bare.key), "{}").await;
    assert_eq!(
        ezgh_error(&bare_answer),
        (StatusCode::FORBIDDEN, "permission_denied")
    );
    for (path, expected) in [
        (
            receive_path("other-org", PROJECT, "orders"),
            (StatusCode::FORBIDDEN, "permission_denied"),
        ),
        (
            receive_path(ORG, PROJECT, "nope"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
        (
            receive_path(ORG, "nope", "orders"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
        (
            receive_path(ORG, PROJECT, "sqsgw_bq_x_00000000"),
            (StatusCode::NOT_FOUND, "queue_not_found"),
        ),
    ] {
        let answer = service
            .call(request(Method::POST, &path, Some(&service.key), "{}"))
            .await;
        assert_eq!(ezgh_error(&answer), expected, "{path}");
    }
    assert_eq!(depth(&service).await.visible, 1);
}

/// A path segment that is not UTF-8 once decoded is ezgh's 400 `invalid_request`, not axum's
/// text.
#[tokio::test(start_paused = true)]
async fn ezgh_a_path_that_is_not_utf8_is_an_invalid_request() {
    let service = InProcess::start().await;
    let answer = service
        .call(request(
            Method::POST,
            &receive_path("%FF%FE", PROJECT, "orders"),
            Some(&service.key),
            "{}",
        ))
        .await;
    assert_eq!(
        ezgh_error(&answer),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
}

/// Bodies over 64 KiB are 413 `payload_too_large` from their declared length, unread (a receive
/// after its key is checked; an acknowledgement, which takes no key, at once).
#[tokio::test(start_paused = true)]
async fn ezgh_bodies_over_64_kib_are_refused_unread() {
    let service = InProcess::start().await;
    for (path, key) in [
        (
            receive_path(ORG, PROJECT, "orders"),
            Some(service.key.as_str()),
        ),
        ("/v1/receipts/ack".to_owned(), None),
        ("/v1/receipts/visibility".to_owned(), None),
    ] {
        let tripwire = Tripwire::default();
        let answer = service
            .call(request(
                Method::POST,
                &path,
                key,
                tripwire.declaring(Some(64 * 1024 + 1)),
            ))
            .await;
        assert_eq!(
            ezgh_error(&answer),
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            "{path}"
        );
        assert!(!tripwire.was_read(), "{path}");
    }
}

/// An acknowledgement takes 1 to 10 string handles and nothing else; a refused one acts on none
/// of its handles, so the message stays in flight until acknowledged properly.
#[tokio::test(start_paused = true)]
async fn ezgh_ack_batches_are_checked_whole_and_act_on_nothing_when_refused() {
    let service = InProcess::start().await;
    service.send("precious").await;
    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    let eleven: Vec<String> = std::iter::once(current.clone())
        .chain((0..10).map(|n| format!("AQAAAH8{n}")))
        .collect();
    for (body, code) in [
        (json!({ "receiptHandles": [] }), "out_of_range"),
        (json!({ "receiptHandles": eleven }), "out_of_range"),
        (json!({}), "invalid_request"),
        (json!({ "receiptHandles": current }), "invalid_request"),
        (json!({ "receiptHandles": [current, 7] }), "invalid_request"),
        (
            json!({ "receiptHandles": [current], "force": true }),
            "invalid_request",
        ),
    ] {
        let refused = ezgh_ack_raw(&service, body.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, code),
            "{body}"
        );
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    let not_json = service
        .call(request(Method::POST, "/v1/receipts/ack", None, "{"))
        .await;
    assert_eq!(
        ezgh_error(&not_json),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "nothing was acknowledged"
    );
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// A visibility change takes entries with a handle and a timeout of 0 to 43,200 s; a refused one
/// changes nothing (the message stays hidden).
#[tokio::test(start_paused = true)]
async fn ezgh_visibility_entries_are_checked_whole() {
    let service = InProcess::start().await;
    service.send("hidden").await;
    let got = service.receive(json!({})).await;
    let current = handle(&messages(&got)[0]);
    for (entries, code) in [
        (json!([]), "out_of_range"),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 },
                   { "receiptHandle": current, "visibilityTimeoutSeconds": 43_201 }]),
            "out_of_range",
        ),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 },
                   { "receiptHandle": current }]),
            "invalid_request",
        ),
        (
            json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0, "extra": 1 }]),
            "invalid_request",
        ),
        (json!([current]), "invalid_request"),
    ] {
        let refused = ezgh_visibility(&service, entries.clone()).await;
        assert_eq!(
            ezgh_error(&refused),
            (StatusCode::BAD_REQUEST, code),
            "{entries}"
        );
    }
    assert!(
        messages(&service.receive(json!({})).await).is_empty(),
        "no refused change released the message"
    );
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released)[0], json!({ "ok": true }));
    assert_eq!(messages(&service.receive(json!({})).await).len(), 1);
}

/// An altered or forged handle is `receipt_handle_invalid` in its place, acts nowhere, and the
/// request's other handles act.
#[tokio::test(start_paused = true)]
async fn ezgh_altered_and_forged_handles_are_invalid_and_act_nowhere() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let got = service.receive(json!({ "maxMessages": 2 })).await;
    let (first, second) = (handle(&messages(&got)[0]), handle(&messages(&got)[1]));
    let invalid = json!({ "error": "receipt_handle_invalid" });
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": altered(&first), "visibilityTimeoutSeconds": 0 },
               { "receiptHandle": "AQAAAH8…", "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released), &vec![invalid.clone(), invalid.clone()]);
    assert_eq!(depth(&service).await.in_flight, 2, "nothing was released");
    let acked = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [altered(&first), second, "", altered(&second)] }),
    )
    .await;
    assert_eq!(
        results(&acked),
        &vec![
            invalid.clone(),
            json!({ "ok": true }),
            invalid.clone(),
            invalid
        ]
    );
    let stats = depth(&service).await;
    assert_eq!(
        (stats.visible, stats.in_flight),
        (0, 1),
        "only `second` went"
    );
    assert_eq!(
        results(&service.ack(&first).await)[0],
        json!({ "ok": true })
    );
}

/// The invalid-handle budget: 100 a minute per client address; a request that would pass it is
/// refused whole (its valid handle does not act), with a `Retry-After`; requests of valid handles
/// only are not held back; a minute later the budget is back.
#[tokio::test(start_paused = true)]
async fn ezgh_more_than_100_invalid_handles_a_minute_are_refused_whole() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let got = service.receive(json!({ "maxMessages": 2 })).await;
    let (first, second) = (handle(&messages(&got)[0]), handle(&messages(&got)[1]));
    let forged: Vec<String> = (0..10).map(|n| format!("AQAAAH8forged{n}")).collect();
    for _ in 0..10 {
        let spent = ezgh_ack_raw(&service, json!({ "receiptHandles": forged })).await;
        assert_eq!(results(&spent).len(), 10);
    }
    let over = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [first, "AQAAAH8one-more"] }),
    )
    .await;
    assert_eq!(
        ezgh_error(&over),
        (StatusCode::TOO_MANY_REQUESTS, "rate_limited")
    );
    let wait: u64 = over.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    assert_eq!(
        depth(&service).await.in_flight,
        2,
        "the refused request acted"
    );
    let visibility_over = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": "AQAAAH8x", "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(visibility_over.status, StatusCode::TOO_MANY_REQUESTS);
    // Valid handles only: served.
    assert_eq!(
        results(&service.ack(&second).await)[0],
        json!({ "ok": true })
    );

    tokio::time::advance(Duration::from_secs(61)).await;
    let again = ezgh_ack_raw(
        &service,
        json!({ "receiptHandles": [first, "AQAAAH8late"] }),
    )
    .await;
    assert_eq!(
        results(&again),
        &vec![
            json!({ "ok": true }),
            json!({ "error": "receipt_handle_invalid" })
        ]
    );
}

/// Once a delivery's visibility has ended: extending it is stale (it is visible again),
/// releasing it is ok, and its handle still acknowledges until another receive takes it.
#[tokio::test(start_paused = true)]
async fn ezgh_a_lease_that_ran_out_cannot_be_extended_but_still_acknowledges() {
    let service = InProcess::start().await;
    service.send("late worker").await;
    let got = service
        .receive(json!({ "visibilityTimeoutSeconds": 10 }))
        .await;
    let current = handle(&messages(&got)[0]);
    tokio::time::advance(Duration::from_secs(11)).await;
    let extended = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 60 }]),
    )
    .await;
    assert_eq!(
        results(&extended)[0],
        json!({ "error": "receipt_handle_stale" })
    );
    let released = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 0 }]),
    )
    .await;
    assert_eq!(results(&released)[0], json!({ "ok": true }));
    assert_eq!(
        results(&service.ack(&current).await)[0],
        json!({ "ok": true })
    );
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 0), "acknowledged");
}

/// An extension past 12 hours from the delivery's receive ends at that mark.
#[tokio::test(start_paused = true)]
async fn ezgh_extensions_end_at_twelve_hours_from_the_receive() {
    let service = InProcess::start().await;
    service.send("long job").await;
    let got = service
        .receive(json!({ "visibilityTimeoutSeconds": 43_200 }))
        .await;
    let current = handle(&messages(&got)[0]);
    tokio::time::advance(Duration::from_secs(43_000)).await;
    let extended = ezgh_visibility(
        &service,
        json!([{ "receiptHandle": current, "visibilityTimeoutSeconds": 43_200 }]),
    )
    .await;
    assert_eq!(results(&extended)[0], json!({ "ok": true }));
    tokio::time::advance(Duration::from_secs(199)).await;
    assert!(messages(&service.receive(json!({})).await).is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = service.receive(json!({})).await;
    assert_eq!(
        messages(&back)[0]["receiveCount"],
        2,
        "visible again at the 12-hour mark"
    );
}

/// Routes no handler serves and wrong methods on ezgh's paths (and the service's own, and paths
/// of no API) answer in ezgh's shape.
#[tokio::test(start_paused = true)]
async fn ezgh_unknown_routes_and_wrong_methods_answer_in_its_shape() {
    let service = InProcess::start().await;
    for (method, path, expected) in [
        (
            Method::GET,
            "/v1/receipts/ack".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::PUT,
            receive_path(ORG, PROJECT, "orders"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::POST,
            "/v1/receipts/nope".to_owned(),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::POST,
            format!("/v1/organizations/{ORG}/projects/{PROJECT}/queues/orders/messages"),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::GET,
            "/v1/nothing-here".to_owned(),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
        (
            Method::POST,
            "/healthz".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
    ] {
        let answer = service
            .call(request(method.clone(), &path, Some(&service.key), "{}"))
            .await;
        assert_eq!(ezgh_error(&answer), expected, "{method} {path}");
    }
}

/// `waitSeconds` defaults to the queue's `ReceiveMessageWaitTimeSeconds`: with the queue's wait
/// set (through the SQS endpoint) to 10 s, a receive without one gets a message sent 5 s later.
#[tokio::test(start_paused = true)]
async fn ezgh_the_wait_defaults_to_the_queues_own() {
    let service = Arc::new(InProcess::start().await);
    let set = service
        .sqs(
            "SetQueueAttributes",
            json!({ "Attributes": { "ReceiveMessageWaitTimeSeconds": "10" } }),
        )
        .await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text);
    let producer = Arc::clone(&service);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        producer.send("worth the wait").await;
    });
    let got = service.receive(json!({})).await;
    assert_eq!(messages(&got).len(), 1, "{}", got.text);
    assert_eq!(messages(&got)[0]["body"], "worth the wait");
    let explicit = service.receive(json!({ "waitSeconds": 0 })).await;
    assert!(messages(&explicit).is_empty());
}

/// A handle acts in every dialect whichever spelling it has: one received over the SQS endpoint
/// (AWS's alphabet) acknowledges over ezgh, one received over ezgh (URL-safe) deletes over SQS.
#[tokio::test(start_paused = true)]
async fn ezgh_and_sqs_handles_act_across_dialects() {
    let service = InProcess::start().await;
    service.send("from sqs").await;
    let over_sqs = service.sqs("ReceiveMessage", json!({})).await;
    let sqs_handle = over_sqs.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        !sqs_handle.contains('-') && !sqs_handle.contains('_'),
        "AWS's alphabet: {sqs_handle}"
    );
    assert_eq!(
        results(&service.ack(&sqs_handle).await)[0],
        json!({ "ok": true })
    );
    assert_eq!(depth(&service).await.in_flight, 0);
    service.send("from ezgh").await;
    let over_ezgh = service.receive(json!({})).await;
    let ezgh_handle = handle(&messages(&over_ezgh)[0]);
    assert!(
        !ezgh_handle.contains('+') && !ezgh_handle.contains('/') && !ezgh_handle.contains('='),
        "URL-safe: {ezgh_handle}"
    );
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": ezgh_handle }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    let stats = depth(&service).await;
    assert_eq!(
        (stats.visible, stats.in_flight),
        (0, 0),
        "deleted, not merely answered"
    );
}

// ---------------------------------------------------------------------------------------------
// The SQS endpoint: JSON 1.0 errors carry `__type` and `x-amzn-query-error`, Query errors are
// `<ErrorResponse>` XML
// ---------------------------------------------------------------------------------------------

/// A Query-protocol request (form-encoded, unsigned: the test service allows it).
async fn query(service: &InProcess, form: &str) -> Reply {
    service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(form.to_owned()))
                .unwrap(),
        )
        .await
}

/// The code of a JSON 1.0 error (`__type` without its namespace).
fn sqs_code(reply: &Reply) -> &str {
    let code = reply.body["__type"].as_str().unwrap_or_default();
    code.strip_prefix("com.amazonaws.sqs#").unwrap_or(code)
}

/// The `<Code>` of a Query error.
fn xml_code(reply: &Reply) -> &str {
    let text = &reply.text;
    assert!(text.contains("<ErrorResponse"), "{text}");
    let start = text.find("<Code>").map_or(0, |at| at + "<Code>".len());
    let end = text.find("</Code>").unwrap_or(start);
    &text[start..end]
}

const ORDERS_URL: &str = "http://gateway.test/000000000000/orders";

/// One refusal, in the protocol each request used: JSON with `__type`, `message`, the
/// `x-amzn-query-error` header and the JSON content type; Query as `<ErrorResponse>` with its
/// `<Type>`, `<Code>`, `<Message>` and a request id, as `text/xml`.
#[tokio::test(start_paused = true)]
async fn sqs_errors_come_in_the_protocol_of_the_request() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    let json_answer = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 11 }))
        .await;
    assert_eq!(json_answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        json_answer.body["__type"],
        "com.amazonaws.sqs#InvalidParameterValue"
    );
    assert!(
        json_answer.body["message"]
            .as_str()
            .unwrap()
            .contains("MaxNumberOfMessages"),
        "{}",
        json_answer.text
    );
    assert_eq!(
        headers.get("x-amzn-query-error").as_deref(),
        Some("InvalidParameterValue;Sender")
    );
    assert_eq!(
        headers.get("content-type").as_deref(),
        Some("application/x-amz-json-1.0")
    );
    assert!(headers.get("x-amzn-requestid").is_some());

    let xml = query(
        &service,
        &format!(
            "Action=ReceiveMessage&Version=2012-11-05&QueueUrl={ORDERS_URL}&MaxNumberOfMessages=11"
        ),
    )
    .await;
    assert_eq!(xml.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&xml), "InvalidParameterValue");
    assert!(xml.text.contains("<Type>Sender</Type>"), "{}", xml.text);
    assert!(xml.text.contains("<Message>"), "{}", xml.text);
    assert!(xml.text.contains("<RequestId>"), "{}", xml.text);
    assert!(
        xml.text
            .contains("xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\""),
        "{}",
        xml.text
    );
    assert_eq!(headers.get("content-type").as_deref(), Some("text/xml"));
}

/// A queue that does not exist: `QueueDoesNotExist` in JSON, SQS's Query code
/// `AWS.SimpleQueueService.NonExistentQueue` in XML and in `x-amzn-query-error`.
#[tokio::test(start_paused = true)]
async fn sqs_a_missing_queue_has_its_json_and_query_codes() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    let json_answer = service
        .sqs_call("GetQueueUrl", json!({ "QueueName": "nope" }))
        .await;
    assert_eq!(json_answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&json_answer), "QueueDoesNotExist");
    assert_eq!(
        headers.get("x-amzn-query-error").as_deref(),
        Some("AWS.SimpleQueueService.NonExistentQueue;Sender")
    );
    let receive = service
        .sqs_call(
            "ReceiveMessage",
            json!({ "QueueUrl": "http://gateway.test/000000000000/nope" }),
        )
        .await;
    assert_eq!(sqs_code(&receive), "QueueDoesNotExist");
    let xml = query(&service, "Action=GetQueueUrl&QueueName=nope").await;
    assert_eq!(xml.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&xml), "AWS.SimpleQueueService.NonExistentQueue");
}

/// Actions: an unknown one is `UnknownOperationException`; AddPermission and RemovePermission are
/// `UnsupportedOperation` (Query code `AWS.SimpleQueueService.UnsupportedOperation`); a Query
/// request without an action is `MissingAction`; a request of neither protocol `InvalidAction`.
#[tokio::test(start_paused = true)]
async fn sqs_unknown_unsupported_and_missing_actions() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    let unknown = service.sqs("FlyToTheMoon", json!({})).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&unknown), "UnknownOperationException");
    for action in ["AddPermission", "RemovePermission"] {
        let unsupported = service.sqs(action, json!({})).await;
        assert_eq!(unsupported.status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(sqs_code(&unsupported), "UnsupportedOperation", "{action}");
        assert!(
            unsupported.body["message"]
                .as_str()
                .unwrap()
                .contains(action),
            "{}",
            unsupported.text
        );
        assert_eq!(
            headers.get("x-amzn-query-error").as_deref(),
            Some("AWS.SimpleQueueService.UnsupportedOperation;Sender"),
            "{action}"
        );
        let xml = query(&service, &format!("Action={action}&QueueUrl={ORDERS_URL}")).await;
        assert_eq!(
            xml_code(&xml),
            "AWS.SimpleQueueService.UnsupportedOperation",
            "{action}"
        );
    }
    let missing = query(&service, &format!("QueueUrl={ORDERS_URL}")).await;
    assert_eq!(xml_code(&missing), "MissingAction");
    let neither = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("content-type", "text/plain")
                .body(Body::from("hello"))
                .unwrap(),
        )
        .await;
    assert_eq!(neither.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&neither), "InvalidAction");
}

/// Integer parameters hold to SQS's ranges with SQS's wording; a refused send stores nothing and
/// a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn sqs_parameters_hold_to_their_ranges() {
    let service = InProcess::start().await;
    service.send("kept").await;
    for (action, body) in [
        ("ReceiveMessage", json!({ "MaxNumberOfMessages": 0 })),
        ("ReceiveMessage", json!({ "MaxNumberOfMessages": 11 })),
        ("ReceiveMessage", json!({ "WaitTimeSeconds": 21 })),
        ("ReceiveMessage", json!({ "WaitTimeSeconds": -1 })),
        ("ReceiveMessage", json!({ "VisibilityTimeout": 43_201 })),
        (
            "SendMessage",
            json!({ "MessageBody": "late", "DelaySeconds": 901 }),
        ),
        (
            "SendMessage",
            json!({ "MessageBody": "early", "DelaySeconds": -1 }),
        ),
    ] {
        let refused = service.sqs(action, body.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(sqs_code(&refused), "InvalidParameterValue", "{body}");
        assert!(
            refused.body["message"]
                .as_str()
                .unwrap()
                .contains("Must be between"),
            "{}",
            refused.text
        );
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight, stats.delayed), (1, 0, 0));
    let typed = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": "ten" }))
        .await;
    assert_eq!(sqs_code(&typed), "SerializationException");
    let missing = service.sqs("SendMessage", json!({})).await;
    assert_eq!(sqs_code(&missing), "MissingParameter");
    let no_url = service
        .sqs_call("SendMessage", json!({ "MessageBody": "x" }))
        .await;
    assert_eq!(sqs_code(&no_url), "MissingParameter");
    assert_eq!(depth(&service).await.visible, 1);
}

/// A JSON key given twice is `SerializationException`, not the last value silently winning: a
/// delete naming two handles deletes nothing; a send naming two bodies sends nothing.
#[tokio::test(start_paused = true)]
async fn sqs_a_json_key_given_twice_is_refused_and_acts_on_nothing() {
    let service = InProcess::start().await;
    service.send("kept").await;
    let got = service.sqs("ReceiveMessage", json!({})).await;
    let current = got.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let raw = |action: &str, body: String| {
        service.call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", format!("AmazonSQS.{action}"))
                .header("content-type", "application/x-amz-json-1.0")
                .body(Body::from(body))
                .unwrap(),
        )
    };
    let delete = raw(
        "DeleteMessage",
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","ReceiptHandle":"{current}","ReceiptHandle":"AQAAAH8x"}}"#
        ),
    )
    .await;
    assert_eq!(delete.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&delete), "SerializationException");
    assert!(!delete.text.contains(&current), "a handle was echoed");
    assert_eq!(depth(&service).await.in_flight, 1, "nothing was deleted");
    for body in [
        format!(r#"{{"QueueUrl":"{ORDERS_URL}","MessageBody":"a","MessageBody":"b"}}"#),
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","QueueUrl":"http://gateway.test/000000000000/nope","MessageBody":"a"}}"#
        ),
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","MessageBody":"a","MessageAttributes":{{"k":{{"DataType":"String","StringValue":"1"}},"k":{{"DataType":"String","StringValue":"2"}}}}}}"#
        ),
    ] {
        let send = raw("SendMessage", body.clone()).await;
        assert_eq!(sqs_code(&send), "SerializationException", "{body}");
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 1), "nothing was sent");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// In the Query protocol a parameter given twice (in the body, or in the URL and the body), an
/// attribute named twice, and an index that is not a number are `InvalidParameterValue`; nothing
/// is sent.
#[tokio::test(start_paused = true)]
async fn sqs_query_parameters_named_twice_or_badly_indexed_are_refused() {
    let service = InProcess::start().await;
    for form in [
        format!("Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a&MessageBody=b"),
        format!(
            "Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a\
             &MessageAttribute.1.Name=k&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=1\
             &MessageAttribute.2.Name=k&MessageAttribute.2.Value.DataType=String&MessageAttribute.2.Value.StringValue=2"
        ),
        format!(
            "Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a\
             &MessageAttribute.-1.Name=k&MessageAttribute.-1.Value.DataType=String&MessageAttribute.-1.Value.StringValue=1"
        ),
        format!("Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a&DelaySeconds=soon"),
    ] {
        let refused = query(&service, &form).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{form}");
        assert_eq!(xml_code(&refused), "InvalidParameterValue", "{form}");
    }
    let in_url_and_body = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri(format!("/?Action=SendMessage&QueueUrl={ORDERS_URL}"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from("Action=SendMessage&MessageBody=a"))
                .unwrap(),
        )
        .await;
    assert_eq!(xml_code(&in_url_and_body), "InvalidParameterValue");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
}

/// Batches take 1 to 10 entries with distinct ids of 1 to 80 letters, digits, `-` and `_`; a
/// batch refused as a whole sends nothing, and its Query codes carry SQS's prefix.
#[tokio::test(start_paused = true)]
async fn sqs_batches_are_checked_as_sqs_checks_them() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    let entry = |id: &str| json!({ "Id": id, "MessageBody": "b" });
    let eleven: Vec<Value> = (0..11).map(|n| entry(&format!("e{n}"))).collect();
    for (entries, code) in [
        (json!([]), "EmptyBatchRequest"),
        (json!(eleven), "TooManyEntriesInBatchRequest"),
        (json!([entry("a"), entry("a")]), "BatchEntryIdsNotDistinct"),
        (json!([entry("a b")]), "InvalidBatchEntryId"),
        (json!([entry(&"x".repeat(81))]), "InvalidBatchEntryId"),
        (json!([entry("")]), "InvalidBatchEntryId"),
        (json!([{ "MessageBody": "no id" }]), "MissingParameter"),
    ] {
        let refused = service
            .sqs("SendMessageBatch", json!({ "Entries": entries }))
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{code}");
        assert_eq!(sqs_code(&refused), code);
        let expected = if code == "MissingParameter" {
            format!("{code};Sender")
        } else {
            format!("AWS.SimpleQueueService.{code};Sender")
        };
        assert_eq!(headers.get("x-amzn-query-error"), Some(expected));
    }
    let xml = query(
        &service,
        &format!(
            "Action=DeleteMessageBatch&QueueUrl={ORDERS_URL}\
             &DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=x\
             &DeleteMessageBatchRequestEntry.2.Id=a&DeleteMessageBatchRequestEntry.2.ReceiptHandle=y"
        ),
    )
    .await;
    assert_eq!(
        xml_code(&xml),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
    );
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
}

/// A batch answers per entry: a refused entry is `Failed` with its code and `SenderFault`, the
/// others are sent.
#[tokio::test(start_paused = true)]
async fn sqs_a_send_batch_answers_each_entry() {
    let service = InProcess::start().await;
    let answer = service
        .sqs(
            "SendMessageBatch",
            json!({ "Entries": [
                { "Id": "good", "MessageBody": "fine" },
                { "Id": "late", "MessageBody": "x", "DelaySeconds": 901 },
                { "Id": "reserved", "MessageBody": "x", "MessageAttributes": {
                    "AWS.trace": { "DataType": "String", "StringValue": "1" } } },
                { "Id": "empty", "MessageBody": "" },
            ] }),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let successful = answer.body["Successful"].as_array().unwrap();
    assert_eq!(successful.len(), 1, "{}", answer.text);
    assert_eq!(successful[0]["Id"], "good");
    assert!(successful[0]["MessageId"].is_string());
    assert_eq!(successful[0]["MD5OfMessageBody"], md5_of("fine").as_str());
    let failed = answer.body["Failed"].as_array().unwrap();
    let code_of = |id: &str| {
        let entry = failed.iter().find(|entry| entry["Id"] == id).unwrap();
        assert_eq!(entry["SenderFault"], true, "{entry}");
        entry["Code"].as_str().unwrap().to_owned()
    };
    assert_eq!(code_of("late"), "InvalidParameterValue");
    assert_eq!(code_of("reserved"), "InvalidParameterValue");
    assert_eq!(code_of("empty"), "MissingParameter");
    assert_eq!(depth(&service).await.visible, 1, "only `good` was sent");
}

fn md5_of(text: &str) -> String {
    use md5::Digest as _;
    hex::encode(md5::Md5::digest(text.as_bytes()))
}

/// A SendMessageBatch over 1 MiB of message data in all is refused whole with
/// `BatchRequestTooLong`, though each of its messages is within the queue's maximum.
#[tokio::test(start_paused = true)]
async fn sqs_a_batch_over_one_mib_is_refused_whole() {
    let service = InProcess::start().await;
    let body = "x".repeat(110 * 1024);
    let entries: Vec<Value> = (0..10)
        .map(|n| json!({ "Id": format!("e{n}"), "MessageBody": body }))
        .collect();
    let refused = service
        .sqs("SendMessageBatch", json!({ "Entries": entries }))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&refused), "BatchRequestTooLong");
    assert_eq!(depth(&service).await.visible, 0, "no entry was sent");
    let single = service
        .sqs("SendMessage", json!({ "MessageBody": body }))
        .await;
    assert_eq!(single.status, StatusCode::OK, "{}", single.text);
}

/// Message attributes on the SQS endpoint: at most 10, names in SQS's syntax and not reserved
/// (`AWS.`, `Amazon.`, `sqsgw.` in any case), known types, values that fit them; bodies in SQS's
/// character set. Each refusal sends nothing.
#[tokio::test(start_paused = true)]
async fn sqs_message_attributes_and_bodies_follow_sqs_rules() {
    let service = InProcess::start().await;
    let text = |value: &str| json!({ "DataType": "String", "StringValue": value });
    let eleven: serde_json::Map<String, Value> =
        (0..11).map(|n| (format!("a{n}"), text("v"))).collect();
    for attributes in [
        Value::Object(eleven),
        json!({ "AWS.trace": text("1") }),
        json!({ "amazon.trace": text("1") }),
        json!({ "sqsgw.attributes": text("1") }),
        json!({ "has space": text("1") }),
        json!({ ".leading": text("1") }),
        json!({ "n": { "DataType": "Number", "StringValue": "twelve" } }),
        json!({ "n": { "DataType": "Number", "StringValue": "NaN" } }),
        json!({ "b": { "DataType": "Binary", "BinaryValue": "not base64!" } }),
        json!({ "t": { "DataType": "Strange", "StringValue": "1" } }),
        json!({ "t": { "DataType": "String." , "StringValue": "1" } }),
        json!({ "s": { "DataType": "String" } }),
        json!({ "s": text("") }),
        json!({ "s": text("bell\u{7}") }),
    ] {
        let refused = service
            .sqs(
                "SendMessage",
                json!({ "MessageBody": "x", "MessageAttributes": attributes }),
            )
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{attributes}");
        assert_eq!(sqs_code(&refused), "InvalidParameterValue", "{attributes}");
    }
    let body = service
        .sqs("SendMessage", json!({ "MessageBody": "nul \u{0} inside" }))
        .await;
    assert_eq!(sqs_code(&body), "InvalidMessageContents");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
    let fine = service
        .sqs(
            "SendMessage",
            json!({ "MessageBody": "ok", "MessageAttributes": {
                "n": { "DataType": "Number.int", "StringValue": "-1.5e3" },
                "b": { "DataType": "Binary", "BinaryValue": "AAE=" },
                "order.id": text("A-1"),
            } }),
        )
        .await;
    assert_eq!(fine.status, StatusCode::OK, "{}", fine.text);
    assert!(fine.body["MD5OfMessageAttributes"].is_string());
}

/// Outdated handles: DeleteMessage succeeds and deletes nothing (as on SQS), ChangeMessageVisibility
/// is `MessageNotInflight`; the current handle still acts.
#[tokio::test(start_paused = true)]
async fn sqs_an_outdated_handle_deletes_nothing_and_is_not_in_flight() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    service.send("twice received").await;
    let first = service
        .sqs("ReceiveMessage", json!({ "VisibilityTimeout": 0 }))
        .await;
    let old = first.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = service.sqs("ReceiveMessage", json!({})).await;
    let current = second.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let change = service
        .sqs(
            "ChangeMessageVisibility",
            json!({ "ReceiptHandle": old, "VisibilityTimeout": 0 }),
        )
        .await;
    assert_eq!(change.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&change), "MessageNotInflight");
    assert_eq!(
        headers.get("x-amzn-query-error").as_deref(),
        Some("AWS.SimpleQueueService.MessageNotInflight;Sender")
    );
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": old }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(depth(&service).await.in_flight, 1, "nothing was deleted");
    let xml = query(
        &service,
        &format!(
            "Action=ChangeMessageVisibility&QueueUrl={ORDERS_URL}&VisibilityTimeout=5&ReceiptHandle={}",
            form_urlencoded::byte_serialize(old.as_bytes()).collect::<String>()
        ),
    )
    .await;
    assert_eq!(xml_code(&xml), "AWS.SimpleQueueService.MessageNotInflight");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// An altered handle, or one of another queue than the request's `QueueUrl`, is
/// `ReceiptHandleIsInvalid`, and nothing changes anywhere.
#[tokio::test(start_paused = true)]
async fn sqs_altered_handles_and_handles_of_another_queue_are_invalid() {
    let service = InProcess::start().await;
    let created = service
        .sqs_call("CreateQueue", json!({ "QueueName": "billing" }))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let billing = created.body["QueueUrl"].as_str().unwrap().to_owned();
    service.send("orders only").await;
    let got = service.sqs("ReceiveMessage", json!({})).await;
    let current = got.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    for (action, body) in [
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current) }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": "AQAAAH8forged" }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": billing, "ReceiptHandle": current }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": billing, "ReceiptHandle": current, "VisibilityTimeout": 0 }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current), "VisibilityTimeout": 0 }),
        ),
    ] {
        let refused = service.sqs_call(action, body.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(sqs_code(&refused), "ReceiptHandleIsInvalid", "{body}");
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 1), "nothing changed");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// DeleteMessageBatch and ChangeMessageVisibilityBatch answer per entry: an invalid handle
/// fails, an outdated one deletes nothing (successful) but is not in flight for a visibility
/// change, an entry without a handle or out of range fails on its own.
#[tokio::test(start_paused = true)]
async fn sqs_handle_batches_answer_each_entry() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let first = service
        .sqs(
            "ReceiveMessage",
            json!({ "MaxNumberOfMessages": 2, "VisibilityTimeout": 0 }),
        )
        .await;
    let old: Vec<String> = first.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    let second = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 2 }))
        .await;
    let current: Vec<String> = second.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, id: &str| {
        let failed = reply.body["Failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["Id"] == id);
        let entry = entry.unwrap_or_else(|| panic!("{id} did not fail: {}", reply.text));
        assert_eq!(entry["SenderFault"], true, "{entry}");
        entry["Code"].as_str().unwrap().to_owned()
    };
    let successful = |reply: &Reply| -> Vec<String> {
        let listed = reply.body["Successful"].as_array().unwrap().iter();
        listed
            .map(|entry| entry["Id"].as_str().unwrap().to_owned())
            .collect()
    };
    let visibility = service
        .sqs(
            "ChangeMessageVisibilityBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[0], "VisibilityTimeout": 0 },
                { "Id": "long", "ReceiptHandle": current[0], "VisibilityTimeout": 43_201 },
                { "Id": "bare", "ReceiptHandle": current[0] },
                { "Id": "altered", "ReceiptHandle": altered(&current[0]), "VisibilityTimeout": 0 },
            ] }),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert!(successful(&visibility).is_empty(), "{}", visibility.text);
    assert_eq!(failed_code(&visibility, "old"), "MessageNotInflight");
    assert_eq!(failed_code(&visibility, "long"), "InvalidParameterValue");
    assert_eq!(failed_code(&visibility, "bare"), "MissingParameter");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "ReceiptHandleIsInvalid"
    );
    assert_eq!(depth(&service).await.in_flight, 2, "nothing was released");

    let delete = service
        .sqs(
            "DeleteMessageBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[1] },
                { "Id": "altered", "ReceiptHandle": altered(&current[1]) },
                { "Id": "none" },
                { "Id": "current", "ReceiptHandle": current[0] },
            ] }),
        )
        .await;
    assert_eq!(delete.status, StatusCode::OK, "{}", delete.text);
    let mut done = successful(&delete);
    done.sort();
    assert_eq!(done, ["current", "old"]);
    assert_eq!(failed_code(&delete, "altered"), "ReceiptHandleIsInvalid");
    assert_eq!(failed_code(&delete, "none"), "MissingParameter");
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "only the current handle deleted"
    );
}

/// CreateQueue as SQS: `FifoQueue=true` needs a `.fifo` name; an existing name with other
/// attributes is `QueueNameExists` (`QueueAlreadyExists` in Query) and changes nothing; tags under
/// the gateway's `sqsgw.` prefix are refused.
#[tokio::test(start_paused = true)]
async fn sqs_create_queue_follows_sqs_rules() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    let fifo_attribute = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "plain", "Attributes": { "FifoQueue": "true" } }),
        )
        .await;
    assert_eq!(sqs_code(&fifo_attribute), "InvalidParameterValue");
    let exists = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "orders", "Attributes": { "VisibilityTimeout": "45" } }),
        )
        .await;
    assert_eq!(exists.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&exists), "QueueNameExists");
    assert_eq!(
        headers.get("x-amzn-query-error").as_deref(),
        Some("QueueAlreadyExists;Sender")
    );
    let xml = query(
        &service,
        "Action=CreateQueue&QueueName=orders&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=45",
    )
    .await;
    assert_eq!(xml_code(&xml), "QueueAlreadyExists");
    let attributes = service
        .sqs(
            "GetQueueAttributes",
            json!({ "AttributeNames": ["VisibilityTimeout"] }),
        )
        .await;
    assert_eq!(attributes.body["Attributes"]["VisibilityTimeout"], "30");
    let tagged = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "tagged", "tags": { "sqsgw.alias.x": "y" } }),
        )
        .await;
    assert_eq!(sqs_code(&tagged), "InvalidParameterValue");
    let unknown = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "odd", "Attributes": { "Colour": "blue" } }),
        )
        .await;
    assert_eq!(sqs_code(&unknown), "InvalidAttributeName");
    let listed = service.sqs_call("ListQueues", json!({})).await;
    assert_eq!(
        listed.body["QueueUrls"].as_array().unwrap().len(),
        1,
        "no refused create made a queue: {}",
        listed.text
    );
}

/// A body declared over 3 MiB + 64 KiB is 413 `RequestEntityTooLarge`, refused unread.
#[tokio::test(start_paused = true)]
async fn sqs_bodies_over_the_limit_are_refused_unread() {
    let service = InProcess::start().await;
    let tripwire = Tripwire::default();
    let answer = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", "AmazonSQS.SendMessage")
                .header("content-type", "application/x-amz-json-1.0")
                .body(tripwire.declaring(Some(3 * 1024 * 1024 + 64 * 1024 + 1)))
                .unwrap(),
        )
        .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(sqs_code(&answer), "RequestEntityTooLarge");
    assert!(!tripwire.was_read());
}

/// Paths and methods the endpoint does not serve: 404 `InvalidAddress` and 405 `InvalidAction`,
/// in JSON for a request naming a JSON action, in XML otherwise.
#[tokio::test(start_paused = true)]
async fn sqs_unknown_paths_and_wrong_methods_answer_in_the_requests_protocol() {
    let service = InProcess::start().await;
    for (method, path, status, code) in [
        (
            Method::PUT,
            "/",
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidAction",
        ),
        (
            Method::DELETE,
            "/000000000000/orders",
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidAction",
        ),
        (
            Method::POST,
            "/000000000000/orders/deeper",
            StatusCode::NOT_FOUND,
            "InvalidAddress",
        ),
    ] {
        let json_answer = service
            .call(
                Request::builder()
                    .method(method.clone())
                    .uri(path)
                    .header("x-amz-target", "AmazonSQS.ListQueues")
                    .header("content-type", "application/x-amz-json-1.0")
                    .body(Body::from("{}"))
                    .unwrap(),
            )
            .await;
        assert_eq!(json_answer.status, status, "{method} {path}");
        assert_eq!(sqs_code(&json_answer), code, "{method} {path}");
        let xml = service
            .call(
                Request::builder()
                    .method(method.clone())
                    .uri(path)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(Body::from("Action=ListQueues"))
                    .unwrap(),
            )
            .await;
        assert_eq!(xml.status, status, "{method} {path}");
        assert_eq!(xml_code(&xml), code, "{method} {path}");
    }
}

// ---------------------------------------------------------------------------------------------
// SigV4, on a service that requires signatures (the one service `InProcess::start_with` cannot
// make: its SQS endpoint allows unsigned requests)
// ---------------------------------------------------------------------------------------------

/// The service with `sqs_api.allow_unsigned` off and one access key, and its clock (requests are
/// signed at the gateway's time).
async fn signed_only() -> (InProcess, Arc<TokioClock>) {
    let clock = Arc::new(TokioClock {
        start: "2026-03-01T00:00:00Z".parse().unwrap(),
        origin: Instant::now(),
    });
    let engine = EmbeddedBackend::in_memory(clock.clone());
    let queue_url = engine
        .create_queue("orders", &QueueSettings::default())
        .await
        .unwrap()
        .url;
    let backend = Arc::new(FakeBackend::new(engine));
    let toml = format!(
        "[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n\
         [[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n\
         [[sqs_api.credentials]]\naccess_key_id = \"{SQS_KEY_ID}\"\nsecret = \"{SQS_SECRET}\"\n",
        Keyring::generate_key()
    );
    let config = Config::parse(&toml).unwrap_or_else(|error| panic!("{error}\n{toml}"));
    let app = App::build(
        &config,
        Overrides {
            backend: Some(backend.clone()),
            clock: Some(clock.clone()),
            state: None,
        },
    )
    .await
    .unwrap();
    let service = InProcess {
        router: app.router(),
        backend,
        queue_url,
        key: String::new(),
        _app: app,
    };
    (service, clock)
}

/// How a test request is signed.
struct Signer<'a> {
    key_id: &'a str,
    secret: &'a str,
    region: &'a str,
    at: SystemTime,
}

impl Signer<'_> {
    /// A JSON 1.0 request of `action` with `body`, signed by aws-sigv4 (the SDKs' signer).
    fn sign(&self, action: &str, body: &[u8]) -> Request<Body> {
        use aws_sigv4::http_request::{
            PayloadChecksumKind, SignableBody, SignableRequest, SigningSettings, sign,
        };
        let identity =
            aws_credential_types::Credentials::new(self.key_id, self.secret, None, None, "t")
                .into();
        let mut settings = SigningSettings::default();
        settings.payload_checksum_kind = PayloadChecksumKind::NoHeader;
        settings.excluded_headers = Some(vec!["user-agent".into(), "content-length".into()]);
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&identity)
            .region(self.region)
            .name("sqs")
            .time(self.at)
            .settings(settings)
            .build()
            .unwrap()
            .into();
        let url = "http://gateway.test/";
        let target = format!("AmazonSQS.{action}");
        let headers = [
            ("host", "gateway.test"),
            ("x-amz-target", target.as_str()),
            ("content-type", "application/x-amz-json-1.0"),
        ];
        let signable = SignableRequest::new(
            "POST",
            url,
            headers.iter().copied(),
            SignableBody::Bytes(body),
        )
        .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut builder = http::Request::builder().method("POST").uri(url);
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        let mut request = builder.body(body.to_vec()).unwrap();
        instructions.apply_to_request_http1x(&mut request);
        request.map(Body::from)
    }
}

fn now_of(clock: &TokioClock) -> SystemTime {
    SystemTime::from(clock.now())
}

/// With the body swapped for one that must not be read.
fn with_body(request: Request<Body>, body: Body) -> Request<Body> {
    let (parts, _) = request.into_parts();
    Request::from_parts(parts, body)
}

/// Without a signature: 403 `MissingAuthenticationToken`, in either protocol, body unread.
#[tokio::test(start_paused = true)]
async fn sigv4_an_unsigned_request_is_refused_unread() {
    let (mut service, _clock) = signed_only().await;
    let headers = LastHeaders::watch(&mut service);
    let tripwire = Tripwire::default();
    let json_answer = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", "AmazonSQS.ListQueues")
                .header("content-type", "application/x-amz-json-1.0")
                .body(tripwire.body())
                .unwrap(),
        )
        .await;
    assert_eq!(json_answer.status, StatusCode::FORBIDDEN);
    assert_eq!(sqs_code(&json_answer), "MissingAuthenticationToken");
    assert_eq!(
        headers.get("x-amzn-query-error").as_deref(),
        Some("MissingAuthenticationToken;Sender")
    );
    assert!(!tripwire.was_read());
    let xml = query(&service, "Action=ListQueues").await;
    assert_eq!(xml.status, StatusCode::FORBIDDEN);
    assert_eq!(xml_code(&xml), "MissingAuthenticationToken");
}

/// The head's checks (key, scope, time) refuse before any body byte is read: an unknown key is
/// `InvalidClientTokenId`, another region `SignatureDoesNotMatch`, a time more than 15 minutes off
/// `RequestExpired`; a well-signed request is served.
#[tokio::test(start_paused = true)]
async fn sigv4_key_scope_and_time_are_checked_from_the_head() {
    let (service, clock) = signed_only().await;
    let now = now_of(&clock);
    let good = Signer {
        key_id: SQS_KEY_ID,
        secret: SQS_SECRET,
        region: "us-east-1",
        at: now,
    };
    for (signer, status, code) in [
        (
            Signer {
                key_id: "AKIDNOBODYKNOWS",
                ..good
            },
            StatusCode::FORBIDDEN,
            "InvalidClientTokenId",
        ),
        (
            Signer {
                region: "eu-west-1",
                ..good
            },
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
        ),
        (
            Signer {
                at: now - Duration::from_secs(16 * 60),
                ..good
            },
            StatusCode::BAD_REQUEST,
            "RequestExpired",
        ),
        (
            Signer {
                at: now + Duration::from_secs(16 * 60),
                ..good
            },
            StatusCode::BAD_REQUEST,
            "RequestExpired",
        ),
    ] {
        let tripwire = Tripwire::default();
        let request = with_body(signer.sign("ListQueues", b"{}"), tripwire.body());
        let refused = service.call(request).await;
        assert_eq!(refused.status, status, "{code}: {}", refused.text);
        assert_eq!(sqs_code(&refused), code);
        assert!(!tripwire.was_read(), "{code}: the body was read");
    }
    // The control: a head that checks out has its body read (and the signature checked on it).
    let tripwire = Tripwire::default();
    let read = service
        .call(with_body(good.sign("ListQueues", b"{}"), tripwire.body()))
        .await;
    assert_eq!(read.status, StatusCode::BAD_REQUEST, "{}", read.text);
    assert!(tripwire.was_read());
    // Within the window (14 minutes off) and in scope: served.
    let skewed = Signer {
        at: now - Duration::from_secs(14 * 60),
        ..good
    };
    let listed = service.call(skewed.sign("ListQueues", b"{}")).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.body["QueueUrls"].as_array().unwrap().len(), 1);
}

/// A wrong secret, or a body other than the one signed, is `SignatureDoesNotMatch`, and the
/// request does nothing; the same request as signed is served.
#[tokio::test(start_paused = true)]
async fn sigv4_a_wrong_signature_or_an_altered_body_acts_on_nothing() {
    let (service, clock) = signed_only().await;
    let good = Signer {
        key_id: SQS_KEY_ID,
        secret: SQS_SECRET,
        region: "us-east-1",
        at: now_of(&clock),
    };
    let body = json!({ "QueueUrl": ORDERS_URL, "MessageBody": "signed" }).to_string();
    let wrong_secret = Signer {
        secret: "not-the-secret-of-this-key-at-all",
        ..good
    };
    let refused = service
        .call(wrong_secret.sign("SendMessage", body.as_bytes()))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(sqs_code(&refused), "SignatureDoesNotMatch");
    let altered_body = json!({ "QueueUrl": ORDERS_URL, "MessageBody": "forged" }).to_string();
    let swapped = with_body(
        good.sign("SendMessage", body.as_bytes()),
        Body::from(altered_body),
    );
    let refused = service.call(swapped).await;
    assert_eq!(sqs_code(&refused), "SignatureDoesNotMatch");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
    let sent = service
        .call(good.sign("SendMessage", body.as_bytes()))
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    assert_eq!(depth(&service).await.visible, 1);
}

// ---------------------------------------------------------------------------------------------
// sombus: refusals are `{"accepted": false, "violations": [{"rule", "message"}]}`; the token
// service answers in OAuth 2.0's shape
// ---------------------------------------------------------------------------------------------

const WORKSPACE: &str = "ws-test";

/// The service with the sombus API: admin keys of the workspace (admin, viewer) and of another,
/// and a tier tight enough to reach its limits.
struct Bus {
    service: InProcess,
    admin: String,
    viewer: String,
    outsider: String,
}

/// A created connection.
struct Connection {
    client_id: String,
    secret: String,
    queue: String,
}

fn admin_key_entry(workspace: &str, role: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"{role}\"\nhash = \"{}\"\nworkspaces = [\"{workspace}\"]\nrole = \"{role}\"\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

/// The refusal's status and rule, checking the bus's body.
fn rule(reply: &Reply) -> (StatusCode, &str) {
    assert_eq!(reply.body["accepted"], false, "{}", reply.text);
    assert!(
        reply.body["violations"][0]["message"].is_string(),
        "{}",
        reply.text
    );
    (
        reply.status,
        reply.body["violations"][0]["rule"]
            .as_str()
            .unwrap_or_default(),
    )
}

/// The OAuth error of a token-service answer.
fn oauth_error(reply: &Reply) -> (StatusCode, &str) {
    assert!(
        reply.body["error_description"].is_string(),
        "{}",
        reply.text
    );
    (
        reply.status,
        reply.body["error"].as_str().unwrap_or_default(),
    )
}

fn basic(client_id: &str, secret: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{client_id}:{secret}"))
    )
}

impl Bus {
    async fn start() -> Self {
        let (admin, admin_entry) = admin_key_entry(WORKSPACE, "admin");
        let (viewer, viewer_entry) = admin_key_entry(WORKSPACE, "viewer");
        let (outsider, outsider_entry) = admin_key_entry("elsewhere", "admin");
        let service = with_tables(&format!(
            "[sombus]\nenvironment = \"test\"\n\n\
             [sombus.tiers.tight]\nrequests_per_second = 1\nburst = 2\nrequests_per_day = 4\n\n\
             {admin_entry}{viewer_entry}{outsider_entry}"
        ))
        .await;
        Self {
            service,
            admin,
            viewer,
            outsider,
        }
    }

    async fn admin_call(&self, method: Method, rest: &str, key: &str, body: &str) -> Reply {
        self.service
            .call(request(
                method,
                &format!("/v1/admin/workspaces/{WORKSPACE}{rest}"),
                Some(key),
                body.to_owned(),
            ))
            .await
    }

    async fn connect(&self, body: Value) -> Connection {
        let created = self
            .admin_call(Method::POST, "/connections", &self.admin, &body.to_string())
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        let client_id = created.body["client_id"].as_str().unwrap().to_owned();
        let shown = self
            .admin_call(
                Method::GET,
                &format!("/connections/{client_id}"),
                &self.viewer,
                "",
            )
            .await;
        assert_eq!(shown.status, StatusCode::OK, "{}", shown.text);
        Connection {
            secret: created.body["client_secret"].as_str().unwrap().to_owned(),
            queue: shown.body["queue"].as_str().unwrap().to_owned(),
            client_id,
        }
    }

    async fn token_call(
        &self,
        authorization: Option<&str>,
        content_type: &str,
        body: Body,
    ) -> Reply {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri("/v1/oauth/token")
            .header("content-type", content_type);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        self.service.call(builder.body(body).unwrap()).await
    }

    async fn token_of(&self, client_id: &str, secret: &str) -> Reply {
        self.token_call(
            Some(&basic(client_id, secret)),
            "application/x-www-form-urlencoded",
            Body::from("grant_type=client_credentials"),
        )
        .await
    }

    async fn token(&self, connection: &Connection) -> String {
        let answer = self
            .token_of(&connection.client_id, &connection.secret)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
        answer.body["access_token"].as_str().unwrap().to_owned()
    }

    async fn pull(&self, token: &str, tenant: &str, client: &str, query: &str) -> Reply {
        self.service
            .call(request(
                Method::GET,
                &format!("/v1/tenants/{tenant}/consumers/{client}/messages?{query}"),
                Some(token),
                Body::empty(),
            ))
            .await
    }

    /// A receive of `connection`'s own messages.
    async fn receive(&self, token: &str, connection: &Connection, query: &str) -> Vec<Value> {
        let got = self
            .pull(token, WORKSPACE, &connection.client_id, query)
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text);
        got.body["messages"].as_array().unwrap().clone()
    }

    async fn settle(&self, token: &str, connection: &Connection, route: &str, body: &str) -> Reply {
        self.service
            .call(request(
                Method::POST,
                &format!(
                    "/v1/tenants/{WORKSPACE}/consumers/{}/{route}",
                    connection.client_id
                ),
                Some(token),
                body.to_owned(),
            ))
            .await
    }

    /// Puts a message in `connection`'s queue straight into the backend.
    async fn publish(&self, connection: &Connection, body: &str, group: Option<&str>) {
        let url = self
            .service
            .backend
            .resolve(&connection.queue)
            .await
            .unwrap()
            .url;
        let sent = self
            .service
            .backend
            .send_batch(
                &url,
                &[OutgoingMessage {
                    body: body.into(),
                    group_id: group.map(str::to_owned),
                    deduplication_id: group.map(|_| format!("{:016x}", rand::random::<u64>())),
                    ..Default::default()
                }],
            )
            .await
            .unwrap();
        sent[0].as_ref().unwrap();
    }
}

fn sombus_handle(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}

/// The token service in OAuth 2.0's shape: `invalid_client` 401 with the Basic challenge for a
/// wrong secret, an unknown id or no credentials; `unsupported_grant_type` and `invalid_request`
/// 400; every answer `Cache-Control: no-store`; the right request gets a Bearer token for an hour.
#[tokio::test(start_paused = true)]
async fn sombus_the_token_service_speaks_oauth() {
    let mut bus = Bus::start().await;
    let headers = LastHeaders::watch(&mut bus.service);
    let connection = bus.connect(json!({})).await;
    let form = "application/x-www-form-urlencoded";
    let grant = || Body::from("grant_type=client_credentials");
    let right = basic(&connection.client_id, &connection.secret);
    for (authorization, content_type, body, expected) in [
        (
            Some(basic(&connection.client_id, "sbs_wrong")),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(basic("nobody", &connection.secret)),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            None,
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(format!("Bearer {}", connection.secret)),
            form,
            grant(),
            (StatusCode::UNAUTHORIZED, "invalid_client"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("grant_type=password"),
            (StatusCode::BAD_REQUEST, "unsupported_grant_type"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("scope=everything"),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
        (
            Some(right.clone()),
            form,
            Body::from("grant_type=client_credentials&grant_type=client_credentials"),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
        (
            Some(right.clone()),
            "application/json",
            Body::from(r#"{"grant_type":"client_credentials"}"#),
            (StatusCode::BAD_REQUEST, "invalid_request"),
        ),
    ] {
        let refused = bus
            .token_call(authorization.as_deref(), content_type, body)
            .await;
        assert_eq!(oauth_error(&refused), expected, "{authorization:?}");
        assert_eq!(headers.get("cache-control").as_deref(), Some("no-store"));
        if expected.0 == StatusCode::UNAUTHORIZED {
            assert!(
                headers
                    .get("www-authenticate")
                    .is_some_and(|challenge| challenge.starts_with("Basic")),
                "{authorization:?}"
            );
        }
        assert!(
            !refused.text.contains(&connection.secret),
            "a secret was echoed"
        );
    }
    let issued = bus
        .token_of(&connection.client_id, &connection.secret)
        .await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.text);
    assert_eq!(issued.body["token_type"], "Bearer");
    assert_eq!(issued.body["expires_in"], 3600);
    assert!(issued.body["access_token"].is_string());
    assert_eq!(headers.get("cache-control").as_deref(), Some("no-store"));
}

/// The client is authenticated before the body is read: without credentials, or with wrong ones,
/// the body is never touched; a body that is not form-encoded is refused from its head too.
#[tokio::test(start_paused = true)]
async fn sombus_token_requests_are_authenticated_before_the_body_is_read() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    for (authorization, content_type, expected) in [
        (None, "application/x-www-form-urlencoded", "invalid_client"),
        (
            Some(basic(&connection.client_id, "sbs_guess")),
            "application/x-www-form-urlencoded",
            "invalid_client",
        ),
        (
            Some(basic(&connection.client_id, &connection.secret)),
            "text/plain",
            "invalid_request",
        ),
    ] {
        let tripwire = Tripwire::default();
        let refused = bus
            .token_call(authorization.as_deref(), content_type, tripwire.body())
            .await;
        assert_eq!(oauth_error(&refused).1, expected, "{authorization:?}");
        assert!(!tripwire.was_read(), "{authorization:?}: the body was read");
    }
    // The control: the right client with a form body has it read.
    let tripwire = Tripwire::default();
    let read = bus
        .token_call(
            Some(&basic(&connection.client_id, &connection.secret)),
            "application/x-www-form-urlencoded",
            tripwire.body(),
        )
        .await;
    assert_eq!(
        oauth_error(&read),
        (StatusCode::BAD_REQUEST, "invalid_request")
    );
    assert!(tripwire.was_read());
}

/// Failed token requests count against the address: past 60 a minute, a request presenting
/// credentials gets 429 `temporarily_unavailable` with `Retry-After` (one presenting none still
/// the 401 challenge, the right secret still its token); a minute later failures are 401 again.
#[tokio::test(start_paused = true)]
async fn sombus_failed_token_requests_are_limited_per_address_per_minute() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    for attempt in 0..60 {
        let failed = bus.token_of("nobody", "sbs_guess").await;
        assert_eq!(failed.status, StatusCode::UNAUTHORIZED, "attempt {attempt}");
    }
    let over = bus.token_of(&connection.client_id, "sbs_guess").await;
    assert_eq!(
        oauth_error(&over),
        (StatusCode::TOO_MANY_REQUESTS, "temporarily_unavailable")
    );
    let wait: u64 = over.retry_after.as_deref().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let challenged = bus
        .token_call(
            None,
            "application/x-www-form-urlencoded",
            Body::from("grant_type=client_credentials"),
        )
        .await;
    assert_eq!(
        oauth_error(&challenged),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
    assert_eq!(
        bus.token_of(&connection.client_id, &connection.secret)
            .await
            .status,
        StatusCode::OK
    );
    tokio::time::advance(Duration::from_secs(61)).await;
    let again = bus.token_of(&connection.client_id, "sbs_guess").await;
    assert_eq!(
        oauth_error(&again),
        (StatusCode::UNAUTHORIZED, "invalid_client")
    );
}

/// The receive query: `max` 1–10, `wait` 0–20, `visibility` 0–43200, `attempt` 1–128 printable
/// ASCII without spaces; unknown or repeated parameters refused (an unknown name is not echoed);
/// a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn sombus_receive_parameters_hold_to_their_ranges() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let long_attempt = format!("attempt={}", "a".repeat(129));
    for query in [
        "max=0",
        "max=11",
        "max=x",
        "max=+5",
        "max=-1",
        "wait=21",
        "visibility=43201",
        "attempt=",
        "attempt=a%20b",
        "attempt=caf%C3%A9",
        long_attempt.as_str(),
        "colour=red",
        "max=1&max=1",
        "wait=0&wait=1",
    ] {
        let refused = bus
            .pull(&token, WORKSPACE, &connection.client_id, query)
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
            "{query}"
        );
        assert!(!refused.text.contains("colour"), "{}", refused.text);
    }
    let edges = bus
        .receive(
            &token,
            &connection,
            &format!("max=10&wait=0&visibility=43200&attempt={}", "~".repeat(128)),
        )
        .await;
    assert_eq!(edges.len(), 1);
    assert_eq!(edges[0]["receive_count"], 1, "no refused receive leased it");
}

/// Defaults: ten messages at most, leased for 60 s.
#[tokio::test(start_paused = true)]
async fn sombus_receive_defaults_to_ten_messages_for_sixty_seconds() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    for n in 0..12 {
        bus.publish(&connection, &json!({ "n": n }).to_string(), None)
            .await;
    }
    assert_eq!(bus.receive(&token, &connection, "").await.len(), 10);
    assert_eq!(bus.receive(&token, &connection, "wait=0").await.len(), 2);
    tokio::time::advance(Duration::from_secs(59)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 10);
    assert!(back.iter().all(|message| message["receive_count"] == 2));
}

/// Checks run in the documented order: token, workspace, client id, then parameters; a 401
/// carries `WWW-Authenticate: Bearer realm="sombus"`.
#[tokio::test(start_paused = true)]
async fn sombus_pull_checks_run_in_the_documented_order() {
    let mut bus = Bus::start().await;
    let headers = LastHeaders::watch(&mut bus.service);
    let mine = bus.connect(json!({})).await;
    let theirs = bus.connect(json!({})).await;
    let token = bus.token(&mine).await;
    for (token, tenant, client, expected) in [
        (
            "",
            WORKSPACE,
            mine.client_id.as_str(),
            (StatusCode::UNAUTHORIZED, "producer.unauthenticated"),
        ),
        (
            "not.a.token",
            "other-ws",
            theirs.client_id.as_str(),
            (StatusCode::UNAUTHORIZED, "producer.unauthenticated"),
        ),
        (
            token.as_str(),
            "other-ws",
            theirs.client_id.as_str(),
            (StatusCode::FORBIDDEN, "tenant.mismatch"),
        ),
        (
            token.as_str(),
            WORKSPACE,
            theirs.client_id.as_str(),
            (StatusCode::FORBIDDEN, "consumer.not_owner"),
        ),
        (
            token.as_str(),
            WORKSPACE,
            mine.client_id.as_str(),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
        ),
    ] {
        let key = (!token.is_empty()).then_some(token);
        let answer = bus
            .service
            .call(request(
                Method::GET,
                &format!("/v1/tenants/{tenant}/consumers/{client}/messages?max=99"),
                key,
                Body::empty(),
            ))
            .await;
        assert_eq!(rule(&answer), expected, "{tenant}/{client}");
        if expected.0 == StatusCode::UNAUTHORIZED {
            assert_eq!(
                headers.get("www-authenticate").as_deref(),
                Some("Bearer realm=\"sombus\"")
            );
        }
    }
}

/// A token is refused once it has expired on the gateway's clock (an hour); a new one reads.
#[tokio::test(start_paused = true)]
async fn sombus_an_expired_token_is_unauthenticated() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let token = bus.token(&connection).await;
    tokio::time::advance(Duration::from_secs(3599)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let expired = bus
        .pull(&token, WORKSPACE, &connection.client_id, "wait=0")
        .await;
    assert_eq!(
        rule(&expired),
        (StatusCode::UNAUTHORIZED, "producer.unauthenticated")
    );
    let fresh = bus.token(&connection).await;
    assert!(bus.receive(&fresh, &connection, "wait=0").await.is_empty());
}

/// Ack and nack bodies: 1 to 10 distinct non-empty handles, nothing else (nack also
/// `delay_seconds` 0–43200); a key given twice is refused; a refused request acts on none of its
/// handles.
#[tokio::test(start_paused = true)]
async fn sombus_ack_and_nack_bodies_are_checked_whole() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    let current = sombus_handle(&got[0]);
    let eleven: Vec<String> = std::iter::once(current.clone())
        .chain((0..10).map(|n| format!("AQEB{n}")))
        .collect();
    for (route, body) in [
        ("ack", json!({}).to_string()),
        ("ack", json!({ "receipt_handles": [] }).to_string()),
        ("ack", json!({ "receipt_handles": eleven }).to_string()),
        (
            "ack",
            json!({ "receipt_handles": [current, current] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current, ""] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current, 1] }).to_string(),
        ),
        (
            "ack",
            json!({ "receipt_handles": [current], "delay_seconds": 0 }).to_string(),
        ),
        (
            "ack",
            format!(r#"{{"receipt_handles":["{current}"],"receipt_handles":["AQEBx"]}}"#),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "delay_seconds": 43_201 }).to_string(),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "delay_seconds": -1 }).to_string(),
        ),
        (
            "nack",
            json!({ "receipt_handles": [current], "colour": "red" }).to_string(),
        ),
        ("nack", "not json".to_owned()),
    ] {
        let refused = bus.settle(&token, &connection, route, &body).await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "pull.bad_request"),
            "{route} {body}"
        );
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    // Still leased and undeleted: a release brings it back for a second delivery.
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [current] }).to_string(),
        )
        .await;
    assert_eq!(released.body, json!({ "nacked": [current], "failed": [] }));
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["receive_count"], 2);
}

/// A handle of another connection's queue, or an altered one, fails with
/// `ReceiptHandleIsInvalid` and acts nowhere; a stale one is listed as done.
#[tokio::test(start_paused = true)]
async fn sombus_handles_of_other_connections_or_altered_fail_and_act_nowhere() {
    let bus = Bus::start().await;
    let mine = bus.connect(json!({ "fifo": false })).await;
    let theirs = bus.connect(json!({ "fifo": false })).await;
    let my_token = bus.token(&mine).await;
    let their_token = bus.token(&theirs).await;
    bus.publish(&mine, "{}", None).await;
    bus.publish(&theirs, "{}", None).await;
    let mine_got = bus.receive(&my_token, &mine, "wait=0&visibility=0").await;
    let old_mine = sombus_handle(&mine_got[0]);
    let mine_got = bus.receive(&my_token, &mine, "wait=0").await;
    let my_handle = sombus_handle(&mine_got[0]);
    let their_handle = sombus_handle(&bus.receive(&their_token, &theirs, "wait=0").await[0]);
    let my_altered = altered(&my_handle);
    let acked = bus
        .settle(
            &my_token,
            &mine,
            "ack",
            &json!({ "receipt_handles": [their_handle, my_altered, old_mine] }).to_string(),
        )
        .await;
    assert_eq!(acked.status, StatusCode::OK, "{}", acked.text);
    assert_eq!(
        acked.body["acked"],
        json!([old_mine]),
        "stale: nothing left to do"
    );
    let failed = acked.body["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{}", acked.text);
    for (entry, handle) in failed.iter().zip([&their_handle, &my_altered]) {
        assert_eq!(entry["receipt_handle"], handle.as_str());
        assert_eq!(entry["code"], "ReceiptHandleIsInvalid");
        assert!(entry["message"].is_string());
    }
    // Both messages are still leased by their own receives, and their handles act.
    for (token, connection, handle) in [
        (&my_token, &mine, &my_handle),
        (&their_token, &theirs, &their_handle),
    ] {
        let released = bus
            .settle(
                token,
                connection,
                "nack",
                &json!({ "receipt_handles": [handle] }).to_string(),
            )
            .await;
        assert_eq!(
            released.body["nacked"],
            json!([handle]),
            "{}",
            released.text
        );
        let back = bus.receive(token, connection, "wait=0").await;
        assert_eq!(back.len(), 1, "the message is still there");
    }
}

/// A release with a delay keeps the message hidden for that long, then it is back.
#[tokio::test(start_paused = true)]
async fn sombus_a_release_with_a_delay_comes_back_after_it() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, r#"{"message_id":"m-1"}"#, Some("story"))
        .await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [sombus_handle(&got[0])], "delay_seconds": 30 })
                .to_string(),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.text);
    tokio::time::advance(Duration::from_secs(29)).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(2)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1);
    assert_eq!(back[0]["receive_count"], 2);
    assert_eq!(back[0]["correlation_id"], "story", "from the message group");
}

/// A connection's tier: over its rate, `rate.limited` with `Retry-After` (not counted against the
/// day); over its day, `quota.exceeded` with a `Retry-After` until midnight UTC.
#[tokio::test(start_paused = true)]
async fn sombus_connection_limits_answer_429_with_their_rules() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "tier": "tight" })).await;
    let token = bus.token(&connection).await;
    let pull = || bus.pull(&token, WORKSPACE, &connection.client_id, "wait=0");
    for _ in 0..2 {
        assert_eq!(pull().await.status, StatusCode::OK);
    }
    // The limits are checked before the parameters.
    let fast = bus
        .pull(&token, WORKSPACE, &connection.client_id, "max=99")
        .await;
    assert_eq!(rule(&fast), (StatusCode::TOO_MANY_REQUESTS, "rate.limited"));
    assert!(fast.retry_after.is_some());
    for _ in 0..2 {
        tokio::time::advance(Duration::from_secs(2)).await;
        let served = pull().await;
        assert_eq!(served.status, StatusCode::OK, "{}", served.text);
    }
    tokio::time::advance(Duration::from_secs(2)).await;
    let daily = pull().await;
    assert_eq!(
        rule(&daily),
        (StatusCode::TOO_MANY_REQUESTS, "quota.exceeded")
    );
    let wait: u64 = daily.retry_after.as_deref().unwrap().parse().unwrap();
    assert!(
        (86_000..=86_400).contains(&wait),
        "until midnight UTC: {wait}"
    );
}

/// A producer connection's token reads no queue: `producer.not_registered`.
#[tokio::test(start_paused = true)]
async fn sombus_a_producer_token_reads_nothing() {
    let bus = Bus::start().await;
    let producer = bus.connect(json!({ "role": "producer" })).await;
    let token = bus.token(&producer).await;
    let refused = bus
        .pull(&token, WORKSPACE, &producer.client_id, "wait=0")
        .await;
    assert_eq!(
        rule(&refused),
        (StatusCode::FORBIDDEN, "producer.not_registered")
    );
}

/// The admin API: its key is checked before the body is read (401 `admin.unauthenticated`), a key
/// of another workspace or too low a role is 403 `admin.forbidden`, an unknown connection 404
/// `admin.not_found`, a malformed create 400 `admin.bad_request`; none of them creates anything.
#[tokio::test(start_paused = true)]
async fn sombus_admin_refusals_have_their_rules_and_create_nothing() {
    let bus = Bus::start().await;
    for key in [None, Some("sqsgw_0000_notakey")] {
        let tripwire = Tripwire::default();
        let refused = bus
            .service
            .call(request(
                Method::POST,
                &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
                key,
                tripwire.body(),
            ))
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::UNAUTHORIZED, "admin.unauthenticated"),
            "{key:?}"
        );
        assert!(!tripwire.was_read(), "{key:?}: the body was read");
    }
    let outsider = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(rule(&outsider), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let viewer = bus
        .admin_call(Method::POST, "/connections", &bus.viewer, "{}")
        .await;
    assert_eq!(rule(&viewer), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let missing = bus
        .admin_call(Method::GET, "/connections/nobody", &bus.viewer, "")
        .await;
    assert_eq!(rule(&missing), (StatusCode::NOT_FOUND, "admin.not_found"));
    for body in [
        json!({ "attempt_limit": 0 }).to_string(),
        json!({ "attempt_limit": 1001 }).to_string(),
        json!({ "client_id": "has_underscore" }).to_string(),
        json!({ "client_id": "x".repeat(26) }).to_string(),
        json!({ "client_id": "ws-test.house" }).to_string(),
        json!({ "role": "boss" }).to_string(),
        json!({ "fifo": "yes" }).to_string(),
        json!({ "name": "" }).to_string(),
        json!({ "colour": "red" }).to_string(),
        r#"{"client_id":"a","client_id":"b"}"#.to_owned(),
        "[]".to_owned(),
    ] {
        let refused = bus
            .admin_call(Method::POST, "/connections", &bus.admin, &body)
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{body}"
        );
    }
    let listed = bus
        .admin_call(Method::GET, "/connections", &bus.viewer, "")
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.body["connections"], json!([]), "nothing was created");
}

/// The audit log: every change and every refused admin request (outcome `refused`), newest first;
/// `limit` 1–1000 and `cursor` (a `next_cursor`), each once, and nothing else.
#[tokio::test(start_paused = true)]
async fn sombus_the_audit_log_pages_and_its_query_is_checked() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let refused = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // Refusals are recorded off the request's path: a task of their own runs while the test waits.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for query in [
        "limit=0",
        "limit=1001",
        "limit=x",
        "limit=1&limit=2",
        "cursor=abc",
        "cursor=12345678901234567890",
        "cursor=",
        "page=2",
    ] {
        let answer = bus
            .admin_call(Method::GET, &format!("/audit?{query}"), &bus.viewer, "")
            .await;
        assert_eq!(
            rule(&answer),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{query}"
        );
    }
    let page = bus
        .admin_call(Method::GET, "/audit?limit=1000", &bus.viewer, "")
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let entries = page.body["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["outcome"], "refused",
        "newest first: {}",
        page.text
    );
    assert!(
        entries[0]["detail"]
            .as_str()
            .unwrap()
            .contains("admin.forbidden"),
        "{}",
        page.text
    );
    let created = entries
        .iter()
        .find(|entry| entry["action"] == "connection.create")
        .unwrap_or_else(|| panic!("no create: {}", page.text));
    assert_eq!(created["client_id"], connection.client_id.as_str());
    assert!(
        !page.text.contains(&connection.secret),
        "a secret was logged"
    );
    let first = bus
        .admin_call(Method::GET, "/audit?limit=1", &bus.viewer, "")
        .await;
    assert_eq!(first.body["entries"].as_array().unwrap().len(), 1);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let next = bus
        .admin_call(
            Method::GET,
            &format!("/audit?limit=1&cursor={cursor}"),
            &bus.viewer,
            "",
        )
        .await;
    assert_eq!(next.status, StatusCode::OK, "{}", next.text);
    assert_eq!(next.body["entries"][0], entries[1], "the next page goes on");
}

/// Routes no handler serves and wrong methods answer in the sombus shapes: the bus's body with
/// `route.*` rules on pull paths (or the admin API's on its own), OAuth's on the token path.
#[tokio::test(start_paused = true)]
async fn sombus_unknown_routes_and_wrong_methods_answer_in_its_shapes() {
    let bus = Bus::start().await;
    let pull = format!("/v1/tenants/{WORKSPACE}/consumers/c1");
    for (method, path, status, rules) in [
        (
            Method::GET,
            format!("{pull}/nothing"),
            StatusCode::NOT_FOUND,
            &["route.not_found"][..],
        ),
        (
            Method::POST,
            format!("{pull}/messages"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
        (
            Method::PUT,
            format!("{pull}/ack"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
        (
            Method::GET,
            format!("/v1/admin/workspaces/{WORKSPACE}/nothing"),
            StatusCode::NOT_FOUND,
            &["admin.not_found", "route.not_found"][..],
        ),
        (
            Method::PUT,
            format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
            StatusCode::METHOD_NOT_ALLOWED,
            &["route.method_not_allowed"][..],
        ),
    ] {
        let answer = bus
            .service
            .call(request(method.clone(), &path, Some(&bus.admin), "{}"))
            .await;
        let (answered, rule) = rule(&answer);
        assert_eq!(answered, status, "{method} {path}");
        assert!(rules.contains(&rule), "{method} {path}: {rule}");
    }
    let token_get = bus
        .service
        .call(request(Method::GET, "/v1/oauth/token", None, Body::empty()))
        .await;
    assert_eq!(
        oauth_error(&token_get),
        (StatusCode::METHOD_NOT_ALLOWED, "invalid_request")
    );
    let token_elsewhere = bus
        .service
        .call(request(
            Method::POST,
            "/v1/oauth/other",
            None,
            Body::empty(),
        ))
        .await;
    assert_eq!(oauth_error(&token_elsewhere).0, StatusCode::NOT_FOUND);
}

/// A connection's queue is reserved: a grant on every queue (here the SQS endpoint's unsigned
/// caller) may publish to it and read its address, never receive from it or purge it.
#[tokio::test(start_paused = true)]
async fn sombus_connection_queues_take_sends_from_any_queue_grant_but_nothing_else() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let address = bus
        .service
        .sqs_call("GetQueueUrl", json!({ "QueueName": connection.queue }))
        .await;
    assert_eq!(address.status, StatusCode::OK, "{}", address.text);
    let url = address.body["QueueUrl"].as_str().unwrap().to_owned();
    let sent = bus
        .service
        .sqs_call(
            "SendMessage",
            json!({ "QueueUrl": url, "MessageBody": r#"{"message_id":"m-1"}"# }),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    for action in ["ReceiveMessage", "PurgeQueue", "DeleteQueue"] {
        let refused = bus
            .service
            .sqs_call(action, json!({ "QueueUrl": url }))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{action}: {}",
            refused.text
        );
        assert_eq!(sqs_code(&refused), "AccessDenied", "{action}");
    }
    let token = bus.token(&connection).await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(got.len(), 1, "the message is still there for its consumer");
    assert_eq!(got[0]["envelope"]["message_id"], "m-1");
}

/// A release delay past the 12-hour in-flight cap ends at that mark, counted from the receive,
/// rather than being refused.
#[tokio::test(start_paused = true)]
async fn sombus_a_release_delay_past_twelve_hours_ends_at_the_mark() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let token = bus.token(&connection).await;
    bus.publish(&connection, "{}", None).await;
    let got = bus
        .receive(&token, &connection, "wait=0&visibility=43200")
        .await;
    tokio::time::advance(Duration::from_secs(100)).await;
    let released = bus
        .settle(
            &token,
            &connection,
            "nack",
            &json!({ "receipt_handles": [sombus_handle(&got[0])], "delay_seconds": 43_200 })
                .to_string(),
        )
        .await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.text);
    assert_eq!(released.body["failed"], json!([]));
    // 43,099 s after the receive: still hidden; past 43,200 s from the receive: back, although
    // the delay asked for 43,200 s from the release.
    tokio::time::advance(Duration::from_secs(42_999)).await;
    // The first token has expired meanwhile.
    let token = bus.token(&connection).await;
    assert!(bus.receive(&token, &connection, "wait=0").await.is_empty());
    tokio::time::advance(Duration::from_secs(102)).await;
    let back = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(back.len(), 1, "visible again at the 12-hour mark");
    assert_eq!(back[0]["receive_count"], 2);
}

/// `ListQueues` through a grant on every queue (the unsigned caller's `*`) never lists the
/// gateway's reserved queues: no sombus workspace, client id or basaltic queue is learnt so.
#[tokio::test(start_paused = true)]
async fn sombus_reserved_queues_are_never_listed_through_a_grant_on_every_queue() {
    let (admin, admin_entry) = admin_key_entry(WORKSPACE, "admin");
    let (basaltic_key, basaltic_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[sombus]\n\n{admin_entry}[basaltic]\n\n{basaltic_entry}"
    ))
    .await;
    let created = service
        .call(request(
            Method::POST,
            &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
            Some(&admin),
            "{}",
        ))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let queue = service
        .call(request(
            Method::POST,
            "/v1/queues",
            Some(&basaltic_key),
            json!({ "name": "invoices" }).to_string(),
        ))
        .await;
    assert_eq!(queue.status, StatusCode::CREATED, "{}", queue.text);
    let in_backend = service.backend.list_queues("sqsgw_").await.unwrap();
    assert_eq!(
        in_backend.len(),
        3,
        "a connection's two queues and the basaltic one: {in_backend:?}"
    );
    for body in [json!({}), json!({ "QueueNamePrefix": "sqsgw_" })] {
        let listed = service.sqs_call("ListQueues", body.clone()).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        let urls = listed.body["QueueUrls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            urls.iter()
                .all(|url| !url.as_str().unwrap().contains("sqsgw_")),
            "{body}: {}",
            listed.text
        );
    }
}

// ---------------------------------------------------------------------------------------------
// basaltic: errors are `{"error": {"code", "message"}}`
// ---------------------------------------------------------------------------------------------

/// The service with the basaltic API: a key with everything, one that may only receive, one that
/// may only send, and one whose only grant names a queue that does not exist.
struct Basaltic {
    service: InProcess,
    admin: String,
    reader: String,
    sender: String,
    stranger: String,
}

const ELSEWHERE: &str = "00000000-0000-4000-8000-000000000001";

fn basaltic_key_entry(grants: &str) -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ {grants} }}\n\n",
        key.id, key.hash
    );
    (key.key, entry)
}

/// The error's status and code, checking basaltic's body.
fn code(reply: &Reply) -> (StatusCode, &str) {
    assert!(reply.body["error"]["message"].is_string(), "{}", reply.text);
    (
        reply.status,
        reply.body["error"]["code"].as_str().unwrap_or_default(),
    )
}

impl Basaltic {
    async fn start() -> Self {
        let (admin, admin_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
        let (reader, reader_entry) = basaltic_key_entry(r#""*" = ["receive"]"#);
        let (sender, sender_entry) = basaltic_key_entry(r#""*" = ["send"]"#);
        let (stranger, stranger_entry) = basaltic_key_entry(&format!(r#""{ELSEWHERE}" = ["*"]"#));
        let service = with_tables(&format!(
            "[basaltic]\n\n{admin_entry}{reader_entry}{sender_entry}{stranger_entry}"
        ))
        .await;
        Self {
            service,
            admin,
            reader,
            sender,
            stranger,
        }
    }

    async fn call(&self, method: Method, path: &str, key: &str, body: impl Into<Body>) -> Reply {
        self.service
            .call(request(method, path, Some(key), body))
            .await
    }

    /// Creates a queue; answers its id.
    async fn create(&self, body: Value) -> String {
        let created = self
            .call(Method::POST, "/v1/queues", &self.admin, body.to_string())
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
        created.body["result"]["id"].as_str().unwrap().to_owned()
    }

    async fn send(&self, id: &str, body: &Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            &self.admin,
            body.to_string(),
        )
        .await
    }

    async fn receive(&self, id: &str, body: Value) -> Vec<Value> {
        let got = self
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                &self.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.text);
        got.body["messages"].as_array().unwrap().clone()
    }

    /// The queue's messages, read without a lease.
    async fn inspect(&self, id: &str) -> Vec<Value> {
        let read = self
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages"),
                &self.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.text);
        read.body["messages"].as_array().unwrap().clone()
    }

    async fn delete(&self, id: &str, receipt: &str) -> Reply {
        let encoded: String = form_urlencoded::byte_serialize(receipt.as_bytes()).collect();
        self.call(
            Method::DELETE,
            &format!("/v1/queues/{id}/messages?receipt_handle={encoded}"),
            &self.admin,
            Body::empty(),
        )
        .await
    }

    async fn visibility(&self, id: &str, receipt: &str, seconds: i64) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &self.admin,
            json!({ "receipt_handle": receipt, "visibility_timeout_seconds": seconds }).to_string(),
        )
        .await
    }

    async fn batch(&self, id: &str, kind: &str, entries: Value) -> Reply {
        self.call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/{kind}"),
            &self.admin,
            json!({ "entries": entries }).to_string(),
        )
        .await
    }
}

fn receipt(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}

/// Without a valid key: 401 `unauthenticated` with the Bearer challenge, before the body is read,
/// on every route.
#[tokio::test(start_paused = true)]
async fn basaltic_keys_are_checked_before_the_body_is_read() {
    let mut basaltic = Basaltic::start().await;
    let headers = LastHeaders::watch(&mut basaltic.service);
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (method, path) in [
        (Method::POST, "/v1/queues".to_owned()),
        (Method::POST, format!("/v1/queues/{id}/messages")),
        (Method::POST, format!("/v1/queues/{id}/messages/receive")),
        (Method::POST, format!("/v1/queues/{id}/messages/batch")),
        (Method::PATCH, format!("/v1/queues/{id}")),
    ] {
        for key in [None, Some("sqsgw_0000_notakey")] {
            let tripwire = Tripwire::default();
            let refused = basaltic
                .service
                .call(request(method.clone(), &path, key, tripwire.body()))
                .await;
            assert_eq!(
                code(&refused),
                (StatusCode::UNAUTHORIZED, "unauthenticated"),
                "{method} {path} {key:?}"
            );
            assert_eq!(headers.get("www-authenticate").as_deref(), Some("Bearer"));
            assert!(!tripwire.was_read(), "{method} {path}: the body was read");
        }
    }
    assert!(basaltic.inspect(&id).await.is_empty());
    // The control: with a key the body is read (and, failing, refused as cut short).
    let tripwire = Tripwire::default();
    let read = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages"),
            &basaltic.admin,
            tripwire.body(),
        )
        .await;
    assert_eq!(code(&read), (StatusCode::BAD_REQUEST, "invalid_argument"));
    assert!(tripwire.was_read());
}

/// Permissions: a key without the one an operation takes is 403 `permission_denied` (creating a
/// queue takes `manage_queues` on `*`, inspecting `inspect`, purging `purge`), and nothing is
/// done.
#[tokio::test(start_paused = true)]
async fn basaltic_each_operation_takes_its_permission() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let message = json!({ "body": "kept" });
    assert_eq!(
        basaltic.send(&id, &message).await.status,
        StatusCode::CREATED
    );
    for (key, method, path, body) in [
        (
            &basaltic.reader,
            Method::POST,
            format!("/v1/queues/{id}/messages"),
            message.to_string(),
        ),
        (
            &basaltic.reader,
            Method::POST,
            "/v1/queues".to_owned(),
            json!({ "name": "more" }).to_string(),
        ),
        (
            &basaltic.reader,
            Method::GET,
            format!("/v1/queues/{id}/messages"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::POST,
            format!("/v1/queues/{id}/purge"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::DELETE,
            format!("/v1/queues/{id}"),
            String::new(),
        ),
        (
            &basaltic.reader,
            Method::PATCH,
            format!("/v1/queues/{id}"),
            json!({ "settings": { "delay_seconds": 5 } }).to_string(),
        ),
        (
            &basaltic.sender,
            Method::POST,
            format!("/v1/queues/{id}/messages/receive"),
            "{}".to_owned(),
        ),
        (
            &basaltic.sender,
            Method::DELETE,
            format!("/v1/queues/{id}/messages?receipt_handle=AQAAAH8x"),
            String::new(),
        ),
    ] {
        let refused = basaltic.call(method.clone(), &path, key, body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::FORBIDDEN, "permission_denied"),
            "{method} {path}"
        );
    }
    let messages = basaltic.inspect(&id).await;
    assert_eq!(messages.len(), 1, "nothing sent, purged or received");
    assert_eq!(messages[0]["receive_count"], 0);
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.admin, Body::empty())
        .await;
    assert_eq!(
        listed.body["queues"].as_array().unwrap().len(),
        1,
        "{}",
        listed.text
    );
    let shown = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(shown.body["result"]["settings"]["delay_seconds"], 0);
}

/// A queue the key holds nothing on answers 404 exactly as one that does not exist, so ids can't
/// be probed; the key's list does not show it.
#[tokio::test(start_paused = true)]
async fn basaltic_a_queue_the_key_holds_nothing_on_is_not_found() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let missing = "7b0f3a4e-0000-4000-8000-00000000abcd";
    let mut answers = Vec::new();
    for queue in [id.as_str(), missing, ELSEWHERE, "not-a-uuid"] {
        for (method, rest, body) in [
            (Method::GET, "", String::new()),
            (
                Method::POST,
                "/messages",
                json!({ "body": "x" }).to_string(),
            ),
        ] {
            let refused = basaltic
                .call(
                    method.clone(),
                    &format!("/v1/queues/{queue}{rest}"),
                    &basaltic.stranger,
                    body,
                )
                .await;
            assert_eq!(
                code(&refused),
                (StatusCode::NOT_FOUND, "queue_not_found"),
                "{method} {queue}{rest}"
            );
            answers.push(refused.text);
        }
    }
    assert!(
        answers.windows(2).all(|pair| pair[0] == pair[1]),
        "{answers:?}"
    );
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.stranger, Body::empty())
        .await;
    assert_eq!(listed.body["queues"], json!([]), "{}", listed.text);
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
}

/// A queue's name and settings hold to their ranges; a refused create makes nothing; the edges
/// are taken; a name in use is 409 `conflict`; a dead-letter queue that does not exist is 404.
#[tokio::test(start_paused = true)]
async fn basaltic_queue_names_and_settings_hold_to_their_ranges() {
    let basaltic = Basaltic::start().await;
    let named = |settings: Value| json!({ "name": "q", "settings": settings });
    for body in [
        json!({}),
        json!({ "name": "" }),
        json!({ "name": "x".repeat(58) }),
        json!({ "name": "has_underscore" }),
        json!({ "name": "dotted.name" }),
        json!({ "name": 7 }),
        json!({ "name": "q", "type": "lifo" }),
        json!({ "name": "q", "type": null }),
        json!({ "name": "q", "colour": "red" }),
        json!({ "name": "q", "settings": [] }),
        named(json!({ "delay_seconds": 901 })),
        named(json!({ "receive_wait_time_seconds": 21 })),
        named(json!({ "visibility_timeout_seconds": 43_201 })),
        named(json!({ "max_message_bytes": 1023 })),
        named(json!({ "max_message_bytes": 262_145 })),
        named(json!({ "retention_seconds": 59 })),
        named(json!({ "retention_seconds": 1_209_601 })),
        named(json!({ "content_based_deduplication": true })),
        named(json!({ "dead_letter_queue": { "queue_id": "not-a-uuid" } })),
        named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE, "max_receive_count": 0 } })),
        named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE, "max_receive_count": 1001 } })),
        named(json!({ "colour": 1 })),
    ] {
        let refused = basaltic
            .call(
                Method::POST,
                "/v1/queues",
                &basaltic.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    let listed = basaltic
        .call(Method::GET, "/v1/queues", &basaltic.admin, Body::empty())
        .await;
    assert_eq!(listed.body["queues"], json!([]), "nothing was created");
    let missing_target = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            named(json!({ "dead_letter_queue": { "queue_id": ELSEWHERE } })).to_string(),
        )
        .await;
    assert_eq!(
        code(&missing_target),
        (StatusCode::NOT_FOUND, "queue_not_found")
    );
    let name = "n".repeat(57);
    let edges = json!({ "name": name, "settings": {
        "delay_seconds": 900,
        "receive_wait_time_seconds": 20,
        "visibility_timeout_seconds": 43_200,
        "max_message_bytes": 1024,
        "retention_seconds": 1_209_600,
    } });
    let created = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            edges.to_string(),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let settings = &created.body["result"]["settings"];
    assert_eq!(settings["delay_seconds"], 900);
    assert_eq!(settings["max_message_bytes"], 1024);
    assert_eq!(created.body["result"]["type"], "standard");
    let again = basaltic
        .call(
            Method::POST,
            "/v1/queues",
            &basaltic.admin,
            json!({ "name": name, "type": "fifo" }).to_string(),
        )
        .await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "conflict"));
}

/// A message: a string body, at most 20 attributes with names of 1–256 bytes (not `AWS.`,
/// `Amazon.`, `sqsgw.` in any case), types `String`, `Number` (a number) or `Binary` (standard
/// base64), values of at most 1,024 bytes (Binary decoded); `delay_seconds` 0–900; no FIFO fields
/// on a standard queue. Each refusal stores nothing; the edges are taken.
#[tokio::test(start_paused = true)]
async fn basaltic_messages_and_attributes_hold_to_their_limits() {
    use base64::Engine as _;
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let text = |value: &str| json!({ "type": "String", "value": value });
    let with = |attributes: Value| json!({ "body": "b", "attributes": attributes });
    let many = |count: usize| -> Value {
        Value::Object((0..count).map(|n| (format!("a{n}"), text("v"))).collect())
    };
    let binary = |bytes: usize| json!({ "type": "Binary", "value": base64::engine::general_purpose::STANDARD.encode(vec![7u8; bytes]) });
    let long_name = "n".repeat(257);
    for body in [
        json!({}),
        json!({ "body": 1 }),
        json!({ "body": "" }),
        json!({ "body": "nul \u{0}" }),
        json!({ "body": "b", "colour": "red" }),
        json!({ "body": "b", "attributes": [] }),
        with(many(21)),
        with(json!({ long_name: text("v") })),
        with(json!({ "": text("v") })),
        with(json!({ "AWS.trace": text("v") })),
        with(json!({ "amazon.trace": text("v") })),
        with(json!({ "SQSGW.packed": text("v") })),
        with(json!({ "k": { "type": "Blob", "value": "v" } })),
        with(json!({ "k": { "type": "String" } })),
        with(json!({ "k": { "type": "String", "value": "v", "extra": 1 } })),
        with(json!({ "k": text(&"v".repeat(1025)) })),
        with(json!({ "k": text("") })),
        with(json!({ "k": { "type": "Number", "value": "twelve" } })),
        with(json!({ "k": { "type": "Binary", "value": "not base64!" } })),
        with(json!({ "k": binary(1025) })),
        json!({ "body": "b", "delay_seconds": 901 }),
        json!({ "body": "b", "delay_seconds": -1 }),
        json!({ "body": "b", "group_id": "g" }),
        json!({ "body": "b", "deduplication_id": "d" }),
    ] {
        let refused = basaltic.send(&id, &body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was stored");
    let mut edges = many(18);
    edges["n".repeat(256)] = text(&"v".repeat(1024));
    edges["bin"] = binary(1024);
    let accepted = basaltic
        .send(
            &id,
            &json!({ "body": "edges", "attributes": edges, "delay_seconds": 900 }),
        )
        .await;
    assert_eq!(accepted.status, StatusCode::CREATED, "{}", accepted.text);
    assert!(accepted.body["result"]["message_id"].is_string());
    let stored = basaltic.inspect(&id).await;
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0]["attributes"].as_object().unwrap().len(), 20);
    assert_eq!(stored[0]["attributes"]["bin"], binary(1024));
}

/// FIFO queues refuse a per-message delay, need a `group_id`, and a `deduplication_id` unless the
/// queue deduplicates by content.
#[tokio::test(start_paused = true)]
async fn basaltic_fifo_queues_take_groups_not_delays() {
    let basaltic = Basaltic::start().await;
    let fifo = basaltic
        .create(json!({ "name": "ledger", "type": "fifo" }))
        .await;
    for body in [
        json!({ "body": "b", "group_id": "g", "deduplication_id": "d", "delay_seconds": 0 }),
        json!({ "body": "b", "deduplication_id": "d" }),
        json!({ "body": "b", "group_id": "g" }),
        json!({ "body": "b", "group_id": 7, "deduplication_id": "d" }),
    ] {
        let refused = basaltic.send(&fifo, &body).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    assert!(basaltic.inspect(&fifo).await.is_empty());
    let sent = basaltic
        .send(
            &fifo,
            &json!({ "body": "b", "group_id": "g", "deduplication_id": "d" }),
        )
        .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.text);
    let by_content = basaltic
        .create(json!({ "name": "ledger2", "type": "fifo",
                        "settings": { "content_based_deduplication": true } }))
        .await;
    let sent = basaltic
        .send(&by_content, &json!({ "body": "b", "group_id": "g" }))
        .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.text);
}

/// Receive's ranges: `max_messages` 1–10, `wait_time_seconds` 0–20, `visibility_timeout_seconds`
/// 0–43200, nothing else; a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_receive_fields_hold_to_their_ranges() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    for body in [
        json!({ "max_messages": 0 }),
        json!({ "max_messages": 11 }),
        json!({ "wait_time_seconds": 21 }),
        json!({ "visibility_timeout_seconds": 43_201 }),
        json!({ "max_messages": "ten" }),
        json!({ "maxMessages": 1 }),
    ] {
        let refused = basaltic
            .call(
                Method::POST,
                &format!("/v1/queues/{id}/messages/receive"),
                &basaltic.admin,
                body.to_string(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    let got = basaltic
        .receive(
            &id,
            json!({ "max_messages": 10, "wait_time_seconds": 0, "visibility_timeout_seconds": 43_200 }),
        )
        .await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["receive_count"], 1, "no refused receive leased it");
}

/// A JSON key given twice, at any depth, is 400 `invalid_argument` naming the key and showing no
/// value; nothing is sent.
#[tokio::test(start_paused = true)]
async fn basaltic_a_key_given_twice_is_refused() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (body, key) in [
        (r#"{"body":"first","body":"second"}"#, "\"body\""),
        (
            r#"{"body":"b","attributes":{"k":{"type":"String","value":"first","value":"second"}}}"#,
            "\"value\"",
        ),
        (
            r#"{"entries":[{"id":"a","body":"first"},{"id":"b","body":"x","body":"second"}]}"#,
            "\"body\"",
        ),
    ] {
        let path = if body.contains("entries") {
            format!("/v1/queues/{id}/messages/batch")
        } else {
            format!("/v1/queues/{id}/messages")
        };
        let refused = basaltic
            .call(Method::POST, &path, &basaltic.admin, body)
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{message}"
        );
        assert!(
            !message.contains("first") && !message.contains("second"),
            "{message}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
}

/// Deleting by receipt: the one query parameter `receipt_handle`, once; an altered receipt or one
/// of another queue is 400 `receipt_handle_invalid`, an older one 409 `receipt_handle_stale`, and
/// nothing changes; the current one deletes.
#[tokio::test(start_paused = true)]
async fn basaltic_only_the_current_receipt_of_the_queue_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let other = basaltic.create(json!({ "name": "other" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    basaltic.send(&other, &json!({ "body": "theirs" })).await;
    let old = receipt(
        &basaltic
            .receive(&id, json!({ "visibility_timeout_seconds": 0 }))
            .await[0],
    );
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    let theirs = receipt(&basaltic.receive(&other, json!({})).await[0]);
    let base = format!("/v1/queues/{id}/messages");
    for query in [
        String::new(),
        "?receipt_handle=".to_owned(),
        format!("?receipt_handle={current}&receipt_handle={current}"),
        format!("?receipt_handle={current}&force=1"),
    ] {
        let refused = basaltic
            .call(
                Method::DELETE,
                &format!("{base}{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    for (receipt, expected) in [
        (
            altered(&current),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            "AQAAAH8forged".to_owned(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            theirs.clone(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (old, (StatusCode::CONFLICT, "receipt_handle_stale")),
    ] {
        let refused = basaltic.delete(&id, &receipt).await;
        assert_eq!(code(&refused), expected);
        assert!(!refused.text.contains(&receipt), "a receipt was echoed");
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 1, "nothing was deleted");
    assert_eq!(basaltic.inspect(&other).await.len(), 1, "nor elsewhere");
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
    let again = basaltic.delete(&id, &current).await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "receipt_handle_stale"));
}

/// Visibility counts from the change and 0 releases; after a release the receipt can no longer
/// extend (409) but still deletes until the message is received again; the timeout is 0–43200.
#[tokio::test(start_paused = true)]
async fn basaltic_a_released_receipt_cannot_extend_but_still_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    for seconds in [-1, 43_201] {
        let refused = basaltic.visibility(&id, &current, seconds).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{seconds}"
        );
    }
    let missing = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &basaltic.admin,
            json!({ "receipt_handle": current }).to_string(),
        )
        .await;
    assert_eq!(
        code(&missing),
        (StatusCode::BAD_REQUEST, "invalid_argument")
    );
    let extended = basaltic.visibility(&id, &current, 100).await;
    assert_eq!(extended.status, StatusCode::NO_CONTENT, "{}", extended.text);
    // Counted from the change: hidden for 100 s more, whatever the queue's 30 s.
    tokio::time::advance(Duration::from_secs(99)).await;
    assert!(basaltic.receive(&id, json!({})).await.is_empty());
    let released = basaltic.visibility(&id, &current, 0).await;
    assert_eq!(released.status, StatusCode::NO_CONTENT);
    let extend_again = basaltic.visibility(&id, &current, 30).await;
    assert_eq!(
        code(&extend_again),
        (StatusCode::CONFLICT, "receipt_handle_stale")
    );
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
}

/// Batches take 1 to 10 entries with unique ids of 1–80 letters, digits, `-`, `_`; a batch
/// refused whole sends nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_take_up_to_ten_entries_with_unique_ids() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let entry = |entry_id: &str| json!({ "id": entry_id, "body": "b" });
    let eleven: Vec<Value> = (0..11).map(|n| entry(&format!("e{n}"))).collect();
    for entries in [
        json!([]),
        json!(eleven),
        json!([entry("a"), entry("a")]),
        json!([entry("a b")]),
        json!([entry(&"x".repeat(81))]),
        json!([entry("")]),
        json!([{ "body": "no id" }]),
        json!([entry("a"), "not an object"]),
        json!({ "id": "a" }),
    ] {
        let refused = basaltic.batch(&id, "batch", entries.clone()).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{entries}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
    let ten: Vec<Value> = (0..10)
        .map(|n| entry(&format!("{}{n}", "x".repeat(79))))
        .collect();
    let sent = basaltic.batch(&id, "batch", json!(ten)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    assert_eq!(sent.body["successful"].as_array().unwrap().len(), 10);
}

/// A batch answers each entry: failures carry their id and code, the others succeed (send ones
/// with their message id); HTTP 200 either way.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_answer_each_entry() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let sent = basaltic
        .batch(
            &id,
            "batch",
            json!([
                { "id": "good", "body": "one" },
                { "id": "late", "body": "two", "delay_seconds": 901 },
                { "id": "reserved", "body": "three", "attributes": { "AWS.x": { "type": "String", "value": "v" } } },
                { "id": "also-good", "body": "four" },
            ]),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    let successful = sent.body["successful"].as_array().unwrap();
    let ids: Vec<&str> = successful
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["good", "also-good"]);
    assert!(
        successful
            .iter()
            .all(|entry| entry["message_id"].is_string())
    );
    let failed = sent.body["failed"].as_array().unwrap();
    for entry_id in ["late", "reserved"] {
        let entry = failed.iter().find(|entry| entry["id"] == entry_id).unwrap();
        assert_eq!(entry["code"], "invalid_argument", "{entry}");
        assert!(entry["message"].is_string());
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 2);

    let first = basaltic
        .receive(
            &id,
            json!({ "max_messages": 2, "visibility_timeout_seconds": 0 }),
        )
        .await;
    let old: Vec<String> = first.iter().map(receipt).collect();
    let second = basaltic.receive(&id, json!({ "max_messages": 2 })).await;
    let current: Vec<String> = second.iter().map(receipt).collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, entry_id: &str| {
        let failed = reply.body["failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["id"] == entry_id);
        let entry = entry.unwrap_or_else(|| panic!("{entry_id} did not fail: {}", reply.text));
        entry["code"].as_str().unwrap().to_owned()
    };
    let visibility = basaltic
        .batch(
            &id,
            "visibility-batch",
            json!([
                { "id": "old", "receipt_handle": old[0], "visibility_timeout_seconds": 0 },
                { "id": "long", "receipt_handle": current[0], "visibility_timeout_seconds": 43_201 },
                { "id": "bare", "receipt_handle": current[0] },
                { "id": "altered", "receipt_handle": altered(&current[0]), "visibility_timeout_seconds": 0 },
            ]),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert_eq!(visibility.body["successful"], json!([]));
    assert_eq!(failed_code(&visibility, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&visibility, "long"), "invalid_argument");
    assert_eq!(failed_code(&visibility, "bare"), "invalid_argument");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "receipt_handle_invalid"
    );
    assert!(
        basaltic.receive(&id, json!({})).await.is_empty(),
        "nothing was released"
    );
    let deleted = basaltic
        .batch(
            &id,
            "delete-batch",
            json!([
                { "id": "old", "receipt_handle": old[1] },
                { "id": "altered", "receipt_handle": altered(&current[1]) },
                { "id": "none" },
                { "id": "current", "receipt_handle": current[0] },
            ]),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(deleted.body["successful"], json!([{ "id": "current" }]));
    assert_eq!(failed_code(&deleted, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&deleted, "altered"), "receipt_handle_invalid");
    assert_eq!(failed_code(&deleted, "none"), "invalid_argument");
    assert_eq!(
        basaltic.inspect(&id).await.len(),
        1,
        "only `current` deleted"
    );
}

/// Inspect: `max_messages` 1–10 (default 10) and nothing else; it leases nothing and changes no
/// receive count.
#[tokio::test(start_paused = true)]
async fn basaltic_inspect_reads_without_a_lease() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for n in 0..12 {
        basaltic
            .send(&id, &json!({ "body": format!("m{n}") }))
            .await;
    }
    for query in [
        "max_messages=0",
        "max_messages=11",
        "max_messages=x",
        "limit=1",
    ] {
        let refused = basaltic
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages?{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    let read = basaltic.inspect(&id).await;
    assert_eq!(read.len(), 10, "ten by default");
    assert!(
        read.iter()
            .all(|message| message.get("receipt_handle").is_none())
    );
    let two = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/messages?max_messages=2"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(two.body["messages"].as_array().unwrap().len(), 2);
    let got = basaltic.receive(&id, json!({ "max_messages": 10 })).await;
    assert_eq!(got.len(), 10, "inspecting leased nothing");
    assert!(got.iter().all(|message| message["receive_count"] == 1));
}

/// A purge deletes every message, leased ones included, and their receipts become stale.
#[tokio::test(start_paused = true)]
async fn basaltic_a_purge_makes_receipts_stale() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for body in ["a", "b"] {
        basaltic.send(&id, &json!({ "body": body })).await;
    }
    let leased = receipt(&basaltic.receive(&id, json!({})).await[0]);
    let purged = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/purge"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(purged.status, StatusCode::NO_CONTENT, "{}", purged.text);
    assert!(basaltic.inspect(&id).await.is_empty());
    let stale = basaltic.delete(&id, &leased).await;
    assert_eq!(code(&stale), (StatusCode::CONFLICT, "receipt_handle_stale"));
}

/// Queue ids are UUIDs in any written form; answers give the lowercase hyphenated one.
#[tokio::test(start_paused = true)]
async fn basaltic_queue_ids_are_uuids_in_any_written_form() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    assert_eq!(
        uuid::Uuid::parse_str(&id).unwrap().hyphenated().to_string(),
        id
    );
    for written in [
        id.to_uppercase(),
        id.replace('-', ""),
        format!("{{{id}}}"),
        format!("urn:uuid:{id}"),
    ] {
        let shown = basaltic
            .call(
                Method::GET,
                &format!("/v1/queues/{written}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(shown.status, StatusCode::OK, "{written}: {}", shown.text);
        assert_eq!(shown.body["result"]["id"], id.as_str(), "{written}");
        assert_eq!(shown.body["result"]["name"], "invoices");
    }
}

/// A body declared over 3 MiB + 64 KiB is 413 `payload_too_large`, refused unread.
#[tokio::test(start_paused = true)]
async fn basaltic_bodies_over_the_limit_are_refused_unread() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for path in [
        format!("/v1/queues/{id}/messages"),
        format!("/v1/queues/{id}/messages/batch"),
    ] {
        let tripwire = Tripwire::default();
        let refused = basaltic
            .call(
                Method::POST,
                &path,
                &basaltic.admin,
                tripwire.declaring(Some(3 * 1024 * 1024 + 64 * 1024 + 1)),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            "{path}"
        );
        assert!(!tripwire.was_read(), "{path}");
    }
}

/// Routes no handler serves and wrong methods under `/v1/queues` answer in basaltic's shape.
#[tokio::test(start_paused = true)]
async fn basaltic_unknown_routes_and_wrong_methods_answer_in_its_shape() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    for (method, path, expected) in [
        (
            Method::PUT,
            "/v1/queues".to_owned(),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::GET,
            format!("/v1/queues/{id}/messages/receive"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::PUT,
            format!("/v1/queues/{id}/purge"),
            (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
        ),
        (
            Method::GET,
            format!("/v1/queues/{id}/nothing"),
            (StatusCode::NOT_FOUND, "not_found"),
        ),
    ] {
        let answer = basaltic
            .call(method.clone(), &path, &basaltic.admin, Body::empty())
            .await;
        assert_eq!(code(&answer), expected, "{method} {path}");
    }
}

/// A settings change takes the settings given and keeps the others; a refused one (out of range,
/// unknown, not an object) changes nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_a_settings_change_keeps_what_it_does_not_name() {
    let basaltic = Basaltic::start().await;
    let id = basaltic
        .create(json!({ "name": "invoices", "settings": { "delay_seconds": 5 } }))
        .await;
    let path = format!("/v1/queues/{id}");
    for body in [
        json!({}),
        json!({ "settings": 5 }),
        json!({ "settings": { "delay_seconds": 901 } }),
        json!({ "settings": { "visibility_timeout_seconds": 60, "colour": 1 } }),
        json!({ "settings": { "content_based_deduplication": true } }),
        json!({ "settings": {}, "name": "renamed" }),
    ] {
        let refused = basaltic
            .call(Method::PATCH, &path, &basaltic.admin, body.to_string())
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{body}"
        );
    }
    let shown = basaltic
        .call(Method::GET, &path, &basaltic.admin, Body::empty())
        .await;
    let settings = &shown.body["result"]["settings"];
    assert_eq!(settings["delay_seconds"], 5, "{}", shown.text);
    assert_eq!(settings["visibility_timeout_seconds"], 30);
    let changed = basaltic
        .call(
            Method::PATCH,
            &path,
            &basaltic.admin,
            json!({ "settings": { "visibility_timeout_seconds": 60 } }).to_string(),
        )
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text);
    let settings = &changed.body["result"]["settings"];
    assert_eq!(settings["visibility_timeout_seconds"], 60);
    assert_eq!(settings["delay_seconds"], 5, "kept");
    assert_eq!(settings["max_message_bytes"], 262_144, "kept");
    assert_eq!(changed.body["result"]["name"], "invoices");
}

/// Metrics take `read_metrics` and only `since` (an RFC 3339 time, once); the gateway samples
/// every queue every 10 s, so the samples follow the queue as time passes.
#[tokio::test(start_paused = true)]
async fn basaltic_metrics_are_sampled_as_time_passes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let path = format!("/v1/queues/{id}/metrics");
    let denied = basaltic
        .call(Method::GET, &path, &basaltic.reader, Body::empty())
        .await;
    assert_eq!(code(&denied), (StatusCode::FORBIDDEN, "permission_denied"));
    for query in [
        "since=yesterday",
        "since=2026-03-01T00:00:00Z&since=2026-03-01T00:00:00Z",
        "from=2026-03-01T00:00:00Z",
    ] {
        let refused = basaltic
            .call(
                Method::GET,
                &format!("{path}?{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    for n in 0..3 {
        basaltic
            .send(&id, &json!({ "body": format!("m{n}") }))
            .await;
    }
    // Slept, not advanced: the sampler, a task of its own, runs while the test waits.
    tokio::time::sleep(Duration::from_secs(25)).await;
    let read = |query: &'static str| {
        let (basaltic, uri) = (&basaltic, format!("{path}{query}"));
        async move {
            basaltic
                .call(Method::GET, &uri, &basaltic.admin, Body::empty())
                .await
        }
    };
    let first = read("").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.body["queue_id"], id.as_str());
    assert_eq!(first.body["interval_seconds"], 10);
    let samples = first.body["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "{}", first.text);
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(3), &json!(0)),
        "{last}"
    );
    basaltic.receive(&id, json!({})).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let second = read("").await;
    let samples = second.body["samples"].as_array().unwrap();
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(2), &json!(1)),
        "{last}"
    );
    let later = read("?since=2026-03-02T00:00:00Z").await;
    assert_eq!(later.body["samples"], json!([]), "{}", later.text);
}

/// Deleting a queue takes `manage_queues`, answers 204, and the queue and its messages are gone.
#[tokio::test(start_paused = true)]
async fn basaltic_a_deleted_queue_is_gone() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "b" })).await;
    let deleted = basaltic
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    let shown = basaltic
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            &basaltic.admin,
            Body::empty(),
        )
        .await;
    assert_eq!(code(&shown), (StatusCode::NOT_FOUND, "queue_not_found"));
    let sent = basaltic.send(&id, &json!({ "body": "late" })).await;
    assert_eq!(code(&sent), (StatusCode::NOT_FOUND, "queue_not_found"));
    assert!(
        service_queues(&basaltic).await.is_empty(),
        "the backend queue is gone"
    );
}

async fn service_queues(basaltic: &Basaltic) -> Vec<String> {
    basaltic
        .service
        .backend
        .list_queues("sqsgw_bq_")
        .await
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// The OpenAPI documents
// ---------------------------------------------------------------------------------------------

/// Each REST dialect's OpenAPI 3.1 document is served without credentials, as JSON, naming its
/// routes; other methods and names under `/openapi/` answer in ezgh's shape.
#[tokio::test(start_paused = true)]
async fn openapi_documents_are_served_without_credentials() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
    for (dialect, path) in [
        ("ezgh", "/v1/receipts/ack"),
        ("sombus", "/v1/oauth/token"),
        ("basaltic", "/v1/queues"),
    ] {
        let document = service
            .call(
                Request::builder()
                    .uri(format!("/openapi/{dialect}.json"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(document.status, StatusCode::OK, "{dialect}");
        assert_eq!(
            headers.get("content-type").as_deref(),
            Some("application/json")
        );
        assert_eq!(document.body["openapi"], "3.1.0", "{dialect}");
        assert!(
            document.body["paths"].get(path).is_some(),
            "{dialect} names {path}"
        );
    }
    let posted = service
        .call(request(Method::POST, "/openapi/ezgh.json", None, "{}"))
        .await;
    assert_eq!(
        ezgh_error(&posted),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    let missing = service
        .call(request(
            Method::GET,
            "/openapi/sqs.json",
            None,
            Body::empty(),
        ))
        .await;
    assert_eq!(ezgh_error(&missing), (StatusCode::NOT_FOUND, "not_found"));
}
