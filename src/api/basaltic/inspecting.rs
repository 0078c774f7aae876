//! Reading a queue without a lease, and acting on what was read: inspection pages (with filters
//! the server applies, so a search covers the whole queue, page by page), exports of what a filter
//! keeps as JSON lines, and moves of chosen messages to another queue. The sqs backend can do
//! none of them (SQS cannot read without a lease): `501 unsupported`, never a receive in disguise.

use super::error::ErrorBody;
use super::wire::{
    self, InspectedMessages, MoveFailure, MoveFailureCode, MoveResults, MovedMessage,
};
use super::{BODY_LIMIT, BasalticError, BasalticState};
use crate::api::common::read_body;
use crate::core::message_filter::{Expression, MessageFilter};
use crate::core::model::MoveOutcome;
use crate::core::{ErrorKind, GatewayError};
use axum::Json;
use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::sync::Arc;

type QueuePath = Result<Path<String>, PathRejection>;

/// The most messages an export answers at once.
pub(super) const MOST_EXPORTED: usize = 1_000;
/// The header an export's next page starts after (absent on the last).
pub(super) const EXPORT_NEXT: &str = "export-next";
/// The header saying how many messages an export examined.
pub(super) const EXPORT_SCANNED: &str = "export-scanned";

pub(super) fn routes() -> axum::Router<Arc<BasalticState>> {
    axum::Router::new()
        .route("/v1/queues/{queue_id}/messages/export", get(export))
        .route("/v1/queues/{queue_id}/messages/move", post(move_messages))
}

/// What an inspection or an export reads: from where, how many, how far, and what it keeps.
#[derive(Debug)]
struct Reading {
    after: Option<u64>,
    max: usize,
    scan: usize,
    filter: MessageFilter,
}

/// Which read a query is for: its page parameter, its bounds and its default.
struct ReadKind {
    page: &'static str,
    most: usize,
}

const INSPECTION: ReadKind = ReadKind {
    page: "max_messages",
    most: 10,
};
const EXPORT: ReadKind = ReadKind {
    page: "limit",
    most: MOST_EXPORTED,
};

/// Reads a query: the page's size (`max_messages` 1–10, or an export's `limit` 1–1000, each at
/// most by default), `after` (a page's `next`), `scan` (1–10,000 messages examined, default 1,000
/// for an inspection and 10,000 for an export), and the filter: `contains` (text in the body,
/// any case), `message_id` (its beginning), `attribute` (`name` or `name=value`), `where` (a
/// jq-like expression over a JSON body). Each at most once.
fn reading(query: Option<&str>, kind: &ReadKind) -> Result<Reading, GatewayError> {
    let refused = |name: &str, rule: &str| GatewayError::out_of_range(format!("{name} {rule}"));
    let mut max = None;
    let mut after = None;
    let mut scan = None;
    let mut filter = MessageFilter::default();
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if !seen.insert(name.to_string()) {
            return Err(refused(&name, "is given twice"));
        }
        match name.as_ref() {
            page if page == kind.page => {
                let rule = format!("must be 1 to {}", kind.most);
                max = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=kind.most).contains(n))
                        .ok_or_else(|| refused(page, &rule))?,
                );
            }
            "after" => {
                after = Some(
                    value
                        .parse::<u64>()
                        .map_err(|_| refused("after", "must be a page's next"))?,
                );
            }
            "scan" => {
                let most = crate::core::gateway::MOST_SCANNED;
                scan = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=most).contains(n))
                        .ok_or_else(|| refused("scan", &format!("must be 1 to {most}")))?,
                );
            }
            "contains" => {
                filter.body_contains = Some(non_empty("contains", &value)?);
            }
            "message_id" => {
                filter.message_id = Some(non_empty("message_id", &value)?);
            }
            "attribute" => {
                let given = non_empty("attribute", &value)?;
                filter.attribute = Some(match given.split_once('=') {
                    Some((name, wanted)) => (name.to_owned(), Some(wanted.to_owned())),
                    None => (given, None),
                });
            }
            "where" => {
                let expression = Expression::parse(&value)
                    .map_err(|rule| GatewayError::invalid_request(format!("where: {rule}")))?;
                filter.expression = Some(expression);
            }
            _ => {
                return Err(GatewayError::out_of_range(format!(
                    "the query parameters are {}, after, scan, contains, message_id, attribute and where",
                    kind.page
                )));
            }
        }
    }
    let default_scan = if kind.page == EXPORT.page {
        crate::core::gateway::MOST_SCANNED
    } else {
        1_000
    };
    Ok(Reading {
        after,
        max: max.unwrap_or(kind.most),
        scan: scan.unwrap_or(default_scan),
        filter,
    })
}

