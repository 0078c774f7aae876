//! The binaries tier: `sqs-gateway`, `basaltic` and `ezgh` run as child processes (config errors,
//! key commands, signals, restarts and `kill -9`, the README quick start). A command-line client's
//! own commands are in `<client>_cli.rs` (`gateway_cli.rs` for `sqs-gateway`'s, `sombus_cli.rs`
//! for `sqs-gateway sombus …`), what every CLI does alike in `clis.rs`, the embedded engine's
//! durability in `embedded/`, and each other concern in a file of its name.

mod basaltic_cli;
mod clis;
mod config_secrets;
mod damaged_store;
mod embedded;
mod ezgh_cli;
mod first_start;
mod gateway_cli;
mod key_commands;
mod key_reload;
mod permissions;
mod quick_start;
mod signals;
mod single_node;
pub mod sombus_cli;
mod sombus_import;
mod spans;
mod support;
