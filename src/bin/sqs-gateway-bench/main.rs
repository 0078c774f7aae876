//! `sqs-gateway-bench` (also reached as `sqs-gateway bench`): what users feel, measured over
//! HTTP against baselines of the same run. It is a binary of its own, beside the product's: the
//! gateway it measures is the `sqs-gateway` binary next to it, started as child processes.
//!
//! Gateways (and the bare-handler ceiling, a command of this binary) run as child processes, so each one's
//! resident memory is its own; clients are the ones users run (`aws-sdk-sqs`, signed; reqwest for
//! ezgh), the same code for every target of a family, so ratios compare like with like. Families:
//! the SQS endpoint against LocalStack ([`sqs_endpoint`]), ezgh against the ceiling ([`ezgh`]),
//! idle long polls ([`long_polls`]), a stored backlog ([`backlog`]), the state in Redis
//! ([`state`]) and three replicas against one ([`replicas`]); the figures are judged
//! against the gateway's targets ([`report`]).

// A benchmark measures real elapsed time (and prints the date), which is what it reports.
#![allow(clippy::disallowed_methods)]

pub(crate) mod backlog;
pub(crate) mod ceiling;
mod ezgh;
mod load;
mod long_polls;
mod measure;
mod process;
mod proxy;
mod replicas;
mod report;
mod sqs_endpoint;
mod state;

use long_polls::PollTransport;
use measure::{RequestKind, mebibytes};
use process::{Ceiling, Gateway, GatewayBackend, Secrets};
use report::{Check, Table, Verdict, count, ms, ms_delta, percent, signed_ms, times};
use sqs_endpoint::{BATCH, Endpoint, Queues};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to measure.
#[derive(Debug, Clone)]
pub(crate) struct BenchOptions {
    /// Messages per throughput row.
    pub messages: usize,
    /// Body size in bytes of the throughput rows.
    pub body_bytes: usize,
    /// LocalStack's endpoint; `None` skips LocalStack (and the gateway over it).
    pub localstack: Option<String>,
    /// Idle long polls opened at once.
    pub long_polls: usize,
    /// Stored 256-byte messages of the backlog figures.
    pub backlog_messages: usize,
    /// Stored 64 KiB messages (the figure is scaled to a million).
    pub large_body_messages: usize,
    /// Stored 256-byte messages of the large reopen (0: skipped).
    pub backlog_messages_large: usize,
    /// Where the temporary data directories go (default: the system's temp directory).
    pub dir: Option<PathBuf>,
    /// Families to run (empty: all).
    pub only: Vec<Family>,
    /// Also write the header and tables as Markdown to this file (for the README).
    pub markdown: Option<PathBuf>,
    /// Keep the temporary directory (configs, logs of every child) for a look afterwards.
    pub keep: bool,
}

/// The scenario families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Family {
    /// The SQS endpoint against LocalStack.
    Sqs,
    /// ezgh receive + ack against the bare-handler ceiling.
    Ezgh,
    /// Idle long polls.
    Polls,
    /// Stored backlogs.
    Backlog,
    /// The state in Redis against the state in this process.
    State,
    /// Three replicas over LocalStack against one.
    Replicas,
}

/// What a row measured (tables list rows in this order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    LocalStack,
    /// LocalStack directly, the client asking for keep-alive as the gateway does.
    LocalStackKeptAlive,
    GatewayOverLocalStack,
    GatewayInMemory,
    /// In memory, with the gateway's state in Redis.
    GatewayInMemoryRedis,
    GatewayDurable,
    Ceiling,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Self::LocalStack => "LocalStack, direct",
            Self::LocalStackKeptAlive => "LocalStack, direct, keep-alive",
            Self::GatewayOverLocalStack => "gateway over LocalStack",
            Self::GatewayInMemory => "gateway, embedded in memory",
            Self::GatewayInMemoryRedis => "gateway, embedded in memory, state in Redis",
            Self::GatewayDurable => "gateway, embedded durable",
            Self::Ceiling => "bare axum handler (ceiling)",
        }
    }
}

/// The loop a row ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Send,
    ReceiveDelete,
    ReceiveAck,
}

impl Operation {
    fn label(self) -> &'static str {
        match self {
            Self::Send => "send",
            Self::ReceiveDelete => "receive+delete",
            Self::ReceiveAck => "receive+ack",
        }
    }
}

/// One measured row.
#[derive(Debug, Clone)]
struct Scenario {
    target: Target,
    operation: Operation,
    clients: usize,
    run: measure::Run,
}

const CLIENT_COUNTS: [usize; 2] = [1, 8];
/// Messages LocalStack is warmed up with, unmeasured, before its first row.
const LOCALSTACK_WARM_UP: usize = 2_000;
/// How long the fsync ceiling loop runs.
const FSYNC_LOOP: Duration = Duration::from_secs(3);

fn find(
    scenarios: &[Scenario],
    target: Target,
    operation: Operation,
    clients: usize,
) -> Option<&Scenario> {
    scenarios
        .iter()
        .find(|s| s.target == target && s.operation == operation && s.clients == clients)
}

