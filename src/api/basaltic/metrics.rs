//! Queue metrics as a time series the gateway samples itself: every `metrics_interval_seconds`
//! (10 by default) each basaltic queue's visible, in-flight and delayed counts, the age of its
//! oldest message, and the deliveries handed out again since the last sample; kept a day in
//! memory, within a budget of samples for all queues together. A sample the gateway could not
//! take is a gap (`null`s), never a zero.
//!
//! The budget: [`SAMPLE_BUDGET`] samples in all, 48 bytes each. Once the queues' series together
//! hold more, the series holding the most give up their oldest samples until they fit (a queue
//! created last keeps what it has while older ones shed their mornings): a series is cut at its
//! start only, never in between, so what is answered stays a run of consecutive samples, whose
//! gaps are still only the samples not taken.

use super::error::ErrorBody;
use super::wire::{self, MetricsJson, SampleJson};
use super::{BasalticError, BasalticState};
use crate::core::Gateway;
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::alias::Namespace;
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::routing::get;
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How long samples are kept.
const KEPT_FOR: Duration = Duration::from_secs(24 * 3600);
/// The most samples kept a queue, whatever the interval.
const MAX_SAMPLES: usize = 8640;
/// The most samples kept for all queues together: 1,000,000 of 48 bytes (a [`Sample`]), 48 MB;
/// with the series' spare room (an eighth, and 8 samples a queue) and their entries, 10,000 queues
/// cost at most about 60 MB. Up to 115 queues keep a day at the default interval; 10,000 keep 100
/// samples each (16 minutes and 40 seconds at 10 s).
const SAMPLE_BUDGET: usize = 1_000_000;

// What the budget's documentation says, checked as the crate builds: a sample is 48 bytes, and
// the samples of 10,000 queues with their spare room take at most 60 MB.
const _: () = assert!(std::mem::size_of::<Sample>() <= 48);
const _: () = assert!(
    (SAMPLE_BUDGET + SAMPLE_BUDGET / 8 + 10_000 * 8) * std::mem::size_of::<Sample>() <= 60_000_000
);

/// One sample of one queue; `None` everywhere for a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    /// When it was taken, in milliseconds since the Unix epoch.
    at_millis: i64,
    counts: Option<Counts>,
}

/// A sample's counts, as compact as they stay exact: an age beyond 136 years, or more than four
/// billion repeated receives in one interval, would be clipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    visible: u64,
    in_flight: u64,
    delayed: u64,
    oldest_age_seconds: Option<u32>,
    repeated_receives: u32,
}

impl Sample {
    fn at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.at_millis).unwrap_or_default()
    }
}

#[derive(Debug, Default)]
struct Series {
    samples: VecDeque<Sample>,
    /// The gateway's redelivery counter at the last sample.
    redeliveries: u64,
}

impl Series {
    /// Adds a sample, growing the buffer by an eighth when full (not to twice its length, as a
    /// `VecDeque` would by itself): its spare room stays within an eighth of its length and 8.
    fn push(&mut self, sample: Sample) {
        let samples = &mut self.samples;
        if samples.len() == samples.capacity() {
            samples.reserve_exact(samples.len() / 8 + 8);
        }
        samples.push_back(sample);
    }

    /// Keeps the newest `most` samples, and gives back the room of what it drops.
    fn keep_newest(&mut self, most: usize) {
        let samples = &mut self.samples;
        let excess = samples.len().saturating_sub(most);
        if excess == 0 {
            return;
        }
        samples.drain(..excess);
        let room = samples.len() + samples.len() / 8 + 8;
        if samples.capacity() > room {
            samples.shrink_to(room);
        }
    }
}

/// The samples of every basaltic queue, by queue id.
#[derive(Debug)]
pub(super) struct Metrics {
    interval: Duration,
    /// The most samples kept for all queues together.
    budget: usize,
    series: Mutex<HashMap<String, Series>>,
}

impl Metrics {
    pub(super) fn new(interval: Duration) -> Self {
        Self::with_budget(interval, SAMPLE_BUDGET)
    }

    fn with_budget(interval: Duration, budget: usize) -> Self {
        Self {
            interval,
            budget,
            series: Mutex::default(),
        }
    }

