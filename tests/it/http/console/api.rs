//! What the web console reads through the basaltic API, on both backends: the key's own
//! description, each queue's permissions for the key and its counts, inspection in pages with
//! each message's state, sends and receives in the metrics samples, redrive with its progress
//! and cancel; and the console's own pages, with the headers that keep a page from running
//! anything but its own script.

use crate::harness::Kind;
use crate::harness::unique;
use crate::http::basaltic::support::{Basaltic, code};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::time::Duration;

fn name() -> String {
    unique("c-")
}

impl Basaltic {
    async fn get(&self, path: &str, key: &str) -> crate::harness::Answer {
        self.call(Method::GET, path, Some(key), None).await
    }
}

/// `GET /v1/key` describes the key presented (never its secret); a wrong key is refused.
async fn a_key_describes_itself(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let admin = api.get("/v1/key", &api.admin).await;
    assert_eq!(admin.status, StatusCode::OK, "{}", admin.body);
    assert_eq!(admin.body["result"]["name"], "admin");
    assert_eq!(admin.body["result"]["grants"], json!({ "*": ["*"] }));
    let id = admin.body["result"]["id"].as_str().unwrap();
    assert!(api.admin.contains(id), "the public id of the key");
    assert!(
        !admin.body.to_string().contains(&api.admin),
        "never the key itself"
    );
    let reader = api.get("/v1/key", &api.reader).await;
    assert_eq!(reader.body["result"]["grants"], json!({ "*": ["receive"] }));
    let wrong = api.get("/v1/key", "sqsgw_0000_nothing").await;
    assert_eq!(
        code(&wrong),
        (StatusCode::UNAUTHORIZED, "unauthenticated".into())
    );
    assert_eq!(
        code(
            &api.call(Method::POST, "/v1/key", Some(&api.admin), None)
                .await
        ),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed".into()),
        "answered in basaltic's shape"
    );
}

