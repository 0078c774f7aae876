//! Keys reloaded while the gateway runs, through the binary and HTTP: keys the
//! `new-*-key --data-dir` commands add work without a restart (seen by the file watcher, or at
//! once on SIGHUP), a key removed from the config is refused after the reload, a config that
//! does not check out keeps the keys in use and the process alive, and a SigV4 credential added
//! (or whose secret changed) signs after a SIGHUP.

use crate::binary::{BIN, Running};
use sqs_gateway::credentials::api_keys::{GeneratedKey, generate_key};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a change may take to be seen: far past the poll period of the tests that poll (1 or
/// 2 s), far below the one of those that wait for a SIGHUP (3600 s).
const SEEN_WITHIN: Duration = Duration::from_secs(30);

/// HTTP calls from a synchronous test, on a runtime of their own.
struct Http {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    base: String,
}

impl Http {
    fn new(address: &str) -> Self {
        Self {
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            base: format!("http://{address}"),
        }
    }

    /// The status of an ezgh receive (no wait) with `key` on `organization/project/orders`.
    fn ezgh(&self, key: &str, organization: &str, project: &str) -> u16 {
        let url = format!(
            "{}/v1/organizations/{organization}/projects/{project}/queues/orders/messages/receive",
            self.base
        );
        let request = self
            .client
            .post(url)
            .bearer_auth(key)
            .json(&serde_json::json!({ "maxMessages": 1, "waitSeconds": 0 }));
        self.status(request)
    }

    /// The status of basaltic's `GET /v1/queues` with `key`.
    fn basaltic(&self, key: &str) -> u16 {
        let request = self
            .client
            .get(format!("{}/v1/queues", self.base))
            .bearer_auth(key);
        self.status(request)
    }

    /// The names basaltic's `GET /v1/queues` lists to `key`.
    fn basaltic_queue_names(&self, key: &str) -> Vec<String> {
        let request = self
            .client
            .get(format!("{}/v1/queues", self.base))
            .bearer_auth(key);
        let listed: serde_json::Value = self
            .runtime
            .block_on(async { request.send().await?.json().await })
            .unwrap();
        listed["queues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|queue| queue["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The status of the sombus admin API's connection list of `workspace` with `key`.
    fn admin(&self, key: &str, workspace: &str) -> u16 {
        let request = self
            .client
            .get(format!(
                "{}/v1/admin/workspaces/{workspace}/connections",
                self.base
            ))
            .bearer_auth(key);
        self.status(request)
    }

    fn status(&self, request: reqwest::RequestBuilder) -> u16 {
        self.runtime
            .block_on(async { request.send().await })
            .unwrap()
            .status()
            .as_u16()
    }

    /// ListQueues through the SQS endpoint, signed with `key_id` and `secret` by the AWS SDK:
    /// the queue URLs, or the refusal.
    fn list_queues(&self, key_id: &str, secret: &str) -> Result<Vec<String>, String> {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .endpoint_url(&self.base)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                aws_sdk_sqs::config::Credentials::new(key_id, secret, None, None, "test"),
            ))
            .build();
        self.runtime
            .block_on(aws_sdk_sqs::Client::new(&sdk).list_queues().send())
            .map(|listed| listed.queue_urls().to_vec())
            .map_err(|error| format!("{error:?}"))
    }

    /// The value of `sqsgw_config_reloads_total{outcome="…"}` on the scrape (0 when absent).
    fn reloads(&self, outcome: &str) -> u64 {
        let text = self
            .runtime
            .block_on(async {
                let answer = self
                    .client
                    .get(format!("{}/metrics", self.base))
                    .send()
                    .await?;
                answer.text().await
            })
            .unwrap();
        let series = format!("sqsgw_config_reloads_total{{outcome=\"{outcome}\"}} ");
        text.lines()
            .find_map(|line| line.strip_prefix(&series))
            .map_or(0, |value| value.trim().parse::<f64>().unwrap() as u64)
    }
}

/// Waits (polling, at most [`SEEN_WITHIN`]) until `done` holds; panics with the gateway's log.
fn eventually(gateway: &Running, what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + SEEN_WITHIN;
    while !done() {
        assert!(
            Instant::now() < until,
            "not within {SEEN_WITHIN:?}: {what}\n{}",
            gateway.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Replaces a config whole, as the key commands do (a new file renamed over it).
fn rewrite(path: &Path, text: &str) {
    let staging = path.with_extension("staging");
    std::fs::write(&staging, text).unwrap();
    std::fs::rename(&staging, path).unwrap();
}

/// Runs `sqs-gateway ARGS --data-dir DATA`: the key it printed on its `export NAME=key` line.
fn key_command(args: &[&str], data: &Path) -> String {
    let output = Command::new(BIN)
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("picks it up") && !stdout.contains("uses it from its next start"),
        "{stdout}"
    );
    stdout
        .lines()
        .find_map(|line| {
            line.strip_prefix("export ")?
                .split_once('=')
                .map(|(_, key)| key.to_owned())
        })
        .unwrap_or_else(|| panic!("a key in {stdout}"))
}

fn serve_data_dir(data: &Path) -> Running {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data);
    Running::spawn(command)
}

fn stop(mut gateway: Running) {
    gateway.signal("TERM");
    let status = gateway.exit_within(Duration::from_secs(30));
    assert_eq!(status.and_then(|status| status.code()), Some(0));
}

/// Adds one key of every kind with the commands, and waits for each to work (the caller has
/// made the running gateway see changes by polling, or sends SIGHUP through `nudge`).
fn every_command_key_works(gateway: &Running, data: &Path, http: &Http, nudge: &dyn Fn()) {
    let api = key_command(&["new-api-key"], data);
    let basaltic = key_command(&["new-basaltic-key"], data);
    let admin = key_command(
        &["new-admin-key", "--workspace", "demo", "--role", "admin"],
        data,
    );
    nudge();
    eventually(gateway, "the new ezgh API key is accepted", || {
        http.ezgh(&api, "local", "default") == 200
    });
    eventually(gateway, "the new basaltic key is accepted", || {
        http.basaltic(&basaltic) == 200
    });
    eventually(gateway, "the new admin key is accepted", || {
        http.admin(&admin, "demo") == 200
    });
    assert_eq!(
        http.admin(&admin, "elsewhere"),
        403,
        "its grants apply as written"
    );
}

#[test]
fn keys_the_commands_add_to_a_running_zero_config_gateway_work_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut gateway = serve_data_dir(&data);
    let banner = gateway.stdout_through("Queues:", Duration::from_secs(30));
    assert!(!banner.contains("then restart"), "{banner}");
    let address = gateway.address(Duration::from_secs(30));
    let http = Http::new(&address);
    assert_eq!(http.basaltic(&generate_key().key), 401);
    every_command_key_works(&gateway, &data, &http, &|| {});
    // Log lines reach stderr within 50 ms.
    eventually(&gateway, "the INFO line with the keys of each kind", || {
        gateway.stderr().lines().any(|line| {
            line.contains("INFO")
                && line.contains("config reloaded")
                && line.contains("ezgh_api_keys=2")
                // The first start's console key, and the one the command added.
                && line.contains("basaltic_keys=2")
                && line.contains("sombus_admin_keys=1")
                && line.contains("sqs_credentials=1")
        })
    });
    let stderr = gateway.stderr();
    assert!(http.reloads("applied") >= 1, "{stderr}");
    assert_eq!(http.reloads("refused"), 0, "{stderr}");
    assert!(
        !stderr.contains("need a restart"),
        "only keys changed: {stderr}"
    );
    stop(gateway);
}

#[test]
fn keys_the_commands_add_work_at_once_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut first = serve_data_dir(&data);
    first.stdout_through("Queues:", Duration::from_secs(30));
    stop(first);
    // A file looked at once an hour: only the SIGHUP can explain a key seen within seconds.
    let config = data.join(sqs_gateway::setup::CONFIG_FILE);
    let text = std::fs::read_to_string(&config).unwrap();
    rewrite(
        &config,
        &text.replacen("[server]\n", "[server]\nconfig_check_seconds = 3600\n", 1),
    );
    let mut gateway = serve_data_dir(&data);
    let address = gateway.address(Duration::from_secs(30));
    let http = Http::new(&address);
    every_command_key_works(&gateway, &data, &http, &|| gateway.signal("HUP"));
    eventually(&gateway, "the reload's log line", || {
        gateway
            .stderr()
            .lines()
            .any(|line| line.contains("config reloaded") && line.contains("SIGHUP"))
    });
    stop(gateway);
}

