//! What a message may hold, as SQS defines it (body characters, attribute names, types and
//! values), checked in the core so every backend enforces it, LocalStack included, and no stored
//! message carries a character a dialect cannot render (XML has no form for most controls).

use crate::core::attribute_names::{MAX_NAME, sqs_name};
use crate::core::attributes::{self, MAX_ATTRIBUTES};
use crate::core::model::{
    AttributeValue, EntryError, EntryErrorKind, MessageAttribute, OutgoingMessage,
};
use std::borrow::Cow;
use std::collections::BTreeMap;
/// Significant digits a Number attribute may have.
const MAX_NUMBER_DIGITS: usize = 38;

/// SQS's allowed characters (bodies, string attribute values, data types):
/// `#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF`.
pub fn allowed_char(c: char) -> bool {
    matches!(c, '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

/// Checks a message's body and attributes as the client sent them (not its size, which is the
/// queue's setting).
pub fn check_message(message: &OutgoingMessage) -> Result<(), EntryError> {
    check_body(&message.body)?;
    check_fifo_id("MessageGroupId", message.group_id.as_deref())?;
    check_fifo_id(
        "MessageDeduplicationId",
        message.deduplication_id.as_deref(),
    )?;
    check_attributes(&message.attributes)
}

/// SQS's refusal of a FIFO message with no group id.
pub const MISSING_GROUP_ID: &str = "The request must contain the parameter MessageGroupId.";

/// SQS's refusal of a FIFO message with no deduplication id on a queue without content-based
/// deduplication.
pub const MISSING_DEDUPLICATION_ID: &str = "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly";

/// SQS's rule for a group or deduplication id, when one is given: 1 to 128 characters, letters,
/// digits and punctuation (printable ASCII, no spaces). A deduplication id is kept for 5 minutes
/// per queue, so an unbounded one would be unbounded memory.
pub fn check_fifo_id(parameter: &str, id: Option<&str>) -> Result<(), EntryError> {
    match id {
        Some(id) if !valid_fifo_id(id) => {
            let shown: String = id.chars().take(1024).collect();
            Err(EntryError::invalid(format!(
                "Value {shown} for parameter {parameter} is invalid. Reason: {parameter} can only include alphanumeric and punctuation characters. 1 to 128 in length."
            )))
        }
        _ => Ok(()),
    }
}

/// SQS's refusal of a message over the queue's maximum size, `max` bytes.
pub fn too_long(max: usize) -> EntryError {
    EntryError::invalid(format!(
        "One or more parameters are invalid. Reason: Message must be shorter than {max} bytes."
    ))
}

/// SQS's rule for a FIFO message's group and deduplication ids: 1 to 128 letters, digits or
/// punctuation (printable ASCII, no spaces).
pub fn valid_fifo_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_graphic())
}

/// Checks a message as a backend stores it (its attributes possibly packed) by what the client
/// sent, names held unpacked by SQS's rules too, and answers its size as SQS counts it.
pub fn check_stored(message: &OutgoingMessage) -> Result<usize, EntryError> {
    let attributes = if message.attributes.contains_key(attributes::PACKED) {
        Cow::Owned(attributes::unpack(message.attributes.clone()))
    } else {
        Cow::Borrowed(&message.attributes)
    };
    check_body(&message.body)?;
    check_attributes(&attributes)?;
    if let Cow::Borrowed(unpacked) = &attributes {
        // What a backend holds as it is, SQS must be able to hold.
        check_sqs_names(unpacked)?;
    }
    Ok(size(&message.body, &attributes))
}

/// What counts against a queue's maximum message size: the body, and each attribute's name,
/// data type and value (of the attributes as sent, however they are stored).
pub fn size(body: &str, attributes: &BTreeMap<String, MessageAttribute>) -> usize {
    body.len()
        + attributes
            .iter()
            .map(|(name, attribute)| {
                name.len()
                    + attribute.data_type.len()
                    + match &attribute.value {
                        AttributeValue::Text(text) => text.len(),
                        AttributeValue::Bytes(bytes) => bytes.len(),
                    }
            })
            .sum::<usize>()
}

