//! One gateway on the durable embedded engine keeps its handles across restarts without a
//! shared store: a handle from before the restart acts if, and only if, its delivery is still
//! the current one (the engine keeps each message's current receipt on disk).

use crate::harness::{GatewayBuilder, Kind, QueueSpec, handle_of, ok, results, stale};
use serde_json::json;

#[tokio::test]
async fn a_graceful_restart_keeps_every_in_flight_handle_valid() {
    let dir = tempfile::tempdir().unwrap();
    let builder = || {
        GatewayBuilder::new(Kind::Embedded)
            .durable(dir.path())
            .queue(QueueSpec::standard("orders"))
    };
    let gw = builder().start().await;
    let key = gw.receipt_key.clone();
    for body in ["one", "two", "three"] {
        gw.send("orders", body).await;
    }
    let receive = json!({ "maxMessages": 1, "waitSeconds": 5, "visibilityTimeoutSeconds": 300 });
    let first = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    let second = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    // The third is received, released and received again: its first handle is outdated.
    let outdated = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    assert_eq!(results(&gw.visibility(&[(&outdated, 0)]).await), vec![ok()]);
    let current = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    let acknowledged = first.clone();
    gw.stop().await;

    let gw = builder().receipt_key(&key).start().await;
    assert_eq!(results(&gw.ack(&[&acknowledged]).await), vec![ok()]);
    assert_eq!(results(&gw.visibility(&[(&second, 600)]).await), vec![ok()]);
    assert_eq!(results(&gw.ack(&[&outdated]).await), vec![stale()]);
    assert_eq!(
        results(&gw.visibility(&[(&outdated, 0)]).await),
        vec![stale()]
    );
    assert_eq!(results(&gw.ack(&[&current]).await), vec![ok()]);
    assert_eq!(results(&gw.ack(&[&first]).await), vec![stale()], "once");
    assert_eq!(gw.backend_depth("orders").await, 1, "the second is left");
    gw.stop().await;

    // And again: what was acknowledged before a restart stays acknowledged after it.
    let gw = builder().receipt_key(&key).start().await;
    assert_eq!(results(&gw.ack(&[&current]).await), vec![stale()]);
    assert_eq!(results(&gw.ack(&[&second]).await), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}