/// Config entries of a key of each kind.
fn ezgh_entry(key: &GeneratedKey) -> String {
    format!(
        "[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n",
        key.id, key.hash
    )
}

fn basaltic_entry(key: &GeneratedKey) -> String {
    format!(
        "[[basaltic.keys]]\nid = \"{}\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n\n",
        key.id, key.hash
    )
}

fn admin_entry(key: &GeneratedKey) -> String {
    format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nhash = \"{}\"\nworkspaces = [\"demo\"]\nrole = \"viewer\"\n\n",
        key.id, key.hash
    )
}

fn sqs_entry(key_id: &str, secret: &str) -> String {
    format!("[[sqs_api.credentials]]\naccess_key_id = \"{key_id}\"\nsecret = \"{secret}\"\n\n")
}

/// An in-memory gateway's config with `entries` (keys) after its fixed part; the file is looked
/// at every `check_seconds`.
fn config_text(check_seconds: u64, receipt_key: &str, extra: &str, entries: &[String]) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nconfig_check_seconds = {check_seconds}\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n{extra}\n[[receipt_keys]]\nid = 1\nsecret = \"{receipt_key}\"\n\n[ezgh.organizations.acme.projects.shop]\nqueues = {{ orders = \"orders\" }}\n\n{}",
        entries.concat()
    )
}

