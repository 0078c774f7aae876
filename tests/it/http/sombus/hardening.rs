//! The sombus admin API and credential store against the red team's findings (labelled as the
//! review labels them), through the HTTP server: client ids two workspaces choose never meet
//! (L3); the token service answers an unknown client id as it answers a wrong secret (L4); the
//! revocation bound holds when the connections file's stamp hides a change, as attribute caching
//! on a shared directory does (L16); refused admin attempts are audited, bounded, and the audit
//! log's chain shows lines removed, altered or damaged (L17); a create a crash left half-made is
//! undone when the binary starts (M8).

use super::support::{receive, refused, token, token_answer};
use crate::binary::{BIN, Running};
use crate::harness::unique;
use crate::harness::{Answer, GatewayBuilder, Kind, TestGateway, answer};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const CONNECTIONS: &str = "connections.json";
const AUDIT: &str = "audit.jsonl";
/// Refused admin attempts the audit log takes one by one in a minute (per process).
const REFUSALS_PER_MINUTE: usize = 30;

/// An admin key of the test: the key, its public id and its name.
struct Key {
    key: String,
    id: String,
    name: String,
}

/// A credential directory of its own, keys of two workspaces, and a gateway over them.
struct Bus {
    dir: tempfile::TempDir,
    workspace: String,
    admin: Key,
    viewer: Key,
    /// The admin of another workspace.
    other_workspace: String,
    other_admin: Key,
    toml: String,
}

