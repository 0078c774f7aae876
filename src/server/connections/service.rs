//! The router as hyper calls it on one connection: each request gets the caller's address and a
//! deadline for its body and counts as in flight until answered; a refused connection's requests
//! are answered 503, and an HTTP/2 request is first held to what HTTP/1.1 would carry.

use super::activity::{Activity, Version};
use super::connection::Connection;
use super::watched::MAX_REQUEST_LINE;
use crate::api::common::RequestHints;
use crate::core::GatewayError;
use crate::server::deadline::DeadlineBody;
use crate::server::edge::Edge;
use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tower::ServiceExt as _;

/// The router as hyper calls it on one connection: adds the caller's address and the body
/// deadline, and keeps the in-flight count the idle timeout reads.
pub(super) struct ConnectionService {
    router: Router,
    edge: Edge,
    activity: Arc<Activity>,
    peer: SocketAddr,
    /// Over the connection limit: answer 503 without routing.
    refuse: bool,
    body_timeout: Duration,
    version: Version,
}

impl Connection {
    /// The router as a hyper service for this connection.
    pub(super) fn service(&self, activity: Arc<Activity>, version: Version) -> ConnectionService {
        ConnectionService {
            router: self.router.clone(),
            edge: self.edge.clone(),
            activity,
            peer: self.peer,
            refuse: self.refuse,
            body_timeout: self.settings.body_timeout,
            version,
        }
    }
}

type Answer = Result<axum::response::Response, std::convert::Infallible>;

impl hyper::service::Service<hyper::Request<Incoming>> for ConnectionService {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = Pin<Box<dyn Future<Output = Answer> + Send>>;

    fn call(&self, mut request: hyper::Request<Incoming>) -> Self::Future {
        let body_done = {
            use http_body::Body as _;
            request.body().is_end_stream()
        };
        let in_flight = self.activity.request_started(body_done);
        let refusal = if self.refuse {
            Some(GatewayError::new(
                crate::core::ErrorKind::Unavailable {
                    retry_after: Duration::from_secs(1),
                },
                "the gateway has as many connections open as it allows; retry later",
            ))
        } else if self.version == Version::Http2 {
            http2_refusal(&mut request)
        } else {
            None
        };
        if let Some(error) = refusal {
            let response = self.edge.error_response(&RequestHints::of(&request), error);
            return Box::pin(async move {
                drop(in_flight);
                Ok(response)
            });
        }
        let router = self.router.clone();
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(ConnectInfo(self.peer));
        let activity = Arc::clone(&self.activity);
        let discard_unread = self.version == Version::Http1;
        let body = DeadlineBody::new(body, self.body_timeout, discard_unread, move || {
            activity.body_read();
        });
        let request = axum::extract::Request::from_parts(parts, axum::body::Body::new(body));
        let activity = Arc::clone(&self.activity);
        Box::pin(async move {
            let mut answer = router.oneshot(request).await;
            // Answered before its body was read: the client may send its next request right
            // behind the body, where the request-line watch (`Watched`) cannot tell where it
            // starts. The connection closes once the body is discarded.
            if let Ok(response) = &mut answer
                && discard_unread
                && activity.body_unread()
            {
                response.headers_mut().insert(
                    axum::http::header::CONNECTION,
                    axum::http::HeaderValue::from_static("close"),
                );
            }
            drop(in_flight);
            answer
        })
    }
}

/// What an HTTP/2 request needs before the dialects, which read it as HTTP/1.1: its target held
/// to the request-line limit (HTTP/1.1's is checked as it arrives, in `Watched`), and a `Host`
/// header from its `:authority` (queue URLs and SigV4's signed `host` read it). A `Host` that
/// names another authority than `:authority` makes the request malformed (RFC 9113 §8.3.1).
fn http2_refusal(request: &mut hyper::Request<Incoming>) -> Option<GatewayError> {
    use crate::core::ErrorKind;
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target > MAX_REQUEST_LINE {
        return Some(GatewayError::new(
            ErrorKind::UriTooLong,
            format!("the request target is longer than {MAX_REQUEST_LINE} bytes"),
        ));
    }
    let authority = request
        .uri()
        .authority()
        .map(|authority| authority.as_str());
    let hosts = request.headers().get_all(axum::http::header::HOST);
    match (authority, hosts.iter().count()) {
        (Some(authority), 0) => {
            if let Ok(host) = axum::http::HeaderValue::from_str(authority) {
                request.headers_mut().insert(axum::http::header::HOST, host);
            }
            None
        }
        (Some(authority), 1)
            if hosts
                .iter()
                .all(|host| host.as_bytes() == authority.as_bytes()) =>
        {
            None
        }
        (None, 0 | 1) => None,
        _ => Some(GatewayError::new(
            ErrorKind::InvalidRequest,
            "the Host header and :authority of the request disagree",
        )),
    }
}
