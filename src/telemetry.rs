//! Structured logs through tracing, filtered by RUST_LOG, and, when `[tracing]` enables it, the
//! gateway's own spans exported over OTLP (`otlp`).
//!
//! The default filter keeps the AWS SDK and HTTP stacks at `warn`: at trace level they log request
//! bodies, which carry SQS receipt handles. The exported spans (`core::spans`) never reach the
//! log lines, whatever RUST_LOG says: each layer has a filter of its own.
//!
//! Lines gather in memory and a thread of their own ([`batched`]) writes them to stderr every
//! 50 ms, so a request neither waits on a write nor wakes a thread; none is dropped, and what
//! waits is written when the [`LogGuard`] drops (a `kill -9` loses at most the last 50 ms).

mod batched;
pub mod otlp;

use crate::core::spans;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::io::IsTerminal as _;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::{Directive, EnvFilter, Targets};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::{Layer, Registry};

pub use otlp::TracingConfig;

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

/// The longest the spans still waiting at exit may take to be exported: a collector that does
/// not answer must not hold the process past its orchestrator's grace period.
const LAST_EXPORT: std::time::Duration = std::time::Duration::from_secs(5);

/// Keeps the log writer's thread and the span exporter going; dropping it exports the spans that
/// wait, writes the lines that wait and stops both.
#[must_use = "dropping the guard stops the log thread (later lines are written directly)"]
pub struct LogGuard {
    spans: Option<SdkTracerProvider>,
    _flusher: batched::Flusher<std::io::Stderr>,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.spans.take()
            && let Err(error) = provider.shutdown_with_timeout(LAST_EXPORT)
        {
            tracing::warn!(%error, "the last spans could not be exported");
        }
    }
}

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The log writer's thread.
    #[error("cannot start the logging thread: {0}")]
    Logs(#[from] std::io::Error),
    /// The span exporter.
    #[error(transparent)]
    Spans(#[from] otlp::ExportError),
    /// Another subscriber was installed first.
    #[error("a log subscriber is already installed")]
    AlreadyInstalled,
}

/// Installs the global subscriber: logs to stderr, written off the caller's thread, and the
/// spans `tracing` asks for exported.
pub fn init(format: LogFormat, tracing: &TracingConfig) -> Result<LogGuard, InitError> {
    let (writer, flusher) = batched::batched(std::io::stderr(), "sqs-gateway-log")?;
    let provider = if tracing.enabled {
        Some(otlp::provider(tracing)?)
    } else {
        None
    };
    let subscriber = subscriber(
        format,
        std::io::stderr().is_terminal(),
        writer,
        provider.as_ref(),
    );
    tracing::subscriber::set_global_default(subscriber).map_err(|_| InitError::AlreadyInstalled)?;
    Ok(LogGuard {
        spans: provider,
        _flusher: flusher,
    })
}

/// The subscriber of what runs before the config is read (its checks, a first start's setup):
/// logs straight to stderr, no spans.
pub fn early(format: LogFormat) -> tracing::Dispatch {
    tracing::Dispatch::new(subscriber(
        format,
        std::io::stderr().is_terminal(),
        std::io::stderr,
        None,
    ))
}

/// The log layer (RUST_LOG's filter, never the exported spans) and, given a provider, the layer
/// that exports [`spans::TARGET`]'s spans and nothing else. Without a provider there is no such
/// layer at all (an absent `Option` layer would still have every span made).
pub fn subscriber<W>(
    format: LogFormat,
    ansi: bool,
    writer: W,
    spans: Option<&SdkTracerProvider>,
) -> Box<dyn tracing::Subscriber + Send + Sync + 'static>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let lines = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(writer);
    let lines = match format {
        LogFormat::Text => lines.boxed(),
        LogFormat::Json => lines.json().boxed(),
    }
    .with_filter(log_filter());
    let logged = Registry::default().with(lines);
    match spans {
        None => Box::new(logged),
        Some(provider) => Box::new(
            logged.with(
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("sqs-gateway"))
                    .with_location(false)
                    .with_threads(false)
                    .with_target(false)
                    .with_level(false)
                    .with_tracked_inactivity(false)
                    .with_filter(Targets::new().with_target(spans::TARGET, LevelFilter::INFO)),
            ),
        ),
    }
}

/// RUST_LOG's filter, or [`DEFAULT_FILTER`], with the exported spans always left out.
fn log_filter() -> EnvFilter {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    match format!("{}=off", spans::TARGET).parse::<Directive>() {
        Ok(off) => filter.add_directive(off),
        Err(_) => filter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::spans::Messaging;
    use crate::core::trace_context::TraceContext;

    #[test]
    fn with_tracing_off_no_span_is_built_nor_its_fields_read() {
        let off = subscriber(LogFormat::Text, false, std::io::sink, None);
        tracing::subscriber::with_default(off, || {
            let mut read = false;
            let server = spans::server("POST", "/", None, || {
                read = true;
                None
            });
            assert!(server.is_disabled());
            assert!(!read, "the caller's context is not even parsed");
            let _in = server.enter();
            assert!(spans::messaging(Messaging::Send, Some("orders"), 1).is_disabled());
            assert!(spans::backend_call("embedded", "send").is_disabled());
            assert_eq!(spans::current_context(), None);
        });
    }

    #[test]
    fn with_tracing_on_a_request_continues_its_caller_and_upkeep_is_not_traced() {
        let provider = SdkTracerProvider::builder().build();
        let on = subscriber(LogFormat::Text, false, std::io::sink, Some(&provider));
        let caller = TraceContext::from_w3c(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            None,
        );
        tracing::subscriber::with_default(on, || {
            // Outside a request (the gateway's upkeep) no messaging or backend span is made.
            assert!(spans::messaging(Messaging::Receive, Some("orders"), 0).is_disabled());
            assert!(spans::backend_call("sqs", "receive").is_disabled());
            let server = spans::server("POST", "/", None, || caller.clone());
            assert!(!server.is_disabled());
            let _in = server.enter();
            let send = spans::messaging(Messaging::Send, Some("orders"), 2);
            assert!(!send.is_disabled());
            let _in_send = send.enter();
            let current = spans::current_context().expect("the send's context");
            assert!(
                current
                    .traceparent()
                    .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
                "{}",
                current.traceparent()
            );
            assert!(!current.traceparent().contains("00f067aa0ba902b7"));
            assert!(!spans::backend_call("sqs", "send").is_disabled());
        });
    }
}
