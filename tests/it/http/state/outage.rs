//! The state store's failure policy, through the real HTTP server: a store that cannot answer
//! makes receives, acknowledgements and visibility changes answer unavailable (503 with
//! `Retry-After`) without losing a message or spending a delivery attempt, burst limits let
//! requests through, and daily quotas refuse them unless configured to admit.

use crate::harness::{GatewayBuilder, Kind, QueueSpec, handle_of, ok, results};
use async_trait::async_trait;
use reqwest::StatusCode;
use serde_json::json;
use sqs_gateway::core::clock::Clock;
use sqs_gateway::core::state::ledger::{Standing, UnknownDeliveries};
use sqs_gateway::core::state::{
    Admission, DeliveryKey, InProcessState, LedgerStats, LimitCheck, NewDelivery, StateResult,
    StateStore, StateUnavailable,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The in-process store, failing every call while `down` is set.
struct FlakyState {
    inner: InProcessState,
    down: AtomicBool,
}

impl FlakyState {
    fn new(clock: Arc<dyn Clock>) -> Arc<Self> {
        Arc::new(Self {
            inner: InProcessState::new(
                100_000,
                Duration::from_secs(3600),
                UnknownDeliveries::Stale,
                clock,
            ),
            down: AtomicBool::new(false),
        })
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn up(&self) -> StateResult<()> {
        if self.down.load(Ordering::SeqCst) {
            Err(StateUnavailable("injected outage".into()))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl StateStore for FlakyState {
    async fn record_deliveries(&self, deliveries: &[NewDelivery<'_>]) -> StateResult<()> {
        self.up()?;
        self.inner.record_deliveries(deliveries).await
    }
    async fn standings(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        self.up()?;
        self.inner.standings(deliveries).await
    }
    async fn begin_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        self.up()?;
        self.inner.begin_acks(deliveries).await
    }
    async fn end_deliveries(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        self.up()?;
        self.inner.end_deliveries(deliveries).await
    }
    async fn abort_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        self.up()?;
        self.inner.abort_acks(deliveries).await
    }
    async fn end_queue(&self, queue: &str) -> StateResult<()> {
        self.up()?;
        self.inner.end_queue(queue).await
    }
    async fn keep_answer(&self, key: &str, answer: Vec<u8>) -> StateResult<()> {
        self.up()?;
        self.inner.keep_answer(key, answer).await
    }
    async fn answer(&self, key: &str) -> StateResult<Option<Vec<u8>>> {
        self.up()?;
        self.inner.answer(key).await
    }
    async fn forget_answer(&self, key: &str) -> StateResult<()> {
        self.up()?;
        self.inner.forget_answer(key).await
    }
    async fn admit(&self, limits: &[LimitCheck<'_>]) -> StateResult<Vec<Admission>> {
        self.up()?;
        self.inner.admit(limits).await
    }
    async fn ping(&self) -> StateResult<()> {
        self.up()
    }
    fn ledger_stats(&self) -> LedgerStats {
        self.inner.ledger_stats()
    }
}

async fn start(kind: Kind, extra: &str) -> (crate::harness::TestGateway, Arc<FlakyState>) {
    let clock: Arc<dyn Clock> = Arc::new(sqs_gateway::core::clock::SystemClock);
    let state = FlakyState::new(clock);
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders").visibility_timeout(60))
        .state(state.clone())
        .config(extra)
        .start()
        .await;
    (gw, state)
}

fn unavailable(answer: &crate::harness::Answer) {
    assert_eq!(
        answer.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        answer.body
    );
    assert!(
        answer.headers.contains_key("retry-after"),
        "{:?}",
        answer.headers
    );
    assert!(
        !answer.body.to_string().contains("injected"),
        "no internal detail: {}",
        answer.body
    );
}

async fn a_receive_the_ledger_cannot_record_answers_503_and_loses_nothing(kind: Kind) {
    let (gw, state) = start(kind, "").await;
    gw.send("orders", "m1").await;
    state.set_down(true);
    let refused = gw
        .receive("orders", json!({ "maxMessages": 10, "waitSeconds": 1 }))
        .await;
    unavailable(&refused);
    state.set_down(false);
    let got = gw
        .receive_ok(
            "orders",
            json!({ "maxMessages": 10, "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    assert_eq!(
        got.len(),
        1,
        "the message taken during the outage came back"
    );
    assert_eq!(
        got[0]["receiveCount"], 1,
        "no delivery attempt spent on it: {}",
        got[0]
    );
    let acked = gw.ack(&[handle_of(&got[0])]).await;
    assert_eq!(results(&acked), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

async fn an_ack_the_ledger_cannot_check_answers_503_and_deletes_nothing(kind: Kind) {
    let (gw, state) = start(kind, "").await;
    gw.send("orders", "m1").await;
    let got = gw
        .receive_ok(
            "orders",
            json!({ "maxMessages": 1, "waitSeconds": 5, "visibilityTimeoutSeconds": 60 }),
        )
        .await;
    let handle = handle_of(&got[0]).to_owned();
    state.set_down(true);
    unavailable(&gw.ack(&[&handle]).await);
    unavailable(&gw.visibility(&[(&handle, 120)]).await);
    state.set_down(false);
    assert_eq!(
        gw.backend_depth("orders").await,
        1,
        "the refused ack deleted nothing"
    );
    assert_eq!(results(&gw.visibility(&[(&handle, 120)]).await), vec![ok()]);
    assert_eq!(results(&gw.ack(&[&handle]).await), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

async fn burst_limits_let_requests_through_while_the_store_cannot_count(kind: Kind) {
    let (gw, state) = start(
        kind,
        "[ezgh.organizations.acme]\nrate_limit = { per_second = 1, burst = 1 }\n",
    )
    .await;
    let body = json!({ "maxMessages": 1 });
    assert_eq!(
        gw.receive("orders", body.clone()).await.status,
        StatusCode::OK
    );
    assert_eq!(
        gw.receive("orders", body.clone()).await.status,
        StatusCode::TOO_MANY_REQUESTS,
        "the limit holds while the store counts"
    );
    state.set_down(true);
    for _ in 0..3 {
        assert_eq!(
            gw.receive("orders", body.clone()).await.status,
            StatusCode::OK,
            "an outage of the store does not stop consumers"
        );
    }
    let text = crate::harness::scrape(&gw).await;
    assert!(
        text.contains(r#"sqsgw_state_errors_total{operation="admit",then="admitted"}"#),
        "{text}"
    );
    gw.stop().await;
}

/// A connection's daily quota refuses (503 in the sombus shape) while the store cannot count,
/// unless `state.quotas_when_unavailable = "admit"`.
async fn daily_quotas_refuse_while_the_store_cannot_count_unless_told_to_admit(kind: Kind) {
    for (policy, expected) in [
        ("refuse", StatusCode::SERVICE_UNAVAILABLE),
        ("admit", StatusCode::OK),
    ] {
        let clock: Arc<dyn Clock> = Arc::new(sqs_gateway::core::clock::SystemClock);
        let state = FlakyState::new(clock);
        let builder = GatewayBuilder::new(kind)
            .state(state.clone())
            .state_setting(&format!("quotas_when_unavailable = \"{policy}\""));
        let bus = crate::http::sombus::support::Bus::start_on(
            builder,
            "[sombus.tiers.standard]\nrequests_per_second = 100\nburst = 100\nrequests_per_day = 1000\n",
        )
        .await;
        let created = bus.create(json!({})).await;
        let (t, c) = (bus.workspace.clone(), created.client_id.clone());
        let token = crate::http::sombus::support::token(&bus.gw, &c, &created.secret).await;
        let ok = crate::http::sombus::support::receive(&bus.gw, &token, &t, &c, "wait=0").await;
        assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
        state.set_down(true);
        let during = crate::http::sombus::support::receive(&bus.gw, &token, &t, &c, "wait=0").await;
        assert_eq!(during.status, expected, "{policy}: {}", during.body);
        if expected == StatusCode::SERVICE_UNAVAILABLE {
            assert!(during.headers.contains_key("retry-after"));
            assert_eq!(
                during.body["violations"][0]["rule"], "consumer.queue_unavailable",
                "the document's 503: {}",
                during.body
            );
        }
        state.set_down(false);
        bus.gw.stop().await;
    }
}

/// The SQS endpoint answers its own unavailable error, and the message stays.
async fn the_sqs_endpoint_answers_its_503_while_the_ledger_cannot_record(kind: Kind) {
    let (gw, state) = start(kind, "").await;
    let sqs = gw.sqs_client(crate::harness::SQS_KEY_ID, crate::harness::SQS_SECRET);
    let url = sqs
        .get_queue_url()
        .queue_name("orders")
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body("m1")
        .send()
        .await
        .unwrap();
    state.set_down(true);
    let refused = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(1)
        .send()
        .await
        .expect_err("unavailable");
    let status = refused.raw_response().map(|raw| raw.status().as_u16());
    assert_eq!(status, Some(503), "{refused:?}");
    state.set_down(false);
    let got = sqs
        .receive_message()
        .queue_url(&url)
        .wait_time_seconds(5)
        .message_system_attribute_names(
            aws_sdk_sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(got.messages().len(), 1);
    gw.stop().await;
}

/// Readiness says when the state store does not answer (a load balancer takes the replica out),
/// and is back once it does.
async fn readiness_follows_the_state_store(kind: Kind) {
    let (gw, state) = start(kind, "").await;
    let ready = |gw: &crate::harness::TestGateway| {
        let url = format!("{}/readyz", gw.base);
        let http = gw.http.clone();
        async move { crate::harness::answer(http.get(url).send().await.unwrap()).await }
    };
    assert_eq!(ready(&gw).await.status, StatusCode::OK);
    state.set_down(true);
    let down = ready(&gw).await;
    assert_eq!(
        down.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{}",
        down.body
    );
    assert_eq!(down.body["reason"], "state_store", "{}", down.body);
    state.set_down(false);
    assert_eq!(ready(&gw).await.status, StatusCode::OK);
    gw.stop().await;
}

crate::on_both_backends!(
    readiness_follows_the_state_store,
    the_sqs_endpoint_answers_its_503_while_the_ledger_cannot_record,
    a_receive_the_ledger_cannot_record_answers_503_and_loses_nothing,
    an_ack_the_ledger_cannot_check_answers_503_and_deletes_nothing,
    burst_limits_let_requests_through_while_the_store_cannot_count,
    daily_quotas_refuse_while_the_store_cannot_count_unless_told_to_admit,
);
