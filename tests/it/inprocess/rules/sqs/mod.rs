//! The SQS endpoint: JSON 1.0 errors carry `__type` and `x-amzn-query-error`, Query errors are
//! `<ErrorResponse>` XML

use super::*;

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

/// Actions: an unknown one is `UnknownOperationException`; AddPermission and RemovePermission are
/// `UnsupportedOperation` (Query code `AWS.SimpleQueueService.UnsupportedOperation`); a Query
/// request without an action is `MissingAction`; a request of neither protocol `InvalidAction`.
#[tokio::test(start_paused = true)]
async fn sqs_unknown_unsupported_and_missing_actions() {
    let service = InProcess::start().await;
    let unknown = service.sqs("FlyToTheMoon", json!({})).await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&unknown), "UnknownOperationException");
    for action in ["AddPermission", "RemovePermission"] {
        let unsupported = service.sqs(action, json!({})).await;
        assert_eq!(unsupported.status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(sqs_code(&unsupported), "UnsupportedOperation", "{action}");
        assert!(
            unsupported.body["message"]
                .as_str()
                .unwrap()
                .contains(action),
            "{}",
            unsupported.text
        );
        assert_eq!(
            unsupported.header("x-amzn-query-error").as_deref(),
            Some("AWS.SimpleQueueService.UnsupportedOperation;Sender"),
            "{action}"
        );
        let xml = query(&service, &format!("Action={action}&QueueUrl={ORDERS_URL}")).await;
        assert_eq!(
            xml_code(&xml),
            "AWS.SimpleQueueService.UnsupportedOperation",
            "{action}"
        );
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

/// Integer parameters hold to SQS's ranges with SQS's wording; a refused send stores nothing and
/// a refused receive leases nothing.
#[tokio::test(start_paused = true)]
async fn sqs_parameters_hold_to_their_ranges() {
    let service = InProcess::start().await;
    service.send("kept").await;
    for (action, body) in [
        ("ReceiveMessage", json!({ "MaxNumberOfMessages": 0 })),
        ("ReceiveMessage", json!({ "MaxNumberOfMessages": 11 })),
        ("ReceiveMessage", json!({ "WaitTimeSeconds": 21 })),
        ("ReceiveMessage", json!({ "WaitTimeSeconds": -1 })),
        ("ReceiveMessage", json!({ "VisibilityTimeout": 43_201 })),
        (
            "SendMessage",
            json!({ "MessageBody": "late", "DelaySeconds": 901 }),
        ),
        (
            "SendMessage",
            json!({ "MessageBody": "early", "DelaySeconds": -1 }),
        ),
    ] {
        let refused = service.sqs(action, body.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(sqs_code(&refused), "InvalidParameterValue", "{body}");
        // SQS words the long-poll bound apart from the others.
        let bound = if body.get("WaitTimeSeconds").is_some() {
            "Must be >= 0 and <= 20"
        } else {
            "Must be between"
        };
        assert!(
            refused.body["message"].as_str().unwrap().contains(bound),
            "{}",
            refused.text
        );
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight, stats.delayed), (1, 0, 0));
    let typed = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": "ten" }))
        .await;
    assert_eq!(sqs_code(&typed), "SerializationException");
    let missing = service.sqs("SendMessage", json!({})).await;
    assert_eq!(sqs_code(&missing), "MissingParameter");
    let no_url = service
        .sqs_call("SendMessage", json!({ "MessageBody": "x" }))
        .await;
    assert_eq!(sqs_code(&no_url), "MissingParameter");
    assert_eq!(depth(&service).await.visible, 1);
}

/// A JSON key given twice is `SerializationException`, not the last value silently winning: a
/// delete naming two handles deletes nothing; a send naming two bodies sends nothing.
#[tokio::test(start_paused = true)]
async fn sqs_a_json_key_given_twice_is_refused_and_acts_on_nothing() {
    let service = InProcess::start().await;
    service.send("kept").await;
    let got = service.sqs("ReceiveMessage", json!({})).await;
    let current = got.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let raw = |action: &str, body: String| {
        service.call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", format!("AmazonSQS.{action}"))
                .header("content-type", "application/x-amz-json-1.0")
                .body(Body::from(body))
                .unwrap(),
        )
    };
    let delete = raw(
        "DeleteMessage",
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","ReceiptHandle":"{current}","ReceiptHandle":"AQAAAH8x"}}"#
        ),
    )
    .await;
    assert_eq!(delete.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&delete), "SerializationException");
    assert!(!delete.text.contains(&current), "a handle was echoed");
    assert_eq!(depth(&service).await.in_flight, 1, "nothing was deleted");
    for body in [
        format!(r#"{{"QueueUrl":"{ORDERS_URL}","MessageBody":"a","MessageBody":"b"}}"#),
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","QueueUrl":"http://gateway.test/000000000000/nope","MessageBody":"a"}}"#
        ),
        format!(
            r#"{{"QueueUrl":"{ORDERS_URL}","MessageBody":"a","MessageAttributes":{{"k":{{"DataType":"String","StringValue":"1"}},"k":{{"DataType":"String","StringValue":"2"}}}}}}"#
        ),
    ] {
        let send = raw("SendMessage", body.clone()).await;
        assert_eq!(sqs_code(&send), "SerializationException", "{body}");
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 1), "nothing was sent");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// In the Query protocol a parameter given twice (in the body, or in the URL and the body), an
/// attribute named twice, and an index that is not a number are `InvalidParameterValue`; nothing
/// is sent.
#[tokio::test(start_paused = true)]
async fn sqs_query_parameters_named_twice_or_badly_indexed_are_refused() {
    let service = InProcess::start().await;
    for form in [
        format!("Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a&MessageBody=b"),
        format!(
            "Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a\
             &MessageAttribute.1.Name=k&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=1\
             &MessageAttribute.2.Name=k&MessageAttribute.2.Value.DataType=String&MessageAttribute.2.Value.StringValue=2"
        ),
        format!(
            "Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a\
             &MessageAttribute.-1.Name=k&MessageAttribute.-1.Value.DataType=String&MessageAttribute.-1.Value.StringValue=1"
        ),
        format!("Action=SendMessage&QueueUrl={ORDERS_URL}&MessageBody=a&DelaySeconds=soon"),
    ] {
        let refused = query(&service, &form).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{form}");
        assert_eq!(xml_code(&refused), "InvalidParameterValue", "{form}");
    }
    let in_url_and_body = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri(format!("/?Action=SendMessage&QueueUrl={ORDERS_URL}"))
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from("Action=SendMessage&MessageBody=a"))
                .unwrap(),
        )
        .await;
    assert_eq!(xml_code(&in_url_and_body), "InvalidParameterValue");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
}

