//! sombus's wire: the receive query with its documented defaults and ranges, the ack and nack
//! bodies, and the message shape, including how an SQS message maps onto it (the body is the
//! producer's envelope; `message_type`, `correlation_id`, `topic` and `producer_id` come from
//! message attributes of those names, else from the envelope's fields).

use super::error::SombusError;
use crate::api::json::{batch, optional_int, parse_object, reject_unknown};
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{AttributeValue, BackendMessage, Delivery, HandleOutcome};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// The longest visibility timeout or release delay, seconds (12 hours).
pub const MAX_VISIBILITY: u32 = 43_200;
/// The longest attempt id.
const MAX_ATTEMPT_LEN: usize = 128;

/// Parses `max`, `wait`, `visibility` and `attempt` (defaults 10, 20, 60, none).
pub fn parse_receive_query(query: Option<&str>) -> Result<ReceiveOptions, SombusError> {
    let mut seen = BTreeSet::new();
    let mut options = ReceiveOptions {
        max_messages: 10,
        wait_seconds: Some(20),
        visibility_timeout_seconds: Some(60),
        attempt_id: None,
        // A connection with as many messages in flight as its queue allows waits out its long
        // poll (and answers as soon as room frees) instead of being refused.
        wait_out_over_limit: true,
    };
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !seen.insert(name.clone().into_owned()) {
            return Err(SombusError::bad_request(format!(
                "the query parameter `{}` is given twice",
                known_name(&name)?
            )));
        }
        match name.as_ref() {
            "max" => options.max_messages = integer("max", &value, 1, 10)?,
            "wait" => options.wait_seconds = Some(integer("wait", &value, 0, 20)?),
            "visibility" => {
                options.visibility_timeout_seconds =
                    Some(integer("visibility", &value, 0, MAX_VISIBILITY)?)
            }
            "attempt" => {
                if value.is_empty()
                    || value.len() > MAX_ATTEMPT_LEN
                    || !value.bytes().all(|byte| byte.is_ascii_graphic())
                {
                    return Err(SombusError::bad_request(
                        "attempt must be 1 to 128 printable ASCII characters, no spaces",
                    ));
                }
                options.attempt_id = Some(value.into_owned());
            }
            other => {
                known_name(other)?;
            }
        }
    }
    Ok(options)
}

/// A known parameter's name, or the refusal of an unknown one (which is not echoed).
fn known_name(name: &str) -> Result<&'static str, SombusError> {
    ["max", "wait", "visibility", "attempt"]
        .into_iter()
        .find(|known| *known == name)
        .ok_or_else(|| {
            SombusError::bad_request(
                "unknown query parameter; expected only: max, wait, visibility, attempt",
            )
        })
}

fn integer(name: &str, value: &str, min: u32, max: u32) -> Result<u32, SombusError> {
    value
        .parse::<u32>()
        .ok()
        .filter(|number| (min..=max).contains(number) && !value.starts_with('+'))
        .ok_or_else(|| {
            SombusError::bad_request(format!("{name} must be an integer from {min} to {max}"))
        })
}

/// Parses `{"receipt_handles": [1 to 10 distinct strings]}`, with `delay_seconds` (0 to 43,200,
/// default 0) when `with_delay` (nack).
pub fn parse_handles(body: &[u8], with_delay: bool) -> Result<(Vec<String>, u32), SombusError> {
    let object = parse_object(body, false)?;
    let known: &[&str] = if with_delay {
        &["receipt_handles", "delay_seconds"]
    } else {
        &["receipt_handles"]
    };
    reject_unknown(&object, known, "")?;
    let handles = batch(&object, "receipt_handles")?
        .iter()
        .enumerate()
        .map(|(index, handle)| {
            handle
                .as_str()
                .filter(|handle| !handle.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    SombusError::bad_request(format!(
                        "receipt_handles[{index}] must be a non-empty string"
                    ))
                })
        })
        .collect::<Result<Vec<String>, SombusError>>()?;
    let distinct: BTreeSet<&String> = handles.iter().collect();
    if distinct.len() != handles.len() {
        return Err(SombusError::bad_request("receipt_handles must be distinct"));
    }
    let delay = if with_delay {
        optional_int(&object, "delay_seconds", 0, i64::from(MAX_VISIBILITY))?.unwrap_or(0)
    } else {
        0
    };
    Ok((handles, delay))
}

/// The receive answer.
#[derive(Serialize)]
pub struct Received {
    /// The messages, none when none arrived within `wait`.
    pub messages: Vec<PulledMessage>,
}

/// One message as the pull API shows it. No `Debug`: it holds a receipt handle.
#[derive(Serialize)]
pub struct PulledMessage {
    receipt_handle: String,
    message_type: Option<String>,
    correlation_id: Option<String>,
    topic: Option<String>,
    producer_id: Option<String>,
    receive_count: u32,
    enqueued_at: String,
    /// The producer's envelope when the body is a JSON object; `null` otherwise.
    envelope: Value,
    /// Only when the body is not a JSON object: the body as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
}

