//! What a basaltic request may hold, on both backends: attribute and size limits at their edges,
//! attribute names of any 1 to 256 bytes, and a JSON key given twice refused.

use super::support::*;
use crate::harness::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// 20 attributes but not 21; names of 256 bytes but not 257; values of 1,024 bytes but not
/// 1,025; Binary in standard base64 both ways; body and attributes within max_message_bytes.
async fn attribute_and_size_limits_hold_at_their_edges(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api
        .create(json!({ "name": name(), "settings": { "max_message_bytes": 1024 } }))
        .await;
    let attributes = |count: usize| -> Value {
        (0..count)
            .map(|i| {
                (
                    format!("a{i}"),
                    json!({ "type": "Number", "value": i.to_string() }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let send = |attributes: Value, body: String| {
        let request = json!({ "body": body, "attributes": attributes }).to_string();
        let api = &api;
        let id = id.clone();
        async move { api.send(&id, &request).await }
    };
    assert_eq!(
        send(attributes(20), "x".into()).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        code(&send(attributes(21), "x".into()).await),
        (StatusCode::BAD_REQUEST, "invalid_argument".into())
    );
    let named = |length: usize| json!({ "n".repeat(length): { "type": "String", "value": "v" } });
    let long_name = send(named(256), "x".into()).await;
    assert_eq!(long_name.status, StatusCode::CREATED, "{}", long_name.body);
    assert_eq!(
        send(named(257), "x".into()).await.status,
        StatusCode::BAD_REQUEST
    );
    let valued = |length: usize| json!({ "v": { "type": "String", "value": "v".repeat(length) } });
    let big = api.create(json!({ "name": name() })).await;
    let to_big = |attributes: Value| {
        let request = json!({ "body": "x", "attributes": attributes }).to_string();
        let api = &api;
        let big = big.clone();
        async move { api.send(&big, &request).await }
    };
    assert_eq!(to_big(valued(1024)).await.status, StatusCode::CREATED);
    assert_eq!(to_big(valued(1025)).await.status, StatusCode::BAD_REQUEST);
    // Exactly max_message_bytes fits; one more byte does not.
    assert_eq!(
        send(json!({}), "b".repeat(1024)).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        code(&send(json!({}), "b".repeat(1025)).await).0,
        StatusCode::BAD_REQUEST
    );
    let binary = json!({ "blob": { "type": "Binary", "value": "AAEC/w==" } });
    assert_eq!(to_big(binary.clone()).await.status, StatusCode::CREATED);
    assert_eq!(
        to_big(json!({ "blob": { "type": "Binary", "value": "not base64!" } }))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        to_big(json!({ "t": { "type": "Date", "value": "x" } }))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(
            api.receive(&big, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
                .await,
        );
        if got.len() >= 3 {
            break;
        }
    }
    let with_blob = got
        .iter()
        .find(|m| m["attributes"].get("blob").is_some())
        .expect("the binary message");
    assert_eq!(with_blob["attributes"]["blob"], binary["blob"]);
}

/// The document's names: any 1 to 256 bytes. Names SQS would refuse (accents, `:`, `/`, spaces)
/// travel packed in the core's codec and come back unchanged with their types and values, through
/// receive and (where the backend can) inspect; the reserved prefixes stay refused.
async fn attribute_names_are_any_1_to_256_bytes(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    let attributes = json!({
        "évent": { "type": "String", "value": "order.paid" },
        "evento.año": { "type": "Number", "value": "2026" },
        "event:type": { "type": "Binary", "value": "AAEC/w==" },
        "event/type": { "type": "String", "value": "a/b" },
        "event type": { "type": "Number", "value": "-1.5" },
        "plain": { "type": "String", "value": "as SQS has it" },
        ("é".repeat(128)): { "type": "String", "value": "256 bytes" },
    });
    let request = json!({ "body": "named", "attributes": attributes }).to_string();
    let sent = api.send(&id, &request).await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    // One name alone, with nothing to pack it with.
    let alone = json!({ "body": "alone", "attributes": { "event:type": { "type": "String", "value": "x" } } });
    let sent = api.send(&id, &alone.to_string()).await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    if kind == Kind::Embedded {
        let inspected = api
            .call(
                Method::GET,
                &format!("/v1/queues/{id}/messages?max_messages=10"),
                Some(&api.admin),
                None,
            )
            .await;
        assert_eq!(inspected.status, StatusCode::OK, "{}", inspected.body);
        let named = inspected.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["body"] == "named")
            .expect("inspected");
        assert_eq!(named["attributes"], attributes);
    }
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(
            api.receive(&id, r#"{"max_messages": 10, "wait_time_seconds": 1}"#)
                .await,
        );
        if got.len() >= 2 {
            break;
        }
    }
    let by_body = |body: &str| {
        got.iter()
            .find(|m| m["body"] == body)
            .unwrap_or_else(|| panic!("{body}: {got:?}"))
    };
    assert_eq!(by_body("named")["attributes"], attributes);
    assert_eq!(by_body("alone")["attributes"], alone["attributes"]);
    // Receipts are URL-safe here (the delete route takes them in its query string); the standard
    // spelling of the same receipt (the SQS endpoint's) acts too.
    for message in &got {
        let handle = message["receipt_handle"].as_str().unwrap();
        assert!(!handle.contains(['+', '/', '=']), "{handle}");
    }
    use base64::Engine as _;
    let standard = |handle: &str| {
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(handle)
            .unwrap();
        base64::engine::general_purpose::STANDARD.encode(raw)
    };
    for message in &got {
        let handle = standard(message["receipt_handle"].as_str().unwrap());
        assert_eq!(
            api.delete(&id, &handle).await.status,
            StatusCode::NO_CONTENT
        );
    }
    // Nothing stricter than the document, but the prefixes the API reserves stay reserved.
    for reserved in ["AWS.trace", "amazon.id", "sqsgw.attributes", "SQSGW.x"] {
        let request =
            json!({ "body": "x", "attributes": { reserved: { "type": "String", "value": "v" } } });
        let refused = api.send(&id, &request.to_string()).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{reserved}"
        );
    }
    let too_long = json!({ "body": "x", "attributes": { (format!("{}n", "é".repeat(128))): { "type": "String", "value": "v" } } });
    assert_eq!(
        code(&api.send(&id, &too_long.to_string()).await).0,
        StatusCode::BAD_REQUEST
    );
}

/// A key given twice, anywhere in a body, is refused (`invalid_argument`, naming the key, showing
/// no value) instead of the last value silently winning; nothing is sent or created.
#[tokio::test]
async fn a_key_given_twice_is_refused() {
    let api = Basaltic::start(Kind::Embedded).await;
    let queue_name = name();
    let id = api.create(json!({ "name": queue_name })).await;
    let messages = format!("/v1/queues/{id}/messages");
    let batch = format!("/v1/queues/{id}/messages/batch");
    for (path, body, key) in [
        (
            messages.as_str(),
            r#"{"body":"first","body":"second"}"#,
            "\"body\"",
        ),
        (
            messages.as_str(),
            r#"{"body":"x","attributes":{"a":{"type":"String","value":"first"},"a":{"type":"Number","value":"2"}}}"#,
            "attributes: the key \"a\"",
        ),
        (
            messages.as_str(),
            r#"{"body":"x","attributes":{"a":{"type":"String","value":"first","value":"second"}}}"#,
            "attributes.a: the key \"value\"",
        ),
        (
            batch.as_str(),
            r#"{"entries":[{"id":"1","body":"x"},{"id":"2","id":"3","body":"second"}]}"#,
            "entries[1]: the key \"id\"",
        ),
        ("/v1/queues", r#"{"name":"dupa","name":"dupb"}"#, "\"name\""),
    ] {
        let answer = api
            .call(Method::POST, path, Some(&api.admin), Some(body))
            .await;
        assert_eq!(
            code(&answer),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{body}: {}",
            answer.body
        );
        let message = answer.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(key) && message.contains("more than once"),
            "{body}: {message}"
        );
        for value in ["first", "second", "dupa", "dupb"] {
            assert!(!message.contains(value), "{message}");
        }
    }
    let patched = api
        .call(
            Method::PATCH,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            Some(r#"{"settings":{"delay_seconds":0,"delay_seconds":900}}"#),
        )
        .await;
    assert_eq!(
        code(&patched).0,
        StatusCode::BAD_REQUEST,
        "{}",
        patched.body
    );
    let receive = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/receive"),
            Some(&api.admin),
            Some(r#"{"wait_time_seconds":0,"wait_time_seconds":20}"#),
        )
        .await;
    assert_eq!(
        code(&receive).0,
        StatusCode::BAD_REQUEST,
        "{}",
        receive.body
    );
    assert!(
        api.receive(&id, r#"{"max_messages": 10}"#).await.is_empty(),
        "nothing was sent"
    );
    let listed = api
        .call(Method::GET, "/v1/queues", Some(&api.admin), None)
        .await;
    assert_eq!(
        listed.body["queues"].as_array().unwrap().len(),
        1,
        "nothing was created"
    );
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.body["result"]["settings"]["delay_seconds"], 0);
}

crate::on_both_backends!(
    attribute_names_are_any_1_to_256_bytes,
    attribute_and_size_limits_hold_at_their_edges,
);
