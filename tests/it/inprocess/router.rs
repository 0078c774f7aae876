//! The in-process tier: the service's router, called without a socket, over the fake backend, with
//! tokio's time paused. The core's clock follows tokio's, so leases, long polls, attempt windows
//! and rate limits run on virtual time: a test moves time instead of sleeping, and a 20-second
//! long poll takes no real time.

use crate::harness::{ORG, PROJECT};
use crate::inprocess::fake::FakeBackend;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use chrono::{DateTime, Utc};
use http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::config::Config;
use sqs_gateway::core::backend::{Backend, BackendError};
use sqs_gateway::core::clock::Clock;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::core::model::{OutgoingMessage, QueueSettings};
use sqs_gateway::credentials::api_keys;
use sqs_gateway::server::{App, Overrides};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tower::ServiceExt;

/// The core's clock on tokio's time: paused, it moves only as the test (or tokio, when every
/// task waits on a timer) moves it.
pub(crate) struct TokioClock {
    pub(crate) start: DateTime<Utc>,
    pub(crate) origin: Instant,
}

impl TokioClock {
    /// A clock at 2026-03-01T00:00:00Z when tokio's (paused) time is now.
    pub(crate) fn at_start() -> Self {
        Self {
            start: "2026-03-01T00:00:00Z".parse().unwrap(),
            origin: Instant::now(),
        }
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        self.start + chrono::Duration::from_std(self.origin.elapsed()).unwrap()
    }
}

/// The service, in-process.
pub(crate) struct InProcess {
    pub(crate) router: Router,
    pub(crate) backend: Arc<FakeBackend>,
    pub(crate) queue_url: String,
    pub(crate) key: String,
    pub(crate) _app: App,
}

/// An answer: status, headers, and the body as JSON (or as a string when it is not JSON).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: http::HeaderMap,
    pub(crate) body: Value,
    pub(crate) text: String,
}

impl Reply {
    /// The header `name`, as text.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|value| value.to_str().expect("a text header").to_owned())
    }

    /// Its `Retry-After`, in whole seconds; the test fails without one.
    pub(crate) fn retry_after_seconds(&self) -> u64 {
        let header = self.header("retry-after").expect("a Retry-After header");
        header.parse().expect("Retry-After in whole seconds")
    }
}

impl InProcess {
    /// The service over a fake backend with queue `orders` (ezgh id `orders` in the test project).
    pub(crate) async fn start() -> Self {
        Self::start_with("").await
    }

    /// The same, with `organization` settings for the test organization.
    pub(crate) async fn start_with(organization: &str) -> Self {
        let key = api_keys::generate_key();
        let config = format!(
            "[ezgh.organizations.{ORG}]\n{organization}\n\n\
             [ezgh.organizations.{ORG}.projects.{PROJECT}]\nqueues = {{ orders = \"orders\" }}\n\n\
             [[api_keys]]\nid = \"{}\"\norganization = \"{ORG}\"\nhash = \"{}\"\n\
             grants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n\
             [sqs_api]\nallow_unsigned = true\nmanage_queues = true\n",
            key.id, key.hash
        );
        Self::over(&config, Arc::new(TokioClock::at_start()), key.key).await
    }

