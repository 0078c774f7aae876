//! The push subscriptions made through the API ([`RecordStore`]) on Redis or Valkey, shared by
//! replicas: the records in one hash by queue and name (`P{push}:subscriptions`, field
//! `<queue>/<name>`, JSON with the secrets sealed), their revisions in another
//! (`P{push}:revisions`), each queue's audit trail in a list
//! of its own, newest first (`P{push}:audit:<queue>`, kept as [`crate::core::push::records`]
//! says), the queues' delivery pauses in a hash by queue (`P{push}:pauses`), and the version
//! every change bumps (`P{push}:version`), which replicas poll. Every key
//! carries the `{push}` hash tag: one slot.

use super::RedisServer;
use crate::core::delivery_pause::DeliveryPause;
use crate::core::push::admin::AuditEntry;
use crate::core::push::record::Record;
use crate::core::push::records::{
    AUDIT_KEPT_AT_LEAST, AUDIT_KEPT_PER_QUEUE, RecordStore, Room, StoreFailure, Write, Written,
};
use async_trait::async_trait;
use redis::Script;

/// The push subscriptions' keys on a Redis or Valkey server.
pub struct RedisPushRecords {
    server: RedisServer,
    write: Script,
    rekey: Script,
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
            rekey: Script::new(REKEY),
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

/// Moves a record (and its revision) kept under its name alone, as before names were scoped by
/// queue, to its field `<queue>/<name>`, unless one is there already.
/// KEYS: 1 records, 2 revisions. ARGV: 1 the old field, 2 the new one.
const REKEY: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  local record = redis.call('HGET', KEYS[1], ARGV[1])
  local revision = redis.call('HGET', KEYS[2], ARGV[1])
  if record then redis.call('HSET', KEYS[1], ARGV[2], record) end
  if revision then redis.call('HSET', KEYS[2], ARGV[2], revision) end
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
";

#[async_trait]
impl RecordStore for RedisPushRecords {
    async fn load(&self) -> Result<Vec<Record>, StoreFailure> {
        let mut all = redis::cmd("HGETALL");
        all.arg(self.key("subscriptions"));
        let stored: Vec<(String, String)> = self.server.query(&all).await.map_err(failed)?;
        let mut records = Vec::with_capacity(stored.len());
        for (field, json) in stored {
            let record: Record = serde_json::from_str(&json)
                .map_err(|error| StoreFailure(format!("a damaged record: {error}")))?;
            if field != record.key() {
                let mut invocation = self.rekey.prepare_invoke();
                invocation
                    .key(self.key("subscriptions"))
                    .key(self.key("revisions"))
                    .arg(&field)
                    .arg(record.key());
                let _: i64 = self.server.invoke(invocation).await.map_err(failed)?;
            }
            records.push(record);
        }
        Ok(records)
    }

    async fn pauses(&self) -> Result<Vec<DeliveryPause>, StoreFailure> {
        let mut all = redis::cmd("HVALS");
        all.arg(self.key("pauses"));
        let stored: Vec<String> = self.server.query(&all).await.map_err(failed)?;
        stored
            .iter()
            .map(|json| {
                serde_json::from_str(json)
                    .map_err(|error| StoreFailure(format!("a damaged pause: {error}")))
            })
            .collect()
    }

    async fn write(
        &self,
        write: Write<'_>,
        expected: u64,
        audit: &AuditEntry,
        room: Room,
    ) -> Result<Written, StoreFailure> {
        let (key, revision, json, kind) = match write {
            Write::Put(record) => (
                record.key(),
                record.revision,
                serde_json::to_string(record).map_err(failed)?,
                "record",
            ),
            Write::Remove(key) => (key.to_owned(), 0, String::new(), "record"),
            Write::Pause(pause) => (
                pause.queue.clone(),
                0,
                serde_json::to_string(pause).map_err(failed)?,
                "pause",
            ),
            Write::Resume(queue) => (queue.to_owned(), 0, String::new(), "resume"),
        };
        let line = serde_json::to_string(audit).map_err(failed)?;
        let mut invocation = self.write.prepare_invoke();
        invocation
            .key(self.key("subscriptions"))
            .key(self.key("revisions"))
            .key(self.key("version"))
            .key(self.trail_key(&audit.queue))
            .key(self.key("audit_seq"))
            .key(self.key("pauses"))
            .arg(key)
            .arg(expected)
            .arg(revision)
            .arg(json)
            .arg(line)
            .arg(AUDIT_KEPT_PER_QUEUE)
            .arg(audit.at.timestamp_millis())
            .arg(AUDIT_KEPT_AT_LEAST.as_millis() as u64)
            .arg(if room == Room::Always { "1" } else { "0" })
            .arg(kind);
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
    ) -> Result<Vec<AuditEntry>, StoreFailure> {
        let mut range = redis::cmd("LRANGE");
        range.arg(self.trail_key(queue)).arg(0).arg(-1);
        let lines: Vec<String> = self.server.query(&range).await.map_err(failed)?;
        Ok(lines
            .iter()
            .filter_map(|line| {
                let (seq, rest) = line.split_once(' ')?;
                let (_at, json) = rest.split_once(' ')?;
                let mut parsed: AuditEntry = serde_json::from_str(json).ok()?;
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
