//! The OpenAPI documents a running gateway serves, as the tests read them: fetched and checked to
//! be OpenAPI 3.1, their operations, schemas and ranges, what of a value breaks a schema, and a
//! request whose answer is checked against its document. Shared by `http/ezgh/openapi.rs`,
//! `http/basaltic/openapi.rs` and `http/service/openapi*.rs`.

use crate::harness::{TestGateway, answer};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::BTreeSet;

/// GETs a document: public (no credential), JSON, OpenAPI 3.1.
pub async fn document(gw: &TestGateway, dialect: &str) -> Value {
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
pub fn operation<'d>(document: &'d Value, path: &str, method: &str) -> &'d Value {
    let operation = &document["paths"][path][method];
    assert!(operation.is_object(), "{method} {path} is not documented");
    operation
}

/// A `$ref` resolved (once; the documents' references do not chain).
pub fn resolved<'d>(document: &'d Value, schema: &'d Value) -> &'d Value {
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
pub fn schema<'d>(document: &'d Value, name: &str) -> &'d Value {
    let schema = &document["components"]["schemas"][name];
    assert!(schema.is_object(), "no schema {name}");
    schema
}

/// The JSON request body schema of an operation, resolved.
pub fn request_schema<'d>(document: &'d Value, operation: &'d Value) -> &'d Value {
    resolved(
        document,
        &operation["requestBody"]["content"]["application/json"]["schema"],
    )
}

pub fn statuses(operation: &Value) -> BTreeSet<u16> {
    operation["responses"]
        .as_object()
        .expect("responses")
        .keys()
        .map(|status| status.parse().expect("a status"))
        .collect()
}

/// `(minimum, maximum)` of a property.
pub fn range(object: &Value, property: &str) -> (Value, Value) {
    let schema = &object["properties"][property];
    assert!(schema.is_object(), "no property {property}");
    (schema["minimum"].clone(), schema["maximum"].clone())
}

pub fn names(object: &Value, key: &str) -> BTreeSet<String> {
    match &object[key] {
        Value::Object(map) => map.keys().cloned().collect(),
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().expect("a name").to_owned())
            .collect(),
        _ => BTreeSet::new(),
    }
}

pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|item| (*item).to_owned()).collect()
}

/// What of `value` breaks `schema` (the JSON Schema the documents use: `$ref`, `type`, `enum`,
/// `required`, `properties`, `additionalProperties`, `items`, `oneOf`, `anyOf`, numeric and
/// length bounds; `format` and `pattern` are not checked).
pub fn violations(document: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
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

/// One request, and its answer checked against the document: its status is one the operation
/// documents, and its body (or none) and headers are what the document says for that status.
pub struct Checker<'g> {
    pub gw: &'g TestGateway,
    pub doc: Value,
    /// (operation id, status) answered.
    pub seen: BTreeSet<(String, u16)>,
}

impl Checker<'_> {
    pub async fn call(
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
