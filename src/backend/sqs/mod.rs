//! The production backend: Amazon SQS (or LocalStack) through aws-sdk-sqs.

mod batcher;
mod connections;
mod convert;
mod keep_alive;
mod shared_poll;

pub use keep_alive::AskKeepAlive;

use convert::*;

use crate::core::backend::{Backend, BackendError};
use crate::core::metrics::meters::Meters;
use crate::core::model::{
    AttributeValue, BackendMessage, BackendReceive, EntryError, EntryErrorKind, EntryOutcome,
    ExpiredFifoHandles, ExpiredVisibility, MessageAttribute, OutgoingMessage, QueueAttributes,
    QueueSettings, QueueStats, RedrivePolicy, RedriveStatus, RedriveTask, ResolvedQueue,
    SentMessage,
};
use async_trait::async_trait;
use aws_config::meta::region::RegionProviderChain;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::types::{
    ChangeMessageVisibilityBatchRequestEntry, DeleteMessageBatchRequestEntry, Message,
    MessageSystemAttributeName, QueueAttributeName, SendMessageBatchRequestEntry,
};
use batcher::{Batcher, Call, CallShape};
use chrono::{DateTime, TimeZone, Utc};
use connections::{BoundedHttpClient, PollSlots};
use serde::Deserialize;
use shared_poll::{Join, PollAsk, PollPort, SharedPolls};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where and how to reach SQS; credentials come from aws-config's default chain.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqsConfig {
    /// Endpoint override, e.g. `http://127.0.0.1:4566` for LocalStack. Default: the region's SQS.
    pub endpoint_url: Option<String>,
    /// Region; default from the AWS environment (AWS_REGION, profile), else `us-east-1`.
    pub region: Option<String>,
    /// Seconds to wait for a TCP connection before the backend counts as unavailable.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_seconds: u64,
    /// Sends, acknowledgements and visibility changes of many requests on one queue go to SQS
    /// together, up to ten an SQS batch call; off: each request makes its own call.
    #[serde(default = "default_fan_in")]
    pub fan_in: bool,
    /// Batch calls one queue may have in flight at once when `fan_in` is on (1..=64): a second
    /// starts only while a full batch waits.
    #[serde(default = "default_fan_in_calls")]
    pub fan_in_calls_in_flight: usize,
    /// The most connections to SQS (calls in flight at once) when `fan_in` is on (2..=1024);
    /// long polls take at most half of them.
    #[serde(default = "default_connections")]
    pub connections: usize,
    /// With `fan_in`, the most milliseconds a poll or a batch call waits for the rest of a
    /// burst (consumers served together coming back; 0..=100, 0: never waits).
    #[serde(default = "default_gather_ms")]
    pub fan_in_gather_ms: u64,
}

/// How the sqs backend shares calls toward SQS (`backend.fan_in` and its settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanIn {
    /// Batch calls of each kind, and long polls while messages flow, one queue has at once.
    pub calls_in_flight: usize,
    /// The most SQS calls (connections) in flight at once.
    pub connections: usize,
    /// The longest a poll or a batch call waits for the rest of a burst.
    pub gather: Duration,
}

impl Default for FanIn {
    fn default() -> Self {
        Self {
            calls_in_flight: default_fan_in_calls(),
            connections: default_connections(),
            gather: Duration::from_millis(default_gather_ms()),
        }
    }
}

impl Default for SqsConfig {
    fn default() -> Self {
        Self {
            endpoint_url: None,
            region: None,
            connect_timeout_seconds: default_connect_timeout(),
            fan_in: default_fan_in(),
            fan_in_calls_in_flight: default_fan_in_calls(),
            connections: default_connections(),
            fan_in_gather_ms: default_gather_ms(),
        }
    }
}

fn default_connections() -> usize {
    16
}

fn default_gather_ms() -> u64 {
    20
}

fn default_connect_timeout() -> u64 {
    3
}

