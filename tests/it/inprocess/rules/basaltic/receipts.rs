//! basaltic receipts and batches: only the current receipt of the queue deletes, a released receipt
//! cannot extend but still deletes, and batches take up to ten entries with unique ids and answer
//! each one.

use super::*;

/// Deleting by receipt: the one query parameter `receipt_handle`, once; an altered receipt or one
/// of another queue is 400 `receipt_handle_invalid`, an older one 409 `receipt_handle_stale`, and
/// nothing changes; the current one deletes.
#[tokio::test(start_paused = true)]
async fn basaltic_only_the_current_receipt_of_the_queue_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let other = basaltic.create(json!({ "name": "other" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    basaltic.send(&other, &json!({ "body": "theirs" })).await;
    let old = receipt(
        &basaltic
            .receive(&id, json!({ "visibility_timeout_seconds": 0 }))
            .await[0],
    );
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    let theirs = receipt(&basaltic.receive(&other, json!({})).await[0]);
    let base = format!("/v1/queues/{id}/messages");
    for query in [
        String::new(),
        "?receipt_handle=".to_owned(),
        format!("?receipt_handle={current}&receipt_handle={current}"),
        format!("?receipt_handle={current}&force=1"),
    ] {
        let refused = basaltic
            .call(
                Method::DELETE,
                &format!("{base}{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    for (receipt, expected) in [
        (
            altered(&current),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            "AQAAAH8forged".to_owned(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (
            theirs.clone(),
            (StatusCode::BAD_REQUEST, "receipt_handle_invalid"),
        ),
        (old, (StatusCode::CONFLICT, "receipt_handle_stale")),
    ] {
        let refused = basaltic.delete(&id, &receipt).await;
        assert_eq!(code(&refused), expected);
        assert!(!refused.text.contains(&receipt), "a receipt was echoed");
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 1, "nothing was deleted");
    assert_eq!(basaltic.inspect(&other).await.len(), 1, "nor elsewhere");
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
    let again = basaltic.delete(&id, &current).await;
    assert_eq!(code(&again), (StatusCode::CONFLICT, "receipt_handle_stale"));
}

/// Visibility counts from the change and 0 releases; after a release the receipt can no longer
/// extend (409) but still deletes until the message is received again; the timeout is 0–43200.
#[tokio::test(start_paused = true)]
async fn basaltic_a_released_receipt_cannot_extend_but_still_deletes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    basaltic.send(&id, &json!({ "body": "kept" })).await;
    let current = receipt(&basaltic.receive(&id, json!({})).await[0]);
    for seconds in [-1, 43_201] {
        let refused = basaltic.visibility(&id, &current, seconds).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{seconds}"
        );
    }
    let missing = basaltic
        .call(
            Method::POST,
            &format!("/v1/queues/{id}/messages/visibility"),
            &basaltic.admin,
            json!({ "receipt_handle": current }).to_string(),
        )
        .await;
    assert_eq!(
        code(&missing),
        (StatusCode::BAD_REQUEST, "invalid_argument")
    );
    let extended = basaltic.visibility(&id, &current, 100).await;
    assert_eq!(extended.status, StatusCode::NO_CONTENT, "{}", extended.text);
    // Counted from the change: hidden for 100 s more, whatever the queue's 30 s.
    tokio::time::advance(Duration::from_secs(99)).await;
    assert!(basaltic.receive(&id, json!({})).await.is_empty());
    let released = basaltic.visibility(&id, &current, 0).await;
    assert_eq!(released.status, StatusCode::NO_CONTENT);
    let extend_again = basaltic.visibility(&id, &current, 30).await;
    assert_eq!(
        code(&extend_again),
        (StatusCode::CONFLICT, "receipt_handle_stale")
    );
    let deleted = basaltic.delete(&id, &current).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.text);
    assert!(basaltic.inspect(&id).await.is_empty());
}

/// Batches take 1 to 10 entries with unique ids of 1–80 letters, digits, `-`, `_`; a batch
/// refused whole sends nothing.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_take_up_to_ten_entries_with_unique_ids() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let entry = |entry_id: &str| json!({ "id": entry_id, "body": "b" });
    let eleven: Vec<Value> = (0..11).map(|n| entry(&format!("e{n}"))).collect();
    for entries in [
        json!([]),
        json!(eleven),
        json!([entry("a"), entry("a")]),
        json!([entry("a b")]),
        json!([entry(&"x".repeat(81))]),
        json!([entry("")]),
        json!([{ "body": "no id" }]),
        json!([entry("a"), "not an object"]),
        json!({ "id": "a" }),
    ] {
        let refused = basaltic.batch(&id, "batch", entries.clone()).await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{entries}"
        );
    }
    assert!(basaltic.inspect(&id).await.is_empty(), "nothing was sent");
    let ten: Vec<Value> = (0..10)
        .map(|n| entry(&format!("{}{n}", "x".repeat(79))))
        .collect();
    let sent = basaltic.batch(&id, "batch", json!(ten)).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    assert_eq!(sent.body["successful"].as_array().unwrap().len(), 10);
}

/// A batch answers each entry: failures carry their id and code, the others succeed (send ones
/// with their message id); HTTP 200 either way.
#[tokio::test(start_paused = true)]
async fn basaltic_batches_answer_each_entry() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let sent = basaltic
        .batch(
            &id,
            "batch",
            json!([
                { "id": "good", "body": "one" },
                { "id": "late", "body": "two", "delay_seconds": 901 },
                { "id": "reserved", "body": "three", "attributes": { "AWS.x": { "type": "String", "value": "v" } } },
                { "id": "also-good", "body": "four" },
            ]),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    let successful = sent.body["successful"].as_array().unwrap();
    let ids: Vec<&str> = successful
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["good", "also-good"]);
    assert!(
        successful
            .iter()
            .all(|entry| entry["message_id"].is_string())
    );
    let failed = sent.body["failed"].as_array().unwrap();
    for entry_id in ["late", "reserved"] {
        let entry = failed.iter().find(|entry| entry["id"] == entry_id).unwrap();
        assert_eq!(entry["code"], "invalid_argument", "{entry}");
        assert!(entry["message"].is_string());
    }
    assert_eq!(basaltic.inspect(&id).await.len(), 2);

    let first = basaltic
        .receive(
            &id,
            json!({ "max_messages": 2, "visibility_timeout_seconds": 0 }),
        )
        .await;
    let old: Vec<String> = first.iter().map(receipt).collect();
    let second = basaltic.receive(&id, json!({ "max_messages": 2 })).await;
    let current: Vec<String> = second.iter().map(receipt).collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, entry_id: &str| {
        let failed = reply.body["failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["id"] == entry_id);
        let entry = entry.unwrap_or_else(|| panic!("{entry_id} did not fail: {}", reply.text));
        entry["code"].as_str().unwrap().to_owned()
    };
    let visibility = basaltic
        .batch(
            &id,
            "visibility-batch",
            json!([
                { "id": "old", "receipt_handle": old[0], "visibility_timeout_seconds": 0 },
                { "id": "long", "receipt_handle": current[0], "visibility_timeout_seconds": 43_201 },
                { "id": "bare", "receipt_handle": current[0] },
                { "id": "altered", "receipt_handle": altered(&current[0]), "visibility_timeout_seconds": 0 },
            ]),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert_eq!(visibility.body["successful"], json!([]));
    assert_eq!(failed_code(&visibility, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&visibility, "long"), "invalid_argument");
    assert_eq!(failed_code(&visibility, "bare"), "invalid_argument");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "receipt_handle_invalid"
    );
    assert!(
        basaltic.receive(&id, json!({})).await.is_empty(),
        "nothing was released"
    );
    let deleted = basaltic
        .batch(
            &id,
            "delete-batch",
            json!([
                { "id": "old", "receipt_handle": old[1] },
                { "id": "altered", "receipt_handle": altered(&current[1]) },
                { "id": "none" },
                { "id": "current", "receipt_handle": current[0] },
            ]),
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(deleted.body["successful"], json!([{ "id": "current" }]));
    assert_eq!(failed_code(&deleted, "old"), "receipt_handle_stale");
    assert_eq!(failed_code(&deleted, "altered"), "receipt_handle_invalid");
    assert_eq!(failed_code(&deleted, "none"), "invalid_argument");
    assert_eq!(
        basaltic.inspect(&id).await.len(),
        1,
        "only `current` deleted"
    );
}
