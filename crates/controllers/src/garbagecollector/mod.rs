//! The garbage collector: deletes objects whose owners are gone.
//!
//! Upstream `pkg/controller/garbagecollector/garbagecollector.go` (with `graph.go`,
//! `graph_builder.go`, `operations.go`, `patch.go`). How it fits together:
//!
//! - **discovery** ([`coxswain_runtime::discovery`]) finds every preferred resource that supports
//!   `list`, `watch` and `delete` (custom resources included; `events` ignored), again
//!   every [`GarbageCollectorOptions::resync_period`] (30 s), starting and stopping
//!   monitors as resources come and go;
//! - **monitors** ([`monitors`]): a handler per resource on the cache's shared metadata
//!   view (one watch per collection, shared with the typed informers), funnelling events
//!   into one channel;
//! - **graph builder** ([`builder`]): the single writer of the dependency graph
//!   ([`graph`]), which enqueues objects that may be garbage into `attemptToDelete` and
//!   objects being orphaned into `attemptToOrphan`;
//! - **workers** ([`collector`]), [`GarbageCollectorOptions::concurrent_gc_syncs`] per queue (upstream
//!   `--concurrent-gc-syncs`, 20), which verify with the server and delete or patch
//!   ([`operations`]).
//!
//! Deletion modes, as the API server sets them up with finalizers on DELETE:
//! *background* (owner gone at once; the collector then deletes the dependents),
//! *foreground* (`foregroundDeletion`: dependents with `blockOwnerDeletion` are deleted
//! first, the owner's finalizer is removed last) and *orphan* (`orphan`: the owner's
//! references are removed from its dependents, then the finalizer).

pub mod builder;
pub mod collector;
pub mod graph;
pub mod metrics;
pub mod monitors;
pub mod operations;

use crate::clientbuilder::ClusterAccess;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_util::sync::CancellationToken;

use crate::registry::{ControllerContext, Descriptor};
use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{
    Context, Controller, ControllerOptions, ReconcileResult, Reconciler,
};
use coxswain_runtime::discovery::{Discovery, ResourceInfo, SharedDiscovery};
use coxswain_runtime::events::EventRecorder;
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::workqueue::RateLimitedQueue;

use builder::{GraphBuilder, GraphEvent, Item};
use graph::{AbsentOwnerCache, Graph, Uid};
use monitors::{ChangeSender, Monitors};
use operations::Operations;

/// Canonical name of the controller.
pub const NAME: &str = "garbage-collector-controller";

/// Name (queue, metrics) of the controller that deletes garbage.
pub const ATTEMPT_TO_DELETE: &str = "garbage_collector_attempt_to_delete";

/// Name (queue, metrics) of the controller that orphans dependents.
pub const ATTEMPT_TO_ORPHAN: &str = "garbage_collector_attempt_to_orphan";

/// The registry entry: `garbage-collector-controller`, alias `garbagecollector`; off
/// with `--enable-garbage-collector=false`.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["garbagecollector"],
        disabled_by_default: false,
        constructor: |ctx: &ControllerContext<'_>| {
            let options = ctx.options.garbage_collector.clone();
            if !options.enable_garbage_collector {
                return Ok(None);
            }
            let clients = ctx.clients(SERVICE_ACCOUNT)?;
            let gc = GarbageCollector::with_kube_client(
                clients.kube_client().clone(),
                clients.cache().clone(),
                clients.discovery().clone(),
                Some(clients.event_recorder(NAME)),
                options,
            );
            Ok(Some(Box::new(gc) as Box<dyn Runnable>))
        },
    }
}

