//! A queue as the backend holds it: behind its own mutex, with the [`Notify`] that wakes its long
//! polls; and the lock helpers every path takes it with, which outlive a panic of another holder.

use super::engine::Queue;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::Notify;

/// One queue, and the waiters of its long polls.
pub(super) struct Slot {
    /// The queue.
    pub(super) queue: Mutex<Queue>,
    /// Woken when a message may have become available.
    pub(super) notify: Notify,
}

/// Every queue of the backend, by name.
pub(super) type Queues = HashMap<String, Arc<Slot>>;

/// A slot for `queue`, with nobody waiting.
pub(super) fn slot(queue: Queue) -> Slot {
    Slot {
        queue: Mutex::new(queue),
        notify: Notify::new(),
    }
}

/// Locks `mutex`, also after a panic of another holder.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Read-locks `lock`, also after a panic of a writer.
pub(super) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}