/// Each queue says what the asking key may do there; `include=counts` adds its messages by state.
async fn queues_carry_the_keys_permissions_and_counts_when_asked(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    api.send(&id, r#"{"body": "one"}"#).await;
    api.send(&id, r#"{"body": "two"}"#).await;
    api.send(&id, r#"{"body": "later", "delay_seconds": 600}"#)
        .await;
    api.receive(&id, r#"{"max_messages": 1, "wait_time_seconds": 1}"#)
        .await;
    let shown = api.get(&format!("/v1/queues/{id}"), &api.admin).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert!(
        shown.body["result"].get("counts").is_none(),
        "counts only when asked"
    );
    assert_eq!(
        shown.body["result"]["permissions"],
        json!([
            "send",
            "receive",
            "delete",
            "change_visibility",
            "inspect",
            "purge",
            "read_metrics",
            "manage_queues"
        ])
    );
    let counted = api
        .get(&format!("/v1/queues/{id}?include=counts"), &api.admin)
        .await;
    let counts = &counted.body["result"]["counts"];
    // SQS counts approximately and a moment late: wait for the numbers to settle.
    let mut counts = counts.clone();
    for _ in 0..50 {
        if counts["visible"] == 1 && counts["in_flight"] == 1 && counts["delayed"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        counts = api
            .get(&format!("/v1/queues/{id}?include=counts"), &api.admin)
            .await
            .body["result"]["counts"]
            .clone();
    }
    assert_eq!(
        (&counts["visible"], &counts["in_flight"], &counts["delayed"]),
        (&json!(1), &json!(1), &json!(1)),
        "{counts}"
    );
    let listed = api.get("/v1/queues?include=counts", &api.reader).await;
    let mine = listed.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|queue| queue["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["permissions"], json!(["receive"]));
    assert!(mine["counts"]["visible"].is_u64(), "{mine}");
    let refused = api.get("/v1/queues?include=everything", &api.admin).await;
    assert_eq!(
        code(&refused),
        (StatusCode::BAD_REQUEST, "invalid_argument".into())
    );
}

/// Inspection reads in pages past ten, in queue order, each message with its state; nothing
/// changes. The sqs backend cannot read without a lease and says so.
async fn inspection_pages_through_the_queue_with_states(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = api.create(json!({ "name": name() })).await;
    for n in 0..12 {
        api.send(&id, &json!({ "body": format!("m{n:02}") }).to_string())
            .await;
    }
    api.send(&id, r#"{"body": "delayed", "delay_seconds": 600}"#)
        .await;
    let first = api
        .get(&format!("/v1/queues/{id}/messages"), &api.admin)
        .await;
    if kind != Kind::Embedded {
        assert_eq!(
            code(&first),
            (StatusCode::NOT_IMPLEMENTED, "unsupported".into())
        );
        let paged = api
            .get(&format!("/v1/queues/{id}/messages?after=3"), &api.admin)
            .await;
        assert_eq!(code(&paged).0, StatusCode::NOT_IMPLEMENTED);
        return;
    }
    let got = api
        .receive(
            &id,
            r#"{"max_messages": 2, "visibility_timeout_seconds": 300}"#,
        )
        .await;
    assert_eq!(got.len(), 2);
    let page = |after: Option<String>| {
        let api = &api;
        let id = &id;
        async move {
            let query = after
                .map(|after| format!("&after={after}"))
                .unwrap_or_default();
            let answer = api
                .get(
                    &format!("/v1/queues/{id}/messages?max_messages=10{query}"),
                    &api.admin,
                )
                .await;
            assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
            answer.body
        }
    };
    let one = page(None).await;
    let bodies = |page: &Value| -> Vec<String> {
        page["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["body"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        bodies(&one),
        (0..10).map(|n| format!("m{n:02}")).collect::<Vec<_>>()
    );
    let states: Vec<&str> = one["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["state"].as_str().unwrap())
        .collect();
    assert_eq!(&states[..3], ["in_flight", "in_flight", "visible"]);
    assert_eq!(one["messages"][0]["receive_count"], 1);
    assert!(one["messages"][0]["visible_at"].is_string());
    let next = one["next"].as_str().expect("a next page").to_owned();
    let two = page(Some(next)).await;
    assert_eq!(bodies(&two), ["m10", "m11", "delayed"]);
    assert_eq!(two["messages"][2]["state"], "delayed");
    assert_eq!(two["next"], Value::Null, "the last page");
    // Nothing changed: the same counts, and the visible ones still received once only later.
    let again = page(None).await;
    assert_eq!(again["messages"][2]["receive_count"], 0);
    assert_eq!(again["messages"][0]["receive_count"], 1);
    for bad in ["after=x", "after=1&after=2", "max_messages=11", "cursor=1"] {
        let refused = api
            .get(&format!("/v1/queues/{id}/messages?{bad}"), &api.admin)
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument".into()),
            "{bad}"
        );
    }
}

/// Each sample counts the messages sent and the deliveries handed out since the one before.
async fn samples_count_sends_and_receives(kind: Kind) {
    let api = Basaltic::start_with(kind, "metrics_interval_seconds = 1").await;
    let id = api.create(json!({ "name": name() })).await;
    for n in 0..3 {
        api.send(&id, &json!({ "body": format!("s{n}") }).to_string())
            .await;
    }
    let mut received = 0;
    for _ in 0..10 {
        received += api
            .receive(
                &id,
                r#"{"max_messages": 10, "visibility_timeout_seconds": 300, "wait_time_seconds": 1}"#,
            )
            .await
            .len();
        if received == 3 {
            break;
        }
    }
    assert_eq!(received, 3);
    let mut totals = (0, 0);
    for _ in 0..100 {
        let answer = api
            .get(&format!("/v1/queues/{id}/metrics"), &api.admin)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let samples = answer.body["samples"].as_array().unwrap().clone();
        totals = samples.iter().fold((0, 0), |(sends, receives), s| {
            (
                sends + s["sends"].as_u64().unwrap_or(0),
                receives + s["receives"].as_u64().unwrap_or(0),
            )
        });
        if totals == (3, 3) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(totals, (3, 3), "sends and receives summed over the samples");
}

/// A dead-letter queue is redriven back to its source at a rate, its task listed with progress;
/// cancelling with none running is a conflict; it takes `manage_queues`.
async fn a_dead_letter_queue_is_redriven_with_progress(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let dlq = api.create(json!({ "name": name() })).await;
    let source = api
        .create(json!({ "name": name(), "settings": { "dead_letter_queue": { "queue_id": dlq, "max_receive_count": 1 } } }))
        .await;
    api.send(&source, r#"{"body": "poison"}"#).await;
    // Received once and released, then the next receive moves it to the dead-letter queue.
    let mut dead = false;
    for _ in 0..20 {
        for message in api
            .receive(
                &source,
                r#"{"max_messages": 10, "visibility_timeout_seconds": 0, "wait_time_seconds": 1}"#,
            )
            .await
        {
            assert_eq!(message["body"], "poison");
        }
        let counted = api
            .get(&format!("/v1/queues/{dlq}?include=counts"), &api.admin)
            .await;
        if counted.body["result"]["counts"]["visible"] == 1 {
            dead = true;
            break;
        }
    }
    assert!(dead, "the message reached the dead-letter queue");
    let not_dead_letter = api
        .call(
            Method::POST,
            &format!("/v1/queues/{source}/redrive"),
            Some(&api.admin),
            Some("{}"),
        )
        .await;
    assert_eq!(
        code(&not_dead_letter),
        (StatusCode::CONFLICT, "conflict".into()),
        "no queue dead-letters to the source"
    );
    let path = format!("/v1/queues/{dlq}/redrive");
    let refused = api
        .call(Method::POST, &path, Some(&api.reader), Some("{}"))
        .await;
    assert_eq!(code(&refused).0, StatusCode::FORBIDDEN);
    let bad = api
        .call(
            Method::POST,
            &path,
            Some(&api.admin),
            Some(r#"{"max_messages_per_second": 501}"#),
        )
        .await;
    assert_eq!(code(&bad).1, "invalid_argument");
    let started = api
        .call(
            Method::POST,
            &path,
            Some(&api.admin),
            Some(r#"{"max_messages_per_second": 10}"#),
        )
        .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    let task = &started.body["result"];
    assert_eq!(task["destination_queue_id"], Value::Null);
    assert!(task["started_at"].is_string());
    let mut last = Value::Null;
    for _ in 0..100 {
        last = api.get(&path, &api.admin).await.body["tasks"][0].clone();
        if last["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["moved"], 1);
    assert_eq!(last["max_messages_per_second"], 10);
    let back = api
        .receive(&source, r#"{"max_messages": 10, "wait_time_seconds": 2}"#)
        .await;
    assert_eq!(back.len(), 1, "the message is back in its source");
    assert_eq!(back[0]["body"], "poison");
    let none = api
        .call(
            Method::POST,
            &format!("{path}/cancel"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(code(&none), (StatusCode::CONFLICT, "conflict".into()));
}

/// A redrive slowed to one message a second stops when cancelled (the embedded engine honours
/// the rate; LocalStack moves everything at once).
#[tokio::test]
async fn a_running_redrive_is_cancelled() {
    let api = Basaltic::start(Kind::Embedded).await;
    let dlq = api.create(json!({ "name": name() })).await;
    // A queue is a dead-letter queue once another dead-letters to it.
    let other = api
        .create(json!({ "name": name(), "settings": { "dead_letter_queue": { "queue_id": dlq } } }))
        .await;
    for n in 0..5 {
        api.send(&dlq, &json!({ "body": format!("d{n}") }).to_string())
            .await;
    }
    let path = format!("/v1/queues/{dlq}/redrive");
    let started = api
        .call(
            Method::POST,
            &path,
            Some(&api.admin),
            Some(
                &json!({ "destination_queue_id": other, "max_messages_per_second": 1 }).to_string(),
            ),
        )
        .await;
    assert_eq!(started.status, StatusCode::CREATED, "{}", started.body);
    assert_eq!(
        started.body["result"]["destination_queue_id"],
        other.as_str()
    );
    assert_eq!(started.body["result"]["to_move"], 5);
    let twice = api
        .call(Method::POST, &path, Some(&api.admin), Some("{}"))
        .await;
    assert_eq!(code(&twice), (StatusCode::CONFLICT, "conflict".into()));
    let cancelled = api
        .call(
            Method::POST,
            &format!("{path}/cancel"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
    let status = cancelled.body["result"]["status"].as_str().unwrap();
    assert!(
        status == "cancelling" || status == "cancelled",
        "{}",
        cancelled.body
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let listed = api.get(&path, &api.admin).await;
    let task = &listed.body["tasks"][0];
    assert_eq!(task["status"], "cancelled", "{task}");
    assert!(task["moved"].as_u64().unwrap() < 5, "{task}");
}

/// The console's page and assets: same-origin script and style only, nothing inline, never
/// cached; an unknown asset is a 404.
#[tokio::test]
async fn the_console_pages_forbid_what_they_never_need() {
    let api = Basaltic::start(Kind::Embedded).await;
    let page = api
        .gw
        .http
        .get(format!("{}/console", api.gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert!(page.url().path().ends_with("/console/"), "{}", page.url());
    let not_followed = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/console", api.gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(not_followed.status(), StatusCode::PERMANENT_REDIRECT);
    assert!(
        not_followed
            .headers()
            .contains_key("content-security-policy")
    );
    assert_eq!(not_followed.headers()["cache-control"], "no-store");
    for path in ["/console/", "/console/app.js", "/console/app.css"] {
        let answer = api
            .gw
            .http
            .get(format!("{}{path}", api.gw.base))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{path}");
        let header = |name: &str| {
            answer
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let policy = header("content-security-policy");
        for rule in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'none'",
        ] {
            assert!(policy.contains(rule), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe"), "{path}: {policy}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        let text = answer.text().await.unwrap();
        if path == "/console/" {
            assert!(text.contains("app.js") && text.contains("app.css"));
            let lower = text.to_lowercase();
            assert!(!lower.contains(" style="), "no inline style");
            assert!(!lower.contains("<script>"), "no inline script");
            assert!(!lower.contains("http://") && !lower.contains("https://"));
        }
    }
    let missing = api
        .gw
        .http
        .get(format!("{}/console/other.js", api.gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(
        missing
            .headers()
            .get("content-type")
            .is_some_and(|value| value.to_str().unwrap_or("").contains("json"))
    );
}

crate::on_both_backends!(
    a_key_describes_itself,
    queues_carry_the_keys_permissions_and_counts_when_asked,
    inspection_pages_through_the_queue_with_states,
    samples_count_sends_and_receives,
    a_dead_letter_queue_is_redriven_with_progress,
);
