//! The sombus credential store under trouble, through the HTTP server: a lock held elsewhere
//! stalls no other request and answers the change 503 after its wait; the audit log pages from
//! its end; a crash mid-create or between a change and its audit line is recovered; a store that
//! can't be read is not ready; a lost connections file is refused, not taken for an empty one.

use super::support::{refused, token, token_answer};
use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer, captured_logs};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;
use sqs_gateway::credentials::oauth::connection::hash_secret;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CONNECTIONS: &str = "connections.json";
const AUDIT: &str = "audit.jsonl";

/// A credential directory of its own, the workspace's admin and viewer keys, and a gateway over
/// them (started again over the same directory as a restart would).
struct Store {
    dir: tempfile::TempDir,
    workspace: String,
    admin: String,
    viewer: String,
    toml: String,
}

impl Store {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = unique("ws-");
        let mut toml = format!(
            "[sombus]\nenvironment = \"test\"\ncredentials_dir = \"{}\"\n\n",
            dir.path().display()
        );
        let mut keys = Vec::new();
        for role in ["admin", "viewer"] {
            let key = api_keys::generate_key();
            toml.push_str(&format!(
                "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"{role}-of-{workspace}\"\nhash = \"{}\"\nworkspaces = [\"{workspace}\"]\nrole = \"{role}\"\n\n",
                key.id, key.hash
            ));
            keys.push(key.key);
        }
        let viewer = keys.pop().unwrap();
        let admin = keys.pop().unwrap();
        Self {
            dir,
            workspace,
            admin,
            viewer,
            toml,
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    async fn start(&self) -> TestGateway {
        GatewayBuilder::new(Kind::Embedded)
            .config(&self.toml)
            .start()
            .await
    }

    async fn admin_call(
        &self,
        gw: &TestGateway,
        method: Method,
        rest: &str,
        key: &str,
        body: Option<Value>,
    ) -> Answer {
        let url = format!("{}/v1/admin/workspaces/{}{rest}", gw.base, self.workspace);
        let mut request = gw.http.request(method, url).bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request.send().await.unwrap()).await
    }

