//! SQS keys scoped to one tenant's queues: a producer key granted `sqsgw_sb_<workspace>_*`
//! publishes into that workspace's connection queues only, and `ListQueues` shows a tenant's
//! queues only to keys whose grants name them.

use crate::harness::*;
use crate::http::sombus::support::Bus;
use reqwest::StatusCode;
use serde_json::json;

const PRODUCER: &str = "AKIDPRODUCERELSEWHERE";
const PRODUCER_SECRET: &str = "producer-secret-of-the-test";

async fn a_producer_key_scoped_to_a_workspace_reaches_its_queues_only(kind: Kind) {
    let bus = Bus::start_with(
        kind,
        &format!(
            "\n[[sqs_api.credentials]]\naccess_key_id = \"{PRODUCER}\"\nsecret = \"{PRODUCER_SECRET}\"\nqueues = [\"sqsgw_sb_elsewhere_*\"]\nactions = [\"SendMessage\", \"GetQueueUrl\", \"ListQueues\"]\n"
        ),
    )
    .await;
    let ours = bus.create(json!({})).await.queue;
    let created = bus
        .gw
        .http
        .post(format!(
            "{}/v1/admin/workspaces/elsewhere/connections",
            bus.gw.base
        ))
        .bearer_auth(&bus.outsider)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let client_id = created.json::<serde_json::Value>().await.unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let theirs = format!("sqsgw_sb_elsewhere_{client_id}.fifo");

    let producer = bus.gw.sqs_client(PRODUCER, PRODUCER_SECRET);
    let url_of = |name: &str| format!("{}/000000000000/{name}", bus.gw.base);
    let theirs_url = producer
        .get_queue_url()
        .queue_name(&theirs)
        .send()
        .await
        .expect("the workspace's queue is the key's")
        .queue_url
        .unwrap();
    producer
        .send_message()
        .queue_url(&theirs_url)
        .message_body("{\"payload\":{}}")
        .message_group_id("story-1")
        .message_deduplication_id("m-1")
        .send()
        .await
        .expect("a producer of the workspace publishes");
    let crossing = producer
        .send_message()
        .queue_url(url_of(&ours))
        .message_body("{\"payload\":{}}")
        .message_group_id("story-1")
        .message_deduplication_id("m-2")
        .send()
        .await;
    let code = crossing
        .err()
        .and_then(|error| error.into_service_error().meta().code().map(str::to_owned));
    assert_eq!(
        code.as_deref(),
        Some("AccessDenied"),
        "another workspace's queue"
    );
    let listed = producer
        .list_queues()
        .send()
        .await
        .unwrap()
        .queue_urls
        .unwrap_or_default();
    assert!(
        listed.iter().any(|url| url.ends_with(&theirs)),
        "{listed:?}"
    );
    assert!(!listed.iter().any(|url| url.ends_with(&ours)), "{listed:?}");

    // A key on every queue reaches tenants' queues to send, but does not list them.
    let (everything, _) = (bus.gw.sqs_client(SQS_KEY_ID, SQS_SECRET), ());
    let listed = everything
        .list_queues()
        .send()
        .await
        .unwrap()
        .queue_urls
        .unwrap_or_default();
    assert!(
        !listed.iter().any(|url| url.contains("/sqsgw_")),
        "no reserved queue listed for `*`: {listed:?}"
    );
}

crate::on_both_backends!(a_producer_key_scoped_to_a_workspace_reaches_its_queues_only);
