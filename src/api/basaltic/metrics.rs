//! Queue metrics as a time series the gateway samples itself: every `metrics_interval_seconds`
//! (10 by default) each basaltic queue's visible, in-flight and delayed counts, the age of its
//! oldest message, and the messages sent, deliveries handed out and deliveries handed out again
//! since the last sample. A sample the
//! gateway could not take is a gap (`null`s), never a zero; when the backend cannot even list the
//! queues, each queue of the last round gets a gap.
//!
//! The history is the core's port ([`SampleHistory`]): in this process (a day within a budget
//! of samples, see [`crate::core::metrics::sample_history`]), or on the shared state store, where the
//! replicas sample one at a time (the Redis adapter, `state::redis::sample_history`, tells its
//! keys and bounds). Each interval every replica takes its turn ([`SampleHistory::turn`]) and
//! only the holder of the sampling lease samples and appends; every replica answers reads from
//! the one history, and a replica whose store does not answer skips the interval (logged once a
//! minute) and answers reads `503 unavailable`.
//!
//! Sends, receives and repeated receives, and what adding them up across replicas costs: a send
//! or receive only bumps this process's counters in memory ([`Gateway::activity`], as without a
//! shared store). A turn
//! hands in each queue's difference since the last turn the store took, in the turn's one
//! pipeline (one `INCRBY` and `PEXPIRE` per queue that had any, nothing for the others), and
//! the sampler's append reads and clears each queue's counter with its sample. So the store
//! sees one pipeline per replica per interval however many receives there were, and a receive
//! shows in the sample taken after its replica's next turn: up to one interval late. A turn that
//! fails is handed in again at the next one (a failed write is taken as not done).

use super::wire::{self, MetricsJson, SampleJson};
use super::{BasalticError, BasalticState};
use crate::core::access::{Action, Caller, Grants, Principal};
use crate::core::alias::{Alias, Namespace};
use crate::core::gateway::ROUND_SHARE;
use crate::core::limits::STATE_RETRY_AFTER;
use crate::core::log_throttle::LogThrottle;
use crate::core::metrics::sample_history::{Activity, SampleHistory, Turn};
use crate::core::model::QueueStats;
use crate::core::registry::ALIAS_REFRESH;
use crate::core::state::StateUnavailable;
use crate::core::{Gateway, GatewayError};
use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::routing::get;
use chrono::{DateTime, SecondsFormat, Utc};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::error::ErrorBody;

/// How long the sampling lease lasts unless its holder renews it, in intervals: a holder that
/// stops is replaced within this many intervals, and one slow round does not lose it.
const LEASE_INTERVALS: u32 = 3;
/// A round that took longer than this many intervals since its lease was renewed is not
/// appended: another replica may hold the lease by now.
const ROUND_WITHIN_INTERVALS: u32 = LEASE_INTERVALS - 1;
/// The most queue ids announced by other replicas that the sampler looks up, waiting for them
/// to be readable here.
const MOST_PENDING: usize = 10_000;
/// How often a failing history is logged.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The metrics of the basaltic queues: where their samples are kept, and how often they are
/// taken.
pub(super) struct Metrics {
    interval: Duration,
    history: Arc<dyn SampleHistory>,
}

impl Metrics {
    pub(super) fn new(interval: Duration, history: Arc<dyn SampleHistory>) -> Self {
        Self { interval, history }
    }
}

/// What the sampling task of this process keeps between its rounds.
struct Sampler {
    /// This process's id as a holder of the sampling lease.
    holder: String,
    lease: Duration,
    interval: Duration,
    /// Each gateway queue's activity counters as of the last turn the history took.
    counted: HashMap<String, Activity>,
    /// The queue ids of this sampler's last round appended (a round without a listing records
    /// a gap for each).
    sampled: Vec<String>,
    /// Queue ids other replicas announced that this one could not find yet, since when.
    pending: HashMap<String, DateTime<Utc>>,
    unavailable: LogThrottle,
    /// Rounds whose queues were not all counted in time.
    late: LogThrottle,
    /// Where in its list of queues the next round starts counting.
    resume_at: usize,
}

impl Sampler {
    fn new(interval: Duration) -> Self {
        Self {
            holder: format!("{:032x}", rand::random::<u128>()),
            lease: interval * LEASE_INTERVALS,
            interval,
            counted: HashMap::new(),
            sampled: Vec::new(),
            pending: HashMap::new(),
            unavailable: LogThrottle::new(LOG_EVERY),
            late: LogThrottle::new(LOG_EVERY),
            resume_at: 0,
        }
    }