fn default_fan_in() -> bool {
    true
}

fn default_fan_in_calls() -> usize {
    4
}

/// Amazon SQS or an SQS-compatible service.
#[derive(Debug, Clone)]
pub struct SqsBackend {
    client: Client,
    /// Coalesces acknowledgements (`None`: fan-in is off).
    deletes: Option<Arc<Batcher<String, EntryOutcome>>>,
    /// Coalesces visibility changes (`None`: fan-in is off).
    visibility: Option<Arc<Batcher<(String, u32), EntryOutcome>>>,
    /// Coalesces sends (`None`: fan-in is off).
    sends: Option<Arc<Batcher<OutgoingMessage, SendOutcome>>>,
    /// Shares long polls between waiting receives (`None`: fan-in is off).
    polls: Option<Arc<SharedPolls>>,
    /// Bounds the long polls in flight (`None`: fan-in is off).
    poll_slots: Option<Arc<PollSlots>>,
}

/// One send's outcome, as a batch answers it.
type SendOutcome = Result<SentMessage, EntryError>;

/// The most message bytes one coalesced `SendMessageBatch` carries: SQS's bound on a batch's
/// payload before August 2025 (older SQS-compatible services keep it), so requests that each fit
/// never make a call SQS refuses for its size together; a request heavier alone goes alone.
const COALESCED_SEND_BYTES: usize = 256 * 1024;

/// The slack added to a long poll before a call counts as hung.
const ATTEMPT_SLACK: Duration = Duration::from_secs(10);
/// A whole call, retries included: below the HTTP layer's 60 s, so slow backends answer 503.
const OPERATION_TIMEOUT: Duration = Duration::from_secs(45);
/// The longest long poll SQS allows.
const MAX_WAIT: Duration = Duration::from_secs(crate::core::sqs_limits::MAX_WAIT_SECONDS as u64);

impl SqsBackend {
    /// Loads the AWS configuration from the environment (credentials chain, region) and the config;
    /// coalesced calls count in `meters`.
    pub async fn from_config(config: &SqsConfig, meters: &Meters) -> Self {
        let region = RegionProviderChain::first_try(config.region.clone().map(Region::new))
            .or_default_provider()
            .or_else(Region::from_static("us-east-1"));
        let mut loader = aws_config::defaults(BehaviorVersion::latest())
            .region(region)
            .timeout_config(timeouts(config.connect_timeout_seconds));
        if let Some(endpoint) = &config.endpoint_url {
            loader = loader.endpoint_url(endpoint);
        }
        let backend = Self::from_sdk_config(&loader.load().await);
        if config.fan_in {
            let fan_in = FanIn {
                calls_in_flight: config.fan_in_calls_in_flight,
                connections: config.connections,
                gather: Duration::from_millis(config.fan_in_gather_ms),
            };
            backend.with_fan_in(fan_in, meters)
        } else {
            backend
        }
    }

