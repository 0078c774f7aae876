//! In front of SQS, the sends, acknowledgements and visibility changes that many requests make on
//! one queue go out together (`backend.fan_in`), each request still answered on its own: counted
//! at a proxy between the gateway and LocalStack, not by the gateway's own metrics.

use crate::counting_proxy::CountingProxy;
use crate::harness::*;
use futures_util::future::join_all;

const MESSAGES: usize = 40;

/// Sends `MESSAGES` messages, one request each and all at once, and receives them all; their
/// handles.
async fn received(client: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    let sends = (0..MESSAGES).map(|n| {
        client
            .send_message()
            .queue_url(url)
            .message_body(format!("message {n}"))
            .send()
    });
    for answer in join_all(sends).await {
        answer.expect("each send answered on its own");
    }
    let mut handles = Vec::new();
    for _ in 0..50 {
        let answer = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(120)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        handles.extend(
            answer
                .messages()
                .iter()
                .map(|m| m.receipt_handle().unwrap().to_owned()),
        );
        if handles.len() == MESSAGES {
            break;
        }
    }
    assert_eq!(handles.len(), MESSAGES);
    handles
}

/// `MESSAGES` SendMessage, then as many single-handle ChangeMessageVisibility and then DeleteMessage
/// requests, all at once: the SQS batch calls each kind made, as the proxy counted them.
async fn single_entry_requests_at_once(fan_in: bool) -> Option<[usize; 3]> {
    if !crate::needs!(on Kind::LocalStack) {
        return None;
    }
    let counter = CountingProxy::start(&localstack_endpoint()).await.unwrap();
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .queue(QueueSpec::standard("orders"))
        .backend_endpoint(&counter.url)
        .sqs_fan_in(fan_in)
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let url = format!("{}/000000000000/orders", gw.base);
    let handles = received(&client, &url).await;
    let changes = handles.iter().map(|handle| {
        client
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(60)
            .send()
    });
    for answer in join_all(changes).await {
        answer.expect("each request answered on its own");
    }
    let deletes = handles.iter().map(|handle| {
        client
            .delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
    });
    for answer in join_all(deletes).await {
        answer.expect("each request answered on its own");
    }
    assert_eq!(gw.backend_depth("orders").await, 0, "every message deleted");
    let calls = [
        counter.seen().of("SendMessageBatch"),
        counter.seen().of("ChangeMessageVisibilityBatch"),
        counter.seen().of("DeleteMessageBatch"),
    ];
    gw.stop().await;
    Some(calls)
}

#[tokio::test]
async fn concurrent_single_entry_requests_share_sqs_calls() {
    let Some([sends, changes, deletes]) = single_entry_requests_at_once(true).await else {
        return;
    };
    // At once, the first goes alone and the rest gather in tens: a handful of calls, where each
    // request alone makes one (a loaded machine spreads them: well under one call a request).
    assert!(sends < MESSAGES / 2, "{sends} send calls for {MESSAGES}");
    assert!(
        changes < MESSAGES / 2,
        "{changes} visibility calls for {MESSAGES}"
    );
    assert!(
        deletes < MESSAGES / 2,
        "{deletes} delete calls for {MESSAGES}"
    );
}

#[tokio::test]
async fn without_fan_in_each_request_makes_its_own_call() {
    let Some(calls) = single_entry_requests_at_once(false).await else {
        return;
    };
    assert_eq!(calls, [MESSAGES; 3]);
}
