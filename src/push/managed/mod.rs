//! Push subscriptions made through the API, and the queues' delivery pauses: the admin port's
//! adapter. Each change is checked as
//! the config's subscriptions are, written to the store only over the revision it read, with its
//! audit line (who, what, which fields: never a secret), and then this process's runners follow
//! the store; other replicas follow it within [`FOLLOW_EVERY`]. A signing secret is made here,
//! answered once, and kept sealed ([`record::SecretSeal`]).

pub mod store;

pub use store::DirectoryStore;

use super::config::{check_settings, valid_name};
use super::endpoint::{EndpointMaker, Swappable, describe_url, subscription};
use super::signing::{SigningKey, new_secret};
use crate::core::delivery_pause::DeliveryPause;
use crate::core::push::admin::{
    Actor, AuditEntry, Change, MOST_OVERLAP, Managed, Settings, SubscriptionAdmin, WithSecret,
};
use crate::core::push::board::Status;
use crate::core::push::record::{self, PreviousSecret, Record, SecretSeal};
use crate::core::push::records::{self, RecordStore, Room, StoreFailure, Write, Written};
use crate::core::push::runner;
use crate::core::{ErrorKind, Gateway, GatewayError};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often a process looks for changes other replicas made.
pub const FOLLOW_EVERY: Duration = Duration::from_secs(2);
/// The most audit entries one page answers.
pub const MOST_AUDIT_PAGE: usize = 1000;
/// Why a subscription a 410 Gone disabled is disabled.
const GONE: &str = "the endpoint answered 410 Gone";

/// What a manager is made of.
pub struct ManagerParts {
    /// The gateway whose queues are consumed.
    pub gateway: Weak<Gateway>,
    /// Where the records are.
    pub store: Arc<dyn RecordStore>,
    /// Seals and opens their secrets.
    pub seal: SecretSeal,
    /// Builds their endpoints.
    pub maker: EndpointMaker,
    /// Whether endpoints may be private.
    pub allow_private_networks: bool,
    /// Attempts each delivery log keeps.
    pub log_entries: usize,
    /// The config file's subscriptions, by [`record::record_key`] (taken: the API changes none
    /// of them).
    pub configured: BTreeSet<String>,
    /// The most subscriptions one queue may have (`push.max_subscriptions_per_queue`).
    pub most_per_queue: usize,
    /// The most for all queues together (`push.max_subscriptions`).
    pub most_in_all: usize,
}

/// A record's runner in this process.
struct Running {
    /// The record's identity.
    id: String,
    revision: u64,
    /// Whether its runner receives (else it is only shown, disabled).
    enabled: bool,
    /// The settings it runs with.
    settings: Settings,
    /// Where it posts: swapped in place by a change of the endpoint's own settings.
    endpoint: Option<Arc<Swappable>>,
    status: Arc<Status>,
    /// Set when the manager stops it (so its end is not the endpoint's 410).
    stopped: Arc<AtomicBool>,
}

/// The subscriptions made through the API, and their runners in this process.
pub struct Manager {
    parts: ManagerParts,
    /// By [`record::record_key`].
    running: tokio::sync::Mutex<BTreeMap<String, Running>>,
    /// Serializes this process's changes (the store's revision check covers other replicas).
    changing: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager").finish_non_exhaustive()
    }
}

fn store_error(error: StoreFailure) -> GatewayError {
    GatewayError::unavailable(Duration::from_secs(1)).with_source(error)
}

fn not_found(name: &str) -> GatewayError {
    GatewayError::new(
        ErrorKind::ResourceNotFound,
        format!("the queue has no subscription `{name}` made through the API"),
    )
}