    /// The same backend, sharing long polls between waiting receives and coalescing sends,
    /// acknowledgements and visibility changes per queue, as `fan_in` says.
    pub fn with_fan_in(self, fan_in: FanIn, meters: &Meters) -> Self {
        let FanIn {
            calls_in_flight,
            connections,
            gather,
        } = fan_in;
        let client = match connections::sdk_default_http_client() {
            Some(http) => Client::from_conf(
                self.client
                    .config()
                    .to_builder()
                    .http_client(BoundedHttpClient::new(http, connections))
                    .build(),
            ),
            None => {
                tracing::warn!("no default HTTPS client to bound; connections to SQS are not");
                self.client.clone()
            }
        };
        let poll_slots = Arc::new(PollSlots::new(connections));
        let observe = |call: &'static str| -> batcher::Observe {
            let meters = meters.clone();
            Arc::new(move |shape: CallShape| {
                meters.sqs_batch(call, shape.requests, shape.entries);
            })
        };
        let coalescing = Self {
            deletes: Some(Arc::new(
                Batcher::new(calls_in_flight, observe("DeleteMessageBatch")).gathering(gather),
            )),
            visibility: Some(Arc::new(
                Batcher::new(calls_in_flight, observe("ChangeMessageVisibilityBatch"))
                    .gathering(gather),
            )),
            sends: Some(Arc::new(
                Batcher::weighed(
                    calls_in_flight,
                    observe("SendMessageBatch"),
                    message_bytes,
                    COALESCED_SEND_BYTES,
                )
                .gathering(gather),
            )),
            client,
            poll_slots: Some(Arc::clone(&poll_slots)),
            ..self
        };
        // The polls' own calls go through the coalescing backend without polls of its own.
        let port: Arc<dyn PollPort> = Arc::new(coalescing.clone());
        Self {
            polls: Some(Arc::new(SharedPolls::new(
                port,
                calls_in_flight,
                Some(poll_slots),
                gather,
                meters.clone(),
            ))),
            ..coalescing
        }
    }

    /// Uses an already loaded AWS configuration (tests pass static LocalStack credentials here).
    pub fn from_sdk_config(sdk: &SdkConfig) -> Self {
        let mut builder = aws_sdk_sqs::config::Builder::from(sdk);
        if sdk.timeout_config().is_none() {
            builder = builder.timeout_config(timeouts(default_connect_timeout()));
        }
        builder = builder.interceptor(keep_alive::AskKeepAlive);
        Self {
            client: Client::from_conf(builder.build()),
            deletes: None,
            visibility: None,
            sends: None,
            polls: None,
            poll_slots: None,
        }
    }
}

impl SqsBackend {
    /// SQS queue attributes for `settings`; `FifoQueue` only when creating (`name` given).
    async fn attributes_of(
        &self,
        name: Option<&str>,
        settings: &QueueSettings,
    ) -> Result<std::collections::HashMap<QueueAttributeName, String>, BackendError> {
        let mut attributes = std::collections::HashMap::new();
        let mut set = |attribute: QueueAttributeName, value: Option<String>| {
            if let Some(value) = value {
                attributes.insert(attribute, value);
            }
        };
        let number = |value: Option<u32>| value.map(|v| v.to_string());
        set(
            QueueAttributeName::FifoQueue,
            name.filter(|name| name.ends_with(".fifo"))
                .map(|_| "true".into()),
        );
        set(
            QueueAttributeName::VisibilityTimeout,
            number(settings.visibility_timeout_seconds),
        );
        set(
            QueueAttributeName::DelaySeconds,
            number(settings.delay_seconds),
        );
        set(
            QueueAttributeName::ReceiveMessageWaitTimeSeconds,
            number(settings.receive_wait_seconds),
        );
        set(
            QueueAttributeName::MessageRetentionPeriod,
            number(settings.retention_seconds),
        );
        set(
            QueueAttributeName::MaximumMessageSize,
            number(settings.max_message_bytes),
        );
        set(
            QueueAttributeName::ContentBasedDeduplication,
            settings.content_based_deduplication.map(|v| v.to_string()),
        );
        set(
            QueueAttributeName::DeduplicationScope,
            settings
                .per_group_deduplication
                .map(|group| if group { "messageGroup" } else { "queue" }.to_owned()),
        );
        set(
            QueueAttributeName::FifoThroughputLimit,
            settings.per_group_throughput.map(|group| {
                if group {
                    "perMessageGroupId"
                } else {
                    "perQueue"
                }
                .to_owned()
            }),
        );
        // A gateway key never writes the backend queue's access policy: access is the gateway's
        // grants. The other kept attributes SQS acts on as it would without the gateway.
        for (name, value) in &settings.kept {
            if name != "Policy" {
                set(QueueAttributeName::from(name.as_str()), Some(value.clone()));
            }
        }
        if settings.remove_dead_letter {
            set(QueueAttributeName::RedrivePolicy, Some(String::new()));
        }
        if let Some((target, max_receive_count)) = &settings.dead_letter {
            let target = self.resolve(target).await?;
            let arn = target
                .attributes
                .arn
                .ok_or_else(|| BackendError::Other("dead-letter queue without an ARN".into()))?;
            let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": max_receive_count });
            set(QueueAttributeName::RedrivePolicy, Some(policy.to_string()));
        }
        Ok(attributes)
    }

