//! The SQS endpoint: protocol detection, SigV4 authentication, the request read into one typed
//! operation, and its dispatch to the action's handler (queue actions in `routes/queues.rs`,
//! message actions in `routes/messages.rs`), whose typed answer either protocol renders.

use super::action::SqsAction;
use super::answers::{self, BatchResult, Failed, MessageJson, SqsAnswer, Successful};
use super::error::SqsError;
use super::op::{Input, SqsOp};
use super::query;
use super::regions::{self, ArnView, Regions};
use super::sigv4::{self, PendingSignature, RequestHead, SigV4Error};
use super::time_rules::TimeRules;
use super::wire;
use crate::api::common::{Dialect, PlugContext, read_body};
use crate::core::access::{Caller, Grants, Principal};
use crate::core::clock::Clock;
use crate::core::gateway::ReceiveOptions;
use crate::core::model::{HandleOutcome, QUEUE_NAME_RULE};
use crate::core::operation::Operation;
use crate::core::request_scope;
use crate::core::sqs_limits as limits;
use crate::core::{Gateway, GatewayError};
use crate::credentials::live::Live;
use crate::credentials::sqs_keys::{CallableActions, SqsKey};
use axum::body::Body;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use std::collections::BTreeMap;
use std::sync::Arc;

mod messages;
mod permissions;
mod queues;

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
    /// Base of the queue URLs handed out; default: the request's Host under the listener's
    /// scheme (`https` with `[server.tls]`).
    pub public_url: crate::api::common::PublicUrl,
    /// The regions signatures may be scoped to.
    pub regions: Regions,
    /// Where request times are checked against.
    pub clock: Arc<dyn Clock>,
    /// SQS's 60-second rules, where the endpoint keeps them (`None`: off).
    pub time_rules: Option<TimeRules>,
}

/// The endpoint from its config section; `credentials` is the handle a config reload swaps the
/// keys behind.
pub fn plug(
    section: &super::config::SqsApiConfig,
    credentials: Live<SqsKeys>,
    context: &PlugContext,
) -> Arc<dyn Dialect> {
    if section.allow_unsigned {
        tracing::warn!(
            "the SQS endpoint accepts unsigned requests (sqs_api.allow_unsigned): local development only"
        );
    }
    Arc::new(SqsState {
        gateway: Arc::clone(&context.gateway),
        credentials,
        anonymous: Arc::new(section.anonymous_grants()),
        allow_unsigned: section.allow_unsigned,
        public_url: crate::api::common::PublicUrl::new(section.public_url.as_deref(), context.tls),
        regions: section.regions(),
        clock: Arc::clone(&context.clock),
        time_rules: (section.sixty_second_rules && !context.gateway.backend_keeps_sqs_time_rules())
            .then(TimeRules::default),
    })
}

impl Dialect for SqsState {
    fn router(self: Arc<Self>) -> Router {
        router(self)
    }

    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &super::SqsEdge
    }
}

