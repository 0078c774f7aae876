//! SQS JSON 1.0 requests as the SDKs send them (the Query protocol is shaped into the same), and
//! the rules that turn them into core types.

use super::error::SqsError;
use super::md5;
use crate::core::model::{AttributeValue, MessageAttribute, OutgoingMessage, QueueSettings};
use crate::core::sqs_limits::{MAX_BATCH, MAX_DELAY_SECONDS};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};

/// A message attribute as the JSON protocol carries it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct AttributeJson {
    pub data_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    /// Base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binary_value: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct StartMessageMoveTask {
    pub source_arn: Option<String>,
    pub destination_arn: Option<String>,
    pub max_number_of_messages_per_second: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ListMessageMoveTasks {
    pub source_arn: Option<String>,
    pub max_results: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct CancelMessageMoveTask {
    pub task_handle: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct AddPermission {
    pub queue_url: Option<String>,
    pub label: Option<String>,
    #[serde(default, rename = "AWSAccountIds")]
    pub aws_account_ids: Vec<String>,
    #[serde(default)]
    pub actions: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct RemovePermission {
    pub queue_url: Option<String>,
    pub label: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct QueueUrlOnly {
    pub queue_url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct GetQueueUrl {
    pub queue_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ListQueues {
    pub queue_name_prefix: Option<String>,
    pub max_results: Option<i64>,
    pub next_token: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct CreateQueue {
    pub queue_name: Option<String>,
    #[serde(default, deserialize_with = "names_once")]
    pub attributes: BTreeMap<String, String>,
    /// The JSON protocol spells this one in lower case.
    #[serde(default, deserialize_with = "names_once", rename = "tags")]
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct SetQueueAttributes {
    pub queue_url: Option<String>,
    #[serde(default, deserialize_with = "names_once")]
    pub attributes: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Tags {
    pub queue_url: Option<String>,
    #[serde(default, deserialize_with = "names_once")]
    pub tags: BTreeMap<String, String>,
    #[serde(default)]
    pub tag_keys: Vec<String>,
}

/// A RedrivePolicy's dead-letter target ARN (ending in a queue name) and receive count.
fn redrive_policy(value: &str) -> Result<(String, u32), SqsError> {
    let invalid = || {
        SqsError::sender(
            "InvalidAttributeValue",
            "Invalid value for the parameter RedrivePolicy.",
        )
    };
    let policy: serde_json::Value = serde_json::from_str(value).map_err(|_| invalid())?;
    let target = policy["deadLetterTargetArn"].as_str().unwrap_or_default();
    let count = match &policy["maxReceiveCount"] {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.parse().ok(),
        _ => None,
    };
    match (target.rsplit(':').next(), count) {
        (Some(queue), Some(count)) if !queue.is_empty() => {
            Ok((target.to_owned(), u32::try_from(count).unwrap_or(u32::MAX)))
        }
        _ => Err(invalid()),
    }
}

/// The dead-letter target ARN of the attributes' RedrivePolicy, if it has a valid one.
pub(super) fn dead_letter_arn(attributes: &BTreeMap<String, String>) -> Option<String> {
    let policy = attributes.get("RedrivePolicy")?;
    redrive_policy(policy).ok().map(|(arn, _)| arn)
}

/// The largest value of a kept attribute (SQS's queue policies are at most 20 KiB).
const MAX_KEPT_BYTES: usize = 20 * 1024;

/// A kept attribute's value as SQS checks it; empty takes the attribute away.
pub(super) fn check_kept(key: &str, value: &str) -> Result<(), SqsError> {
    if value.is_empty() {
        return Ok(());
    }
    let valid = value.len() <= MAX_KEPT_BYTES
        && match key {
            "Policy" | "RedriveAllowPolicy" => {
                serde_json::from_str::<serde_json::Value>(value).is_ok_and(|v| v.is_object())
            }
            "KmsDataKeyReusePeriodSeconds" => value
                .parse::<u32>()
                .is_ok_and(|seconds| (60..=86_400).contains(&seconds)),
            "SqsManagedSseEnabled" => matches!(value, "true" | "false"),
            _ => value.chars().all(|c| c.is_ascii_graphic()),
        };
    if valid {
        Ok(())
    } else {
        Err(invalid_value(key))
    }
}

/// SQS's refusal of a queue attribute's value.
fn invalid_value(key: &str) -> SqsError {
    SqsError::sender(
        "InvalidAttributeValue",
        format!("Invalid value for the parameter {key}."),
    )
}

/// Queue attributes (as CreateQueue and SetQueueAttributes carry them) as settings.
pub(super) fn queue_settings(
    attributes: &BTreeMap<String, String>,
    creating: bool,
    fifo: bool,
) -> Result<QueueSettings, SqsError> {
    let mut settings = QueueSettings::default();
    let number = |key: &str, value: &str| {
        value.parse::<u32>().map_err(|_| {
            SqsError::sender(
                "InvalidAttributeValue",
                format!("Invalid value for the parameter {key}."),
            )
        })
    };
    for (key, value) in attributes {
        match key.as_str() {
            "VisibilityTimeout" => settings.visibility_timeout_seconds = Some(number(key, value)?),
            "DelaySeconds" => settings.delay_seconds = Some(number(key, value)?),
            "ReceiveMessageWaitTimeSeconds" => {
                settings.receive_wait_seconds = Some(number(key, value)?)
            }
            "MessageRetentionPeriod" => settings.retention_seconds = Some(number(key, value)?),
            "MaximumMessageSize" => settings.max_message_bytes = Some(number(key, value)?),
            "ContentBasedDeduplication" if fifo => {
                settings.content_based_deduplication = Some(value.eq_ignore_ascii_case("true"))
            }
            // As SQS: FifoQueue=true only on a .fifo queue (the name's own rule is checked by
            // CreateQueue), and a queue's type never changes.
            "FifoQueue" | "ContentBasedDeduplication" if !fifo => {
                return Err(SqsError::sender(
                    "InvalidAttributeName",
                    format!("Unknown Attribute {key}."),
                ));
            }
            "FifoQueue" if value.eq_ignore_ascii_case("true") => {}
            "FifoQueue" if creating => {
                return Err(SqsError::sender(
                    "InvalidAttributeName",
                    "Unknown Attribute FifoQueue.",
                ));
            }
            "FifoQueue" => {
                return Err(SqsError::sender(
                    "InvalidAttributeValue",
                    "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.",
                ));
            }
            "DeduplicationScope" | "FifoThroughputLimit" if !fifo => {
                return Err(SqsError::sender(
                    "InvalidAttributeName",
                    format!("You can specify the {key} only when FifoQueue is set to true."),
                ));
            }
            "DeduplicationScope" => {
                settings.per_group_deduplication = Some(match value.as_str() {
                    "messageGroup" => true,
                    "queue" => false,
                    _ => return Err(invalid_value(key)),
                })
            }
            "FifoThroughputLimit" => {
                settings.per_group_throughput = Some(match value.as_str() {
                    "perMessageGroupId" => true,
                    "perQueue" => false,
                    _ => return Err(invalid_value(key)),
                })
            }
            // As SQS: an empty policy takes the dead-letter queue away.
            "RedrivePolicy" if value.is_empty() => settings.remove_dead_letter = !creating,
            "RedrivePolicy" => {
                let (arn, count) = redrive_policy(value)?;
                let queue = arn.rsplit(':').next().unwrap_or_default();
                settings.dead_letter = Some((queue.to_owned(), count));
            }
            "Policy"
            | "RedriveAllowPolicy"
            | "KmsMasterKeyId"
            | "KmsDataKeyReusePeriodSeconds"
            | "SqsManagedSseEnabled" => {
                check_kept(key, value)?;
                settings.kept.insert(key.clone(), value.clone());
            }
            _ => {
                return Err(SqsError::sender(
                    "InvalidAttributeName",
                    format!(
                        "Unknown Attribute {}.",
                        key.chars().take(64).collect::<String>()
                    ),
                ));
            }
        }
    }
    Ok(settings)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct GetQueueAttributes {
    pub queue_url: Option<String>,
    #[serde(default)]
    pub attribute_names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct SendEntry {
    #[serde(default)]
    pub id: Option<String>,
    pub message_body: Option<String>,
    pub delay_seconds: Option<i64>,
    #[serde(default, deserialize_with = "names_once")]
    pub message_attributes: BTreeMap<String, AttributeJson>,
    pub message_deduplication_id: Option<String>,
    pub message_group_id: Option<String>,
    #[serde(default, deserialize_with = "names_once")]
    pub message_system_attributes: BTreeMap<String, AttributeJson>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct SendMessage {
    pub queue_url: Option<String>,
    #[serde(flatten)]
    pub entry: SendEntry,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct SendMessageBatch {
    pub queue_url: Option<String>,
    #[serde(default)]
    pub entries: Vec<SendEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct ReceiveMessage {
    pub queue_url: Option<String>,
    #[serde(default)]
    pub attribute_names: Vec<String>,
    #[serde(default)]
    pub message_system_attribute_names: Vec<String>,
    #[serde(default)]
    pub message_attribute_names: Vec<String>,
    pub max_number_of_messages: Option<i64>,
    pub visibility_timeout: Option<i64>,
    pub wait_time_seconds: Option<i64>,
    pub receive_request_attempt_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct HandleEntry {
    #[serde(default)]
    pub id: Option<String>,
    pub receipt_handle: Option<String>,
    pub visibility_timeout: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct HandleRequest {
    pub queue_url: Option<String>,
    #[serde(flatten)]
    pub entry: HandleEntry,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct HandleBatch {
    pub queue_url: Option<String>,
    #[serde(default)]
    pub entries: Vec<HandleEntry>,
}

/// The most message data a SendMessageBatch carries, all entries together (SQS's limit: as the
/// largest message).
const MAX_BATCH_BYTES: usize = 1024 * 1024;

/// Refuses a send batch whose messages (bodies and attributes, as SQS counts them) exceed
/// [`MAX_BATCH_BYTES`] together, as SQS does: the whole request, no entry sent.
pub(super) fn check_batch_length(messages: &[OutgoingMessage]) -> Result<(), SqsError> {
    let total: usize = messages
        .iter()
        .map(|message| crate::core::message_rules::size(&message.body, &message.attributes))
        .sum();
    if total > MAX_BATCH_BYTES {
        return Err(SqsError::batch(
            "BatchRequestTooLong",
            format!(
                "Batch requests cannot be longer than {MAX_BATCH_BYTES} bytes. You have sent {total} bytes."
            ),
        ));
    }
    Ok(())
}

/// A JSON object of named entries, refusing a name given twice (a map would keep the last value
/// and drop the other without a word).
fn names_once<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Once<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Once<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("an object whose names are distinct")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((name, value)) = map.next_entry::<String, V>()? {
                if out.contains_key(&name) {
                    return Err(serde::de::Error::custom("a name is given more than once"));
                }
                out.insert(name, value);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Once(std::marker::PhantomData))
}

/// Checks a batch's size and entry ids as SQS does.
pub(super) fn check_batch<'a>(
    ids: impl ExactSizeIterator<Item = Option<&'a str>>,
) -> Result<Vec<String>, SqsError> {
    if ids.len() == 0 {
        return Err(SqsError::batch(
            "EmptyBatchRequest",
            "There should be at least one entry in the request.",
        ));
    }
    if ids.len() > MAX_BATCH as usize {
        return Err(SqsError::batch(
            "TooManyEntriesInBatchRequest",
            format!(
                "Maximum number of entries per request are {MAX_BATCH}. You have sent {}.",
                ids.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for id in ids {
        let id = id.ok_or_else(|| SqsError::missing_parameter("Id"))?;
        let valid = !id.is_empty()
            && id.len() <= 80
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(SqsError::batch(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
            ));
        }
        if !seen.insert(id.to_owned()) {
            return Err(SqsError::batch(
                "BatchEntryIdsNotDistinct",
                "Two or more batch entries in the request have the same Id.",
            ));
        }
        out.push(id.to_owned());
    }
    Ok(out)
}

/// An integer parameter in `min..=max`, with SQS's wording when it is not.
pub(super) fn ranged(
    value: Option<i64>,
    name: &str,
    min: i64,
    max: i64,
) -> Result<Option<u32>, SqsError> {
    match value {
        None => Ok(None),
        Some(value) if (min..=max).contains(&value) => Ok(u32::try_from(value).ok()),
        // SQS words its long-poll bound apart from the others.
        Some(value) if name == "WaitTimeSeconds" => Err(SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be >= {min} and <= {max}, if provided."
        ))),
        Some(value) => Err(SqsError::invalid_parameter(format!(
            "Value {value} for parameter {name} is invalid. Reason: Must be between {min} and {max}, if provided."
        ))),
    }
}

/// The one message system attribute SQS takes.
pub(super) const TRACE_HEADER: &str = "AWSTraceHeader";

/// The longest trace header a message carries (an X-Ray header is about 100 bytes): it counts
/// neither in the attribute count nor in the size limit, so it must not carry data.
pub(super) const MAX_TRACE_HEADER: usize = 1024;

/// The trace header an entry's system attributes carry (SQS takes `AWSTraceHeader`, a string,
/// and no other name).
fn trace_header(
    system_attributes: BTreeMap<String, AttributeJson>,
) -> Result<Option<String>, SqsError> {
    let mut trace_header = None;
    for (name, attribute) in system_attributes {
        if name != TRACE_HEADER {
            let shown: String = name.chars().take(64).collect();
            return Err(SqsError::invalid_parameter(format!(
                "Message system attribute name '{shown}' is invalid."
            )));
        }
        if attribute.data_type != "String" {
            return Err(SqsError::invalid_parameter(format!(
                "The message system attribute '{TRACE_HEADER}' must be of type 'String'."
            )));
        }
        match attribute.string_value {
            Some(value) if value.len() > MAX_TRACE_HEADER => {
                return Err(SqsError::invalid_parameter(format!(
                    "The message system attribute '{TRACE_HEADER}' is longer than {MAX_TRACE_HEADER} bytes."
                )));
            }
            Some(value) if !value.is_empty() => trace_header = Some(value),
            _ => {
                return Err(SqsError::invalid_parameter(format!(
                    "The message system attribute '{TRACE_HEADER}' must contain a non-empty value of message system attribute type 'String'."
                )));
            }
        }
    }
    Ok(trace_header)
}

/// Turns a wire entry into a message to send; `request_trace` is the request's own
/// `X-Amzn-Trace-Id`, which the entry's `AWSTraceHeader` overrides.
pub(super) fn outgoing(
    entry: SendEntry,
    request_trace: Option<&str>,
) -> Result<OutgoingMessage, SqsError> {
    let body = entry
        .message_body
        .ok_or_else(|| SqsError::missing_parameter("MessageBody"))?;
    // The core takes up to 20 (other APIs promise them); SQS's own limit is 10.
    if entry.message_attributes.len() > 10 {
        return Err(SqsError::invalid_parameter(format!(
            "Number of message attributes [{}] exceeds the allowed maximum [10].",
            entry.message_attributes.len()
        )));
    }
    let mut attributes = BTreeMap::new();
    for (name, attribute) in entry.message_attributes {
        let value = if attribute.data_type.starts_with("Binary") {
            let encoded = attribute.binary_value.ok_or_else(|| {
                SqsError::invalid_parameter(format!("The message attribute '{name}' must contain a non-empty value of message attribute type '{}'.", attribute.data_type))
            })?;
            AttributeValue::Bytes(STANDARD.decode(encoded).map_err(|_| {
                SqsError::invalid_parameter(format!(
                    "The message attribute '{name}' has an invalid binary value."
                ))
            })?)
        } else {
            AttributeValue::Text(attribute.string_value.ok_or_else(|| {
                SqsError::invalid_parameter(format!("The message attribute '{name}' must contain a non-empty value of message attribute type '{}'.", attribute.data_type))
            })?)
        };
        attributes.insert(
            name,
            MessageAttribute {
                data_type: attribute.data_type,
                value,
            },
        );
    }
    // The other APIs take any 1-256-byte name; this one promises SQS's own rule.
    crate::core::message_rules::check_sqs_names(&attributes).map_err(SqsError::from)?;
    Ok(OutgoingMessage {
        body,
        attributes,
        delay_seconds: ranged(
            entry.delay_seconds,
            "DelaySeconds",
            0,
            i64::from(MAX_DELAY_SECONDS),
        )?,
        group_id: entry.message_group_id,
        deduplication_id: entry.message_deduplication_id,
        trace_header: trace_header(entry.message_system_attributes)?
            .or_else(|| request_trace.map(str::to_owned)),
    })
}

/// The wire form of stored attributes.
pub(super) fn attributes_json(
    attributes: &BTreeMap<String, MessageAttribute>,
) -> BTreeMap<String, AttributeJson> {
    attributes
        .iter()
        .map(|(name, attribute)| {
            let (string_value, binary_value) = match &attribute.value {
                AttributeValue::Text(text) => (Some(text.clone()), None),
                AttributeValue::Bytes(bytes) => (None, Some(STANDARD.encode(bytes))),
            };
            (
                name.clone(),
                AttributeJson {
                    data_type: attribute.data_type.clone(),
                    string_value,
                    binary_value,
                },
            )
        })
        .collect()
}

/// Whether `name` is selected by a MessageAttributeNames list, as SQS selects: `All`, `*` and
/// `.*` select every name, `prefix.*` every name starting with `prefix` (`Hel.*` selects `Hello`
/// and `Help.Me`), any other entry the name itself.
pub(super) fn attribute_selected(name: &str, selection: &[String]) -> bool {
    selection.iter().any(|wanted| {
        matches!(wanted.as_str(), "All" | "*" | ".*")
            || wanted == name
            || wanted
                .strip_suffix(".*")
                .is_some_and(|prefix| name.starts_with(prefix))
    })
}

/// The MD5 digests of a sent message.
pub(super) fn digests(message: &OutgoingMessage) -> (String, Option<String>) {
    (
        md5::of_body(&message.body),
        md5::of_attributes(&message.attributes),
    )
}

/// The MD5 of the system attributes an entry carries itself (a trace header taken from the
/// request's `X-Amzn-Trace-Id` has none), as SQS answers `MD5OfMessageSystemAttributes`.
pub(super) fn system_digest(entry: &SendEntry) -> Option<String> {
    let value = entry
        .message_system_attributes
        .get(TRACE_HEADER)?
        .string_value
        .clone()?;
    let attribute = MessageAttribute {
        data_type: "String".into(),
        value: AttributeValue::Text(value),
    };
    md5::of_attributes(&BTreeMap::from([(TRACE_HEADER.to_owned(), attribute)]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_are_checked_like_sqs() {
        let code = |ids: Vec<Option<&str>>| check_batch(ids.into_iter()).unwrap_err().code;
        assert_eq!(code(vec![]), "EmptyBatchRequest");
        assert_eq!(code(vec![Some("a"); 11]), "TooManyEntriesInBatchRequest");
        assert_eq!(code(vec![None]), "MissingParameter");
        assert_eq!(code(vec![Some("")]), "InvalidBatchEntryId");
        let long = "x".repeat(81);
        assert_eq!(code(vec![Some(long.as_str())]), "InvalidBatchEntryId");
        let twice = check_batch(vec![Some("a"), Some("a")].into_iter()).unwrap_err();
        assert_eq!(twice.code, "BatchEntryIdsNotDistinct");
        assert_eq!(
            twice.query_code,
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
        );
        assert_eq!(code(vec![Some("bad id")]), "InvalidBatchEntryId");
        assert_eq!(
            check_batch(vec![Some("a-1"), Some("b_2")].into_iter()).unwrap(),
            ["a-1", "b_2"]
        );
    }

    #[test]
    fn attribute_selection_follows_sqs() {
        let all = vec!["All".to_owned()];
        assert!(attribute_selected("x", &all));
        assert!(attribute_selected("x", &["*".to_owned()]));
        let prefix = vec!["Hel.*".to_owned()];
        assert!(attribute_selected("Hello", &prefix));
        assert!(attribute_selected("Help.Me", &prefix));
        assert!(!attribute_selected("General", &prefix));
        assert!(!attribute_selected("Help", &["Hel".to_owned()]));
        assert!(!attribute_selected("x", &[]));
    }
}