    /// A receive's first (or only) look: a long poll shared with the receives waiting on the
    /// queue when fan-in is on (one with an attempt id asks on its own: SQS replays per call).
    async fn receive_first(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        match &self.polls {
            Some(polls) if request.wait_seconds > 0 && request.attempt_id.is_none() => {
                let join = Join {
                    max_messages: request.max_messages,
                    wait: Duration::from_secs(request.wait_seconds.into()),
                    visibility_timeout_seconds: request.visibility_timeout_seconds,
                    abandoned: request.abandoned.clone(),
                };
                polls
                    .wait(queue_url, queue_url.ends_with(".fifo"), &join)
                    .await
            }
            Some(_) if request.wait_seconds > 0 => {
                let Some(slots) = &self.poll_slots else {
                    return self.receive_once(queue_url, request).await;
                };
                // A long poll of its own still takes one of the long polls' connections.
                let _slot = slots.enter(queue_url).await;
                let request = BackendReceive {
                    wait_seconds: slots.wait_seconds(request.wait_seconds),
                    ..request.clone()
                };
                self.receive_once(queue_url, &request).await
            }
            _ => self.receive_once(queue_url, request).await,
        }
    }

    /// One `ReceiveMessage` call.
    async fn receive_once(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        let answer = self
            .client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(to_i32(request.max_messages))
            .wait_time_seconds(to_i32(request.wait_seconds))
            .visibility_timeout(to_i32(request.visibility_timeout_seconds))
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .message_attribute_names("All")
            .set_receive_request_attempt_id(request.attempt_id.clone())
            .send()
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            // Too many messages in flight: each dialect answers it its own way.
            Err(error) if error.code() == Some("OverLimit") => {
                return Err(BackendError::OverLimit);
            }
            Err(error) => return Err(map_error(error)),
        };
        answer
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(parse_message)
            .collect()
    }
}

/// The attempt id of call `call` of a receive made one message at a time: its own per call (a
/// retry of the receive repeats each), within SQS's 128 characters.
fn per_call_attempt_id(attempt_id: &str, call: u32) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(attempt_id.as_bytes());
    format!("{}-{call}", hex::encode(digest))
}

fn timeouts(connect_seconds: u64) -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(connect_seconds))
        .operation_attempt_timeout(MAX_WAIT + ATTEMPT_SLACK)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

#[async_trait]
impl PollPort for SqsBackend {
    async fn poll(&self, url: &str, ask: PollAsk) -> Result<Vec<BackendMessage>, BackendError> {
        let request = BackendReceive {
            max_messages: ask.max_messages,
            wait_seconds: ask.wait_seconds,
            visibility_timeout_seconds: ask.visibility_timeout_seconds,
            attempt_id: None,
            one_per_group: false,
            abandoned: tokio_util::sync::CancellationToken::new(),
        };
        self.receive_once(url, &request).await
    }

    async fn set_visibility(
        &self,
        url: &str,
        entries: Vec<(String, u32)>,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        let entries: Vec<(&str, u32)> = entries
            .iter()
            .map(|(handle, timeout)| (handle.as_str(), *timeout))
            .collect();
        self.change_visibility_batch(url, &entries, ExpiredVisibility::Refuse)
            .await
    }
}

