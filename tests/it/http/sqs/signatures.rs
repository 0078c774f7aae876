//! SigV4 signatures on the SQS endpoint as an attacker meets them: a signed request cannot be
//! repurposed. A `+` in a signed query, a presigned URL and a header signature each mean only what
//! was signed.

use crate::harness::*;
use reqwest::StatusCode;
use std::time::Duration;

/// A `+` in a signed query means what the Query protocol reads: a space. A URL signed with `%2B`
/// (a plus) does not verify with `+` in its place, which the action would read as a space; a `+`
/// signed as a space verifies and sends a space.
#[tokio::test]
async fn a_plus_in_a_signed_query_means_what_was_signed() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let host = host_of(&gw.base);
    let queue_url = format!("{}/000000000000/orders", gw.base)
        .replace(':', "%3A")
        .replace('/', "%2F");
    let url = |body: &str| {
        format!(
            "{}/?Action=SendMessage&QueueUrl={queue_url}&MessageBody={body}&Version=2012-11-05",
            gw.base
        )
    };
    let presign = Signing {
        presigned: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let signed_plus = signed("POST", &url("pay%2B100"), &[("host", &host)], b"", &presign);
    let target = signed_plus.uri().to_string();
    assert!(target.contains("pay%2B100"), "{target}");
    let tampered = http::Request::builder()
        .method("POST")
        .uri(target.replace("pay%2B100", "pay+100"))
        .body(Vec::new())
        .unwrap();
    let (status, _, body) = send(&gw, tampered).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("<Code>SignatureDoesNotMatch</Code>"),
        "{body}"
    );
    assert_eq!(gw.backend_depth("orders").await, 0, "nothing was sent");

    let (status, _, body) = send(&gw, signed_plus).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let signed_space = signed("POST", &url("pay+100"), &[("host", &host)], b"", &presign);
    let (status, _, body) = send(&gw, signed_space).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (client, orders) = gw.sqs_queue("orders").await;
    let mut bodies = Vec::new();
    while bodies.len() < 2 {
        let received = client
            .receive_message()
            .queue_url(&orders)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        bodies.extend(received.messages().iter().filter_map(|m| m.body.clone()));
    }
    bodies.sort();
    assert_eq!(bodies, ["pay 100", "pay+100"]);
    gw.stop().await;
}

#[tokio::test]
async fn a_presigned_url_means_only_what_was_signed() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let host = host_of(&gw.base);
    let url = format!(
        "{}/?Action=GetQueueUrl&QueueName=orders&Version=2012-11-05",
        gw.base
    );
    let presign = Signing {
        presigned: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let presigned = signed("POST", &url, &[("host", &host)], b"", &presign);
    let target = presigned.uri().to_string();

    // As signed: no body. (botocore and aws-sigv4 both hash the empty payload.)
    let (status, _, body) = send(&gw, presigned).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        body.contains("<QueueUrl>") && body.contains("/000000000000/orders"),
        "{body}"
    );

    // The same URL with a form body of another action: the payload is not the one signed.
    let queue_url = format!("{}/000000000000/orders", gw.base);
    for form in [
        format!("Action=SendMessage&QueueUrl={queue_url}&MessageBody=smuggled"),
        format!("Action=DeleteQueue&QueueUrl={queue_url}"),
    ] {
        let request = http::Request::builder()
            .method("POST")
            .uri(&target)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.into_bytes())
            .unwrap();
        let (status, _, body) = send(&gw, request).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert!(
            body.contains("<Code>SignatureDoesNotMatch</Code>"),
            "{body}"
        );
    }
    assert_eq!(gw.backend_depth("orders").await, 0, "nothing was sent");

    // Or with an unsigned JSON action.
    let request = http::Request::builder()
        .method("POST")
        .uri(&target)
        .header("x-amz-target", "AmazonSQS.ListQueues")
        .header("content-type", "application/x-amz-json-1.0")
        .body(b"{}".to_vec())
        .unwrap();
    let (status, headers, body) = send(&gw, request).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(headers["x-amzn-query-error"], "IncompleteSignature;Sender");

    // A URL presigned over UNSIGNED-PAYLOAD (as S3 tools do) is not an SQS signature.
    let unsigned = Signing {
        unsigned_payload: true,
        ..presign
    };
    let mut request = signed("POST", &url, &[("host", &host)], b"", &unsigned);
    request.headers_mut().remove("x-amz-content-sha256");
    let (status, _, body) = send(&gw, request).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    gw.backend
        .resolve(&gw.backend_names["orders"])
        .await
        .expect("the queue is still there");
    gw.stop().await;
}

#[tokio::test]
async fn a_header_signature_covers_what_decides_the_meaning() {
    // The home region only: a signature for another region is one that does not match.
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nregions = []\n")
        .start()
        .await;
    let host = host_of(&gw.base);
    let url = format!("{}/", gw.base);
    let json = [
        ("host", host.as_str()),
        ("content-type", "application/x-amz-json-1.0"),
        ("x-amz-target", "AmazonSQS.ListQueues"),
    ];
    let good = signed("POST", &url, &json, b"{}", &Signing::default());
    let (status, _, body) = send(&gw, good).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let cases: [(Signing<'_>, StatusCode, &str); 4] = [
        (
            Signing {
                excluded: &["x-amz-target"],
                ..Default::default()
            },
            StatusCode::BAD_REQUEST,
            "IncompleteSignature",
        ),
        (
            Signing {
                excluded: &["content-type"],
                ..Default::default()
            },
            StatusCode::BAD_REQUEST,
            "IncompleteSignature",
        ),
        (
            Signing {
                region: "eu-west-1",
                ..Default::default()
            },
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
        ),
        (
            Signing {
                unsigned_payload: true,
                ..Default::default()
            },
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
        ),
    ];
    for (how, expected_status, code) in cases {
        let request = signed("POST", &url, &json, b"{}", &how);
        let (status, headers, body) = send(&gw, request).await;
        assert_eq!(status, expected_status, "{body}");
        assert_eq!(
            headers["x-amzn-query-error"],
            format!("{code};Sender"),
            "{body}"
        );
    }

    // The form encoding may go unsigned (curl --aws-sigv4 -d adds it so): the payload hash
    // covers the form.
    let form = b"Action=ListQueues&Version=2012-11-05";
    let mut request = signed("POST", &url, &[("host", &host)], form, &Signing::default());
    request.headers_mut().insert(
        "content-type",
        "application/x-www-form-urlencoded".parse().unwrap(),
    );
    let (status, _, body) = send(&gw, request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("<ListQueuesResponse"), "{body}");
    gw.stop().await;
}
