//! SQS's answers and errors in the core's terms: batch outcomes per entry, error codes, queue
//! attributes, redrive policies and messages.

use super::*;

/// Errors of the message move task actions: a refused task says what SQS checks (our words).
pub(super) fn map_move_error<E, R>(error: SdkError<E, R>) -> BackendError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let code = error.code().map(str::to_owned);
    match (map_error(error), code.as_deref()) {
        (_, Some("ResourceNotFoundException")) => {
            BackendError::ResourceNotFound("no such message move task or queue".into())
        }
        (_, Some("UnsupportedOperation" | "AWS.SimpleQueueService.UnsupportedOperation")) => {
            BackendError::Unsupported("this message move task")
        }
        (BackendError::Rejected(detail), _) => BackendError::Invalid(format!(
            "the queue service refused the message move task ({}): the source must be a dead-letter queue with no task running",
            detail.split_whitespace().nth(2).unwrap_or("refused")
        )),
        (other, _) => other,
    }
}

pub(super) fn to_i32(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// One outcome per entry id `0..len`, from a batch answer's successful ids and failed (id, code).
/// One batch entry per item, each with its index as its id.
pub(super) fn indexed<T, E, B: std::fmt::Display>(
    items: &[T],
    build: impl Fn(String, &T) -> Result<E, B>,
) -> Result<Vec<E>, BackendError> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            build(index.to_string(), item).map_err(|error| BackendError::Other(error.to_string()))
        })
        .collect()
}

/// A delete or visibility batch's answer (the ids that succeeded, the failed ids with their
/// codes) as one outcome per entry of `len`, in order.
pub(super) fn answered(
    len: usize,
    successful: impl Iterator<Item = String>,
    failed: impl Iterator<Item = (String, String)>,
) -> Vec<EntryOutcome> {
    let successful: Vec<String> = successful.collect();
    let failed: Vec<(String, String)> = failed.collect();
    batch_outcomes(len, &successful, &failed)
}

pub(super) fn batch_outcomes(
    len: usize,
    successful: &[String],
    failed: &[(String, String)],
) -> Vec<EntryOutcome> {
    (0..len)
        .map(|index| {
            let id = index.to_string();
            if successful.contains(&id) {
                return EntryOutcome::Ok;
            }
            match failed.iter().find(|(failed_id, _)| *failed_id == id) {
                Some((_, code)) => entry_outcome(code),
                None => EntryOutcome::Failed("the batch answer omitted this entry".into()),
            }
        })
        .collect()
}

/// SQS's per-entry send error codes, as static strings (unknown ones collapse to a generic code).
/// An SQS per-entry refusal in the core's terms.
pub(super) fn entry_error(code: &str) -> EntryError {
    let kind = match code {
        "InvalidParameterValue" | "InvalidParameterValueException" => {
            EntryErrorKind::InvalidParameter
        }
        "MissingParameter" | "MissingRequiredParameterException" => {
            EntryErrorKind::MissingParameter
        }
        "InvalidMessageContents" => EntryErrorKind::InvalidContents,
        _ => EntryErrorKind::Refused,
    };
    EntryError::new(
        kind,
        format!("the queue service refused this message ({code})"),
    )
}

/// Maps an SQS per-entry error code.
pub(super) fn entry_outcome(code: &str) -> EntryOutcome {
    match code {
        // LocalStack answers InvalidParameterValueException for a message that is already deleted;
        // the gateway validates every parameter itself, so that is the only cause left.
        "ReceiptHandleIsInvalid"
        | "InvalidReceiptHandle"
        | "MessageNotFound"
        | "InvalidParameterValue"
        | "InvalidParameterValueException" => EntryOutcome::Gone,
        "MessageNotInflight" | "AWS.SimpleQueueService.MessageNotInflight" => {
            EntryOutcome::NotInFlight
        }
        other => EntryOutcome::Failed(format!("SQS entry error {other}")),
    }
}

pub(super) fn is_queue_missing(code: &str) -> bool {
    matches!(
        code,
        "QueueDoesNotExist" | "AWS.SimpleQueueService.NonExistentQueue" | "NonExistentQueue"
    )
}

pub(super) fn is_throttling(code: &str) -> bool {
    matches!(
        code,
        "RequestThrottled"
            | "ThrottlingException"
            | "Throttling"
            | "KmsThrottled"
            | "ServiceUnavailable"
            | "InternalFailure"
            | "InternalError"
    )
}

/// Maps an SDK error to the backend's vocabulary. The text is internal (logged, never rendered).
/// How SQS's answer to CreateQueue on a name taken with other attributes begins.
const ALREADY_EXISTS: &str = "A queue already exists with the same name";

pub(super) fn map_error<E, R>(error: SdkError<E, R>) -> BackendError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug,
{
    let detail = DisplayErrorContext(&error).to_string();
    match &error {
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            BackendError::Unavailable(detail)
        }
        SdkError::ServiceError(service) => {
            // Only the code and request id: SQS messages may quote a receipt handle.
            let code = service.err().code().unwrap_or("unknown");
            let request_id = service
                .err()
                .meta()
                .extra("aws_request_id")
                .unwrap_or("none");
            let detail = format!("SQS error {code} (request id {request_id})");
            if is_queue_missing(code) {
                BackendError::QueueNotFound
            } else if matches!(code, "QueueAlreadyExists" | "QueueNameExists") {
                // SQS's words name the attribute that differs; they quote nothing else.
                let message = service
                    .err()
                    .message()
                    .filter(|message| message.starts_with(ALREADY_EXISTS))
                    .unwrap_or(ALREADY_EXISTS);
                BackendError::AlreadyExists(message.to_owned())
            } else if is_throttling(code) {
                BackendError::Unavailable(detail)
            } else {
                BackendError::Rejected(detail)
            }
        }
        _ => BackendError::Other(detail),
    }
}