    /// Samples kept a queue: a day's, at most 8,640 (a day at the default interval).
    fn kept(&self) -> usize {
        usize::try_from(KEPT_FOR.as_secs() / self.interval.as_secs().max(1))
            .unwrap_or(MAX_SAMPLES)
            .min(MAX_SAMPLES)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Series>> {
        self.series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Samples every basaltic queue once.
    async fn sample(&self, gateway: &Gateway) {
        let at = gateway.now();
        let mut taken: Vec<Taken> = Vec::new();
        // Without a listing there is no telling gone queues from the rest: no round this time.
        let listed = match gateway.listed_aliases(Namespace::Basaltic).await {
            Ok(listed) => listed,
            Err(error) => {
                tracing::debug!(error = %error.message, "basaltic queues not listed for metrics");
                return;
            }
        };
        for (alias, queue) in listed {
            let Some(id) = alias.path().first().cloned() else {
                continue;
            };
            let caller = Caller::new(
                Principal::System,
                Arc::new(Grants::none().allow(&queue, [Action::Inspect])),
            );
            let stats = gateway.queue_stats(&caller, &queue).await;
            if let Err(error) = &stats {
                tracing::debug!(queue, error = %error.message, "metrics sample not taken");
            }
            taken.push((
                id,
                stats.ok().map(|(_, stats)| stats),
                gateway.redeliveries(&queue),
            ));
        }
        self.record(at, taken);
    }

    /// Adds one round of samples (the queues not in it are gone: their series go too), then
    /// holds each series to a day and all of them to the budget.
    fn record(&self, at: DateTime<Utc>, taken: Vec<Taken>) {
        let kept = self.kept();
        let mut series = self.lock();
        let alive: std::collections::HashSet<&String> = taken.iter().map(|(id, _, _)| id).collect();
        series.retain(|id, _| alive.contains(id));
        for (id, stats, redeliveries) in taken {
            let entry = series.entry(id).or_default();
            let counts = stats.map(|stats| Counts {
                visible: stats.visible,
                in_flight: stats.in_flight,
                delayed: stats.delayed,
                oldest_age_seconds: stats
                    .oldest_age_seconds
                    .map(|age| u32::try_from(age).unwrap_or(u32::MAX)),
                repeated_receives: u32::try_from(redeliveries.saturating_sub(entry.redeliveries))
                    .unwrap_or(u32::MAX),
            });
            entry.redeliveries = redeliveries;
            entry.push(Sample {
                at_millis: at.timestamp_millis(),
                counts,
            });
            entry.keep_newest(kept);
        }
        let lengths: Vec<usize> = series.values().map(|series| series.samples.len()).collect();
        if let Some(most) = most_each(lengths, self.budget) {
            for entry in series.values_mut() {
                entry.keep_newest(most);
            }
        }
    }

    fn samples(&self, id: &str, since: Option<DateTime<Utc>>) -> Vec<Sample> {
        self.lock()
            .get(id)
            .map(|series| {
                series
                    .samples
                    .iter()
                    .filter(|sample| since.is_none_or(|since| sample.at() >= since))
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One queue's round: its id, its counts (`None`: not taken) and the gateway's redelivery counter.
type Taken = (String, Option<crate::core::model::QueueStats>, u64);

/// The most samples each series may keep so that all of them together hold at most `budget`,
/// taking from the longest first (`None`: they fit as they are). The largest such cap: series
/// shorter than it keep all they have.
fn most_each(mut lengths: Vec<usize>, budget: usize) -> Option<usize> {
    if lengths.iter().sum::<usize>() <= budget {
        return None;
    }
    lengths.sort_unstable();
    let mut left = budget;
    for (index, &length) in lengths.iter().enumerate() {
        let sharing = lengths.len() - index;
        // Every series from here on can keep `length` samples if the budget left holds them.
        if length.saturating_mul(sharing) > left {
            return Some(left / sharing);
        }
        left -= length;
    }
    None
}

/// Samples every interval while the dialect lives (the task ends once its state is dropped).
pub(super) fn start_sampling(state: &Arc<BasalticState>) {
    let weak: Weak<BasalticState> = Arc::downgrade(state);
    let interval = state.metrics.interval;
    tokio::spawn(async move {
        let mut every = tokio::time::interval(interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let Some(state) = weak.upgrade() else {
                break;
            };
            // Without a key nobody can read them: no samples, and no listing of the queues.
            if !state.keys.current().is_empty() {
                state.metrics.sample(&state.gateway).await;
            }
        }
    });
}

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new().route("/v1/queues/{queue_id}/metrics", get(metrics))
}

/// `GET /v1/queues/{id}/metrics?since=RFC3339`: the samples, oldest first.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/metrics",
    operation_id = "GetQueueMetrics",
    tag = "Queues",
    description = "The samples of the last day, oldest first: takes `read_metrics`. A sample the gateway could not take is a gap (`null`s), not an empty queue.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("since" = Option<String>, Query, format = DateTime, description = "Only samples taken at or after this RFC 3339 time"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The samples", body = MetricsJson),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn metrics(
    State(state): State<Arc<BasalticState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<MetricsJson>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let id = target.id.as_str();
    if !target.key.has_permission("read_metrics", id) {
        return Err(crate::core::GatewayError::permission_denied(
            "reading metrics takes the read_metrics permission",
        )
        .into());
    }
    let mut since = None;
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match (name.as_ref(), DateTime::parse_from_rfc3339(&value)) {
            ("since", Ok(at)) if since.is_none() => since = Some(at.with_timezone(&Utc)),
            _ => {
                return Err(crate::core::GatewayError::invalid_request(
                    "the only query parameter is since, an RFC 3339 time",
                )
                .into());
            }
        }
    }
    let samples = state
        .metrics
        .samples(id, since)
        .into_iter()
        .map(|sample| {
            let counts = sample.counts;
            SampleJson {
                at: sample.at().to_rfc3339_opts(SecondsFormat::Secs, true),
                visible: counts.map(|counts| counts.visible),
                in_flight: counts.map(|counts| counts.in_flight),
                delayed: counts.map(|counts| counts.delayed),
                oldest_message_age_seconds: counts
                    .and_then(|counts| counts.oldest_age_seconds)
                    .map(u64::from),
                repeated_receives: counts.map(|counts| u64::from(counts.repeated_receives)),
            }
        })
        .collect();
    Ok(Json(MetricsJson {
        queue_id: id.to_owned(),
        interval_seconds: state.metrics.interval.as_secs(),
        samples,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::QueueStats;

    fn stats(visible: u64) -> Option<QueueStats> {
        Some(QueueStats {
            visible,
            in_flight: 0,
            delayed: 0,
            oldest_age_seconds: Some(5),
        })
    }

    fn round(metrics: &Metrics, second: i64, queues: &[&str]) {
        let at = DateTime::from_timestamp(1_800_000_000 + second, 0).unwrap();
        let taken = queues
            .iter()
            .map(|id| ((*id).to_owned(), stats(second as u64), 0))
            .collect();
        metrics.record(at, taken);
    }

    fn held(metrics: &Metrics) -> (usize, usize) {
        let series = metrics.lock();
        let samples = series.values().map(|s| s.samples.len()).sum();
        let room = series.values().map(|s| s.samples.capacity()).sum();
        (samples, room)
    }

    #[test]
    fn the_longest_series_give_up_their_oldest_samples_first() {
        assert_eq!(most_each(vec![3, 3], 6), None);
        assert_eq!(most_each(vec![10, 2, 5], 12), Some(5));
        assert_eq!(most_each(vec![10, 2, 6], 12), Some(5));
        assert_eq!(most_each(vec![10, 10, 10], 10), Some(3));
        assert_eq!(most_each(vec![1, 1, 1], 0), Some(0));
    }

    #[test]
    fn many_queues_stay_within_the_budget_and_answer_runs_of_their_newest_samples() {
        let metrics = Metrics::with_budget(Duration::from_secs(1), 1_000);
        // Ten queues for a while: 100 samples each at most.
        let old: Vec<String> = (0..10).map(|n| format!("old-{n}")).collect();
        let old: Vec<&str> = old.iter().map(String::as_str).collect();
        for second in 0..300 {
            round(&metrics, second, &old);
        }
        assert_eq!(held(&metrics).0, 1_000);
        // Ninety more: the old series shed their oldest, the new ones keep what they have.
        let all: Vec<String> = (0..100).map(|n| format!("q-{n}")).collect();
        let mut everyone: Vec<&str> = all.iter().map(String::as_str).collect();
        everyone.extend(&old);
        for second in 300..320 {
            round(&metrics, second, &everyone);
            let (samples, room) = held(&metrics);
            assert!(samples <= 1_000, "{samples}");
            assert!(room <= samples + samples / 8 + everyone.len() * 8, "{room}");
        }
        let newest = metrics.samples("q-0", None);
        let oldest = metrics.samples("old-0", None);
        assert!(oldest.len() >= newest.len() && oldest.len() <= newest.len() + 1);
        for series in [&newest, &oldest] {
            // Consecutive, up to the last round: cut at the start only.
            let seconds: Vec<i64> = series.iter().map(|s| s.at().timestamp()).collect();
            assert_eq!(*seconds.last().unwrap(), 1_800_000_319);
            assert!(seconds.windows(2).all(|w| w[1] == w[0] + 1), "{seconds:?}");
            assert!(
                series.iter().all(|s| s.counts.is_some()),
                "no sample is made a gap"
            );
        }
        // Queues that go take their samples with them, and the others may grow back.
        for second in 320..420 {
            round(&metrics, second, &old);
        }
        assert_eq!(metrics.samples("q-0", None).len(), 0);
        assert_eq!(metrics.samples("old-0", None).len(), 100);
    }

    #[test]
    fn a_gap_stays_a_gap_and_since_counts_in_milliseconds() {
        let metrics = Metrics::with_budget(Duration::from_secs(10), 100);
        let at = DateTime::from_timestamp_millis(1_800_000_000_700).unwrap();
        metrics.record(at, vec![("q".to_owned(), None, 0)]);
        metrics.record(
            at + chrono::Duration::seconds(10),
            vec![("q".to_owned(), stats(2), 3)],
        );
        let samples = metrics.samples("q", None);
        assert_eq!(samples[0].counts, None);
        assert_eq!(samples[1].counts.unwrap().visible, 2);
        assert_eq!(samples[1].counts.unwrap().repeated_receives, 3);
        let since = DateTime::from_timestamp_millis(1_800_000_000_500).unwrap();
        assert_eq!(metrics.samples("q", Some(since)).len(), 2);
        let since = DateTime::from_timestamp_millis(1_800_000_000_800).unwrap();
        assert_eq!(metrics.samples("q", Some(since)).len(), 1);
    }
}
