//! Signals to the binary: SIGHUP never ends the gateway (it reloads the config's keys, and the
//! log says so); SIGTERM still stops it cleanly afterwards.

use crate::binary::{BIN, Running, healthz};
use std::process::Command;
use std::time::Duration;

fn plain_http_config() -> tempfile::NamedTempFile {
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[backend]\nkind = \"embedded\"\nin_memory = true\n\n[queues.orders]\n\n[[receipt_keys]]\nid = 1\nsecret = \"{}\"\n",
        sqs_gateway::core::handle::Keyring::generate_key()
    );
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), text).unwrap();
    file
}

#[test]
fn sighup_leaves_a_plain_http_gateway_serving_and_sigterm_still_stops_it() {
    let config = plain_http_config();
    let mut command = Command::new(BIN);
    command.args(["serve", "--config"]).arg(config.path());
    let mut gateway = Running::spawn(command);
    let address = gateway.address(Duration::from_secs(30));
    for _ in 0..2 {
        gateway.signal("HUP");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            healthz(&address),
            Some(reqwest::StatusCode::OK),
            "{}",
            gateway.stderr()
        );
    }
    let said = gateway
        .stderr()
        .lines()
        .filter(|line| {
            line.contains("INFO") && line.contains("config reloaded") && line.contains("SIGHUP")
        })
        .count();
    assert_eq!(said, 2, "{}", gateway.stderr());
    gateway.signal("TERM");
    let status = gateway.exit_within(Duration::from_secs(30));
    assert_eq!(status.and_then(|status| status.code()), Some(0));
}

#[test]
fn user_signals_leave_the_gateway_serving() {
    let config = plain_http_config();
    let mut command = Command::new(BIN);
    command.args(["serve", "--config"]).arg(config.path());
    let mut gateway = Running::spawn(command);
    let address = gateway.address(Duration::from_secs(30));
    for signal in ["USR1", "USR2"] {
        gateway.signal(signal);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(
            healthz(&address),
            Some(reqwest::StatusCode::OK),
            "after SIG{signal}: {}",
            gateway.stderr()
        );
    }
    let ignored = gateway
        .stderr()
        .lines()
        .filter(|line| line.contains("ignored: SIGTERM or SIGINT stops the gateway"))
        .count();
    assert_eq!(ignored, 2, "{}", gateway.stderr());
    gateway.signal("TERM");
    let status = gateway.exit_within(Duration::from_secs(30));
    assert_eq!(status.and_then(|status| status.code()), Some(0));
}
