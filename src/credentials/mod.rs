//! Credentials, beside the core and used by the dialects: each kind proves who a caller is and
//! carries its grants in the core's terms.

pub mod admin_keys;
pub mod api_keys;
pub mod basaltic_keys;
pub mod key_book;
pub mod live;
pub mod oauth;
pub mod secrets;
pub mod sqs_keys;
