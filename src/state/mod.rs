//! Adapters of the core's state port ([`crate::core::state::StateStore`]) that keep the state
//! outside this process (a shared server; a file across a graceful restart): the core owns the
//! port and its in-process store, and imports none of these; the server picks from the config.

pub mod redis;
pub mod restart_file;
