//! Typed message attributes beyond what a backend holds: SQS (and the embedded engine, which
//! follows it) keeps at most 10 attributes a message, while the gateway's APIs promise up to 20.
//! A message with more than 10 goes to the backend with one reserved Binary attribute holding them
//! all, in the versioned format below, and every receive path unpacks it; so does a message with a
//! name SQS cannot hold (longer than LocalStack's 255 bytes, or outside SQS's `A-Za-z0-9_-.`).
//!
//! Format of [`PACKED`]'s value, version 1 (all lengths big-endian):
//!
//! ```text
//! 0x01                                   format version
//! then per attribute, in name order:
//!   u16 name length,  name (UTF-8)
//!   u16 type length,  data type (UTF-8: String, Number or Binary, with an optional .label)
//!   u8  kind          1 = String/Number value (UTF-8), 2 = Binary value (bytes)
//!   u32 value length, value
//! ```
//!
//! Attribute names starting with [`RESERVED_PREFIX`] are the gateway's own: clients cannot send
//! them (`core::message_rules` refuses them).

use crate::core::attribute_names;
use crate::core::model::{AttributeValue, MessageAttribute};
use std::collections::BTreeMap;

/// The prefix of the gateway's own stored attributes.
pub const RESERVED_PREFIX: &str = "sqsgw.";
/// The attribute that carries packed attributes.
pub const PACKED: &str = "sqsgw.attributes";
/// The attributes a backend message holds at most (SQS's limit).
pub const BACKEND_MAX: usize = 10;
/// The attributes a message may have through the core (the most any API promises).
pub const MAX_ATTRIBUTES: usize = 20;
/// The longest attribute name every backend takes as it is: AWS takes 256 bytes, LocalStack
/// only 255, so a message with a 256-byte name is packed too.
pub const BACKEND_MAX_NAME: usize = 255;
/// The current format version.
const VERSION: u8 = 1;

/// The attributes as the backend stores them: unchanged up to [`BACKEND_MAX`] (with names of at
/// most [`BACKEND_MAX_NAME`] bytes), else all packed into [`PACKED`].
pub fn pack(attributes: &BTreeMap<String, MessageAttribute>) -> BTreeMap<String, MessageAttribute> {
    if !needs_packing(attributes) {
        return attributes.clone();
    }
    let mut bytes = vec![VERSION];
    for (name, attribute) in attributes {
        put(&mut bytes, name.as_bytes(), 2);
        put(&mut bytes, attribute.data_type.as_bytes(), 2);
        match &attribute.value {
            AttributeValue::Text(text) => {
                bytes.push(1);
                put(&mut bytes, text.as_bytes(), 4);
            }
            AttributeValue::Bytes(value) => {
                bytes.push(2);
                put(&mut bytes, value, 4);
            }
        }
    }
    BTreeMap::from([(
        PACKED.to_owned(),
        MessageAttribute {
            data_type: "Binary".to_owned(),
            value: AttributeValue::Bytes(bytes),
        },
    )])
}

/// Whether the attributes go to the backend packed: more than [`BACKEND_MAX`], or a name a backend
/// cannot hold as it is (longer than [`BACKEND_MAX_NAME`], or outside SQS's syntax: `évent`,
/// `event:type`, `event type`, which other APIs than SQS's take).
pub fn needs_packing(attributes: &BTreeMap<String, MessageAttribute>) -> bool {
    attributes.len() > BACKEND_MAX
        || attributes
            .keys()
            .any(|name| name.len() > BACKEND_MAX_NAME || !attribute_names::sqs_name(name))
}

/// The attributes as the client sent them: a packed set is unpacked. One that cannot be read
/// (not the gateway's doing: written to the backend directly) is dropped, and logged.
pub fn unpack(
    mut attributes: BTreeMap<String, MessageAttribute>,
) -> BTreeMap<String, MessageAttribute> {
    let Some(packed) = attributes.remove(PACKED) else {
        return attributes;
    };
    // Nothing else of ours belongs beside it; nothing else may be forged as ours.
    attributes.retain(|name, _| !is_reserved(name));
    match &packed.value {
        AttributeValue::Bytes(bytes) => match read(bytes) {
            Some(unpacked) => {
                attributes.extend(unpacked);
                attributes
            }
            None => {
                tracing::warn!(
                    "a message carries a packed attribute set the gateway cannot read; dropped"
                );
                attributes
            }
        },
        AttributeValue::Text(_) => {
            tracing::warn!("a message carries a packed attribute set that is not binary; dropped");
            attributes
        }
    }
}

/// Whether a name is the gateway's own.
pub fn is_reserved(name: &str) -> bool {
    name.get(..RESERVED_PREFIX.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(RESERVED_PREFIX))
}

fn put(bytes: &mut Vec<u8>, value: &[u8], width: usize) {
    let length = value.len() as u64;
    bytes.extend_from_slice(&length.to_be_bytes()[8 - width..]);
    bytes.extend_from_slice(value);
}

