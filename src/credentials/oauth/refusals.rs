//! Refused admin attempts in the audit log, bounded: at most [`REFUSALS_PER_MINUTE`] a minute are
//! recorded one by one (by this process); the others are counted and summed in one line per
//! workspace when the minute is over, so a flood of refused calls cannot fill the log.

use super::records::{AuditEntry, REFUSED};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Refused admin attempts recorded one by one in any minute (by this process); the others of
/// the minute are counted and summed in one line per workspace when the minute is over.
pub const REFUSALS_PER_MINUTE: u32 = 30;
/// Workspaces whose counted refusals of a minute get a line each; those of further workspaces
/// are summed in one line of workspace `*` (in the file, not in any workspace's page).
const SUMMED_WORKSPACES: usize = 10;
/// Who the sums of refusals name.
const AUDIT_ACTOR: &str = "gateway:audit";

/// The refused admin attempts of one minute.
#[derive(Debug, Default)]
struct Minute {
    /// The minute (since the epoch).
    minute: i64,
    /// Recorded one by one.
    recorded: u32,
    /// Counted only, by workspace.
    counted: BTreeMap<String, u64>,
    /// Counted only, of workspaces past [`SUMMED_WORKSPACES`].
    others: u64,
}

impl Minute {
    fn count(&mut self, workspace: &str) {
        if let Some(count) = self.counted.get_mut(workspace) {
            *count += 1;
        } else if self.counted.len() < SUMMED_WORKSPACES {
            self.counted.insert(workspace.to_owned(), 1);
        } else {
            self.others += 1;
        }
    }

    /// When `minute` is not this one's: its sums (if it counted any), and a fresh count for
    /// `minute`.
    fn close_unless(&mut self, minute: i64) -> Vec<AuditEntry> {
        if self.minute == minute {
            return Vec::new();
        }
        let closed = std::mem::replace(
            self,
            Self {
                minute,
                ..Self::default()
            },
        );
        let at = DateTime::<Utc>::from_timestamp((closed.minute + 1) * 60, 0).unwrap_or_default();
        let from = DateTime::<Utc>::from_timestamp(closed.minute * 60, 0).unwrap_or_default();
        let sum = |workspace: String, count: u64| AuditEntry {
            at,
            workspace,
            actor: AUDIT_ACTOR.to_owned(),
            action: "admin.refusals".to_owned(),
            outcome: REFUSED.to_owned(),
            detail: format!(
                "{count} more refused admin attempts in the minute from {} not recorded one by one \
                 (at most {REFUSALS_PER_MINUTE} a minute are)",
                from.format("%Y-%m-%dT%H:%MZ")
            ),
            ..AuditEntry::default()
        };
        if closed.others > 0 {
            tracing::warn!(
                refusals = closed.others,
                "refused admin attempts on more workspaces than a minute sums one by one"
            );
        }
        let mut lines: Vec<AuditEntry> = closed
            .counted
            .into_iter()
            .map(|(workspace, count)| sum(workspace, count))
            .collect();
        if closed.others > 0 {
            lines.push(sum("*".to_owned(), closed.others));
        }
        lines
    }
}

/// The refused attempts of the current minute.
#[derive(Debug, Default)]
pub(super) struct Refusals {
    minute: Mutex<Minute>,
}

impl Refusals {
    /// The lines to record for a refused admin attempt `entry`: itself while fewer than
    /// [`REFUSALS_PER_MINUTE`] were recorded in its minute (else it is only counted), and the
    /// sums of an earlier minute's refusals that were only counted.
    pub(super) fn lines(&self, entry: AuditEntry) -> Vec<AuditEntry> {
        let minute = entry.at.timestamp().div_euclid(60);
        let mut refusals = self.lock();
        let mut lines = refusals.close_unless(minute);
        if refusals.recorded < REFUSALS_PER_MINUTE {
            refusals.recorded += 1;
            lines.push(entry);
        } else {
            refusals.count(&entry.workspace);
        }
        lines
    }

    /// The sums of refusals counted in a minute that is over by `now` (none while it lasts).
    pub(super) fn sums_due(&self, now: DateTime<Utc>) -> Vec<AuditEntry> {
        self.lock().close_unless(now.timestamp().div_euclid(60))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Minute> {
        self.minute
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::Clock as _;
    use chrono::TimeZone;

    fn audit(workspace: &str, action: &str) -> AuditEntry {
        AuditEntry {
            at: Utc.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap(),
            workspace: workspace.into(),
            actor: "test".into(),
            action: action.into(),
            client_id: "c1".into(),
            ..AuditEntry::default()
        }
    }

    #[test]
    fn refused_attempts_are_recorded_thirty_a_minute_and_the_rest_summed() {
        use crate::core::clock::ManualClock;
        let start = Utc.with_ymd_and_hms(2026, 12, 3, 12, 0, 10).unwrap();
        let clock = ManualClock::new(start);
        let refusals = Refusals::default();
        let refusal = |workspace: &str| AuditEntry {
            at: clock.now(),
            outcome: REFUSED.into(),
            ..audit(workspace, "connection.list")
        };
        let mut lines = Vec::new();
        for n in 0..100 {
            lines.extend(refusals.lines(refusal(if n % 2 == 0 { "w" } else { "x" })));
        }
        assert_eq!(lines.len(), REFUSALS_PER_MINUTE as usize);
        assert!(
            refusals.sums_due(clock.now()).is_empty(),
            "the minute isn't over"
        );
        clock.advance(chrono::Duration::seconds(60));
        let sums = refusals.sums_due(clock.now());
        let counted: Vec<(&str, &str)> = sums
            .iter()
            .map(|sum| {
                (
                    sum.workspace.as_str(),
                    sum.detail.split(' ').next().unwrap(),
                )
            })
            .collect();
        assert_eq!(counted, [("w", "35"), ("x", "35")]);
        assert!(sums.iter().all(|sum| sum.action == "admin.refusals"));
        assert!(refusals.sums_due(clock.now()).is_empty(), "summed once");
        // The next minute records again.
        assert_eq!(refusals.lines(refusal("w")).len(), 1);
    }
}
