//! The base URL a dialect hands out in answers (queue URLs, token URLs): the configured public
//! URL, or the request's `Host` under the scheme the listener speaks, so a TLS gateway never
//! hands out a plain-http URL a client would then send secrets to.

use axum::http::{HeaderMap, header};

/// Where the URLs a dialect answers point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicUrl {
    /// The operator named it (`sqs_api.public_url`, `sombus.public_url`).
    Configured(String),
    /// The request's `Host`, under `https` when the listener serves TLS, else `http`.
    FromHost {
        /// Whether the listener serves TLS.
        tls: bool,
    },
}

impl PublicUrl {
    /// The configured URL when there is one, else the request's host under the listener's scheme.
    pub fn new(configured: Option<&str>, tls: bool) -> Self {
        match configured {
            Some(url) => Self::Configured(url.trim_end_matches('/').to_owned()),
            None => Self::FromHost { tls },
        }
    }

    /// The base URL for one request: no trailing slash; `fallback_host` when the request has no
    /// readable `Host`.
    pub fn for_request(&self, headers: &HeaderMap, fallback_host: &str) -> String {
        match self {
            Self::Configured(url) => url.clone(),
            Self::FromHost { tls } => {
                let host = headers
                    .get(header::HOST)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or(fallback_host);
                let scheme = if *tls { "https" } else { "http" };
                format!("{scheme}://{host}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn host(name: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(name).unwrap());
        headers
    }

    #[test]
    fn a_tls_listener_answers_https_and_a_configured_url_wins() {
        let headers = host("gw.example:8443");
        assert_eq!(
            PublicUrl::new(None, true).for_request(&headers, "localhost"),
            "https://gw.example:8443"
        );
        assert_eq!(
            PublicUrl::new(None, false).for_request(&headers, "localhost"),
            "http://gw.example:8443"
        );
        assert_eq!(
            PublicUrl::new(Some("http://lb.internal/"), true).for_request(&headers, "localhost"),
            "http://lb.internal"
        );
        assert_eq!(
            PublicUrl::new(None, true).for_request(&HeaderMap::new(), "localhost"),
            "https://localhost"
        );
    }
}
