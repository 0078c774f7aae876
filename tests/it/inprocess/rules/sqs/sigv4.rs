//! SigV4, on a service that requires signatures (`InProcess::start_with`'s SQS endpoint allows
//! unsigned requests)

use super::*;
use crate::harness::{Signing, signed};

/// The service with `sqs_api.allow_unsigned` off and one access key, and its clock (requests are
/// signed at the gateway's time).
pub(super) async fn signed_only() -> (InProcess, Arc<TokioClock>) {
    let clock = Arc::new(TokioClock::at_start());
    let config = format!(
        "[sqs_api]\nregions = [\"us-west-2\"]\n[[sqs_api.credentials]]\naccess_key_id = \"{SQS_KEY_ID}\"\nsecret = \"{SQS_SECRET}\"\n"
    );
    let service = InProcess::over(&config, Arc::clone(&clock), String::new()).await;
    (service, clock)
}

/// How a test request is signed.
pub(super) struct Signer<'a> {
    pub(super) key_id: &'a str,
    pub(super) secret: &'a str,
    pub(super) region: &'a str,
    pub(super) at: SystemTime,
}

impl Signer<'_> {
    /// A JSON 1.0 request of `action` with `body`, signed by aws-sigv4 (the SDKs' signer).
    pub(super) fn sign(&self, action: &str, body: &[u8]) -> Request<Body> {
        let target = format!("AmazonSQS.{action}");
        let headers = [
            ("host", "gateway.test"),
            ("x-amz-target", target.as_str()),
            ("content-type", "application/x-amz-json-1.0"),
        ];
        let how = Signing {
            key_id: self.key_id,
            secret: self.secret,
            region: self.region,
            at: Some(self.at),
            ..Signing::default()
        };
        signed("POST", "http://gateway.test/", &headers, body, &how).map(Body::from)
    }
}

pub(super) fn now_of(clock: &TokioClock) -> SystemTime {
    SystemTime::from(clock.now())
}

/// With the body swapped for one that must not be read.
pub(super) fn with_body(request: Request<Body>, body: Body) -> Request<Body> {
    let (parts, _) = request.into_parts();
    Request::from_parts(parts, body)
}

/// Without a signature: 403 `MissingAuthenticationToken`, in either protocol, body unread.
#[tokio::test(start_paused = true)]
async fn sigv4_an_unsigned_request_is_refused_unread() {
    let (service, _clock) = signed_only().await;
    let tripwire = Tripwire::default();
    let json_answer = service
        .call(
            Request::builder()
                .method(Method::POST)
                .uri("/")
                .header("x-amz-target", "AmazonSQS.ListQueues")
                .header("content-type", "application/x-amz-json-1.0")
                .body(tripwire.body())
                .unwrap(),
        )
        .await;
    assert_eq!(json_answer.status, StatusCode::FORBIDDEN);
    assert_eq!(sqs_code(&json_answer), "MissingAuthenticationToken");
    assert_eq!(
        json_answer.header("x-amzn-query-error").as_deref(),
        Some("MissingAuthenticationToken;Sender")
    );
    assert!(!tripwire.was_read());
    let xml = query(&service, "Action=ListQueues").await;
    assert_eq!(xml.status, StatusCode::FORBIDDEN);
    assert_eq!(xml_code(&xml), "MissingAuthenticationToken");
}

/// The head's checks (key, scope, time) refuse before any body byte is read: an unknown key is
/// `InvalidClientTokenId`, a region not listed `SignatureDoesNotMatch` naming those that are, a time more than 15 minutes off
/// `RequestExpired`; a well-signed request is served.
#[tokio::test(start_paused = true)]
async fn sigv4_key_scope_and_time_are_checked_from_the_head() {
    let (service, clock) = signed_only().await;
    let now = now_of(&clock);
    let good = Signer {
        key_id: SQS_KEY_ID,
        secret: SQS_SECRET,
        region: "us-east-1",
        at: now,
    };
    for (signer, status, code) in [
        (
            Signer {
                key_id: "AKIDNOBODYKNOWS",
                ..good
            },
            StatusCode::FORBIDDEN,
            "InvalidClientTokenId",
        ),
        (
            Signer {
                region: "eu-west-1",
                ..good
            },
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
        ),
        (
            Signer {
                at: now - Duration::from_secs(16 * 60),
                ..good
            },
            StatusCode::BAD_REQUEST,
            "RequestExpired",
        ),
        (
            Signer {
                at: now + Duration::from_secs(16 * 60),
                ..good
            },
            StatusCode::BAD_REQUEST,
            "RequestExpired",
        ),
    ] {
        let tripwire = Tripwire::default();
        let request = with_body(signer.sign("ListQueues", b"{}"), tripwire.body());
        let refused = service.call(request).await;
        assert_eq!(refused.status, status, "{code}: {}", refused.text);
        assert_eq!(sqs_code(&refused), code);
        assert!(!tripwire.was_read(), "{code}: the body was read");
        if signer.region != good.region {
            assert!(
                refused
                    .text
                    .contains("this endpoint signs for 'us-east-1', 'us-west-2', not 'eu-west-1'"),
                "the refusal names the region to sign for: {}",
                refused.text
            );
        }
    }
    // The control: a head that checks out has its body read (and the signature checked on it).
    let tripwire = Tripwire::default();
    let read = service
        .call(with_body(good.sign("ListQueues", b"{}"), tripwire.body()))
        .await;
    assert_eq!(read.status, StatusCode::BAD_REQUEST, "{}", read.text);
    assert!(tripwire.was_read());
    // Within the window (14 minutes off) and in scope: served.
    let skewed = Signer {
        at: now - Duration::from_secs(14 * 60),
        ..good
    };
    let listed = service.call(skewed.sign("ListQueues", b"{}")).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    assert_eq!(listed.body["QueueUrls"].as_array().unwrap().len(), 1);
    // A listed region besides the home one: served, its queue URLs naming it.
    let west = Signer {
        region: "us-west-2",
        ..good
    };
    let listed = service.call(west.sign("ListQueues", b"{}")).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
    let url = listed.body["QueueUrls"][0].as_str().unwrap();
    assert!(url.contains("/queue/us-west-2/000000000000/"), "{url}");
}

/// A wrong secret, or a body other than the one signed, is `SignatureDoesNotMatch`, and the
/// request does nothing; the same request as signed is served.
#[tokio::test(start_paused = true)]
async fn sigv4_a_wrong_signature_or_an_altered_body_acts_on_nothing() {
    let (service, clock) = signed_only().await;
    let good = Signer {
        key_id: SQS_KEY_ID,
        secret: SQS_SECRET,
        region: "us-east-1",
        at: now_of(&clock),
    };
    let body = json!({ "QueueUrl": ORDERS_URL, "MessageBody": "signed" }).to_string();
    let wrong_secret = Signer {
        secret: "not-the-secret-of-this-key-at-all",
        ..good
    };
    let refused = service
        .call(wrong_secret.sign("SendMessage", body.as_bytes()))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(sqs_code(&refused), "SignatureDoesNotMatch");
    let altered_body = json!({ "QueueUrl": ORDERS_URL, "MessageBody": "forged" }).to_string();
    let swapped = with_body(
        good.sign("SendMessage", body.as_bytes()),
        Body::from(altered_body),
    );
    let refused = service.call(swapped).await;
    assert_eq!(sqs_code(&refused), "SignatureDoesNotMatch");
    assert_eq!(depth(&service).await.visible, 0, "nothing was sent");
    let sent = service
        .call(good.sign("SendMessage", body.as_bytes()))
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    assert_eq!(depth(&service).await.visible, 1);
}
