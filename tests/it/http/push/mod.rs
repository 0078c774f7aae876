//! Push subscriptions over HTTP: deliveries to a receiver on loopback, and (in `admin/`) the
//! subscriptions managed through the basaltic API.

mod admin;
mod delivery;
pub mod receiver;
