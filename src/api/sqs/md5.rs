//! The MD5 digests SQS answers with, which SDKs may check: of the body and of the attributes.

use crate::core::model::{AttributeValue, MessageAttribute};
use md5::{Digest, Md5};
use std::collections::BTreeMap;

/// Hex MD5 of a message body.
pub(super) fn of_body(body: &str) -> String {
    hex::encode(Md5::digest(body.as_bytes()))
}

/// Hex MD5 of message attributes by AWS's algorithm, or `None` when there are none: names sorted;
/// per attribute the length-prefixed name and data type, a transport byte (1 text, 2 binary), and
/// the length-prefixed value.
pub(super) fn of_attributes(attributes: &BTreeMap<String, MessageAttribute>) -> Option<String> {
    if attributes.is_empty() {
        return None;
    }
    let mut buffer = Vec::new();
    let put = |buffer: &mut Vec<u8>, bytes: &[u8]| {
        buffer.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes());
        buffer.extend_from_slice(bytes);
    };
    for (name, attribute) in attributes {
        put(&mut buffer, name.as_bytes());
        put(&mut buffer, attribute.data_type.as_bytes());
        match &attribute.value {
            AttributeValue::Text(text) => {
                buffer.push(1);
                put(&mut buffer, text.as_bytes());
            }
            AttributeValue::Bytes(bytes) => {
                buffer.push(2);
                put(&mut buffer, bytes);
            }
        }
    }
    Some(hex::encode(Md5::digest(&buffer)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_digest_is_plain_md5() {
        assert_eq!(of_body("hello"), "5d41402abc4b2a76b9719d911017c592");
    }

    #[test]
    fn body_digest_is_of_the_utf8_bytes() {
        assert_eq!(
            of_body("\u{e9} \u{2603}"),
            "f5e48c8a9dd5e48958f4a7389283e0b2"
        );
    }

    #[test]
    fn no_attributes_no_digest() {
        assert_eq!(of_attributes(&BTreeMap::new()), None);
    }

    /// The vector was computed by an independent implementation of AWS's documented algorithm
    /// (the Python one in tests/clients/scenario.py); the integration tests also compare the
    /// gateway's digests with LocalStack's for the same messages.
    #[test]
    fn attribute_digest_sorts_names_and_marks_binary_values() {
        let attribute = |data_type: &str, value: AttributeValue| MessageAttribute {
            data_type: data_type.into(),
            value,
        };
        let attributes = BTreeMap::from([
            (
                "event".to_owned(),
                attribute("String", AttributeValue::Text("order.paid".into())),
            ),
            (
                "blob".to_owned(),
                attribute("Binary", AttributeValue::Bytes(vec![0, 1, 0xfe])),
            ),
            (
                "amount".to_owned(),
                attribute("Number.cents", AttributeValue::Text("1250".into())),
            ),
        ]);
        assert_eq!(
            of_attributes(&attributes).as_deref(),
            Some("bcc416d1ac549c1f88444ea9ac284282")
        );
    }
}
