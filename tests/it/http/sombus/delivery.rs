//! sombus delivery over HTTP on both backends: order per story, attempt replay, the attempt
//! limit and redrive, release delays, per-connection limits counted in a window on a clock the
//! test moves, skill registrations, and the document's curl lines run verbatim.

use super::support::{Bus, post, receive, refused, token};
use crate::harness::Kind;
use chrono::Timelike;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn messages(answer: &crate::harness::Answer) -> Vec<Value> {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.body["messages"].as_array().unwrap().clone()
}

fn handle(message: &Value) -> String {
    message["receipt_handle"].as_str().unwrap().to_owned()
}

/// Two stories interleaved: each keeps its order, and one in flight holds up only its own.
async fn stories_keep_their_order_without_holding_each_other_up(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    for (story, n) in [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3)] {
        bus.publish(&created.queue, story, json!({ "story": story, "n": n }))
            .await;
    }
    let n = |message: &Value| {
        (
            message["correlation_id"].as_str().unwrap().to_owned(),
            message["envelope"]["payload"]["n"].as_i64().unwrap(),
        )
    };
    let pull = |query: &'static str| {
        let (bus, token, t, c) = (&bus, &token, &t, &c);
        async move { messages(&receive(&bus.gw, token, t, c, query).await) }
    };
    let settle = |route: &'static str, message: Value| {
        let (bus, token, t, c) = (&bus, &token, &t, &c);
        async move {
            post(
                &bus.gw,
                token,
                t,
                c,
                route,
                json!({ "receipt_handles": [handle(&message)] }),
            )
            .await
        }
    };
    // One at a time: a1, then b1 (a2 waits behind a1), then nothing until one is acknowledged.
    let first = pull("max=1&wait=1").await;
    assert_eq!(n(&first[0]), ("a".into(), 1));
    let second = pull("max=1&wait=1").await;
    assert_eq!(
        n(&second[0]),
        ("b".into(), 1),
        "story b is not held up by a"
    );
    assert!(pull("max=10&wait=1").await.is_empty());
    settle("ack", first[0].clone()).await;
    // Within one receive too, a story has one message out at a time: a2, not a2 and a3.
    let next = pull("max=10&wait=1").await;
    let order: Vec<(String, i64)> = next.iter().map(n).collect();
    assert_eq!(
        order,
        [("a".to_owned(), 2)],
        "a3 waits behind a2, b behind b1"
    );
    assert_eq!(next[0]["receive_count"], 1);
    // A release puts b1 back first: b1 again (a3 still waits behind a2).
    settle("nack", second[0].clone()).await;
    let again = pull("max=10&wait=1").await;
    let order: Vec<(String, i64)> = again.iter().map(n).collect();
    assert_eq!(order, [("b".to_owned(), 1)]);
    assert_eq!(again[0]["receive_count"], 2);
    // Both acknowledged: each story's next one, once each, never counted before.
    settle("ack", next[0].clone()).await;
    settle("ack", again[0].clone()).await;
    let last = pull("max=10&wait=1").await;
    let mut order: Vec<(String, i64)> = last.iter().map(n).collect();
    order.sort();
    assert_eq!(order, [("a".to_owned(), 3), ("b".to_owned(), 2)]);
    assert!(
        last.iter().all(|message| message["receive_count"] == 1),
        "{last:?}"
    );
}

/// The document's loop (receive up to ten, release one, acknowledge the next) keeps each
/// story's order: a receive never hands out a story's second message beside its first.
async fn the_documents_release_and_ack_loop_keeps_each_storys_order(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    for n in 1..=3 {
        bus.publish(&created.queue, "story-1", json!({ "n": n }))
            .await;
    }
    let mut seen = Vec::new();
    let mut released_once = false;
    for _ in 0..20 {
        let batch = messages(&receive(&bus.gw, &token, &t, &c, "max=10&wait=1").await);
        assert!(
            batch.len() <= 1,
            "one message of the story at a time: {batch:?}"
        );
        let Some(message) = batch.into_iter().next() else {
            if seen.len() == 3 {
                break;
            }
            continue;
        };
        let number = message["envelope"]["payload"]["n"].as_i64().unwrap();
        // Release the first delivery of message 2 once; acknowledge everything else.
        let route = if number == 2 && !released_once {
            released_once = true;
            "nack"
        } else {
            seen.push(number);
            "ack"
        };
        post(
            &bus.gw,
            &token,
            &t,
            &c,
            route,
            json!({ "receipt_handles": [handle(&message)] }),
        )
        .await;
    }
    assert_eq!(
        seen,
        [1, 2, 3],
        "the story's order held through the release"
    );
}