    /// The service over a fake backend with queue `orders`, on `clock`, configured by `config`
    /// (beside the in-memory backend, the queue and a receipt key); `key` is the API key the
    /// ezgh helpers present.
    pub(crate) async fn over(config: &str, clock: Arc<TokioClock>, key: String) -> Self {
        let engine = EmbeddedBackend::in_memory(clock.clone());
        let queue_url = engine
            .create_queue(
                "orders",
                &QueueSettings {
                    visibility_timeout_seconds: Some(30),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .url;
        let backend = Arc::new(FakeBackend::new(engine));
        let toml = format!(
            "[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n\
             [[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n{config}",
            Keyring::generate_key(),
        );
        let config = Config::parse(&toml).unwrap_or_else(|error| panic!("{error}\n{toml}"));
        let app = App::build(
            &config,
            Overrides {
                backend: Some(backend.clone()),
                clock: Some(clock),
                state: None,
            },
        )
        .await
        .unwrap();
        Self {
            router: app.router(),
            backend,
            queue_url,
            key,
            _app: app,
        }
    }

    pub(crate) async fn call(&self, request: Request<Body>) -> Reply {
        let mut request = request;
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 1], 40000))));
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Reply {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
            text,
        }
    }

    /// An ezgh receive of the test project's `orders`.
    pub(crate) async fn receive(&self, body: Value) -> Reply {
        self.call(
            Request::builder()
                .method(Method::POST)
                .uri(format!(
                    "/v1/organizations/{ORG}/projects/{PROJECT}/queues/orders/messages/receive"
                ))
                .header("authorization", format!("Bearer {}", self.key))
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    /// An ezgh acknowledge.
    pub(crate) async fn ack(&self, handle: &str) -> Reply {
        self.call(
            Request::builder()
                .method(Method::POST)
                .uri("/v1/receipts/ack")
                .header("content-type", "application/json")
                .body(Body::from(
                    json!({ "receiptHandles": [handle] }).to_string(),
                ))
                .unwrap(),
        )
        .await
    }

    /// An SQS JSON-protocol call on `orders` (the endpoint accepts unsigned requests here).
    pub(crate) async fn sqs(&self, action: &str, mut body: Value) -> Reply {
        body["QueueUrl"] = json!("http://gateway.test/000000000000/orders");
        self.sqs_call(action, body).await
    }

    /// An SQS JSON-protocol call with `body` as it is.
    pub(crate) async fn sqs_call(&self, action: &str, body: Value) -> Reply {
        self.call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", format!("AmazonSQS.{action}"))
                .header("content-type", "application/x-amz-json-1.0")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    pub(crate) async fn send(&self, body: &str) {
        let sent = self
            .backend
            .send_batch(
                &self.queue_url,
                &[OutgoingMessage {
                    body: body.into(),
                    ..Default::default()
                }],
            )
            .await
            .unwrap();
        sent[0].as_ref().unwrap();
    }
}

pub(crate) fn messages(reply: &Reply) -> &Vec<Value> {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["messages"].as_array().unwrap()
}

/// A lease ends when its visibility timeout has passed on the clock: the message comes back with
/// a second receive count, and the first handle is stale. No real time passes.
#[tokio::test(start_paused = true)]
async fn a_lease_ends_when_its_time_has_passed() {
    let service = InProcess::start().await;
    service.send("lease me").await;
    let first = service
        .receive(json!({ "maxMessages": 1, "visibilityTimeoutSeconds": 30 }))
        .await;
    let first = messages(&first)[0].clone();
    let old_handle = first["receiptHandle"].as_str().unwrap().to_owned();

    tokio::time::advance(Duration::from_secs(29)).await;
    let hidden = service.receive(json!({ "waitSeconds": 0 })).await;
    assert!(messages(&hidden).is_empty(), "still leased at 29 s");

    tokio::time::advance(Duration::from_secs(2)).await;
    let again = service.receive(json!({ "waitSeconds": 0 })).await;
    let again = messages(&again)[0].clone();
    assert_eq!(again["messageId"], first["messageId"]);
    assert_eq!(again["receiveCount"], 2);
    assert_eq!(
        service.ack(&old_handle).await.body["results"][0]["error"],
        "receipt_handle_stale"
    );
    let current = again["receiptHandle"].as_str().unwrap();
    assert_eq!(service.ack(current).await.body["results"][0]["ok"], true);
}

/// A long poll waits its whole wait when nothing comes, and answers as soon as a message does.
#[tokio::test(start_paused = true)]
async fn a_long_poll_waits_its_whole_wait_and_no_longer_than_a_message_takes() {
    let service = Arc::new(InProcess::start().await);
    let started = Instant::now();
    let empty = service.receive(json!({ "waitSeconds": 20 })).await;
    assert!(messages(&empty).is_empty());
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(20) && waited < Duration::from_secs(21),
        "{waited:?}"
    );

    let producer = Arc::clone(&service);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        producer.send("late").await;
    });
    let started = Instant::now();
    let late = service.receive(json!({ "waitSeconds": 20 })).await;
    assert_eq!(messages(&late)[0]["body"], "late");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
        "{waited:?}"
    );
}