/// A change refused because its queue's trail is full of lines younger than a week: retry once
/// the oldest is a week old.
fn trail_full(
    oldest: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> GatewayError {
    let kept_until =
        oldest + chrono::Duration::from_std(records::AUDIT_KEPT_AT_LEAST).unwrap_or_default();
    let retry_after = (kept_until - now)
        .to_std()
        .unwrap_or_default()
        .max(Duration::from_secs(1));
    GatewayError::new(
        ErrorKind::RateLimited {
            retry_after,
            scope: crate::core::error::LimitScope::Rate,
        },
        format!(
            "the queue's subscriptions changed {} times within {} days: its audit trail keeps each change that long, so further changes wait (deletes are always taken)",
            records::AUDIT_KEPT_PER_QUEUE,
            records::AUDIT_KEPT_AT_LEAST.as_secs() / 86_400
        ),
    )
}

fn changed_meanwhile() -> GatewayError {
    GatewayError::new(
        ErrorKind::Conflict,
        "the subscription changed meanwhile; read it and try again",
    )
}

/// `field: message` as the client sees a refused setting.
fn refused(field: &str, message: &str) -> GatewayError {
    GatewayError::out_of_range(format!("{field}: {message}"))
}

impl Manager {
    /// A manager of `parts`' store.
    pub fn new(parts: ManagerParts) -> Arc<Self> {
        Arc::new(Self {
            parts,
            running: tokio::sync::Mutex::new(BTreeMap::new()),
            changing: tokio::sync::Mutex::new(()),
        })
    }

    /// Plugs it into `gateway`, starts the store's subscriptions, and follows the store's
    /// changes until shutdown.
    pub async fn start(self: &Arc<Self>, gateway: &Arc<Gateway>) {
        gateway.set_push_admin(Arc::new(Arc::clone(self)));
        // Read before the first reconcile: a change made between the two is followed.
        let first = self.parts.store.version().await.ok();
        let mut seen = if self.reconcile().await { first } else { None };
        let manager = Arc::clone(self);
        let stopping = gateway.shutdown_token();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(FOLLOW_EVERY) => {}
                    () = stopping.cancelled() => return,
                }
                match manager.parts.store.version().await {
                    Ok(version) if Some(version) != seen => {
                        if manager.reconcile().await {
                            seen = Some(version);
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "push subscriptions: the store did not answer")
                    }
                }
            }
        });
    }

    fn gateway(&self) -> Result<Arc<Gateway>, GatewayError> {
        self.parts
            .gateway
            .upgrade()
            .ok_or_else(|| GatewayError::unavailable(Duration::from_secs(1)))
    }

    /// Brings this process's runners in line with the store: starts new and changed records'
    /// runners, stops removed and replaced ones; `false` when the store did not answer.
    pub async fn reconcile(self: &Arc<Self>) -> bool {
        let Some(gateway) = self.parts.gateway.upgrade() else {
            return false;
        };
        // Read under the lock: a later reconcile never acts on an earlier read.
        let mut running = self.running.lock().await;
        let (records, pauses) = match (
            self.parts.store.load().await,
            self.parts.store.pauses().await,
        ) {
            (Ok(records), Ok(pauses)) => (records, pauses),
            (Err(error), _) | (_, Err(error)) => {
                tracing::warn!(%error, "push subscriptions: the store did not answer");
                return false;
            }
        };
        gateway.delivery_pauses().replace_all(pauses);
        let wanted: BTreeMap<String, &Record> = records
            .iter()
            .map(|record| (record.key(), record))
            .filter(|(key, _)| !self.parts.configured.contains(key))
            .collect();
        let keys: Vec<String> = running.keys().cloned().collect();
        for key in keys {
            let keep = match (wanted.get(&key), running.get_mut(&key)) {
                // Another subscription under the name (deleted and made again): never kept.
                (Some(record), Some(run)) if record.id != run.id => false,
                (Some(record), Some(run)) if record.revision == run.revision => true,
                // Disabled, and its runner already stopped (a 410): its log stays on the board.
                (Some(record), Some(run)) if !record.enabled && run.status.disabled() => {
                    run.revision = record.revision;
                    run.enabled = false;
                    true
                }
                // Only the endpoint's own settings changed (where, how, the secrets): swapped
                // in place, so no receive in flight is given up.
                (Some(record), Some(run))
                    if record.enabled && run.enabled && !run.status.disabled() =>
                {
                    self.swap_in_place(record, run)
                }
                _ => false,
            };
            if !keep && let Some(run) = running.remove(&key) {
                run.stopped.store(true, Ordering::SeqCst);
                run.status.disable(if wanted.contains_key(&key) {
                    "replaced by a change"
                } else {
                    "deleted"
                });
                gateway.push_board().remove(&run.status);
            }
        }
        for (key, record) in wanted {
            if running.contains_key(&key) {
                continue;
            }
            let run = self.launch(&gateway, record);
            running.insert(key, run);
        }
        for record in &records {
            if self.parts.configured.contains(&record.key()) {
                tracing::warn!(
                    subscription = record.name,
                    queue = record.queue,
                    "push subscription made through the API is not run: the config file defines one of that name on its queue"
                );
            }
        }
        true
    }

    /// `record`'s endpoint, its secrets opened.
    fn endpoint_of(
        &self,
        record: &Record,
    ) -> Result<Arc<dyn crate::core::push::PushEndpoint>, String> {
        let now = self.parts.maker.now();
        let open = |sealed| {
            self.parts
                .seal
                .open(&record.queue, &record.name, sealed)
                .and_then(|secret| SigningKey::parse(&secret).ok())
        };
        let previous = record
            .previous
            .as_ref()
            .filter(|previous| previous.until > now)
            .and_then(|previous| open(&previous.secret).map(|key| (key, Some(previous.until))));
        let key = open(&record.secret).ok_or_else(|| {
            "its secret cannot be opened with the configured receipt keys".to_owned()
        })?;
        self.parts.maker.endpoint(&record.settings(), key, previous)
    }

    /// Takes `record`'s change into `run` without a restart, when only the endpoint's own
    /// settings changed; `false` when the runner must be started anew.
    fn swap_in_place(&self, record: &Record, run: &mut Running) -> bool {
        let (old, new) = (&run.settings, record.settings());
        let runner_same = old.max_concurrency == new.max_concurrency
            && old.max_per_second == new.max_per_second
            && old.lease_seconds() == new.lease_seconds();
        let Some(swappable) = &run.endpoint else {
            return false;
        };
        if !runner_same {
            return false;
        }
        let Ok(endpoint) = self.endpoint_of(record) else {
            return false;
        };
        run.status.set_endpoint(endpoint.describe());
        swappable.swap(endpoint);
        run.revision = record.revision;
        run.settings = new;
        true
    }

    /// Starts `record`'s runner (or shows it disabled).
    fn launch(self: &Arc<Self>, gateway: &Arc<Gateway>, record: &Record) -> Running {
        let stopped = Arc::new(AtomicBool::new(false));
        let settings = record.settings();
        let built = self.endpoint_of(record);
        let board = gateway.push_board();
        let mut swappable = None;
        let status = match built {
            Ok(endpoint) if record.enabled => {
                let endpoint = Swappable::new(endpoint);
                swappable = Some(Arc::clone(&endpoint));
                let subscription = subscription(&record.name, &record.queue, &settings, endpoint);
                let status = runner::start(gateway, subscription, self.parts.log_entries);
                self.watch_for_gone(gateway, record, &status, &stopped);
                status
            }
            Ok(endpoint) => {
                let subscription = subscription(&record.name, &record.queue, &settings, endpoint);
                let status = board.register(&subscription, self.parts.log_entries);
                status.disable(record.disabled_because.as_deref().unwrap_or("disabled"));
                status
            }
            Err(because) => {
                tracing::error!(
                    queue = record.queue,
                    subscription = record.name,
                    because,
                    "push subscription made through the API cannot run"
                );
                board.register_disabled(
                    &record.name,
                    &record.queue,
                    &record.url,
                    &because,
                    self.parts.log_entries,
                )
            }
        };
        Running {
            id: record.id.clone(),
            revision: record.revision,
            enabled: record.enabled && swappable.is_some(),
            settings,
            endpoint: swappable,
            status,
            stopped,
        }
    }

    /// Once `status` is disabled by its endpoint's 410 (not by the manager), records it in the
    /// store, so every replica stops and admins see why.
    fn watch_for_gone(
        self: &Arc<Self>,
        gateway: &Arc<Gateway>,
        record: &Record,
        status: &Arc<Status>,
        stopped: &Arc<AtomicBool>,
    ) {
        let (manager, status, stopped) =
            (Arc::clone(self), Arc::clone(status), Arc::clone(stopped));
        let (key, id) = (record.key(), record.id.clone());
        let stopping = gateway.shutdown_token();
        tokio::spawn(async move {
            tokio::select! {
                () = status.until_disabled() => {}
                () = stopping.cancelled() => return,
            }
            // Retried until it is written: other replicas keep posting to a gone endpoint until
            // the store says so.
            let mut pause = Duration::from_secs(1);
            loop {
                let changing = manager.changing.lock().await;
                // Checked again under the lock: a change may have stopped it meanwhile.
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                match manager.record_gone(&key, &id).await {
                    Ok(()) => break,
                    Err(error) => {
                        tracing::warn!(%error, subscription = key, "push subscription: its 410 could not be recorded; retrying");
                    }
                }
                drop(changing);
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stopping.cancelled() => return,
                }
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            manager.reconcile().await;
        });
    }

    /// Records that the endpoint of the subscription kept at `key` (identity `id`) answered 410
    /// Gone, unless it was changed or removed meanwhile.
    async fn record_gone(&self, key: &str, id: &str) -> Result<(), StoreFailure> {
        let records = self.parts.store.load().await?;
        let Some(mut record) = records.into_iter().find(|r| r.key() == key && r.id == id) else {
            return Ok(());
        };
        if !record.enabled {
            return Ok(());
        }
        let Some(gateway) = self.parts.gateway.upgrade() else {
            return Ok(());
        };
        let revision = record.revision;
        let now = gateway.now();
        record.enabled = false;
        record.disabled_because = Some(GONE.to_owned());
        record.revision += 1;
        record.updated_at = now;
        let audit = AuditEntry {
            seq: 0,
            at: now,
            actor: "endpoint".into(),
            action: "disabled_by_endpoint".into(),
            queue: record.queue.clone(),
            subscription: Some(record.name.clone()),
            detail: GONE.into(),
        };
        // Written or not (a change came first), the store now says what the admins last did.
        self.parts
            .store
            .write(Write::Put(&record), revision, &audit, Room::Always)
            .await
            .map(|_| ())
    }

    /// Since when `queue`'s deliveries are paused, as the store says.
    async fn pause_of(
        &self,
        queue: &str,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>, GatewayError> {
        let pauses = self.parts.store.pauses().await.map_err(store_error)?;
        Ok(pauses
            .into_iter()
            .find(|pause| pause.queue == queue)
            .map(|pause| pause.since))
    }

    /// Ends `queue`'s pause, if it has one, with its audit line (the caller holds `changing`).
    async fn resume_now(
        self: &Arc<Self>,
        gateway: &Gateway,
        actor: Actor<'_>,
        queue: &str,
        detail: String,
    ) -> Result<(), GatewayError> {
        if self.pause_of(queue).await?.is_some() {
            let audit = queue_line(gateway.now(), actor, "delivery_resumed", queue, detail);
            self.commit(Write::Resume(queue), 0, audit).await?;
        }
        gateway.delivery_pauses().set(queue, None);
        Ok(())
    }

    /// `queue`'s record named `name`, to change (`for_delete`: to remove, which a record the
    /// config file shadows may still be).
    async fn find(
        &self,
        queue: &str,
        name: &str,
        for_delete: bool,
    ) -> Result<Record, GatewayError> {
        let records = self.parts.store.load().await.map_err(store_error)?;
        let found = records
            .into_iter()
            .find(|record| record.name == name && record.queue == queue);
        let configured = || {
            GatewayError::new(
                ErrorKind::Conflict,
                format!("`{name}` is defined in the config file: change it there"),
            )
        };
        let in_config = self
            .parts
            .configured
            .contains(&record::record_key(queue, name));
        match found {
            Some(record) if for_delete || !in_config => Ok(record),
            Some(_) => Err(configured()),
            None if in_config => Err(configured()),
            None => Err(not_found(name)),
        }
    }

    /// Refuses a new subscription on `queue` when it, or the gateway, holds the most it may.
    async fn room_for_one(&self, queue: &str) -> Result<(), GatewayError> {
        let records = self.parts.store.load().await.map_err(store_error)?;
        let on_queue = records
            .iter()
            .filter(|record| record.queue == queue)
            .count();
        if on_queue >= self.parts.most_per_queue {
            return Err(GatewayError::new(
                ErrorKind::Conflict,
                format!(
                    "the queue has {} subscriptions, the most it may (push.max_subscriptions_per_queue): delete one first",
                    self.parts.most_per_queue
                ),
            ));
        }
        if records.len() >= self.parts.most_in_all {
            return Err(GatewayError::new(
                ErrorKind::Conflict,
                "the gateway holds the most subscriptions it may (push.max_subscriptions)",
            ));
        }
        Ok(())
    }

    /// Checks `settings` as the config's are; a URL given now (`new_url`) must also not name a
    /// host the guard refuses (one set before stays changeable: it can be disabled or fixed).
    fn check(&self, settings: &Settings, new_url: bool) -> Result<(), GatewayError> {
        check_settings(settings, self.parts.allow_private_networks)
            .map_err(|(field, message)| refused(field, &message))?;
        let names_a_refused_host = url::Url::parse(&settings.url)
            .is_ok_and(|url| super::guard::names_a_refused_host(&url));
        if new_url && names_a_refused_host && !self.parts.allow_private_networks {
            return Err(refused(
                "url",
                "names a host push may not reach (loopback, private, link-local and the like; \
                 push.allow_private_networks allows them)",
            ));
        }
        Ok(())
    }

    /// Writes `record` over `expected` with its audit line, then follows the change.
    async fn commit(
        self: &Arc<Self>,
        write: Write<'_>,
        expected: u64,
        audit: AuditEntry,
    ) -> Result<(), GatewayError> {
        // A pause waits for room (each one adds a line); ending a subscription or a pause never
        // does (there is at most one for each made).
        let room = match write {
            Write::Put(_) | Write::Pause(_) => Room::Bounded,
            Write::Remove(_) | Write::Resume(_) => Room::Always,
        };
        let written = self
            .parts
            .store
            .write(write, expected, &audit, room)
            .await
            .map_err(store_error)?;
        match written {
            Written::Done => {}
            Written::ChangedMeanwhile => return Err(changed_meanwhile()),
            Written::TrailFull { oldest } => return Err(trail_full(oldest, audit.at)),
        }
        tracing::info!(
            actor = audit.actor,
            action = audit.action,
            queue = audit.queue,
            subscription = audit.subscription.as_deref(),
            detail = audit.detail,
            "queue control changed"
        );
        self.reconcile().await;
        Ok(())
    }
}

