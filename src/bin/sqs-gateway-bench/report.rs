//! How the bench prints: aligned tables (or Markdown ones for docs/performance.md), number formats, and
//! the targets with their verdicts.

use std::time::Duration;

/// A table with a title, a header, rows and notes under it.
#[derive(Debug, Clone)]
pub(super) struct Table {
    title: String,
    headers: Vec<String>,
    /// Leading columns aligned left (names); the rest right (figures).
    left_columns: usize,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

impl Table {
    pub(super) fn new(title: impl Into<String>, headers: &[&str], left_columns: usize) -> Self {
        Self {
            title: title.into(),
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            left_columns,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(super) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(super) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// The table as text: aligned columns, or Markdown.
    pub(super) fn render(&self, markdown: bool) -> String {
        let columns = self.headers.len();
        let cell = |row: &[String], column: usize| row.get(column).cloned().unwrap_or_default();
        let mut out = String::new();
        if markdown {
            out.push_str(&format!("**{}**\n\n", self.title));
            let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
            out.push_str(&line(self.headers.clone()));
            out.push_str(&line(
                (0..columns)
                    .map(|c| if c < self.left_columns { "---" } else { "---:" }.to_owned())
                    .collect(),
            ));
            for row in &self.rows {
                out.push_str(&line((0..columns).map(|c| cell(row, c)).collect()));
            }
            if !self.notes.is_empty() {
                out.push('\n');
            }
            // A hard line break after each note, so they stay lines of their own.
            for note in &self.notes {
                out.push_str(&format!("{note}  \n"));
            }
            return out;
        }
        let width = |column: usize| {
            std::iter::once(&self.headers)
                .chain(&self.rows)
                .map(|row| cell(row, column).chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let line = |cells: &[String]| {
            let padded: Vec<String> = (0..columns)
                .map(|c| {
                    let text = cell(cells, c);
                    let pad = " ".repeat(widths[c].saturating_sub(text.chars().count()));
                    if c < self.left_columns {
                        format!("{text}{pad}")
                    } else {
                        format!("{pad}{text}")
                    }
                })
                .collect();
            format!("{}\n", padded.join("  ").trim_end())
        };
        out.push_str(&format!("{}\n", self.title));
        out.push_str(&line(&self.headers));
        out.push_str(&format!(
            "{}\n",
            widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  ")
        ));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        for note in &self.notes {
            out.push_str(&format!("  {note}\n"));
        }
        out
    }
}

/// A whole number with thousands separators: `12,345`.
pub(super) fn count(value: f64) -> String {
    let rounded = value.round().max(0.0) as u64;
    let digits = rounded.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Milliseconds with two decimals, `-` when unknown.
pub(super) fn ms(duration: Option<Duration>) -> String {
    duration.map_or_else(
        || "-".into(),
        |d| format!("{:.2}", d.as_secs_f64() * 1000.0),
    )
}

/// A signed millisecond difference.
pub(super) fn ms_delta(later: Option<Duration>, earlier: Option<Duration>) -> Option<f64> {
    Some((later?.as_secs_f64() - earlier?.as_secs_f64()) * 1000.0)
}

/// A signed millisecond difference with two decimals (`+0.00` for a difference below that).
pub(super) fn signed_ms(delta: f64) -> String {
    let delta = if delta.abs() < 0.005 { 0.0 } else { delta };
    format!("{delta:+.2}")
}

/// A ratio: two decimals below 10, one below 100, whole above; cut, not rounded, so a ratio
/// printed at a target's bound (20×, 0.90×) reached it.
pub(super) fn times(ratio: f64) -> String {
    let cut = |decimals: i32| {
        let scale = 10f64.powi(decimals);
        (ratio * scale).floor() / scale
    };
    if ratio < 10.0 {
        format!("{:.2}×", cut(2))
    } else if ratio < 100.0 {
        format!("{:.1}×", cut(1))
    } else {
        format!("{:.0}×", cut(0))
    }
}

/// A share in percent, cut to a whole percent (49.6 % reads 49 %, under a 50 % target).
pub(super) fn percent(share: f64) -> String {
    format!("{:.0} %", (share * 100.0).floor())
}

/// Whether a target is met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Met,
    NotMet,
    NotMeasured,
}

impl Verdict {
    pub(super) fn of(met: bool) -> Self {
        if met { Self::Met } else { Self::NotMet }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::NotMet => "NOT met",
            Self::NotMeasured => "not measured",
        }
    }
}

/// One target, the figure it is judged on, and the verdict.
#[derive(Debug, Clone)]
pub(super) struct Check {
    pub target: String,
    pub figure: String,
    pub verdict: Verdict,
}

/// The targets as a table.
pub(super) fn targets_table(checks: &[Check]) -> Table {
    let mut table = Table::new("Targets", &["target", "figure", "verdict"], 3);
    for check in checks {
        table.row(vec![
            check.target.clone(),
            check.figure.clone(),
            check.verdict.word().to_owned(),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new("Sample", &["target", "msg/s", "ratio"], 1);
        table.row(vec!["LocalStack".into(), count(2813.4), times(1.0)]);
        table.row(vec!["gateway, durable".into(), count(74307.0), times(21.3)]);
        table.note("batches of 10");
        table
    }

    #[test]
    fn text_tables_align_names_left_and_figures_right() {
        let text = sample().render(false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Sample");
        assert_eq!(lines[1], "target             msg/s  ratio");
        assert_eq!(lines[2], "----------------  ------  -----");
        assert_eq!(lines[3], "LocalStack         2,813  1.00×");
        assert_eq!(lines[4], "gateway, durable  74,307  21.3×");
        assert_eq!(lines[5], "  batches of 10");
    }

    #[test]
    fn markdown_tables_have_a_header_rule_and_right_aligned_figures() {
        let text = sample().render(true);
        assert!(
            text.starts_with("**Sample**\n\n| target | msg/s | ratio |\n| --- | ---: | ---: |\n")
        );
        assert!(text.contains("| gateway, durable | 74,307 | 21.3× |\n"));
        assert!(text.ends_with("\nbatches of 10  \n"));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(count(0.4), "0");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1000.0), "1,000");
        assert_eq!(count(1_234_567.0), "1,234,567");
        assert_eq!(times(0.934), "0.93×");
        assert_eq!(times(0.8999), "0.89×", "under 0.9× never reads 0.90×");
        assert_eq!(times(19.96), "19.9×", "under 20× never reads 20×");
        assert_eq!(times(187.2), "187×");
        assert_eq!(percent(0.756), "75 %");
        assert_eq!(percent(0.4996), "49 %", "under 50 % never reads 50 %");
        assert_eq!(ms(Some(Duration::from_micros(1234))), "1.23");
        assert_eq!(ms(None), "-");
        assert_eq!(signed_ms(-0.001), "+0.00");
        assert_eq!(signed_ms(-1.234), "-1.23");
        assert_eq!(signed_ms(0.5), "+0.50");
        let delta = ms_delta(
            Some(Duration::from_millis(3)),
            Some(Duration::from_millis(1)),
        );
        assert!((delta.unwrap_or_default() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_targets_table_says_which_are_met() {
        let table = targets_table(&[
            Check {
                target: "a".into(),
                figure: "1".into(),
                verdict: Verdict::of(true),
            },
            Check {
                target: "b".into(),
                figure: "2".into(),
                verdict: Verdict::of(false),
            },
        ]);
        let text = table.render(false);
        let line = |start: &str| {
            text.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_default()
        };
        assert!(line("a ").ends_with(" met"), "{text}");
        assert!(line("b ").ends_with(" NOT met"), "{text}");
    }
}
