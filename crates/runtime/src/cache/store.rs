//! The informer's store: the current objects of one kind, ordered by key (so a namespace
//! is a range), with user-defined secondary indexes (controller-runtime's `FieldIndexer`,
//! client-go's `Indexer`).
//!
//! An object is held once, in one of two forms ([`Storage`]): by default as its compact
//! wire JSON, LZ4-compressed against a dictionary of the kind's first objects ([`Dict`])
//! and decoded into a private `Arc<K>` for each read (what controller-runtime's deep
//! copy on every read costs, at a fraction of the memory of a decoded object), or
//! decoded once and shared by every reader.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::Resource;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::object::ObjectKey;

/// The store's own key: the namespace string shared between objects, the name shared
/// between the store and its indexes (a clone costs no allocation). Smaller than an
/// [`ObjectKey`] (which carries a precomputed hash for queues); ordered the same way, by
/// namespace then name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct StoreKey {
    namespace: Option<Arc<str>>,
    name: Arc<str>,
}

impl StoreKey {
    pub(crate) fn new(namespace: Option<Arc<str>>, name: &str) -> Self {
        StoreKey {
            namespace,
            name: name.into(),
        }
    }

    fn of(key: &ObjectKey) -> Self {
        StoreKey::new(key.namespace().map(Arc::from), key.name())
    }

    pub(crate) fn object_key(&self) -> ObjectKey {
        ObjectKey::from_parts(self.namespace.as_deref(), &self.name)
    }
}

impl std::fmt::Display for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Computes the index values of an object (empty: not indexed).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// Name of the built-in namespace index (served from the key order, no extra memory).
pub const NAMESPACE_INDEX: &str = "namespace";

/// How a store holds its objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Storage {
    /// As the JSON the server sent (managedFields stripped, transforms applied),
    /// compressed against a dictionary of the kind's first objects and decoded on each
    /// read: objects of one kind share most of their JSON, so a pod of 2 KiB takes a
    /// few hundred bytes. The default.
    #[default]
    Compact,
    /// Decoded once and shared as `Arc` by every reader: reads cost nothing, memory is
    /// that of the Rust value (2 to 3 times the JSON size for typical objects).
    Decoded,
}

/// One cached object.
pub(crate) enum Slot<K> {
    /// Wire JSON, decoded on read.
    Wire(Box<RawValue>),
    /// Wire JSON compressed against `dict` ([`Dict::pack`]), decoded on read.
    Packed {
        /// What `data` was compressed against.
        dict: Arc<Dict>,
        /// The JSON's length (4 bytes, little-endian), then its LZ4 block.
        data: Box<[u8]>,
    },
    /// Decoded, shared.
    Object(Arc<K>),
}

/// Bytes of wire JSON a [`Dict`] is made of.
pub(crate) const DICT_BYTES: usize = 4096;

/// A compression dictionary: the first [`DICT_BYTES`] of JSON an informer received.
/// Objects of one kind repeat each other's keys and most of their values (a Deployment's
/// pods differ in names, UIDs, addresses and times), so LZ4 with such a dictionary keeps
/// a quarter or less of each object.
pub(crate) struct Dict(Box<[u8]>);