fn serve_config(path: &Path) -> (Running, Http) {
    let mut command = Command::new(BIN);
    command.args(["serve", "--config"]).arg(path);
    let mut gateway = Running::spawn(command);
    let address = gateway.address(Duration::from_secs(30));
    (gateway, Http::new(&address))
}

#[test]
fn a_key_removed_from_the_config_is_refused_after_the_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let receipt = sqs_gateway::core::handle::Keyring::generate_key();
    let (kept, revoked) = (generate_key(), generate_key());
    let (basaltic, admin) = (generate_key(), generate_key());
    let all = [
        ezgh_entry(&kept),
        ezgh_entry(&revoked),
        basaltic_entry(&basaltic),
        admin_entry(&admin),
    ];
    std::fs::write(&path, config_text(1, &receipt, "", &all)).unwrap();
    let (gateway, http) = serve_config(&path);
    assert_eq!(http.ezgh(&revoked.key, "acme", "shop"), 200);
    assert_eq!(http.basaltic(&basaltic.key), 200);
    assert_eq!(http.admin(&admin.key, "demo"), 200);

    rewrite(&path, &config_text(1, &receipt, "", &[ezgh_entry(&kept)]));
    eventually(&gateway, "the removed ezgh key is refused", || {
        http.ezgh(&revoked.key, "acme", "shop") == 401
    });
    assert_eq!(
        http.basaltic(&basaltic.key),
        401,
        "the removed basaltic key"
    );
    assert_eq!(http.admin(&admin.key, "demo"), 401, "the removed admin key");
    assert_eq!(
        http.ezgh(&kept.key, "acme", "shop"),
        200,
        "the key left in works on"
    );

    // The admin key is back with another role, and a queue is added: the grant applies at once,
    // the queue waits for a restart, and the log says so.
    let promoted = admin_entry(&admin).replace("\"viewer\"", "\"admin\"");
    rewrite(
        &path,
        &config_text(
            1,
            &receipt,
            "\n[queues.jobs]\n",
            &[ezgh_entry(&kept), promoted],
        ),
    );
    eventually(&gateway, "the admin key is back", || {
        http.admin(&admin.key, "demo") == 200
    });
    eventually(&gateway, "the WARN about the queues", || {
        gateway.stderr().lines().any(|line| {
            line.contains("WARN") && line.contains("need a restart") && line.contains("queues")
        })
    });
    let warned = gateway.stderr();
    let warning = warned
        .lines()
        .find(|line| line.contains("need a restart"))
        .unwrap();
    assert!(
        !warning.contains("sombus") && !warning.contains("api_keys"),
        "{warning}"
    );
    stop(gateway);
}

#[test]
fn a_config_that_does_not_check_out_keeps_the_keys_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let receipt = sqs_gateway::core::handle::Keyring::generate_key();
    let (old, new) = (generate_key(), generate_key());
    const SHORT: &str = "tooShort7";
    std::fs::write(&path, config_text(1, &receipt, "", &[ezgh_entry(&old)])).unwrap();
    let (gateway, http) = serve_config(&path);
    assert_eq!(http.ezgh(&old.key, "acme", "shop"), 200);

    // Broken TOML, with the old key removed and a new one added: nothing of it is applied.
    let broken = config_text(1, &receipt, "", &[ezgh_entry(&new)]) + "\n[[api_keys\n";
    rewrite(&path, &broken);
    eventually(&gateway, "the refusal of the broken file", || {
        http.reloads("refused") == 1
    });
    // A file that parses, with an SQS secret too short: refused naming the field, secret unsaid.
    let short = config_text(
        1,
        &receipt,
        "",
        &[ezgh_entry(&new), sqs_entry("AKIDSHORT", SHORT)],
    );
    rewrite(&path, &short);
    eventually(&gateway, "the refusal of the short secret", || {
        http.reloads("refused") == 2
    });
    // Sent SIGHUP too: refused again, and the process lives on.
    gateway.signal("HUP");
    eventually(&gateway, "the refusal on SIGHUP", || {
        http.reloads("refused") == 3
    });
    assert_eq!(
        http.ezgh(&old.key, "acme", "shop"),
        200,
        "the old key stays"
    );
    assert_eq!(
        http.ezgh(&new.key, "acme", "shop"),
        401,
        "nothing was applied"
    );
    assert_eq!(http.reloads("applied"), 0);
    let refused = |line: &str| line.contains("ERROR") && line.contains("config not reloaded");
    eventually(&gateway, "three ERROR lines", || {
        gateway
            .stderr()
            .lines()
            .filter(|line| refused(line))
            .count()
            == 3
    });
    let stderr = gateway.stderr();
    let refusals: Vec<&str> = stderr.lines().filter(|line| refused(line)).collect();
    assert!(refusals[0].contains("(file)"), "{}", refusals[0]);
    assert!(
        refusals[1].contains("sqs_api.credentials[0].secret")
            && refusals[1].contains("fewer than 16"),
        "{}",
        refusals[1]
    );
    assert!(
        !stderr.contains(SHORT),
        "the secret is never logged: {stderr}"
    );

    // Fixed: read again on the change, and applied.
    rewrite(&path, &config_text(1, &receipt, "", &[ezgh_entry(&new)]));
    eventually(&gateway, "the fixed file's key", || {
        http.ezgh(&new.key, "acme", "shop") == 200
    });
    assert_eq!(http.ezgh(&old.key, "acme", "shop"), 401);
    assert_eq!(http.reloads("applied"), 1);
    stop(gateway);
}

