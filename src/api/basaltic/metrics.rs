//! Queue metrics as a time series the gateway samples itself: every `metrics_interval_seconds`
//! (10 by default) each basaltic queue's visible, in-flight and delayed counts, the age of its
//! oldest message, and the deliveries handed out again since the last sample; kept a day in
//! memory. A sample the gateway could not take is a gap (`null`s), never a zero.

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

/// One sample of one queue; `None` everywhere for a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    at: DateTime<Utc>,
    counts: Option<Counts>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    visible: u64,
    in_flight: u64,
    delayed: u64,
    oldest_age_seconds: Option<u64>,
    repeated_receives: u64,
}

#[derive(Debug, Default)]
struct Series {
    samples: VecDeque<Sample>,
    /// The gateway's redelivery counter at the last sample.
    redeliveries: u64,
}

/// The samples of every basaltic queue, by queue id.
#[derive(Debug)]
pub(super) struct Metrics {
    interval: Duration,
    series: Mutex<HashMap<String, Series>>,
}

impl Metrics {
    pub(super) fn new(interval: Duration) -> Self {
        Self {
            interval,
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
        let mut taken = Vec::new();
        for (alias, queue) in gateway.aliases_in(Namespace::Basaltic) {
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
                oldest_age_seconds: stats.oldest_age_seconds,
                repeated_receives: redeliveries.saturating_sub(entry.redeliveries),
            });
            entry.redeliveries = redeliveries;
            entry.samples.push_back(Sample { at, counts });
            while entry.samples.len() > kept {
                entry.samples.pop_front();
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
                    .filter(|sample| since.is_none_or(|since| sample.at >= since))
                    .copied()
                    .collect()
            })
            .unwrap_or_default()
    }
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
            state.metrics.sample(&state.gateway).await;
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
                at: sample.at.to_rfc3339_opts(SecondsFormat::Secs, true),
                visible: counts.map(|counts| counts.visible),
                in_flight: counts.map(|counts| counts.in_flight),
                delayed: counts.map(|counts| counts.delayed),
                oldest_message_age_seconds: counts.and_then(|counts| counts.oldest_age_seconds),
                repeated_receives: counts.map(|counts| counts.repeated_receives),
            }
        })
        .collect();
    Ok(Json(MetricsJson {
        queue_id: id.to_owned(),
        interval_seconds: state.metrics.interval.as_secs(),
        samples,
    }))
}