/// A retried attempt after a lost answer gets the same messages and handles back (standard
/// queue too), within five minutes.
async fn an_attempt_is_answered_again_after_a_lost_answer(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "fifo": false })).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    for n in 0..3 {
        bus.publish(&created.queue, "s", json!({ "n": n })).await;
    }
    let mut lost = Vec::new();
    for _ in 0..5 {
        lost.extend(messages(
            &receive(&bus.gw, &token, &t, &c, "max=10&wait=1&attempt=try-1").await,
        ));
        if lost.len() == 3 {
            break;
        }
    }
    // (A standard queue may answer fewer than it has; the first answer is the one "lost".)
    let lost = messages(&receive(&bus.gw, &token, &t, &c, "max=10&wait=1&attempt=try-2").await)
        .into_iter()
        .chain(lost)
        .collect::<Vec<_>>();
    assert!(!lost.is_empty());
    let replay_1 = messages(&receive(&bus.gw, &token, &t, &c, "max=10&wait=0&attempt=try-1").await);
    let replay_2 = messages(&receive(&bus.gw, &token, &t, &c, "max=10&wait=0&attempt=try-1").await);
    let handles = |messages: &[Value]| messages.iter().map(handle).collect::<Vec<_>>();
    assert!(!replay_1.is_empty());
    assert_eq!(
        handles(&replay_1),
        handles(&replay_2),
        "the same messages and handles"
    );
    let acked = post(
        &bus.gw,
        &token,
        &t,
        &c,
        "ack",
        json!({ "receipt_handles": handles(&replay_2) }),
    )
    .await;
    assert!(
        acked.body["failed"].as_array().unwrap().is_empty(),
        "{}",
        acked.body
    );
}

/// After the attempt limit a message moves to the dead-letter queue; a redrive brings it back.
async fn the_attempt_limit_dead_letters_and_a_redrive_brings_back(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus
        .create(json!({ "fifo": false, "attempt_limit": 2 }))
        .await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    let id = bus
        .publish(&created.queue, "s", json!({ "poison": true }))
        .await;
    for attempt in 1..=2 {
        let got = messages(&receive(&bus.gw, &token, &t, &c, "wait=2").await);
        assert_eq!(got.len(), 1, "attempt {attempt}");
        assert_eq!(got[0]["receive_count"], attempt);
        post(
            &bus.gw,
            &token,
            &t,
            &c,
            "nack",
            json!({ "receipt_handles": [handle(&got[0])] }),
        )
        .await;
    }
    assert!(
        messages(&receive(&bus.gw, &token, &t, &c, "wait=1").await).is_empty(),
        "moved after 2 attempts"
    );
    let redrive = bus.step(&c, "/redrive", None).await;
    assert_eq!(redrive.status, StatusCode::ACCEPTED, "{}", redrive.body);
    let mut back = Vec::new();
    for _ in 0..20 {
        back = messages(&receive(&bus.gw, &token, &t, &c, "wait=1").await);
        if !back.is_empty() {
            break;
        }
    }
    assert_eq!(back.len(), 1, "the redrive brings it back");
    assert_eq!(back[0]["envelope"]["message_id"], id);
}

