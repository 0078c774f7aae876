//! The basaltic queue API's OpenAPI 3.1 document (served at `/openapi/basaltic.json`), made from
//! the handlers' `utoipa::path` annotations and the wire types, as basaltic's docs
//! (`../shared/seeds/004_…`) describe them: names, defaults, ranges, statuses and error bodies.

use super::error::{ErrorBody, ErrorDetail};
use super::wire;
use super::{
    batches, delivery, inspecting, key, messages, metrics, queues, redrive, subscriptions,
};
use crate::api::common::openapi::Finish;
use utoipa::OpenApi as _;

/// The derived document; [`document`] completes it.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "basaltic queues",
        description = "Queues addressed by UUID, and their messages: send, receive with a lease, \
            delete by the current receipt, change visibility, batches of each, inspect without a \
            lease (filtered, exported, moved), purge, pause, metrics. Every error answers `{\"error\": {\"code\", \"message\"}}`; \
            `503` carries `Retry-After` (seconds), `401` carries `WWW-Authenticate: Bearer`.",
    ),
    paths(
        queues::list,
        queues::create,
        queues::show,
        queues::change,
        queues::remove,
        messages::send,
        inspecting::inspect,
        inspecting::export,
        inspecting::move_messages,
        messages::delete,
        messages::receive,
        messages::visibility,
        messages::purge,
        batches::send_batch,
        batches::delete_batch,
        batches::visibility_batch,
        metrics::metrics,
        redrive::start,
        redrive::list_tasks,
        redrive::cancel,
        delivery::pause,
        delivery::resume,
        key::describe,
        subscriptions::subscriptions,
        subscriptions::create,
        subscriptions::change,
        subscriptions::remove,
        subscriptions::rotate,
        subscriptions::audit,
    ),
    components(schemas(
        wire::NewQueueRequest,
        wire::NewSubscriptionRequest,
        wire::SubscriptionChangeRequest,
        wire::RotationRequest,
        wire::PushBody,
        wire::SettingsChangeRequest,
        wire::SettingsRequest,
        wire::DeadLetterRequest,
        wire::QueueType,
        wire::SendRequest,
        wire::AttributeRequest,
        wire::AttributeJson,
        wire::ReceiveRequest,
        wire::VisibilityRequest,
        wire::SendBatchRequest,
        wire::SendBatchEntry,
        wire::DeleteBatchRequest,
        wire::DeleteBatchEntry,
        wire::VisibilityBatchRequest,
        wire::VisibilityBatchEntry,
        wire::QueueJson,
        wire::SettingsJson,
        wire::DeadLetterJson,
        wire::QueueResult,
        wire::QueueList,
        wire::SendResult,
        wire::SentMessage,
        wire::ReceivedMessage,
        wire::ReceivedMessages,
        wire::InspectedMessage,
        wire::InspectedMessages,
        wire::InspectedState,
        wire::ExportedMessage,
        wire::MoveRequest,
        wire::MoveEntry,
        wire::MoveResults,
        wire::MovedMessage,
        wire::MoveFailure,
        wire::MoveFailureCode,
        wire::QueueCounts,
        wire::Include,
        wire::KeyResult,
        wire::KeyJson,
        wire::RedriveRequest,
        wire::RedriveTaskJson,
        wire::RedriveTaskResult,
        wire::RedriveTasks,
        wire::RedriveState,
        wire::SubscriptionList,
        wire::SubscriptionJson,
        wire::AttemptJson,
        wire::BatchResults,
        wire::BatchSuccess,
        wire::BatchFailure,
        wire::BatchFailureCode,
        wire::MetricsJson,
        wire::SampleJson,
        ErrorBody,
        ErrorDetail,
    )),
    tags((name = "Queues", description = "Queues and their messages")),
)]
struct BasalticDocument;

/// The basaltic document: the derived one, with its security scheme and its answers' headers.
pub fn document() -> utoipa::openapi::OpenApi {
    Finish {
        bearer_key: Some(
            "A basaltic key (`sqs-gateway new-basaltic-key`) with permissions per queue",
        ),
        // basaltic's one 429 (too many messages in flight) names no time: only 503 says when.
        retry_after: &["503"],
    }
    .apply(BasalticDocument::openapi())
}

#[cfg(test)]
mod tests {
    use super::super::wire;
    use super::*;
    use serde_json::{Value, json};

