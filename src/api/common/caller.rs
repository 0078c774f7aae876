//! What a request says of its caller before any dialect reads it: the bearer token it carries,
//! the address it comes from, and the trace it belongs to.

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

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
#[derive(Debug, Clone, Default)]
pub struct ClientAddressPolicy {
    /// Use the last `X-Forwarded-For` entry whoever sent the request (`server.trust_forwarded_for`).
    pub trust_forwarded_for: bool,
    /// The proxies whose forwarding headers count (`server.trusted_proxies`).
    pub trusted_proxies: Arc<[IpNet]>,
}

impl ClientAddressPolicy {
    /// The client's address: with trusted proxies, when the peer is one, the nearest address of
    /// the request's forwarding chain that is not (RFC 7239 `Forwarded` `for=`, else
    /// `X-Forwarded-For`, read right to left: each trusted proxy appended the address it got the
    /// request from, so the entries left of the first untrusted one are the client's to forge);
    /// else, with `trust_forwarded_for`, the last `X-Forwarded-For` entry; else the peer.
    pub fn client_address(&self, headers: &HeaderMap, peer: SocketAddr) -> IpAddr {
        let peer = peer.ip().to_canonical();
        if !self.trusted_proxies.is_empty() {
            if !self.is_trusted(peer) {
                return peer;
            }
            let forwarded = forwarded_for(headers);
            let chain = if forwarded.is_empty() {
                x_forwarded_for(headers)
            } else {
                forwarded
            };
            let mut client = peer;
            for hop in chain.iter().rev() {
                // An entry that is no address (`unknown`, an obfuscated name) ends the walk:
                // nothing left of it can be placed.
                let Some(hop) = hop else { break };
                client = hop.to_canonical();
                if !self.is_trusted(client) {
                    break;
                }
            }
            return client;
        }
        if self.trust_forwarded_for
            && let Some(Some(forwarded)) = x_forwarded_for(headers).last()
        {
            return *forwarded;
        }
        peer
    }

    fn is_trusted(&self, address: IpAddr) -> bool {
        self.trusted_proxies
            .iter()
            .any(|network| network.contains(&address))
    }
}

/// The `X-Forwarded-For` entries, in order (`None` for one that is not an address).
fn x_forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|entry| entry.trim().parse::<IpAddr>().ok())
        .collect()
}

/// The `for=` of each `Forwarded` element (RFC 7239), in order: `None` for one without a `for`
/// or whose node is not an address (`unknown`, `_hidden`). A quoted value may carry a port, and an
/// IPv6 address is in brackets.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    headers
        .get_all(axum::http::header::FORWARDED)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|element| {
            element
                .split(';')
                .filter_map(|pair| pair.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("for"))
                .and_then(|(_, node)| node_address(node.trim().trim_matches('"')))
        })
        .collect()
}

/// The address of a `Forwarded` node: `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]`,
/// `[2001:db8::1]:4711`.
fn node_address(node: &str) -> Option<IpAddr> {
    if let Some(bracketed) = node.strip_prefix('[') {
        return bracketed.split_once(']')?.0.parse().ok();
    }
    let host = node.split_once(':').map_or(node, |(host, _port)| host);
    host.parse().ok()
}

/// The address a request comes from, as [`ClientAddressPolicy`] resolved it once, before any
/// dialect ran (the server's outermost layer puts it in the request's extensions). Without one
/// (a router driven in-process), the connection's peer, else the unspecified address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<ClientAddress>()
            .copied()
            .or_else(|| {
                parts
                    .extensions
                    .get::<ConnectInfo<SocketAddr>>()
                    .map(|ConnectInfo(peer)| ClientAddress(peer.ip()))
            })
            .unwrap_or(ClientAddress(IpAddr::from([0, 0, 0, 0]))))
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
            ..ClientAddressPolicy::default()
        };
        assert_eq!(
            trusted.client_address(&headers, peer),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(trusted.client_address(&HeaderMap::new(), peer), peer.ip());
    }

    fn behind(proxies: &[&str]) -> ClientAddressPolicy {
        ClientAddressPolicy {
            trust_forwarded_for: false,
            trusted_proxies: proxies.iter().map(|net| net.parse().unwrap()).collect(),
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_trusted_chain_is_walked_right_to_left_to_the_first_untrusted_address() {
        let policy = behind(&["10.0.0.0/8", "2001:db8:ffff::/48"]);
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        // The client forged the first entry; the two proxies appended the rest.
        let forged = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.9, 10.1.2.3")]);
        assert_eq!(policy.client_address(&forged, peer), ip("203.0.113.9"));
        // Header lines count in order, as one list.
        let split = headers(&[
            ("x-forwarded-for", "1.2.3.4"),
            ("x-forwarded-for", "203.0.113.9, 10.1.2.3"),
        ]);
        assert_eq!(policy.client_address(&split, peer), ip("203.0.113.9"));
        // An untrusted peer's headers count for nothing.
        let stranger: SocketAddr = "198.51.100.7:5000".parse().unwrap();
        assert_eq!(policy.client_address(&forged, stranger), ip("198.51.100.7"));
        // No header: the peer, trusted or not.
        assert_eq!(
            policy.client_address(&HeaderMap::new(), peer),
            ip("10.0.0.1")
        );
        // Every hop trusted: the leftmost.
        let inside = headers(&[("x-forwarded-for", "10.9.9.9, 10.1.2.3")]);
        assert_eq!(policy.client_address(&inside, peer), ip("10.9.9.9"));
        // An entry that is no address ends the walk at the last hop placed.
        let garbled = headers(&[("x-forwarded-for", "203.0.113.9, garbage, 10.1.2.3")]);
        assert_eq!(policy.client_address(&garbled, peer), ip("10.1.2.3"));
        // An IPv4-mapped IPv6 peer is its IPv4 address.
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:5000".parse().unwrap();
        assert_eq!(policy.client_address(&forged, mapped), ip("203.0.113.9"));
    }

    #[test]
    fn forwarded_is_preferred_and_read_with_ports_brackets_and_quotes() {
        let policy = behind(&["10.0.0.1/32", "2001:db8:ffff::/48"]);
        let peer: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let both = headers(&[
            ("x-forwarded-for", "198.51.100.1"),
            (
                "forwarded",
                r#"for=1.2.3.4, For="[2001:db8:cafe::17]:4711";proto=https, for="[2001:db8:ffff::1]""#,
            ),
        ]);
        assert_eq!(policy.client_address(&both, peer), ip("2001:db8:cafe::17"));
        let with_port = headers(&[("forwarded", r#"by=10.0.0.1;for="192.0.2.60:8080""#)]);
        assert_eq!(policy.client_address(&with_port, peer), ip("192.0.2.60"));
        let hidden = headers(&[("forwarded", "for=_hidden, for=10.0.0.1")]);
        assert_eq!(policy.client_address(&hidden, peer), ip("10.0.0.1"));
    }
}
