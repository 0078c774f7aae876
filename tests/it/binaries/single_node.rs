//! One gateway without a shared store keeps its handles across restarts. On the durable
//! embedded engine the engine keeps each message's current receipt on disk; over SQS the
//! gateway writes its ledger down at a drained stop and takes it in at the next start. Either
//! way a handle from before the restart acts if, and only if, its delivery is still the current
//! one, and after a crash nothing answers ok without acting.

use crate::harness::unique;
use crate::harness::{GatewayBuilder, Kind, QueueSpec, TestGateway, handle_of, ok, results, stale};
use serde_json::json;
use std::path::Path;

/// The next start of `gw`: the same queues, receipt key and directory.
fn restart_of(kind: Kind, dir: &Path, gw: &TestGateway) -> GatewayBuilder {
    let builder = GatewayBuilder::new(kind)
        .durable(dir)
        .queue(QueueSpec::standard("orders"));
    match kind {
        // The engine reopens its files; its queues are the same by name.
        Kind::Embedded => builder.receipt_key(&gw.receipt_key),
        Kind::LocalStack | Kind::Redis | Kind::RedisCluster => builder.replica_of(gw),
    }
}

async fn a_graceful_restart_keeps_every_in_flight_handle_valid(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let gw = GatewayBuilder::new(kind)
        .durable(dir.path())
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
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
    let next = restart_of(kind, dir.path(), &gw);
    gw.stop().await;

    let gw = next.start().await;
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
    let next = restart_of(kind, dir.path(), &gw);
    gw.stop().await;

    // And again: what was acknowledged before a restart stays acknowledged after it.
    let gw = next.start().await;
    assert_eq!(results(&gw.ack(&[&current]).await), vec![stale()]);
    assert_eq!(results(&gw.ack(&[&second]).await), vec![ok()]);
    assert_eq!(gw.backend_depth("orders").await, 0);
    gw.stop().await;
}

#[tokio::test]
async fn on_the_embedded_engine_a_graceful_restart_keeps_every_in_flight_handle_valid() {
    a_graceful_restart_keeps_every_in_flight_handle_valid(Kind::Embedded).await;
}

#[tokio::test]
async fn over_sqs_a_graceful_restart_keeps_every_in_flight_handle_valid() {
    if !crate::needs!(LocalStack) {
        return;
    }
    a_graceful_restart_keeps_every_in_flight_handle_valid(Kind::LocalStack).await;
}

/// What a graceful stop wrote down is taken in once: a crash of the process that took it in
/// leaves nothing to take, so no handle from before the crash acts on a delivery that a later
/// receive (through that process) may have replaced.
#[tokio::test]
async fn over_sqs_a_crash_after_a_graceful_restart_carries_nothing_over() {
    if !crate::needs!(LocalStack) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gw = GatewayBuilder::new(Kind::LocalStack)
        .durable(dir.path())
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "one").await;
    gw.send("orders", "two").await;
    let receive = json!({ "maxMessages": 1, "waitSeconds": 5, "visibilityTimeoutSeconds": 300 });
    let before_stop = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    let next = restart_of(Kind::LocalStack, dir.path(), &gw);
    gw.stop().await;

    let gw = next.start().await;
    let before_crash = handle_of(&gw.receive_ok("orders", receive.clone()).await[0]).to_owned();
    let next = restart_of(Kind::LocalStack, dir.path(), &gw);
    gw.crash().await;

    let gw = next.start().await;
    assert_eq!(
        results(&gw.ack(&[&before_stop, &before_crash]).await),
        vec![stale(), stale()]
    );
    assert_eq!(gw.backend_depth("orders").await, 2, "nothing was deleted");
    gw.stop().await;
}

/// A connection's daily quota is not refilled by a graceful restart, over SQS or the engine.
async fn a_graceful_restart_keeps_todays_quota_counts(kind: Kind) {
    use crate::http::sombus::support::{Bus, receive, token};
    use reqwest::StatusCode;
    let dir = tempfile::tempdir().unwrap();
    let bus = Bus::start_on(
        GatewayBuilder::new(kind).durable(dir.path()),
        "[sombus.tiers.standard]\nrequests_per_second = 1000\nburst = 1000\nrequests_per_day = 5\n",
    )
    .await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let bearer = token(&bus.gw, &c, &created.secret).await;
    for _ in 0..4 {
        let answer = receive(&bus.gw, &bearer, &t, &c, "wait=0").await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    }
    let next = match kind {
        Kind::Embedded => GatewayBuilder::new(kind).receipt_key(&bus.gw.receipt_key),
        _ => bus.replica_builder(kind),
    }
    .durable(dir.path())
    .config(&bus.toml);
    bus.gw.stop().await;

    let gw = next.start().await;
    let bearer = token(&gw, &c, &created.secret).await;
    let last = receive(&gw, &bearer, &t, &c, "wait=0").await;
    assert_eq!(last.status, StatusCode::OK, "the fifth: {}", last.body);
    let over = receive(&gw, &bearer, &t, &c, "wait=0").await;
    assert_eq!(over.status, StatusCode::TOO_MANY_REQUESTS, "{}", over.body);
    gw.stop().await;
}

