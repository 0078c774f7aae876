//! The cost family: what the gateway costs in front of SQS, in SQS requests and connections,
//! with `backend.fan_in` on against off in the same run, counted at a proxy between the gateway
//! and LocalStack (not by the gateway's own metrics). Idle consumers long-poll an empty queue;
//! busy ones receive and acknowledge over ezgh; SQS bills every request (US$0.40 a million at list
//! price), so requests per message and per waiting consumer are the cost.

use super::*;
use counting_proxy::{CountingProxy, Seen};
use measure::Run;
use std::time::Instant;

/// How long each idle consumer waits (one full long poll).
const IDLE_WAIT_SECONDS: u64 = 20;
/// Consumer counts of the idle rows.
const IDLE_CONSUMERS: [usize; 3] = [1, 8, 200];
/// (consumers, messages a receive asks for) of the busy rows.
const BUSY: [(usize, usize); 4] = [(1, 1), (8, 1), (200, 1), (8, 10)];
/// Messages each busy row moves, at most.
const BUSY_MESSAGES: usize = 2_000;
/// US dollars SQS bills per request at list price.
const DOLLARS_PER_REQUEST: f64 = 0.40 / 1_000_000.0;

/// Idle consumers: receives SQS saw per waiting consumer-minute, and connections.
pub(crate) struct IdleRow {
    consumers: usize,
    fan_in: bool,
    seen: Seen,
    waited: Duration,
}

impl IdleRow {
    fn receives_per_consumer_minute(&self) -> f64 {
        self.seen.of("ReceiveMessage") as f64
            / (self.consumers as f64 * self.waited.as_secs_f64() / 60.0).max(f64::EPSILON)
    }
}

/// Busy consumers: SQS calls per message moved, and the drain as users saw it.
pub(crate) struct BusyRow {
    consumers: usize,
    max_messages: usize,
    fan_in: bool,
    seen: Seen,
    run: Run,
}

impl BusyRow {
    fn calls_per_message(&self) -> f64 {
        self.seen.total() as f64 / self.run.messages.max(1) as f64
    }

    /// `total = receives + the other calls (deletes, the gateway's depth samples) (connections)`,
    /// per message.
    fn calls_cell(&self) -> String {
        let messages = self.run.messages.max(1) as f64;
        format!(
            "{:.3} = {:.3} + {:.3} ({})",
            self.calls_per_message(),
            self.seen.of("ReceiveMessage") as f64 / messages,
            (self.seen.total() - self.seen.of("ReceiveMessage")) as f64 / messages,
            self.seen.peers.len()
        )
    }
}

pub(crate) enum CostFigures {
    Measured {
        idle: Vec<IdleRow>,
        busy: Vec<BusyRow>,
    },
    Skipped(String),
}

pub(crate) async fn cost_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
    localstack: Option<&Endpoint>,
) -> Result<CostFigures, String> {
    let Some(localstack) = localstack else {
        return Ok(CostFigures::Skipped("LocalStack does not answer".into()));
    };
    let body = "x".repeat(options.body_bytes);
    let messages = options.messages.clamp(BATCH, BUSY_MESSAGES);
    let (mut idle, mut busy) = (Vec::new(), Vec::new());
    for fan_in in [false, true] {
        let suffix = format!("{:08x}", rand::random::<u32>());
        let idle_name = format!("bench-cost-idle-{suffix}");
        let busy_name = format!("bench-cost-busy-{suffix}");
        let idle_url = sqs_endpoint::create_queue(localstack, &idle_name).await?;
        let busy_url = sqs_endpoint::create_queue(localstack, &busy_name).await?;
        let proxy = CountingProxy::start(&localstack.url).await?;
        let backend = GatewayBackend::Sqs {
            endpoint: proxy.url.clone(),
            queues: vec![("polls".into(), idle_name), ("ezgh".into(), busy_name)],
            redis: None,
            fan_in,
        };
        let name = if fan_in {
            "gateway-cost-fan-in"
        } else {
            "gateway-cost-one-to-one"
        };
        let gateway =
            Gateway::start(name, &backend, secrets, work, Duration::from_secs(60)).await?;
        let measured = async {
            for consumers in IDLE_CONSUMERS {
                idle.push(idle_row(&gateway, secrets, &proxy, consumers, fan_in).await?);
            }
            for (consumers, max_messages) in BUSY {
                sqs_endpoint::send(localstack, &busy_url, &body, messages, 8).await?;
                proxy.take();
                eprintln!(
                    "bench: cost: {consumers} consumer(s) of {max_messages} message(s), fan-in {}",
                    if fan_in { "on" } else { "off" }
                );
                let run = ezgh::receive_and_ack_across(
                    std::slice::from_ref(&gateway.base),
                    &secrets.api_key.key,
                    "ezgh",
                    messages,
                    consumers,
                    max_messages,
                )
                .await?;
                busy.push(BusyRow {
                    consumers,
                    max_messages,
                    fan_in,
                    seen: proxy.take(),
                    run,
                });
            }
            Ok::<(), String>(())
        }
        .await;
        drop(gateway);
        sqs_endpoint::delete_queue(localstack, &idle_url).await;
        sqs_endpoint::delete_queue(localstack, &busy_url).await;
        measured?;
    }
    Ok(CostFigures::Measured { idle, busy })
}

