//! HTTP/2 as clients speak it: with prior knowledge on plain HTTP (h2c), many requests sharing a
//! connection, and the same limits as HTTP/1.1 (idle connections closed, a long poll not idle,
//! request targets too long to route, the host a signature covers).

use crate::harness::*;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// An embedded gateway with the queue `orders`, and `config` (TOML) added to its config.
async fn orders_gateway(config: &str) -> TestGateway {
    GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config(config)
        .start()
        .await
}

/// A client that speaks only HTTP/2, without negotiating (h2c with prior knowledge).
fn h2c_client() -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// `count` ezgh receives of `orders` waiting up to `wait_seconds`, sent together on one HTTP/2
/// connection (reqwest keeps one per host for HTTP/2).
fn open_polls(
    gw: &TestGateway,
    count: usize,
    wait_seconds: u32,
) -> tokio::task::JoinSet<reqwest::Result<reqwest::Response>> {
    let h2 = h2c_client();
    let mut polls = tokio::task::JoinSet::new();
    for _ in 0..count {
        let request = h2
            .post(gw.receive_url("orders"))
            .bearer_auth(&gw.key)
            .json(&json!({ "waitSeconds": wait_seconds }));
        polls.spawn(async move { request.send().await });
    }
    polls
}

/// An HTTP/2 connection of the `h2` crate (every header under the test's control) and the task
/// driving it, which ends when the server closes the connection.
async fn h2_connection(
    base: &str,
) -> (
    h2::client::SendRequest<bytes::Bytes>,
    tokio::task::JoinHandle<Result<(), h2::Error>>,
) {
    let tcp = TcpStream::connect(host_of(base)).await.unwrap();
    let (send, connection) = h2::client::handshake(tcp).await.unwrap();
    (send, tokio::spawn(connection))
}

/// Sends `request` (no body) on `send` and returns its status and body.
async fn h2_exchange(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    request: http::Request<()>,
) -> (StatusCode, String) {
    let (response, _) = send.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    let status = StatusCode::from_u16(response.status().as_u16()).unwrap();
    let mut body = response.into_body();
    let mut text = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        text.extend_from_slice(&chunk);
    }
    (status, String::from_utf8_lossy(&text).into_owned())
}