/// Batches take 1 to 10 entries with distinct ids of 1 to 80 letters, digits, `-` and `_`; a
/// batch refused as a whole sends nothing, and its Query codes carry SQS's prefix.
#[tokio::test(start_paused = true)]
async fn sqs_batches_are_checked_as_sqs_checks_them() {
    let service = InProcess::start().await;
    let entry = |id: &str| json!({ "Id": id, "MessageBody": "b" });
    let eleven: Vec<Value> = (0..11).map(|n| entry(&format!("e{n}"))).collect();
    for (entries, code) in [
        (json!([]), "EmptyBatchRequest"),
        (json!(eleven), "TooManyEntriesInBatchRequest"),
        (json!([entry("a"), entry("a")]), "BatchEntryIdsNotDistinct"),
        (json!([entry("a b")]), "InvalidBatchEntryId"),
        (json!([entry(&"x".repeat(81))]), "InvalidBatchEntryId"),
        (json!([entry("")]), "InvalidBatchEntryId"),
        (json!([{ "MessageBody": "no id" }]), "MissingParameter"),
    ] {
        let refused = service
            .sqs("SendMessageBatch", json!({ "Entries": entries }))
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{code}");
        assert_eq!(sqs_code(&refused), code);
        let expected = if code == "MissingParameter" {
            format!("{code};Sender")
        } else {
            format!("AWS.SimpleQueueService.{code};Sender")
        };
        assert_eq!(refused.header("x-amzn-query-error"), Some(expected));
    }
    let xml = query(
        &service,
        &format!(
            "Action=DeleteMessageBatch&QueueUrl={ORDERS_URL}\
             &DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=x\
             &DeleteMessageBatchRequestEntry.2.Id=a&DeleteMessageBatchRequestEntry.2.ReceiptHandle=y"
        ),
    )
    .await;
    assert_eq!(
        xml_code(&xml),
        "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
    );
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
}

