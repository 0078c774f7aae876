//! Asks the SQS endpoint to keep each connection open for the next call.
//!
//! HTTP/1.1 keeps connections alive unless a side says otherwise, and Amazon SQS does; but
//! LocalStack behind hypercorn answers every request with `Connection: close` unless the request
//! itself says `Connection: keep-alive` (its workaround for boto, localstack#6557). Without the
//! header every backend call opened a TCP connection and paid LocalStack's accept and setup: about
//! 1 ms a request on the development machines, measured with one Python client either way. The
//! header is added after signing: `Connection` is hop-by-hop, a proxy may drop it, and a signed
//! header that a proxy drops would break the signature. HTTP/2 connections drop it (hyper strips
//! connection headers there), which changes nothing: they are kept alive anyway.

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
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpListener;

    const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: 2\r\n\r\n{}";

    /// Serves canned `ListQueues` answers on one connection at a time, keeping each open, and
    /// hands back every request's head as received with the number of its connection.
    async fn recording_endpoint() -> (
        String,
        tokio::sync::mpsc::UnboundedReceiver<(usize, String)>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (heads, received) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            for connection in 0.. {
                let (stream, _) = listener.accept().await.unwrap();
                let heads = heads.clone();
                tokio::spawn(async move {
                    let mut stream = BufReader::new(stream);
                    loop {
                        let mut head = String::new();
                        let mut content_length = 0;
                        loop {
                            let mut line = String::new();
                            if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if let Some(value) =
                                line.to_ascii_lowercase().strip_prefix("content-length:")
                            {
                                content_length = value.trim().parse().unwrap();
                            }
                            let end = line == "\r\n";
                            head.push_str(&line);
                            if end {
                                break;
                            }
                        }
                        let mut body = vec![0; content_length];
                        stream.read_exact(&mut body).await.unwrap();
                        heads.send((connection, head)).unwrap();
                        stream.get_mut().write_all(ANSWER).await.unwrap();
                    }
                });
            }
        });
        (endpoint, received)
    }

    #[tokio::test]
    async fn every_call_asks_for_keep_alive_unsigned_and_reuses_its_connection() {
        let (endpoint, mut received) = recording_endpoint().await;
        let sdk = SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
                "AKIDTEST", "secret", None, None, "test",
            )))
            .build();
        let backend = SqsBackend::from_sdk_config(&sdk);
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
        assert_eq!(connections, vec![0, 0, 0], "one connection for every call");
    }
}
