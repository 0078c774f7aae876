//! A skill executor's registrations: the configured instances a house bound to a connection,
//! read from the JSON file `sombus.registrations_file` on each request (so edits apply at once):
//! `{"<workspace>": {"<client id>": [{"instance_id", "skill", "values", "authority_scale"}, …]}}`.

use serde_json::Value;
use std::path::Path;

/// Why the registrations could not be read (detail for the log).
#[derive(Debug, thiserror::Error)]
#[error("registrations file {path}: {reason}")]
pub(super) struct Unreadable {
    path: String,
    reason: String,
}

/// The registrations bound to `client_id` of `workspace`; none when no file is configured or
/// it names none for the connection.
pub(super) async fn bound_to(
    file: Option<&Path>,
    workspace: &str,
    client_id: &str,
) -> Result<Vec<Value>, Unreadable> {
    let Some(file) = file else {
        return Ok(Vec::new());
    };
    let unreadable = |reason: String| Unreadable {
        path: file.display().to_string(),
        reason,
    };
    let text = tokio::fs::read(file)
        .await
        .map_err(|error| unreadable(error.to_string()))?;
    let all: Value =
        serde_json::from_slice(&text).map_err(|error| unreadable(error.to_string()))?;
    let Value::Object(workspaces) = all else {
        return Err(unreadable(
            "the top level must be an object of workspaces".into(),
        ));
    };
    let entries = match workspaces.get(workspace).and_then(|w| w.get(client_id)) {
        None => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries.clone(),
        Some(_) => {
            return Err(unreadable(format!(
                "{workspace}.{client_id} must be a list"
            )));
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        let valid = entry.get("instance_id").is_some_and(Value::is_string)
            && entry.get("skill").is_some_and(Value::is_string)
            && entry.get("values").is_some_and(Value::is_object)
            && entry.get("authority_scale").is_some();
        if !valid {
            return Err(unreadable(format!(
                "{workspace}.{client_id}[{index}] needs instance_id, skill, values and authority_scale"
            )));
        }
    }
    Ok(entries)
}