/// A body is non-empty and made of allowed characters.
pub fn check_body(body: &str) -> Result<(), EntryError> {
    if body.is_empty() {
        return Err(EntryError::new(
            EntryErrorKind::MissingParameter,
            "The request must contain the parameter MessageBody.",
        ));
    }
    match body.chars().find(|c| !allowed_char(*c)) {
        None => Ok(()),
        Some(c) => Err(EntryError::new(
            EntryErrorKind::InvalidContents,
            format!(
                "Invalid binary character '#x{:X}' was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
                u32::from(c)
            ),
        )),
    }
}

/// At most [`MAX_ATTRIBUTES`] attributes, each with a name the gateway takes (any API's: see
/// [`check_name`]), a known type and a value that fits it.
pub fn check_attributes(attributes: &BTreeMap<String, MessageAttribute>) -> Result<(), EntryError> {
    if attributes.len() > MAX_ATTRIBUTES {
        return Err(EntryError::invalid(format!(
            "Number of message attributes [{}] exceeds the allowed maximum [{MAX_ATTRIBUTES}].",
            attributes.len()
        )));
    }
    for (name, attribute) in attributes {
        check_name(name)?;
        check_attribute(name, attribute)?;
    }
    Ok(())
}

/// The gateway's rule for names, whatever the API: 1 to 256 bytes of UTF-8 in the characters of
/// bodies ([`allowed_char`]: every dialect can render them), not starting with `AWS.` or `Amazon.`
/// in any case (reserved by AWS), nor with the gateway's own prefix (`sqsgw.`). A name SQS itself
/// could not hold (see [`sqs_name`](crate::core::attribute_names::sqs_name)) travels packed (`core::attributes`).
fn check_name(name: &str) -> Result<(), EntryError> {
    let shown: String = name.chars().take(64).collect();
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(EntryError::invalid(format!(
            "The message attribute name '{shown}' is invalid: names are 1 to {MAX_NAME} bytes."
        )));
    }
    if let Some(c) = name.chars().find(|c| !allowed_char(*c)) {
        return Err(EntryError::invalid(format!(
            "Invalid binary character '#x{:X}' was found in a message attribute name; the allowed characters are those of message bodies.",
            u32::from(c)
        )));
    }
    let lower = name.get(..7).unwrap_or(name).to_ascii_lowercase();
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return Err(EntryError::invalid(format!(
            "The message attribute name '{shown}' is reserved: names starting with 'AWS.' or 'Amazon.' are reserved for use by Amazon."
        )));
    }
    if attributes::is_reserved(name) {
        return Err(EntryError::invalid(format!(
            "The message attribute name '{shown}' is reserved: names starting with '{}' are the gateway's own.",
            attributes::RESERVED_PREFIX
        )));
    }
    Ok(())
}

/// Refuses, as SQS does, a name it would not take as it is: what an API that promises SQS's own
/// rules (the SQS endpoint) checks on top of [`check_attributes`].
pub fn check_sqs_names(attributes: &BTreeMap<String, MessageAttribute>) -> Result<(), EntryError> {
    match attributes.keys().find(|name| !sqs_name(name)) {
        None => Ok(()),
        Some(name) => Err(EntryError::invalid(format!(
            "The message attribute name '{}' is invalid: names are 1 to {MAX_NAME} bytes of letters, digits, '_', '-' and '.', and do not start or end with '.' or hold '..'.",
            name.chars().take(64).collect::<String>()
        ))),
    }
}

fn check_attribute(name: &str, attribute: &MessageAttribute) -> Result<(), EntryError> {
    let data_type = &attribute.data_type;
    let (base, label) = match data_type.split_once('.') {
        Some((base, label)) => (base, Some(label)),
        None => (data_type.as_str(), None),
    };
    let type_ok = matches!(base, "String" | "Number" | "Binary")
        && label.is_none_or(|label| !label.is_empty())
        && data_type.len() <= MAX_NAME
        && data_type.chars().all(allowed_char);
    if !type_ok {
        return Err(EntryError::invalid(format!(
            "The type of message attribute '{name}' is invalid: use String, Number or Binary, optionally followed by '.' and a label (at most {MAX_NAME} characters)."
        )));
    }
    match (&attribute.value, base) {
        (AttributeValue::Text(text), _) if text.is_empty() => Err(empty_value(name, base)),
        (AttributeValue::Bytes(bytes), _) if bytes.is_empty() => Err(empty_value(name, base)),
        (AttributeValue::Text(text), "String") => match text.chars().find(|c| !allowed_char(*c)) {
            None => Ok(()),
            Some(c) => Err(EntryError::invalid(format!(
                "Invalid binary character '#x{:X}' was found in the value of message attribute '{name}'; the allowed characters are those of message bodies.",
                u32::from(c)
            ))),
        },
        (AttributeValue::Text(text), "Number") if valid_number(text) => Ok(()),
        (AttributeValue::Text(_), "Number") => Err(EntryError::invalid(format!(
            "The value of message attribute '{name}' is not a number SQS accepts: a decimal (optionally with an exponent) of at most {MAX_NUMBER_DIGITS} significant digits, between 10^-128 and 10^126 in magnitude."
        ))),
        (AttributeValue::Bytes(_), "Binary") => Ok(()),
        _ => Err(EntryError::invalid(format!(
            "The value of message attribute '{name}' does not match its type {base}."
        ))),
    }
}

