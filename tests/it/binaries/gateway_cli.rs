//! The `sqs-gateway` binary: config errors, key generation, and SIGTERM during a long poll.

use crate::harness::*;
use serde_json::json;
use sqs_gateway::credentials::api_keys::hash_key;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

fn write_config(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file
}

fn receipt_key() -> String {
    sqs_gateway::core::handle::Keyring::generate_key()
}

#[test]
fn a_bad_config_exits_2_naming_the_field() {
    let cases = [
        ("[backend]\nkind = \"sqs\"\nendpoint = \"x\"\n", "backend"),
        ("[backend]\nkind = \"carrier-pigeon\"\n", "backend"),
        (
            &format!(
                "[backend]\nkind = \"sqs\"\n[server]\nlisten = 8787\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
                receipt_key()
            ),
            "server.listen",
        ),
        ("[backend]\nkind = \"sqs\"\n", "receipt_keys"),
        (
            &format!(
                "[backend]\nkind = \"sqs\"\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n[ezgh.organizations.a.projects.p]\nqueues = {{ q = \"ghost\" }}\n",
                receipt_key()
            ),
            "ezgh.organizations.a.projects.p.queues.q",
        ),
    ];
    for (text, field) in cases {
        let file = write_config(text);
        for command in ["check-config", "serve"] {
            let output = Command::new(BIN)
                .args([command, "--config"])
                .arg(file.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{command} {text}: {stderr}");
            assert!(
                stderr.contains(&format!("config error: {field}")),
                "{command}: {stderr}"
            );
        }
    }
    let missing = Command::new(BIN)
        .args(["check-config", "--config", "/nonexistent/sqs-gateway.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn new_api_key_prints_a_key_and_a_config_entry_whose_hash_matches() {
    let output = Command::new(BIN)
        .args([
            "new-api-key",
            "--organization",
            "acme",
            "--name",
            "partner",
            "--receive-on",
            "orders",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let key = text
        .lines()
        .find_map(|line| line.trim_start_matches('#').trim().strip_prefix("sqsgw_"))
        .map(|rest| format!("sqsgw_{rest}"))
        .expect("the key is printed");
    let entry: toml::Value = toml::from_str(&text).unwrap();
    let record = &entry["api_keys"][0];
    assert_eq!(record["hash"].as_str().unwrap(), hash_key(&key));
    assert_eq!(record["organization"].as_str().unwrap(), "acme");
    assert_eq!(
        record["grants"]["orders"][0].as_str().unwrap(),
        "queues.messages.receive"
    );
    assert!(key.contains(record["id"].as_str().unwrap()));
}

#[tokio::test]
async fn sigterm_answers_waiting_long_polls_and_exits_cleanly() {
    if !crate::needs!(LocalStack) {
        return;
    }
    // A LocalStack queue, and a config for the real binary pointing at it.
    let sqs = sqs();
    let queue = unique("it-sigterm-");
    sqs.create_queue().queue_name(&queue).send().await.unwrap();
    let generated = sqs_gateway::credentials::api_keys::generate_key();
    let state_dir = tempfile::tempdir().unwrap();
    let config = write_config(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nshutdown_grace_seconds = 10\n\n[backend]\nkind = \"sqs\"\nendpoint_url = \"{}\"\nregion = \"us-east-1\"\n\n[queues.orders]\nsqs_queue = \"{queue}\"\n\n[[receipt_keys]]\nid = 1\nsecret_env = \"SQSGW_IT_RECEIPT_KEY\"\n\n[ezgh.organizations.acme.projects.shop]\nqueues = {{ orders = \"orders\" }}\n\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ orders = [\"queues.messages.receive\"] }}\n\n[state]\ndir = {}\n",
        localstack_endpoint(),
        generated.id,
        generated.hash,
        toml::Value::String(state_dir.path().display().to_string())
    ));
    let mut child = KillOnDrop(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(config.path())
            .env("SQSGW_IT_RECEIPT_KEY", receipt_key())
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("address=") {
                let address = line[at + 8..]
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = address_tx.send(address);
            }
        }
    });
    let address = address_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the gateway logs its address");
    let url = format!(
        "http://{address}/v1/organizations/acme/projects/shop/queues/orders/messages/receive"
    );
    let http = reqwest::Client::new();
    let waiting = tokio::spawn(
        http.post(url)
            .bearer_auth(&generated.key)
            .json(&json!({ "waitSeconds": 20 }))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(!waiting.is_finished());
    let killed = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let response = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the long poll is answered at shutdown")
        .unwrap()
        .unwrap();
    assert_eq!(response.status(), reqwest::StatusCode::OK);
    assert_eq!(
        response.json::<serde_json::Value>().await.unwrap(),
        json!({ "messages": [] })
    );
    let status = tokio::task::spawn_blocking(move || child.0.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// Kills the gateway process if the test fails before it exits.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_example_config_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/localstack.toml");
    let output = Command::new(BIN)
        .args(["check-config", "--config", path])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Starts `serve` with no config in `dir`; returns the process and what it printed up to the
/// instructions' last line.
fn start_zero_config(dir: &std::path::Path) -> (KillOnDrop, String) {
    let mut child = KillOnDrop(
        Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut printed = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            printed.push_str(&line);
            printed.push('\n');
            if line.starts_with("Queues:") {
                let _ = tx.send(printed.clone());
            }
        }
    });
    let printed = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("instructions are printed");
    (child, printed)
}

/// The consumer API key a first start's banner shows (on a line of its own; its `export` line
/// reads it from a file, out of the shell's history).
fn shown_api_key(printed: &str) -> Option<&str> {
    printed
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("sqsgw_"))
}

fn receive_url_in(printed: &str) -> String {
    let line = printed
        .lines()
        .find(|line| line.contains("/messages/receive"))
        .unwrap();
    let start = line.find("http://").unwrap();
    let end = line[start..].find('"').unwrap();
    line[start..start + end].to_owned()
}

#[tokio::test]
async fn serve_without_a_config_runs_the_embedded_backend_and_reuses_it_on_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, printed) = start_zero_config(dir.path());
    let key = shown_api_key(&printed)
        .expect("the key is shown on the first start")
        .to_owned();
    let http = reqwest::Client::new();
    let receive = |url: String, key: String| {
        let http = http.clone();
        async move {
            http.post(url)
                .bearer_auth(key)
                .json(&json!({ "waitSeconds": 0 }))
                .send()
                .await
                .unwrap()
        }
    };
    let answer = receive(receive_url_in(&printed), key.clone()).await;
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
    assert_eq!(
        answer.json::<serde_json::Value>().await.unwrap(),
        json!({ "messages": [] })
    );
    // The printed SQS credentials send through the SQS endpoint; ezgh receives what was sent.
    let exported = printed
        .lines()
        .find_map(|line| line.trim().strip_prefix("export AWS_ACCESS_KEY_ID="))
        .expect("SQS credentials are shown on the first start");
    let access_key = exported.split_whitespace().next().unwrap().to_owned();
    assert!(!exported.contains("AWS_SECRET_ACCESS_KEY=\"\"") && exported.contains("$(cat "));
    let secret_path = exported
        .split("$(cat ")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let secret = std::fs::read_to_string(secret_path).unwrap();
    let receive_url = receive_url_in(&printed);
    let base = receive_url.split("/v1/").next().unwrap().to_owned();
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(&base)
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            aws_sdk_sqs::config::Credentials::new(access_key, secret, None, None, "printed"),
        ))
        .build();
    aws_sdk_sqs::Client::new(&sdk)
        .send_message()
        .queue_url(format!("{base}/000000000000/orders"))
        .message_body("hello")
        .send()
        .await
        .unwrap();
    let answer = receive(receive_url, key.clone()).await;
    let messages = answer.json::<serde_json::Value>().await.unwrap();
    assert_eq!(messages["messages"][0]["body"], "hello");
    Command::new("kill")
        .args(["-TERM", &first.0.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(first.0.wait().unwrap().code(), Some(0));

    let (_second, printed) = start_zero_config(dir.path());
    assert!(
        printed.contains("Reusing the queues and credentials"),
        "{printed}"
    );
    assert!(!printed.contains(&key), "the key is shown only once");
    let answer = receive(receive_url_in(&printed), key).await;
    assert_eq!(
        answer.status(),
        reqwest::StatusCode::OK,
        "the same key works after a restart"
    );
}

#[tokio::test]
async fn a_first_start_that_cannot_listen_saves_nothing_and_the_next_start_shows_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let failed = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&failed.stdout)
            .find("SQSGW_API_KEY")
            .is_none(),
        "no key was shown"
    );
    assert!(
        !dir.path().join(sqs_gateway::setup::CONFIG_FILE).exists(),
        "no config with an unseen key's hash was saved"
    );
    drop(taken);
    let (_gateway, printed) = start_zero_config(dir.path());
    let key = shown_api_key(&printed).expect("the next start shows a key");
    let answer = reqwest::Client::new()
        .post(receive_url_in(&printed))
        .bearer_auth(key)
        .json(&json!({ "waitSeconds": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
}

#[tokio::test]
async fn new_api_key_adds_a_key_to_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, _) = start_zero_config(dir.path());
    Command::new("kill")
        .args(["-TERM", &first.0.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(first.0.wait().unwrap().code(), Some(0));
    let added = Command::new(BIN)
        .args(["new-api-key", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let text = String::from_utf8(added.stdout).unwrap();
    let key = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("export SQSGW_API_KEY="))
        .expect("the new key is shown")
        .to_owned();
    let config = std::fs::read_to_string(dir.path().join(sqs_gateway::setup::CONFIG_FILE)).unwrap();
    assert!(!config.contains(&key), "only its hash is saved");
    let (_second, printed) = start_zero_config(dir.path());
    let answer = reqwest::Client::new()
        .post(receive_url_in(&printed))
        .bearer_auth(&key)
        .json(&json!({ "waitSeconds": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
}

/// A gateway binary serving `config` (through `sh -c` with `shell_prefix`, e.g. a `ulimit`), with
/// its log lines collected.
struct Spawned {
    child: KillOnDrop,
    address: String,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

fn spawn_gateway(config: &str, shell_prefix: &str) -> Spawned {
    let file = write_config(config);
    let (_, path) = file.keep().unwrap();
    let mut child = KillOnDrop(
        Command::new("sh")
            .arg("-c")
            .arg(format!("{shell_prefix} exec \"$0\" serve --config \"$1\""))
            .arg(BIN)
            .arg(&path)
            .env("RUST_LOG", "info")
            .env("SQSGW_LOG_FORMAT", "text")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let lines = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(at) = line.find("address=") {
                let address = line[at + 8..].split_whitespace().next().unwrap_or_default();
                let _ = address_tx.send(address.to_owned());
            }
            lines.lock().unwrap().push(line);
        }
    });
    let address = address_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the gateway logs its address");
    Spawned {
        child,
        address,
        log,
    }
}

fn embedded_config(server: &str) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{server}\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[[sqs_api.credentials]]\naccess_key_id = \"AKIDBIN\"\nsecret = \"bin-secret-of-the-test\"\n",
        receipt_key()
    )
}

/// Resident memory of a process, in bytes.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap();
    kib * 1024
}

#[tokio::test]
async fn unauthenticated_big_bodies_cost_the_gateway_no_memory() {
    let gateway = spawn_gateway(&embedded_config(""), "");
    let pid = gateway.child.0.id();
    let before = resident_bytes(pid);
    let body = std::sync::Arc::new(vec![b'x'; 12 * 1024 * 1024]);
    let mut senders = Vec::new();
    for _ in 0..60 {
        let address = gateway.address.clone();
        let body = std::sync::Arc::clone(&body);
        senders.push(tokio::spawn(async move {
            use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
            let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
            let head = format!(
                "POST / HTTP/1.1\r\nhost: {address}\r\nx-amz-target: AmazonSQS.SendMessage\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            // The gateway answers and closes after the head; writing the rest then fails.
            let _ = stream.write_all(&body).await;
            let mut answer = Vec::new();
            let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
            String::from_utf8_lossy(&answer).into_owned()
        }));
    }
    let mut refused = 0;
    for sender in senders {
        if sender.await.unwrap().contains("MissingAuthenticationToken") {
            refused += 1;
        }
    }
    assert!(refused >= 50, "{refused} of 60 read their refusal");
    let grown = resident_bytes(pid).saturating_sub(before);
    assert!(
        grown < 64 * 1024 * 1024,
        "60 refused 12 MiB bodies grew the gateway by {} MiB",
        grown / 1024 / 1024
    );
}

#[tokio::test]
async fn idle_sockets_cannot_starve_the_gateway_of_file_descriptors() {
    // This test holds over two thousand sockets of its own.
    rlimit::increase_nofile_limit(u64::MAX).unwrap();
    let (_, hard) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let health = |address: String| {
        let http = http.clone();
        async move {
            http.get(format!("http://{address}/healthz"))
                .send()
                .await
                .map(|r| r.status())
        }
    };
    let hold = |address: String| async move {
        let mut held = Vec::new();
        for _ in 0..1100 {
            if let Ok(stream) = tokio::net::TcpStream::connect(&address).await {
                held.push(stream);
            }
        }
        held
    };
    // A soft limit of 1,024 is raised to the hard limit at start: 1,100 idle sockets fit.
    if hard > 1024 {
        let gateway = spawn_gateway(&embedded_config(""), "ulimit -S -n 1024;");
        let raised = gateway
            .log
            .lock()
            .unwrap()
            .iter()
            .any(|line| line.contains(&format!("open_file_limit={hard} ")));
        assert!(
            raised,
            "the start logs the raised limit: {:?}",
            gateway.log.lock().unwrap()
        );
        let held = hold(gateway.address.clone()).await;
        assert_eq!(held.len(), 1100);
        assert_eq!(
            health(gateway.address.clone()).await.unwrap(),
            reqwest::StatusCode::OK
        );
        drop(held);
    }

    // A hard limit of 1,024: the connection limit is fitted under it (1,024 - 256 kept back), the
    // sockets past it are refused or closed, and the gateway answers at once, and serves again once
    // the idle ones time out. No accept loop spins on EMFILE.
    let gateway = spawn_gateway(
        &embedded_config("idle_timeout_seconds = 4"),
        "ulimit -n 1024;",
    );
    let fitted = gateway
        .log
        .lock()
        .unwrap()
        .iter()
        .any(|line| line.contains("max_connections=768"));
    assert!(fitted, "{:?}", gateway.log.lock().unwrap());
    let held = hold(gateway.address.clone()).await;
    match health(gateway.address.clone()).await {
        Ok(status) => assert!(
            [
                reqwest::StatusCode::OK,
                reqwest::StatusCode::SERVICE_UNAVAILABLE
            ]
            .contains(&status)
        ),
        Err(error) => assert!(!error.is_timeout(), "a refusal, not a hang: {error}"),
    }
    tokio::time::sleep(Duration::from_millis(4500)).await;
    assert_eq!(
        health(gateway.address.clone()).await.unwrap(),
        reqwest::StatusCode::OK
    );
    drop(held);
    let log = gateway.log.lock().unwrap();
    assert!(
        log.iter()
            .filter(|line| line.contains("Too many open files"))
            .count()
            <= 1,
        "{log:?}"
    );
}

/// The gateway's request-serving threads: tokio's workers, by the name tokio gives them.
fn worker_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.trim_end() == "tokio-rt-worker")
        })
        .count()
}

#[tokio::test]
async fn worker_threads_sets_how_many_threads_serve_requests() {
    let http = reqwest::Client::new();
    for threads in [1, 3] {
        let gateway = spawn_gateway(&embedded_config(&format!("worker_threads = {threads}")), "");
        let health = http
            .get(format!("http://{}/healthz", gateway.address))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), reqwest::StatusCode::OK);
        assert_eq!(worker_threads(gateway.child.0.id()), threads);
    }
}
