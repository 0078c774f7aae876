//! Adapters of the core's state port ([`crate::core::state::StateStore`]) that keep the state
//! outside this process: the core owns the port and its in-process store, and imports none of
//! these; the server picks one from the config.

pub mod redis;
