//! The SQS endpoint through the AWS SDK for Rust, on both backends: sends and receives with
//! attributes whose digest real SQS computes alike, batches answered per entry, errors with SQS's
//! codes, listing, counting and purging, FIFO; and unsigned requests where the config allows them.

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

fn md5_of(text: &str) -> u128 {
    use md5::Digest as _;
    u128::from_be_bytes(md5::Md5::digest(text.as_bytes()).into())
}

crate::on_both_backends!(
    send_and_receive_through_the_sdk,
    batches_answer_per_entry,
    errors_have_sqs_codes,
    queues_list_count_and_purge,
    fifo_through_the_sdk,
);
