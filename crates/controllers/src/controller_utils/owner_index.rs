//! Finding a controller's children through cache indexes instead of scanning the
//! namespace, with the same answer as the scan.
//!
//! Upstream's ReplicaSet, ReplicationController and Deployment syncs list every pod
//! (or ReplicaSet) of the namespace and hand the list to the `ControllerRefManager`
//! (`pkg/controller/controller_ref_manager.go`), which keeps or releases the children
//! whose controller reference names the controller's UID, adopts matching orphans and
//! ignores the rest: children controlled by anyone else (another UID, even a deleted
//! namesake's) are never touched. So the children a claim can act on are the ones
//! controlled by the controller's UID and the orphans of its namespace: two lookups in
//! one index ([`CONTROLLER_UID_INDEX`]), whose values are the controller owner's UID,
//! or `orphan/<namespace>` for an object without controller (the Job controller's
//! `PodControllerUIDIndex` upstream).
//!
//! A second index, [`POD_TEMPLATE_HASH_INDEX`], finds the pods of a namespace carrying
//! a given `pod-template-hash` label: every selector of a Deployment's ReplicaSet pins
//! that label, so the pods such a selector matches are among them.
//!
//! Every lookup returns objects in the order of a namespace scan (by name), and falls
//! back to the scan when its index is not registered on the store (a cache made
//! without the controllers' constructors), so the callers behave the same either way.
//! [`claimable_by_scan`] and friends are the scans the lookups replace; the tests
//! compare both after every change of a random history.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::{Cache, CachedKind, Store};
use coxswain_runtime::controllerutil::get_controller_of;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;

/// The index of objects by controller: the UID of the owner reference with
/// `controller: true`, or `orphan/<namespace>` when there is none.
pub const CONTROLLER_UID_INDEX: &str = "controller-uid";

/// The index of pods by `<namespace>/<pod-template-hash label>` (pods without the
/// label are not indexed).
pub const POD_TEMPLATE_HASH_INDEX: &str = "pod-template-hash";

/// The label a Deployment puts on its ReplicaSets, their selectors and their pods
/// (upstream `DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// The [`CONTROLLER_UID_INDEX`] value of the orphans of `namespace`.
pub fn orphan_value(namespace: &str) -> String {
    format!("orphan/{namespace}")
}

/// The [`CONTROLLER_UID_INDEX`] values of `obj`.
pub fn controller_uid_index<K: Resource>(obj: &K) -> Vec<String> {
    let meta = obj.meta();
    match get_controller_of(meta) {
        Some(r) => vec![r.uid.clone()],
        None => vec![orphan_value(meta.namespace.as_deref().unwrap_or(""))],
    }
}

/// The [`POD_TEMPLATE_HASH_INDEX`] values of `pod`.
pub fn pod_template_hash_index(pod: &Pod) -> Vec<String> {
    let hash = pod
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(POD_TEMPLATE_HASH_LABEL));
    match hash {
        Some(h) => vec![hash_value(
            pod.metadata.namespace.as_deref().unwrap_or(""),
            h,
        )],
        None => Vec::new(),
    }
}

fn hash_value(namespace: &str, hash: &str) -> String {
    format!("{namespace}/{hash}")
}

/// Add [`CONTROLLER_UID_INDEX`] to the cache's store of `K` unless it is there (so
/// controllers sharing a cache share one index).
pub fn register_controller_uid_index<K: CachedKind>(cache: &Cache) {
    let informer = cache.informer::<K>();
    if !informer.store().has_index(CONTROLLER_UID_INDEX) {
        cache.index_field::<K>(CONTROLLER_UID_INDEX, controller_uid_index::<K>);
    }
}

/// Add [`POD_TEMPLATE_HASH_INDEX`] to the cache's pod store unless it is there.
pub fn register_pod_template_hash_index(cache: &Cache) {
    let informer = cache.informer::<Pod>();
    if !informer.store().has_index(POD_TEMPLATE_HASH_INDEX) {
        cache.index_field::<Pod>(POD_TEMPLATE_HASH_INDEX, pod_template_hash_index);
    }
}