/// Runs the chosen families, printing each table as it is done and the targets at the end.
pub(crate) async fn run(options: &BenchOptions) -> Result<(), String> {
    // 10,000 idle polls are 10,000 connections of this process (children inherit the limit).
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let parent = options.dir.clone().unwrap_or_else(std::env::temp_dir);
    let work = tempfile::Builder::new()
        .prefix("sqs-gateway-bench-")
        .tempdir_in(&parent)
        .map_err(|e| format!("cannot make a directory in {}: {e}", parent.display()))?;
    let runs = |family| options.only.is_empty() || options.only.contains(&family);
    // Tables print as they are done; with --markdown they are written again at the end.
    let printed = std::cell::RefCell::new(Vec::new());
    let print = |table: Table| {
        println!("{}", table.render(false));
        printed.borrow_mut().push(table);
    };

    let header = header(options, work.path());
    println!("{header}");
    let secrets = Secrets::generate();
    let localstack = match &options.localstack {
        Some(url) if runs(Family::Sqs) || runs(Family::Replicas) => {
            let endpoint = Endpoint {
                url: url.clone(),
                key_id: "test".into(),
                secret: "test".into(),
                keep_alive: false,
            };
            if sqs_endpoint::answers(&endpoint).await {
                if let Some(queues) = sqs_endpoint::queue_names(&endpoint).await {
                    println!(
                        "LocalStack at {url} holds {} queues\n",
                        count(queues.len() as f64)
                    );
                }
                Some(endpoint)
            } else {
                println!("LocalStack at {url} does not answer: its rows are skipped\n");
                None
            }
        }
        Some(_) => None,
        None => {
            println!("LocalStack skipped (--no-localstack)\n");
            None
        }
    };

    let mut checks = Vec::new();
    if runs(Family::Sqs) {
        let figures = sqs_family(options, work.path(), &secrets, localstack.as_ref()).await?;
        for table in sqs_tables(options, &figures) {
            print(table);
        }
        checks.extend(sqs_checks(
            &figures.scenarios,
            &figures.proxy_rounds,
            figures.fsync_per_second,
        ));
    }
    if runs(Family::Ezgh) {
        let figures = ezgh_family(options, work.path(), &secrets).await?;
        print(ezgh_table(
            options,
            &figures.scenarios,
            &figures.round_shares,
        ));
        checks.extend(ezgh_checks(&figures.round_shares));
    }
    if runs(Family::Polls) {
        for transport in [PollTransport::Http1, PollTransport::Http2] {
            // A fresh gateway for each: both start from the same resident memory.
            let gateway = Gateway::start(
                transport.gateway_name(),
                &GatewayBackend::InMemory,
                &secrets,
                work.path(),
                Duration::from_secs(60),
            )
            .await?;
            let figures =
                long_polls::measure(&gateway, &secrets, options.long_polls, transport).await?;
            drop(gateway);
            print(long_polls_table(&figures));
            checks.extend(long_poll_checks(&figures));
        }
    }
    if runs(Family::State) {
        let figures = state::measure(options, work.path(), &secrets).await?;
        print(state::table(options, &figures));
        checks.extend(state::checks(&figures));
    }
    if runs(Family::Replicas) {
        let figures = replicas::measure(
            options.messages,
            options.body_bytes,
            work.path(),
            &secrets,
            localstack.as_ref(),
        )
        .await?;
        print(replicas::table(
            options.messages,
            options.body_bytes,
            &figures,
        ));
    }
    if runs(Family::Backlog) {
        let figures = backlog_family(options, work.path(), &secrets).await?;
        print(backlog_table(options, &figures));
        checks.extend(backlog_checks(options, &figures));
    }
    print(report::targets_table(&checks));
    let end = format!("load average at the end: {}", load_average());
    println!("{end}");
    if let Some(path) = &options.markdown {
        let mut text = format!("{}\n", header.trim_end().replace('\n', "  \n"));
        for table in printed.borrow().iter() {
            text.push('\n');
            text.push_str(&table.render(true));
        }
        text.push_str(&format!("\n{end}\n"));
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if options.keep {
        println!("kept: {}", work.keep().display());
    }
    Ok(())
}

/// Date, machine, profile and scale: what the figures depend on.
fn header(options: &BenchOptions, work: &Path) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split(':').nth(1))
        .map_or("unknown CPU", str::trim);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|meminfo| process::parse_mem_total(&meminfo))
        .map_or_else(
            || "? GiB".into(),
            |bytes| format!("{:.0} GiB", bytes as f64 / (1u64 << 30) as f64),
        );
    let profile = if cfg!(debug_assertions) {
        "debug (figures mean little)"
    } else {
        "release"
    };
    format!(
        "sqs-gateway bench, {} ({})\nmachine: {cores} cores ({model}), {memory} RAM; build profile: {profile}; load average at the start: {}\ndata directories: {} ({})\nthroughput rows: {} messages of {} bytes each, batches of {BATCH}, 1 and 8 clients; gateways are child processes (default config, server.max_connections = {}; durable ones sample their metrics every second)\n",
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC"),
        env!("CARGO_PKG_VERSION"),
        load_average(),
        work.display(),
        filesystem_of(work),
        count(options.messages as f64),
        options.body_bytes,
        count(process::MAX_CONNECTIONS as f64),
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| "unknown".into())
}

/// The filesystem type and device `path` is on (the longest mount point above it).
fn filesystem_of(path: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [device, mount, kind, ..] if path.starts_with(mount) => {
                    Some((mount.len(), format!("{kind} on {device}")))
                }
                _ => None,
            }
        })
        .max_by_key(|(length, _)| *length)
        .map_or_else(|| "filesystem unknown".into(), |(_, what)| what)
}

fn gateway_endpoint(gateway: &Gateway, secrets: &Secrets) -> Endpoint {
    Endpoint {
        url: gateway.base.clone(),
        key_id: secrets.sqs_key_id.clone(),
        secret: secrets.sqs_secret.clone(),
        keep_alive: false,
    }
}

/// The SQS endpoint family: LocalStack, the gateway over it, the gateway over the engine.
async fn sqs_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
    localstack: Option<&Endpoint>,
) -> Result<SqsFigures, String> {
    let body = "x".repeat(options.body_bytes);
    let (mut scenarios, mut notes) = (Vec::new(), Vec::new());
    let mut targets = Vec::new();
    let managed_queues = match localstack {
        Some(localstack) => sqs_endpoint::queue_names(localstack)
            .await
            .unwrap_or_default()
            .iter()
            .filter(|name| name.starts_with("sqsgw_"))
            .count(),
        None => 0,
    };
    // The gateway over LocalStack gets queues of its own, made in LocalStack first.
    let mut proxied_queues = Vec::new();
    if let Some(localstack) = localstack {
        let suffix = format!("{:08x}", rand::random::<u32>());
        for clients in CLIENT_COUNTS {
            let name = format!("bench-{suffix}-{clients}");
            let url = sqs_endpoint::create_queue(localstack, &name).await?;
            proxied_queues.push((process::sqs_queue(clients), name, url));
        }
        // LocalStack's own rows are measured with the gateway's, per client count (below).
        targets.push((
            Target::GatewayOverLocalStack,
            GatewayBackend::Sqs {
                endpoint: localstack.url.clone(),
                queues: proxied_queues
                    .iter()
                    .map(|(gateway, backend, _)| (gateway.clone(), backend.clone()))
                    .collect(),
                redis: None,
            },
        ));
    }
    targets.push((Target::GatewayInMemory, GatewayBackend::InMemory));
    targets.push((
        Target::GatewayDurable,
        GatewayBackend::Durable(work.join("sqs-durable")),
    ));
    let mut fsync_per_second = 0.0;
    let mut own_work = OwnWork::new();
    let mut sharing = Vec::new();
    let mut proxy_rounds = Vec::new();
    let outcome = async {
        for (target, backend) in targets {
            if target == Target::GatewayDurable {
                // Next to the durable rows, so both see the same disk (it is shared).
                fsync_per_second = ceiling::fsync_ceiling(work, FSYNC_LOOP).await?;
            }
            let measured = {
                let gateway = Gateway::start(
                    &format!("gateway-sqs-{target:?}"),
                    &backend,
                    secrets,
                    work,
                    Duration::from_secs(60),
                )
                .await?;
                let (took, calls) = gateway.settle(Duration::from_secs(120)).await?;
                if calls > 100 {
                    notes.push(format!(
                        "{}: measured after its start-up reads of the backend settled ({:.1} s, {} backend calls; the gateway reads every queue under its managed sqsgw_ prefix at start and every 5 minutes, and LocalStack held {} such queues)",
                        target.label(),
                        took.as_secs_f64(),
                        count(calls as f64),
                        count(managed_queues as f64),
                    ));
                }
                let endpoint = gateway_endpoint(&gateway, secrets);
                let mut measured = Vec::new();
                // The gateway over LocalStack is measured beside LocalStack itself.
                let beside = localstack.filter(|_| target == Target::GatewayOverLocalStack);
                if let Some(localstack) = beside {
                    // A freshly started LocalStack answers its first requests slower; its first
                    // measured row should not pay that.
                    sqs_endpoint::measure(
                        Target::LocalStack,
                        localstack,
                        Queues::Fresh,
                        &body,
                        LOCALSTACK_WARM_UP,
                        &[1],
                    )
                    .await?;
                    notes.push(format!("LocalStack warmed up before its first row: {} messages sent, then received + deleted, 1 client, not measured", count(LOCALSTACK_WARM_UP as f64)));
                }
                for clients in CLIENT_COUNTS {
                    let before = match target {
                        Target::GatewayOverLocalStack => Some(gateway.scrape().await?),
                        Target::GatewayDurable => {
                            tokio::time::sleep(STORE_SAMPLED).await;
                            Some(gateway.scrape().await?)
                        }
                        _ => None,
                    };
                    if let Some(localstack) = beside {
                        // LocalStack directly and through the gateway in alternating rounds.
                        let rounds = proxy::rounds(
                            localstack,
                            &endpoint,
                            &body,
                            options.messages,
                            clients,
                        )
                        .await?;
                        measured.extend(proxy::joined(&rounds));
                        proxy_rounds.extend(rounds);
                    } else {
                        measured.extend(
                            sqs_endpoint::measure(
                                target,
                                &endpoint,
                                Queues::Configured,
                                &body,
                                options.messages,
                                &[clients],
                            )
                            .await?,
                        );
                    }
                    let Some(before) = before else { continue };
                    if target == Target::GatewayDurable {
                        tokio::time::sleep(STORE_SAMPLED).await;
                    }
                    let after = gateway.scrape().await?;
                    if target == Target::GatewayDurable {
                        sharing.extend(
                            writes_per_sync(&before, &after).map(|share| (clients, share)),
                        );
                    } else {
                        own_work.extend(
                            gateway_own_work(&before, &after)
                                .into_iter()
                                .map(|(kind, mean)| ((kind, clients), mean)),
                        );
                    }
                }
                measured
            };
            scenarios.extend(measured);
        }
        Ok::<_, String>(())
    }
    .await;
    if let Some(localstack) = localstack {
        for (_, _, url) in &proxied_queues {
            sqs_endpoint::delete_queue(localstack, url).await;
        }
    }
    // Measured interleaved, listed by target (the sort keeps send before receive+delete).
    scenarios.sort_by_key(|scenario| (scenario.target, scenario.clients));
    outcome.map(|()| SqsFigures {
        scenarios,
        proxy_rounds,
        notes,
        fsync_per_second,
        own_work,
        sharing,
    })
}