/// `POST /` and `POST` to the queue URLs it hands out (`/000000000000/{queue}`, and
/// `/queue/{region}/000000000000/{queue}` for a region other than the home one).
fn router(state: Arc<SqsState>) -> Router {
    Router::new()
        // GET serves presigned Query URLs (the action and its parameters are all in the URL).
        .route("/", post(handle).get(handle))
        .route(&format!("/{ACCOUNT}/{{queue}}"), post(handle).get(handle))
        .route(
            &format!("/queue/{{region}}/{ACCOUNT}/{{queue}}"),
            post(handle).get(handle),
        )
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
        // As SQS: a queue URL fetched as a page names no operation.
        if method == Method::GET && queue_in_path(&uri).is_some() {
            return (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/xml")],
                "<UnknownOperationException/>",
            )
                .into_response();
        }
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
    let query_in_json = !json_protocol && query::accepts_json(&headers);
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
            } else if query_in_json {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    Json(query::render_answer_json(action, &answer, &request_id)),
                )
                    .into_response()
            } else {
                (
                    [(header::CONTENT_TYPE, "text/xml")],
                    query::render_answer(action, &answer, &request_id),
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

/// Authenticates the request from its head, then reads and verifies it, parses it into its typed
/// operation and dispatches that; the answer is the action's, for either protocol to render.
async fn serve(
    state: &SqsState,
    protocol: Protocol,
    head: OwnedHead,
    body: Body,
) -> Result<(SqsAction, SqsAnswer), SqsError> {
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
    let (caller, callable, region) = match pending {
        Some(pending) => verify_body(&keys, pending, &body)?,
        None => (
            Caller::new(Principal::Anonymous, Arc::clone(&state.anonymous)),
            CallableActions::default(),
            state.regions.home().to_owned(),
        ),
    };
    request_scope::note_caller(caller.principal());
    let base_url = state.public_url.for_request(&head.headers, "localhost");
    let protocol_name = protocol.name();
    let (named, query_params) = match protocol {
        Protocol::Json(action) => (action, None),
        Protocol::Query => {
            let (action, params) = query::parse_form(&body, head.uri.query())?;
            (action, Some(params))
        }
    };
    let action = SqsAction::named(&named);
    let label = action.map_or("unknown", SqsAction::name);
    tracing::Span::current().record("action", label);
    state.gateway.meters().sqs_request(label, protocol_name);
    let at_queue = queue_in_path(&head.uri).is_some();
    let action = match (action, query_params.is_some()) {
        (Some(action), true) if at_queue && !action.valid_at_queue_url() => {
            return Err(not_valid_here(&named));
        }
        (Some(action), _) => action,
        // The Query protocol names an unknown action as not valid for the endpoint.
        (None, true) => return Err(not_valid_here(&named)),
        (None, false) => {
            return Err(SqsError::sender(
                "UnknownOperationException",
                "The action or operation requested is invalid.",
            ));
        }
    };
    let operation = action.operation();
    if !callable.allow(action.name()) {
        return Err(GatewayError::permission_denied(format!(
            "the access key may not call {}: its actions name the ones it may",
            action.name()
        ))
        .into());
    }
    let context = Context {
        state,
        caller,
        region,
        base_url,
        operation,
        trace_header: request_trace_header(&head.headers),
    };
    let input = match query_params {
        None => Input::Json(&body),
        Some(params) => {
            let mut request = query::shape(action, &params)?;
            // Query clients may address the queue by the URL path instead of a QueueUrl parameter.
            if !request.contains_key("QueueUrl")
                && let Some(queue) = queue_in_path(&head.uri)
            {
                request.insert(
                    "QueueUrl".into(),
                    serde_json::Value::String(context.queue_url(queue)),
                );
            }
            Input::Query(request.into())
        }
    };
    let op = SqsOp::parse(action, input)?;
    // The head's bytes are the connection's read buffer, and the body is read: a receive may
    // wait 20 s without either.
    drop(head);
    drop(body);
    let answer = context.dispatch(op).await?;
    Ok((action, answer))
}

/// The request's `X-Amzn-Trace-Id`, when it is a printable header of at most 1 KiB (an X-Ray
/// header is about 100 bytes; anything else is not a trace header and is left out).
fn request_trace_header(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("x-amzn-trace-id")?.to_str().ok()?.trim();
    let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    (!value.is_empty() && value.len() <= wire::MAX_TRACE_HEADER && printable)
        .then(|| value.to_owned())
}

/// The queue a request's path names, if it names one.
fn queue_in_path(uri: &axum::http::Uri) -> Option<&str> {
    regions::queue_in_path(uri.path())
}

/// SQS's refusal of a Query action the endpoint (the service's, or a queue's) does not serve.
fn not_valid_here(action: &str) -> SqsError {
    let shown: String = action.chars().take(64).collect();
    SqsError::sender(
        "InvalidAction",
        format!("The action {shown} is not valid for this endpoint."),
    )
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
        regions: &state.regions,
    };
    let lookup = |key: &str| keys.find(key).map(|c| c.secret.clone());
    sigv4::check_head(head, state.clock.now(), scope, &keys.signing_keys, lookup)
        .map(Some)
        .map_err(|error| {
            tracing::debug!(code = error.aws_code(), "SQS request refused by SigV4");
            request_scope::note_refused("access_key", sigv4::claimed_key_id(head).as_deref());
            sigv4_error(&error)
        })
}

/// Completes the signature check with the body: the calling key, as a caller of the core, the
/// SQS actions it may call, and the region it signed for.
fn verify_body(
    keys: &SqsKeys,
    pending: PendingSignature,
    body: &[u8],
) -> Result<(Caller, CallableActions, String), SqsError> {
    let claimed = pending.access_key_id().to_owned();
    let verified = pending.verify(body).and_then(|verified| {
        keys.find(&verified.access_key_id)
            .map(|key| (key.caller(), key.callable(), verified.region))
            .ok_or(SigV4Error::UnknownKey)
    });
    verified.map_err(|error| {
        tracing::debug!(code = error.aws_code(), "SQS request refused by SigV4");
        request_scope::note_refused("access_key", Some(&claimed));
        sigv4_error(&error)
    })
}

fn sigv4_error(error: &SigV4Error) -> SqsError {
    let code = error.aws_code();
    let status = match code {
        "IncompleteSignature" | "RequestExpired" => StatusCode::BAD_REQUEST,
        _ => StatusCode::FORBIDDEN,
    };
    SqsError::sender(code, error.to_string()).with_status(status)
}

/// One request's caller and what its action needs of it.
struct Context<'a> {
    state: &'a SqsState,
    caller: Caller,
    /// The region the client signed for: its queue URLs and ARNs name it.
    region: String,
    base_url: String,
    /// What the action needs of the caller on the queue it names.
    operation: Operation,
    /// The request's `X-Amzn-Trace-Id`: the trace header of the messages it sends that carry
    /// none of their own.
    trace_header: Option<String>,
}

