//! The SQS actions on messages: send, receive, delete and visibility, one and in batches.

use super::*;
use crate::core::message_rules;
use crate::core::model::{ExpiredFifoHandles, ExpiredVisibility, OutgoingMessage};

impl Context<'_> {
    pub(super) async fn send_message(
        &self,
        request: wire::SendMessage,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let system_md5 = wire::system_digest(&request.entry);
        let message = wire::outgoing(request.entry, self.trace_header.as_deref())?;
        let (body_md5, attributes_md5) = wire::digests(&message);
        let mut results = self
            .gateway()
            .send(&self.caller, &queue, std::slice::from_ref(&message))
            .await?;
        let sent = results
            .pop()
            .ok_or_else(|| SqsError::from(GatewayError::internal("no send result")))?
            .map_err(SqsError::from)?;
        Ok(SqsAnswer::Sent(answers::Sent {
            message_id: sent.message_id,
            md5_of_message_body: body_md5,
            md5_of_message_attributes: attributes_md5,
            md5_of_message_system_attributes: system_md5,
            sequence_number: sent.sequence_number,
        }))
    }

    pub(super) async fn send_message_batch(
        &self,
        request: wire::SendMessageBatch,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let ids = wire::check_batch(request.entries.iter().map(|e| e.id.as_deref()))?;
        let mut result = BatchResult::default();
        let mut accepted = Vec::new();
        for (id, entry) in ids.into_iter().zip(request.entries) {
            let system_md5 = wire::system_digest(&entry);
            match wire::outgoing(entry, self.trace_header.as_deref()) {
                Ok(message) => accepted.push((id, message, system_md5)),
                Err(error) => result.failed.push(failed(id, &error)),
            }
        }
        let messages: Vec<_> = accepted.iter().map(|(_, m, _)| m.clone()).collect();
        wire::check_batch_length(&messages)?;
        self.check_fifo_batch(&queue, &messages).await?;
        let sent = if messages.is_empty() {
            Vec::new()
        } else {
            self.gateway().send(&self.caller, &queue, &messages).await?
        };
        for ((id, message, system_md5), outcome) in accepted.into_iter().zip(sent) {
            match outcome {
                Ok(sent) => {
                    let (body_md5, attributes_md5) = wire::digests(&message);
                    result.successful.push(Successful {
                        id,
                        message_id: Some(sent.message_id),
                        md5_of_message_body: Some(body_md5),
                        md5_of_message_attributes: attributes_md5,
                        md5_of_message_system_attributes: system_md5,
                        sequence_number: sent.sequence_number,
                    });
                }
                Err(error) => result.failed.push(failed(id, &SqsError::from(error))),
            }
        }
        Ok(SqsAnswer::Batch(result))
    }

    /// As SQS: a FIFO batch with an entry that has no group id, or no deduplication id on a queue
    /// without content-based deduplication, is refused whole (a single send is refused alone).
    async fn check_fifo_batch(
        &self,
        queue: &str,
        messages: &[OutgoingMessage],
    ) -> Result<(), SqsError> {
        let lacking = |id: fn(&OutgoingMessage) -> bool| messages.iter().any(|m| !id(m));
        let no_group = lacking(|m| m.group_id.is_some());
        let no_dedup = lacking(|m| m.deduplication_id.is_some());
        if !no_group && !no_dedup {
            return Ok(());
        }
        let resolved = self
            .gateway()
            .queue_for(&self.caller, Operation::Send, queue)
            .await?;
        let attributes = &resolved.attributes;
        if !attributes.fifo {
            return Ok(());
        }
        if no_group {
            return Err(SqsError::invalid_parameter(message_rules::MISSING_GROUP_ID));
        }
        if no_dedup && !attributes.content_based_deduplication {
            return Err(SqsError::invalid_parameter(
                message_rules::MISSING_DEDUPLICATION_ID,
            ));
        }
        Ok(())
    }

    pub(super) async fn receive_message(
        &self,
        request: wire::ReceiveMessage,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let options = ReceiveOptions {
            max_messages: wire::ranged(
                request.max_number_of_messages,
                "MaxNumberOfMessages",
                1,
                i64::from(limits::MAX_BATCH),
            )?
            .unwrap_or(1),
            wait_seconds: wire::ranged(
                request.wait_time_seconds,
                "WaitTimeSeconds",
                0,
                i64::from(limits::MAX_WAIT_SECONDS),
            )?,
            visibility_timeout_seconds: wire::ranged(
                request.visibility_timeout,
                "VisibilityTimeout",
                0,
                i64::from(limits::MAX_VISIBILITY_SECONDS),
            )?,
            attempt_id: request.receive_request_attempt_id,
            // SQS answers OverLimit.
            wait_out_over_limit: false,
            one_per_group: false,
            keep_claims: false,
        };
        let system_names: Vec<String> = request
            .message_system_attribute_names
            .into_iter()
            .chain(request.attribute_names)
            .collect();
        let deliveries = self
            .gateway()
            .receive(&self.caller, &queue, options)
            .await?;
        let messages: Vec<MessageJson> = deliveries
            .into_iter()
            .map(|delivery| {
                let message = delivery.message;
                let mut system = BTreeMap::new();
                let mut add = |name: &str, value: Option<String>| {
                    if let Some(value) = value
                        && system_names.iter().any(|w| w == "All" || w == name)
                    {
                        system.insert(name.to_owned(), value);
                    }
                };
                add("SenderId", Some(ACCOUNT.to_owned()));
                add(
                    "SentTimestamp",
                    message.sent_at.map(|t| t.timestamp_millis().to_string()),
                );
                add(
                    "ApproximateReceiveCount",
                    Some(message.receive_count.to_string()),
                );
                add(
                    "ApproximateFirstReceiveTimestamp",
                    message
                        .first_received_at
                        .map(|t| t.timestamp_millis().to_string()),
                );
                add("MessageGroupId", message.group_id.clone());
                add("MessageDeduplicationId", message.deduplication_id.clone());
                add("SequenceNumber", message.sequence_number.clone());
                add(
                    "DeadLetterQueueSourceArn",
                    message
                        .dead_letter_source_arn
                        .clone()
                        .map(|arn| self.arns().shown(arn)),
                );
                add(wire::TRACE_HEADER, message.trace_header.clone());
                let selected: BTreeMap<_, _> = message
                    .attributes
                    .iter()
                    .filter(|(name, _)| {
                        wire::attribute_selected(name, &request.message_attribute_names)
                    })
                    .map(|(name, attribute)| (name.clone(), attribute.clone()))
                    .collect();
                MessageJson {
                    md5_of_body: crate::api::sqs::md5::of_body(&message.body),
                    md5_of_message_attributes: crate::api::sqs::md5::of_attributes(&selected),
                    message_attributes: wire::attributes_json(&selected),
                    message_id: message.message_id,
                    receipt_handle: delivery.receipt_handle.expose().to_owned(),
                    body: message.body,
                    attributes: system,
                }
            })
            .collect();
        Ok(SqsAnswer::Received(answers::Received { messages }))
    }

    pub(super) async fn delete_message(
        &self,
        request: wire::HandleRequest,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let handle = request
            .entry
            .receipt_handle
            .ok_or_else(|| SqsError::missing_parameter("ReceiptHandle"))?;
        // A handle of another queue is invalid here (as on SQS), and deletes nothing anywhere.
        match self
            .gateway()
            .acknowledge_by(
                &self.caller,
                std::slice::from_ref(&handle),
                Some(&queue),
                ExpiredFifoHandles::Refuse,
            )
            .await?
            .first()
        {
            // As SQS: deleting with an outdated handle succeeds (and deletes nothing).
            Some(HandleOutcome::Ok | HandleOutcome::Stale) => Ok(SqsAnswer::nothing()),
            Some(HandleOutcome::Expired) => Err(receipt_handle_expired()),
            _ => Err(receipt_handle_invalid(&handle)),
        }
    }

    pub(super) async fn change_visibility(
        &self,
        request: wire::HandleRequest,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let entry = request.entry;
        let handle = entry
            .receipt_handle
            .ok_or_else(|| SqsError::missing_parameter("ReceiptHandle"))?;
        let timeout = wire::ranged(
            entry.visibility_timeout,
            "VisibilityTimeout",
            0,
            i64::from(limits::MAX_VISIBILITY_SECONDS),
        )?
        .ok_or_else(|| SqsError::missing_parameter("VisibilityTimeout"))?;
        match self
            .gateway()
            .change_visibility_by(
                &self.caller,
                &[(handle.clone(), timeout)],
                Some(&queue),
                ExpiredVisibility::Change,
            )
            .await?
            .first()
        {
            Some(HandleOutcome::Ok) => Ok(SqsAnswer::nothing()),
            Some(HandleOutcome::Stale) => Err(message_gone_for_visibility()),
            _ => Err(receipt_handle_invalid(&handle)),
        }
    }

    pub(super) async fn handle_batch(
        &self,
        request: wire::HandleBatch,
        action: HandleAction,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let ids = wire::check_batch(request.entries.iter().map(|e| e.id.as_deref()))?;
        let mut result = BatchResult::default();
        let mut handles = Vec::new();
        for (id, entry) in ids.into_iter().zip(request.entries) {
            let Some(handle) = entry.receipt_handle else {
                result
                    .failed
                    .push(failed(id, &SqsError::missing_parameter("ReceiptHandle")));
                continue;
            };
            let timeout = if action == HandleAction::ChangeVisibility {
                match wire::ranged(
                    entry.visibility_timeout,
                    "VisibilityTimeout",
                    0,
                    i64::from(limits::MAX_VISIBILITY_SECONDS),
                ) {
                    Ok(Some(timeout)) => timeout,
                    Ok(None) => {
                        result.failed.push(failed(
                            id,
                            &SqsError::missing_parameter("VisibilityTimeout"),
                        ));
                        continue;
                    }
                    Err(error) => {
                        result.failed.push(failed(id, &error));
                        continue;
                    }
                }
            } else {
                0
            };
            handles.push((id, handle, timeout));
        }
        let outcomes = if action == HandleAction::Delete {
            let just_handles: Vec<String> = handles.iter().map(|(_, h, _)| h.clone()).collect();
            self.gateway()
                .acknowledge_by(
                    &self.caller,
                    &just_handles,
                    Some(&queue),
                    ExpiredFifoHandles::Refuse,
                )
                .await?
        } else {
            let entries: Vec<(String, u32)> =
                handles.iter().map(|(_, h, t)| (h.clone(), *t)).collect();
            self.gateway()
                .change_visibility_by(
                    &self.caller,
                    &entries,
                    Some(&queue),
                    ExpiredVisibility::Change,
                )
                .await?
        };
        for ((id, handle, _), outcome) in handles.into_iter().zip(outcomes) {
            match (outcome, action) {
                (HandleOutcome::Ok, _) | (HandleOutcome::Stale, HandleAction::Delete) => {
                    result.successful.push(Successful {
                        id,
                        ..Default::default()
                    })
                }
                (HandleOutcome::Stale, _) => result
                    .failed
                    .push(failed(id, &message_gone_for_visibility())),
                (HandleOutcome::Invalid, _) => result
                    .failed
                    .push(failed(id, &receipt_handle_invalid(&handle))),
                (HandleOutcome::Expired, _) => {
                    result.failed.push(failed(id, &receipt_handle_expired()))
                }
            }
        }
        Ok(SqsAnswer::Batch(result))
    }
}
