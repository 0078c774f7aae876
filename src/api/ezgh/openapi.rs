//! The ezgh pull-consumer API's OpenAPI 3.1 document (served at `/openapi/ezgh.json`), made from
//! the handlers' `utoipa::path` annotations and the wire types, as the ezgh docs
//! (`../shared/seeds/000_…`) describe them: names, defaults, ranges, statuses and error bodies.

use super::error::ErrorBody;
use super::routes;
use super::wire::{
    AckRequest, HandleError, HandleResult, MessageJson, ReceiveRequest, ReceiveResponse,
    ResultsResponse, VisibilityEntry, VisibilityRequest,
};
use crate::api::common::openapi::Finish;
use utoipa::OpenApi as _;

/// The derived document; [`document`] completes it.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "ezgh queues: pull consumers",
        description = "Receive messages with a long poll, acknowledge them, and extend or release \
            them with their receipt handles. Every error answers `{\"error\": code, \"message\": \
            text}`; `429` and `503` carry `Retry-After` (seconds), `401` carries \
            `WWW-Authenticate: Bearer`.",
    ),
    paths(routes::receive, routes::acknowledge, routes::change_visibility),
    components(schemas(
        ReceiveRequest,
        AckRequest,
        VisibilityRequest,
        VisibilityEntry,
        ReceiveResponse,
        MessageJson,
        ResultsResponse,
        HandleResult,
        HandleError,
        ErrorBody,
    )),
    tags((name = "Pull consumers", description = "Receive, acknowledge, extend or release")),
)]
struct EzghDocument;

/// The ezgh document: the derived one, with its security scheme and its answers' headers
/// (`Retry-After` on `429` and `503`).
pub fn document() -> utoipa::openapi::OpenApi {
    Finish {
        bearer_key: Some("An ezgh API key: `Authorization: Bearer $EZGH_API_KEY`"),
        retry_after: &["429", "503"],
    }
    .apply(EzghDocument::openapi())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn schema(document: &Value, name: &str) -> Value {
        document["components"]["schemas"][name].clone()
    }

    /// Each documented integer range and default is the parser's: the bounds are taken, one past
    /// either is refused, and an absent field takes the default.
    #[test]
    fn documented_ranges_are_the_parsers() {
        let document = serde_json::to_value(document()).expect("serializes");
        let receive = schema(&document, "ReceiveRequest");
        for (field, low, high) in [
            ("maxMessages", 1, 10),
            ("waitSeconds", 0, 20),
            ("visibilityTimeoutSeconds", 0, 43_200),
        ] {
            let property = &receive["properties"][field];
            assert_eq!(property["minimum"], json!(low), "{field}");
            assert_eq!(property["maximum"], json!(high), "{field}");
            for (value, ok) in [
                (low, true),
                (high, true),
                (low - 1, false),
                (high + 1, false),
            ] {
                let body = json!({ field: value }).to_string();
                assert_eq!(
                    super::super::wire::parse_receive(body.as_bytes()).is_ok(),
                    ok,
                    "{body}"
                );
            }
        }
        assert_eq!(receive["properties"]["maxMessages"]["default"], json!(1));
        assert_eq!(
            super::super::wire::parse_receive(b"{}")
                .expect("defaults")
                .max_messages,
            1
        );
        assert_eq!(receive["additionalProperties"], json!(false));
        let entry = schema(&document, "VisibilityEntry");
        let timeout = &entry["properties"]["visibilityTimeoutSeconds"];
        assert_eq!(
            (timeout["minimum"].clone(), timeout["maximum"].clone()),
            (json!(0), json!(43_200))
        );
        for (seconds, ok) in [(0, true), (43_200, true), (43_201, false), (-1, false)] {
            let body = json!({ "entries": [{ "receiptHandle": "h", "visibilityTimeoutSeconds": seconds }] });
            assert_eq!(
                super::super::wire::parse_visibility(body.to_string().as_bytes()).is_ok(),
                ok,
                "{body}"
            );
        }
        let handles = &schema(&document, "AckRequest")["properties"]["receiptHandles"];
        assert_eq!(
            (handles["minItems"].clone(), handles["maxItems"].clone()),
            (json!(1), json!(10))
        );
    }

    #[test]
    fn the_document_is_openapi_3_1_with_every_route() {
        let document = serde_json::to_value(document()).expect("serializes");
        assert_eq!(document["openapi"], "3.1.0");
        let paths = document["paths"].as_object().expect("paths");
        assert_eq!(paths.len(), 3);
        assert!(
            document["components"]["securitySchemes"]["bearer"]["scheme"]
                .as_str()
                .is_some_and(|scheme| scheme.eq_ignore_ascii_case("bearer"))
        );
    }
}
