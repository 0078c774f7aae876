//! The web console: a build-free page (HTML, script modules, one style sheet) embedded in the
//! binary and served at `/console`. It is a browser client of the basaltic API and nothing more:
//! every action is that API's call with the signed-in key, so it has no back door. Its answers
//! forbid what the page never needs (a strict Content-Security-Policy: no inline script or style,
//! no other origin, no framing, no form posts) and are never cached.

use super::own_paths::CONSOLE;
use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use std::sync::Arc;

/// What the console's pages may load and do: their own script, style sheet and API, nothing else.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const HTML: &str = "text/html; charset=utf-8";
const SCRIPT: &str = "text/javascript; charset=utf-8";
const STYLE: &str = "text/css; charset=utf-8";

/// One file of the console: the path it is served at, its type and its text.
#[derive(Debug, Clone, Copy)]
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

/// The file `src/console/assets/<file>`, served at `/console/<file>`.
macro_rules! asset {
    ($file:literal, $content_type:expr) => {
        Asset {
            path: concat!("/console/", $file),
            content_type: $content_type,
            body: include_str!(concat!("../console/assets/", $file)),
        }
    };
}

/// Every file of the console, embedded so that the one binary serves it offline: the page, its
/// style sheet, its entry module (`app.js`) and the modules it imports (`js/`). A path not listed
/// is not routed, so it gets the gateway's usual 404. The tests check that every module the entry
/// imports, directly or not, is listed, and that nothing listed is left unused.
static ASSETS: &[Asset] = &[
    Asset {
        path: "/console/",
        content_type: HTML,
        body: include_str!("../console/assets/index.html"),
    },
    asset!("app.css", STYLE),
    asset!("app.js", SCRIPT),
    asset!("js/api.js", SCRIPT),
    asset!("js/audit.js", SCRIPT),
    asset!("js/charts.js", SCRIPT),
    asset!("js/clock.js", SCRIPT),
    asset!("js/confirm.js", SCRIPT),
    asset!("js/create-queue.js", SCRIPT),
    asset!("js/dialog.js", SCRIPT),
    asset!("js/dom.js", SCRIPT),
    asset!("js/export.js", SCRIPT),
    asset!("js/format.js", SCRIPT),
    asset!("js/import.js", SCRIPT),
    asset!("js/messages.js", SCRIPT),
    asset!("js/metrics.js", SCRIPT),
    asset!("js/move.js", SCRIPT),
    asset!("js/notices.js", SCRIPT),
    asset!("js/page.js", SCRIPT),
    asset!("js/pause.js", SCRIPT),
    asset!("js/queue-list.js", SCRIPT),
    asset!("js/queue-page.js", SCRIPT),
    asset!("js/receive.js", SCRIPT),
    asset!("js/redrive.js", SCRIPT),
    asset!("js/router.js", SCRIPT),
    asset!("js/rules.js", SCRIPT),
    asset!("js/scope.js", SCRIPT),
    asset!("js/send.js", SCRIPT),
    asset!("js/session.js", SCRIPT),
    asset!("js/settings.js", SCRIPT),
    asset!("js/settings-edit.js", SCRIPT),
    asset!("js/signin.js", SCRIPT),
    asset!("js/subscriptions.js", SCRIPT),
];

/// The console's routes (no state: the assets are constants).
#[derive(Debug, Clone, Copy, Default)]
pub struct Console;

/// One asset with the headers every console answer carries.
fn serve(asset: &'static Asset) -> Response {
    guarded(
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            )],
            asset.body,
        )
            .into_response(),
    )
}

/// `answer` with the headers every console answer carries.
fn guarded(answer: Response) -> Response {
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
            (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        ],
        answer,
    )
        .into_response()
}

impl crate::api::common::Dialect for Console {
    fn edge(&self) -> &'static dyn crate::api::common::EdgeShape {
        &CONSOLE
    }

    fn router(self: Arc<Self>) -> Router {
        let redirect = Router::new()
            // Relative asset links resolve under `/console/` only: send the bare path there.
            .route(
                "/console",
                get(|| async { guarded(Redirect::permanent("/console/").into_response()) }),
            );
        ASSETS
            .iter()
            .fold(redirect, |router, asset| {
                router.route(asset.path, get(move || async move { serve(asset) }))
            })
            .method_not_allowed_fallback(|request| {
                crate::api::common::method_not_allowed(&CONSOLE, request)
            })
    }
}

