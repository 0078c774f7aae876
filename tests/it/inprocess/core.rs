//! The core through its port: a backend with only the required capabilities (an adapter for a
//! queue service without tags, peeks or redrives) gets a clear unsupported answer for the rest.

use crate::harness::*;
use crate::inprocess::fake::FakeBackend;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SystemClock;
use sqs_gateway::core::model::QueueSettings;
use std::sync::Arc;

#[tokio::test]
async fn optional_capabilities_a_backend_lacks_answer_unsupported() {
    let engine = EmbeddedBackend::in_memory(Arc::new(SystemClock));
    engine
        .create_queue("orders-dlq", &QueueSettings::default())
        .await
        .unwrap();
    engine
        .create_queue(
            "orders",
            &QueueSettings {
                dead_letter: Some(("orders-dlq".into(), 1)),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(
            Arc::new(FakeBackend::required_only(engine)),
            &["orders", "orders-dlq"],
        )
        .managing_queues()
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    client
        .send_message()
        .queue_url(&url)
        .message_body("works")
        .send()
        .await
        .unwrap();
    let (_, dlq_url) = gw.sqs_queue("orders-dlq").await;
    let arn = client
        .get_queue_attributes()
        .queue_url(&dlq_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    let refused = client
        .start_message_move_task()
        .source_arn(&arn)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        Some("AWS.SimpleQueueService.UnsupportedOperation")
    );
    assert!(
        refused
            .message()
            .unwrap_or_default()
            .contains("moving messages out of a dead-letter queue")
    );
    let tags = client
        .tag_queue()
        .queue_url(&url)
        .tags("team", "a")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        tags.code(),
        Some("AWS.SimpleQueueService.UnsupportedOperation")
    );
    gw.stop().await;
}

/// A delivery says when its message becomes visible again.
#[tokio::test]
async fn a_delivery_knows_when_it_is_visible_again() {
    use sqs_gateway::core::access::{Caller, Grants, Principal};
    use sqs_gateway::core::clock::Clock as _;
    use sqs_gateway::core::gateway::ReceiveOptions;
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "soon").await;
    let caller = Caller::new(Principal::Anonymous, Arc::new(Grants::everything()));
    let before = gw.clock.now();
    let deliveries = gw
        .gateway
        .receive(
            &caller,
            "orders",
            ReceiveOptions {
                max_messages: 1,
                wait_seconds: Some(1),
                visibility_timeout_seconds: Some(90),
                attempt_id: None,
                wait_out_over_limit: false,
                one_per_group: false,
                keep_claims: false,
            },
        )
        .await
        .unwrap();
    let after = gw.clock.now();
    let visible_at = deliveries[0].visible_at;
    assert!(visible_at >= before + chrono::Duration::seconds(90));
    assert!(visible_at <= after + chrono::Duration::seconds(90));
    gw.stop().await;
}

/// A purge ends every delivery of its queue even where the backend's purge is slow (SQS takes up
/// to a minute): an old handle then answers stale and deletes nothing.
#[tokio::test]
async fn after_a_purge_old_handles_are_stale_whatever_the_backend_still_holds() {
    let engine = EmbeddedBackend::in_memory(Arc::new(SystemClock));
    engine
        .create_queue("orders", &QueueSettings::default())
        .await
        .unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(
            Arc::new(FakeBackend::required_only(engine).lazy_purge()),
            &["orders"],
        )
        .managing_queues()
        .start()
        .await;
    gw.send("orders", "doomed").await;
    let messages = gw
        .receive_ok(
            "orders",
            serde_json::json!({ "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    let handle = handle_of(&messages[0]).to_owned();
    let (client, url) = gw.sqs_queue("orders").await;
    client.purge_queue().queue_url(&url).send().await.unwrap();
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![stale()]);
    assert_eq!(
        gw.backend_depth("orders").await,
        1,
        "the old handle deleted nothing"
    );
    gw.stop().await;
}
