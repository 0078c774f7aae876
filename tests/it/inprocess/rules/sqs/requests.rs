//! What an SQS request may hold, as SQS checks it: parameters within their ranges, no key or
//! parameter given twice, batches of 1 to 10 distinct entries answered each and at most 1 MiB in
//! all, message attributes and bodies by SQS's rules, and CreateQueue's rules.

use super::*;

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
