//! Receipt handles on the SQS endpoint, on both backends: they act across dialects, are in AWS's
//! base64 alphabet and act in the JSON and Query protocols, address their own queue only, and a
//! receive retried with the same attempt id gets the same handles again.

use super::support::*;
use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, SendMessageBatchRequestEntry};
use reqwest::StatusCode;
use serde_json::json;

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

/// A handle's URL-safe spelling (`-` for `+`, `_` for `/`, unpadded): how earlier releases gave
/// every handle out, and how the REST dialects still do.
fn url_safe(handle: &str) -> String {
    handle
        .replace('+', "-")
        .replace('/', "_")
        .trim_end_matches('=')
        .to_owned()
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

crate::on_both_backends!(
    handles_are_aws_base64_and_act_in_both_protocols,
    handles_work_across_dialects,
    a_handle_of_another_queue_is_invalid,
    a_retried_attempt_gets_the_same_answer,
);