/// `consumers` ezgh receives waiting out one long poll each on the empty queue, all at once.
async fn idle_row(
    gateway: &Gateway,
    secrets: &Secrets,
    proxy: &CountingProxy,
    consumers: usize,
    fan_in: bool,
) -> Result<IdleRow, String> {
    eprintln!(
        "bench: cost: {consumers} idle consumer(s), fan-in {}",
        if fan_in { "on" } else { "off" }
    );
    let url = ezgh::receive_url(&gateway.base, "polls");
    let body = json_body(IDLE_WAIT_SECONDS);
    // The queue resolved first, so the row counts waiting alone.
    let http = ezgh::http_client()?;
    ezgh::receive(&http, &url, &secrets.api_key.key, &json_body(0)).await?;
    proxy.take();
    let started = Instant::now();
    let mut polls = tokio::task::JoinSet::new();
    for _ in 0..consumers {
        let (url, key, body) = (url.clone(), secrets.api_key.key.clone(), body.clone());
        polls.spawn(async move {
            let http = ezgh::http_client()?;
            ezgh::receive(&http, &url, &key, &body).await
        });
    }
    while let Some(answer) = polls.join_next().await {
        answer.map_err(|e| e.to_string())??;
    }
    Ok(IdleRow {
        consumers,
        fan_in,
        waited: started.elapsed(),
        seen: proxy.take(),
    })
}