    /// The history did not answer: this interval's round is skipped (logged once a minute).
    fn skipped(&mut self, error: &StateUnavailable) {
        if let Some(count) = self.unavailable.due() {
            tracing::warn!(
                error = %error,
                count,
                "basaltic metrics history unavailable: samples skipped (gaps)"
            );
        }
    }

    /// How long after its turn a round's counts may take: [`ROUND_SHARE`] of the interval, or one
    /// count's deadline where that is longer (a short interval does not make every slow count a
    /// gap), but never so long that the round would no longer be appended (the lease).
    fn counting_time(&self, gateway: &Gateway) -> Duration {
        let lease_holds = (self.interval * ROUND_WITHIN_INTERVALS).mul_f64(ROUND_SHARE);
        self.interval
            .mul_f64(ROUND_SHARE)
            .max(gateway.count_limits().per_queue)
            .min(lease_holds)
    }

    /// One interval: this replica's turn, and a round of samples if it holds the lease. The
    /// round's counts are read as [`Gateway::read_counts`] does and end within
    /// [`Sampler::counting_time`] of the turn: a queue not counted by then is a gap this round.
    /// Each round starts counting where the last one stopped, so a backend too slow to count
    /// every queue within the interval leaves each queue a gap in turn, not the same ones always.
    async fn round(&mut self, gateway: &Gateway, history: &dyn SampleHistory) {
        let at = gateway.now();
        // Without a listing there is no telling gone queues from the rest: no round this time
        // (the turn still renews the lease).
        let listed = match gateway.listed_aliases(Namespace::Basaltic).await {
            Ok(listed) => Some(listed),
            Err(error) => {
                tracing::debug!(error = %error.message, "basaltic queues not listed for metrics");
                None
            }
        };
        let known: Vec<(String, String)> = listed
            .iter()
            .flatten()
            .filter_map(|(alias, queue)| Some((alias.path().first()?.clone(), queue.clone())))
            .collect();
        let mut activity = Vec::new();
        let mut counters = Vec::new();
        for (id, queue) in &known {
            let now = gateway.activity(queue);
            let before = self.counted.get(queue).copied().unwrap_or_default();
            let happened = now.since(before);
            if !happened.is_empty() {
                activity.push((id.clone(), happened));
                counters.push((queue.clone(), now));
            }
        }
        let ids: Vec<String> = known.iter().map(|(id, _)| id.clone()).collect();
        let renewed = tokio::time::Instant::now();
        let turn = history
            .turn(Turn {
                holder: &self.holder,
                lease: self.lease,
                activity: &activity,
                known: &ids,
            })
            .await;
        let answer = match turn {
            Ok(answer) => answer,
            Err(error) => {
                // Counted in at a later turn (a failed write is taken as not done).
                self.skipped(&error);
                return;
            }
        };
        self.counted.extend(counters);
        if listed.is_some() {
            let queues: HashSet<&String> = known.iter().map(|(_, queue)| queue).collect();
            self.counted.retain(|queue, _| queues.contains(queue));
        }
        if !answer.sampler {
            self.pending.clear();
            self.sampled.clear();
            return;
        }
        if listed.is_none() {
            // The backend did not answer: every queue of the last round is a gap this time, not
            // a sample missing without a trace (nor a queue gone).
            let gaps: Vec<(String, Option<QueueStats>)> =
                self.sampled.iter().map(|id| (id.clone(), None)).collect();
            if !gaps.is_empty()
                && let Err(error) = history.append(at, gaps).await
            {
                self.skipped(&error);
            }
            return;
        }
        let mut round = known;
        self.adopt(gateway, answer.announced, &mut round, at).await;
        let from = self.resume_at % round.len().max(1);
        round.rotate_left(from);
        let counting = tokio::time::Instant::now();
        let reads = round
            .iter()
            .map(|(_, queue)| queue.clone())
            .map(|queue| async move {
                let caller = Caller::new(
                    Principal::System,
                    Arc::new(Grants::none().allow(&queue, [Action::Inspect])),
                );
                let stats = gateway.queue_stats(&caller, &queue).await;
                if let Err(error) = &stats {
                    tracing::debug!(queue, error = %error.message, "metrics sample not taken");
                }
                stats.ok().map(|(_, stats)| stats)
            })
            .collect();
        let counted = gateway
            .read_counts(reads, renewed + self.counting_time(gateway))
            .await;
        let took = counting.elapsed();
        self.resume_at = from + counted.iter().filter(|stats| stats.is_some()).count();
        let late = counted.iter().filter(|stats| stats.is_none()).count();
        let taken: Vec<(String, Option<QueueStats>)> = round
            .into_iter()
            .zip(counted)
            .map(|((id, _), stats)| (id, stats.flatten()))
            .collect();
        if late > 0
            && let Some(rounds) = self.late.due()
        {
            tracing::warn!(
                late,
                queues = taken.len(),
                rounds,
                "basaltic metrics: queues not counted within the interval are gaps (raise metrics.count_concurrency or basaltic.metrics_interval_seconds)"
            );
        }
        if renewed.elapsed() > self.interval * ROUND_WITHIN_INTERVALS {
            tracing::debug!(
                "basaltic metrics round too slow: not appended (the lease may have moved)"
            );
            return;
        }
        let sampled: Vec<String> = taken.iter().map(|(id, _)| id.clone()).collect();
        let gaps = taken.iter().filter(|(_, stats)| stats.is_none()).count();
        match history.append(at, taken).await {
            Ok(()) => {
                gateway
                    .meters()
                    .metrics_round(took, sampled.len() - gaps, gaps);
                self.sampled = sampled;
            }
            Err(error) => self.skipped(&error),
        }
    }