/// A filter's text: 1 to 256 characters.
fn non_empty(name: &str, value: &str) -> Result<String, GatewayError> {
    let chars = value.chars().count();
    if chars == 0 || chars > 256 {
        return Err(GatewayError::out_of_range(format!(
            "{name} must be 1 to 256 characters"
        )));
    }
    Ok(value.to_owned())
}

impl BasalticState {
    /// The page of the target's queue that `reading` asks for.
    async fn read_page(
        &self,
        target: &super::Target,
        reading: &Reading,
    ) -> Result<crate::core::gateway::MatchingPage, GatewayError> {
        self.gateway
            .peek_matching(
                &target.caller,
                &target.queue,
                reading.after,
                reading.max,
                &reading.filter,
                reading.scan,
            )
            .await
            .map_err(unsupported_here)
    }
}

/// SQS's answer to a read without a lease, said for this API.
fn unsupported_here(error: GatewayError) -> GatewayError {
    if error.kind == ErrorKind::Unsupported {
        GatewayError::new(
            ErrorKind::Unsupported,
            "inspecting needs a backend that reads messages without a lease; Amazon SQS \
             (the sqs backend) cannot, and a receive would change visibility and receive counts",
        )
    } else {
        error
    }
}

/// `GET /v1/queues/{id}/messages`: a page of messages read without a lease, filtered.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/messages",
    operation_id = "InspectMessages",
    tag = "Queues",
    description = "Reads messages without a lease: their visibility and receive counts do not change. Takes `inspect`. With a filter the server reads on until it has a page of matches, the queue ends, or `scan` messages (or 16 MiB of bodies) were examined: `next` goes on from there, and `scanned` says how many were.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("max_messages" = Option<u32>, Query, minimum = 1, maximum = 10, description = "The most messages to answer (default 10)"),
        ("after" = Option<String>, Query, pattern = "^[0-9]{1,20}$", description = "Read the messages after this one: the `next` of the page before"),
        ("scan" = Option<u32>, Query, minimum = 1, maximum = 10000, description = "The most messages to examine (default 1,000)"),
        ("contains" = Option<String>, Query, min_length = 1, max_length = 256, description = "Only messages whose body holds this text (any case)"),
        ("message_id" = Option<String>, Query, min_length = 1, max_length = 256, description = "Only messages whose id starts with this"),
        ("attribute" = Option<String>, Query, min_length = 1, max_length = 256, description = "Only messages with this attribute: `name`, or `name=value` (a Binary value in standard base64)"),
        ("where" = Option<String>, Query, min_length = 1, max_length = 256, pattern = r#"^\.([A-Za-z_][A-Za-z0-9_]*)?(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,9}\]|\["[^"\\\x00-\x1f]*"\]){0,15}( *(==|!=|<=|>=|<|>) *("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null)| +contains +("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null))? *$"#, description = "Only messages whose body is JSON and holds this: a path from `.` (`.order.lines[0][\"sku\"]`), alone (there, and neither null nor false) or with `==`, `!=`, `<`, `<=`, `>`, `>=` or `contains` and a JSON string, number, true, false or null"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Up to `max_messages` messages", body = InspectedMessages),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 501, description = "The gateway's backend (Amazon SQS) cannot read messages without a lease (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn inspect(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<InspectedMessages>, BasalticError> {
    let target = state.target(&headers, path).await?;
    let reading = reading(query.as_deref(), &INSPECTION)?;
    let page = state.read_page(&target, &reading).await?;
    Ok(Json(InspectedMessages {
        messages: page.messages.into_iter().map(wire::inspected).collect(),
        next: page.next.map(|position| position.to_string()),
        scanned: page.scanned,
    }))
}

