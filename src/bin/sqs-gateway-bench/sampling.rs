//! The sampling family: a basaltic metrics round over LocalStack with 10, 100 and 1,000 queues.
//! Each row is how long a round took to count its queues (the gateway's own
//! `sqsgw_basaltic_metrics_round_seconds`) against the interval, beside its floor (one
//! `GetQueueAttributes` made directly against LocalStack in the same run, at p50, times the
//! waves of 16 the counts take) and beside the design that counted one queue after another
//! (that p50 times the queues).

use super::ezgh::http_client;
use super::process::{Gateway, GatewayBackend, Secrets, metric_sum, metric_sum_where};
use super::report::{Check, Table, Verdict, count, times};
use super::sqs_endpoint::{self, Endpoint};
use aws_sdk_sqs::types::QueueAttributeName;
use futures_util::StreamExt as _;
use sqs_gateway::core::gateway::{CountLimits, ROUND_SHARE};
use sqs_gateway::credentials::api_keys;
use std::path::Path;
use std::time::{Duration, Instant};

/// The queue counts measured, each on top of the one before.
const SIZES: [usize; 3] = [10, 100, 1_000];
/// The gateway's sampling interval (the default).
const INTERVAL: Duration = Duration::from_secs(10);
/// Rounds measured at each size, after the first one that held every queue.
const ROUNDS: usize = 3;
/// Direct counts timed for the floor.
const PROBES: usize = 50;
/// Queues created or deleted through the gateway at once.
const SETUP_CONCURRENCY: usize = 8;

/// One size's rounds.
pub(super) struct SamplingRow {
    pub queues: usize,
    /// Each measured round's counting time, in seconds.
    pub round_seconds: Vec<f64>,
    /// Queues the measured rounds left as gaps, in all.
    pub gaps: f64,
}

/// What the family measured, or why it could not.
pub(super) enum SamplingFigures {
    Measured {
        /// One direct `GetQueueAttributes` at p50.
        count_p50: Duration,
        rows: Vec<SamplingRow>,
    },
    Skipped(String),
}

/// A basaltic key that may do everything, and its config entry.
fn basaltic_key() -> (String, String) {
    let key = api_keys::generate_key();
    let entry = format!(
        "\n[basaltic]\nmetrics_interval_seconds = {}\n\n[[basaltic.keys]]\nid = \"{}\"\nname = \"bench\"\nhash = \"{}\"\ngrants = {{ \"*\" = [\"*\"] }}\n",
        INTERVAL.as_secs(),
        key.id,
        key.hash
    );
    (key.key, entry)
}

/// Measures the family; skipped without LocalStack.
pub(super) async fn measure(
    work: &Path,
    secrets: &Secrets,
    localstack: Option<&Endpoint>,
) -> Result<SamplingFigures, String> {
    let Some(localstack) = localstack else {
        return Ok(SamplingFigures::Skipped(
            "LocalStack does not answer".into(),
        ));
    };
    let count_p50 = direct_count_p50(localstack).await?;
    let (key, entry) = basaltic_key();
    let backend = GatewayBackend::Sqs {
        endpoint: localstack.url.clone(),
        queues: Vec::new(),
        redis: None,
    };
    let gateway = Gateway::start_with(
        "gateway-sampling",
        &backend,
        secrets,
        work,
        Duration::from_secs(60),
        &entry,
    )
    .await?;
    let client = http_client()?;
    let run = format!("{:06x}", rand::random::<u32>() & 0xff_ffff);
    let mut made: Vec<String> = Vec::new();
    let mut rows = Vec::new();
    let mut outcome = Ok(());
    for size in SIZES {
        let names: Vec<String> = (made.len()..size)
            .map(|n| format!("bench-sampling-{run}-{n:04}"))
            .collect();
        eprintln!("bench: sampling: {size} queues over LocalStack");
        match create(&client, &gateway.base, &key, names).await {
            Ok(ids) => made.extend(ids),
            Err(why) => {
                outcome = Err(why);
                break;
            }
        }
        match rounds_over(&gateway, size).await {
            Ok(row) => rows.push(row),
            Err(why) => {
                outcome = Err(why);
                break;
            }
        }
    }
    delete(&client, &gateway.base, &key, &made).await;
    outcome?;
    Ok(SamplingFigures::Measured { count_p50, rows })
}

