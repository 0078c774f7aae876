use super::*;
use crate::backend::embedded::engine::MAX_IN_FLIGHT_STANDARD;
use crate::core::model::{AttributeValue, MessageAttribute, QueueSettings};
use std::num::NonZeroI64;

const T0: i64 = 1_800_000_000_000;

fn queue(name: &str, settings: QueueSettings) -> Queue {
    Queue::new(name, Settings::new(name, &settings).unwrap())
}

fn text(body: &str) -> OutgoingMessage {
    OutgoingMessage {
        body: body.into(),
        ..Default::default()
    }
}

fn grouped(body: &str, group: &str, dedup: &str) -> OutgoingMessage {
    OutgoingMessage {
        body: body.into(),
        group_id: Some(group.into()),
        deduplication_id: Some(dedup.into()),
        ..Default::default()
    }
}

fn bodies(received: &Received) -> Vec<&str> {
    received
        .delivered
        .iter()
        .map(|d| d.message.body().body.as_str())
        .collect()
}

fn receive(queue: &mut Queue, max: usize, visibility: u32, now: i64) -> Received {
    queue.receive(max, visibility, None, true, now, &mut Vec::new())
}

#[test]
fn a_delivery_given_back_undelivered_is_visible_at_once_and_uncounted() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("a"), T0, &mut Vec::new()).unwrap();
    let first = receive(&mut q, 10, 30, T0);
    let (seq, receipt) = (first.delivered[0].seq, first.delivered[0].receipt);
    assert_eq!(
        q.return_undelivered(seq, receipt, T0 + 5, &mut Vec::new()),
        EntryOutcome::Ok
    );
    assert_eq!(
        q.return_undelivered(seq, receipt, T0 + 6, &mut Vec::new()),
        EntryOutcome::Gone,
        "only the current delivery can be given back"
    );
    let again = receive(&mut q, 10, 30, T0 + 10);
    assert_eq!(bodies(&again), ["a"], "visible at once, not after 30 s");
    let state = again.delivered[0].message.state;
    assert_eq!(state.receive_count, 1, "the first take did not count");
    assert_eq!(state.first_received_at.map(NonZeroI64::get), Some(T0 + 10));
    // A later delivery given back keeps the earlier ones' count and first receive time.
    let (seq, receipt) = (again.delivered[0].seq, again.delivered[0].receipt);
    let third = receive(&mut q, 10, 30, T0 + 40_010);
    assert_eq!(third.delivered[0].message.state.receive_count, 2);
    assert_eq!(
        q.return_undelivered(seq, receipt, T0 + 40_020, &mut Vec::new()),
        EntryOutcome::Gone
    );
    let (seq, receipt) = (third.delivered[0].seq, third.delivered[0].receipt);
    q.return_undelivered(seq, receipt, T0 + 40_020, &mut Vec::new());
    let fourth = receive(&mut q, 10, 30, T0 + 40_030);
    assert_eq!(fourth.delivered[0].message.state.receive_count, 2);
    assert_eq!(
        fourth.delivered[0]
            .message
            .state
            .first_received_at
            .map(NonZeroI64::get),
        Some(T0 + 10)
    );
}

#[test]
fn visibility_hides_a_delivery_until_it_ends_and_counts_receives() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("a"), T0, &mut Vec::new()).unwrap();
    let first = receive(&mut q, 10, 30, T0);
    assert_eq!(bodies(&first), ["a"]);
    assert_eq!(first.delivered[0].message.state.receive_count, 1);
    assert!(receive(&mut q, 10, 30, T0 + 29_999).delivered.is_empty());
    let second = receive(&mut q, 10, 30, T0 + 30_000);
    assert_eq!(second.delivered[0].message.state.receive_count, 2);
    assert_eq!(
        second.delivered[0].message.state.first_received_at,
        NonZeroI64::new(T0)
    );
    assert_ne!(first.delivered[0].receipt, second.delivered[0].receipt);
}

