//! The basaltic queue API over HTTP: messages, what a request may hold, keys and permissions,
//! queues as resources, its OpenAPI document held to the basaltic docs, and the request bodies the
//! README shows. `support` holds the gateway the other folders' tests start too.

mod inspecting;
mod limits;
mod messages;
mod openapi;
mod permissions;
mod queues;
mod readme;
pub mod support;
