//! Reading a queue without a lease through a filter: the queue is read in order, in chunks,
//! until a page of matches is found, the end is reached, or the request's bounds of work are
//! spent (messages and body bytes examined); the page says how far it read, so the next request
//! goes on from there.

use super::Gateway;
use crate::core::GatewayError;
use crate::core::access::Caller;
use crate::core::attributes;
use crate::core::message_filter::MessageFilter;
use crate::core::model::PeekedMessage;
use crate::core::operation::Operation;

/// The most messages one request examines.
pub const MOST_SCANNED: usize = 10_000;
/// The most body bytes one request examines (at least one message is always examined).
pub const MOST_SCANNED_BYTES: usize = 16 * 1024 * 1024;
/// How many messages are read from the backend at a time.
const CHUNK: usize = 100;

/// A page of matching messages.
#[derive(Debug)]
pub struct MatchingPage {
    /// The matches, in queue order.
    pub messages: Vec<PeekedMessage>,
    /// Where the next page starts reading (after this position), or `None` when the queue was
    /// read to its end.
    pub next: Option<u64>,
    /// How many messages were examined.
    pub scanned: usize,
}

impl Gateway {
    /// Up to `max` messages of `queue` that `filter` keeps, read without a lease from the one
    /// after position `after`, examining at most `scan` messages (at most [`MOST_SCANNED`]) and
    /// [`MOST_SCANNED_BYTES`] of bodies. A backend that cannot read without a lease (SQS)
    /// answers `Unsupported`.
    pub async fn peek_matching(
        &self,
        caller: &Caller,
        queue: &str,
        after: Option<u64>,
        max: usize,
        filter: &MessageFilter,
        scan: usize,
    ) -> Result<MatchingPage, GatewayError> {
        self.admit(caller, Operation::Peek, queue)?;
        let resolved = self.registry.get(queue).await?;
        let scan = scan.clamp(1, MOST_SCANNED);
        let (mut from, mut scanned, mut bytes) = (after, 0usize, 0usize);
        let mut messages = Vec::new();
        loop {
            // One more than the page holds tells whether anything follows it.
            let wanted = CHUNK.min(scan - scanned + 1);
            let answer = self.backend.peek(&resolved.url, from, wanted).await;
            let chunk = self.settle(queue, answer).await?;
            let read_all = chunk.len() < wanted;
            for mut peeked in chunk {
                if scanned == scan || bytes >= MOST_SCANNED_BYTES || messages.len() == max {
                    // Something is left after the last one examined.
                    return Ok(MatchingPage {
                        messages,
                        next: from,
                        scanned,
                    });
                }
                scanned += 1;
                bytes += peeked.message.body.len();
                from = Some(peeked.position);
                let attributes = std::mem::take(&mut peeked.message.attributes);
                peeked.message.attributes = attributes::unpack(attributes);
                if filter.matches(&peeked.message) {
                    messages.push(peeked);
                }
            }
            if read_all {
                return Ok(MatchingPage {
                    messages,
                    next: None,
                    scanned,
                });
            }
        }
    }
}
