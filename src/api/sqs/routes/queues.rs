//! The SQS actions on queues: URLs and lists, create, attributes, tags, dead-letter sources and
//! message move tasks.

use super::*;
use serde_json::json;

impl Context<'_> {
    /// The gateway queue a redrive names by ARN in `parameter`, refused in SQS's words.
    async fn queue_of_arn(&self, arn: Option<&str>, parameter: &str) -> Result<String, SqsError> {
        let arn = arn.ok_or_else(|| SqsError::missing_parameter(parameter))?;
        self.gateway()
            .queue_named_by_arn(&self.arns().read(arn))
            .await
            .map_err(|error| match error.kind {
                crate::core::ErrorKind::ResourceNotFound => SqsError::from(GatewayError::new(
                    crate::core::ErrorKind::ResourceNotFound,
                    format!(
                        "The resource that you specified for the {parameter} parameter doesn't exist."
                    ),
                )),
                _ => SqsError::from(error),
            })
    }

    pub(super) async fn start_move_task(
        &self,
        request: wire::StartMessageMoveTask,
    ) -> Result<SqsAnswer, SqsError> {
        let rate = wire::ranged(
            request.max_number_of_messages_per_second,
            "MaxNumberOfMessagesPerSecond",
            1,
            i64::from(limits::MAX_MOVE_RATE),
        )?;
        let source = self
            .queue_of_arn(request.source_arn.as_deref(), "SourceArn")
            .await?;
        let destination = match request.destination_arn.as_deref() {
            Some(arn) => Some(self.queue_of_arn(Some(arn), "DestinationArn").await?),
            None => None,
        };
        let handle = self
            .gateway()
            .start_redrive(&self.caller, &source, destination.as_deref(), rate)
            .await?;
        Ok(SqsAnswer::MoveTaskStarted(answers::MoveTaskStarted {
            task_handle: handle,
        }))
    }

    pub(super) async fn list_move_tasks(
        &self,
        request: wire::ListMessageMoveTasks,
    ) -> Result<SqsAnswer, SqsError> {
        let max = wire::ranged(request.max_results, "MaxResults", 1, 10)?.unwrap_or(1);
        let source = self
            .queue_of_arn(request.source_arn.as_deref(), "SourceArn")
            .await?;
        let tasks = self
            .gateway()
            .list_redrives(&self.caller, &source, max as usize)
            .await?;
        let results = tasks
            .into_iter()
            .map(|task| answers::MoveTask {
                task_handle: task.handle,
                status: task.status.name(),
                source_arn: self.arns().shown(task.source_arn),
                destination_arn: task.destination_arn.map(|arn| self.arns().shown(arn)),
                max_number_of_messages_per_second: task.max_per_second,
                approximate_number_of_messages_moved: task.moved,
                approximate_number_of_messages_to_move: task.to_move,
                failure_reason: task.failure,
                started_timestamp: task.started_at,
            })
            .collect();
        Ok(SqsAnswer::MoveTasks(answers::MoveTasks { results }))
    }

    pub(super) async fn cancel_move_task(
        &self,
        request: wire::CancelMessageMoveTask,
    ) -> Result<SqsAnswer, SqsError> {
        let handle = request
            .task_handle
            .ok_or_else(|| SqsError::missing_parameter("TaskHandle"))?;
        let moved = self.gateway().cancel_redrive(&self.caller, &handle).await?;
        Ok(SqsAnswer::MoveTaskCancelled(answers::MoveTaskCancelled {
            approximate_number_of_messages_moved: moved,
        }))
    }

    pub(super) async fn purge_queue(
        &self,
        request: wire::QueueUrlOnly,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let rules = self.state.time_rules.as_ref();
        if let Some(rules) = rules
            && !rules.begin_purge(&queue, self.gateway().now())
        {
            return Err(SqsError::purge_in_progress(&queue));
        }
        let purged = self.gateway().purge(&self.caller, &queue).await;
        if let (Some(rules), Err(_)) = (rules, &purged) {
            rules.purge_failed(&queue);
        }
        purged?;
        Ok(SqsAnswer::nothing())
    }

    pub(super) async fn delete_queue(
        &self,
        request: wire::QueueUrlOnly,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        self.gateway().delete_queue(&self.caller, &queue).await?;
        if let Some(rules) = &self.state.time_rules {
            rules.deleted(&queue, self.gateway().now());
        }
        Ok(SqsAnswer::nothing())
    }

    pub(super) async fn get_queue_url(
        &self,
        request: wire::GetQueueUrl,
    ) -> Result<SqsAnswer, SqsError> {
        let name = request
            .queue_name
            .ok_or_else(|| SqsError::missing_parameter("QueueName"))?;
        // The queue must exist in the backend: callers "get, else create".
        self.gateway().resolve_queue(&self.caller, &name).await?;
        Ok(self.queue_url_answer(&name))
    }

    fn queue_url_answer(&self, queue: &str) -> SqsAnswer {
        SqsAnswer::QueueUrl(answers::QueueUrl {
            queue_url: self.queue_url(queue),
        })
    }

    pub(super) async fn list_queues(
        &self,
        request: wire::ListQueues,
    ) -> Result<SqsAnswer, SqsError> {
        let max = wire::ranged(request.max_results, "MaxResults", 1, 1000)?;
        let prefix = request.queue_name_prefix.unwrap_or_default();
        let after = request.next_token.unwrap_or_default();
        let mut names: Vec<String> = self
            .gateway()
            .list_queues(&self.caller, &prefix)
            .await?
            .into_iter()
            .filter(|name| *name > after)
            .collect();
        let limit = max.map_or(1000, |max| max as usize);
        let more = names.len() > limit;
        names.truncate(limit);
        let next_token = (more && max.is_some()).then(|| names.last().cloned().unwrap_or_default());
        Ok(SqsAnswer::QueueUrls(answers::QueueUrls {
            queue_urls: names.iter().map(|name| self.queue_url(name)).collect(),
            next_token,
        }))
    }

    pub(super) async fn create_queue(
        &self,
        request: wire::CreateQueue,
    ) -> Result<SqsAnswer, SqsError> {
        let name = request
            .queue_name
            .ok_or_else(|| SqsError::missing_parameter("QueueName"))?;
        // As SQS: a `.fifo` name needs FifoQueue=true, and FifoQueue=true a `.fifo` name.
        let fifo = request
            .attributes
            .get("FifoQueue")
            .is_some_and(|value| value.eq_ignore_ascii_case("true"));
        // The name's characters and length are the core's rule (it answers the same words).
        if !fifo && name.ends_with(".fifo") {
            return Err(SqsError::invalid_parameter(QUEUE_NAME_RULE));
        }
        if fifo && !name.ends_with(".fifo") {
            return Err(SqsError::invalid_parameter(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.",
            ));
        }
        let settings = wire::queue_settings(&request.attributes, true, fifo)?;
        if let Some(rules) = &self.state.time_rules
            && rules.deleted_recently(&name, self.gateway().now())
        {
            // Only a caller who may create the queue learns that the name was deleted.
            self.gateway()
                .check_access(&self.caller, Operation::CreateQueue, &name)?;
            return Err(SqsError::queue_deleted_recently());
        }
        // Refused before the queue exists, not after.
        crate::core::alias::check_client_tags(request.tags.keys())?;
        self.check_dead_letter_target(&name, &request.attributes)
            .await?;
        self.gateway()
            .create_queue(&self.caller, &name, &settings)
            .await?;
        if !request.tags.is_empty() {
            self.gateway()
                .change_tags(&self.caller, &name, &request.tags, &[])
                .await?;
        }
        Ok(self.queue_url_answer(&name))
    }

    pub(super) async fn set_queue_attributes(
        &self,
        request: wire::SetQueueAttributes,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        // FIFO by the backend queue (a gateway name need not end in `.fifo`).
        let fifo = self
            .gateway()
            .queue_for(&self.caller, Operation::SetQueueSettings, &queue)
            .await?
            .attributes
            .fifo;
        let settings = wire::queue_settings(&request.attributes, false, fifo)?;
        self.check_dead_letter_target(&queue, &request.attributes)
            .await?;
        self.gateway()
            .set_queue_settings(&self.caller, &queue, &settings)
            .await?;
        Ok(SqsAnswer::nothing())
    }

    /// A RedrivePolicy of `queue` may name only a queue of this gateway the caller may send to:
    /// the queue's messages land there.
    pub(super) async fn check_dead_letter_target(
        &self,
        queue: &str,
        attributes: &BTreeMap<String, String>,
    ) -> Result<(), SqsError> {
        if let Some(arn) = wire::dead_letter_arn(attributes) {
            self.gateway()
                .authorize_dead_letter_target(&self.caller, queue, &self.arns().read(&arn))
                .await?;
        }
        Ok(())
    }

    pub(super) async fn tag_queue(&self, request: wire::Tags) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        self.gateway()
            .change_tags(&self.caller, &queue, &request.tags, &[])
            .await?;
        Ok(SqsAnswer::nothing())
    }

    pub(super) async fn untag_queue(&self, request: wire::Tags) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        self.gateway()
            .change_tags(&self.caller, &queue, &BTreeMap::new(), &request.tag_keys)
            .await?;
        Ok(SqsAnswer::nothing())
    }

    pub(super) async fn list_queue_tags(&self, request: wire::Tags) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let tags = self.gateway().list_tags(&self.caller, &queue).await?;
        Ok(SqsAnswer::Tags(answers::QueueTags { tags }))
    }

    pub(super) async fn dead_letter_sources(
        &self,
        request: wire::QueueUrlOnly,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        let sources = self
            .gateway()
            .dead_letter_source_queues(&self.caller, &queue)
            .await?;
        Ok(SqsAnswer::DeadLetterSources(answers::DeadLetterSources {
            queue_urls: sources.iter().map(|name| self.queue_url(name)).collect(),
        }))
    }

    pub(super) async fn get_queue_attributes(
        &self,
        request: wire::GetQueueAttributes,
    ) -> Result<SqsAnswer, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref())?;
        if let Some(unknown) = request
            .attribute_names
            .iter()
            .find(|name| !QUEUE_ATTRIBUTE_NAMES.contains(&name.as_str()))
        {
            return Err(SqsError::sender(
                "InvalidAttributeName",
                format!(
                    "Unknown Attribute {}.",
                    unknown.chars().take(64).collect::<String>()
                ),
            ));
        }
        let (resolved, stats) = self.gateway().queue_stats(&self.caller, &queue).await?;
        let attributes = &resolved.attributes;
        let mut all = BTreeMap::new();
        all.insert("ApproximateNumberOfMessages", stats.visible.to_string());
        all.insert(
            "ApproximateNumberOfMessagesNotVisible",
            stats.in_flight.to_string(),
        );
        all.insert(
            "ApproximateNumberOfMessagesDelayed",
            stats.delayed.to_string(),
        );
        all.insert(
            "VisibilityTimeout",
            attributes.visibility_timeout_seconds.to_string(),
        );
        all.insert(
            "ReceiveMessageWaitTimeSeconds",
            attributes.receive_wait_seconds.to_string(),
        );
        all.insert("DelaySeconds", attributes.delay_seconds.to_string());
        all.insert(
            "MessageRetentionPeriod",
            attributes.retention_seconds.to_string(),
        );
        all.insert(
            "MaximumMessageSize",
            attributes.max_message_bytes.to_string(),
        );
        all.insert(
            "QueueArn",
            match attributes.arn.clone() {
                Some(arn) => self.arns().shown(arn),
                None => format!("arn:aws:sqs:{}:{ACCOUNT}:{queue}", self.region),
            },
        );
        if let Some(created) = attributes.created_timestamp {
            all.insert("CreatedTimestamp", created.to_string());
            all.insert(
                "LastModifiedTimestamp",
                attributes
                    .last_modified_timestamp
                    .unwrap_or(created)
                    .to_string(),
            );
        }
        if attributes.fifo {
            all.insert("FifoQueue", "true".into());
            all.insert(
                "ContentBasedDeduplication",
                attributes.content_based_deduplication.to_string(),
            );
            let scope = if attributes.per_group_deduplication {
                "messageGroup"
            } else {
                "queue"
            };
            let limit = if attributes.per_group_throughput {
                "perMessageGroupId"
            } else {
                "perQueue"
            };
            all.insert("DeduplicationScope", scope.into());
            all.insert("FifoThroughputLimit", limit.into());
        }
        all.insert(
            "SqsManagedSseEnabled",
            attributes.managed_encryption.to_string(),
        );
        for (name, value) in &attributes.kept {
            if let Some(known) = QUEUE_ATTRIBUTE_NAMES.iter().find(|known| **known == name) {
                all.insert(known, value.clone());
            }
        }
        if let Some(redrive) = &attributes.redrive {
            all.insert(
                "RedrivePolicy",
                json!({
                    "deadLetterTargetArn": self.arns().shown(redrive.dead_letter_target_arn.clone()),
                    "maxReceiveCount": redrive.max_receive_count,
                })
                .to_string(),
            );
        }
        let wanted = &request.attribute_names;
        let attributes = all
            .into_iter()
            .filter(|(name, _)| wanted.iter().any(|w| w == "All" || w == name))
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        Ok(SqsAnswer::Attributes(answers::QueueAttributes {
            attributes,
        }))
    }
}

/// The queue attribute names SQS knows (GetQueueAttributes refuses any other).
const QUEUE_ATTRIBUTE_NAMES: &[&str] = &[
    "All",
    "Policy",
    "VisibilityTimeout",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
    "ApproximateNumberOfMessagesDelayed",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "RedriveAllowPolicy",
    "SqsManagedSseEnabled",
];
