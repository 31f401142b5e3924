//! Resource monitors: one metadata-only informer per deletable resource.
//!
//! Upstream `graph_builder.go` (`monitor`, `syncMonitors`, `startMonitors`, `IsSynced`).
//! Each monitor lists and watches one resource as `PartialObjectMetadata` and sends every
//! change to the graph builder's channel. [`Monitors::sync`] starts monitors for new
//! resources and stops those whose resource went away (a CRD deleted, say), keeping the
//! others running.
//!
//! The cached copy of each object is cut down to what the collector reads (name,
//! namespace, uid, resourceVersion, owner references, finalizers, deletionTimestamp):
//! labels, annotations and the rest would only cost memory.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::PartialObjectMeta;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use coxswain_runtime::cache::{Change, Informer, InformerConfig, ResourceApi, Transform};

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

/// Keep only what the garbage collector reads of an object's metadata.
pub fn prune(m: Meta) -> Meta {
    let md = m.metadata;
    PartialObjectMeta {
        types: None,
        metadata: ObjectMeta {
            name: md.name,
            namespace: md.namespace,
            uid: md.uid,
            resource_version: md.resource_version,
            owner_references: md.owner_references,
            finalizers: md.finalizers,
            deletion_timestamp: md.deletion_timestamp,
            ..ObjectMeta::default()
        },
        _phantom: Default::default(),
    }
}

struct Monitor {
    informer: Arc<Informer<Meta>>,
    cancel: CancellationToken,
}

/// The running monitors.
pub struct Monitors {
    client: kube::Client,
    sender: ChangeSender,
    cancel: CancellationToken,
    running: HashMap<Arc<ResourceInfo>, Monitor>,
}

/// The key a resource is monitored under (group, version, plural).
fn key(r: &ResourceInfo) -> (String, String, String) {
    (r.group.clone(), r.version.clone(), r.plural.clone())
}

impl Monitors {
    /// No monitors yet; those started later send to `sender` and stop with `cancel`.
    pub fn new(client: kube::Client, sender: ChangeSender, cancel: CancellationToken) -> Self {
        Monitors {
            client,
            sender,
            cancel,
            running: HashMap::new(),
        }
    }

    /// Monitor exactly `resources`: start the new ones, stop the others. Returns how many
    /// were started and stopped.
    pub fn sync(&mut self, resources: &[Arc<ResourceInfo>]) -> (usize, usize) {
        let wanted: BTreeSet<(String, String, String)> = resources.iter().map(|r| key(r)).collect();
        let mut stopped = 0;
        self.running.retain(|r, m| {
            let keep = wanted.contains(&key(r));
            if !keep {
                m.cancel.cancel();
                stopped += 1;
            }
            keep
        });
        let have: BTreeSet<(String, String, String)> =
            self.running.keys().map(|r| key(r)).collect();
        let mut started = 0;
        for r in resources {
            if have.contains(&key(r)) {
                continue;
            }
            self.running.insert(r.clone(), self.start(r));
            started += 1;
        }
        (started, stopped)
    }

    fn start(&self, r: &ResourceInfo) -> Monitor {
        let transform: Transform<Meta> = Arc::new(prune);
        let informer = Informer::<Meta>::with_transform(InformerConfig::default(), Some(transform));
        let gvk = Arc::new(Gvk {
            api_version: Arc::from(r.api_version().as_str()),
            kind: Arc::from(r.kind.as_str()),
        });
        let sender = self.sender.clone();
        informer.add_handler(move |change: &Change<Meta>| {
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
        let cancel = self.cancel.child_token();
        let api = ResourceApi::new(self.client.clone(), r.collection_url()).metadata_only();
        let runner = informer.clone();
        let stop = cancel.clone();
        tokio::spawn(async move { runner.run(api, stop).await });
        tracing::debug!(resource = %r.gvr(), "garbage collector monitor started");
        Monitor { informer, cancel }
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

    /// Stop every monitor.
    pub fn stop(&mut self) {
        for m in self.running.values() {
            m.cancel.cancel();
        }
        self.running.clear();
    }
}

impl Drop for Monitors {
    fn drop(&mut self) {
        self.stop();
    }
}
