//! The gateway's own spans, exported over OTLP/HTTP to a receiver in the test that decodes them
//! with the `opentelemetry-proto` types, from the `sqs-gateway` binary (the exporter is the
//! process's subscriber), on both backends: an SDK producer's request, the gateway's send, an
//! ezgh consumer's receive and ack and a push delivery form the producer's trace, with the right
//! parents and links; tracing off exports nothing; sampling follows the caller.

use crate::binary::{BIN, Running};
use crate::harness::unique;
use crate::harness::{Kind, Service, localstack_endpoint, skips_without, sqs};
use aws_sdk_sqs::types::{MessageSystemAttributeNameForSends, MessageSystemAttributeValue};
use axum::body::Bytes;
use axum::http::HeaderMap;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message as _;
use serde_json::json;
use sqs_gateway::core::handle::Keyring;
use sqs_gateway::credentials::api_keys::generate_key;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ACCESS_KEY: &str = "AKIDSPANSTEST";
const SECRET: &str = "spans-test-secret-not-for-production";
/// The producer's own span: the request it sends carries it as `traceparent`.
const TRACE: &str = "5759e988bd862e3fe1be46a994272793";
const PRODUCER_SPAN: &str = "53995c3f42cd8ad8";
/// The message's context, as the producer puts it in `AWSTraceHeader`.
const MESSAGE_SPAN: &str = "6e0c63257de34c92";

/// What the receiver got: exported spans (with their resource's `service.name`) and pushes.
#[derive(Default)]
struct Received {
    spans: Mutex<Vec<(String, Span)>>,
    pushes: Mutex<Vec<HeaderMap>>,
    exports: Mutex<usize>,
}

/// The OTLP receiver and push endpoint, on a runtime of the test's own.
struct Receiver {
    runtime: tokio::runtime::Runtime,
    received: Arc<Received>,
    base: String,
}

impl Receiver {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let received = Arc::new(Received::default());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let router = axum::Router::new()
            .route("/v1/traces", axum::routing::post(export))
            .route("/hook", axum::routing::post(hook))
            .with_state(Arc::clone(&received));
        runtime.spawn(async move { axum::serve(listener, router).await });
        Self {
            runtime,
            received,
            base,
        }
    }

    fn spans(&self) -> Vec<Span> {
        let spans = self.received.spans.lock().unwrap();
        spans.iter().map(|(_, span)| span.clone()).collect()
    }
}

