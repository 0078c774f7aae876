//! The OpenAPI documents

use super::*;

/// Each REST dialect's OpenAPI 3.1 document is served without credentials, as JSON, naming its
/// routes; other methods and names under `/openapi/` answer in ezgh's shape.
#[tokio::test(start_paused = true)]
async fn openapi_documents_are_served_without_credentials() {
    let service = InProcess::start().await;
    for (dialect, path) in [
        ("ezgh", "/v1/receipts/ack"),
        ("sombus", "/v1/oauth/token"),
        ("basaltic", "/v1/queues"),
    ] {
        let document = service
            .call(
                Request::builder()
                    .uri(format!("/openapi/{dialect}.json"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(document.status, StatusCode::OK, "{dialect}");
        assert_eq!(
            document.header("content-type").as_deref(),
            Some("application/json")
        );
        assert_eq!(document.body["openapi"], "3.1.0", "{dialect}");
        assert!(
            document.body["paths"].get(path).is_some(),
            "{dialect} names {path}"
        );
    }
    let posted = service
        .call(request(Method::POST, "/openapi/ezgh.json", None, "{}"))
        .await;
    assert_eq!(
        ezgh_error(&posted),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
    let missing = service
        .call(request(
            Method::GET,
            "/openapi/sqs.json",
            None,
            Body::empty(),
        ))
        .await;
    assert_eq!(ezgh_error(&missing), (StatusCode::NOT_FOUND, "not_found"));
}

/// A documented field and the bounds it is held to: (name, minimum, maximum).
type Bounded = (&'static str, u32, u32);

/// Every bound of an SQS limit a document prints is the core's (`core::sqs_limits`): the one the
/// parsers check. Each field is looked for wherever the document names it (a schema's property
/// or a parameter), and must be found at least once.
#[tokio::test(start_paused = true)]
async fn documented_sqs_limits_are_the_cores() {
    use sqs_gateway::core::sqs_limits as limits;
    let service = InProcess::start().await;
    let expected: [(&str, &[Bounded]); 3] = [
        (
            "ezgh",
            &[
                ("maxMessages", 1, limits::MAX_BATCH),
                ("waitSeconds", 0, limits::MAX_WAIT_SECONDS),
                (
                    "visibilityTimeoutSeconds",
                    0,
                    limits::MAX_VISIBILITY_SECONDS,
                ),
            ],
        ),
        (
            "basaltic",
            &[
                ("max_messages", 1, limits::MAX_BATCH),
                ("wait_time_seconds", 0, limits::MAX_WAIT_SECONDS),
                ("receive_wait_time_seconds", 0, limits::MAX_WAIT_SECONDS),
                (
                    "visibility_timeout_seconds",
                    0,
                    limits::MAX_VISIBILITY_SECONDS,
                ),
                ("delay_seconds", 0, limits::MAX_DELAY_SECONDS),
                (
                    "retention_seconds",
                    limits::MIN_RETENTION_SECONDS,
                    limits::MAX_RETENTION_SECONDS,
                ),
            ],
        ),
        (
            "sombus",
            &[
                ("max", 1, limits::MAX_BATCH),
                ("wait", 0, limits::MAX_WAIT_SECONDS),
                ("visibility", 0, limits::MAX_VISIBILITY_SECONDS),
                ("delay_seconds", 0, limits::MAX_VISIBILITY_SECONDS),
            ],
        ),
    ];
    for (dialect, fields) in expected {
        let document = service
            .call(
                Request::builder()
                    .uri(format!("/openapi/{dialect}.json"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(document.status, StatusCode::OK, "{dialect}");
        for (field, low, high) in fields {
            let mut found = Vec::new();
            bounds_of(&document.body, field, &mut found);
            assert!(!found.is_empty(), "{dialect} documents {field}");
            for (minimum, maximum) in found {
                assert_eq!(maximum, Some(u64::from(*high)), "{dialect}.{field} maximum");
                if let Some(minimum) = minimum {
                    assert_eq!(minimum, u64::from(*low), "{dialect}.{field} minimum");
                }
            }
        }
    }
}

/// The (minimum, maximum) of every schema the document gives `field`, as a property or as a
/// parameter, where it prints a maximum.
fn bounds_of(value: &Value, field: &str, found: &mut Vec<(Option<u64>, Option<u64>)>) {
    let bounds = |schema: &Value| {
        let maximum = schema["maximum"].as_u64();
        maximum.map(|maximum| (schema["minimum"].as_u64(), Some(maximum)))
    };
    match value {
        Value::Object(object) => {
            if let Some(Value::Object(properties)) = object.get("properties")
                && let Some(schema) = properties.get(field)
                && let Some(bound) = bounds(schema)
            {
                found.push(bound);
            }
            if object.get("name").and_then(Value::as_str) == Some(field)
                && let Some(bound) = object.get("schema").and_then(bounds)
            {
                found.push(bound);
            }
            for child in object.values() {
                bounds_of(child, field, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                bounds_of(item, field, found);
            }
        }
        _ => {}
    }
}
