//! The embedded engine across restarts: messages, receive counts, in-flight deadlines, FIFO order
//! and deduplication kept; a store written before the journal opened with everything it held; a
//! purge's forgotten deduplication ids and per-group deduplication surviving a restart.

use super::support::*;
use chrono::Duration as ChronoDuration;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::{Clock as _, SkewClock};
use sqs_gateway::core::model::{EntryOutcome, ExpiredFifoHandles, OutgoingMessage, QueueSettings};
use std::sync::Arc;

#[tokio::test]
async fn a_restart_keeps_messages_receive_counts_in_flight_deadlines_fifo_order_and_dedup() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(SkewClock::default());
    let (standard, ordered, first_id, in_flight_id) = {
        let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
        let standard = backend
            .create_queue("orders", &QueueSettings::default())
            .await
            .unwrap()
            .url;
        let ordered = backend
            .create_queue("jobs.fifo", &QueueSettings::default())
            .await
            .unwrap()
            .url;
        backend
            .send_batch(
                &standard,
                &[OutgoingMessage {
                    body: "in flight".into(),
                    ..Default::default()
                }],
            )
            .await
            .unwrap();
        let in_flight = backend
            .receive(&standard, &receive(1, 600))
            .await
            .unwrap()
            .remove(0);
        let sent = backend
            .send_batch(
                &standard,
                &[OutgoingMessage {
                    body: "kept".into(),
                    ..Default::default()
                }],
            )
            .await
            .unwrap();
        let first_id = sent[0].as_ref().unwrap().message_id.clone();
        // Received twice (count 2), and visible again at once (visibility 0).
        for _ in 0..2 {
            let got = backend.receive(&standard, &receive(1, 0)).await.unwrap();
            assert_eq!(got[0].body, "kept");
        }
        for (body, dedup) in [("g1", "d1"), ("g2", "d2"), ("g3", "d3")] {
            backend
                .send_batch(&ordered, &[fifo(body, "g", dedup)])
                .await
                .unwrap();
        }
        (standard, ordered, first_id, in_flight.message_id)
    }; // dropped: the store closes

    let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
    let stats = backend.stats(&standard).await.unwrap();
    assert_eq!((stats.visible, stats.in_flight), (1, 1), "{stats:?}");
    let kept = backend
        .receive(&standard, &receive(10, 3_600))
        .await
        .unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].message_id, first_id);
    assert_eq!(kept[0].receive_count, 3, "receive counts survive");
    // The deduplication history survives (within its five minutes).
    let again = backend
        .send_batch(&ordered, &[fifo("g1 again", "g", "d1")])
        .await
        .unwrap();
    // The in-flight message comes back when its deadline passes, not before.
    clock.advance(ChronoDuration::seconds(601));
    let back = backend.receive(&standard, &receive(10, 600)).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].message_id, in_flight_id);
    // FIFO order survives, and the deduplicated resend added nothing.
    let bodies: Vec<String> = backend
        .receive(&ordered, &receive(10, 30))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["g1", "g2", "g3"]);
    assert_eq!(
        again[0]
            .as_ref()
            .unwrap()
            .sequence_number
            .as_deref()
            .map(str::len),
        Some(20)
    );
    // An acknowledged message stays gone after a restart.
    let handle = back[0].backend_handle.clone();
    assert_eq!(
        backend
            .delete_batch(&standard, &[&handle], ExpiredFifoHandles::Delete)
            .await
            .unwrap(),
        [EntryOutcome::Ok]
    );
    drop(backend);
    let backend = EmbeddedBackend::open(dir.path(), clock).unwrap();
    let stats = backend.stats(&standard).await.unwrap();
    assert_eq!(stats.visible + stats.in_flight + stats.delayed, 1);
}

/// A store directory written by the release before the journal (`tests/it/fixtures`: made by
/// that release's binary over its SQS endpoint at [`FIXTURE_WRITTEN_AT`], then stopped): an
/// "in flight" message received for 600 s, "kept" (with an attribute) received twice, and three
/// FIFO messages in group g with deduplication ids d1 to d3.
const FIXTURE_WRITTEN_AT: i64 = 1_796_514_302_657;

