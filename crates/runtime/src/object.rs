//! Object identity: the namespace/name key that caches index and controllers reconcile.

use std::fmt;
use std::sync::Arc;

use kube::Resource;

/// The identity of an object: its namespace (none for cluster-scoped kinds) and name.
/// Controllers receive it as their reconcile request. The strings are shared (`Arc<str>`)
/// so that the many copies a queue, a store and its indexes keep cost no allocation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Namespace, `None` for cluster-scoped objects.
    pub namespace: Option<Arc<str>>,
    /// Name.
    pub name: Arc<str>,
}

impl ObjectKey {
    /// A key for a namespaced object.
    pub fn namespaced(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        ObjectKey {
            namespace: Some(Arc::from(namespace.as_ref())),
            name: Arc::from(name.as_ref()),
        }
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl AsRef<str>) -> Self {
        ObjectKey {
            namespace: None,
            name: Arc::from(name.as_ref()),
        }
    }

    /// The key of an object (from its metadata).
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        ObjectKey {
            namespace: meta
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(Arc::from),
            name: Arc::from(meta.name.as_deref().unwrap_or_default()),
        }
    }
}

impl ObjectKey {
    /// The namespace, if any.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
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
