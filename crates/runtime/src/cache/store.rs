//! The informer's store: the current objects of one kind, shared as `Arc`, with a
//! namespace index and user-defined secondary indexes (controller-runtime's
//! `FieldIndexer`, client-go's `Indexer`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::Resource;

use crate::object::ObjectKey;

/// Computes the index values of an object (empty: not indexed).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Name of the built-in namespace index.
pub const NAMESPACE_INDEX: &str = "namespace";

struct Index<K> {
    func: IndexFn<K>,
    values: HashMap<String, HashSet<ObjectKey>>,
}

impl<K> Index<K> {
    fn add(&mut self, key: &ObjectKey, obj: &K) {
        for v in (self.func)(obj) {
            self.values.entry(v).or_default().insert(key.clone());
        }
    }

    fn remove(&mut self, key: &ObjectKey, obj: &K) {
        for v in (self.func)(obj) {
            if let Some(set) = self.values.get_mut(&v) {
                set.remove(key);
                if set.is_empty() {
                    self.values.remove(&v);
                }
            }
        }
    }
}

struct Inner<K> {
    objects: HashMap<ObjectKey, Arc<K>>,
    indexes: HashMap<String, Index<K>>,
}

/// A thread-safe object store with indexes. Reads never block on the network.
pub struct Store<K> {
    inner: RwLock<Inner<K>>,
}

/// What changed in the store (for event handlers).
#[derive(Debug)]
pub enum Change<K> {
    /// A new object.
    Added(Arc<K>),
    /// An object replaced by a newer version.
    Updated {
        /// The previous version.
        old: Arc<K>,
        /// The new version.
        new: Arc<K>,
    },
    /// An object removed (its last known state).
    Deleted(Arc<K>),
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Added(o) => Change::Added(o.clone()),
            Change::Updated { old, new } => Change::Updated {
                old: old.clone(),
                new: new.clone(),
            },
            Change::Deleted(o) => Change::Deleted(o.clone()),
        }
    }
}

impl<K: Resource> Default for Store<K> {
    fn default() -> Self {
        let mut indexes = HashMap::new();
        let ns_fn: IndexFn<K> = Arc::new(|o: &K| o.meta().namespace.clone().into_iter().collect());
        indexes.insert(
            NAMESPACE_INDEX.to_string(),
            Index {
                func: ns_fn,
                values: HashMap::new(),
            },
        );
        Store {
            inner: RwLock::new(Inner {
                objects: HashMap::new(),
                indexes,
            }),
        }
    }
}

