//! The names tests give: the test organization and project of every gateway's config, names no
//! other test uses, and the config lines that let the test key manage queues.

pub const ORG: &str = "acme";

pub const PROJECT: &str = "shop";

/// The config lines that let the SQS endpoint's test key create, change and delete queues.
pub const MANAGE_QUEUES: &str = "[sqs_api]\nmanage_queues = true\n";

/// `prefix` and 8 random hex digits: a name no other test (or earlier run) uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{:08x}", rand::random::<u32>())
}
