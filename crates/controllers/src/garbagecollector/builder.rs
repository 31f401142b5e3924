//! The graph builder: turns informer events into graph changes and work for the collector.
//!
//! Upstream `pkg/controller/garbagecollector/graph_builder.go` (`processGraphChanges` and
//! its helpers). Events from every monitor are funnelled into one channel and applied by
//! one task, so the graph has a single writer; workers read it under the same lock for
//! short, non-blocking moments.
//!
//! What is enqueued where:
//! - a new *virtual* owner (known only from a reference) goes to `attemptToDelete`, which
//!   asks the server whether it exists;
//! - a dependent whose reference may be wrong (owner in another namespace, coordinates
//!   that disagree with the observed owner) goes to `attemptToDelete`, which verifies it;
//! - an object that starts being deleted with the `orphan` finalizer goes to
//!   `attemptToOrphan`; with the `foregroundDeletion` finalizer it is marked *deleting
//!   dependents* and it and its dependents go to `attemptToDelete`;
//! - a removed object's dependents go to `attemptToDelete` (their owner is gone), and so
//!   do its owners that wait for their dependents' deletion;
//! - a reference removed or made non-blocking wakes its owner (it may be unblocked).

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use coxswain_runtime::events::{EventRecorder, EventType};
use coxswain_runtime::workqueue::RateLimitedQueue;

use super::graph::{
    alternate_owner_identity, partition_dependents, references_diffs, AbsentOwnerCache, Graph,
    Interner, Node, ObjectRef, OwnerRef, Uid,
};

/// Metadata of one object as the monitors deliver it.
pub type Meta = coxswain_runtime::cache::Meta;

/// The `foregroundDeletion` finalizer (`metav1.FinalizerDeleteDependents`).
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
/// The `orphan` finalizer (`metav1.FinalizerOrphanDependents`).
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";

/// The queue key of the collector's work queues.
pub type Item = Arc<ObjectRef>;

/// What happened to an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Added.
    Add,
    /// Updated.
    Update,
    /// Deleted.
    Delete,
}

/// The apiVersion and kind of a monitored resource.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Gvk {
    /// `apiVersion`.
    pub api_version: Arc<str>,
    /// `kind`.
    pub kind: Arc<str>,
}

/// One change for the graph.
#[derive(Debug)]
pub enum GraphEvent {
    /// Seen by an informer.
    Observed {
        /// Add, update or delete.
        kind: EventKind,
        /// The resource's apiVersion and kind.
        gvk: Arc<Gvk>,
        /// The object (its last known state for a delete).
        obj: Arc<Meta>,
        /// The previous state, for updates.
        old: Option<Arc<Meta>>,
    },
    /// The collector found that this object does not exist (upstream's virtual delete).
    VirtualDelete(Item),
}

/// The finalizer state a transition is judged on.
#[derive(Clone, Copy, Debug, Default)]
struct DeletionState {
    being_deleted: bool,
    orphan: bool,
    foreground: bool,
}

impl DeletionState {
    fn of(m: &Meta) -> Self {
        let has = |f: &str| {
            m.metadata
                .finalizers
                .as_ref()
                .is_some_and(|v| v.iter().any(|x| x == f))
        };
        DeletionState {
            being_deleted: m.metadata.deletion_timestamp.is_some(),
            orphan: has(FINALIZER_ORPHAN_DEPENDENTS),
            foreground: has(FINALIZER_DELETE_DEPENDENTS),
        }
    }
}

/// Upstream `deletionStartsWithFinalizer`.
fn starts_with(
    old: Option<DeletionState>,
    new: DeletionState,
    pick: fn(&DeletionState) -> bool,
) -> bool {
    if !new.being_deleted || !pick(&new) {
        return false;
    }
    match old {
        None => true,
        Some(o) => !o.being_deleted || !pick(&o),
    }
}

