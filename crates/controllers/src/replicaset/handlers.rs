//! Which ReplicaSets a pod change wakes, and what it tells the expectations, after
//! upstream's `addPod`, `updatePod`, `deletePod` and `deleteRS`
//! (`pkg/controller/replicaset/replica_set.go`).
//!
//! - A new pod with a controller reference to one of our ReplicaSets is an observed
//!   creation of that ReplicaSet; a new orphan wakes every ReplicaSet whose selector
//!   matches it (one of them may adopt it). A new pod that is already being deleted
//!   counts as a deletion.
//! - An update wakes the pod's controller (and its former controller when the
//!   reference changed); an orphan whose labels or reference changed wakes the
//!   matching ReplicaSets. A pod that got a deletion timestamp counts as deleted at
//!   once, so the ReplicaSet replaces it without waiting for the kubelet.
//! - A deleted pod is an observed deletion of its controller.
//!
//! The handlers run in the informer after the store is updated: when a sync finds its
//! expectations satisfied, the cache holds every pod it was waiting for.

use std::marker::PhantomData;
use std::sync::Arc;

use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::handler::EventHandler;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::kind::ReplicaSetKind;
use crate::controller_utils::{pod_key, ControllerExpectations};
use coxswain_runtime::controllerutil::get_controller_of;

/// Where the handlers look ReplicaSets up: the informer's store (a map in tests).
pub(crate) trait Owners<K>: Send + Sync {
    /// The UID of the object at `key` (without decoding it, where the store can).
    fn uid(&self, key: &ObjectKey) -> Option<String>;
    /// The objects of `namespace`.
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>>;
}

impl<K: ReplicaSetKind> Owners<K> for Store<K> {
    fn uid(&self, key: &ObjectKey) -> Option<String> {
        Store::uid(self, key)
    }

    fn in_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.list_namespace(namespace)
    }
}

/// Pod changes → ReplicaSet keys, observing expectations on the way.
pub(crate) struct PodHandler<K> {
    expectations: Arc<ControllerExpectations>,
    owners: Arc<dyn Owners<K>>,
}

impl<K: ReplicaSetKind> PodHandler<K> {
    pub(crate) fn new(
        expectations: Arc<ControllerExpectations>,
        owners: Arc<dyn Owners<K>>,
    ) -> Self {
        PodHandler {
            expectations,
            owners,
        }
    }

    /// The key of the ReplicaSet a controller reference points to, if it is one of ours
    /// and still the same object (same UID).
    fn resolve(&self, namespace: Option<&str>, r: &OwnerReference) -> Option<ObjectKey> {
        if r.kind != K::kind(&()) {
            return None;
        }
        let key = ObjectKey::from_parts(namespace, &r.name);
        (self.owners.uid(&key)?.as_str() == r.uid.as_str()).then_some(key)
    }

    /// The ReplicaSets whose selector matches an orphan `pod` (upstream
    /// `GetPodReplicaSets`: a pod without labels, or a ReplicaSet with an empty or
    /// invalid selector, matches nothing).
    fn matching_owners(&self, pod: &Pod) -> Vec<ObjectKey> {
        let Some(labels) = pod.metadata.labels.as_ref().filter(|l| !l.is_empty()) else {
            return Vec::new();
        };
        let Some(namespace) = pod.metadata.namespace.as_deref() else {
            return Vec::new();
        };
        let keys: Vec<ObjectKey> = self
            .owners
            .in_namespace(namespace)
            .into_iter()
            .filter(|rs| {
                rs.spec_view().is_ok_and(|s| {
                    s.selector
                        .as_ref()
                        .is_some_and(|sel| !sel.is_empty() && sel.matches_labels(labels))
                })
            })
            .map(|rs| ObjectKey::of(rs.as_ref()))
            .collect();
        if keys.len() > 1 {
            tracing::warn!(
                pod = %pod_key(pod),
                kind = %K::kind(&()),
                "user error: more than one {} selects the labels of this pod",
                K::kind(&())
            );
        }
        keys
    }

    fn added(&self, pod: &Pod) -> Vec<ObjectKey> {
        if pod.metadata.deletion_timestamp.is_some() {
            // a restarted manager may first see a pod that is being deleted: not a creation
            return self.deleted(pod);
        }
        if let Some(r) = get_controller_of(&pod.metadata) {
            return match self.resolve(pod.metadata.namespace.as_deref(), r) {
                Some(key) => {
                    self.expectations.creation_observed(&key);
                    vec![key]
                }
                None => Vec::new(),
            };
        }
        // an orphan: wake the matching ReplicaSets, observe nothing
        self.matching_owners(pod)
    }

