//! The SQS endpoint: JSON 1.0 errors carry `__type` and `x-amzn-query-error`, Query errors are
//! `<ErrorResponse>` XML
//!
//! The SQS endpoint's rules that need no socket, one topic a file; here the Query request and the
//! error codes of either protocol that they share.

use super::*;

mod errors;
mod fidelity;
mod handles;
mod permissions;
mod requests;
mod sigv4;

/// A Query-protocol request (form-encoded, unsigned: the test service allows it).
pub(super) async fn query(service: &InProcess, form: &str) -> Reply {
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

/// The code of a JSON 1.0 error (`__type` without its namespace), by the name the Query protocol
/// gives it: SQS's JSON names two shapes apart (see `json_types_are_sqs_shape_names`).
pub(super) fn sqs_code(reply: &Reply) -> &str {
    let code = reply.body["__type"].as_str().unwrap_or_default();
    match code.strip_prefix("com.amazonaws.sqs#").unwrap_or(code) {
        "InvalidParameterValueException" => "InvalidParameterValue",
        "MissingRequiredParameterException" => "MissingParameter",
        other => other,
    }
}

/// The `<Code>` of a Query error.
pub(super) fn xml_code(reply: &Reply) -> &str {
    let text = &reply.text;
    assert!(text.contains("<ErrorResponse"), "{text}");
    let start = text.find("<Code>").map_or(0, |at| at + "<Code>".len());
    let end = text.find("</Code>").unwrap_or(start);
    &text[start..end]
}

pub(super) const ORDERS_URL: &str = "http://gateway.test/000000000000/orders";
