//! compose.yaml read with a YAML parser (anchors and `<<` merge keys applied), and the few shapes
//! a service's fields come in.

use super::repo_file;
use serde_norway::Value;

/// compose.yaml's services by name, with `<<` merge keys applied.
pub(crate) fn services() -> serde_norway::Mapping {
    let mut compose: Value = serde_norway::from_str(&repo_file("compose.yaml")).expect("YAML");
    compose.apply_merge().expect("merge keys");
    compose["services"].as_mapping().expect("services").clone()
}

/// The services as (name, service) pairs, in the file's order.
pub(crate) fn named_services() -> Vec<(String, Value)> {
    services()
        .into_iter()
        .map(|(name, service)| (name.as_str().expect("a service name").to_owned(), service))
        .collect()
}

/// A string field (`image: x`), if the service has it.
pub(crate) fn string(service: &Value, key: &str) -> Option<String> {
    service.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// A field given as a list of strings, or as one string (`command: serve` splits on spaces, as
/// compose does for a plain command); empty when absent.
pub(crate) fn list(service: &Value, key: &str) -> Vec<String> {
    match service.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => text.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .unwrap_or_else(|| panic!("{key}: a string item, not {item:?}"))
                    .to_owned()
            })
            .collect(),
        Some(other) => panic!("{key}: a list, not {other:?}"),
    }
}

/// The services a service depends on (`depends_on` as a list or as a map with conditions).
pub(crate) fn depends_on(service: &Value) -> Vec<String> {
    match service.get("depends_on") {
        None => Vec::new(),
        Some(Value::Sequence(_)) => list(service, "depends_on"),
        Some(Value::Mapping(map)) => map
            .keys()
            .map(|name| name.as_str().expect("a service name").to_owned())
            .collect(),
        Some(other) => panic!("depends_on: a list or a map, not {other:?}"),
    }
}
