//! Which messages an inspection (or an export) keeps: text in the body, an id's beginning, an
//! attribute, and a small jq-like expression over a JSON body (`.order.total > 100`). Every part
//! given must hold. Dialect-neutral: a dialect parses its query into a [`MessageFilter`], the core
//! applies it while it reads the queue ([`crate::core::Gateway::peek_matching`]).

use crate::core::model::{AttributeValue, BackendMessage};
use serde_json::Value;
use std::cmp::Ordering;

/// The longest expression taken, in characters.
pub const MOST_EXPRESSION_CHARS: usize = 256;
/// The most steps a path may take.
pub const MOST_PATH_STEPS: usize = 16;

/// The expressions the documents describe, as a pattern (JSON Schema's, ECMA-262): a subset of
/// what [`Expression::parse`] takes (no escapes in strings, at most 16 steps, plain numbers).
pub const EXPRESSION_PATTERN: &str = r#"^\.([A-Za-z_][A-Za-z0-9_]*)?(\.[A-Za-z_][A-Za-z0-9_]*|\[[0-9]{1,9}\]|\["[^"\\\x00-\x1f]*"\]){0,15}( *(==|!=|<=|>=|<|>) *("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null)| +contains +("[^"\\\x00-\x1f]*"|-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,15})?|true|false|null))? *$"#;

/// What a message must match; an empty filter keeps every message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageFilter {
    /// Text the body holds, compared without regard to case.
    pub body_contains: Option<String>,
    /// The message id starts with this.
    pub message_id: Option<String>,
    /// The message has this attribute, with this value if given (a Binary one's value is its
    /// standard base64).
    pub attribute: Option<(String, Option<String>)>,
    /// The body is JSON and this holds of it.
    pub expression: Option<Expression>,
}

impl MessageFilter {
    /// Whether it keeps every message.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether `message` matches every part given.
    pub fn matches(&self, message: &BackendMessage) -> bool {
        if let Some(prefix) = &self.message_id
            && !message.message_id.starts_with(prefix.as_str())
        {
            return false;
        }
        if let Some(text) = &self.body_contains
            && !message.body.to_lowercase().contains(&text.to_lowercase())
        {
            return false;
        }
        if let Some((name, wanted)) = &self.attribute {
            let Some(attribute) = message.attributes.get(name) else {
                return false;
            };
            if let Some(wanted) = wanted {
                let value = match &attribute.value {
                    AttributeValue::Text(text) => text.clone(),
                    AttributeValue::Bytes(bytes) => {
                        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, bytes)
                    }
                };
                if &value != wanted {
                    return false;
                }
            }
        }
        if let Some(expression) = &self.expression {
            let Ok(body) = serde_json::from_str::<Value>(&message.body) else {
                return false;
            };
            if !expression.holds(&body) {
                return false;
            }
        }
        true
    }
}

/// One step of a path: a key of an object, or an index of an array.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// `.name` or `["name"]`.
    Key(String),
    /// `[n]`.
    Index(usize),
}

/// A comparison of the value at a path with a JSON literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
    /// `contains`: a string holding the text, or an array holding the value.
    Contains,
}

/// `PATH` (the value is there and is neither `null` nor `false`) or `PATH OP LITERAL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Expression {
    path: Vec<Step>,
    comparison: Option<(Comparison, Value)>,
}

