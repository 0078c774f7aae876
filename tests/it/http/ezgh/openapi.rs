//! The ezgh OpenAPI document (`/openapi/ezgh.json`) held to the ezgh docs' "Pull consumers" page,
//! field for field: routes, statuses, names, defaults, ranges, error bodies.

use crate::harness::openapi::*;
use crate::harness::{GatewayBuilder, Kind};
use serde_json::json;
use std::collections::BTreeSet;

/// The ezgh docs' pull consumers page, field for field.
#[tokio::test]
async fn the_ezgh_document_says_what_the_ezgh_docs_say() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    let doc = document(&gw, "ezgh").await;
    let receive_path =
        "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive";
    assert_eq!(
        names(&doc, "paths"),
        set(&[receive_path, "/v1/receipts/ack", "/v1/receipts/visibility"])
    );
    let scheme = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(
        (scheme["type"].as_str(), scheme["scheme"].as_str()),
        (Some("http"), Some("bearer"))
    );

    // Receive: a Bearer key; every field optional, with the documented defaults and ranges.
    let receive = operation(&doc, receive_path, "post");
    assert_eq!(receive["operationId"], "ReceiveMessages");
    assert_eq!(receive["security"], json!([{ "bearer": [] }]));
    let parameters: BTreeSet<String> = receive["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|parameter| {
            assert_eq!(parameter["in"], "path");
            assert_eq!(parameter["required"], true);
        })
        .map(|parameter| parameter["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(parameters, set(&["organization", "project", "queue"]));
    assert_ne!(
        receive["requestBody"]["required"], true,
        "the body is optional"
    );
    let body = request_schema(&doc, receive);
    assert_eq!(
        names(body, "properties"),
        set(&["maxMessages", "waitSeconds", "visibilityTimeoutSeconds"])
    );
    assert!(names(body, "required").is_empty());
    assert_eq!(range(body, "maxMessages"), (json!(1), json!(10)));
    assert_eq!(body["properties"]["maxMessages"]["default"], 1);
    assert_eq!(range(body, "waitSeconds"), (json!(0), json!(20)));
    assert_eq!(
        range(body, "visibilityTimeoutSeconds"),
        (json!(0), json!(43_200))
    );
    for field in ["waitSeconds", "visibilityTimeoutSeconds"] {
        // The default is the queue's: named, not a number.
        let description = body["properties"][field]["description"].as_str().unwrap();
        assert!(
            description.contains("the queue's"),
            "{field}: {description}"
        );
    }
    assert_eq!(body["additionalProperties"], false);
    assert_eq!(
        statuses(receive),
        BTreeSet::from([200, 400, 401, 403, 404, 408, 413, 429, 503])
    );
    for status in ["429", "503"] {
        assert!(
            receive["responses"][status]["headers"]["Retry-After"].is_object(),
            "{status}"
        );
    }
    assert!(receive["responses"]["401"]["headers"]["WWW-Authenticate"].is_object());
    let answer = resolved(
        &doc,
        &receive["responses"]["200"]["content"]["application/json"]["schema"],
    );
    let message = resolved(&doc, &answer["properties"]["messages"]["items"]);
    assert_eq!(
        names(message, "properties"),
        set(&[
            "messageId",
            "receiptHandle",
            "body",
            "attributes",
            "sentAt",
            "firstReceivedAt",
            "receiveCount",
            "groupId",
            "seq",
            "traceparent",
            "tracestate",
        ])
    );
    // Every field on every message, but FIFO's two and the trace context.
    assert_eq!(
        names(message, "required"),
        set(&[
            "messageId",
            "receiptHandle",
            "body",
            "attributes",
            "sentAt",
            "firstReceivedAt",
            "receiveCount",
        ])
    );
    assert_eq!(
        message["properties"]["attributes"]["additionalProperties"]["type"],
        "string"
    );

    // Acknowledge and visibility: no credential, 1 to 10 handles, one result per handle.
    for (path, id, field) in [
        ("/v1/receipts/ack", "AcknowledgeMessages", "receiptHandles"),
        (
            "/v1/receipts/visibility",
            "ChangeMessageVisibility",
            "entries",
        ),
    ] {
        let operation = operation(&doc, path, "post");
        assert_eq!(operation["operationId"], id);
        assert_eq!(
            operation["security"],
            json!([{}]),
            "{path} reads no credential"
        );
        assert_eq!(operation["requestBody"]["required"], true);
        let body = request_schema(&doc, operation);
        assert_eq!(names(body, "required"), set(&[field]));
        let list = &body["properties"][field];
        assert_eq!(
            (list["minItems"].clone(), list["maxItems"].clone()),
            (json!(1), json!(10))
        );
        assert_eq!(
            statuses(operation),
            BTreeSet::from([200, 400, 408, 413, 429, 503]),
            "{path}"
        );
        let results = resolved(
            &doc,
            &operation["responses"]["200"]["content"]["application/json"]["schema"],
        );
        let result = &results["properties"]["results"]["items"];
        for (example, valid) in [
            (json!({ "ok": true }), true),
            (json!({ "error": "receipt_handle_stale" }), true),
            (json!({ "error": "receipt_handle_invalid" }), true),
            (json!({ "error": "nope" }), false),
            (json!({ "ok": false }), false),
        ] {
            assert_eq!(
                violations(&doc, result, &example, "result").is_empty(),
                valid,
                "{example}"
            );
        }
    }
    let entry = schema(&doc, "VisibilityEntry");
    assert_eq!(
        names(entry, "required"),
        set(&["receiptHandle", "visibilityTimeoutSeconds"])
    );
    assert_eq!(
        range(entry, "visibilityTimeoutSeconds"),
        (json!(0), json!(43_200))
    );

    // The one error body: {"error": code, "message": text}.
    let error = schema(&doc, "Error");
    assert_eq!(names(error, "required"), set(&["error", "message"]));
    for code in [
        "out_of_range",
        "unauthenticated",
        "permission_denied",
        "queue_not_found",
        "rate_limited",
        "unavailable",
    ] {
        assert!(
            error["properties"]["error"]["enum"]
                .as_array()
                .unwrap()
                .contains(&json!(code)),
            "{code}"
        );
    }
    gw.stop().await;
}
