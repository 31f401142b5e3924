//! Event handlers: which reconcile requests a change produces.
//!
//! Like controller-runtime's `pkg/handler`: [`EnqueueObject`] asks to reconcile the
//! changed object itself, [`EnqueueOwner`] its owner (from owner references, optionally
//! only the controlling one), and any closure from an object to keys maps freely.

use std::any::TypeId;

use kube::Resource;

use crate::cache::Change;
use crate::object::ObjectKey;

/// Turns a change into reconcile requests.
pub trait EventHandler<K>: Send + Sync {
    /// The keys to enqueue for `change`.
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey>;
}

fn object_of<K>(change: &Change<K>) -> &K {
    match change {
        Change::Added(o) | Change::Deleted(o) => o,
        Change::Updated { new, .. } => new,
    }
}

/// Enqueue the changed object.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueObject;

impl<K: Resource> EventHandler<K> for EnqueueObject {
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        vec![ObjectKey::of(object_of(change))]
    }
}

/// Whether kind `K` is namespaced.
pub fn is_namespaced<K: Resource>() -> bool
where
    K::Scope: 'static,
{
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// Enqueue the owner of kind `group`/`kind` named in the changed object's owner
/// references (for an update: of the old and the new object, so a released child still
/// wakes its former owner).
#[derive(Clone, Debug)]
pub struct EnqueueOwner {
    group: String,
    kind: String,
    owner_namespaced: bool,
    only_controller: bool,
}

impl EnqueueOwner {
    /// Owners of kind `O`; `only_controller` keeps only `controller: true` references.
    pub fn of<O: Resource<DynamicType = ()>>(only_controller: bool) -> Self
    where
        O::Scope: 'static,
    {
        EnqueueOwner {
            group: O::group(&()).to_string(),
            kind: O::kind(&()).to_string(),
            owner_namespaced: is_namespaced::<O>(),
            only_controller,
        }
    }

    fn owners_of<K: Resource>(&self, obj: &K, out: &mut Vec<ObjectKey>) {
        let meta = obj.meta();
        for r in meta.owner_references.iter().flatten() {
            if self.only_controller && r.controller != Some(true) {
                continue;
            }
            let group = r.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            if group != self.group || r.kind != self.kind {
                continue;
            }
            let namespace = if self.owner_namespaced {
                meta.namespace.as_deref()
            } else {
                None
            };
            let key = ObjectKey::from_parts(namespace, &r.name);
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
}

impl<K: Resource> EventHandler<K> for EnqueueOwner {
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        match change {
            Change::Added(o) | Change::Deleted(o) => self.owners_of(o.as_ref(), &mut out),
            Change::Updated { old, new } => {
                self.owners_of(old.as_ref(), &mut out);
                self.owners_of(new.as_ref(), &mut out);
            }
        }
        out
    }
}

/// Enqueue whatever a function maps the changed object to.
pub struct EnqueueMapped<F>(pub F);

impl<K, F> EventHandler<K> for EnqueueMapped<F>
where
    F: Fn(&K) -> Vec<ObjectKey> + Send + Sync,
{
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        (self.0)(object_of(change))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use std::sync::Arc;

    fn rs_owned_by(owner: &str, controller: bool) -> Arc<ReplicaSet> {
        let mut rs = ReplicaSet::default();
        rs.metadata.namespace = Some("ns".into());
        rs.metadata.name = Some("rs".into());
        rs.metadata.owner_references = Some(vec![
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: owner.into(),
                uid: "u".into(),
                controller: Some(controller),
                block_owner_deletion: None,
            },
            OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: "n1".into(),
                uid: "u2".into(),
                controller: None,
                block_owner_deletion: None,
            },
        ]);
        Arc::new(rs)
    }

    #[test]
    fn owner_handler_follows_owner_references() {
        let h = EnqueueOwner::of::<Deployment>(true);
        assert_eq!(
            h.keys(&Change::Added(rs_owned_by("web", true))),
            vec![ObjectKey::namespaced("ns", "web")]
        );
        assert!(h.keys(&Change::Added(rs_owned_by("web", false))).is_empty());
        let any = EnqueueOwner::of::<Deployment>(false);
        assert_eq!(any.keys(&Change::Added(rs_owned_by("web", false))).len(), 1);
        let moved = Change::Updated {
            old: rs_owned_by("a", true),
            new: rs_owned_by("b", true),
        };
        assert_eq!(
            h.keys(&moved),
            vec![
                ObjectKey::namespaced("ns", "a"),
                ObjectKey::namespaced("ns", "b")
            ]
        );
        let node = EnqueueOwner::of::<Node>(false);
        assert_eq!(
            node.keys(&Change::Added(rs_owned_by("web", true))),
            vec![ObjectKey::cluster("n1")]
        );
        assert!(is_namespaced::<ReplicaSet>() && !is_namespaced::<Node>());
    }

    #[test]
    fn object_and_mapped_handlers() {
        let rs = rs_owned_by("web", true);
        assert_eq!(
            EnqueueObject.keys(&Change::Deleted(rs.clone())),
            vec![ObjectKey::namespaced("ns", "rs")]
        );
        let m = EnqueueMapped(|r: &ReplicaSet| {
            vec![ObjectKey::cluster(format!(
                "x-{}",
                r.metadata.name.as_deref().unwrap_or("")
            ))]
        });
        assert_eq!(m.keys(&Change::Added(rs)), vec![ObjectKey::cluster("x-rs")]);
    }
}
