//! The state store through the real HTTP server: replicas sharing it in Redis, the store itself,
//! its outages and stalls, the ledger's bound, and the sombus credentials and basaltic metrics
//! replicas share through it. `own_redis` starts Redis servers a test can take away.

mod ledger_bound;
mod outage;
pub mod own_redis;
mod redis_store;
mod replicas;
mod shared_credentials;
mod shared_metrics;
mod stall;
pub mod support;