thread_local! {
    /// Scratch space for compression (sized for the largest object seen).
    static PACK_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Dict {
    /// A dictionary of `bytes` (at most 64 KiB of it is used).
    pub(crate) fn new(bytes: Vec<u8>) -> Arc<Self> {
        Arc::new(Dict(bytes.into_boxed_slice()))
    }

    /// `raw` compressed against this dictionary, in an allocation of its exact size;
    /// `raw` itself when compression does not make it smaller.
    pub(crate) fn pack<K>(self: &Arc<Self>, raw: Box<RawValue>) -> Slot<K> {
        let json = raw.get().as_bytes();
        let Ok(len) = u32::try_from(json.len()) else {
            return Slot::Wire(raw);
        };
        let packed = PACK_BUF.with(|buf| {
            let mut buf = buf.borrow_mut();
            buf.resize(4 + lz4_flex::block::get_maximum_output_size(json.len()), 0);
            buf[..4].copy_from_slice(&len.to_le_bytes());
            let n = lz4_flex::block::compress_into_with_dict(json, &mut buf[4..], &self.0).ok()?;
            (4 + n < json.len()).then(|| Box::<[u8]>::from(&buf[..4 + n]))
        });
        match packed {
            Some(data) => Slot::Packed {
                dict: self.clone(),
                data,
            },
            None => Slot::Wire(raw),
        }
    }

    /// The JSON `data` ([`Dict::pack`]) holds (UTF-8 when packed; the JSON parse that
    /// reads it checks again).
    fn unpack(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        let (len, block) = data.split_first_chunk::<4>().ok_or("truncated")?;
        let mut out = vec![0u8; u32::from_le_bytes(*len) as usize];
        let n = lz4_flex::block::decompress_into_with_dict(block, &mut out, &self.0)
            .map_err(|e| e.to_string())?;
        out.truncate(n);
        Ok(out)
    }
}

/// The parts of `metadata` the cache needs, read without decoding the object.
#[derive(serde::Deserialize)]
pub(crate) struct Head<'a> {
    #[serde(borrow, default)]
    pub metadata: MetaHead<'a>,
}

/// See [`Head`].
#[derive(serde::Deserialize, Default)]
pub(crate) struct MetaHead<'a> {
    #[serde(borrow, default)]
    pub name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    pub namespace: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "resourceVersion")]
    pub resource_version: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    pub uid: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default, rename = "managedFields")]
    pub managed_fields: Option<&'a RawValue>,
}

impl<K> Slot<K> {
    /// `f` of the slot's JSON (`None` for a decoded slot, or, logged, when a packed one
    /// does not unpack).
    fn with_json<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        match self {
            Slot::Object(_) => None,
            Slot::Wire(raw) => Some(f(raw.get().as_bytes())),
            Slot::Packed { dict, data } => match dict.unpack(data) {
                Ok(json) => Some(f(&json)),
                Err(e) => {
                    tracing::warn!(error = %e, "cached object does not unpack; skipped");
                    None
                }
            },
        }
    }

    /// The parts of the object's metadata in [`MetaHead`], as `f` takes them.
    fn head<R>(&self, f: impl FnOnce(&MetaHead<'_>) -> Option<R>) -> Option<R> {
        self.with_json(|json| {
            serde_json::from_slice::<Head>(json)
                .ok()
                .and_then(|h| f(&h.metadata))
        })
        .flatten()
    }
}

impl<K: Resource + DeserializeOwned> Slot<K> {
    /// The object, decoded if need be (`None`, logged, if it does not decode as `K`).
    pub(crate) fn decode(&self, key: &impl std::fmt::Display) -> Option<Arc<K>> {
        if let Slot::Object(o) = self {
            return Some(o.clone());
        }
        self.with_json(|json| match serde_json::from_slice(json) {
            Ok(o) => Some(Arc::new(o)),
            Err(e) => {
                tracing::warn!(
                    object = %key,
                    kind = std::any::type_name::<K>(),
                    error = %e,
                    "cached object does not decode; skipped"
                );
                None
            }
        })
        .flatten()
    }

    fn resource_version(&self) -> Option<String> {
        match self {
            Slot::Object(o) => o.meta().resource_version.clone(),
            _ => self.head(|m| m.resource_version.as_ref().map(|v| v.to_string())),
        }
    }

    fn uid(&self) -> Option<String> {
        match self {
            Slot::Object(o) => o.meta().uid.clone(),
            _ => self.head(|m| m.uid.as_ref().map(|v| v.to_string())),
        }
    }
}

