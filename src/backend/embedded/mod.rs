//! The embedded backend: SQS semantics in-process, durable in a redb file; needs nothing installed.
//!
//! Each queue is an [`engine::Queue`] behind its own mutex, with a [`Notify`](tokio::sync::Notify)
//! that wakes long polls the moment a message may have become available (a send, a release, a
//! deleted FIFO message that unblocks its group); a waiting receive otherwise sleeps exactly until
//! the next hidden message's visibility time, so nothing polls on a timer. A change wakes one waiter, and every receive that
//! takes messages wakes the next: ten thousand idle polls cost one wake per send, not ten thousand.
//!
//! Memory holds each message's state and place; its body only while it fits the shared
//! [`engine::BodyCache`] or is not on disk yet. Other bodies are read from the store (off the
//! async workers) when a receive, a peek or a redrive needs them.
//!
//! Mutations are journaled to the [`store::Store`] while the queue's lock is held (so the disk sees
//! them in order). Sends, deletes, visibility changes and queue changes are answered after their
//! commit; a receive is answered at once (its loss in a crash only makes its messages visible
//! again, and the queue's next answered write commits after it).

mod backend;
mod config;
mod convert;
mod durable;
pub mod engine;
mod moving;
mod port;
mod records;
mod redrive;
mod redrive_tasks;
mod slot;
pub mod store;

pub use backend::EmbeddedBackend;
pub use config::EmbeddedConfig;
pub use convert::URL_PREFIX;
