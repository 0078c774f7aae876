//! The embedded engine's durability, with the gateway binary as a child process: restarts,
//! `kill -9` in the middle of a load, a full disk, and bodies kept on disk only.

mod kills;
mod restarts;
mod storage;
mod support;
