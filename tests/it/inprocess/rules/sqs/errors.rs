//! SQS errors in the protocol of the request: JSON 1.0 with `__type` or Query's `<ErrorResponse>`,
//! for a missing queue, unknown, unsupported and missing actions, a target of another service, a
//! body over the limit, and paths and methods the endpoint does not serve.

use super::*;

/// One refusal, in the protocol each request used: JSON with `__type`, `message`, the
/// `x-amzn-query-error` header and the JSON content type; Query as `<ErrorResponse>` with its
/// `<Type>`, `<Code>`, `<Message>` and a request id, as `text/xml`.
#[tokio::test(start_paused = true)]
async fn sqs_errors_come_in_the_protocol_of_the_request() {
    let service = InProcess::start().await;
    let json_answer = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 11 }))
        .await;
    assert_eq!(json_answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        json_answer.body["__type"],
        "com.amazonaws.sqs#InvalidParameterValueException"
    );
    assert!(
        json_answer.body["message"]
            .as_str()
            .unwrap()
            .contains("MaxNumberOfMessages"),
        "{}",
        json_answer.text
    );
    assert_eq!(
        json_answer.header("x-amzn-query-error").as_deref(),
        Some("InvalidParameterValue;Sender")
    );
    assert_eq!(
        json_answer.header("content-type").as_deref(),
        Some("application/x-amz-json-1.0")
    );
    assert!(json_answer.header("x-amzn-requestid").is_some());

    let xml = query(
        &service,
        &format!(
            "Action=ReceiveMessage&Version=2012-11-05&QueueUrl={ORDERS_URL}&MaxNumberOfMessages=11"
        ),
    )
    .await;
    assert_eq!(xml.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&xml), "InvalidParameterValue");
    assert!(xml.text.contains("<Type>Sender</Type>"), "{}", xml.text);
    assert!(xml.text.contains("<Message>"), "{}", xml.text);
    assert!(xml.text.contains("<RequestId>"), "{}", xml.text);
    assert!(
        xml.text
            .contains("xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\""),
        "{}",
        xml.text
    );
    assert_eq!(xml.header("content-type").as_deref(), Some("text/xml"));
}

/// A queue that does not exist: `QueueDoesNotExist` in JSON, SQS's Query code
/// `AWS.SimpleQueueService.NonExistentQueue` in XML and in `x-amzn-query-error`.
#[tokio::test(start_paused = true)]
async fn sqs_a_missing_queue_has_its_json_and_query_codes() {
    let service = InProcess::start().await;
    let json_answer = service
        .sqs_call("GetQueueUrl", json!({ "QueueName": "nope" }))
        .await;
    assert_eq!(json_answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&json_answer), "QueueDoesNotExist");
    assert_eq!(
        json_answer.header("x-amzn-query-error").as_deref(),
        Some("AWS.SimpleQueueService.NonExistentQueue;Sender")
    );
    let receive = service
        .sqs_call(
            "ReceiveMessage",
            json!({ "QueueUrl": "http://gateway.test/000000000000/nope" }),
        )
        .await;
    assert_eq!(sqs_code(&receive), "QueueDoesNotExist");
    let xml = query(&service, "Action=GetQueueUrl&QueueName=nope").await;
    assert_eq!(xml.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&xml), "AWS.SimpleQueueService.NonExistentQueue");
}

