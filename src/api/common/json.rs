//! JSON request bodies of the REST dialects, parsed by hand from `serde_json::Value` so that error
//! messages name the field and its range but never echo a value (a misplaced receipt handle must
//! not come back in an error body), in the core's error terms each dialect renders its own way. A
//! key given twice in one object is refused, at any depth, as the SQS endpoint refuses it.

use crate::core::GatewayError;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;

pub(crate) fn prefixed(mut error: GatewayError, prefix: &str) -> GatewayError {
    error.message = format!("{prefix}.{}", error.message);
    error
}

/// The body as a JSON object. A key given twice in one object, at any depth, is refused (naming
/// the key and where it is, never a value): a map would keep the last value and drop the other
/// without a word, and a proxy or reviewer reading the first would see another request.
pub(crate) fn parse_object(
    body: &[u8],
    empty_is_default: bool,
) -> Result<Map<String, Value>, GatewayError> {
    if empty_is_default && body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let repeated = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let parsed = Distinct(&repeated)
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match parsed {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(GatewayError::invalid_request(
            "the body must be a JSON object",
        )),
        Err(error) => Err(match repeated.into_inner() {
            Some(repeated) => GatewayError::invalid_request(repeated.message()),
            None => GatewayError::invalid_request(format!(
                "the body is not valid JSON (line {}, column {})",
                error.line(),
                error.column()
            )),
        }),
    }
}

/// A key given twice, and the keys and indexes of the objects and arrays around it (innermost
/// first: they are added as the parse unwinds).
struct Repeated {
    key: String,
    around: Vec<Segment>,
}

enum Segment {
    Key(String),
    Index(usize),
}

/// How many characters of a client's key an error shows.
const SHOWN_KEY: usize = 64;

impl Repeated {
    /// `the key "body" is given more than once`, after `entries[1].attributes: ` when nested.
    fn message(&self) -> String {
        let mut at = String::new();
        for segment in self.around.iter().rev() {
            match segment {
                Segment::Key(key) if at.is_empty() => at.push_str(&clipped(key)),
                Segment::Key(key) => at.push_str(&format!(".{}", clipped(key))),
                Segment::Index(index) => at.push_str(&format!("[{index}]")),
            }
        }
        let key = serde_json::to_string(&clipped(&self.key)).unwrap_or_default();
        let message = format!("the key {key} is given more than once; each key may appear once");
        if at.is_empty() {
            message
        } else {
            format!("{at}: {message}")
        }
    }
}

fn clipped(key: &str) -> String {
    key.chars().take(SHOWN_KEY).collect()
}

/// Deserializes a JSON value as `serde_json::Value` does, except that an object naming a key twice
/// is an error, recorded in the cell with where it is.
#[derive(Clone, Copy)]
struct Distinct<'a>(&'a RefCell<Option<Repeated>>);

impl Distinct<'_> {
    /// Notes that the repeated key (if that is the error) is inside `segment`.
    fn within(self, segment: Segment) {
        if let Some(repeated) = self.0.borrow_mut().as_mut() {
            repeated.around.push(segment);
        }
    }
}

impl<'de> DeserializeSeed<'de> for Distinct<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Distinct<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value whose objects name each key once")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(items.size_hint().unwrap_or(0).min(1024));
        loop {
            match items.next_element_seed(self) {
                Ok(Some(item)) => out.push(item),
                Ok(None) => return Ok(Value::Array(out)),
                Err(error) => {
                    self.within(Segment::Index(out.len()));
                    return Err(error);
                }
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = entries.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.0.borrow_mut() = Some(Repeated {
                    key,
                    around: Vec::new(),
                });
                return Err(serde::de::Error::custom("a key is given more than once"));
            }
            match entries.next_value_seed(self) {
                Ok(value) => {
                    object.insert(key, value);
                }
                Err(error) => {
                    self.within(Segment::Key(key));
                    return Err(error);
                }
            }
        }
        Ok(Value::Object(object))
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

/// A required array field of `least` to `most` items; another length is out of range.
pub(crate) fn list<'a>(
    object: &'a Map<String, Value>,
    field: &str,
    least: usize,
    most: usize,
) -> Result<&'a Vec<Value>, GatewayError> {
    match object.get(field) {
        Some(Value::Array(items)) if (least..=most).contains(&items.len()) => Ok(items),
        Some(Value::Array(_)) => Err(GatewayError::out_of_range(format!(
            "{field} must hold {least} to {most} entries"
        ))),
        None => Err(GatewayError::invalid_request(format!(
            "{field} is required"
        ))),
        Some(_) => Err(GatewayError::invalid_request(format!(
            "{field} must be an array"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> String {
        parse_object(body.as_bytes(), false).unwrap_err().message
    }

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth_naming_it_and_not_its_values() {
        let top = refusal(r#"{"overlap":"none","overlap":"3d"}"#);
        assert_eq!(
            top,
            r#"the key "overlap" is given more than once; each key may appear once"#
        );
        let nested = refusal(
            r#"{"entries":[{"id":"a"},{"id":"b","attributes":{"k":{"type":"String","value":"secret","value":"other"}}}]}"#,
        );
        assert!(
            nested.starts_with(r#"entries[1].attributes.k: the key "value""#),
            "{nested}"
        );
        assert!(!nested.contains("secret") && !nested.contains("other"));
        let long = format!(r#"{{"{0}":1,"{0}":2}}"#, "k".repeat(300));
        assert!(refusal(&long).contains(&format!("\"{}\" is", "k".repeat(64))));
        let escaped = refusal(r#"{"a\"b":1,"a\"b":2}"#);
        assert!(escaped.contains(r#"the key "a\"b""#), "{escaped}");
    }

    #[test]
    fn distinct_keys_parse_as_serde_json_does_and_malformed_json_says_where() {
        let body =
            r#"{"a":[1,-2,3.5,1e300,true,null,"x",{"a":{}}],"b":{"a":1},"c":18446744073709551615}"#;
        let expected: Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            Value::Object(parse_object(body.as_bytes(), false).unwrap()),
            expected
        );
        assert_eq!(
            refusal(r#"{"a":1} x"#),
            "the body is not valid JSON (line 1, column 9)"
        );
        assert_eq!(refusal("[]"), "the body must be a JSON object");
        assert!(parse_object(b"  ", true).unwrap().is_empty());
    }
}