/// The REST dialects' rule for a visibility change of a delivery whose timeout ended.
const REFUSE: ExpiredVisibility = ExpiredVisibility::Refuse;

#[test]
fn only_the_current_delivery_deletes_and_a_handle_outlives_its_timeout() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("a"), T0, &mut Vec::new()).unwrap();
    let first = receive(&mut q, 1, 10, T0).delivered.remove(0);
    // The timeout ended but nobody received it again: the handle still works; the REST
    // dialects' rule refuses to extend it, SQS's hides the message again.
    let mut journal = Vec::new();
    assert_eq!(
        q.change_visibility(
            first.seq,
            first.receipt,
            5,
            REFUSE,
            T0 + 20_000,
            &mut journal
        ),
        EntryOutcome::NotInFlight
    );
    assert_eq!(
        q.change_visibility(
            first.seq,
            first.receipt,
            0,
            ExpiredVisibility::Change,
            T0 + 20_000,
            &mut journal
        ),
        EntryOutcome::Ok
    );
    let second = receive(&mut q, 1, 10, T0 + 20_000).delivered.remove(0);
    assert_eq!(
        q.delete(first.seq, first.receipt, &mut journal),
        EntryOutcome::Gone
    );
    assert_eq!(q.len(), 1);
    assert_eq!(
        q.delete(second.seq, second.receipt, &mut journal),
        EntryOutcome::Ok
    );
    assert_eq!(
        q.delete(second.seq, second.receipt, &mut journal),
        EntryOutcome::Gone
    );
    assert!(q.is_empty());
    assert!(journal.contains(&Op::DeleteMessage {
        queue: "q".into(),
        seq: second.seq
    }));
}

#[test]
fn release_and_extend_change_the_deadline_from_now() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("a"), T0, &mut Vec::new()).unwrap();
    let d = receive(&mut q, 1, 30, T0).delivered.remove(0);
    let mut journal = Vec::new();
    assert_eq!(
        q.change_visibility(d.seq, d.receipt, 100, REFUSE, T0 + 10_000, &mut journal),
        EntryOutcome::Ok
    );
    assert!(receive(&mut q, 1, 30, T0 + 109_999).delivered.is_empty());
    assert_eq!(
        q.change_visibility(d.seq, d.receipt, 0, REFUSE, T0 + 50_000, &mut journal),
        EntryOutcome::Ok
    );
    assert_eq!(bodies(&receive(&mut q, 1, 30, T0 + 50_000)), ["a"]);
}

#[test]
fn delays_come_from_the_message_or_the_queue() {
    let mut q = queue(
        "q",
        QueueSettings {
            delay_seconds: Some(5),
            ..Default::default()
        },
    );
    q.send(text("queue delay"), T0, &mut Vec::new()).unwrap();
    q.send(
        OutgoingMessage {
            delay_seconds: Some(0),
            ..text("no delay")
        },
        T0,
        &mut Vec::new(),
    )
    .unwrap();
    q.send(
        OutgoingMessage {
            delay_seconds: Some(60),
            ..text("long delay")
        },
        T0,
        &mut Vec::new(),
    )
    .unwrap();
    assert_eq!(bodies(&receive(&mut q, 10, 600, T0)), ["no delay"]);
    let stats = q.stats(T0);
    assert_eq!((stats.visible, stats.in_flight, stats.delayed), (0, 1, 2));
    assert_eq!(q.next_visible_at(T0), Some(T0 + 5_000));
    assert_eq!(
        bodies(&receive(&mut q, 10, 600, T0 + 5_000)),
        ["queue delay"]
    );
    assert_eq!(
        bodies(&receive(&mut q, 10, 600, T0 + 60_000)),
        ["long delay"]
    );
    let error = q.send(
        OutgoingMessage {
            delay_seconds: Some(901),
            ..text("x")
        },
        T0,
        &mut Vec::new(),
    );
    assert_eq!(error.unwrap_err().kind, EntryErrorKind::InvalidParameter);
}

