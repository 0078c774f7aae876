//! Reading a request body under its size limit and the server's body deadline, in the core's
//! error terms.

use crate::core::{ErrorKind, GatewayError};
use axum::body::{Body, Bytes, HttpBody as _};

/// A request body did not arrive whole before its deadline (the server sets one on every body).
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimedOut;

/// Bodies up to this size are copied out of the connection's read buffer (see [`read_body`]).
const OWN_COPY_UP_TO: usize = 16 * 1024;

/// Reads a request body up to `limit` bytes. A body that declares a larger length is refused
/// before any of it is read; one that turns out larger is refused as soon as it passes the limit.
///
/// A small body that arrived with its request's head is a slice of the connection's read buffer
/// (8 KiB); it is answered as a copy of its own, so a request that then waits (a 20 s long poll)
/// does not keep that buffer alive.
pub async fn read_body(body: Body, limit: usize) -> Result<Bytes, GatewayError> {
    let bytes = read_shared_body(body, limit).await?;
    Ok(if bytes.len() <= OWN_COPY_UP_TO && !bytes.is_unique() {
        Bytes::copy_from_slice(&bytes)
    } else {
        bytes
    })
}

async fn read_shared_body(body: Body, limit: usize) -> Result<Bytes, GatewayError> {
    let too_large = || {
        GatewayError::new(
            ErrorKind::PayloadTooLarge,
            format!("the request body is larger than {limit} bytes"),
        )
    };
    if body.size_hint().lower() > limit as u64 {
        return Err(too_large());
    }
    axum::body::to_bytes(body, limit).await.map_err(|error| {
        if caused_by::<BodyTimedOut>(&error) {
            GatewayError::new(
                ErrorKind::RequestTimeout,
                "the request body did not arrive in time",
            )
        } else if caused_by::<http_body_util::LengthLimitError>(&error) {
            too_large()
        } else {
            GatewayError::invalid_request("the request body was cut short")
                .with_source(error.to_string())
        }
    })
}

/// Whether `error` or anything in its chain of sources is a `T`.
fn caused_by<T: std::error::Error + 'static>(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<T>() {
            return true;
        }
        current = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_bodies_do_not_keep_the_read_buffer_alive() {
        // As hyper hands a body that arrived with its head: a slice of the connection's buffer.
        let read_buffer = Bytes::from(vec![b'x'; 8192]);
        let small = read_buffer.slice(100..400);
        let read = read_body(Body::from(small), 1024).await.unwrap();
        assert_eq!(read.len(), 300);
        assert!(read.is_unique(), "a small body shares the read buffer");

        let large = Bytes::from(vec![b'y'; 2 * OWN_COPY_UP_TO]);
        let shared = large.clone();
        let read = read_body(Body::from(large), 4 * OWN_COPY_UP_TO)
            .await
            .unwrap();
        assert_eq!(read.as_ptr(), shared.as_ptr(), "a large body is not copied");
    }
}
