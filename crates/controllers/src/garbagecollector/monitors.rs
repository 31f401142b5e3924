//! Resource monitors: the shared metadata view of every deletable resource.
//!
//! Upstream `graph_builder.go` (`monitor`, `syncMonitors`, `startMonitors`, `IsSynced`).
//! Each monitor is a handler on the cache's metadata view of one resource
//! ([`coxswain_runtime::cache::Cache::metadata_for`]: the typed informer another
//! controller already runs for it, or a metadata-only informer shared with the namespace
//! and quota controllers), sending every change to the graph builder's channel.
//! [`Monitors::sync`] adds monitors for new resources and drops those whose resource
//! went away (a CRD deleted, say), stopping that resource's metadata-only informer.
//!
//! The metadata view holds only what the collector reads (name, namespace, uid,
//! resourceVersion, owner references, finalizers, deletionTimestamp).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use coxswain_runtime::cache::{Cache, Change, HandlerRegistration, MetadataInformer};

use super::builder::{EventKind, GraphEvent, Gvk, Meta};
use coxswain_runtime::discovery::ResourceInfo;

/// The sending side of the graph builder's channel, counting what is queued.
#[derive(Clone)]
pub struct ChangeSender {
    tx: UnboundedSender<GraphEvent>,
    pending: Arc<AtomicUsize>,
}

impl ChangeSender {
    /// A sender over `tx`; `pending` counts events sent and not yet taken.
    pub fn new(tx: UnboundedSender<GraphEvent>, pending: Arc<AtomicUsize>) -> Self {
        ChangeSender { tx, pending }
    }

    /// Queue one event (dropped when the builder stopped).
    pub fn send(&self, ev: GraphEvent) {
        if self.tx.send(ev).is_ok() {
            self.pending.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Monitor {
    informer: MetadataInformer,
    _registration: HandlerRegistration,
}

/// The running monitors.
pub struct Monitors {
    cache: Arc<Cache>,
    sender: ChangeSender,
    running: HashMap<Arc<ResourceInfo>, Monitor>,
}

/// The key a resource is monitored under (group, version, plural).
fn key(r: &ResourceInfo) -> (String, String, String) {
    (r.group.clone(), r.version.clone(), r.plural.clone())
}

impl Monitors {
    /// No monitors yet; those added later read `cache`'s metadata views and send to
    /// `sender`.
    pub fn new(cache: Arc<Cache>, sender: ChangeSender) -> Self {
        Monitors {
            cache,
            sender,
            running: HashMap::new(),
        }
    }

    /// Monitor exactly `resources`: start the new ones, stop the others. Returns how many
    /// were started and stopped.
    pub fn sync(&mut self, resources: &[Arc<ResourceInfo>]) -> (usize, usize) {
        let wanted: BTreeSet<(String, String, String)> = resources.iter().map(|r| key(r)).collect();
        let mut gone = Vec::new();
        self.running.retain(|r, _| {
            let keep = wanted.contains(&key(r));
            if !keep {
                gone.push(r.collection_url());
            }
            keep
        });
        for url in &gone {
            // the resource is no longer served (or no longer deletable)
            self.cache.stop_metadata(url);
        }
        let have: BTreeSet<(String, String, String)> =
            self.running.keys().map(|r| key(r)).collect();
        let mut started = 0;
        for r in resources {
            if have.contains(&key(r)) {
                continue;
            }
            let monitor = self.start(r);
            self.running.insert(r.clone(), monitor);
            started += 1;
        }
        (started, gone.len())
    }

    fn start(&self, r: &ResourceInfo) -> Monitor {
        let informer = self.cache.metadata_for(&r.collection_url());
        let gvk = Arc::new(Gvk {
            api_version: Arc::from(r.api_version().as_str()),
            kind: Arc::from(r.kind.as_str()),
        });
        let sender = self.sender.clone();
        let registration = informer.add_handler(move |change: &Change<Meta>| {
            let observed = |kind, obj: &Arc<Meta>, old: Option<&Arc<Meta>>| GraphEvent::Observed {
                kind,
                gvk: gvk.clone(),
                obj: obj.clone(),
                old: old.cloned(),
            };
            match change {
                Change::Added(o) => sender.send(observed(EventKind::Add, o, None)),
                Change::Updated { old, new } if old.metadata.uid != new.metadata.uid => {
                    // deleted and recreated under the same name between two lists
                    sender.send(observed(EventKind::Delete, old, None));
                    sender.send(observed(EventKind::Add, new, None));
                }
                Change::Updated { old, new } => {
                    sender.send(observed(EventKind::Update, new, Some(old)))
                }
                Change::Deleted(o) => sender.send(observed(EventKind::Delete, o, None)),
            }
        });
        tracing::debug!(resource = %r.gvr(), shared_with_typed = informer.is_typed(), "garbage collector monitor started");
        Monitor {
            informer,
            _registration: registration,
        }
    }

    /// Whether there are monitors and all have loaded their initial state.
    pub fn is_synced(&self) -> bool {
        !self.running.is_empty() && self.running.values().all(|m| m.informer.has_synced())
    }

    /// Whether the monitor of `r` runs and has synced.
    pub fn is_resource_synced(&self, r: &ResourceInfo) -> bool {
        self.running
            .iter()
            .any(|(k, m)| key(k) == key(r) && m.informer.has_synced())
    }

    /// The metadata views monitored.
    pub fn informers(&self) -> Vec<MetadataInformer> {
        self.running.values().map(|m| m.informer.clone()).collect()
    }

    /// The monitored resources.
    pub fn resources(&self) -> Vec<Arc<ResourceInfo>> {
        self.running.keys().cloned().collect()
    }

    /// Number of monitors.
    pub fn len(&self) -> usize {
        self.running.len()
    }

    /// Whether there is no monitor.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Stop every monitor (the shared informers keep running for their other users).
    pub fn stop(&mut self) {
        self.running.clear();
    }
}