#[test]
fn retention_deletes_old_messages() {
    let mut q = queue(
        "q",
        QueueSettings {
            retention_seconds: Some(60),
            ..Default::default()
        },
    );
    q.send(text("old"), T0, &mut Vec::new()).unwrap();
    q.send(text("new"), T0 + 30_000, &mut Vec::new()).unwrap();
    let mut journal = Vec::new();
    q.expire(T0 + 60_000, &mut journal);
    assert_eq!(q.len(), 1);
    assert_eq!(bodies(&receive(&mut q, 10, 30, T0 + 60_000)), ["new"]);
    assert!(matches!(journal[0], Op::DeleteMessage { .. }));
    assert_eq!(q.stats(T0 + 60_000).oldest_age_seconds, Some(30));
}

#[test]
fn a_moved_message_expires_by_its_own_send_time_not_its_place() {
    let mut dlq = queue(
        "dlq",
        QueueSettings {
            retention_seconds: Some(60),
            ..Default::default()
        },
    );
    dlq.send(text("newer"), T0 + 50_000, &mut Vec::new())
        .unwrap();
    let moved = Moving {
        from_queue: "src".into(),
        from_seq: 9,
        message: Message {
            state: State {
                receive_count: 3,
                first_received_at: NonZeroI64::new(T0),
                visible_at: T0,
                receipt: None,
            },
            sent_at: T0,
            group_id: None,
            held: Held::Cached(Arc::new(Body {
                id: "old".into(),
                body: "moved".into(),
                attributes: BTreeMap::new(),
                sent_at: T0,
                group_id: None,
                dead_letter_source_arn: None,
                deduplication_id: None,
                trace_header: None,
            })),
        },
    };
    dlq.accept_dead_letter(moved, "arn:src", T0 + 55_000, &mut Vec::new());
    assert_eq!(dlq.stats(T0 + 55_000).oldest_age_seconds, Some(55));
    dlq.expire(T0 + 60_000, &mut Vec::new());
    assert_eq!(dlq.len(), 1, "the moved message expired behind a newer one");
    assert_eq!(bodies(&receive(&mut dlq, 10, 30, T0 + 60_000)), ["newer"]);
}

#[test]
fn size_body_and_attributes_are_checked() {
    let mut q = queue(
        "q",
        QueueSettings {
            max_message_bytes: Some(1024),
            ..Default::default()
        },
    );
    let fits = "x".repeat(1024);
    assert!(q.send(text(&fits), T0, &mut Vec::new()).is_ok());
    let mut over = text(&fits[..1000]);
    over.attributes.insert(
        "name".into(),
        MessageAttribute {
            data_type: "String".into(),
            value: AttributeValue::Text("y".repeat(20)),
        },
    );
    assert_eq!(
        q.send(over, T0, &mut Vec::new()).unwrap_err().kind,
        EntryErrorKind::InvalidParameter
    );
    assert_eq!(
        q.send(text(""), T0, &mut Vec::new()).unwrap_err().kind,
        EntryErrorKind::MissingParameter
    );
    assert_eq!(
        q.send(text("bad \u{1}"), T0, &mut Vec::new())
            .unwrap_err()
            .kind,
        EntryErrorKind::InvalidContents
    );
    let mut not_a_number = text("n");
    not_a_number.attributes.insert(
        "n".into(),
        MessageAttribute {
            data_type: "Number".into(),
            value: AttributeValue::Text("ten".into()),
        },
    );
    assert!(q.send(not_a_number, T0, &mut Vec::new()).is_err());
    assert!(
        Settings::new(
            "q",
            &QueueSettings {
                max_message_bytes: Some(1023),
                ..Default::default()
            }
        )
        .is_err()
    );
    assert!(
        Settings::new(
            "q",
            &QueueSettings {
                max_message_bytes: Some(1_048_577),
                ..Default::default()
            }
        )
        .is_err()
    );
}

