//! The queue registry: gateway queue names, the backend queues they map to, cached attributes,
//! and the aliases each API knows the queues by.
//!
//! Configured queues are always known. With queue management on (the SQS endpoint's CreateQueue and
//! friends), the registry is *open*: any name resolves to the backend queue of that name.
//!
//! Aliases come from the config (ezgh's projects) or are bound at runtime; runtime ones are kept as
//! reserved tags of their backend queue (see [`crate::core::alias`]) and read back at start, when a
//! lookup misses (at most once per cache period, so other replicas' new aliases are found), and
//! every [`ALIAS_REFRESH`] (so their removals are too).
//!
//! One set of queues serves every API: besides its bound aliases, a queue any caller may name
//! (not under the reserved prefix) has a *derived* alias in the namespaces that derive them: its
//! name in each ezgh project that takes all queues, and a name-based UUID in basaltic
//! ([`derived_basaltic_id`]).

use crate::core::access::RESERVED_QUEUE_PREFIX;
use crate::core::alias::{ALIAS_TAG_PREFIX, Alias, Namespace, derived_basaltic_id};
use crate::core::backend::{Backend, BackendError};
use crate::core::clock::Clock;
use crate::core::error::{ErrorKind, GatewayError};
use crate::core::model::{ResolvedQueue, valid_queue_name};
use chrono::{DateTime, Utc};
use moka::future::Cache;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Runtime aliases are read again from the backend at least this often.
pub const ALIAS_REFRESH: Duration = Duration::from_secs(300);

/// A basaltic id no known queue derives is looked for again in a new listing at most this often
/// (a queue made through another API or replica is found within it; probes cost one listing).
pub const DERIVED_REREAD: Duration = Duration::from_secs(1);

/// The basaltic ids derived from queue names, from the last listing.
#[derive(Debug, Default)]
struct DerivedIds {
    read_at: Option<DateTime<Utc>>,
    queues: HashMap<String, String>,
}

/// The aliases the registry knows: configured ones never change; runtime ones are read back from
/// the backend queues' tags.
#[derive(Debug, Default)]
struct AliasTable {
    configured: BTreeMap<Alias, String>,
    runtime: BTreeMap<Alias, String>,
}

impl AliasTable {
    fn get(&self, alias: &Alias) -> Option<&String> {
        self.configured
            .get(alias)
            .or_else(|| self.runtime.get(alias))
    }
}

/// Maps gateway queue names to backend queues, resolving and caching them on first use.
pub struct QueueRegistry {
    backend: Arc<dyn Backend>,
    /// Configured gateway name -> backend locator (a backend queue name or SQS URL).
    configured: BTreeMap<String, String>,
    /// Whether names beyond the configured ones map to backend queues of the same name.
    open: bool,
    /// Name prefixes of queues a dialect manages itself (sombus connections' queues): such names
    /// map to backend queues of the same name even when the registry is not open.
    managed_prefixes: Vec<String>,
    /// ezgh projects (organization, project) in which every queue id beyond the configured
    /// ones names the gateway queue of that name.
    open_projects: BTreeSet<(String, String)>,
    /// Whether every queue every API reaches has a derived basaltic id (`basaltic.all_queues`,
    /// which a config reload may change).
    basaltic_ids: AtomicBool,
    /// Derived basaltic id -> queue, read from listings (see [`DERIVED_REREAD`]).
    derived: tokio::sync::Mutex<DerivedIds>,
    resolved: Cache<String, Arc<ResolvedQueue>>,
    /// Dead-letter queue ARN -> the queues whose redrive policy targets it (a receive asks on
    /// every call; the answer takes a listing), kept as long as resolved queues.
    dead_letter_sources: Cache<String, Arc<Vec<String>>>,
    /// How long resolved queues are kept, and the least time between two alias reloads on misses.
    ttl: Duration,
    aliases: RwLock<AliasTable>,
    /// Serializes alias loads, binds and unbinds; holds when aliases were last read back.
    alias_loads: tokio::sync::Mutex<Option<DateTime<Utc>>>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for QueueRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueRegistry")
            .field("queues", &self.configured)
            .field("open", &self.open)
            .field("aliases", &self.aliases)
            .finish_non_exhaustive()
    }
}