/// Convert API owner references, sharing the repeated strings.
pub fn owner_refs(refs: Option<&Vec<OwnerReference>>, interner: &mut Interner) -> Vec<OwnerRef> {
    refs.map(|v| {
        v.iter()
            .map(|r| OwnerRef {
                api_version: interner.get(&r.api_version),
                kind: interner.get(&r.kind),
                name: Arc::from(r.name.as_str()),
                uid: Uid::parse(&r.uid),
                controller: r.controller,
                block_owner_deletion: r.block_owner_deletion,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// An event reference to `identity`.
pub fn object_reference(identity: &ObjectRef) -> ObjectReference {
    ObjectReference {
        api_version: Some(identity.api_version.to_string()),
        kind: Some(identity.kind.to_string()),
        name: Some(identity.name.to_string()),
        namespace: identity.namespace.as_deref().map(str::to_string),
        uid: Some(identity.uid.to_string()),
        ..ObjectReference::default()
    }
}

/// Applies graph events (the single writer of the graph).
pub struct GraphBuilder {
    interner: Interner,
    attempt_to_delete: RateLimitedQueue<Item>,
    attempt_to_orphan: RateLimitedQueue<Item>,
    absent: Arc<std::sync::Mutex<AbsentOwnerCache>>,
    recorder: Option<EventRecorder>,
}

impl GraphBuilder {
    /// A builder feeding the two queues and the absent-owner cache; `recorder` reports
    /// owner references to another namespace.
    pub fn new(
        attempt_to_delete: RateLimitedQueue<Item>,
        attempt_to_orphan: RateLimitedQueue<Item>,
        absent: Arc<std::sync::Mutex<AbsentOwnerCache>>,
        recorder: Option<EventRecorder>,
    ) -> Self {
        GraphBuilder {
            interner: Interner::default(),
            attempt_to_delete,
            attempt_to_orphan,
            absent,
            recorder,
        }
    }

    fn absent_add(&self, r: ObjectRef) {
        self.absent.lock().unwrap_or_else(|e| e.into_inner()).add(r);
    }

    fn enqueue_delete(&self, graph: &Graph, uid: &Uid) {
        if let Some(n) = graph.get(uid) {
            self.attempt_to_delete.add(n.identity.clone());
        }
    }

    /// Upstream `identityFromEvent`.
    fn identity(&mut self, gvk: &Gvk, m: &Meta) -> ObjectRef {
        ObjectRef {
            api_version: gvk.api_version.clone(),
            kind: gvk.kind.clone(),
            name: Arc::from(m.metadata.name.as_deref().unwrap_or("")),
            uid: Uid::parse(m.metadata.uid.as_deref().unwrap_or("")),
            namespace: m
                .metadata
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(|n| self.interner.get(n)),
        }
    }

    /// Apply one event to `graph` (upstream `processGraphChanges`, one iteration).
    pub fn process(&mut self, graph: &mut Graph, event: GraphEvent) {
        let (kind, virtual_event, ident, owners, state, old) = match event {
            GraphEvent::Observed {
                kind,
                gvk,
                obj,
                old,
            } => {
                let ident = self.identity(&gvk, &obj);
                let owners = owner_refs(obj.metadata.owner_references.as_ref(), &mut self.interner);
                let old = old.map(|o| DeletionState::of(&o));
                (kind, false, ident, owners, DeletionState::of(&obj), old)
            }
            GraphEvent::VirtualDelete(item) => (
                EventKind::Delete,
                true,
                (*item).clone(),
                Vec::new(),
                DeletionState::default(),
                None,
            ),
        };
        let uid = ident.uid.clone();
        if uid.is_empty() {
            tracing::debug!(object = %ident, "garbage collector skips an object without uid");
            return;
        }
        let found = graph.get(&uid).is_some();
        if found && !virtual_event && graph.get(&uid).is_some_and(|n| n.virtual_) {
            self.mark_observed(graph, &ident);
        }
        match (kind, found) {
            (EventKind::Add | EventKind::Update, false) => {
                let mut node = Node::observed(Arc::new(ident), owners.clone());
                node.being_deleted = state.being_deleted;
                node.deleting_dependents = state.being_deleted && state.foreground;
                let identity = node.identity.clone();
                graph.insert(node);
                self.add_dependent_to_owners(graph, &identity, &owners, &owners);
                // a creation and a deletion may come as one event
                self.process_transitions(graph, old, state, &uid);
            }
            (EventKind::Add | EventKind::Update, true) => {
                if let Some(n) = graph.get_mut(&uid) {
                    if !virtual_event
                        && (n.identity.api_version != ident.api_version
                            || n.identity.kind != ident.kind)
                    {
                        let mut changed = (*n.identity).clone();
                        changed.api_version = ident.api_version.clone();
                        changed.kind = ident.kind.clone();
                        n.identity = Arc::new(changed);
                    }
                }
                let (existing, identity) = match graph.get(&uid) {
                    Some(n) => (n.owners.clone(), n.identity.clone()),
                    None => return,
                };
                let (added, removed, changed) = references_diffs(&existing, &owners);
                if !added.is_empty() || !removed.is_empty() || !changed.is_empty() {
                    self.add_unblocked_owners_to_delete_queue(graph, &removed, &changed);
                    if let Some(n) = graph.get_mut(&uid) {
                        n.owners = owners.clone();
                    }
                    self.add_dependent_to_owners(graph, &identity, &added, &owners);
                    remove_dependent_from_owners(graph, &uid, &removed);
                }
                if state.being_deleted {
                    if let Some(n) = graph.get_mut(&uid) {
                        n.being_deleted = true;
                    }
                }
                self.process_transitions(graph, old, state, &uid);
            }
            (EventKind::Delete, false) => {
                tracing::trace!(uid = %uid, "deleted item is not in the graph");
            }
            (EventKind::Delete, true) => self.process_delete(graph, ident, virtual_event),
        }
    }

    /// A virtual node is seen through an informer for the first time: take the observed
    /// coordinates, and verify the dependents that referred to it by others.
    fn mark_observed(&mut self, graph: &mut Graph, observed: &ObjectRef) {
        let uid = observed.uid.clone();
        let Some(current) = graph.get(&uid).map(|n| n.identity.clone()) else {
            return;
        };
        if *current != *observed {
            let deps = graph.dependents(&uid);
            let (_, invalid) = partition_dependents(&deps, observed);
            for dep in invalid {
                if observed.namespace.is_some() && dep.identity.namespace != observed.namespace {
                    tracing::debug!(item = %dep.identity, owner = %observed, "item references an owner but does not match namespaces");
                    self.report_invalid_namespace_owner_ref(&dep.identity, &dep.owners, &uid);
                }
                self.attempt_to_delete.add(dep.identity.clone());
            }
            tracing::debug!(virtual_ = %current, observed = %observed, "replacing virtual item with observed item");
            if let Some(n) = graph.get_mut(&uid) {
                n.identity = Arc::new(observed.clone());
            }
        }
        if let Some(n) = graph.get_mut(&uid) {
            n.virtual_ = false;
        }
    }

    /// Upstream `addDependentToOwners`: add `dependent` to the dependents of each of
    /// `owners` (making virtual nodes for unknown ones) and enqueue it for verification
    /// when a reference looks wrong. `all_owners` are the dependent's references (for
    /// event messages).
    fn add_dependent_to_owners(
        &mut self,
        graph: &mut Graph,
        dependent: &Arc<ObjectRef>,
        owners: &[OwnerRef],
        all_owners: &[OwnerRef],
    ) {
        let mut potentially_invalid = false;
        for owner in owners {
            let Some(owner_node) = graph.get_mut(&owner.uid) else {
                let mut virtual_ =
                    Node::virtual_owner(Arc::new(owner.identity(dependent.namespace.clone())));
                virtual_.dependents.insert(dependent.uid.clone());
                let identity = virtual_.identity.clone();
                tracing::trace!(identity = %identity, "add virtual item");
                graph.insert(virtual_);
                // the collector asks the server whether this owner exists
                self.attempt_to_delete.add(identity);
                continue;
            };
            owner_node.dependents.insert(dependent.uid.clone());
            if potentially_invalid {
                continue;
            }
            let owner_identity = owner_node.identity.clone();
            let owner_observed = !owner_node.virtual_;
            let owner_namespaced = owner_identity.namespace.is_some();
            if owner_namespaced && owner_identity.namespace != dependent.namespace {
                if owner_observed {
                    tracing::debug!(item = %dependent, owner = %owner_identity, "item references an owner but does not match namespaces");
                    self.report_invalid_namespace_owner_ref(dependent, all_owners, &owner.uid);
                }
                potentially_invalid = true;
            } else if !owner.matches(&owner_identity) {
                if owner_observed {
                    tracing::debug!(item = %dependent, owner = %owner_identity, "item references an owner with coordinates that do not match the observed identity");
                }
                potentially_invalid = true;
            } else if !owner_namespaced && dependent.namespace.is_some() && !owner_observed {
                // a cluster-scoped virtual owner of a namespaced dependent: it may be a
                // missing namespaced object wrongly referenced (upstream issue 98040)
                potentially_invalid = true;
            }
        }
        if potentially_invalid {
            self.attempt_to_delete.add(dependent.clone());
        }
    }

    /// Upstream `reportInvalidNamespaceOwnerRef`: a Warning event on the dependent.
    fn report_invalid_namespace_owner_ref(
        &self,
        dependent: &ObjectRef,
        owners: &[OwnerRef],
        invalid_uid: &Uid,
    ) {
        let Some(r) = owners.iter().find(|r| r.uid == *invalid_uid) else {
            return;
        };
        let invalid = r.identity(dependent.namespace.clone());
        if let Some(recorder) = &self.recorder {
            recorder.event(
                &object_reference(dependent),
                None,
                EventType::Warning,
                "OwnerRefInvalidNamespace",
                "GarbageCollect",
                &format!(
                    "ownerRef {invalid} does not exist in namespace {:?}",
                    dependent.ns()
                ),
            );
        }
    }

    /// Upstream `addUnblockedOwnersToDeleteQueue`.
    fn add_unblocked_owners_to_delete_queue(
        &self,
        graph: &Graph,
        removed: &[OwnerRef],
        changed: &[(OwnerRef, OwnerRef)],
    ) {
        for r in removed.iter().filter(|r| r.blocks()) {
            self.enqueue_delete(graph, &r.uid);
        }
        for (old, new) in changed {
            if old.blocks() && !new.blocks() {
                self.enqueue_delete(graph, &new.uid);
            }
        }
    }

    /// Upstream `processTransitions`.
    fn process_transitions(
        &self,
        graph: &mut Graph,
        old: Option<DeletionState>,
        new: DeletionState,
        uid: &Uid,
    ) {
        if starts_with(old, new, |s| s.orphan) {
            if let Some(n) = graph.get(uid) {
                tracing::debug!(item = %n.identity, "add item to attemptToOrphan");
                self.attempt_to_orphan.add(n.identity.clone());
            }
            return;
        }
        if starts_with(old, new, |s| s.foreground) {
            let Some(n) = graph.get_mut(uid) else {
                return;
            };
            n.deleting_dependents = true;
            let identity = n.identity.clone();
            let deps: Vec<Uid> = n.dependents.iter().cloned().collect();
            tracing::debug!(item = %identity, "add item to attemptToDelete, because it's waiting for its dependents to be deleted");
            for d in deps {
                self.enqueue_delete(graph, &d);
            }
            self.attempt_to_delete.add(identity);
        }
    }

    /// The delete branch of `processGraphChanges`.
    fn process_delete(&mut self, graph: &mut Graph, deleted: ObjectRef, virtual_event: bool) {
        let uid = deleted.uid.clone();
        let Some((existing_identity, existing_virtual)) =
            graph.get(&uid).map(|n| (n.identity.clone(), n.virtual_))
        else {
            return;
        };
        let mut remove = true;
        if virtual_event {
            let deps = graph.dependents(&uid);
            if existing_virtual {
                // not sure of the node's coordinates: dependents may disagree
                let (matching, nonmatching) = partition_dependents(&deps, &deleted);
                if !nonmatching.is_empty() {
                    remove = false;
                    if !matching.is_empty() {
                        self.absent_add(deleted.clone());
                        for dep in &matching {
                            self.attempt_to_delete.add(dep.identity.clone());
                        }
                    }
                    if *existing_identity == deleted {
                        if let Some(replacement) = alternate_owner_identity(&nonmatching, &deleted)
                        {
                            let replacement = Arc::new(replacement);
                            if let Some(n) = graph.get_mut(&uid) {
                                n.identity = replacement.clone();
                            }
                            self.attempt_to_delete.add_rate_limited(replacement);
                        }
                    }
                }
            } else if *existing_identity != deleted {
                // an observed node is not removed on the word of a virtual event
                remove = false;
                let (matching, _) = partition_dependents(&deps, &deleted);
                if !matching.is_empty() {
                    self.absent_add(deleted.clone());
                    for dep in &matching {
                        self.attempt_to_delete.add(dep.identity.clone());
                    }
                }
            }
        }
        if !remove {
            return;
        }
        let Some(node) = graph.remove(&uid) else {
            return;
        };
        remove_dependent_from_owners(graph, &uid, &node.owners);
        if !node.dependents.is_empty() {
            self.absent_add(deleted);
        }
        for d in &node.dependents {
            self.enqueue_delete(graph, d);
        }
        for owner in &node.owners {
            if graph.get(&owner.uid).is_some_and(|o| o.deleting_dependents) {
                // it may now have no dependents left and be deletable
                self.enqueue_delete(graph, &owner.uid);
            }
        }
    }
}

/// Upstream `removeDependentFromOwners`.
fn remove_dependent_from_owners(graph: &mut Graph, dependent: &Uid, owners: &[OwnerRef]) {
    for owner in owners {
        if let Some(o) = graph.get_mut(&owner.uid) {
            o.dependents.remove(dependent);
        }
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
