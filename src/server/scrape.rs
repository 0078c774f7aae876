//! The Prometheus scrape: the service's own recorder (the core's meters write to it), process
//! metrics, gauges sampled on an interval, and `GET /metrics` in the text format.

use crate::core::Gateway;
use crate::core::gateway::ROUND_SHARE;
use crate::core::metrics::meters::Meters;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use metrics_util::MetricKindMask;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Latency buckets, seconds: from a cached answer to a whole long poll.
const LATENCY_BUCKETS: [f64; 14] = [
    0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 25.0,
];

/// The recorder, its renderer and the process collector.
#[derive(Clone)]
pub struct Scrape {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
    process: metrics_process::Collector,
    sample_every: Duration,
}

impl std::fmt::Debug for Scrape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrape").finish_non_exhaustive()
    }
}

impl Scrape {
    /// A recorder of this service's own; sampled gauges of a queue that went away disappear
    /// after a few samples without it.
    pub fn new(sample_every: Duration) -> Self {
        let builder = PrometheusBuilder::new()
            .idle_timeout(
                MetricKindMask::GAUGE,
                Some((sample_every * 4).max(Duration::from_secs(60))),
            )
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &LATENCY_BUCKETS);
        // Buckets are given, so the builder cannot refuse them; fall back to summaries if it did.
        let recorder = match builder {
            Ok(builder) => builder.build_recorder(),
            Err(_) => PrometheusBuilder::new().build_recorder(),
        };
        let handle = recorder.handle();
        let process = metrics_process::Collector::default();
        metrics::with_local_recorder(&recorder, || process.describe());
        Self {
            recorder: Arc::new(recorder),
            handle,
            process,
            sample_every,
        }
    }

    /// Meters that write here.
    pub fn meters(&self) -> Meters {
        Meters::new(Arc::clone(&self.recorder) as Arc<dyn metrics::Recorder + Send + Sync>)
    }

    /// The text format, with process metrics read now.
    pub fn render(&self) -> String {
        metrics::with_local_recorder(self.recorder.as_ref(), || self.process.collect());
        self.handle.run_upkeep();
        self.handle.render()
    }

    /// `GET /metrics`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/metrics", get(metrics_text))
            .with_state(self.clone())
    }

    /// Samples the gauges every interval until `stop`.
    pub async fn sample(self, gateway: Arc<Gateway>, stop: CancellationToken) {
        let mut every = tokio::time::interval(self.sample_every);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {
                    let until = tokio::time::Instant::now() + self.sample_every.mul_f64(ROUND_SHARE);
                    gateway.sample_meters(until).await;
                    self.handle.run_upkeep();
                }
                () = stop.cancelled() => return,
            }
        }
    }
}

async fn metrics_text(State(scrape): State<Scrape>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        scrape.render(),
    )
}