/// A receive retried with its attempt id is answered the same for five minutes, and afresh after.
#[tokio::test(start_paused = true)]
async fn an_attempt_is_answered_again_for_five_minutes_and_not_after() {
    let service = InProcess::start().await;
    service.send("once").await;
    let request = json!({
        "MaxNumberOfMessages": 1,
        "VisibilityTimeout": 900,
        "ReceiveRequestAttemptId": "attempt-1",
    });
    let first = service.sqs("ReceiveMessage", request.clone()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let handle = first.body["Messages"][0]["ReceiptHandle"].clone();
    assert!(handle.is_string(), "{}", first.text);

    tokio::time::advance(Duration::from_secs(299)).await;
    let retried = service.sqs("ReceiveMessage", request.clone()).await;
    assert_eq!(retried.body["Messages"][0]["ReceiptHandle"], handle);

    tokio::time::advance(Duration::from_secs(2)).await;
    let late = service.sqs("ReceiveMessage", request).await;
    assert_eq!(late.status, StatusCode::OK, "{}", late.text);
    assert!(
        late.body.get("Messages").is_none_or(|m| m == &json!([])),
        "after 5 minutes the attempt is a new receive (the message is still leased): {}",
        late.text
    );
}

/// An organization's rate limit refills with time: over it, 429 with `Retry-After`; a second
/// later, served again.
#[tokio::test(start_paused = true)]
async fn a_rate_limit_refills_as_time_moves() {
    let service = InProcess::start_with("rate_limit = { per_second = 1, burst = 2 }").await;
    for _ in 0..2 {
        let served = service.receive(json!({ "waitSeconds": 0 })).await;
        assert_eq!(served.status, StatusCode::OK, "{}", served.text);
    }
    let refused = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(refused.body["error"], "rate_limited");
    assert_eq!(refused.header("retry-after").as_deref(), Some("1"));
    tokio::time::advance(Duration::from_secs(1)).await;
    let served = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(served.status, StatusCode::OK, "{}", served.text);
}

/// What a backend says when it fails stays in the log: ezgh and the SQS endpoint answer their own
/// error shape, with a retry time when the backend is unavailable, and nothing of its text.
#[tokio::test(start_paused = true)]
async fn a_request_that_hangs_past_a_minute_gets_503_in_its_dialect() {
    let service = InProcess::start().await;
    service.backend.hang_next_receive();
    let started = Instant::now();
    let ezgh = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(60),
        "the request deadline"
    );
    assert_eq!(
        ezgh.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        ezgh.text
    );
    assert_eq!(ezgh.body["error"], "unavailable");
    assert_eq!(ezgh.header("retry-after").as_deref(), Some("1"));

    service.backend.hang_next_receive();
    let sqs = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 1 }))
        .await;
    assert_eq!(sqs.status, StatusCode::SERVICE_UNAVAILABLE, "{}", sqs.text);
    assert!(sqs.body["__type"].is_string(), "{}", sqs.text);
}

#[tokio::test(start_paused = true)]
async fn backend_failures_reach_clients_in_their_dialect_without_backend_text() {
    let service = InProcess::start().await;
    let secret_detail = "SQS error InternalError (request id 7d3c-internal-detail) at 10.1.2.3";

    service
        .backend
        .fail_next(BackendError::Other(secret_detail.into()));
    let ezgh = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(ezgh.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(ezgh.body["error"], "internal");
    assert!(!ezgh.text.contains("7d3c") && !ezgh.text.contains("10.1.2.3"));

    service
        .backend
        .fail_next(BackendError::Unavailable(secret_detail.into()));
    let ezgh = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(ezgh.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(ezgh.body["error"], "unavailable");
    assert_eq!(ezgh.header("retry-after").as_deref(), Some("1"));
    assert!(!ezgh.text.contains("7d3c"));

    service
        .backend
        .fail_next(BackendError::Rejected(secret_detail.into()));
    let sqs = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 1 }))
        .await;
    assert_eq!(sqs.status, StatusCode::BAD_REQUEST);
    assert!(sqs.body["__type"].is_string(), "{}", sqs.text);
    assert!(!sqs.text.contains("7d3c") && !sqs.text.contains("10.1.2.3"));

    service
        .backend
        .fail_next(BackendError::Unavailable(secret_detail.into()));
    let sqs = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 1 }))
        .await;
    assert_eq!(sqs.status, StatusCode::SERVICE_UNAVAILABLE, "{}", sqs.text);
    assert!(!sqs.text.contains("7d3c"));

    // The failures lost nothing: the message sent now is received whole.
    service.send("after the storm").await;
    let after = service.receive(json!({ "waitSeconds": 0 })).await;
    assert_eq!(messages(&after)[0]["body"], "after the storm");
}

/// Queues created through the gateway follow SQS's name rule, in SQS's words, and a refused name
/// creates nothing.
#[tokio::test(start_paused = true)]
async fn created_queue_names_follow_the_sqs_rule() {
    let service = InProcess::start().await;
    for name in ["bad name!", "", &"x".repeat(81), "jobs.fifo"] {
        let refused = service
            .sqs_call("CreateQueue", json!({ "QueueName": name }))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::BAD_REQUEST,
            "{name}: {}",
            refused.text
        );
        assert!(
            refused.body["__type"]
                .as_str()
                .is_some_and(|code| code.ends_with("InvalidParameterValueException")),
            "{name}: {}",
            refused.text
        );
        assert!(
            refused.text.contains("1 to 80 in length"),
            "{}",
            refused.text
        );
    }
    let listed = service.sqs_call("ListQueues", json!({})).await;
    assert_eq!(
        listed.body["QueueUrls"].as_array().unwrap().len(),
        1,
        "{}",
        listed.text
    );
    let created = service
        .sqs_call("CreateQueue", json!({ "QueueName": "fine_name-1" }))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
}
