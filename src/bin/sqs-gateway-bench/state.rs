//! The state family: the same gateway with its state in this process and with its state in
//! Redis (a `redis-server` child on loopback), both over the in-memory engine so that the store
//! is the only difference, measured in alternating rounds over the paths users take (the SQS
//! endpoint, signed; ezgh receive + ack); the store's calls per request come from the gateway's
//! own count (`sqsgw_state_store_calls_total`), each call one round trip.

use super::measure::Run;
use super::process::{Gateway, GatewayBackend, Secrets, metric_sum};
use super::report::{Check, Table, Verdict, count, ms, ms_delta, signed_ms, times};
use super::sqs_endpoint::{self, Queues};
use super::{BenchOptions, CLIENT_COUNTS, Operation, Target, ezgh, gateway_endpoint};
use std::path::Path;
use std::time::Duration;

/// Rounds per row: each round measures both gateways, one after the other.
const ROUNDS: usize = 2;
/// Longer than the bench gateways' metrics sampling (1 s): the count read is the row's.
const SAMPLED: Duration = Duration::from_millis(1_300);

/// One row: an operation at a client count, on both stores.
pub(super) struct StateRow {
    pub operation: Operation,
    pub clients: usize,
    pub in_process: Run,
    pub redis: Run,
    /// Store calls per HTTP request on the Redis gateway.
    pub calls_per_request: f64,
}

/// What the family measured, or why it could not.
pub(super) enum StateFigures {
    Measured(Vec<StateRow>),
    Skipped(String),
}

/// A `redis-server` of the bench's own, stopped when dropped.
pub(super) struct OwnRedis {
    pub(super) url: String,
    _child: tokio::process::Child,
}

impl OwnRedis {
    pub(super) async fn start(work: &Path) -> Result<Self, String> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free port for redis-server: {e}"))?
            .port();
        let dir = work.join("redis");
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let child = tokio::process::Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--maxmemory-policy", "noeviction"])
            .arg("--dir")
            .arg(&dir)
            .stdout(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start redis-server: {e}"))?;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(Self {
                    url: format!("redis://127.0.0.1:{port}/0"),
                    _child: child,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err("redis-server did not answer within 5 s".into())
    }
}

/// The store calls the gateway counted so far.
async fn calls(gateway: &Gateway) -> Result<f64, String> {
    tokio::time::sleep(SAMPLED).await;
    let scrape = gateway.scrape().await?;
    Ok(metric_sum(&scrape, "sqsgw_state_store_calls_total").unwrap_or(0.0))
}

/// Runs `operation` once on `gateway`: ezgh receive+ack, or the SQS rows (send, then
/// receive+delete of what was sent), each run with the operation it measured.
async fn run_once(
    gateway: &Gateway,
    secrets: &Secrets,
    operation: Operation,
    clients: usize,
    body: &str,
    messages: usize,
    target: Target,
) -> Result<Vec<(Operation, Run)>, String> {
    let endpoint = gateway_endpoint(gateway, secrets);
    match operation {
        Operation::ReceiveAck => {
            let url = sqs_endpoint::queue_url(&endpoint, "ezgh").await?;
            sqs_endpoint::send(&endpoint, &url, body, messages, 8).await?;
            eprintln!(
                "bench: {}: ezgh receive+ack, {clients} client(s)",
                target.label()
            );
            let run = ezgh::receive_and_ack(
                &gateway.base,
                &secrets.api_key.key,
                "ezgh",
                messages,
                clients,
            )
            .await?;
            Ok(vec![(Operation::ReceiveAck, run)])
        }
        Operation::Send | Operation::ReceiveDelete => {
            let scenarios = sqs_endpoint::measure(
                target,
                &endpoint,
                Queues::Configured,
                body,
                messages,
                &[clients],
            )
            .await?;
            Ok(scenarios
                .into_iter()
                .map(|scenario| (scenario.operation, scenario.run))
                .collect())
        }
    }
}