    fn updated(&self, old: &Pod, new: &Pod) -> Vec<ObjectKey> {
        if old.metadata.resource_version == new.metadata.resource_version {
            // a resync: nothing changed
            return Vec::new();
        }
        let labels_changed = old.metadata.labels != new.metadata.labels;
        if new.metadata.deletion_timestamp.is_some() {
            let mut keys = self.deleted(new);
            if labels_changed {
                for k in self.deleted(old) {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                }
            }
            return keys;
        }
        let (old_ref, new_ref) = (
            get_controller_of(&old.metadata),
            get_controller_of(&new.metadata),
        );
        let ref_changed = old_ref != new_ref;
        let mut keys = Vec::new();
        if ref_changed {
            if let Some(key) =
                old_ref.and_then(|r| self.resolve(old.metadata.namespace.as_deref(), r))
            {
                keys.push(key);
            }
        }
        if let Some(r) = new_ref {
            if let Some(key) = self.resolve(new.metadata.namespace.as_deref(), r) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            return keys;
        }
        if labels_changed || ref_changed {
            for key in self.matching_owners(new) {
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
        }
        keys
    }

    fn deleted(&self, pod: &Pod) -> Vec<ObjectKey> {
        let Some(r) = get_controller_of(&pod.metadata) else {
            return Vec::new();
        };
        match self.resolve(pod.metadata.namespace.as_deref(), r) {
            Some(key) => {
                self.expectations.deletion_observed(&key, &pod_key(pod));
                vec![key]
            }
            None => Vec::new(),
        }
    }
}

impl<K: ReplicaSetKind> EventHandler<Pod> for PodHandler<K> {
    fn keys(&self, change: &Change<Pod>) -> Vec<ObjectKey> {
        match change {
            Change::Added(p) => self.added(p),
            Change::Updated { old, new } => self.updated(old, new),
            Change::Deleted(p) => self.deleted(p),
        }
    }
}

/// Forgets the expectations of a deleted (or re-created) ReplicaSet, so a new one of
/// the same name starts clean. Enqueues nothing: the reconciled kind's own handler
/// does.
pub(crate) struct OwnerHandler<K> {
    expectations: Arc<ControllerExpectations>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> OwnerHandler<K> {
    pub(crate) fn new(expectations: Arc<ControllerExpectations>) -> Self {
        OwnerHandler {
            expectations,
            _kind: PhantomData,
        }
    }
}

impl<K: ReplicaSetKind> EventHandler<K> for OwnerHandler<K> {
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        match change {
            Change::Deleted(o) => self
                .expectations
                .delete_expectations(&ObjectKey::of(o.as_ref())),
            Change::Updated { old, new } if old.meta().uid != new.meta().uid => self
                .expectations
                .delete_expectations(&ObjectKey::of(old.as_ref())),
            _ => {}
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
    use k8s_openapi::jiff::Timestamp;
    use std::collections::{BTreeMap, HashMap};

    #[derive(Default)]
    struct Map(HashMap<ObjectKey, Arc<ReplicaSet>>);

    impl Owners<ReplicaSet> for Map {
        fn uid(&self, key: &ObjectKey) -> Option<String> {
            self.0.get(key).and_then(|r| r.metadata.uid.clone())
        }
        fn in_namespace(&self, namespace: &str) -> Vec<Arc<ReplicaSet>> {
            let mut v: Vec<_> = self
                .0
                .values()
                .filter(|r| r.metadata.namespace.as_deref() == Some(namespace))
                .cloned()
                .collect();
            v.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            v
        }
    }

    fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn rs(name: &str, ns: &str, selector: &[(&str, &str)]) -> Arc<ReplicaSet> {
        let mut r = ReplicaSet::default();
        r.metadata.name = Some(name.into());
        r.metadata.namespace = Some(ns.into());
        r.metadata.uid = Some(format!("uid-{ns}-{name}"));
        r.spec = ReplicaSetSpec {
            selector: LabelSelector {
                match_labels: Some(labels(selector)),
                match_expressions: None,
            },
            ..Default::default()
        };
        Arc::new(r)
    }

    fn pod(
        name: &str,
        ns: &str,
        l: &[(&str, &str)],
        owner: Option<&ReplicaSet>,
        rv: &str,
    ) -> Arc<Pod> {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some(ns.into());
        p.metadata.resource_version = Some(rv.into());
        p.metadata.labels = Some(labels(l));
        p.metadata.owner_references =
            owner.map(|o| vec![coxswain_runtime::controllerutil::new_controller_ref(o)]);
        Arc::new(p)
    }

    fn handler(sets: &[Arc<ReplicaSet>]) -> (PodHandler<ReplicaSet>, Arc<ControllerExpectations>) {
        let map = Map(sets
            .iter()
            .map(|r| (ObjectKey::of(r.as_ref()), r.clone()))
            .collect());
        let exp = Arc::new(ControllerExpectations::new());
        (PodHandler::new(exp.clone(), Arc::new(map)), exp)
    }

    // After upstream TestPodControllerLookup (replica_set_test.go): an orphan wakes the
    // ReplicaSets of its namespace whose selector matches; a pod without labels,
    // another namespace or an empty selector wakes nothing.
    #[test]
    fn orphans_wake_matching_replica_sets() {
        let sets = [
            rs("basic", "ns", &[("foo", "bar")]),
            rs("other-ns", "ns2", &[("foo", "bar")]),
            rs("empty", "ns", &[]),
        ];
        let (h, _) = handler(&sets);
        let key = |n: &str| ObjectKey::namespaced("ns", n);
        assert_eq!(
            h.keys(&Change::Added(pod("p", "ns", &[("foo", "bar")], None, "1"))),
            vec![key("basic")]
        );
        assert!(h
            .keys(&Change::Added(pod("p", "ns", &[], None, "1")))
            .is_empty());
        assert!(h
            .keys(&Change::Added(pod(
                "p",
                "ns3",
                &[("foo", "bar")],
                None,
                "1"
            )))
            .is_empty());
        assert!(h
            .keys(&Change::Added(pod("p", "ns", &[("foo", "baz")], None, "1")))
            .is_empty());
    }

    #[test]
    fn owned_pods_observe_creations_and_deletions_once() {
        let owner = rs("web", "ns", &[("app", "web")]);
        let (h, exp) = handler(std::slice::from_ref(&owner));
        let key = ObjectKey::of(owner.as_ref());
        exp.expect_creations(&key, 2);
        let p = pod("web-1", "ns", &[("app", "web")], Some(&owner), "1");
        assert_eq!(h.keys(&Change::Added(p.clone())), vec![key.clone()]);
        assert_eq!(exp.get(&key), Some((1, 0)));
        // a pod pointing at a ReplicaSet of the same name but another UID is not ours
        let mut stranger = (*p).clone();
        if let Some(r) = stranger
            .metadata
            .owner_references
            .as_mut()
            .and_then(|r| r.first_mut())
        {
            r.uid = "someone-else".into();
        }
        assert!(h.keys(&Change::Added(Arc::new(stranger))).is_empty());
        assert_eq!(exp.get(&key), Some((1, 0)));

        // after upstream TestDeletionTimestamp: a graceful deletion counts once, whether
        // seen as an update setting the timestamp or as the final delete
        exp.expect_deletions(&key, [pod_key(&p)]);
        let mut deleting = (*p).clone();
        deleting.metadata.resource_version = Some("2".into());
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let deleting = Arc::new(deleting);
        assert_eq!(
            h.keys(&Change::Updated {
                old: p.clone(),
                new: deleting.clone()
            }),
            vec![key.clone()]
        );
        assert_eq!(exp.get(&key), Some((0, 0)));
        assert_eq!(h.keys(&Change::Deleted(deleting)), vec![key.clone()]);
        assert_eq!(exp.get(&key), Some((0, 0)));
        assert!(exp.satisfied(&key));
    }

    // After upstream TestUpdatePods (replica_set_test.go).
    #[test]
    fn updates_wake_old_and_new_controllers() {
        let a = rs("a", "ns", &[("app", "a")]);
        let b = rs("b", "ns", &[("app", "b")]);
        let (h, _) = handler(&[a.clone(), b.clone()]);
        let (ka, kb) = (ObjectKey::of(a.as_ref()), ObjectKey::of(b.as_ref()));
        // a resync (same resourceVersion) wakes nobody
        let p = pod("p", "ns", &[("app", "a")], Some(&a), "1");
        assert!(h
            .keys(&Change::Updated {
                old: p.clone(),
                new: p.clone()
            })
            .is_empty());
        // the controller reference moved from a to b: both wake
        let moved = pod("p", "ns", &[("app", "b")], Some(&b), "2");
        assert_eq!(
            h.keys(&Change::Updated {
                old: p.clone(),
                new: moved
            }),
            vec![ka.clone(), kb.clone()]
        );
        // released by a and relabelled: a wakes, and b, which may adopt it
        let released = pod("p", "ns", &[("app", "b")], None, "3");
        assert_eq!(
            h.keys(&Change::Updated {
                old: p.clone(),
                new: released
            }),
            vec![ka.clone(), kb.clone()]
        );
        // an orphan whose labels did not change wakes nobody
        let o1 = pod("o", "ns", &[("app", "b")], None, "1");
        let o2 = pod("o", "ns", &[("app", "b")], None, "2");
        assert!(h.keys(&Change::Updated { old: o1, new: o2 }).is_empty());
    }

    // After upstream TestExpectationsOnRecreate: a ReplicaSet deleted (or replaced by
    // a namesake) loses its expectations.
    #[test]
    fn deleting_a_replica_set_forgets_its_expectations() {
        let exp = Arc::new(ControllerExpectations::new());
        let h = OwnerHandler::<ReplicaSet>::new(exp.clone());
        let old = rs("web", "ns", &[("app", "web")]);
        let key = ObjectKey::of(old.as_ref());
        exp.expect_creations(&key, 3);
        assert!(h
            .keys(&Change::Updated {
                old: old.clone(),
                new: old.clone()
            })
            .is_empty());
        assert_eq!(exp.get(&key), Some((3, 0)));
        let mut recreated = (*old).clone();
        recreated.metadata.uid = Some("new-uid".into());
        h.keys(&Change::Updated {
            old: old.clone(),
            new: Arc::new(recreated),
        });
        assert_eq!(exp.get(&key), None);
        exp.expect_creations(&key, 3);
        h.keys(&Change::Deleted(old));
        assert_eq!(exp.get(&key), None);
    }
}
