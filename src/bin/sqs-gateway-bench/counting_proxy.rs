//! A counting proxy between a gateway and LocalStack: it forwards every request as it came and
//! counts the SQS calls by action (the `X-Amz-Target` the SDK sends) and the connections that
//! carried them, so what a gateway costs in SQS requests and sockets is told without trusting the
//! gateway's own metrics. The bench's `cost` family and the integration tests (which include this
//! file) both use it, each a part of it.
#![allow(
    dead_code,
    reason = "shared with the integration tests, which use other parts"
)]

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The SQS calls and connections the proxy saw since it was last reset.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    /// Calls by action.
    pub(crate) calls: BTreeMap<String, usize>,
    /// The client sockets that carried them.
    pub(crate) peers: HashSet<SocketAddr>,
}

impl Seen {
    /// Every call.
    pub(crate) fn total(&self) -> usize {
        self.calls.values().sum()
    }

    /// The calls of `action` (e.g. `DeleteMessageBatch`).
    pub(crate) fn of(&self, action: &str) -> usize {
        self.calls.get(action).copied().unwrap_or(0)
    }
}

#[derive(Default)]
struct Shared {
    seen: Mutex<Seen>,
    /// An action answered with SQS's throttling error instead of forwarded, while set.
    refused: Mutex<Option<String>>,
}

#[derive(Clone)]
struct Forward {
    upstream: String,
    http: reqwest::Client,
    shared: Arc<Shared>,
}

/// The proxy; it stops when dropped.
pub(crate) struct CountingProxy {
    /// Where to point the gateway's backend.
    pub(crate) url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl CountingProxy {
    /// A proxy to `upstream` (LocalStack's endpoint) on a free local port.
    pub(crate) async fn start(upstream: &str) -> Result<Self, String> {
        let shared = Arc::new(Shared::default());
        let forward = Forward {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            shared: Arc::clone(&shared),
        };
        let app = axum::Router::new().fallback(relay).with_state(forward);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot start the counting proxy: {e}"))?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let server = tokio::spawn(async move {
            let service = app.into_make_service_with_connect_info::<SocketAddr>();
            if let Err(error) = axum::serve(listener, service).await {
                eprintln!("the counting proxy stopped: {error}");
            }
        });
        Ok(Self {
            url,
            shared,
            server,
        })
    }

    /// What it saw so far.
    pub(crate) fn seen(&self) -> Seen {
        lock(&self.shared.seen).clone()
    }

    /// What it saw so far, and starts counting afresh.
    pub(crate) fn take(&self) -> Seen {
        std::mem::take(&mut *lock(&self.shared.seen))
    }

    /// Answers every call of `action` with SQS's throttling error (HTTP 400,
    /// `ThrottlingException`) instead of forwarding it, until `None`.
    pub(crate) fn refuse(&self, action: Option<&str>) {
        *lock(&self.shared.refused) = action.map(str::to_owned);
    }
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn relay(
    State(forward): State<Forward>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap, Bytes) {
    let action = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .map(|target| target.rsplit('.').next().unwrap_or(target).to_owned());
    {
        let mut seen = lock(&forward.shared.seen);
        seen.peers.insert(peer);
        if let Some(action) = &action {
            *seen.calls.entry(action.clone()).or_default() += 1;
        }
    }
    if action.is_some() && *lock(&forward.shared.refused) == action {
        let mut headers = HeaderMap::new();
        headers.insert(
            "content-type",
            axum::http::HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        let body =
            r#"{"__type":"com.amazonaws.sqs#ThrottlingException","message":"Rate exceeded"}"#;
        return (
            StatusCode::BAD_REQUEST,
            headers,
            Bytes::from_static(body.as_bytes()),
        );
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = forward
        .http
        .request(method, format!("{}{path}", forward.upstream))
        .body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            request = request.header(name, value);
        }
    }
    let Ok(answer) = request.send().await else {
        return (StatusCode::BAD_GATEWAY, HeaderMap::new(), Bytes::new());
    };
    let status = answer.status();
    let mut answer_headers = answer.headers().clone();
    answer_headers.remove("content-length");
    answer_headers.remove("transfer-encoding");
    let bytes = answer.bytes().await.unwrap_or_default();
    (status, answer_headers, bytes)
}