/// The cache's store of `K` once it has loaded (what [`Cache::list`] reads).
pub async fn synced_store<K: CachedKind>(cache: &Cache) -> Arc<Store<K>> {
    let informer = cache.informer::<K>();
    informer.wait_for_sync().await;
    informer.store().clone()
}

fn in_namespace<K: Resource>(obj: &K, namespace: &str) -> bool {
    obj.meta().namespace.as_deref().unwrap_or("") == namespace
}

fn controlled_by_uid<K: Resource>(obj: &K, uid: &str) -> bool {
    get_controller_of(obj.meta()).is_some_and(|r| r.uid == uid)
}

fn is_orphan<K: Resource>(obj: &K) -> bool {
    get_controller_of(obj.meta()).is_none()
}

fn name_of<K: Resource>(obj: &K) -> &str {
    obj.meta().name.as_deref().unwrap_or("")
}

/// Two lists ordered by name, merged in name order (what a namespace scan gives).
fn merge_by_name<K: Resource>(a: Vec<Arc<K>>, b: Vec<Arc<K>>) -> Vec<Arc<K>> {
    if a.is_empty() {
        return b;
    }
    if b.is_empty() {
        return a;
    }
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => name_of(x.as_ref()) <= name_of(y.as_ref()),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.extend(if take_a { a.next() } else { b.next() });
    }
}

/// The objects of `namespace` controlled by `uid`, ordered by name.
pub fn controlled_by<K: CachedKind>(store: &Store<K>, namespace: &str, uid: &str) -> Vec<Arc<K>> {
    match store.by_index(CONTROLLER_UID_INDEX, uid) {
        Some(found) => found
            .into_iter()
            .filter(|o| in_namespace(o.as_ref(), namespace) && controlled_by_uid(o.as_ref(), uid))
            .collect(),
        None => controlled_by_scan(store, namespace, uid),
    }
}

/// [`controlled_by`] by scanning the namespace.
pub fn controlled_by_scan<K: CachedKind>(
    store: &Store<K>,
    namespace: &str,
    uid: &str,
) -> Vec<Arc<K>> {
    store
        .list_namespace(namespace)
        .into_iter()
        .filter(|o| controlled_by_uid(o.as_ref(), uid))
        .collect()
}

/// The objects of `namespace` without controller, ordered by name.
pub fn orphans<K: CachedKind>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>> {
    match store.by_index(CONTROLLER_UID_INDEX, &orphan_value(namespace)) {
        Some(found) => found
            .into_iter()
            .filter(|o| in_namespace(o.as_ref(), namespace) && is_orphan(o.as_ref()))
            .collect(),
        None => store
            .list_namespace(namespace)
            .into_iter()
            .filter(|o| is_orphan(o.as_ref()))
            .collect(),
    }
}

/// What a claim by the controller with UID `uid` in `namespace` can act on: the objects
/// it controls and the orphans of the namespace, ordered by name. Claiming these gives
/// the same result, with the same writes in the same order, as claiming every object of
/// the namespace: the others are controlled by someone else and claiming ignores them.
pub fn claimable<K: CachedKind>(store: &Store<K>, namespace: &str, uid: &str) -> Vec<Arc<K>> {
    merge_by_name(
        controlled_by(store, namespace, uid),
        orphans(store, namespace),
    )
}

/// [`claimable`] by scanning the namespace.
pub fn claimable_by_scan<K: CachedKind>(
    store: &Store<K>,
    namespace: &str,
    uid: &str,
) -> Vec<Arc<K>> {
    store
        .list_namespace(namespace)
        .into_iter()
        .filter(|o| is_orphan(o.as_ref()) || controlled_by_uid(o.as_ref(), uid))
        .collect()
}