fn json_body(wait_seconds: u64) -> String {
    format!(r#"{{"maxMessages": 1, "waitSeconds": {wait_seconds}}}"#)
}

pub(crate) fn cost_table(figures: &CostFigures) -> Table {
    let mut table = Table::new(
        "In front of SQS: SQS requests and connections, fan-in off against on (ezgh consumers, LocalStack behind a counting proxy)",
        &["consumers", "fan-in off", "fan-in on", "on / off"],
        1,
    );
    let CostFigures::Measured { idle, busy } = figures else {
        if let CostFigures::Skipped(why) = figures {
            table.note(format!("skipped: {why}"));
        }
        return table;
    };
    let pair = |consumers: usize| {
        let find = |fan_in| {
            idle.iter()
                .find(|row| row.consumers == consumers && row.fan_in == fan_in)
        };
        (find(false), find(true))
    };
    for consumers in IDLE_CONSUMERS {
        let (Some(off), Some(on)) = pair(consumers) else {
            continue;
        };
        let (off_rate, on_rate) = (
            off.receives_per_consumer_minute(),
            on.receives_per_consumer_minute(),
        );
        table.row(vec![
            format!("{consumers} idle, {IDLE_WAIT_SECONDS} s long polls: SQS receives per waiting consumer-minute (connections)"),
            format!("{off_rate:.3} ({})", off.seen.peers.len()),
            format!("{on_rate:.3} ({})", on.seen.peers.len()),
            times(on_rate / off_rate.max(f64::EPSILON)),
        ]);
    }
    for (consumers, max_messages) in BUSY {
        let find = |fan_in| {
            busy.iter().find(|row| {
                row.consumers == consumers
                    && row.max_messages == max_messages
                    && row.fan_in == fan_in
            })
        };
        let (Some(off), Some(on)) = (find(false), find(true)) else {
            continue;
        };
        table.row(vec![
            format!("{consumers} receiving {max_messages} and acknowledging: SQS calls per message = receives + other calls (connections)"),
            off.calls_cell(),
            on.calls_cell(),
            times(on.calls_per_message() / off.calls_per_message().max(f64::EPSILON)),
        ]);
        table.row(vec![
            "… messages a second; receive p50 / p99".into(),
            format!(
                "{}; {} / {} ms",
                count(off.run.messages_per_second()),
                ms(off.run.percentile(Some(RequestKind::EzghReceive), 0.5)),
                ms(off.run.percentile(Some(RequestKind::EzghReceive), 0.99))
            ),
            format!(
                "{}; {} / {} ms",
                count(on.run.messages_per_second()),
                ms(on.run.percentile(Some(RequestKind::EzghReceive), 0.5)),
                ms(on.run.percentile(Some(RequestKind::EzghReceive), 0.99))
            ),
            times(on.run.messages_per_second() / off.run.messages_per_second().max(f64::EPSILON)),
        ]);
    }
    if let (Some(off), Some(on)) = pair(200) {
        // Off, each consumer pays its own polls; on, the queue's shared polls are paid once.
        let minutes_a_day = 60.0 * 24.0;
        let off_day = off.receives_per_consumer_minute() * minutes_a_day * 10_000.0;
        let on_day = on.seen.of("ReceiveMessage") as f64
            / (on.waited.as_secs_f64() / 60.0).max(f64::EPSILON)
            * minutes_a_day;
        table.note(format!(
            "10,000 idle consumers of one queue at these rates: {} SQS requests a day (US${:.2}) with fan-in off, {} (US${:.4}) on, whatever the number of consumers",
            count(off_day),
            off_day * DOLLARS_PER_REQUEST,
            count(on_day),
            on_day * DOLLARS_PER_REQUEST
        ));
    }
    table
}

pub(crate) fn cost_checks(figures: &CostFigures) -> Vec<Check> {
    let CostFigures::Measured { idle, busy } = figures else {
        return Vec::new();
    };
    let idle_on = |consumers| {
        idle.iter()
            .find(|row| row.fan_in && row.consumers == consumers)
    };
    let busy_row = |consumers, max_messages, fan_in| {
        busy.iter().find(|row| {
            row.consumers == consumers && row.max_messages == max_messages && row.fan_in == fan_in
        })
    };
    let mut checks = Vec::new();
    if let Some(row) = idle_on(200) {
        let rate = row.receives_per_consumer_minute();
        checks.push(Check {
            target: "fan-in: ≤ 0.05 SQS receives per waiting consumer-minute (200 idle)".into(),
            figure: format!("{rate:.3}"),
            verdict: Verdict::of(rate <= 0.05),
        });
    }
    let most_connections = idle
        .iter()
        .filter(|row| row.fan_in)
        .map(|row| row.seen.peers.len())
        .chain(
            busy.iter()
                .filter(|row| row.fan_in)
                .map(|row| row.seen.peers.len()),
        )
        .max()
        .unwrap_or(0);
    checks.push(Check {
        target: "fan-in: ≤ 16 connections to SQS (every row)".into(),
        figure: count(most_connections as f64),
        verdict: Verdict::of(most_connections <= 16),
    });
    for (max_messages, bound) in [(1, 0.5), (10, 0.25)] {
        if let Some(row) = busy_row(8, max_messages, true) {
            let per = row.calls_per_message();
            checks.push(Check {
                target: format!(
                    "fan-in: ≤ {bound} SQS calls per message (8 consumers of {max_messages})"
                ),
                figure: format!("{per:.3}"),
                verdict: Verdict::of(per <= bound),
            });
        }
    }
    if let (Some(off), Some(on)) = (busy_row(8, 1, false), busy_row(8, 1, true)) {
        let added = ms_delta(
            on.run.percentile(Some(RequestKind::EzghReceive), 0.5),
            off.run.percentile(Some(RequestKind::EzghReceive), 0.5),
        );
        checks.push(Check {
            target: "fan-in: receive p50 added ≤ 2 ms (8 consumers of 1)".into(),
            figure: added.map_or_else(|| "-".into(), |d| format!("{} ms", signed_ms(d))),
            verdict: added.map_or(Verdict::NotMeasured, |d| Verdict::of(d <= 2.0)),
        });
        let ratio = on.run.messages_per_second() / off.run.messages_per_second().max(f64::EPSILON);
        checks.push(Check {
            target: "fan-in: throughput ≥ 0.9× fan-in off (8 consumers of 1)".into(),
            figure: times(ratio),
            verdict: Verdict::of(ratio >= 0.9),
        });
    }
    checks
}
