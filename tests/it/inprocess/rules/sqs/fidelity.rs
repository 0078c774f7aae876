//! The SQS endpoint's wire as AWS answers it (its recorded answers): JSON `__type` names, the
//! words SDKs and users read, lists left out when empty, the Query protocol at a queue's URL, and
//! attribute names and types refused as SQS refuses them.

use super::*;

/// A Query request to `path` with `method`, its parameters in the URL (unsigned: the test service
/// allows it).
async fn query_at(service: &InProcess, method: Method, path: &str) -> Reply {
    service
        .call(
            Request::builder()
                .method(method)
                .uri(path)
                .body(Body::empty())
                .unwrap(),
        )
        .await
}

/// The `<Message>` of a Query error.
fn xml_message(reply: &Reply) -> &str {
    let text = &reply.text;
    let start = text
        .find("<Message>")
        .map_or(0, |at| at + "<Message>".len());
    let end = text.find("</Message>").unwrap_or(start);
    &text[start..end]
}

/// JSON 1.0 names the invalid and missing parameter shapes as SQS's model does
/// (`InvalidParameterValueException`, `MissingRequiredParameterException`) while
/// `x-amzn-query-error` and the Query protocol keep the codes SDKs dispatch on.
#[tokio::test(start_paused = true)]
async fn json_types_are_sqs_shape_names() {
    let service = InProcess::start().await;
    let invalid = service
        .sqs("ReceiveMessage", json!({ "WaitTimeSeconds": 21 }))
        .await;
    assert_eq!(
        invalid.body["__type"],
        "com.amazonaws.sqs#InvalidParameterValueException"
    );
    assert_eq!(
        invalid.header("x-amzn-query-error").as_deref(),
        Some("InvalidParameterValue;Sender")
    );
    assert_eq!(
        invalid.body["message"],
        "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided."
    );
    let missing = service.sqs("SendMessage", json!({})).await;
    assert_eq!(
        missing.body["__type"],
        "com.amazonaws.sqs#MissingRequiredParameterException"
    );
    assert_eq!(
        missing.header("x-amzn-query-error").as_deref(),
        Some("MissingParameter;Sender")
    );
    assert_eq!(
        missing.body["message"],
        "The request must contain the parameter MessageBody."
    );
    let gone = service
        .sqs_call(
            "GetQueueAttributes",
            json!({ "QueueUrl": "http://gateway.test/000000000000/nope" }),
        )
        .await;
    assert_eq!(gone.body["__type"], "com.amazonaws.sqs#QueueDoesNotExist");
}

/// Batch limits and entry ids in SQS's words.
#[tokio::test(start_paused = true)]
async fn batch_refusals_use_sqs_words() {
    let service = InProcess::start().await;
    let entries: Vec<Value> = (0..20)
        .map(|n| json!({ "Id": format!("m{n}"), "MessageBody": "x" }))
        .collect();
    let many = service
        .sqs("SendMessageBatch", json!({ "Entries": entries }))
        .await;
    assert_eq!(
        many.body["message"],
        "Maximum number of entries per request are 10. You have sent 20."
    );
    let bad_id = service
        .sqs(
            "SendMessageBatch",
            json!({ "Entries": [{ "Id": "invalid:id", "MessageBody": "x" }] }),
        )
        .await;
    assert_eq!(
        bad_id.body["message"],
        "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."
    );
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
}

/// SQS leaves empty lists out of a JSON answer: ListQueues with no match has no `QueueUrls`, a
/// batch with no failure no `Failed`, GetQueueAttributes with nothing to answer no `Attributes`.
#[tokio::test(start_paused = true)]
async fn empty_lists_are_left_out() {
    let service = InProcess::start().await;
    let listed = service
        .sqs_call("ListQueues", json!({ "QueueNamePrefix": "no-such" }))
        .await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body, json!({}), "{}", listed.text);
    let sent = service
        .sqs(
            "SendMessageBatch",
            json!({ "Entries": [{ "Id": "a", "MessageBody": "x" }] }),
        )
        .await;
    assert_eq!(sent.body["Successful"].as_array().unwrap().len(), 1);
    assert!(sent.body.get("Failed").is_none(), "{}", sent.text);
    // A queue without a policy asked for its policy: no `Attributes` at all.
    let attributes = service
        .sqs_call(
            "GetQueueAttributes",
            json!({ "QueueUrl": ORDERS_URL, "AttributeNames": ["Policy"] }),
        )
        .await;
    assert_eq!(attributes.status, StatusCode::OK);
    assert_eq!(attributes.body, json!({}), "{}", attributes.text);
}

