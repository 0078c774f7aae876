//! What every request leaves behind for operators: a request id (the client's `X-Request-Id` when it
//! is a sane token, else a fresh one; echoed in the answer), a span that names the route, the
//! client's address, the caller, the operation and an incoming W3C `traceparent` on every log line
//! of the request, a count and a latency in the metrics by dialect, operation and status, and a
//! warning (one per address a minute) when a caller fails to authenticate. The client's address
//! is resolved here once, by `server.trusted_proxies`, for every dialect. The same layer ends a
//! request that runs past [`REQUEST_TIMEOUT`] with an answer in its dialect's shape (one layer,
//! not two: each costs every request, and every waiting long poll, a boxed future).

use super::edge::Edge;
use crate::api::common::{ClientAddress, ClientAddressPolicy, RequestHints};
use crate::core::log_throttle::LogThrottle;
use crate::core::metrics::meters::{Meters, NO_OPERATION};
use crate::core::operation::Operation;
use crate::core::request_scope::{self, Scoped};
use crate::core::spans;
use crate::core::trace_context::TraceContext;
use axum::extract::{ConnectInfo, MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Timeout};
use tracing::Instrument as _;
use tracing::instrument::Instrumented;

/// The request id header, in and out.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
/// The longest client-given request id kept.
const MAX_REQUEST_ID: usize = 128;
/// The longest a request may take: a 20 s long poll plus backend latency and retries.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// At most one "authentication failed" warning per client address (an IPv6 /64) in this time.
const REFUSAL_WARNING_EVERY: Duration = Duration::from_secs(60);
/// Addresses whose refusals are throttled at once; past it the least recent are forgotten.
const REFUSAL_ADDRESSES: u64 = 10_000;

/// Gives every request its id, span and metrics (outermost layer: everything inside is in the
/// span).
///
/// A layer with a future of its own rather than `middleware::from_fn`: that boxes an `async fn`
/// which keeps the request and the work it awaits side by side for every waiting long poll;
/// [`Observed`] holds the work once and what the answer needs
/// (`docs/decisions/2026-12-02-idle-poll-futures.md`).
#[derive(Clone)]
pub struct ObserveLayer {
    observers: Arc<Observers>,
}

/// What every observed request answers to, shared: one pointer a request (and a waiting long
/// poll) holds, not one clone of each.
struct Observers {
    meters: Meters,
    edge: Edge,
    addresses: ClientAddressPolicy,
    refusals: Refusals,
}

impl ObserveLayer {
    /// Counts and times requests in `meters`, under the dialect `edge` names (which also
    /// answers a request past its deadline), with client addresses resolved by `addresses`.
    pub fn new(meters: Meters, edge: Edge, addresses: ClientAddressPolicy) -> Self {
        Self {
            observers: Arc::new(Observers {
                meters,
                edge,
                addresses,
                refusals: Refusals::new(),
            }),
        }
    }
}

/// The "authentication failed" warnings' throttle, per client address.
struct Refusals(moka::sync::Cache<IpAddr, Arc<Mutex<LogThrottle>>>);

impl Refusals {
    fn new() -> Self {
        Self(
            moka::sync::Cache::builder()
                .max_capacity(REFUSAL_ADDRESSES)
                .time_to_idle(REFUSAL_WARNING_EVERY * 10)
                .build(),
        )
    }

    /// Counts a refusal from `client`; warns when one is due, with the count since the last.
    fn refused(&self, client: IpAddr) {
        let throttle = self.0.get_with(super::per_address::counted_as(client), || {
            Arc::new(Mutex::new(LogThrottle::new(REFUSAL_WARNING_EVERY)))
        });
        let due = throttle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .due();
        if let Some(failures) = due {
            tracing::warn!(
                failures,
                "authentication failed ({failures} from this address since its last warning)"
            );
        }
    }
}

impl<S> tower::Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe {
            inner,
            observers: Arc::clone(&self.observers),
        }
    }
}

/// [`ObserveLayer`] around one route.
#[derive(Clone)]
pub struct Observe<S> {
    inner: S,
    observers: Arc<Observers>,
}

