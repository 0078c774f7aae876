//! Queue management on the SQS endpoint, on both backends: off by default, and when enabled
//! CreateQueue, SetQueueAttributes and DeleteQueue with SQS's name and existence rules.

use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::json;

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

crate::on_both_backends!(
    queue_management_when_enabled,
    queue_management_is_off_by_default,
    create_queue_follows_sqs_rules,
);
