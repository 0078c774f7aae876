//! A request body with a deadline for the whole of it, so a client trickling its body a byte at a
//! time cannot hold a request open; dialects report the expiry as a timeout in their own shape.

use crate::api::common::BodyTimedOut;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// Called once, when the body has been read to its end.
type OnEnd = Box<dyn FnOnce() + Send + Sync>;

/// An incoming body that fails with [`BodyTimedOut`] once its deadline passes.
pub(super) struct DeadlineBody {
    inner: Incoming,
    deadline: Pin<Box<Sleep>>,
    on_end: Option<OnEnd>,
}

impl DeadlineBody {
    /// `inner`, which must arrive whole within `limit` from now.
    pub(super) fn new(
        inner: Incoming,
        limit: Duration,
        on_end: impl FnOnce() + Send + Sync + 'static,
    ) -> Self {
        let mut body = Self {
            inner,
            deadline: Box::pin(tokio::time::sleep(limit)),
            on_end: Some(Box::new(on_end)),
        };
        if body.inner.is_end_stream() {
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
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            if frame.is_none() || this.inner.is_end_stream() {
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
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
