//! The HTTP dialects: each turns its wire format into core calls and renders the answers.

pub mod ezgh;
pub mod health;
pub mod sqs;

use crate::core::GatewayError;
use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// The answer to a known route with the wrong method; dialects set it before their layers so
/// that layers such as CORS still see preflight requests.
pub async fn method_not_allowed() -> impl axum::response::IntoResponse {
    (
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        axum::Json(serde_json::json!({
            "error": "method_not_allowed",
            "message": "method not allowed on this route"
        })),
    )
}

/// Reads a request body up to `limit` bytes; larger bodies are refused, not truncated.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, GatewayError> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        GatewayError::new(
            crate::core::ErrorKind::PayloadTooLarge,
            format!("the request body is larger than {limit} bytes or was cut short"),
        )
    })
}

/// How the gateway decides which address a request comes from.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientAddressPolicy {
    /// Use the last `X-Forwarded-For` entry (the one our trusted proxy appended).
    pub trust_forwarded_for: bool,
}

impl ClientAddressPolicy {
    /// The client's address for per-client limits.
    pub fn client_address(&self, headers: &HeaderMap, peer: SocketAddr) -> IpAddr {
        if self.trust_forwarded_for
            && let Some(forwarded) = headers
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|value| value.to_str().ok())
                .flat_map(|value| value.split(','))
                .filter_map(|entry| entry.trim().parse::<IpAddr>().ok())
                .next_back()
        {
            return forwarded;
        }
        peer.ip()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_used_only_when_trusted() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "203.0.113.9, 198.51.100.7".parse().unwrap(),
        );
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let untrusted = ClientAddressPolicy::default();
        assert_eq!(untrusted.client_address(&headers, peer), peer.ip());
        let trusted = ClientAddressPolicy {
            trust_forwarded_for: true,
        };
        assert_eq!(
            trusted.client_address(&headers, peer),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(trusted.client_address(&HeaderMap::new(), peer), peer.ip());
    }
}