#[async_trait]
impl Backend for SqsBackend {
    async fn resolve(&self, locator: &str) -> Result<ResolvedQueue, BackendError> {
        let url = if locator.starts_with("https://") || locator.starts_with("http://") {
            locator.to_owned()
        } else {
            self.client
                .get_queue_url()
                .queue_name(locator)
                .send()
                .await
                .map_err(map_error)?
                .queue_url
                .ok_or_else(|| BackendError::Other("GetQueueUrl answered no URL".into()))?
        };
        let answer = self
            .client
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
            .map_err(map_error)?;
        let attributes = answer
            .attributes
            .map(|raw| parse_queue_attributes(&raw))
            .unwrap_or_default();
        Ok(ResolvedQueue { url, attributes })
    }

    async fn receive(
        &self,
        queue_url: &str,
        request: &BackendReceive,
    ) -> Result<Vec<BackendMessage>, BackendError> {
        // Message groups are FIFO queues' alone.
        if !request.one_per_group || request.max_messages <= 1 || !queue_url.ends_with(".fifo") {
            return self.receive_first(queue_url, request).await;
        }
        // SQS hands out several messages of a group together; one at a time, the group's next
        // one stays locked behind the first (in flight), so each call takes another group's.
        let mut received = Vec::new();
        for call in 0..request.max_messages {
            let one = BackendReceive {
                max_messages: 1,
                wait_seconds: if call == 0 { request.wait_seconds } else { 0 },
                attempt_id: request
                    .attempt_id
                    .as_deref()
                    .map(|id| per_call_attempt_id(id, call)),
                ..request.clone()
            };
            let got = if call == 0 {
                self.receive_first(queue_url, &one).await
            } else {
                self.receive_once(queue_url, &one).await
            };
            let got = match got {
                Ok(got) => got,
                // What earlier calls took is answered; the error would hide it.
                Err(_) if !received.is_empty() => break,
                Err(error) => return Err(error),
            };
            if got.is_empty() {
                break;
            }
            received.extend(got);
            if request.abandoned.is_cancelled() {
                break;
            }
        }
        Ok(received)
    }

    async fn delete_batch(
        &self,
        queue_url: &str,
        backend_handles: &[&str],
        // SQS refuses an expired FIFO handle whatever the caller's rule: the REST dialects' promise
        // that one still deletes cannot be kept over SQS.
        _expired: ExpiredFifoHandles,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        let handles: Vec<String> = backend_handles.iter().map(|h| (*h).to_owned()).collect();
        let (client, url) = (self.client.clone(), queue_url.to_owned());
        match &self.deletes {
            None => delete_now(client, url, handles).await,
            Some(batcher) => {
                let call: Call<String, EntryOutcome> = Arc::new(move |handles| {
                    Box::pin(delete_now(client.clone(), url.clone(), handles))
                });
                batcher.submit(queue_url, handles, call).await
            }
        }
    }

    async fn change_visibility_batch(
        &self,
        queue_url: &str,
        entries: &[(&str, u32)],
        // SQS applies a change to an expired delivery whatever the caller's rule.
        _expired: ExpiredVisibility,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        let entries: Vec<(String, u32)> = entries
            .iter()
            .map(|(handle, timeout)| ((*handle).to_owned(), *timeout))
            .collect();
        let (client, url) = (self.client.clone(), queue_url.to_owned());
        match &self.visibility {
            None => change_visibility_now(client, url, entries).await,
            Some(batcher) => {
                let call: Call<(String, u32), EntryOutcome> = Arc::new(move |entries| {
                    Box::pin(change_visibility_now(client.clone(), url.clone(), entries))
                });
                batcher.submit(queue_url, entries, call).await
            }
        }
    }