/// Measures the family; skipped when `redis-server` is not installed.
pub(super) async fn measure(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<StateFigures, String> {
    let redis = match OwnRedis::start(work).await {
        Ok(redis) => redis,
        Err(why) => return Ok(StateFigures::Skipped(why)),
    };
    let body = "x".repeat(options.body_bytes);
    let start = |name: &str, backend: GatewayBackend| {
        let name = name.to_owned();
        async move { Gateway::start(&name, &backend, secrets, work, Duration::from_secs(60)).await }
    };
    let in_process = start("gateway-state-in-process", GatewayBackend::InMemory).await?;
    let shared = start(
        "gateway-state-redis",
        GatewayBackend::InMemoryRedis(redis.url.clone()),
    )
    .await?;
    let mut rows = Vec::new();
    // Send and receive+delete share a queue: one pair of runs measures both.
    for operation in [Operation::ReceiveAck, Operation::ReceiveDelete] {
        for clients in CLIENT_COUNTS {
            let mut local = (Run::default(), Run::default());
            let mut remote = (Run::default(), Run::default());
            let mut calls_made = 0.0;
            // The requests that may call the store: a send calls none.
            let mut requests = 0usize;
            for _ in 0..ROUNDS {
                for (gateway, target, runs) in [
                    (&in_process, Target::GatewayInMemory, &mut local),
                    (&shared, Target::GatewayInMemoryRedis, &mut remote),
                ] {
                    let counted = target == Target::GatewayInMemoryRedis;
                    let before = if counted { calls(gateway).await? } else { 0.0 };
                    let measured = run_once(
                        gateway,
                        secrets,
                        operation,
                        clients,
                        &body,
                        options.messages,
                        target,
                    )
                    .await?;
                    if counted {
                        calls_made += calls(gateway).await? - before;
                    }
                    for (measured_operation, run) in measured {
                        if counted && measured_operation != Operation::Send {
                            requests += run.requests();
                        }
                        if measured_operation == Operation::Send {
                            runs.0.extend(run);
                        } else {
                            runs.1.extend(run);
                        }
                    }
                }
            }
            let calls_per_request = calls_made / requests.max(1) as f64;
            if operation == Operation::ReceiveAck {
                rows.push(StateRow {
                    operation,
                    clients,
                    in_process: local.1,
                    redis: remote.1,
                    calls_per_request,
                });
            } else {
                // A send is one request with no state; the calls are the receives' and deletes'.
                rows.push(StateRow {
                    operation: Operation::Send,
                    clients,
                    in_process: local.0,
                    redis: remote.0,
                    calls_per_request: f64::NAN,
                });
                rows.push(StateRow {
                    operation: Operation::ReceiveDelete,
                    clients,
                    in_process: local.1,
                    redis: remote.1,
                    calls_per_request,
                });
            }
        }
    }
    Ok(StateFigures::Measured(rows))
}

fn ratio(row: &StateRow) -> f64 {
    row.redis.messages_per_second() / row.in_process.messages_per_second()
}

/// The family's table.
pub(super) fn table(options: &BenchOptions, figures: &StateFigures) -> Table {
    let mut table = Table::new(
        format!(
            "State in Redis vs in this process: the same gateway over the in-memory engine, {} messages of {} bytes per row, {ROUNDS} alternating rounds; Redis is a redis-server child on loopback",
            count(options.messages as f64),
            options.body_bytes
        ),
        &[
            "operation",
            "clients",
            "in process msg/s",
            "Redis msg/s",
            "ratio",
            "p50 in process",
            "p50 added",
            "p99 added",
            "store calls per request",
        ],
        2,
    );
    let rows = match figures {
        StateFigures::Measured(rows) => rows,
        StateFigures::Skipped(why) => {
            table.note(format!("not measured: {why}"));
            return table;
        }
    };
    for row in rows {
        let p50 = |run: &Run| run.percentile(None, 0.5);
        let p99 = |run: &Run| run.percentile(None, 0.99);
        table.row(vec![
            match row.operation {
                Operation::ReceiveAck => "ezgh receive+ack".into(),
                other => format!("SQS {}", other.label()),
            },
            row.clients.to_string(),
            count(row.in_process.messages_per_second()),
            count(row.redis.messages_per_second()),
            times(ratio(row)),
            ms(p50(&row.in_process)),
            ms_delta(p50(&row.redis), p50(&row.in_process)).map_or("?".into(), signed_ms),
            ms_delta(p99(&row.redis), p99(&row.in_process)).map_or("?".into(), signed_ms),
            if row.calls_per_request.is_nan() {
                "0".into()
            } else {
                format!("{:.2}", row.calls_per_request)
            },
        ]);
    }
    table.note("p50/p99 are per HTTP request; a receive + ack loop makes two requests per batch of 10, so store calls per request count both");
    table
}

/// The targets: at least 0.8x the in-process figure, at most 0.3 ms added p50.
pub(super) fn checks(figures: &StateFigures) -> Vec<Check> {
    let StateFigures::Measured(rows) = figures else {
        return vec![Check {
            target: "state in Redis ≥ 0.8× in process, ≤ 0.3 ms added p50".into(),
            figure: "redis-server not available".into(),
            verdict: Verdict::NotMeasured,
        }];
    };
    let worst_ratio = rows.iter().map(ratio).fold(f64::INFINITY, f64::min);
    let worst_added = rows
        .iter()
        .filter_map(|row| {
            ms_delta(
                row.redis.percentile(None, 0.5),
                row.in_process.percentile(None, 0.5),
            )
        })
        .fold(f64::NEG_INFINITY, f64::max);
    vec![
        Check {
            target: "state in Redis ≥ 0.8× the in-process msg/s (every row)".into(),
            figure: format!("lowest {}", times(worst_ratio)),
            verdict: Verdict::of(worst_ratio >= 0.8),
        },
        Check {
            target: "state in Redis adds ≤ 0.3 ms to the p50 (every row)".into(),
            figure: format!("most {}", signed_ms(worst_added)),
            verdict: Verdict::of(worst_added <= 0.3),
        },
    ]
}
