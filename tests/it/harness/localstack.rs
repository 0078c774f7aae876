//! LocalStack as the tests meet it: its endpoint and an SDK client for it, the sweep of queues
//! earlier runs left, queue attributes read from it, and what is left in a queue after a crash.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_sqs::types::QueueAttributeName;
use sqs_gateway::core::access::RESERVED_QUEUE_PREFIX;
use std::time::Duration;

pub fn localstack_endpoint() -> String {
    std::env::var("LOCALSTACK_ENDPOINT").unwrap_or_else(|_| "http://127.0.0.1:4566".into())
}

/// An AWS config for LocalStack (or, with `endpoint`, for anything else).
pub fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            Credentials::new("test", "test", None, None, "tests"),
        ))
        .build()
}

pub fn sqs() -> Client {
    Client::new(&sdk_config(&localstack_endpoint()))
}

/// The name prefix of the queues the tests make in LocalStack themselves.
pub(super) const TEST_QUEUE_PREFIX: &str = "it-";
/// Name prefixes of the queues the integration tests leave in LocalStack: their own and those the
/// gateway makes (sombus workspaces, basaltic queues), all under its reserved prefix.
const TEST_QUEUE_PREFIXES: [&str; 2] = [TEST_QUEUE_PREFIX, RESERVED_QUEUE_PREFIX];

/// Deletes, once per test run, the test queues that earlier runs left in a long-lived LocalStack
/// (about a hundred a run; CI starts a fresh one). Queues made since this test process started
/// are left alone: tests of this run use them.
pub(super) async fn sweep_earlier_runs() {
    static SWEPT: tokio::sync::OnceCell<usize> = tokio::sync::OnceCell::const_new();
    SWEPT
        .get_or_init(|| async {
            // Without a start time there is no telling this run's queues from earlier ones.
            let Some(started) = process_started_at() else {
                return 0;
            };
            let sqs = sqs();
            let mut swept = 0;
            for prefix in TEST_QUEUE_PREFIXES {
                let Ok(listed) = sqs.list_queues().queue_name_prefix(prefix).send().await else {
                    return swept;
                };
                for url in listed.queue_urls() {
                    let created = queue_attribute(&sqs, url, QueueAttributeName::CreatedTimestamp)
                        .await
                        .and_then(|created| created.parse::<u64>().ok());
                    // A second's margin: LocalStack counts whole seconds.
                    if created.is_some_and(|created| created + 1 < started)
                        && sqs.delete_queue().queue_url(url).send().await.is_ok()
                    {
                        swept += 1;
                    }
                }
            }
            swept
        })
        .await;
}

/// When this test process started, in Unix seconds (Linux: `/proc`).
fn process_started_at() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name: the 22nd field of the line (start time, in clock ticks
    // since boot) is the 20th of them.
    let ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let booted: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // Linux reports these ticks at USER_HZ, 100 a second.
    Some(booted + ticks / 100)
}

pub async fn queue_arn(sqs: &Client, url: &str) -> String {
    queue_attribute(sqs, url, QueueAttributeName::QueueArn)
        .await
        .expect("LocalStack answers the queue's ARN")
}

/// One attribute of a LocalStack queue; `None` when the call fails or the queue has none.
async fn queue_attribute(sqs: &Client, url: &str, name: QueueAttributeName) -> Option<String> {
    sqs.get_queue_attributes()
        .queue_url(url)
        .attribute_names(name.clone())
        .send()
        .await
        .ok()?
        .attributes?
        .remove(&name)
}

/// After a crash under load: once every lease has run out, what is left in the backend queue at
/// `url` (read from LocalStack itself) holds every answered send (`sent` less those a consumer
/// still `asked` for) and no message whose acknowledgement answered ok (`acked`).
pub async fn assert_no_send_lost_and_no_ack_back(
    sqs: &Client,
    url: &str,
    sent: &std::collections::BTreeSet<String>,
    asked: &std::collections::BTreeSet<String>,
    acked: &std::collections::BTreeSet<String>,
) {
    tokio::time::sleep(Duration::from_secs(6)).await;
    let mut left = std::collections::BTreeSet::new();
    let mut empty_rounds = 0;
    while empty_rounds < 3 {
        let received = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(600)
            .send()
            .await
            .unwrap();
        let messages = received.messages.unwrap_or_default();
        if messages.is_empty() {
            empty_rounds += 1;
            continue;
        }
        empty_rounds = 0;
        left.extend(
            messages
                .into_iter()
                .filter_map(|message| message.message_id),
        );
    }
    let lost: Vec<&String> = sent
        .difference(asked)
        .filter(|id| !left.contains(*id))
        .collect();
    assert!(lost.is_empty(), "{} answered sends lost", lost.len());
    let back: Vec<&String> = acked.intersection(&left).collect();
    assert!(
        back.is_empty(),
        "{} acknowledged messages came back",
        back.len()
    );
}
