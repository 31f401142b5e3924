//! Object identity: the namespace/name key that caches index and controllers reconcile.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use kube::Resource;

/// The identity of an object: its namespace (none for cluster-scoped kinds) and name.
/// Controllers receive it as their reconcile request.
///
/// Keys are copied a lot (queue, store, indexes, handlers), so the strings are shared
/// (`Arc<str>`) and the hash is computed once, when the key is made.
#[derive(Clone, Debug)]
pub struct ObjectKey {
    namespace: Option<Arc<str>>,
    name: Arc<str>,
    hash: u64,
}

/// Fixed-seed hasher for the precomputed key hash (stable within and across processes).
const KEY_HASH: foldhash::fast::FixedState =
    foldhash::fast::FixedState::with_seed(0x636f_7873_7761_696e);

impl ObjectKey {
    fn new(namespace: Option<Arc<str>>, name: Arc<str>) -> Self {
        let mut h = KEY_HASH.build_hasher();
        namespace.as_deref().hash(&mut h);
        name.as_ref().hash(&mut h);
        ObjectKey {
            namespace,
            name,
            hash: h.finish(),
        }
    }

    /// A key for a namespaced object.
    pub fn namespaced(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        Self::new(
            Some(Arc::from(namespace.as_ref())),
            Arc::from(name.as_ref()),
        )
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl AsRef<str>) -> Self {
        Self::new(None, Arc::from(name.as_ref()))
    }

    /// A key from an optional namespace and a name.
    pub fn from_parts(namespace: Option<&str>, name: &str) -> Self {
        Self::new(
            namespace.filter(|n| !n.is_empty()).map(Arc::from),
            Arc::from(name),
        )
    }

    /// The key of an object (from its metadata).
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::from_parts(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }

    /// The namespace, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl PartialEq for ObjectKey {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.name == other.name && self.namespace == other.namespace
    }
}

impl Eq for ObjectKey {}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.namespace(), self.name()).cmp(&(other.namespace(), other.name()))
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_hash_and_order_follow_namespace_and_name() {
        let a = ObjectKey::namespaced("ns", "a");
        assert_eq!(a, ObjectKey::from_parts(Some("ns"), "a"));
        assert_ne!(a, ObjectKey::namespaced("ns", "b"));
        assert_eq!(
            ObjectKey::cluster("a"),
            ObjectKey::from_parts(Some(""), "a")
        );
        let mut v = [
            ObjectKey::namespaced("b", "a"),
            ObjectKey::cluster("z"),
            ObjectKey::namespaced("a", "z"),
        ];
        v.sort();
        assert_eq!(
            v.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["z", "a/z", "b/a"]
        );
        let set: std::collections::HashSet<ObjectKey> =
            [a.clone(), a.clone()].into_iter().collect();
        assert_eq!(set.len(), 1);
    }
}
