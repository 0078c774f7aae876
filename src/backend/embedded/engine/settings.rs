//! A queue's settings: what SQS lets a queue be configured with, checked against its ranges and
//! with its defaults filled in.

use crate::core::model::QueueSettings;
use crate::core::sqs_limits as limits;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A queue's settings, checked and with SQS's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// A FIFO queue (its name ends in `.fifo`).
    pub fifo: bool,
    /// Default visibility timeout of a receive, in seconds.
    pub visibility_timeout_seconds: u32,
    /// Default delay of new messages, in seconds.
    pub delay_seconds: u32,
    /// Default long-poll wait of a receive, in seconds.
    pub receive_wait_seconds: u32,
    /// How long messages are kept, in seconds.
    pub retention_seconds: u32,
    /// Largest message (body plus attributes), in bytes.
    pub max_message_bytes: u32,
    /// FIFO: deduplicate by the body's SHA-256 when no id is given.
    pub content_based_deduplication: bool,
    /// Dead-letter queue name and max receive count.
    pub dead_letter: Option<(String, u32)>,
    /// Cost-allocation tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Creation time, seconds since the epoch.
    #[serde(default)]
    pub created_at: u64,
    /// Last settings change, seconds since the epoch.
    #[serde(default)]
    pub modified_at: u64,
    /// FIFO: deduplication ids kept per message group (`DeduplicationScope` `messageGroup`).
    #[serde(default)]
    pub per_group_deduplication: bool,
    /// FIFO: throughput per message group (`FifoThroughputLimit` `perMessageGroupId`); the
    /// engine has no per-queue throughput limit to lift, so this is kept and answered.
    #[serde(default)]
    pub per_group_throughput: bool,
    /// The attributes kept and answered as given ([`crate::core::model::KEPT_ATTRIBUTES`]).
    #[serde(default)]
    pub kept: BTreeMap<String, String>,
}

impl Settings {
    /// Checks `requested` against SQS's ranges and fills in the defaults.
    pub fn new(name: &str, requested: &QueueSettings) -> Result<Self, String> {
        let fifo = name.ends_with(".fifo");
        if !crate::core::model::valid_queue_name(name) {
            return Err("queue names are 1 to 80 of A-Z, a-z, 0-9, '-' and '_' (and a .fifo suffix for FIFO queues)".into());
        }
        let ranged = |value: Option<u32>, default: u32, min: u32, max: u32, what: &str| {
            let value = value.unwrap_or(default);
            if (min..=max).contains(&value) {
                Ok(value)
            } else {
                Err(format!("{what} must be from {min} to {max}"))
            }
        };
        let content_based_deduplication = requested.content_based_deduplication.unwrap_or(false);
        if content_based_deduplication && !fifo {
            return Err("ContentBasedDeduplication is for FIFO queues only".into());
        }
        let per_group_deduplication = requested.per_group_deduplication.unwrap_or(false);
        let per_group_throughput = requested.per_group_throughput.unwrap_or(false);
        if (per_group_deduplication || per_group_throughput) && !fifo {
            return Err(
                "DeduplicationScope and FifoThroughputLimit are for FIFO queues only".into(),
            );
        }
        if let Some((target, count)) = &requested.dead_letter {
            if target.ends_with(".fifo") != fifo {
                return Err(
                    "a dead-letter queue must be of the same type (standard or FIFO)".into(),
                );
            }
            if !(1..=1000).contains(count) {
                return Err("maxReceiveCount must be from 1 to 1000".into());
            }
        }
        Ok(Self {
            fifo,
            visibility_timeout_seconds: ranged(
                requested.visibility_timeout_seconds,
                limits::DEFAULT_VISIBILITY_SECONDS,
                0,
                limits::MAX_VISIBILITY_SECONDS,
                "VisibilityTimeout",
            )?,
            delay_seconds: ranged(
                requested.delay_seconds,
                0,
                0,
                limits::MAX_DELAY_SECONDS,
                "DelaySeconds",
            )?,
            receive_wait_seconds: ranged(
                requested.receive_wait_seconds,
                0,
                0,
                limits::MAX_WAIT_SECONDS,
                "ReceiveMessageWaitTimeSeconds",
            )?,
            retention_seconds: ranged(
                requested.retention_seconds,
                limits::DEFAULT_RETENTION_SECONDS,
                limits::MIN_RETENTION_SECONDS,
                limits::MAX_RETENTION_SECONDS,
                "MessageRetentionPeriod",
            )?,
            max_message_bytes: ranged(
                requested.max_message_bytes,
                limits::MAX_MESSAGE_BYTES,
                limits::MIN_MESSAGE_BYTES,
                limits::MAX_MESSAGE_BYTES,
                "MaximumMessageSize",
            )?,
            content_based_deduplication,
            dead_letter: requested.dead_letter.clone(),
            tags: BTreeMap::new(),
            created_at: 0,
            modified_at: 0,
            per_group_deduplication,
            per_group_throughput,
            kept: requested
                .kept
                .iter()
                .filter(|(_, value)| !value.is_empty())
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect(),
        })
    }