#[test]
fn the_in_flight_limit_stops_receives_with_over_limit() {
    let mut q = queue("q", QueueSettings::default());
    for n in 0..(MAX_IN_FLIGHT_STANDARD + 5) {
        q.send(text(&n.to_string()), T0, &mut Vec::new()).unwrap();
    }
    let mut taken = 0;
    while taken < MAX_IN_FLIGHT_STANDARD + 5 {
        let got = receive(&mut q, 10, 600, T0).delivered.len();
        if got == 0 {
            break;
        }
        taken += got;
    }
    assert_eq!(taken, MAX_IN_FLIGHT_STANDARD);
    assert!(
        receive(&mut q, 10, 600, T0).over_limit,
        "SQS answers OverLimit"
    );
    // Once some end, receives take again.
    assert_eq!(receive(&mut q, 10, 600, T0 + 600_000).delivered.len(), 10);
}

/// As SQS: a receive gathers one group's messages before the next group's (the group of the
/// oldest message first), a group is never passed (its first message not visible holds the rest),
/// and a message whose own visibility ended is taken again though later ones of its group are
/// still in flight.
#[test]
fn fifo_gathers_groups_and_never_passes_a_held_message() {
    let mut q = queue("q.fifo", QueueSettings::default());
    for (body, group) in [
        ("a1", "a"),
        ("b1", "b"),
        ("a2", "a"),
        ("b2", "b"),
        ("c1", "c"),
    ] {
        q.send(grouped(body, group, body), T0, &mut Vec::new())
            .unwrap();
    }
    let first = receive(&mut q, 2, 30, T0);
    assert_eq!(bodies(&first), ["a1", "a2"], "one group first");
    assert_eq!(bodies(&receive(&mut q, 10, 600, T0)), ["b1", "b2", "c1"]);
    assert!(bodies(&receive(&mut q, 10, 600, T0)).is_empty());
    // a2 is kept in flight longer; a1's visibility ends: a1 comes back, a2 holds the group.
    let a2 = &first.delivered[1];
    assert_eq!(
        q.change_visibility(a2.seq, a2.receipt, 600, REFUSE, T0, &mut Vec::new()),
        EntryOutcome::Ok
    );
    assert_eq!(bodies(&receive(&mut q, 10, 30, T0 + 30_000)), ["a1"]);
    let seqs: Vec<u64> = first.delivered.iter().map(|d| d.seq).collect();
    // Groups are served in turns: a group just taken from waits behind those it passed.
    let mut q = queue("turns.fifo", QueueSettings::default());
    for (body, group) in [
        ("g1-m1", "g1"),
        ("g2-m1", "g2"),
        ("g2-m2", "g2"),
        ("g3-m1", "g3"),
        ("g1-m2", "g1"),
    ] {
        q.send(grouped(body, group, body), T0, &mut Vec::new())
            .unwrap();
    }
    assert_eq!(
        bodies(&receive(&mut q, 3, 0, T0)),
        ["g1-m1", "g1-m2", "g2-m1"]
    );
    assert_eq!(
        bodies(&receive(&mut q, 10, 0, T0)),
        ["g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"]
    );
    assert!(seqs[0] < seqs[1]);
    assert_eq!(sequence_number(7), "11111111111111111118");
}

