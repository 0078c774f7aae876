//! JSON request bodies of the REST dialects, parsed by hand from `serde_json::Value` so that error
//! messages name the field and its range but never echo a value (a misplaced receipt handle must
//! not come back in an error body), in the core's error terms each dialect renders its own way.

use crate::core::GatewayError;
use serde_json::{Map, Value};

/// Handles or entries a batch request must carry.
const BATCH: std::ops::RangeInclusive<usize> = 1..=10;

pub(crate) fn prefixed(mut error: GatewayError, prefix: &str) -> GatewayError {
    error.message = format!("{prefix}.{}", error.message);
    error
}

pub(crate) fn parse_object(
    body: &[u8],
    empty_is_default: bool,
) -> Result<Map<String, Value>, GatewayError> {
    if empty_is_default && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(GatewayError::invalid_request(
            "the body must be a JSON object",
        )),
        Err(error) => Err(GatewayError::invalid_request(format!(
            "the body is not valid JSON (line {}, column {})",
            error.line(),
            error.column()
        ))),
    }
}

pub(crate) fn reject_unknown(
    object: &Map<String, Value>,
    known: &[&str],
    prefix: &str,
) -> Result<(), GatewayError> {
    // The unknown name is not echoed: whatever a client puts in a request never comes back.
    if object.keys().all(|key| known.contains(&key.as_str())) {
        return Ok(());
    }
    let at = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}: ")
    };
    Err(GatewayError::invalid_request(format!(
        "{at}unknown field; expected only: {}",
        known.join(", ")
    )))
}

/// An optional integer field in `min..=max`; `null` counts as absent.
pub(crate) fn optional_int(
    object: &Map<String, Value>,
    field: &str,
    min: i64,
    max: i64,
) -> Result<Option<u32>, GatewayError> {
    let out_of_range =
        || GatewayError::out_of_range(format!("{field} must be an integer from {min} to {max}"));
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => {
            let value = match (number.as_i64(), number.as_f64()) {
                (Some(value), _) => value,
                // 10.0 is an integer written as a float; 1.5 is not an integer at all.
                (None, Some(float)) if float.fract() == 0.0 && float.abs() < 1e15 => float as i64,
                (None, Some(float)) if float.fract() == 0.0 => return Err(out_of_range()),
                _ => {
                    return Err(GatewayError::invalid_request(format!(
                        "{field} must be an integer"
                    )));
                }
            };
            if (min..=max).contains(&value) {
                Ok(Some(u32::try_from(value).map_err(|_| out_of_range())?))
            } else {
                Err(out_of_range())
            }
        }
        Some(_) => Err(GatewayError::invalid_request(format!(
            "{field} must be an integer"
        ))),
    }
}

pub(crate) fn batch<'a>(
    object: &'a Map<String, Value>,
    field: &str,
) -> Result<&'a Vec<Value>, GatewayError> {
    match object.get(field) {
        Some(Value::Array(items)) if BATCH.contains(&items.len()) => Ok(items),
        Some(Value::Array(_)) => Err(GatewayError::out_of_range(format!(
            "{field} must hold 1 to 10 entries"
        ))),
        None => Err(GatewayError::invalid_request(format!(
            "{field} is required"
        ))),
        Some(_) => Err(GatewayError::invalid_request(format!(
            "{field} must be an array"
        ))),
    }
}