    /// The first attribute `requested` gives with a value other than these settings' (by SQS's
    /// name), if any: as SQS, CreateQueue on an existing queue compares only what it is given.
    pub fn differing_attribute(&self, requested: &QueueSettings) -> Option<&'static str> {
        let differs = |given: Option<u32>, kept: u32| given.is_some_and(|given| given != kept);
        if differs(requested.delay_seconds, self.delay_seconds) {
            return Some("DelaySeconds");
        }
        if differs(requested.max_message_bytes, self.max_message_bytes) {
            return Some("MaximumMessageSize");
        }
        if differs(requested.retention_seconds, self.retention_seconds) {
            return Some("MessageRetentionPeriod");
        }
        if differs(requested.receive_wait_seconds, self.receive_wait_seconds) {
            return Some("ReceiveMessageWaitTimeSeconds");
        }
        if differs(
            requested.visibility_timeout_seconds,
            self.visibility_timeout_seconds,
        ) {
            return Some("VisibilityTimeout");
        }
        if requested
            .content_based_deduplication
            .is_some_and(|given| given != self.content_based_deduplication)
        {
            return Some("ContentBasedDeduplication");
        }
        if requested
            .dead_letter
            .as_ref()
            .is_some_and(|given| Some(given) != self.dead_letter.as_ref())
        {
            return Some("RedrivePolicy");
        }
        if requested
            .per_group_deduplication
            .is_some_and(|given| given != self.per_group_deduplication)
        {
            return Some("DeduplicationScope");
        }
        if requested
            .per_group_throughput
            .is_some_and(|given| given != self.per_group_throughput)
        {
            return Some("FifoThroughputLimit");
        }
        crate::core::model::KEPT_ATTRIBUTES
            .into_iter()
            .find(|name| {
                requested
                    .kept
                    .get(*name)
                    .is_some_and(|given| self.kept.get(*name).map_or("", String::as_str) != given)
            })
    }

    /// Whether two settings behave the same (tags and timestamps aside).
    pub fn same_behaviour(&self, other: &Self) -> bool {
        let strip = |settings: &Self| Self {
            tags: BTreeMap::new(),
            created_at: 0,
            modified_at: 0,
            ..settings.clone()
        };
        strip(self) == strip(other)
    }

    /// These settings with the fields `changes` gives replaced, checked again.
    pub fn changed(&self, name: &str, changes: &QueueSettings) -> Result<Self, String> {
        let merged = QueueSettings {
            visibility_timeout_seconds: changes
                .visibility_timeout_seconds
                .or(Some(self.visibility_timeout_seconds)),
            delay_seconds: changes.delay_seconds.or(Some(self.delay_seconds)),
            receive_wait_seconds: changes
                .receive_wait_seconds
                .or(Some(self.receive_wait_seconds)),
            retention_seconds: changes.retention_seconds.or(Some(self.retention_seconds)),
            max_message_bytes: changes.max_message_bytes.or(Some(self.max_message_bytes)),
            content_based_deduplication: changes
                .content_based_deduplication
                .or(Some(self.content_based_deduplication)),
            dead_letter: if changes.remove_dead_letter {
                None
            } else {
                changes
                    .dead_letter
                    .clone()
                    .or_else(|| self.dead_letter.clone())
            },
            remove_dead_letter: false,
            per_group_deduplication: changes
                .per_group_deduplication
                .or(Some(self.per_group_deduplication)),
            per_group_throughput: changes
                .per_group_throughput
                .or(Some(self.per_group_throughput)),
            kept: {
                let mut kept = self.kept.clone();
                for (name, value) in &changes.kept {
                    kept.insert(name.clone(), value.clone());
                }
                kept
            },
        };
        let mut settings = Self::new(name, &merged)?;
        settings.tags = self.tags.clone();
        settings.created_at = self.created_at;
        settings.modified_at = self.modified_at;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked() {
        for bad in [
            QueueSettings {
                visibility_timeout_seconds: Some(43_201),
                ..Default::default()
            },
            QueueSettings {
                delay_seconds: Some(901),
                ..Default::default()
            },
            QueueSettings {
                receive_wait_seconds: Some(21),
                ..Default::default()
            },
            QueueSettings {
                retention_seconds: Some(59),
                ..Default::default()
            },
            QueueSettings {
                retention_seconds: Some(1_209_601),
                ..Default::default()
            },
            QueueSettings {
                content_based_deduplication: Some(true),
                ..Default::default()
            },
            QueueSettings {
                dead_letter: Some(("d.fifo".into(), 3)),
                ..Default::default()
            },
            QueueSettings {
                dead_letter: Some(("d".into(), 0)),
                ..Default::default()
            },
        ] {
            assert!(Settings::new("q", &bad).is_err(), "{bad:?}");
        }
        assert!(Settings::new("bad name", &QueueSettings::default()).is_err());
        assert!(Settings::new(".fifo", &QueueSettings::default()).is_err());
        let defaults = Settings::new("q", &QueueSettings::default()).unwrap();
        assert_eq!(
            (
                defaults.visibility_timeout_seconds,
                defaults.retention_seconds,
                defaults.max_message_bytes
            ),
            (30, 345_600, 1_048_576)
        );
    }
}