/// `GET /v1/queues/{id}/messages/export`: what a filter keeps, as JSON lines.
#[utoipa::path(
    get,
    path = "/v1/queues/{queue_id}/messages/export",
    operation_id = "ExportMessages",
    tag = "Queues",
    description = "The messages a filter keeps (every message without one), read without a lease, as JSON lines (`application/x-ndjson`, one `ExportedMessage` a line): at most `limit`, examining at most `scan` messages or 16 MiB of bodies. The `export-next` header, when present, is the `after` of the next request; `export-scanned` says how many were examined. Takes `inspect`; a queue listed in `basaltic.export_disabled` refuses with 403.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "The most messages to answer (default 1,000)"),
        ("after" = Option<String>, Query, pattern = "^[0-9]{1,20}$", description = "Read the messages after this one: the `export-next` of the request before"),
        ("scan" = Option<u32>, Query, minimum = 1, maximum = 10000, description = "The most messages to examine (default 10,000)"),
        ("contains" = Option<String>, Query, min_length = 1, max_length = 256, description = "As inspection's"),
        ("message_id" = Option<String>, Query, min_length = 1, max_length = 256, description = "As inspection's"),
        ("attribute" = Option<String>, Query, min_length = 1, max_length = 256, description = "As inspection's"),
        ("where" = Option<String>, Query, min_length = 1, max_length = 256, pattern = r#"^\.([A-Za-z_][A-Za-z0-9_]*)?(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,9}\]|\["[^"\\\x00-\x1f]*"\]){0,15}( *(==|!=|<=|>=|<|>) *("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null)| +contains +("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null))? *$"#, description = "As inspection's"),
    ),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "JSON lines, one message each", content_type = "application/x-ndjson", body = wire::ExportedMessage),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 501, description = "The gateway's backend (Amazon SQS) cannot read messages without a lease (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
    ),
)]
pub(super) async fn export(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, BasalticError> {
    let target = state.target(&headers, path).await?;
    let reading = reading(query.as_deref(), &EXPORT)?;
    if state.export_disabled(&target.queue) {
        return Err(GatewayError::permission_denied(
            "exporting this queue's messages is turned off (basaltic.export_disabled)",
        )
        .into());
    }
    let page = state.read_page(&target, &reading).await?;
    let mut lines = Vec::new();
    for message in page.messages {
        serde_json::to_writer(&mut lines, &wire::exported(message))
            .map_err(|error| GatewayError::internal("an export line").with_source(error))?;
        lines.push(b'\n');
    }
    let mut response = (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        )],
        lines,
    )
        .into_response();
    let answered = response.headers_mut();
    answered.insert(EXPORT_SCANNED, HeaderValue::from(page.scanned));
    if let Some(next) = page.next {
        answered.insert(EXPORT_NEXT, HeaderValue::from(next));
    }
    Ok(response)
}

/// `POST /v1/queues/{id}/messages/move`: moves messages chosen by inspection.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue_id}/messages/move",
    operation_id = "MoveMessages",
    tag = "Queues",
    description = "Moves the messages named (by id and position, as inspection gives them) to another queue of the same type: each leaves this queue and enters the destination at once, so a move that stops half-way has moved some and left the others, never lost or doubled one. A moved message keeps its id, body and attributes and starts again there: received 0 times, visible now. One held by a consumer is left (`in_flight`), one gone is `not_found`. Takes `manage_queues` here and `send` on the destination.",
    params(
        ("queue_id" = wire::QueueId, Path, description = "The queue's UUID"),
    ),
    request_body(content = wire::MoveRequest, content_type = "application/json"),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "What became of each message", body = MoveResults),
        (status = 400, description = "The request is not valid (`invalid_argument`)", body = ErrorBody),
        (status = 501, description = "The gateway's backend (Amazon SQS) cannot name messages without receiving them (`unsupported`)", body = ErrorBody),
        super::error::KeyRefusals,
        super::error::QueueRefusals,
        super::error::BodyRefusals,
    ),
)]
pub(super) async fn move_messages(
    State(state): State<Arc<BasalticState>>,
    path: QueuePath,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<MoveResults>, BasalticError> {
    let target = state.target(&headers, path).await?;
    if !target.key.has_permission("manage_queues", &target.id) {
        return Err(GatewayError::permission_denied(
            "moving messages out of a queue takes the manage_queues permission on it",
        )
        .into());
    }
    let (destination_id, messages) = wire::parse_move(&read_body(body, BODY_LIMIT).await?)?;
    let destination = state.queue_of(&target.key, &destination_id).await?;
    let id = super::canonical_id(&destination_id).unwrap_or_default();
    if !target.key.has_permission("send", &id) {
        return Err(GatewayError::permission_denied(
            "a move's destination takes the send permission on it",
        )
        .into());
    }
    let caller = target.key.caller_on_each(&[
        (target.id.clone(), target.queue.clone()),
        (id, destination.clone()),
    ]);
    let outcomes = state
        .gateway
        .move_messages(&caller, &target.queue, &destination, &messages)
        .await
        .map_err(|error| {
            if error.kind == ErrorKind::Unsupported {
                GatewayError::new(
                    ErrorKind::Unsupported,
                    "moving chosen messages needs a backend that reads them without a lease; \
                     Amazon SQS (the sqs backend) cannot (a dead-letter queue's messages move \
                     with a redrive)",
                )
            } else {
                error
            }
        })?;
    let mut results = MoveResults::default();
    for (message, outcome) in messages.into_iter().zip(outcomes) {
        match outcome {
            MoveOutcome::Moved => results.moved.push(MovedMessage {
                message_id: message.message_id,
            }),
            MoveOutcome::NotFound => results.failed.push(MoveFailure {
                message_id: message.message_id,
                code: MoveFailureCode::NotFound,
                message: "not in the queue at that position any more (moved, deleted or expired)"
                    .into(),
            }),
            MoveOutcome::InFlight => results.failed.push(MoveFailure {
                message_id: message.message_id,
                code: MoveFailureCode::InFlight,
                message: "a consumer holds it: its lease has not ended".into(),
            }),
        }
    }
    Ok(Json(results))
}
