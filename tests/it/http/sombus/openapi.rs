//! The sombus OpenAPI document as a running gateway serves it (`/openapi/sombus.json`): OpenAPI 3.1,
//! the seed's routes with their statuses, defaults, ranges, error bodies and security schemes, and
//! every path in it routed. Also what the schemathesis contract run (tests/clients/contract/sombus.sh)
//! found and was fixed, each pinned here.

use super::support::{Bus, token_answer};
use crate::harness::{Answer, Kind, answer};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqs_gateway::credentials::api_keys;

const MESSAGES: &str = "/v1/tenants/{tenant}/consumers/{client}/messages";
const ACK: &str = "/v1/tenants/{tenant}/consumers/{client}/ack";
const NACK: &str = "/v1/tenants/{tenant}/consumers/{client}/nack";
const SKILLS: &str = "/v1/tenants/{tenant}/consumers/{client}/skills";
const TOKEN: &str = "/v1/oauth/token";
const CONNECTIONS: &str = "/v1/admin/workspaces/{workspace}/connections";

async fn document(bus: &Bus) -> Value {
    let response = bus
        .gw
        .http
        .get(format!("{}/openapi/sombus.json", bus.gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    response.json().await.unwrap()
}

/// Follows a local `$ref` (`#/components/schemas/…`), or gives the schema as it is.
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            document
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{reference} resolves"))
        }
        None => schema,
    }
}

fn operation<'a>(document: &'a Value, path: &str, method: &str) -> &'a Value {
    let operation = &document["paths"][path][method];
    assert!(operation.is_object(), "{method} {path} is documented");
    operation
}

