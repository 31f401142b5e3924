//! Object identity: the namespace/name key that caches index and controllers reconcile.

use std::fmt;

use kube::Resource;

/// The identity of an object: its namespace (none for cluster-scoped kinds) and name.
/// Controllers receive it as their reconcile request.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace, `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// A key for a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of an object (from its metadata).
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        ObjectKey {
            namespace: meta.namespace.clone().filter(|n| !n.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
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
