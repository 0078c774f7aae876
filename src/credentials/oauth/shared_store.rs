//! The sombus connections and their audit log on a server every replica shares (when
//! `[state.redis]` is configured), through the [`CredentialServer`] port: connections by client
//! id, the audit log by place (each line chained to the one before as in the file), and a
//! version every change bumps.
//!
//! A change reads the store (one atomic read), applies itself in the gateway, and is written
//! only if the version is still the one it read, its audit line with it: a change is never made
//! without its line, and two replicas' changes never overwrite each other (the later one reads
//! again and applies again, at most [`CHANGE_TRIES`] times, then answers busy). Each change
//! publishes its changed client ids; every replica listening ([`SharedStore::follow`]) drops its
//! copy at once, and the periodic recheck stays the bound when a message is missed.

use super::audit_log::{self, AuditPage, LinePage};
use super::connection::Connection;
use super::local_store::{being_created, insert_new};
use super::records::{AuditEntry, StoreError};
use super::shared_server::{Commit, CredentialServer};
use futures_util::StreamExt as _;
use std::collections::BTreeMap;
use std::sync::Arc;
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
    server: Arc<dyn CredentialServer>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("server", &self.server)
            .finish()
    }
}

impl SharedStore {
    /// The store on `server`.
    pub(super) fn new(server: Arc<dyn CredentialServer>) -> Self {
        Self { server }
    }

    /// Whether the server answers.
    pub(super) async fn probe(&self) -> Result<(), StoreError> {
        self.server.probe().await
    }

    /// The connection as stored now.
    pub(super) async fn get(&self, client_id: &str) -> Result<Option<Connection>, StoreError> {
        let record = self.server.record(client_id).await?;
        record.as_deref().map(parse_record).transpose()
    }

    /// The stored connections that `keep` keeps.
    pub(super) async fn list(
        &self,
        keep: impl Fn(&Connection) -> bool,
    ) -> Result<Vec<Connection>, StoreError> {
        let records = self.server.records().await?;
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
        let records = connections
            .iter()
            .map(|connection| {
                serde_json::to_vec(connection)
                    .map(|record| (connection.client_id.clone(), record))
                    .map_err(|error| StoreError::Io(format!("encode: {error}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.server.import(&records, lines).await
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
        let after_place = before.map(|before| before.saturating_add(1));
        let mut batch = self.server.lines(after_place, PAGE_BATCH + 1).await?;
        let after = match (after_place, batch.first()) {
            (Some(after_place), Some((place, _))) if *place == after_place => {
                Some(batch.remove(0).1)
            }
            _ => None,
        };
        let mut page = LinePage::new(workspace, limit, after.as_deref());
        let mut scanned = 0;
        loop {
            let complete = batch.len() < PAGE_BATCH;
            let count = batch.len();
            let mut oldest = None;
            for (index, (seq, line)) in batch.into_iter().enumerate() {
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
            batch = self.server.lines(Some(oldest - 1), PAGE_BATCH).await?;
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
        let mut stop = std::pin::pin!(stop);
        let mut subscribed_before = false;
        loop {
            match self.server.changes().await {
                Ok(mut changes) => {
                    if subscribed_before {
                        changed(None);
                    }
                    subscribed_before = true;
                    loop {
                        tokio::select! {
                            client_id = changes.next() => match client_id {
                                Some(client_id) => changed(Some(&client_id)),
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

    /// One change: read, apply, write if nothing changed meanwhile (else again).
    async fn change<T>(
        &self,
        audit: Option<AuditEntry>,
        mut apply: impl FnMut(&mut BTreeMap<String, Connection>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        for attempt in 0..CHANGE_TRIES {
            let snapshot = self.server.snapshot().await?;
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
            let removed: Vec<String> = snapshot
                .records
                .keys()
                .filter(|client_id| !connections.contains_key(*client_id))
                .cloned()
                .collect();
            let line = match &audit {
                Some(entry) => Some(chained(entry.clone(), snapshot.last_line.as_deref())?),
                None => None,
            };
            if sets.is_empty() && removed.is_empty() && line.is_none() {
                return Ok(answer);
            }
            let made = self
                .server
                .commit(Commit {
                    read_at: snapshot.version,
                    line: line.as_ref().map(|(seq, bytes)| (*seq, bytes.as_slice())),
                    sets: &sets,
                    removed: &removed,
                })
                .await?;
            if made {
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

fn parse_record(record: &[u8]) -> Result<Connection, StoreError> {
    serde_json::from_slice(record).map_err(|error| {
        StoreError::Io(format!(
            "a shared connection record does not parse: {error}"
        ))
    })
}
