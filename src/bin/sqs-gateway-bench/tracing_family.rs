//! The tracing family: what exporting the gateway's spans costs, and (with `--baseline-gateway`)
//! what tracing off costs against an earlier build. In-memory gateways take the same loops in
//! alternating rounds: SQS `SendMessageBatch` (signed, aws-sdk) and ezgh receive(10)+ack(10). One
//! has `[tracing]` off (the default), one exports every span (ratio 1.0) to an OTLP sink in this
//! process, and the earlier build's runs with its defaults.

use super::*;
use process::Binary;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rounds per client count: in each, every gateway runs both loops, one after the other.
const TRACING_ROUNDS: usize = 5;

/// What the sink took in.
#[derive(Default)]
struct Sink {
    exports: AtomicU64,
    bytes: AtomicU64,
}

async fn take(
    axum::extract::State(sink): axum::extract::State<Arc<Sink>>,
    body: axum::body::Bytes,
) -> ([(&'static str, &'static str); 1], &'static [u8]) {
    sink.exports.fetch_add(1, Ordering::Relaxed);
    sink.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    // An empty protobuf message: the export's answer with nothing rejected.
    ([("content-type", "application/x-protobuf")], b"")
}

/// The gateways compared, in the order each round runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Earlier,
    Off,
    On,
}

/// One loop and client count: each gateway's rounds joined, and per round the ratios of req/s
/// (off against the earlier build, on against off).
pub(crate) struct TracingRow {
    operation: Operation,
    clients: usize,
    runs: Vec<(Setting, measure::Run)>,
    off_of_earlier: Vec<f64>,
    on_of_off: Vec<f64>,
}

/// What the family measured, and what the sink took.
pub(crate) struct TracingFigures {
    rows: Vec<TracingRow>,
    exports: u64,
    bytes: u64,
    earlier: bool,
}

pub(crate) async fn tracing_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<TracingFigures, String> {
    let sink = Arc::new(Sink::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("OTLP sink: {e}"))?;
    let sink_url = format!(
        "http://{}/v1/traces",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    let router = axum::Router::new()
        .route("/v1/traces", axum::routing::post(take))
        .with_state(Arc::clone(&sink));
    let serving = tokio::spawn(async move { axum::serve(listener, router).await });
    let mut gateways = Vec::new();
    if let Some(earlier) = &options.baseline_gateway {
        let gateway = Gateway::start_binary(
            Binary::GatewayAt(earlier.clone()),
            "gateway-tracing-earlier",
            &GatewayBackend::InMemory,
            secrets,
            work,
            Duration::from_secs(60),
            "",
        )
        .await?;
        gateways.push((Setting::Earlier, gateway));
    }
    let off = Gateway::start(
        "gateway-tracing-off",
        &GatewayBackend::InMemory,
        secrets,
        work,
        Duration::from_secs(60),
    )
    .await?;
    gateways.push((Setting::Off, off));
    let on = Gateway::start_with(
        "gateway-tracing-on",
        &GatewayBackend::InMemory,
        secrets,
        work,
        Duration::from_secs(60),
        &format!("\n[tracing]\nenabled = true\nendpoint = \"{sink_url}\"\n"),
    )
    .await?;
    gateways.push((Setting::On, on));

    let key = &secrets.api_key.key;
    let body = "x".repeat(options.body_bytes);
    let mut rows = Vec::new();
    for clients in CLIENT_COUNTS {
        let mut sends = TracingRow::new(Operation::Send, clients);
        let mut pulls = TracingRow::new(Operation::ReceiveAck, clients);
        for round in 1..=TRACING_ROUNDS {
            eprintln!(
                "bench: tracing, {clients} client(s), round {round} of {TRACING_ROUNDS}: {}",
                gateways
                    .iter()
                    .map(|(setting, _)| setting.label())
                    .collect::<Vec<_>>()
                    .join(", then ")
            );
            let mut sent_round = Vec::new();
            let mut pulled_round = Vec::new();
            for (setting, gateway) in &gateways {
                let endpoint = gateway_endpoint(gateway, secrets);
                let url = sqs_endpoint::queue_url(&endpoint, "ezgh").await?;
                let sent =
                    sqs_endpoint::send(&endpoint, &url, &body, options.messages, clients).await?;
                let pulled =
                    ezgh::receive_and_ack(&gateway.base, key, "ezgh", options.messages, clients)
                        .await?;
                sent_round.push((*setting, sent));
                pulled_round.push((*setting, pulled));
            }
            sends.absorb(sent_round);
            pulls.absorb(pulled_round);
        }
        rows.push(sends);
        rows.push(pulls);
    }
    let earlier = gateways.len() == 3;
    drop(gateways);
    serving.abort();
    Ok(TracingFigures {
        rows,
        exports: sink.exports.load(Ordering::Relaxed),
        bytes: sink.bytes.load(Ordering::Relaxed),
        earlier,
    })
}

impl Setting {
    fn label(self) -> &'static str {
        match self {
            Self::Earlier => "earlier build",
            Self::Off => "off",
            Self::On => "on",
        }
    }
}