impl QueueRegistry {
    /// A registry of `configured` queues; attributes are cached for `ttl`.
    pub fn new(
        backend: Arc<dyn Backend>,
        configured: BTreeMap<String, String>,
        open: bool,
        ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            backend,
            configured,
            open,
            managed_prefixes: Vec::new(),
            open_projects: BTreeSet::new(),
            basaltic_ids: AtomicBool::new(false),
            derived: tokio::sync::Mutex::default(),
            resolved: Cache::builder().time_to_live(ttl).build(),
            dead_letter_sources: Cache::builder()
                .time_to_live(ttl)
                .max_capacity(10_000)
                .build(),
            ttl,
            aliases: RwLock::default(),
            alias_loads: tokio::sync::Mutex::new(None),
            clock,
        }
    }

    /// Adds configured aliases (a dialect's config names queues this way); they win over
    /// runtime ones and cannot be unbound.
    pub fn with_aliases(self, aliases: impl IntoIterator<Item = (Alias, String)>) -> Self {
        self.write_aliases().configured.extend(aliases);
        self
    }

    /// Lets names starting with `prefix` map to backend queues of the same name (a dialect that
    /// creates and deletes its own queues under that prefix).
    pub fn with_managed_prefix(mut self, prefix: &str) -> Self {
        self.managed_prefixes.push(prefix.to_owned());
        self
    }

    /// Lets every queue id of these ezgh projects (organization, project) beyond the configured
    /// ones name the gateway queue of that name.
    pub fn with_open_projects(
        mut self,
        projects: impl IntoIterator<Item = (String, String)>,
    ) -> Self {
        self.open_projects.extend(projects);
        self
    }

    /// Gives every queue every API reaches a basaltic id derived from its name.
    pub fn with_basaltic_ids(self, derive: bool) -> Self {
        self.set_basaltic_ids(derive);
        self
    }

    /// Whether basaltic names every queue other APIs reach (derived ids).
    pub fn derives_basaltic_ids(&self) -> bool {
        self.basaltic_ids.load(Ordering::Relaxed)
    }

    /// Changes whether basaltic names every queue other APIs reach; answers whether that
    /// changed anything. Derived ids are a function of the name, so what was cached stays true.
    pub fn set_basaltic_ids(&self, derive: bool) -> bool {
        self.basaltic_ids.swap(derive, Ordering::Relaxed) != derive
    }

    /// Whether `name` is a queue every API reaches under its own name: one this registry maps,
    /// not under the reserved prefix (those belong to the dialect that made them).
    pub fn reaches_by_name(&self, name: &str) -> bool {
        !name.starts_with(RESERVED_QUEUE_PREFIX) && self.contains(name)
    }

    /// The queue an alias names by derivation alone, where no lookup is needed: a queue id of an
    /// ezgh project that takes all queues.
    fn derived_by_name(&self, alias: &Alias) -> Option<String> {
        let [organization, project, queue] = alias.path() else {
            return None;
        };
        (alias.namespace() == Namespace::Ezgh
            && self
                .open_projects
                .contains(&(organization.clone(), project.clone()))
            && self.reaches_by_name(queue))
        .then(|| queue.clone())
    }

    /// The queue whose derived basaltic id is `id`: from the last listing, or a new one (at most
    /// once per [`DERIVED_REREAD`]) when it is not there.
    async fn queue_of_derived_id(&self, id: &str) -> Option<String> {
        let mut derived = self.derived.lock().await;
        if let Some(queue) = derived.queues.get(id) {
            return Some(queue.clone());
        }
        let now = self.clock.now();
        let fresh = derived.read_at.is_some_and(|at| {
            now.signed_duration_since(at).to_std().unwrap_or_default() < DERIVED_REREAD
        });
        if fresh {
            return None;
        }
        match self.names("").await {
            Ok(names) => {
                derived.queues = self.derive_ids(names);
                derived.read_at = Some(now);
            }
            Err(error) => tracing::warn!(error = %error, "queues not listed for a basaltic id"),
        }
        derived.queues.get(id).cloned()
    }

    /// Derived basaltic id -> queue, for the queues of a listing that have one.
    fn derive_ids(&self, names: Vec<String>) -> HashMap<String, String> {
        if !self.derives_basaltic_ids() {
            return HashMap::new();
        }
        names
            .into_iter()
            .filter(|name| self.reaches_by_name(name))
            .map(|name| (derived_basaltic_id(&name), name))
            .collect()
    }

    /// Every alias of `namespace` with its queue: the bound ones and, for every queue listed now,
    /// the derived ones (what a dialect lists).
    pub async fn listed_aliases(
        &self,
        namespace: Namespace,
    ) -> Result<Vec<(Alias, String)>, GatewayError> {
        let mut found: BTreeMap<Alias, String> = self.aliases_in(namespace).into_iter().collect();
        let derives = match namespace {
            Namespace::Basaltic => self.derives_basaltic_ids(),
            Namespace::Ezgh => !self.open_projects.is_empty(),
            Namespace::Sombus => false,
        };
        if !derives {
            return Ok(found.into_iter().collect());
        }
        let names = self.names("").await?;
        match namespace {
            Namespace::Basaltic => {
                let derived = self.derive_ids(names);
                for (id, queue) in &derived {
                    found.insert(
                        Alias::new(Namespace::Basaltic, [id.as_str()])?,
                        queue.clone(),
                    );
                }
                let mut kept = self.derived.lock().await;
                kept.queues = derived;
                kept.read_at = Some(self.clock.now());
            }
            Namespace::Ezgh => {
                for name in names.iter().filter(|name| self.reaches_by_name(name)) {
                    for (organization, project) in &self.open_projects {
                        let alias = Alias::ezgh(organization, project, name)?;
                        found.entry(alias).or_insert_with(|| name.clone());
                    }
                }
            }
            Namespace::Sombus => {}
        }
        Ok(found.into_iter().collect())
    }

    /// Whether `name` is beyond the configured names and still maps to a backend queue.
    fn maps_unconfigured(&self, name: &str) -> bool {
        valid_queue_name(name)
            && (self.open
                || self
                    .managed_prefixes
                    .iter()
                    .any(|prefix| name.starts_with(prefix.as_str())))
    }

    /// The configured gateway queue names.
    pub fn configured_names(&self) -> Vec<String> {
        self.configured.keys().cloned().collect()
    }

    /// Whether queues can be created and found beyond the configured ones.
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether `name` may name a queue here (configured, or any valid name when open).
    pub fn contains(&self, name: &str) -> bool {
        self.configured.contains_key(name) || self.maps_unconfigured(name)
    }

    fn locator(&self, name: &str) -> Option<String> {
        match self.configured.get(name) {
            Some(locator) => Some(locator.clone()),
            None => self.maps_unconfigured(name).then(|| name.to_owned()),
        }
    }

    /// The gateway queue names starting with `prefix`: configured ones, and the backend's own
    /// (all of them when open, else those under the dialects' managed prefixes).
    pub async fn names(&self, prefix: &str) -> Result<Vec<String>, GatewayError> {
        let mut names: BTreeSet<String> = self
            .configured
            .keys()
            .filter(|name| name.starts_with(prefix))
            .cloned()
            .collect();
        if self.open {
            let listed = self
                .backend
                .list_queues(prefix)
                .await
                .map_err(GatewayError::from)?;
            names.extend(listed);
        } else {
            // The queues dialects made under their own prefixes are gateway queues too.
            for managed in &self.managed_prefixes {
                let narrowest = if managed.starts_with(prefix) {
                    managed.as_str()
                } else if prefix.starts_with(managed.as_str()) {
                    prefix
                } else {
                    continue;
                };
                let listed = self
                    .backend
                    .list_queues(narrowest)
                    .await
                    .map_err(GatewayError::from)?;
                names.extend(listed);
            }
        }
        Ok(names.into_iter().collect())
    }

    /// The backend queue behind `name`, resolved at most once per `ttl`.
    pub async fn get(&self, name: &str) -> Result<Arc<ResolvedQueue>, GatewayError> {
        let locator = self
            .locator(name)
            .ok_or_else(GatewayError::queue_not_found)?;
        self.resolved
            .try_get_with_by_ref(name, async {
                self.backend.resolve(&locator).await.map(Arc::new)
            })
            .await
            .map_err(|error: Arc<BackendError>| GatewayError::from((*error).clone()))
    }

    /// The backend locator a new queue named `name` gets.
    pub fn locator_for_new(&self, name: &str) -> Option<String> {
        self.locator(name)
    }

    /// Resolves every configured queue once and logs the ones the backend cannot find, then reads
    /// the runtime aliases; start-up goes on either way (readiness reports an unreachable backend).
    pub async fn warm_up(&self) {
        for name in self.configured.keys() {
            match self.get(name).await {
                Ok(queue) => {
                    tracing::info!(queue = %name, fifo = queue.attributes.fifo, "queue resolved")
                }
                Err(error) => tracing::warn!(queue = %name, error = %error, "queue not resolved"),
            }
        }
        self.refresh_aliases().await;
    }

    /// Drops what is cached of `name`, after the backend said the queue is gone or changed.
    pub async fn invalidate(&self, name: &str) {
        self.resolved.invalidate(name).await;
        // Its redrive policy may be what changed.
        self.dead_letter_sources.invalidate_all();
    }

    /// Learns that the queue `name` was just made: what was cached of that name goes, and its
    /// derived id is known at once (not only from the next listing).
    pub async fn created(&self, name: &str) {
        self.invalidate(name).await;
        if self.derives_basaltic_ids() && self.reaches_by_name(name) {
            self.derived
                .lock()
                .await
                .queues
                .insert(derived_basaltic_id(name), name.to_owned());
        }
    }

    /// Forgets the queue `name` was deleted: its cached attributes and its runtime aliases (their
    /// tags went with it).
    pub async fn forget(&self, name: &str) {
        self.resolved.invalidate(name).await;
        self.dead_letter_sources.invalidate_all();
        self.derived
            .lock()
            .await
            .queues
            .retain(|_, queue| queue.as_str() != name);
        self.write_aliases()
            .runtime
            .retain(|_, queue| queue.as_str() != name);
    }

    /// The gateway queue `alias` names. A miss reads the runtime aliases back from the backend
    /// (at most once per cache period), so aliases bound by another replica are found.
    pub async fn queue_of_alias(&self, alias: &Alias) -> Option<String> {
        if let Some(queue) = self.read_aliases().get(alias) {
            return Some(queue.clone());
        }
        if let Some(queue) = self.derived_by_name(alias) {
            return Some(queue);
        }
        // Boxed: the read-back's future is large and rare, and every request naming a queue by
        // alias (a long poll too) would otherwise carry room for it.
        Box::pin(self.queue_of_unknown_alias(alias)).await
    }

    /// [`Self::queue_of_alias`] for an alias this replica does not know: reads the runtime
    /// aliases back if the last read is older than the cache period, then looks again.
    async fn queue_of_unknown_alias(&self, alias: &Alias) -> Option<String> {
        let mut loaded = self.alias_loads.lock().await;
        let now = self.clock.now();
        let stale = loaded.is_none_or(|at| {
            now.signed_duration_since(at).to_std().unwrap_or_default() >= self.ttl
        });
        if stale {
            *loaded = Some(now);
            if let Err(error) = self.load_aliases().await {
                tracing::warn!(error = %error, source = ?error.source, "runtime aliases not read");
            }
        }
        drop(loaded);
        if let Some(queue) = self.read_aliases().get(alias).cloned() {
            return Some(queue);
        }
        match (alias.namespace(), alias.path()) {
            (Namespace::Basaltic, [id]) if self.derives_basaltic_ids() => {
                self.queue_of_derived_id(id).await
            }
            _ => None,
        }
    }

    /// The aliases of `queue` in `namespace`: bound ones first, then derived ones.
    pub fn aliases_of(&self, queue: &str, namespace: Namespace) -> Vec<Alias> {
        let table = self.read_aliases();
        let mut aliases: Vec<Alias> = table
            .configured
            .iter()
            .chain(&table.runtime)
            .filter(|(alias, target)| alias.namespace() == namespace && target.as_str() == queue)
            .map(|(alias, _)| alias.clone())
            .collect();
        drop(table);
        if self.reaches_by_name(queue) {
            let derived: Vec<Alias> = match namespace {
                Namespace::Basaltic if !self.derives_basaltic_ids() => Vec::new(),
                Namespace::Basaltic => {
                    Alias::new(Namespace::Basaltic, [derived_basaltic_id(queue)])
                        .into_iter()
                        .collect()
                }
                Namespace::Ezgh => self
                    .open_projects
                    .iter()
                    .filter_map(|(organization, project)| {
                        Alias::ezgh(organization, project, queue).ok()
                    })
                    .collect(),
                Namespace::Sombus => Vec::new(),
            };
            for alias in derived {
                if !aliases.contains(&alias) {
                    aliases.push(alias);
                }
            }
        }
        aliases
    }

    /// Every alias of `namespace` with its queue (configured and runtime).
    pub fn aliases_in(&self, namespace: Namespace) -> Vec<(Alias, String)> {
        let table = self.read_aliases();
        let mut found: BTreeMap<Alias, String> = BTreeMap::new();
        for (alias, queue) in table.runtime.iter().chain(&table.configured) {
            if alias.namespace() == namespace {
                found.insert(alias.clone(), queue.clone());
            }
        }
        found.into_iter().collect()
    }

    /// Reads the runtime aliases back if the last read is older than [`ALIAS_REFRESH`].
    pub async fn refresh_aliases(&self) {
        let mut loaded = self.alias_loads.lock().await;
        let now = self.clock.now();
        if loaded.is_some_and(|at| {
            now.signed_duration_since(at).to_std().unwrap_or_default() < ALIAS_REFRESH
        }) {
            return;
        }
        *loaded = Some(now);
        if let Err(error) = self.load_aliases().await {
            tracing::warn!(error = %error, source = ?error.source, "runtime aliases not read");
        }
    }

    /// Binds `alias` to the gateway queue `queue`, keeping it on the backend queue. Binding it
    /// again to the same queue changes nothing; an alias of the config or of another queue is a
    /// conflict.
    pub async fn bind(&self, alias: &Alias, queue: &str) -> Result<(), GatewayError> {
        let _serialized = self.alias_loads.lock().await;
        {
            let table = self.read_aliases();
            if table.configured.contains_key(alias) {
                return Err(GatewayError::new(
                    ErrorKind::Conflict,
                    "the alias is set in the config; change it there",
                ));
            }
            match table.runtime.get(alias) {
                Some(current) if current == queue => return Ok(()),
                Some(_) => {
                    return Err(GatewayError::new(
                        ErrorKind::Conflict,
                        "the alias already names another queue",
                    ));
                }
                None => {}
            }
        }
        let resolved = self.get(queue).await?;
        let tag = BTreeMap::from([(alias.tag_key(), alias.written())]);
        self.backend
            .tag_queue(&resolved.url, &tag)
            .await
            .map_err(GatewayError::from)?;
        self.write_aliases()
            .runtime
            .insert(alias.clone(), queue.to_owned());
        tracing::info!(alias = %alias, queue, "alias bound");
        Ok(())
    }

    /// Removes the runtime alias `alias`; configured aliases change only with the config.
    pub async fn unbind(&self, alias: &Alias) -> Result<(), GatewayError> {
        let _serialized = self.alias_loads.lock().await;
        if self.read_aliases().configured.contains_key(alias) {
            return Err(GatewayError::new(
                ErrorKind::Conflict,
                "the alias is set in the config; change it there",
            ));
        }
        let queue = self
            .read_aliases()
            .runtime
            .get(alias)
            .cloned()
            .ok_or_else(|| GatewayError::new(ErrorKind::ResourceNotFound, "no such alias"))?;
        match self.get(&queue).await {
            Ok(resolved) => self
                .backend
                .untag_queue(&resolved.url, &[alias.tag_key()])
                .await
                .map_err(GatewayError::from)?,
            // The queue is gone, and its tags with it.
            Err(error) if error.kind == ErrorKind::QueueNotFound => {}
            Err(error) => return Err(error),
        }
        self.write_aliases().runtime.remove(alias);
        tracing::info!(alias = %alias, queue, "alias removed");
        Ok(())
    }

    /// Reads every runtime alias from the tags of the known queues. Configured queues come first:
    /// when two queues claim one alias, the first keeps it (and the other is logged).
    async fn load_aliases(&self) -> Result<(), GatewayError> {
        let mut names: Vec<String> = self.configured.keys().cloned().collect();
        // Open: every backend queue; closed: the ones under the managed prefixes.
        let prefixes: Vec<&str> = if self.open {
            vec![""]
        } else {
            self.managed_prefixes.iter().map(String::as_str).collect()
        };
        for prefix in prefixes {
            let listed = self
                .backend
                .list_queues(prefix)
                .await
                .map_err(GatewayError::from)?;
            names.extend(
                listed
                    .into_iter()
                    .filter(|name| !self.configured.contains_key(name)),
            );
        }
        let mut runtime = BTreeMap::new();
        let mut scanned = BTreeSet::new();
        // Queues that could not be read this time keep the aliases they had: one failed lookup
        // must not make a queue unreachable by its alias until the next read.
        let mut unread = BTreeSet::new();
        for name in names {
            let queue = match self.get(&name).await {
                Ok(queue) => queue,
                Err(error) => {
                    if error.kind != ErrorKind::QueueNotFound {
                        unread.insert(name);
                    }
                    continue;
                }
            };
            // A backend queue behind two gateway names is read once, under the first.
            if !scanned.insert(queue.url.clone()) {
                continue;
            }
            let tags = match self.backend.list_queue_tags(&queue.url).await {
                Ok(tags) => tags,
                // A backend without tags keeps no runtime aliases.
                Err(BackendError::Unsupported(_)) => return Ok(()),
                Err(BackendError::QueueNotFound) => continue,
                Err(error) => {
                    tracing::warn!(queue = %name, %error, "tags not read; its aliases are kept");
                    unread.insert(name);
                    continue;
                }
            };
            for (key, written) in tags {
                if !key.starts_with(ALIAS_TAG_PREFIX) {
                    continue;
                }
                match Alias::parse_written(&written) {
                    Some(alias) if alias.tag_key() == key => {
                        if let Some(first) = runtime.get(&alias) {
                            tracing::warn!(alias = %alias, queue = %name, kept = %first, "alias claimed by two queues");
                        } else {
                            runtime.insert(alias, name.clone());
                        }
                    }
                    _ => tracing::warn!(queue = %name, tag = %key, "unreadable alias tag ignored"),
                }
            }
        }
        let mut table = self.write_aliases();
        for (alias, queue) in &table.runtime {
            if unread.contains(queue) {
                runtime
                    .entry(alias.clone())
                    .or_insert_with(|| queue.clone());
            }
        }
        runtime.retain(|alias, _| !table.configured.contains_key(alias));
        table.runtime = runtime;
        Ok(())
    }

    fn read_aliases(&self) -> std::sync::RwLockReadGuard<'_, AliasTable> {
        self.aliases
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write_aliases(&self) -> std::sync::RwLockWriteGuard<'_, AliasTable> {
        self.aliases
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The gateway name of the queue whose ARN is `arn`, if one is known and resolvable. An ARN
    /// ends with the backend queue's name: only the gateway queues that can be that one are
    /// resolved (the configured ones mapped to it, and the name itself when the registry is open).
    pub async fn name_of_arn(&self, arn: &str) -> Option<String> {
        let backend_name = arn.rsplit(':').next()?;
        let mut candidates: Vec<String> = self
            .configured
            .iter()
            .filter(|(_, locator)| locator.rsplit('/').next() == Some(backend_name))
            .map(|(name, _)| name.clone())
            .collect();
        if self.maps_unconfigured(backend_name) {
            candidates.push(backend_name.to_owned());
        }
        for name in candidates {
            if let Ok(queue) = self.get(&name).await
                && queue.attributes.arn.as_deref() == Some(arn)
            {
                return Some(name);
            }
        }
        None
    }

    /// Gateway names of the known queues that dead-letter into the queue with `arn`.
    pub async fn dead_letter_sources(&self, arn: &str) -> Arc<Vec<String>> {
        self.dead_letter_sources
            .get_with_by_ref(arn, async {
                Arc::new(self.read_dead_letter_sources(arn).await)
            })
            .await
    }

    /// The queues whose redrive policy targets `arn`, read now.
    pub async fn read_dead_letter_sources(&self, arn: &str) -> Vec<String> {
        let mut sources = Vec::new();
        for name in self.names("").await.unwrap_or_default() {
            if let Ok(queue) = self.get(&name).await
                && queue
                    .attributes
                    .redrive
                    .as_ref()
                    .is_some_and(|redrive| redrive.dead_letter_target_arn == arn)
            {
                sources.push(name);
            }
        }
        sources
    }
}
