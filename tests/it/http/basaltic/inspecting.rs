//! Reading a queue without a lease, and acting on what was read: filters the server applies page
//! by page (body text, id, attribute, a jq-like expression) with a count of what it examined,
//! exports of exactly what a filter keeps, and moves that keep every message exactly once. The
//! sqs backend answers each `501 unsupported`.

use super::support::*;
use crate::harness::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A queue of 30 messages: `{"n": i, "total": i * 10}`, every third with the attribute
/// `kind=refund` (the others `kind=order`), every fifth's body holding `URGENT`.
async fn thirty(api: &Basaltic) -> String {
    let id = api.create(json!({ "name": name() })).await;
    for i in 0..30 {
        let kind = if i % 3 == 0 { "refund" } else { "order" };
        let urgent = if i % 5 == 0 { "URGENT" } else { "calm" };
        let body = json!({
            "body": json!({ "n": i, "total": i * 10, "note": urgent }).to_string(),
            "attributes": { "kind": { "type": "String", "value": kind } },
        });
        let sent = api.send(&id, &body.to_string()).await;
        assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    }
    id
}

/// The `n` of each message of an inspection or export answer.
fn numbers(messages: &[Value]) -> Vec<i64> {
    messages
        .iter()
        .map(|message| {
            let body: Value = serde_json::from_str(message["body"].as_str().unwrap()).unwrap();
            body["n"].as_i64().unwrap()
        })
        .collect()
}

async fn inspect(api: &Basaltic, id: &str, query: &str) -> (StatusCode, Value) {
    let got = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}/messages?{query}"),
            Some(&api.admin),
            None,
        )
        .await;
    (got.status, got.body)
}

/// Every page of an inspection, following `next`.
async fn every_page(api: &Basaltic, id: &str, query: &str) -> (Vec<Value>, usize) {
    let (mut messages, mut scanned, mut after) = (Vec::new(), 0, None::<String>);
    loop {
        let query = match &after {
            Some(after) => format!("{query}&after={after}"),
            None => query.to_owned(),
        };
        let (status, page) = inspect(api, id, &query).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        messages.extend(page["messages"].as_array().unwrap().iter().cloned());
        scanned += page["scanned"].as_u64().unwrap() as usize;
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return (messages, scanned),
        }
    }
}

async fn filters_search_the_whole_queue_page_by_page(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = thirty(&api).await;
    if kind != Kind::Embedded {
        let (status, body) = inspect(&api, &id, "contains=urgent").await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
        assert_eq!(body["error"]["code"], "unsupported");
        return;
    }
    // Body text, any case, over every page.
    let (found, scanned) = every_page(&api, &id, "contains=urgent&max_messages=2").await;
    assert_eq!(numbers(&found), [0, 5, 10, 15, 20, 25]);
    assert_eq!(scanned, 30, "each message examined once over the pages");
    // An attribute's value; an expression; both at once.
    let (found, _) = every_page(&api, &id, "attribute=kind%3Drefund").await;
    assert_eq!(numbers(&found), [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
    let (found, _) = every_page(&api, &id, "where=.total%20%3E%3D%20250").await;
    assert_eq!(numbers(&found), [25, 26, 27, 28, 29]);
    let (found, _) = every_page(
        &api,
        &id,
        "where=.note%20%3D%3D%20%22URGENT%22&attribute=kind%3Drefund",
    )
    .await;
    assert_eq!(numbers(&found), [0, 15]);
    // An id's beginning.
    let (_, first) = inspect(&api, &id, "max_messages=1").await;
    let wanted = first["messages"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, by_id) = inspect(&api, &id, &format!("message_id={}", &wanted[..13])).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        by_id["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["message_id"] == wanted.as_str())
    );
    // The work of one request is bounded: `scan` examined, then `next` goes on from there.
    let (status, bounded) = inspect(&api, &id, "contains=urgent&scan=7").await;
    assert_eq!(status, StatusCode::OK, "{bounded}");
    assert_eq!(bounded["scanned"], 7);
    assert_eq!(numbers(bounded["messages"].as_array().unwrap()), [0, 5]);
    let next = bounded["next"].as_str().unwrap();
    let (_, rest) = inspect(&api, &id, &format!("contains=urgent&scan=7&after={next}")).await;
    assert_eq!(numbers(rest["messages"].as_array().unwrap()), [10]);
    // Positions are in queue order.
    let positions: Vec<u64> = found_positions(&first);
    assert_eq!(positions.len(), 1);
    // Refusals name the parameter and its rule, in basaltic's error shape.
    for (query, says) in [
        ("where=order.id", "where: an expression starts with a path"),
        ("where=.a%20~%201", "where: after the path comes"),
        ("scan=0", "scan must be 1 to 10000"),
        ("contains=", "contains must be 1 to 256 characters"),
        ("contains=a&contains=b", "contains is given twice"),
        ("sort=id", "the query parameters are"),
    ] {
        let (status, body) = inspect(&api, &id, query).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["code"], "invalid_argument", "{query}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{query}: {message}");
    }
    // A FIFO message shows its group and deduplication id, as a send takes them back.
    let fifo = api.create(json!({ "name": name(), "type": "fifo" })).await;
    let sent = api
        .send(
            &fifo,
            r#"{"body": "in a group", "group_id": "g-1", "deduplication_id": "d-1"}"#,
        )
        .await;
    assert_eq!(sent.status, StatusCode::CREATED, "{}", sent.body);
    let (_, grouped) = inspect(&api, &fifo, "").await;
    assert_eq!(grouped["messages"][0]["group_id"], "g-1", "{grouped}");
    assert_eq!(
        grouped["messages"][0]["deduplication_id"], "d-1",
        "{grouped}"
    );
    let (_, plain) = inspect(&api, &id, "max_messages=1").await;
    assert!(plain["messages"][0].get("group_id").is_none(), "{plain}");
    // Nothing was received: every count is still 0.
    let (all, _) = every_page(&api, &id, "max_messages=10").await;
    assert_eq!(all.len(), 30);
    assert!(all.iter().all(|m| m["receive_count"] == 0));
}

fn found_positions(page: &Value) -> Vec<u64> {
    page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["position"].as_str().unwrap().parse().unwrap())
        .collect()
}

