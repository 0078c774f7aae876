//! The proxy's rows in alternating rounds: LocalStack directly (with the client users run, and
//! kept alive) and the gateway over it take turns at each client count, so a drift of
//! LocalStack's speed over the minutes of a run moves both sides of a round's comparison alike;
//! the proxy's targets are judged on the median round, the rows join every round.

use super::measure::{RequestKind, Run};
use super::sqs_endpoint::{self, Endpoint, Queues};
use super::{Operation, Scenario, Target, median};

/// Rounds per client count; each round does a fifth of the row's messages per target.
pub(super) const PROXY_ROUNDS: usize = 5;

/// The targets a round compares, in the order of its first round (later rounds rotate it).
const ROUND_TARGETS: [Target; 3] = [
    Target::LocalStack,
    Target::LocalStackKeptAlive,
    Target::GatewayOverLocalStack,
];

/// One round at one client count: each target's send and receive+delete rows.
#[derive(Debug)]
pub(super) struct Round {
    pub clients: usize,
    pub scenarios: Vec<Scenario>,
}

/// Runs `PROXY_ROUNDS` rounds at `clients`, each target sending then draining `messages /
/// PROXY_ROUNDS` messages per round; round `r` starts with the `r`-th target (of three), so no
/// target is always first or last.
pub(super) async fn rounds(
    localstack: &Endpoint,
    gateway: &Endpoint,
    body: &str,
    messages: usize,
    clients: usize,
) -> Result<Vec<Round>, String> {
    let per_round = messages.div_ceil(PROXY_ROUNDS);
    let mut rounds = Vec::with_capacity(PROXY_ROUNDS);
    for round in 0..PROXY_ROUNDS {
        eprintln!(
            "bench: the proxy, {clients} client(s), round {} of {PROXY_ROUNDS}",
            round + 1
        );
        let mut order = ROUND_TARGETS;
        order.rotate_left(round % ROUND_TARGETS.len());
        let mut scenarios = Vec::new();
        for target in order {
            let (endpoint, queues) = match target {
                Target::GatewayOverLocalStack => (gateway.clone(), Queues::Configured),
                _ => (
                    Endpoint {
                        keep_alive: target == Target::LocalStackKeptAlive,
                        ..localstack.clone()
                    },
                    Queues::Fresh,
                ),
            };
            scenarios.extend(
                sqs_endpoint::measure(target, &endpoint, queues, body, per_round, &[clients])
                    .await?,
            );
        }
        rounds.push(Round { clients, scenarios });
    }
    Ok(rounds)
}

/// The rows of the table: each target's rounds joined (their work and their time add up).
pub(super) fn joined(rounds: &[Round]) -> Vec<Scenario> {
    let mut rows: Vec<Scenario> = Vec::new();
    for scenario in rounds.iter().flat_map(|round| &round.scenarios) {
        match rows.iter_mut().find(|row| {
            (row.target, row.operation, row.clients)
                == (scenario.target, scenario.operation, scenario.clients)
        }) {
            Some(row) => row.run.extend(scenario.run.clone()),
            None => rows.push(scenario.clone()),
        }
    }
    rows
}

/// A target's run of one round, for one operation.
fn run_of(round: &Round, target: Target, operation: Operation) -> Option<&Run> {
    round
        .scenarios
        .iter()
        .find(|s| s.target == target && s.operation == operation)
        .map(|s| &s.run)
}

/// Per round at `clients`, the gateway's msg/s against `base`'s in the same round.
pub(super) fn round_ratios(
    rounds: &[Round],
    base: Target,
    operation: Operation,
    clients: usize,
) -> Vec<f64> {
    rounds
        .iter()
        .filter(|round| round.clients == clients)
        .filter_map(|round| {
            let base = run_of(round, base, operation)?.messages_per_second();
            let proxied = run_of(round, Target::GatewayOverLocalStack, operation)?;
            (base > 0.0).then(|| proxied.messages_per_second() / base)
        })
        .collect()
}

/// The median round's ratio of the gateway's msg/s to `base`'s.
pub(super) fn median_ratio(
    rounds: &[Round],
    base: Target,
    operation: Operation,
    clients: usize,
) -> Option<f64> {
    median(&round_ratios(rounds, base, operation, clients))
}

/// The median round's p50 that the gateway adds over `base` to requests of `kind`, in ms.
pub(super) fn median_added_p50(
    rounds: &[Round],
    base: Target,
    operation: Operation,
    clients: usize,
    kind: RequestKind,
) -> Option<f64> {
    let p50 = |run: &Run| run.percentile(Some(kind), 0.5).map(|p50| p50.as_secs_f64());
    let added: Vec<f64> = rounds
        .iter()
        .filter(|round| round.clients == clients)
        .filter_map(|round| {
            let proxied = p50(run_of(round, Target::GatewayOverLocalStack, operation)?)?;
            let base = p50(run_of(round, base, operation)?)?;
            Some((proxied - base) * 1000.0)
        })
        .collect();
    median(&added)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn scenario(target: Target, messages_per_second: usize, p50_ms: u64) -> Scenario {
        Scenario {
            target,
            operation: Operation::Send,
            clients: 1,
            run: Run {
                messages: messages_per_second,
                elapsed: Duration::from_secs(1),
                latencies: vec![(RequestKind::SendMessageBatch, Duration::from_millis(p50_ms))],
                empty_receives: 0,
            },
        }
    }

    fn round(direct: usize, proxied: usize, direct_p50: u64, proxied_p50: u64) -> Round {
        Round {
            clients: 1,
            scenarios: vec![
                scenario(Target::LocalStack, direct, direct_p50),
                scenario(Target::GatewayOverLocalStack, proxied, proxied_p50),
            ],
        }
    }

    /// A round where LocalStack was slow for both sides counts as one round, not as the
    /// verdict: the median round decides; the rows add every round's work and time up.
    #[test]
    fn the_median_round_decides_and_rows_join_the_rounds() {
        let rounds = [
            round(1000, 950, 5, 6),
            round(1000, 500, 5, 9),
            round(400, 380, 12, 12),
            round(1000, 990, 5, 5),
            round(1000, 900, 5, 7),
        ];
        let ratio = median_ratio(&rounds, Target::LocalStack, Operation::Send, 1).unwrap();
        assert!((ratio - 0.95).abs() < 1e-9, "{ratio}");
        let added = median_added_p50(
            &rounds,
            Target::LocalStack,
            Operation::Send,
            1,
            RequestKind::SendMessageBatch,
        )
        .unwrap();
        assert!((added - 1.0).abs() < 1e-9, "{added}");
        assert_eq!(
            median_ratio(&rounds, Target::LocalStack, Operation::Send, 8),
            None
        );
        let rows = joined(&rounds);
        assert_eq!(rows.len(), 2);
        let direct = rows
            .iter()
            .find(|s| s.target == Target::LocalStack)
            .unwrap();
        assert_eq!(direct.run.messages, 4400);
        assert_eq!(direct.run.elapsed, Duration::from_secs(5));
        assert_eq!(direct.run.requests(), 5);
    }
}