/// The release before the journal wrote only `queues.redb`: this one opens it as it is, with
/// every message, count, deadline and deduplication record, and journals from there on.
#[tokio::test]
async fn a_store_written_before_the_journal_opens_with_everything_it_held() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let mut redb = Vec::new();
    flate2::read::GzDecoder::new(
        &include_bytes!("../../fixtures/store-before-journal.redb.gz")[..],
    )
    .read_to_end(&mut redb)
    .unwrap();
    std::fs::write(dir.path().join("queues.redb"), redb).unwrap();
    // The fixture's own time, a minute on: its messages are within their retention.
    let clock = Arc::new(SkewClock::default());
    clock.advance(ChronoDuration::milliseconds(
        FIXTURE_WRITTEN_AT + 60_000 - SkewClock::default().now().timestamp_millis(),
    ));
    let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
    let orders = backend
        .create_queue("orders", &QueueSettings::default())
        .await
        .unwrap()
        .url;
    let jobs = backend
        .create_queue("jobs.fifo", &QueueSettings::default())
        .await
        .unwrap()
        .url;
    let stats = backend.stats(&orders).await.unwrap();
    assert_eq!((stats.visible, stats.in_flight), (1, 1), "{stats:?}");
    let kept = backend.receive(&orders, &receive(10, 3_600)).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].body, "kept");
    assert_eq!(kept[0].message_id, "08f5c9b4-8103-4dcf-9bb9-b79d7b34cb41");
    assert_eq!(kept[0].receive_count, 3);
    assert!(
        kept[0].attributes.contains_key("kind"),
        "{:?}",
        kept[0].attributes
    );
    // Deduplicated within its five minutes: the original's id, nothing added.
    let again = backend
        .send_batch(&jobs, &[fifo("g1 again", "g", "d1")])
        .await
        .unwrap();
    assert_eq!(
        again[0].as_ref().unwrap().message_id,
        "65c47300-5b4f-47bc-94dc-e7fd1ba8896b"
    );
    let bodies: Vec<String> = backend
        .receive(&jobs, &receive(10, 30))
        .await
        .unwrap()
        .into_iter()
        .map(|message| message.body)
        .collect();
    assert_eq!(bodies, ["g1", "g2", "g3"]);
    // The in-flight message's deadline survived too.
    clock.advance(ChronoDuration::seconds(600));
    let back = backend.receive(&orders, &receive(10, 600)).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].body, "in flight");
    // From here on the journal: a delete and a send, then a reopen.
    let handle = back[0].backend_handle.clone();
    assert_eq!(
        backend
            .delete_batch(&orders, &[&handle], ExpiredFifoHandles::Delete)
            .await
            .unwrap(),
        [EntryOutcome::Ok]
    );
    backend
        .send_batch(
            &orders,
            &[OutgoingMessage {
                body: "after".into(),
                ..Default::default()
            }],
        )
        .await
        .unwrap();
    drop(backend);
    assert!(dir.path().join("queues.journal.0").is_file());
    let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
    clock.advance(ChronoDuration::seconds(3_600));
    let mut left: Vec<String> = backend
        .receive(&orders, &receive(10, 30))
        .await
        .unwrap()
        .into_iter()
        .map(|message| message.body)
        .collect();
    left.sort();
    assert_eq!(left, ["after", "kept"]);
}

/// As SQS: a purge forgets the queue's deduplication ids, in memory and in the store, so the same
/// id sent after a purge (and after a restart that follows it) is a new message.
#[tokio::test]
async fn a_purge_forgets_deduplication_ids_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(SkewClock::default());
    let (ordered, first) = {
        let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
        let ordered = backend
            .create_queue("purged.fifo", &QueueSettings::default())
            .await
            .unwrap()
            .url;
        let first = backend
            .send_batch(&ordered, &[fifo("one", "g", "d1")])
            .await
            .unwrap()
            .remove(0)
            .unwrap()
            .message_id;
        backend.purge(&ordered).await.unwrap();
        let after = backend
            .send_batch(&ordered, &[fifo("two", "g", "d1")])
            .await
            .unwrap()
            .remove(0)
            .unwrap()
            .message_id;
        assert_ne!(after, first, "the purge forgot d1");
        backend.purge(&ordered).await.unwrap();
        (ordered, first)
    };
    let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
    let sent = backend
        .send_batch(&ordered, &[fifo("three", "g", "d1")])
        .await
        .unwrap()
        .remove(0)
        .unwrap()
        .message_id;
    assert_ne!(sent, first);
    let bodies: Vec<String> = backend
        .receive(&ordered, &receive(10, 30))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(bodies, ["three"], "after the restart too");
}

/// A FIFO queue's deduplication scope and throughput limit survive a restart, and so do the
/// deduplication ids kept per group under them.
#[tokio::test]
async fn per_group_deduplication_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(SkewClock::default());
    let settings = QueueSettings {
        per_group_deduplication: Some(true),
        per_group_throughput: Some(true),
        ..Default::default()
    };
    let url = {
        let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
        let url = backend
            .create_queue("fast.fifo", &settings)
            .await
            .unwrap()
            .url;
        backend
            .send_batch(&url, &[fifo("g1", "g1", "same")])
            .await
            .unwrap();
        url
    };
    let backend = EmbeddedBackend::open(dir.path(), clock.clone()).unwrap();
    let resolved = backend.resolve("fast.fifo").await.unwrap();
    assert!(resolved.attributes.per_group_deduplication);
    assert!(resolved.attributes.per_group_throughput);
    for (body, group) in [("g1 again", "g1"), ("g2", "g2")] {
        backend
            .send_batch(&url, &[fifo(body, group, "same")])
            .await
            .unwrap();
    }
    let mut bodies: Vec<String> = backend
        .receive(&url, &receive(10, 30))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    bodies.sort();
    assert_eq!(
        bodies,
        ["g1", "g2"],
        "g1's id is remembered, g2's is its own"
    );
}
