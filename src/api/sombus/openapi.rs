//! The sombus API's OpenAPI 3.1 document, served at `/openapi/sombus.json`: the token service, the
//! pull routes and the admin API, generated from the handlers' `utoipa::path` annotations and the
//! wire types' schemas (so it can't drift from the code), with each refusal status described by
//! the rules it answers (the seed's error table), their headers and an example of each rule.

use super::error::{admin_rule, rule};
use super::{admin, pull, token};
use serde_json::json;
use utoipa::Modify;
use utoipa::OpenApi as _;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::header::Header;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{OpenApi, RefOr, Response};

/// The document.
pub fn document() -> OpenApi {
    // Its security schemes are its own (`SecuritySchemes`); `Retry-After` on 429 and 503 as
    // every REST dialect documents it.
    crate::api::common::openapi::Finish {
        bearer_key: None,
        retry_after: &["429", "503"],
    }
    .apply(SombusApi::openapi())
}

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "sombus HTTPS pull API",
        description = "Your consumer app reads its own queue over HTTPS: swap your consumer \
            connection's client id and secret for an access token, receive a batch of messages, \
            handle them, and acknowledge each one. Connections, their queues and credentials are \
            managed through the admin API. Refusals use the bus's usual body, `{\"accepted\": \
            false, \"violations\": [{\"rule\", \"message\"}]}`; the token service's come in OAuth \
            2.0's shape (RFC 6749 §5.2)."
    ),
    paths(
        token::token,
        pull::receive,
        pull::acknowledge,
        pull::release,
        pull::skills,
        admin::list,
        admin::create,
        admin::show,
        admin::remove,
        admin::secrets::get_secret,
        admin::secrets::rotate_secret,
        admin::secrets::stop_old_secret,
        admin::secrets::revoke_secret,
        admin::revoke,
        admin::restore,
        admin::redrive,
        admin::audit::audit,
    ),
    // The refusal bodies the shared refusal groups (`PullRefusals`, `AdminRefusals`) refer to.
    components(schemas(
        super::wire::PullRefusal,
        super::wire::AdminRefusal,
        super::wire::ConnectionRole,
        super::wire::Overlap
    )),
    modifiers(&SecuritySchemes, &Refusals),
    tags(
        (name = "token", description = "The token service: client id and secret for an access token."),
        (name = "pull", description = "Receive, acknowledge and release your queue's messages; read your skill registrations."),
        (name = "admin", description = "Connections of a workspace and their credentials, behind admin keys."),
    )
)]
struct SombusApi;

/// The three ways callers authenticate.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "client_credentials",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Basic)
                    .description(Some(
                        "HTTP Basic with your consumer connection's client id and client secret.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "consumer_token",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some(
                        "An access token from `POST /v1/oauth/token`; it reads only its own \
                         connection's queue.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "admin_key",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An admin key (`sqs-gateway new-admin-key`), scoped to workspaces with a \
                         role: viewer, developer or admin.",
                    ))
                    .build(),
            ),
        );
    }
}

/// A refusal a route group answers: its status, its rule (or OAuth error code), what it means and
/// what to do.
struct Refusal {
    status: u16,
    rule: &'static str,
    meaning: &'static str,
    what_to_do: &'static str,
}

const fn refusal(
    status: u16,
    rule: &'static str,
    meaning: &'static str,
    what_to_do: &'static str,
) -> Refusal {
    Refusal {
        status,
        rule,
        meaning,
        what_to_do,
    }
}