/// A batch answers per entry: a refused entry is `Failed` with its code and `SenderFault`, the
/// others are sent.
#[tokio::test(start_paused = true)]
async fn sqs_a_send_batch_answers_each_entry() {
    let service = InProcess::start().await;
    let answer = service
        .sqs(
            "SendMessageBatch",
            json!({ "Entries": [
                { "Id": "good", "MessageBody": "fine" },
                { "Id": "late", "MessageBody": "x", "DelaySeconds": 901 },
                { "Id": "reserved", "MessageBody": "x", "MessageAttributes": {
                    "AWS.trace": { "DataType": "String", "StringValue": "1" } } },
                { "Id": "empty", "MessageBody": "" },
            ] }),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text);
    let successful = answer.body["Successful"].as_array().unwrap();
    assert_eq!(successful.len(), 1, "{}", answer.text);
    assert_eq!(successful[0]["Id"], "good");
    assert!(successful[0]["MessageId"].is_string());
    assert_eq!(successful[0]["MD5OfMessageBody"], md5_of("fine").as_str());
    let failed = answer.body["Failed"].as_array().unwrap();
    let code_of = |id: &str| {
        let entry = failed.iter().find(|entry| entry["Id"] == id).unwrap();
        assert_eq!(entry["SenderFault"], true, "{entry}");
        entry["Code"].as_str().unwrap().to_owned()
    };
    assert_eq!(code_of("late"), "InvalidParameterValue");
    assert_eq!(code_of("reserved"), "InvalidParameterValue");
    assert_eq!(code_of("empty"), "MissingParameter");
    assert_eq!(depth(&service).await.visible, 1, "only `good` was sent");
}

pub(super) fn md5_of(text: &str) -> String {
    use md5::Digest as _;
    hex::encode(md5::Md5::digest(text.as_bytes()))
}

/// A SendMessageBatch over 1 MiB of message data in all is refused whole with
/// `BatchRequestTooLong`, though each of its messages is within the queue's maximum.
#[tokio::test(start_paused = true)]
async fn sqs_a_batch_over_one_mib_is_refused_whole() {
    let service = InProcess::start().await;
    let body = "x".repeat(110 * 1024);
    let entries: Vec<Value> = (0..10)
        .map(|n| json!({ "Id": format!("e{n}"), "MessageBody": body }))
        .collect();
    let refused = service
        .sqs("SendMessageBatch", json!({ "Entries": entries }))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&refused), "BatchRequestTooLong");
    assert_eq!(depth(&service).await.visible, 0, "no entry was sent");
    let single = service
        .sqs("SendMessage", json!({ "MessageBody": body }))
        .await;
    assert_eq!(single.status, StatusCode::OK, "{}", single.text);
}

/// Message attributes on the SQS endpoint: at most 10, names in SQS's syntax and not reserved
/// (`AWS.`, `Amazon.`, `sqsgw.` in any case), known types, values that fit them; bodies in SQS's
/// character set. Each refusal sends nothing.
#[tokio::test(start_paused = true)]
async fn sqs_message_attributes_and_bodies_follow_sqs_rules() {
    let service = InProcess::start().await;
    let text = |value: &str| json!({ "DataType": "String", "StringValue": value });
    let eleven: serde_json::Map<String, Value> =
        (0..11).map(|n| (format!("a{n}"), text("v"))).collect();
    for attributes in [
        Value::Object(eleven),
        json!({ "AWS.trace": text("1") }),
        json!({ "amazon.trace": text("1") }),
        json!({ "sqsgw.attributes": text("1") }),
        json!({ "has space": text("1") }),
        json!({ ".leading": text("1") }),
        json!({ "n": { "DataType": "Number", "StringValue": "twelve" } }),
        json!({ "n": { "DataType": "Number", "StringValue": "NaN" } }),
        json!({ "b": { "DataType": "Binary", "BinaryValue": "not base64!" } }),
        json!({ "t": { "DataType": "Strange", "StringValue": "1" } }),
        json!({ "t": { "DataType": "String." , "StringValue": "1" } }),
        json!({ "s": { "DataType": "String" } }),
        json!({ "s": text("") }),
        json!({ "s": text("bell\u{7}") }),
    ] {
        let refused = service
            .sqs(
                "SendMessage",
                json!({ "MessageBody": "x", "MessageAttributes": attributes }),
            )
            .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{attributes}");
        assert_eq!(sqs_code(&refused), "InvalidParameterValue", "{attributes}");
    }
    let body = service
        .sqs("SendMessage", json!({ "MessageBody": "nul \u{0} inside" }))
        .await;
    assert_eq!(sqs_code(&body), "InvalidMessageContents");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
    let fine = service
        .sqs(
            "SendMessage",
            json!({ "MessageBody": "ok", "MessageAttributes": {
                "n": { "DataType": "Number.int", "StringValue": "-1.5e3" },
                "b": { "DataType": "Binary", "BinaryValue": "AAE=" },
                "order.id": text("A-1"),
            } }),
        )
        .await;
    assert_eq!(fine.status, StatusCode::OK, "{}", fine.text);
    assert!(fine.body["MD5OfMessageAttributes"].is_string());
}