/// A release delay counts from the release; past the 12-hour in-flight cap it is clamped, not refused.
async fn a_release_delay_hides_the_message_and_is_clamped_at_twelve_hours(kind: Kind) {
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({ "fifo": false })).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    bus.publish(&created.queue, "s", json!({})).await;
    bus.publish(&created.queue, "s", json!({})).await;
    let mut got = Vec::new();
    for _ in 0..5 {
        got.extend(messages(
            &receive(&bus.gw, &token, &t, &c, "max=10&wait=1&visibility=30").await,
        ));
        if got.len() == 2 {
            break;
        }
    }
    assert_eq!(got.len(), 2);
    let delayed = post(
        &bus.gw,
        &token,
        &t,
        &c,
        "nack",
        json!({ "receipt_handles": [handle(&got[0])], "delay_seconds": 2 }),
    )
    .await;
    assert_eq!(delayed.body["nacked"].as_array().unwrap().len(), 1);
    let capped = post(
        &bus.gw,
        &token,
        &t,
        &c,
        "nack",
        json!({ "receipt_handles": [handle(&got[1])], "delay_seconds": 43200 }),
    )
    .await;
    assert_eq!(
        capped.body["nacked"].as_array().unwrap().len(),
        1,
        "{}",
        capped.body
    );
    assert!(
        messages(&receive(&bus.gw, &token, &t, &c, "wait=0").await).is_empty(),
        "hidden for its delay"
    );
    let again = messages(&receive(&bus.gw, &token, &t, &c, "wait=5").await);
    assert_eq!(again.len(), 1, "visible again after 2 s");
    assert_eq!(again[0]["envelope"], got[0]["envelope"]);
}

/// A connection's tier: 2 at once, 1 a second, 4 a day (all pull routes count, a long poll once).
async fn limits_count_every_pull_route_per_connection(kind: Kind) {
    let bus = Bus::start_with(
        kind,
        "[sombus.tiers.standard]\nrequests_per_second = 1\nburst = 2\nrequests_per_day = 4\n",
    )
    .await;
    let created = bus.create(json!({})).await;
    let other = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    // Keep clear of midnight: the day's count must not roll over mid-test.
    if bus.gw.clock_now().hour() == 23 && bus.gw.clock_now().minute() >= 58 {
        bus.gw.clock.advance(chrono::Duration::minutes(5));
    }
    // A 1 s long poll (after which the burst is full again), then two more at once: the next
    // is over the rate.
    assert_eq!(
        receive(&bus.gw, &token, &t, &c, "wait=1").await.status,
        StatusCode::OK
    );
    let ack = post(
        &bus.gw,
        &token,
        &t,
        &c,
        "ack",
        json!({ "receipt_handles": ["x"] }),
    )
    .await;
    assert_eq!(ack.status, StatusCode::OK);
    let nack = post(
        &bus.gw,
        &token,
        &t,
        &c,
        "nack",
        json!({ "receipt_handles": ["x"] }),
    )
    .await;
    assert_eq!(nack.status, StatusCode::OK);
    let over = receive(&bus.gw, &token, &t, &c, "wait=0").await;
    assert_eq!(
        refused(&over),
        (StatusCode::TOO_MANY_REQUESTS, "rate.limited".into())
    );
    assert_eq!(over.headers["retry-after"], "1");
    // Another connection has its own allowance.
    let other_token = super::support::token(&bus.gw, &other.client_id, &other.secret).await;
    assert_eq!(
        receive(&bus.gw, &other_token, &t, &other.client_id, "wait=0")
            .await
            .status,
        StatusCode::OK
    );
    bus.gw.clock.advance(chrono::Duration::seconds(1));
    // The long poll counted once (and the refused one not at all): this is the fourth today.
    assert_eq!(
        receive(&bus.gw, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK,
        "the fourth today"
    );
    bus.gw.clock.advance(chrono::Duration::seconds(1));
    let quota = receive(&bus.gw, &token, &t, &c, "wait=0").await;
    assert_eq!(
        refused(&quota),
        (StatusCode::TOO_MANY_REQUESTS, "quota.exceeded".into())
    );
    let now = bus.gw.clock_now();
    let midnight = (now + chrono::Duration::days(1))
        .date_naive()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc();
    let until_midnight = (midnight - now).num_seconds();
    let retry_after: i64 = quota.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (until_midnight..=until_midnight + 2).contains(&retry_after),
        "{retry_after} vs {until_midnight}"
    );
    // The next day the allowance is back (with a new token: the old one's hour may be over).
    bus.gw.clock.advance(chrono::Duration::seconds(retry_after));
    let token = super::support::token(&bus.gw, &c, &created.secret).await;
    assert_eq!(
        receive(&bus.gw, &token, &t, &c, "wait=0").await.status,
        StatusCode::OK
    );
}