    fn schema<'d>(document: &'d Value, name: &str) -> &'d Value {
        let schema = &document["components"]["schemas"][name];
        assert!(schema.is_object(), "no schema {name}");
        schema
    }

    /// A body parser: whether it takes a body.
    type Parse<'p> = &'p dyn Fn(&[u8]) -> bool;

    /// Whether `parse` takes `value` in `field` of `body`.
    fn takes(parse: impl Fn(&[u8]) -> bool, body: &Value, field: &str, value: i64) -> bool {
        let mut body = body.clone();
        body[field] = json!(value);
        parse(body.to_string().as_bytes())
    }

    /// The `where` expressions both reading routes document are the ones the core describes.
    #[test]
    fn the_documented_expressions_are_the_cores() {
        let document = serde_json::to_value(document()).expect("serializes");
        for path in [
            "/v1/queues/{queue_id}/messages",
            "/v1/queues/{queue_id}/messages/export",
        ] {
            let parameters = document["paths"][path]["get"]["parameters"]
                .as_array()
                .expect("parameters");
            let expression = parameters
                .iter()
                .find(|parameter| parameter["name"] == "where")
                .expect("a where parameter");
            assert_eq!(
                expression["schema"]["pattern"],
                crate::core::message_filter::EXPRESSION_PATTERN,
                "{path}"
            );
        }
    }

    /// Each documented integer range is the parser's: both bounds taken, one past either refused.
    #[test]
    fn documented_ranges_are_the_parsers() {
        let document = serde_json::to_value(document()).expect("serializes");
        let settings_change = |body: &[u8]| {
            let change = json!({ "settings": serde_json::from_slice::<Value>(body).unwrap() });
            wire::parse_settings_change(change.to_string().as_bytes()).is_ok()
        };
        let dead_letter = |body: &[u8]| {
            let mut target: Value = serde_json::from_slice(body).unwrap();
            target["queue_id"] = json!("0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13");
            let change = json!({ "settings": { "dead_letter_queue": target } });
            wire::parse_settings_change(change.to_string().as_bytes()).is_ok()
        };
        let cases: [(&str, Parse<'_>, Value, &[&str]); 5] = [
            (
                "ReceiveRequest",
                &|body| wire::parse_receive(body).is_ok(),
                json!({}),
                &[
                    "max_messages",
                    "wait_time_seconds",
                    "visibility_timeout_seconds",
                ],
            ),
            (
                "VisibilityRequest",
                &|body| wire::parse_visibility(body).is_ok(),
                json!({ "receipt_handle": "h" }),
                &["visibility_timeout_seconds"],
            ),
            (
                "SendRequest",
                &|body| wire::parse_send(body, false).is_ok(),
                json!({ "body": "b" }),
                &["delay_seconds"],
            ),
            (
                "SettingsRequest",
                &settings_change,
                json!({}),
                &[
                    "delay_seconds",
                    "receive_wait_time_seconds",
                    "visibility_timeout_seconds",
                    "max_message_bytes",
                    "retention_seconds",
                ],
            ),
            (
                "DeadLetterRequest",
                &dead_letter,
                json!({}),
                &["max_receive_count"],
            ),
        ];
        for (name, parse, base, fields) in cases {
            let properties = &schema(&document, name)["properties"];
            for field in fields {
                let low = properties[field]["minimum"].as_i64().expect("a minimum");
                let high = properties[field]["maximum"].as_i64().expect("a maximum");
                for (value, taken) in [
                    (low, true),
                    (high, true),
                    (low - 1, false),
                    (high + 1, false),
                ] {
                    assert_eq!(
                        takes(parse, &base, field, value),
                        taken,
                        "{name}.{field} = {value}"
                    );
                }
            }
        }
        let receive = schema(&document, "ReceiveRequest");
        assert_eq!(receive["properties"]["max_messages"]["default"], 1);
        assert_eq!(wire::parse_receive(b"").expect("defaults").max_messages, 1);
        let dead_letter_request = schema(&document, "DeadLetterRequest");
        assert_eq!(
            dead_letter_request["properties"]["max_receive_count"]["default"],
            5
        );
        let change = json!({ "settings": { "dead_letter_queue": { "queue_id": "0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13" } } });
        let parsed = wire::parse_settings_change(change.to_string().as_bytes()).expect("parses");
        assert_eq!(parsed.dead_letter_queue.map(|(_, count)| count), Some(5));
    }

    /// The queue types the document lists are the names the parser takes, and no others.
    #[test]
    fn documented_queue_types_are_the_parsers() {
        let document = serde_json::to_value(document()).expect("serializes");
        let types = schema(&document, "QueueType")["enum"].clone();
        let parses = |kind: &Value| {
            let body = json!({ "name": "orders", "type": kind });
            wire::parse_new_queue(body.to_string().as_bytes()).is_ok()
        };
        assert_eq!(types, json!(["standard", "fifo"]));
        for kind in types.as_array().expect("names") {
            assert!(parses(kind), "{kind}");
        }
        for kind in [json!("FIFO"), json!(null), json!("")] {
            assert!(!parses(&kind), "{kind}");
        }
    }

    /// A body and a String value hold the same characters, documented by one pattern.
    #[test]
    fn bodies_and_string_values_share_one_pattern() {
        let document = serde_json::to_value(document()).expect("serializes");
        let body = &schema(&document, "SendRequest")["properties"]["body"]["pattern"];
        let entry = &schema(&document, "SendBatchEntry")["properties"]["body"]["pattern"];
        let string =
            &schema(&document, "AttributeRequest")["oneOf"][0]["properties"]["value"]["pattern"];
        assert!(body.is_string());
        assert_eq!(body, entry);
        assert_eq!(body, string);
    }
}