#[tokio::test]
async fn on_the_embedded_engine_a_graceful_restart_keeps_todays_quota_counts() {
    a_graceful_restart_keeps_todays_quota_counts(Kind::Embedded).await;
}

#[tokio::test]
async fn over_sqs_a_graceful_restart_keeps_todays_quota_counts() {
    if !crate::needs!(LocalStack) {
        return;
    }
    a_graceful_restart_keeps_todays_quota_counts(Kind::LocalStack).await;
}

/// One `sqs-gateway serve` process over the config of a test.
struct Process {
    child: tokio::process::Child,
    base: String,
}

impl Process {
    async fn start(config: &Path) -> Self {
        let port = crate::binary::free_port();
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sqs-gateway"))
            .args(["serve", "--config"])
            .arg(config)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        for _ in 0..400 {
            if let Ok(answer) = reqwest::get(format!("{base}/readyz")).await
                && answer.status().is_success()
            {
                return Self { child, base };
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the gateway did not get ready");
    }

    /// SIGTERM, and the exit of a graceful stop.
    async fn stop(mut self) {
        let pid = self.child.id().unwrap().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        assert!(self.child.wait().await.unwrap().success());
    }

    /// SIGKILL.
    async fn kill(mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

/// Over SQS, one process without a shared store, under sends, receives and acks: a graceful
/// restart keeps the handles in flight working; after a `kill -9` every handle from before
/// answers stale (none answers ok without deleting), no answered send is lost and no message
/// whose ack answered ok comes back.
#[tokio::test]
async fn over_sqs_sigkill_after_a_graceful_restart_under_load_keeps_the_handle_rules() {
    if !crate::needs!(LocalStack) {
        return;
    }
    use std::collections::BTreeSet;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    let sqs = crate::harness::sqs();
    let name = unique("it-node-");
    let backend_url = sqs
        .create_queue()
        .queue_name(&name)
        .attributes(
            aws_sdk_sqs::types::QueueAttributeName::VisibilityTimeout,
            "5",
        )
        .send()
        .await
        .expect("LocalStack answers")
        .queue_url
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key = sqs_gateway::credentials::api_keys::generate_key();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[backend]\nkind = \"sqs\"\nendpoint_url = \"{}\"\nregion = \"us-east-1\"\n\n[queues.node]\nsqs_queue = \"{name}\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[ezgh.organizations.acme.projects.shop]\nqueues = {{ node = \"node\" }}\n\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n[[sqs_api.credentials]]\naccess_key_id = \"test\"\nsecret = \"node-secret-of-the-test\"\n\n[sombus]\ncredentials_dir = {}\n\n[state]\ndir = {}\n",
            crate::harness::localstack_endpoint(),
            sqs_gateway::core::handle::Keyring::generate_key(),
            key.id,
            key.hash,
            toml::Value::String(dir.path().join("sombus").display().to_string()),
            toml::Value::String(dir.path().join("state").display().to_string()),
        ),
    )
    .unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let client_of = |base: &str| {
        aws_sdk_sqs::Client::from_conf(
            aws_sdk_sqs::config::Builder::from(&crate::harness::sdk_config(base))
                .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                    "test",
                    "node-secret-of-the-test",
                    None,
                    None,
                    "test",
                ))
                .build(),
        )
    };
    let receive = {
        let (http, api_key) = (http.clone(), key.key.clone());
        move |base: String, visibility: u32| {
            let (http, api_key) = (http.clone(), api_key.clone());
            async move {
                let answer = http
                    .post(format!(
                        "{base}/v1/organizations/acme/projects/shop/queues/node/messages/receive"
                    ))
                    .bearer_auth(&api_key)
                    .json(&json!({ "maxMessages": 10, "waitSeconds": 1, "visibilityTimeoutSeconds": visibility }))
                    .send()
                    .await
                    .ok()?;
                let body: serde_json::Value = answer.json().await.ok()?;
                body["messages"].as_array().cloned()
            }
        }
    };
    let ack = {
        let http = http.clone();
        move |base: String, handles: Vec<String>| {
            let http = http.clone();
            async move {
                let answer = http
                    .post(format!("{base}/v1/receipts/ack"))
                    .json(&json!({ "receiptHandles": handles }))
                    .send()
                    .await
                    .ok()?;
                let body: serde_json::Value = answer.json().await.ok()?;
                body["results"].as_array().cloned()
            }
        }
    };
    let sent = Arc::new(Mutex::new(BTreeSet::new()));
    let send_batch = |client: aws_sdk_sqs::Client,
                      base: String,
                      sent: Arc<Mutex<BTreeSet<String>>>,
                      n: usize| async move {
        let entries = (0..10)
            .map(|i| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(format!("e{i}"))
                    .message_body(format!("{n}-{i}"))
                    .build()
                    .unwrap()
            })
            .collect();
        if let Ok(answer) = client
            .send_message_batch()
            .queue_url(format!("{base}/000000000000/node"))
            .set_entries(Some(entries))
            .send()
            .await
        {
            let mut sent = sent.lock().unwrap();
            sent.extend(answer.successful.into_iter().map(|entry| entry.message_id));
        }
    };
    let ids_of = |messages: &[serde_json::Value]| -> Vec<String> {
        messages
            .iter()
            .map(|message| message["messageId"].as_str().unwrap().to_owned())
            .collect()
    };
    let handles_of = |messages: &[serde_json::Value]| -> Vec<String> {
        messages
            .iter()
            .map(|message| handle_of(message).to_owned())
            .collect()
    };

    // Before the graceful restart: ten messages held for five minutes.
    let first = Process::start(&config).await;
    for n in 0..3 {
        send_batch(client_of(&first.base), first.base.clone(), sent.clone(), n).await;
    }
    let held = receive(first.base.clone(), 300).await.unwrap();
    assert_eq!(held.len(), 10);
    first.stop().await;

    // After it they still work: half acknowledged, half released.
    let second = Process::start(&config).await;
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let asked: Arc<Mutex<BTreeSet<String>>> = Arc::new(Mutex::new(BTreeSet::new()));
    let (to_ack, to_release) = held.split_at(5);
    asked.lock().unwrap().extend(ids_of(to_ack));
    assert_eq!(
        ack(second.base.clone(), handles_of(to_ack)).await.unwrap(),
        vec![ok(); 5],
        "handles in flight work after a graceful restart"
    );
    acked.extend(ids_of(to_ack));
    let released = http
        .post(format!("{}/v1/receipts/visibility", second.base))
        .json(&json!({ "entries": to_release.iter().map(|message| json!({ "receiptHandle": handle_of(message), "visibilityTimeoutSeconds": 0 })).collect::<Vec<_>>() }))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert_eq!(released["results"], json!(vec![ok(); 5]), "{released}");

    // Load through it, then SIGKILL in the middle of it.
    let acked = Arc::new(Mutex::new(acked));
    let unanswered: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = tokio_util::sync::CancellationToken::new();
    let producer = {
        let (client, base, sent, stop) = (
            client_of(&second.base),
            second.base.clone(),
            sent.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            let mut n = 100;
            while !stop.is_cancelled() {
                send_batch(client.clone(), base.clone(), sent.clone(), n).await;
                n += 1;
            }
        })
    };
    let consumer = {
        let (base, asked, acked, unanswered, stop) = (
            second.base.clone(),
            asked.clone(),
            acked.clone(),
            unanswered.clone(),
            stop.clone(),
        );
        let (receive, ack) = (receive.clone(), ack.clone());
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                let Some(messages) = receive(base.clone(), 5).await else {
                    continue;
                };
                // Every other message is acknowledged; the rest are held.
                let (chosen, kept): (Vec<_>, Vec<_>) = messages
                    .iter()
                    .enumerate()
                    .partition(|(index, _)| index % 2 == 0);
                let chosen: Vec<serde_json::Value> =
                    chosen.into_iter().map(|(_, m)| m.clone()).collect();
                unanswered
                    .lock()
                    .unwrap()
                    .extend(kept.into_iter().map(|(_, m)| handle_of(m).to_owned()));
                if chosen.is_empty() {
                    continue;
                }
                asked.lock().unwrap().extend(ids_of(&chosen));
                if let Some(results) = ack(base.clone(), handles_of(&chosen)).await {
                    let mut acked = acked.lock().unwrap();
                    for (id, result) in ids_of(&chosen).into_iter().zip(results) {
                        if result == ok() {
                            acked.insert(id);
                        }
                    }
                }
            }
        })
    };
    for _ in 0..400 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if sent.lock().unwrap().len() >= 300 && acked.lock().unwrap().len() >= 60 {
            break;
        }
    }
    second.kill().await;
    stop.cancel();
    let _ = producer.await;
    let _ = consumer.await;

    // After the crash nothing is carried over: every handle from before answers stale.
    let third = Process::start(&config).await;
    let before_crash = unanswered.lock().unwrap().clone();
    assert!(!before_crash.is_empty());
    for handles in before_crash.chunks(10) {
        let results = ack(third.base.clone(), handles.to_vec()).await.unwrap();
        assert_eq!(results, vec![stale(); handles.len()]);
    }
    third.stop().await;

    let (sent, asked, acked) = (
        sent.lock().unwrap().clone(),
        asked.lock().unwrap().clone(),
        acked.lock().unwrap().clone(),
    );
    assert!(
        sent.len() >= 300 && acked.len() >= 60,
        "{} sent, {} acknowledged",
        sent.len(),
        acked.len()
    );
    crate::harness::assert_no_send_lost_and_no_ack_back(&sqs, &backend_url, &sent, &asked, &acked)
        .await;
    let _ = sqs.delete_queue().queue_url(&backend_url).send().await;
}
