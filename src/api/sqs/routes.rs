//! The SQS endpoint: protocol detection, SigV4 authentication, and one handler per action.

use super::error::SqsError;
use super::query;
use super::sigv4::{self, PendingSignature, RequestHead, SigV4Error};
use super::wire::{self, BatchResult, Failed, MessageJson, Successful};
use crate::api::common::read_body;
use crate::core::access::{Caller, Grants, Principal};
use crate::core::clock::Clock;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{HandleOutcome, QUEUE_NAME_RULE};
use crate::core::operation::Operation;
use crate::core::sqs_limits as limits;
use crate::core::{Gateway, GatewayError};
use crate::credentials::live::Live;
use crate::credentials::sqs_keys::SqsKey;
use axum::body::Body;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The largest SQS request body. A request carries at most 1 MiB of message data (a message, or
/// a batch of ten, bodies and attributes together); escaping can triple it on the wire (JSON's
/// `\u00e9` for a two-byte character, the form's `%XX` per byte), and the envelope adds a little.
pub const BODY_LIMIT: usize = 3 * 1024 * 1024 + 64 * 1024;
/// The account id in queue URLs and ARNs the endpoint hands out.
pub const ACCOUNT: &str = "000000000000";

/// The access keys SigV4 checks, with the signing keys derived from them so far: replaced together
/// when the config is reloaded, so a changed or removed secret never meets a signing key derived
/// from the old one.
#[derive(Debug, Default)]
pub struct SqsKeys {
    keys: Vec<SqsKey>,
    signing_keys: sigv4::SigningKeys,
}

impl SqsKeys {
    /// The endpoint's access keys (their secrets read from the config's sources).
    pub fn new(keys: Vec<SqsKey>) -> Self {
        Self {
            keys,
            signing_keys: sigv4::SigningKeys::default(),
        }
    }

    /// How many keys there are.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn find(&self, access_key_id: &str) -> Option<&SqsKey> {
        self.keys.iter().find(|c| c.access_key_id == access_key_id)
    }
}

/// What the SQS routes share.
pub struct SqsState {
    /// The core.
    pub gateway: Arc<Gateway>,
    /// The access keys SigV4 checks; replaced whole when the config is reloaded.
    pub credentials: Live<SqsKeys>,
    /// What unsigned requests may do, where they are allowed (`*` on `*`).
    pub anonymous: Arc<Grants>,
    /// Accept requests without a signature (local development only).
    pub allow_unsigned: bool,
    /// Base of the queue URLs handed out; default: `http://` and the request's Host.
    pub public_url: Option<String>,
    /// The region signatures must be scoped to, and queue ARNs name.
    pub region: String,
    /// Where request times are checked against.
    pub clock: Arc<dyn Clock>,
}

impl SqsState {
    /// The endpoint's state from its config section; `credentials` is the handle a config reload
    /// swaps the keys behind.
    pub fn from_config(
        gateway: Arc<Gateway>,
        section: &super::config::SqsApiConfig,
        credentials: Live<SqsKeys>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        if section.allow_unsigned {
            tracing::warn!(
                "the SQS endpoint accepts unsigned requests (sqs_api.allow_unsigned): local development only"
            );
        }
        Self {
            gateway,
            credentials,
            anonymous: Arc::new(section.anonymous_grants()),
            allow_unsigned: section.allow_unsigned,
            public_url: section.public_url.clone(),
            region: section.region.clone(),
            clock,
        }
    }
}

impl crate::api::common::Dialect for SqsState {
    fn router(self: Arc<Self>) -> Router {
        router(self)
    }

    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::SqsEdge
    }
}

/// `POST /` and `POST` to the queue URLs it hands out (`/000000000000/{queue}`).
fn router(state: Arc<SqsState>) -> Router {
    Router::new()
        // GET serves presigned Query URLs (the action and its parameters are all in the URL).
        .route("/", post(handle).get(handle))
        .route(&format!("/{ACCOUNT}/{{queue}}"), post(handle).get(handle))
        .method_not_allowed_fallback(|request| {
            crate::api::common::method_not_allowed(&super::SqsEdge, request)
        })
        .with_state(state)
}