impl TracingRow {
    fn new(operation: Operation, clients: usize) -> Self {
        Self {
            operation,
            clients,
            runs: Vec::new(),
            off_of_earlier: Vec::new(),
            on_of_off: Vec::new(),
        }
    }

    /// Adds a round's runs (one per gateway) and its ratios.
    fn absorb(&mut self, round: Vec<(Setting, measure::Run)>) {
        let rate = |wanted: Setting| {
            round
                .iter()
                .find(|(setting, _)| *setting == wanted)
                .map(|(_, run)| run.requests_per_second())
        };
        if let (Some(off), Some(earlier)) = (rate(Setting::Off), rate(Setting::Earlier)) {
            self.off_of_earlier.push(off / earlier);
        }
        if let (Some(on), Some(off)) = (rate(Setting::On), rate(Setting::Off)) {
            self.on_of_off.push(on / off);
        }
        for (setting, run) in round {
            match self.runs.iter_mut().find(|(kept, _)| *kept == setting) {
                Some((_, joined)) => joined.extend(run),
                None => self.runs.push((setting, run)),
            }
        }
    }

    fn run(&self, setting: Setting) -> Option<&measure::Run> {
        self.runs
            .iter()
            .find(|(kept, _)| *kept == setting)
            .map(|(_, run)| run)
    }
}

pub(crate) fn tracing_table(options: &BenchOptions, figures: &TracingFigures) -> Table {
    let mut table = Table::new(
        format!(
            "Tracing: the gateway exporting every span (OTLP/HTTP, ratio 1.0) against tracing off{}, in memory; SQS SendMessageBatch (aws-sdk, signed) and ezgh receive(10)+ack(10), {} messages of {} bytes per round, {TRACING_ROUNDS} alternating rounds",
            if figures.earlier {
                ", and off against the earlier build"
            } else {
                ""
            },
            count(options.messages as f64),
            options.body_bytes
        ),
        &[
            "loop",
            "clients",
            "earlier req/s",
            "off req/s",
            "on req/s",
            "off p50 ms",
            "on p50 ms",
            "on p99 ms",
            "off, of earlier's (median round)",
            "on, of off's (median round)",
        ],
        1,
    );
    let rate = |run: Option<&measure::Run>| {
        run.map_or_else(|| "-".into(), |run| count(run.requests_per_second()))
    };
    let share = |shares: &[f64]| median(shares).map_or_else(|| "-".into(), percent);
    for row in &figures.rows {
        let (earlier, off, on) = (
            row.run(Setting::Earlier),
            row.run(Setting::Off),
            row.run(Setting::On),
        );
        table.row(vec![
            row.operation.label().into(),
            row.clients.to_string(),
            rate(earlier),
            rate(off),
            rate(on),
            ms(off.and_then(|run| run.percentile(None, 0.5))),
            ms(on.and_then(|run| run.percentile(None, 0.5))),
            ms(on.and_then(|run| run.percentile(None, 0.99))),
            share(&row.off_of_earlier),
            share(&row.on_of_off),
        ]);
    }
    table.note(format!(
        "the sink took {} exports, {} bytes of spans (a server span, a messaging span and a backend span a request)",
        count(figures.exports as f64),
        count(figures.bytes as f64)
    ));
    table
}