/// How long the bench waits for a durable gateway to sample its store's counts (every second in
/// its config) before reading them.
const STORE_SAMPLED: Duration = Duration::from_millis(1_200);

/// Between two scrapes of a durable gateway: the store's writes per synced commit (what group
/// commit shared); `None` without a sync between them.
fn writes_per_sync(before: &str, after: &str) -> Option<f64> {
    let delta = |name: &str| {
        let after = process::metric_sum(after, name)?;
        Some(after - process::metric_sum(before, name).unwrap_or(0.0))
    };
    let syncs = delta("sqsgw_store_syncs_total")?;
    (syncs > 0.0).then_some(delta("sqsgw_store_writes_total")? / syncs)
}

/// What the SQS family measured.
struct SqsFigures {
    scenarios: Vec<Scenario>,
    /// The proxy's rounds (LocalStack directly and the gateway over it), per client count.
    proxy_rounds: Vec<proxy::Round>,
    notes: Vec<String>,
    fsync_per_second: f64,
    /// The gateway over LocalStack's own work per request, by request kind and client count.
    own_work: OwnWork,
    /// The durable gateway's writes per synced commit, by client count (both rows of a count).
    sharing: Vec<(usize, f64)>,
}

/// The mean time a request spent in the gateway outside its backend call, by request kind and
/// client count (read from the gateway's own `/metrics`).
type OwnWork = std::collections::BTreeMap<(RequestKind, usize), Duration>;

/// The gateway's metric labels of each proxied request kind: its backend call and its operation.
const PROXIED: [(RequestKind, &str, &str); 3] = [
    (RequestKind::SendMessageBatch, "send_batch", "send"),
    (RequestKind::ReceiveMessage, "receive", "receive"),
    (
        RequestKind::DeleteMessageBatch,
        "delete_batch",
        "acknowledge",
    ),
];

/// Between two scrapes of a gateway over SQS: per request kind, the mean of (time to answer −
/// time in the backend call), its own work (a receive that waited in the backend waited in both,
/// so waits cancel out).
fn gateway_own_work(before: &str, after: &str) -> Vec<(RequestKind, Duration)> {
    let delta = |name: &str, labels: &[(&str, &str)]| {
        let after = process::metric_sum_where(after, name, labels)?;
        Some(after - process::metric_sum_where(before, name, labels).unwrap_or(0.0))
    };
    PROXIED
        .iter()
        .filter_map(|&(kind, call, operation)| {
            let call = [("backend", "sqs"), ("call", call)];
            let request = [("dialect", "sqs"), ("operation", operation)];
            let in_calls = delta("sqsgw_backend_call_duration_seconds_sum", &call)?;
            let answering = delta("sqsgw_http_request_duration_seconds_sum", &request)?;
            let requests = delta("sqsgw_http_request_duration_seconds_count", &request)?;
            let own = (answering - in_calls) / requests;
            (requests > 0.0 && own.is_finite())
                .then(|| (kind, Duration::from_secs_f64(own.max(0.0))))
        })
        .collect()
}

/// Receives answered empty before a drain was done (each waited its 1 s), for receive rows.
fn empty_receives(scenario: &Scenario) -> String {
    match scenario.operation {
        Operation::Send => "-".into(),
        Operation::ReceiveDelete | Operation::ReceiveAck => {
            count(scenario.run.empty_receives as f64)
        }
    }
}

/// The baseline of a row: LocalStack at the same clients, else the in-memory gateway.
fn sqs_baseline(scenarios: &[Scenario], scenario: &Scenario) -> Option<f64> {
    find(
        scenarios,
        Target::LocalStack,
        scenario.operation,
        scenario.clients,
    )
    .or_else(|| {
        find(
            scenarios,
            Target::GatewayInMemory,
            scenario.operation,
            scenario.clients,
        )
    })
    .map(|base| base.run.messages_per_second())
}

