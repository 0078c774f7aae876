//! The embedded engine under `kill -9`: in the middle of a load of sends, and of sends, receives
//! and deletes, no answered send or delete is lost.

use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn sigkill_mid_load_loses_no_answered_send() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sqs-gateway-bench"))
        .args(["load", "--queue", "crash", "--data-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (ids_tx, ids_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if ids_tx.send(line).is_err() {
                break;
            }
        }
    });
    // Let a few thousand sends be answered, then kill without warning, mid-write.
    let mut answered = BTreeSet::new();
    while answered.len() < 3_000 {
        let id = ids_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the load answers sends");
        answered.insert(id);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    // Whatever the load printed before it died was answered (durable) too.
    answered.extend(ids_rx.try_iter());

    let backend = EmbeddedBackend::open(dir.path(), Arc::new(SkewClock::default())).unwrap();
    let url = backend.resolve("crash").await.unwrap().url;
    let stored: BTreeSet<String> = backend
        .peek(&url, None, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.message_id)
        .collect();
    let lost: Vec<&String> = answered.difference(&stored).collect();
    assert!(
        lost.is_empty(),
        "{} answered sends lost, e.g. {:?}",
        lost.len(),
        lost.first()
    );
    assert!(stored.len() >= answered.len());
}

/// What is durable when, proven with `kill -9` under a load of sends, receives and deletes through
/// the gateway: an answered send is never lost, an answered delete never comes back; receives are
/// answered before their commit, so a crash may only make a received message visible again.
#[tokio::test]
async fn sigkill_under_send_receive_delete_keeps_answered_sends_and_deletes() {
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[backend]\nkind = \"embedded\"\ndata_dir = \"{}\"\n\n[queues.crash]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[[sqs_api.credentials]]\naccess_key_id = \"test\"\nsecret = \"crash-secret-of-the-test\"\n",
            dir.path().join("data").display(),
            sqs_gateway::core::handle::Keyring::generate_key()
        ),
    )
    .unwrap();
    let mut gateway = tokio::process::Command::new(env!("CARGO_BIN_EXE_sqs-gateway"))
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    for _ in 0..200 {
        if http.get(format!("{base}/readyz")).send().await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let client = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&crate::harness::sdk_config(&base))
            .credentials_provider(aws_sdk_sqs::config::Credentials::new(
                "test",
                "crash-secret-of-the-test",
                None,
                None,
                "test",
            ))
            .build(),
    );
    let url = format!("{base}/000000000000/crash");
    let sent = Arc::new(Mutex::new(BTreeSet::new()));
    // Deletes asked for (a delete in flight at the kill may have committed unanswered), and
    // deletes answered.
    let asked = Arc::new(Mutex::new(BTreeSet::new()));
    let deleted = Arc::new(Mutex::new(BTreeSet::new()));
    // The newest handle of each message left in flight, and the handles of answered deletes.
    let in_flight = Arc::new(Mutex::new(std::collections::BTreeMap::new()));
    let deleted_handles = Arc::new(Mutex::new(Vec::new()));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut load = Vec::new();
    for producer in 0..2 {
        let (client, url, sent, stop) = (client.clone(), url.clone(), sent.clone(), stop.clone());
        load.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                let entries = (0..10)
                    .map(|i| {
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(format!("e{i}"))
                            .message_body(format!("{producer}-{n}-{i}"))
                            .build()
                            .unwrap()
                    })
                    .collect();
                n += 1;
                if let Ok(answer) = client
                    .send_message_batch()
                    .queue_url(&url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                {
                    let mut sent = sent.lock().unwrap();
                    sent.extend(answer.successful.into_iter().map(|entry| entry.message_id));
                }
            }
        }));
    }
    for _ in 0..2 {
        let (client, url, asked, deleted, stop) = (
            client.clone(),
            url.clone(),
            asked.clone(),
            deleted.clone(),
            stop.clone(),
        );
        let (in_flight, deleted_handles) = (in_flight.clone(), deleted_handles.clone());
        load.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                let Ok(received) = client
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .send()
                    .await
                else {
                    continue;
                };
                let messages = received.messages.unwrap_or_default();
                // Every other message is deleted; the rest stay in flight, received but not done.
                let to_delete: Vec<_> = messages.iter().step_by(2).collect();
                in_flight
                    .lock()
                    .unwrap()
                    .extend(messages.iter().skip(1).step_by(2).map(|message| {
                        (
                            message.message_id.clone().unwrap(),
                            message.receipt_handle.clone().unwrap(),
                        )
                    }));
                if to_delete.is_empty() {
                    continue;
                }
                asked.lock().unwrap().extend(
                    to_delete
                        .iter()
                        .map(|message| message.message_id.clone().unwrap()),
                );
                let entries = to_delete
                    .iter()
                    .enumerate()
                    .map(|(i, message)| {
                        aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                            .id(format!("d{i}"))
                            .receipt_handle(message.receipt_handle.clone().unwrap())
                            .build()
                            .unwrap()
                    })
                    .collect();
                if let Ok(answer) = client
                    .delete_message_batch()
                    .queue_url(&url)
                    .set_entries(Some(entries))
                    .send()
                    .await
                {
                    let mut deleted = deleted.lock().unwrap();
                    for entry in answer.successful {
                        let index: usize = entry.id[1..].parse().unwrap();
                        deleted.insert(to_delete[index].message_id.clone().unwrap());
                        deleted_handles
                            .lock()
                            .unwrap()
                            .push(to_delete[index].receipt_handle.clone().unwrap());
                    }
                }
            }
        }));
    }
    // Load until a few thousand sends and some deletes were answered, then kill without warning.
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if sent.lock().unwrap().len() >= 3_000 && deleted.lock().unwrap().len() >= 300 {
            break;
        }
    }
    gateway.start_kill().unwrap();
    gateway.wait().await.unwrap();
    stop.cancel();
    for task in load {
        let _ = task.await;
    }
    let (sent, asked, deleted) = (
        sent.lock().unwrap().clone(),
        asked.lock().unwrap().clone(),
        deleted.lock().unwrap().clone(),
    );
    assert!(
        sent.len() >= 3_000 && deleted.len() >= 300,
        "{} sent, {} deleted",
        sent.len(),
        deleted.len()
    );

    let backend =
        EmbeddedBackend::open(&dir.path().join("data"), Arc::new(SkewClock::default())).unwrap();
    let url = backend.resolve("crash").await.unwrap().url;
    let stored: BTreeSet<String> = backend
        .peek(&url, None, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.message_id)
        .collect();
    let lost: Vec<&String> = sent
        .difference(&asked)
        .filter(|id| !stored.contains(*id))
        .collect();
    assert!(lost.is_empty(), "{} answered sends lost", lost.len());
    let back: Vec<&String> = deleted.intersection(&stored).collect();
    assert!(back.is_empty(), "{} answered deletes came back", back.len());
    drop(backend);

    // The gateway again: a handle from before the kill still acts (its message is deleted), an
    // answered delete's handle finds nothing to act on. (A handle whose receive the kill lost is
    // an earlier delivery's now: as on SQS, it changes the current delivery's visibility and its
    // delete succeeds without deleting.)
    let mut gateway = tokio::process::Command::new(env!("CARGO_BIN_EXE_sqs-gateway"))
        .args(["serve", "--config"])
        .arg(&config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if let Ok(answer) = http.get(format!("{base}/readyz")).send().await
            && answer.status().is_success()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let url = format!("{base}/000000000000/crash");
    let extend = |handle: String| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            client
                .change_message_visibility()
                .queue_url(&url)
                .receipt_handle(handle)
                .visibility_timeout(600)
                .send()
                .await
        }
    };
    let in_flight: Vec<(String, String)> = in_flight
        .lock()
        .unwrap()
        .iter()
        .filter(|(id, _)| !asked.contains(*id))
        .map(|(id, handle)| (id.clone(), handle.clone()))
        .take(100)
        .collect();
    let deleted_handles: Vec<String> = deleted_handles.lock().unwrap().clone();
    for handle in deleted_handles.iter().take(100) {
        let refused = extend(handle.clone()).await.unwrap_err();
        let code = refused
            .into_service_error()
            .meta()
            .code()
            .map(str::to_owned);
        assert_eq!(
            code.as_deref(),
            Some("InvalidParameterValue"),
            "an answered delete's handle finds its message gone after the kill"
        );
    }
    for (_, handle) in &in_flight {
        client
            .delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
            .await
            .unwrap();
    }
    gateway.start_kill().unwrap();
    gateway.wait().await.unwrap();
    let backend =
        EmbeddedBackend::open(&dir.path().join("data"), Arc::new(SkewClock::default())).unwrap();
    let url = backend.resolve("crash").await.unwrap().url;
    let stored: BTreeSet<String> = backend
        .peek(&url, None, usize::MAX)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.message.message_id)
        .collect();
    let acted = in_flight
        .iter()
        .filter(|(id, _)| !stored.contains(id))
        .count();
    assert!(
        acted > 0,
        "handles from before the kill still act (none of {} deleted)",
        in_flight.len()
    );
}
