//! Traces through the queue: a producer's trace context (an X-Ray `AWSTraceHeader`, or W3C
//! `traceparent`/`tracestate` attributes) reaches each REST consumer as `traceparent` and
//! `tracestate` beside the message's documented fields, and survives a dead-letter redrive.

use crate::harness::*;
use crate::http::basaltic::support::Basaltic;
use crate::http::sombus::support::{Bus, receive, token};
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const XRAY: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
/// [`XRAY`] as W3C writes it.
const XRAY_AS_W3C: &str = "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01";
const W3C: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const STATE: &str = "congo=t61rcWkgMzE";

fn string(value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .unwrap()
}

/// Sends `x-ray` (with an `AWSTraceHeader`), `w3c` (with `traceparent` and `tracestate`
/// attributes) and `untraced` through the SQS endpoint, each in a group of its own on a FIFO
/// queue.
async fn produce(client: &aws_sdk_sqs::Client, url: &str) {
    let fifo = url.ends_with(".fifo");
    for body in ["x-ray", "w3c", "untraced"] {
        let mut send = client.send_message().queue_url(url).message_body(body);
        match body {
            "x-ray" => {
                send = send.message_system_attributes(
                    MessageSystemAttributeNameForSends::AwsTraceHeader,
                    MessageSystemAttributeValue::builder()
                        .data_type("String")
                        .string_value(XRAY)
                        .build()
                        .unwrap(),
                );
            }
            "w3c" => {
                send = send
                    .message_attributes("traceparent", string(W3C))
                    .message_attributes("tracestate", string(STATE));
            }
            _ => {}
        }
        if fifo {
            send = send
                .message_group_id(body)
                .message_deduplication_id(format!("{body}-{}", rand::random::<u32>()));
        }
        send.send()
            .await
            .expect("the SQS endpoint takes the message");
    }
}

/// Receives with `receive` (which releases what it gets) until the three messages of
/// [`produce`] came, by the body `body_of` reads.
async fn gather<F, Fut>(receive: F, body_of: impl Fn(&Value) -> String) -> BTreeMap<String, Value>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Vec<Value>>,
{
    let mut got = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while got.len() < 3 && tokio::time::Instant::now() < deadline {
        for message in receive().await {
            got.insert(body_of(&message), message);
        }
    }
    assert_eq!(got.len(), 3, "{got:?}");
    got
}

/// The trace fields of the three messages are the producer's, and only where it gave one.
fn assert_traces(got: &BTreeMap<String, Value>, dialect: &str) {
    assert_eq!(got["x-ray"]["traceparent"], XRAY_AS_W3C, "{dialect}");
    assert!(got["x-ray"].get("tracestate").is_none(), "{dialect}");
    assert_eq!(got["w3c"]["traceparent"], W3C, "{dialect}");
    assert_eq!(got["w3c"]["tracestate"], STATE, "{dialect}");
    for field in ["traceparent", "tracestate"] {
        assert!(got["untraced"].get(field).is_none(), "{dialect}: {field}");
    }
}

async fn ezgh_and_basaltic_consumers_see_the_producer_s_trace(kind: Kind) {
    let api = Basaltic::start_configured(
        kind,
        "all_queues = true",
        &format!("{MANAGE_QUEUES}\n[ezgh.organizations.{ORG}.projects.all]\nall_queues = true\n"),
    )
    .await;
    let name = unique("traced-");
    let id = api.create(json!({ "name": name })).await;
    let (client, url) = api.gw.sqs_queue(&name).await;
    produce(&client, &url).await;

    let receive =
        r#"{"max_messages": 10, "wait_time_seconds": 1, "visibility_timeout_seconds": 0}"#;
    let basaltic = gather(
        || api.receive(&id, receive),
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_traces(&basaltic, "basaltic");
    assert_eq!(
        basaltic["w3c"]["attributes"]["traceparent"]["value"], W3C,
        "the producer's own attribute stays as sent"
    );

    let url = format!(
        "{}/v1/organizations/{ORG}/projects/all/queues/{name}/messages/receive",
        api.gw.base
    );
    let ezgh = gather(
        || async {
            let body = r#"{"maxMessages": 10, "waitSeconds": 1, "visibilityTimeoutSeconds": 0}"#;
            let answer = api.gw.post_raw(&url, Some(&api.gw.key), body).await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            answer.body["messages"].as_array().unwrap().clone()
        },
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_traces(&ezgh, "ezgh");
    assert_eq!(ezgh["w3c"]["attributes"]["traceparent"], W3C);
    assert!(
        ezgh["x-ray"]["attributes"].as_object().unwrap().is_empty(),
        "the trace header is not an attribute: {}",
        ezgh["x-ray"]
    );
}

async fn a_sombus_consumer_sees_the_producer_s_trace(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "name": "traced" })).await;
    let (client, url) = bus.gw.sqs_queue(&created.queue).await;
    produce(&client, &url).await;
    let token = token(&bus.gw, &created.client_id, &created.secret).await;
    let got = gather(
        || async {
            let answer = receive(
                &bus.gw,
                &token,
                &bus.workspace,
                &created.client_id,
                "max=10&wait=1&visibility=0",
            )
            .await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            answer.body["messages"].as_array().unwrap().clone()
        },
        // Not JSON objects: sombus shows such a body as it is.
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_traces(&got, "sombus");
}

/// A message moved to the dead-letter queue and redriven back keeps its trace context.
async fn the_context_survives_a_dead_letter_redrive(kind: Kind) {
    let api = Basaltic::start_configured(kind, "all_queues = true", MANAGE_QUEUES).await;
    let suffix = unique("");
    let dead = api
        .create(json!({ "name": format!("traced-dlq-{suffix}") }))
        .await;
    let source = api
        .create(json!({
            "name": format!("traced-src-{suffix}"),
            "settings": { "dead_letter_queue": { "queue_id": dead, "max_receive_count": 1 } },
        }))
        .await;
    let (client, url) = api.gw.sqs_queue(&format!("traced-src-{suffix}")).await;
    produce(&client, &url).await;
    // One receive each, released at once: the next receive moves them to the dead-letter queue.
    let release =
        r#"{"max_messages": 10, "wait_time_seconds": 1, "visibility_timeout_seconds": 0}"#;
    gather(
        || api.receive(&source, release),
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    let moved = gather(
        || async {
            api.receive(&source, release).await;
            api.receive(&dead, release).await
        },
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_traces(&moved, "dead-lettered");

    let started = api
        .call(
            Method::POST,
            &format!("/v1/queues/{dead}/redrive"),
            Some(&api.admin),
            Some("{}"),
        )
        .await;
    assert!(started.status.is_success(), "{}", started.body);
    let back = gather(
        || api.receive(&source, release),
        |message| message["body"].as_str().unwrap().to_owned(),
    )
    .await;
    assert_traces(&back, "redriven");
}

// The state store plays no part in a message's context: both backends, in-process state.
crate::on_kind!(
    on_localstack,
    LocalStack,
    ezgh_and_basaltic_consumers_see_the_producer_s_trace,
    a_sombus_consumer_sees_the_producer_s_trace,
    the_context_survives_a_dead_letter_redrive,
);
crate::on_kind!(
    on_embedded,
    Embedded,
    ezgh_and_basaltic_consumers_see_the_producer_s_trace,
    a_sombus_consumer_sees_the_producer_s_trace,
    the_context_survives_a_dead_letter_redrive,
);