#[test]
fn fifo_deduplicates_for_five_minutes_by_id_or_content() {
    let mut q = queue(
        "q.fifo",
        QueueSettings {
            content_based_deduplication: Some(true),
            ..Default::default()
        },
    );
    let first = q
        .send(grouped("x", "g", "id-1"), T0, &mut Vec::new())
        .unwrap();
    let again = q
        .send(
            grouped("other body", "g", "id-1"),
            T0 + 299_999,
            &mut Vec::new(),
        )
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(q.len(), 1);
    // Deleting the message does not forget its deduplication id.
    let d = receive(&mut q, 1, 30, T0).delivered.remove(0);
    q.delete(d.seq, d.receipt, &mut Vec::new());
    assert_eq!(
        q.send(grouped("x", "g", "id-1"), T0 + 1_000, &mut Vec::new())
            .unwrap(),
        first
    );
    assert!(q.is_empty());
    let later = q
        .send(grouped("x", "g", "id-1"), T0 + 300_000, &mut Vec::new())
        .unwrap();
    assert_ne!(later.message_id, first.message_id);
    assert!(later.sequence_number > first.sequence_number);
    // Content-based: same body, no id.
    let by_content = OutgoingMessage {
        deduplication_id: None,
        ..grouped("same", "g", "")
    };
    let one = q
        .send(by_content.clone(), T0 + 300_000, &mut Vec::new())
        .unwrap();
    assert_eq!(
        q.send(by_content, T0 + 300_001, &mut Vec::new()).unwrap(),
        one
    );
}

#[test]
fn fifo_refuses_per_message_delays_and_missing_ids() {
    let mut q = queue("q.fifo", QueueSettings::default());
    let delayed = OutgoingMessage {
        delay_seconds: Some(5),
        ..grouped("x", "g", "d")
    };
    assert_eq!(
        q.send(delayed, T0, &mut Vec::new()).unwrap_err().kind,
        EntryErrorKind::InvalidParameter
    );
    let no_group = OutgoingMessage {
        group_id: None,
        ..grouped("x", "g", "d")
    };
    assert_eq!(
        q.send(no_group, T0, &mut Vec::new()).unwrap_err().kind,
        EntryErrorKind::MissingParameter
    );
    let no_dedup = OutgoingMessage {
        deduplication_id: None,
        ..grouped("x", "g", "d")
    };
    assert!(q.send(no_dedup, T0, &mut Vec::new()).is_err());
    let mut standard = queue("s", QueueSettings::default());
    assert!(
        standard
            .send(grouped("x", "g", "d"), T0, &mut Vec::new())
            .is_err()
    );
}

#[test]
fn fifo_receive_attempts_replay_the_same_deliveries_for_five_minutes() {
    let mut q = queue("q.fifo", QueueSettings::default());
    q.send(grouped("a", "g", "1"), T0, &mut Vec::new()).unwrap();
    q.send(grouped("b", "h", "2"), T0, &mut Vec::new()).unwrap();
    let first = q.receive(1, 600, Some("attempt-1"), true, T0, &mut Vec::new());
    let replay = q.receive(1, 600, Some("attempt-1"), true, T0 + 1_000, &mut Vec::new());
    let key = |r: &Received| {
        r.delivered
            .iter()
            .map(|d| (d.seq, d.receipt))
            .collect::<Vec<_>>()
    };
    assert_eq!(key(&first), key(&replay), "the same messages and receipts");
    assert_eq!(
        replay.delivered[0].message.state.visible_at,
        T0 + 601_000,
        "hidden anew from the retry"
    );
    let other = q.receive(1, 600, Some("attempt-2"), true, T0 + 1_000, &mut Vec::new());
    assert_eq!(bodies(&other), ["b"]);
    let expired = q.receive(
        10,
        600,
        Some("attempt-1"),
        true,
        T0 + 300_000,
        &mut Vec::new(),
    );
    assert!(
        expired.delivered.is_empty(),
        "a new attempt: both groups are in flight"
    );
    // An attempt that got nothing is not remembered: its retry can get messages.
    let mut r = queue("r.fifo", QueueSettings::default());
    let early = r.receive(1, 30, Some("early"), true, T0, &mut Vec::new());
    assert!(early.delivered.is_empty());
    r.send(grouped("late", "g", "l"), T0, &mut Vec::new())
        .unwrap();
    let retried = r.receive(1, 30, Some("early"), true, T0 + 10, &mut Vec::new());
    assert_eq!(bodies(&retried), ["late"]);
}

