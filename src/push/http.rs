//! Posting a delivery over HTTP(S): the Standard Webhooks headers, the body as configured, the
//! subscription's timeout, no redirects followed, no proxy from the environment, and a resolver
//! that refuses addresses the gateway may not reach ([`super::guard`]).

use super::config::BodyForm;
use super::guard::is_public;
use super::signing::{SigningKey, signatures};
use crate::core::clock::Clock;
use crate::core::model::{AttributeValue, MessageAttribute};
use crate::core::push::{PushEndpoint, Pushed, PushedMessage};
use crate::core::spans;
use crate::core::trace_context::TraceContext;
use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use url::Url;

/// The `wrapped` body: the message with what a receiver needs beside it (docs/push.md). Its keys
/// are written in alphabetical order, as they always were.
#[derive(Serialize)]
struct Wrapped<'a> {
    attributes: BTreeMap<&'a str, WrappedAttribute<'a>>,
    body: &'a str,
    group_id: Option<&'a str>,
    id: &'a str,
    queue: &'a str,
    /// Only with `hold_on_202`: the receiver settles by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    receipt_handle: Option<&'a str>,
    receive_count: u32,
    sent_at: Option<String>,
}

/// A message attribute in the `wrapped` body: binary values in base64.
#[derive(Serialize)]
struct WrappedAttribute<'a> {
    #[serde(rename = "type")]
    data_type: &'a str,
    value: Cow<'a, str>,
}

impl<'a> From<&'a MessageAttribute> for WrappedAttribute<'a> {
    fn from(attribute: &'a MessageAttribute) -> Self {
        Self {
            data_type: &attribute.data_type,
            value: match &attribute.value {
                AttributeValue::Text(text) => Cow::Borrowed(text),
                AttributeValue::Bytes(bytes) => Cow::Owned(STANDARD.encode(bytes)),
            },
        }
    }
}

/// The resolver's refusal: every address of the name is one the gateway may not reach.
#[derive(Debug, thiserror::Error)]
#[error("the endpoint's addresses are private, loopback, link-local or otherwise not public")]
struct NotPublic;

