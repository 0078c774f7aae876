//! What SQS takes as a message attribute name as it is, the one rule both the message rules and
//! the packing of attributes a backend cannot hold stand on.

/// The longest attribute name and data type.
pub const MAX_NAME: usize = 256;

/// Whether SQS itself takes a name as it is: 1 to 256 of `A-Z a-z 0-9 _ - .`, without a leading,
/// trailing or doubled `.` (the gateway's other rules aside).
pub fn sqs_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
}
