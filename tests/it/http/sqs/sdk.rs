//! The SQS endpoint through the AWS SDK for Rust, on both backends, and across dialects.

use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageAttributeValue, MessageSystemAttributeName,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use reqwest::StatusCode;
use serde_json::json;

fn attributes() -> Vec<(&'static str, MessageAttributeValue)> {
    vec![
        (
            "event",
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value("order.paid")
                .build()
                .unwrap(),
        ),
        (
            "amount",
            MessageAttributeValue::builder()
                .data_type("Number")
                .string_value("12.5")
                .build()
                .unwrap(),
        ),
        (
            "raw",
            MessageAttributeValue::builder()
                .data_type("Binary")
                .binary_value(Blob::new(b"\x00\x01raw".to_vec()))
                .build()
                .unwrap(),
        ),
    ]
}

/// Sends the same attributes to a queue in LocalStack and checks that real SQS computes the
/// digest the gateway answered.
async fn compare_attribute_digest_with_localstack(
    sent: &aws_sdk_sqs::operation::send_message::SendMessageOutput,
) {
    let reference_queue = unique("it-md5-");
    let localstack = sqs();
    let reference_url = localstack
        .create_queue()
        .queue_name(&reference_queue)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let mut reference = localstack
        .send_message()
        .queue_url(&reference_url)
        .message_body("hello");
    for (name, value) in attributes() {
        reference = reference.message_attributes(name, value);
    }
    let reference = reference.send().await.unwrap();
    assert_eq!(
        sent.md5_of_message_attributes(),
        reference.md5_of_message_attributes()
    );
    localstack
        .delete_queue()
        .queue_url(&reference_url)
        .send()
        .await
        .unwrap();
}

async fn send_and_receive_through_the_sdk(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    assert!(
        url.starts_with(&gw.base) && url.ends_with("/orders"),
        "{url}"
    );
    let mut send = client.send_message().queue_url(&url).message_body("hello");
    for (name, value) in attributes() {
        send = send.message_attributes(name, value);
    }
    let sent = send.send().await.unwrap();
    assert_eq!(
        sent.md5_of_message_body(),
        Some("5d41402abc4b2a76b9719d911017c592")
    );

    // The attribute digest matches what real SQS (LocalStack) computes for the same attributes.
    let digest_check = format!("{} (its digest against LocalStack)", crate::test_name!());
    if !crate::harness::skips_without(&[crate::harness::Service::LocalStack], &digest_check) {
        compare_attribute_digest_with_localstack(&sent).await;
    }

    let received = client
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(10)
        .wait_time_seconds(5)
        .message_attribute_names("All")
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    assert_eq!(message.message_id(), sent.message_id());
    assert_eq!(message.body(), Some("hello"));
    assert_eq!(
        message.md5_of_body(),
        Some("5d41402abc4b2a76b9719d911017c592")
    );
    assert_eq!(
        message.md5_of_message_attributes(),
        sent.md5_of_message_attributes()
    );
    let attrs = message.message_attributes().unwrap();
    assert_eq!(attrs["event"].string_value(), Some("order.paid"));
    assert_eq!(
        attrs["raw"].binary_value().unwrap().as_ref(),
        b"\x00\x01raw"
    );
    let system = message.attributes().unwrap();
    assert_eq!(
        system[&MessageSystemAttributeName::ApproximateReceiveCount],
        "1"
    );
    assert!(system.contains_key(&MessageSystemAttributeName::SentTimestamp));

    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(message.receipt_handle().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

async fn handles_work_across_dialects(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    client
        .send_message()
        .queue_url(&url)
        .message_body("one")
        .send()
        .await
        .unwrap();
    let received = client
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(5)
        .send()
        .await
        .unwrap();
    let handle = received.messages()[0].receipt_handle().unwrap().to_owned();
    // Received over SQS, acknowledged over ezgh; a second ack is stale there too.
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![ok()]);
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![stale()]);

    client
        .send_message()
        .queue_url(&url)
        .message_body("two")
        .send()
        .await
        .unwrap();
    let messages = gw.receive_ok("orders", json!({ "waitSeconds": 5 })).await;
    // Received over ezgh, deleted over SQS.
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(handle_of(&messages[0]))
        .send()
        .await
        .unwrap();
    assert_eq!(gw.backend_depth("orders").await, 0);
    // An altered handle is refused as SQS refuses it.
    let error = client
        .delete_message()
        .queue_url(&url)
        .receipt_handle("not-a-handle")
        .send()
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some("ReceiptHandleIsInvalid"));
    gw.stop().await;
}

