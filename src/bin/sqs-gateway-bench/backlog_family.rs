//! The backlog family's run, table and targets: memory per million stored messages, reopen time,
//! flat in body size.

use super::*;

/// The backlog family: 256-byte and 64 KiB bodies, and the large reopen when asked for.
pub(crate) async fn backlog_family(
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

pub(crate) fn backlog_table(options: &BenchOptions, figures: &[backlog::BacklogFigures]) -> Table {
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

pub(crate) fn backlog_checks(
    options: &BenchOptions,
    figures: &[backlog::BacklogFigures],
) -> Vec<Check> {
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