/// Outdated handles, as on SQS: DeleteMessage succeeds and deletes nothing, ChangeMessageVisibility
/// changes the current delivery's visibility (in both protocols); the current handle still acts.
#[tokio::test(start_paused = true)]
async fn sqs_an_outdated_handle_deletes_nothing_and_changes_the_current_visibility() {
    let service = InProcess::start().await;
    service.send("twice received").await;
    let first = service
        .sqs("ReceiveMessage", json!({ "VisibilityTimeout": 0 }))
        .await;
    let old = first.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = service.sqs("ReceiveMessage", json!({})).await;
    let current = second.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let change = service
        .sqs(
            "ChangeMessageVisibility",
            json!({ "ReceiptHandle": old, "VisibilityTimeout": 0 }),
        )
        .await;
    assert_eq!(change.status, StatusCode::OK, "{}", change.text);
    assert_eq!(depth(&service).await.in_flight, 0, "released");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": old }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(depth(&service).await.visible, 1, "nothing was deleted");
    let xml = query(
        &service,
        &format!(
            "Action=ChangeMessageVisibility&QueueUrl={ORDERS_URL}&VisibilityTimeout=5&ReceiptHandle={}",
            form_urlencoded::byte_serialize(old.as_bytes()).collect::<String>()
        ),
    )
    .await;
    assert!(
        xml.text.contains("<ChangeMessageVisibilityResponse"),
        "{}",
        xml.text
    );
    assert_eq!(depth(&service).await.in_flight, 1, "hidden again");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// An altered handle, or one of another queue than the request's `QueueUrl`, is
/// `ReceiptHandleIsInvalid`, and nothing changes anywhere.
#[tokio::test(start_paused = true)]
async fn sqs_altered_handles_and_handles_of_another_queue_are_invalid() {
    let service = InProcess::start().await;
    let created = service
        .sqs_call("CreateQueue", json!({ "QueueName": "billing" }))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let billing = created.body["QueueUrl"].as_str().unwrap().to_owned();
    service.send("orders only").await;
    let got = service.sqs("ReceiveMessage", json!({})).await;
    let current = got.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    for (action, body) in [
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current) }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": "AQAAAH8forged" }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": billing, "ReceiptHandle": current }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": billing, "ReceiptHandle": current, "VisibilityTimeout": 0 }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current), "VisibilityTimeout": 0 }),
        ),
    ] {
        let refused = service.sqs_call(action, body.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(sqs_code(&refused), "ReceiptHandleIsInvalid", "{body}");
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 1), "nothing changed");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// DeleteMessageBatch and ChangeMessageVisibilityBatch answer per entry: an invalid handle
/// fails, an outdated one deletes nothing (successful) and changes the current delivery's
/// visibility (as on SQS), an entry without a handle or out of range fails on its own.
#[tokio::test(start_paused = true)]
async fn sqs_handle_batches_answer_each_entry() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let first = service
        .sqs(
            "ReceiveMessage",
            json!({ "MaxNumberOfMessages": 2, "VisibilityTimeout": 0 }),
        )
        .await;
    let old: Vec<String> = first.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    let second = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 2 }))
        .await;
    let current: Vec<String> = second.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, id: &str| {
        let failed = reply.body["Failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["Id"] == id);
        let entry = entry.unwrap_or_else(|| panic!("{id} did not fail: {}", reply.text));
        assert_eq!(entry["SenderFault"], true, "{entry}");
        entry["Code"].as_str().unwrap().to_owned()
    };
    let successful = |reply: &Reply| -> Vec<String> {
        let listed = reply.body["Successful"].as_array().unwrap().iter();
        listed
            .map(|entry| entry["Id"].as_str().unwrap().to_owned())
            .collect()
    };
    let visibility = service
        .sqs(
            "ChangeMessageVisibilityBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[0], "VisibilityTimeout": 0 },
                { "Id": "long", "ReceiptHandle": current[0], "VisibilityTimeout": 43_201 },
                { "Id": "bare", "ReceiptHandle": current[0] },
                { "Id": "altered", "ReceiptHandle": altered(&current[0]), "VisibilityTimeout": 0 },
            ] }),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert_eq!(successful(&visibility), ["old"], "{}", visibility.text);
    assert_eq!(failed_code(&visibility, "long"), "InvalidParameterValue");
    assert_eq!(failed_code(&visibility, "bare"), "MissingParameter");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "ReceiptHandleIsInvalid"
    );
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "the old handle released its message's current delivery, nothing else"
    );

    let delete = service
        .sqs(
            "DeleteMessageBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[1] },
                { "Id": "altered", "ReceiptHandle": altered(&current[1]) },
                { "Id": "none" },
                { "Id": "current", "ReceiptHandle": current[0] },
            ] }),
        )
        .await;
    assert_eq!(delete.status, StatusCode::OK, "{}", delete.text);
    let mut done = successful(&delete);
    done.sort();
    assert_eq!(done, ["current", "old"]);
    assert_eq!(failed_code(&delete, "altered"), "ReceiptHandleIsInvalid");
    assert_eq!(failed_code(&delete, "none"), "MissingParameter");
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "only the current handle deleted"
    );
}