/// The collector's options (upstream `GarbageCollectorControllerConfiguration`); the
/// defaults are kube-controller-manager's.
#[derive(Clone, Debug)]
pub struct GarbageCollectorOptions {
    /// `--enable-garbage-collector` (true).
    pub enable_garbage_collector: bool,
    /// Workers per queue (`--concurrent-gc-syncs`, 20).
    pub concurrent_gc_syncs: usize,
    /// `(group, resource)` pairs never monitored (upstream `GCIgnoredResources`, default
    /// `DefaultIgnoredResources`: the core and `events.k8s.io` events).
    pub ignored_resources: Vec<(String, String)>,
    /// How often discovery is asked for new or removed resources (30 s).
    pub resync_period: Duration,
    /// How long the workers wait for the monitors' initial sync before they start anyway
    /// (30 s).
    pub initial_sync_timeout: Duration,
}

impl Default for GarbageCollectorOptions {
    fn default() -> Self {
        GarbageCollectorOptions {
            enable_garbage_collector: true,
            concurrent_gc_syncs: 20,
            ignored_resources: vec![
                (String::new(), "events".into()),
                ("events.k8s.io".into(), "events".into()),
            ],
            resync_period: Duration::from_secs(30),
            initial_sync_timeout: Duration::from_secs(30),
        }
    }
}

/// State shared by the builder, the workers and [`GcHandle`]s.
pub(crate) struct Shared {
    graph: RwLock<Graph>,
    absent: Arc<Mutex<AbsentOwnerCache>>,
    attempt_to_delete: RateLimitedQueue<Item>,
    attempt_to_orphan: RateLimitedQueue<Item>,
    mapper: RwLock<Arc<Discovery>>,
    changes: ChangeSender,
    pending: Arc<AtomicUsize>,
    ops: Operations,
    recorder: Option<EventRecorder>,
    monitors: Mutex<Option<Monitors>>,
}

/// A read-only view of a running collector (for tests, benchmarks and debugging).
#[derive(Clone)]
pub struct GcHandle {
    shared: Arc<Shared>,
}

impl GcHandle {
    /// Objects in the dependency graph (observed and virtual).
    pub fn graph_len(&self) -> usize {
        self.shared
            .graph
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Whether the object with `uid` is in the graph.
    pub fn contains(&self, uid: &str) -> bool {
        self.shared
            .graph
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&Uid::parse(uid))
            .is_some()
    }

    /// Whether every monitor has loaded its initial state (false before the first).
    pub fn is_synced(&self) -> bool {
        self.shared
            .monitors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(Monitors::is_synced)
    }

    /// Number of monitored resources.
    pub fn monitors(&self) -> usize {
        self.shared
            .monitors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map_or(0, Monitors::len)
    }

    /// Informer events not yet applied, and items ready in the two queues.
    pub fn backlog(&self) -> (usize, usize, usize) {
        (
            self.shared.pending.load(Ordering::Relaxed),
            self.shared.attempt_to_delete.len(),
            self.shared.attempt_to_orphan.len(),
        )
    }
}

/// The garbage collector, as a manager runnable.
pub struct GarbageCollector {
    cache: Arc<Cache>,
    discovery: SharedDiscovery,
    options: GarbageCollectorOptions,
    shared: Arc<Shared>,
    receiver: UnboundedReceiver<GraphEvent>,
    deleter: Controller<DeleteWorker, Item>,
    orphaner: Controller<OrphanWorker, Item>,
}

/// The `attemptToDelete` reconciler.
struct DeleteWorker(Arc<Shared>);

impl Reconciler<Item> for DeleteWorker {
    async fn reconcile(&self, _ctx: Context, item: Item) -> ReconcileResult {
        self.0.attempt_to_delete_worker(&item).await
    }
}

/// The `attemptToOrphan` reconciler.
struct OrphanWorker(Arc<Shared>);