async fn export(api: &Basaltic, key: &str, id: &str, query: &str) -> reqwest::Response {
    api.gw
        .http
        .get(format!(
            "{}/v1/queues/{id}/messages/export?{query}",
            api.gw.base
        ))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
}

async fn an_export_holds_exactly_what_its_filter_keeps(kind: Kind) {
    let sealed_name = name();
    let api = Basaltic::start_with(kind, &format!("export_disabled = [\"{sealed_name}\"]")).await;
    let id = thirty(&api).await;
    let sealed = api.create(json!({ "name": sealed_name })).await;
    if kind != Kind::Embedded {
        let answer = export(&api, &api.admin, &id, "").await;
        assert_eq!(answer.status(), StatusCode::NOT_IMPLEMENTED);
        return;
    }
    let answer = export(&api, &api.admin, &id, "attribute=kind%3Drefund").await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert_eq!(answer.headers()["content-type"], "application/x-ndjson");
    assert_eq!(answer.headers()["export-scanned"], "30");
    assert!(
        answer.headers().get("export-next").is_none(),
        "read to its end"
    );
    let text = answer.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(numbers(&lines), [0, 3, 6, 9, 12, 15, 18, 21, 24, 27]);
    for line in &lines {
        assert_eq!(
            line["attributes"]["kind"],
            json!({ "type": "String", "value": "refund" })
        );
        assert!(
            line["position"].is_string() && line["message_id"].is_string(),
            "{line}"
        );
    }
    // Pages of `limit`, joined by `export-next`, hold every message once.
    let mut seen = BTreeSet::new();
    let mut after = String::new();
    loop {
        let answer = export(&api, &api.admin, &id, &format!("limit=7{after}")).await;
        let next = answer
            .headers()
            .get("export-next")
            .map(|next| next.to_str().unwrap().to_owned());
        for line in answer.text().await.unwrap().lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            assert!(seen.insert(line["message_id"].as_str().unwrap().to_owned()));
        }
        match next {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    assert_eq!(seen.len(), 30);
    // Gated: a key without `inspect`, and a queue whose export is turned off.
    let refused = export(&api, &api.reader, &id, "").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let refused = export(&api, &api.admin, &sealed, "").await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("basaltic.export_disabled"),
        "{body}"
    );
}

async fn move_(api: &Basaltic, key: &str, id: &str, body: &Value) -> (StatusCode, Value) {
    let got = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/move"),
            Some(key),
            Some(&body.to_string()),
        )
        .await;
    (got.status, got.body)
}

/// `{"message_id", "position"}` of each message of an inspection page.
fn named(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| json!({ "message_id": m["message_id"], "position": m["position"] }))
        .collect()
}

