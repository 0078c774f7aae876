//! The OpenAPI documents

use super::*;

/// Each REST dialect's OpenAPI 3.1 document is served without credentials, as JSON, naming its
/// routes; other methods and names under `/openapi/` answer in ezgh's shape.
#[tokio::test(start_paused = true)]
async fn openapi_documents_are_served_without_credentials() {
    let mut service = InProcess::start().await;
    let headers = LastHeaders::watch(&mut service);
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
            headers.get("content-type").as_deref(),
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
