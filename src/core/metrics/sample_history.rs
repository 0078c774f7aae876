//! The basaltic metrics history, behind one port: each interval every replica takes its turn
//! ([`SampleHistory::turn`]: it adds the sends, receives and repeated receives it counted
//! ([`Activity`]), and takes or renews the
//! sampling lease), the one that holds the lease samples every queue and appends the round
//! ([`SampleHistory::append`]), and any replica answers reads ([`SampleHistory::samples`]).
//! [`InProcessHistory`] keeps it in this process (it always holds the lease: it is the only
//! sampler there is); `crate::state::redis::sample_history` keeps it on the shared server, so
//! replicas sample one at a time and the history outlives them.
//!
//! Every method may fail with [`StateUnavailable`]: a round that cannot be taken or appended is
//! skipped, a read answers unavailable. A sample the gateway could not take is a gap (no counts),
//! never a zero.
//!
//! The in-process budget: [`SAMPLE_BUDGET`] samples in all, 56 bytes each. Once the queues'
//! series together hold more, the series holding the most give up their oldest samples until they
//! fit (a queue created last keeps what it has while older ones shed their mornings): a series is
//! cut at its start only, never in between, so what is answered stays a run of consecutive
//! samples, whose gaps are still only the samples not taken.

use crate::core::model::QueueStats;
use crate::core::state::{StateResult, StateUnavailable};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

/// How long samples are kept.
pub const KEPT_FOR: Duration = Duration::from_secs(24 * 3600);
/// The most samples kept a queue, whatever the interval.
pub const MAX_SAMPLES: usize = 8640;
/// The most samples kept for all queues together: 1,000,000 of 56 bytes (a [`Sample`]), 56 MB;
/// with the series' spare room (an eighth, and 8 samples a queue) and their entries, 10,000 queues
/// cost at most about 70 MB. Up to 115 queues keep a day at the default interval; 10,000 keep 100
/// samples each (16 minutes and 40 seconds at 10 s).
pub const SAMPLE_BUDGET: usize = 1_000_000;

// What the budget's documentation says, checked as the crate builds: a sample is 56 bytes, and
// the samples of 10,000 queues with their spare room take at most 70 MB.
const _: () = assert!(std::mem::size_of::<Sample>() <= 56);
const _: () = assert!(
    (SAMPLE_BUDGET + SAMPLE_BUDGET / 8 + 10_000 * 8) * std::mem::size_of::<Sample>() <= 70_000_000
);

/// One sample of one queue; no counts for a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When it was taken, in milliseconds since the Unix epoch.
    pub at_millis: i64,
    /// What it counted; `None`: the sample could not be taken.
    pub counts: Option<Counts>,
}

/// A sample's counts, as compact as they stay exact: an age beyond 136 years, or more than four
/// billion sends, receives or repeated receives in one interval, would be clipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Messages ready to be received.
    pub visible: u64,
    /// Messages received and not visible again yet.
    pub in_flight: u64,
    /// Messages sent with a delay that has not passed.
    pub delayed: u64,
    /// The oldest message's age, where the backend tells it.
    pub oldest_age_seconds: Option<u32>,
    /// Deliveries with a receive count above 1 handed out since the previous sample.
    pub repeated_receives: u32,
    /// Messages sent since the previous sample.
    pub sends: u32,
    /// Deliveries handed out since the previous sample.
    pub receives: u32,
}

/// What receives and sends of a queue did: counters since a process started, or the difference
/// between two readings of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Messages sent.
    pub sends: u64,
    /// Deliveries handed out.
    pub receives: u64,
    /// Deliveries handed out with a receive count above 1.
    pub repeated: u64,
}

impl Activity {
    /// Nothing happened.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Both together.
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        Self {
            sends: self.sends.saturating_add(other.sends),
            receives: self.receives.saturating_add(other.receives),
            repeated: self.repeated.saturating_add(other.repeated),
        }
    }

    /// What happened since the reading `before` (of the same counters).
    #[must_use]
    pub fn since(self, before: Self) -> Self {
        Self {
            sends: self.sends.saturating_sub(before.sends),
            receives: self.receives.saturating_sub(before.receives),
            repeated: self.repeated.saturating_sub(before.repeated),
        }
    }
}

fn clipped(count: u64) -> u32 {
    u32::try_from(count).unwrap_or(u32::MAX)
}

