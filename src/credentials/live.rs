//! A key set that a config reload replaces while the gateway serves (new and removed
//! keys take effect without a restart). A request takes the set that is current when it starts,
//! an `Arc` it keeps to its end, so one in flight never sees half of a reload; the next request
//! sees only the new set, so a key removed from the config is refused at once.

use std::sync::{Arc, PoisonError, RwLock};

/// A shared, swappable handle on a key set: clones share it, [`Live::replace`] swaps the set
/// whole for every holder. Reading costs an uncontended read lock and an `Arc` count (the lock is
/// held for no longer than that clone; a reload holds it for one pointer swap).
pub struct Live<T>(Arc<RwLock<Arc<T>>>);

impl<T> Live<T> {
    /// A handle on `set`.
    pub fn new(set: T) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(set))))
    }

    /// The set in use now (keep it for the whole request).
    pub fn current(&self) -> Arc<T> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `set` in place of the current one, for every holder of this handle.
    pub fn replace(&self, set: T) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(set);
    }
}

impl<T> Clone for Live<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: Default> Default for Live<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> std::fmt::Debug for Live<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_set_reaches_every_holder_and_a_taken_one_stays_whole() {
        let live = Live::new(vec![1, 2]);
        let holder = live.clone();
        let in_flight = holder.current();
        live.replace(vec![3]);
        assert_eq!(
            *holder.current(),
            vec![3],
            "the next request sees the new set"
        );
        assert_eq!(*in_flight, vec![1, 2], "a request in flight keeps its set");
    }
}
