//! The push receiver the push tests run on loopback: what it was sent, how it answers (scripted),
//! and the Standard Webhooks signature it checks.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The signing secrets of the tests (Standard Webhooks form).
pub fn secret(fill: u8) -> String {
    format!("whsec_{}", STANDARD.encode([fill; 32]))
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    /// The W3C trace context headers, empty when absent.
    pub traceparent: String,
    pub tracestate: String,
    pub body: String,
    pub at: Instant,
}

/// What the receiver answers next: a status, an optional `Retry-After`, an optional delay.
#[derive(Debug, Clone, Copy)]
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<u64>,
    pub delay: Duration,
}

pub const OK: Reply = Reply {
    status: 200,
    retry_after: None,
    delay: Duration::ZERO,
};

pub fn status(status: u16) -> Reply {
    Reply { status, ..OK }
}

#[derive(Default)]
pub struct Script {
    pub hits: Mutex<Vec<Hit>>,
    pub next: Mutex<VecDeque<Reply>>,
    pub otherwise: Mutex<Option<Reply>>,
}

/// A receiver on loopback answering by its script (then 200).
pub struct Receiver {
    pub url: String,
    pub script: Arc<Script>,
}

pub async fn receive(
    State(script): State<Arc<Script>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    script.hits.lock().unwrap().push(Hit {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        traceparent: header("traceparent"),
        tracestate: header("tracestate"),
        body,
        at: Instant::now(),
    });
    let reply = script
        .next
        .lock()
        .unwrap()
        .pop_front()
        .or(*script.otherwise.lock().unwrap())
        .unwrap_or(OK);
    tokio::time::sleep(reply.delay).await;
    let mut response = StatusCode::from_u16(reply.status).unwrap().into_response();
    if let Some(seconds) = reply.retry_after {
        response
            .headers_mut()
            .insert("retry-after", seconds.to_string().parse().unwrap());
    }
    response
}

impl Receiver {
    pub async fn start() -> Self {
        let script = Arc::new(Script::default());
        let router = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(Arc::clone(&script));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        Self { url, script }
    }

    /// A receiver over HTTPS at `https://localhost:<port>/hook`, with the certificate and key
    /// given (PEM).
    pub async fn start_tls(certificate_pem: &str, key_pem: &str) -> Self {
        use rustls_pki_types::pem::PemObject as _;
        let script = Arc::new(Script::default());
        let router = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(Arc::clone(&script));
        let certificates =
            rustls_pki_types::CertificateDer::pem_slice_iter(certificate_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certificates, key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "https://localhost:{}/hook",
            listener.local_addr().unwrap().port()
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, router) = (acceptor.clone(), router.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request| {
                        tower::ServiceExt::oneshot(router.clone(), request)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self { url, script }
    }

    pub fn then(&self, replies: &[Reply]) -> &Self {
        self.script.next.lock().unwrap().extend(replies);
        self
    }

    pub fn always(&self, reply: Reply) {
        *self.script.otherwise.lock().unwrap() = Some(reply);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.script.hits.lock().unwrap().clone()
    }

    /// Waits until it has had `count` requests (at most `within`).
    pub async fn wait_for(&self, count: usize, within: Duration) -> Vec<Hit> {
        let until = Instant::now() + within;
        loop {
            let hits = self.hits();
            if hits.len() >= count || Instant::now() > until {
                return hits;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Whether `signature` (a `webhook-signature` value) holds a v1 signature of `hit` by `secret`.
pub fn signed_by(hit: &Hit, secret: &str) -> bool {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.{}", hit.id, hit.timestamp, hit.body).as_bytes());
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    hit.signature.split(' ').any(|one| one == expected)
}