struct Index<K> {
    func: IndexFn<K>,
    values: HashMap<Arc<str>, HashSet<StoreKey>>,
    /// the values each object is indexed under (so removal needs no decode), sharing
    /// their strings with `values`
    of: HashMap<StoreKey, Box<[Arc<str>]>>,
}

impl<K> Index<K> {
    fn new(func: IndexFn<K>) -> Self {
        Index {
            func,
            values: HashMap::new(),
            of: HashMap::new(),
        }
    }

    fn add(&mut self, key: &StoreKey, obj: &K) {
        let vals = (self.func)(obj);
        if vals.is_empty() {
            return;
        }
        let mut shared = Vec::with_capacity(vals.len());
        for v in vals {
            let v: Arc<str> = match self.values.get_key_value(v.as_str()) {
                Some((existing, _)) => existing.clone(),
                None => Arc::from(v),
            };
            self.values
                .entry(v.clone())
                .or_default()
                .insert(key.clone());
            shared.push(v);
        }
        self.of.insert(key.clone(), shared.into_boxed_slice());
    }

    fn remove(&mut self, key: &StoreKey) {
        for v in self.of.remove(key).unwrap_or_default() {
            if let Some(set) = self.values.get_mut(&v) {
                set.remove(key);
                if set.is_empty() {
                    self.values.remove(&v);
                }
            }
        }
    }

    fn clear(&mut self) {
        self.values.clear();
        self.of.clear();
    }
}

struct Inner<K> {
    objects: BTreeMap<StoreKey, Slot<K>>,
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

/// A change [`Store::replace`] found, not yet decoded ([`Store::resolve`] does).
pub(crate) enum Pending<K> {
    /// A new object, now in the store.
    Added(StoreKey),
    /// An object replaced (its old slot); the new one is in the store.
    Updated(StoreKey, Slot<K>),
    /// An object gone (its last slot).
    Deleted(StoreKey, Slot<K>),
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

impl<K> Default for Store<K> {
    fn default() -> Self {
        Store {
            inner: RwLock::new(Inner {
                objects: BTreeMap::new(),
                indexes: HashMap::new(),
            }),
        }
    }
}

impl<K: Resource + DeserializeOwned> Store<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Add a secondary index; existing objects are indexed at once.
    pub fn add_index(&self, name: &str, func: IndexFn<K>) {
        let mut inner = self.write();
        let mut index = Index::new(func);
        for (k, slot) in &inner.objects {
            if let Some(o) = slot.decode(k) {
                index.add(k, &o);
            }
        }
        inner.indexes.insert(name.to_string(), index);
    }

    /// Whether an index of that name exists (the namespace index always does).
    pub fn has_index(&self, name: &str) -> bool {
        name == NAMESPACE_INDEX || self.read().indexes.contains_key(name)
    }

    /// Insert or replace an object. Returns the new object decoded when `want_new` (or
    /// when indexes needed it) and the slot it replaced.
    pub(crate) fn apply(
        &self,
        key: StoreKey,
        slot: Slot<K>,
        want_new: bool,
    ) -> (Option<Arc<K>>, Option<Slot<K>>) {
        let mut inner = self.write();
        let Inner { objects, indexes } = &mut *inner;
        let new = (want_new || !indexes.is_empty())
            .then(|| slot.decode(&key))
            .flatten();
        for idx in indexes.values_mut() {
            idx.remove(&key);
            if let Some(o) = &new {
                idx.add(&key, o);
            }
        }
        let old = objects.insert(key, slot);
        (new, old)
    }

    /// Remove an object; returns its slot if it was present.
    pub(crate) fn delete(&self, key: &StoreKey) -> Option<Slot<K>> {
        let mut inner = self.write();
        let Inner { objects, indexes } = &mut *inner;
        let old = objects.remove(key)?;
        for idx in indexes.values_mut() {
            idx.remove(key);
        }
        Some(old)
    }

