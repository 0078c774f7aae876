//! The OpenAPI documents the gateway serves at `/openapi/{ezgh,sombus,basaltic}.json`, all three at
//! once: served without credentials, the same bytes each time, and every documented operation
//! routed. Each document's own content is held to its dialect's docs in that dialect's folder
//! (`ezgh/openapi.rs`, `basaltic/openapi.rs`, `sombus/openapi.rs`).

use crate::harness::openapi::{document, resolved};
use crate::harness::{GatewayBuilder, Kind, answer};
use reqwest::{Method, StatusCode};
use serde_json::Value;

const DIALECTS: [&str; 3] = ["ezgh", "sombus", "basaltic"];

#[tokio::test]
async fn the_documents_are_served_without_credentials() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    for dialect in DIALECTS {
        let served = document(&gw, dialect).await;
        // Made once: the same bytes every time.
        assert_eq!(document(&gw, dialect).await, served, "{dialect}");
        let wrong = answer(
            gw.http
                .post(format!("{}/openapi/{dialect}.json", gw.base))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED, "{dialect}");
    }
    let unknown = gw
        .http
        .get(format!("{}/openapi/sqs.json", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    gw.stop().await;
}

/// A value for a path parameter of the document: a UUID where it says so.
fn placeholder(parameter: &Value, document: &Value) -> String {
    let schema = resolved(document, &parameter["schema"]);
    if schema["format"] == "uuid" {
        "00000000-0000-4000-8000-000000000000".to_owned()
    } else {
        "placeholder".to_owned()
    }
}

/// Every operation every document names is routed: a request to it (without a credential) is
/// answered by its dialect's handler, not by the edge's 404 for a path no route serves, nor 405.
#[tokio::test]
async fn every_documented_operation_is_routed() {
    let gw = GatewayBuilder::new(Kind::Embedded).start().await;
    let mut checked = 0;
    for dialect in DIALECTS {
        let doc = document(&gw, dialect).await;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                let mut url = path.clone();
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if parameter["in"] == "path" {
                        let name = parameter["name"].as_str().unwrap();
                        url = url.replace(&format!("{{{name}}}"), &placeholder(parameter, &doc));
                    }
                }
                assert!(
                    !url.contains('{'),
                    "{path}: a path parameter is not documented"
                );
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                let response = gw
                    .http
                    .request(method.clone(), format!("{}{url}", gw.base))
                    .send()
                    .await
                    .unwrap();
                let status = response.status();
                let body = response.text().await.unwrap();
                assert_ne!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{dialect}: {method} {path}"
                );
                assert!(
                    !(status == StatusCode::NOT_FOUND && body.contains("no such route")),
                    "{dialect}: {method} {path} is not routed: {body}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 18, "only {checked} operations documented");
    gw.stop().await;
}
