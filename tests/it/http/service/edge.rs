//! The edge as an attacker meets it: bodies refused before they are read, connections that cannot
//! be held idle or trickled, and every answer in its dialect's shape. (Signed requests that cannot
//! be repurposed are the SQS endpoint's: `http/sqs/signatures.rs`.)

use crate::harness::*;
use reqwest::StatusCode;
use std::time::Duration;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Writes a request head (no body yet) on a fresh connection and reads what comes back within
/// `wait`; `None` if nothing did.
async fn answer_to_head(base: &str, head: &str, wait: Duration) -> Option<String> {
    let mut stream = TcpStream::connect(host_of(base)).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    answer.extend_from_slice(&buffer[..n]);
                    if answer.windows(4).any(|w| w == b"\r\n\r\n") {
                        // The head is in; give a short body a moment to follow.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        if let Ok(n) = stream.try_read(&mut buffer) {
                            answer.extend_from_slice(&buffer[..n]);
                        }
                        break;
                    }
                }
            }
        }
    };
    let _ = tokio::time::timeout(wait, read).await;
    (!answer.is_empty()).then(|| String::from_utf8_lossy(&answer).into_owned())
}

/// The head of an SQS JSON request for `target` signed with the test's key, announcing a body of
/// `length` bytes (the signature covers `{}`; the tests send another body or none).
fn signed_sqs_head(base: &str, target: &str, length: usize) -> String {
    let host = host_of(base);
    let json = [
        ("host", host.as_str()),
        ("content-type", "application/x-amz-json-1.0"),
        ("x-amz-target", target),
    ];
    let request = signed(
        "POST",
        &format!("{base}/"),
        &json,
        b"{}",
        &Signing::default(),
    );
    let mut head = format!("POST / HTTP/1.1\r\ncontent-length: {length}\r\n");
    for (name, value) in request.headers() {
        head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
    }
    head.push_str("\r\n");
    head
}

#[tokio::test]
async fn bodies_are_refused_from_the_head_before_they_are_read() {
    // The home region only: a head signed for another is refused.
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[sqs_api]\nregions = []\n")
        .start()
        .await;
    let host = host_of(&gw.base);
    // 12 MiB announced, none sent: each refusal comes from the head alone.
    let unsigned = format!(
        "POST / HTTP/1.1\r\nhost: {host}\r\nx-amz-target: AmazonSQS.SendMessage\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 12582912\r\n\r\n"
    );
    let answer = answer_to_head(&gw.base, &unsigned, Duration::from_secs(3))
        .await
        .expect("refused without waiting for the body");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("MissingAuthenticationToken"), "{answer}");

    // A head signed with a key the gateway does not know, or for another region.
    let date = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for (credential, code) in [
        (
            format!("AKIDNOBODY/{}/us-east-1/sqs/aws4_request", &date[..8]),
            "InvalidClientTokenId",
        ),
        (
            format!("{SQS_KEY_ID}/{}/eu-west-1/sqs/aws4_request", &date[..8]),
            "SignatureDoesNotMatch",
        ),
    ] {
        let head = format!(
            "POST / HTTP/1.1\r\nhost: {host}\r\nx-amz-date: {date}\r\nx-amz-target: AmazonSQS.SendMessage\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 12582912\r\nauthorization: AWS4-HMAC-SHA256 Credential={credential}, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature={}\r\n\r\n",
            "0".repeat(64)
        );
        let answer = answer_to_head(&gw.base, &head, Duration::from_secs(3))
            .await
            .expect("refused without waiting for the body");
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains(code), "{answer}");
    }

    // A valid key's request declaring more than the SQS endpoint ever needs: 413 at once.
    let head = signed_sqs_head(&gw.base, "AmazonSQS.SendMessage", 4 * 1024 * 1024);
    let answer = answer_to_head(&gw.base, &head, Duration::from_secs(3))
        .await
        .expect("refused from the declared length");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("RequestEntityTooLarge"), "{answer}");
    gw.stop().await;
}