/// The registrations bound to the connection, from the registrations file; a file that can't
/// be read is `503 skills.unavailable` with `Retry-After`.
async fn skills_come_from_the_registrations_file(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registrations.json");
    let bus = Bus::start_with(
        kind,
        &format!("registrations_file = \"{}\"\n", file.display()),
    )
    .await;
    let created = bus.create(json!({})).await;
    let (t, c) = (bus.workspace.clone(), created.client_id.clone());
    let token = token(&bus.gw, &c, &created.secret).await;
    let skills = |token: String| {
        let url = format!("{}/v1/tenants/{t}/consumers/{c}/skills", bus.gw.base);
        let http = bus.gw.http.clone();
        async move {
            crate::harness::answer(http.get(url).bearer_auth(token).send().await.unwrap()).await
        }
    };
    let missing = skills(token.clone()).await;
    assert_eq!(
        refused(&missing),
        (StatusCode::SERVICE_UNAVAILABLE, "skills.unavailable".into())
    );
    assert!(missing.headers.contains_key("retry-after"));
    let registration = json!({ "instance_id": "i-1", "skill": "summarize", "values": { "tone": "dry" }, "authority_scale": 3 });
    std::fs::write(
        &file,
        json!({ t.clone(): { c.clone(): [registration.clone()] } }).to_string(),
    )
    .unwrap();
    let read = skills(token.clone()).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, json!({ "registrations": [registration] }));
    std::fs::write(&file, "{ not json").unwrap();
    assert_eq!(
        refused(&skills(token.clone()).await).1,
        "skills.unavailable"
    );
    std::fs::write(&file, json!({ t.clone(): {} }).to_string()).unwrap();
    assert_eq!(skills(token).await.body, json!({ "registrations": [] }));
}

/// The document's token and receive lines, verbatim but for the base URL, then its ack line
/// with the received handle in place of its placeholders.
async fn the_documents_curl_lines_run_verbatim(kind: Kind) {
    const DOC_BASE: &str = "https://api.sombus.rnd-solutions.net";
    const TOKEN_LINE: &str = r#"TOKEN=$(curl -s https://api.sombus.rnd-solutions.net/v1/oauth/token \
  -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=client_credentials | jq -r .access_token)"#;
    const RECEIVE_LINE: &str = r#"curl -s -H "Authorization: Bearer $TOKEN" \
  "https://api.sombus.rnd-solutions.net/v1/tenants/$WORKSPACE/consumers/$CLIENT_ID/messages?max=10&wait=20""#;
    const ACK_LINE: &str = r#"curl -s -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \
  -d '{ "receipt_handles": ["AQEB…", "AQEB…"] }' \
  "https://api.sombus.rnd-solutions.net/v1/tenants/$WORKSPACE/consumers/$CLIENT_ID/ack""#;
    let bus = Bus::start(kind).await;
    let created = bus.create(json!({})).await;
    bus.publish(&created.queue, "doc", json!({ "hello": "world" }))
        .await;
    // Not std's Command: the gateway answering curl runs on this test's runtime thread.
    let run = async |script: String| {
        let output = tokio::process::Command::new("bash")
            .arg("-c")
            .arg(script.replace(DOC_BASE, &bus.gw.base))
            .env("CLIENT_ID", &created.client_id)
            .env("CLIENT_SECRET", &created.secret)
            .env("WORKSPACE", &bus.workspace)
            .output()
            .await
            .expect("bash runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stdout)))
    };
    let received = run(format!("set -euo pipefail\n{TOKEN_LINE}\n{RECEIVE_LINE}")).await;
    let message = &received["messages"][0];
    assert_eq!(message["envelope"]["payload"], json!({ "hello": "world" }));
    let handle = message["receipt_handle"].as_str().unwrap();
    let ack = ACK_LINE.replace(r#"["AQEB…", "AQEB…"]"#, &json!([handle]).to_string());
    let acked = run(format!("set -euo pipefail\n{TOKEN_LINE}\n{ack}")).await;
    assert_eq!(acked, json!({ "acked": [handle], "failed": [] }));
}

crate::on_both_backends!(
    stories_keep_their_order_without_holding_each_other_up,
    the_documents_release_and_ack_loop_keeps_each_storys_order,
    an_attempt_is_answered_again_after_a_lost_answer,
    the_attempt_limit_dead_letters_and_a_redrive_brings_back,
    a_release_delay_hides_the_message_and_is_clamped_at_twelve_hours,
    limits_count_every_pull_route_per_connection,
    skills_come_from_the_registrations_file,
    the_documents_curl_lines_run_verbatim,
);
