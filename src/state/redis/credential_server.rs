//! The sombus credential store's server ([`CredentialServer`]) on Redis or Valkey: the
//! connections in one hash by client id (`P{sombus}:connections`, records as in
//! `connections.json`), the audit log in one stream (`P{sombus}:audit`, entry ids `0-<place>`),
//! the version every change bumps (`P{sombus}:version`), and the channel changed client ids are
//! published on (`P{sombus}:changed`). Every key carries the `{sombus}` hash tag: one slot.
//!
//! The server must keep what it is given (AOF or RDB persistence, a replica for failover): a
//! server that loses its data loses the connections with it, as a lost directory would.

use super::{RedisFailure, RedisServer};
use crate::credentials::oauth::StoreError;
use crate::credentials::oauth::shared_server::{Commit, CredentialServer, Snapshot};
use async_trait::async_trait;
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;
use redis::Script;

/// A stream entry as XRANGE answers it: its id and its field/value pairs.
type StreamEntry = (String, Vec<(String, Vec<u8>)>);

/// The snapshot pipeline's answer: the version, the connections' records, the last audit line.
type SnapshotReply = (Option<i64>, Vec<(String, Vec<u8>)>, Vec<StreamEntry>);

/// The credential store's keys on a Redis or Valkey server.
pub struct RedisCredentialServer {
    server: RedisServer,
    commit: Script,
    import: Script,
}

impl std::fmt::Debug for RedisCredentialServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCredentialServer")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl RedisCredentialServer {
    /// The store's keys on `server`.
    pub fn new(server: RedisServer) -> Self {
        Self {
            server,
            commit: Script::new(include_str!("sombus_commit.lua")),
            import: Script::new(include_str!("sombus_import.lua")),
        }
    }

    fn key(&self, what: &str) -> String {
        self.server.key(&format!("{{sombus}}:{what}"))
    }
}

#[async_trait]
impl CredentialServer for RedisCredentialServer {
    async fn probe(&self) -> Result<(), StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.key("version"));
        self.server
            .query::<Option<i64>>(&get)
            .await
            .map(drop)
            .map_err(unavailable)
    }

    async fn record(&self, client_id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let mut get = redis::cmd("HGET");
        get.arg(self.key("connections")).arg(client_id);
        self.server.query(&get).await.map_err(unavailable)
    }

    async fn records(&self) -> Result<Vec<Vec<u8>>, StoreError> {
        let mut values = redis::cmd("HVALS");
        values.arg(self.key("connections"));
        self.server.query(&values).await.map_err(unavailable)
    }

    async fn snapshot(&self) -> Result<Snapshot, StoreError> {
        let mut pipeline = redis::pipe();
        pipeline
            .atomic()
            .cmd("GET")
            .arg(self.key("version"))
            .cmd("HGETALL")
            .arg(self.key("connections"))
            .cmd("XREVRANGE")
            .arg(self.key("audit"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1);
        let (version, records, last): SnapshotReply =
            self.server.pipeline(&pipeline).await.map_err(unavailable)?;
        Ok(Snapshot {
            version: version.unwrap_or(0),
            records: records.into_iter().collect(),
            last_line: last.into_iter().next().map(|(_, fields)| line_in(fields)),
        })
    }

    async fn commit(&self, commit: Commit<'_>) -> Result<bool, StoreError> {
        let mut invocation = self.commit.prepare_invoke();
        invocation
            .key(self.key("version"))
            .key(self.key("connections"))
            .key(self.key("audit"))
            .arg(commit.read_at)
            .arg(self.key("changed"));
        match commit.line {
            Some((seq, bytes)) => invocation.arg(format!("0-{seq}")).arg(bytes),
            None => invocation.arg("").arg(""),
        };
        invocation.arg(commit.sets.len());
        for (client_id, record) in commit.sets {
            invocation.arg(client_id).arg(record.as_slice());
        }
        for client_id in commit.removed {
            invocation.arg(client_id);
        }
        let made: i64 = self.server.invoke(invocation).await.map_err(unavailable)?;
        Ok(made == 1)
    }

    async fn lines(
        &self,
        through: Option<u64>,
        count: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let mut range = redis::cmd("XREVRANGE");
        range
            .arg(self.key("audit"))
            .arg(through.map_or_else(|| "+".to_owned(), |place| format!("0-{place}")))
            .arg("-")
            .arg("COUNT")
            .arg(count);
        let entries: Vec<StreamEntry> = self.server.query(&range).await.map_err(unavailable)?;
        Ok(entries
            .into_iter()
            .filter_map(|(id, fields)| Some((place_of(&id)?, line_in(fields))))
            .collect())
    }

    async fn changes(&self) -> Result<BoxStream<'static, String>, StoreError> {
        let subscription = self
            .server
            .subscribe(&self.key("changed"))
            .await
            .map_err(unavailable)?;
        Ok(subscription
            .into_on_message()
            .map(|message| message.get_payload().unwrap_or_default())
            .boxed())
    }

    async fn import(
        &self,
        records: &[(String, Vec<u8>)],
        lines: &[Vec<u8>],
    ) -> Result<bool, StoreError> {
        let mut invocation = self.import.prepare_invoke();
        invocation
            .key(self.key("version"))
            .key(self.key("connections"))
            .key(self.key("audit"))
            .arg(self.key("changed"))
            .arg(records.len());
        for (client_id, record) in records {
            invocation.arg(client_id).arg(record.as_slice());
        }
        for line in lines {
            invocation.arg(line.as_slice());
        }
        let made: i64 = self.server.invoke(invocation).await.map_err(unavailable)?;
        Ok(made == 1)
    }
}

/// The place in the log an audit entry id (`0-<place>`) names.
fn place_of(id: &str) -> Option<u64> {
    id.strip_prefix("0-")?
        .parse()
        .ok()
        .filter(|place| *place > 0)
}

/// The `line` field of a stream entry.
fn line_in(fields: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    fields
        .into_iter()
        .find_map(|(field, value)| (field == "line").then_some(value))
        .unwrap_or_default()
}

fn unavailable(failure: RedisFailure) -> StoreError {
    StoreError::Io(failure.0)
}