/// The wire protocol of one request.
enum Protocol {
    /// AWS JSON 1.0: the action from `X-Amz-Target`.
    Json(String),
    /// Query: form parameters, XML answers.
    Query,
}

impl Protocol {
    /// Its name in logs and metrics.
    fn name(&self) -> &'static str {
        match self {
            Self::Json(_) => "json",
            Self::Query => "query",
        }
    }
}

fn protocol_of(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<Protocol> {
    if let Some(target) = headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return target
            .strip_prefix("AmazonSQS.")
            .map(|action| Protocol::Json(action.to_owned()));
    }
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let action_in_query = uri
        .query()
        .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("Action=")));
    (form || action_in_query).then_some(Protocol::Query)
}

async fn handle(
    State(state): State<Arc<SqsState>>,
    method: Method,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let request_id = uuid::Uuid::new_v4().to_string();
    let Some(protocol) = protocol_of(&headers, &uri) else {
        let error = SqsError::sender(
            "InvalidAction",
            "Send AWS JSON 1.0 (X-Amz-Target: AmazonSQS.<Action>) or the Query protocol (form-encoded Action=...).",
        );
        // A request with any `X-Amz-Target` speaks JSON 1.0 and is answered in it, as the edge
        // answers it.
        let json_protocol = headers.contains_key("x-amz-target");
        return render_error(json_protocol, error, &request_id);
    };
    let json_protocol = matches!(protocol, Protocol::Json(_));
    tracing::Span::current().record("protocol", protocol.name());
    let head = OwnedHead {
        method,
        uri,
        headers,
    };
    match serve(&state, protocol, head, body).await {
        Ok((action, answer)) => {
            let mut response = if json_protocol {
                (
                    [(header::CONTENT_TYPE, "application/x-amz-json-1.0")],
                    Json(answer),
                )
                    .into_response()
            } else {
                (
                    [(header::CONTENT_TYPE, "text/xml")],
                    query::render_answer(&action, &answer, &request_id),
                )
                    .into_response()
            };
            if let Ok(value) = HeaderValue::from_str(&request_id) {
                response.headers_mut().insert("x-amzn-requestid", value);
            }
            response
        }
        Err(error) => render_error(json_protocol, error, &request_id),
    }
}

/// The request's head, owned: [`serve`] drops it before dispatching.
struct OwnedHead {
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
}

/// A gateway error as the SQS endpoint answers it: AWS JSON 1.0 when the request used it (it
/// sent `X-Amz-Target`), else the Query protocol's XML.
pub fn error_response(json_protocol: bool, error: GatewayError) -> Response {
    let request_id = uuid::Uuid::new_v4().to_string();
    render_error(json_protocol, SqsError::from(error), &request_id)
}

fn render_error(json_protocol: bool, error: SqsError, request_id: &str) -> Response {
    let mut response = if json_protocol {
        error.into_response()
    } else {
        let retry_after = error.retry_after;
        let mut response = (
            error.status,
            [(header::CONTENT_TYPE, "text/xml")],
            query::render_error(&error, request_id),
        )
            .into_response();
        if let Some(wait) = retry_after {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(crate::core::limits::retry_after_seconds(wait)),
            );
        }
        response
    };
    if let Ok(value) = HeaderValue::from_str(request_id) {
        response.headers_mut().insert("x-amzn-requestid", value);
    }
    response
}

