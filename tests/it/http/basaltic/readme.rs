//! The basaltic request bodies the README shows are the document's, as in `examples/basaltic/`, and
//! its shell lines export a key before the command that needs it.

use super::support::{REQUEST_1, REQUEST_2};
use crate::harness::readme::blocks;
use serde_json::Value;

#[test]
fn the_readme_shows_the_basaltic_documents_request_bodies() {
    let parsed = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    let shown: Vec<Value> = blocks("json").iter().map(|block| parsed(block)).collect();
    for (name, body) in [("request-1.json", REQUEST_1), ("request-2.json", REQUEST_2)] {
        assert!(
            shown.contains(&parsed(body)),
            "README.md shows the body of {name}"
        );
        let example = std::fs::read_to_string(format!(
            "{}/examples/basaltic/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        assert_eq!(example.trim(), body, "examples/basaltic/{name}");
    }
    // No `export KEY=… VAR=$(cli …)` (the `$(…)` runs before KEY is exported, so the CLI has no
    // key), and no line pipes into a subcommand (`list | show ID`).
    for block in blocks("sh") {
        for line in block.lines() {
            if let Some((before, _)) = line.split_once("$(") {
                assert!(
                    !["BASALTIC_API_KEY=", "EZGH_API_KEY=", "SQSGW_ADMIN_KEY="]
                        .iter()
                        .any(|key| before.contains(key)),
                    "a key exported on the line whose command needs it: {line}"
                );
            }
            assert!(
                !line.contains("| show ") && !line.contains("| delete "),
                "{line}"
            );
        }
    }
}