/// A client that writes its whole body before it reads (as most do) still reads the early 413:
/// the gateway reads and discards the body it refused instead of closing on it, which would reset
/// the connection and could drop the answer unread.
#[tokio::test]
async fn a_body_refused_from_its_head_is_read_to_its_end_so_the_client_reads_the_refusal() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let length = 4 * 1024 * 1024;
    let head = signed_sqs_head(&gw.base, "AmazonSQS.SendMessage", length);
    for _ in 0..2 {
        let mut stream = TcpStream::connect(host_of(&gw.base)).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        let body = vec![b'a'; length];
        stream.write_all(&body[..64 * 1024]).await.unwrap();
        // The answer is out by now; a gateway that closed on the unread body has reset the
        // connection, and the rest of the body fails to go.
        tokio::time::sleep(Duration::from_millis(300)).await;
        stream
            .write_all(&body[64 * 1024..])
            .await
            .expect("the rest of the refused body is read");
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
                .await
                .expect("answered")
                .expect("the answer is read, not reset");
            assert!(n > 0, "closed before the answer");
            answer.extend_from_slice(&buffer[..n]);
        }
        let answer = String::from_utf8_lossy(&answer).to_lowercase();
        assert!(answer.starts_with("http/1.1 413"), "{answer}");
        // Not kept alive (a next request right behind the body would escape the request-line
        // limit), and closed cleanly once the body is read: no reset.
        assert!(answer.contains("connection: close"), "{answer}");
        let closed = async {
            loop {
                match stream.read(&mut buffer).await {
                    Ok(0) => return Ok(()),
                    Ok(_) => continue,
                    Err(error) => return Err(error),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), closed)
            .await
            .expect("closed once the body is read")
            .expect("closed, not reset");
    }
    gw.stop().await;
}

