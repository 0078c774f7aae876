//! The push subscriptions made through the API ([`RecordStore`]) on Redis or Valkey, shared by
//! replicas: the records in one hash by name (`P{push}:subscriptions`, JSON with the secrets
//! sealed), their revisions in another (`P{push}:revisions`), each queue's audit trail in a list
//! of its own, newest first (`P{push}:audit:<queue>`, kept as [`crate::push::managed::store`]
//! says), and the version every change bumps (`P{push}:version`), which replicas poll. Every key
//! carries the `{push}` hash tag: one slot.

use super::RedisServer;
use crate::push::managed::record::{AuditLine, Record};
use crate::push::managed::store::{AUDIT_KEPT_AT_LEAST, AUDIT_KEPT_PER_QUEUE};
use crate::push::managed::{RecordStore, Room, StoreFailure, Write, Written};
use async_trait::async_trait;
use redis::Script;

/// The push subscriptions' keys on a Redis or Valkey server.
pub struct RedisPushRecords {
    server: RedisServer,
    write: Script,
}

impl std::fmt::Debug for RedisPushRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPushRecords")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn failed(error: impl std::fmt::Display) -> StoreFailure {
    StoreFailure(error.to_string())
}

impl RedisPushRecords {
    /// The records' keys on `server`.
    pub fn new(server: RedisServer) -> Self {
        Self {
            server,
            write: Script::new(include_str!("push_write.lua")),
        }
    }

    fn key(&self, what: &str) -> String {
        self.server.key(&format!("{{push}}:{what}"))
    }

    /// The list of `queue`'s audit lines.
    fn trail_key(&self, queue: &str) -> String {
        self.key(&format!("audit:{queue}"))
    }
}

#[async_trait]
impl RecordStore for RedisPushRecords {
    async fn load(&self) -> Result<Vec<Record>, StoreFailure> {
        let mut values = redis::cmd("HVALS");
        values.arg(self.key("subscriptions"));
        let stored: Vec<String> = self.server.query(&values).await.map_err(failed)?;
        stored
            .iter()
            .map(|json| {
                serde_json::from_str(json)
                    .map_err(|error| StoreFailure(format!("a damaged record: {error}")))
            })
            .collect()
    }

    async fn write(
        &self,
        write: Write<'_>,
        expected: u64,
        audit: &AuditLine,
        room: Room,
    ) -> Result<Written, StoreFailure> {
        let (name, revision, json) = match write {
            Write::Put(record) => (
                record.name.as_str(),
                record.revision,
                serde_json::to_string(record).map_err(failed)?,
            ),
            Write::Remove(name) => (name, 0, String::new()),
        };
        let line = serde_json::to_string(audit).map_err(failed)?;
        let mut invocation = self.write.prepare_invoke();
        invocation
            .key(self.key("subscriptions"))
            .key(self.key("revisions"))
            .key(self.key("version"))
            .key(self.trail_key(&audit.queue))
            .key(self.key("audit_seq"))
            .arg(name)
            .arg(expected)
            .arg(revision)
            .arg(json)
            .arg(line)
            .arg(AUDIT_KEPT_PER_QUEUE)
            .arg(audit.at.timestamp_millis())
            .arg(AUDIT_KEPT_AT_LEAST.as_millis() as u64)
            .arg(if room == Room::Always { "1" } else { "0" });
        let written: i64 = self.server.invoke(invocation).await.map_err(failed)?;
        Ok(match written {
            1 => Written::Done,
            0 => Written::ChangedMeanwhile,
            oldest => Written::TrailFull {
                oldest: chrono::DateTime::from_timestamp_millis(-oldest).unwrap_or(audit.at),
            },
        })
    }

    async fn audit(
        &self,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditLine>, StoreFailure> {
        let mut range = redis::cmd("LRANGE");
        range.arg(self.trail_key(queue)).arg(0).arg(-1);
        let lines: Vec<String> = self.server.query(&range).await.map_err(failed)?;
        Ok(lines
            .iter()
            .filter_map(|line| {
                let (seq, rest) = line.split_once(' ')?;
                let (_at, json) = rest.split_once(' ')?;
                let mut parsed: AuditLine = serde_json::from_str(json).ok()?;
                parsed.seq = seq.parse().ok()?;
                Some(parsed)
            })
            .filter(|line| line.on_page(queue, before))
            .take(limit)
            .collect())
    }

    async fn version(&self) -> Result<u64, StoreFailure> {
        let mut get = redis::cmd("GET");
        get.arg(self.key("version"));
        let version: Option<u64> = self.server.query(&get).await.map_err(failed)?;
        Ok(version.unwrap_or(0))
    }
}