impl PulledMessage {
    /// A delivery as the pull API shows it; `received_at` stands in for a send time the
    /// backend did not give.
    pub fn new(delivery: Delivery, received_at: DateTime<Utc>) -> Self {
        let Delivery {
            message,
            receipt_handle,
            ..
        } = delivery;
        let envelope = match serde_json::from_str::<Value>(&message.body) {
            Ok(Value::Object(envelope)) => Some(envelope),
            _ => None,
        };
        let field = |name: &str| mapped_field(&message, envelope.as_ref(), name);
        let correlation_id = field("correlation_id").or_else(|| message.group_id.clone());
        Self {
            receipt_handle: receipt_handle.expose().to_owned(),
            message_type: field("message_type"),
            topic: field("topic"),
            producer_id: field("producer_id"),
            correlation_id,
            receive_count: message.receive_count,
            enqueued_at: message
                .sent_at
                .unwrap_or(received_at)
                .to_rfc3339_opts(SecondsFormat::Millis, true),
            body: envelope.is_none().then(|| message.body.clone()),
            envelope: envelope.map_or(Value::Null, Value::Object),
        }
    }
}

/// A routing field: the string message attribute of that name, else the envelope's string field.
fn mapped_field(
    message: &BackendMessage,
    envelope: Option<&Map<String, Value>>,
    name: &str,
) -> Option<String> {
    let from_attribute = message
        .attributes
        .get(name)
        .filter(|attribute| attribute.data_type.starts_with("String"))
        .and_then(|attribute| match &attribute.value {
            AttributeValue::Text(text) => Some(text.clone()),
            AttributeValue::Bytes(_) => None,
        });
    from_attribute.or_else(|| {
        envelope
            .and_then(|envelope| envelope.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
    })
}

/// A handle that did not succeed.
#[derive(Serialize)]
pub struct FailedHandle {
    receipt_handle: String,
    code: &'static str,
    message: &'static str,
}

/// The answer to ack (`acked`) or nack (`nacked`): each handle in one list.
pub fn handle_results(handles: Vec<String>, outcomes: &[HandleOutcome], done_field: &str) -> Value {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (handle, outcome) in handles.into_iter().zip(outcomes) {
        match outcome {
            // A stale handle is from this queue and well formed: its delivery is over (acked,
            // released or timed out already), so there is nothing left to do with it.
            HandleOutcome::Ok | HandleOutcome::Stale => done.push(Value::String(handle)),
            HandleOutcome::Invalid => failed.push(FailedHandle {
                receipt_handle: handle,
                code: "ReceiptHandleIsInvalid",
                message: "the receipt handle is malformed or not from your queue",
            }),
        }
    }
    let mut answer = Map::new();
    answer.insert(done_field.to_owned(), Value::Array(done));
    answer.insert(
        "failed".to_owned(),
        serde_json::to_value(failed).unwrap_or_default(),
    );
    Value::Object(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receive_query_has_the_documented_defaults_and_ranges() {
        let defaults = parse_receive_query(None).unwrap();
        assert_eq!(
            (
                defaults.max_messages,
                defaults.wait_seconds,
                defaults.visibility_timeout_seconds
            ),
            (10, Some(20), Some(60))
        );
        let given =
            parse_receive_query(Some("max=1&wait=0&visibility=43200&attempt=a-1~!")).unwrap();
        assert_eq!(given.max_messages, 1);
        assert_eq!(given.wait_seconds, Some(0));
        assert_eq!(given.visibility_timeout_seconds, Some(43_200));
        assert_eq!(given.attempt_id.as_deref(), Some("a-1~!"));
        for bad in [
            "max=0",
            "max=11",
            "wait=21",
            "visibility=43201",
            "max=-1",
            "max=1.0",
            "max=+1",
            "max=",
            "attempt=",
            "attempt=a%20b",
            "attempt=%C3%A9",
            "max=1&max=2",
            "other=1",
        ] {
            let error = parse_receive_query(Some(bad))
                .err()
                .unwrap_or_else(|| panic!("{bad}"));
            assert_eq!(error.rule(), "pull.bad_request", "{bad}");
        }
        let long = format!("attempt={}", "a".repeat(129));
        assert!(parse_receive_query(Some(&long)).is_err());
        assert!(parse_receive_query(Some(&format!("attempt={}", "a".repeat(128)))).is_ok());
    }

    #[test]
    fn handle_bodies_are_checked() {
        let (handles, delay) = parse_handles(
            br#"{"receipt_handles": ["a", "b"], "delay_seconds": 30}"#,
            true,
        )
        .unwrap();
        assert_eq!((handles.len(), delay), (2, 30));
        assert_eq!(
            parse_handles(br#"{"receipt_handles": ["a"]}"#, true)
                .unwrap()
                .1,
            0
        );
        for bad in [
            &br#"{"receipt_handles": []}"#[..],
            br#"{"receipt_handles": ["a", "a"]}"#,
            br#"{"receipt_handles": [1]}"#,
            br#"{"receipt_handles": [""]}"#,
            br#"{"receipt_handles": ["1","2","3","4","5","6","7","8","9","10","11"]}"#,
            br#"{"receipt_handles": ["a"], "delay_seconds": 43201}"#,
            br#"{"receipt_handles": ["a"], "extra": 1}"#,
            b"not json",
        ] {
            assert!(parse_handles(bad, true).is_err());
        }
        assert!(
            parse_handles(br#"{"receipt_handles": ["a"], "delay_seconds": 1}"#, false).is_err()
        );
    }
}
