//! What SQS takes as a message attribute name as it is, the one rule both the message rules and
//! the packing of attributes a backend cannot hold stand on.

/// The longest attribute name and data type.
pub const MAX_NAME: usize = 256;

/// Whether SQS itself takes a name as it is: 1 to 256 bytes of letters and digits (of any script,
/// as AWS takes `attr.1øßä`), `_`, `-` and `.`, without a leading, trailing or doubled `.` (the
/// gateway's other rules aside).
pub fn sqs_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
}