    async fn send_batch(
        &self,
        queue_url: &str,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<SendOutcome>, BackendError> {
        let (client, url) = (self.client.clone(), queue_url.to_owned());
        match &self.sends {
            None => send_now(client, url, messages.to_vec()).await,
            Some(batcher) => {
                let call: Call<OutgoingMessage, SendOutcome> = Arc::new(move |messages| {
                    Box::pin(send_now(client.clone(), url.clone(), messages))
                });
                batcher.submit(queue_url, messages.to_vec(), call).await
            }
        }
    }

    async fn purge(&self, queue_url: &str) -> Result<(), BackendError> {
        self.client
            .purge_queue()
            .queue_url(queue_url)
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn stats(&self, queue_url: &str) -> Result<QueueStats, BackendError> {
        let answer = self
            .client
            .get_queue_attributes()
            .queue_url(queue_url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(map_error)?;
        let raw = answer.attributes.unwrap_or_default();
        let count = |name: QueueAttributeName| {
            raw.get(&name)
                .and_then(|value| value.parse().ok())
                .unwrap_or(0)
        };
        Ok(QueueStats {
            visible: count(QueueAttributeName::ApproximateNumberOfMessages),
            in_flight: count(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
            delayed: count(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
            // SQS reports the oldest message's age only through CloudWatch.
            oldest_age_seconds: None,
        })
    }

    async fn create_queue(
        &self,
        name: &str,
        settings: &QueueSettings,
    ) -> Result<ResolvedQueue, BackendError> {
        let attributes = self.attributes_of(Some(name), settings).await?;
        let create = self
            .client
            .create_queue()
            .queue_name(name)
            .set_attributes((!attributes.is_empty()).then_some(attributes));
        let url = create
            .send()
            .await
            .map_err(map_error)?
            .queue_url
            .ok_or_else(|| BackendError::Other("CreateQueue answered no URL".into()))?;
        self.resolve(&url).await
    }

    async fn delete_queue(&self, queue_url: &str) -> Result<(), BackendError> {
        self.client
            .delete_queue()
            .queue_url(queue_url)
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn list_queues(&self, prefix: &str) -> Result<Vec<String>, BackendError> {
        let mut names = Vec::new();
        let mut next_token = None;
        loop {
            let answer = self
                .client
                .list_queues()
                .queue_name_prefix(prefix)
                .max_results(1000)
                .set_next_token(next_token)
                .send()
                .await
                .map_err(map_error)?;
            names.extend(
                answer
                    .queue_urls
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|url| url.rsplit('/').next().map(str::to_owned)),
            );
            match answer.next_token {
                Some(token) if !token.is_empty() => next_token = Some(token),
                _ => break,
            }
        }
        names.sort();
        Ok(names)
    }

    async fn set_queue_settings(
        &self,
        queue_url: &str,
        settings: &QueueSettings,
    ) -> Result<(), BackendError> {
        let attributes = self.attributes_of(None, settings).await?;
        if attributes.is_empty() {
            return Ok(());
        }
        self.client
            .set_queue_attributes()
            .queue_url(queue_url)
            .set_attributes(Some(attributes))
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn tag_queue(
        &self,
        queue_url: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<(), BackendError> {
        self.client
            .tag_queue()
            .queue_url(queue_url)
            .set_tags(Some(tags.clone().into_iter().collect()))
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn untag_queue(&self, queue_url: &str, keys: &[String]) -> Result<(), BackendError> {
        self.client
            .untag_queue()
            .queue_url(queue_url)
            .set_tag_keys(Some(keys.to_vec()))
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    async fn list_queue_tags(
        &self,
        queue_url: &str,
    ) -> Result<BTreeMap<String, String>, BackendError> {
        let answer = self
            .client
            .list_queue_tags()
            .queue_url(queue_url)
            .send()
            .await
            .map_err(map_error)?;
        Ok(answer.tags.unwrap_or_default().into_iter().collect())
    }

    async fn ping(&self) -> Result<(), BackendError> {
        self.client
            .list_queues()
            .max_results(1)
            .send()
            .await
            .map(|_| ())
            .map_err(map_error)
    }

    fn shutting_down(&self) {
        if let Some(polls) = &self.polls {
            polls.shut_down();
        }
    }

    async fn start_redrive(
        &self,
        source_arn: &str,
        destination_arn: Option<&str>,
        max_per_second: Option<u32>,
    ) -> Result<String, BackendError> {
        let answer = self
            .client
            .start_message_move_task()
            .source_arn(source_arn)
            .set_destination_arn(destination_arn.map(str::to_owned))
            .set_max_number_of_messages_per_second(max_per_second.map(to_i32))
            .send()
            .await
            .map_err(map_move_error)?;
        answer
            .task_handle
            .ok_or_else(|| BackendError::Other("StartMessageMoveTask answered no handle".into()))
    }

    async fn list_redrives(
        &self,
        source_arn: &str,
        max: usize,
    ) -> Result<Vec<RedriveTask>, BackendError> {
        let answer = self
            .client
            .list_message_move_tasks()
            .source_arn(source_arn)
            .max_results(i32::try_from(max.clamp(1, 10)).unwrap_or(10))
            .send()
            .await
            .map_err(map_move_error)?;
        Ok(answer
            .results
            .unwrap_or_default()
            .into_iter()
            .map(|task| RedriveTask {
                handle: task.task_handle,
                status: task
                    .status
                    .as_deref()
                    .and_then(RedriveStatus::from_name)
                    .unwrap_or(RedriveStatus::Failed),
                source_arn: task.source_arn.unwrap_or_else(|| source_arn.to_owned()),
                destination_arn: task.destination_arn,
                max_per_second: task
                    .max_number_of_messages_per_second
                    .and_then(|rate| u32::try_from(rate).ok()),
                moved: u64::try_from(task.approximate_number_of_messages_moved).unwrap_or(0),
                to_move: task
                    .approximate_number_of_messages_to_move
                    .and_then(|count| u64::try_from(count).ok()),
                // SQS's own words stay in the log; the client gets that it failed.
                failure: task.failure_reason.map(|reason| {
                    tracing::warn!(%reason, "SQS message move task failed");
                    "the queue service stopped the task".to_owned()
                }),
                started_at: task.started_timestamp,
            })
            .collect())
    }

    async fn cancel_redrive(&self, handle: &str) -> Result<u64, BackendError> {
        let answer = self
            .client
            .cancel_message_move_task()
            .task_handle(handle)
            .send()
            .await
            .map_err(map_move_error)?;
        Ok(u64::try_from(answer.approximate_number_of_messages_moved).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests;

/// The message's trace header as SQS's `AWSTraceHeader` system attribute, when it has one.
fn trace_header_attribute(
    message: &OutgoingMessage,
) -> Result<
    Option<
        std::collections::HashMap<
            aws_sdk_sqs::types::MessageSystemAttributeNameForSends,
            aws_sdk_sqs::types::MessageSystemAttributeValue,
        >,
    >,
    BackendError,
> {
    let Some(trace_header) = &message.trace_header else {
        return Ok(None);
    };
    let value = aws_sdk_sqs::types::MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(trace_header)
        .build()
        .map_err(|e| BackendError::Other(e.to_string()))?;
    Ok(Some(
        [(
            aws_sdk_sqs::types::MessageSystemAttributeNameForSends::AwsTraceHeader,
            value,
        )]
        .into(),
    ))
}

/// One `DeleteMessageBatch` call: an outcome per handle, in order.
async fn delete_now(
    client: Client,
    queue_url: String,
    handles: Vec<String>,
) -> Result<Vec<EntryOutcome>, BackendError> {
    let entries = indexed(&handles, |id, handle| {
        DeleteMessageBatchRequestEntry::builder()
            .id(id)
            .receipt_handle(handle)
            .build()
    })?;
    let answer = client
        .delete_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(map_error)?;
    let expired: Vec<String> = answer
        .failed
        .iter()
        .filter(|entry| {
            entry
                .message
                .as_deref()
                .is_some_and(|message| message.contains("receipt handle has expired"))
        })
        .map(|entry| entry.id.clone())
        .collect();
    let mut outcomes = answered(
        handles.len(),
        answer.successful.into_iter().map(|entry| entry.id),
        answer
            .failed
            .into_iter()
            .map(|entry| (entry.id, entry.code)),
    );
    for id in expired {
        if let Some(outcome) = id.parse::<usize>().ok().and_then(|at| outcomes.get_mut(at)) {
            *outcome = EntryOutcome::Expired;
        }
    }
    Ok(outcomes)
}

/// One `ChangeMessageVisibilityBatch` call: an outcome per entry, in order.
async fn change_visibility_now(
    client: Client,
    queue_url: String,
    entries: Vec<(String, u32)>,
) -> Result<Vec<EntryOutcome>, BackendError> {
    let request_entries = indexed(&entries, |id, (handle, timeout)| {
        ChangeMessageVisibilityBatchRequestEntry::builder()
            .id(id)
            .receipt_handle(handle)
            .visibility_timeout(to_i32(*timeout))
            .build()
    })?;
    let answer = client
        .change_message_visibility_batch()
        .queue_url(queue_url)
        .set_entries(Some(request_entries))
        .send()
        .await
        .map_err(map_error)?;
    Ok(answered(
        entries.len(),
        answer.successful.into_iter().map(|entry| entry.id),
        answer
            .failed
            .into_iter()
            .map(|entry| (entry.id, entry.code)),
    ))
}

/// What a message weighs in a batch's payload, as SQS counts it.
fn message_bytes(message: &OutgoingMessage) -> usize {
    crate::core::message_rules::size(&message.body, &message.attributes)
}

/// One `SendMessageBatch` call: an outcome per message, in order.
async fn send_now(
    client: Client,
    queue_url: String,
    messages: Vec<OutgoingMessage>,
) -> Result<Vec<SendOutcome>, BackendError> {
    let entries = messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let attributes = message
                .attributes
                .iter()
                .map(|(name, attribute)| {
                    let value = aws_sdk_sqs::types::MessageAttributeValue::builder()
                        .data_type(&attribute.data_type);
                    let value = match &attribute.value {
                        AttributeValue::Text(text) => value.string_value(text),
                        AttributeValue::Bytes(bytes) => {
                            value.binary_value(aws_sdk_sqs::primitives::Blob::new(bytes.clone()))
                        }
                    };
                    value
                        .build()
                        .map(|value| (name.clone(), value))
                        .map_err(|e| BackendError::Other(e.to_string()))
                })
                .collect::<Result<std::collections::HashMap<_, _>, _>>()?;
            SendMessageBatchRequestEntry::builder()
                .id(index.to_string())
                .message_body(&message.body)
                .set_message_attributes((!attributes.is_empty()).then_some(attributes))
                .set_delay_seconds(message.delay_seconds.map(to_i32))
                .set_message_group_id(message.group_id.clone())
                .set_message_deduplication_id(message.deduplication_id.clone())
                .set_message_system_attributes(trace_header_attribute(message)?)
                .build()
                .map_err(|e| BackendError::Other(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let answer = client
        .send_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(entries))
        .send()
        .await
        .map_err(map_error)?;
    let mut results: Vec<SendOutcome> = (0..messages.len())
        .map(|_| Err(EntryError::invalid("the batch answer omitted this entry")))
        .collect();
    for sent in answer.successful {
        if let Some(slot) = sent
            .id
            .parse::<usize>()
            .ok()
            .and_then(|i| results.get_mut(i))
        {
            *slot = Ok(SentMessage {
                message_id: sent.message_id,
                sequence_number: sent.sequence_number,
            });
        }
    }
    for failed in answer.failed {
        if let Some(slot) = failed
            .id
            .parse::<usize>()
            .ok()
            .and_then(|i| results.get_mut(i))
        {
            // SQS's own text stays in the log; the client gets the kind and our words.
            tracing::debug!(code = %failed.code, "SQS refused a batch entry");
            *slot = Err(entry_error(&failed.code));
        }
    }
    Ok(results)
}