async fn batches_answer_per_entry(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    let entries: Vec<_> = (0..3)
        .map(|n| {
            SendMessageBatchRequestEntry::builder()
                .id(format!("m{n}"))
                .message_body(format!("body {n}"))
                .build()
                .unwrap()
        })
        .collect();
    let sent = client
        .send_message_batch()
        .queue_url(&url)
        .set_entries(Some(entries))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.successful().len(), 3);
    assert!(sent.failed().is_empty());
    let mut handles = Vec::new();
    while handles.len() < 3 {
        let got = client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .wait_time_seconds(2)
            .send()
            .await
            .unwrap();
        handles.extend(
            got.messages()
                .iter()
                .map(|m| m.receipt_handle().unwrap().to_owned()),
        );
    }
    let mut entries: Vec<_> = handles
        .iter()
        .enumerate()
        .map(|(n, h)| {
            DeleteMessageBatchRequestEntry::builder()
                .id(format!("d{n}"))
                .receipt_handle(h)
                .build()
                .unwrap()
        })
        .collect();
    entries.push(
        DeleteMessageBatchRequestEntry::builder()
            .id("bad")
            .receipt_handle("garbage")
            .build()
            .unwrap(),
    );
    let deleted = client
        .delete_message_batch()
        .queue_url(&url)
        .set_entries(Some(entries))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.successful().len(), 3);
    assert_eq!(deleted.failed()[0].id(), "bad");
    assert_eq!(deleted.failed()[0].code(), "ReceiptHandleIsInvalid");
    assert_eq!(gw.backend_depth("orders").await, 0);
    let empty = client
        .send_message_batch()
        .queue_url(&url)
        .set_entries(Some(vec![]))
        .send()
        .await
        .unwrap_err();
    assert!(
        empty
            .code()
            .unwrap_or_default()
            .contains("EmptyBatchRequest"),
        "{:?}",
        empty.code()
    );
    // More than 1 MiB of messages in all is refused whole, as SQS does, though each fits.
    let depth = gw.backend_depth("orders").await;
    let large = |id: &str| {
        SendMessageBatchRequestEntry::builder()
            .id(id)
            .message_body("b".repeat(600 * 1024))
            .build()
            .unwrap()
    };
    let too_long = client
        .send_message_batch()
        .queue_url(&url)
        .set_entries(Some(vec![large("a"), large("b")]))
        .send()
        .await
        .unwrap_err();
    assert!(
        too_long
            .code()
            .unwrap_or_default()
            .contains("BatchRequestTooLong"),
        "{:?}",
        too_long.code()
    );
    assert_eq!(gw.backend_depth("orders").await, depth, "nothing was sent");
    gw.stop().await;
}

async fn errors_have_sqs_codes(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let missing = client
        .get_queue_url()
        .queue_name("nope")
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(
            missing.code(),
            Some("QueueDoesNotExist" | "AWS.SimpleQueueService.NonExistentQueue")
        ),
        "{:?}",
        missing.code()
    );
    let url = client
        .get_queue_url()
        .queue_name("orders")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let too_many = client
        .receive_message()
        .queue_url(&url)
        .max_number_of_messages(11)
        .send()
        .await
        .unwrap_err();
    assert_eq!(too_many.code(), Some("InvalidParameterValue"));
    let wrong_secret = gw
        .sqs_client(SQS_KEY_ID, "wrong")
        .list_queues()
        .send()
        .await
        .unwrap_err();
    assert_eq!(wrong_secret.code(), Some("SignatureDoesNotMatch"));
    let unknown = gw
        .sqs_client("AKIDUNKNOWN", SQS_SECRET)
        .list_queues()
        .send()
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some("InvalidClientTokenId"));
    let limited = gw.sqs_client(SQS_LIMITED_KEY_ID, SQS_SECRET);
    assert!(
        limited
            .list_queues()
            .send()
            .await
            .unwrap()
            .queue_urls()
            .is_empty()
    );
    let denied = limited
        .send_message()
        .queue_url(&url)
        .message_body("x")
        .send()
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Some("AccessDenied"));
    // Unsigned requests are refused unless the config opts in.
    let unsigned = gw
        .http
        .post(&gw.base)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        unsigned.headers()["x-amzn-query-error"],
        "MissingAuthenticationToken;Sender"
    );
    gw.stop().await;
}

async fn queues_list_count_and_purge(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("billing"))
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let listed = client
        .list_queues()
        .queue_name_prefix("ord")
        .send()
        .await
        .unwrap();
    assert_eq!(listed.queue_urls().len(), 1);
    assert!(listed.queue_urls()[0].ends_with("/orders"));
    let url = listed.queue_urls()[0].clone();
    for n in 0..3 {
        client
            .send_message()
            .queue_url(&url)
            .message_body(format!("{n}"))
            .send()
            .await
            .unwrap();
    }
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let attributes = attributes.attributes().unwrap();
    assert_eq!(
        attributes[&QueueAttributeName::ApproximateNumberOfMessages],
        "3"
    );
    // Purging destroys every message: a permission of its own, which `*` includes only where
    // queue management is on.
    let refused = client
        .purge_queue()
        .queue_url(&url)
        .send()
        .await
        .unwrap_err()
        .into_service_error();
    assert_eq!(refused.meta().code(), Some("AccessDenied"));
    assert_eq!(gw.backend_depth("orders").await, 3, "nothing was purged");
    let managing = GatewayBuilder::new(kind)
        .replica_of(&gw)
        .managing_queues()
        .start()
        .await;
    let (client, url) = managing.sqs_queue("orders").await;
    client.purge_queue().queue_url(&url).send().await.unwrap();
    managing.stop().await;
    let mut depth = 3;
    for _ in 0..20 {
        depth = gw.backend_depth("orders").await;
        if depth == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(depth, 0);
    gw.stop().await;
}

