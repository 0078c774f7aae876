//! `sqs-gateway-bench` (also reached as `sqs-gateway bench`): what users feel, measured over
//! HTTP against baselines of the same run. It is a binary of its own, beside the product's: the
//! gateway it measures is the `sqs-gateway` binary next to it, started as child processes.
//!
//! Gateways (and the bare-handler ceiling, a command of this binary) run as child processes, so each one's
//! resident memory is its own; clients are the ones users run (`aws-sdk-sqs`, signed; reqwest for
//! ezgh), the same code for every target of a family, so ratios compare like with like. Families:
//! the SQS endpoint against LocalStack ([`sqs_endpoint`]), ezgh against the ceiling ([`ezgh`]),
//! idle long polls ([`long_polls`]), a stored backlog ([`backlog`]), the state in Redis
//! ([`state`]), three replicas against one ([`replicas`]), metrics rounds over many queues
//! ([`sampling`]) and the SQS requests paid in front of SQS ([`cost_family`]); the figures are judged
//! against the gateway's targets ([`report`]).

// A benchmark measures real elapsed time (and prints the date), which is what it reports.
#![allow(clippy::disallowed_methods)]

pub(crate) mod backlog;
mod backlog_family;
pub(crate) mod ceiling;
mod cost_family;
mod counting_proxy;
mod ezgh;
mod ezgh_family;
mod fifo_family;
mod load;
mod long_polls;
mod measure;
mod polls_family;
mod process;
mod proxy;
mod push_family;
mod replicas;
mod report;
mod sampling;
mod sqs_endpoint;
mod sqs_family;
mod state;
mod tracing_family;

use backlog_family::*;
use cost_family::*;
use ezgh_family::*;
use fifo_family::*;
use polls_family::*;
use push_family::*;
use sqs_family::*;
use tracing_family::*;

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
    /// Stored messages of the large FIFO backlogs.
    pub fifo_messages: usize,
    /// Where the temporary data directories go (default: the system's temp directory).
    pub dir: Option<PathBuf>,
    /// Families to run (empty: all).
    pub only: Vec<Family>,
    /// Also write the header and tables as Markdown to this file (for docs/performance.md).
    pub markdown: Option<PathBuf>,
    /// Keep the temporary directory (configs, logs of every child) for a look afterwards.
    pub keep: bool,
    /// An earlier build's `sqs-gateway`, measured beside this one's in the tracing family.
    pub baseline_gateway: Option<PathBuf>,
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
    /// A push subscription's deliveries against the pull path.
    Push,
    /// FIFO backlogs over many groups and few against a small one.
    Fifo,
    /// Basaltic metrics rounds over LocalStack with 10, 100 and 1,000 queues.
    Sampling,
    /// SQS requests and connections in front of SQS, fan-in on against off.
    Cost,
    /// The gateway exporting its spans against tracing off.
    Tracing,
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
        Some(url)
            if runs(Family::Sqs)
                || runs(Family::Replicas)
                || runs(Family::Sampling)
                || runs(Family::Cost) =>
        {
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
            figures.fsync,
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
    if runs(Family::Push) {
        let figures = push_family(options, work.path(), &secrets).await?;
        print(push_table(&figures));
        checks.extend(push_checks(&figures));
    }
    if runs(Family::Backlog) {
        let figures = backlog_family(options, work.path(), &secrets).await?;
        print(backlog_table(options, &figures));
        checks.extend(backlog_checks(options, &figures));
    }
    if runs(Family::Fifo) {
        let figures = fifo_family(options, work.path(), &secrets).await?;
        print(fifo_table(&figures));
        checks.extend(fifo_checks(&figures));
    }
    if runs(Family::Sampling) {
        let figures = sampling::measure(work.path(), &secrets, localstack.as_ref()).await?;
        print(sampling::table(&figures));
    }
    if runs(Family::Cost) {
        let figures = cost_family(options, work.path(), &secrets, localstack.as_ref()).await?;
        print(cost_table(&figures));
        checks.extend(cost_checks(&figures));
    }
    if runs(Family::Tracing) {
        let figures = tracing_family(options, work.path(), &secrets).await?;
        print(tracing_table(options, &figures));
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
    // Run as `sqs-gateway bench`, the documented way: its usage says so.
    bin_name = "sqs-gateway bench",
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
    /// Stored messages of the large FIFO backlogs (in 10,000 groups, and in 10).
    #[arg(long, default_value_t = 1_000_000)]
    fifo_messages: usize,
    /// Directory for the temporary data directories (default: the system's temp directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Run only these families (repeatable).
    #[arg(long, value_enum)]
    only: Vec<Family>,
    /// Also write the tables as Markdown to this file (for docs/performance.md).
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Keep the temporary directory (configs and logs of every gateway) afterwards.
    #[arg(long)]
    keep: bool,
    /// An earlier build's `sqs-gateway`: the tracing family measures it too, tracing off, in the
    /// same rounds (what tracing off costs against the build before it).
    #[arg(long)]
    baseline_gateway: Option<PathBuf>,
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
        /// A FIFO queue, its messages spread over this many groups.
        #[arg(long)]
        fifo_groups: Option<usize>,
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
            fifo_groups,
        }) => block_on(backlog::fill(&data_dir, messages, body_bytes, fifo_groups)),
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
            fifo_messages: self.fifo_messages,
            dir: self.dir,
            only: self.only,
            markdown: self.markdown,
            keep: self.keep,
            baseline_gateway: self.baseline_gateway,
        }
    }
}

/// Runs a future on a new multi-threaded runtime.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::runtime::Runtime::new()
        .map(|runtime| runtime.block_on(future))
        .map_err(|error| format!("cannot start the async runtime: {error}"))
}
