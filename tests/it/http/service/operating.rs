//! Running it in production: the Prometheus scrape after a scripted workload, the metrics
//! listener, TLS termination with reloads, and request ids and trace context in JSON logs.

use crate::harness::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

fn altered(handle: &str) -> String {
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut raw = URL_SAFE_NO_PAD.decode(handle).unwrap();
    let middle = raw.len() / 2;
    raw[middle] ^= 0x40;
    URL_SAFE_NO_PAD.encode(raw)
}

async fn the_scrape_counts_what_a_workload_did(kind: Kind) {
    let backend = match kind {
        Kind::LocalStack | Kind::Redis | Kind::RedisCluster => "sqs",
        Kind::Embedded => "embedded",
    };
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("jobs"))
        .config("[server]\ninvalid_handles_per_minute = 2\n\n[metrics]\nsample_seconds = 1")
        .start()
        .await;
    for n in 0..3 {
        gw.send("orders", &format!("m{n}")).await;
    }
    // Depth gauges are sampled from the backend.
    wait_for(&gw, r#"sqsgw_queue_visible_messages{queue="orders"}"#, 3.0).await;

    let messages = gw
        .receive_ok("orders", json!({ "maxMessages": 1, "waitSeconds": 1 }))
        .await;
    assert_eq!(messages.len(), 1);
    let handle = handle_of(&messages[0]).to_owned();
    // A long poll on an empty queue is counted while it waits.
    let poller = {
        let http = gw.http.clone();
        let url = gw.receive_url("jobs");
        let key = gw.key.clone();
        tokio::spawn(async move {
            http.post(url)
                .bearer_auth(key)
                .json(&json!({ "waitSeconds": 3 }))
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    wait_for(&gw, "sqsgw_long_polls_waiting", 1.0).await;
    assert_eq!(poller.await.unwrap(), StatusCode::OK);
    wait_for(&gw, "sqsgw_long_polls_waiting", 0.0).await;

    // A wrong key, refused before any operation.
    let refused = gw
        .post_raw(&gw.receive_url("orders"), Some("sqsgw_0000_nope"), "{}")
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    // Altered handles: two fit the budget of 2 a minute, then 429s.
    let tampered = altered(&handle);
    let mut invalid_answered = 0;
    let mut limited = 0;
    for _ in 0..4 {
        match gw.ack(&[&tampered]).await.status {
            StatusCode::OK => invalid_answered += 1,
            StatusCode::TOO_MANY_REQUESTS => limited += 1,
            other => panic!("{other}"),
        }
    }
    assert_eq!((invalid_answered, limited), (2, 2));
    assert_eq!(gw.ack(&[&handle]).await.status, StatusCode::OK);

    wait_for(&gw, r#"sqsgw_queue_visible_messages{queue="orders"}"#, 2.0).await;
    wait_for(
        &gw,
        r#"sqsgw_queue_in_flight_messages{queue="orders"}"#,
        0.0,
    )
    .await;
    // One delivery, acknowledged: under the default `stale` policy the ledger forgets it (a
    // repeat reads as unknown, which answers stale alike), so it holds the deliveries in flight.
    let text = wait_for(&gw, "sqsgw_ledger_deliveries", 0.0).await;
    let count =
        |series: &str| sample(&text, series).unwrap_or_else(|| panic!("{series} in\n{text}"));
    assert_eq!(
        count(r#"sqsgw_http_requests_total{dialect="ezgh",operation="receive",status="200"}"#),
        2.0
    );
    assert_eq!(
        count(r#"sqsgw_http_request_duration_seconds_count{dialect="ezgh",operation="receive"}"#),
        2.0
    );
    assert_eq!(
        count(r#"sqsgw_http_requests_total{dialect="ezgh",operation="none",status="401"}"#),
        1.0
    );
    assert_eq!(
        count(r#"sqsgw_http_requests_total{dialect="ezgh",operation="acknowledge",status="200"}"#),
        3.0
    );
    assert_eq!(
        count(r#"sqsgw_invalid_handles_total{operation="acknowledge"}"#),
        2.0
    );
    assert_eq!(count(r#"sqsgw_rate_limited_total{scope="rate"}"#), 2.0);
    assert!(
        count(&format!(
            r#"sqsgw_backend_calls_total{{backend="{backend}",call="receive",outcome="ok"}}"#
        )) >= 2.0
    );
    assert_eq!(
        count(&format!(
            r#"sqsgw_backend_calls_total{{backend="{backend}",call="delete_batch",outcome="ok"}}"#
        )),
        1.0
    );
    assert!(
        count(&format!(
            r#"sqsgw_backend_call_duration_seconds_count{{backend="{backend}",call="receive"}}"#
        )) >= 2.0
    );
    assert!(count("process_resident_memory_bytes") > 0.0);
    assert!(text.contains("# TYPE sqsgw_http_request_duration_seconds histogram"));
    // Label values are bounded: no handle, key or body reaches the scrape.
    for secret in [handle.as_str(), tampered.as_str(), gw.key.as_str(), "m0"] {
        assert!(!text.contains(secret), "{secret} in the scrape");
    }

    // A replica that never handed out this delivery answers stale, and counts it as unknown.
    let replica = GatewayBuilder::new(kind).replica_of(&gw).start().await;
    let other = gw
        .receive_ok("orders", json!({ "maxMessages": 1, "waitSeconds": 1 }))
        .await;
    assert_eq!(
        replica.ack(&[handle_of(&other[0])]).await.body,
        json!({ "results": [stale()] })
    );
    let text = scrape(&replica).await;
    assert_eq!(
        sample(&text, r#"sqsgw_unknown_deliveries_total{policy="stale"}"#),
        Some(1.0)
    );
    replica.stop().await;
    gw.stop().await;
}

/// Backend calls by call name, from a scrape.
fn backend_calls(scrape: &str) -> std::collections::BTreeMap<String, f64> {
    scrape
        .lines()
        .filter(|line| line.starts_with("sqsgw_backend_calls_total{"))
        .filter_map(|line| {
            let call = line.split("call=\"").nth(1)?.split('"').next()?;
            let (_, value) = line.rsplit_once(' ')?;
            Some((call.to_owned(), value.parse::<f64>().ok()?))
        })
        .fold(Default::default(), |mut calls, (call, value)| {
            *calls.entry(call).or_default() += value;
            calls
        })
}

/// A receive is one backend call once the queue is known: no listing of the account's queues to
/// find dead-letter sources on every call (the gateway over SQS paid a ListQueues per receive).
async fn a_receive_is_one_backend_call(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nmanage_queues = true\n\n[metrics]\nsample_seconds = 3600")
        .start()
        .await;
    for n in 0..4 {
        gw.send("orders", &format!("m{n}")).await;
    }
    let body = json!({ "maxMessages": 1, "waitSeconds": 1, "visibilityTimeoutSeconds": 60 });
    gw.receive_ok("orders", body.clone()).await;
    let before = backend_calls(&scrape(&gw).await);
    for _ in 0..3 {
        assert_eq!(gw.receive_ok("orders", body.clone()).await.len(), 1);
    }
    let after = backend_calls(&scrape(&gw).await);
    let made = |call: &str| {
        after.get(call).copied().unwrap_or(0.0) - before.get(call).copied().unwrap_or(0.0)
    };
    assert_eq!(made("receive"), 3.0, "{before:?} -> {after:?}");
    // (Samplers in the background may read stats and tags meanwhile; none of them lists queues
    // after the start.)
    assert_eq!(made("list_queues"), 0.0, "{before:?} -> {after:?}");
    gw.stop().await;
}

crate::on_both_backends!(
    the_scrape_counts_what_a_workload_did,
    a_receive_is_one_backend_call
);

/// The embedded store's group commit as operators read it: its commits, the synced ones, and the
/// writes they carried; a gateway without a disk store shows none of them.
#[tokio::test]
async fn the_scrape_counts_the_embedded_store_s_commits_syncs_and_writes() {
    let dir = tempfile::tempdir().unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .durable(dir.path())
        .queue(QueueSpec::standard("orders"))
        .config("[metrics]\nsample_seconds = 1")
        .start()
        .await;
    for n in 0..40 {
        gw.send("orders", &format!("m{n}")).await;
    }
    let mut text = String::new();
    for _ in 0..100 {
        text = scrape(&gw).await;
        if sample(&text, "sqsgw_store_writes_total").is_some_and(|writes| writes >= 40.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let count = |series| sample(&text, series).unwrap_or_else(|| panic!("no {series}:\n{text}"));
    let (commits, syncs, writes) = (
        count("sqsgw_store_commits_total"),
        count("sqsgw_store_syncs_total"),
        count("sqsgw_store_writes_total"),
    );
    assert!(writes >= 40.0, "every answered send is a write: {writes}");
    assert!(
        (1.0..=commits).contains(&syncs),
        "syncs {syncs}, commits {commits}"
    );
    assert!(
        syncs <= writes,
        "every sync carried a send: {syncs} > {writes}"
    );
    assert!(
        text.contains("# TYPE sqsgw_store_syncs_total counter"),
        "{text}"
    );

    let in_memory = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[metrics]\nsample_seconds = 1")
        .start()
        .await;
    in_memory.send("orders", "m").await;
    let text = wait_for(
        &in_memory,
        r#"sqsgw_queue_visible_messages{queue="orders"}"#,
        1.0,
    )
    .await;
    assert!(!text.contains("sqsgw_store_"), "{text}");
}

#[tokio::test]
async fn metrics_can_move_to_their_own_listener_or_be_turned_off() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&format!("[metrics]\nlisten = \"127.0.0.1:{port}\""))
        .start()
        .await;
    let on_api = gw
        .http
        .get(format!("{}/metrics", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(on_api.status(), StatusCode::NOT_FOUND);
    let mut text = String::new();
    for _ in 0..50 {
        if let Ok(answer) = gw
            .http
            .get(format!("http://127.0.0.1:{port}/metrics"))
            .send()
            .await
        {
            text = answer.text().await.unwrap();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(text.contains("process_resident_memory_bytes"), "{text}");
    gw.stop().await;

    let off = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[metrics]\nenabled = false")
        .start()
        .await;
    let answer = off
        .http
        .get(format!("{}/metrics", off.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    off.stop().await;
}

/// A self-signed certificate for `localhost` and 127.0.0.1: (certificate PEM, key PEM).
fn certificate(name: &str) -> (String, String) {
    let mut params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A client that trusts only `certificate_pem`, with fresh connections each time.
fn client_trusting(certificate_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(certificate_pem.as_bytes()).unwrap())
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Whether `client` gets an answer from `{base}/healthz` (a handshake it accepts) within `time`.
async fn answers_within(client: &reqwest::Client, base: &str, time: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + time;
    while tokio::time::Instant::now() < deadline {
        if client.get(format!("{base}/healthz")).send().await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn write_pair(dir: &Path, (cert, key): &(String, String)) -> (PathBuf, PathBuf) {
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    // Written beside and renamed, as certificate tools do: a reader never sees half a file.
    std::fs::write(dir.join("cert.tmp"), cert).unwrap();
    std::fs::write(dir.join("key.tmp"), key).unwrap();
    std::fs::rename(dir.join("key.tmp"), &key_file).unwrap();
    std::fs::rename(dir.join("cert.tmp"), &cert_file).unwrap();
    (cert_file, key_file)
}

#[tokio::test]
async fn tls_serves_https_and_reloads_changed_files_without_dropping_connections() {
    let dir = tempfile::tempdir().unwrap();
    let first = certificate("first");
    let (cert_file, key_file) = write_pair(dir.path(), &first);
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&format!(
            "[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\nreload_check_seconds = 1",
            cert_file.display(),
            key_file.display()
        ))
        .start()
        .await;
    let https = gw.base.replace("http://127.0.0.1", "https://localhost");
    let trusts_first = client_trusting(&first.0);
    let ready = trusts_first
        .get(format!("{https}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(
        ready.version(),
        reqwest::Version::HTTP_2,
        "ALPN chose HTTP/2"
    );
    let http1_only = reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(first.0.as_bytes()).unwrap())
        .http1_only()
        .build()
        .unwrap();
    let ready = http1_only
        .get(format!("{https}/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        (ready.status(), ready.version()),
        (StatusCode::OK, reqwest::Version::HTTP_11)
    );
    // Plain HTTP on a TLS listener gets nowhere.
    assert!(
        gw.http
            .get(format!("{}/healthz", gw.base))
            .send()
            .await
            .is_err()
    );

    // A long poll opened under the first certificate...
    let waiting = {
        let client = trusts_first.clone();
        let url = gw.receive_url("orders").replace(&gw.base, &https);
        let key = gw.key.clone();
        tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&json!({ "waitSeconds": 4 }))
                .send()
                .await
                .map(|answer| answer.status())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...survives a change of files: new handshakes get the second one.
    let second = certificate("second");
    write_pair(dir.path(), &second);
    let trusts_second = client_trusting(&second.0);
    assert!(
        answers_within(&trusts_second, &https, Duration::from_secs(10)).await,
        "the changed files are served"
    );
    // A fresh client (no TLS session to resume) that trusts only the first one is refused now.
    assert!(
        client_trusting(&first.0)
            .get(format!("{https}/healthz"))
            .send()
            .await
            .is_err()
    );
    assert_eq!(waiting.await.unwrap().unwrap(), StatusCode::OK);

    // A broken key file is refused; the last good pair stays in use.
    std::fs::write(
        &key_file,
        "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let still = trusts_second
        .get(format!("{https}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(still.status(), StatusCode::OK);
    assert!(
        captured_logs().contains("TLS certificate not reloaded"),
        "the failed reload is logged"
    );
    gw.stop().await;
}

/// With `[server.tls]` and no public URL set, the URLs the gateway answers are `https://`: the
/// SQS endpoint's queue URLs (JSON and Query) and the token URL shown with a sombus secret, so
/// nothing leads a client to send a secret in clear text.
#[tokio::test]
async fn a_tls_gateway_hands_out_https_urls() {
    let dir = tempfile::tempdir().unwrap();
    let pair = certificate("urls");
    let (cert_file, key_file) = write_pair(dir.path(), &pair);
    let admin = sqs_gateway::credentials::api_keys::generate_key();
    let store = tempfile::tempdir().unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(&format!(
            "[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\n\n\
             [sombus]\ncredentials_dir = \"{}\"\n\n\
             [[sombus.admin_keys]]\nid = \"{}\"\nname = \"admin\"\nhash = \"{}\"\nworkspaces = [\"house\"]\nrole = \"admin\"\n",
            cert_file.display(),
            key_file.display(),
            store.path().display(),
            admin.id,
            admin.hash,
        ))
        .start()
        .await;
    let https = gw.base.replace("http://127.0.0.1", "https://localhost");
    let host = https.trim_start_matches("https://").to_owned();
    let client = client_trusting(&pair.0);
    let call = |request: http::Request<Vec<u8>>| {
        let client = client.clone();
        async move {
            let answer = client
                .execute(reqwest::Request::try_from(request).unwrap())
                .await
                .unwrap();
            (answer.status(), answer.text().await.unwrap())
        }
    };
    let json_url = call(signed(
        "POST",
        &format!("{https}/"),
        &[
            ("host", &host),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "AmazonSQS.GetQueueUrl"),
        ],
        br#"{"QueueName":"orders"}"#,
        &Signing::default(),
    ))
    .await;
    assert_eq!(json_url.0, StatusCode::OK, "{}", json_url.1);
    let json_url: Value = serde_json::from_str(&json_url.1).unwrap();
    assert_eq!(
        json_url["QueueUrl"],
        format!("{https}/000000000000/orders"),
        "JSON"
    );
    let query_url = call(signed(
        "POST",
        &format!("{https}/"),
        &[
            ("host", &host),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        b"Action=GetQueueUrl&QueueName=orders&Version=2012-11-05",
        &Signing::default(),
    ))
    .await;
    assert_eq!(query_url.0, StatusCode::OK, "{}", query_url.1);
    assert!(
        query_url
            .1
            .contains(&format!("<QueueUrl>{https}/000000000000/orders</QueueUrl>")),
        "Query: {}",
        query_url.1
    );
    let created = client
        .post(format!("{https}/v1/admin/workspaces/house/connections"))
        .bearer_auth(&admin.key)
        .json(&json!({ "name": "tls-house" }))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let created: Value = created.json().await.unwrap();
    assert_eq!(
        created["urls"]["token"],
        format!("{https}/v1/oauth/token"),
        "{created}"
    );
    gw.stop().await;
}

#[tokio::test]
async fn a_gateway_does_not_start_with_a_key_that_is_not_the_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, _) = certificate("one");
    let (_, other_key) = certificate("two");
    let (cert_file, key_file) = write_pair(dir.path(), &(cert, other_key));
    let config = sqs_gateway::config::Config::parse(&format!(
        "[backend]\nkind = \"embedded\"\nin_memory = true\n\n[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
        cert_file.display(),
        key_file.display(),
        sqs_gateway::core::handle::Keyring::generate_key()
    ))
    .unwrap();
    let error = sqs_gateway::server::App::build(&config, Default::default())
        .await
        .err()
        .expect("refused");
    assert!(
        error
            .to_string()
            .contains("does not belong to the certificate"),
        "{error}"
    );
}

/// A gateway binary started with a config; its stderr is collected.
struct Process {
    child: tokio::process::Child,
    port: u16,
}

impl Process {
    async fn start(config: &Path, args: &[&str]) -> Self {
        let port = free_port();
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sqs-gateway"))
            .args(["serve", "--config"])
            .arg(config)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Self { child, port }
    }

    /// SIGTERM, then the logs it wrote.
    async fn stop(self) -> String {
        let pid = self.child.id().unwrap();
        tokio::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await
            .unwrap();
        let output = tokio::time::timeout(Duration::from_secs(30), self.child.wait_with_output())
            .await
            .expect("stops on SIGTERM")
            .unwrap();
        String::from_utf8_lossy(&output.stderr).into_owned()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn wait_until_up(client: &reqwest::Client, url: &str) {
    for _ in 0..200 {
        if client.get(url).send().await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never answered");
}

#[tokio::test]
async fn json_logs_carry_the_request_id_operation_and_traceparent_on_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let key = sqs_gateway::credentials::api_keys::generate_key();
    // A backend nobody listens on: the failure is logged inside the request.
    let closed = free_port();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[backend]\nkind = \"sqs\"\nendpoint_url = \"http://127.0.0.1:{closed}\"\nregion = \"us-east-1\"\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n\n[ezgh.organizations.acme.projects.shop]\nqueues = {{ orders = \"orders\" }}\n\n[[api_keys]]\nid = \"{}\"\norganization = \"acme\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"queues.messages.receive\"] }}\n\n[state]\ndir = {}\n",
            sqs_gateway::core::handle::Keyring::generate_key(),
            key.id,
            key.hash,
            toml::Value::String(dir.path().join("state").display().to_string())
        ),
    )
    .unwrap();
    let gateway = Process::start(&config, &["--log-format", "json"]).await;
    let base = format!("http://127.0.0.1:{}", gateway.port);
    let http = reqwest::Client::new();
    wait_until_up(&http, &format!("{base}/healthz")).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let answer = http
        .post(format!(
            "{base}/v1/organizations/acme/projects/shop/queues/orders/messages/receive"
        ))
        .bearer_auth(&key.key)
        .header("x-request-id", "it-request-1")
        .header("traceparent", traceparent)
        .json(&json!({ "waitSeconds": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(answer.headers()["x-request-id"], "it-request-1");
    // Without one (or with junk), the gateway makes the id; junk trace context is dropped.
    let answer = http
        .get(format!("{base}/healthz"))
        .header("x-request-id", "not ok; <script>")
        .header("traceparent", "00-zz-11-01")
        .send()
        .await
        .unwrap();
    let made = answer.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(made.len(), 36, "a UUID: {made}");
    let logs = gateway.stop().await;

    let lines: Vec<Value> = logs
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("JSON line: {line}")))
        .collect();
    let of_request: Vec<&Value> = lines
        .iter()
        .filter(|line| line["span"]["request_id"] == "it-request-1")
        .collect();
    assert!(
        of_request.len() >= 2,
        "the backend failure and the answer are logged in the request: {logs}"
    );
    for line in &of_request {
        assert_eq!(line["span"]["operation"], "receive", "{line}");
        assert_eq!(line["span"]["traceparent"], traceparent, "{line}");
        assert_eq!(
            line["span"]["route"],
            "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive",
            "{line}"
        );
    }
    assert!(
        of_request
            .iter()
            .any(|line| line["level"] == "ERROR" || line["level"] == "WARN")
    );
    let answered = lines
        .iter()
        .find(|line| line["span"]["request_id"] == made.as_str())
        .expect("the probe's line");
    assert!(answered["span"].get("traceparent").is_none(), "{answered}");
    assert!(!logs.contains(&key.key), "no key in the logs");
}

#[tokio::test]
async fn sighup_reloads_the_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let first = certificate("first");
    let (cert_file, key_file) = write_pair(dir.path(), &first);
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[backend]\nkind = \"embedded\"\nin_memory = true\n\n[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\nreload_check_seconds = 3600\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
            cert_file.display(),
            key_file.display(),
            sqs_gateway::core::handle::Keyring::generate_key()
        ),
    )
    .unwrap();
    let gateway = Process::start(&config, &[]).await;
    let https = format!("https://localhost:{}", gateway.port);
    let trusts_first = client_trusting(&first.0);
    wait_until_up(&trusts_first, &format!("{https}/healthz")).await;
    let second = certificate("second");
    write_pair(dir.path(), &second);
    // The files changed, but only hourly looks would notice: the first pair still serves.
    assert!(
        trusts_first
            .get(format!("{https}/healthz"))
            .send()
            .await
            .is_ok()
    );
    tokio::process::Command::new("kill")
        .args(["-HUP", &gateway.child.id().unwrap().to_string()])
        .status()
        .await
        .unwrap();
    let trusts_second = client_trusting(&second.0);
    assert!(
        answers_within(&trusts_second, &https, Duration::from_secs(5)).await,
        "SIGHUP reloads"
    );
    let logs = gateway.stop().await;
    assert!(logs.contains("TLS certificate reloaded"), "{logs}");
}