async fn fifo_through_the_sdk(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::fifo("jobs.fifo"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("jobs.fifo").await;
    let first = client
        .send_message()
        .queue_url(&url)
        .message_body("a")
        .message_group_id("g")
        .message_deduplication_id("d1")
        .send()
        .await
        .unwrap();
    let sequence = first.sequence_number().unwrap();
    assert!(sequence.chars().all(|c| c.is_ascii_digit()));
    let again = client
        .send_message()
        .queue_url(&url)
        .message_body("a")
        .message_group_id("g")
        .message_deduplication_id("d1")
        .send()
        .await
        .unwrap();
    assert_eq!(again.message_id(), first.message_id(), "deduplicated");
    // A deduplication id is 1 to 128 letters, digits or punctuation, as on SQS.
    for bad in [
        "d".repeat(129),
        "a b".into(),
        "d\u{1}".into(),
        String::new(),
    ] {
        let refused = client
            .send_message()
            .queue_url(&url)
            .message_body("b")
            .message_group_id("g")
            .message_deduplication_id(&bad)
            .send()
            .await
            .unwrap_err();
        assert!(
            refused
                .code()
                .unwrap_or_default()
                .contains("InvalidParameterValue"),
            "{bad:?}: {:?}",
            refused.code()
        );
    }
    client
        .send_message()
        .queue_url(&url)
        .message_body("b")
        .message_group_id("g")
        .message_deduplication_id("d".repeat(128))
        .send()
        .await
        .unwrap();
    gw.stop().await;
}

/// A handle's URL-safe spelling (`-` for `+`, `_` for `/`, unpadded): how earlier releases gave
/// every handle out, and how the REST dialects still do.
fn url_safe(handle: &str) -> String {
    handle
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned()
}

/// A Query-protocol request to the SQS endpoint, signed with the test key: status and XML.
pub async fn query(gw: &TestGateway, form: &str) -> (StatusCode, String) {
    let request = signed(
        "POST",
        &format!("{}/", gw.base),
        &[
            ("host", &host_of(&gw.base)),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
        &Signing::default(),
    );
    let (status, _, xml) = send(gw, request).await;
    (status, xml)
}

/// Receipt handles on the SQS endpoint are in AWS's alphabet (`A-Za-z0-9+/=`, no `-` or `_`:
/// amazon-sqs-extended-client recovers a handle with `split('-')[-1]`), in the JSON protocol and
/// in the Query one, and act in both: in a Query form a `+` travels as `%2B` (as boto3 and the
/// AWS CLI encode it; a bare `+` is a space there, as on SQS). A handle in the URL-safe alphabet,
/// as earlier releases issued them, still acts.
async fn handles_are_aws_base64_and_act_in_both_protocols(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    for batch in 0..3 {
        let mut send = client.send_message_batch().queue_url(&url);
        for n in 0..10 {
            send = send.entries(
                SendMessageBatchRequestEntry::builder()
                    .id(format!("m{n}"))
                    .message_body(format!("message {batch}-{n}"))
                    .build()
                    .unwrap(),
            );
        }
        assert_eq!(send.send().await.unwrap().successful().len(), 10);
    }
    // The JSON protocol (the SDK for Rust).
    let mut json_handles: Vec<String> = Vec::new();
    for _ in 0..10 {
        let received = client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(300)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        json_handles.extend(
            received
                .messages()
                .iter()
                .map(|message| message.receipt_handle().unwrap().to_owned()),
        );
        if json_handles.len() >= 10 {
            break;
        }
    }
    // The Query protocol.
    let queue = form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>();
    let mut query_handles: Vec<String> = Vec::new();
    for _ in 0..10 {
        let (status, xml) = query(
            &gw,
            &format!("Action=ReceiveMessage&Version=2012-11-05&QueueUrl={queue}&MaxNumberOfMessages=10&VisibilityTimeout=300&WaitTimeSeconds=1"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{xml}");
        query_handles.extend(
            xml.split("<ReceiptHandle>")
                .skip(1)
                .map(|rest| rest.split_once("</ReceiptHandle>").unwrap().0.to_owned()),
        );
        if query_handles.len() >= 10 {
            break;
        }
    }
    assert!(json_handles.len() >= 10 && query_handles.len() >= 10);
    for handle in json_handles.iter().chain(&query_handles) {
        assert!(
            handle
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')),
            "not AWS's alphabet: {handle}"
        );
        assert_eq!(handle.len() % 4, 0, "padded: {handle}");
    }
    let with_plus: Vec<&String> = query_handles.iter().filter(|h| h.contains('+')).collect();
    assert!(with_plus.len() >= 3, "{query_handles:?}");

    // JSON: delete, delete in a batch, change the visibility.
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(&json_handles[0])
        .send()
        .await
        .unwrap();
    let batch = client
        .delete_message_batch()
        .queue_url(&url)
        .entries(
            DeleteMessageBatchRequestEntry::builder()
                .id("a")
                .receipt_handle(&json_handles[1])
                .build()
                .unwrap(),
        )
        .entries(
            DeleteMessageBatchRequestEntry::builder()
                .id("b")
                .receipt_handle(&json_handles[2])
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(batch.successful().len(), 2, "{:?}", batch.failed());
    client
        .change_message_visibility()
        .queue_url(&url)
        .receipt_handle(&json_handles[3])
        .visibility_timeout(600)
        .send()
        .await
        .unwrap();

    // Query: a `+` percent-encoded acts; a bare one is a space, so no handle.
    let encoded =
        |handle: &str| form_urlencoded::byte_serialize(handle.as_bytes()).collect::<String>();
    let delete = |handle: String| {
        format!("Action=DeleteMessage&Version=2012-11-05&QueueUrl={queue}&ReceiptHandle={handle}")
    };
    let (status, xml) = query(&gw, &delete(encoded(with_plus[0]))).await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    let (status, xml) = query(&gw, &delete(with_plus[1].to_string())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{xml}");
    assert!(xml.contains("ReceiptHandleIsInvalid"), "{xml}");
    let (status, xml) = query(&gw, &delete(encoded(with_plus[1]))).await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    let (status, xml) = query(
        &gw,
        &format!(
            "Action=ChangeMessageVisibility&Version=2012-11-05&QueueUrl={queue}&ReceiptHandle={}&VisibilityTimeout=600",
            encoded(with_plus[2])
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{xml}");

    // The URL-safe spelling of a handle (earlier releases') acts in both protocols.
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(url_safe(&json_handles[4]))
        .send()
        .await
        .unwrap();
    let old = query_handles
        .iter()
        .find(|handle| !with_plus[..3].contains(handle))
        .unwrap();
    let (status, xml) = query(&gw, &delete(url_safe(old))).await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    // Four deleted over JSON, three over Query; the others stay.
    assert_eq!(gw.backend_depth("orders").await, 30 - 7);
    gw.stop().await;
}

crate::on_both_backends!(
    handles_are_aws_base64_and_act_in_both_protocols,
    send_and_receive_through_the_sdk,
    handles_work_across_dialects,
    batches_answer_per_entry,
    errors_have_sqs_codes,
    queues_list_count_and_purge,
    fifo_through_the_sdk,
);

#[tokio::test]
async fn unsigned_requests_work_when_the_config_allows_them() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nallow_unsigned = true\n")
        .start()
        .await;
    let answer = gw
        .http
        .post(&gw.base)
        .header("x-amz-target", "AmazonSQS.SendMessage")
        .header("content-type", "application/x-amz-json-1.0")
        .body(json!({ "QueueUrl": format!("{}/000000000000/orders", gw.base), "MessageBody": "curl" }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["MD5OfMessageBody"], format!("{:032x}", md5_of("curl")));
    assert_eq!(gw.backend_depth("orders").await, 1);
    gw.stop().await;
}

/// A message attribute named twice, or under an index that is not a number, is refused in both
/// protocols (a map would keep one value and drop the other with a 200), and nothing is sent.
#[tokio::test]
async fn attributes_named_twice_or_badly_indexed_are_refused() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nallow_unsigned = true\n")
        .start()
        .await;
    let queue_url = format!("{}/000000000000/orders", gw.base);
    // A repeated JSON key, in a message's attributes or a queue's (neither value is kept).
    for (action, json) in [
        (
            "SendMessage",
            format!(
                r#"{{"QueueUrl":"{queue_url}","MessageBody":"dup","MessageAttributes":{{"x":{{"DataType":"String","StringValue":"v"}},"x":{{"DataType":"String","StringValue":"w"}}}}}}"#
            ),
        ),
        (
            "SetQueueAttributes",
            format!(
                r#"{{"QueueUrl":"{queue_url}","Attributes":{{"DelaySeconds":"5","DelaySeconds":"7"}}}}"#
            ),
        ),
    ] {
        let answer = gw
            .http
            .post(&gw.base)
            .header("x-amz-target", format!("AmazonSQS.{action}"))
            .header("content-type", "application/x-amz-json-1.0")
            .body(json)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{action}");
        let body = answer.text().await.unwrap();
        assert!(body.contains("SerializationException"), "{body}");
    }
    let attribute = |n: &str, name: &str, value: &str| {
        format!(
            "&MessageAttribute.{n}.Name={name}&MessageAttribute.{n}.Value.DataType=String&MessageAttribute.{n}.Value.StringValue={value}"
        )
    };
    let queue = queue_url.replace(':', "%3A").replace('/', "%2F");
    for attributes in [
        attribute("1", "x", "v") + &attribute("2", "x", "w"),
        attribute("-1", "x", "v"),
        attribute("99999999999999999999", "x", "v"),
    ] {
        let form = format!(
            "Action=SendMessage&Version=2012-11-05&QueueUrl={queue}&MessageBody=dup{attributes}"
        );
        let answer = gw
            .http
            .post(&gw.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{attributes}");
        let body = answer.text().await.unwrap();
        assert!(
            body.contains("<Code>InvalidParameterValue</Code>"),
            "{body}"
        );
    }
    assert_eq!(gw.backend_depth("orders").await, 0, "nothing was sent");
    gw.stop().await;
}

fn md5_of(text: &str) -> u128 {
    use md5::Digest as _;
    u128::from_be_bytes(md5::Md5::digest(text.as_bytes()).into())
}

async fn queue_management_when_enabled(kind: Kind) {
    let gw = GatewayBuilder::new(kind).managing_queues().start().await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let suffix = unique("");
    let dlq_name = format!("mgmt-dlq-{suffix}");
    let name = format!("mgmt-{suffix}");
    let dlq_url = client
        .create_queue()
        .queue_name(&dlq_name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let dlq_arn = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&QueueAttributeName::QueueArn]
        .clone();
    let url = client
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::VisibilityTimeout, "45")
        .attributes(
            QueueAttributeName::RedrivePolicy,
            json!({ "deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2 }).to_string(),
        )
        .tags("team", "payments")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    assert!(url.ends_with(&format!("/{name}")));
    let listed = client
        .list_queues()
        .queue_name_prefix(format!("mgmt-{suffix}"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.queue_urls(), std::slice::from_ref(&url));
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(attributes[&QueueAttributeName::VisibilityTimeout], "45");
    assert!(attributes[&QueueAttributeName::RedrivePolicy].contains(&dlq_name));
    client
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::VisibilityTimeout, "60")
        .send()
        .await
        .unwrap();
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::VisibilityTimeout)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap();
    assert_eq!(attributes[&QueueAttributeName::VisibilityTimeout], "60");
    let sources = client
        .list_dead_letter_source_queues()
        .queue_url(&dlq_url)
        .send()
        .await
        .unwrap();
    assert_eq!(sources.queue_urls(), std::slice::from_ref(&url));
    let tags = client
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(tags.tags().unwrap()["team"], "payments");
    client
        .untag_queue()
        .queue_url(&url)
        .tag_keys("team")
        .send()
        .await
        .unwrap();
    let tags = client
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    assert!(tags.tags().is_none_or(|tags| tags.is_empty()));
    client.delete_queue().queue_url(&url).send().await.unwrap();
    client
        .delete_queue()
        .queue_url(&dlq_url)
        .send()
        .await
        .unwrap();
    let mut gone = false;
    for _ in 0..30 {
        if client
            .get_queue_url()
            .queue_name(&name)
            .send()
            .await
            .is_err()
        {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(gone, "the deleted queue is gone");
    gw.stop().await;
}

async fn queue_management_is_off_by_default(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("billing"))
        .config(
            "[[sqs_api.credentials]]\naccess_key_id = \"AKIDPURGER\"\nsecret = \"purger-secret-of-the-test\"\nqueues = [\"orders\"]\nactions = [\"GetQueueUrl\", \"PurgeQueue\", \"CreateQueue\"]\n",
        )
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    // A `*` key does not manage queues while management is off.
    let refused = client
        .create_queue()
        .queue_name("anything")
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("AccessDenied"));
    // A key granted PurgeQueue by name purges its queue (and no other), management off or on.
    let purger = gw.sqs_client("AKIDPURGER", "purger-secret-of-the-test");
    let (_, orders) = gw.sqs_queue("orders").await;
    let (_, billing) = gw.sqs_queue("billing").await;
    purger
        .purge_queue()
        .queue_url(&orders)
        .send()
        .await
        .unwrap();
    let refused = purger
        .purge_queue()
        .queue_url(&billing)
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("AccessDenied"));
    // Creating queues beyond the configured ones is off: the permission cannot open it.
    let refused = purger
        .create_queue()
        .queue_name("orders-new")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        Some("AccessDenied"),
        "only `orders` is granted"
    );
    gw.stop().await;
}

mod management {
    use super::*;
    crate::on_both_backends!(
        queue_management_when_enabled,
        queue_management_is_off_by_default
    );
}

fn text_attribute(data_type: &str, value: &str) -> MessageAttributeValue {
    MessageAttributeValue::builder()
        .data_type(data_type)
        .string_value(value)
        .build()
        .unwrap()
}

/// SQS's content rules hold on both backends (LocalStack enforces few of them), and what the
/// gateway stores always renders as XML a parser reads.
async fn message_content_follows_sqs_rules(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    let refused = [
        ("note", text_attribute("String", "bad\u{1}val")),
        ("note", text_attribute("String.\u{2}", "fine")),
        ("AWS.trace", text_attribute("String", "x")),
        ("amazon.id", text_attribute("String", "x")),
        ("n", text_attribute("Number", "NaN")),
        ("n", text_attribute("Number", "inf")),
        ("n", text_attribute("Number", "1e400")),
        (
            "n",
            text_attribute("Number", "123456789012345678901234567890123456789"),
        ),
    ];
    for (name, value) in refused {
        let error = client
            .send_message()
            .queue_url(&url)
            .message_body("body")
            .message_attributes(name, value.clone())
            .send()
            .await
            .expect_err(&format!("{name} {value:?} is refused"));
        assert_eq!(
            error.code(),
            Some("InvalidParameterValue"),
            "{name} {value:?}"
        );
    }
    // In a batch, only the offending entry fails.
    let batch = client
        .send_message_batch()
        .queue_url(&url)
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("bad")
                .message_body("x")
                .message_attributes("note", text_attribute("String", "a\u{7}b"))
                .build()
                .unwrap(),
        )
        .entries(
            SendMessageBatchRequestEntry::builder()
                .id("good")
                .message_body("tabs\tand\nnewlines are fine")
                .message_attributes("note", text_attribute("String", "ok\tfine"))
                .message_attributes("n", text_attribute("Number.int", "-1.5e-3"))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(batch.successful().len(), 1);
    assert_eq!(batch.failed()[0].id(), "bad");
    assert_eq!(batch.failed()[0].code(), "InvalidParameterValue");
    assert_eq!(gw.backend_depth("orders").await, 1);

    // What was stored comes back over the Query protocol as XML without characters XML lacks.
    let host = host_of(&gw.base);
    let form = format!(
        "Action=ReceiveMessage&Version=2012-11-05&QueueUrl={}&MessageAttributeName.1=All&WaitTimeSeconds=5",
        url.replace(':', "%3A").replace('/', "%2F")
    );
    let request = signed(
        "POST",
        &format!("{}/", gw.base),
        &[
            ("host", &host),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
        &Signing::default(),
    );
    let (status, _, xml) = send(&gw, request).await;
    assert_eq!(status, StatusCode::OK, "{xml}");
    assert!(xml.contains("<StringValue>ok\tfine</StringValue>"), "{xml}");
    assert!(
        xml.chars()
            .all(sqs_gateway::core::message_rules::allowed_char),
        "XML 1.0 has no form for control characters: {xml:?}"
    );
    gw.stop().await;
}

/// CreateQueue's name and existence rules, as SQS has them.
async fn create_queue_follows_sqs_rules(kind: Kind) {
    let gw = GatewayBuilder::new(kind).managing_queues().start().await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let suffix = unique("");
    let fifo_name = format!("rules-{suffix}.fifo");
    let error = client
        .create_queue()
        .queue_name(&fifo_name)
        .send()
        .await
        .expect_err("a .fifo name needs FifoQueue=true");
    assert_eq!(error.code(), Some("InvalidParameterValue"));
    let error = client
        .create_queue()
        .queue_name(format!("rules-{suffix}"))
        .attributes(QueueAttributeName::FifoQueue, "true")
        .send()
        .await
        .expect_err("FifoQueue=true needs a .fifo name");
    assert_eq!(error.code(), Some("InvalidParameterValue"));
    let name = format!("rules-{suffix}");
    let url = client
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::DelaySeconds, "5")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    let again = client
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::DelaySeconds, "5")
        .send()
        .await
        .unwrap();
    assert_eq!(
        again.queue_url(),
        Some(url.as_str()),
        "same attributes: the same queue"
    );
    let error = client
        .create_queue()
        .queue_name(&name)
        .attributes(QueueAttributeName::DelaySeconds, "7")
        .send()
        .await
        .expect_err("other attributes: refused")
        .into_service_error();
    assert!(error.is_queue_name_exists(), "{error:?}");
    assert_eq!(error.meta().code(), Some("QueueAlreadyExists"));
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

mod content_rules {
    use super::*;
    crate::on_both_backends!(
        message_content_follows_sqs_rules,
        create_queue_follows_sqs_rules
    );
}

/// A handle addresses its own queue only: on another queue's URL it is invalid and acts nowhere.
async fn a_handle_of_another_queue_is_invalid(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("billing"))
        .start()
        .await;
    let (client, orders) = gw.sqs_queue("orders").await;
    let (_, billing) = gw.sqs_queue("billing").await;
    client
        .send_message()
        .queue_url(&orders)
        .message_body("mine")
        .send()
        .await
        .unwrap();
    let received = client
        .receive_message()
        .queue_url(&orders)
        .wait_time_seconds(5)
        .visibility_timeout(60)
        .send()
        .await
        .unwrap();
    let handle = received.messages()[0].receipt_handle().unwrap().to_owned();
    let error = client
        .delete_message()
        .queue_url(&billing)
        .receipt_handle(&handle)
        .send()
        .await
        .expect_err("another queue's handle");
    assert_eq!(error.code(), Some("ReceiptHandleIsInvalid"));
    let error = client
        .change_message_visibility()
        .queue_url(&billing)
        .receipt_handle(&handle)
        .visibility_timeout(0)
        .send()
        .await
        .expect_err("another queue's handle");
    assert_eq!(error.code(), Some("ReceiptHandleIsInvalid"));
    let batch = client
        .delete_message_batch()
        .queue_url(&billing)
        .entries(
            DeleteMessageBatchRequestEntry::builder()
                .id("a")
                .receipt_handle(&handle)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(batch.failed()[0].code(), "ReceiptHandleIsInvalid");
    assert_eq!(gw.backend_depth("orders").await, 1, "nothing was deleted");
    // On its own queue the same handle still works: nothing above touched the delivery.
    client
        .delete_message()
        .queue_url(&orders)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap();
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

mod handles {
    use super::*;
    crate::on_both_backends!(a_handle_of_another_queue_is_invalid);
}

/// A receive retried with the same attempt id within five minutes gets the same messages and
/// handles again, on a standard queue, on both backends (LocalStack ignores attempt ids: the
/// core keeps the answer), and only for the same caller.
async fn a_retried_attempt_gets_the_same_answer(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config(
            "[[sqs_api.credentials]]\naccess_key_id = \"AKIDOTHER\"\nsecret = \"other-secret-of-the-test\"\n",
        )
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    client
        .send_message()
        .queue_url(&url)
        .message_body("once")
        .send()
        .await
        .unwrap();
    let receive = |client: &aws_sdk_sqs::Client, attempt: Option<&str>| {
        client
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(1)
            .visibility_timeout(60)
            .set_receive_request_attempt_id(attempt.map(str::to_owned))
            .send()
    };
    let first = receive(&client, Some("attempt-1")).await.unwrap();
    assert_eq!(first.messages().len(), 1);
    let handle = first.messages()[0].receipt_handle().unwrap().to_owned();
    let id = first.messages()[0].message_id().unwrap().to_owned();
    // The answer was lost; the retry gets it again, same handle.
    let retry = receive(&client, Some("attempt-1")).await.unwrap();
    assert_eq!(retry.messages().len(), 1, "the same message again");
    assert_eq!(retry.messages()[0].message_id(), Some(id.as_str()));
    assert_eq!(retry.messages()[0].receipt_handle(), Some(handle.as_str()));
    // It is in flight for everyone else, and another caller's same attempt id is its own.
    assert!(receive(&client, None).await.unwrap().messages().is_empty());
    let other = gw.sqs_client("AKIDOTHER", "other-secret-of-the-test");
    assert!(
        receive(&other, Some("attempt-1"))
            .await
            .unwrap()
            .messages()
            .is_empty()
    );
    // The ledger saw one delivery: the handle acknowledges.
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(&handle)
        .send()
        .await
        .unwrap();
    assert_eq!(gw.backend_depth("orders").await, 0);
    // Acknowledged: a retry now finds nothing of that answer left, and receives anew.
    assert!(
        receive(&client, Some("attempt-1"))
            .await
            .unwrap()
            .messages()
            .is_empty()
    );
    gw.stop().await;
}

mod attempts {
    use super::*;
    crate::on_both_backends!(a_retried_attempt_gets_the_same_answer);
}

/// Twenty typed attributes, as the gateway's other APIs may send them.
fn twenty_attributes()
-> std::collections::BTreeMap<String, sqs_gateway::core::model::MessageAttribute> {
    use sqs_gateway::core::model::{AttributeValue, MessageAttribute};
    (0..20)
        .map(|n| {
            let (data_type, value) = match n % 4 {
                0 => ("String", AttributeValue::Text(format!("text {n} \u{e9}"))),
                1 => ("Number", AttributeValue::Text(format!("{n}.5"))),
                2 => ("Binary", AttributeValue::Bytes(vec![0, n, 0xfe])),
                _ => (
                    "String.label",
                    AttributeValue::Text(format!("labelled {n}")),
                ),
            };
            (
                format!("attr{n:02}"),
                MessageAttribute {
                    data_type: data_type.into(),
                    value,
                },
            )
        })
        .collect()
}

/// AWS's MD5 of message attributes, written again here (as in tests/clients/scenario.py).
fn md5_of_attributes(
    attributes: &std::collections::HashMap<String, MessageAttributeValue>,
) -> String {
    use md5::Digest as _;
    fn put(buffer: &mut Vec<u8>, bytes: &[u8]) {
        buffer.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        buffer.extend_from_slice(bytes);
    }
    let mut names: Vec<&String> = attributes.keys().collect();
    names.sort();
    let mut buffer = Vec::new();
    for name in names {
        let value = &attributes[name];
        put(&mut buffer, name.as_bytes());
        put(&mut buffer, value.data_type().as_bytes());
        match value.binary_value() {
            Some(blob) => {
                buffer.push(2);
                put(&mut buffer, blob.as_ref());
            }
            None => {
                buffer.push(1);
                put(
                    &mut buffer,
                    value.string_value().unwrap_or_default().as_bytes(),
                );
            }
        }
    }
    format!("{:x}", md5::Md5::digest(&buffer))
}

/// The Python of the real clients, if installed (`CLIENTS_INSTALL_ONLY=1 bash tests/clients/run.sh`,
/// which the test command runs first).
fn clients_python() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let home = std::env::var("HOME").unwrap_or_default();
    let cache = std::env::var("CLIENTS_CACHE")
        .unwrap_or_else(|_| format!("{home}/.cache/sqs-gateway/clients"));
    let python = crate::harness::clients_venv().join("bin/python");
    let query_model = std::path::PathBuf::from(cache).join("query-model-1.29.165");
    (python.exists() && query_model.exists()).then_some((python, query_model))
}

/// A message sent through the core with 20 typed attributes (more than SQS holds: the core packs
/// them) comes back with all 20, types intact, through the SQS endpoint (the SDK for Rust, and
/// boto3 over JSON 1.0 and Query, each checking MD5OfMessageAttributes) and through ezgh.
async fn twenty_typed_attributes_come_back_whole(kind: Kind) {
    use sqs_gateway::core::access::{Caller, Grants, Principal};
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let sent = twenty_attributes();
    let caller = Caller::new(
        Principal::Anonymous,
        std::sync::Arc::new(Grants::everything()),
    );
    let message = sqs_gateway::core::model::OutgoingMessage {
        body: "twenty".into(),
        attributes: sent.clone(),
        ..Default::default()
    };
    let results = gw
        .gateway
        .send(&caller, "orders", &[message])
        .await
        .unwrap();
    assert!(results[0].is_ok(), "{:?}", results[0]);

    let (client, url) = gw.sqs_queue("orders").await;
    let received = client
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .wait_time_seconds(5)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    let message = &received.messages()[0];
    let attributes = message.message_attributes().unwrap();
    assert_eq!(attributes.len(), 20);
    for (name, expected) in &sent {
        let got = &attributes[name];
        assert_eq!(got.data_type(), expected.data_type, "{name}");
        match &expected.value {
            sqs_gateway::core::model::AttributeValue::Text(text) => {
                assert_eq!(got.string_value(), Some(text.as_str()), "{name}")
            }
            sqs_gateway::core::model::AttributeValue::Bytes(bytes) => {
                assert_eq!(
                    got.binary_value().map(|b| b.as_ref()),
                    Some(bytes.as_slice()),
                    "{name}"
                )
            }
        }
    }
    assert_eq!(
        message.md5_of_message_attributes(),
        Some(md5_of_attributes(attributes).as_str())
    );

    let ezgh = gw
        .receive_ok(
            "orders",
            json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    let shown = ezgh[0]["attributes"].as_object().unwrap();
    assert_eq!(shown.len(), 20);
    assert_eq!(shown["attr00"], "text 0 \u{e9}");
    assert_eq!(shown["attr02"], "AAL+");
    assert!(!shown.keys().any(|name| name.starts_with("sqsgw.")));

    // boto3, both protocols.
    match clients_python() {
        None => {
            // Under the test command a missing venv fails here instead.
            crate::harness::skips_without(
                &[crate::harness::Service::Clients],
                "the boto3 part of twenty_typed_attributes_come_back_whole",
            );
            eprintln!(
                "SKIPPED the boto3 part of twenty_typed_attributes_come_back_whole: the clients are not installed (scripts/test installs them)"
            )
        }
        Some((python, query_model)) => {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/attributes.py");
            for protocol in ["json", "query"] {
                let mut command = tokio::process::Command::new(&python);
                command
                    .arg(script)
                    .arg(&gw.base)
                    .arg(&url)
                    .env("AWS_ACCESS_KEY_ID", SQS_KEY_ID)
                    .env("AWS_SECRET_ACCESS_KEY", SQS_SECRET)
                    .env("AWS_DEFAULT_REGION", "us-east-1")
                    .env("AWS_CONFIG_FILE", "/dev/null")
                    .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                    .env_remove("AWS_DATA_PATH");
                if protocol == "query" {
                    command.env("AWS_DATA_PATH", &query_model);
                }
                let output = command.output().await.unwrap();
                let report: serde_json::Value = serde_json::from_slice(&output.stdout)
                    .unwrap_or_else(|_| {
                        panic!(
                            "boto3 ({protocol}): {}",
                            String::from_utf8_lossy(&output.stderr)
                        )
                    });
                assert_eq!(report["protocol"], protocol, "{report}");
                assert_eq!(report["md5_ok"], true, "{protocol}: {report}");
                let attributes = report["attributes"].as_object().unwrap();
                assert_eq!(attributes.len(), 20, "{protocol}: {report}");
                assert_eq!(attributes["attr03"], json!(["String.label", "labelled 3"]));
                assert_eq!(attributes["attr02"], json!(["Binary", "AAL+"]));
            }
        }
    }

    // The SQS endpoint's own SendMessage keeps AWS's limit of ten.
    let mut send = client.send_message().queue_url(&url).message_body("x");
    for n in 0..11 {
        send = send.message_attributes(
            format!("a{n}"),
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value("v")
                .build()
                .unwrap(),
        );
    }
    assert_eq!(
        send.send().await.unwrap_err().code(),
        Some("InvalidParameterValue")
    );
    gw.stop().await;
}

mod packed_attributes {
    use super::*;
    crate::on_both_backends!(twenty_typed_attributes_come_back_whole);
}