#[test]
fn redrive_moves_a_message_on_the_receive_after_max_receive_count() {
    let mut q = queue(
        "q",
        QueueSettings {
            dead_letter: Some(("dlq".into(), 2)),
            ..Default::default()
        },
    );
    let sent = q.send(text("poison"), T0, &mut Vec::new()).unwrap();
    assert_eq!(receive(&mut q, 1, 0, T0).delivered.len(), 1);
    assert_eq!(receive(&mut q, 1, 0, T0).delivered.len(), 1);
    let third = receive(&mut q, 1, 0, T0);
    assert!(third.delivered.is_empty());
    assert_eq!(third.dead_lettered.len(), 1);
    assert!(q.is_empty());
    let mut dlq = queue("dlq", QueueSettings::default());
    dlq.accept_dead_letter(third.dead_lettered[0].clone(), &q.arn, T0, &mut Vec::new());
    let moved = receive(&mut dlq, 1, 30, T0).delivered.remove(0);
    assert_eq!(moved.message.body().id, sent.message_id);
    assert_eq!(moved.message.body().body, "poison");
    assert_eq!(
        moved.message.body().dead_letter_source_arn.as_deref(),
        Some(q.arn.as_str())
    );
    // Without its dead-letter queue, the message stays and is delivered.
    let mut orphan = queue(
        "o",
        QueueSettings {
            dead_letter: Some(("gone".into(), 1)),
            ..Default::default()
        },
    );
    orphan.send(text("m"), T0, &mut Vec::new()).unwrap();
    receive(&mut orphan, 1, 0, T0);
    let kept = orphan.receive(1, 0, None, false, T0, &mut Vec::new());
    assert_eq!(kept.delivered.len(), 1);
}

#[test]
fn bodies_beyond_the_cache_leave_memory_once_settled_and_the_cache_counts_what_it_keeps() {
    let cache = Arc::new(BodyCache::new(1_000));
    let settings = Settings::new("q", &QueueSettings::default()).unwrap();
    let mut q = Queue::with_cache("q", settings, Arc::clone(&cache));
    for body in ["a", "b", "c", "d", "e", "f", "g", "h"] {
        q.send(text(&body.repeat(200)), T0, &mut Vec::new())
            .unwrap();
    }
    let held = |q: &Queue| -> Vec<&'static str> {
        q.messages
            .values()
            .map(|message| match message.held {
                Held::Cached(_) => "cached",
                Held::Unsettled(_) => "unsettled",
                Held::Stored => "stored",
            })
            .collect()
    };
    // Each body counts 200 bytes and the fixed part: two fit in 1,000 bytes.
    assert_eq!(held(&q)[..3], ["cached", "cached", "unsettled"]);
    let used = cache.used();
    assert!(used > 400 && used <= 1_000, "{used}");
    // Committed up to the 5th message: the 3rd to 5th leave memory, the rest wait.
    q.settle_before(6);
    assert_eq!(
        held(&q),
        [
            "cached",
            "cached",
            "stored",
            "stored",
            "stored",
            "unsettled",
            "unsettled",
            "unsettled"
        ]
    );
    assert_eq!(q.unsettled(), 3);
    // Received bodies: those in memory come along; the others are the store's to read.
    let received = receive(&mut q, 3, 30, T0);
    assert!(received.delivered[0].message.held.resident().is_some());
    assert_eq!(received.delivered[2].message.held, Held::Stored);
    let first = &received.delivered[0];
    q.delete(first.seq, first.receipt, &mut Vec::new());
    assert!(
        cache.used() < used,
        "a deleted cached body leaves the count"
    );
    drop(q);
    assert_eq!(cache.used(), 0, "a dropped queue's bodies leave the count");
}

