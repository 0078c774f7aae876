//! The gateway's own spans, named as OpenTelemetry's semantic conventions name them: a server
//! span a request, a messaging span an operation (send, receive, ack, nack, extend), a span a
//! backend call and one a push delivery.
//!
//! They are made under their own target, [`TARGET`], which only the OTLP exporter's layer enables
//! (`telemetry`): with tracing off every callsite here is disabled, and a disabled callsite is
//! skipped before any of its fields is evaluated, so nothing is built.

use crate::core::model::BackendMessage;
use crate::core::trace_context::TraceContext;
use opentelemetry::trace::TraceContextExt as _;
use std::net::IpAddr;
use tracing::Instrument as _;
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The target of every span exported: only the exporter's layer enables it.
pub const TARGET: &str = "sqsgw_spans";

/// `messaging.system` of the messaging spans: the gateway keeps SQS's semantics on every backend.
const MESSAGING_SYSTEM: &str = "aws_sqs";

/// A messaging operation, as its span names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Messaging {
    /// Messages sent to a queue.
    Send,
    /// Messages received from a queue.
    Receive,
    /// Deliveries acknowledged (deleted).
    Ack,
    /// Deliveries released (their visibility set to zero).
    Nack,
    /// Deliveries' visibility set past now.
    Extend,
}

impl Messaging {
    /// `messaging.operation.name`.
    fn name(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Receive => "receive",
            Self::Ack => "ack",
            Self::Nack => "nack",
            Self::Extend => "extend",
        }
    }

    /// `messaging.operation.type`.
    fn operation_type(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::Receive => "receive",
            Self::Ack | Self::Nack | Self::Extend => "settle",
        }
    }

    /// The span kind: a send produces, the rest are calls of a client of the queue.
    fn kind(self) -> &'static str {
        match self {
            Self::Send => "producer",
            Self::Receive | Self::Ack | Self::Nack | Self::Extend => "client",
        }
    }
}

/// The span of one request: `{method} {route}`, a child of the caller's context (its
/// `traceparent`, else its `X-Amzn-Trace-Id`), or a root.
pub fn server(
    method: &str,
    route: &str,
    client: Option<IpAddr>,
    caller: impl FnOnce() -> Option<TraceContext>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "server",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        client.address = client.map(tracing::field::display),
        http.response.status_code = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        let _ = span.set_parent(parent_context(caller().as_ref()));
    }
    span
}

/// Records a request's answer on its server span; a 5xx marks it an error.
pub fn answered(span: &Span, status: u16) {
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("otel.status_code", "error");
    }
}

/// The span of a messaging operation on the gateway queue `queue` (none for receipt handles
/// that carry their queue), over `messages` messages (a receive records its count once known,
/// [`received`]). Made only within an exported span: a push subscription's polls are not
/// traced, its deliveries are ([`push_delivery`]).
pub fn messaging(operation: Messaging, queue: Option<&str>, messages: usize) -> Span {
    if !within_exported_span() {
        return Span::none();
    }
    let span = tracing::info_span!(
        target: TARGET,
        "messaging",
        otel.name = %SpanName(operation.name(), queue),
        otel.kind = operation.kind(),
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.name = operation.name(),
        messaging.operation.type = operation.operation_type(),
        messaging.destination.name = queue,
        messaging.batch.message_count = Empty,
    );
    if operation != Messaging::Receive {
        count(&span, messages);
    }
    span
}

/// `{operation} {queue}`, or the operation alone when the queue is not named.
struct SpanName<'q>(&'static str, Option<&'q str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(queue) => write!(f, "{} {queue}", self.0),
            None => f.write_str(self.0),
        }
    }
}

/// Records what a receive got: its count, and a link to each message's producer context.
pub fn received<'m>(span: &Span, messages: impl Iterator<Item = &'m BackendMessage>) {
    if span.is_disabled() {
        return;
    }
    let mut got = 0;
    for message in messages {
        got += 1;
        if let Some(context) = TraceContext::of_message(message) {
            span.add_link(context.remote_span_context());
        }
    }
    count(span, got);
}

/// `messaging.batch.message_count`, which the conventions set only on a batch (not on one).
fn count(span: &Span, messages: usize) {
    if messages != 1 {
        span.record(
            "messaging.batch.message_count",
            i64::try_from(messages).unwrap_or(i64::MAX),
        );
    }
}

/// The span of one call through the backend port: `{backend} {call}` (`sqs send`), made only
/// within an exported span (the gateway's own upkeep, counting depths every few seconds, would
/// otherwise start a trace a call).
pub fn backend_call(backend: &'static str, call: &'static str) -> Span {
    if !within_exported_span() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "backend",
        otel.name = %format_args!("{backend} {call}"),
        otel.kind = if backend == "embedded" { "internal" } else { "client" },
        sqsgw.backend = backend,
        sqsgw.backend.call = call,
        otel.status_code = Empty,
    )
}

/// Runs `work` in `span`, marking the span failed when the work fails.
pub async fn traced<T, E>(span: Span, work: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    let result = work.instrument(span.clone()).await;
    if result.is_err() {
        failed(&span);
    }
    result
}

/// Marks a span whose work failed.
pub fn failed(span: &Span) {
    span.record("otel.status_code", "error");
}

/// The span of one push delivery of `message` from `queue`: a child of the message's producer
/// context (a root when it has none), with its attempt number.
pub fn push_delivery(
    queue: &str,
    subscription: &str,
    message: &BackendMessage,
    attempt: u32,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        parent: None,
        "push",
        otel.name = %format_args!("process {queue}"),
        otel.kind = "consumer",
        messaging.system = MESSAGING_SYSTEM,
        messaging.operation.name = "deliver",
        messaging.operation.type = "process",
        messaging.destination.name = queue,
        messaging.message.id = %message.message_id,
        sqsgw.push.subscription = subscription,
        sqsgw.push.attempt = i64::from(attempt),
        http.response.status_code = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        let _ = span.set_parent(parent_context(TraceContext::of_message(message).as_ref()));
    }
    span
}

/// The context a span of the current one continues, as a W3C trace context: what a push
/// receiver's `traceparent` names, so its work is a child of the delivery's span. None when no
/// span is exported (the message's own context is sent then).
pub fn current_context() -> Option<TraceContext> {
    let span = Span::current();
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context
        .is_valid()
        .then(|| TraceContext::of_span_context(&span_context))
        .flatten()
}

/// Whether the current span is one being exported (false at once with tracing off).
fn within_exported_span() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::INFO)
        && Span::current().context().span().span_context().is_valid()
}

/// The parent of a span continuing `caller` (a fresh root without one).
fn parent_context(caller: Option<&TraceContext>) -> opentelemetry::Context {
    match caller {
        Some(caller) => {
            opentelemetry::Context::new().with_remote_span_context(caller.remote_span_context())
        }
        None => opentelemetry::Context::new(),
    }
}