fn sqs_tables(options: &BenchOptions, figures: &SqsFigures) -> Vec<Table> {
    let SqsFigures {
        scenarios,
        proxy_rounds,
        notes,
        fsync_per_second,
        own_work,
        sharing,
    } = figures;
    let fsync_per_second = *fsync_per_second;
    let has_localstack = scenarios.iter().any(|s| s.target == Target::LocalStack);
    let mut table = Table::new(
        format!(
            "SQS endpoint: aws-sdk-sqs, signed; {} messages of {} bytes per row",
            count(options.messages as f64),
            options.body_bytes
        ),
        &[
            "target",
            "operation",
            "clients",
            "msg/s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "empty receives",
            if has_localstack {
                "× LocalStack"
            } else {
                "× in memory"
            },
        ],
        2,
    );
    for scenario in scenarios {
        let run = &scenario.run;
        table.row(vec![
            scenario.target.label().into(),
            scenario.operation.label().into(),
            scenario.clients.to_string(),
            count(run.messages_per_second()),
            count(run.requests_per_second()),
            ms(run.percentile(None, 0.5)),
            ms(run.percentile(None, 0.99)),
            empty_receives(scenario),
            sqs_baseline(scenarios, scenario).map_or_else(
                || "-".into(),
                |base| times(run.messages_per_second() / base),
            ),
        ]);
    }
    table.note(
        "send: SendMessageBatch of 10; receive+delete: ReceiveMessage (10 at most, 1 s wait) then DeleteMessageBatch; p50/p99 over every request of the row (receives answered empty left out of them; their count is the \"empty receives\" column)",
    );
    if !has_localstack {
        table.note("LocalStack skipped: ratios are against the gateway over the in-memory engine");
    }
    for note in notes {
        table.note(note.clone());
    }
    if !sharing.is_empty() {
        let each = sharing
            .iter()
            .map(|(clients, share)| format!("{clients} client(s): {share:.1}"))
            .collect::<Vec<_>>()
            .join(", ");
        table.note(format!(
            "embedded durable, group commit: writes (sends, receives, deletes) per disk sync over both rows of a client count, from the gateway's sqsgw_store_* counters: {each}"
        ));
    }
    if let Some(durable) = find(scenarios, Target::GatewayDurable, Operation::Send, 1) {
        table.note(format!(
            "fsync ceiling (small write + fdatasync in a loop beside the data directory, measured just before the durable rows): {}/s; durable send with 1 client: {} requests/s ({} of it)",
            count(fsync_per_second),
            count(durable.run.requests_per_second()),
            percent(durable.run.requests_per_second() / fsync_per_second)
        ));
        if let Some(in_memory) = find(scenarios, Target::GatewayInMemory, Operation::Send, 1) {
            table.note(format!(
                "the same send with 1 client on the in-memory engine (no disk at all): {} requests/s ({} of the fsync ceiling): where that share is far below 75 %, one client's request path (signing, HTTP, parsing), not the disk, bounds a durable send",
                count(in_memory.run.requests_per_second()),
                percent(in_memory.run.requests_per_second() / fsync_per_second)
            ));
        }
    }
    let mut tables = vec![table];
    if has_localstack
        && scenarios
            .iter()
            .any(|s| s.target == Target::GatewayOverLocalStack)
    {
        let mut proxy = Table::new(
            "The proxy's cost: the gateway over LocalStack against LocalStack directly, per request",
            &[
                "request",
                "clients",
                "LocalStack p50",
                "p99",
                "kept-alive p50",
                "p99",
                "via gateway p50",
                "p99",
                "added p50 ms",
                "added p99 ms",
                "added p50 vs kept-alive",
                "gateway's own mean ms",
            ],
            1,
        );
        for (operation, kinds) in [
            (Operation::Send, &[RequestKind::SendMessageBatch][..]),
            (
                Operation::ReceiveDelete,
                &[RequestKind::ReceiveMessage, RequestKind::DeleteMessageBatch][..],
            ),
        ] {
            for &kind in kinds {
                for clients in CLIENT_COUNTS {
                    let (Some(direct), Some(proxied)) = (
                        find(scenarios, Target::LocalStack, operation, clients),
                        find(scenarios, Target::GatewayOverLocalStack, operation, clients),
                    ) else {
                        continue;
                    };
                    let kept_alive =
                        find(scenarios, Target::LocalStackKeptAlive, operation, clients);
                    let p = |s: &Scenario, q| s.run.percentile(Some(kind), q);
                    let p_of = |s: Option<&Scenario>, q| s.and_then(|s| p(s, q));
                    let delta = |base: Option<&Scenario>, q| {
                        ms_delta(p(proxied, q), p_of(base, q)).map_or_else(|| "-".into(), signed_ms)
                    };
                    proxy.row(vec![
                        kind.name().into(),
                        clients.to_string(),
                        ms(p(direct, 0.5)),
                        ms(p(direct, 0.99)),
                        ms(p_of(kept_alive, 0.5)),
                        ms(p_of(kept_alive, 0.99)),
                        ms(p(proxied, 0.5)),
                        ms(p(proxied, 0.99)),
                        delta(Some(direct), 0.5),
                        delta(Some(direct), 0.99),
                        delta(kept_alive, 0.5),
                        own_work
                            .get(&(kind, clients))
                            .map_or_else(|| "-".into(), |own| ms(Some(*own))),
                    ]);
                }
            }
        }
        proxy.note("gateway's own: the mean time from the gateway reading a request to answering it, less the time inside its call to LocalStack (from the gateway's /metrics, read before and after each client count); the rest of the added time is not broken down: the call's own overhead (a second signed aws-sdk-sqs request, on a connection the gateway keeps open: it asks with `Connection: keep-alive`, while the direct client, asking nothing, gets `Connection: close` and a new connection per request from LocalStack, so the gateway can answer sooner than LocalStack directly) and, with 8 clients, waiting for a CPU that LocalStack, the gateway and the clients share; kept-alive: LocalStack directly with the client asking for keep-alive as the gateway does, the baseline of the proxy's own cost");
        let per_round = SQS_ROWS
            .iter()
            .map(|&(operation, clients)| {
                let ratios =
                    proxy::round_ratios(proxy_rounds, Target::LocalStack, operation, clients);
                let each: Vec<String> = ratios.iter().map(|r| times(*r)).collect();
                let middle = median(&ratios).map_or_else(|| "-".into(), times);
                format!(
                    "{} {clients}: {} (median {middle})",
                    operation.label(),
                    each.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        proxy.note(format!("LocalStack directly, kept-alive and through the gateway ran in {} alternating rounds per client count (each a fifth of the row's messages per target, the order rotated from round to round), so a drift of LocalStack's speed moves both sides of a round alike; the rows join the rounds, the targets are judged on the median round; the gateway's msg/s against LocalStack directly per round: {per_round}", proxy::PROXY_ROUNDS));
        tables.push(proxy);
    }
    tables
}

/// The largest of the median rounds' p50 that the gateway over LocalStack adds to a request of
/// `base`, and where.
fn worst_added_p50(
    rounds: &[proxy::Round],
    base: Target,
    rows: &[(Operation, usize)],
) -> Option<(f64, String)> {
    let mut worst: Option<(f64, String)> = None;
    for &(operation, clients) in rows {
        let kinds: &[RequestKind] = match operation {
            Operation::Send => &[RequestKind::SendMessageBatch],
            _ => &[RequestKind::ReceiveMessage, RequestKind::DeleteMessageBatch],
        };
        for &kind in kinds {
            if let Some(added) = proxy::median_added_p50(rounds, base, operation, clients, kind)
                && worst.as_ref().is_none_or(|(w, _)| added > *w)
            {
                worst = Some((added, format!("{}, {clients} client(s)", kind.name())));
            }
        }
    }
    worst
}

/// The SQS family's rows: operation and client count.
const SQS_ROWS: [(Operation, usize); 4] = [
    (Operation::Send, 1),
    (Operation::Send, 8),
    (Operation::ReceiveDelete, 1),
    (Operation::ReceiveDelete, 8),
];

/// A ratio target's figure and verdict over `rows`: every row's ratio (from `ratio_of`) at least
/// `bound`; not measured when a row has no ratio against `base`.
fn ratio_check(
    rows: &[(Operation, usize)],
    base: Target,
    bound: f64,
    ratio_of: impl Fn(Operation, usize) -> Option<f64>,
) -> (String, Verdict) {
    let mut texts = Vec::with_capacity(rows.len());
    let mut all_met = true;
    for &(operation, clients) in rows {
        let Some(ratio) = ratio_of(operation, clients) else {
            return (
                format!("{} not measured", base.label()),
                Verdict::NotMeasured,
            );
        };
        texts.push(format!("{} {clients}: {}", operation.label(), times(ratio)));
        all_met &= ratio >= bound;
    }
    (texts.join(", "), Verdict::of(all_met))
}

fn sqs_checks(
    scenarios: &[Scenario],
    proxy_rounds: &[proxy::Round],
    fsync_per_second: f64,
) -> Vec<Check> {
    let ratio = |target: Target, base: Target, operation, clients| {
        let base = find(scenarios, base, operation, clients)?;
        let row = find(scenarios, target, operation, clients)?;
        Some(row.run.messages_per_second() / base.run.messages_per_second())
    };
    let mut checks = Vec::new();
    // The targets, against the client users run; then the same against a client that
    // keeps its connections as the gateway does: the proxy's own cost. Each is judged on the
    // median of its rounds (LocalStack and the gateway side by side in time).
    for (base, against) in [
        (Target::LocalStack, "LocalStack's"),
        (Target::LocalStackKeptAlive, "a kept-alive client's"),
    ] {
        // No rounds ran without LocalStack, so every median is missing then.
        let (figure, verdict) = ratio_check(&SQS_ROWS, base, 0.9, |operation, clients| {
            proxy::median_ratio(proxy_rounds, base, operation, clients)
        });
        checks.push(Check {
            target: format!("gateway over LocalStack ≥ 0.9× {against} throughput (median round)"),
            figure,
            verdict,
        });
        let target =
            format!("gateway over LocalStack ≤ 1 ms added p50 over {against} (median round)");
        checks.push(match worst_added_p50(proxy_rounds, base, &SQS_ROWS) {
            Some((added, where_)) => Check {
                target,
                figure: format!("worst {} ms ({where_})", signed_ms(added)),
                verdict: Verdict::of(added <= 1.0),
            },
            _ => Check {
                target,
                figure: format!("{} not measured", base.label()),
                verdict: Verdict::NotMeasured,
            },
        });
    }
    let (figure, verdict) = ratio_check(
        &[(Operation::Send, 8), (Operation::ReceiveDelete, 8)],
        Target::LocalStack,
        20.0,
        |operation, clients| {
            ratio(
                Target::GatewayDurable,
                Target::LocalStack,
                operation,
                clients,
            )
        },
    );
    checks.push(Check {
        target: "SQS endpoint, durable engine, 8 clients ≥ 20× LocalStack".into(),
        figure,
        verdict,
    });
    checks.push(
        match find(scenarios, Target::GatewayDurable, Operation::Send, 1) {
            Some(durable) => {
                let share = durable.run.requests_per_second() / fsync_per_second;
                let without_disk = find(scenarios, Target::GatewayInMemory, Operation::Send, 1)
                    .map(|in_memory| {
                        format!(
                            " (in memory, no disk: {})",
                            percent(in_memory.run.requests_per_second() / fsync_per_second)
                        )
                    })
                    .unwrap_or_default();
                Check {
                    target: "durable send, 1 client ≥ 75 % of the fsync ceiling".into(),
                    figure: format!(
                        "{} req/s of {}/s = {}{without_disk}",
                        count(durable.run.requests_per_second()),
                        count(fsync_per_second),
                        percent(share)
                    ),
                    verdict: Verdict::of(share >= 0.75),
                }
            }
            None => Check {
                target: "durable send, 1 client ≥ 75 % of the fsync ceiling".into(),
                figure: "-".into(),
                verdict: Verdict::NotMeasured,
            },
        },
    );
    checks
}

/// Rounds the in-memory gateway and the ceiling alternate in, per client count (each round
/// drains the row's message count): each round of one is next to a round of the other in time,
/// so a drift of the machine's speed over the run moves both sides of a round's ratio alike.
const EZGH_ROUNDS: usize = 5;

/// What the ezgh family measured: a row per target and client count (the rounds joined), and the
/// in-memory gateway's share of the ceiling's requests/s in each round.
struct EzghFigures {
    scenarios: Vec<Scenario>,
    /// Per client count, the share of each round, in the order run.
    round_shares: Vec<(usize, Vec<f64>)>,
}

/// The ezgh family: the in-memory gateway and the bare-handler ceiling in alternating rounds,
/// then the durable gateway.
async fn ezgh_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<EzghFigures, String> {
    let key = &secrets.api_key.key;
    let body = "x".repeat(options.body_bytes);
    let mut scenarios = Vec::new();
    let mut round_shares = Vec::new();
    let mut ceilings = Vec::new();
    {
        let target = Target::GatewayInMemory;
        let gateway = start_ezgh_gateway(target, &GatewayBackend::InMemory, work, secrets).await?;
        let endpoint = gateway_endpoint(&gateway, secrets);
        let url = sqs_endpoint::queue_url(&endpoint, "ezgh").await?;
        sqs_endpoint::send(&endpoint, &url, &body, BATCH, 1).await?;
        let (receive, ack) = ezgh::capture_answers(&gateway.base, key, "ezgh").await?;
        let ceiling = Ceiling::start(work, &receive, &ack).await?;
        for clients in CLIENT_COUNTS {
            let mut joined = (measure::Run::default(), measure::Run::default());
            let mut shares = Vec::new();
            for round in 1..=EZGH_ROUNDS {
                sqs_endpoint::send(&endpoint, &url, &body, options.messages, 8).await?;
                eprintln!(
                    "bench: ezgh receive+ack, {clients} client(s), round {round} of {EZGH_ROUNDS}: gateway, then ceiling"
                );
                let on_gateway =
                    ezgh::receive_and_ack(&gateway.base, key, "ezgh", options.messages, clients)
                        .await?;
                let on_ceiling =
                    ezgh::receive_and_ack(&ceiling.base, key, "ezgh", options.messages, clients)
                        .await?;
                shares.push(on_gateway.requests_per_second() / on_ceiling.requests_per_second());
                joined.0.extend(on_gateway);
                joined.1.extend(on_ceiling);
            }
            round_shares.push((clients, shares));
            scenarios.push(Scenario {
                target,
                operation: Operation::ReceiveAck,
                clients,
                run: joined.0,
            });
            ceilings.push(Scenario {
                target: Target::Ceiling,
                operation: Operation::ReceiveAck,
                clients,
                run: joined.1,
            });
        }
    }
    let target = Target::GatewayDurable;
    let backend = GatewayBackend::Durable(work.join("ezgh-durable"));
    let gateway = start_ezgh_gateway(target, &backend, work, secrets).await?;
    let endpoint = gateway_endpoint(&gateway, secrets);
    let url = sqs_endpoint::queue_url(&endpoint, "ezgh").await?;
    for clients in CLIENT_COUNTS {
        eprintln!("bench: {}: filling the ezgh queue", target.label());
        sqs_endpoint::send(&endpoint, &url, &body, options.messages, 8).await?;
        eprintln!(
            "bench: {}: ezgh receive+ack, {clients} client(s)",
            target.label()
        );
        let run =
            ezgh::receive_and_ack(&gateway.base, key, "ezgh", options.messages, clients).await?;
        scenarios.push(Scenario {
            target,
            operation: Operation::ReceiveAck,
            clients,
            run,
        });
    }
    scenarios.extend(ceilings);
    Ok(EzghFigures {
        scenarios,
        round_shares,
    })
}

async fn start_ezgh_gateway(
    target: Target,
    backend: &GatewayBackend,
    work: &Path,
    secrets: &Secrets,
) -> Result<Gateway, String> {
    Gateway::start(
        &format!("gateway-ezgh-{target:?}"),
        backend,
        secrets,
        work,
        Duration::from_secs(60),
    )
    .await
}

fn ezgh_table(
    options: &BenchOptions,
    scenarios: &[Scenario],
    round_shares: &[(usize, Vec<f64>)],
) -> Table {
    let mut table = Table::new(
        format!(
            "ezgh REST: reqwest, receive(10) + ack(10) loops; {} messages of {} bytes per row (in-memory gateway and ceiling: per round, {EZGH_ROUNDS} rounds per row)",
            count(options.messages as f64),
            options.body_bytes
        ),
        &[
            "target",
            "clients",
            "msg/s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "empty receives",
            "of the ceiling's req/s",
        ],
        1,
    );
    for scenario in scenarios {
        let run = &scenario.run;
        let ceiling = find(
            scenarios,
            Target::Ceiling,
            Operation::ReceiveAck,
            scenario.clients,
        );
        table.row(vec![
            scenario.target.label().into(),
            scenario.clients.to_string(),
            count(run.messages_per_second()),
            count(run.requests_per_second()),
            ms(run.percentile(None, 0.5)),
            ms(run.percentile(None, 0.99)),
            empty_receives(scenario),
            ceiling.map_or_else(
                || "-".into(),
                |c| percent(run.requests_per_second() / c.run.requests_per_second()),
            ),
        ]);
    }
    table.note("the ceiling answers a real 10-message receive answer and ack answer of the gateway, byte for byte, from a bare axum handler in its own process; same client code");
    table.note(format!("the in-memory gateway and the ceiling ran in {EZGH_ROUNDS} alternating rounds per client count (a round of each, one after the other, each draining the row's messages; their rows join the rounds); the gateway's share of the ceiling's req/s per round: {}", round_shares_text(round_shares)));
    table
}

/// The middle of `values` (the mean of the two middle ones for an even count).
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

/// Each client count's rounds, as "a, b, c (median m)".
fn round_shares_text(round_shares: &[(usize, Vec<f64>)]) -> String {
    round_shares
        .iter()
        .filter_map(|(clients, shares)| {
            let each = shares
                .iter()
                .map(|share| percent(*share))
                .collect::<Vec<_>>();
            Some(format!(
                "{clients} client(s): {} (median {})",
                each.join(", "),
                percent(median(shares)?)
            ))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The ezgh target, judged on the median round: a round pairs the gateway and the ceiling
/// measured one after the other.
fn ezgh_checks(round_shares: &[(usize, Vec<f64>)]) -> Vec<Check> {
    let medians: Vec<f64> = round_shares
        .iter()
        .filter_map(|(_, shares)| median(shares))
        .collect();
    vec![Check {
        target: "ezgh receive+ack in memory ≥ 50 % of the bare handler's req/s (median round)"
            .into(),
        verdict: if medians.is_empty() {
            Verdict::NotMeasured
        } else {
            Verdict::of(medians.iter().all(|share| *share >= 0.5))
        },
        figure: round_shares_text(round_shares),
    }]
}

fn long_polls_table(figures: &long_polls::LongPollFigures) -> Table {
    let mut table = Table::new(
        format!(
            "Idle long polls over {}: {} ezgh receives waiting 20 s on an empty queue (gateway, embedded in memory)",
            figures.transport.name(),
            count(figures.polls as f64)
        ),
        &["figure", "value"],
        1,
    );
    let added = figures.added_bytes();
    let rows = [
        (
            "polls waiting at once (sqsgw_long_polls_waiting)",
            format!(
                "{} after {:.1} s",
                count(figures.waiting_peak as f64),
                figures.opened_in.as_secs_f64()
            ),
        ),
        (
            "gateway resident before / while waiting",
            format!(
                "{:.1} MiB / {:.1} MiB",
                mebibytes(figures.resident_before as f64),
                mebibytes(figures.resident_during as f64)
            ),
        ),
        (
            "added by the polls",
            format!(
                "{:.1} MiB, {:.1} KiB per poll",
                mebibytes(added),
                added / 1024.0 / figures.polls.max(1) as f64
            ),
        ),
        (
            "other requests (receive of 10, 1 client) p50 / p99 before",
            format!(
                "{} / {} ms ({} requests)",
                ms(figures.probe_before.percentile(None, 0.5)),
                ms(figures.probe_before.percentile(None, 0.99)),
                figures.probe_before.requests()
            ),
        ),
        (
            "… while the polls wait",
            format!(
                "{} / {} ms ({} requests)",
                ms(figures.probe_during.percentile(None, 0.5)),
                ms(figures.probe_during.percentile(None, 0.99)),
                figures.probe_during.requests()
            ),
        ),
        (
            "polls answered 200 with no message / failed",
            format!(
                "{} / {}",
                count(figures.answered_empty as f64),
                figures.failed
            ),
        ),
    ];
    for (name, value) in rows {
        table.row(vec![name.into(), value]);
    }
    table
}

fn long_poll_checks(figures: &long_polls::LongPollFigures) -> Vec<Check> {
    let per_10k = figures.added_bytes() * 10_000.0 / figures.polls.max(1) as f64;
    let waited = figures.waiting_peak as usize >= figures.polls && figures.failed == 0;
    let affected = ms_delta(
        figures.probe_during.percentile(None, 0.99),
        figures.probe_before.percentile(None, 0.99),
    );
    vec![
        Check {
            target: format!(
                "10,000 idle long polls ≤ 100 MiB added ({})",
                figures.transport.name()
            ),
            figure: format!(
                "{:.1} MiB per 10,000 ({} measured{})",
                mebibytes(per_10k),
                count(figures.polls as f64),
                if waited {
                    ""
                } else {
                    "; not all were waiting at once"
                }
            ),
            verdict: if waited {
                Verdict::of(mebibytes(per_10k) <= 100.0)
            } else {
                Verdict::NotMet
            },
        },
        Check {
            target: format!(
                "other requests' p99 affected ≤ 1 ms meanwhile ({} polls)",
                figures.transport.name()
            ),
            figure: affected.map_or_else(|| "-".into(), |d| format!("{} ms", signed_ms(d))),
            verdict: affected.map_or(Verdict::NotMeasured, |d| Verdict::of(d <= 1.0)),
        },
    ]
}

/// The backlog family: 256-byte and 64 KiB bodies, and the large reopen when asked for.
async fn backlog_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<Vec<backlog::BacklogFigures>, String> {
    let empty = backlog::empty_resident(work, secrets).await?;
    let mut figures = Vec::new();
    // The large bodies are stored fewer; small bodies at the same count show whether memory is
    // flat in body size, like for like.
    let mut cases = vec![
        (options.backlog_messages, 256, Some(options.messages)),
        (options.large_body_messages, 256, None),
        (options.large_body_messages, 64 * 1024, None),
    ];
    if options.backlog_messages_large > 0 {
        cases.push((options.backlog_messages_large, 256, Some(options.messages)));
    }
    for (messages, body_bytes, throughput) in cases {
        if messages > 0 {
            figures.push(
                backlog::measure(work, secrets, messages, body_bytes, empty, throughput).await?,
            );
        }
    }
    Ok(figures)
}

fn backlog_table(options: &BenchOptions, figures: &[backlog::BacklogFigures]) -> Table {
    let mut table = Table::new(
        "Backlog: a durable gateway reopening a data directory of stored messages",
        &[
            "stored",
            "body",
            "filled in",
            "reopened in",
            "resident",
            "per million",
            "send msg/s, 8",
            "receive+delete msg/s, 8",
        ],
        2,
    );
    for figure in figures {
        let (send, drain) = figure.throughput.as_ref().map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |(send, drain)| {
                (
                    count(send.messages_per_second()),
                    count(drain.messages_per_second()),
                )
            },
        );
        table.row(vec![
            count(figure.messages as f64),
            if figure.body_bytes >= 1024 {
                format!("{} KiB", figure.body_bytes / 1024)
            } else {
                format!("{} B", figure.body_bytes)
            },
            format!("{:.1} s", figure.filled_in.as_secs_f64()),
            format!("{:.2} s", figure.reopened_in.as_secs_f64()),
            format!("{} MiB", count(mebibytes(figure.resident as f64))),
            format!("{} MiB", count(mebibytes(figure.per_million()))),
            send,
            drain,
        ]);
    }
    if let Some(first) = figures.first() {
        table.note(format!(
            "per million: (resident − {:.0} MiB of a gateway on an empty directory) scaled to 1,000,000 messages; the 64 KiB row stores fewer (beside 256-byte bodies at the same count) and is scaled the same way",
            mebibytes(first.resident_empty as f64)
        ));
    }
    table.note("filled in: through the engine, in a process of its own (not judged); reopened in: from the gateway's start to its first 200 on /readyz");
    table.note(format!(
        "throughput: {} messages sent, then received + deleted, over the SQS endpoint with the backlog in place",
        count(options.messages as f64)
    ));
    if options.backlog_messages_large == 0 {
        table.note("the 10 million reopen is opt-in: --backlog-messages-large 10000000");
    }
    table
}

fn backlog_checks(options: &BenchOptions, figures: &[backlog::BacklogFigures]) -> Vec<Check> {
    let small = figures
        .iter()
        .find(|f| f.body_bytes == 256 && f.messages == options.backlog_messages);
    let large_body = figures.iter().find(|f| f.body_bytes == 64 * 1024);
    let large = figures
        .iter()
        .find(|f| f.body_bytes == 256 && f.messages == options.backlog_messages_large);
    let per_million = |figure: Option<&backlog::BacklogFigures>| {
        figure.map_or(("-".to_owned(), Verdict::NotMeasured), |f| {
            let mib = mebibytes(f.per_million());
            (
                format!(
                    "{} MiB per million ({} stored)",
                    count(mib),
                    count(f.messages as f64)
                ),
                Verdict::of(mib <= 150.0),
            )
        })
    };
    let (small_figure, small_verdict) = per_million(small);
    let same_count = figures.iter().find(|f| {
        f.body_bytes == 256 && large_body.is_some_and(|large| large.messages == f.messages)
    });
    let (large_body_figure, large_body_verdict) = match (large_body, same_count) {
        (Some(large), Some(same)) => {
            let added = |f: &backlog::BacklogFigures| f.resident.saturating_sub(f.resident_empty);
            let ratio = added(large) as f64 / added(same).max(1) as f64;
            (
                format!(
                    "{} stored: 64 KiB bodies add {} MiB, 256-byte bodies {} MiB ({ratio:.2}×)",
                    count(large.messages as f64),
                    count(mebibytes(added(large) as f64)),
                    count(mebibytes(added(same) as f64)),
                ),
                Verdict::of(ratio <= 1.25),
            )
        }
        _ => ("-".to_owned(), Verdict::NotMeasured),
    };
    let reopen = match (large, small) {
        (Some(large), _) if large.messages >= 10_000_000 => Check {
            target: "reopening 10 million messages < 10 s".into(),
            figure: format!("{:.1} s", large.reopened_in.as_secs_f64()),
            verdict: Verdict::of(large.reopened_in < Duration::from_secs(10)),
        },
        (large, small) => Check {
            target: "reopening 10 million messages < 10 s".into(),
            figure: large.or(small).map_or_else(
                || "-".into(),
                |f| {
                    format!(
                        "opt-in; {} reopened in {:.1} s",
                        count(f.messages as f64),
                        f.reopened_in.as_secs_f64()
                    )
                },
            ),
            verdict: Verdict::NotMeasured,
        },
    };
    vec![
        Check {
            target: "durable engine ≤ 150 MiB resident per million 256-byte messages".into(),
            figure: small_figure,
            verdict: small_verdict,
        },
        Check {
            target: "… flat in body size (64 KiB bodies ≤ 1.25× 256-byte ones, same count)".into(),
            figure: large_body_figure,
            verdict: large_body_verdict,
        },
        reopen,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_round_is_the_middle_one() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[0.7, 0.4, 0.5]), Some(0.5));
        assert_eq!(median(&[0.6, 0.4, 0.5, 0.9]), Some(0.55));
        let text = round_shares_text(&[(1, vec![0.41, 0.52, 0.47]), (8, vec![])]);
        assert_eq!(text, "1 client(s): 41 %, 52 %, 47 % (median 47 %)");
    }

    #[test]
    fn the_gateway_s_own_work_is_its_answering_time_less_its_backend_calls() {
        let before = "sqsgw_backend_call_duration_seconds_sum{backend=\"sqs\",call=\"send_batch\"} 1.0\nsqsgw_http_request_duration_seconds_sum{dialect=\"sqs\",operation=\"send\"} 1.5\nsqsgw_http_request_duration_seconds_count{dialect=\"sqs\",operation=\"send\"} 10\n";
        // 100 more sends: 4.0 s answering, 3.5 s of it in backend calls (a receive's wait is in
        // both, so it cancels out).
        let after = "sqsgw_backend_call_duration_seconds_sum{backend=\"sqs\",call=\"send_batch\"} 4.5\nsqsgw_http_request_duration_seconds_sum{dialect=\"sqs\",operation=\"send\"} 5.5\nsqsgw_http_request_duration_seconds_count{dialect=\"sqs\",operation=\"send\"} 110\nsqsgw_backend_call_duration_seconds_sum{backend=\"sqs\",call=\"receive\"} 2.0\n";
        let own = gateway_own_work(before, after);
        assert_eq!(own.len(), 1, "receives were not answered: no figure");
        assert_eq!(own[0].0, RequestKind::SendMessageBatch);
        assert_eq!(own[0].1, Duration::from_millis(5));
    }

    #[test]
    fn group_commit_s_sharing_is_writes_per_sync_between_two_scrapes() {
        let before = "sqsgw_store_syncs_total 10\nsqsgw_store_writes_total 12\n";
        let after = "sqsgw_store_syncs_total 110\nsqsgw_store_writes_total 362\n";
        assert_eq!(writes_per_sync(before, after), Some(3.5));
        assert_eq!(writes_per_sync(after, after), None, "no sync between them");
        assert_eq!(writes_per_sync("", after), Some(362.0 / 110.0));
    }

    #[test]
    fn the_ezgh_target_is_judged_on_each_client_count_s_median_round() {
        let met = ezgh_checks(&[(1, vec![0.45, 0.55, 0.6]), (8, vec![0.51, 0.2, 0.7])]);
        assert_eq!(met[0].verdict, Verdict::of(true));
        let missed = ezgh_checks(&[(1, vec![0.45, 0.55, 0.6]), (8, vec![0.49, 0.2, 0.7])]);
        assert_eq!(missed[0].verdict, Verdict::of(false));
        assert_eq!(ezgh_checks(&[])[0].verdict, Verdict::NotMeasured);
    }

    #[test]
    fn a_ratio_target_needs_every_row_at_its_bound_and_every_row_measured() {
        let rows = [(Operation::Send, 1), (Operation::ReceiveDelete, 8)];
        let check = |send: Option<f64>, receive: Option<f64>| {
            ratio_check(
                &rows,
                Target::LocalStack,
                0.9,
                |operation, _clients| match operation {
                    Operation::Send => send,
                    _ => receive,
                },
            )
        };
        let (figure, verdict) = check(Some(0.95), Some(0.9));
        assert_eq!(verdict, Verdict::Met);
        let send = Operation::Send.label();
        let receive = Operation::ReceiveDelete.label();
        assert_eq!(
            figure,
            format!("{send} 1: {}, {receive} 8: {}", times(0.95), times(0.9))
        );
        assert_eq!(check(Some(1.5), Some(0.89)).1, Verdict::NotMet);
        let (figure, verdict) = check(Some(1.5), None);
        assert_eq!(verdict, Verdict::NotMeasured);
        assert_eq!(
            figure,
            format!("{} not measured", Target::LocalStack.label())
        );
    }
}

use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::process::ExitCode;

/// Exit code for failures at run time.
const EXIT_RUNTIME: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "sqs-gateway-bench",
    version,
    about = "Measure what users feel over HTTP, against baselines of the same run: the SQS endpoint (aws-sdk-sqs) against LocalStack and the proxy's cost, ezgh receive+ack against a bare handler, idle long polls, the state in Redis, replicas, and backlogs (memory per million, reopen time); with the targets",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
    /// The bench's own child processes (not for people).
    #[command(subcommand)]
    helper: Option<Helper>,
}

/// What to measure.
#[derive(Debug, clap::Args)]
struct BenchArgs {
    /// Messages per throughput row.
    #[arg(long, default_value_t = 20_000)]
    messages: usize,
    /// Message body size in bytes of the throughput rows.
    #[arg(long, default_value_t = 256)]
    body_bytes: usize,
    /// LocalStack endpoint measured as the baseline (skipped when it does not answer).
    #[arg(long, default_value = "http://127.0.0.1:4566")]
    localstack: String,
    /// Measure without LocalStack.
    #[arg(long)]
    no_localstack: bool,
    /// Idle long polls opened at once.
    #[arg(long, default_value_t = 10_000)]
    long_polls: usize,
    /// Stored 256-byte messages of the backlog figures (memory, reopen, throughput).
    #[arg(long, default_value_t = 1_000_000)]
    backlog_messages: usize,
    /// Stored 64 KiB messages of the "flat in body size" figure (scaled to a million).
    #[arg(long, default_value_t = 20_000)]
    large_body_messages: usize,
    /// Stored 256-byte messages of the large reopen (10000000 for the 10 million figure;
    /// 0 skips it).
    #[arg(long, default_value_t = 0)]
    backlog_messages_large: usize,
    /// Directory for the temporary data directories (default: the system's temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Run only these families (repeatable).
    #[arg(long, value_enum)]
    only: Vec<Family>,
    /// Also write the tables as Markdown to this file (for the README).
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Keep the temporary directory (configs and logs of every gateway) afterwards.
    #[arg(long)]
    keep: bool,
}

/// The bench's child processes.
#[derive(Debug, Subcommand)]
enum Helper {
    /// The bench's ceiling: a bare axum handler answering canned ezgh answers.
    #[command(hide = true)]
    BenchCeiling {
        #[arg(long)]
        listen: SocketAddr,
        #[arg(long)]
        receive_answer: PathBuf,
        #[arg(long)]
        ack_answer: PathBuf,
    },
    /// The bench's backlog: stores messages in an embedded data directory through the engine.
    #[command(hide = true)]
    BenchFill {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long)]
        messages: usize,
        #[arg(long)]
        body_bytes: usize,
    },
    /// Send messages into an embedded data directory until killed, printing each durable id
    /// (used by the crash test).
    #[command(hide = true)]
    Load {
        #[arg(long)]
        data_dir: PathBuf,
        #[arg(long, default_value = "load")]
        queue: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.helper {
        None => {
            let options = cli.bench.into_options();
            // On Ctrl-C the bench's future is dropped, and with it every child process it
            // started.
            block_on(async move {
                tokio::select! {
                    outcome = run(&options) => outcome,
                    _ = tokio::signal::ctrl_c() => Err("interrupted".to_owned()),
                }
            })
        }
        Some(Helper::BenchCeiling {
            listen,
            receive_answer,
            ack_answer,
        }) => block_on(ceiling::serve(listen, &receive_answer, &ack_answer)),
        Some(Helper::BenchFill {
            data_dir,
            messages,
            body_bytes,
        }) => block_on(backlog::fill(&data_dir, messages, body_bytes)),
        Some(Helper::Load { data_dir, queue }) => {
            block_on(async move { load::load_until_killed(&data_dir, &queue).await })
        }
    };
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) | Err(error) => {
            eprintln!("sqs-gateway-bench failed: {error}");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

impl BenchArgs {
    fn into_options(self) -> BenchOptions {
        BenchOptions {
            messages: self.messages,
            body_bytes: self.body_bytes,
            localstack: (!self.no_localstack).then_some(self.localstack),
            long_polls: self.long_polls,
            backlog_messages: self.backlog_messages,
            large_body_messages: self.large_body_messages,
            backlog_messages_large: self.backlog_messages_large,
            dir: self.dir,
            only: self.only,
            markdown: self.markdown,
            keep: self.keep,
        }
    }
}

/// Runs a future on a new multi-threaded runtime.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::runtime::Runtime::new()
        .map(|runtime| runtime.block_on(future))
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}