    /// Replace the whole content (after a list). With `emit`, returns the changes that
    /// turn the old content into the new one (deletions for objects that vanished,
    /// updates only for objects whose resourceVersion changed), not yet decoded: see
    /// [`Store::resolve`]. When a key repeats in `items`, the last one wins.
    pub(crate) fn replace(
        &self,
        mut items: Vec<(StoreKey, Slot<K>)>,
        emit: bool,
    ) -> Vec<Pending<K>> {
        // stable sort + keep the last of equal keys
        items.sort_by(|a, b| a.0.cmp(&b.0));
        items.reverse();
        items.dedup_by(|later, earlier| later.0 == earlier.0);
        items.reverse();
        let mut inner = self.write();
        let old = std::mem::take(&mut inner.objects);
        let mut changes = Vec::new();
        if emit {
            let mut old_iter = old.into_iter().peekable();
            for (k, slot) in &items {
                while let Some((ok, oslot)) = old_iter.next_if(|(ok, _)| ok < k) {
                    changes.push(Pending::Deleted(ok, oslot));
                }
                match old_iter.next_if(|(ok, _)| ok == k) {
                    None => changes.push(Pending::Added(k.clone())),
                    Some((ok, oslot)) => {
                        if oslot.resource_version() != slot.resource_version() {
                            changes.push(Pending::Updated(ok, oslot));
                        }
                    }
                }
            }
            changes.extend(old_iter.map(|(ok, oslot)| Pending::Deleted(ok, oslot)));
        } else {
            drop(old);
        }
        // a sorted input builds full B-tree nodes
        inner.objects = items.into_iter().collect();
        let Inner { objects, indexes } = &mut *inner;
        if !indexes.is_empty() {
            indexes.values_mut().for_each(Index::clear);
            // each object decoded once for all indexes
            for (k, slot) in objects.iter() {
                if let Some(o) = slot.decode(k) {
                    indexes.values_mut().for_each(|idx| idx.add(k, &o));
                }
            }
        }
        changes
    }

    /// Decode changes [`Store::replace`] returned: the new objects as the store holds
    /// them now, the old ones from the slots they had. Callers resolve a few at a time,
    /// so that a relist of many objects never has them all decoded at once.
    pub(crate) fn resolve(&self, pending: impl IntoIterator<Item = Pending<K>>) -> Vec<Change<K>> {
        let current = |k: &StoreKey| {
            let inner = self.read();
            inner.objects.get(k).and_then(|s| s.decode(k))
        };
        pending
            .into_iter()
            .filter_map(|p| match p {
                Pending::Added(k) => current(&k).map(Change::Added),
                Pending::Updated(k, old) => match (old.decode(&k), current(&k)) {
                    (Some(old), Some(new)) => Some(Change::Updated { old, new }),
                    _ => None,
                },
                Pending::Deleted(k, old) => old.decode(&k).map(Change::Deleted),
            })
            .collect()
    }

    /// One object.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let key = StoreKey::of(key);
        let inner = self.read();
        inner.objects.get(&key).and_then(|s| s.decode(&key))
    }

    /// The UID of the object at `key`, read without decoding it (what a handler needs
    /// to check that an owner reference still names the cached object).
    pub fn uid(&self, key: &ObjectKey) -> Option<String> {
        let key = StoreKey::of(key);
        let inner = self.read();
        inner.objects.get(&key)?.uid()
    }