/// Whether the server closes `stream` within `wait` (reading nothing but the close).
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> bool {
    let mut buffer = [0u8; 1024];
    matches!(
        tokio::time::timeout(wait, stream.read(&mut buffer)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn idle_and_slow_connections_are_closed_but_a_long_poll_is_not_idle() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nheader_timeout_seconds = 1\nidle_timeout_seconds = 2\nbody_timeout_seconds = 1\n")
        .start()
        .await;
    let host = host_of(&gw.base);
    // A connection that never sends a byte is closed after the idle timeout.
    let mut silent = TcpStream::connect(&host).await.unwrap();
    assert!(!closed_within(&mut silent, Duration::from_millis(1500)).await);
    assert!(
        closed_within(&mut silent, Duration::from_secs(2)).await,
        "idle connections close"
    );

    // A head trickled a byte at a time is cut off after the header timeout.
    let mut trickle = TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "GET /healthz HTTP/1.1\r\nhost: {host}\r\nx-padding: {}\r\n\r\n",
        "a".repeat(100)
    );
    let started = std::time::Instant::now();
    let mut cut = false;
    for byte in head.bytes() {
        if trickle.write_all(&[byte]).await.is_err() {
            cut = true;
            break;
        }
        if closed_within(&mut trickle, Duration::from_millis(100)).await {
            cut = true;
            break;
        }
    }
    assert!(cut, "a trickled head is cut off");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    // A kept-alive connection between requests is idle too.
    let mut kept = TcpStream::connect(&host).await.unwrap();
    kept.write_all(format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut buffer = [0u8; 1024];
    let n = kept.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
    assert!(closed_within(&mut kept, Duration::from_secs(4)).await);

    // A long poll longer than the idle timeout is answered, not cut; then the connection is idle.
    let mut polling = TcpStream::connect(&host).await.unwrap();
    let body = r#"{"waitSeconds": 3}"#;
    polling
        .write_all(
            format!(
                "POST /v1/organizations/{ORG}/projects/{PROJECT}/queues/orders/messages/receive HTTP/1.1\r\nhost: {host}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                gw.key,
                body.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let n = polling.read(&mut buffer).await.unwrap();
    let answer = String::from_utf8_lossy(&buffer[..n]).into_owned();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"{"messages":[]}"#), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(2900),
        "it waited its 3 s"
    );
    assert!(!closed_within(&mut polling, Duration::from_millis(1500)).await);
    assert!(
        closed_within(&mut polling, Duration::from_secs(2)).await,
        "idle after the long poll's answer"
    );

    // A body trickled past its deadline gets 408 in the dialect's shape.
    for (path, headers, expect) in [
        (
            "/v1/receipts/ack",
            "content-type: application/json\r\n",
            "\"request_timeout\"",
        ),
        (
            "/",
            "content-type: application/x-www-form-urlencoded\r\n",
            "<Code>RequestTimeout</Code>",
        ),
    ] {
        let mut slow = TcpStream::connect(&host).await.unwrap();
        slow.write_all(
            format!(
                "POST {path} HTTP/1.1\r\nhost: {host}\r\n{headers}content-length: 100\r\n\r\n{{"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(4), slow.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer);
        if path == "/" {
            // SQS reads no body before a signature: unsigned, it is refused at once.
            assert!(answer.contains("MissingAuthenticationToken"), "{answer}");
        } else {
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            assert!(answer.contains(expect), "{answer}");
        }
    }
    gw.stop().await;
}

#[tokio::test]
async fn a_slow_sqs_body_gets_a_timeout_in_the_sqs_shape() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nbody_timeout_seconds = 1\n")
        .start()
        .await;
    let mut head = signed_sqs_head(&gw.base, "AmazonSQS.ListQueues", 2);
    head.push('{');
    let answer = answer_to_head(&gw.base, &head, Duration::from_secs(4))
        .await
        .expect("answered when the body deadline passes");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("RequestTimeout"), "{answer}");
    assert!(answer.contains("application/x-amz-json-1.0"), "{answer}");
    gw.stop().await;
}

#[tokio::test]
async fn over_the_connection_limit_the_answer_is_a_clear_503() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nmax_connections = 3\nidle_timeout_seconds = 2\n")
        .start()
        .await;
    let host = host_of(&gw.base);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(&host).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for (path, expect) in [
        ("/healthz", "\"unavailable\""),
        ("/v1/receipts/ack", "\"unavailable\""),
        ("/", "<Code>ServiceUnavailable</Code>"),
    ] {
        let answer = answer_to_head(
            &gw.base,
            &format!("POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\n\r\n"),
            Duration::from_secs(3),
        )
        .await
        .expect("an answer, not a hang");
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("retry-after: 1"),
            "{answer}"
        );
        assert!(answer.contains(expect), "{answer}");
    }
    // Once the idle connections are closed, there is room again.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let health = gw
        .http
        .get(format!("{}/healthz", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    drop(held);
    gw.stop().await;
}

/// A connection to the gateway from `source` (another loopback address, as another client).
async fn connect_from(source: &str, base: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let target = host_of(base).parse().unwrap();
    socket.connect(target).await.unwrap()
}

#[tokio::test]
async fn one_address_holding_idle_connections_leaves_room_for_the_others() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nmax_connections = 6\n")
        .start()
        .await;
    // One address opens every slot there is and sends nothing.
    let mut held = Vec::new();
    for _ in 0..6 {
        held.push(connect_from("127.0.0.1", &gw.base).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Another client still gets in: the first holds at most half (3) of the slots.
    let mut other = connect_from("127.0.0.2", &gw.base).await;
    let host = host_of(&gw.base);
    other
        .write_all(
            format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), other.read_to_string(&mut answer))
        .await
        .expect("answered")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // The address over its share is answered 503 on its next connection.
    let refused = answer_to_head(
        &gw.base,
        &format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\n\r\n"),
        Duration::from_secs(3),
    )
    .await
    .expect("an answer");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    drop(held);
    gw.stop().await;
}

/// Two addresses holding every slot between them (each its default share, half) leave room for
/// a third: its connection evicts the oldest idle connection of the address holding the most,
/// over HTTP/1.1 and HTTP/2.
#[tokio::test]
async fn addresses_holding_every_slot_make_room_for_another() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nmax_connections = 8\n")
        .start()
        .await;
    let host = host_of(&gw.base);
    // 127.0.0.1 and 127.0.0.2 each open their share (4) and send nothing.
    let mut first = Vec::new();
    let mut second = Vec::new();
    for _ in 0..4 {
        first.push(connect_from("127.0.0.1", &gw.base).await);
        second.push(connect_from("127.0.0.2", &gw.base).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A third address, a fourth over HTTP/2 and a fifth are answered, each keeping its
    // connection open.
    let mut kept_h1 = Vec::new();
    let mut kept_h2 = Vec::new();
    for (source, http2) in [
        ("127.0.0.3", false),
        ("127.0.0.4", true),
        ("127.0.0.5", false),
    ] {
        let mut other = connect_from(source, &gw.base).await;
        if http2 {
            let (mut sender, connection) = h2::client::handshake(other)
                .await
                .expect("an HTTP/2 connection");
            tokio::spawn(connection);
            let request = http::Request::get(format!("{}/healthz", gw.base))
                .body(())
                .unwrap();
            let (answer, _) = sender.send_request(request, true).unwrap();
            let answer = tokio::time::timeout(Duration::from_secs(5), answer)
                .await
                .expect("answered")
                .unwrap();
            assert_eq!(answer.status(), StatusCode::OK, "{source}");
            kept_h2.push(sender);
            continue;
        }
        other
            .write_all(format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut answer = vec![0u8; 4096];
        let read = tokio::time::timeout(Duration::from_secs(5), other.read(&mut answer))
            .await
            .expect("answered")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{source}: {answer}");
        kept_h1.push(other);
    }
    // Each newcomer closed one idle connection of the address then holding the most: three in
    // all, oldest first within an address.
    let mut closed = 0;
    for stream in first.iter_mut().chain(second.iter_mut()) {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(200), stream.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert_eq!(closed, 3, "one evicted per newcomer");
    drop((first, second, kept_h1, kept_h2));
    gw.stop().await;
}

#[tokio::test]
async fn answers_at_the_edge_keep_their_dialect_shape() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    // A path segment that is not UTF-8.
    let answer = gw
        .post_raw(
            &format!(
                "{}/v1/organizations/%FF/projects/{PROJECT}/queues/orders/messages/receive",
                gw.base
            ),
            Some(&gw.key),
            "{}",
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.body["error"], "invalid_request");

    // Request lines too long to route, in each dialect: JSON for ezgh, XML for SQS.
    let host = host_of(&gw.base);
    for (length, path, expect) in [
        (100_000, "/v1/receipts/ack?x=", "\"error\":\"uri_too_long\""),
        (20_000, "/v1/receipts/ack?x=", "\"error\":\"uri_too_long\""),
        (
            100_000,
            "/000000000000/orders?x=",
            "<Code>RequestURITooLong</Code>",
        ),
    ] {
        let head = format!(
            "POST {path}{} HTTP/1.1\r\nhost: {host}\r\ncontent-length: 0\r\n\r\n",
            "a".repeat(length)
        );
        let answer = answer_to_head(&gw.base, &head, Duration::from_secs(3))
            .await
            .expect("answered");
        assert!(answer.starts_with("HTTP/1.1 414"), "{answer}");
        assert!(answer.contains(expect), "{answer}");
    }

    // A method the SQS endpoint does not serve: SQS's shape.
    let answer = gw.http.put(format!("{}/", gw.base)).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert!(
        answer
            .text()
            .await
            .unwrap()
            .contains("<Code>InvalidAction</Code>")
    );
    let answer = gw
        .http
        .get(format!("{}/v1/receipts/ack", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::METHOD_NOT_ALLOWED);
    let body: serde_json::Value = answer.json().await.unwrap();
    assert_eq!(body["error"], "method_not_allowed");
    gw.stop().await;
}

/// Refused connections come at whatever rate a client opens them, before any credential: their
/// warnings are throttled (one per 10 s, with how many were refused), not one line each.
#[tokio::test]
async fn refused_connections_are_logged_once_in_a_while_with_their_count() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .config("[server]\nmax_connections = 7\nmax_connections_per_address = 8\n")
        .start()
        .await;
    let mut held = Vec::new();
    for _ in 0..7 {
        held.push(connect_from("127.0.0.1", &gw.base).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let host = host_of(&gw.base);
    for _ in 0..50 {
        let refused = answer_to_head(
            &gw.base,
            &format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\n\r\n"),
            Duration::from_secs(3),
        )
        .await
        .expect("an answer");
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    }
    // Every line this gateway's refusals wrote (its limits are 7 and 7 a client address).
    let logs = captured_logs();
    let refusals = logs
        .lines()
        .filter(|line| {
            line.contains("WARN")
                && (line.contains("max_connections=7")
                    || line.contains("max_connections_per_address=7"))
        })
        .count();
    assert_eq!(refusals, 1, "50 refusals within 10 s log one line:\n{logs}");
    let answers = logs
        .lines()
        .filter(|line| {
            line.contains("WARN") && line.contains("as many connections open as it allows")
        })
        .count();
    assert!(
        answers <= 1,
        "their 503 answers log at most one line:\n{logs}"
    );
    drop(held);
    gw.stop().await;
}
