//! Message content and attributes on the SQS endpoint, on both backends: SQS's content rules,
//! attributes named twice or badly indexed refused in both protocols, and twenty typed attributes
//! (more than SQS holds) coming back whole through the SDK, boto3 and ezgh.

use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{MessageAttributeValue, SendMessageBatchRequestEntry};
use reqwest::StatusCode;
use serde_json::json;

/// A message attribute named twice, or under an index that is not a number, is refused in both
/// protocols (a map would keep one value and drop the other with a 200), and nothing is sent.
#[tokio::test]
async fn attributes_named_twice_or_badly_indexed_are_refused() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nallow_unsigned = true\n")
        .start()
        .await;
    let queue_url = format!("{}/000000000000/orders", gw.base);
    // A repeated JSON key, in a message's attributes or a queue's (neither value is kept).
    for (action, json) in [
        (
            "SendMessage",
            format!(
                r#"{{"QueueUrl":"{queue_url}","MessageBody":"dup","MessageAttributes":{{"x":{{"DataType":"String","StringValue":"v"}},"x":{{"DataType":"String","StringValue":"w"}}}}}}"#
            ),
        ),
        (
            "SetQueueAttributes",
            format!(
                r#"{{"QueueUrl":"{queue_url}","Attributes":{{"DelaySeconds":"5","DelaySeconds":"7"}}}}"#
            ),
        ),
    ] {
        let answer = gw
            .http
            .post(&gw.base)
            .header("x-amz-target", format!("AmazonSQS.{action}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(json)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{action}");
        let body = answer.text().await.unwrap();
        assert!(body.contains("SerializationException"), "{body}");
    }
    let attribute = |n: &str, name: &str, value: &str| {
        format!(
            "&MessageAttribute.{n}.Name={name}&MessageAttribute.{n}.Value.DataType=String&MessageAttribute.{n}.Value.StringValue={value}"
        )
    };
    let queue = queue_url.replace(':', "%3A").replace('/', "%2F");
    for attributes in [
        attribute("1", "x", "v") + &attribute("2", "x", "w"),
        attribute("-1", "x", "v"),
        attribute("99999999999999999999", "x", "v"),
    ] {
        let form = format!(
            "Action=SendMessage&Version=2012-11-05&QueueUrl={queue}&MessageBody=dup{attributes}"
        );
        let answer = gw
            .http
            .post(&gw.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{attributes}");
        let body = answer.text().await.unwrap();
        assert!(
            body.contains("<Code>InvalidParameterValue</Code>"),
            "{body}"
        );
    }
    assert_eq!(gw.backend_depth("orders").await, 0, "nothing was sent");
    gw.stop().await;
}

fn text_attribute(data_type: &str, value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .unwrap()
}

/// SQS's content rules hold on both backends (LocalStack enforces few of them), and what the
/// gateway stores always renders as XML a parser reads.
async fn message_content_follows_sqs_rules(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    let refused = [
        ("note", text_attribute("String", "bad\u{1}val")),
        ("note", text_attribute("String.\u{2}", "fine")),
        ("AWS.trace", text_attribute("String", "x")),
        ("amazon.id", text_attribute("String", "x")),
        ("n", text_attribute("Number", "NaN")),
        ("n", text_attribute("Number", "inf")),
        ("n", text_attribute("Number", "1e400")),
        (
            "n",
            text_attribute("Number", "123456789012345678901234567890123456789"),
        ),
    ];
    for (name, value) in refused {
        let error = client
            .send_message()
            .queue_url(&url)
            .message_body("body")
            .message_attributes(name, value.clone())
            .send()
            .await
            .expect_err(&format!("{name} {value:?} is refused"));
        assert_eq!(
            error.code(),
            Some("InvalidParameterValue"),
            "{name} {value:?}"
        );
    }
    // In a batch, only the offending entry fails.
    let batch = client
        .send_message_batch()
        .queue_url(&url)
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("bad")
                .message_body("x")
                .message_attributes("note", text_attribute("String", "a\u{7}b"))
                .build()
                .unwrap(),
        )
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("good")
                .message_body("tabs\tand\nnewlines are fine")
                .message_attributes("note", text_attribute("String", "ok\tfine"))
                .message_attributes("n", text_attribute("Number.int", "-1.5e-3"))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(batch.successful().len(), 1);
    assert_eq!(batch.failed()[0].id(), "bad");
    assert_eq!(batch.failed()[0].code(), "InvalidParameterValue");
    assert_eq!(gw.backend_depth("orders").await, 1);

    // What was stored comes back over the Query protocol as XML without characters XML lacks.
    let host = host_of(&gw.base);
    let form = format!(
        "Action=ReceiveMessage&Version=2012-11-05&QueueUrl={}&MessageAttributeName.1=All&WaitTimeSeconds=5",
        url.replace(':', "%3A").replace('/', "%2F")
    );
    let request = signed(
        "POST",
        &format!("{}/", gw.base),
        &[
            ("host", &host),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
        &Signing::default(),
    );
    let (status, _, xml) = send(&gw, request).await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    assert!(xml.contains("<StringValue>ok\tfine</StringValue>"), "{xml}");
    assert!(
        xml.chars()
            .all(sqs_gateway::core::message_rules::allowed_char),
        "XML 1.0 has no form for control characters: {xml:?}"
    );
    gw.stop().await;
}

/// Twenty typed attributes, as the gateway's other APIs may send them.
fn twenty_attributes()
-> std::collections::BTreeMap<String, sqs_gateway::core::model::MessageAttribute> {
    use sqs_gateway::core::model::{AttributeValue, MessageAttribute};
    (0..20)
        .map(|n| {
            let (data_type, value) = match n % 4 {
                0 => ("String", AttributeValue::Text(format!("text {n} \u{e9}"))),
                1 => ("Number", AttributeValue::Text(format!("{n}.5"))),
                2 => ("Binary", AttributeValue::Bytes(vec![0, n, 0xfe])),
                _ => (
                    "String.label",
                    AttributeValue::Text(format!("labelled {n}")),
                ),
            };
            (
                format!("attr{n:02}"),
                MessageAttribute {
                    data_type: data_type.into(),
                    value,
                },
            )
        })
        .collect()
}

/// AWS's MD5 of message attributes, written again here (as in tests/clients/scenario.py).
fn md5_of_attributes(
    attributes: &std::collections::HashMap<String, MessageAttributeValue>,
) -> String {
    use md5::Digest as _;
    fn put(buffer: &mut Vec<u8>, bytes: &[u8]) {
        buffer.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        buffer.extend_from_slice(bytes);
    }
    let mut names: Vec<&String> = attributes.keys().collect();
    names.sort();
    let mut buffer = Vec::new();
    for name in names {
        let value = &attributes[name];
        put(&mut buffer, name.as_bytes());
        put(&mut buffer, value.data_type().as_bytes());
        match value.binary_value() {
            Some(blob) => {
                buffer.push(2);
                put(&mut buffer, blob.as_ref());
            }
            None => {
                buffer.push(1);
                put(
                    &mut buffer,
                    value.string_value().unwrap_or_default().as_bytes(),
                );
            }
        }
    }
    format!("{:x}", md5::Md5::digest(&buffer))
}

/// The Python of the real clients, if installed (`CLIENTS_INSTALL_ONLY=1 bash tests/clients/run.sh`,
/// which the test command runs first).
fn clients_python() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let home = std::env::var("HOME").unwrap_or_default();
    let cache = std::env::var("CLIENTS_CACHE")
        .unwrap_or_else(|_| format!("{home}/.cache/sqs-gateway/clients"));
    let python = crate::harness::clients_venv().join("bin/python");
    let query_model = std::path::PathBuf::from(cache).join("query-model-1.29.165");
    (python.exists() && query_model.exists()).then_some((python, query_model))
}