impl Reconciler<Item> for OrphanWorker {
    async fn reconcile(&self, _ctx: Context, item: Item) -> ReconcileResult {
        self.0.attempt_to_orphan_worker(&item).await
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("generic-garbage-collector")`).
pub const SERVICE_ACCOUNT: &str = "generic-garbage-collector";

impl GarbageCollector {
    /// A collector reading metadata through `cache`, finding resources with `discovery`;
    /// `recorder` reports invalid owner references.
    pub fn new(
        cache: Arc<Cache>,
        discovery: SharedDiscovery,
        recorder: Option<EventRecorder>,
        options: GarbageCollectorOptions,
    ) -> Self {
        let kube = cache.client().clone();
        Self::with_kube_client(kube, cache, discovery, recorder, options)
    }

    /// As [`GarbageCollector::new`], deleting, patching and reading live objects with
    /// `kube` (the collector's own identity) rather than the cache's client.
    pub fn with_kube_client(
        kube: kube::Client,
        cache: Arc<Cache>,
        discovery: SharedDiscovery,
        recorder: Option<EventRecorder>,
        options: GarbageCollectorOptions,
    ) -> Self {
        let (tx, receiver) = unbounded_channel();
        let pending = Arc::new(AtomicUsize::new(0));
        let workers = ControllerOptions::<Item>::workers(options.concurrent_gc_syncs);
        let delete_queue: RateLimitedQueue<Item> =
            Controller::<DeleteWorker, Item>::new_queue(ATTEMPT_TO_DELETE, &workers);
        let orphan_queue: RateLimitedQueue<Item> =
            Controller::<OrphanWorker, Item>::new_queue(ATTEMPT_TO_ORPHAN, &workers);
        let shared = Arc::new(Shared {
            graph: RwLock::new(Graph::default()),
            absent: Arc::new(Mutex::new(AbsentOwnerCache::new(500))),
            attempt_to_delete: delete_queue.clone(),
            attempt_to_orphan: orphan_queue.clone(),
            mapper: RwLock::new(Arc::new(Discovery::default())),
            changes: ChangeSender::new(tx, pending.clone()),
            pending,
            ops: Operations::new(kube),
            recorder,
            monitors: Mutex::new(None),
        });
        let deleter = Controller::with_queue(
            ATTEMPT_TO_DELETE,
            delete_queue,
            DeleteWorker(shared.clone()),
            workers.clone(),
        );
        let orphaner = Controller::with_queue(
            ATTEMPT_TO_ORPHAN,
            orphan_queue,
            OrphanWorker(shared.clone()),
            workers,
        );
        GarbageCollector {
            cache,
            discovery,
            options,
            shared,
            receiver,
            deleter,
            orphaner,
        }
    }

    /// A handle to watch the collector once it runs.
    pub fn handle(&self) -> GcHandle {
        GcHandle {
            shared: self.shared.clone(),
        }
    }

    /// Run until `cancel` fires.
    pub async fn run(self, cancel: CancellationToken) {
        let GarbageCollector {
            cache,
            discovery,
            options,
            shared,
            receiver,
            deleter,
            orphaner,
        } = self;
        tracing::info!(controller = NAME, "starting controller");
        let m = metrics::metrics();
        *shared.monitors.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Monitors::new(cache, shared.changes.clone()));
        let builder = GraphBuilder::new(
            shared.attempt_to_delete.clone(),
            shared.attempt_to_orphan.clone(),
            shared.absent.clone(),
            shared.recorder.clone(),
        );
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(build_graph(
            shared.clone(),
            builder,
            receiver,
            cancel.clone(),
        ));

        let mut current: BTreeSet<Arc<ResourceInfo>> = BTreeSet::new();
        sync(&discovery, &options, &shared, &mut current).await;
        let informers = shared
            .monitors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(Monitors::informers)
            .unwrap_or_default();
        let synced = futures::future::join_all(informers.iter().map(|i| i.wait_for_sync()));
        tokio::select! {
            _ = synced => tracing::info!("garbage collector: all resource monitors have synced"),
            _ = tokio::time::sleep(options.initial_sync_timeout) => {
                tracing::info!("garbage collector: not all resource monitors could be synced, proceeding anyways")
            }
            _ = cancel.cancelled() => {}
        }
        tracing::info!("proceeding to collect garbage");
        tasks.spawn(deleter.run(cancel.clone()));
        tasks.spawn(orphaner.run(cancel.clone()));
        let mut resync = tokio::time::interval(options.resync_period);
        resync.reset();
        let mut report = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = resync.tick() => sync(&discovery, &options, &shared, &mut current).await,
                _ = report.tick() => {
                    let h = GcHandle { shared: shared.clone() };
                    let (changes, delete, orphan) = h.backlog();
                    m.graph_nodes.set(h.graph_len() as i64);
                    m.monitors.set(h.monitors() as i64);
                    m.graph_changes_depth.set(changes as i64);
                    m.attempt_to_delete_depth.set(delete as i64);
                    m.attempt_to_orphan_depth.set(orphan as i64);
                }
            }
        }
        tracing::info!(controller = NAME, "shutting down controller");
        while tasks.join_next().await.is_some() {}
        let monitors = shared
            .monitors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut monitors) = monitors {
            monitors.stop();
        }
    }
}

impl Runnable for GarbageCollector {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            (*self).run(cancel).await;
            Ok(())
        }
        .boxed()
    }
}

/// The graph builder's loop: apply events in batches under one lock.
async fn build_graph(
    shared: Arc<Shared>,
    mut builder: GraphBuilder,
    mut rx: UnboundedReceiver<GraphEvent>,
    cancel: CancellationToken,
) {
    let mut batch = Vec::with_capacity(256);
    loop {
        let n = tokio::select! {
            _ = cancel.cancelled() => break,
            n = rx.recv_many(&mut batch, 256) => n,
        };
        if n == 0 {
            break;
        }
        shared.pending.fetch_sub(n, Ordering::Relaxed);
        let mut graph = shared.graph.write().unwrap_or_else(|e| e.into_inner());
        for ev in batch.drain(..) {
            builder.process(&mut graph, ev);
        }
    }
    tracing::debug!("graph builder stops");
}

/// One discovery pass: refresh the REST mapping; start and stop monitors when the set of
/// deletable resources changed (upstream `GarbageCollector.Sync`, one iteration).
async fn sync(
    discovery: &SharedDiscovery,
    options: &GarbageCollectorOptions,
    shared: &Shared,
    current: &mut BTreeSet<Arc<ResourceInfo>>,
) {
    let m = metrics::metrics();
    let discovery = match discovery.refresh().await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "garbage collector: failed to discover preferred resources");
            m.sync_errors.inc();
            return;
        }
    };
    if let Some(msg) = discovery.failure_message() {
        tracing::info!(groups = %msg, "garbage collector: failed to discover some groups");
    }
    let mut wanted: BTreeSet<Arc<ResourceInfo>> = discovery
        .preferred_supporting(&["delete", "list", "watch"])
        .into_iter()
        .filter(|r| {
            !options
                .ignored_resources
                .iter()
                .any(|(g, res)| *g == r.group && *res == r.plural)
        })
        .collect();
    if wanted.is_empty() {
        tracing::debug!("no resources reported by discovery, skipping garbage collector sync");
        m.sync_errors.inc();
        return;
    }
    let mut monitors = shared.monitors.lock().unwrap_or_else(|e| e.into_inner());
    let Some(monitors) = monitors.as_mut() else {
        return;
    };
    if !discovery.failed.is_empty() {
        // partial discovery: keep what already works for the groups that failed
        for r in current.iter() {
            let gv = r.api_version();
            if discovery.failed.contains_key(&gv) && monitors.is_resource_synced(r) {
                wanted.insert(r.clone());
            }
        }
    }
    *shared.mapper.write().unwrap_or_else(|e| e.into_inner()) = discovery;
    if wanted == *current {
        return;
    }
    let list: Vec<Arc<ResourceInfo>> = wanted.iter().cloned().collect();
    let (started, stopped) = monitors.sync(&list);
    tracing::info!(
        started,
        stopped,
        monitored = list.len(),
        "garbage collector: synced monitors with discovery"
    );
    *current = wanted;
}