/// A browser that opens the gateway's root (`GET /` asking for HTML, with no query and no
/// credential: never an SQS client's request) is sent to the console instead of an SQS error.
pub async fn send_browsers_to_the_console(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let wants_page = request.method() == axum::http::Method::GET
        && request.uri().path() == "/"
        && request.uri().query().is_none()
        && !request.headers().contains_key(header::AUTHORIZATION)
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|accept| accept.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"));
    if wants_page {
        return Redirect::to("/console/").into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::common::Dialect;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use std::collections::BTreeSet;

    fn served(path: &str) -> Option<&'static Asset> {
        ASSETS.iter().find(|asset| asset.path == path)
    }

    /// The quoted text of `line` that ends last (`'…'` or `"…"`), if it has one.
    fn last_quoted(line: &str) -> Option<&str> {
        let end = line.rfind(['\'', '"'])?;
        let quote = line[end..].chars().next()?;
        let start = line[..end].rfind(quote)?;
        Some(&line[start + 1..end])
    }

    /// The specifiers a module's `import … from '…'` (and `import '…'`, `export … from '…'`)
    /// statements name. Each must be on one line: one split over lines would hide its module
    /// from this check, so a line that opens such a statement and names none fails the test.
    fn imports(module: &Asset) -> Vec<&'static str> {
        let body = module.body;
        body.lines()
            .map(str::trim_start)
            .filter(|line| {
                line.starts_with("import ")
                    || line.starts_with("import{")
                    || line.starts_with("export {")
                    || line.starts_with("export *")
            })
            .filter(|line| line.starts_with("import") || line.contains(" from "))
            .map(|line| {
                last_quoted(line).unwrap_or_else(|| {
                    panic!(
                        "{}: `{line}`: write each import on one line, ending with its module",
                        module.path
                    )
                })
            })
            .collect()
    }

    /// `specifier` resolved against the module served at `from`, as a browser resolves it.
    fn resolve(from: &str, specifier: &str) -> String {
        assert!(
            specifier.starts_with("./") || specifier.starts_with("../"),
            "{from} imports `{specifier}`: only relative specifiers load without a bundler"
        );
        let mut parts: Vec<&str> = from.split('/').collect();
        parts.pop(); // the importing file's own name
        for part in specifier.split('/') {
            match part {
                "." => {}
                ".." => {
                    parts.pop();
                }
                part => parts.push(part),
            }
        }
        parts.join("/")
    }

    /// What the page loads itself: its `src="/console/…"` and `href="/console/…"` attributes.
    fn linked_from_the_page() -> Vec<String> {
        let page = served("/console/").expect("the page is served").body;
        ["src=\"", "href=\""]
            .iter()
            .flat_map(|attribute| page.split(attribute).skip(1))
            .filter_map(|rest| rest.split('"').next())
            .filter(|link| link.starts_with("/console/"))
            .map(str::to_owned)
            .collect()
    }

    /// Everything the page loads, and every module those import, transitively.
    fn reached() -> BTreeSet<String> {
        let mut reached = BTreeSet::new();
        let mut to_visit = linked_from_the_page();
        while let Some(path) = to_visit.pop() {
            if !reached.insert(path.clone()) {
                continue;
            }
            let asset = served(&path).unwrap_or_else(|| panic!("{path} is loaded but not served"));
            if asset.content_type == SCRIPT {
                to_visit.extend(imports(asset).iter().map(|spec| resolve(&path, spec)));
            }
        }
        reached
    }

    #[test]
    fn every_module_the_entry_imports_is_served_as_a_script() {
        let reached = reached();
        assert!(reached.contains("/console/app.js"), "{reached:?}");
        assert!(reached.contains("/console/app.css"), "{reached:?}");
        for path in &reached {
            let asset = served(path).expect("reached only through served assets");
            if path.ends_with(".js") {
                assert_eq!(asset.content_type, SCRIPT, "{path}");
            }
        }
        // The entry's modules, each found through the import lines.
        for module in [
            "/console/js/api.js",
            "/console/js/router.js",
            "/console/js/charts.js",
        ] {
            assert!(reached.contains(module), "{module}: {reached:?}");
        }
    }

    #[test]
    fn every_served_asset_is_used_and_every_file_is_served() {
        let reached = reached();
        for asset in ASSETS.iter().filter(|asset| asset.path != "/console/") {
            assert!(
                reached.contains(asset.path),
                "{} is served but neither the page nor a module loads it",
                asset.path
            );
        }
        // A file added to the assets and left out of the table would be missing from the binary.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console/assets");
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("the assets' directory") {
                let path = entry.expect("an entry").path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let relative = path.strip_prefix(&root).expect("under the root");
                let relative = relative.to_str().expect("a UTF-8 name").replace('\\', "/");
                let url = match relative.as_str() {
                    "index.html" => "/console/".to_owned(),
                    other => format!("/console/{other}"),
                };
                assert!(served(&url).is_some(), "{relative} is not in ASSETS");
            }
        }
    }

    #[test]
    fn imports_are_read_and_resolved_as_a_browser_does() {
        let module = Asset {
            path: "/console/js/x.js",
            content_type: SCRIPT,
            body: "// import { no } from './comment.js';\nimport { a, b } from './a.js';\n\
                   import \"../b.js\";\nexport { c } from './c/d.js';\nexport const e = 1;\n",
        };
        let found: Vec<String> = imports(&module)
            .iter()
            .map(|spec| resolve(module.path, spec))
            .collect();
        assert_eq!(
            found,
            ["/console/js/a.js", "/console/b.js", "/console/js/c/d.js"]
        );
    }

    #[test]
    #[should_panic(expected = "on one line")]
    fn an_import_split_over_lines_is_refused() {
        let module = Asset {
            path: "/console/js/x.js",
            content_type: SCRIPT,
            body: "import {\n  a,\n} from './a.js';\n",
        };
        imports(&module);
    }

    /// The console's routes behind the fallback the server puts after every dialect's.
    fn app() -> Router {
        let edge = super::super::edge::Edge::new([&CONSOLE as &dyn crate::api::common::EdgeShape]);
        Arc::new(Console)
            .router()
            .fallback(
                move |request: axum::extract::Request| async move { edge.not_found(&request) },
            )
    }

    async fn get(path: &str) -> Response {
        let request = Request::get(path).body(Body::empty()).unwrap();
        tower::ServiceExt::oneshot(app(), request).await.unwrap()
    }

    #[tokio::test]
    async fn every_asset_is_answered_with_its_type_and_the_console_headers() {
        for asset in ASSETS {
            let answer = get(asset.path).await;
            assert_eq!(answer.status(), StatusCode::OK, "{}", asset.path);
            let headers = answer.headers();
            assert_eq!(
                headers[header::CONTENT_TYPE],
                asset.content_type,
                "{}",
                asset.path
            );
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(headers[header::CACHE_CONTROL], "no-store", "{}", asset.path);
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
            assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
            let body = axum::body::to_bytes(answer.into_body(), 1 << 20)
                .await
                .unwrap();
            assert_eq!(body, asset.body.as_bytes(), "{}", asset.path);
        }
        let moved = get("/console").await;
        assert_eq!(moved.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(moved.headers()[header::LOCATION], "/console/");
        assert_eq!(moved.headers()[header::CACHE_CONTROL], "no-store");
    }

    #[tokio::test]
    async fn an_unknown_asset_is_the_gateways_usual_404() {
        for path in [
            "/console/other.js",
            "/console/js/other.js",
            "/console/index.html",
        ] {
            let answer = get(path).await;
            assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{path}");
            let body = axum::body::to_bytes(answer.into_body(), 4096)
                .await
                .unwrap();
            let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
            assert_eq!(body["error"], "not_found", "{path}: {body}");
            assert!(body["message"].is_string(), "{path}: {body}");
        }
    }
}