    /// Whether an object with that key is cached (no decode).
    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.read().objects.contains_key(&StoreKey::of(key))
    }

    /// The keys of every object, in order (no decode).
    pub fn keys(&self) -> Vec<ObjectKey> {
        self.read()
            .objects
            .keys()
            .map(StoreKey::object_key)
            .collect()
    }

    /// Every object, ordered by namespace and name.
    pub fn list(&self) -> Vec<Arc<K>> {
        let inner = self.read();
        inner
            .objects
            .iter()
            .filter_map(|(k, s)| s.decode(k))
            .collect()
    }

    /// Objects whose index `index` has `value`; `None` when there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Option<Vec<Arc<K>>> {
        if index == NAMESPACE_INDEX {
            return Some(self.list_namespace(value));
        }
        let inner = self.read();
        let idx = inner.indexes.get(index)?;
        let mut keys: Vec<&StoreKey> = idx
            .values
            .get(value)
            .map(|keys| keys.iter().collect())
            .unwrap_or_default();
        keys.sort();
        Some(
            keys.into_iter()
                .filter_map(|k| inner.objects.get(k).and_then(|s| s.decode(k)))
                .collect(),
        )
    }

    /// How many objects index `index` holds under `value`, without decoding any;
    /// `None` when there is no such index.
    pub fn index_len(&self, index: &str, value: &str) -> Option<usize> {
        let inner = self.read();
        let idx = inner.indexes.get(index)?;
        Some(idx.values.get(value).map_or(0, HashSet::len))
    }

    /// The values index `index` holds for at least one object, sorted, without decoding
    /// any object; `None` when there is no such index (the namespace index included).
    pub fn index_values(&self, index: &str) -> Option<Vec<String>> {
        let inner = self.read();
        let idx = inner.indexes.get(index)?;
        let mut values: Vec<String> = idx.values.keys().map(|v| v.to_string()).collect();
        values.sort();
        Some(values)
    }

    /// Objects of one namespace, ordered by name.
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        let inner = self.read();
        let from = StoreKey::new(Some(Arc::from(namespace)), "");
        inner
            .objects
            .range(from..)
            .take_while(|(k, _)| k.namespace.as_deref() == Some(namespace))
            .filter_map(|(k, s)| s.decode(k))
            .collect()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Visit every object, decoded, under the read lock (for handlers registered late
    /// and resyncs).
    pub(crate) fn for_each(&self, mut f: impl FnMut(Arc<K>)) {
        for (k, s) in self.read().objects.iter() {
            if let Some(o) = s.decode(k) {
                f(o);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::collections::BTreeMap;

    fn key(ns: &str, name: &str) -> StoreKey {
        StoreKey::of(&ObjectKey::namespaced(ns, name))
    }

    fn cm(ns: &str, name: &str, rv: &str, app: &str) -> (StoreKey, Slot<ConfigMap>) {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.metadata.resource_version = Some(rv.into());
        c.metadata.uid = Some(format!("uid-{name}"));
        c.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
        let raw = serde_json::value::to_raw_value(&c).expect("encodes");
        let slot = match PACKING.with(|p| p.borrow().clone()) {
            Some(dict) => {
                let slot = dict.pack(raw);
                assert!(
                    matches!(slot, Slot::Packed { .. }),
                    "packing makes it smaller"
                );
                slot
            }
            None => Slot::Wire(raw),
        };
        (key(ns, name), slot)
    }

    thread_local! {
        /// The dictionary [`cm`] packs its slots with (none: wire JSON).
        static PACKING: std::cell::RefCell<Option<Arc<Dict>>> = const { std::cell::RefCell::new(None) };
    }

    /// `f` with [`cm`] making packed slots.
    fn packed(f: impl FnOnce()) {
        let mut sample = ConfigMap::default();
        sample.metadata.namespace = Some("a".into());
        sample.metadata.name = Some("sample".into());
        sample.metadata.resource_version = Some("1".into());
        sample.metadata.uid = Some("uid-sample".into());
        sample.metadata.labels = Some(BTreeMap::from([("app".into(), "web".into())]));
        let bytes = serde_json::to_vec(&sample).expect("encodes");
        PACKING.with(|p| *p.borrow_mut() = Some(Dict::new(bytes)));
        f();
        PACKING.with(|p| *p.borrow_mut() = None);
    }

    #[test]
    fn packed_slots_read_as_wire_ones() {
        packed(|| {
            indexes_follow_updates_and_deletes();
            namespace_ranges_do_not_bleed_into_neighbours();
            late_index_covers_existing_objects();
            replace_reports_exact_changes();
        });
    }

    #[test]
    fn pack_round_trips_and_shrinks_alike_objects() {
        let (_, Slot::Wire(raw)) = cm("a", "x", "7", "web") else {
            panic!("wire without packing")
        };
        let json = raw.get().to_string();
        let dict = Dict::new(json.clone().into_bytes());
        // an object like the dictionary's takes a fraction of its size
        let (_, Slot::Wire(other)) = cm("a", "y", "8", "web") else {
            panic!("wire without packing")
        };
        let other_json = other.get().to_string();
        let slot: Slot<ConfigMap> = dict.pack(other);
        let Slot::Packed { data, .. } = &slot else {
            panic!("packed")
        };
        assert!(
            data.len() * 2 < other_json.len(),
            "{} of {}",
            data.len(),
            other_json.len()
        );
        assert_eq!(
            slot.with_json(<[u8]>::to_vec),
            Some(other_json.into_bytes())
        );
        assert_eq!(slot.resource_version(), Some("8".into()));
        assert_eq!(slot.uid(), Some("uid-y".into()));
        let decoded = slot.decode(&"a/y").expect("decodes");
        assert_eq!(decoded.metadata.name.as_deref(), Some("y"));
        // what compression cannot shrink stays wire JSON
        let tiny = RawValue::from_string("{}".into()).expect("json");
        assert!(matches!(dict.pack::<ConfigMap>(tiny), Slot::Wire(_)));
    }

    #[test]
    fn corrupt_packed_objects_are_skipped_on_read() {
        let dict = Dict::new(b"{\"metadata\":{}}".to_vec());
        let s: Store<ConfigMap> = Store::default();
        for (name, data) in [
            ("short", vec![1u8, 0]),
            ("bad", vec![200, 0, 0, 0, 0xff, 0xff]),
        ] {
            s.apply(
                key("a", name),
                Slot::Packed {
                    dict: dict.clone(),
                    data: data.into_boxed_slice(),
                },
                false,
            );
            assert!(s.get(&ObjectKey::namespaced("a", name)).is_none());
            assert!(s.uid(&ObjectKey::namespaced("a", name)).is_none());
        }
        assert_eq!(s.len(), 2);
        assert!(s.list().is_empty());
    }

    fn put(s: &Store<ConfigMap>, (k, slot): (StoreKey, Slot<ConfigMap>)) -> bool {
        s.apply(k, slot, false).1.is_some()
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

    fn names(v: Vec<Arc<ConfigMap>>) -> Vec<String> {
        v.iter()
            .map(|c| c.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn indexes_follow_updates_and_deletes() {
        let s: Store<ConfigMap> = Store::default();
        s.add_index("app", app_index());
        assert!(!put(&s, cm("a", "x", "1", "web")));
        put(&s, cm("a", "y", "2", "web"));
        put(&s, cm("b", "z", "3", "db"));
        assert_eq!(
            s.by_index("app", "web").map(names),
            Some(vec!["x".into(), "y".into()])
        );
        assert!(put(&s, cm("a", "x", "4", "db")));
        assert_eq!(s.by_index("app", "web").map(names), Some(vec!["y".into()]));
        assert_eq!(s.by_index("app", "db").map(|v| v.len()), Some(2));
        assert_eq!(s.index_len("app", "db"), Some(2));
        assert_eq!(s.index_len("app", "web"), Some(1));
        assert_eq!(s.index_len("app", "cache"), Some(0));
        assert_eq!(s.index_values("app"), Some(vec!["db".into(), "web".into()]));
        assert_eq!(names(s.list_namespace("a")), ["x", "y"]);
        assert_eq!(names(s.list_namespace("b")), ["z"]);
        assert!(s.list_namespace("").is_empty());
        assert_eq!(
            s.by_index(NAMESPACE_INDEX, "b").map(names),
            Some(vec!["z".into()])
        );
        assert!(s.delete(&key("a", "y")).is_some());
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(0));
        // a value no object holds any more is gone
        assert_eq!(s.index_values("app"), Some(vec!["db".into()]));
        assert!(s.by_index("nope", "x").is_none());
        assert!(s.index_len("nope", "x").is_none());
        assert!(s.index_values("nope").is_none());
        assert_eq!(
            s.get(&ObjectKey::namespaced("a", "x"))
                .and_then(|c| c.metadata.resource_version.clone()),
            Some("4".into())
        );
        assert_eq!(
            s.uid(&ObjectKey::namespaced("a", "x")),
            Some("uid-x".into())
        );
        assert_eq!(s.uid(&ObjectKey::namespaced("a", "y")), None);
    }

    #[test]
    fn namespace_ranges_do_not_bleed_into_neighbours() {
        let s: Store<ConfigMap> = Store::default();
        for (ns, name) in [("a", "z"), ("ab", "a"), ("b", "a"), ("a", "a")] {
            put(&s, cm(ns, name, "1", "x"));
        }
        assert_eq!(names(s.list_namespace("a")), ["a", "z"]);
        assert_eq!(names(s.list_namespace("ab")), ["a"]);
        assert_eq!(s.keys().len(), 4);
    }

    #[test]
    fn late_index_covers_existing_objects() {
        let s: Store<ConfigMap> = Store::default();
        put(&s, cm("a", "x", "1", "web"));
        s.add_index("app", app_index());
        assert_eq!(s.by_index("app", "web").map(|v| v.len()), Some(1));
    }

    #[test]
    fn undecodable_objects_are_skipped_on_read() {
        let s: Store<ConfigMap> = Store::default();
        let bad =
            RawValue::from_string(r#"{"metadata":{"name":"x","namespace":"a"},"data":7}"#.into())
                .expect("json");
        s.apply(key("a", "x"), Slot::Wire(bad), false);
        assert!(s.contains(&ObjectKey::namespaced("a", "x")));
        assert!(s.get(&ObjectKey::namespaced("a", "x")).is_none());
        assert!(s.list().is_empty());
    }

    #[test]
    fn replace_reports_exact_changes() {
        let s: Store<ConfigMap> = Store::default();
        s.add_index("app", app_index());
        put(&s, cm("a", "keep", "1", "x"));
        put(&s, cm("a", "change", "1", "x"));
        put(&s, cm("a", "gone", "1", "x"));
        let pending = s.replace(
            vec![
                cm("a", "new", "3", "y"),
                cm("a", "keep", "1", "x"),
                cm("a", "change", "9", "x"),
                cm("a", "change", "2", "x"),
            ],
            true,
        );
        let changes = s.resolve(pending);
        let mut kinds: Vec<String> = changes
            .iter()
            .map(|c| match c {
                Change::Added(o) => format!("add {}", o.metadata.name.as_deref().unwrap_or("")),
                Change::Updated { new, .. } => format!(
                    "update {} {}",
                    new.metadata.name.as_deref().unwrap_or(""),
                    new.metadata.resource_version.as_deref().unwrap_or("")
                ),
                Change::Deleted(o) => {
                    format!("delete {}", o.metadata.name.as_deref().unwrap_or(""))
                }
            })
            .collect();
        kinds.sort();
        assert_eq!(kinds, vec!["add new", "delete gone", "update change 2"]);
        assert_eq!(s.len(), 3);
        assert_eq!(names(s.list_namespace("a")), ["change", "keep", "new"]);
        assert_eq!(s.by_index("app", "y").map(names), Some(vec!["new".into()]));
        assert!(s.replace(Vec::new(), false).is_empty());
        assert!(s.is_empty());
    }
}