/// At a queue's URL the Query protocol serves the queue's actions only: creating or listing
/// queues, or an action SQS does not have, is `InvalidAction` ("not valid for this endpoint"); the
/// URL fetched with no action is `404 <UnknownOperationException/>`; a missing queue is worded as
/// SQS's XML API words it.
#[tokio::test(start_paused = true)]
async fn query_requests_at_a_queue_url() {
    let service = InProcess::start().await;
    let orders = "/000000000000/orders";
    for action in ["CreateQueue&QueueName=other", "ListQueues", "FooBar"] {
        let refused = query_at(
            &service,
            Method::GET,
            &format!("{orders}?Action={action}&Version=2012-11-05"),
        )
        .await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{action}");
        assert_eq!(xml_code(&refused), "InvalidAction", "{action}");
        let name = action.split('&').next().unwrap();
        assert_eq!(
            xml_message(&refused),
            format!("The action {name} is not valid for this endpoint."),
            "{action}"
        );
        assert!(refused.text.contains("<Type>Sender</Type>"));
    }
    let listed = service.sqs_call("ListQueues", json!({})).await;
    assert_eq!(
        listed.body["QueueUrls"].as_array().map(Vec::len),
        Some(1),
        "no queue was made: {}",
        listed.text
    );
    let page = query_at(&service, Method::GET, orders).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(
        page.text.contains("<UnknownOperationException"),
        "{}",
        page.text
    );
    let attributes = query_at(
        &service,
        Method::GET,
        &format!("{orders}?Action=GetQueueAttributes&AttributeName.1=QueueArn"),
    )
    .await;
    assert_eq!(attributes.status, StatusCode::OK, "{}", attributes.text);
    let gone = query_at(
        &service,
        Method::GET,
        "/000000000000/nope?Action=GetQueueAttributes&AttributeName.1=QueueArn",
    )
    .await;
    assert_eq!(gone.status, StatusCode::BAD_REQUEST);
    assert_eq!(xml_code(&gone), "AWS.SimpleQueueService.NonExistentQueue");
    assert_eq!(
        xml_message(&gone),
        "The specified queue does not exist for this wsdl version."
    );
    let missing = query_at(
        &service,
        Method::GET,
        &format!("{orders}?Action=SendMessage"),
    )
    .await;
    assert_eq!(xml_code(&missing), "MissingParameter");
    assert_eq!(
        xml_message(&missing),
        "The request must contain the parameter MessageBody."
    );
}

/// GetQueueAttributes refuses a name SQS does not have, in both protocols.
#[tokio::test(start_paused = true)]
async fn unknown_queue_attribute_names_are_refused() {
    let service = InProcess::start().await;
    let json_answer = service
        .sqs(
            "GetQueueAttributes",
            json!({ "AttributeNames": ["QueueArn", "Foobar"] }),
        )
        .await;
    assert_eq!(sqs_code(&json_answer), "InvalidAttributeName");
    assert_eq!(json_answer.body["message"], "Unknown Attribute Foobar.");
    let xml = query_at(
        &service,
        Method::GET,
        "/000000000000/orders?Action=GetQueueAttributes&AttributeName.1=Foobar",
    )
    .await;
    assert_eq!(xml_code(&xml), "InvalidAttributeName");
    assert_eq!(xml_message(&xml), "Unknown Attribute Foobar.");
}

/// The FIFO-only attributes on a standard queue are unknown to it, at creation and after; a
/// queue's type never changes.
#[tokio::test(start_paused = true)]
async fn fifo_attributes_belong_to_fifo_queues() {
    let service = InProcess::start().await;
    for (attribute, message) in [
        ("FifoQueue", "Unknown Attribute FifoQueue."),
        (
            "ContentBasedDeduplication",
            "Unknown Attribute ContentBasedDeduplication.",
        ),
        (
            "DeduplicationScope",
            "You can specify the DeduplicationScope only when FifoQueue is set to true.",
        ),
        (
            "FifoThroughputLimit",
            "You can specify the FifoThroughputLimit only when FifoQueue is set to true.",
        ),
    ] {
        let value = match attribute {
            "DeduplicationScope" => "queue",
            "FifoThroughputLimit" => "perQueue",
            _ => "false",
        };
        let created = service
            .sqs_call(
                "CreateQueue",
                json!({ "QueueName": "plain", "Attributes": { attribute: value } }),
            )
            .await;
        assert_eq!(sqs_code(&created), "InvalidAttributeName", "{attribute}");
        assert_eq!(created.body["message"], message, "{attribute}");
        let set = service
            .sqs(
                "SetQueueAttributes",
                json!({ "Attributes": { attribute: value } }),
            )
            .await;
        assert_eq!(sqs_code(&set), "InvalidAttributeName", "{attribute}");
    }
    let listed = service.sqs_call("ListQueues", json!({})).await;
    assert_eq!(listed.body["QueueUrls"].as_array().map(Vec::len), Some(1));
}

/// A Query request that accepts JSON is answered in JSON as SQS answers it
/// (`ListQueuesResponse.ListQueuesResult.queueUrls`, lists named in lower case); without the
/// header, in XML.
#[tokio::test(start_paused = true)]
async fn query_answers_in_json_when_asked() {
    let service = InProcess::start().await;
    let list = |accept: Option<&'static str>| {
        let mut request = Request::builder()
            .method(Method::GET)
            .uri("/?Action=ListQueues&Version=2012-11-05");
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        service.call(request.body(Body::empty()).unwrap())
    };
    let json = list(Some("application/json")).await;
    assert_eq!(json.status, StatusCode::OK, "{}", json.text);
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json")
    );
    let urls = &json.body["ListQueuesResponse"]["ListQueuesResult"]["queueUrls"];
    assert_eq!(urls.as_array().map(Vec::len), Some(1), "{}", json.text);
    assert!(json.body["ListQueuesResponse"]["ResponseMetadata"]["RequestId"].is_string());
    let xml = list(None).await;
    assert!(xml.text.contains("<ListQueuesResponse"), "{}", xml.text);
    let xml = list(Some("text/xml")).await;
    assert!(xml.text.contains("<ListQueuesResponse"), "{}", xml.text);
}
