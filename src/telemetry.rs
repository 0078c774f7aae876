//! Structured logs through tracing, filtered by RUST_LOG.
//!
//! The default filter keeps the AWS SDK and HTTP stacks at `warn`: at trace level they log request
//! bodies, which carry SQS receipt handles.

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

/// Installs the global subscriber; logs go to stderr.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