fn read(bytes: &[u8]) -> Option<BTreeMap<String, MessageAttribute>> {
    let mut cursor = Cursor(bytes);
    if cursor.byte()? != VERSION {
        return None;
    }
    let mut attributes = BTreeMap::new();
    while !cursor.0.is_empty() {
        let name = String::from_utf8(cursor.field(2)?.to_vec()).ok()?;
        let data_type = String::from_utf8(cursor.field(2)?.to_vec()).ok()?;
        let value = match (cursor.byte()?, cursor.field(4)?) {
            (1, text) => AttributeValue::Text(String::from_utf8(text.to_vec()).ok()?),
            (2, bytes) => AttributeValue::Bytes(bytes.to_vec()),
            _ => return None,
        };
        attributes.insert(name, MessageAttribute { data_type, value });
    }
    Some(attributes)
}

/// Reads the packed format front to back.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&byte, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(byte)
    }

    /// A value preceded by its length in `width` bytes.
    fn field(&mut self, width: usize) -> Option<&'a [u8]> {
        let (length, rest) = self.0.split_at_checked(width)?;
        let length = length
            .iter()
            .fold(0usize, |n, b| (n << 8) | usize::from(*b));
        let (value, rest) = rest.split_at_checked(length)?;
        self.0 = rest;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes(count: usize) -> BTreeMap<String, MessageAttribute> {
        (0..count)
            .map(|n| {
                let (data_type, value) = match n % 3 {
                    0 => ("String", AttributeValue::Text(format!("v{n} \u{e9}"))),
                    1 => ("Number.int", AttributeValue::Text(n.to_string())),
                    _ => ("Binary.blob", AttributeValue::Bytes(vec![0, n as u8, 0xff])),
                };
                (
                    format!("a{n:02}"),
                    MessageAttribute {
                        data_type: data_type.into(),
                        value,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn up_to_ten_attributes_stay_as_they_are() {
        let ten = attributes(10);
        assert_eq!(pack(&ten), ten);
        assert_eq!(unpack(ten.clone()), ten);
    }

    #[test]
    fn more_than_ten_travel_packed_and_come_back_whole() {
        let twenty = attributes(20);
        let packed = pack(&twenty);
        assert_eq!(packed.len(), 1);
        assert_eq!(packed[PACKED].data_type, "Binary");
        assert_eq!(unpack(packed), twenty);
    }

    #[test]
    fn a_256_byte_name_travels_packed() {
        let mut long = attributes(1);
        long.insert("n".repeat(256), long["a00"].clone());
        let packed = pack(&long);
        assert_eq!(packed.keys().collect::<Vec<_>>(), [PACKED]);
        assert_eq!(unpack(packed), long);
        let mut fits = attributes(1);
        fits.insert("n".repeat(255), fits["a00"].clone());
        assert_eq!(pack(&fits), fits);
    }

    /// Names SQS would refuse (other APIs take any 1 to 256 bytes) travel packed, and come back;
    /// letters of any script SQS takes as they are.
    #[test]
    fn names_sqs_cannot_hold_travel_packed() {
        let mut lettered = attributes(2);
        lettered.insert("evento.a\u{f1}o".to_owned(), lettered["a01"].clone());
        assert_eq!(pack(&lettered), lettered);
        for name in [
            "event\u{a7}type",
            "event!type",
            "event:type",
            "event/type",
            "event type",
            ".a",
        ] {
            let mut named = attributes(2);
            named.insert(name.to_owned(), named["a01"].clone());
            let packed = pack(&named);
            assert_eq!(packed.keys().collect::<Vec<_>>(), [PACKED], "{name}");
            assert_eq!(unpack(packed), named, "{name}");
        }
    }

    /// The format is part of what is stored: this is version 1, byte for byte.
    #[test]
    fn the_packed_format_is_version_one() {
        let AttributeValue::Bytes(bytes) = &pack(&attributes(11))[PACKED].value else {
            panic!("binary")
        };
        assert_eq!(bytes[0], 1);
        // The first attribute: a00, String, text "v0 é".
        assert_eq!(
            &bytes[1..22],
            &[
                0, 3, b'a', b'0', b'0', 0, 6, b'S', b't', b'r', b'i', b'n', b'g', 1, 0, 0, 0, 5,
                b'v', b'0', b' '
            ]
        );
        let stored = [
            1, 0, 1, b'x', 0, 6, b'S', b't', b'r', b'i', b'n', b'g', 1, 0, 0, 0, 2, b'h', b'i', 0,
            1, b'y', 0, 6, b'B', b'i', b'n', b'a', b'r', b'y', 2, 0, 0, 0, 1, 7,
        ];
        let read_back = unpack(BTreeMap::from([(
            PACKED.to_owned(),
            MessageAttribute {
                data_type: "Binary".into(),
                value: AttributeValue::Bytes(stored.to_vec()),
            },
        )]));
        assert_eq!(read_back["x"].value, AttributeValue::Text("hi".into()));
        assert_eq!(read_back["y"].value, AttributeValue::Bytes(vec![7]));
    }

    #[test]
    fn what_cannot_be_read_is_dropped_and_nothing_is_forged_as_ours() {
        let mut broken = BTreeMap::from([(
            PACKED.to_owned(),
            MessageAttribute {
                data_type: "Binary".into(),
                value: AttributeValue::Bytes(vec![9, 0, 1]),
            },
        )]);
        broken.insert(
            "SQSGW.other".into(),
            MessageAttribute {
                data_type: "String".into(),
                value: AttributeValue::Text("forged".into()),
            },
        );
        assert!(unpack(broken).is_empty());
        assert!(is_reserved("sqsgw.x") && is_reserved("SqsGw.x") && !is_reserved("sqsgwx"));
    }
}
