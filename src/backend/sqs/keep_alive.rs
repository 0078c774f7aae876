//! Asks the SQS endpoint to keep each connection open for the next call.
//!
//! HTTP/1.1 keeps connections alive unless a side says otherwise, and Amazon SQS does; but
//! LocalStack behind hypercorn answers every request with `Connection: close` unless the request
//! itself says `Connection: keep-alive` (its workaround for boto). Without the header every
//! backend call would open a TCP connection and pay LocalStack's accept and setup. The header is
//! added after signing: `Connection` is hop-by-hop, a proxy may drop it, and a signed header that
//! a proxy drops would break the signature. HTTP/2 connections drop it (hyper strips connection
//! headers there), which changes nothing: they are kept alive anyway.
//! Why: docs/decisions/2026-12-01-keep-alive-to-localstack.md.

use aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::error::BoxError;

/// Adds `Connection: keep-alive` to every request as it is sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskKeepAlive;

impl Intercept for AskKeepAlive {
    fn name(&self) -> &'static str {
        "AskKeepAlive"
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        context
            .request_mut()
            .headers_mut()
            .insert("connection", "keep-alive");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::backend::sqs::SqsBackend;
    use crate::core::backend::Backend;
    use aws_config::{BehaviorVersion, Region, SdkConfig};
    use aws_sdk_sqs::config::{Credentials, SharedCredentialsProvider};
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    const KEPT: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 2\r\n\r\n{}";
    const CLOSED: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}";

    /// Answers `ListQueues` as LocalStack behind hypercorn does: `Connection: close` (and a
    /// close) unless the request asks for keep-alive, and a kept connection closed after `idle`
    /// without a request. Hands back every request's head with the number of its connection.
    async fn localstack_like(idle: Duration) -> (String, mpsc::UnboundedReceiver<(usize, String)>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (heads, received) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            for connection in 0.. {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let heads = heads.clone();
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    while let Ok(Some(head)) =
                        tokio::time::timeout(idle, read_request(&mut stream)).await
                    {
                        let asked = head
                            .to_ascii_lowercase()
                            .contains("\r\nconnection: keep-alive\r\n");
                        let _ = heads.send((connection, head));
                        let answer = if asked { KEPT } else { CLOSED };
                        if stream.get_mut().write_all(answer).await.is_err() || !asked {
                            return;
                        }
                    }
                });
            }
        });
        (endpoint, received)
    }

    /// One request's head (its body read and dropped); `None` once the client closed.
    async fn read_request(stream: &mut BufReader<tokio::net::TcpStream>) -> Option<String> {
        let mut head = String::new();
        let mut content_length = 0;
        loop {
            let mut line = String::new();
            if stream.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                content_length = value.trim().parse().ok()?;
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; content_length];
        stream.read_exact(&mut body).await.ok()?;
        Some(head)
    }

    fn backend(endpoint: String) -> SqsBackend {
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST", "secret", None, None, "test",
            )))
            .build();
        SqsBackend::from_sdk_config(&sdk)
    }

    #[tokio::test]
    async fn every_call_asks_for_keep_alive_unsigned_and_keeps_its_connection() {
        let (endpoint, mut received) = localstack_like(Duration::from_secs(30)).await;
        let backend = backend(endpoint);
        for _ in 0..3 {
            backend.ping().await.unwrap();
        }
        let mut connections = Vec::new();
        for _ in 0..3 {
            let (connection, head) = received.recv().await.unwrap();
            let lower = head.to_ascii_lowercase();
            assert!(lower.contains("\r\nconnection: keep-alive\r\n"), "{head}");
            let signed = lower
                .split("signedheaders=")
                .nth(1)
                .and_then(|rest| rest.split(',').next())
                .expect("a SigV4 authorization header");
            assert!(!signed.contains("connection"), "signed: {signed}");
            connections.push(connection);
        }
        // Without the header the endpoint closes after each answer: three connections.
        assert_eq!(connections, vec![0, 0, 0], "one connection for every call");
    }

    #[tokio::test]
    async fn a_connection_the_endpoint_closed_while_idle_is_replaced_not_failed_on() {
        let (endpoint, mut received) = localstack_like(Duration::from_millis(200)).await;
        let backend = backend(endpoint);
        backend.ping().await.unwrap();
        backend.ping().await.unwrap();
        // The endpoint closes the kept connection after 200 ms without a request.
        tokio::time::sleep(Duration::from_millis(600)).await;
        backend.ping().await.unwrap();
        let mut connections = Vec::new();
        for _ in 0..3 {
            connections.push(received.recv().await.unwrap().0);
        }
        assert_eq!(
            connections,
            vec![0, 0, 1],
            "a new connection after the idle close"
        );
        assert!(received.try_recv().is_err(), "no call was retried");
    }
}