pub(super) fn parse_queue_attributes(
    raw: &std::collections::HashMap<QueueAttributeName, String>,
) -> QueueAttributes {
    let number = |name: QueueAttributeName, default: u32| {
        raw.get(&name)
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    QueueAttributes {
        fifo: raw
            .get(&QueueAttributeName::FifoQueue)
            .is_some_and(|value| value == "true"),
        visibility_timeout_seconds: number(QueueAttributeName::VisibilityTimeout, 30),
        receive_wait_seconds: number(QueueAttributeName::ReceiveMessageWaitTimeSeconds, 0),
        arn: raw.get(&QueueAttributeName::QueueArn).cloned(),
        redrive: raw
            .get(&QueueAttributeName::RedrivePolicy)
            .and_then(|policy| parse_redrive_policy(policy)),
        delay_seconds: number(QueueAttributeName::DelaySeconds, 0),
        retention_seconds: number(QueueAttributeName::MessageRetentionPeriod, 345_600),
        max_message_bytes: number(QueueAttributeName::MaximumMessageSize, 262_144),
        content_based_deduplication: raw
            .get(&QueueAttributeName::ContentBasedDeduplication)
            .is_some_and(|value| value == "true"),
        created_timestamp: raw
            .get(&QueueAttributeName::CreatedTimestamp)
            .and_then(|value| value.parse().ok()),
        last_modified_timestamp: raw
            .get(&QueueAttributeName::LastModifiedTimestamp)
            .and_then(|value| value.parse().ok()),
        per_group_deduplication: raw
            .get(&QueueAttributeName::DeduplicationScope)
            .is_some_and(|value| value == "messageGroup"),
        per_group_throughput: raw
            .get(&QueueAttributeName::FifoThroughputLimit)
            .is_some_and(|value| value == "perMessageGroupId"),
        managed_encryption: raw
            .get(&QueueAttributeName::SqsManagedSseEnabled)
            .is_some_and(|value| value == "true"),
        // SQS acts on these; the queue's access policy is the backend's infrastructure and stays
        // unanswered.
        kept: [
            QueueAttributeName::RedriveAllowPolicy,
            QueueAttributeName::KmsMasterKeyId,
            QueueAttributeName::KmsDataKeyReusePeriodSeconds,
        ]
        .into_iter()
        .filter_map(|name| Some((name.as_str().to_owned(), raw.get(&name)?.clone())))
        .collect(),
    }
}

/// Reads SQS's RedrivePolicy JSON, whose maxReceiveCount may be a number or a string.
pub(super) fn parse_redrive_policy(policy: &str) -> Option<RedrivePolicy> {
    let value: serde_json::Value = serde_json::from_str(policy).ok()?;
    let target = value.get("deadLetterTargetArn")?.as_str()?.to_owned();
    let count = match value.get("maxReceiveCount")? {
        serde_json::Value::Number(n) => u32::try_from(n.as_u64()?).ok()?,
        serde_json::Value::String(s) => s.parse().ok()?,
        _ => return None,
    };
    Some(RedrivePolicy {
        dead_letter_target_arn: target,
        max_receive_count: count,
    })
}

pub(super) fn millis(value: Option<&String>) -> Option<DateTime<Utc>> {
    Utc.timestamp_millis_opt(value?.parse().ok()?).single()
}

pub(super) fn parse_message(message: Message) -> Result<BackendMessage, BackendError> {
    let system = message.attributes.unwrap_or_default();
    let attributes = message
        .message_attributes
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let data_type = value.data_type;
            let parsed = if data_type.starts_with("Binary") {
                AttributeValue::Bytes(
                    value
                        .binary_value
                        .map(|b| b.into_inner())
                        .unwrap_or_default(),
                )
            } else {
                AttributeValue::Text(value.string_value.unwrap_or_default())
            };
            (
                name,
                MessageAttribute {
                    data_type,
                    value: parsed,
                },
            )
        })
        .collect::<BTreeMap<_, _>>();
    let missing = |what: &str| BackendError::Other(format!("SQS message without {what}"));
    Ok(BackendMessage {
        message_id: message.message_id.ok_or_else(|| missing("MessageId"))?,
        backend_handle: message
            .receipt_handle
            .ok_or_else(|| missing("ReceiptHandle"))?,
        body: message.body.unwrap_or_default(),
        attributes,
        sent_at: millis(system.get(&MessageSystemAttributeName::SentTimestamp)),
        first_received_at: millis(
            system.get(&MessageSystemAttributeName::ApproximateFirstReceiveTimestamp),
        ),
        receive_count: system
            .get(&MessageSystemAttributeName::ApproximateReceiveCount)
            .and_then(|count| count.parse().ok())
            .unwrap_or(1),
        group_id: system
            .get(&MessageSystemAttributeName::MessageGroupId)
            .cloned(),
        sequence_number: system
            .get(&MessageSystemAttributeName::SequenceNumber)
            .cloned(),
        dead_letter_source_arn: system
            .get(&MessageSystemAttributeName::DeadLetterQueueSourceArn)
            .cloned(),
        deduplication_id: system
            .get(&MessageSystemAttributeName::MessageDeduplicationId)
            .cloned(),
        trace_header: system
            .get(&MessageSystemAttributeName::AwsTraceHeader)
            .cloned(),
    })
}