async fn export(
    axum::extract::State(received): axum::extract::State<Arc<Received>>,
    headers: HeaderMap,
    body: Bytes,
) -> ([(&'static str, &'static str); 1], Vec<u8>) {
    assert_eq!(headers["content-type"], "application/x-protobuf");
    let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
    let mut spans = received.spans.lock().unwrap();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .as_ref()
            .and_then(|resource| text_of(&resource.attributes, "service.name"))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push((service.clone(), span));
            }
        }
    }
    *received.exports.lock().unwrap() += 1;
    (
        [("content-type", "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

async fn hook(
    axum::extract::State(received): axum::extract::State<Arc<Received>>,
    headers: HeaderMap,
) -> axum::http::StatusCode {
    received.pushes.lock().unwrap().push(headers);
    axum::http::StatusCode::NO_CONTENT
}

fn text_of(
    attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    match value.value.as_ref()? {
        AnyValue::StringValue(text) => Some(text.clone()),
        AnyValue::IntValue(number) => Some(number.to_string()),
        AnyValue::BoolValue(flag) => Some(flag.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    text_of(&span.attributes, key)
}

/// The one span named `name` (of the trace `trace`, when given).
fn one<'s>(spans: &'s [Span], name: &str, trace: Option<&str>) -> &'s Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|span| span.name == name)
        .filter(|span| trace.is_none_or(|trace| hex::encode(&span.trace_id) == trace))
        .collect();
    assert_eq!(found.len(), 1, "one span {name}: {:#?}", names(spans));
    found[0]
}

fn names(spans: &[Span]) -> Vec<(String, String, String)> {
    spans
        .iter()
        .map(|span| {
            (
                span.name.clone(),
                hex::encode(&span.span_id),
                hex::encode(&span.parent_span_id),
            )
        })
        .collect()
}

/// The gateway binary on `kind`, with queues `orders` (ezgh) and `events` (pushed to the
/// receiver's `/hook`), its spans going to the receiver as `tracing` says.
struct Gateway {
    running: Running,
    base: String,
    api_key: String,
    _dir: tempfile::TempDir,
}

fn start(kind: Kind, receiver: &Receiver, tracing: &str) -> Gateway {
    let dir = tempfile::tempdir().unwrap();
    let key = generate_key();
    let (backend, orders, events) = match kind {
        Kind::Embedded => (
            "[backend]\nkind = \"embedded\"\nin_memory = true\n".to_owned(),
            "orders".to_owned(),
            "events".to_owned(),
        ),
        _ => {
            let suffix = unique("");
            let sqs = sqs();
            let names = [
                format!("it-spans-orders-{suffix}"),
                format!("it-spans-events-{suffix}"),
            ];
            receiver.runtime.block_on(async {
                for name in &names {
                    sqs.create_queue().queue_name(name).send().await.unwrap();
                }
            });
            let [orders, events] = names;
            (
                format!(
                    "[backend]\nkind = \"sqs\"\nendpoint_url = \"{}\"\nregion = \"us-east-1\"\n\n[state]\ndir = {:?}\n",
                    localstack_endpoint(),
                    dir.path().join("state").display().to_string()
                ),
                orders,
                events,
            )
        }
    };
    let config = format!(
        "{backend}\n\
         [[receipt_keys]]\nid = 1\nsecret = \"{receipt}\"\n\n\
         [queues.orders]\nsqs_queue = \"{orders}\"\n\n\
         [queues.events]\nsqs_queue = \"{events}\"\n\n\
         [ezgh.organizations.acme.projects.shop]\nqueues = {{ orders = \"orders\" }}\n\n\
         [[api_keys]]\nid = \"{id}\"\norganization = \"acme\"\nhash = \"{hash}\"\n\
         grants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n\
         [[sqs_api.credentials]]\naccess_key_id = \"{ACCESS_KEY}\"\nsecret = \"{SECRET}\"\n\n\
         [push]\nallow_private_networks = true\n\n\
         [[push.subscriptions]]\nname = \"hook\"\nqueue = \"events\"\nurl = \"{hook}/hook\"\n\
         secret = \"whsec_{push_secret}\"\n\n\
         {tracing}\n",
        receipt = Keyring::generate_key(),
        id = key.id,
        hash = key.hash,
        hook = receiver.base,
        push_secret = base64_of(&[7; 32]),
    );
    let path = dir.path().join("config.toml");
    std::fs::write(&path, config).unwrap();
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        // Exported within a tenth of a second, not the default five.
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        // The environment names the receiver, unless the config does (which then wins).
        .env(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            if tracing.contains("endpoint") {
                "http://127.0.0.1:9/v1/traces".to_owned()
            } else {
                format!("{}/v1/traces", receiver.base)
            },
        );
    let mut running = Running::spawn(command);
    let address = running.address(Duration::from_secs(60));
    Gateway {
        running,
        base: format!("http://{address}"),
        api_key: key.key,
        _dir: dir,
    }
}

fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl Gateway {
    fn sqs(&self) -> aws_sdk_sqs::Client {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(&self.base)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                aws_sdk_sqs::config::Credentials::new(ACCESS_KEY, SECRET, None, None, "tests"),
            ))
            .build();
        aws_sdk_sqs::Client::new(&sdk)
    }

    /// Sends `body` to `queue` over the SQS endpoint, from the producer's span (its
    /// `traceparent`), the message carrying the producer's context as its `AWSTraceHeader`.
    async fn produce(&self, queue: &str, body: &str, traceparent: Option<&str>) {
        let sqs = self.sqs();
        let url = sqs
            .get_queue_url()
            .queue_name(queue)
            .send()
            .await
            .unwrap()
            .queue_url
            .unwrap();
        let xray = format!(
            "Root=1-{}-{};Parent={MESSAGE_SPAN};Sampled=1",
            &TRACE[..8],
            &TRACE[8..]
        );
        let traceparent = traceparent.map(str::to_owned);
        sqs.send_message()
            .queue_url(url)
            .message_body(body)
            .message_system_attributes(
                MessageSystemAttributeNameForSends::AwsTraceHeader,
                MessageSystemAttributeValue::builder()
                    .data_type("String")
                    .string_value(xray)
                    .build()
                    .unwrap(),
            )
            .customize()
            .mutate_request(move |request| {
                if let Some(traceparent) = &traceparent {
                    request
                        .headers_mut()
                        .insert("traceparent", traceparent.clone());
                }
            })
            .send()
            .await
            .unwrap();
    }

    /// An ezgh receive of `orders` and the ack of what it got; the handles.
    async fn consume(&self) -> usize {
        let http = reqwest::Client::new();
        let received: serde_json::Value = http
            .post(format!(
                "{}/v1/organizations/acme/projects/shop/queues/orders/messages/receive",
                self.base
            ))
            .bearer_auth(&self.api_key)
            .json(&json!({ "maxMessages": 10, "waitSeconds": 5 }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let handles: Vec<&str> = received["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["receiptHandle"].as_str().unwrap())
            .collect();
        let acked = http
            .post(format!("{}/v1/receipts/ack", self.base))
            .json(&json!({ "receiptHandles": handles }))
            .send()
            .await
            .unwrap();
        assert_eq!(acked.status(), 200);
        handles.len()
    }

    /// Stops the gateway (SIGTERM): the spans still waiting are exported before it exits.
    fn stop(mut self) {
        self.running.signal("TERM");
        let status = self.running.exit_within(Duration::from_secs(30));
        assert!(
            status.is_some_and(|status| status.success()),
            "{status:?}\n{}",
            self.running.stderr()
        );
    }
}

/// Waits up to ten seconds for `done` to hold of what the receiver got.
fn wait_until(receiver: &Receiver, what: &str, done: impl Fn(&Received) -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done(&receiver.received) {
        assert!(Instant::now() < until, "waited for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spans_form_the_producers_trace(kind: Kind) {
    let receiver = Receiver::start();
    let gateway = start(kind, &receiver, "[tracing]\nenabled = true\n");
    let traceparent = format!("00-{TRACE}-{PRODUCER_SPAN}-01");
    receiver.runtime.block_on(async {
        gateway
            .produce("orders", "for ezgh", Some(&traceparent))
            .await;
        gateway
            .produce("events", "for the hook", Some(&traceparent))
            .await;
        assert_eq!(gateway.consume().await, 1);
    });
    wait_until(&receiver, "the push", |got| {
        !got.pushes.lock().unwrap().is_empty()
    });
    let pushed = receiver.received.pushes.lock().unwrap()[0].clone();
    gateway.stop();
    let spans = receiver.spans();
    let backend = if kind == Kind::Embedded {
        "embedded"
    } else {
        "sqs"
    };
    for (service, _) in receiver.received.spans.lock().unwrap().iter() {
        assert_eq!(service, "sqs-gateway");
    }

    // The producer's request: a server span continuing its traceparent; the send within it,
    // and the backend call within the send.
    let sends: Vec<&Span> = spans
        .iter()
        .filter(|span| span.name == "POST /" && hex::encode(&span.trace_id) == TRACE)
        .filter(|span| attribute(span, "http.response.status_code").as_deref() == Some("200"))
        .collect();
    assert!(sends.len() >= 2, "{:#?}", names(&spans));
    let send_orders = one(&spans, "send orders", Some(TRACE));
    let server = sends
        .iter()
        .find(|span| span.span_id == send_orders.parent_span_id)
        .expect("the send is a child of its request's span");
    assert_eq!(hex::encode(&server.parent_span_id), PRODUCER_SPAN);
    assert_eq!(server.kind, SpanKind::Server as i32);
    assert_eq!(
        attribute(server, "http.request.method").as_deref(),
        Some("POST")
    );
    assert_eq!(attribute(server, "http.route").as_deref(), Some("/"));
    assert_eq!(send_orders.kind, SpanKind::Producer as i32);
    assert_eq!(
        attribute(send_orders, "messaging.system").as_deref(),
        Some("aws_sqs")
    );
    assert_eq!(
        attribute(send_orders, "messaging.operation.type").as_deref(),
        Some("send")
    );
    assert_eq!(
        attribute(send_orders, "messaging.destination.name").as_deref(),
        Some("orders")
    );
    assert_eq!(
        attribute(send_orders, "messaging.batch.message_count"),
        None
    );
    let backend_send = spans
        .iter()
        .find(|span| span.parent_span_id == send_orders.span_id)
        .expect("the backend call is a child of the send");
    assert_eq!(backend_send.name, format!("{backend} send_batch"));
    assert_eq!(hex::encode(&backend_send.trace_id), TRACE);

    // The consumer: its own trace (it sent no traceparent), the receive linked to the message's
    // producer context, the ack a settle span.
    let receive = one(&spans, "receive orders", None);
    assert_ne!(hex::encode(&receive.trace_id), TRACE);
    assert_eq!(receive.kind, SpanKind::Client as i32);
    let receive_server = spans
        .iter()
        .find(|span| span.span_id == receive.parent_span_id)
        .expect("the receive is a child of its request's span");
    assert_eq!(
        receive_server.name,
        "POST /v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive"
    );
    let links: Vec<(String, String)> = receive
        .links
        .iter()
        .map(|link| (hex::encode(&link.trace_id), hex::encode(&link.span_id)))
        .collect();
    assert_eq!(links, vec![(TRACE.to_owned(), MESSAGE_SPAN.to_owned())]);
    // Receipt-only (ezgh's handles carry their queue): named by the operation alone.
    let ack = one(&spans, "ack", None);
    assert_eq!(
        attribute(ack, "messaging.operation.type").as_deref(),
        Some("settle")
    );
    assert_eq!(
        attribute(ack, "messaging.operation.name").as_deref(),
        Some("ack")
    );

    // The push: a child of the message's context, with its attempt; the receiver continues the
    // delivery's span.
    let delivery = one(&spans, "process events", Some(TRACE));
    assert_eq!(hex::encode(&delivery.parent_span_id), MESSAGE_SPAN);
    assert_eq!(delivery.kind, SpanKind::Consumer as i32);
    assert_eq!(
        attribute(delivery, "sqsgw.push.attempt").as_deref(),
        Some("1")
    );
    assert_eq!(
        attribute(delivery, "http.response.status_code").as_deref(),
        Some("204")
    );
    assert_eq!(
        pushed["traceparent"].to_str().unwrap(),
        format!("00-{TRACE}-{}-01", hex::encode(&delivery.span_id))
    );
    let pushed_ack = spans
        .iter()
        .find(|span| span.parent_span_id == delivery.span_id && span.name == "ack events")
        .expect("the delivery's ack is within it");
    assert_eq!(hex::encode(&pushed_ack.trace_id), TRACE);

    // Nothing leaks into span attributes: no handle, no key.
    for span in &spans {
        for kv in &span.attributes {
            let text = format!("{:?}", kv.value);
            assert!(!text.contains(&gateway_secret_marker()), "{text}");
        }
    }
}

/// A string every receipt handle and API key of these tests contains, never a span.
fn gateway_secret_marker() -> String {
    "sqsgw_".to_owned()
}

#[test]
fn spans_form_the_producers_trace_on_the_embedded_engine() {
    spans_form_the_producers_trace(Kind::Embedded);
}

#[test]
fn spans_form_the_producers_trace_over_sqs() {
    if skips_without(
        &[Service::LocalStack],
        "spans_form_the_producers_trace_over_sqs",
    ) {
        return;
    }
    spans_form_the_producers_trace(Kind::LocalStack);
}

/// Off (the default), nothing reaches the collector the environment names, whatever is sent.
#[test]
fn tracing_off_exports_nothing() {
    let receiver = Receiver::start();
    let gateway = start(Kind::Embedded, &receiver, "");
    let traceparent = format!("00-{TRACE}-{PRODUCER_SPAN}-01");
    receiver.runtime.block_on(async {
        gateway
            .produce("orders", "untraced", Some(&traceparent))
            .await;
        gateway
            .produce("events", "pushed", Some(&traceparent))
            .await;
        assert_eq!(gateway.consume().await, 1);
    });
    wait_until(&receiver, "the push", |got| {
        !got.pushes.lock().unwrap().is_empty()
    });
    gateway.stop();
    assert_eq!(*receiver.received.exports.lock().unwrap(), 0);
}

/// With `sample_ratio = 0`, a trace begun at the gateway is not kept, and one a caller sampled
/// is (parent-based).
#[test]
fn sampling_follows_the_caller() {
    let receiver = Receiver::start();
    let gateway = start(
        Kind::Embedded,
        &receiver,
        &format!(
            "[tracing]\nenabled = true\nsample_ratio = 0.0\nservice_name = \"edge-gateway\"\n\
             endpoint = \"{}/v1/traces\"\n",
            receiver.base
        ),
    );
    let unsampled = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    receiver.runtime.block_on(async {
        gateway.produce("orders", "root", None).await;
        gateway
            .produce("orders", "unsampled", Some(unsampled))
            .await;
        gateway
            .produce(
                "orders",
                "sampled",
                Some(&format!("00-{TRACE}-{PRODUCER_SPAN}-01")),
            )
            .await;
    });
    gateway.stop();
    let spans = receiver.received.spans.lock().unwrap();
    assert!(!spans.is_empty());
    for (service, span) in spans.iter() {
        assert_eq!(service, "edge-gateway");
        assert_eq!(hex::encode(&span.trace_id), TRACE, "{}", span.name);
    }
}

/// A collector that takes connections and never answers holds the exit at most the 5 s the last
/// export is given (the orchestrator's grace period is not spent on it).
#[test]
fn a_collector_that_never_answers_does_not_hold_the_exit() {
    let receiver = Receiver::start();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_address = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in silent.incoming() {
            held.push(connection);
        }
    });
    let gateway = start(
        Kind::Embedded,
        &receiver,
        &format!("[tracing]\nenabled = true\nendpoint = \"http://{silent_address}/v1/traces\"\n"),
    );
    receiver.runtime.block_on(async {
        gateway
            .produce(
                "orders",
                "to no collector",
                Some(&format!("00-{TRACE}-{PRODUCER_SPAN}-01")),
            )
            .await;
        assert_eq!(gateway.consume().await, 1);
    });
    // The batch is on its way to the silent collector.
    std::thread::sleep(Duration::from_millis(500));
    let stopping = Instant::now();
    gateway.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(12),
        "{:?}",
        stopping.elapsed()
    );
}