    /// Creates connection `client_id`; answers its secret.
    async fn create(&self, gw: &TestGateway, client_id: &str) -> String {
        let created = self
            .admin_call(
                gw,
                Method::POST,
                "/connections",
                &self.admin,
                Some(json!({ "client_id": client_id })),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        created.body["client_secret"].as_str().unwrap().to_owned()
    }

    async fn list(&self, gw: &TestGateway) -> Answer {
        self.admin_call(gw, Method::GET, "/connections", &self.viewer, None)
            .await
    }

    /// The workspace's audit log as the API pages it: (action, client id), newest first.
    async fn audit(&self, gw: &TestGateway) -> Vec<(String, String)> {
        let page = self
            .admin_call(gw, Method::GET, "/audit", &self.viewer, None)
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        page.body["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                (
                    entry["action"].as_str().unwrap().to_owned(),
                    entry["client_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(action, client)| ((*action).to_owned(), (*client).to_owned()))
        .collect()
}

async fn get(gw: &TestGateway, path: &str) -> Answer {
    answer(
        gw.http
            .get(format!("{}{path}", gw.base))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Holds the store's directory lock from another thread (as a replica or an operator's
/// `flock` does) until `hold` has passed.
fn hold_lock(dir: &Path, hold: Duration) -> std::thread::JoinHandle<()> {
    let lock = std::fs::File::open(dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    std::thread::spawn(move || {
        std::thread::sleep(hold);
        drop(lock);
    })
}

/// `GET path` over a connection of its own, from the calling (non-runtime) thread: the status
/// and how long the answer took.
fn timed_get(base: &str, path: &str, bearer: Option<&str>) -> (u16, Duration) {
    use std::io::{Read as _, Write as _};
    let address = base.trim_start_matches("http://");
    let asked = Instant::now();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let authorization = bearer
        .map(|key| format!("Authorization: Bearer {key}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\n{authorization}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    (status, asked.elapsed())
}

#[tokio::test]
async fn a_held_store_lock_stalls_no_other_request_and_the_change_answers_503() {
    let store = Store::new();
    let gw = store.start().await;
    store.create(&gw, "locked").await;
    let holder = hold_lock(store.dir.path(), Duration::from_secs(8));
    let started = Instant::now();
    let rotate = {
        let request = gw
            .http
            .post(format!(
                "{}/v1/admin/workspaces/{}/connections/locked/secret/rotate",
                gw.base, store.workspace
            ))
            .bearer_auth(&store.admin)
            .send();
        tokio::spawn(async move { answer(request.await.unwrap()).await })
    };
    // While the change waits for the lock, other requests answer at once: timed from a thread
    // of their own, so a stalled runtime can't hide the wait from the clock.
    let probe = {
        let base = gw.base.clone();
        let list = format!("/v1/admin/workspaces/{}/connections", store.workspace);
        let viewer = store.viewer.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let mut answers = Vec::new();
            for _ in 0..5 {
                answers.push(timed_get(&base, "/healthz", None));
                std::thread::sleep(Duration::from_millis(500));
            }
            answers.push(timed_get(&base, &list, Some(&viewer)));
            answers
        })
    };
    let busy = rotate.await.unwrap();
    let answers = tokio::task::spawn_blocking(move || probe.join().unwrap())
        .await
        .unwrap();
    for (status, took) in answers {
        assert_eq!(status, 200);
        assert!(took < Duration::from_secs(1), "an answer took {took:?}");
    }
    assert_eq!(
        refused(&busy),
        (StatusCode::SERVICE_UNAVAILABLE, "admin.unavailable".into())
    );
    assert!(busy.headers.contains_key("retry-after"));
    assert!(
        started.elapsed() >= Duration::from_secs(4) && started.elapsed() < Duration::from_secs(8),
        "answered after the store's wait, before the lock was let go: {:?}",
        started.elapsed()
    );
    holder.join().unwrap();
    let rotated = store
        .admin_call(
            &gw,
            Method::POST,
            "/connections/locked/secret/rotate",
            &store.admin,
            None,
        )
        .await;
    assert_eq!(rotated.status, StatusCode::CREATED, "{}", rotated.body);
    gw.stop().await;
}

fn audit_line(workspace: &str, client_id: &str) -> String {
    json!({
        "at": "2026-12-01T00:00:00Z",
        "workspace": workspace,
        "actor": "test",
        "action": "secret.rotate",
        "client_id": client_id,
    })
    .to_string()
}

#[tokio::test]
async fn the_audit_log_pages_newest_first_through_every_line_once() {
    let store = Store::new();
    let gw = store.start().await;
    store.create(&gw, "first").await;
    // Years of changes, the workspace's among other workspaces'.
    let mut lines = String::new();
    for n in 0..2_345 {
        lines.push_str(&audit_line(&store.workspace, &format!("n{n}")));
        lines.push('\n');
        lines.push_str(&audit_line("elsewhere", &format!("n{n}")));
        lines.push('\n');
    }
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(store.path(AUDIT))
        .unwrap();
    std::io::Write::write_all(&mut log, lines.as_bytes()).unwrap();
    let mut expected: Vec<String> = (0..2_345).rev().map(|n| format!("n{n}")).collect();
    expected.push(format!("{}.first", store.workspace));

    let page = |query: String| {
        let store = &store;
        let gw = &gw;
        async move {
            store
                .admin_call(
                    gw,
                    Method::GET,
                    &format!("/audit{query}"),
                    &store.viewer,
                    None,
                )
                .await
        }
    };
    let first = page(String::new()).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(
        first.body["entries"].as_array().unwrap().len(),
        100,
        "default"
    );
    assert!(first.body["next_cursor"].is_string());
    let mut seen = Vec::new();
    let mut query = "?limit=1000".to_owned();
    let mut pages = 0;
    loop {
        let answer = page(query.clone()).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        pages += 1;
        for entry in answer.body["entries"].as_array().unwrap() {
            assert_eq!(entry["workspace"], store.workspace.as_str());
            seen.push(entry["client_id"].as_str().unwrap().to_owned());
        }
        match answer.body["next_cursor"].as_str() {
            Some(cursor) => query = format!("?limit=1000&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, expected, "newest first, every line once");

    // Any cursor the document allows is answered: one past the log's end reads from its end.
    let past = page("?limit=1000&cursor=9999999999999999999".to_owned()).await;
    assert_eq!(past.status, StatusCode::OK, "{}", past.body);
    for query in [
        "?limit=0",
        "?limit=1001",
        "?cursor=abc",
        "?cursor=%2B5",
        "?cursor=00000000000000000001",
        "?limit=5&limit=6",
        "?other=1",
    ] {
        assert_eq!(
            refused(&page(query.to_owned()).await),
            (StatusCode::BAD_REQUEST, "admin.bad_request".into()),
            "{query}"
        );
    }
    gw.stop().await;
}

#[tokio::test]
async fn the_audit_route_documents_its_limit_and_cursor() {
    let store = Store::new();
    let gw = store.start().await;
    let document = get(&gw, "/openapi/sombus.json").await.body;
    let operation = &document["paths"]["/v1/admin/workspaces/{workspace}/audit"]["get"];
    let parameter = |name: &str| {
        operation["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == name)
            .unwrap_or_else(|| panic!("parameter {name}"))
            .clone()
    };
    let limit = parameter("limit");
    assert_eq!(
        (
            &limit["schema"]["default"],
            &limit["schema"]["minimum"],
            &limit["schema"]["maximum"]
        ),
        (&json!(100), &json!(1), &json!(1000))
    );
    assert_eq!(parameter("cursor")["in"], "query");
    let schema = &operation["responses"]["200"]["content"]["application/json"]["schema"];
    let reference = schema["$ref"].as_str().unwrap().trim_start_matches('#');
    let page = document.pointer(reference).unwrap();
    assert!(page["properties"]["next_cursor"].is_object());
    assert_eq!(page["required"], json!(["entries"]));
    assert!(
        operation["responses"]["503"].is_object(),
        "a busy store answers 503"
    );
    gw.stop().await;
}

/// A connection record as the store writes it.
fn record(workspace: &str, client_id: &str, secret: &str, created_at: &str) -> Value {
    json!({
        "workspace": workspace,
        "client_id": client_id,
        "instance": format!("instance-{client_id}"),
        "name": client_id,
        "role": "consumer",
        "queue": format!("sqsgw_sb_{workspace}_{client_id}.fifo"),
        "dead_letter_queue": format!("sqsgw_sb_{workspace}_{client_id}_dlq.fifo"),
        "fifo": true,
        "attempt_limit": 5,
        "tier": "standard",
        "status": "active",
        "creating": true,
        "credential_version": 1,
        "secret": { "serial": 1, "hash": hash_secret(secret), "issued_at": created_at },
        "previous_secret": null,
        "secrets_issued": 1,
        "created_at": created_at,
    })
}

fn create_entry(workspace: &str, client_id: &str, at: &str) -> Value {
    json!({
        "at": at,
        "workspace": workspace,
        "actor": format!("admin-of-{workspace}"),
        "action": "connection.create",
        "client_id": client_id,
    })
}

#[tokio::test]
async fn creates_a_crash_left_half_made_are_refused_then_undone() {
    let store = Store::new();
    let t = store.workspace.clone();
    let long_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let just_now = chrono::Utc::now().to_rfc3339();
    // As a crash leaves it: `halfmade` was being created an hour ago (its line is in the log);
    // `young`'s create was the last change, renamed into place before its line reached the log.
    let (old_secret, young_secret) = ("sbs_halfmade-secret", "sbs_young-secret");
    let logged = format!("{}\n", create_entry(&t, "halfmade", &long_ago));
    std::fs::write(store.path(AUDIT), &logged).unwrap();
    let stored = json!({
        "format": 1,
        "connections": [
            record(&t, "halfmade", old_secret, &long_ago),
            record(&t, "young", young_secret, &just_now),
        ],
        "pending_audit": [
            { "offset": logged.len(), "entry": create_entry(&t, "young", &just_now) },
        ],
    });
    std::fs::write(store.path(CONNECTIONS), stored.to_string()).unwrap();

    let gw = store.start().await;
    // The start appended the line the crash kept from the log, then undid the create that will
    // never finish (an hour old); the young one may still be under way on a replica.
    let log = std::fs::read_to_string(store.path(AUDIT)).unwrap();
    assert_eq!(log.lines().count(), 3, "{log}");
    assert!(log.lines().nth(1).unwrap().contains("\"young\""));
    assert!(
        log.lines()
            .nth(2)
            .unwrap()
            .contains("connection.create_undone")
    );
    // A connection being created gets no token yet.
    let refused_token = token_answer(&gw, "young", young_secret).await;
    assert_eq!(
        (refused_token.status, refused_token.body["error"].clone()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!("temporarily_unavailable")
        )
    );
    assert!(refused_token.headers.contains_key("retry-after"));

    // The young one is left to finish: it is not listed.
    let list = store.list(&gw).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["connections"], json!([]));
    assert_eq!(
        store.audit(&gw).await,
        pairs(&[
            ("connection.create_undone", "halfmade"),
            ("connection.create", "young"),
            ("connection.create", "halfmade"),
        ])
    );
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(store.path(CONNECTIONS)).unwrap()).unwrap();
    let kept: Vec<&Value> = on_disk["connections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|connection| &connection["client_id"])
        .collect();
    assert_eq!(kept, [&json!("young")], "the half-made record is gone");
    let shown = store
        .admin_call(&gw, Method::GET, "/connections/young", &store.viewer, None)
        .await;
    assert_eq!(shown.status, StatusCode::NOT_FOUND);
    let again = store
        .admin_call(
            &gw,
            Method::POST,
            "/connections",
            &store.admin,
            Some(json!({ "client_id": "young" })),
        )
        .await;
    assert_eq!(
        refused(&again),
        (StatusCode::CONFLICT, "admin.conflict".into())
    );

    // The undone one can be created again, whole (its id now carries its workspace): its token
    // reads its queue.
    let secret = store.create(&gw, "halfmade").await;
    let halfmade = format!("{t}.halfmade");
    let reader = token(&gw, &halfmade, &secret).await;
    let messages = super::support::receive(&gw, &reader, &t, &halfmade, "wait=0").await;
    assert_eq!(messages.status, StatusCode::OK, "{}", messages.body);

    // Once the young one is as old as a create that will never finish, it is undone too.
    gw.clock.advance(chrono::Duration::minutes(4));
    assert_eq!(store.list(&gw).await.status, StatusCode::OK);
    assert_eq!(
        store.audit(&gw).await[..2],
        pairs(&[
            ("connection.create_undone", "young"),
            ("connection.create", &halfmade),
        ])[..]
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_change_whose_audit_line_a_crash_lost_is_logged_at_the_next_start() {
    let store = Store::new();
    let gw = store.start().await;
    store.create(&gw, "kept").await;
    let revoked = store
        .admin_call(
            &gw,
            Method::POST,
            "/connections/kept/revoke",
            &store.admin,
            None,
        )
        .await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.body);
    gw.stop().await;
    // The crash: the revocation was renamed into place; its audit line never reached the log.
    let log = std::fs::read_to_string(store.path(AUDIT)).unwrap();
    let first = log.lines().next().unwrap();
    std::fs::write(store.path(AUDIT), format!("{first}\n")).unwrap();

    let kept = format!("{}.kept", store.workspace);
    let expected = pairs(&[("connection.revoke", &kept), ("connection.create", &kept)]);
    let restarted = store.start().await;
    assert_eq!(store.audit(&restarted).await, expected);
    restarted.stop().await;
    let again = store.start().await;
    assert_eq!(store.audit(&again).await, expected, "logged once");
    again.stop().await;
}

#[tokio::test]
async fn readiness_needs_a_readable_credential_store() {
    let store = Store::new();
    let gw = store.start().await;
    let secret = store.create(&gw, "ready").await;
    assert_eq!(get(&gw, "/readyz").await.status, StatusCode::OK);
    let whole = std::fs::read(store.path(CONNECTIONS)).unwrap();
    std::fs::write(store.path(CONNECTIONS), &whole[..whole.len() / 2]).unwrap();
    let ready = get(&gw, "/readyz").await;
    assert_eq!(
        (ready.status, ready.body),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "status": "unavailable", "reason": "credential_store" })
        )
    );
    assert!(ready.headers.contains_key("retry-after"));
    assert_eq!(
        token_answer(&gw, &format!("{}.ready", store.workspace), &secret)
            .await
            .status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    std::fs::write(store.path(CONNECTIONS), &whole).unwrap();
    assert_eq!(get(&gw, "/readyz").await.status, StatusCode::OK);
    gw.stop().await;
}

#[tokio::test]
async fn a_lost_connections_file_is_refused_not_taken_for_an_empty_store() {
    let store = Store::new();
    let gw = store.start().await;
    let secret = store.create(&gw, "lost").await;
    gw.stop().await;
    let saved = std::fs::read(store.path(CONNECTIONS)).unwrap();
    std::fs::remove_file(store.path(CONNECTIONS)).unwrap();

    let gw = store.start().await;
    let list = store.list(&gw).await;
    assert_eq!(
        refused(&list),
        (StatusCode::SERVICE_UNAVAILABLE, "admin.unavailable".into())
    );
    assert!(list.headers.contains_key("retry-after"));
    let created = store
        .admin_call(
            &gw,
            Method::POST,
            "/connections",
            &store.admin,
            Some(json!({ "client_id": "newcomer" })),
        )
        .await;
    assert_eq!(created.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        !store.path(CONNECTIONS).exists(),
        "no store holding only the newcomer"
    );
    let lost = format!("{}.lost", store.workspace);
    let refused_token = token_answer(&gw, &lost, &secret).await;
    assert_eq!(
        (refused_token.status, refused_token.body["error"].clone()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            json!("temporarily_unavailable")
        )
    );
    assert_eq!(get(&gw, "/readyz").await.body["reason"], "credential_store");
    let missing = store.path(CONNECTIONS).display().to_string();
    assert!(
        captured_logs()
            .lines()
            .any(|line| line.contains("ERROR") && line.contains(&missing)),
        "an error names {missing}"
    );
    // Put back, it serves again.
    std::fs::write(store.path(CONNECTIONS), &saved).unwrap();
    let list = store.list(&gw).await;
    assert_eq!(list.body["connections"][0]["client_id"], lost.as_str());
    gw.stop().await;

    // A directory that never held a store starts empty.
    let fresh = Store::new();
    let gw = fresh.start().await;
    let list = fresh.list(&gw).await;
    assert_eq!(
        (list.status, list.body),
        (StatusCode::OK, json!({ "connections": [] }))
    );
    fresh.create(&gw, "first").await;
    gw.stop().await;
}
