//! The embedded engine's disk and wake-ups: a full disk answers 503 and heals when space returns,
//! bodies kept on disk only are read back for every use, and a send wakes as many waiting receives
//! as it has messages.

use super::support::*;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use sqs_gateway::core::model::{BackendReceive, OutgoingMessage, QueueSettings};
use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// A small filesystem of its own (tmpfs), unmounted on drop; `None` where mounting is not allowed.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(bytes: u64) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        mounted.then_some(Self { dir })
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        // Lazily: a store a failed test left open must not keep the mount around.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills the disk under the data directory until sends fail, frees space, and checks that the
/// gateway serves again without a restart, with exactly the answered messages (no phantoms).
#[tokio::test]
async fn a_full_disk_answers_503_and_heals_when_space_returns() {
    let Some(disk) = SmallDisk::mount(8 * 1024 * 1024) else {
        // CI runs as root, where this test runs; a developer without root sees why it did not.
        eprintln!(
            "SKIPPED a_full_disk_answers_503_and_heals_when_space_returns: cannot mount a tmpfs (needs root)"
        );
        return;
    };
    let data = disk.path().join("data");
    // Most of the disk goes to a file we delete later: the store gets about 1.5 MiB.
    let filler = disk.path().join("filler");
    std::fs::write(&filler, vec![0u8; 6 * 1024 * 1024 + 512 * 1024]).unwrap();
    let config = sqs_gateway::config::Config::parse(&format!(
        "[backend]\nkind = \"embedded\"\ndata_dir = \"{}\"\n\n[queues.fill]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[[sqs_api.credentials]]\naccess_key_id = \"AKIDDISK\"\nsecret = \"disk-secret-of-the-test\"\n",
        data.display(),
        sqs_gateway::core::handle::Keyring::generate_key()
    ))
    .unwrap();
    let app = sqs_gateway::server::App::build(&config, Default::default())
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = app.shutdown_token();
    let server = tokio::spawn(app.serve(listener));
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(&base)
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            aws_sdk_sqs::config::Credentials::new(
                "AKIDDISK",
                "disk-secret-of-the-test",
                None,
                None,
                "test",
            ),
        ))
        .retry_config(aws_config::retry::RetryConfig::disabled())
        .build();
    let client = aws_sdk_sqs::Client::new(&sdk);
    let url = format!("{base}/000000000000/fill");
    let body = "x".repeat(64 * 1024);
    let http = reqwest::Client::new();
    let ready = || {
        let http = http.clone();
        let base = base.clone();
        async move {
            http.get(format!("{base}/readyz"))
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(ready().await, reqwest::StatusCode::OK);

    let mut answered = BTreeSet::new();
    let mut refused = 0;
    for n in 0..200 {
        match client
            .send_message()
            .queue_url(&url)
            .message_body(format!("{n}:{body}"))
            .send()
            .await
        {
            Ok(sent) => {
                answered.insert(sent.message_id.unwrap());
            }
            Err(error) => {
                let error = error.into_service_error();
                assert_eq!(error.meta().code(), Some("ServiceUnavailable"), "{error:?}");
                refused += 1;
                if refused == 3 {
                    break;
                }
            }
        }
    }
    assert_eq!(
        refused,
        3,
        "the disk filled up ({} sends answered)",
        answered.len()
    );
    assert!(!answered.is_empty());
    assert_eq!(ready().await, reqwest::StatusCode::SERVICE_UNAVAILABLE);

    // Space returns: within the reopen backoff, sends work again and nothing refused is there.
    std::fs::remove_file(&filler).unwrap();
    let mut healed = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if let Ok(sent) = client
            .send_message()
            .queue_url(&url)
            .message_body("after")
            .send()
            .await
        {
            answered.insert(sent.message_id.unwrap());
            healed = true;
            break;
        }
    }
    assert!(healed, "sends work again once space returns");
    assert_eq!(ready().await, reqwest::StatusCode::OK);
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .send()
        .await
        .unwrap();
    let count: usize = attributes.attributes().unwrap()
        [&aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages]
        .parse()
        .unwrap();
    assert_eq!(
        count,
        answered.len(),
        "exactly the answered sends, no phantoms"
    );
    let mut received = BTreeSet::new();
    loop {
        let got = client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        if got.messages().is_empty() {
            break;
        }
        received.extend(got.messages().iter().filter_map(|m| m.message_id.clone()));
    }
    assert_eq!(received, answered);
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

/// Waiting receives are woken one at a time, each taker waking the next: a batch of ten sends
/// reaches ten waiters asking for one message each, and the rest keep waiting.
#[tokio::test]
async fn a_send_reaches_as_many_waiting_receives_as_it_has_messages() {
    let backend = EmbeddedBackend::in_memory(Arc::new(SkewClock::default()));
    let url = backend
        .create_queue("waited", &QueueSettings::default())
        .await
        .unwrap()
        .url;
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    for _ in 0..50 {
        let backend = Arc::clone(&backend);
        let url = url.clone();
        let answers = answers.clone();
        waiters.push(tokio::spawn(async move {
            let request = BackendReceive {
                wait_seconds: 20,
                ..receive(1, 30)
            };
            let got = backend.receive(&url, &request).await.unwrap();
            let _ = answers.send(got.len());
        }));
    }
    // Let every receive start waiting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let batch: Vec<OutgoingMessage> = (0..10)
        .map(|n| OutgoingMessage {
            body: format!("m{n}"),
            ..Default::default()
        })
        .collect();
    backend.send_batch(&url, &batch).await.unwrap();
    let mut delivered = 0;
    while delivered < 10 {
        let got = tokio::time::timeout(Duration::from_secs(5), answered.recv())
            .await
            .expect("every message reaches a waiter")
            .unwrap();
        assert_eq!(got, 1, "a woken receive takes what it asked for");
        delivered += got;
    }
    // Nothing more to take: the others go on waiting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(answered.try_recv().is_err());
    assert_eq!(waiters.iter().filter(|w| w.is_finished()).count(), 10);
    // A later single send wakes one more.
    backend.send_batch(&url, &batch[..1]).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), answered.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, 1);
    backend.shutting_down();
    for waiter in waiters {
        let _ = waiter.await;
    }
}