/// Authenticates the request from its head, then reads, verifies and dispatches it; the answer is
/// JSON-shaped for both protocols.
async fn serve(
    state: &SqsState,
    protocol: Protocol,
    head: OwnedHead,
    body: Body,
) -> Result<(String, Value), SqsError> {
    let signed = RequestHead {
        method: &head.method,
        uri: &head.uri,
        headers: &head.headers,
    };
    // One key set for the whole check, head and body, though a reload may come in between.
    let keys = state.credentials.current();
    // Nothing of the body is read before the signature's key, scope and time check out.
    let pending = authenticate_head(state, &keys, &signed)?;
    let body = read_body(body, BODY_LIMIT).await.map_err(SqsError::from)?;
    let caller = match pending {
        Some(pending) => verify_body(&keys, pending, &body)?,
        None => Caller::new(Principal::Anonymous, Arc::clone(&state.anonymous)),
    };
    let host = head
        .headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("localhost");
    let context = Context {
        state,
        caller,
        base_url: state
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{host}")),
    };
    let protocol_name = protocol.name();
    let (action, body) = match protocol {
        Protocol::Json(action) => (action, body),
        Protocol::Query => {
            let (action, mut request) = query::parse_form(&body, head.uri.query())?;
            // Query clients may address the queue by the URL path instead of a QueueUrl parameter.
            if request.get("QueueUrl").is_none()
                && let Some(queue) = head.uri.path().strip_prefix(&format!("/{ACCOUNT}/"))
            {
                request["QueueUrl"] = json!(context.queue_url(queue));
            }
            let body = serde_json::to_vec(&request)
                .map_err(|e| SqsError::from(GatewayError::internal(e)))?;
            (action, body.into())
        }
    };
    // The head's bytes are the connection's read buffer: a receive may wait 20 s without it.
    drop(head);
    let named = action_name(&action);
    tracing::Span::current().record("action", named);
    state.gateway.meters().sqs_request(named, protocol_name);
    let answer = context.dispatch(&action, &body).await?;
    Ok((action, answer))
}

/// Checks a request's signature as far as its head allows: `None` for an unsigned request where
/// those are allowed, else what remains to verify once the body is read.
fn authenticate_head(
    state: &SqsState,
    keys: &SqsKeys,
    head: &RequestHead<'_>,
) -> Result<Option<PendingSignature>, SqsError> {
    if !sigv4::is_signed(head) && state.allow_unsigned {
        return Ok(None);
    }
    let scope = sigv4::Scope {
        service: "sqs",
        region: &state.region,
    };
    let lookup = |key: &str| keys.find(key).map(|c| c.secret.clone());
    sigv4::check_head(head, state.clock.now(), scope, &keys.signing_keys, lookup)
        .map(Some)
        .map_err(|error| {
            tracing::debug!(code = error.aws_code(), "SQS request refused by SigV4");
            sigv4_error(&error)
        })
}

/// Completes the signature check with the body: the calling key, as a caller of the core.
fn verify_body(keys: &SqsKeys, pending: PendingSignature, body: &[u8]) -> Result<Caller, SqsError> {
    match pending.verify(body) {
        Ok(verified) => keys
            .find(&verified.access_key_id)
            .map(SqsKey::caller)
            .ok_or_else(|| sigv4_error(&SigV4Error::UnknownKey)),
        Err(error) => {
            tracing::debug!(code = error.aws_code(), "SQS request refused by SigV4");
            Err(sigv4_error(&error))
        }
    }
}

fn sigv4_error(error: &SigV4Error) -> SqsError {
    let code = error.aws_code();
    let status = match code {
        "IncompleteSignature" | "RequestExpired" => StatusCode::BAD_REQUEST,
        _ => StatusCode::FORBIDDEN,
    };
    SqsError::sender(code, error.to_string()).with_status(status)
}

/// The core operation an SQS action performs (what it needs of the caller); `None` for actions
/// the endpoint does not know.
/// The actions the endpoint serves, by the name clients send.
const ACTIONS: [&str; 23] = [
    "SendMessage",
    "SendMessageBatch",
    "ReceiveMessage",
    "DeleteMessage",
    "DeleteMessageBatch",
    "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch",
    "GetQueueUrl",
    "GetQueueAttributes",
    "ListQueues",
    "ListQueueTags",
    "ListDeadLetterSourceQueues",
    "PurgeQueue",
    "CreateQueue",
    "DeleteQueue",
    "SetQueueAttributes",
    "TagQueue",
    "UntagQueue",
    "StartMessageMoveTask",
    "CancelMessageMoveTask",
    "ListMessageMoveTasks",
    "AddPermission",
    "RemovePermission",
];

