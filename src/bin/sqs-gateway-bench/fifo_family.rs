//! The FIFO backlog family: receive+delete (8 clients, SQS endpoint) from a durable FIFO queue
//! holding a large backlog spread over 10,000 groups, and over 10, against the same queue
//! holding 10,000 messages in as many groups; with the large backlogs' memory and reopen time.
//! A FIFO queue may hand out only the head of each group not in flight: a backlog over many
//! groups is where an engine that scans for them slows down.

use super::*;
use measure::Run;
use sqs_endpoint::receive_and_delete;

/// The small backlog each large one is judged against.
const SMALL: usize = 10_000;
/// Messages drained from each backlog.
const DRAINED: usize = 10_000;
/// The group counts measured.
const GROUPS: [usize; 2] = [10_000, 10];

/// One FIFO backlog measured.
pub(crate) struct FifoRow {
    messages: usize,
    groups: usize,
    filled_in: Duration,
    reopened_in: Duration,
    resident: u64,
    drained: Run,
}

/// What the FIFO family measured, with a gateway's resident memory on an empty directory.
pub(crate) struct FifoFigures {
    rows: Vec<FifoRow>,
    resident_empty: u64,
}

pub(crate) async fn fifo_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
) -> Result<FifoFigures, String> {
    let resident_empty = backlog::empty_resident(work, secrets).await?;
    let mut rows = Vec::new();
    for groups in GROUPS {
        for messages in [SMALL, options.fifo_messages.max(SMALL)] {
            rows.push(measure(work, secrets, messages, groups).await?);
        }
    }
    Ok(FifoFigures {
        rows,
        resident_empty,
    })
}

async fn measure(
    work: &Path,
    secrets: &Secrets,
    messages: usize,
    groups: usize,
) -> Result<FifoRow, String> {
    let dir = work.join(format!("fifo-{messages}-{groups}"));
    eprintln!("bench: fifo: storing {messages} messages in {groups} groups");
    let outcome = async {
        let filled_in = backlog::fill_in_child(work, &dir, messages, 256, Some(groups)).await?;
        let name = format!("gateway-fifo-{messages}-{groups}");
        let limit = Duration::from_secs(1800);
        let (gateway, resident) = backlog::open_durable(&name, &dir, work, secrets, limit).await?;
        let endpoint = gateway_endpoint(&gateway, secrets);
        let url = sqs_endpoint::queue_url(&endpoint, process::FIFO_BACKLOG_QUEUE).await?;
        eprintln!("bench: fifo: receive+delete {DRAINED} of them");
        let drained = receive_and_delete(&endpoint, &url, DRAINED, 8).await?;
        Ok::<_, String>(FifoRow {
            messages,
            groups,
            filled_in,
            reopened_in: gateway.ready_after,
            resident,
            drained,
        })
    }
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// The small backlog of `groups` groups, and the large one.
fn pair(figures: &FifoFigures, groups: usize) -> Option<(&FifoRow, &FifoRow)> {
    let of = |small: bool| {
        figures
            .rows
            .iter()
            .find(|row| row.groups == groups && (row.messages == SMALL) == small)
    };
    Some((of(true)?, of(false)?))
}

pub(crate) fn fifo_table(figures: &FifoFigures) -> Table {
    let mut table = Table::new(
        format!(
            "FIFO backlogs: receive+delete of {} messages (8 clients, SQS endpoint) from a durable FIFO queue, against the same queue holding {} messages",
            count(DRAINED as f64),
            count(SMALL as f64)
        ),
        &[
            "stored",
            "groups",
            "filled in",
            "reopened in",
            "per million",
            "receive+delete msg/s",
            "of the small backlog's",
        ],
        2,
    );
    for row in &figures.rows {
        let small = pair(figures, row.groups).map(|(small, _)| small);
        let added = row.resident.saturating_sub(figures.resident_empty) as f64;
        table.row(vec![
            count(row.messages as f64),
            count(row.groups as f64),
            format!("{:.1} s", row.filled_in.as_secs_f64()),
            format!("{:.2} s", row.reopened_in.as_secs_f64()),
            format!(
                "{} MiB",
                count(mebibytes(added * 1_000_000.0 / row.messages as f64))
            ),
            count(row.drained.messages_per_second()),
            small.map_or_else(
                || "-".into(),
                |small| {
                    times(row.drained.messages_per_second() / small.drained.messages_per_second())
                },
            ),
        ]);
    }
    table.note("per million: resident memory over a gateway's on an empty directory, scaled to 1,000,000 messages (the small rows' figure is mostly fixed costs)");
    table
}

pub(crate) fn fifo_checks(figures: &FifoFigures) -> Vec<Check> {
    GROUPS
        .iter()
        .map(|groups| {
            let target = format!(
                "FIFO backlog in {} groups: receive+delete ≥ 0.8× the same queue holding {}",
                count(*groups as f64),
                count(SMALL as f64)
            );
            match pair(figures, *groups) {
                Some((small, large)) => {
                    let ratio =
                        large.drained.messages_per_second() / small.drained.messages_per_second();
                    Check {
                        target,
                        figure: format!(
                            "{} stored: {} ({} against {} msg/s)",
                            count(large.messages as f64),
                            times(ratio),
                            count(large.drained.messages_per_second()),
                            count(small.drained.messages_per_second())
                        ),
                        verdict: Verdict::of(ratio >= 0.8),
                    }
                }
                None => Check {
                    target,
                    figure: "-".into(),
                    verdict: Verdict::NotMeasured,
                },
            }
        })
        .collect()
}
