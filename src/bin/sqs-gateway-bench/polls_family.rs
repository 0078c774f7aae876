//! The idle long polls family's table and targets: memory per poll and the other requests' latency
//! meanwhile.

use super::*;

pub(crate) fn long_polls_table(figures: &long_polls::LongPollFigures) -> Table {
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

pub(crate) fn long_poll_checks(figures: &long_polls::LongPollFigures) -> Vec<Check> {
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