/// A message sent through the core with 20 typed attributes (more than SQS holds: the core packs
/// them) comes back with all 20, types intact, through the SQS endpoint (the SDK for Rust, and
/// boto3 over JSON 1.0 and Query, each checking MD5OfMessageAttributes) and through ezgh.
async fn twenty_typed_attributes_come_back_whole(kind: Kind) {
    use sqs_gateway::core::access::{Caller, Grants, Principal};
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let sent = twenty_attributes();
    let caller = Caller::new(
        Principal::Anonymous,
        std::sync::Arc::new(Grants::everything()),
    );
    let message = sqs_gateway::core::model::OutgoingMessage {
        body: "twenty".into(),
        attributes: sent.clone(),
        ..Default::default()
    };
    let results = gw
        .gateway
        .send(&caller, "orders", &[message])
        .await
        .unwrap();
    assert!(results[0].is_ok(), "{:?}", results[0]);

    let (client, url) = gw.sqs_queue("orders").await;
    let received = client
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .wait_time_seconds(5)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    let attributes = message.message_attributes().unwrap();
    assert_eq!(attributes.len(), 20);
    for (name, expected) in &sent {
        let got = &attributes[name];
        assert_eq!(got.data_type(), expected.data_type, "{name}");
        match &expected.value {
            sqs_gateway::core::model::AttributeValue::Text(text) => {
                assert_eq!(got.string_value(), Some(text.as_str()), "{name}")
            }
            sqs_gateway::core::model::AttributeValue::Bytes(bytes) => {
                assert_eq!(
                    got.binary_value().map(|b| b.as_ref()),
                    Some(bytes.as_slice()),
                    "{name}"
                )
            }
        }
    }
    assert_eq!(
        message.md5_of_message_attributes(),
        Some(md5_of_attributes(attributes).as_str())
    );

    let ezgh = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    let shown = ezgh[0]["attributes"].as_object().unwrap();
    assert_eq!(shown.len(), 20);
    assert_eq!(shown["attr00"], "text 0 \u{e9}");
    assert_eq!(shown["attr02"], "AAL+");
    assert!(!shown.keys().any(|name| name.starts_with("sqsgw.")));

    // boto3, both protocols.
    match clients_python() {
        None => {
            // Under the test command a missing venv fails here instead.
            crate::harness::skips_without(
                &[crate::harness::Service::Clients],
                "the boto3 part of twenty_typed_attributes_come_back_whole",
            );
            eprintln!(
                "SKIPPED the boto3 part of twenty_typed_attributes_come_back_whole: the clients are not installed (scripts/test installs them)"
            )
        }
        Some((python, query_model)) => {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/attributes.py");
            for protocol in ["json", "query"] {
                let mut command = tokio::process::Command::new(&python);
                command
                    .arg(script)
                    .arg(&gw.base)
                    .arg(&url)
                    .env("AWS_ACCESS_KEY_ID", SQS_KEY_ID)
                    .env("AWS_SECRET_ACCESS_KEY", SQS_SECRET)
                    .env("AWS_DEFAULT_REGION", "us-east-1")
                    .env("AWS_CONFIG_FILE", "/dev/null")
                    .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                    .env_remove("AWS_DATA_PATH");
                if protocol == "query" {
                    command.env("AWS_DATA_PATH", &query_model);
                }
                let output = command.output().await.unwrap();
                let report: serde_json::Value = serde_json::from_slice(&output.stdout)
                    .unwrap_or_else(|_| {
                        panic!(
                            "boto3 ({protocol}): {}",
                            String::from_utf8_lossy(&output.stderr)
                        )
                    });
                assert_eq!(report["protocol"], protocol, "{report}");
                assert_eq!(report["md5_ok"], true, "{protocol}: {report}");
                let attributes = report["attributes"].as_object().unwrap();
                assert_eq!(attributes.len(), 20, "{protocol}: {report}");
                assert_eq!(attributes["attr03"], json!(["String.label", "labelled 3"]));
                assert_eq!(attributes["attr02"], json!(["Binary", "AAL+"]));
            }
        }
    }

    // The SQS endpoint's own SendMessage keeps AWS's limit of ten.
    let mut send = client.send_message().queue_url(&url).message_body("x");
    for n in 0..11 {
        send = send.message_attributes(
            format!("a{n}"),
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value("v")
                .build()
                .unwrap(),
        );
    }
    assert_eq!(
        send.send().await.unwrap_err().code(),
        Some("InvalidParameterValue")
    );
    gw.stop().await;
}

crate::on_both_backends!(
    message_content_follows_sqs_rules,
    twenty_typed_attributes_come_back_whole,
);