/// [`claimable`] for pods, the orphans narrowed to those `selector` may match: when
/// the selector pins `pod-template-hash` (a Deployment's ReplicaSet) only the orphans
/// with that label value are looked at. Claiming ignores orphans the selector does
/// not match, so the claim is the same.
pub fn claimable_pods(
    store: &Store<Pod>,
    namespace: &str,
    uid: &str,
    selector: Option<&LabelSelector>,
) -> Vec<Arc<Pod>> {
    let pinned = selector.and_then(|s| s.requires_exact_match(POD_TEMPLATE_HASH_LABEL));
    let orphans = match pinned
        .and_then(|h| store.by_index(POD_TEMPLATE_HASH_INDEX, &hash_value(namespace, h)))
    {
        Some(found) => found
            .into_iter()
            .filter(|p| in_namespace(p.as_ref(), namespace) && is_orphan(p.as_ref()))
            .collect(),
        None => orphans(store, namespace),
    };
    merge_by_name(controlled_by(store, namespace, uid), orphans)
}

/// The pods of `namespace` whose labels `selector` matches, ordered by name (what a
/// pod lister's `List(selector)` gives); through [`POD_TEMPLATE_HASH_INDEX`] when the
/// selector pins `pod-template-hash`.
pub fn pods_selected(
    store: &Store<Pod>,
    namespace: &str,
    selector: &LabelSelector,
) -> Vec<Arc<Pod>> {
    let candidates = selector
        .requires_exact_match(POD_TEMPLATE_HASH_LABEL)
        .and_then(|h| store.by_index(POD_TEMPLATE_HASH_INDEX, &hash_value(namespace, h)))
        .map(|found| {
            found
                .into_iter()
                .filter(|p| in_namespace(p.as_ref(), namespace))
                .collect()
        });
    match candidates {
        Some(c) => select(c, selector),
        None => pods_selected_by_scan(store, namespace, selector),
    }
}

/// [`pods_selected`] by scanning the namespace.
pub fn pods_selected_by_scan(
    store: &Store<Pod>,
    namespace: &str,
    selector: &LabelSelector,
) -> Vec<Arc<Pod>> {
    select(store.list_namespace(namespace), selector)
}

/// The pods of `namespace` that `selector` matches, grouped by the controller UIDs
/// among `uids` (upstream `getPodMapForDeployment`: each of a Deployment's
/// ReplicaSets, by UID, with its pods; a UID without pods maps to an empty list).
pub fn pods_by_controller<'a>(
    store: &Store<Pod>,
    namespace: &str,
    uids: impl IntoIterator<Item = &'a str>,
    selector: &LabelSelector,
) -> HashMap<String, Vec<Arc<Pod>>> {
    uids.into_iter()
        .map(|uid| {
            let pods = select(controlled_by(store, namespace, uid), selector);
            (uid.to_string(), pods)
        })
        .collect()
}

/// [`pods_by_controller`] by scanning the namespace.
pub fn pods_by_controller_scan<'a>(
    store: &Store<Pod>,
    namespace: &str,
    uids: impl IntoIterator<Item = &'a str>,
    selector: &LabelSelector,
) -> HashMap<String, Vec<Arc<Pod>>> {
    let mut map: HashMap<String, Vec<Arc<Pod>>> = uids
        .into_iter()
        .map(|uid| (uid.to_string(), Vec::new()))
        .collect();
    for pod in pods_selected_by_scan(store, namespace, selector) {
        if let Some(list) = get_controller_of(&pod.metadata).and_then(|r| map.get_mut(&r.uid)) {
            list.push(pod);
        }
    }
    map
}

fn select(pods: Vec<Arc<Pod>>, selector: &LabelSelector) -> Vec<Arc<Pod>> {
    let empty = Default::default();
    pods.into_iter()
        .filter(|p| selector.matches_labels(p.metadata.labels.as_ref().unwrap_or(&empty)))
        .collect()
}

#[cfg(test)]
#[path = "owner_index_tests.rs"]
mod tests;
