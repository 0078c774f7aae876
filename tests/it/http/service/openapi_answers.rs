//! The OpenAPI documents the gateway serves at `/openapi/{ezgh,sombus,basaltic}.json`: fetched over
//! HTTP from a running gateway, held to the dialects' documents ("Pull consumers" for ezgh,
//! "Enviar y consumir mensajes" for basaltic: routes, statuses, names, defaults, ranges, error bodies), every documented
//! path routed, and real answers of every status a test can provoke (schemathesis, in
//! `tests/clients/contract.sh`, cannot make a backend fail or a key lack a permission) valid
//! against the schema the document gives for it.

use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, TestGateway, answer};
use crate::inprocess::fake::FakeBackend;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::{Backend, BackendError};
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::QueueSettings;
use sqs_gateway::credentials::api_keys;
use std::collections::BTreeSet;
use std::sync::Arc;

const DIALECTS: [&str; 3] = ["ezgh", "sombus", "basaltic"];

/// GETs a document: public (no credential), JSON, OpenAPI 3.1.
async fn document(gw: &TestGateway, dialect: &str) -> Value {
    let response = gw
        .http
        .get(format!("{}/openapi/{dialect}.json", gw.base))
        .send()
        .await
        .expect("gateway answers");
    assert_eq!(response.status(), StatusCode::OK, "{dialect}");
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let document: Value = response.json().await.expect("the document is JSON");
    assert_eq!(document["openapi"], "3.1.0", "{dialect}");
    assert!(document["info"]["title"].is_string(), "{dialect}");
    assert!(document["paths"].is_object(), "{dialect}");
    document
}

/// The operation at `path` and `method` (lowercase), which must be documented.
fn operation<'d>(document: &'d Value, path: &str, method: &str) -> &'d Value {
    let operation = &document["paths"][path][method];
    assert!(operation.is_object(), "{method} {path} is not documented");
    operation
}

/// A `$ref` resolved (once; the documents' references do not chain).
fn resolved<'d>(document: &'d Value, schema: &'d Value) -> &'d Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("unexpected reference {reference}"));
            let target = &document["components"]["schemas"][name];
            assert!(target.is_object(), "{reference} is not in the document");
            target
        }
        None => schema,
    }
}

/// A named schema of the document's components.
fn schema<'d>(document: &'d Value, name: &str) -> &'d Value {
    let schema = &document["components"]["schemas"][name];
    assert!(schema.is_object(), "no schema {name}");
    schema
}

/// The JSON request body schema of an operation, resolved.
fn request_schema<'d>(document: &'d Value, operation: &'d Value) -> &'d Value {
    resolved(
        document,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    )
}

fn statuses(operation: &Value) -> BTreeSet<u16> {
    operation["responses"]
        .as_object()
        .expect("responses")
        .keys()
        .map(|status| status.parse().expect("a status"))
        .collect()
}

/// `(minimum, maximum)` of a property.
fn range(object: &Value, property: &str) -> (Value, Value) {
    let schema = &object["properties"][property];
    assert!(schema.is_object(), "no property {property}");
    (schema["minimum"].clone(), schema["maximum"].clone())
}

