//! Structured logs through tracing, filtered by RUST_LOG.
//!
//! The default filter keeps the AWS SDK and HTTP stacks at `warn`: at trace level they log request
//! bodies, which carry SQS receipt handles.
//!
//! Lines gather in memory and a thread of their own ([`batched`]) writes them to stderr every
//! 50 ms, so a request neither waits on a write nor wakes a thread; none is dropped, and what
//! waits is written when the [`LogGuard`] drops (a `kill -9` loses at most the last 50 ms).

mod batched;

use std::io::IsTerminal as _;
use tracing_subscriber::EnvFilter;

/// Log line format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter used when RUST_LOG is not set.
pub const DEFAULT_FILTER: &str =
    "info,aws_config=warn,aws_smithy_runtime=warn,aws_sdk_sqs=warn,hyper=warn,h2=warn,rustls=warn";

/// Keeps the log writer's thread going; dropping it writes what waits and stops the thread.
#[must_use = "dropping the guard stops the log thread (later lines are written directly)"]
pub struct LogGuard {
    _flusher: batched::Flusher<std::io::Stderr>,
}

/// Installs the global subscriber; logs go to stderr, written off the caller's thread.
pub fn init(format: LogFormat) -> std::io::Result<LogGuard> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let (writer, flusher) = batched::batched(std::io::stderr(), "sqs-gateway-log")?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    Ok(LogGuard { _flusher: flusher })
}