/// Actions: an unknown one is `UnknownOperationException`; AddPermission and RemovePermission
/// name what they lack (`MissingParameter`); a Query request without an action is
/// `MissingAction`; a request of neither protocol `InvalidAction`.
#[tokio::test(start_paused = true)]
async fn sqs_unknown_incomplete_and_missing_actions() {
    let service = InProcess::start().await;
    let unknown = service.sqs("FlyToTheMoon", json!({})).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&unknown), "UnknownOperationException");
    // AddPermission and RemovePermission are served: what they lack is named, in both protocols.
    for action in ["AddPermission", "RemovePermission"] {
        let lacking = service.sqs(action, json!({ "QueueUrl": ORDERS_URL })).await;
        assert_eq!(lacking.status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(sqs_code(&lacking), "MissingParameter", "{action}");
        let xml = query(&service, &format!("Action={action}&QueueUrl={ORDERS_URL}")).await;
        assert_eq!(xml_code(&xml), "MissingParameter", "{action}");
    }
    let missing = query(&service, &format!("QueueUrl={ORDERS_URL}")).await;
    assert_eq!(xml_code(&missing), "MissingAction");
    let neither = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("content-type", "text/plain")
                .body(Body::from("hello"))
                .unwrap(),
        )
        .await;
    assert_eq!(neither.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&neither), "InvalidAction");
}

/// A JSON 1.0 request whose `X-Amz-Target` names another service is refused in JSON, as every
/// other answer to a request with that header is (the edge's 404 and 405 too), not in XML.
#[tokio::test(start_paused = true)]
async fn sqs_a_target_of_another_service_is_refused_in_json() {
    let service = InProcess::start().await;
    let foreign = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("content-type", "application/x-amz-json-1.0")
                .header("x-amz-target", "DynamoDB_20120810.ListTables")
                .body(Body::from("{}"))
                .unwrap(),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::BAD_REQUEST, "{}", foreign.text);
    assert_eq!(
        foreign.header("content-type").as_deref(),
        Some("application/x-amz-json-1.0"),
        "{}",
        foreign.text
    );
    assert_eq!(sqs_code(&foreign), "InvalidAction", "{}", foreign.text);
}

/// A body declared over 3 MiB + 64 KiB is 413 `RequestEntityTooLarge`, refused unread.
#[tokio::test(start_paused = true)]
async fn sqs_bodies_over_the_limit_are_refused_unread() {
    let service = InProcess::start().await;
    let tripwire = Tripwire::default();
    let answer = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", "AmazonSQS.SendMessage")
                .header("content-type", "application/x-amz-json-1.0")
                .body(tripwire.declaring(Some(3 * 1024 * 1024 + 64 * 1024 + 1)))
                .unwrap(),
        )
        .await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(sqs_code(&answer), "RequestEntityTooLarge");
    assert!(!tripwire.was_read());
}

/// Paths and methods the endpoint does not serve: 404 `InvalidAddress` and 405 `InvalidAction`,
/// in JSON for a request naming a JSON action, in XML otherwise.
#[tokio::test(start_paused = true)]
async fn sqs_unknown_paths_and_wrong_methods_answer_in_the_requests_protocol() {
    let service = InProcess::start().await;
    for (method, path, status, code) in [
        (
            Method::PUT,
            "/",
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidAction",
        ),
        (
            Method::DELETE,
            "/000000000000/orders",
            StatusCode::METHOD_NOT_ALLOWED,
            "InvalidAction",
        ),
        (
            Method::POST,
            "/000000000000/orders/deeper",
            StatusCode::NOT_FOUND,
            "InvalidAddress",
        ),
    ] {
        let json_answer = service
            .call(
                Request::builder()
                    .method(method.clone())
                    .uri(path)
                    .header("x-amz-target", "AmazonSQS.ListQueues")
                    .header("content-type", "application/x-amz-json-1.0")
                    .body(Body::from("{}"))
                    .unwrap(),
            )
            .await;
        assert_eq!(json_answer.status, status, "{method} {path}");
        assert_eq!(sqs_code(&json_answer), code, "{method} {path}");
        let xml = service
            .call(
                Request::builder()
                    .method(method.clone())
                    .uri(path)
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(Body::from("Action=ListQueues"))
                    .unwrap(),
            )
            .await;
        assert_eq!(xml.status, status, "{method} {path}");
        assert_eq!(xml_code(&xml), code, "{method} {path}");
    }
}
