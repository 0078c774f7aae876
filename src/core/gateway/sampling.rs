//! What the depth gauges show: which queues one sampling reads (a bounded number, chosen so that
//! making many queues cannot push the ones in use out) and under which label.
//!
//! Order: the configured queues, then the queues operations named lately (most recent first),
//! then the rest by name. Reserved queues (sombus connections, reserved basaltic queues) are
//! summed under one label unless named on purpose, so an open `/metrics` names no tenant.

use super::Gateway;
use crate::core::access::RESERVED_QUEUE_PREFIX;
use crate::core::model::QueueStats;
use std::collections::BTreeSet;
use std::time::Duration;

/// Queues whose depth one sampling reads at most (label values stay bounded).
pub const SAMPLED_QUEUES: usize = 1_000;

/// The `queue` label of the reserved queues' summed depths (no queue name can be it).
pub const RESERVED_DEPTH_LABEL: &str = "sqsgw_*";

/// A queue named by no operation for this long is no longer "in use" for sampling.
const IN_USE_FOR: Duration = Duration::from_secs(3600);

/// The queues named lately, and the labelling rule.
pub(super) struct Sampling {
    /// Queue name -> when last named (recency order, at most [`SAMPLED_QUEUES`]).
    in_use: moka::sync::Cache<String, tokio::time::Instant>,
    /// Label reserved queues by their names.
    pub(super) name_reserved: bool,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            in_use: moka::sync::Cache::builder()
                .max_capacity(SAMPLED_QUEUES as u64)
                .time_to_idle(IN_USE_FOR)
                .build(),
            name_reserved: false,
        }
    }
}

impl Sampling {
    /// An operation named `queue` (and was allowed to).
    pub(super) fn used(&self, queue: &str) {
        self.in_use
            .insert(queue.to_owned(), tokio::time::Instant::now());
    }

    /// The queues to sample, in order, at most [`SAMPLED_QUEUES`]: configured ones, the ones in
    /// use (most recent first), then the rest of `names` by name.
    fn choose(&self, configured: &[String], names: &[String]) -> Vec<String> {
        let known: BTreeSet<&str> = names.iter().map(String::as_str).collect();
        let mut in_use: Vec<(String, tokio::time::Instant)> = self
            .in_use
            .iter()
            .map(|(name, at)| ((*name).clone(), at))
            .filter(|(name, _)| known.contains(name.as_str()))
            .collect();
        in_use.sort_by_key(|(_, at)| std::cmp::Reverse(*at));
        let mut chosen: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        let ordered = configured
            .iter()
            .cloned()
            .chain(in_use.into_iter().map(|(name, _)| name))
            .chain(names.iter().cloned());
        for name in ordered {
            if chosen.len() == SAMPLED_QUEUES {
                break;
            }
            if seen.insert(name.clone()) {
                chosen.push(name);
            }
        }
        chosen
    }
}

impl Gateway {
    /// Whether `/metrics` may name `queue` (and what belongs to it): a queue of the gateway's
    /// own naming, or any with `metrics.name_reserved_queues`; a tenant's reserved queue is
    /// summed under [`RESERVED_DEPTH_LABEL`] otherwise, so an open scrape names no tenant.
    pub fn names_in_metrics(&self, queue: &str) -> bool {
        !queue.starts_with(RESERVED_QUEUE_PREFIX) || self.sampling.name_reserved
    }

    /// Samples what gauges show: the ledger, the backend's disk store, and the depth of the
    /// queues [`Sampling`] chooses, read as [`Gateway::read_counts`] does, all by `until`; a
    /// queue the backend cannot count in time keeps its last value this time.
    pub async fn sample_meters(&self, until: tokio::time::Instant) {
        let ledger = self.state.ledger_stats();
        self.meters.ledger(ledger.deliveries, ledger.evictions);
        if let Some(calls) = self.state.calls() {
            self.meters.state_calls(calls);
        }
        if let Some(counts) = self.backend.store_counts() {
            self.meters.store(&counts);
        }
        let Ok(names) = self.registry.names("").await else {
            return;
        };
        let chosen = self
            .sampling
            .choose(&self.registry.configured_names(), &names);
        let reads = chosen
            .iter()
            .cloned()
            .map(|name| async move {
                let resolved = self.registry.get(&name).await.ok()?;
                self.backend.stats(&resolved.url).await.ok()
            })
            .collect();
        let counted = self.read_counts(reads, until).await;
        let mut reserved: Option<QueueStats> = None;
        for (name, stats) in chosen.iter().zip(counted) {
            let Some(Some(stats)) = stats else {
                continue;
            };
            if !self.names_in_metrics(name) {
                let sum = reserved.get_or_insert_with(QueueStats::default);
                sum.visible += stats.visible;
                sum.in_flight += stats.in_flight;
                sum.delayed += stats.delayed;
                sum.oldest_age_seconds = sum.oldest_age_seconds.max(stats.oldest_age_seconds);
            } else {
                self.meters.queue_depth(name, &stats);
            }
        }
        if let Some(sum) = reserved {
            self.meters.queue_depth(RESERVED_DEPTH_LABEL, &sum);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(range: std::ops::Range<usize>) -> Vec<String> {
        range.map(|i| format!("A{i:04}")).collect()
    }

    #[test]
    fn queues_in_use_and_configured_are_sampled_before_the_rest() {
        let sampling = Sampling::default();
        let mut all = names(0..2_000);
        all.push("orders".into());
        all.push("zz-used".into());
        all.sort();
        sampling.used("zz-used");
        sampling.used("not-listed");
        let chosen = sampling.choose(&["orders".into()], &all);
        assert_eq!(chosen.len(), SAMPLED_QUEUES);
        assert_eq!(chosen[0], "orders");
        assert_eq!(chosen[1], "zz-used");
        assert!(!chosen.contains(&"not-listed".to_owned()));
        assert_eq!(chosen[2], "A0000");
    }
}