impl Counts {
    /// The counts of `stats` with what `activity` counted, clipped to their widths.
    pub fn new(stats: &QueueStats, activity: Activity) -> Self {
        Self {
            visible: stats.visible,
            in_flight: stats.in_flight,
            delayed: stats.delayed,
            oldest_age_seconds: stats
                .oldest_age_seconds
                .map(|age| u32::try_from(age).unwrap_or(u32::MAX)),
            repeated_receives: clipped(activity.repeated),
            sends: clipped(activity.sends),
            receives: clipped(activity.receives),
        }
    }
}

impl Sample {
    /// When it was taken.
    pub fn at(&self) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(self.at_millis).unwrap_or_default()
    }
}

/// What one replica brings to its turn each interval.
#[derive(Debug, Clone, Copy)]
pub struct Turn<'a> {
    /// Who takes or renews the sampling lease: random per process.
    pub holder: &'a str,
    /// How long the lease lasts unless renewed (about three intervals).
    pub lease: Duration,
    /// What this replica counted since its last turn, by queue id (only queues where something
    /// happened).
    pub activity: &'a [(String, Activity)],
    /// The ids of the queues this replica knows (so the sampler learns the queues made on other
    /// replicas before it reads their aliases back).
    pub known: &'a [String],
}

/// What a turn answers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnAnswer {
    /// This replica holds the lease: it samples this interval.
    pub sampler: bool,
    /// For the sampler: queue ids other replicas said they know since its last turn (all of
    /// them on its first turn as the sampler); it may know some of them already.
    pub announced: Vec<String>,
}

/// Where the metrics samples of every basaltic queue are kept, by queue id.
#[async_trait]
pub trait SampleHistory: Send + Sync + 'static {
    /// This replica's turn of the interval: counts its activity in, and takes or renews
    /// the sampling lease (only its holder samples).
    async fn turn(&self, turn: Turn<'_>) -> StateResult<TurnAnswer>;

    /// Gives up the sampling lease if `holder` holds it (at a graceful stop), so that another
    /// replica samples from its next turn instead of after the lease runs out. A history no one
    /// else shares has nothing to give up.
    async fn release(&self, _holder: &str) -> StateResult<()> {
        Ok(())
    }

    /// Appends the sampler's round, taken at `at`: each queue's counts (`None`: a gap), with the
    /// activity counted in since that queue's previous sample. The queues of the
    /// sampler's previous round that are not in this one are gone: their history goes too.
    async fn append(
        &self,
        at: DateTime<Utc>,
        round: Vec<(String, Option<QueueStats>)>,
    ) -> StateResult<()>;

    /// The samples of `queue_id` taken at or after `since`, oldest first.
    async fn samples(
        &self,
        queue_id: &str,
        since: Option<DateTime<Utc>>,
    ) -> StateResult<Vec<Sample>>;
}

/// Samples kept a queue at `interval`: a day's, at most [`MAX_SAMPLES`] (a day at the default
/// interval).
pub fn kept(interval: Duration) -> usize {
    usize::try_from(KEPT_FOR.as_secs() / interval.as_secs().max(1))
        .unwrap_or(MAX_SAMPLES)
        .min(MAX_SAMPLES)
}

