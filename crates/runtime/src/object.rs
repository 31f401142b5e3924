//! Object identity: the namespace/name key that caches index and controllers reconcile.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use kube::Resource;

/// Longest string kept inline in a key.
const INLINE: usize = 22;

/// A key string: inline when short (most names and namespaces), else shared. Copying an
/// inline string touches no other memory: a shared one bumps a reference count on a cache
/// line elsewhere, which was the largest cost of a queue add with 100,000 distinct keys.
#[derive(Clone)]
enum Text {
    Inline { len: u8, buf: [u8; INLINE] },
    Shared(Arc<str>),
}

impl Text {
    fn new(s: &str) -> Self {
        if s.len() <= INLINE {
            let mut buf = [0; INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Text::Inline {
                len: s.len() as u8,
                buf,
            }
        } else {
            Text::Shared(Arc::from(s))
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // made from a `&str`, cut at its end: always valid UTF-8
            Text::Inline { len, buf } => std::str::from_utf8(&buf[..*len as usize]).unwrap_or(""),
            Text::Shared(s) => s,
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Text::Inline { len: a, buf: x }, Text::Inline { len: b, buf: y }) => a == b && x == y,
            (Text::Shared(a), Text::Shared(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The identity of an object: its namespace (none for cluster-scoped kinds) and name.
/// Controllers receive it as their reconcile request.
///
/// Keys are copied a lot (queue, store, indexes, handlers): short strings are kept inline
/// (a copy is a plain memory copy), long ones shared, and the hash is computed once, when
/// the key is made.
#[derive(Clone, Debug)]
pub struct ObjectKey {
    namespace: Option<Text>,
    name: Text,
    hash: u64,
}

/// Fixed-seed hasher for the precomputed key hash (stable within and across processes).
const KEY_HASH: foldhash::fast::FixedState =
    foldhash::fast::FixedState::with_seed(0x636f_7873_7761_696e);

impl ObjectKey {
    fn new(namespace: Option<&str>, name: &str) -> Self {
        let mut h = KEY_HASH.build_hasher();
        namespace.hash(&mut h);
        name.hash(&mut h);
        ObjectKey {
            namespace: namespace.map(Text::new),
            name: Text::new(name),
            hash: h.finish(),
        }
    }

    /// A key for a namespaced object.
    pub fn namespaced(namespace: impl AsRef<str>, name: impl AsRef<str>) -> Self {
        Self::new(Some(namespace.as_ref()), name.as_ref())
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl AsRef<str>) -> Self {
        Self::new(None, name.as_ref())
    }

    /// A key from an optional namespace and a name.
    pub fn from_parts(namespace: Option<&str>, name: &str) -> Self {
        Self::new(namespace.filter(|n| !n.is_empty()), name)
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
        self.namespace.as_ref().map(Text::as_str)
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.name.as_str()
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
        match self.namespace() {
            Some(ns) => write!(f, "{ns}/{}", self.name()),
            None => f.write_str(self.name()),
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
        // long strings are shared rather than inline: same identity rules
        let long = "n".repeat(60);
        let k = ObjectKey::namespaced(&long, "x".repeat(23));
        assert_eq!(k.namespace(), Some(long.as_str()));
        assert_eq!(k.name(), "x".repeat(23));
        assert_eq!(k, k.clone());
        assert_ne!(k, ObjectKey::namespaced(&long, "x".repeat(22)));
        assert_eq!(ObjectKey::namespaced("é", "ü").to_string(), "é/ü");
    }
}