#[test]
fn purge_removes_in_flight_messages_too_and_peek_changes_nothing() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("a"), T0, &mut Vec::new()).unwrap();
    q.send(text("b"), T0, &mut Vec::new()).unwrap();
    receive(&mut q, 1, 600, T0);
    let peeked = q.peek(None, 10);
    assert_eq!(peeked.len(), 2);
    assert_eq!(q.peek(None, 10), peeked, "peek changed nothing");
    let mut journal = Vec::new();
    q.purge(&mut journal);
    assert!(q.is_empty());
    assert_eq!(journal, vec![Op::Purge { queue: "q".into() }]);
    assert_eq!(q.stats(T0), QueueStats::default());
}

/// Checks FIFO candidates against a scan of every message: each group's candidates are one run,
/// its first messages in order, all visible; a group stops only at a message not visible (or
/// where the receive was full); no group with a visible first message is left out of a receive
/// that had room.
fn check_fifo_candidates(queue: &Queue, max: usize, now: i64, taken: &[u64]) -> Result<(), String> {
    let group_of = |seq: &u64| {
        queue.messages[seq]
            .group_id
            .as_deref()
            .unwrap_or_default()
            .to_owned()
    };
    let visible = |seq: &u64| queue.messages[seq].state.visible_at <= now;
    let members = |group: &str| -> Vec<u64> {
        queue
            .messages
            .iter()
            .filter(|(_, m)| m.group_id.as_deref().unwrap_or_default() == group)
            .map(|(seq, _)| *seq)
            .collect()
    };
    if taken.len() > max {
        return Err(format!("{} taken, over {max}", taken.len()));
    }
    let full = taken.len() == max;
    let mut runs: Vec<(String, Vec<u64>)> = Vec::new();
    for seq in taken {
        let group = group_of(seq);
        match runs.last_mut() {
            Some((last, run)) if *last == group => run.push(*seq),
            _ => {
                if runs.iter().any(|(other, _)| *other == group) {
                    return Err(format!("group {group} taken in two runs: {taken:?}"));
                }
                runs.push((group, vec![*seq]));
            }
        }
    }
    for (index, (group, run)) in runs.iter().enumerate() {
        let all = members(group);
        if all[..run.len()] != run[..] {
            return Err(format!(
                "group {group}: {run:?} is not its first messages {all:?}"
            ));
        }
        if let Some(bad) = run.iter().find(|seq| !visible(seq)) {
            return Err(format!("group {group}: {bad} taken while not visible"));
        }
        let cut_by_max = full && index + 1 == runs.len();
        if let Some(next) = all.get(run.len())
            && visible(next)
            && !cut_by_max
        {
            return Err(format!("group {group}: stopped before visible {next}"));
        }
    }
    if !full {
        for message in queue.messages.values() {
            let group = message.group_id.as_deref().unwrap_or_default();
            let first = members(group)[0];
            if visible(&first) && !runs.iter().any(|(taken, _)| taken == group) {
                return Err(format!("group {group} left out with room to spare"));
            }
        }
    }
    Ok(())
}

