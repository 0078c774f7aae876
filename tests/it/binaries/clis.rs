//! What the command-line clients do alike, run as their own binaries: shell completions, keys from
//! the environment or a file (and flags that warn), control characters escaped for a terminal and
//! exact in JSON, a closed pipe stopping them quietly, connection failures naming their cause (and
//! `--cacert` trusting a private CA), and `--help` setting the connection flags apart. Each CLI's
//! own commands are in `<binary>_cli.rs`.

use super::support::*;
use crate::harness::{GatewayBuilder, Kind, ORG, PROJECT, QueueSpec};
use crate::http::basaltic::support::Basaltic;
use serde_json::{Value, json};

const GATEWAY_BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

/// Writes `text` to `path` with `mode`.
fn write_with_mode(path: &std::path::Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[tokio::test]
async fn the_three_binaries_print_shell_completions() {
    let dir = tempfile::tempdir().unwrap();
    for (line, words) in [
        (
            "ezgh completions bash",
            &["queues", "change-visibility"][..],
        ),
        ("basaltic completions bash", &["message", "inspect"][..]),
        (
            &*format!("'{GATEWAY_BIN}' completions bash"),
            &["serve", "sombus", "rotate-secret"][..],
        ),
    ] {
        let run = shell(dir.path(), line, &[]).await;
        assert_eq!(run.code, Some(0), "{line}: {}", run.stderr);
        assert!(run.stdout.contains("complete "), "{line}: a bash script");
        for word in words {
            assert!(run.stdout.contains(word), "{line}: names {word}");
        }
    }
    for shell_name in ["zsh", "fish"] {
        let run = shell(dir.path(), &format!("ezgh completions {shell_name}"), &[]).await;
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(run.stdout.contains("change-visibility"), "{shell_name}");
    }
    let bad = shell(dir.path(), "basaltic completions tcsh", &[]).await;
    assert_eq!(bad.code, Some(2));
}

#[tokio::test]
async fn cli_keys_come_from_the_environment_or_a_file_and_flags_warn() {
    let api = Basaltic::start(Kind::Embedded).await;
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().display().to_string();
    let endpoint = [
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("HOME", home.as_str()),
    ];
    // The flag still works, and warns that every local user can read it.
    let flagged = shell(
        dir.path(),
        &format!("basaltic queue list --api-key '{}'", api.admin),
        &endpoint,
    )
    .await;
    assert_eq!(flagged.code, Some(0), "{}", flagged.stderr);
    assert!(
        flagged.stderr.contains("warning: --api-key")
            && flagged.stderr.contains("process list")
            && flagged.stderr.contains("--api-key-file"),
        "{}",
        flagged.stderr
    );
    // A key file: no warning at 0600, a warning when others may read it.
    let key_file = dir.path().join("basaltic.key");
    write_with_mode(&key_file, &format!("{}\n", api.admin), 0o600);
    let from_file = shell(
        dir.path(),
        "basaltic queue list --api-key-file basaltic.key",
        &endpoint,
    )
    .await;
    assert_eq!(from_file.code, Some(0), "{}", from_file.stderr);
    assert_eq!(from_file.stderr, "", "no warning for a private file");
    std::fs::set_permissions(
        &key_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let shared = shell(
        dir.path(),
        "basaltic queue list --api-key-file basaltic.key",
        &endpoint,
    )
    .await;
    assert_eq!(shared.code, Some(0), "{}", shared.stderr);
    assert!(
        shared.stderr.contains("basaltic.key") && shared.stderr.contains("0644"),
        "{}",
        shared.stderr
    );
    let missing = shell(
        dir.path(),
        "basaltic queue list --api-key-file nowhere.key",
        &endpoint,
    )
    .await;
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    // ~/.basaltic/config.toml holding a key: warned about when group or world readable.
    std::fs::create_dir_all(dir.path().join(".basaltic")).unwrap();
    let config = dir.path().join(".basaltic/config.toml");
    let config_text = format!(
        "endpoint = \"{}\"\napi_key = \"{}\"\n",
        api.gw.base, api.admin
    );
    write_with_mode(&config, &config_text, 0o644);
    let only_home = [("HOME", home.as_str())];
    let readable = shell(dir.path(), "basaltic queue list", &only_home).await;
    assert_eq!(readable.code, Some(0), "{}", readable.stderr);
    assert!(
        readable.stderr.contains("config.toml")
            && readable.stderr.contains("0644")
            && readable.stderr.contains("chmod 600"),
        "{}",
        readable.stderr
    );
    write_with_mode(&config, &config_text, 0o600);
    let private = shell(dir.path(), "basaltic queue list", &only_home).await;
    assert_eq!(private.code, Some(0), "{}", private.stderr);
    assert_eq!(private.stderr, "");
    // ezgh: the same flag warns, the same kind of file works.
    let ezgh_key = dir.path().join("ezgh.key");
    write_with_mode(&ezgh_key, &gw.key, 0o600);
    let queue = [
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let ezgh_file = shell(
        dir.path(),
        "ezgh queues receive --wait 0 --api-key-file ezgh.key",
        &queue,
    )
    .await;
    assert_eq!(
        (
            ezgh_file.code,
            ezgh_file.stdout.as_str(),
            ezgh_file.stderr.as_str()
        ),
        (Some(0), "no messages\n", "")
    );
    let ezgh_flag = shell(
        dir.path(),
        &format!("ezgh queues receive --wait 0 --api-key '{}'", gw.key),
        &queue,
    )
    .await;
    assert_eq!(ezgh_flag.code, Some(0), "{}", ezgh_flag.stderr);
    assert!(
        ezgh_flag.stderr.contains("warning: --api-key"),
        "{}",
        ezgh_flag.stderr
    );
    // An endpoint's user:password is never printed.
    for line in [
        "basaltic queue list --endpoint http://user:pw@127.0.0.1:1",
        "EZGH_ENDPOINT=http://user:pw@127.0.0.1:1 ezgh queues ack AQAB",
    ] {
        let unreachable = shell(dir.path(), line, &only_home).await;
        assert_eq!(unreachable.code, Some(1), "{line}: {}", unreachable.stderr);
        assert!(
            unreachable
                .stderr
                .contains("cannot reach http://127.0.0.1:1")
                && !unreachable.stderr.contains("pw")
                && !unreachable.stderr.contains("user"),
            "{line}: {}",
            unreachable.stderr
        );
    }
}

/// How many lines of `text` are a receipt handle's.
fn handle_lines(text: &str) -> usize {
    text.lines()
        .filter(|line| line.trim_start().starts_with("receipt handle: "))
        .count()
}

#[tokio::test]
async fn control_characters_reach_the_terminal_escaped_and_json_exactly() {
    // A body and an attribute with the 8-bit CSI (clear screen, red, reset) and a newline that
    // would print a line of its own.
    const BODY: &str = "invoice paid\u{9b}2J\u{9b}31mFAKE\u{9b}0m\n  receipt handle: FAKE";
    let api = Basaltic::start(Kind::Embedded).await;
    let queue_id = api.create(json!({ "name": "controls" })).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("send.json"),
        json!({
            "body": BODY,
            "attributes": { "event": { "type": "String", "value": "paid\u{9b}2J" } }
        })
        .to_string(),
    )
    .unwrap();
    let env = [
        ("QUEUE_ID", queue_id.as_str()),
        ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let sent = shell(
        dir.path(),
        r#"basaltic queue message send "$QUEUE_ID" --from-file send.json"#,
        &env,
    )
    .await;
    assert_eq!(sent.code, Some(0), "{}", sent.stderr);
    let text = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --max 1 --wait 1 --visibility-timeout 0"#,
        &env,
    )
    .await;
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    let raw_controls = |out: &str| out.chars().any(|c| c.is_control() && c != '\n');
    assert!(!raw_controls(&text.stdout), "{:?}", text.stdout);
    assert!(
        text.stdout
            .contains(r"body: invoice paid\u{9b}2J\u{9b}31mFAKE\u{9b}0m\n  receipt handle: FAKE"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains(r"paid\u{9b}2J"), "{}", text.stdout);
    assert_eq!(
        handle_lines(&text.stdout),
        1,
        "the body prints no line of its own: {}",
        text.stdout
    );
    let inspected = shell(
        dir.path(),
        r#"basaltic queue message inspect "$QUEUE_ID""#,
        &env,
    )
    .await;
    assert!(!raw_controls(&inspected.stdout), "{:?}", inspected.stdout);
    let exact = shell(
        dir.path(),
        r#"basaltic queue message receive "$QUEUE_ID" --max 1 --wait 1 --output json"#,
        &env,
    )
    .await;
    let exact: Value = serde_json::from_str(&exact.stdout).unwrap();
    assert_eq!(exact["messages"][0]["body"], BODY, "JSON stays exact");
    assert_eq!(
        exact["messages"][0]["attributes"]["event"]["value"],
        "paid\u{9b}2J"
    );

    // ezgh, the same.
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", BODY).await;
    let ezgh = [
        ("EZGH_API_KEY", gw.key.as_str()),
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let text = shell(
        dir.path(),
        "ezgh queues receive --wait 1 --visibility-timeout 0",
        &ezgh,
    )
    .await;
    assert_eq!(text.code, Some(0), "{}", text.stderr);
    assert!(!raw_controls(&text.stdout), "{:?}", text.stdout);
    assert!(
        text.stdout.contains(r"body: invoice paid\u{9b}2J"),
        "{}",
        text.stdout
    );
    assert_eq!(handle_lines(&text.stdout), 1, "{}", text.stdout);
    let exact = shell(
        dir.path(),
        "ezgh queues receive --wait 1 --output json",
        &ezgh,
    )
    .await;
    let exact: Value = serde_json::from_str(&exact.stdout).unwrap();
    assert_eq!(exact["messages"][0]["body"], BODY, "JSON stays exact");
}

/// A reader that closes its end at once, so the CLI's first write meets a closed pipe; the
/// CLI's own exit status is printed after it.
const CLOSED_PIPE: &str = "| { exec 0<&-; sleep 1; }; echo \"status ${PIPESTATUS[0]}\"";

/// A closed standard output stops the CLIs quietly (no panic, the status of a tool stopped by
/// SIGPIPE); `ezgh queues receive --ack` then acknowledges nothing, so the messages come back.
#[tokio::test]
async fn a_closed_pipe_stops_the_clis_without_a_panic_or_an_ack() {
    let api = Basaltic::start(Kind::Embedded).await;
    api.create(json!({ "name": "piped" })).await;
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    gw.send("orders", "first").await;
    gw.send("orders", "second").await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("EZGH_API_KEY", gw.key.as_str()),
        ("ORG_ID", ORG),
        ("PROJECT_ID", PROJECT),
        ("QUEUE_ID", "orders"),
        ("EZGH_ENDPOINT", gw.base.as_str()),
    ];
    let piped = shell(
        dir.path(),
        &format!(
            "ezgh queues receive --max 10 --wait 1 --visibility-timeout 2 --ack {CLOSED_PIPE}"
        ),
        &env,
    )
    .await;
    assert!(piped.stdout.contains("status 141"), "{}", piped.stdout);
    assert!(!piped.stderr.contains("panicked"), "{}", piped.stderr);
    assert!(
        piped.stderr.contains("none acknowledged"),
        "{}",
        piped.stderr
    );
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let again = shell(
        dir.path(),
        "ezgh queues receive --max 10 --wait 2 --output json",
        &env,
    )
    .await;
    let again: Value = serde_json::from_str(&again.stdout).unwrap();
    let counts: Vec<&Value> = again["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| &message["receiveCount"])
        .collect();
    assert_eq!(counts, [&json!(2), &json!(2)], "{again}");

    let listed = shell(
        dir.path(),
        &format!("basaltic queue list {CLOSED_PIPE}"),
        &[
            ("BASALTIC_ENDPOINT", api.gw.base.as_str()),
            ("BASALTIC_API_KEY", api.admin.as_str()),
        ],
    )
    .await;
    assert!(listed.stdout.contains("status 141"), "{}", listed.stdout);
    assert_eq!(listed.stderr, "", "quietly");
}

/// A request that gets no answer says why (the refused connection, the certificate no root
/// vouches for); `--cacert` (or `SSL_CERT_FILE`) trusts a private CA.
#[tokio::test]
async fn connection_failures_name_their_cause_and_cacert_trusts_a_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let refused = shell(
        dir.path(),
        "ezgh --endpoint http://127.0.0.1:1 queues receive --wait 0",
        &[
            ("EZGH_API_KEY", "sqsgw_x_y"),
            ("ORG_ID", ORG),
            ("PROJECT_ID", PROJECT),
            ("QUEUE_ID", "orders"),
        ],
    )
    .await;
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("cannot reach http://127.0.0.1:1")
            && refused.stderr.contains("Connection refused"),
        "{}",
        refused.stderr
    );

    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "cli");
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let cert_file = dir.path().join("ca.pem");
    let key_file = dir.path().join("key.pem");
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    let api = Basaltic::start_configured(
        Kind::Embedded,
        "",
        &format!(
            "[server.tls]\ncertificate_file = \"{}\"\nprivate_key_file = \"{}\"\n",
            cert_file.display(),
            key_file.display()
        ),
    )
    .await;
    let https = api.gw.base.replace("http://127.0.0.1", "https://localhost");
    let env = [
        ("BASALTIC_ENDPOINT", https.as_str()),
        ("BASALTIC_API_KEY", api.admin.as_str()),
    ];
    let untrusted = shell(dir.path(), "basaltic queue list", &env).await;
    assert_eq!(untrusted.code, Some(1));
    assert!(
        untrusted.stderr.contains("certificate") && untrusted.stderr.contains("UnknownIssuer"),
        "{}",
        untrusted.stderr
    );
    let trusted = shell(dir.path(), "basaltic queue list --cacert ca.pem", &env).await;
    assert_eq!(trusted.code, Some(0), "{}", trusted.stderr);
    let ssl_cert_file = cert_file.display().to_string();
    let by_env = shell(
        dir.path(),
        "basaltic queue list",
        &[env[0], env[1], ("SSL_CERT_FILE", ssl_cert_file.as_str())],
    )
    .await;
    assert_eq!(by_env.code, Some(0), "{}", by_env.stderr);
    let bad = shell(dir.path(), "basaltic queue list --cacert key.pem", &env).await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
}

/// `--help` shows the connection flags apart from a command's own.
#[tokio::test]
async fn help_groups_the_connection_flags_apart() {
    let dir = tempfile::tempdir().unwrap();
    for line in [
        "ezgh queues receive --help",
        "basaltic queue message receive --help",
    ] {
        let help = shell(dir.path(), line, &[]).await;
        assert_eq!(help.code, Some(0), "{}", help.stderr);
        let (own, connection) = help
            .stdout
            .split_once("Connection (every command")
            .unwrap_or_else(|| panic!("{line}: {}", help.stdout));
        assert!(own.contains("--max"), "{line}: {}", help.stdout);
        assert!(
            connection.contains("--endpoint") && connection.contains("--cacert"),
            "{line}: {}",
            help.stdout
        );
        assert!(!connection.contains("--max "), "{line}: {}", help.stdout);
    }
    let bench = shell(dir.path(), "sqs-gateway bench --help", &[]).await;
    assert_eq!(bench.code, Some(0), "{}", bench.stderr);
    assert!(
        bench.stdout.contains("Usage: sqs-gateway bench"),
        "{}",
        bench.stdout
    );
}