fn empty_value(name: &str, base: &str) -> EntryError {
    EntryError::invalid(format!(
        "Message (user) attribute '{name}' must contain a non-empty value of type '{base}'."
    ))
}

/// A decimal number as SQS takes it: an optional sign, digits with an optional fraction, an
/// optional exponent; at most 38 significant digits; zero, or a magnitude within 10^-128..=10^126.
/// (No spaces, no `NaN`, no infinities, no hexadecimal.)
pub fn valid_number(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => (mantissa, Some(exponent)),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits_only = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.len() + fraction.len() == 0 || !digits_only(whole) || !digits_only(fraction) {
        return false;
    }
    let exponent: i64 = match exponent {
        None => 0,
        Some(exponent) => {
            let bare = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if bare.is_empty() || !digits_only(bare) {
                return false;
            }
            // Anything longer is out of range whatever the mantissa (and would overflow).
            match exponent.parse::<i64>() {
                Ok(exponent) if exponent.abs() < 1_000_000 => exponent,
                _ => return false,
            }
        }
    };
    let digits: String = format!("{whole}{fraction}");
    let Some(first) = digits.find(|c| c != '0') else {
        return true; // zero
    };
    let significant = digits.trim_end_matches('0').len() - first;
    if significant > MAX_NUMBER_DIGITS {
        return false;
    }
    // The power of ten of the leading significant digit.
    let leading =
        i64::try_from(whole.len()).unwrap_or(i64::MAX) - 1 - i64::try_from(first).unwrap_or(0)
            + exponent;
    let exactly_the_maximum =
        leading == 126 && significant == 1 && digits[first..].starts_with('1');
    (-128..126).contains(&leading) || exactly_the_maximum
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attribute(data_type: &str, value: AttributeValue) -> BTreeMap<String, MessageAttribute> {
        BTreeMap::from([(
            "name".to_owned(),
            MessageAttribute {
                data_type: data_type.to_owned(),
                value,
            },
        )])
    }

    fn text(data_type: &str, value: &str) -> Result<(), EntryError> {
        check_attributes(&attribute(
            data_type,
            AttributeValue::Text(value.to_owned()),
        ))
    }

    #[test]
    fn numbers_are_decimal_within_range_and_precision() {
        for good in [
            "0",
            "-0",
            "1",
            "+1",
            "-1.5",
            ".5",
            "5.",
            "1e5",
            "1E+5",
            "-2.5e-3",
            "0.000",
            "1e-128",
            "9.99e125",
            "1e126",
            "12345678901234567890123456789012345678",
            "1234567890123456789012345678901234567800000",
        ] {
            assert!(valid_number(good), "{good}");
        }
        for bad in [
            "",
            " 1",
            "1 ",
            "NaN",
            "nan",
            "inf",
            "-Infinity",
            "0x1F",
            "1e400",
            "1e-129",
            "2e126",
            "1.1e126",
            "1e",
            "e5",
            ".",
            "+",
            "1..2",
            "1,5",
            "1e5.5",
            "123456789012345678901234567890123456789",
            "1e99999999999999999999",
        ] {
            assert!(!valid_number(bad), "{bad}");
        }
    }

    #[test]
    fn attribute_values_and_types_keep_to_the_allowed_characters() {
        assert!(text("String", "fine\ttext\n").is_ok());
        let control = text("String", "bad\u{1}val").unwrap_err();
        assert_eq!(control.kind, EntryErrorKind::InvalidParameter);
        assert!(control.message.contains("#x1"), "{}", control.message);
        assert!(text("String.\u{2}", "x").is_err());
        assert!(text("String.label", "x").is_ok());
        assert!(text("String.", "x").is_err());
        assert!(text("Strung", "x").is_err());
        assert!(text(&format!("String.{}", "a".repeat(250)), "x").is_err());
        assert!(text("Number", "NaN").is_err());
        assert!(text("Number.int", "42").is_ok());
        assert!(text("String", "").is_err());
        let binary = attribute("Binary", AttributeValue::Bytes(vec![0, 1, 2]));
        assert!(check_attributes(&binary).is_ok());
        let wrong = attribute("Binary", AttributeValue::Text("x".into()));
        assert!(check_attributes(&wrong).is_err());
    }

    fn named(name: &str) -> Result<(), EntryError> {
        let attributes = BTreeMap::from([(
            name.to_owned(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::Text("v".into()),
            },
        )]);
        check_attributes(&attributes)
    }

    /// Any API's names: 1 to 256 bytes (the SQS endpoint adds SQS's syntax), reserved prefixes
    /// refused in any case.
    #[test]
    fn names_are_1_to_256_bytes_and_reserved_prefixes_are_refused_in_any_case() {
        for good in [
            "a",
            "order.id",
            "x-y_z",
            "awsome",
            "amazonian.x",
            "\u{e9}vent",
            "evento.a\u{f1}o",
            "event:type",
            "event/type",
            "event type",
            ".a",
            "a..b",
            "aws",
            &"n".repeat(256),
            &"\u{e9}".repeat(128),
        ] {
            assert!(named(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a\u{1}b",
            "AWS.x",
            "aws.trace",
            "aWs.x",
            "Amazon.x",
            "AMAZON.id",
            "sqsgw.attributes",
            "SQSGW.x",
            &"n".repeat(257),
            &format!("{}n", "\u{e9}".repeat(128)),
        ] {
            let error = named(bad).unwrap_err();
            assert_eq!(error.kind, EntryErrorKind::InvalidParameter, "{bad}");
        }
        assert!(named("aws.x").unwrap_err().message.contains("reserved"));
    }

    #[test]
    fn sqs_names_follow_sqs() {
        // Letters and digits of any script, as AWS takes them (`attr.1øßä`).
        for good in [
            "a",
            "order.id",
            "x-y_z",
            "attr.1\u{f8}\u{df}\u{e4}",
            &"n".repeat(256),
        ] {
            assert!(sqs_name(good), "{good}");
        }
        for bad in [
            "",
            ".a",
            "a.",
            "a..b",
            "a b",
            "a\u{a7}",
            "a!b",
            "a:b",
            "a/b",
            &"n".repeat(257),
        ] {
            assert!(!sqs_name(bad), "{bad}");
        }
        let named = |name: &str| {
            BTreeMap::from([(
                name.to_owned(),
                MessageAttribute {
                    data_type: "String".into(),
                    value: AttributeValue::Text("v".into()),
                },
            )])
        };
        assert!(check_sqs_names(&named("a b")).is_err());
        assert!(check_sqs_names(&named("a-b")).is_ok());
        // A backend holds such a name only packed.
        let stored = |attributes| OutgoingMessage {
            body: "b".into(),
            attributes,
            ..Default::default()
        };
        assert!(check_stored(&stored(named("a b"))).is_err());
        assert!(check_stored(&stored(attributes::pack(&named("a b")))).is_ok());
    }

    #[test]
    fn bodies_and_counts() {
        assert_eq!(
            check_body("").unwrap_err().kind,
            EntryErrorKind::MissingParameter
        );
        assert_eq!(
            check_body("a\u{7}b").unwrap_err().kind,
            EntryErrorKind::InvalidContents
        );
        assert!(check_body("ok \u{10FFFF}").is_ok());
        let too_many: BTreeMap<String, MessageAttribute> = (0..=MAX_ATTRIBUTES)
            .map(|n| {
                (
                    format!("a{n}"),
                    MessageAttribute {
                        data_type: "String".into(),
                        value: AttributeValue::Text("v".into()),
                    },
                )
            })
            .collect();
        assert!(check_attributes(&too_many).is_err());
    }
}