fn statuses(operation: &Value) -> Vec<&str> {
    operation["responses"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn parameter<'a>(operation: &'a Value, name: &str) -> &'a Value {
    operation["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|parameter| parameter["name"] == name)
        .unwrap_or_else(|| panic!("parameter {name}"))
}

/// The JSON schema of an answer (or of a request body, for `requestBody`).
fn body_schema<'a>(document: &'a Value, operation: &'a Value, status: &str) -> &'a Value {
    resolve(
        document,
        &operation["responses"][status]["content"]["application/json"]["schema"],
    )
}

/// The rules of a refusal status, from its examples.
fn example_rules(operation: &Value, status: &str) -> Vec<String> {
    let examples = operation["responses"][status]["content"]["application/json"]["examples"]
        .as_object()
        .unwrap_or_else(|| panic!("{status} has examples"));
    examples
        .values()
        .map(|example| {
            let value = &example["value"];
            value["violations"][0]["rule"]
                .as_str()
                .or(value["error"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_document_is_openapi_3_1_with_the_seeds_routes_fields_defaults_and_ranges() {
    let bus = Bus::start(Kind::Embedded).await;
    let document = document(&bus).await;
    assert_eq!(document["openapi"], "3.1.0");

    // The token service: HTTP Basic, a form body of grant_type=client_credentials, OAuth errors.
    let token = operation(&document, TOKEN, "post");
    assert_eq!(statuses(token), ["200", "400", "401", "429", "503"]);
    assert_eq!(token["security"], json!([{ "client_credentials": [] }]));
    let form = resolve(
        &document,
        &token["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"],
    );
    assert_eq!(form["required"], json!(["grant_type"]));
    assert_eq!(
        resolve(&document, &form["properties"]["grant_type"])["enum"],
        json!(["client_credentials"])
    );
    let issued = body_schema(&document, token, "200");
    assert_eq!(
        issued["required"],
        json!(["access_token", "token_type", "expires_in"])
    );
    for status in ["400", "401", "429", "503"] {
        let refusal = body_schema(&document, token, status);
        assert_eq!(refusal["required"], json!(["error", "error_description"]));
    }
    assert_eq!(
        example_rules(token, "400"),
        ["invalid_request", "unsupported_grant_type"]
    );
    assert_eq!(example_rules(token, "401"), ["invalid_client"]);
    assert!(token["responses"]["401"]["headers"]["WWW-Authenticate"].is_object());
    assert!(token["responses"]["200"]["headers"]["Cache-Control"].is_object());

    // Receive: the seed's query table.
    let receive = operation(&document, MESSAGES, "get");
    assert_eq!(
        statuses(receive),
        ["200", "400", "401", "403", "429", "503"]
    );
    assert_eq!(receive["security"], json!([{ "consumer_token": [] }]));
    for (name, default, minimum, maximum) in [
        ("max", 10, 1, 10),
        ("wait", 20, 0, 20),
        ("visibility", 60, 0, 43_200),
    ] {
        let schema = &parameter(receive, name)["schema"];
        assert_eq!(schema["type"], "integer", "{name}");
        assert_eq!(
            (&schema["default"], &schema["minimum"], &schema["maximum"]),
            (&json!(default), &json!(minimum), &json!(maximum)),
            "{name}"
        );
        assert_eq!(parameter(receive, name)["required"], false);
    }
    let attempt = &parameter(receive, "attempt")["schema"];
    assert_eq!(
        (&attempt["minLength"], &attempt["maxLength"]),
        (&json!(1), &json!(128))
    );
    assert!(attempt.get("default").is_none());
    let received = body_schema(&document, receive, "200");
    let message = resolve(&document, &received["properties"]["messages"]["items"]);
    for field in [
        "receipt_handle",
        "message_type",
        "correlation_id",
        "topic",
        "producer_id",
        "receive_count",
        "enqueued_at",
        "envelope",
    ] {
        assert!(
            message["required"]
                .as_array()
                .unwrap()
                .contains(&json!(field)),
            "{field} is always in a message"
        );
    }
    assert_eq!(message["properties"]["enqueued_at"]["format"], "date-time");
    assert_eq!(message["properties"]["receive_count"]["minimum"], 1);

    // Ack and nack: 1 to 10 distinct handles; nack's delay 0 to 43,200, default 0.
    for (path, done, with_delay) in [(ACK, "acked", false), (NACK, "nacked", true)] {
        let settle = operation(&document, path, "post");
        assert_eq!(statuses(settle), ["200", "400", "401", "403", "429", "503"]);
        let request = resolve(
            &document,
            &settle["requestBody"]["content"]["application/json"]["schema"],
        );
        let handles = &request["properties"]["receipt_handles"];
        assert_eq!(
            (
                &handles["minItems"],
                &handles["maxItems"],
                &handles["uniqueItems"]
            ),
            (&json!(1), &json!(10), &json!(true)),
            "{path}"
        );
        assert_eq!(request["additionalProperties"], false);
        let delay = &request["properties"]["delay_seconds"];
        if with_delay {
            assert_eq!(
                (&delay["default"], &delay["minimum"], &delay["maximum"]),
                (&json!(0), &json!(0), &json!(43_200))
            );
        } else {
            assert!(delay.is_null(), "ack takes no delay");
        }
        let answered = body_schema(&document, settle, "200");
        assert_eq!(answered["required"], json!([done, "failed"]));
        let failed = resolve(&document, &answered["properties"]["failed"]["items"]);
        assert_eq!(
            failed["required"],
            json!(["receipt_handle", "code", "message"])
        );
        assert_eq!(
            resolve(&document, &failed["properties"]["code"])["enum"],
            json!(["ReceiptHandleIsInvalid"])
        );
    }

    // The seed's error table: the bus's body, each rule under its status.
    for path in [MESSAGES, ACK, NACK, SKILLS] {
        let method = if path == MESSAGES || path == SKILLS {
            "get"
        } else {
            "post"
        };
        let pull = operation(&document, path, method);
        let refusal = body_schema(&document, pull, "403");
        assert_eq!(refusal["required"], json!(["accepted", "violations"]));
        assert_eq!(refusal["properties"]["accepted"]["enum"], json!([false]));
        let violation = resolve(&document, &refusal["properties"]["violations"]["items"]);
        assert_eq!(violation["required"], json!(["rule", "message"]));
        assert_eq!(example_rules(pull, "400"), ["pull.bad_request"]);
        assert_eq!(example_rules(pull, "401"), ["producer.unauthenticated"]);
        assert_eq!(
            example_rules(pull, "403"),
            [
                "consumer.not_owner",
                "producer.not_registered",
                "tenant.mismatch"
            ]
        );
        assert_eq!(
            example_rules(pull, "429"),
            ["quota.exceeded", "rate.limited"]
        );
        let unavailable = example_rules(pull, "503");
        assert!(unavailable.contains(&"consumer.queue_unavailable".to_owned()));
        assert_eq!(
            unavailable.contains(&"skills.unavailable".to_owned()),
            path == SKILLS,
            "{path}"
        );
        assert!(pull["responses"]["401"]["headers"]["WWW-Authenticate"].is_object());
        for status in ["429", "503"] {
            assert!(pull["responses"][status]["headers"]["Retry-After"].is_object());
        }
    }

    // The three security schemes.
    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(
        (
            &schemes["client_credentials"]["type"],
            &schemes["client_credentials"]["scheme"]
        ),
        (&json!("http"), &json!("basic"))
    );
    assert_eq!(schemes["consumer_token"]["scheme"], "bearer");
    assert_eq!(schemes["consumer_token"]["bearerFormat"], "JWT");
    assert_eq!(schemes["admin_key"]["scheme"], "bearer");

    // The admin API: a connection's defaults (attempt limit 5, FIFO) and the rotation overlaps.
    let create = operation(&document, CONNECTIONS, "post");
    assert_eq!(statuses(create), ["201", "400", "401", "403", "409", "503"]);
    assert_eq!(create["security"], json!([{ "admin_key": [] }]));
    assert_ne!(
        create["requestBody"]["required"], true,
        "the body may be empty"
    );
    let new = resolve(
        &document,
        &create["requestBody"]["content"]["application/json"]["schema"],
    );
    let attempt_limit = &new["properties"]["attempt_limit"];
    assert_eq!(
        (
            &attempt_limit["default"],
            &attempt_limit["minimum"],
            &attempt_limit["maximum"]
        ),
        (&json!(5), &json!(1), &json!(1000))
    );
    assert_eq!(new["properties"]["fifo"]["default"], true);
    let rotate = operation(
        &document,
        "/v1/admin/workspaces/{workspace}/connections/{client}/secret/rotate",
        "post",
    );
    let overlap = &resolve(
        &document,
        &rotate["requestBody"]["content"]["application/json"]["schema"],
    )["properties"]["overlap"];
    assert_eq!(overlap["default"], "24h");
    let choices = overlap["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|choice| resolve(&document, choice)["enum"].as_array())
        .unwrap();
    assert_eq!(
        choices,
        &vec![json!("24h"), json!("3d"), json!("1h"), json!("none")]
    );
    let refusal = body_schema(&document, create, "409");
    let violation = resolve(&document, &refusal["properties"]["violations"]["items"]);
    assert!(
        violation["properties"]["rule"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("admin.conflict"))
    );
}

/// The path with each `{parameter}` filled in.
fn filled(path: &str) -> String {
    path.replace("{tenant}", "ws-routed")
        .replace("{workspace}", "ws-routed")
        .replace("{client}", "c-routed")
}

#[tokio::test]
async fn every_path_of_the_document_is_routed_and_refuses_in_its_documented_shape() {
    let bus = Bus::start(Kind::Embedded).await;
    let document = document(&bus).await;
    let paths = document["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 15, "{:?}", paths.keys().collect::<Vec<_>>());
    let mut operations = 0;
    for (path, item) in paths {
        for (method, operation) in item.as_object().unwrap() {
            operations += 1;
            let url = format!("{}{}", bus.gw.base, filled(path));
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            // No credentials: every operation answers 401 (not the edge's 404 or 405).
            let refused: Answer =
                answer(bus.gw.http.request(method, &url).send().await.unwrap()).await;
            assert_eq!(
                refused.status,
                StatusCode::UNAUTHORIZED,
                "{path}: {}",
                refused.body
            );
            // In the body its 401 documents.
            let schema = body_schema(&document, operation, "401");
            for field in schema["required"].as_array().unwrap() {
                assert!(
                    refused.body.get(field.as_str().unwrap()).is_some(),
                    "{path}: {field} in {}",
                    refused.body
                );
            }
            if let Some(violations) = schema["properties"].get("violations") {
                let rules = &resolve(&document, &violations["items"])["properties"]["rule"]["enum"];
                assert!(
                    rules
                        .as_array()
                        .unwrap()
                        .contains(&refused.body["violations"][0]["rule"]),
                    "{path}: {}",
                    refused.body
                );
            }
        }
    }
    assert_eq!(operations, 17);
    // A path the document doesn't have is the edge's 404 (so the answers above were the routes').
    let unknown = answer(
        bus.gw
            .http
            .get(format!(
                "{}/v1/tenants/ws-routed/consumers/c-routed/elsewhere",
                bus.gw.base
            ))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.body["violations"][0]["rule"], "route.not_found");
}

/// Found by schemathesis (missing_required_header): past the address's budget of failed token
/// requests, a request without any credentials answered 429. It guesses nothing, so it is told how
/// to authenticate (401 with the Basic challenge); requests that present credentials get 429.
#[tokio::test]
async fn past_the_failure_budget_a_token_request_without_credentials_is_still_challenged() {
    let bus = Bus::start(Kind::Embedded).await;
    let url = format!("{}/v1/oauth/token", bus.gw.base);
    for _ in 0..60 {
        assert_eq!(
            token_answer(&bus.gw, "nobody", "sbs_guess").await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let guess = token_answer(&bus.gw, "nobody", "sbs_guess").await;
    assert_eq!(guess.status, StatusCode::TOO_MANY_REQUESTS);
    let bare = answer(
        bus.gw
            .http
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("grant_type=client_credentials")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (bare.status, bare.body["error"].as_str()),
        (StatusCode::UNAUTHORIZED, Some("invalid_client"))
    );
    assert!(
        bare.headers["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
}

/// The document says what the routes take: a connection's name is 1 to 256 characters (the
/// document's `maxLength` counts characters, so the route does too), and a workspace id is 1 to 36
/// letters, digits or `-` on every admin route (a key of every workspace, `*`, gets 400 for another).
#[tokio::test]
async fn admin_routes_take_what_the_document_says() {
    let everywhere = api_keys::generate_key();
    let entry = format!(
        "[[sombus.admin_keys]]\nid = \"{}\"\nname = \"everywhere\"\nhash = \"{}\"\nworkspaces = [\"*\"]\nrole = \"admin\"\n",
        everywhere.id, everywhere.hash
    );
    let bus = Bus::start_with(Kind::Embedded, &entry).await;
    let long_name = "é".repeat(256);
    let created = bus
        .admin_call(
            reqwest::Method::POST,
            "/connections",
            &bus.admin,
            Some(json!({ "name": long_name })),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let too_long = bus
        .admin_call(
            reqwest::Method::POST,
            "/connections",
            &bus.admin,
            Some(json!({ "name": "é".repeat(257) })),
        )
        .await;
    assert_eq!(too_long.status, StatusCode::BAD_REQUEST);
    assert_eq!(too_long.body["violations"][0]["rule"], "admin.bad_request");

    let list = |workspace: &str| {
        bus.gw
            .http
            .get(format!(
                "{}/v1/admin/workspaces/{workspace}/connections",
                bus.gw.base
            ))
            .bearer_auth(&everywhere.key)
            .send()
    };
    let fine = answer(list(&bus.workspace).await.unwrap()).await;
    assert_eq!(fine.status, StatusCode::OK);
    assert_eq!(fine.body["connections"].as_array().unwrap().len(), 1);
    let malformed = answer(list("not_a_workspace").await.unwrap()).await;
    assert_eq!(
        (malformed.status, &malformed.body["violations"][0]["rule"]),
        (StatusCode::BAD_REQUEST, &json!("admin.bad_request"))
    );
    // A key that doesn't manage it still gets 403 first (nothing about the id is told).
    let foreign = bus
        .gw
        .http
        .get(format!(
            "{}/v1/admin/workspaces/not_a_workspace/connections",
            bus.gw.base
        ))
        .bearer_auth(&bus.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
}

/// Found by schemathesis (positive_data_acceptance, seed 77): a redrive while an earlier one of the
/// connection was still moving messages answered 400 `admin.bad_request` (the backend's "a message
/// move task is already running"), though the request was well formed; the document's 409
/// `admin.conflict` is the answer: the step doesn't apply to the connection as it is.
#[tokio::test]
async fn a_redrive_while_one_is_under_way_is_a_conflict() {
    use sqs_gateway::core::access::{Action, Caller, Grants, Principal};
    use sqs_gateway::core::model::OutgoingMessage;
    use std::sync::Arc;

    let bus = Bus::start(Kind::Embedded).await;
    let created = bus.create(json!({ "client_id": "redriven" })).await;
    let shown = bus
        .admin_call(
            reqwest::Method::GET,
            "/connections/redriven",
            &bus.viewer,
            None,
        )
        .await;
    let dead_letters = shown.body["dead_letter_queue"].as_str().unwrap().to_owned();
    // Dead letters, and a slow move task already running (one message a second).
    let caller = Caller::new(
        Principal::Token("test".into()),
        Arc::new(
            Grants::none()
                .allow(&dead_letters, [Action::Send, Action::Redrive])
                .allow(&created.queue, [Action::Redrive]),
        ),
    );
    let messages: Vec<OutgoingMessage> = (0..5)
        .map(|n| OutgoingMessage {
            body: format!("{{\"n\": {n}}}"),
            group_id: Some(format!("story-{n}")),
            deduplication_id: Some(format!("dead-{n}")),
            ..Default::default()
        })
        .collect();
    let sent = bus
        .gw
        .gateway
        .send(&caller, &dead_letters, &messages)
        .await
        .unwrap();
    assert!(sent.iter().all(Result::is_ok));
    bus.gw
        .gateway
        .start_redrive(&caller, &dead_letters, Some(&created.queue), Some(1))
        .await
        .unwrap();

    let again = bus.step("redriven", "/redrive", None).await;
    assert_eq!(
        (again.status, &again.body["violations"][0]["rule"]),
        (StatusCode::CONFLICT, &json!("admin.conflict")),
        "{}",
        again.body
    );
}
