//! SQS's numeric limits, which the gateway holds every request to whatever its dialect or
//! backend (the APIs' documents state the same figures): written once, here.

/// The longest visibility timeout (12 hours), also the longest sombus release delay.
pub const MAX_VISIBILITY_SECONDS: u32 = 43_200;
/// A queue's visibility timeout when none is given.
pub const DEFAULT_VISIBILITY_SECONDS: u32 = 30;
/// The longest delivery delay (15 minutes).
pub const MAX_DELAY_SECONDS: u32 = 900;
/// The longest long poll.
pub const MAX_WAIT_SECONDS: u32 = 20;
/// The shortest message retention (1 minute).
pub const MIN_RETENTION_SECONDS: u32 = 60;
/// The longest message retention (14 days).
pub const MAX_RETENTION_SECONDS: u32 = 1_209_600;
/// A queue's message retention when none is given (4 days).
pub const DEFAULT_RETENTION_SECONDS: u32 = 345_600;
/// The smallest `MaximumMessageSize` a queue may have.
pub const MIN_MESSAGE_BYTES: u32 = 1_024;
/// The largest `MaximumMessageSize` SQS takes (1 MiB).
pub const MAX_MESSAGE_BYTES: u32 = 1_048_576;
/// The most messages one receive hands out, and the most entries of one batch.
pub const MAX_BATCH: u32 = 10;

/// The fastest a message move task may be asked to run, messages a second.
pub const MAX_MOVE_RATE: u32 = 500;