fn names(object: &Value, key: &str) -> BTreeSet<String> {
    match &object[key] {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().expect("a name").to_owned())
            .collect(),
        _ => BTreeSet::new(),
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// What of `value` breaks `schema` (the JSON Schema the documents use: `$ref`, `type`, `enum`,
/// `required`, `properties`, `additionalProperties`, `items`, `oneOf`, `anyOf`, numeric and
/// length bounds; `format` and `pattern` are not checked).
fn violations(document: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let schema = resolved(document, schema);
    let mut found = Vec::new();
    if let Some(kind) = schema.get("type") {
        let kinds: Vec<&str> = match kind {
            Value::String(kind) => vec![kind.as_str()],
            Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let is = |kind: &str| match kind {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => false,
        };
        if !kinds.iter().any(|kind| is(kind)) {
            return vec![format!("{at}: {value} is not {kind}")];
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        found.push(format!("{at}: {value} is not one of {allowed:?}"));
    }
    for (bound, holds) in [
        ("minimum", (|v: f64, b: f64| v >= b) as fn(f64, f64) -> bool),
        ("maximum", |v, b| v <= b),
    ] {
        if let (Some(bound_value), Some(number)) =
            (schema.get(bound).and_then(Value::as_f64), value.as_f64())
            && !holds(number, bound_value)
        {
            found.push(format!("{at}: {number} breaks {bound} {bound_value}"));
        }
    }
    let length = match value {
        Value::String(text) => Some(text.chars().count()),
        Value::Array(items) => Some(items.len()),
        _ => None,
    };
    for (bound, is_min) in [
        ("minLength", true),
        ("maxLength", false),
        ("minItems", true),
        ("maxItems", false),
    ] {
        if let (Some(bound_value), Some(length)) =
            (schema.get(bound).and_then(Value::as_u64), length)
        {
            let length = length as u64;
            if (is_min && length < bound_value) || (!is_min && length > bound_value) {
                found.push(format!(
                    "{at}: length {length} breaks {bound} {bound_value}"
                ));
            }
        }
    }
    if let Value::Object(object) = value {
        for required in names(schema, "required") {
            if !object.contains_key(&required) {
                found.push(format!("{at}: {required} is missing"));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (key, item) in object {
            let path = format!("{at}.{key}");
            match (
                properties.and_then(|p| p.get(key)),
                schema.get("additionalProperties"),
            ) {
                (Some(property), _) => found.extend(violations(document, property, item, &path)),
                (None, Some(Value::Bool(false))) => found.push(format!("{path} is not documented")),
                (None, Some(extra @ Value::Object(_))) => {
                    found.extend(violations(document, extra, item, &path))
                }
                (None, _) => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            found.extend(violations(
                document,
                item_schema,
                item,
                &format!("{at}[{index}]"),
            ));
        }
    }
    if let Some(choices) = schema.get("oneOf").and_then(Value::as_array) {
        let matching = choices
            .iter()
            .filter(|choice| violations(document, choice, value, at).is_empty())
            .count();
        if matching != 1 {
            found.push(format!("{at}: {value} matches {matching} of oneOf"));
        }
    }
    if let Some(choices) = schema.get("anyOf").and_then(Value::as_array)
        && !choices
            .iter()
            .any(|choice| violations(document, choice, value, at).is_empty())
    {
        found.push(format!("{at}: {value} matches nothing of anyOf"));
    }
    found
}

#[tokio::test]
async fn the_documents_are_served_without_credentials() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    for dialect in DIALECTS {
        let served = document(&gw, dialect).await;
        // Made once: the same bytes every time.
        assert_eq!(document(&gw, dialect).await, served, "{dialect}");
        let wrong = answer(
            gw.http
                .post(format!("{}/openapi/{dialect}.json", gw.base))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED, "{dialect}");
    }
    let unknown = gw
        .http
        .get(format!("{}/openapi/sqs.json", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    gw.stop().await;
}

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

/// A value for a path parameter of the document: a UUID where it says so.
fn placeholder(parameter: &Value, document: &Value) -> String {
    let schema = resolved(document, &parameter["schema"]);
    if schema["format"] == "uuid" {
        "00000000-0000-4000-8000-000000000000".to_owned()
    } else {
        "placeholder".to_owned()
    }
}

/// Every operation every document names is routed: a request to it (without a credential) is
/// answered by its dialect's handler, not by the edge's 404 for a path no route serves, nor 405.
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    let mut checked = 0;
    for dialect in DIALECTS {
        let doc = document(&gw, dialect).await;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let mut url = path.clone();
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if parameter["in"] == "path" {
                        let name = parameter["name"].as_str().unwrap();
                        url = url.replace(&format!("{{{name}}}"), &placeholder(parameter, &doc));
                    }
                }
                assert!(
                    !url.contains('{'),
                    "{path}: a path parameter is not documented"
                );
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let response = gw
                    .http
                    .request(method.clone(), format!("{}{url}", gw.base))
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let body = response.text().await.unwrap();
                assert_ne!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{dialect}: {method} {path}"
                );
                assert!(
                    !(status == StatusCode::NOT_FOUND && body.contains("no such route")),
                    "{dialect}: {method} {path} is not routed: {body}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 18, "only {checked} operations documented");
    gw.stop().await;
}

/// The gateway for [`answers_match_their_documented_schemas`]: a fake backend that can fail, the
/// test project's queue `orders`, a basaltic key with every permission and one that may only
/// receive, and one invalid receipt handle a minute per address (so a second is refused).
async fn answering_gateway() -> (TestGateway, Arc<FakeBackend>, String, String) {
    let engine = EmbeddedBackend::in_memory(Arc::new(SystemClock));
    engine
        .create_queue("orders", &QueueSettings::default())
        .await
        .expect("queue created");
    let backend = Arc::new(FakeBackend::new(engine));
    let admin = api_keys::generate_key();
    let reader = api_keys::generate_key();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(Arc::clone(&backend) as Arc<dyn Backend>, &["orders"])
        .config(&format!(
            "[server]\ninvalid_handles_per_minute = 1\n\n\
             [[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n\
             [[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"receive\"] }}\n",
            admin.id, admin.hash, reader.id, reader.hash
        ))
        .start()
        .await;
    (gw, backend, admin.key, reader.key)
}

/// One request, and its answer checked against the document: its status is one the operation
/// documents, and its body (or none) and headers are what the document says for that status.
struct Checker<'g> {
    gw: &'g TestGateway,
    doc: Value,
    /// (operation id, status) answered.
    seen: BTreeSet<(String, u16)>,
}

impl Checker<'_> {
    async fn call(
        &mut self,
        method: Method,
        path: &str,
        url: &str,
        key: Option<&str>,
        body: Option<String>,
        expected: StatusCode,
    ) -> Value {
        let mut request = self
            .gw
            .http
            .request(method.clone(), format!("{}{url}", self.gw.base));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        let got = answer(request.send().await.expect("gateway answers")).await;
        assert_eq!(got.status, expected, "{method} {url}: {}", got.body);
        let doc = &self.doc;
        let operation = operation(doc, path, &method.as_str().to_lowercase());
        let status = got.status.as_u16();
        let documented = &operation["responses"][status.to_string()];
        assert!(
            documented.is_object(),
            "{method} {path} does not document {status}"
        );
        match documented["content"]["application/json"]["schema"].clone() {
            Value::Null => assert!(got.body.is_null(), "{method} {path} {status}: {}", got.body),
            schema => {
                let broken = violations(doc, &schema, &got.body, "body");
                assert!(
                    broken.is_empty(),
                    "{method} {path} {status}: {broken:?}\n{}",
                    got.body
                );
                let content_type = got.headers["content-type"].to_str().unwrap();
                assert!(
                    content_type.starts_with("application/json"),
                    "{content_type}"
                );
            }
        }
        for header in names(documented, "headers") {
            // The headers a document names for a status are on every answer of it.
            assert!(
                got.headers.contains_key(header.as_str()),
                "{method} {path} {status}: no {header}"
            );
        }
        self.seen.insert((
            operation["operationId"].as_str().unwrap().to_owned(),
            status,
        ));
        got.body
    }
}

/// Real answers, errors and backend failures included, match the schemas the documents give for
/// their status; and every status of the list below is reached.
#[tokio::test]
async fn answers_match_their_documented_schemas() {
    let (gw, backend, admin, reader) = answering_gateway().await;
    let foreign = gw.foreign_key.clone();
    let key = gw.key.clone();
    let ezgh = document(&gw, "ezgh").await;
    let basaltic = document(&gw, "basaltic").await;
    let unavailable = || BackendError::Unavailable("injected".into());

    // --- ezgh
    let mut check = Checker {
        gw: &gw,
        doc: ezgh,
        seen: BTreeSet::new(),
    };
    let receive =
        "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive";
    let queue_url = |queue: &str| {
        format!("/v1/organizations/{ORG}/projects/{PROJECT}/queues/{queue}/messages/receive")
    };
    gw.send("orders", "hello").await;
    let got = check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some(json!({ "maxMessages": 10 }).to_string()),
            StatusCode::OK,
        )
        .await;
    let handle = got["messages"][0]["receiptHandle"]
        .as_str()
        .expect("a message")
        .to_owned();
    for (body, auth, queue, status) in [
        (
            json!({ "maxMessages": 11 }),
            Some(key.as_str()),
            "orders",
            StatusCode::BAD_REQUEST,
        ),
        (json!({}), None, "orders", StatusCode::UNAUTHORIZED),
        (
            json!({}),
            Some(foreign.as_str()),
            "orders",
            StatusCode::FORBIDDEN,
        ),
        (
            json!({}),
            Some(key.as_str()),
            "nowhere",
            StatusCode::NOT_FOUND,
        ),
    ] {
        check
            .call(
                Method::POST,
                receive,
                &queue_url(queue),
                auth,
                Some(body.to_string()),
                status,
            )
            .await;
    }
    let large = format!("{{\"maxMessages\": 1, \"x\": \"{}\"}}", "x".repeat(70_000));
    check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some(large.clone()),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    backend.fail_next(unavailable());
    check
        .call(
            Method::POST,
            receive,
            &queue_url("orders"),
            Some(&key),
            Some("{}".into()),
            StatusCode::SERVICE_UNAVAILABLE,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/visibility",
            "/v1/receipts/visibility",
            None,
            Some(
                json!({ "entries": [{ "receiptHandle": handle, "visibilityTimeoutSeconds": 0 }] })
                    .to_string(),
            ),
            StatusCode::OK,
        )
        .await;
    check
        .call(Method::POST, "/v1/receipts/visibility", "/v1/receipts/visibility", None,
            Some(json!({ "entries": [{ "receiptHandle": handle, "visibilityTimeoutSeconds": 43_201 }] }).to_string()), StatusCode::BAD_REQUEST)
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": [handle] }).to_string()),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": [] }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(large),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    // One invalid handle a minute: the first is answered, the next two are one too many.
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": ["forged"] }).to_string()),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/receipts/ack",
            "/v1/receipts/ack",
            None,
            Some(json!({ "receiptHandles": ["forged", "again"] }).to_string()),
            StatusCode::TOO_MANY_REQUESTS,
        )
        .await;
    let ezgh_seen = std::mem::take(&mut check.seen);
    let expected_ezgh: BTreeSet<(String, u16)> = [
        ("ReceiveMessages", 200),
        ("ReceiveMessages", 400),
        ("ReceiveMessages", 401),
        ("ReceiveMessages", 403),
        ("ReceiveMessages", 404),
        ("ReceiveMessages", 413),
        ("ReceiveMessages", 503),
        ("ChangeMessageVisibility", 200),
        ("ChangeMessageVisibility", 400),
        ("AcknowledgeMessages", 200),
        ("AcknowledgeMessages", 400),
        ("AcknowledgeMessages", 413),
        ("AcknowledgeMessages", 429),
    ]
    .iter()
    .map(|(id, status)| ((*id).to_owned(), *status))
    .collect();
    assert_eq!(ezgh_seen, expected_ezgh);

    // --- basaltic
    check.doc = basaltic;
    let admin = Some(admin.as_str());
    let reader = Some(reader.as_str());
    let queues = "/v1/queues";
    let created = check
        .call(
            Method::POST,
            queues,
            queues,
            admin,
            Some(json!({ "name": "answers" }).to_string()),
            StatusCode::CREATED,
        )
        .await;
    let id = created["result"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        created["result"]["settings"]["max_message_bytes"], 262_144,
        "at most 256 KiB"
    );
    let fifo = check
        .call(Method::POST, queues, queues, admin, Some(json!({ "name": "answers-fifo", "type": "fifo", "settings": { "content_based_deduplication": true } }).to_string()), StatusCode::CREATED)
        .await;
    assert_eq!(
        fifo["result"]["settings"]["content_based_deduplication"],
        true
    );
    for (body, key, status) in [
        (json!({ "name": "answers" }), admin, StatusCode::CONFLICT),
        (
            json!({ "name": "no spaces" }),
            admin,
            StatusCode::BAD_REQUEST,
        ),
        (json!({ "name": "other" }), reader, StatusCode::FORBIDDEN),
        (json!({ "name": "other" }), None, StatusCode::UNAUTHORIZED),
        (
            json!({ "name": "other", "settings": { "dead_letter_queue": { "queue_id": "00000000-0000-4000-8000-000000000000" } } }),
            admin,
            StatusCode::NOT_FOUND,
        ),
    ] {
        check
            .call(
                Method::POST,
                queues,
                queues,
                key,
                Some(body.to_string()),
                status,
            )
            .await;
    }
    check
        .call(Method::GET, queues, queues, admin, None, StatusCode::OK)
        .await;
    check
        .call(
            Method::GET,
            queues,
            queues,
            None,
            None,
            StatusCode::UNAUTHORIZED,
        )
        .await;
    let queue = "/v1/queues/{queue_id}";
    let this = format!("/v1/queues/{id}");
    check
        .call(Method::GET, queue, &this, admin, None, StatusCode::OK)
        .await;
    check
        .call(
            Method::GET,
            queue,
            "/v1/queues/00000000-0000-4000-8000-000000000000",
            admin,
            None,
            StatusCode::NOT_FOUND,
        )
        .await;
    let dead_letter = json!({ "settings": { "content_based_deduplication": false, "dead_letter_queue": { "queue_id": fifo["result"]["id"] } } });
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            admin,
            Some(dead_letter.to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            admin,
            Some(
                json!({ "settings": { "content_based_deduplication": false, "delay_seconds": 0 } })
                    .to_string(),
            ),
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::PATCH,
            queue,
            &this,
            reader,
            Some(json!({ "settings": { "delay_seconds": 1 } }).to_string()),
            StatusCode::FORBIDDEN,
        )
        .await;

    let messages = "/v1/queues/{queue_id}/messages";
    let these = format!("{this}/messages");
    let message = json!({ "body": "{\"order_id\":\"A-1001\"}", "attributes": { "event": { "type": "String", "value": "order.paid" }, "n": { "type": "Number", "value": "1.5" }, "b": { "type": "Binary", "value": "AQID" } } });
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(message.to_string()),
            StatusCode::CREATED,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(json!({ "body": "" }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            reader,
            Some(message.to_string()),
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(format!("{{\"body\": \"{}\"}}", "x".repeat(3_300_000))),
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
    backend.fail_next(unavailable());
    check
        .call(
            Method::POST,
            messages,
            &these,
            admin,
            Some(message.to_string()),
            StatusCode::SERVICE_UNAVAILABLE,
        )
        .await;
    check
        .call(
            Method::GET,
            messages,
            &format!("{these}?max_messages=10"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::GET,
            messages,
            &format!("{these}?max_messages=11"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;

    let receive = "/v1/queues/{queue_id}/messages/receive";
    let got = check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            Some(json!({ "max_messages": 10 }).to_string()),
            StatusCode::OK,
        )
        .await;
    let first = got["messages"][0]["receipt_handle"]
        .as_str()
        .expect("a message")
        .to_owned();
    check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            Some(json!({ "max_messages": 0 }).to_string()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    backend.fail_next(BackendError::OverLimit);
    check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            None,
            StatusCode::TOO_MANY_REQUESTS,
        )
        .await;

    let visibility = "/v1/queues/{queue_id}/messages/visibility";
    let change = |handle: &str| {
        json!({ "receipt_handle": handle, "visibility_timeout_seconds": 0 }).to_string()
    };
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change(&first)),
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change("forged")),
            StatusCode::BAD_REQUEST,
        )
        .await;
    let again = check
        .call(
            Method::POST,
            receive,
            &format!("{these}/receive"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    let second = again["messages"][0]["receipt_handle"]
        .as_str()
        .expect("a message")
        .to_owned();
    check
        .call(
            Method::POST,
            visibility,
            &format!("{these}/visibility"),
            admin,
            Some(change(&first)),
            StatusCode::CONFLICT,
        )
        .await;
    let encoded =
        |handle: &str| form_urlencoded::byte_serialize(handle.as_bytes()).collect::<String>();
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle={}", encoded(&first)),
            admin,
            None,
            StatusCode::CONFLICT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle=forged"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::DELETE,
            messages,
            &format!("{these}?receipt_handle={}", encoded(&second)),
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;

    for (batch, entries) in [
        (
            "batch",
            json!([{ "id": "a", "body": "one" }, { "id": "b", "body": "two", "group_id": "not on a standard queue" }]),
        ),
        (
            "delete-batch",
            json!([{ "id": "a", "receipt_handle": "forged" }, { "id": "b", "receipt_handle": second }]),
        ),
        (
            "visibility-batch",
            json!([{ "id": "a", "receipt_handle": "forged", "visibility_timeout_seconds": 5 }, { "id": "b" }]),
        ),
    ] {
        let path = format!("/v1/queues/{{queue_id}}/messages/{batch}");
        let url = format!("{these}/{batch}");
        let results = check
            .call(
                Method::POST,
                &path,
                &url,
                admin,
                Some(json!({ "entries": entries }).to_string()),
                StatusCode::OK,
            )
            .await;
        assert!(
            !results["failed"].as_array().unwrap().is_empty(),
            "{batch}: {results}"
        );
        let twice = json!({ "entries": [{ "id": "a" }, { "id": "a" }] });
        check
            .call(
                Method::POST,
                &path,
                &url,
                admin,
                Some(twice.to_string()),
                StatusCode::BAD_REQUEST,
            )
            .await;
    }

    let metrics = "/v1/queues/{queue_id}/metrics";
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics"),
            admin,
            None,
            StatusCode::OK,
        )
        .await;
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics?since=yesterday"),
            admin,
            None,
            StatusCode::BAD_REQUEST,
        )
        .await;
    check
        .call(
            Method::GET,
            metrics,
            &format!("{this}/metrics"),
            reader,
            None,
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::POST,
            "/v1/queues/{queue_id}/purge",
            &format!("{this}/purge"),
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            reader,
            None,
            StatusCode::FORBIDDEN,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            admin,
            None,
            StatusCode::NO_CONTENT,
        )
        .await;
    check
        .call(
            Method::DELETE,
            queue,
            &this,
            admin,
            None,
            StatusCode::NOT_FOUND,
        )
        .await;

    let reached: BTreeSet<u16> = check.seen.iter().map(|(_, status)| *status).collect();
    assert_eq!(
        reached,
        BTreeSet::from([200, 201, 204, 400, 401, 403, 404, 409, 413, 429, 503])
    );
    gw.stop().await;
}