impl<S> tower::Service<Request> for Observe<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Observed<S::Future>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, mut request: Request) -> Observed<S::Future> {
        let request_id = request
            .headers()
            .get(&REQUEST_ID)
            .and_then(|value| value.to_str().ok())
            .filter(|id| is_token(id))
            .map_or_else(fresh_request_id, str::to_owned);
        let id_value = HeaderValue::from_str(&request_id).ok();
        if let Some(value) = &id_value {
            request
                .headers_mut()
                .insert(REQUEST_ID.clone(), value.clone());
        }
        let traceparent = request
            .headers()
            .get("traceparent")
            .and_then(|value| value.to_str().ok())
            .filter(|value| is_traceparent(value));
        let client =
            request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| {
                    self.observers
                        .addresses
                        .client_address(request.headers(), *peer)
                });
        let route = request
            .extensions()
            .get::<MatchedPath>()
            .map_or("unmatched", MatchedPath::as_str);
        // The route, never the raw URI: query strings may carry receipt handles.
        let span = tracing::info_span!(
            "request",
            request_id = %request_id,
            method = %request.method(),
            route,
            client = client.map(tracing::field::display),
            // Who called (`api_key:<id>`, `access_key:<id>`, `token:<client id>`, …, or
            // `unauthenticated`) and, when authentication failed, the public id it claimed.
            caller = tracing::field::Empty,
            claimed = tracing::field::Empty,
            operation = tracing::field::Empty,
            // The dialect's own name of the call and its wire protocol (the SQS endpoint's
            // action, JSON or Query).
            action = tracing::field::Empty,
            protocol = tracing::field::Empty,
            traceparent = traceparent.map(tracing::field::display),
        );
        // Exported when tracing is on; else disabled, and none of it evaluated.
        let server = spans::server(request.method().as_str(), route, client, || {
            caller_trace_context(request.headers())
        });
        if let Some(client) = client {
            request.extensions_mut().insert(ClientAddress(client));
        }
        let hints = RequestHints::of(&request);
        // The deadline sits inside the spans and the request's scope, as the work does: a
        // request cut off is still logged and counted under the operation it named.
        let work = request_scope::scoped(tokio::time::timeout(
            REQUEST_TIMEOUT,
            self.inner.call(request),
        ))
        .instrument(server)
        .instrument(span);
        Observed {
            work,
            answer: Some(Answering {
                observers: Arc::clone(&self.observers),
                client,
                id_value,
                hints,
                started: Instant::now(),
            }),
        }
    }
}

pin_project_lite::pin_project! {
    /// A request at work, then answered: its log line, metrics and request id.
    pub struct Observed<F: Future> {
        #[pin]
        work: Instrumented<Instrumented<Scoped<Timeout<F>>>>,
        answer: Option<Answering>,
    }
}

/// What the answer of an observed request needs once the work is done.
struct Answering {
    observers: Arc<Observers>,
    client: Option<IpAddr>,
    id_value: Option<HeaderValue>,
    hints: RequestHints,
    started: Instant,
}

impl<F> Future for Observed<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut work = this.work;
        let (answered, noted) = std::task::ready!(work.as_mut().poll(context));
        let Answering {
            observers,
            client,
            id_value,
            hints,
            started,
        } = this
            .answer
            .take()
            .expect("an observed request is not polled after its answer");
        let mut response = match answered {
            Ok(Ok(response)) => response,
            Ok(Err(infallible)) => match infallible {},
            Err(_elapsed) => {
                let error = crate::core::GatewayError::new(
                    crate::core::ErrorKind::Unavailable {
                        retry_after: crate::core::backend::DEFAULT_RETRY_AFTER,
                    },
                    "the request took too long; retry later",
                );
                observers.edge.error_response(&hints, error)
            }
        };
        let elapsed = started.elapsed();
        let status = response.status().as_u16();
        let operation = noted.operation.map_or(NO_OPERATION, Operation::name);
        let dialect = observers.edge.label(&hints);
        spans::answered(work.as_ref().get_ref().inner().span(), status);
        work.span().in_scope(|| {
            tracing::info!(
                status,
                latency_ms = elapsed.as_secs_f64() * 1000.0,
                "answered"
            );
            if noted.authentication_refused {
                observers.meters.authentication_failure(dialect);
                if let Some(client) = client {
                    observers.refusals.refused(client);
                }
            }
        });
        observers
            .meters
            .request(dialect, operation, status, elapsed);
        if let Some(value) = id_value {
            response.headers_mut().insert(REQUEST_ID.clone(), value);
        }
        Poll::Ready(Ok(response))
    }
}

/// The trace context a request continues: its W3C `traceparent` (with its `tracestate`), else
/// its X-Ray `X-Amzn-Trace-Id`.
fn caller_trace_context(headers: &axum::http::HeaderMap) -> Option<TraceContext> {
    let text = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    text("traceparent")
        .and_then(|traceparent| TraceContext::from_w3c(traceparent, text("tracestate")))
        .or_else(|| text("x-amzn-trace-id").and_then(TraceContext::from_xray))
}

