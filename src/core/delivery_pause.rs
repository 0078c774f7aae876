//! Queues whose delivery an operator paused, as this process knows them: while a queue is
//! paused, every dialect's receive and every push subscription of it gets no message, and sends
//! go on. The pauses are kept by the admin port's store (with the push subscriptions made at run
//! time: shared by replicas, kept across restarts); this board is what the receive path reads,
//! and what wakes the receives waiting out a pause when it ends.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Duration;
use tokio::sync::Notify;

/// One queue's pause, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPause {
    /// The gateway queue.
    pub queue: String,
    /// Since when its deliveries are paused.
    pub since: DateTime<Utc>,
}

/// The paused queues, and a signal for the receives that wait while one is.
#[derive(Debug, Default)]
pub struct Pauses {
    paused: RwLock<HashMap<String, DateTime<Utc>>>,
    changed: Notify,
}

/// How a receive's wait through a pause ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPause {
    /// The queue was not paused, or its pause ended with this much of the wait left.
    Deliver(Duration),
    /// The wait ran out while the queue was paused: the receive answers no message.
    StillPaused,
}

impl Pauses {
    /// Since when `queue`'s deliveries are paused, if they are.
    pub fn paused_since(&self, queue: &str) -> Option<DateTime<Utc>> {
        self.paused
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(queue)
            .copied()
    }

    /// Whether `queue`'s deliveries are paused.
    pub fn is_paused(&self, queue: &str) -> bool {
        self.paused_since(queue).is_some()
    }

    /// Takes `pauses` as the whole set (what the store holds now) and wakes every waiting
    /// receive whose queue is no longer paused.
    pub fn replace_all(&self, pauses: impl IntoIterator<Item = DeliveryPause>) {
        let next: HashMap<String, DateTime<Utc>> = pauses
            .into_iter()
            .map(|pause| (pause.queue, pause.since))
            .collect();
        let mut paused = self.paused.write().unwrap_or_else(|p| p.into_inner());
        if *paused != next {
            *paused = next;
            drop(paused);
            self.changed.notify_waiters();
        }
    }

    /// Records one queue's pause (`Some`) or its end (`None`) at once, before the store's next
    /// read: the replica that took the change applies it without waiting to follow the store.
    pub fn set(&self, queue: &str, since: Option<DateTime<Utc>>) {
        let mut paused = self.paused.write().unwrap_or_else(|p| p.into_inner());
        let changed = match since {
            Some(since) => paused.insert(queue.to_owned(), since) != Some(since),
            None => paused.remove(queue).is_some(),
        };
        drop(paused);
        if changed {
            self.changed.notify_waiters();
        }
    }

    /// Waits while `queue` is paused, at most `wait`: answers at once when it is not.
    pub async fn wait_out(&self, queue: &str, wait: Duration) -> AfterPause {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Armed before the set is read: a resume in between still wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.is_paused(queue) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                return AfterPause::Deliver(left);
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => return AfterPause::StillPaused,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pause(queue: &str) -> DeliveryPause {
        DeliveryPause {
            queue: queue.into(),
            since: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_empty_while_paused_and_early_when_resumed() {
        let pauses = Arc::new(Pauses::default());
        assert_eq!(
            pauses.wait_out("orders", Duration::from_secs(5)).await,
            AfterPause::Deliver(Duration::from_secs(5))
        );
        pauses.replace_all([pause("orders")]);
        assert!(pauses.is_paused("orders"));
        assert!(!pauses.is_paused("other"));
        assert_eq!(
            pauses.wait_out("orders", Duration::from_secs(5)).await,
            AfterPause::StillPaused
        );
        let waiting = {
            let pauses = Arc::clone(&pauses);
            tokio::spawn(async move { pauses.wait_out("orders", Duration::from_secs(20)).await })
        };
        tokio::time::sleep(Duration::from_secs(3)).await;
        pauses.set("orders", None);
        assert_eq!(
            waiting.await.unwrap(),
            AfterPause::Deliver(Duration::from_secs(17))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_stores_set_replaces_the_boards() {
        let pauses = Pauses::default();
        pauses.set("a", Some(pause("a").since));
        pauses.replace_all([pause("b")]);
        assert!(!pauses.is_paused("a"));
        assert_eq!(pauses.paused_since("b"), Some(pause("b").since));
    }
}