/// `action` as a name for logs and metrics: one of [`ACTIONS`], else `unknown` (a client's
/// text never becomes a label).
fn action_name(action: &str) -> &'static str {
    ACTIONS
        .iter()
        .find(|known| **known == action)
        .copied()
        .unwrap_or("unknown")
}

fn operation_of(action: &str) -> Option<Operation> {
    Some(match action {
        "SendMessage" | "SendMessageBatch" => Operation::Send,
        "ReceiveMessage" => Operation::Receive,
        "DeleteMessage" | "DeleteMessageBatch" => Operation::Acknowledge,
        "ChangeMessageVisibility" | "ChangeMessageVisibilityBatch" => Operation::ChangeVisibility,
        "GetQueueUrl" => Operation::ResolveQueue,
        "GetQueueAttributes" => Operation::QueueStats,
        "ListQueues" => Operation::ListQueues,
        "ListQueueTags" => Operation::ListTags,
        "ListDeadLetterSourceQueues" => Operation::DeadLetterSources,
        "PurgeQueue" => Operation::Purge,
        "CreateQueue" => Operation::CreateQueue,
        "DeleteQueue" => Operation::DeleteQueue,
        "SetQueueAttributes" => Operation::SetQueueSettings,
        "TagQueue" | "UntagQueue" => Operation::Tag,
        "StartMessageMoveTask" | "CancelMessageMoveTask" | "ListMessageMoveTasks" => {
            Operation::Redrive
        }
        _ => return None,
    })
}

struct Context<'a> {
    state: &'a SqsState,
    caller: Caller,
    base_url: String,
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, SqsError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}" as &[u8]
    } else {
        body
    };
    serde_json::from_slice(body).map_err(|error| {
        SqsError::sender(
            "SerializationException",
            format!(
                "the request body is not valid for this action (line {}, column {})",
                error.line(),
                error.column()
            ),
        )
    })
}

