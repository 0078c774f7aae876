//! The ledger's bound under pressure: deliveries pushed out by other queues' traffic still
//! acknowledge (no caller can make another's acknowledgement answer ok and change nothing).

use crate::harness::*;
use reqwest::StatusCode;
use serde_json::json;

async fn a_delivery_pushed_out_of_the_ledger_by_other_traffic_still_acknowledges(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("victimq"))
        .queue(QueueSpec::standard("attackq"))
        .config("[ledger]\nmax_entries = 100")
        .start()
        .await;
    gw.send("victimq", "the victim's work").await;
    let mine = gw
        .receive_ok(
            "victimq",
            json!({ "waitSeconds": 1, "visibilityTimeoutSeconds": 600 }),
        )
        .await;
    assert_eq!(mine.len(), 1);
    // Another queue's 150 deliveries in flight push the victim's out of a 100-entry ledger.
    for n in 0..150 {
        gw.send("attackq", &format!("flood {n}")).await;
    }
    let mut flooded = 0;
    for _ in 0..40 {
        flooded += gw
            .receive_ok(
                "attackq",
                json!({ "maxMessages": 10, "waitSeconds": 1, "visibilityTimeoutSeconds": 600 }),
            )
            .await
            .len();
        if flooded >= 150 {
            break;
        }
    }
    assert_eq!(flooded, 150);
    let answer = gw.ack(&[handle_of(&mine[0])]).await;
    assert_eq!(
        (answer.status, answer.body),
        (StatusCode::OK, json!({ "results": [ok()] }))
    );
    assert_eq!(gw.backend_depth("victimq").await, 0, "the ack deleted it");
    // The same handle again: the engine knows the message is gone (stale); SQS answers a
    // repeated delete of a deleted message as done, and the gateway passes on its answer.
    if kind == Kind::Embedded {
        let again = gw.ack(&[handle_of(&mine[0])]).await;
        assert_eq!(again.body, json!({ "results": [stale()] }));
    }
    gw.stop().await;
}

crate::on_both_backends!(a_delivery_pushed_out_of_the_ledger_by_other_traffic_still_acknowledges);
