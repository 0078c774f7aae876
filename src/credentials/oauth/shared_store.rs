//! The sombus connections and their audit log on the Redis or Valkey server every replica
//! shares (when `[state.redis]` is configured): connections in one hash by client id, the audit
//! log in one stream (entry ids `0-<seq>`, each line chained to the one before as in the file),
//! and a version every change bumps. Keys carry the `{sombus}` hash tag: one slot.
//!
//! A change reads the store (one atomic pipeline), applies itself in the gateway, and is written
//! by one script only if the version is still the one it read, its audit line with it: a change
//! is never made without its line, and two replicas' changes never overwrite each other (the
//! later one reads again and applies again, at most [`CHANGE_TRIES`] times, then answers busy).
//! The script publishes each changed client id; every replica listening ([`SharedStore::follow`])
//! drops its copy at once, and the periodic recheck stays the bound when a message is missed.
//!
//! The server must keep what it is given (AOF or RDB persistence, a replica for failover): a
//! server that loses its data loses the connections with it, as a lost directory would.

use super::audit_log::{self, AuditPage, LinePage};
use super::connection::Connection;
use super::local_store::{being_created, insert_new};
use super::store::{AuditEntry, StoreError};
use crate::state::redis::{RedisFailure, RedisServer};
use futures_util::StreamExt as _;
use redis::Script;
use std::collections::BTreeMap;
use std::time::Duration;

/// How many times a change is applied to a store other replicas keep changing before it is
/// refused as busy.
const CHANGE_TRIES: u32 = 8;
/// Audit lines read per call while paging.
const PAGE_BATCH: usize = 256;
/// The most audit lines one page reads: a workspace with few entries among many of others' gets
/// a short (even empty) page with a cursor, never a read of the whole log.
const SCAN_LINES: usize = 8192;
/// How long a lost subscription waits before subscribing again.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// The store on the shared server.
pub(super) struct SharedStore {
    server: RedisServer,
    commit: Script,
    import: Script,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The store as one change read it.
struct Snapshot {
    version: i64,
    /// Each connection's stored record, by client id.
    records: BTreeMap<String, Vec<u8>>,
    /// The audit log's last line.
    last_line: Option<Vec<u8>>,
}

/// A stream entry as XRANGE answers it: its id and its field/value pairs.
type StreamEntry = (String, Vec<(String, Vec<u8>)>);

/// The snapshot pipeline's answer: the version, the connections' records, the last audit line.
type SnapshotReply = (Option<i64>, Vec<(String, Vec<u8>)>, Vec<StreamEntry>);

impl SharedStore {
    /// The store on `server`.
    pub(super) fn new(server: RedisServer) -> Self {
        Self {
            server,
            commit: Script::new(include_str!("shared_commit.lua")),
            import: Script::new(include_str!("shared_import.lua")),
        }
    }

    fn key(&self, what: &str) -> String {
        self.server.key(&format!("{{sombus}}:{what}"))
    }

    /// Whether the server answers.
    pub(super) async fn probe(&self) -> Result<(), StoreError> {
        let mut get = redis::cmd("GET");
        get.arg(self.key("version"));
        self.server
            .query::<Option<i64>>(&get)
            .await
            .map(drop)
            .map_err(unavailable)
    }

    /// The connection as stored now.
    pub(super) async fn get(&self, client_id: &str) -> Result<Option<Connection>, StoreError> {
        let mut get = redis::cmd("HGET");
        get.arg(self.key("connections")).arg(client_id);
        let record: Option<Vec<u8>> = self.server.query(&get).await.map_err(unavailable)?;
        record.as_deref().map(parse_record).transpose()
    }

    /// The stored connections that `keep` keeps.
    pub(super) async fn list(
        &self,
        keep: impl Fn(&Connection) -> bool,
    ) -> Result<Vec<Connection>, StoreError> {
        let mut values = redis::cmd("HVALS");
        values.arg(self.key("connections"));
        let records: Vec<Vec<u8>> = self.server.query(&values).await.map_err(unavailable)?;
        let mut connections = records
            .iter()
            .map(|record| parse_record(record))
            .collect::<Result<Vec<_>, _>>()?;
        connections.retain(|connection| keep(connection));
        connections.sort_by(|a, b| a.client_id.cmp(&b.client_id));
        Ok(connections)
    }

    /// Adds a connection ([`super::store::ConnectionStore::create`]).
    pub(super) async fn create(
        &self,
        connection: Connection,
        audit: AuditEntry,
    ) -> Result<(), StoreError> {
        self.change(Some(audit), |connections| {
            insert_new(connections, connection.clone())
        })
        .await
    }

    /// Marks a create made whole.
    pub(super) async fn finish_create(
        &self,
        client_id: &str,
        instance: &str,
    ) -> Result<Connection, StoreError> {
        self.change(None, |connections| {
            let connection = being_created(connections, client_id, instance)?;
            connection.creating = false;
            Ok(connection.clone())
        })
        .await
    }

