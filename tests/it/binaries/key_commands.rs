//! `sqs-gateway new-api-key|new-admin-key|new-basaltic-key --data-dir D` run side by side: each
//! takes its turn on the config, so every key a run prints is in the config afterwards.

use sqs_gateway::credentials::api_keys;
use sqs_gateway::setup::{self, Prepared};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_sqs-gateway");

/// The key a run printed, from its `export NAME=key` line.
fn printed_key(stdout: &str) -> Option<String> {
    stdout.lines().find_map(|line| {
        let (name, key) = line.strip_prefix("export ")?.split_once('=')?;
        name.ends_with("_KEY").then(|| key.to_owned())
    })
}

#[test]
fn concurrent_key_commands_lose_no_key() {
    let dir = tempfile::tempdir().unwrap();
    let Prepared::First(first) = setup::prepare(dir.path()).unwrap() else {
        panic!("a fresh directory is a first start");
    };
    first.persist().unwrap();
    let commands: [&[&str]; 3] = [
        &["new-api-key"],
        &["new-admin-key", "--workspace", "w1", "--role", "viewer"],
        &["new-basaltic-key"],
    ];
    let runs: Vec<_> = (0..12)
        .map(|n| {
            Command::new(BIN)
                .args(commands[n % 3])
                .arg("--data-dir")
                .arg(dir.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut keys = Vec::new();
    for run in runs {
        let output = run.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        keys.push(printed_key(&stdout).unwrap_or_else(|| panic!("a key in {stdout}")));
    }
    let config = std::fs::read_to_string(dir.path().join(setup::CONFIG_FILE)).unwrap();
    sqs_gateway::config::Config::parse(&config).expect("the config still parses");
    for key in &keys {
        assert!(
            config.contains(&api_keys::hash_key(key)),
            "the key {} is in the config",
            api_keys::key_id(key).unwrap_or("?")
        );
    }
    let staged: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".new"))
        .collect();
    assert!(staged.is_empty(), "no staging file is left: {staged:?}");
}
