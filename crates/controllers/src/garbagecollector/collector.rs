//! The collector's workers: decide, for one object, whether it is garbage, and act.
//!
//! Upstream `pkg/controller/garbagecollector/garbagecollector.go`
//! (`attemptToDeleteItem`, `classifyReferences`, `isDangling`,
//! `processDeletingDependentsItem`, `attemptToOrphanWorker`). Every decision is checked
//! against the server, never against the cache alone: the object itself is read live
//! (gone or recreated with another UID: a virtual delete event tells the graph), and an
//! owner counts as absent only when a live GET answers 404 or an object with another UID
//! (remembered in the absent-owner cache so that its other dependents need no lookup).

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use coxswain_runtime::controller::{Action, ReconcileError, ReconcileResult};
use coxswain_runtime::events::EventType;

use super::builder::{
    object_reference, GraphEvent, Item, Meta, FINALIZER_DELETE_DEPENDENTS,
    FINALIZER_ORPHAN_DEPENDENTS,
};
use super::graph::{Graph, NodeView, ObjectRef, OwnerRef, Uid};
use super::operations::{GcError, Operations, Propagation};
use super::Shared;

/// Whether `from`, deleting its dependents, waits for `target` through blocking
/// dependents that are all deleting their dependents too (or is `target`).
fn waits_for(graph: &Graph, from: &Uid, target: &Uid) -> bool {
    let mut seen: HashSet<Uid> = HashSet::new();
    let mut stack = vec![from.clone()];
    while let Some(uid) = stack.pop() {
        if uid == *target {
            return true;
        }
        if !seen.insert(uid.clone()) {
            continue;
        }
        for dep in graph.blocking_dependents(&uid) {
            if dep.deleting_dependents {
                stack.push(dep.identity.uid.clone());
            }
        }
    }
    false
}

fn has_finalizer(m: &Meta, f: &str) -> bool {
    m.metadata
        .finalizers
        .as_ref()
        .is_some_and(|v| v.iter().any(|x| x == f))
}

fn refs_of(m: &Meta) -> Vec<OwnerRef> {
    m.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| OwnerRef {
            api_version: Arc::from(r.api_version.as_str()),
            kind: Arc::from(r.kind.as_str()),
            name: Arc::from(r.name.as_str()),
            uid: Uid::parse(&r.uid),
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        })
        .collect()
}

/// The owner references of an object, sorted by what they say of their owners.
#[derive(Default, Debug)]
struct Classified {
    /// The owner exists and does not wait for its dependents.
    solid: Vec<OwnerRef>,
    /// The owner does not exist.
    dangling: Vec<OwnerRef>,
    /// The owner is being deleted in the foreground.
    waiting: Vec<OwnerRef>,
}

