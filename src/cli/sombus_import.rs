//! `sqs-gateway sombus import-credentials`: moves the sombus connections and their audit log
//! from a directory store onto the shared state server a config names, once, so that a gateway
//! moving to replicas keeps its connections (secrets' hashes, versions, the chained log).

use sqs_gateway::config::Config;
use sqs_gateway::credentials::oauth::{ConnectionStore, Imported};
use sqs_gateway::state::redis::RedisServer;
use sqs_gateway::state::redis::credential_server::RedisCredentialServer;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Reads `config` for `[state.redis]` and (unless `from` names one) the directory the store was
/// kept in, and moves it: exit 0 when moved or when there was nothing to move, 1 when the server
/// already holds a store or cannot be reached, 2 for a config that can't be used.
pub(crate) async fn run(config: &Path, from: Option<PathBuf>) -> ExitCode {
    let config = match Config::load(config) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("config error: {error}");
            return ExitCode::from(super::EXIT_CONFIG);
        }
    };
    let Some(redis) = &config.state.redis else {
        eprintln!(
            "config error: state.redis: not set; the shared state server is where the connections move to"
        );
        return ExitCode::from(super::EXIT_CONFIG);
    };
    let Some(dir) = from.or_else(|| config.credentials_dir()) else {
        eprintln!(
            "config error: sombus.credentials_dir: not set, and an in-memory gateway keeps no directory; name it with --from"
        );
        return ExitCode::from(super::EXIT_CONFIG);
    };
    let server = match RedisServer::connect(redis) {
        Ok(server) => server,
        Err(error) => {
            eprintln!("config error: {error}");
            return ExitCode::from(super::EXIT_CONFIG);
        }
    };
    let server = Arc::new(RedisCredentialServer::new(server));
    match ConnectionStore::import_directory(&dir, server).await {
        Ok(Imported::Moved {
            connections,
            audit_lines,
        }) => {
            println!(
                "moved {connections} connection(s) and {audit_lines} audit line(s) from {} to the shared state server (prefix {}); the directory is left as it was and is no longer read",
                dir.display(),
                redis.prefix
            );
            ExitCode::SUCCESS
        }
        Ok(Imported::NothingThere) => {
            println!(
                "{} holds no sombus connection: nothing to move",
                dir.display()
            );
            ExitCode::SUCCESS
        }
        Ok(Imported::AlreadyHeld) => {
            eprintln!(
                "the shared state server already holds sombus connections or an audit log (prefix {}): nothing was moved",
                redis.prefix
            );
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("could not move the connections: {error}");
            ExitCode::FAILURE
        }
    }
}
