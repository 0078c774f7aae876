//! The sombus bus over HTTP: the token service, the pull routes, delivery, credentials, the admin
//! API and its credential store, its OpenAPI document, and the README's consumer loop. `support`
//! holds the bus the other folders' tests start too.

mod credentials;
mod delivery;
mod hardening;
mod openapi;
mod pull;
mod readme_consumer_loop;
mod store;
pub mod support;
mod token;
