//! A counting proxy between a gateway and LocalStack: it forwards every request as it came and
//! counts the SQS calls by action (the `X-Amz-Target` the SDK sends) and the connections opened
//! to it, so a test tells what a gateway costs in SQS requests and sockets without trusting the
//! gateway's own metrics.

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
struct Forward {
    upstream: String,
    http: reqwest::Client,
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
    peers: Arc<Mutex<HashSet<SocketAddr>>>,
}

/// The proxy; it stops when dropped.
pub struct SqsCallCounter {
    /// Where to point the gateway's backend.
    pub endpoint: String,
    counts: Arc<Mutex<BTreeMap<String, usize>>>,
    peers: Arc<Mutex<HashSet<SocketAddr>>>,
    server: tokio::task::JoinHandle<()>,
}

impl SqsCallCounter {
    /// A proxy to `upstream` (LocalStack's endpoint) on a free local port.
    pub async fn start(upstream: &str) -> Self {
        let counts = Arc::new(Mutex::new(BTreeMap::new()));
        let peers = Arc::new(Mutex::new(HashSet::new()));
        let forward = Forward {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            counts: Arc::clone(&counts),
            peers: Arc::clone(&peers),
        };
        let app = axum::Router::new().fallback(relay).with_state(forward);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        });
        Self {
            endpoint,
            counts,
            peers,
            server,
        }
    }

    /// The calls of `action` (e.g. `DeleteMessageBatch`) forwarded so far.
    pub fn calls(&self, action: &str) -> usize {
        self.counts
            .lock()
            .unwrap()
            .get(action)
            .copied()
            .unwrap_or(0)
    }
}

impl SqsCallCounter {
    /// The connections that carried a request so far (each client socket once).
    pub fn connections(&self) -> usize {
        self.peers.lock().unwrap().len()
    }
}

impl Drop for SqsCallCounter {
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
    forward.peers.lock().unwrap().insert(peer);
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        let action = target.rsplit('.').next().unwrap_or(target).to_owned();
        *forward.counts.lock().unwrap().entry(action).or_default() += 1;
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
    let answer = request.send().await.unwrap();
    let status = answer.status();
    let mut answer_headers = answer.headers().clone();
    answer_headers.remove("content-length");
    answer_headers.remove("transfer-encoding");
    (status, answer_headers, answer.bytes().await.unwrap())
}