/// The pull routes' refusals (the seed's error table).
const PULL: &[Refusal] = &[
    refusal(
        400,
        rule::BAD_REQUEST,
        "A query parameter or the body is malformed.",
        "Fix the request.",
    ),
    refusal(
        401,
        rule::UNAUTHENTICATED,
        "Token missing, invalid, expired or for another environment.",
        "Get a new token.",
    ),
    refusal(
        403,
        rule::NOT_REGISTERED,
        "Valid token, but not an active consumer connection's (a producer's token, or a revoked \
         or removed connection).",
        "Use your consumer connection's credentials; restore the connection if it was revoked.",
    ),
    refusal(
        403,
        rule::TENANT_MISMATCH,
        "`{tenant}` is not your workspace.",
        "Use the tenant claim of your token.",
    ),
    refusal(
        403,
        rule::NOT_OWNER,
        "`{client}` is not your connection.",
        "Use your client id.",
    ),
    refusal(
        429,
        rule::RATE_LIMITED,
        "Over the connection's request rate.",
        "Back off and retry after Retry-After.",
    ),
    refusal(
        429,
        rule::QUOTA_EXCEEDED,
        "Over the connection's daily quota (it resets at midnight UTC).",
        "Back off and retry after Retry-After.",
    ),
    refusal(
        503,
        rule::QUEUE_UNAVAILABLE,
        "Your queue is still being set up, or couldn't be reached.",
        "Retry after Retry-After.",
    ),
    refusal(
        503,
        rule::SKILLS_UNAVAILABLE,
        "Your skill registrations couldn't be read.",
        "Keep what you read last; retry after Retry-After.",
    ),
];

/// The admin API's refusals.
const ADMIN: &[Refusal] = &[
    refusal(
        400,
        admin_rule::BAD_REQUEST,
        "The workspace id, the query or the body is malformed.",
        "Fix the request.",
    ),
    refusal(
        401,
        admin_rule::UNAUTHENTICATED,
        "No admin key, or an unknown one.",
        "Send an admin key as `Authorization: Bearer <key>`.",
    ),
    refusal(
        403,
        admin_rule::FORBIDDEN,
        "The key does not manage the workspace, or its role is too low.",
        "Use a key of the workspace with the role the route needs.",
    ),
    refusal(
        404,
        admin_rule::NOT_FOUND,
        "No such connection in the workspace (or, on redrive, its dead-letter queue is gone).",
        "Check the client id.",
    ),
    refusal(
        409,
        admin_rule::CONFLICT,
        "The change does not apply to the connection as it is (a client id that exists, a \
         secret it has or lacks, a state it is in already, a redrive under way).",
        "Show the connection and pick the step that applies.",
    ),
    refusal(
        501,
        admin_rule::UNSUPPORTED,
        "The backend cannot do it.",
        "Use a backend that can.",
    ),
    refusal(
        503,
        admin_rule::UNAVAILABLE,
        "The backend or the credential store couldn't be reached.",
        "Retry after Retry-After.",
    ),
];

/// The token service's refusals (RFC 6749 §5.2 codes).
const TOKEN: &[Refusal] = &[
    refusal(
        400,
        "invalid_request",
        "`grant_type` missing or repeated, or a body that is not form-encoded.",
        "Send `grant_type=client_credentials`, form-encoded.",
    ),
    refusal(
        400,
        "unsupported_grant_type",
        "A grant other than `client_credentials`.",
        "Send `grant_type=client_credentials`.",
    ),
    refusal(
        401,
        "invalid_client",
        "HTTP Basic missing, or the client id and secret don't match an active connection.",
        "Use your consumer connection's client id and secret.",
    ),
    refusal(
        429,
        "temporarily_unavailable",
        "Too many failed token requests from your address (60 a minute), and this one presents \
         credentials.",
        "Retry after Retry-After.",
    ),
    refusal(
        503,
        "temporarily_unavailable",
        "The token service can't read the credentials now.",
        "Retry after Retry-After.",
    ),
];

/// Describes every refusal response of the document from the tables: its description, an
/// example of each rule it answers, and its challenge (`WWW-Authenticate` on 401); the token
/// service's answers also carry `Cache-Control: no-store`.
struct Refusals;

impl Modify for Refusals {
    fn modify(&self, openapi: &mut OpenApi) {
        for (path, item) in openapi.paths.paths.iter_mut() {
            let (table, oauth) = if path.starts_with("/v1/oauth/") {
                (TOKEN, true)
            } else if path.starts_with("/v1/admin/") {
                (ADMIN, false)
            } else {
                (PULL, false)
            };
            let skills = path.ends_with("/skills");
            for operation in [&mut item.get, &mut item.post, &mut item.delete]
                .into_iter()
                .flatten()
            {
                describe(operation, table, oauth, skills);
            }
        }
    }
}

