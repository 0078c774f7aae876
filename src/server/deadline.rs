//! A request body with a deadline for the whole of it, so a client trickling its body a byte at a
//! time cannot hold a request open; dialects report the expiry as a timeout in their own shape.
//! An HTTP/1.1 body the router answered without reading (an early 401, 403 or 413) is read to its
//! end and discarded, within the same deadline and up to [`DISCARD_UP_TO`] bytes, before the
//! connection closes.

use crate::api::common::BodyTimedOut;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// Called once, when the body has been read to its end.
type OnEnd = Box<dyn FnOnce() + Send + Sync>;

/// The most of an unread HTTP/1.1 body the gateway reads and discards after answering: over twice
/// the largest body any dialect accepts. Closing a connection with request bytes unread makes the
/// kernel reset it, and a client still writing its body (most write the whole of it before they
/// read) can lose the answer to that reset; past this size the connection is closed.
pub(super) const DISCARD_UP_TO: u64 = 8 * 1024 * 1024;

/// An incoming body that fails with [`BodyTimedOut`] once its deadline passes.
pub(super) struct DeadlineBody {
    /// `None` once handed to the task that discards it.
    inner: Option<Incoming>,
    deadline: Pin<Box<Sleep>>,
    on_end: Option<OnEnd>,
    discard_unread: bool,
}

impl DeadlineBody {
    /// `inner`, which must arrive whole within `limit` from now. With `discard_unread` (HTTP/1.1),
    /// the body's unread rest is read and discarded once the body is dropped.
    pub(super) fn new(
        inner: Incoming,
        limit: Duration,
        discard_unread: bool,
        on_end: impl FnOnce() + Send + Sync + 'static,
    ) -> Self {
        let mut body = Self {
            inner: Some(inner),
            deadline: Box::pin(tokio::time::sleep(limit)),
            on_end: Some(Box::new(on_end)),
            discard_unread,
        };
        if body.is_end_stream() {
            body.ended();
        }
        body
    }

    fn ended(&mut self) {
        if let Some(on_end) = self.on_end.take() {
            on_end();
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(frame) = Pin::new(&mut *inner).poll_frame(cx) {
            if frame.is_none() || inner.is_end_stream() {
                this.ended();
            }
            return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Incoming::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Incoming::size_hint)
    }
}

impl Drop for DeadlineBody {
    fn drop(&mut self) {
        if !self.discard_unread || self.is_end_stream() {
            return;
        }
        if self.size_hint().lower() > DISCARD_UP_TO {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rest = DeadlineBody {
            inner: self.inner.take(),
            deadline: Box::pin(tokio::time::sleep_until(self.deadline.deadline())),
            on_end: self.on_end.take(),
            discard_unread: false,
        };
        runtime.spawn(async move {
            let mut discarded = 0u64;
            while let Some(Ok(frame)) = rest.frame().await {
                if let Some(data) = frame.data_ref() {
                    discarded += data.len() as u64;
                    if discarded > DISCARD_UP_TO {
                        break;
                    }
                }
            }
        });
    }
}