impl Expression {
    /// Parses an expression: a path from `.` (`.a.b[0]["odd key"]`), then optionally one of
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`, `contains` and a JSON literal (a string in double quotes, a
    /// number, `true`, `false` or `null`). The refusal says what is wrong, never echoing more than
    /// the expression's own text.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.chars().count() > MOST_EXPRESSION_CHARS {
            return Err(format!(
                "an expression is at most {MOST_EXPRESSION_CHARS} characters"
            ));
        }
        let text = text.trim();
        let Some(mut rest) = text.strip_prefix('.') else {
            return Err("an expression starts with a path from `.`, like .order.id".into());
        };
        let mut path = Vec::new();
        // `.` alone is the whole body; `.name` its first step.
        if let Some(after) = take_name(rest, &mut path) {
            rest = after;
        }
        loop {
            if path.len() > MOST_PATH_STEPS {
                return Err(format!("a path takes at most {MOST_PATH_STEPS} steps"));
            }
            if let Some(after) = rest.strip_prefix('.') {
                rest = take_name(after, &mut path)
                    .ok_or("after `.` comes a name of letters, digits and `_`")?;
            } else if let Some(after) = rest.strip_prefix('[') {
                let (step, after) = take_bracket(after)?;
                path.push(step);
                rest = after;
            } else {
                break;
            }
        }
        let rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(Self {
                path,
                comparison: None,
            });
        }
        let operators = [
            ("==", Comparison::Equal),
            ("!=", Comparison::NotEqual),
            ("<=", Comparison::LessOrEqual),
            (">=", Comparison::GreaterOrEqual),
            ("<", Comparison::Less),
            (">", Comparison::Greater),
            ("contains ", Comparison::Contains),
        ];
        let (comparison, literal) = operators
            .iter()
            .find_map(|(word, comparison)| {
                rest.strip_prefix(word).map(|after| (*comparison, after))
            })
            .ok_or("after the path comes ==, !=, <, <=, >, >= or contains, and a JSON value")?;
        let literal: Value = serde_json::from_str(literal.trim()).map_err(|_| {
            "the value to compare with is JSON: a string in double quotes, a number, true, false or null"
                .to_owned()
        })?;
        if matches!(literal, Value::Array(_) | Value::Object(_)) {
            return Err(
                "the value to compare with is a string, a number, true, false or null".into(),
            );
        }
        Ok(Self {
            path,
            comparison: Some((comparison, literal)),
        })
    }

    /// Whether it holds of `body`.
    pub fn holds(&self, body: &Value) -> bool {
        let mut at = Some(body);
        for step in &self.path {
            at = at.and_then(|value| match step {
                Step::Key(key) => value.get(key),
                Step::Index(index) => value.get(index),
            });
        }
        let found = at.unwrap_or(&Value::Null);
        let Some((comparison, literal)) = &self.comparison else {
            return !matches!(found, Value::Null | Value::Bool(false));
        };
        match comparison {
            Comparison::Equal => same(found, literal),
            Comparison::NotEqual => !same(found, literal),
            Comparison::Contains => match (found, literal) {
                (Value::String(text), Value::String(part)) => text.contains(part.as_str()),
                (Value::Array(items), _) => items.iter().any(|item| same(item, literal)),
                _ => false,
            },
            ordering => {
                let Some(order) = order(found, literal) else {
                    return false;
                };
                match ordering {
                    Comparison::Less => order == Ordering::Less,
                    Comparison::LessOrEqual => order != Ordering::Greater,
                    Comparison::Greater => order == Ordering::Greater,
                    _ => order != Ordering::Less,
                }
            }
        }
    }
}

/// Takes a name (`[A-Za-z_][A-Za-z0-9_]*`) off the front of `text` as a step.
fn take_name<'a>(text: &'a str, path: &mut Vec<Step>) -> Option<&'a str> {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(at, _)| at);
    let name = &text[..end];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    path.push(Step::Key(name.to_owned()));
    Some(&text[end..])
}

/// Takes `n]` or `"key"]` off the front of `text`.
fn take_bracket(text: &str) -> Result<(Step, &str), String> {
    let refused =
        || "a bracket holds an index (`[0]`) or a key in double quotes (`[\"a b\"]`)".to_owned();
    let close = if text.starts_with('"') {
        // The key is a JSON string: its end is the first `"]` that closes it.
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<String>();
        let key = stream.next().and_then(Result::ok).ok_or_else(refused)?;
        let after = &text[stream.byte_offset()..];
        let after = after.strip_prefix(']').ok_or_else(refused)?;
        return Ok((Step::Key(key), after));
    } else {
        text.find(']').ok_or_else(refused)?
    };
    let index = text[..close].parse::<usize>().map_err(|_| refused())?;
    Ok((Step::Index(index), &text[close + 1..]))
}

