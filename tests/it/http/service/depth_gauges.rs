//! The depth gauges on `/metrics`: making many queues cannot push the ones in use out of the
//! sampled set, and the reserved queues (which carry tenant ids) are summed under one label.

use crate::harness::{GatewayBuilder, Kind, QueueSpec, SQS_KEY_ID, SQS_SECRET, sample, scrape};
use std::time::Duration;

/// Scrapes until `ready` holds for the text, or fails with the last one.
async fn scrape_until(gw: &crate::harness::TestGateway, ready: impl Fn(&str) -> bool) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = scrape(gw).await;
        if ready(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("never seen:\n{last}");
}

#[tokio::test]
async fn a_thousand_new_queues_leave_the_queues_in_use_sampled() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nmanage_queues = true\n\n[metrics]\nsample_seconds = 1")
        .start()
        .await;
    let sqs = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    // A queue in use, made before the flood and sorting after it.
    let used = sqs
        .create_queue()
        .queue_name("zz-jobs")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    for n in 0..1_000 {
        gw.backend
            .create_queue(&format!("A{n:04}"), &Default::default())
            .await
            .unwrap();
    }
    gw.send("orders", "one").await;
    sqs.send_message()
        .queue_url(&used)
        .message_body("two")
        .send()
        .await
        .unwrap();
    let text = scrape_until(&gw, |text| {
        sample(text, r#"sqsgw_queue_visible_messages{queue="zz-jobs"}"#) == Some(1.0)
    })
    .await;
    assert_eq!(
        sample(&text, r#"sqsgw_queue_visible_messages{queue="orders"}"#),
        Some(1.0),
        "the configured queue stays sampled"
    );
    let depth_series = text
        .lines()
        .filter(|line| line.starts_with("sqsgw_queue_visible_messages{"))
        .count();
    // At most the sampled 1,000, plus the one `zz-jobs` pushed out when it came into use, if a
    // round sampled before the send: a series no round sets fades after the gauges' idle
    // timeout (a minute), not at once.
    assert!(depth_series <= 1_001, "{depth_series} series");
    gw.stop().await;
}

#[tokio::test]
async fn reserved_queues_are_summed_under_one_label_unless_named() {
    for named in [false, true] {
        let gw = GatewayBuilder::new(Kind::Embedded)
            .config(&format!(
                "[metrics]\nsample_seconds = 1\nname_reserved_queues = {named}"
            ))
            .start()
            .await;
        let mut urls = Vec::new();
        for tenant in ["acme", "globex"] {
            let name = format!("sqsgw_sb_{tenant}_client1");
            gw.backend
                .create_queue(&name, &Default::default())
                .await
                .unwrap();
            let url = gw.backend.resolve(&name).await.unwrap().url;
            let message = sqs_gateway::core::model::OutgoingMessage {
                body: "m".into(),
                ..Default::default()
            };
            gw.backend.send_batch(&url, &[message]).await.unwrap();
            urls.push(url);
        }
        if named {
            let text = scrape_until(&gw, |text| {
                sample(
                    text,
                    r#"sqsgw_queue_visible_messages{queue="sqsgw_sb_globex_client1"}"#,
                ) == Some(1.0)
            })
            .await;
            assert!(!text.contains(r#"queue="sqsgw_*""#), "{text}");
        } else {
            let text = scrape_until(&gw, |text| {
                sample(text, r#"sqsgw_queue_visible_messages{queue="sqsgw_*"}"#) == Some(2.0)
            })
            .await;
            assert!(!text.contains("acme") && !text.contains("globex"), "{text}");
        }
        drop(urls);
        gw.stop().await;
    }
}