impl<K: Resource> Store<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a secondary index; existing objects are indexed at once.
    pub fn add_index(&self, name: &str, func: IndexFn<K>) {
        let mut inner = self.write();
        let mut index = Index {
            func,
            values: HashMap::new(),
        };
        for (k, o) in &inner.objects {
            index.add(k, o);
        }
        inner.indexes.insert(name.to_string(), index);
    }

    /// Whether an index of that name exists.
    pub fn has_index(&self, name: &str) -> bool {
        self.read().indexes.contains_key(name)
    }

    /// Insert or replace an object; returns the change.
    pub fn apply(&self, obj: Arc<K>) -> Change<K> {
        let key = ObjectKey::of(obj.as_ref());
        let mut inner = self.write();
        let Inner { objects, indexes } = &mut *inner;
        let old = objects.insert(key.clone(), obj.clone());
        for idx in indexes.values_mut() {
            if let Some(o) = &old {
                idx.remove(&key, o);
            }
            idx.add(&key, &obj);
        }
        match old {
            Some(old) => Change::Updated { old, new: obj },
            None => Change::Added(obj),
        }
    }

    /// Remove an object; returns its last state if it was present.
    pub fn delete(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.write();
        let Inner { objects, indexes } = &mut *inner;
        let old = objects.remove(key)?;
        for idx in indexes.values_mut() {
            idx.remove(key, &old);
        }
        Some(old)
    }

    /// Replace the whole content (after a relist); returns the changes that turn the old
    /// content into the new one (deletions for objects that vanished, updates only for
    /// objects whose resourceVersion changed).
    pub fn replace(&self, objects: Vec<Arc<K>>) -> Vec<Change<K>> {
        let mut changes = Vec::new();
        let mut fresh: HashMap<ObjectKey, Arc<K>> = HashMap::with_capacity(objects.len());
        for o in objects {
            fresh.insert(ObjectKey::of(o.as_ref()), o);
        }
        let mut inner = self.write();
        let Inner { objects, indexes } = &mut *inner;
        for (k, old) in objects.iter() {
            match fresh.get(k) {
                None => changes.push(Change::Deleted(old.clone())),
                Some(new) if new.meta().resource_version != old.meta().resource_version => changes
                    .push(Change::Updated {
                        old: old.clone(),
                        new: new.clone(),
                    }),
                Some(_) => {}
            }
        }
        for (k, new) in fresh.iter() {
            if !objects.contains_key(k) {
                changes.push(Change::Added(new.clone()));
            }
        }
        for idx in indexes.values_mut() {
            idx.values.clear();
            for (k, o) in &fresh {
                idx.add(k, o);
            }
        }
        *objects = fresh;
        changes
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.read().objects.get(key).cloned()
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    /// Objects whose index `index` has `value`; `None` when there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Option<Vec<Arc<K>>> {
        let inner = self.read();
        let idx = inner.indexes.get(index)?;
        Some(
            idx.values
                .get(value)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| inner.objects.get(k).cloned())
                        .collect()
                })
                .unwrap_or_default(),
        )
    }

    /// Objects of one namespace.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        self.by_index(NAMESPACE_INDEX, namespace)
            .unwrap_or_default()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Visit every object under the read lock (for handlers registered late).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Arc<K>)) {
        for o in self.read().objects.values() {
            f(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::collections::BTreeMap;

    fn cm(ns: &str, name: &str, rv: &str, app: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.metadata.resource_version = Some(rv.into());
        c.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
        Arc::new(c)
    }

    fn app_index() -> IndexFn<ConfigMap> {
        Arc::new(|c: &ConfigMap| {
            c.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app").cloned())
                .into_iter()
                .collect()
        })
    }

    #[test]
    fn indexes_follow_updates_and_deletes() {
        let s: Store<ConfigMap> = Store::default();
        s.add_index("app", app_index());
        assert!(matches!(
            s.apply(cm("a", "x", "1", "web")),
            Change::Added(_)
        ));
        s.apply(cm("a", "y", "2", "web"));
        s.apply(cm("b", "z", "3", "db"));
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(2));
        assert!(matches!(
            s.apply(cm("a", "x", "4", "db")),
            Change::Updated { .. }
        ));
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(1));
        assert_eq!(s.by_index("app", "db").map(|v| v.len()), Some(2));
        assert_eq!(s.list_namespace("a").len(), 2);
        assert!(s.delete(&ObjectKey::namespaced("a", "y")).is_some());
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(0));
        assert!(s.by_index("nope", "x").is_none());
    }

    #[test]
    fn late_index_covers_existing_objects() {
        let s: Store<ConfigMap> = Store::default();
        s.apply(cm("a", "x", "1", "web"));
        s.add_index("app", app_index());
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(1));
    }

    #[test]
    fn replace_reports_exact_changes() {
        let s: Store<ConfigMap> = Store::default();
        s.apply(cm("a", "keep", "1", "x"));
        s.apply(cm("a", "change", "1", "x"));
        s.apply(cm("a", "gone", "1", "x"));
        let changes = s.replace(vec![
            cm("a", "keep", "1", "x"),
            cm("a", "change", "2", "x"),
            cm("a", "new", "3", "x"),
        ]);
        let mut kinds: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("add {}", o.metadata.name.as_deref().unwrap_or("")),
                Change::Updated { new, .. } => {
                    format!("update {}", new.metadata.name.as_deref().unwrap_or(""))
                }
                Change::Deleted(o) => {
                    format!("delete {}", o.metadata.name.as_deref().unwrap_or(""))
                }
            })
            .collect();
        kinds.sort();
        assert_eq!(kinds, vec!["add new", "delete gone", "update change"]);
        assert_eq!(s.len(), 3);
        assert_eq!(s.list_namespace("a").len(), 3);
    }
}