#[test]
fn fifo_candidates_keep_the_group_rules_through_random_histories() {
    use rand::{Rng as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for round in 0..40 {
        let mut q = queue("rand.fifo", QueueSettings::default());
        let mut now = T0;
        let mut handles: Vec<(u64, u64)> = Vec::new();
        let mut journal = Vec::new();
        for step in 0..400 {
            match rng.random_range(0..10) {
                0..=3 => {
                    let group = format!("g{}", rng.random_range(0..6));
                    let _ = q.send(
                        grouped("b", &group, &format!("{round}-{step}")),
                        now,
                        &mut journal,
                    );
                }
                4..=5 => {
                    let max = rng.random_range(1..=10);
                    let received =
                        q.receive(max, rng.random_range(0..5), None, false, now, &mut journal);
                    handles.extend(received.delivered.iter().map(|d| (d.seq, d.receipt)));
                }
                6 if !handles.is_empty() => {
                    let (seq, receipt) = handles.swap_remove(rng.random_range(0..handles.len()));
                    q.delete(seq, receipt, &mut journal);
                }
                7 if !handles.is_empty() => {
                    let (seq, receipt) = handles[rng.random_range(0..handles.len())];
                    q.change_visibility(
                        seq,
                        receipt,
                        rng.random_range(0..3),
                        REFUSE,
                        now,
                        &mut journal,
                    );
                }
                8 if rng.random_range(0..20) == 0 => q.purge(&mut journal),
                _ => now += rng.random_range(0..1500),
            }
            q.expire(now, &mut journal);
            for max in [1, 3, 10] {
                let taken = q.fifo_candidates(max, false, now);
                if let Err(broken) = check_fifo_candidates(&q, max, now, &taken) {
                    panic!("round {round}, step {step}, max {max}: {broken}");
                }
            }
        }
    }
}

#[test]
fn a_blocked_groups_backlog_is_not_scanned() {
    let mut q = queue("deep.fifo", QueueSettings::default());
    let mut journal = Vec::new();
    for n in 0..50_000 {
        q.send(grouped("b", "hot", &format!("h{n}")), T0, &mut journal)
            .unwrap();
    }
    q.send(grouped("b", "cold", "c0"), T0, &mut journal)
        .unwrap();
    // The hot group's first message goes in flight: the group is held.
    let first = q.receive(1, 30, None, false, T0, &mut journal);
    assert_eq!(first.delivered.len(), 1);
    let next = q.receive(10, 30, None, false, T0, &mut journal);
    assert_eq!(bodies(&next).len(), 1, "only the cold group's message");
    assert_eq!(
        next.delivered[0].message.body().group_id.as_deref(),
        Some("cold")
    );
    // (The group index visits two heads here, where the scan read 50,001 messages.)
    assert_eq!(q.groups.count(), 2);
}

/// A FIFO queue's messages share their group's id, whether sent or read back from the store.
#[test]
fn messages_of_a_group_share_its_id() {
    let mut q = queue("q.fifo", QueueSettings::default());
    let mut journal = Vec::new();
    for n in 0..3 {
        q.send(grouped("b", "g", &format!("d{n}")), T0, &mut journal)
            .unwrap();
    }
    let group_ids: Vec<Arc<str>> = q
        .messages
        .values()
        .map(|message| message.group_id.clone().unwrap())
        .collect();
    assert!(Arc::ptr_eq(&group_ids[0], &group_ids[1]) && Arc::ptr_eq(&group_ids[1], &group_ids[2]));

    let mut reopened = queue("q.fifo", QueueSettings::default());
    let restored = q
        .messages
        .iter()
        .map(|(seq, message)| {
            let own_copy: Arc<str> = Arc::from(&*message.group_id.clone().unwrap());
            (*seq, message.state, message.sent_at, Some(own_copy))
        })
        .collect();
    reopened.restore_messages(restored, T0);
    let group_ids: Vec<Arc<str>> = reopened
        .messages
        .values()
        .map(|message| message.group_id.clone().unwrap())
        .collect();
    assert!(Arc::ptr_eq(&group_ids[0], &group_ids[2]));
}

#[test]
fn a_message_whose_visibility_ended_goes_back_before_messages_sent_after_it() {
    let mut q = queue("q", QueueSettings::default());
    q.send(text("first"), T0, &mut Vec::new()).unwrap();
    assert_eq!(bodies(&receive(&mut q, 1, 3, T0)), ["first"]);
    q.send(text("second"), T0 + 1_500, &mut Vec::new()).unwrap();
    assert_eq!(
        q.first_visible(T0 + 4_500)
            .map(|(_, m)| m.body().body.clone()),
        Some("first".to_owned())
    );
    assert_eq!(bodies(&receive(&mut q, 1, 3, T0 + 4_500)), ["first"]);
    assert_eq!(bodies(&receive(&mut q, 1, 3, T0 + 4_600)), ["second"]);
    let stats = q.stats(T0 + 4_700);
    assert_eq!((stats.visible, stats.in_flight), (0, 2));
}
