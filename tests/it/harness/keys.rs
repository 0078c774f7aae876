//! The SQS endpoint's test keys, and requests signed with them by aws-sigv4 (the AWS SDKs' own
//! signer) and sent as they are.

use super::gateway::TestGateway;
use reqwest::StatusCode;
use std::time::{Duration, SystemTime};

/// The SQS endpoint's test access key (all queues, all actions) and its secret.
pub const SQS_KEY_ID: &str = "AKIDGATEWAYTEST";
pub const SQS_SECRET: &str = "gateway-test-secret-not-for-production";
/// A key that may only list queues.
pub const SQS_LIMITED_KEY_ID: &str = "AKIDGATEWAYLIMITED";

/// How a test request is signed.
pub struct Signing<'a> {
    /// The access key (default: the test key).
    pub key_id: &'a str,
    pub secret: &'a str,
    pub region: &'a str,
    /// The signing time (default: now).
    pub at: Option<SystemTime>,
    /// Presigned for this long (the signature in the query), else by `Authorization` header.
    pub presigned: Option<Duration>,
    /// Sign `UNSIGNED-PAYLOAD` instead of the body's hash.
    pub unsigned_payload: bool,
    /// Headers left out of the signature (sent all the same).
    pub excluded: &'a [&'static str],
}

impl Default for Signing<'_> {
    fn default() -> Self {
        Self {
            key_id: SQS_KEY_ID,
            secret: SQS_SECRET,
            region: "us-east-1",
            at: None,
            presigned: None,
            unsigned_payload: false,
            excluded: &[],
        }
    }
}

/// A request signed by aws-sigv4 (the AWS SDKs' own signer), with the test key unless `how`
/// names another.
pub fn signed(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    how: &Signing<'_>,
) -> http::Request<Vec<u8>> {
    use aws_sigv4::http_request::{
        PayloadChecksumKind, SignableBody, SignableRequest, SignatureLocation, SigningSettings,
        sign,
    };
    let identity =
        aws_credential_types::Credentials::new(how.key_id, how.secret, None, None, "t").into();
    let mut settings = SigningSettings::default();
    settings.payload_checksum_kind = PayloadChecksumKind::NoHeader;
    if let Some(expires) = how.presigned {
        settings.signature_location = SignatureLocation::QueryParams;
        settings.expires_in = Some(expires);
    }
    let mut excluded: Vec<std::borrow::Cow<'static, str>> =
        vec!["user-agent".into(), "content-length".into()];
    excluded.extend(how.excluded.iter().map(|name| (*name).into()));
    settings.excluded_headers = Some(excluded);
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(how.region)
        .name("sqs")
        .time(how.at.unwrap_or_else(SystemTime::now))
        .settings(settings)
        .build()
        .unwrap()
        .into();
    let signable_body = if how.unsigned_payload {
        SignableBody::UnsignedPayload
    } else {
        SignableBody::Bytes(body)
    };
    let signable =
        SignableRequest::new(method, url, headers.iter().copied(), signable_body).unwrap();
    let (instructions, _) = sign(signable, &params).unwrap().into_parts();
    let mut request = http::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let mut request = request.body(body.to_vec()).unwrap();
    instructions.apply_to_request_http1x(&mut request);
    if how.unsigned_payload {
        request
            .headers_mut()
            .insert("x-amz-content-sha256", "UNSIGNED-PAYLOAD".parse().unwrap());
    }
    request
}

/// Sends a prepared request; answers status, headers and body text.
pub async fn send(
    gw: &TestGateway,
    request: http::Request<Vec<u8>>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let request = reqwest::Request::try_from(request).unwrap();
    let response = gw.http.execute(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

pub fn host_of(base: &str) -> String {
    base.trim_start_matches("http://").to_owned()
}