impl Context<'_> {
    fn gateway(&self) -> &Arc<Gateway> {
        &self.state.gateway
    }

    fn queue_url(&self, queue: &str) -> String {
        format!("{}/{ACCOUNT}/{queue}", self.base_url.trim_end_matches('/'))
    }

    /// The gateway queue a QueueUrl names (its last path segment), checked by the core (it
    /// exists, and the caller may do `operation` there) before the request's own details.
    fn queue_of(&self, url: Option<&str>, operation: Operation) -> Result<String, SqsError> {
        let url = url.ok_or_else(|| SqsError::missing_parameter("QueueUrl"))?;
        let name = url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        self.gateway().check_access(&self.caller, operation, name)?;
        Ok(name.to_owned())
    }

    async fn dispatch(&self, action: &str, body: &[u8]) -> Result<Value, SqsError> {
        if operation_of(action).is_none() {
            return Err(match action {
                "AddPermission" | "RemovePermission" => {
                    SqsError::unsupported(format!("{action} is not supported by this gateway"))
                }
                _ => SqsError::sender(
                    "UnknownOperationException",
                    "The action or operation requested is invalid.",
                ),
            });
        }
        // Each action's future boxed on its own: a receive waiting 20 s holds its own state only,
        // not room for the largest action's.
        match action {
            "GetQueueUrl" => Box::pin(self.get_queue_url(parse(body)?)).await,
            "ListQueues" => Box::pin(self.list_queues(parse(body)?)).await,
            "GetQueueAttributes" => Box::pin(self.get_queue_attributes(parse(body)?)).await,
            "SendMessage" => Box::pin(self.send_message(parse(body)?)).await,
            "SendMessageBatch" => Box::pin(self.send_message_batch(parse(body)?)).await,
            "ReceiveMessage" => Box::pin(self.receive_message(parse(body)?)).await,
            "DeleteMessage" => Box::pin(self.delete_message(parse(body)?)).await,
            "DeleteMessageBatch" => {
                Box::pin(self.handle_batch(parse(body)?, "DeleteMessageBatch")).await
            }
            "ChangeMessageVisibility" => Box::pin(self.change_visibility(parse(body)?)).await,
            "ChangeMessageVisibilityBatch" => {
                Box::pin(self.handle_batch(parse(body)?, "ChangeMessageVisibilityBatch")).await
            }
            "PurgeQueue" => {
                let request: wire::QueueUrlOnly = parse(body)?;
                let queue = self.queue_of(request.queue_url.as_deref(), Operation::Purge)?;
                Box::pin(self.gateway().purge(&self.caller, &queue)).await?;
                Ok(json!({}))
            }
            "CreateQueue" => Box::pin(self.create_queue(parse(body)?)).await,
            "DeleteQueue" => {
                let request: wire::QueueUrlOnly = parse(body)?;
                let queue = self.queue_of(request.queue_url.as_deref(), Operation::DeleteQueue)?;
                Box::pin(self.gateway().delete_queue(&self.caller, &queue)).await?;
                Ok(json!({}))
            }
            "SetQueueAttributes" => Box::pin(self.set_queue_attributes(parse(body)?)).await,
            "ListDeadLetterSourceQueues" => Box::pin(self.dead_letter_sources(parse(body)?)).await,
            "TagQueue" | "UntagQueue" | "ListQueueTags" => {
                Box::pin(self.tag_action(action, body)).await
            }
            "StartMessageMoveTask" => Box::pin(self.start_move_task(parse(body)?)).await,
            "ListMessageMoveTasks" => Box::pin(self.list_move_tasks(parse(body)?)).await,
            "CancelMessageMoveTask" => {
                let request: wire::CancelMessageMoveTask = parse(body)?;
                let handle = request
                    .task_handle
                    .ok_or_else(|| SqsError::missing_parameter("TaskHandle"))?;
                let moved = Box::pin(self.gateway().cancel_redrive(&self.caller, &handle)).await?;
                Ok(json!({ "ApproximateNumberOfMessagesMoved": moved }))
            }
            _ => Err(SqsError::sender(
                "UnknownOperationException",
                "The action or operation requested is invalid.",
            )),
        }
    }

    /// The gateway queue a redrive names by ARN.
    async fn queue_of_arn(&self, arn: Option<&str>) -> Result<String, SqsError> {
        let arn = arn.ok_or_else(|| SqsError::missing_parameter("SourceArn"))?;
        Ok(self.gateway().queue_named_by_arn(arn).await?)
    }

    async fn start_move_task(
        &self,
        request: wire::StartMessageMoveTask,
    ) -> Result<Value, SqsError> {
        let rate = wire::ranged(
            request.max_number_of_messages_per_second,
            "MaxNumberOfMessagesPerSecond",
            1,
            500,
        )?;
        let source = self.queue_of_arn(request.source_arn.as_deref()).await?;
        let destination = match request.destination_arn.as_deref() {
            Some(arn) => Some(self.gateway().queue_named_by_arn(arn).await?),
            None => None,
        };
        let handle = self
            .gateway()
            .start_redrive(&self.caller, &source, destination.as_deref(), rate)
            .await?;
        Ok(json!({ "TaskHandle": handle }))
    }

    async fn list_move_tasks(
        &self,
        request: wire::ListMessageMoveTasks,
    ) -> Result<Value, SqsError> {
        let max = wire::ranged(request.max_results, "MaxResults", 1, 10)?.unwrap_or(1);
        let source = self.queue_of_arn(request.source_arn.as_deref()).await?;
        let tasks = self
            .gateway()
            .list_redrives(&self.caller, &source, max as usize)
            .await?;
        let results: Vec<Value> = tasks
            .into_iter()
            .map(|task| {
                let mut entry = json!({
                    "Status": task.status.name(),
                    "SourceArn": task.source_arn,
                    "ApproximateNumberOfMessagesMoved": task.moved,
                    "StartedTimestamp": task.started_at,
                });
                if let Some(handle) = task.handle {
                    entry["TaskHandle"] = json!(handle);
                }
                if let Some(destination) = task.destination_arn {
                    entry["DestinationArn"] = json!(destination);
                }
                if let Some(rate) = task.max_per_second {
                    entry["MaxNumberOfMessagesPerSecond"] = json!(rate);
                }
                if let Some(to_move) = task.to_move {
                    entry["ApproximateNumberOfMessagesToMove"] = json!(to_move);
                }
                if let Some(failure) = task.failure {
                    entry["FailureReason"] = json!(failure);
                }
                entry
            })
            .collect();
        Ok(json!({ "Results": results }))
    }

    async fn get_queue_url(&self, request: wire::GetQueueUrl) -> Result<Value, SqsError> {
        let name = request
            .queue_name
            .ok_or_else(|| SqsError::missing_parameter("QueueName"))?;
        // The queue must exist in the backend: callers "get, else create".
        self.gateway().resolve_queue(&self.caller, &name).await?;
        Ok(json!({ "QueueUrl": self.queue_url(&name) }))
    }

    async fn list_queues(&self, request: wire::ListQueues) -> Result<Value, SqsError> {
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
        let mut answer = json!({
            "QueueUrls": names.iter().map(|name| self.queue_url(name)).collect::<Vec<_>>()
        });
        if more && max.is_some() {
            answer["NextToken"] = json!(names.last().cloned().unwrap_or_default());
        }
        Ok(answer)
    }

    async fn create_queue(&self, request: wire::CreateQueue) -> Result<Value, SqsError> {
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
        let settings = wire::queue_settings(&request.attributes, true)?;
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
        Ok(json!({ "QueueUrl": self.queue_url(&name) }))
    }

    async fn set_queue_attributes(
        &self,
        request: wire::SetQueueAttributes,
    ) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::SetQueueSettings)?;
        let settings = wire::queue_settings(&request.attributes, false)?;
        self.check_dead_letter_target(&queue, &request.attributes)
            .await?;
        self.gateway()
            .set_queue_settings(&self.caller, &queue, &settings)
            .await?;
        Ok(json!({}))
    }

    /// A RedrivePolicy of `queue` may name only a queue of this gateway the caller may send to:
    /// the queue's messages land there.
    async fn check_dead_letter_target(
        &self,
        queue: &str,
        attributes: &BTreeMap<String, String>,
    ) -> Result<(), SqsError> {
        if let Some(arn) = wire::dead_letter_arn(attributes) {
            self.gateway()
                .authorize_dead_letter_target(&self.caller, queue, &arn)
                .await?;
        }
        Ok(())
    }

    async fn tag_action(&self, action: &str, body: &[u8]) -> Result<Value, SqsError> {
        let request: wire::Tags = parse(body)?;
        let operation = match action {
            "ListQueueTags" => Operation::ListTags,
            _ => Operation::Tag,
        };
        let queue = self.queue_of(request.queue_url.as_deref(), operation)?;
        let gateway = self.gateway();
        match action {
            "TagQueue" => {
                gateway
                    .change_tags(&self.caller, &queue, &request.tags, &[])
                    .await?
            }
            "UntagQueue" => {
                gateway
                    .change_tags(&self.caller, &queue, &BTreeMap::new(), &request.tag_keys)
                    .await?
            }
            _ => {
                let tags = gateway.list_tags(&self.caller, &queue).await?;
                if !tags.is_empty() {
                    return Ok(json!({ "Tags": tags }));
                }
            }
        }
        Ok(json!({}))
    }

    async fn dead_letter_sources(&self, request: wire::QueueUrlOnly) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::DeadLetterSources)?;
        let sources = self
            .gateway()
            .dead_letter_source_queues(&self.caller, &queue)
            .await?;
        Ok(
            json!({ "queueUrls": sources.iter().map(|name| self.queue_url(name)).collect::<Vec<_>>() }),
        )
    }

    async fn get_queue_attributes(
        &self,
        request: wire::GetQueueAttributes,
    ) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::QueueStats)?;
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
            attributes
                .arn
                .clone()
                .unwrap_or_else(|| format!("arn:aws:sqs:{}:{ACCOUNT}:{queue}", self.state.region)),
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
            let (scope, limit) = if attributes.per_group_throughput {
                ("messageGroup", "perMessageGroupId")
            } else {
                ("queue", "perQueue")
            };
            all.insert("DeduplicationScope", scope.into());
            all.insert("FifoThroughputLimit", limit.into());
        }
        all.insert(
            "SqsManagedSseEnabled",
            attributes.managed_encryption.to_string(),
        );
        if let Some(redrive) = &attributes.redrive {
            all.insert(
                "RedrivePolicy",
                json!({ "deadLetterTargetArn": redrive.dead_letter_target_arn, "maxReceiveCount": redrive.max_receive_count }).to_string(),
            );
        }
        let wanted = &request.attribute_names;
        let selected: BTreeMap<&str, String> = all
            .into_iter()
            .filter(|(name, _)| wanted.iter().any(|w| w == "All" || w == name))
            .collect();
        Ok(json!({ "Attributes": selected }))
    }

    async fn send_message(&self, request: wire::SendMessage) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::Send)?;
        let message = wire::outgoing(request.entry)?;
        let (body_md5, attributes_md5) = wire::digests(&message);
        let mut results = self
            .gateway()
            .send(&self.caller, &queue, std::slice::from_ref(&message))
            .await?;
        let sent = results
            .pop()
            .ok_or_else(|| SqsError::from(GatewayError::internal("no send result")))?
            .map_err(SqsError::from)?;
        let mut answer = json!({ "MessageId": sent.message_id, "MD5OfMessageBody": body_md5 });
        if let Some(md5) = attributes_md5 {
            answer["MD5OfMessageAttributes"] = json!(md5);
        }
        if let Some(sequence) = sent.sequence_number {
            answer["SequenceNumber"] = json!(sequence);
        }
        Ok(answer)
    }

    async fn send_message_batch(&self, request: wire::SendMessageBatch) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::Send)?;
        let ids = wire::check_batch(request.entries.iter().map(|e| e.id.as_deref()))?;
        let mut result = BatchResult::default();
        let mut accepted = Vec::new();
        for (id, entry) in ids.into_iter().zip(request.entries) {
            match wire::outgoing(entry) {
                Ok(message) => accepted.push((id, message)),
                Err(error) => result.failed.push(failed(id, &error)),
            }
        }
        let messages: Vec<_> = accepted.iter().map(|(_, m)| m.clone()).collect();
        wire::check_batch_length(&messages)?;
        let sent = if messages.is_empty() {
            Vec::new()
        } else {
            self.gateway().send(&self.caller, &queue, &messages).await?
        };
        for ((id, message), outcome) in accepted.into_iter().zip(sent) {
            match outcome {
                Ok(sent) => {
                    let (body_md5, attributes_md5) = wire::digests(&message);
                    result.successful.push(Successful {
                        id,
                        message_id: Some(sent.message_id),
                        md5_of_message_body: Some(body_md5),
                        md5_of_message_attributes: attributes_md5,
                        sequence_number: sent.sequence_number,
                    });
                }
                Err(error) => result.failed.push(failed(id, &SqsError::from(error))),
            }
        }
        Ok(serde_json::to_value(result).unwrap_or_default())
    }

    async fn receive_message(&self, request: wire::ReceiveMessage) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::Receive)?;
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
                    message.dead_letter_source_arn.clone(),
                );
                let selected: BTreeMap<_, _> = message
                    .attributes
                    .iter()
                    .filter(|(name, _)| {
                        wire::attribute_selected(name, &request.message_attribute_names)
                    })
                    .map(|(name, attribute)| (name.clone(), attribute.clone()))
                    .collect();
                MessageJson {
                    md5_of_body: super::md5::of_body(&message.body),
                    md5_of_message_attributes: super::md5::of_attributes(&selected),
                    message_attributes: wire::attributes_json(&selected),
                    message_id: message.message_id,
                    receipt_handle: delivery.receipt_handle.expose().to_owned(),
                    body: message.body,
                    attributes: system,
                }
            })
            .collect();
        Ok(if messages.is_empty() {
            json!({})
        } else {
            json!({ "Messages": messages })
        })
    }

    async fn delete_message(&self, request: wire::HandleRequest) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::Acknowledge)?;
        let handle = request
            .entry
            .receipt_handle
            .ok_or_else(|| SqsError::missing_parameter("ReceiptHandle"))?;
        // A handle of another queue is invalid here (as on SQS), and deletes nothing anywhere.
        match self
            .gateway()
            .acknowledge(&self.caller, &[handle], Some(&queue))
            .await?
            .first()
        {
            // As SQS: deleting with an outdated handle succeeds (and deletes nothing).
            Some(HandleOutcome::Ok | HandleOutcome::Stale) => Ok(json!({})),
            _ => Err(receipt_handle_invalid()),
        }
    }

    async fn change_visibility(&self, request: wire::HandleRequest) -> Result<Value, SqsError> {
        let queue = self.queue_of(request.queue_url.as_deref(), Operation::ChangeVisibility)?;
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
            .change_visibility(&self.caller, &[(handle, timeout)], Some(&queue))
            .await?
            .first()
        {
            Some(HandleOutcome::Ok) => Ok(json!({})),
            Some(HandleOutcome::Stale) => Err(message_not_in_flight()),
            _ => Err(receipt_handle_invalid()),
        }
    }

    async fn handle_batch(
        &self,
        request: wire::HandleBatch,
        action: &str,
    ) -> Result<Value, SqsError> {
        let operation = if action == "DeleteMessageBatch" {
            Operation::Acknowledge
        } else {
            Operation::ChangeVisibility
        };
        let queue = self.queue_of(request.queue_url.as_deref(), operation)?;
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
            let timeout = if action == "ChangeMessageVisibilityBatch" {
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
        let outcomes = if action == "DeleteMessageBatch" {
            let just_handles: Vec<String> = handles.iter().map(|(_, h, _)| h.clone()).collect();
            self.gateway()
                .acknowledge(&self.caller, &just_handles, Some(&queue))
                .await?
        } else {
            let entries: Vec<(String, u32)> =
                handles.iter().map(|(_, h, t)| (h.clone(), *t)).collect();
            self.gateway()
                .change_visibility(&self.caller, &entries, Some(&queue))
                .await?
        };
        for ((id, _, _), outcome) in handles.into_iter().zip(outcomes) {
            match (outcome, action) {
                (HandleOutcome::Ok, _) | (HandleOutcome::Stale, "DeleteMessageBatch") => {
                    result.successful.push(Successful {
                        id,
                        ..Default::default()
                    })
                }
                (HandleOutcome::Stale, _) => {
                    result.failed.push(failed(id, &message_not_in_flight()))
                }
                (HandleOutcome::Invalid, _) => {
                    result.failed.push(failed(id, &receipt_handle_invalid()))
                }
            }
        }
        Ok(serde_json::to_value(result).unwrap_or_default())
    }
}

fn failed(id: String, error: &SqsError) -> Failed {
    Failed {
        id,
        sender_fault: error.sender,
        code: error.code.into(),
        message: error.message.clone(),
    }
}

fn receipt_handle_invalid() -> SqsError {
    SqsError::sender(
        "ReceiptHandleIsInvalid",
        "The input receipt handle is invalid.",
    )
}

fn message_not_in_flight() -> SqsError {
    SqsError {
        query_code: "AWS.SimpleQueueService.MessageNotInflight",
        ..SqsError::sender(
            "MessageNotInflight",
            "The message referred to isn't in flight.",
        )
    }
}

#[cfg(test)]
mod tests;
