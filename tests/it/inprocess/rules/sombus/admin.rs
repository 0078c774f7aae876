//! The sombus admin API: refusals with their rules that create nothing, and the audit log in pages
//! with its query checked.

use super::*;

/// The admin API: its key is checked before the body is read (401 `admin.unauthenticated`), a key
/// of another workspace or too low a role is 403 `admin.forbidden`, an unknown connection 404
/// `admin.not_found`, a malformed create 400 `admin.bad_request`; none of them creates anything.
#[tokio::test(start_paused = true)]
async fn sombus_admin_refusals_have_their_rules_and_create_nothing() {
    let bus = Bus::start().await;
    for key in [None, Some("sqsgw_0000_notakey")] {
        let tripwire = Tripwire::default();
        let refused = bus
            .service
            .call(request(
                Method::POST,
                &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
                key,
                tripwire.body(),
            ))
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::UNAUTHORIZED, "admin.unauthenticated"),
            "{key:?}"
        );
        assert!(!tripwire.was_read(), "{key:?}: the body was read");
    }
    let outsider = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(rule(&outsider), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let viewer = bus
        .admin_call(Method::POST, "/connections", &bus.viewer, "{}")
        .await;
    assert_eq!(rule(&viewer), (StatusCode::FORBIDDEN, "admin.forbidden"));
    let missing = bus
        .admin_call(Method::GET, "/connections/nobody", &bus.viewer, "")
        .await;
    assert_eq!(rule(&missing), (StatusCode::NOT_FOUND, "admin.not_found"));
    for body in [
        json!({ "attempt_limit": 0 }).to_string(),
        json!({ "attempt_limit": 1001 }).to_string(),
        json!({ "client_id": "has_underscore" }).to_string(),
        json!({ "client_id": "x".repeat(26) }).to_string(),
        json!({ "client_id": "ws-test.house" }).to_string(),
        json!({ "role": "boss" }).to_string(),
        json!({ "fifo": "yes" }).to_string(),
        json!({ "name": "" }).to_string(),
        json!({ "colour": "red" }).to_string(),
        r#"{"client_id":"a","client_id":"b"}"#.to_owned(),
        "[]".to_owned(),
    ] {
        let refused = bus
            .admin_call(Method::POST, "/connections", &bus.admin, &body)
            .await;
        assert_eq!(
            rule(&refused),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{body}"
        );
    }
    let listed = bus
        .admin_call(Method::GET, "/connections", &bus.viewer, "")
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.body["connections"], json!([]), "nothing was created");
}

/// The audit log: every change and every refused admin request (outcome `refused`), newest first;
/// `limit` 1–1000 and `cursor` (a `next_cursor`), each once, and nothing else.
#[tokio::test(start_paused = true)]
async fn sombus_the_audit_log_pages_and_its_query_is_checked() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({})).await;
    let refused = bus
        .admin_call(Method::GET, "/connections", &bus.outsider, "")
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // Refusals are recorded off the request's path: a task of their own runs while the test waits.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for query in [
        "limit=0",
        "limit=1001",
        "limit=x",
        "limit=1&limit=2",
        "cursor=abc",
        "cursor=12345678901234567890",
        "cursor=",
        "page=2",
    ] {
        let answer = bus
            .admin_call(Method::GET, &format!("/audit?{query}"), &bus.viewer, "")
            .await;
        assert_eq!(
            rule(&answer),
            (StatusCode::BAD_REQUEST, "admin.bad_request"),
            "{query}"
        );
    }
    let page = bus
        .admin_call(Method::GET, "/audit?limit=1000", &bus.viewer, "")
        .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    let entries = page.body["entries"].as_array().unwrap();
    assert_eq!(
        entries[0]["outcome"], "refused",
        "newest first: {}",
        page.text
    );
    assert!(
        entries[0]["detail"]
            .as_str()
            .unwrap()
            .contains("admin.forbidden"),
        "{}",
        page.text
    );
    let created = entries
        .iter()
        .find(|entry| entry["action"] == "connection.create")
        .unwrap_or_else(|| panic!("no create: {}", page.text));
    assert_eq!(created["client_id"], connection.client_id.as_str());
    assert!(
        !page.text.contains(&connection.secret),
        "a secret was logged"
    );
    let first = bus
        .admin_call(Method::GET, "/audit?limit=1", &bus.viewer, "")
        .await;
    assert_eq!(first.body["entries"].as_array().unwrap().len(), 1);
    let cursor = first.body["next_cursor"].as_str().unwrap().to_owned();
    let next = bus
        .admin_call(
            Method::GET,
            &format!("/audit?limit=1&cursor={cursor}"),
            &bus.viewer,
            "",
        )
        .await;
    assert_eq!(next.status, StatusCode::OK, "{}", next.text);
    assert_eq!(next.body["entries"][0], entries[1], "the next page goes on");
}
