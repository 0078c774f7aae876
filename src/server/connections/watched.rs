//! The byte stream as hyper reads and writes it: every byte that moves is reported to the
//! connection's activity, and an HTTP/1.1 request line too long to route is caught as it arrives,
//! so that it is answered 414 in its dialect's shape instead of by hyper.

use super::activity::Activity;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a connection's bytes travel over: TCP, or TLS over TCP.
pub(super) trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Transport for T {}

/// The longest request line (method, target, version) routed; longer ones get 414.
pub const MAX_REQUEST_LINE: usize = 16 * 1024;

/// The TCP stream as hyper sees it, reporting activity, and refusing a request line too long to
/// route (hyper would answer a bare 414 with an empty body).
pub(super) struct Watched<S> {
    pub(super) stream: S,
    activity: Arc<Activity>,
    /// Bytes of the current request line so far (its first bytes kept), while one is arriving.
    request_line: Option<(usize, Vec<u8>)>,
    /// Set when a request line exceeded [`MAX_REQUEST_LINE`]: its first bytes.
    pub(super) overlong_request_line: Option<Vec<u8>>,
}

impl<S> Watched<S> {
    pub(super) fn new(stream: S, activity: Arc<Activity>) -> Self {
        Self {
            stream,
            activity,
            request_line: None,
            overlong_request_line: None,
        }
    }

    /// Follows the request line through newly read bytes; `false` once it is too long.
    fn follow_request_line(&mut self, fresh: &[u8]) -> bool {
        if self.request_line.is_none() && self.activity.between_requests() {
            // Blank lines before a request are allowed (RFC 9112 §2.2): skip them.
            if fresh.iter().all(|b| matches!(b, b'\r' | b'\n')) {
                return true;
            }
            self.request_line = Some((0, Vec::new()));
        }
        let Some((length, start)) = self.request_line.as_mut() else {
            return true;
        };
        let fresh = if *length == 0 {
            let skipped = fresh
                .iter()
                .position(|b| !matches!(b, b'\r' | b'\n'))
                .unwrap_or(fresh.len());
            &fresh[skipped..]
        } else {
            fresh
        };
        if let Some(end) = fresh.iter().position(|&b| b == b'\n')
            && *length + end <= MAX_REQUEST_LINE
        {
            self.request_line = None;
            return true;
        }
        *length += fresh.len();
        let keep = 256usize.saturating_sub(start.len()).min(fresh.len());
        start.extend_from_slice(&fresh[..keep]);
        if *length > MAX_REQUEST_LINE {
            self.overlong_request_line = self.request_line.take().map(|(_, start)| start);
            return false;
        }
        true
    }
}

impl<S: Transport> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.overlong_request_line.is_some() {
            return Poll::Ready(Err(io::Error::other("request line too long")));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let fresh = &buf.filled()[before..];
            if !fresh.is_empty() {
                let within = this.follow_request_line(fresh);
                this.activity.read();
                if !within {
                    // hyper sees an error and lets go of the connection; `run` answers 414.
                    return Poll::Ready(Err(io::Error::other("request line too long")));
                }
            }
        }
        polled
    }
}

impl<S: Transport> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(written)) = polled
            && written > 0
        {
            this.activity.moved();
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(written)) = polled
            && written > 0
        {
            this.activity.moved();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