fn describe(operation: &mut Operation, table: &[Refusal], oauth: bool, skills: bool) {
    for (status, response) in operation.responses.responses.iter_mut() {
        let RefOr::T(response) = response else {
            continue;
        };
        let Ok(status) = status.parse::<u16>() else {
            continue;
        };
        if status < 400 {
            if oauth {
                no_store(response);
            }
            continue;
        }
        let refusals: Vec<&Refusal> = table
            .iter()
            .filter(|refusal| refusal.status == status)
            .filter(|refusal| skills || refusal.rule != rule::SKILLS_UNAVAILABLE)
            .collect();
        response.description = refusals
            .iter()
            .map(|refusal| {
                format!(
                    "`{}`: {} {}",
                    refusal.rule, refusal.meaning, refusal.what_to_do
                )
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        if let Some(content) = response.content.get_mut("application/json") {
            for refusal in &refusals {
                let value = if oauth {
                    json!({ "error": refusal.rule, "error_description": refusal.meaning })
                } else {
                    json!({
                        "accepted": false,
                        "violations": [{ "rule": refusal.rule, "message": refusal.meaning }],
                    })
                };
                content.examples.insert(
                    refusal.rule.to_owned(),
                    ExampleBuilder::new()
                        .summary(refusal.meaning)
                        .value(Some(value))
                        .build()
                        .into(),
                );
            }
        }
        if status == 401 {
            let challenge = if oauth {
                "`Basic realm=\"sombus\", charset=\"UTF-8\"`"
            } else {
                "`Bearer realm=\"sombus\"`"
            };
            response.headers.insert(
                "WWW-Authenticate".to_owned(),
                text_header(&format!("The challenge: {challenge}.")),
            );
        }
        if oauth {
            no_store(response);
        }
    }
}

/// The token service's answers are never cached (RFC 6749 §5.1).
fn no_store(response: &mut Response) {
    response.headers.insert(
        "Cache-Control".to_owned(),
        text_header("`no-store`: token answers are never cached."),
    );
    response
        .headers
        .insert("Pragma".to_owned(), text_header("`no-cache`."));
}

fn text_header(description: &str) -> Header {
    Header::builder()
        .schema(
            ObjectBuilder::new()
                .schema_type(SchemaType::new(Type::String))
                .build(),
        )
        .description(Some(description))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::sombus::wire::{parse_handles, parse_receive_query};
    use serde_json::Value;

    fn json() -> Value {
        serde_json::to_value(document()).unwrap()
    }

    /// The document's numbers are literals in `#[param]`/`#[schema]` attributes: these hold them to
    /// the parsers, so neither can move without the other.
    #[test]
    fn the_receive_parameters_are_the_parsers() {
        let document = json();
        let parameters = document["paths"]["/v1/tenants/{tenant}/consumers/{client}/messages"]
            ["get"]["parameters"]
            .as_array()
            .unwrap()
            .clone();
        let defaults = parse_receive_query(None).unwrap();
        for parameter in &parameters {
            let name = parameter["name"].as_str().unwrap();
            let schema = &parameter["schema"];
            if name == "tenant" || name == "client" {
                continue;
            }
            if name == "attempt" {
                let longest = schema["maxLength"].as_u64().unwrap() as usize;
                let at = |value: String| parse_receive_query(Some(&format!("attempt={value}")));
                assert!(at("a".repeat(longest)).is_ok());
                assert!(at("a".repeat(longest + 1)).is_err());
                assert!(at(String::new()).is_err());
                assert!(at("a%20b".into()).is_err(), "no spaces");
                assert!(defaults.attempt_id.is_none());
                continue;
            }
            let (minimum, maximum) = (
                schema["minimum"].as_u64().unwrap(),
                schema["maximum"].as_u64().unwrap(),
            );
            let at = |value: u64| parse_receive_query(Some(&format!("{name}={value}")));
            assert!(at(minimum).is_ok() && at(maximum).is_ok(), "{name}");
            assert!(at(maximum + 1).is_err(), "{name}");
            if minimum > 0 {
                assert!(at(minimum - 1).is_err(), "{name}");
            }
            let default = u64::from(match name {
                "max" => defaults.max_messages,
                "wait" => defaults.wait_seconds.unwrap(),
                "visibility" => defaults.visibility_timeout_seconds.unwrap(),
                other => panic!("an undocumented parameter {other}"),
            });
            assert_eq!(schema["default"], default, "{name}");
        }
        assert_eq!(parameters.len(), 6);
    }

    #[test]
    fn the_handle_bodies_are_the_parsers() {
        let document = json();
        let schemas = &document["components"]["schemas"];
        let handles = |count: usize| -> Vec<String> { (0..count).map(|n| n.to_string()).collect() };
        for (schema, with_delay) in [("AckRequest", false), ("NackRequest", true)] {
            let list = &schemas[schema]["properties"]["receipt_handles"];
            let most = list["maxItems"].as_u64().unwrap() as usize;
            let body = |handles: Vec<String>| {
                serde_json::to_vec(&serde_json::json!({ "receipt_handles": handles })).unwrap()
            };
            assert!(parse_handles(&body(handles(most)), with_delay).is_ok());
            assert!(parse_handles(&body(handles(most + 1)), with_delay).is_err());
            assert!(parse_handles(&body(handles(0)), with_delay).is_err());
            assert_eq!(list["minItems"], 1);
        }
        let delay = &schemas["NackRequest"]["properties"]["delay_seconds"];
        let most = delay["maximum"].as_u64().unwrap();
        let nack = |delay: u64| {
            parse_handles(
                format!(r#"{{"receipt_handles": ["a"], "delay_seconds": {delay}}}"#).as_bytes(),
                true,
            )
        };
        assert_eq!(nack(most).unwrap().1, u32::try_from(most).unwrap());
        assert!(nack(most + 1).is_err());
        assert_eq!(
            parse_handles(br#"{"receipt_handles": ["a"]}"#, true)
                .unwrap()
                .1,
            0
        );
        assert_eq!(delay["default"], 0);
    }

    /// Every rule the tables describe is one the refusal schemas allow, and every allowed rule of
    /// a route's own (not the edge's) is described under some status.
    #[test]
    fn the_tables_and_the_rule_lists_agree() {
        use crate::api::sombus::error::{ADMIN_RULES, PULL_RULES};
        let edge = [rule::NO_ROUTE, rule::METHOD_NOT_ALLOWED];
        for (table, rules) in [(PULL, PULL_RULES), (ADMIN, ADMIN_RULES)] {
            for refusal in table {
                assert!(rules.contains(&refusal.rule), "{}", refusal.rule);
            }
            for listed in rules.iter().filter(|listed| !edge.contains(listed)) {
                assert!(
                    table.iter().any(|refusal| refusal.rule == *listed),
                    "{listed} is described"
                );
            }
        }
        let document = json();
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for (status, response) in operation["responses"].as_object().unwrap() {
                    assert!(
                        !response["description"].as_str().unwrap().is_empty(),
                        "{method} {path} {status} is described"
                    );
                    if status.as_str() >= "400" {
                        let examples = &response["content"]["application/json"]["examples"];
                        assert!(
                            examples
                                .as_object()
                                .is_some_and(|examples| !examples.is_empty()),
                            "{method} {path} {status} has examples"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn optional_bodies_are_the_object_and_not_required() {
        let document = json();
        for path in [
            "/v1/admin/workspaces/{workspace}/connections",
            "/v1/admin/workspaces/{workspace}/connections/{client}/secret/rotate",
        ] {
            let body = &document["paths"][path]["post"]["requestBody"];
            assert_ne!(body["required"], true, "{path}");
            assert!(
                body["content"]["application/json"]["schema"]["$ref"].is_string(),
                "{path}: {body}"
            );
        }
    }
}