/// Resolves names, keeping only the addresses the gateway may reach.
#[derive(Debug)]
struct GuardedResolver {
    allow_private_networks: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private_networks = self.allow_private_networks;
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let kept: Vec<SocketAddr> = found
                .filter(|address| allow_private_networks || is_public(address.ip()))
                .collect();
            if kept.is_empty() {
                return Err(Box::new(NotPublic) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The most of a response's body read (and dropped): enough for the connection to be reused
/// after a short answer, never a large one held.
const MOST_RESPONSE_BYTES: usize = 64 * 1024;

/// The HTTP client every push endpoint shares: its resolver guards every connection; TLS trusts
/// the system's roots and the certificates of `root_certificates_pem`, if any.
pub(super) fn client(
    allow_private_networks: bool,
    root_certificates_pem: Option<&[u8]>,
) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder();
    if let Some(pem) = root_certificates_pem {
        let certificates = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|_| "push.root_certificates_file: not PEM certificates".to_owned())?;
        if certificates.is_empty() {
            return Err("push.root_certificates_file: holds no certificate".into());
        }
        for certificate in certificates {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(GuardedResolver {
            allow_private_networks,
        }))
        .user_agent(concat!("sqs-gateway/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|error| format!("cannot make the push client: {error}"))
}

/// One subscription's endpoint.
pub(super) struct HttpEndpoint {
    /// The shared client.
    pub(super) client: reqwest::Client,
    /// Where to post.
    pub(super) url: Url,
    /// The current signing key.
    pub(super) key: SigningKey,
    /// The key being replaced, during a rotation: it signs too until the time given (always,
    /// with none given).
    pub(super) previous: Option<(SigningKey, Option<chrono::DateTime<chrono::Utc>>)>,
    /// How long the endpoint has to answer.
    pub(super) timeout: Duration,
    /// How the message is posted.
    pub(super) body: BodyForm,
    /// Whether private addresses may be reached.
    pub(super) allow_private_networks: bool,
    /// Whether a 202 holds the lease (the body then carries the receipt handle).
    pub(super) hold_on_202: bool,
    /// The time the signatures carry.
    pub(super) clock: Arc<dyn Clock>,
}

impl HttpEndpoint {
    /// The body posted, and its content type.
    fn payload(&self, pushed: &PushedMessage<'_>) -> (Vec<u8>, &'static str) {
        let message = pushed.message;
        match self.body {
            BodyForm::Raw => {
                let kind = if serde_json::from_str::<serde::de::IgnoredAny>(&message.body).is_ok() {
                    "application/json"
                } else {
                    "text/plain; charset=utf-8"
                };
                (message.body.clone().into_bytes(), kind)
            }
            BodyForm::Wrapped => {
                let wrapped = Wrapped {
                    id: &message.message_id,
                    queue: pushed.queue,
                    body: &message.body,
                    attributes: message
                        .attributes
                        .iter()
                        .map(|(name, attribute)| (name.as_str(), attribute.into()))
                        .collect(),
                    receive_count: message.receive_count,
                    sent_at: message.sent_at.map(|at| at.to_rfc3339()),
                    group_id: message.group_id.as_deref(),
                    receipt_handle: self.hold_on_202.then_some(pushed.receipt_handle),
                };
                // A struct of strings and numbers always serializes.
                let json = serde_json::to_vec(&wrapped).unwrap_or_default();
                (json, "application/json")
            }
        }
    }

    /// Whether the URL names an address (not a name) the gateway may not reach.
    fn names_a_private_address(&self) -> bool {
        if self.allow_private_networks {
            return false;
        }
        match self.url.host() {
            Some(url::Host::Ipv4(v4)) => !is_public(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => !is_public(IpAddr::V6(v6)),
            _ => false,
        }
    }
}

/// `Retry-After` in seconds (or an HTTP date), as a wait from now.
fn retry_after(
    response: &reqwest::Response,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<Duration> {
    let value = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    (at.with_timezone(&chrono::Utc) - now).to_std().ok()
}

/// Whether `error` (or what caused it) is the resolver's refusal.
fn refused_by_guard(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if cause.is::<NotPublic>() {
            return true;
        }
        source = cause.source();
    }
    false
}

#[async_trait]
impl PushEndpoint for HttpEndpoint {
    async fn push(&self, pushed: &PushedMessage<'_>) -> Pushed {
        if self.names_a_private_address() {
            return Pushed::Forbidden;
        }
        let (body, content_type) = self.payload(pushed);
        let id = &pushed.message.message_id;
        let now = self.clock.now();
        let timestamp = now.timestamp();
        let previous = self
            .previous
            .as_ref()
            .filter(|(_, until)| until.is_none_or(|until| now < until))
            .map(|(key, _)| key);
        let keys: Vec<&SigningKey> = std::iter::once(&self.key).chain(previous).collect();
        let signature = signatures(&keys, id, timestamp, &body);
        let mut post = self
            .client
            .post(self.url.clone())
            .timeout(self.timeout)
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .header(reqwest::header::CONTENT_TYPE, content_type);
        // The producer's trace continues at the receiver (not signed: a tracing hop may rewrite
        // it), as a child of the delivery's span when spans are exported.
        if let Some(context) =
            spans::current_context().or_else(|| TraceContext::of_message(pushed.message))
        {
            post = post.header("traceparent", context.traceparent());
            if let Some(state) = context.tracestate() {
                post = post.header("tracestate", state);
            }
        }
        let sent = post.body(body).send().await;
        match sent {
            Ok(mut response) => {
                let pushed = match response.status().as_u16() {
                    202 if self.hold_on_202 => Pushed::Held,
                    status @ 200..=299 => Pushed::Accepted { status },
                    410 => Pushed::Gone,
                    status => Pushed::Refused {
                        status,
                        retry_after: retry_after(&response, now),
                    },
                };
                // Nothing of the body is needed: a short one is read so the connection is
                // reused, a longer one cut (its connection closed) within the timeout.
                let mut read = 0;
                let drain = async {
                    while let Ok(Some(chunk)) = response.chunk().await {
                        read += chunk.len();
                        if read > MOST_RESPONSE_BYTES {
                            break;
                        }
                    }
                };
                let _ = tokio::time::timeout(self.timeout, drain).await;
                pushed
            }
            Err(error) if error.is_timeout() => Pushed::TimedOut,
            Err(error) if refused_by_guard(&error) => Pushed::Forbidden,
            Err(_) => Pushed::Unreachable,
        }
    }

    fn describe(&self) -> String {
        crate::core::push::endpoint_for_readers(self.url.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::SystemClock;
    use crate::core::model::BackendMessage;

    fn endpoint(body: BodyForm, hold_on_202: bool) -> HttpEndpoint {
        HttpEndpoint {
            client: client(false, None).unwrap(),
            url: Url::parse("https://hooks.example.com/orders").unwrap(),
            key: SigningKey::parse(&format!("whsec_{}", STANDARD.encode([7u8; 32]))).unwrap(),
            previous: None,
            timeout: Duration::from_secs(1),
            body,
            allow_private_networks: false,
            hold_on_202,
            clock: Arc::new(SystemClock),
        }
    }

    fn message() -> BackendMessage {
        BackendMessage {
            message_id: "m-1".into(),
            backend_handle: "backend-receipt".into(),
            body: "{\"a\":1}".into(),
            attributes: BTreeMap::from([(
                "raw".to_owned(),
                MessageAttribute {
                    data_type: "Binary".into(),
                    value: AttributeValue::Bytes(vec![1, 2, 3]),
                },
            )]),
            sent_at: None,
            first_received_at: None,
            receive_count: 2,
            group_id: None,
            sequence_number: None,
            dead_letter_source_arn: None,
            deduplication_id: None,
            trace_header: None,
        }
    }

    /// The bytes a receiver verifies: keys in alphabetical order, as they were first written.
    #[test]
    fn the_wrapped_body_is_written_byte_for_byte_as_documented() {
        let message = message();
        let pushed = PushedMessage {
            queue: "orders",
            message: &message,
            receipt_handle: "sealed",
        };
        let (body, kind) = endpoint(BodyForm::Wrapped, false).payload(&pushed);
        assert_eq!(kind, "application/json");
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"attributes":{"raw":{"type":"Binary","value":"AQID"}},"body":"{\"a\":1}","group_id":null,"id":"m-1","queue":"orders","receive_count":2,"sent_at":null}"#
        );
        let (held, _) = endpoint(BodyForm::Wrapped, true).payload(&pushed);
        let held: serde_json::Value = serde_json::from_slice(&held).unwrap();
        assert_eq!(held["receipt_handle"], "sealed");
        let (raw, kind) = endpoint(BodyForm::Raw, false).payload(&pushed);
        assert_eq!(
            (raw.as_slice(), kind),
            (&b"{\"a\":1}"[..], "application/json")
        );
    }
}