impl Bus {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = unique("ws-");
        let other_workspace = unique("ws-");
        let mut toml = format!(
            "[sombus]\nenvironment = \"test\"\ncredentials_dir = \"{}\"\n\n",
            dir.path().display()
        );
        let mut key = |workspace: &str, role: &str, name: &str| {
            let generated = api_keys::generate_key();
            toml.push_str(&format!(
                "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"{name}\"\nhash = \"{}\"\nworkspaces = [\"{workspace}\"]\nrole = \"{role}\"\n\n",
                generated.id, generated.hash
            ));
            Key {
                key: generated.key,
                id: generated.id,
                name: name.to_owned(),
            }
        };
        let admin = key(&workspace, "admin", "ops");
        // Two keys may share a name: the audit log tells them apart by id.
        let viewer = key(&workspace, "viewer", "ops");
        let other_admin = key(&other_workspace, "admin", "neighbour");
        Self {
            dir,
            workspace,
            admin,
            viewer,
            other_workspace,
            other_admin,
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
}

async fn call(
    gw: &TestGateway,
    method: Method,
    workspace: &str,
    rest: &str,
    key: Option<&str>,
    body: Option<Value>,
) -> Answer {
    let url = format!("{}/v1/admin/workspaces/{workspace}{rest}", gw.base);
    let mut request = gw.http.request(method, url);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    answer(request.send().await.unwrap()).await
}

/// Creates a connection with the chosen id `chosen`: its client id and secret.
async fn create(gw: &TestGateway, workspace: &str, key: &str, chosen: &str) -> (String, String) {
    let created = call(
        gw,
        Method::POST,
        workspace,
        "/connections",
        Some(key),
        Some(json!({ "client_id": chosen })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    (
        created.body["client_id"].as_str().unwrap().to_owned(),
        created.body["client_secret"].as_str().unwrap().to_owned(),
    )
}

/// L3: an id one workspace chose is never refused to another (nor does its refusal tell that
/// it exists): chosen ids carry their workspace.
#[tokio::test]
async fn client_ids_two_workspaces_choose_never_meet() {
    let bus = Bus::new();
    let gw = bus.start().await;
    let (t, u) = (bus.workspace.as_str(), bus.other_workspace.as_str());
    let (ours, our_secret) = create(&gw, t, &bus.admin.key, "house1").await;
    assert_eq!(ours, format!("{t}.house1"));
    // Today's squat: the other workspace asks for the same id. It gets its own.
    let (theirs, their_secret) = create(&gw, u, &bus.other_admin.key, "house1").await;
    assert_eq!(theirs, format!("{u}.house1"));
    // Its own again is a conflict of its own workspace, shown in its own list.
    let again = call(
        &gw,
        Method::POST,
        u,
        "/connections",
        Some(&bus.other_admin.key),
        Some(json!({ "client_id": "house1" })),
    )
    .await;
    assert_eq!(
        refused(&again),
        (StatusCode::CONFLICT, "admin.conflict".into())
    );
    let shown = call(
        &gw,
        Method::GET,
        u,
        "/connections/house1",
        Some(&bus.other_admin.key),
        None,
    )
    .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["client_id"], theirs.as_str());
    assert_eq!(shown.body["queue"], format!("sqsgw_sb_{u}_house1.fifo"));
    // No workspace names another's id, in full or in part.
    for path in [
        format!("/connections/{ours}"),
        format!("/connections/{t}.house1/revoke"),
    ] {
        let method = if path.ends_with("revoke") {
            Method::POST
        } else {
            Method::GET
        };
        let answered = call(&gw, method, u, &path, Some(&bus.other_admin.key), None).await;
        assert_eq!(
            refused(&answered),
            (StatusCode::NOT_FOUND, "admin.not_found".into()),
            "{path}"
        );
    }
    let qualified = call(
        &gw,
        Method::POST,
        u,
        "/connections",
        Some(&bus.other_admin.key),
        Some(json!({ "client_id": format!("{t}.house2") })),
    )
    .await;
    assert_eq!(
        refused(&qualified),
        (StatusCode::BAD_REQUEST, "admin.bad_request".into()),
        "a chosen id can't name a workspace"
    );
    // Both read their own queues with their own ids.
    for (workspace, client_id, secret) in [(t, &ours, &our_secret), (u, &theirs, &their_secret)] {
        let token = token(&gw, client_id, secret).await;
        let read = receive(&gw, &token, workspace, client_id, "wait=0").await;
        assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    }
    gw.stop().await;
}

/// L4, what can be seen without a stopwatch: an unknown client id and a known one with a wrong
/// secret get the same answer (the unit test `unknown_ids_and_wrong_secrets_do_the_same_work`
/// holds them to the same work).
#[tokio::test]
async fn the_token_service_answers_unknown_ids_as_wrong_secrets() {
    let bus = Bus::new();
    let gw = bus.start().await;
    let t = bus.workspace.as_str();
    let (known, _) = create(&gw, t, &bus.admin.key, "known").await;
    let wrong = token_answer(&gw, &known, "sbs_wrong").await;
    let unknown = token_answer(&gw, &format!("{t}.unknown"), "sbs_wrong").await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!((wrong.status, &wrong.body), (unknown.status, &unknown.body));
    assert_eq!(
        wrong.headers.get("www-authenticate"),
        unknown.headers.get("www-authenticate")
    );
    gw.stop().await;
}

/// Rewrites the connections file in place as a change another replica made would read where
/// attributes are cached: the same inode, length and modification time, other content.
fn change_behind_the_stamp(path: &Path, from: &str, to: &str) {
    assert_eq!(from.len(), to.len());
    let metadata = std::fs::metadata(path).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.matches(from).count(), 1, "{text}");
    let changed = text.replace(from, to);
    let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    std::io::Write::write_all(&mut &file, changed.as_bytes()).unwrap();
    file.sync_all().unwrap();
    file.set_modified(metadata.modified().unwrap()).unwrap();
    drop(file);
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(
        (
            std::os::unix::fs::MetadataExt::ino(&after),
            after.len(),
            after.modified().unwrap()
        ),
        (
            std::os::unix::fs::MetadataExt::ino(&metadata),
            metadata.len(),
            metadata.modified().unwrap()
        ),
        "the stamp hides the change"
    );
}

/// L16: what a replica reads of a connection is dated by when the file's content was read, not
/// by when its stamp last looked the same, so a revocation the stamp hides still holds to the
/// bound: at most 10 s before a receive (which may then wait 20 s: 30 s in all).
#[tokio::test]
async fn the_revocation_bound_holds_when_the_files_stamp_hides_a_change() {
    let bus = Bus::new();
    let gw = bus.start().await;
    let t = bus.workspace.as_str();
    let (client_id, secret) = create(&gw, t, &bus.admin.key, "bounded").await;
    let reader = token(&gw, &client_id, &secret).await;
    let read = |seconds: i64| {
        gw.clock.advance(chrono::Duration::seconds(seconds));
        receive(&gw, &reader, t, &client_id, "wait=0")
    };
    assert_eq!(read(0).await.status, StatusCode::OK);
    // 15 s on, an admin read makes the replica read the file again; right after, another
    // replica revokes the connection, and this one's filesystem shows the old stamp.
    gw.clock.advance(chrono::Duration::seconds(15));
    let listed = call(
        &gw,
        Method::GET,
        t,
        "/connections",
        Some(&bus.viewer.key),
        None,
    )
    .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    change_behind_the_stamp(
        &bus.path(CONNECTIONS),
        "\"status\": \"active\"",
        "\"status\":\"revoked\"",
    );
    // 4 s after the revocation the copy read then may still serve (it is 4 s old)…
    assert_eq!(read(4).await.status, StatusCode::OK);
    // …but 12 s after it, no receive may start on it: its copy would be 12 s old.
    let late = read(8).await;
    assert_eq!(
        refused(&late),
        (StatusCode::FORBIDDEN, "producer.not_registered".into()),
        "a receive 12 s after the revocation: {}",
        late.body
    );
    gw.stop().await;
}

/// The workspace's audit page (viewer), all of it that one page holds.
async fn audit_page(gw: &TestGateway, bus: &Bus) -> Value {
    let page = call(
        gw,
        Method::GET,
        &bus.workspace,
        "/audit?limit=1000",
        Some(&bus.viewer.key),
        None,
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
    page.body
}

fn refusals(page: &Value) -> Vec<Value> {
    page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["outcome"] == "refused")
        .cloned()
        .collect()
}

/// Waits until the page `until` accepts is there (refusals are written off the request's path).
async fn audit_until(gw: &TestGateway, bus: &Bus, until: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let page = audit_page(gw, bus).await;
        if until(&page) {
            return page;
        }
        assert!(Instant::now() < deadline, "not seen: {page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// L17: refused admin attempts are in the workspace's audit log (who, with the key's id beside
/// its name; what; refused; never the key), at most 30 a minute one by one and the rest summed.
#[tokio::test]
async fn refused_admin_attempts_are_audited_and_bounded() {
    let bus = Bus::new();
    let gw = bus.start().await;
    let t = bus.workspace.as_str();
    let (client_id, _) = create(&gw, t, &bus.admin.key, "guarded").await;
    let bogus = "sqsgw_nosuchkey_0123456789abcdef";
    let unauthenticated = call(
        &gw,
        Method::POST,
        t,
        "/connections",
        Some(bogus),
        Some(json!({})),
    )
    .await;
    assert_eq!(unauthenticated.status, StatusCode::UNAUTHORIZED);
    let rotate = format!("/connections/{client_id}/secret/rotate");
    let too_low = call(&gw, Method::POST, t, &rotate, Some(&bus.viewer.key), None).await;
    assert_eq!(too_low.status, StatusCode::FORBIDDEN);
    let foreign = call(
        &gw,
        Method::GET,
        t,
        "/connections",
        Some(&bus.other_admin.key),
        None,
    )
    .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    let page = audit_until(&gw, &bus, |page| refusals(page).len() >= 3).await;
    let seen = refusals(&page);
    let find = |action: &str| {
        seen.iter()
            .find(|entry| entry["action"] == action)
            .unwrap_or_else(|| panic!("{action}: {page}"))
            .clone()
    };
    let create_refused = find("connection.create");
    assert_eq!(create_refused["actor"], "unknown");
    assert!(create_refused.get("actor_key").is_none());
    assert_eq!(create_refused["detail"], "401 admin.unauthenticated");
    let rotate_refused = find("secret.rotate");
    assert_eq!(
        (
            &rotate_refused["actor"],
            &rotate_refused["actor_key"],
            &rotate_refused["client_id"],
            &rotate_refused["detail"]
        ),
        (
            &json!(bus.viewer.name),
            &json!(bus.viewer.id),
            &json!(client_id),
            &json!("403 admin.forbidden")
        )
    );
    let list_refused = find("connection.list");
    assert_eq!(list_refused["actor"], bus.other_admin.name.as_str());
    assert_eq!(list_refused["actor_key"], bus.other_admin.id.as_str());
    // Changes name their key too: two keys called `ops` are told apart.
    let made = page["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["action"] == "connection.create" && entry.get("outcome").is_none())
        .unwrap()
        .clone();
    assert_eq!(
        (&made["actor"], &made["actor_key"]),
        (&json!("ops"), &json!(bus.admin.id))
    );
    let log = std::fs::read_to_string(bus.path(AUDIT)).unwrap();
    for key in [bogus, &bus.viewer.key, &bus.other_admin.key, &bus.admin.key] {
        assert!(!log.contains(key), "a key in the audit log");
    }

    // A flood: at most 30 a minute one by one, the rest counted and summed in a line once the
    // minute is over.
    let flood = 100;
    for _ in 0..flood {
        let answered = call(&gw, Method::GET, t, "/connections", Some(bogus), None).await;
        assert_eq!(answered.status, StatusCode::UNAUTHORIZED);
    }
    let sent = flood + 3;
    gw.clock.advance(chrono::Duration::seconds(61));
    let accounted = |page: &Value| {
        let entries = refusals(page);
        let one_by_one = entries
            .iter()
            .filter(|entry| entry["action"] != "admin.refusals")
            .count();
        let summed: usize = entries
            .iter()
            .filter(|entry| entry["action"] == "admin.refusals")
            .map(|entry| {
                let detail = entry["detail"].as_str().unwrap();
                detail
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        (one_by_one, summed)
    };
    let page = audit_until(&gw, &bus, |page| {
        let (one_by_one, summed) = accounted(page);
        one_by_one + summed == sent
    })
    .await;
    let (one_by_one, summed) = accounted(&page);
    assert!(
        one_by_one <= 2 * REFUSALS_PER_MINUTE && summed >= sent - 2 * REFUSALS_PER_MINUTE,
        "{one_by_one} recorded one by one, {summed} summed: {page}"
    );
    gw.stop().await;
}

/// The audit log's lines, as JSON.
fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// L17: every line carries its place and the hash of the line before; a page says what it
/// found removed, altered or damaged instead of skipping it silently.
#[tokio::test]
async fn the_audit_page_shows_lines_removed_altered_or_damaged() {
    let bus = Bus::new();
    let gw = bus.start().await;
    let t = bus.workspace.as_str();
    for chosen in ["a", "b", "c", "d"] {
        create(&gw, t, &bus.admin.key, chosen).await;
    }
    let written = lines(&bus.path(AUDIT));
    assert_eq!(written.len(), 4);
    for (n, line) in written.iter().enumerate() {
        assert_eq!(line["seq"], n + 1, "{line}");
        assert_eq!(line["prev"].is_string(), n > 0, "{line}");
    }
    let whole = audit_page(&gw, &bus).await;
    assert!(whole.get("damage").is_none(), "{whole}");
    assert_eq!(whole["entries"].as_array().unwrap().len(), 4);

    let original = std::fs::read_to_string(bus.path(AUDIT)).unwrap();
    let text_lines: Vec<&str> = original.lines().collect();
    let rewrite = |lines: Vec<String>| {
        std::fs::write(bus.path(AUDIT), format!("{}\n", lines.join("\n"))).unwrap();
    };
    let damage = |page: &Value, field: &str| page["damage"][field].as_u64().unwrap_or(0);

    // A line removed.
    let mut removed: Vec<String> = text_lines.iter().map(|line| (*line).to_owned()).collect();
    removed.remove(1);
    rewrite(removed);
    let page = audit_page(&gw, &bus).await;
    assert_eq!(damage(&page, "missing_lines"), 1, "{page}");

    // A line altered (it still parses).
    let mut altered: Vec<String> = text_lines.iter().map(|line| (*line).to_owned()).collect();
    altered[1] = altered[1].replace("\"actor\":\"ops\"", "\"actor\":\"someone else\"");
    assert_ne!(altered[1], text_lines[1]);
    rewrite(altered);
    let page = audit_page(&gw, &bus).await;
    assert_eq!(damage(&page, "broken_links"), 1, "{page}");
    assert_eq!(damage(&page, "missing_lines"), 0, "{page}");

    // A line damaged (it doesn't parse).
    let mut damaged: Vec<String> = text_lines.iter().map(|line| (*line).to_owned()).collect();
    damaged[2] = "{\"at\":\"2026-12-0".to_owned();
    rewrite(damaged);
    let page = audit_page(&gw, &bus).await;
    assert_eq!(damage(&page, "damaged_lines"), 1, "{page}");
    assert!(damage(&page, "missing_lines") >= 1, "{page}");
    assert_eq!(page["entries"].as_array().unwrap().len(), 3);

    // Put back whole, the page is whole again; the next line goes on from the last.
    std::fs::write(bus.path(AUDIT), &original).unwrap();
    assert!(audit_page(&gw, &bus).await.get("damage").is_none());
    create(&gw, t, &bus.admin.key, "e").await;
    assert_eq!(lines(&bus.path(AUDIT))[4]["seq"], 5);
    gw.stop().await;
}

/// M8: a connection a crash left being created (its queues made, its record marked) is undone
/// when the gateway starts, before any request: its queues deleted, its record removed,
/// `connection.create_undone` by `gateway:recovery` in the audit log.
#[tokio::test]
async fn a_create_a_crash_left_half_made_is_undone_when_the_binary_starts() {
    use sqs_gateway::setup::{self, Prepared};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let Prepared::First(first) = setup::prepare(&data).unwrap() else {
        panic!("a first start")
    };
    first.persist().unwrap();
    let admin = api_keys::generate_key();
    setup::append_to_config(
        &data,
        &format!(
            "[[sombus.admin_keys]]\nid = \"{}\"\nhash = \"{}\"\nworkspaces = [\"w1\"]\nrole = \"admin\"\n",
            admin.id, admin.hash
        ),
    )
    .unwrap();
    let serve = || {
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(&data);
        let mut running = Running::spawn(command);
        let address = running.address(Duration::from_secs(30));
        (running, format!("http://{address}"))
    };
    let sqs = |base: &str| {
        let config = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(base)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                aws_sdk_sqs::config::Credentials::new(
                    &first.sqs_access_key_id,
                    &first.sqs_secret,
                    None,
                    None,
                    "first start",
                ),
            ))
            .build();
        aws_sdk_sqs::Client::new(&config)
    };
    let queue = "sqsgw_sb_w1_halfmade.fifo";

    let (gateway, base) = serve();
    let created = reqwest::Client::new()
        .post(format!("{base}/v1/admin/workspaces/w1/connections"))
        .bearer_auth(&admin.key)
        .json(&json!({ "client_id": "halfmade" }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    assert!(
        sqs(&base)
            .get_queue_url()
            .queue_name(queue)
            .send()
            .await
            .is_ok(),
        "its queue exists"
    );
    gateway.signal("TERM");
    let mut gateway = gateway;
    assert!(gateway.exit_within(Duration::from_secs(30)).is_some());

    // As a crash between the record and its queues' last step leaves it: marked being created,
    // a moment ago (a restart right after the crash).
    let sombus = data.join(setup::SOMBUS_DIR);
    let path = sombus.join(CONNECTIONS);
    let mut stored: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    stored["connections"][0]["creating"] = json!(true);
    std::fs::write(&path, serde_json::to_vec_pretty(&stored).unwrap()).unwrap();

    let (_gateway, base) = serve();
    // No request was made: the start undid it.
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(stored["connections"], json!([]), "{stored}");
    let undone = lines(&sombus.join(AUDIT))
        .into_iter()
        .find(|line| line["action"] == "connection.create_undone")
        .expect("the undo is in the audit log");
    assert_eq!(
        (&undone["client_id"], &undone["actor"]),
        (&json!("w1.halfmade"), &json!("gateway:recovery"))
    );
    let gone = sqs(&base).get_queue_url().queue_name(queue).send().await;
    let code = gone
        .err()
        .and_then(|error| error.into_service_error().meta().code().map(str::to_owned));
    assert!(
        matches!(
            code.as_deref(),
            Some("QueueDoesNotExist" | "AWS.SimpleQueueService.NonExistentQueue")
        ),
        "its queues are deleted: {code:?}"
    );
}
