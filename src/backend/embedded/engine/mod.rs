//! One queue's state machine with SQS semantics, in memory, with time passed in explicitly.
//!
//! Every mutation appends the records it changed to a journal ([`Op`]s), which the store makes
//! durable; the engine itself never touches the disk or the clock, so every time-dependent rule
//! (visibility, delays, retention, deduplication and attempt windows) is tested with plain numbers.

mod bodies;
mod fifo;
mod journal;
mod message;
mod queue;
mod receive;
mod settings;

pub use bodies::{Body, BodyCache, Held};
pub use fifo::{Dedup, FIFO_WINDOW_MS, sequence_number};
pub use journal::Op;
pub use message::{Message, Moving, State};
pub use queue::{ACCOUNT, Queue, REGION};
pub use receive::{
    Delivered, InFlightLimits, MAX_IN_FLIGHT_FIFO, MAX_IN_FLIGHT_STANDARD, Received, Take,
};
pub use settings::Settings;