/// A random (v4) UUID from the thread's CSPRNG: no system call per request.
fn fresh_request_id() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

/// A request id worth keeping: 1 to 128 characters of letters, digits and `-_.:`.
fn is_token(id: &str) -> bool {
    (1..=MAX_REQUEST_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

/// A W3C trace context `traceparent` (version 00 layout; later versions may append fields):
/// `vv-<32 hex trace id, not all zero>-<16 hex parent id, not all zero>-<2 hex flags>`.
fn is_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |part: &str, length: usize| {
        part.len() == length && part.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let not_zero = |part: &str| part.bytes().any(|b| b != b'0');
    match parts.as_slice() {
        [version, trace, parent, flags, rest @ ..] => {
            hex(version, 2)
                && *version != "ff"
                && (*version != "00" || rest.is_empty())
                && hex(trace, 32)
                && not_zero(trace)
                && hex(parent, 16)
                && not_zero(parent)
                && hex(flags, 2)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_trace_contexts_are_kept() {
        assert!(is_traceparent(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        ));
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "hello\nworld",
        ] {
            assert!(!is_traceparent(bad), "{bad}");
        }
    }

    #[test]
    fn a_request_continues_its_traceparent_else_its_x_ray_header() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(caller_trace_context(&headers), None);
        headers.insert(
            "x-amzn-trace-id",
            HeaderValue::from_static(
                "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
            ),
        );
        assert_eq!(
            caller_trace_context(&headers).map(|context| context.traceparent()),
            Some("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01".to_owned())
        );
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"),
        );
        headers.insert("tracestate", HeaderValue::from_static("vendor=1"));
        let context = caller_trace_context(&headers).unwrap();
        assert_eq!(
            context.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        );
        assert_eq!(context.tracestate(), Some("vendor=1"));
        // A malformed traceparent is no context; the X-Ray header is then the caller's.
        headers.insert("traceparent", HeaderValue::from_static("00-zz-00-01"));
        assert_eq!(
            caller_trace_context(&headers).map(|context| context.traceparent()),
            Some("00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-01".to_owned())
        );
    }

    #[test]
    fn fresh_request_ids_are_distinct_v4_uuids() {
        let (first, second) = (fresh_request_id(), fresh_request_id());
        assert_ne!(first, second);
        let parsed = uuid::Uuid::parse_str(&first).unwrap();
        assert_eq!(parsed.get_version(), Some(uuid::Version::Random));
        assert!(is_token(&first));
    }

    /// The deadline the layer keeps: an ezgh receive still at work after [`REQUEST_TIMEOUT`] is
    /// answered 503 in ezgh's shape, with its request id, and counted under the operation it
    /// named before the deadline.
    #[tokio::test(start_paused = true)]
    async fn a_request_past_the_deadline_is_answered_in_its_dialect_and_counted_by_operation() {
        let scrape = crate::server::scrape::Scrape::new(Duration::from_secs(60));
        let route =
            "/v1/organizations/{organization}/projects/{project}/queues/{queue}/messages/receive";
        let router = axum::Router::new()
            .route(
                route,
                axum::routing::post(|| async {
                    Operation::Receive.record();
                    std::future::pending::<()>().await
                }),
            )
            .layer(ObserveLayer::new(
                scrape.meters(),
                Edge::new([&crate::api::ezgh::EzghEdge as &dyn crate::api::common::EdgeShape]),
                ClientAddressPolicy::default(),
            ));
        let request = Request::post("/v1/organizations/o/projects/p/queues/q/messages/receive")
            .header(&REQUEST_ID, "deadline-1")
            .body(axum::body::Body::empty())
            .unwrap();
        let started = Instant::now();
        let answered = tower::ServiceExt::oneshot(router, request);
        let response = tokio::time::timeout(REQUEST_TIMEOUT * 2, answered)
            .await
            .expect("answered at the deadline")
            .unwrap();
        assert_eq!(started.elapsed(), REQUEST_TIMEOUT);
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()[&REQUEST_ID], "deadline-1");
        let body = axum::body::to_bytes(response.into_body(), 4096)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"], "unavailable");
        let scraped = scrape.render();
        assert!(
            scraped.contains(
                r#"sqsgw_http_requests_total{dialect="ezgh",operation="receive",status="503"} 1"#
            ),
            "{scraped}"
        );
    }

    #[test]
    fn request_ids_are_short_plain_tokens() {
        assert!(is_token("req-1.a:b_c"));
        assert!(!is_token(""));
        assert!(!is_token("has space"));
        assert!(!is_token(&"a".repeat(129)));
    }
}