impl Context<'_> {
    fn gateway(&self) -> &Arc<Gateway> {
        &self.state.gateway
    }

    fn queue_url(&self, queue: &str) -> String {
        let path = self.state.regions.queue_path(&self.region, queue);
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }

    /// How this request shows and reads queue ARNs.
    fn arns(&self) -> ArnView<'_> {
        ArnView {
            made_up_region: self.gateway().made_up_arn_region(),
            client_region: &self.region,
        }
    }

    /// The gateway queue a QueueUrl names (its last path segment), checked by the core (it
    /// exists, and the caller may do the action's operation there) before the request's own
    /// details.
    fn queue_of(&self, url: Option<&str>) -> Result<String, SqsError> {
        let url = url.ok_or_else(|| SqsError::missing_parameter("QueueUrl"))?;
        let name = url
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default();
        self.gateway()
            .check_access(&self.caller, self.operation, name)?;
        Ok(name.to_owned())
    }

    /// Runs one operation. Each action's future is boxed on its own: a receive waiting 20 s holds
    /// its own state only, not room for the largest action's.
    async fn dispatch(&self, op: SqsOp) -> Result<SqsAnswer, SqsError> {
        match op {
            SqsOp::GetQueueUrl(request) => Box::pin(self.get_queue_url(request)).await,
            SqsOp::ListQueues(request) => Box::pin(self.list_queues(request)).await,
            SqsOp::GetQueueAttributes(request) => {
                Box::pin(self.get_queue_attributes(request)).await
            }
            SqsOp::SendMessage(request) => Box::pin(self.send_message(request)).await,
            SqsOp::SendMessageBatch(request) => Box::pin(self.send_message_batch(request)).await,
            SqsOp::ReceiveMessage(request) => Box::pin(self.receive_message(request)).await,
            SqsOp::DeleteMessage(request) => Box::pin(self.delete_message(request)).await,
            SqsOp::DeleteMessageBatch(request) => {
                Box::pin(self.handle_batch(request, HandleAction::Delete)).await
            }
            SqsOp::ChangeMessageVisibility(request) => {
                Box::pin(self.change_visibility(request)).await
            }
            SqsOp::ChangeMessageVisibilityBatch(request) => {
                Box::pin(self.handle_batch(request, HandleAction::ChangeVisibility)).await
            }
            SqsOp::PurgeQueue(request) => Box::pin(self.purge_queue(request)).await,
            SqsOp::CreateQueue(request) => Box::pin(self.create_queue(request)).await,
            SqsOp::DeleteQueue(request) => Box::pin(self.delete_queue(request)).await,
            SqsOp::SetQueueAttributes(request) => {
                Box::pin(self.set_queue_attributes(request)).await
            }
            SqsOp::ListDeadLetterSourceQueues(request) => {
                Box::pin(self.dead_letter_sources(request)).await
            }
            SqsOp::TagQueue(request) => Box::pin(self.tag_queue(request)).await,
            SqsOp::UntagQueue(request) => Box::pin(self.untag_queue(request)).await,
            SqsOp::ListQueueTags(request) => Box::pin(self.list_queue_tags(request)).await,
            SqsOp::StartMessageMoveTask(request) => Box::pin(self.start_move_task(request)).await,
            SqsOp::ListMessageMoveTasks(request) => Box::pin(self.list_move_tasks(request)).await,
            SqsOp::CancelMessageMoveTask(request) => Box::pin(self.cancel_move_task(request)).await,
            SqsOp::AddPermission(request) => Box::pin(self.add_permission(request)).await,
            SqsOp::RemovePermission(request) => Box::pin(self.remove_permission(request)).await,
        }
    }
}

/// What a handle batch does with each handle.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HandleAction {
    Delete,
    ChangeVisibility,
}

fn failed(id: String, error: &SqsError) -> Failed {
    Failed {
        id,
        sender_fault: error.sender,
        code: error.code.into(),
        message: error.message.clone(),
    }
}

/// SQS's refusal of an expired FIFO handle (it quotes the handle; handles stay out of errors).
fn receipt_handle_expired() -> SqsError {
    SqsError::invalid_parameter(
        "Value for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
    )
}

/// SQS's refusal of a receipt handle that is not one. It quotes the input, as SQS does, only when
/// the input does not even have a sealed handle's shape (no handle is ever quoted) and is short,
/// printable text.
fn receipt_handle_invalid(given: &str) -> SqsError {
    let quotable = !crate::core::handle::shaped_like_a_handle(given)
        && !given.is_empty()
        && given.len() <= 128
        && given
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"');
    let message = if quotable {
        format!("The input receipt handle \"{given}\" is not a valid receipt handle.")
    } else {
        "The input receipt handle is not a valid receipt handle.".to_owned()
    };
    SqsError::sender("ReceiptHandleIsInvalid", message)
}

/// SQS's refusal of a visibility change for a message deleted or received again since (SQS
/// quotes the handle; handles stay out of errors).
fn message_gone_for_visibility() -> SqsError {
    SqsError::invalid_parameter(
        "Value for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
    )
}
