//! Secrets in the config, through the binary: blank or short SQS secrets (inline, from a variable
//! or from a file) stop `check-config` and `serve` with exit code 2 naming the field, and a
//! zero-config data directory whose SQS secret was emptied cannot be signed into with `""`.

use crate::binary::{BIN, Running, free_port, run_to_exit};
use std::process::Command;
use std::time::Duration;

/// An in-memory gateway whose one SQS key takes its secret from `source` (a TOML line), and
/// whose receipt key is `receipt_key` (a TOML line).
fn config(source: &str, receipt_key: &str) -> tempfile::NamedTempFile {
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\n{receipt_key}\n\n[[sqs_api.credentials]]\naccess_key_id = \"AKIDSECRETS\"\n{source}\n"
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

fn receipt_key_line() -> String {
    format!(
        "secret = \"{}\"",
        sqs_gateway::core::handle::Keyring::generate_key()
    )
}

/// A file holding `text`, kept for the test's life.
fn secret_file(text: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

/// `check-config` and `serve` both exit with 2 and `config error: <expected>`.
fn assert_refused(config: &tempfile::NamedTempFile, env: &[(&str, &str)], expected: &str) {
    let path = config.path().to_str().unwrap();
    for command in ["check-config", "serve"] {
        let (code, stderr) = run_to_exit(&[command, "--config", path], env);
        assert_eq!(code, Some(2), "{command} ({expected}): {stderr}");
        assert!(
            stderr.contains(&format!("config error: {expected}")),
            "{command}: {stderr}"
        );
    }
}

const FIELD: &str = "sqs_api.credentials[0]";

#[test]
fn blank_sqs_secrets_from_any_source_are_refused_naming_the_field() {
    let receipt = receipt_key_line();
    for inline in ["\"\"", "\"   \"", "\"\\n\""] {
        let config = config(&format!("secret = {inline}"), &receipt);
        assert_refused(
            &config,
            &[],
            &format!("{FIELD}.secret: the secret is empty or blank"),
        );
    }
    for value in ["", "  \n"] {
        let config = config("secret_env = \"SQSGW_IT_SQS_SECRET\"", &receipt);
        assert_refused(
            &config,
            &[("SQSGW_IT_SQS_SECRET", value)],
            &format!("{FIELD}.secret_env: environment variable SQSGW_IT_SQS_SECRET is empty"),
        );
    }
    for text in ["", " \n\n"] {
        let file = secret_file(text);
        let config = config(
            &format!("secret_file = \"{}\"", file.path().display()),
            &receipt,
        );
        assert_refused(&config, &[], &format!("{FIELD}.secret_file: "));
    }
    // The receipt key is read the same way.
    let config = config("secret = \"a-secret-of-24-characters\"", "secret = \" \"");
    assert_refused(
        &config,
        &[],
        "receipt_keys[0].secret: the secret is empty or blank",
    );
}

#[test]
fn short_sqs_secrets_are_refused_and_every_source_is_trimmed_alike() {
    let receipt = receipt_key_line();
    let config_inline = config("secret = \"a\"", &receipt);
    assert_refused(
        &config_inline,
        &[],
        &format!("{FIELD}.secret: the secret has fewer than 16 characters (it has 1)"),
    );
    // A variable's newline is dropped as a file's is: 15 characters are left, one too few.
    let from_env = config("secret_env = \"SQSGW_IT_SQS_SECRET\"", &receipt);
    assert_refused(
        &from_env,
        &[("SQSGW_IT_SQS_SECRET", "fifteen-chars-x\n")],
        &format!("{FIELD}.secret_env: the secret has fewer than 16 characters (it has 15)"),
    );
    let file = secret_file("fifteen-chars-x\n");
    let from_file = config(
        &format!("secret_file = \"{}\"", file.path().display()),
        &receipt,
    );
    assert_refused(
        &from_file,
        &[],
        &format!("{FIELD}.secret_file: the secret has fewer than 16 characters (it has 15)"),
    );
    // Sixteen characters, with blanks around them, from each source: accepted.
    let path = from_env.path().to_str().unwrap();
    let (code, stderr) = run_to_exit(
        &["check-config", "--config", path],
        &[("SQSGW_IT_SQS_SECRET", " sixteen-chars-ok\n")],
    );
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::write(file.path(), "sixteen-chars-ok\n").unwrap();
    let (code, stderr) = run_to_exit(
        &[
            "check-config",
            "--config",
            from_file.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{stderr}");
}

/// The SQS access key id a zero-config data directory's config names.
fn access_key_id(data_dir: &std::path::Path) -> String {
    let text = std::fs::read_to_string(data_dir.join(sqs_gateway::setup::CONFIG_FILE)).unwrap();
    let config: toml::Value = toml::from_str(&text).unwrap();
    config["sqs_api"]["credentials"][0]["access_key_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// ListQueues at `address`, signed with `secret`: the queue URLs, or why there are none.
async fn list_queues(address: &str, key_id: &str, secret: &str) -> Result<Vec<String>, String> {
    let sdk = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .endpoint_url(format!("http://{address}"))
        .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
            aws_sdk_sqs::config::Credentials::new(key_id, secret, None, None, "test"),
        ))
        .build();
    aws_sdk_sqs::Client::new(&sdk)
        .list_queues()
        .send()
        .await
        .map(|listed| listed.queue_urls().to_vec())
        .map_err(|error| format!("{error:?}"))
}

#[tokio::test]
async fn an_emptied_sqs_secret_file_stops_the_start_instead_of_opening_the_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let port = free_port();
    let address = format!("127.0.0.1:{port}");
    let serve = {
        let (address, data) = (address.clone(), data.clone());
        move || {
            let mut command = Command::new(BIN);
            command
                .args(["serve", "--listen", &address, "--data-dir"])
                .arg(&data);
            command
        }
    };
    let mut first = Running::spawn(serve());
    first.stdout_through("Queues:", Duration::from_secs(30));
    first.signal("TERM");
    assert_eq!(
        first.exit_within(Duration::from_secs(30)).unwrap().code(),
        Some(0)
    );
    let key_id = access_key_id(&data);
    // The secret file emptied (a failed copy, a template with an unset variable).
    std::fs::write(data.join(sqs_gateway::setup::SQS_SECRET_FILE), "").unwrap();

    let mut second = tokio::task::spawn_blocking(move || {
        let mut second = Running::spawn(serve());
        let _ = second.exit_within(Duration::from_secs(10));
        second
    })
    .await
    .unwrap();
    // Whatever the start did, a request signed with the empty secret gets nothing.
    let listed = list_queues(&address, &key_id, "").await;
    assert!(
        listed.is_err(),
        "a request signed with an empty secret was answered: {listed:?}"
    );
    let status = second.exit_within(Duration::from_secs(1));
    let stderr = second.stderr();
    assert_eq!(status.and_then(|status| status.code()), Some(2), "{stderr}");
    assert!(
        stderr.contains("config error: sqs_api.credentials[0].secret_file: "),
        "{stderr}"
    );
    assert!(stderr.contains("is empty or blank"), "{stderr}");
}
