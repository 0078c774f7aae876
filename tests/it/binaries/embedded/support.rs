//! What the embedded engine's tests share: a receive and a FIFO message as the backend takes them.

use sqs_gateway::core::model::{BackendReceive, OutgoingMessage};

pub fn receive(max: u32, visibility: u32) -> BackendReceive {
    BackendReceive {
        max_messages: max,
        wait_seconds: 0,
        visibility_timeout_seconds: visibility,
        attempt_id: None,
        one_per_group: false,
        abandoned: Default::default(),
    }
}

pub fn fifo(body: &str, group: &str, dedup: &str) -> OutgoingMessage {
    OutgoingMessage {
        body: body.into(),
        group_id: Some(group.into()),
        deduplication_id: Some(dedup.into()),
        ..Default::default()
    }
}

pub fn receive_at_most(max: u32) -> BackendReceive {
    receive(max, 30)
}
