//! The replicas family: one gateway against three, all over LocalStack with their state in one
//! Redis (a `redis-server` child on loopback), the three behind a client-side round robin (each
//! request to the next replica: a receive on one, its ack on the next), measured in alternating
//! rounds over ezgh receive + ack. On a machine with fewer cores than processes the ratio says
//! what sharing the cores costs, not what more machines would give: it is reported, not held to
//! a target.

use super::ezgh;
use super::measure::Run;
use super::process::{Gateway, GatewayBackend, Secrets};
use super::report::{Table, count, ms, times};
use super::sqs_endpoint::{self, Endpoint};
use super::state::OwnRedis;
use std::path::Path;
use std::time::Duration;

/// Rounds: each measures one gateway, then the three.
const ROUNDS: usize = 2;
/// The replicas of the second set.
const REPLICAS: usize = 3;
/// Concurrent clients in every row.
const CLIENTS: usize = 8;

/// What the family measured, or why it could not.
pub(super) enum ReplicaFigures {
    Measured { one: Run, three: Run },
    Skipped(String),
}

/// Fills the queue in LocalStack (unmeasured), then drains it through `bases`.
async fn round(
    localstack: &Endpoint,
    queue_url: &str,
    bases: &[String],
    secrets: &Secrets,
    body: &str,
    messages: usize,
) -> Result<Run, String> {
    sqs_endpoint::send(localstack, queue_url, body, messages, 8).await?;
    eprintln!(
        "bench: {} gateway(s) over LocalStack sharing Redis: ezgh receive+ack, {CLIENTS} clients",
        bases.len()
    );
    ezgh::receive_and_ack_across(
        bases,
        &secrets.api_key.key,
        "ezgh",
        messages,
        CLIENTS,
        sqs_endpoint::BATCH,
    )
    .await
}

/// Measures the family; skipped without LocalStack or `redis-server`.
pub(super) async fn measure(
    messages: usize,
    body_bytes: usize,
    work: &Path,
    secrets: &Secrets,
    localstack: Option<&Endpoint>,
) -> Result<ReplicaFigures, String> {
    let Some(localstack) = localstack else {
        return Ok(ReplicaFigures::Skipped("LocalStack does not answer".into()));
    };
    let redis = match OwnRedis::start(work).await {
        Ok(redis) => redis,
        Err(why) => return Ok(ReplicaFigures::Skipped(why)),
    };
    let name = format!("bench-replicas-{:08x}", rand::random::<u32>());
    let queue_url = sqs_endpoint::create_queue(localstack, &name).await?;
    let backend = GatewayBackend::Sqs {
        endpoint: localstack.url.clone(),
        queues: vec![("ezgh".to_owned(), name)],
        redis: Some(redis.url.clone()),
        fan_in: true,
    };
    let mut gateways = Vec::new();
    for replica in 1..=REPLICAS {
        gateways.push(
            Gateway::start(
                &format!("gateway-replica-{replica}"),
                &backend,
                secrets,
                work,
                Duration::from_secs(60),
            )
            .await?,
        );
    }
    for gateway in &gateways {
        gateway.settle(Duration::from_secs(60)).await?;
    }
    let bases: Vec<String> = gateways
        .iter()
        .map(|gateway| gateway.base.clone())
        .collect();
    let body = "x".repeat(body_bytes);
    let (mut one, mut three) = (Run::default(), Run::default());
    for _ in 0..ROUNDS {
        one.extend(
            round(
                localstack,
                &queue_url,
                &bases[..1],
                secrets,
                &body,
                messages,
            )
            .await?,
        );
        three.extend(round(localstack, &queue_url, &bases, secrets, &body, messages).await?);
    }
    Ok(ReplicaFigures::Measured { one, three })
}

/// The family's table.
pub(super) fn table(messages: usize, body_bytes: usize, figures: &ReplicaFigures) -> Table {
    let mut table = Table::new(
        format!(
            "Three replicas vs one over LocalStack, state in one Redis: ezgh receive+ack, {CLIENTS} clients, {} messages of {body_bytes} bytes per round, {ROUNDS} alternating rounds",
            count(messages as f64)
        ),
        &["replicas", "msg/s", "ratio", "p50 ms", "p99 ms"],
        1,
    );
    let (one, three) = match figures {
        ReplicaFigures::Measured { one, three } => (one, three),
        ReplicaFigures::Skipped(why) => {
            table.note(format!("not measured: {why}"));
            return table;
        }
    };
    for (replicas, run) in [(1, one), (REPLICAS, three)] {
        table.row(vec![
            replicas.to_string(),
            count(run.messages_per_second()),
            times(run.messages_per_second() / one.messages_per_second()),
            ms(run.percentile(None, 0.5)),
            ms(run.percentile(None, 0.99)),
        ]);
    }
    table.note(format!(
        "{} cores here, shared by the replicas, LocalStack, Redis and the clients: a ratio below 1 is the cost of sharing them, not of the design",
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get)
    ));
    table
}
