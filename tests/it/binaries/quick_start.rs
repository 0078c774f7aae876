//! The README's quick start, run as written (but for the build profile): `cargo run` picks the
//! gateway among the crate's binaries, and the zero-config gateway answers.

use crate::binary::{Running, free_port, healthz};
use std::process::Command;
use std::time::Duration;

/// The words of the README's quick-start command: the first line of a fenced block that starts
/// with `cargo run`, without its trailing comment.
fn quick_start_command() -> Vec<String> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut fenced = false;
    for line in readme.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced && line.trim_start().starts_with("cargo run") {
            let command = line.split('#').next().unwrap_or_default();
            return command.split_whitespace().map(str::to_owned).collect();
        }
    }
    panic!("README.md has no fenced `cargo run` line");
}

#[test]
fn the_readme_quick_start_command_runs_the_gateway() {
    let words = quick_start_command();
    assert_eq!(words, ["cargo", "run", "--release", "--", "serve"]);
    // Run as written but for `--release`: a release build from scratch takes about 13 minutes on
    // two cores, and which binary `cargo run` picks does not depend on the profile. The debug
    // build is the one the tests already made (same target directory); `--offline` keeps cargo
    // off the network. The address and data directory are the test's own.
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("run")
        .arg("--offline")
        .args(words[2..].iter().filter(|word| *word != "--release"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data.path());
    // Cargo may have to build the gateway's own feature set first (the tests' build unifies the
    // dev-dependencies' features): minutes on a cold target directory.
    let mut gateway = Running::spawn(command);
    let address = gateway.address(Duration::from_secs(20 * 60));
    assert_eq!(address, format!("127.0.0.1:{port}"));
    assert_eq!(healthz(&address), Some(reqwest::StatusCode::OK));
    // `cargo run` replaced itself with the gateway: the signal reaches it, and it drains and ends.
    gateway.signal("TERM");
    let status = gateway.exit_within(Duration::from_secs(30));
    assert_eq!(status.and_then(|status| status.code()), Some(0));
}