/// With no room to cache bodies, every body lives on disk only once its send is answered: receives,
/// dead-letter moves, redrives and peeks read it back, attributes and all, and so does a reopen
/// (which reads the messages' states, not their bodies).
#[tokio::test]
async fn bodies_kept_on_disk_only_are_read_back_for_receives_moves_redrives_and_peeks() {
    use crate::harness::{GatewayBuilder, Kind};
    use aws_sdk_sqs::primitives::Blob;
    use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName};
    use sqs_gateway::backend::embedded::EmbeddedConfig;

    let dir = tempfile::tempdir().unwrap();
    let config = EmbeddedConfig {
        data_dir: dir.path().to_owned(),
        body_cache_mib: 0,
        ..EmbeddedConfig::default()
    };
    let open = || EmbeddedBackend::from_config(&config, Arc::new(SkewClock::default())).unwrap();
    let backend = open();
    backend
        .create_queue("disk-dlq", &QueueSettings::default())
        .await
        .unwrap();
    let settings = QueueSettings {
        dead_letter: Some(("disk-dlq".into(), 1)),
        ..QueueSettings::default()
    };
    backend.create_queue("disk", &settings).await.unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(backend.clone(), &["disk", "disk-dlq"])
        .managing_queues()
        .start()
        .await;
    let (client, url) = gw.sqs_queue("disk").await;
    let (_, dlq_url) = gw.sqs_queue("disk-dlq").await;
    let body = "é".repeat(3000);
    client
        .send_message()
        .queue_url(&url)
        .message_body(&body)
        .message_attributes(
            "kind",
            MessageAttributeValue::builder()
                .data_type("String")
                .string_value("order")
                .build()
                .unwrap(),
        )
        .message_attributes(
            "blob",
            MessageAttributeValue::builder()
                .data_type("Binary")
                .binary_value(Blob::new(vec![0, 1, 2]))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let receive = |queue: &str| {
        client
            .receive_message()
            .queue_url(queue)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .message_attribute_names("All")
            .message_system_attribute_names(MessageSystemAttributeName::All)
    };
    let first = receive(&url).send().await.unwrap();
    let message = &first.messages()[0];
    assert_eq!(message.body(), Some(body.as_str()));
    let attributes = message.message_attributes().unwrap();
    assert_eq!(attributes["kind"].string_value(), Some("order"));
    assert_eq!(
        attributes["blob"].binary_value().map(Blob::as_ref),
        Some(&[0u8, 1, 2][..])
    );
    let md5 = message.md5_of_body().unwrap().to_owned();

    // The second receive moves it into the dead-letter queue, which reads it from disk.
    assert!(receive(&url).send().await.unwrap().messages().is_empty());
    let moved = receive(&dlq_url).send().await.unwrap();
    let message = &moved.messages()[0];
    assert_eq!(message.body(), Some(body.as_str()));
    assert_eq!(message.md5_of_body(), Some(md5.as_str()));
    let source = message
        .attributes()
        .unwrap()
        .get(&MessageSystemAttributeName::DeadLetterQueueSourceArn)
        .cloned();
    assert_eq!(source.as_deref(), Some(backend_arn("disk").as_str()));

    // A redrive carries it back, from disk again.
    client
        .start_message_move_task()
        .source_arn(backend_arn("disk-dlq"))
        .send()
        .await
        .unwrap();
    let mut back = Vec::new();
    for _ in 0..50 {
        back = backend.peek("disk", None, 10).await.unwrap();
        if !back.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(back.len(), 1, "the redrive brought the message back");
    assert_eq!(back[0].message.body, body);
    assert_eq!(back[0].message.dead_letter_source_arn, None);
    assert_eq!(back[0].message.attributes.len(), 2);
    gw.stop().await;
    drop(backend);

    // A reopen reads states only; the body is still read back whole. Background work of the
    // stopped gateway (samplers, the finished move task) lets go of the store shortly after the
    // server stops: until then the file is still open.
    let mut reopened = None;
    for _ in 0..100 {
        match EmbeddedBackend::from_config(&config, Arc::new(SkewClock::default())) {
            Ok(backend) => {
                reopened = Some(backend);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let backend = reopened.expect("the store reopens once the stopped gateway lets go of it");
    let url = backend.resolve("disk").await.unwrap().url;
    let again = backend.receive(&url, &receive_at_most(10)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].body, body);
    assert_eq!(
        again[0].receive_count, 1,
        "redriven messages start counting again"
    );
    assert_eq!(again[0].attributes.len(), 2);
}

fn backend_arn(queue: &str) -> String {
    format!("arn:aws:sqs:us-east-1:000000000000:{queue}")
}
