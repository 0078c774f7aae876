//! The sampling family: a basaltic metrics round over LocalStack with 10, 100 and 1,000 queues.
//! Each row is how long a round took to count its queues (the gateway's own
//! `sqsgw_basaltic_metrics_round_seconds`) against the interval, and the counts a second it made
//! against LocalStack's own rate for one client asking one count after another, measured in the
//! same run (LocalStack answers one request at a time: that rate is its floor).

use super::ezgh::http_client;
use super::process::{Gateway, GatewayBackend, Secrets, metric_sum, metric_sum_where};
use super::report::{Table, count, times};
use super::sqs_endpoint::{self, Endpoint};
use aws_sdk_sqs::types::QueueAttributeName;
use futures_util::StreamExt as _;
use sqs_gateway::core::gateway::CountLimits;
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
        fan_in: true,
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
            "counts/s",
            "vs LocalStack alone",
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
    let alone = 1.0 / count_p50.as_secs_f64();
    for row in rows {
        let median = median(&row.round_seconds);
        let slowest = row.round_seconds.iter().copied().fold(0.0, f64::max);
        let rate = counts_per_second(row);
        table.row(vec![
            count(row.queues as f64),
            format!("{median:.2}"),
            format!("{slowest:.2}"),
            format!("{:.0} %", median / INTERVAL.as_secs_f64() * 100.0),
            count(row.gaps),
            count(rate),
            times(rate / alone),
        ]);
    }
    table.note(format!(
        "LocalStack alone: one client's GetQueueAttributes one after another, {} a second ({:.1} ms at p50 of {PROBES}); LocalStack answers one request at a time, so counting {} at once can only overlap the gateway's own work with it (against Amazon SQS, which serves them together, the round would take about a {}th). The depth gauges read the same queues every 15 s beside the rounds. Reported, not judged",
        count(alone),
        count_p50.as_secs_f64() * 1000.0,
        limits.concurrency,
        limits.concurrency
    ));
    table
}

/// Counts a second the row's rounds made: the queues each counted, over the time it took.
fn counts_per_second(row: &SamplingRow) -> f64 {
    let rounds = row.round_seconds.len() as f64;
    let counted = row.queues as f64 * rounds - row.gaps;
    let seconds: f64 = row.round_seconds.iter().sum();
    if seconds > 0.0 {
        counted / seconds
    } else {
        0.0
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_second_leave_out_the_gaps() {
        let row = SamplingRow {
            queues: 1_000,
            round_seconds: vec![9.0, 9.0],
            gaps: 1_100.0,
        };
        assert!((counts_per_second(&row) - 50.0).abs() < 1e-9);
    }
}