#[tokio::test]
async fn ezgh_and_the_sqs_endpoint_answer_over_h2c() {
    let gw = orders_gateway("").await;
    gw.send("orders", "over h2").await;
    let h2 = h2c_client();

    let answer = h2
        .post(gw.receive_url("orders"))
        .bearer_auth(&gw.key)
        .json(&json!({"maxMessages": 10}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.version(), reqwest::Version::HTTP_2);
    let answer = crate::harness::answer(answer).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let messages = answer.body["messages"].as_array().unwrap().clone();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["body"], "over h2");

    let acked = h2
        .post(format!("{}/v1/receipts/ack", gw.base))
        .bearer_auth(&gw.key)
        .json(&json!({"receiptHandles": [handle_of(&messages[0])]}))
        .send()
        .await
        .unwrap();
    let acked = crate::harness::answer(acked).await;
    assert_eq!(acked.status, StatusCode::OK, "{}", acked.body);
    assert_eq!(gw.backend_depth("orders").await, 0);

    // SigV4 over HTTP/2: the client signs `host` as the URL's authority and sends it as
    // `:authority` (no Host header); queue URLs are built from it as from Host.
    let host = host_of(&gw.base);
    let url = format!("{}/", gw.base);
    let body = br#"{"QueueName":"orders"}"#;
    let signed_request = signed(
        "POST",
        &url,
        &[
            ("host", host.as_str()),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "AmazonSQS.GetQueueUrl"),
        ],
        body,
        &Signing::default(),
    );
    let mut request = h2.post(&url).body(body.to_vec());
    for (name, value) in signed_request.headers() {
        if name != "host" {
            request = request.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = request.send().await.unwrap();
    assert_eq!(answer.version(), reqwest::Version::HTTP_2);
    let status = answer.status();
    let text = answer.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        text.contains(&format!("http://{host}/")),
        "the queue URL names the authority: {text}"
    );

    // The same signature sent with a Host that names another authority is malformed.
    let (mut send, _driver) = h2_connection(&gw.base).await;
    let mut request = http::Request::post(format!("{}/healthz", gw.base));
    request = request.header("host", "elsewhere.example");
    let (status, text) = h2_exchange(&mut send, request.body(()).unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(text.contains("invalid_request"), "{text}");
    gw.stop().await;
}

#[tokio::test]
async fn long_polls_share_a_connection_up_to_its_stream_limit() {
    let gw = orders_gateway("[server]\nhttp2_max_streams = 40\n").await;
    let (mut send, _driver) = h2_connection(&gw.base).await;
    let health = http::Request::get(format!("{}/healthz", gw.base))
        .body(())
        .unwrap();
    // The server's settings have arrived once it answered.
    assert_eq!(h2_exchange(&mut send, health).await.0, StatusCode::OK);
    assert_eq!(
        send.current_max_send_streams(),
        40,
        "the configured limit is announced"
    );

    // One client connection holds 30 polls at once.
    let mut polls = open_polls(&gw, 30, 3);
    wait_for(&gw, "sqsgw_long_polls_waiting", 30.0).await;
    // A message sent meanwhile goes to one of them; the others answer empty.
    gw.send("orders", "for one poll").await;
    let mut delivered = 0;
    while let Some(answer) = polls.join_next().await {
        let answer = answer.unwrap().unwrap();
        assert_eq!(answer.version(), reqwest::Version::HTTP_2);
        let answer = crate::harness::answer(answer).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        delivered += answer.body["messages"].as_array().unwrap().len();
    }
    assert_eq!(delivered, 1);
    gw.stop().await;
}

#[tokio::test]
async fn idle_http2_connections_close_but_a_long_poll_is_not_idle() {
    let gw = orders_gateway("[server]\nidle_timeout_seconds = 1\n").await;
    // A connection with no request is closed (GOAWAY, then the socket) after the idle timeout.
    let (_send, driver) = h2_connection(&gw.base).await;
    let closed = tokio::time::timeout(Duration::from_secs(5), driver).await;
    assert!(closed.is_ok(), "an idle HTTP/2 connection is closed");

    // A 2 s long poll outlives the 1 s idle timeout; then the connection goes idle and closes.
    let (send, driver) = h2_connection(&gw.base).await;
    let mut send = send.ready().await.unwrap();
    let body = br#"{"waitSeconds": 2}"#;
    let request = http::Request::post(gw.receive_url("orders"))
        .header("authorization", format!("Bearer {}", gw.key))
        .header("content-type", "application/json")
        .header("content-length", body.len())
        .body(())
        .unwrap();
    let (response, mut stream) = send.send_request(request, false).unwrap();
    stream
        .send_data(bytes::Bytes::from_static(body), true)
        .unwrap();
    let started = std::time::Instant::now();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "it waited its 2 s"
    );
    let closed = tokio::time::timeout(Duration::from_secs(5), driver).await;
    assert!(closed.is_ok(), "idle after the long poll's answer");
    gw.stop().await;
}

#[tokio::test]
async fn over_http2_a_target_too_long_gets_414_in_its_dialects_shape() {
    let gw = orders_gateway("").await;
    let h2 = h2c_client();
    for (path, expect) in [
        ("/v1/receipts/ack?x=", "\"error\":\"uri_too_long\""),
        ("/000000000000/orders?x=", "<Code>RequestURITooLong</Code>"),
    ] {
        let answer = h2
            .post(format!("{}{path}{}", gw.base, "a".repeat(20_000)))
            .body("")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::URI_TOO_LONG);
        let text = answer.text().await.unwrap();
        assert!(text.contains(expect), "{text}");
    }
    gw.stop().await;
}

#[tokio::test]
async fn http1_clients_are_unaffected_and_http2_can_be_turned_off() {
    let gw = orders_gateway("").await;
    // A first byte that might begin the HTTP/2 preface ("P"), then the rest of an HTTP/1.1 head:
    // served as HTTP/1.1.
    let host = host_of(&gw.base);
    let mut stream = TcpStream::connect(&host).await.unwrap();
    stream.write_all(b"P").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream
        .write_all(
            format!("UT /healthz HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    gw.stop().await;

    let gw = orders_gateway("[server]\nhttp2 = false\n").await;
    let refused = h2c_client()
        .get(format!("{}/healthz", gw.base))
        .send()
        .await;
    assert!(refused.is_err(), "no HTTP/2 when turned off");
    let health = gw
        .http
        .get(format!("{}/healthz", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    assert_eq!(health.version(), reqwest::Version::HTTP_11);
    gw.stop().await;
}

#[tokio::test]
async fn a_shutdown_answers_http2_long_polls_and_closes_their_connections() {
    let gw = orders_gateway("").await;
    let mut polls = open_polls(&gw, 5, 20);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), gw.stop())
        .await
        .expect("the server stops with HTTP/2 polls open");
    while let Some(answer) = polls.join_next().await {
        let answer = crate::harness::answer(answer.unwrap().unwrap()).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body, json!({"messages": []}));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the 20 s polls were answered at the shutdown, not at their end"
    );
}
