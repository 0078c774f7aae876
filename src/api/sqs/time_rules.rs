//! SQS's 60-second rules, kept by the endpoint in front of a backend that does not keep them
//! itself (the embedded engine; SQS keeps its own): one purge of a queue a minute, and no queue
//! made again under a name deleted within the last minute. `sqs_api.sixty_second_rules = false`
//! turns them off (for test suites that purge or re-create queues between tests).

use chrono::{DateTime, TimeDelta, Utc};
use std::collections::HashMap;
use std::sync::Mutex;

/// How long each rule holds.
const WINDOW: TimeDelta = TimeDelta::seconds(60);

/// When each queue was last purged, and when each name was last deleted, within the window.
#[derive(Debug, Default)]
pub struct TimeRules {
    purged: Mutex<HashMap<String, DateTime<Utc>>>,
    deleted: Mutex<HashMap<String, DateTime<Utc>>>,
}

impl TimeRules {
    /// Notes a purge of `queue` at `now`; `false` (noting nothing) when one was noted within the
    /// minute.
    pub fn begin_purge(&self, queue: &str, now: DateTime<Utc>) -> bool {
        let mut purged = lock(&self.purged);
        purged.retain(|_, at| now - *at < WINDOW);
        if purged.contains_key(queue) {
            return false;
        }
        purged.insert(queue.to_owned(), now);
        true
    }

    /// Forgets a purge noted by [`Self::begin_purge`] that did not happen.
    pub fn purge_failed(&self, queue: &str) {
        lock(&self.purged).remove(queue);
    }

    /// Notes that the queue `name` was deleted at `now`.
    pub fn deleted(&self, name: &str, now: DateTime<Utc>) {
        let mut deleted = lock(&self.deleted);
        deleted.retain(|_, at| now - *at < WINDOW);
        deleted.insert(name.to_owned(), now);
    }

    /// Whether a queue named `name` was deleted within the minute before `now`.
    pub fn deleted_recently(&self, name: &str, now: DateTime<Utc>) -> bool {
        lock(&self.deleted)
            .get(name)
            .is_some_and(|at| now - *at < WINDOW)
    }
}

/// The map, also after a panic elsewhere held it (each entry stands alone).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_purge_a_minute_and_no_name_again_within_a_minute_of_its_delete() {
        let rules = TimeRules::default();
        let start = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).unwrap();
        assert!(rules.begin_purge("q", start));
        assert!(!rules.begin_purge("q", start + TimeDelta::seconds(59)));
        assert!(rules.begin_purge("other", start));
        assert!(rules.begin_purge("q", start + TimeDelta::seconds(60)));
        rules.purge_failed("q");
        assert!(rules.begin_purge("q", start + TimeDelta::seconds(61)));
        rules.deleted("q", start);
        assert!(rules.deleted_recently("q", start + TimeDelta::seconds(59)));
        assert!(!rules.deleted_recently("q", start + TimeDelta::seconds(60)));
        assert!(!rules.deleted_recently("r", start));
    }
}
