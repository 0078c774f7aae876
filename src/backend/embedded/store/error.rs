//! The store's one error: it could not be opened, read or written.

/// The store could not be opened, read or written.
#[derive(Debug, thiserror::Error)]
#[error("embedded store: {0}")]
pub struct StoreError(pub(super) String);

impl StoreError {
    /// The error `error` is, as the store answers it.
    pub(super) fn from<E: std::fmt::Display>(error: E) -> Self {
        Self(error.to_string())
    }
}