#[test]
fn a_sigv4_credential_added_or_changed_signs_after_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let receipt = sqs_gateway::core::handle::Keyring::generate_key();
    let (first_secret, second_secret, changed_secret) = (
        "first-secret-of-the-reload-test",
        "second-secret-of-the-reload-test",
        "changed-secret-of-the-reload-test",
    );
    let text = |entries: &[String]| config_text(3600, &receipt, "", entries);
    std::fs::write(&path, text(&[sqs_entry("AKIDFIRST", first_secret)])).unwrap();
    let (gateway, http) = serve_config(&path);
    assert!(http.list_queues("AKIDFIRST", first_secret).is_ok());
    assert!(http.list_queues("AKIDSECOND", second_secret).is_err());

    rewrite(
        &path,
        &text(&[
            sqs_entry("AKIDFIRST", first_secret),
            sqs_entry("AKIDSECOND", second_secret),
        ]),
    );
    gateway.signal("HUP");
    eventually(&gateway, "the added credential signs", || {
        http.list_queues("AKIDSECOND", second_secret).is_ok()
    });
    let listed = http.list_queues("AKIDSECOND", second_secret).unwrap();
    assert!(
        listed.iter().any(|url| url.ends_with("/orders")),
        "{listed:?}"
    );

    // The first key's secret changes, the second key goes: the old secret and the removed key
    // are refused (no signing key derived before the reload outlives it), the new secret signs.
    rewrite(&path, &text(&[sqs_entry("AKIDFIRST", changed_secret)]));
    gateway.signal("HUP");
    eventually(&gateway, "the changed secret signs", || {
        http.list_queues("AKIDFIRST", changed_secret).is_ok()
    });
    let old = http.list_queues("AKIDFIRST", first_secret);
    assert!(old.is_err(), "the old secret still signs: {old:?}");
    let removed = http.list_queues("AKIDSECOND", second_secret);
    assert!(removed.is_err(), "the removed key still signs: {removed:?}");
    stop(gateway);
}

/// On a config of one's own, basaltic keys see only the queues made through basaltic, and the
/// start-up log says what to set; `basaltic.all_queues` set in the file applies on the reload
/// (the configured queue is listed), with no restart asked for.
#[test]
fn basaltic_all_queues_is_applied_by_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let receipt = sqs_gateway::core::handle::Keyring::generate_key();
    let key = generate_key();
    std::fs::write(&path, config_text(1, &receipt, "", &[basaltic_entry(&key)])).unwrap();
    let (gateway, http) = serve_config(&path);
    assert!(http.basaltic_queue_names(&key.key).is_empty());
    assert!(
        gateway
            .stderr()
            .contains("set [basaltic] all_queues = true to show those"),
        "{}",
        gateway.stderr()
    );
    rewrite(
        &path,
        &config_text(
            1,
            &receipt,
            "",
            &[format!(
                "[basaltic]\nall_queues = true\n\n{}",
                basaltic_entry(&key)
            )],
        ),
    );
    eventually(&gateway, "the configured queue is listed", || {
        http.basaltic_queue_names(&key.key) == ["orders"]
    });
    eventually(&gateway, "the change is logged", || {
        gateway.stderr().contains("basaltic.all_queues changed")
    });
    assert!(
        !gateway.stderr().contains("need a restart"),
        "{}",
        gateway.stderr()
    );
    stop(gateway);
}
