//! The SQS endpoint's message rules as AWS's recorded answers show them, on both backends: a
//! message whose visibility timeout ended is received again before the messages sent after it.

use super::sqs_fidelity::{bodies, create, managing};
use crate::harness::*;
use std::time::Duration;

/// A standard queue gives back a message whose visibility timeout ended before a message sent
/// while it was in flight (SQS's best-effort order is send order, not the time a message last
/// became visible).
async fn a_message_back_from_flight_comes_before_later_sends(kind: Kind) {
    let (gw, client, name) = managing(kind).await;
    let url = create(&client, &name, &[]).await;
    let send = |body: &'static str| {
        client
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
    };
    send("first").await.unwrap();
    let taken = client
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(2)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert_eq!(taken.messages()[0].body(), Some("first"));
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    send("second").await.unwrap();
    // LocalStack makes messages visible again on a one-second sweep: a margin beyond the timeout.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let again = client
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(30)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert_eq!(again.messages()[0].body(), Some("first"));
    assert_eq!(bodies(&client, &url).await, ["second"]);
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

crate::on_kind!(
    on_localstack,
    LocalStack,
    a_message_back_from_flight_comes_before_later_sends
);
crate::on_kind!(
    on_embedded,
    Embedded,
    a_message_back_from_flight_comes_before_later_sends
);