/// Equal as JSON values, numbers by their value (`1` equals `1.0`).
fn same(found: &Value, literal: &Value) -> bool {
    match (found, literal) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => found == literal,
    }
}

/// How two numbers, or two strings, are ordered; nothing for other pairs.
fn order(found: &Value, literal: &Value) -> Option<Ordering> {
    match (found, literal) {
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::MessageAttribute;
    use serde_json::json;

    fn holds(expression: &str, body: Value) -> bool {
        Expression::parse(expression).unwrap().holds(&body)
    }

    #[test]
    fn paths_reach_keys_indexes_and_quoted_keys() {
        let body = json!({ "order": { "id": "A-1", "lines": [{ "sku": "x" }], "odd key": 3 } });
        assert!(holds(".order.id", body.clone()));
        assert!(holds(".order.lines[0].sku == \"x\"", body.clone()));
        assert!(holds(".order[\"odd key\"] >= 3", body.clone()));
        assert!(!holds(".order.missing", body.clone()));
        assert!(holds(".", body.clone()));
        assert!(!holds(".", json!(false)));
        assert!(holds(".order.missing == null", body.clone()));
        assert!(holds(".order.missing != 1", body));
    }

    #[test]
    fn comparisons_order_numbers_and_strings_only() {
        let body = json!({ "total": 120, "name": "berta", "tags": ["a", 2] });
        assert!(holds(".total > 100", body.clone()));
        assert!(holds(".total == 120.0", body.clone()));
        assert!(!holds(".total < 100", body.clone()));
        assert!(holds(".name >= \"b\"", body.clone()));
        assert!(!holds(".name > 1", body.clone()));
        assert!(holds(".name contains \"ert\"", body.clone()));
        assert!(holds(".tags contains 2", body.clone()));
        assert!(!holds(".tags contains \"b\"", body));
    }

    #[test]
    fn refusals_say_what_is_wrong() {
        for (text, says) in [
            ("order.id", "starts with a path"),
            (".order.", "after `.` comes a name"),
            (".a[x]", "a bracket holds"),
            (".a ~ 1", "after the path comes"),
            (".a == nope", "is JSON"),
            (".a == [1]", "a string, a number"),
        ] {
            let refused = Expression::parse(text).unwrap_err();
            assert!(refused.contains(says), "{text}: {refused}");
        }
        let long = format!(".{}", "a".repeat(MOST_EXPRESSION_CHARS));
        assert!(Expression::parse(&long).unwrap_err().contains("at most"));
        let deep = ".a".repeat(MOST_PATH_STEPS + 2);
        assert!(Expression::parse(&deep).unwrap_err().contains("steps"));
    }

    #[test]
    fn a_filter_holds_when_every_part_does() {
        let mut message = BackendMessage {
            message_id: "4f1c-2".into(),
            backend_handle: String::new(),
            body: r#"{"Event": "Paid", "total": 5}"#.into(),
            attributes: Default::default(),
            sent_at: None,
            first_received_at: None,
            receive_count: 0,
            group_id: None,
            sequence_number: None,
            dead_letter_source_arn: None,
            deduplication_id: None,
            trace_header: None,
        };
        message.attributes.insert(
            "kind".into(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::Text("order".into()),
            },
        );
        let mut filter = MessageFilter::default();
        assert!(filter.is_empty() && filter.matches(&message));
        filter.body_contains = Some("event\": \"PAID".into());
        filter.message_id = Some("4f1c".into());
        filter.attribute = Some(("kind".into(), Some("order".into())));
        filter.expression = Some(Expression::parse(".total == 5").unwrap());
        assert!(filter.matches(&message));
        filter.attribute = Some(("kind".into(), Some("refund".into())));
        assert!(!filter.matches(&message));
        filter.attribute = Some(("kind".into(), None));
        filter.message_id = Some("9".into());
        assert!(!filter.matches(&message));
    }
}
