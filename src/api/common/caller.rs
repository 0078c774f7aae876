//! What a request says of its caller before any dialect reads it: the bearer token it carries,
//! the address it comes from, and the trace it belongs to.

use axum::http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), if it
/// carries a non-empty one. Every dialect that takes a bearer token reads it here.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|token| !token.is_empty())
}

/// The request's W3C `traceparent` header, if it has one (its form is the core's to judge).
pub fn traceparent(headers: &HeaderMap) -> Option<&str> {
    headers.get("traceparent")?.to_str().ok()
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
