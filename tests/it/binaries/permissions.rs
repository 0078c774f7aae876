//! What the gateway makes on disk is its owner's only, and secret files open to others are
//! named in a warning (never their content).

use crate::binary::{BIN, Running};
use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_data_dir_the_config_names_is_made_private_and_open_secret_files_are_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("made-by-the-gateway").join("data");
    let key_file = dir.path().join("receipt-key");
    let key = sqs_gateway::core::handle::Keyring::generate_key();
    std::fs::write(&key_file, &key).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[backend]\nkind = \"embedded\"\ndata_dir = {}\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\nsecret_file = {}\n",
            toml::Value::String(data_dir.display().to_string()),
            toml::Value::String(key_file.display().to_string()),
        ),
    )
    .unwrap();
    let mut command = Command::new(BIN);
    command.args(["serve", "--config"]).arg(&config);
    let mut gateway = Running::spawn(command);
    gateway.address(Duration::from_secs(60));
    let mode = std::fs::metadata(&data_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
    let logs = gateway.stderr();
    let warning = logs
        .lines()
        .find(|line| line.contains("WARN") && line.contains("readable by others"))
        .unwrap_or_else(|| panic!("no warning:\n{logs}"));
    assert!(warning.contains("receipt_keys[0].secret_file"), "{warning}");
    assert!(!logs.contains(&key), "the secret never reaches the log");
    gateway.signal("TERM");
    gateway.exit_within(Duration::from_secs(30));
}

/// Over the sqs backend, a sombus store left at its default (relative to the working directory)
/// is named, absolute, in a warning at start, so a replica started elsewhere is noticed.
#[test]
fn the_sqs_backends_default_sombus_store_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[backend]\nkind = \"sqs\"\nendpoint_url = \"{}\"\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
            crate::harness::localstack_endpoint(),
            sqs_gateway::core::handle::Keyring::generate_key()
        ),
    )
    .unwrap();
    let mut command = Command::new(BIN);
    command
        .current_dir(dir.path())
        .args(["serve", "--config"])
        .arg(&config);
    let mut gateway = Running::spawn(command);
    gateway.address(Duration::from_secs(60));
    let logs = gateway.stderr();
    let expected = dir.path().join("sqs-gateway-data").join("sombus");
    let warning = logs
        .lines()
        .find(|line| line.contains("WARN") && line.contains("sombus.credentials_dir is not set"))
        .unwrap_or_else(|| panic!("no warning:\n{logs}"));
    assert!(
        warning.contains(&expected.display().to_string()),
        "{warning}"
    );
    gateway.signal("TERM");
    gateway.exit_within(Duration::from_secs(30));
}