/// CreateQueue as SQS: `FifoQueue=true` needs a `.fifo` name; an existing name with other
/// attributes is `QueueNameExists` (`QueueAlreadyExists` in Query) and changes nothing; tags under
/// the gateway's `sqsgw.` prefix are refused.
#[tokio::test(start_paused = true)]
async fn sqs_create_queue_follows_sqs_rules() {
    let service = InProcess::start().await;
    let fifo_attribute = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "plain", "Attributes": { "FifoQueue": "true" } }),
        )
        .await;
    assert_eq!(sqs_code(&fifo_attribute), "InvalidParameterValue");
    let exists = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "orders", "Attributes": { "VisibilityTimeout": "45" } }),
        )
        .await;
    assert_eq!(exists.status, StatusCode::BAD_REQUEST);
    assert_eq!(sqs_code(&exists), "QueueNameExists");
    assert_eq!(
        exists.header("x-amzn-query-error").as_deref(),
        Some("QueueAlreadyExists;Sender")
    );
    let xml = query(
        &service,
        "Action=CreateQueue&QueueName=orders&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=45",
    )
    .await;
    assert_eq!(xml_code(&xml), "QueueAlreadyExists");
    let attributes = service
        .sqs(
            "GetQueueAttributes",
            json!({ "AttributeNames": ["VisibilityTimeout"] }),
        )
        .await;
    assert_eq!(attributes.body["Attributes"]["VisibilityTimeout"], "30");
    let tagged = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "tagged", "tags": { "sqsgw.alias.x": "y" } }),
        )
        .await;
    assert_eq!(sqs_code(&tagged), "InvalidParameterValue");
    let unknown = service
        .sqs_call(
            "CreateQueue",
            json!({ "QueueName": "odd", "Attributes": { "Colour": "blue" } }),
        )
        .await;
    assert_eq!(sqs_code(&unknown), "InvalidAttributeName");
    let listed = service.sqs_call("ListQueues", json!({})).await;
    assert_eq!(
        listed.body["QueueUrls"].as_array().unwrap().len(),
        1,
        "no refused create made a queue: {}",
        listed.text
    );
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