    /// Adds to `round` the queues other replicas announced that this one can reach but did not
    /// list (made there since this replica last read the aliases back). One not found yet is
    /// looked up again each round until every replica would have read it back.
    async fn adopt(
        &mut self,
        gateway: &Gateway,
        announced: Vec<String>,
        round: &mut Vec<(String, String)>,
        at: DateTime<Utc>,
    ) {
        let listed: HashSet<String> = round.iter().map(|(id, _)| id.clone()).collect();
        for id in announced {
            if self.pending.len() >= MOST_PENDING {
                break;
            }
            if !listed.contains(&id) && super::canonical_id(&id).as_ref() == Some(&id) {
                self.pending.entry(id).or_insert(at);
            }
        }
        let give_up = chrono::Duration::from_std(ALIAS_REFRESH + self.lease).unwrap_or_default();
        let mut found = Vec::new();
        for (id, since) in &self.pending {
            if listed.contains(id) {
                found.push(id.clone());
                continue;
            }
            let queue = match Alias::new(Namespace::Basaltic, [id.as_str()]) {
                Ok(alias) => gateway.queue_by_alias(&alias).await.ok(),
                Err(_) => None,
            };
            match queue {
                Some(queue) => {
                    round.push((id.clone(), queue));
                    found.push(id.clone());
                }
                None if at.signed_duration_since(*since) > give_up => found.push(id.clone()),
                None => {}
            }
        }
        for id in found {
            self.pending.remove(&id);
        }
    }
}

/// Samples every interval while the dialect lives (the task ends once its state is dropped, or
/// when shutdown begins: a replica that stops takes no more turns, so its lease runs out).
pub(super) fn start_sampling(state: &Arc<BasalticState>) {
    let weak: Weak<BasalticState> = Arc::downgrade(state);
    let interval = state.metrics.interval;
    let history = Arc::clone(&state.metrics.history);
    let gateway = Arc::clone(&state.gateway);
    // On the gateway's tracker: the drain at shutdown waits for the lease to be given up.
    state.gateway.spawn_tracked(async move {
        let mut sampler = Sampler::new(interval);
        let mut every = tokio::time::interval(interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = gateway.shutdown_started() => break,
            }
            let Some(state) = weak.upgrade() else {
                break;
            };
            // Without a key nobody can read them: no samples, and no listing of the queues.
            if !state.keys.current().is_empty() {
                // A round (a backend call per queue) does not hold up the stop's drain.
                tokio::select! {
                    () = sampler.round(&state.gateway, history.as_ref()) => {}
                    () = gateway.shutdown_started() => break,
                }
            }
        }
        // Another replica samples from its next turn, not once the lease runs out.
        if let Err(error) = history.release(&sampler.holder).await {
            tracing::debug!(%error, "basaltic metrics: the sampling lease was not given up; it runs out");
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
    description = "The samples of the last day, oldest first: takes `read_metrics`. A sample the gateway could not take is a gap (`null`s), not an empty queue. With a shared state store the history is the same on every replica; while the store does not answer, `503 unavailable`.",
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
        .history
        .samples(id, since)
        .await
        .map_err(|error| GatewayError::unavailable(STATE_RETRY_AFTER).with_source(error))?
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
                sends: counts.map(|counts| u64::from(counts.sends)),
                receives: counts.map(|counts| u64::from(counts.receives)),
            }
        })
        .collect();
    Ok(Json(MetricsJson {
        queue_id: id.to_owned(),
        interval_seconds: state.metrics.interval.as_secs(),
        samples,
    }))
}
