//! The binaries tier: `sqs-gateway`, `basaltic` and `ezgh` run as child processes (config errors, key commands, signals, restarts and `kill -9`, the README quick start).

mod cli;
mod clis;
mod config_secrets;
mod damaged_store;
mod embedded;
mod first_start;
mod key_commands;
mod key_reload;
mod permissions;
mod quick_start;
mod signals;
mod single_node;
pub mod sombus_cli;
mod sombus_import;
mod spans;