impl Shared {
    fn mapper(&self) -> Arc<coxswain_runtime::discovery::Discovery> {
        self.mapper
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn view(&self, uid: &Uid) -> Option<NodeView> {
        self.graph
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .view(uid)
    }

    fn enqueue_virtual_delete(&self, item: &Arc<ObjectRef>) {
        self.changes.send(GraphEvent::VirtualDelete(item.clone()));
    }

    /// One item of `attemptToDelete` (upstream `attemptToDeleteWorker`): done, polled
    /// again (rate limited), or failed (retried with backoff).
    pub(super) async fn attempt_to_delete_worker(&self, item: &Item) -> ReconcileResult {
        // the graph's current view of the object (the queued identity may be stale)
        let Some(node) = self.view(&item.uid) else {
            tracing::trace!(item = %item, "item no longer in the graph, skipping attemptToDeleteItem");
            return Ok(Action::Done);
        };
        match self.attempt_to_delete_item(&node).await {
            Err(GcError::VirtualDeleteEnqueued) => Ok(Action::Done),
            Err(GcError::NamespacedOwnerOfClusterScopedObject) => Ok(Action::Done),
            // a kind discovery does not (or no longer) serve: a custom resource not yet
            // recognised, or whose definition went away; as upstream, retried with the
            // rate limiter and logged only at debug level (not a failure to report)
            Err(e @ GcError::RestMapping { .. }) => {
                tracing::debug!(item = %node.identity, error = %e, "error syncing item");
                Ok(Action::Requeue)
            }
            Err(e) => Err(ReconcileError::msg(format!(
                "error syncing item {}: {e}",
                node.identity
            ))),
            // not observed through an informer yet: poll until it is, so that a virtual
            // node for an object added and removed while a watch was down cannot stay
            Ok(()) if self.view(&item.uid).is_some_and(|n| n.virtual_) => Ok(Action::Requeue),
            Ok(()) => Ok(Action::Done),
        }
    }

    /// Upstream `attemptToDeleteItem`: delete `item` if all its owners are absent,
    /// foreground-delete it if an owner waits for it and it has dependents of its own,
    /// otherwise drop references to absent or waiting owners.
    async fn attempt_to_delete_item(&self, item: &NodeView) -> Result<(), GcError> {
        tracing::debug!(item = %item.identity, virtual_ = item.virtual_, "processing item");
        if item.being_deleted && !item.deleting_dependents {
            // on its way out: its dependents are handled once it is gone
            return Ok(());
        }
        let mapper = self.mapper();
        let latest = match self.ops.get_object(&mapper, &item.identity).await {
            Err(e) if e.is_not_found() => {
                tracing::debug!(item = %item.identity, "item not found, generating a virtual delete event");
                self.enqueue_virtual_delete(&item.identity);
                return Err(GcError::VirtualDeleteEnqueued);
            }
            other => other?,
        };
        if latest.metadata.uid.as_deref() != Some(item.identity.uid.to_string().as_str()) {
            tracing::debug!(item = %item.identity, "UID doesn't match, item not found, generating a virtual delete event");
            self.enqueue_virtual_delete(&item.identity);
            return Err(GcError::VirtualDeleteEnqueued);
        }
        if item.deleting_dependents {
            return self.process_deleting_dependents_item(item).await;
        }
        let refs = refs_of(&latest);
        if refs.is_empty() {
            tracing::debug!(item = %item.identity, "item doesn't have an owner, continue on next item");
            return Ok(());
        }
        let c = self.classify_references(item, &refs).await?;
        tracing::debug!(item = %item.identity, solid = c.solid.len(), dangling = c.dangling.len(), waiting = c.waiting.len(), "classified item's references");
        let rv = latest.metadata.resource_version.as_deref();
        let api_refs: &[OwnerReference] = latest
            .metadata
            .owner_references
            .as_deref()
            .unwrap_or_default();
        if !c.solid.is_empty() {
            if c.dangling.is_empty() && c.waiting.is_empty() {
                return Ok(());
            }
            // references to waiting owners go too, or those owners would wait forever
            let uids: Vec<Uid> = c
                .dangling
                .iter()
                .chain(&c.waiting)
                .map(|r| r.uid.clone())
                .collect();
            tracing::debug!(item = %item.identity, "remove dangling references and waiting references for item");
            return self
                .ops
                .delete_owner_refs(&mapper, &item.identity, &uids)
                .await;
        }
        let dependents = self.view(&item.identity.uid).map_or(0, |n| n.dependents);
        let policy = if !c.waiting.is_empty() && dependents != 0 {
            let deps = self
                .graph
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .dependents(&item.identity.uid);
            if let Some(dep) = deps.iter().find(|d| d.deleting_dependents) {
                // an owner and a dependent both wait for their dependents: a possible
                // cycle; stop blocking the owners, then delete in the foreground
                tracing::debug!(item = %item.identity, dependent = %dep.identity, "processing item, some of its owners and its dependent have FinalizerDeletingDependents, to prevent potential cycle, its ownerReferences are going to be modified to be non-blocking, then the item is going to be deleted with Foreground");
                let owners = self
                    .view(&item.identity.uid)
                    .map(|n| n.owners)
                    .unwrap_or_default();
                self.ops
                    .unblock_owner_refs(&mapper, &item.identity, &owners)
                    .await?;
            }
            tracing::debug!(item = %item.identity, "at least one owner of item has FinalizerDeletingDependents, and the item itself has dependents, so it is going to be deleted in Foreground");
            Propagation::Foreground
        } else if has_finalizer(&latest, FINALIZER_ORPHAN_DEPENDENTS) {
            Propagation::Orphan
        } else if has_finalizer(&latest, FINALIZER_DELETE_DEPENDENTS) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        tracing::debug!(item = %item.identity, ?policy, "deleting item");
        match self
            .ops
            .delete_object(&mapper, &item.identity, rv, api_refs, policy)
            .await
        {
            Err(e) if e.is_not_found() => {
                self.enqueue_virtual_delete(&item.identity);
                Err(GcError::VirtualDeleteEnqueued)
            }
            other => other,
        }
    }

    /// Upstream `processDeletingDependentsItem`: the item waits for its blocking
    /// dependents; none left, its `foregroundDeletion` finalizer goes.
    ///
    /// Beyond upstream, which leaves such objects waiting forever: a blocking dependent
    /// that is itself deleting its dependents and waits, through a chain of such objects,
    /// for this item (an object owning itself, two objects owning each other, both
    /// deleted in the foreground) has its owner references made non-blocking, which
    /// breaks the cycle of waits.
    async fn process_deleting_dependents_item(&self, item: &NodeView) -> Result<(), GcError> {
        let (blocking, cyclic) = {
            let graph = self.graph.read().unwrap_or_else(|e| e.into_inner());
            let blocking = graph.blocking_dependents(&item.identity.uid);
            let cyclic: Vec<NodeView> = blocking
                .iter()
                .filter(|d| {
                    d.deleting_dependents && waits_for(&graph, &d.identity.uid, &item.identity.uid)
                })
                .cloned()
                .collect();
            (blocking, cyclic)
        };
        if blocking.is_empty() {
            tracing::debug!(item = %item.identity, "remove DeleteDependents finalizer for item");
            let mapper = self.mapper();
            return self
                .ops
                .remove_finalizer(&mapper, &item.identity, FINALIZER_DELETE_DEPENDENTS)
                .await;
        }
        for dep in blocking.iter().filter(|d| !d.deleting_dependents) {
            tracing::debug!(item = %item.identity, dependent = %dep.identity, "adding dependent to attemptToDelete, because its owner is deletingDependents");
            self.attempt_to_delete.add(dep.identity.clone());
        }
        if !cyclic.is_empty() {
            let mapper = self.mapper();
            for dep in cyclic {
                tracing::debug!(item = %item.identity, dependent = %dep.identity, "foreground deletions wait for each other; making the dependent's owner references non-blocking");
                self.ops
                    .unblock_owner_refs(&mapper, &dep.identity, &dep.owners)
                    .await?;
            }
        }
        Ok(())
    }

    /// Upstream `classifyReferences`.
    async fn classify_references(
        &self,
        item: &NodeView,
        refs: &[OwnerRef],
    ) -> Result<Classified, GcError> {
        let mut c = Classified::default();
        for r in refs {
            match self.is_dangling(r, item).await? {
                None => c.dangling.push(r.clone()),
                Some(owner)
                    if owner.metadata.deletion_timestamp.is_some()
                        && has_finalizer(&owner, FINALIZER_DELETE_DEPENDENTS) =>
                {
                    c.waiting.push(r.clone())
                }
                Some(_) => c.solid.push(r.clone()),
            }
        }
        Ok(c)
    }

    /// Upstream `isDangling`: `None` when the owner `r` of `item` does not exist (by the
    /// absent-owner cache, a live 404, or another UID under that name), else its live
    /// metadata.
    async fn is_dangling(&self, r: &OwnerRef, item: &NodeView) -> Result<Option<Meta>, GcError> {
        let mut key = r.identity(None);
        let absent = |k: &ObjectRef| self.absent.lock().unwrap_or_else(|e| e.into_inner()).has(k);
        if absent(&key) {
            tracing::trace!(item = %item.identity, owner = %key, "according to the absentOwnerCache, item's owner does not exist");
            return Ok(None);
        }
        key.namespace = item.identity.namespace.clone();
        if absent(&key) {
            tracing::trace!(item = %item.identity, owner = %key, "according to the absentOwnerCache, item's owner does not exist in namespace");
            return Ok(None);
        }
        let mapper = self.mapper();
        let info = Operations::resource(&mapper, &r.api_version, &r.kind)?.clone();
        if !info.namespaced {
            key.namespace = None;
        }
        if item.identity.namespace.is_none() && info.namespaced {
            tracing::debug!(item = %item.identity, owner = %key, "item is cluster-scoped, but refers to a namespaced owner");
            if let Some(recorder) = &self.recorder {
                recorder.event(
                    &object_reference(&item.identity),
                    None,
                    EventType::Warning,
                    "OwnerRefInvalidNamespace",
                    "GarbageCollect",
                    &format!(
                        "cluster-scoped objects cannot refer to namespaced owners: ownerRef {} is namespaced",
                        r.identity(None)
                    ),
                );
            }
            return Err(GcError::NamespacedOwnerOfClusterScopedObject);
        }
        let ns = if info.namespaced {
            item.identity.namespace.as_deref()
        } else {
            None
        };
        match self.ops.get(&info, ns, &r.name).await {
            Err(e) if e.is_not_found() => {
                tracing::debug!(item = %item.identity, owner = %key, "item's owner is not found");
                self.absent
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(key);
                Ok(None)
            }
            Err(e) => Err(e),
            Ok(owner) if owner.metadata.uid.as_deref() != Some(r.uid.to_string().as_str()) => {
                tracing::debug!(item = %item.identity, owner = %key, "item's owner is not found, UID mismatch");
                self.absent
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(key);
                Ok(None)
            }
            Ok(owner) => Ok(Some(owner)),
        }
    }

    /// One item of `attemptToOrphan` (upstream `attemptToOrphanWorker`): remove the
    /// owner's references from all its dependents, then its `orphan` finalizer.
    pub(super) async fn attempt_to_orphan_worker(&self, owner: &Item) -> ReconcileResult {
        let (identity, dependents) = {
            let graph = self.graph.read().unwrap_or_else(|e| e.into_inner());
            let identity = graph
                .get(&owner.uid)
                .map_or_else(|| owner.clone(), |n| n.identity.clone());
            (identity, graph.dependents(&owner.uid))
        };
        if let Err(e) = self.orphan_dependents(&identity, &dependents).await {
            return Err(ReconcileError::msg(format!(
                "orphanDependents for {identity} failed: {e}"
            )));
        }
        let mapper = self.mapper();
        if let Err(e) = self
            .ops
            .remove_finalizer(&mapper, &identity, FINALIZER_ORPHAN_DEPENDENTS)
            .await
        {
            return Err(ReconcileError::msg(format!(
                "removeOrphanFinalizer for {identity} failed: {e}"
            )));
        }
        Ok(Action::Done)
    }

    /// Upstream `orphanDependents`: the dependents are patched concurrently.
    async fn orphan_dependents(
        &self,
        owner: &ObjectRef,
        dependents: &[NodeView],
    ) -> Result<(), GcError> {
        let mapper = self.mapper();
        let owner_uid = vec![owner.uid.clone()];
        let errors: Vec<String> = futures::stream::iter(dependents.to_vec())
            .map(move |dep: NodeView| {
                let (ops, mapper, owner_uid) =
                    (self.ops.clone(), mapper.clone(), owner_uid.clone());
                async move {
                    match ops
                        .delete_owner_refs(&mapper, &dep.identity, &owner_uid)
                        .await
                    {
                        Err(e) if !e.is_not_found() => {
                            Some(format!("orphaning {} failed, {e}", dep.identity))
                        }
                        _ => None,
                    }
                }
            })
            .buffer_unordered(32)
            .filter_map(|e| async move { e })
            .collect()
            .await;
        if errors.is_empty() {
            tracing::debug!(owner = %owner, "successfully updated all dependents");
            return Ok(());
        }
        Err(GcError::Other(format!(
            "failed to orphan dependents of owner {owner}, got errors: [{}]",
            errors.join(", ")
        )))
    }
}
