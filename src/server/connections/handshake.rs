//! A connection's opening, before any request: with TLS, the handshake within the request-head
//! deadline, and ALPN picks the version; on plain HTTP the client's first bytes do (HTTP/2's
//! preface). Then the connection is served as HTTP/1.1 or HTTP/2.

use super::activity::Version;
use super::connection::Connection;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// What an HTTP/2 client sends first on plain HTTP, with prior knowledge (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl Connection {
    /// Serves the connection, after a TLS handshake when the listener has TLS.
    pub(super) async fn start(self, stream: TcpStream, tls: Option<TlsAcceptor>) {
        // Each transport's serving future is boxed on its own: a connection holds the one it
        // uses, not the size of the largest (TLS state, the rare answer-and-close path); idle
        // connections and long polls cost memory by the thousand.
        let Some(acceptor) = tls else {
            // Boxed too: freed once the version is known, not held for the connection's life.
            let version = tokio::select! {
                version = Box::pin(self.sniff(&stream)) => version,
                () = self.evicted() => None,
            };
            return match version {
                Some(Version::Http1) => Box::pin(self.run(stream)).await,
                Some(Version::Http2) => Box::pin(self.run_http2(stream)).await,
                None => {}
            };
        };
        // The TLS stream (rustls' state is kilobytes) is boxed, and so is the handshake: a plain
        // connection's future holds neither, a TLS one holds its stream once.
        let handshake = tokio::select! {
            stream = Box::pin(self.handshake(acceptor, stream)) => stream,
            () = self.evicted() => None,
        };
        let Some(stream) = handshake else {
            return;
        };
        let negotiated_h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        if negotiated_h2 && self.settings.http2_max_streams.is_some() {
            Box::pin(self.run_http2(stream)).await;
        } else {
            Box::pin(self.run(stream)).await;
        }
    }

    /// Resolves when the connection is to close, before its first request, to make room for
    /// another client's.
    async fn evicted(&self) {
        match &self.tenure {
            Some(tenure) => tenure.evicted().cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The TLS handshake, within the head deadline; `None` when it failed or came too late.
    async fn handshake(
        &self,
        acceptor: TlsAcceptor,
        stream: TcpStream,
    ) -> Option<Box<TlsStream<TcpStream>>> {
        match tokio::time::timeout(self.settings.header_timeout, acceptor.accept(stream)).await {
            Ok(Ok(stream)) => Some(Box::new(stream)),
            Ok(Err(error)) => {
                tracing::debug!(peer = %self.peer, %error, "TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(peer = %self.peer, "no TLS handshake in time");
                None
            }
        }
    }

    /// Which version a plain-HTTP client speaks, from its first bytes (peeked, left for hyper):
    /// HTTP/2's preface, or anything else (HTTP/1.1). `None` when the client sent nothing before
    /// the idle timeout, closed, or trickled a prefix of the preface past the head deadline.
    async fn sniff(&self, stream: &TcpStream) -> Option<Version> {
        if self.settings.http2_max_streams.is_none() {
            return Some(Version::Http1);
        }
        let mut first = [0u8; HTTP2_PREFACE.len()];
        let mut seen = tokio::select! {
            peeked = stream.peek(&mut first) => peeked.ok()?,
            () = tokio::time::sleep(self.settings.idle_timeout) => return None,
            () = self.shutdown.cancelled() => return None,
        };
        let deadline = Instant::now() + self.settings.header_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            if seen == 0 {
                return None;
            }
            if first[..seen] != HTTP2_PREFACE[..seen] {
                return Some(Version::Http1);
            }
            if seen == HTTP2_PREFACE.len() {
                return Some(Version::Http2);
            }
            // A prefix of the preface so far ("P" may yet be "POST"): look again shortly. A peek
            // would not wait for more bytes than it already sees.
            if Instant::now() + pause > deadline || self.shutdown.is_cancelled() {
                return None;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
            seen = stream.peek(&mut first).await.ok()?;
        }
    }
}
