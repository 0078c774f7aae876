//! The basaltic OpenAPI document (`/openapi/basaltic.json`) held to basaltic's "Enviar y consumir
//! mensajes" page, field for field: routes, statuses, names, defaults, ranges, error bodies.

use crate::harness::openapi::*;
use crate::harness::{GatewayBuilder, Kind};
use serde_json::json;
use std::collections::BTreeSet;

/// basaltic's "send and consume messages" page, field for field.
#[tokio::test]
async fn the_basaltic_document_says_what_the_basaltic_docs_say() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    let doc = document(&gw, "basaltic").await;
    let routes: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let expected: BTreeSet<(String, String)> = [
        ("get", "/v1/queues"),
        ("post", "/v1/queues"),
        ("get", "/v1/queues/{queue_id}"),
        ("patch", "/v1/queues/{queue_id}"),
        ("delete", "/v1/queues/{queue_id}"),
        ("post", "/v1/queues/{queue_id}/messages"),
        ("get", "/v1/queues/{queue_id}/messages"),
        ("delete", "/v1/queues/{queue_id}/messages"),
        ("post", "/v1/queues/{queue_id}/messages/receive"),
        ("post", "/v1/queues/{queue_id}/messages/visibility"),
        ("post", "/v1/queues/{queue_id}/messages/batch"),
        ("post", "/v1/queues/{queue_id}/messages/delete-batch"),
        ("post", "/v1/queues/{queue_id}/messages/visibility-batch"),
        ("post", "/v1/queues/{queue_id}/purge"),
        ("get", "/v1/queues/{queue_id}/metrics"),
        ("post", "/v1/queues/{queue_id}/redrive"),
        ("get", "/v1/queues/{queue_id}/redrive"),
        ("post", "/v1/queues/{queue_id}/redrive/cancel"),
        ("get", "/v1/queues/{queue_id}/messages/export"),
        ("post", "/v1/queues/{queue_id}/messages/move"),
        ("post", "/v1/queues/{queue_id}/pause"),
        ("post", "/v1/queues/{queue_id}/resume"),
        ("get", "/v1/key"),
        ("get", "/v1/queues/{queue_id}/subscriptions"),
        ("post", "/v1/queues/{queue_id}/subscriptions"),
        ("patch", "/v1/queues/{queue_id}/subscriptions/{name}"),
        ("delete", "/v1/queues/{queue_id}/subscriptions/{name}"),
        (
            "post",
            "/v1/queues/{queue_id}/subscriptions/{name}/rotate-secret",
        ),
        ("get", "/v1/queues/{queue_id}/subscription-audit"),
    ]
    .iter()
    .map(|(method, path)| ((*method).to_owned(), (*path).to_owned()))
    .collect();
    assert_eq!(routes, expected);
    for (method, path) in &routes {
        assert_eq!(
            operation(&doc, path, method)["security"],
            json!([{ "bearer": [] }]),
            "{method} {path}"
        );
        let documented = statuses(operation(&doc, path, method));
        assert!(documented.contains(&401), "{method} {path}");
        assert!(documented.contains(&503), "{method} {path}");
    }

    // "POST /v1/queues/{queue_id}/messages … HTTP 201 devuelve un result con el ID del mensaje."
    let send = operation(&doc, "/v1/queues/{queue_id}/messages", "post");
    assert!(statuses(send).contains(&201));
    let sent = resolved(
        &doc,
        &send["responses"]["201"]["content"]["application/json"]["schema"],
    );
    assert!(
        violations(
            &doc,
            sent,
            &json!({ "result": { "message_id": "m-1" } }),
            "sent"
        )
        .is_empty()
    );
    let body = request_schema(&doc, send);
    assert_eq!(names(body, "required"), set(&["body"]));
    assert_eq!(
        names(body, "properties"),
        set(&[
            "body",
            "attributes",
            "delay_seconds",
            "group_id",
            "deduplication_id"
        ])
    );
    assert_eq!(range(body, "delay_seconds"), (json!(0), json!(900)));
    // "Los mensajes aceptan hasta 20 atributos. Los nombres tienen 1–256 bytes y los valores hasta
    // 1.024 bytes. Tipos: String, Number o Binary … base64 estándar para Binary."
    let attributes = &body["properties"]["attributes"];
    assert_eq!(attributes["maxProperties"], 20);
    assert_eq!(
        (
            attributes["propertyNames"]["minLength"].clone(),
            attributes["propertyNames"]["maxLength"].clone()
        ),
        (json!(1), json!(256))
    );
    let attribute = &attributes["additionalProperties"];
    let example = json!({ "body": "{\"order_id\":\"A-1001\"}", "attributes": { "event": { "type": "String", "value": "order.paid" } } });
    assert!(
        violations(&doc, body, &example, "send").is_empty(),
        "the docs' example"
    );
    for (value, valid) in [
        (json!({ "type": "String", "value": "order.paid" }), true),
        (json!({ "type": "Number", "value": "42" }), true),
        (json!({ "type": "Binary", "value": "AQID" }), true),
        (json!({ "type": "Float", "value": "1" }), false),
        (
            json!({ "type": "String", "value": "x".repeat(1025) }),
            false,
        ),
        (json!({ "type": "String" }), false),
    ] {
        assert_eq!(
            violations(&doc, attribute, &value, "attribute").is_empty(),
            valid,
            "{value}"
        );
    }

    // Receive: "max_messages": 10, "wait_time_seconds": 20, "visibility_timeout_seconds": 60.
    let receive = operation(&doc, "/v1/queues/{queue_id}/messages/receive", "post");
    let body = request_schema(&doc, receive);
    assert!(violations(&doc, body, &json!({ "max_messages": 10, "wait_time_seconds": 20, "visibility_timeout_seconds": 60 }), "receive").is_empty());
    assert_eq!(range(body, "max_messages"), (json!(1), json!(10)));
    assert_eq!(body["properties"]["max_messages"]["default"], 1);
    assert_eq!(range(body, "wait_time_seconds"), (json!(0), json!(20)));
    assert_eq!(
        range(body, "visibility_timeout_seconds"),
        (json!(0), json!(43_200))
    );
    let received = resolved(
        &doc,
        &receive["responses"]["200"]["content"]["application/json"]["schema"],
    );
    let message = resolved(&doc, &received["properties"]["messages"]["items"]);
    // "Cada mensaje incluye cuerpo, atributos, receipt_handle, receive_count y visible_at."
    assert!(names(message, "required").is_superset(&set(&[
        "body",
        "attributes",
        "receipt_handle",
        "receive_count",
        "visible_at"
    ])));

    // "DELETE /v1/queues/{queue_id}/messages?receipt_handle=… La confirmación devuelve HTTP 204."
    let delete = operation(&doc, "/v1/queues/{queue_id}/messages", "delete");
    assert!(statuses(delete).contains(&204));
    let receipt = delete["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|parameter| parameter["name"] == "receipt_handle")
        .expect("receipt_handle");
    assert_eq!(
        (receipt["in"].as_str(), receipt["required"].as_bool()),
        (Some("query"), Some(true))
    );
    // Visibility: {"receipt_handle", "visibility_timeout_seconds"}, counted from the change.
    let visibility = operation(&doc, "/v1/queues/{queue_id}/messages/visibility", "post");
    let body = request_schema(&doc, visibility);
    assert_eq!(
        names(body, "required"),
        set(&["receipt_handle", "visibility_timeout_seconds"])
    );
    assert_eq!(
        range(body, "visibility_timeout_seconds"),
        (json!(0), json!(43_200))
    );
    for operation in [delete, visibility] {
        // A receipt of another receive changes nothing, and says so.
        assert!(statuses(operation).is_superset(&BTreeSet::from([204, 400, 409])));
    }
    // "Las operaciones por lotes … aceptan hasta diez entradas con ID propios únicos."
    for batch in ["batch", "delete-batch", "visibility-batch"] {
        let operation = operation(
            &doc,
            &format!("/v1/queues/{{queue_id}}/messages/{batch}"),
            "post",
        );
        let entries = &request_schema(&doc, operation)["properties"]["entries"];
        assert_eq!(
            (entries["minItems"].clone(), entries["maxItems"].clone()),
            (json!(1), json!(10)),
            "{batch}"
        );
        let results = resolved(
            &doc,
            &operation["responses"]["200"]["content"]["application/json"]["schema"],
        );
        assert_eq!(
            names(results, "required"),
            set(&["successful", "failed"]),
            "{batch}"
        );
    }
    // Queue settings, with their ranges; max_message_bytes at most 256 KiB.
    let settings = schema(&doc, "SettingsRequest");
    for (field, low, high) in [
        ("delay_seconds", 0, 900),
        ("receive_wait_time_seconds", 0, 20),
        ("visibility_timeout_seconds", 0, 43_200),
        ("max_message_bytes", 1024, 262_144),
        ("retention_seconds", 60, 1_209_600),
    ] {
        assert_eq!(range(settings, field), (json!(low), json!(high)), "{field}");
    }
    // The one error body: {"error": {"code", "message"}}.
    let error = schema(&doc, "Error");
    assert!(
        violations(
            &doc,
            error,
            &json!({ "error": { "code": "queue_not_found", "message": "no such queue" } }),
            "error"
        )
        .is_empty()
    );
    assert!(
        !violations(
            &doc,
            error,
            &json!({ "error": "queue_not_found", "message": "no such queue" }),
            "error"
        )
        .is_empty()
    );
    gw.stop().await;
}
