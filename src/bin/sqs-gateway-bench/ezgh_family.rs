//! The ezgh family's run, table and targets: receive+ack through the gateway against a bare axum
//! handler, in alternating rounds.

use super::*;

/// Rounds the in-memory gateway and the ceiling alternate in, per client count (each round
/// drains the row's message count): each round of one is next to a round of the other in time,
/// so a drift of the machine's speed over the run moves both sides of a round's ratio alike.
pub(crate) const EZGH_ROUNDS: usize = 5;

/// What the ezgh family measured: a row per target and client count (the rounds joined), and the
/// in-memory gateway's share of the ceiling's requests/s in each round.
pub(crate) struct EzghFigures {
    pub(crate) scenarios: Vec<Scenario>,
    /// Per client count, the share of each round, in the order run.
    pub(crate) round_shares: Vec<(usize, Vec<f64>)>,
}

/// The ezgh family: the in-memory gateway and the bare-handler ceiling in alternating rounds,
/// then the durable gateway.
pub(crate) async fn ezgh_family(
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

pub(crate) async fn start_ezgh_gateway(
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

pub(crate) fn ezgh_table(
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
pub(crate) fn median(values: &[f64]) -> Option<f64> {
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
pub(crate) fn round_shares_text(round_shares: &[(usize, Vec<f64>)]) -> String {
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
pub(crate) fn ezgh_checks(round_shares: &[(usize, Vec<f64>)]) -> Vec<Check> {
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
