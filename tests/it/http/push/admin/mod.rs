//! Push subscriptions made, changed and removed through the basaltic API: the API itself, where
//! subscriptions are kept (restarts, replicas, Redis records), and what they may not do.

mod api;
mod limits;
mod stores;
mod support;
