//! The in-process tier: the service's router and the core called without a socket, over a fake
//! backend, with tokio's time paused and the core's clock on it, so leases, long polls, attempt
//! windows and rate limits run on virtual time. The dialects' rules that need no socket live here.

pub mod core;
pub mod fake;
pub mod router;
mod rules;