/// The most samples each series may keep so that all of them together hold at most `budget`,
/// taking from the longest first (`None`: they fit as they are). The largest such cap: series
/// shorter than it keep all they have.
pub fn most_each(mut lengths: Vec<usize>, budget: usize) -> Option<usize> {
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

#[derive(Debug, Default)]
struct Series {
    samples: VecDeque<Sample>,
    /// Activity counted in since the last sample taken.
    activity: Activity,
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

/// One queue's round: its id, its counts (`None`: not taken) and the activity counted in since
/// the last turn.
pub type Taken = (String, Option<QueueStats>, Activity);

/// The history in this process: a day a queue, within [`SAMPLE_BUDGET`] for all of them; a
/// restart starts a new one.
#[derive(Debug)]
pub struct InProcessHistory {
    interval: Duration,
    /// The most samples kept for all queues together.
    budget: usize,
    series: Mutex<HashMap<String, Series>>,
}

impl InProcessHistory {
    /// A history sampled every `interval`.
    pub fn new(interval: Duration) -> Self {
        Self::with_budget(interval, SAMPLE_BUDGET)
    }

    fn with_budget(interval: Duration, budget: usize) -> Self {
        Self {
            interval,
            budget,
            series: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Series>> {
        self.series
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds one round of samples (the queues not in it are gone: their series go too), then
    /// holds each series to a day and all of them to the budget. A gap keeps the activity
    /// counted for the next sample taken.
    fn record(&self, at: DateTime<Utc>, taken: Vec<Taken>) {
        let kept = kept(self.interval);
        let mut series = self.lock();
        let alive: std::collections::HashSet<&String> = taken.iter().map(|(id, _, _)| id).collect();
        series.retain(|id, _| alive.contains(id));
        for (id, stats, activity) in taken {
            let entry = series.entry(id).or_default();
            entry.activity = entry.activity.plus(activity);
            let counts =
                stats.map(|stats| Counts::new(&stats, std::mem::take(&mut entry.activity)));
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

#[async_trait]
impl SampleHistory for InProcessHistory {
    async fn turn(&self, turn: Turn<'_>) -> StateResult<TurnAnswer> {
        let mut series = self.lock();
        for (id, activity) in turn.activity {
            // Only for queues this process knows (the ones it samples next): a bound.
            let entry = series.entry(id.clone()).or_default();
            entry.activity = entry.activity.plus(*activity);
        }
        Ok(TurnAnswer {
            sampler: true,
            announced: Vec::new(),
        })
    }

    async fn append(
        &self,
        at: DateTime<Utc>,
        round: Vec<(String, Option<QueueStats>)>,
    ) -> StateResult<()> {
        self.record(
            at,
            round
                .into_iter()
                .map(|(id, stats)| (id, stats, Activity::default()))
                .collect(),
        );
        Ok(())
    }

    async fn samples(
        &self,
        queue_id: &str,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<Sample>, StateUnavailable> {
        Ok(InProcessHistory::samples(self, queue_id, since))
    }
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

    fn round(metrics: &InProcessHistory, second: i64, queues: &[&str]) {
        let at = DateTime::from_timestamp(1_800_000_000 + second, 0).unwrap();
        let taken = queues
            .iter()
            .map(|id| ((*id).to_owned(), stats(second as u64), Activity::default()))
            .collect();
        metrics.record(at, taken);
    }

    fn held(metrics: &InProcessHistory) -> (usize, usize) {
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
        let metrics = InProcessHistory::with_budget(Duration::from_secs(1), 1_000);
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
        let metrics = InProcessHistory::with_budget(Duration::from_secs(10), 100);
        let at = DateTime::from_timestamp_millis(1_800_000_000_700).unwrap();
        metrics.record(at, vec![("q".to_owned(), None, Activity::default())]);
        let activity = Activity {
            sends: 5,
            receives: 4,
            repeated: 3,
        };
        metrics.record(
            at + chrono::Duration::seconds(10),
            vec![("q".to_owned(), stats(2), activity)],
        );
        let samples = metrics.samples("q", None);
        assert_eq!(samples[0].counts, None);
        assert_eq!(samples[1].counts.unwrap().visible, 2);
        assert_eq!(samples[1].counts.unwrap().repeated_receives, 3);
        assert_eq!(samples[1].counts.unwrap().sends, 5);
        assert_eq!(samples[1].counts.unwrap().receives, 4);
        let since = DateTime::from_timestamp_millis(1_800_000_000_500).unwrap();
        assert_eq!(metrics.samples("q", Some(since)).len(), 2);
        let since = DateTime::from_timestamp_millis(1_800_000_000_800).unwrap();
        assert_eq!(metrics.samples("q", Some(since)).len(), 1);
    }

    #[tokio::test]
    async fn the_activity_of_a_turn_goes_into_the_next_sample_taken() {
        let history = InProcessHistory::new(Duration::from_secs(10));
        let at = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let activity = [(
            "q".to_owned(),
            Activity {
                sends: 1,
                receives: 3,
                repeated: 2,
            },
        )];
        let turn = Turn {
            holder: "me",
            lease: Duration::from_secs(30),
            activity: &activity,
            known: &[],
        };
        assert!(history.turn(turn).await.unwrap().sampler);
        // A gap keeps them for the next sample taken, which counts them once.
        history.append(at, vec![("q".into(), None)]).await.unwrap();
        history.turn(turn).await.unwrap();
        let later = at + chrono::Duration::seconds(10);
        history
            .append(later, vec![("q".into(), stats(1))])
            .await
            .unwrap();
        let even_later = later + chrono::Duration::seconds(10);
        history
            .append(even_later, vec![("q".into(), stats(1))])
            .await
            .unwrap();
        let samples = SampleHistory::samples(&history, "q", None).await.unwrap();
        let repeated: Vec<Option<u32>> = samples
            .iter()
            .map(|s| s.counts.map(|c| c.repeated_receives))
            .collect();
        assert_eq!(repeated, [None, Some(4), Some(0)]);
        let sends: Vec<Option<(u32, u32)>> = samples
            .iter()
            .map(|s| s.counts.map(|c| (c.sends, c.receives)))
            .collect();
        assert_eq!(sends, [None, Some((2, 6)), Some((0, 0))]);
    }
}