    /// Removes a create that did not finish.
    pub(super) async fn undo_create(
        &self,
        client_id: &str,
        instance: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        self.change(Some(audit), |connections| {
            being_created(connections, client_id, instance)?;
            connections.remove(client_id).ok_or(StoreError::NotFound)
        })
        .await
    }

    /// Changes a connection with `apply` (applied again if another replica changed the store
    /// meanwhile).
    pub(super) async fn update<T>(
        &self,
        client_id: &str,
        audit: AuditEntry,
        mut apply: impl FnMut(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<(T, Connection), StoreError> {
        self.change(Some(audit), |connections| {
            let connection = connections.get_mut(client_id).ok_or(StoreError::NotFound)?;
            let answer = apply(connection)?;
            Ok((answer, connection.clone()))
        })
        .await
    }

    /// Removes a connection.
    pub(super) async fn remove(
        &self,
        client_id: &str,
        audit: AuditEntry,
    ) -> Result<Connection, StoreError> {
        self.change(Some(audit), |connections| {
            connections.remove(client_id).ok_or(StoreError::NotFound)
        })
        .await
    }

    /// Appends an audit line of something that changed no connection.
    pub(super) async fn record(&self, audit: AuditEntry) -> Result<(), StoreError> {
        self.change(Some(audit), |_| Ok(())).await
    }

    /// Takes in a directory's whole store (its connections, and its audit log's lines as they
    /// are, each under its place in the log), only while this store holds nothing at all: one
    /// script, so of two imports at once one is made. Answers whether it was made. A log whose
    /// chained lines are not at their places (lines written before the log was chained, ahead
    /// of chained ones) is refused: later lines could not follow it.
    pub(super) async fn import(
        &self,
        connections: &[Connection],
        lines: &[Vec<u8>],
    ) -> Result<bool, StoreError> {
        for (index, line) in lines.iter().enumerate() {
            if let Some((seq, _)) = audit_log::link_of(line)
                && seq != 0
                && seq != index as u64 + 1
            {
                return Err(StoreError::Io(format!(
                    "the audit log's line {} says it is line {seq}: it cannot be carried over as it is",
                    index + 1
                )));
            }
        }
        let mut invocation = self.import.prepare_invoke();
        invocation
            .key(self.key("version"))
            .key(self.key("connections"))
            .key(self.key("audit"))
            .arg(self.key("changed"))
            .arg(connections.len());
        for connection in connections {
            let record = serde_json::to_vec(connection)
                .map_err(|error| StoreError::Io(format!("encode: {error}")))?;
            invocation.arg(&connection.client_id).arg(record);
        }
        for line in lines {
            invocation.arg(line.as_slice());
        }
        let made: i64 = self.server.invoke(invocation).await.map_err(unavailable)?;
        Ok(made == 1)
    }

    /// A page of the workspace's audit log: the cursor `before` reads the lines whose place is
    /// at most it (a page's `next`); `None` reads from the newest.
    pub(super) async fn audit(
        &self,
        workspace: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<AuditPage, StoreError> {
        if before == Some(0) {
            return Ok(AuditPage::default());
        }
        // The line just after the range comes along, for its link to the range's newest line.
        // (A cursor is the caller's: at the top of the range it names no line and reads all.)
        let after_id = before.map(|before| before.saturating_add(1));
        let mut end = after_id.map_or_else(|| "+".to_owned(), |after| format!("0-{after}"));
        let mut batch = self.range(&end, PAGE_BATCH + 1).await?;
        let after = match (before, batch.first()) {
            (Some(_), Some((id, _))) if seq_of(id) == after_id => Some(batch.remove(0).1),
            _ => None,
        };
        let mut page = LinePage::new(workspace, limit, after.as_deref());
        let mut scanned = 0;
        loop {
            let complete = batch.len() < PAGE_BATCH;
            let count = batch.len();
            let mut oldest = None;
            for (index, (id, line)) in batch.into_iter().enumerate() {
                let Some(seq) = seq_of(&id) else { continue };
                page.line(seq - 1, &line, complete && index + 1 == count);
                oldest = Some(seq);
                scanned += 1;
                if page.is_full() {
                    return Ok(page.finish(None));
                }
            }
            let Some(oldest) = oldest.filter(|_| !complete) else {
                return Ok(page.finish(None));
            };
            if scanned >= SCAN_LINES {
                return Ok(page.finish(Some(oldest - 1)));
            }
            end = format!("(0-{oldest}");
            batch = self.range(&end, PAGE_BATCH).await?;
        }
    }

    /// Listens for the client ids other replicas' changes name, calling `changed` with each
    /// (and with `None` whenever messages may have been missed: at every subscription, after
    /// the first), until `stop`.
    pub(super) async fn follow(
        &self,
        changed: impl Fn(Option<&str>),
        stop: impl Future<Output = ()>,
    ) {
        let channel = self.key("changed");
        let mut stop = std::pin::pin!(stop);
        let mut subscribed_before = false;
        loop {
            match self.server.subscribe(&channel).await {
                Ok(subscription) => {
                    if subscribed_before {
                        changed(None);
                    }
                    subscribed_before = true;
                    let mut messages = subscription.into_on_message();
                    loop {
                        tokio::select! {
                            message = messages.next() => match message {
                                Some(message) => {
                                    let client_id: String =
                                        message.get_payload().unwrap_or_default();
                                    changed(Some(&client_id));
                                }
                                None => break,
                            },
                            () = &mut stop => return,
                        }
                    }
                    tracing::warn!(
                        "lost the subscription to credential changes; subscribing again (meanwhile the recheck time bounds what replicas see)"
                    );
                }
                Err(failure) => {
                    tracing::debug!(error = %failure, "cannot subscribe to credential changes yet");
                }
            }
            tokio::select! {
                () = tokio::time::sleep(RESUBSCRIBE_AFTER) => {}
                () = &mut stop => return,
            }
        }
    }

    /// At most `count` audit lines, newest first, from `end` (an XREVRANGE bound) down.
    async fn range(&self, end: &str, count: usize) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut range = redis::cmd("XREVRANGE");
        range
            .arg(self.key("audit"))
            .arg(end)
            .arg("-")
            .arg("COUNT")
            .arg(count);
        let entries: Vec<StreamEntry> = self.server.query(&range).await.map_err(unavailable)?;
        Ok(entries
            .into_iter()
            .map(|(id, fields)| (id, line_in(fields)))
            .collect())
    }

    /// The store as it is now: one atomic pipeline.
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

    /// One change: read, apply, write if nothing changed meanwhile (else again).
    async fn change<T>(
        &self,
        audit: Option<AuditEntry>,
        mut apply: impl FnMut(&mut BTreeMap<String, Connection>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        for attempt in 0..CHANGE_TRIES {
            let snapshot = self.snapshot().await?;
            let mut connections = snapshot
                .records
                .iter()
                .map(|(client_id, record)| Ok((client_id.clone(), parse_record(record)?)))
                .collect::<Result<BTreeMap<_, _>, StoreError>>()?;
            let answer = apply(&mut connections)?;
            let mut sets = Vec::new();
            for (client_id, connection) in &connections {
                let record = serde_json::to_vec(connection)
                    .map_err(|error| StoreError::Io(format!("encode: {error}")))?;
                if snapshot.records.get(client_id) != Some(&record) {
                    sets.push((client_id.clone(), record));
                }
            }
            let removed: Vec<&String> = snapshot
                .records
                .keys()
                .filter(|client_id| !connections.contains_key(*client_id))
                .collect();
            let line = match &audit {
                Some(entry) => Some(chained(entry.clone(), snapshot.last_line.as_deref())?),
                None => None,
            };
            if sets.is_empty() && removed.is_empty() && line.is_none() {
                return Ok(answer);
            }
            let mut invocation = self.commit.prepare_invoke();
            invocation
                .key(self.key("version"))
                .key(self.key("connections"))
                .key(self.key("audit"))
                .arg(snapshot.version)
                .arg(self.key("changed"));
            match &line {
                Some((seq, bytes)) => invocation.arg(format!("0-{seq}")).arg(bytes.as_slice()),
                None => invocation.arg("").arg(""),
            };
            invocation.arg(sets.len());
            for (client_id, record) in &sets {
                invocation.arg(client_id).arg(record.as_slice());
            }
            for client_id in removed {
                invocation.arg(client_id);
            }
            let made: i64 = self.server.invoke(invocation).await.map_err(unavailable)?;
            if made == 1 {
                return Ok(answer);
            }
            // Another replica's change came first: a short pause, growing, then read again.
            let pause = 5 * u64::from(attempt + 1) + u64::from(rand::random::<u8>() % 10);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        Err(StoreError::Busy)
    }
}

/// `entry` placed after `last` (the log's last line): its place and its link, as its line.
fn chained(mut entry: AuditEntry, last: Option<&[u8]>) -> Result<(u64, Vec<u8>), StoreError> {
    let (seq, prev) = match last.and_then(audit_log::link_of) {
        Some((last_seq, hash)) => (last_seq + 1, hash),
        None if last.is_some() => {
            return Err(StoreError::Io(
                "the shared audit log's last line does not parse".to_owned(),
            ));
        }
        None => (1, String::new()),
    };
    entry.seq = seq;
    entry.prev = prev;
    let line =
        serde_json::to_vec(&entry).map_err(|error| StoreError::Io(format!("encode: {error}")))?;
    Ok((seq, line))
}

/// The place in the log an audit entry id (`0-<seq>`) names.
fn seq_of(id: &str) -> Option<u64> {
    id.strip_prefix("0-")?.parse().ok().filter(|seq| *seq > 0)
}

/// The `line` field of a stream entry.
fn line_in(fields: Vec<(String, Vec<u8>)>) -> Vec<u8> {
    fields
        .into_iter()
        .find_map(|(field, value)| (field == "line").then_some(value))
        .unwrap_or_default()
}

fn parse_record(record: &[u8]) -> Result<Connection, StoreError> {
    serde_json::from_slice(record).map_err(|error| {
        StoreError::Io(format!(
            "a shared connection record does not parse: {error}"
        ))
    })
}

fn unavailable(failure: RedisFailure) -> StoreError {
    StoreError::Io(failure.0)
}