async fn a_move_keeps_every_message_exactly_once(kind: Kind) {
    let api = Basaltic::start(kind).await;
    let id = thirty(&api).await;
    let destination = api.create(json!({ "name": name() })).await;
    let fifo = api.create(json!({ "name": name(), "type": "fifo" })).await;
    let fake = json!([{ "message_id": "m", "position": "1" }]);
    if kind != Kind::Embedded {
        let (status, body) = move_(
            &api,
            &api.admin,
            &id,
            &json!({ "destination_queue_id": destination, "messages": fake }),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_IMPLEMENTED, "{body}");
        return;
    }
    // The refunds, found by a filter, then moved.
    let (refunds, _) = every_page(&api, &id, "attribute=kind%3Drefund").await;
    let ids: BTreeSet<String> = refunds
        .iter()
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect();
    // One of them is held by a consumer: it stays.
    let held = api
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/receive"),
            Some(&api.admin),
            Some(r#"{"max_messages": 1, "visibility_timeout_seconds": 300}"#),
        )
        .await;
    let held_id = held.body["messages"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(ids.contains(&held_id), "the first message is a refund");
    let request = json!({ "destination_queue_id": destination, "messages": named(&refunds) });
    let (status, moved) = move_(&api, &api.admin, &id, &request).await;
    assert_eq!(status, StatusCode::OK, "{moved}");
    assert_eq!(moved["moved"].as_array().unwrap().len(), 9, "{moved}");
    assert_eq!(
        moved["failed"],
        json!([{
            "message_id": held_id, "code": "in_flight",
            "message": "a consumer holds it: its lease has not ended",
        }])
    );
    // Every message is in exactly one queue; the moved ones start again at the destination.
    let (left, _) = every_page(&api, &id, "max_messages=10").await;
    let (arrived, _) = every_page(&api, &destination, "max_messages=10").await;
    assert_eq!(left.len(), 21);
    assert_eq!(arrived.len(), 9);
    let mut all: Vec<String> = left
        .iter()
        .chain(&arrived)
        .map(|m| m["message_id"].as_str().unwrap().to_owned())
        .collect();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 30, "none lost, none doubled");
    for message in &arrived {
        assert!(ids.contains(message["message_id"].as_str().unwrap()));
        assert_eq!(message["receive_count"], 0);
        assert_eq!(message["state"], "visible");
        assert_eq!(message["attributes"]["kind"]["value"], "refund");
    }
    // The same request again moves nothing more.
    let (_, again) = move_(&api, &api.admin, &id, &request).await;
    assert!(again["moved"].as_array().unwrap().is_empty(), "{again}");
    assert_eq!(again["failed"].as_array().unwrap().len(), 10);
    // A message named twice moves once; a position with another id moves nothing.
    let twice = json!({ "destination_queue_id": destination, "messages": named(&[left[1].clone(), left[1].clone()]) });
    let (_, twice) = move_(&api, &api.admin, &id, &twice).await;
    assert_eq!(twice["moved"].as_array().unwrap().len(), 1, "{twice}");
    assert_eq!(twice["failed"][0]["code"], "not_found", "{twice}");
    let (left, _) = every_page(&api, &id, "max_messages=10").await;
    assert_eq!(left.len(), 20);
    let first = &left[0];
    let wrong = json!({ "destination_queue_id": destination, "messages": [
        { "message_id": "not-its-id", "position": first["position"] }] });
    let (_, wrong) = move_(&api, &api.admin, &id, &wrong).await;
    assert_eq!(wrong["failed"][0]["code"], "not_found", "{wrong}");
    // Refusals: another type, the queue itself, no destination, a key without the permissions.
    for (body, status, says) in [
        (
            json!({ "destination_queue_id": fifo, "messages": named(&left[..1]) }),
            StatusCode::BAD_REQUEST,
            "type",
        ),
        (
            json!({ "destination_queue_id": id, "messages": named(&left[..1]) }),
            StatusCode::BAD_REQUEST,
            "another queue",
        ),
        (
            json!({ "messages": named(&left[..1]) }),
            StatusCode::BAD_REQUEST,
            "destination_queue_id",
        ),
        (
            json!({ "destination_queue_id": destination, "messages": [] }),
            StatusCode::BAD_REQUEST,
            "messages",
        ),
    ] {
        let (got, answer) = move_(&api, &api.admin, &id, &body).await;
        assert_eq!(got, status, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    let request = json!({ "destination_queue_id": destination, "messages": named(&left[..1]) });
    let (got, _) = move_(&api, &api.reader, &id, &request).await;
    assert_eq!(got, StatusCode::FORBIDDEN);
    // `manage_queues` alone has no `send` on the destination.
    let (got, answer) = move_(&api, &api.manager, &id, &request).await;
    assert_eq!(got, StatusCode::FORBIDDEN, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("send")
    );
    let (left_after, _) = every_page(&api, &id, "max_messages=10").await;
    assert_eq!(left_after.len(), 20, "refused moves change nothing");
}

crate::on_both_backends!(
    filters_search_the_whole_queue_page_by_page,
    an_export_holds_exactly_what_its_filter_keeps,
    a_move_keeps_every_message_exactly_once,
);