/// One `GetQueueAttributes` (every attribute, as the gateway asks) made directly against
/// LocalStack, at p50 of [`PROBES`].
async fn direct_count_p50(localstack: &Endpoint) -> Result<Duration, String> {
    let name = format!("bench-sampling-probe-{:08x}", rand::random::<u32>());
    let url = sqs_endpoint::create_queue(localstack, &name).await?;
    let sqs = localstack.client();
    let mut took = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        let started = Instant::now();
        let answer = sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await;
        took.push(started.elapsed());
        if let Err(error) = answer {
            sqs_endpoint::delete_queue(localstack, &url).await;
            return Err(format!("GetQueueAttributes against LocalStack: {error}"));
        }
    }
    sqs_endpoint::delete_queue(localstack, &url).await;
    took.sort();
    Ok(took[took.len() / 2])
}

/// Creates basaltic queues through the gateway; answers their ids.
async fn create(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    names: Vec<String>,
) -> Result<Vec<String>, String> {
    let made: Vec<Result<String, String>> = futures_util::stream::iter(names)
        .map(|name| async move {
            let answer = client
                .post(format!("{base}/v1/queues"))
                .bearer_auth(key)
                .json(&serde_json::json!({ "name": name, "type": "standard" }))
                .send()
                .await
                .map_err(|e| format!("creating {name}: {e}"))?;
            let status = answer.status();
            let body: serde_json::Value = answer
                .json()
                .await
                .map_err(|e| format!("creating {name}: {e}"))?;
            match body["result"]["id"].as_str() {
                Some(id) if status.is_success() => Ok(id.to_owned()),
                _ => Err(format!("creating {name}: {status} {body}")),
            }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect()
        .await;
    made.into_iter().collect()
}

/// Deletes the bench's queues (best effort: a failure leaves a queue in LocalStack).
async fn delete(client: &reqwest::Client, base: &str, key: &str, ids: &[String]) {
    futures_util::stream::iter(ids)
        .for_each_concurrent(SETUP_CONCURRENCY, |id| async move {
            let deleted = client
                .delete(format!("{base}/v1/queues/{id}"))
                .bearer_auth(key)
                .send()
                .await;
            if !deleted.is_ok_and(|answer| answer.status().is_success()) {
                eprintln!("bench: sampling: queue {id} not deleted");
            }
        })
        .await;
}

/// What the scrape says of the last round: (rounds appended, seconds, sampled, gaps).
async fn last_round(gateway: &Gateway) -> Result<(f64, f64, f64, f64), String> {
    let scrape = gateway.scrape().await?;
    let value = |name| metric_sum(&scrape, name).unwrap_or(0.0);
    let outcome = |outcome| {
        metric_sum_where(
            &scrape,
            "sqsgw_basaltic_metrics_round_queues",
            &[("outcome", outcome)],
        )
        .unwrap_or(0.0)
    };
    Ok((
        value("sqsgw_basaltic_metrics_rounds_total"),
        value("sqsgw_basaltic_metrics_round_seconds"),
        outcome("sampled"),
        outcome("gap"),
    ))
}

/// Waits for a round that holds `size` queues, then measures the [`ROUNDS`] after it.
async fn rounds_over(gateway: &Gateway, size: usize) -> Result<SamplingRow, String> {
    let give_up = Instant::now() + INTERVAL * (ROUNDS as u32 + 4);
    let mut seen = None;
    let mut row = SamplingRow {
        queues: size,
        round_seconds: Vec::new(),
        gaps: 0.0,
    };
    while row.round_seconds.len() < ROUNDS {
        if Instant::now() > give_up {
            return Err(format!(
                "sampling: no {ROUNDS} rounds of {size} queues within {:?}",
                INTERVAL * (ROUNDS as u32 + 4)
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (rounds, seconds, sampled, gaps) = last_round(gateway).await?;
        if seen == Some(rounds) || sampled + gaps < size as f64 {
            continue;
        }
        // The first round seen with every queue may have started before the last were made.
        if seen.is_some() {
            row.round_seconds.push(seconds);
            row.gaps += gaps;
        }
        seen = Some(rounds);
    }
    Ok(row)
}

/// The family's table.
pub(super) fn table(figures: &SamplingFigures) -> Table {
    let limits = CountLimits::default();
    let mut table = Table::new(
        format!(
            "Basaltic metrics rounds over LocalStack: every queue counted each {} s, {} at a time, {ROUNDS} rounds a size",
            INTERVAL.as_secs(),
            limits.concurrency
        ),
        &[
            "queues",
            "round s (median)",
            "slowest s",
            "share of interval",
            "gaps",
            "floor s",
            "vs floor",
            "one after another s",
        ],
        1,
    );
    let (count_p50, rows) = match figures {
        SamplingFigures::Measured { count_p50, rows } => (*count_p50, rows),
        SamplingFigures::Skipped(why) => {
            table.note(format!("not measured: {why}"));
            return table;
        }
    };
    for row in rows {
        let median = median(&row.round_seconds);
        let slowest = row.round_seconds.iter().copied().fold(0.0, f64::max);
        let floor = floor_seconds(row.queues, count_p50, limits.concurrency);
        table.row(vec![
            count(row.queues as f64),
            format!("{median:.2}"),
            format!("{slowest:.2}"),
            format!("{:.0} %", median / INTERVAL.as_secs_f64() * 100.0),
            count(row.gaps),
            format!("{floor:.2}"),
            times(median / floor),
            format!("{:.2}", count_p50.as_secs_f64() * row.queues as f64),
        ]);
    }
    table.note(format!(
        "floor: one GetQueueAttributes made directly against LocalStack ({:.1} ms at p50 of {PROBES}) times the waves of {} the counts take; one after another: that p50 times the queues (the design before)",
        count_p50.as_secs_f64() * 1000.0,
        limits.concurrency
    ));
    table
}

/// The waves of `concurrency` counts `queues` take, each one direct count long.
fn floor_seconds(queues: usize, count_p50: Duration, concurrency: usize) -> f64 {
    queues.div_ceil(concurrency) as f64 * count_p50.as_secs_f64()
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The target: every size's rounds end within their share of the interval, with no gap.
pub(super) fn checks(figures: &SamplingFigures) -> Vec<Check> {
    let target =
        "a metrics round of 1,000 queues over LocalStack counts them all within its interval"
            .to_owned();
    let SamplingFigures::Measured { rows, .. } = figures else {
        return vec![Check {
            target,
            figure: "-".into(),
            verdict: Verdict::NotMeasured,
        }];
    };
    let Some(largest) = rows.iter().max_by_key(|row| row.queues) else {
        return Vec::new();
    };
    let slowest = largest.round_seconds.iter().copied().fold(0.0, f64::max);
    let within = INTERVAL.as_secs_f64() * ROUND_SHARE;
    vec![Check {
        target,
        figure: format!(
            "{} queues: slowest round {slowest:.2} s of {within:.1} s, {} gaps",
            count(largest.queues as f64),
            count(largest.gaps)
        ),
        verdict: Verdict::of(largest.queues >= 1_000 && slowest <= within && largest.gaps == 0.0),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_the_waves_of_counts_one_direct_count_long() {
        let p50 = Duration::from_millis(20);
        assert!((floor_seconds(10, p50, 16) - 0.02).abs() < 1e-9);
        assert!((floor_seconds(100, p50, 16) - 0.14).abs() < 1e-9);
        assert!((floor_seconds(1_000, p50, 16) - 1.26).abs() < 1e-9);
    }
}
