//! Structured logs through tracing, filtered by RUST_LOG.
//!
//! The default filter keeps the AWS SDK and HTTP stacks at `warn`: at trace level they log request
//! bodies, which carry SQS receipt handles.
//!
//! Lines are written by a thread of their own (`tracing-appender`'s non-blocking writer), so a
//! request does not wait on a write to stderr; none is dropped (a full queue makes callers wait,
//! as a direct write would), and the rest are flushed when the [`LogGuard`] drops. That thread
//! writes every line waiting at once with one system call (it flushes its buffer whenever the
//! queue is empty), not one per line.

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

/// The log thread's write buffer: lines waiting together go out in one write.
const LOG_BUFFER_BYTES: usize = 64 * 1024;

/// Keeps the log writer's thread going; dropping it writes what is queued and stops it.
#[must_use = "logs written after the guard drops are lost"]
pub struct LogGuard {
    _writer: tracing_appender::non_blocking::WorkerGuard,
}

/// Installs the global subscriber; logs go to stderr, written off the caller's thread.
pub fn init(format: LogFormat) -> LogGuard {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("sqs-gateway-log")
        .finish(std::io::BufWriter::with_capacity(
            LOG_BUFFER_BYTES,
            std::io::stderr(),
        ));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    LogGuard { _writer: guard }
}