/// The audit line of a change of `queue`'s own (not of one of its subscriptions).
fn queue_line(
    now: chrono::DateTime<chrono::Utc>,
    actor: Actor<'_>,
    action: &str,
    queue: &str,
    detail: String,
) -> AuditEntry {
    AuditEntry {
        seq: 0,
        at: now,
        actor: actor.0.to_owned(),
        action: action.to_owned(),
        queue: queue.to_owned(),
        subscription: None,
        detail,
    }
}

/// The audit line of a change of `record`, one of its queue's subscriptions.
fn audit_line(
    now: chrono::DateTime<chrono::Utc>,
    actor: Actor<'_>,
    action: &str,
    record: &Record,
    detail: String,
) -> AuditEntry {
    AuditEntry {
        subscription: Some(record.name.clone()),
        ..queue_line(now, actor, action, &record.queue, detail)
    }
}

/// `detail` with each endpoint in it as readers see it: lines written before paths were hidden
/// carry them.
fn detail_for_readers(detail: &str) -> String {
    detail
        .split("; ")
        .map(|part| match part.split_once("endpoint ") {
            Some((before, url)) if url::Url::parse(url).is_ok() => format!(
                "{before}endpoint {}",
                crate::core::push::endpoint_for_readers(url)
            ),
            _ => part.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The endpoint as the audit trail (and so the log) shows it: scheme, host and port.
fn shown(url: &str) -> String {
    url::Url::parse(url).map_or_else(|_| "(not a URL)".to_owned(), |url| describe_url(&url))
}

#[async_trait]
impl SubscriptionAdmin for Arc<Manager> {
    async fn create(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        settings: Settings,
    ) -> Result<WithSecret, GatewayError> {
        if !valid_name(name) {
            return Err(refused("name", "must be 1 to 64 letters, digits, - and _"));
        }
        self.check(&settings, true)?;
        if self
            .parts
            .configured
            .contains(&record::record_key(queue, name))
        {
            return Err(GatewayError::new(
                ErrorKind::Conflict,
                format!("the queue's subscription `{name}` is defined in the config file"),
            ));
        }
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        self.room_for_one(queue).await?;
        let now = gateway.now();
        let secret = new_secret();
        let record = Record {
            id: uuid::Uuid::new_v4().to_string(),
            name: name.to_owned(),
            queue: queue.to_owned(),
            url: settings.url.clone(),
            max_concurrency: settings.max_concurrency,
            max_per_second: settings.max_per_second,
            timeout_seconds: settings.timeout_seconds,
            visibility_timeout_seconds: settings.visibility_timeout_seconds,
            raw_body: settings.raw_body,
            hold_on_202: settings.hold_on_202,
            enabled: true,
            disabled_because: None,
            created_at: now,
            created_by: actor.0.to_owned(),
            updated_at: now,
            revision: u64::from(rand::random::<u32>()) << 16 | 1,
            secret: self.parts.seal.seal(queue, name, &secret),
            secret_created_at: now,
            previous: None,
        };
        let detail = format!("endpoint {}", shown(&record.url));
        let audit = audit_line(now, actor, "created", &record, detail);
        self.commit(Write::Put(&record), 0, audit)
            .await
            .map_err(|error| match error.kind {
                ErrorKind::Conflict => GatewayError::new(
                    ErrorKind::Conflict,
                    format!("the queue has a subscription named `{name}`"),
                ),
                _ => error,
            })?;
        Ok(WithSecret {
            managed: record.view(now),
            secret,
        })
    }

    async fn update(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        change: Change,
    ) -> Result<Managed, GatewayError> {
        let fields = change.fields();
        if fields.is_empty() {
            return Err(GatewayError::invalid_request("the request changes nothing"));
        }
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        let mut record = self.find(queue, name, false).await?;
        let expected = record.revision;
        let mut settings = record.settings();
        if let Some(url) = change.url.clone() {
            settings.url = url;
        }
        if let Some(most) = change.max_concurrency {
            settings.max_concurrency = most;
        }
        if let Some(rate) = change.max_per_second {
            settings.max_per_second = rate;
        }
        if let Some(timeout) = change.timeout_seconds {
            settings.timeout_seconds = timeout;
        }
        if let Some(lease) = change.visibility_timeout_seconds {
            settings.visibility_timeout_seconds = lease;
        }
        if let Some(raw) = change.raw_body {
            settings.raw_body = raw;
        }
        if let Some(hold) = change.hold_on_202 {
            settings.hold_on_202 = hold;
        }
        self.check(&settings, change.url.is_some())?;
        let now = gateway.now();
        record.set_settings(settings);
        match change.enabled {
            Some(true) => {
                record.enabled = true;
                record.disabled_because = None;
            }
            Some(false) => {
                record.enabled = false;
                record.disabled_because = Some(format!("disabled by {}", actor.0));
            }
            None => {}
        }
        record.revision += 1;
        record.updated_at = now;
        let mut detail = format!("changed {}", fields.join(", "));
        if change.url.is_some() {
            detail.push_str(&format!("; endpoint {}", shown(&record.url)));
        }
        if let Some(enabled) = change.enabled {
            detail.push_str(if enabled { "; enabled" } else { "; disabled" });
        }
        let audit = audit_line(now, actor, "updated", &record, detail);
        self.commit(Write::Put(&record), expected, audit).await?;
        Ok(record.view(now))
    }

    async fn rotate(
        &self,
        actor: Actor<'_>,
        queue: &str,
        name: &str,
        overlap: Duration,
    ) -> Result<WithSecret, GatewayError> {
        if overlap > MOST_OVERLAP {
            return Err(refused(
                "overlap_seconds",
                &format!("must be 0 to {}", MOST_OVERLAP.as_secs()),
            ));
        }
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        let mut record = self.find(queue, name, false).await?;
        let expected = record.revision;
        let now = gateway.now();
        let secret = new_secret();
        let until = now + chrono::Duration::from_std(overlap).unwrap_or_default();
        record.previous = (!overlap.is_zero()).then(|| PreviousSecret {
            secret: record.secret.clone(),
            until,
        });
        record.secret = self.parts.seal.seal(queue, name, &secret);
        record.secret_created_at = now;
        record.revision += 1;
        record.updated_at = now;
        let detail = format!("the replaced secret signs for {} s", overlap.as_secs());
        let audit = audit_line(now, actor, "secret_rotated", &record, detail);
        self.commit(Write::Put(&record), expected, audit).await?;
        Ok(WithSecret {
            managed: record.view(now),
            secret,
        })
    }

    async fn delete(&self, actor: Actor<'_>, queue: &str, name: &str) -> Result<(), GatewayError> {
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        let record = self.find(queue, name, true).await?;
        let now = gateway.now();
        let detail = format!("endpoint {}", shown(&record.url));
        let audit = audit_line(now, actor, "deleted", &record, detail);
        self.commit(Write::Remove(&record.key()), record.revision, audit)
            .await
    }

    async fn list(&self, queue: &str) -> Result<Vec<Managed>, GatewayError> {
        let now = self.gateway()?.now();
        let records = self.parts.store.load().await.map_err(store_error)?;
        Ok(records
            .iter()
            .filter(|record| {
                record.queue == queue && !self.parts.configured.contains(&record.key())
            })
            .map(|record| record.view(now))
            .collect())
    }

    async fn pause_delivery(
        &self,
        actor: Actor<'_>,
        queue: &str,
    ) -> Result<chrono::DateTime<chrono::Utc>, GatewayError> {
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        if let Some(since) = self.pause_of(queue).await? {
            return Ok(since);
        }
        let pause = DeliveryPause {
            queue: queue.to_owned(),
            since: gateway.now(),
        };
        let audit = queue_line(pause.since, actor, "delivery_paused", queue, String::new());
        self.commit(Write::Pause(&pause), 0, audit).await?;
        gateway.delivery_pauses().set(queue, Some(pause.since));
        Ok(pause.since)
    }

    async fn resume_delivery(&self, actor: Actor<'_>, queue: &str) -> Result<(), GatewayError> {
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        self.resume_now(&gateway, actor, queue, String::new()).await
    }

    async fn forget_queue(&self, actor: Actor<'_>, queue: &str) -> Result<(), GatewayError> {
        let gateway = self.gateway()?;
        let _changing = self.changing.lock().await;
        self.resume_now(&gateway, actor, queue, "the queue was deleted".into())
            .await?;
        let records = self.parts.store.load().await.map_err(store_error)?;
        for record in records.iter().filter(|record| record.queue == queue) {
            let detail = format!("the queue was deleted; endpoint {}", shown(&record.url));
            let audit = audit_line(gateway.now(), actor, "deleted_with_queue", record, detail);
            // A change meanwhile (it is gone already) is no failure.
            match self
                .commit(Write::Remove(&record.key()), record.revision, audit)
                .await
            {
                Ok(()) => {}
                Err(error) if error.kind == ErrorKind::Conflict => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    async fn audit(
        &self,
        queue: &str,
        limit: usize,
        before: Option<u64>,
    ) -> Result<Vec<AuditEntry>, GatewayError> {
        let lines = self
            .parts
            .store
            .audit(queue, limit.clamp(1, MOST_AUDIT_PAGE + 1), before)
            .await
            .map_err(store_error)?;
        Ok(lines
            .into_iter()
            .map(|mut line| {
                line.detail = detail_for_readers(&line.detail);
                line
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::detail_for_readers;

    #[test]
    fn old_audit_lines_show_no_endpoint_path() {
        assert_eq!(
            detail_for_readers(
                "changed url, timeout_seconds; endpoint https://hooks.slack.com/services/T1/B2/secret; enabled"
            ),
            "changed url, timeout_seconds; endpoint https://hooks.slack.com/…; enabled"
        );
        assert_eq!(
            detail_for_readers("endpoint https://hooks.example.com/…"),
            "endpoint https://hooks.example.com/…"
        );
        assert_eq!(
            detail_for_readers("the replaced secret signs for 60 s"),
            "the replaced secret signs for 60 s"
        );
    }
}
