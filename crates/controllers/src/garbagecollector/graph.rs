//! The dependency graph: one node per object that owns or is owned, keyed by UID.
//!
//! Upstream `pkg/controller/garbagecollector/graph.go`. A node knows its identity
//! (apiVersion, kind, namespace, name, uid), its owner references as last observed, the
//! UIDs of its dependents, and three flags: *virtual* (made up from a dependent's owner
//! reference, not yet observed through an informer), *being deleted* (a deletionTimestamp
//! was seen; a one-way trip) and *deleting dependents* (being deleted with the
//! `foregroundDeletion` finalizer).
//!
//! Memory matters here (one node per owned object in the cluster): UIDs in their canonical
//! UUID form are held as 16 bytes, apiVersion, kind and namespace strings are shared
//! between nodes ([`Interner`]), and leaf nodes allocate no dependents set.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

/// An object's UID: 16 bytes when it is a canonical (lower-case, hyphenated) UUID, as the
/// API server makes them; any other string (a hand-written owner reference) as is.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Uid {
    /// A canonical UUID, as two big-endian halves.
    Uuid([u64; 2]),
    /// Anything else.
    Other(Arc<str>),
}

impl Uid {
    /// Read a UID; `parse(s).to_string() == s` always holds.
    pub fn parse(s: &str) -> Uid {
        fn canonical(s: &str) -> Option<[u64; 2]> {
            let b = s.as_bytes();
            if b.len() != 36 {
                return None;
            }
            let mut v: u128 = 0;
            for (i, &c) in b.iter().enumerate() {
                if matches!(i, 8 | 13 | 18 | 23) {
                    if c != b'-' {
                        return None;
                    }
                    continue;
                }
                let d = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' => c - b'a' + 10,
                    _ => return None,
                };
                v = (v << 4) | u128::from(d);
            }
            Some([(v >> 64) as u64, v as u64])
        }
        match canonical(s) {
            Some(halves) => Uid::Uuid(halves),
            None => Uid::Other(Arc::from(s)),
        }
    }
}

impl Uid {
    /// Whether this is the empty UID (objects always have one; references should).
    pub fn is_empty(&self) -> bool {
        matches!(self, Uid::Other(s) if s.is_empty())
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uid::Uuid([hi, lo]) => {
                let v = (u128::from(*hi) << 64) | u128::from(*lo);
                let h = format!("{v:032x}");
                write!(
                    f,
                    "{}-{}-{}-{}-{}",
                    &h[..8],
                    &h[8..12],
                    &h[12..16],
                    &h[16..20],
                    &h[20..]
                )
            }
            Uid::Other(s) => f.write_str(s),
        }
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl PartialOrd for Uid {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Uid {
    /// As the strings compare (upstream compares `types.UID` strings).
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Uid::Uuid(a), Uid::Uuid(b)) => a.cmp(b),
            _ => self.to_string().cmp(&other.to_string()),
        }
    }
}

/// Shares the strings many nodes repeat (apiVersion, kind, namespace).
#[derive(Default, Debug)]
pub struct Interner {
    strings: HashSet<Arc<str>>,
}

impl Interner {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(found) = self.strings.get(s) {
            return found.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.strings.insert(shared.clone());
        shared
    }
}

/// An owner reference as the graph keeps it (`metav1.OwnerReference`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: Arc<str>,
    /// `kind` of the owner.
    pub kind: Arc<str>,
    /// Name of the owner.
    pub name: Arc<str>,
    /// UID of the owner.
    pub uid: Uid,
    /// `controller`.
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`.
    pub block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    /// Whether the reference blocks its owner's foreground deletion.
    pub fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }

    /// Upstream `ownerReferenceMatchesCoordinates`: uid, name, kind and apiVersion agree.
    pub fn matches(&self, identity: &ObjectRef) -> bool {
        self.uid == identity.uid
            && self.name == identity.name
            && self.kind == identity.kind
            && self.api_version == identity.api_version
    }

    /// The object this reference names, placed in `namespace` (upstream builds owner
    /// identities with the dependent's namespace).
    pub fn identity(&self, namespace: Option<Arc<str>>) -> ObjectRef {
        ObjectRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            namespace,
        }
    }
}

/// An object's coordinates (upstream `objectReference`: the owner-reference coordinates
/// plus a namespace).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ObjectRef {
    /// `apiVersion`.
    pub api_version: Arc<str>,
    /// `kind`.
    pub kind: Arc<str>,
    /// Name.
    pub name: Arc<str>,
    /// UID.
    pub uid: Uid,
    /// Namespace; `None` for cluster-scoped objects (or unknown scope).
    pub namespace: Option<Arc<str>>,
}

impl ObjectRef {
    /// The namespace, `""` when none.
    pub fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

impl fmt::Display for ObjectRef {
    /// Upstream's `objectReference.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}/{}, namespace: {}, name: {}, uid: {}]",
            self.api_version,
            self.kind,
            self.ns(),
            self.name,
            self.uid
        )
    }
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Upstream `referenceLessThan`: kind, apiVersion, namespace, name, uid.
pub fn reference_cmp(a: &ObjectRef, b: &ObjectRef) -> Ordering {
    a.kind
        .cmp(&b.kind)
        .then_with(|| a.api_version.cmp(&b.api_version))
        .then_with(|| a.ns().cmp(b.ns()))
        .then_with(|| a.name.cmp(&b.name))
        .then_with(|| a.uid.cmp(&b.uid))
}

/// One object in the graph.
#[derive(Debug)]
pub struct Node {
    /// Coordinates (replaced when a virtual node is observed with others).
    pub identity: Arc<ObjectRef>,
    /// UIDs of the objects that list this one as an owner.
    pub dependents: HashSet<Uid>,
    /// Owner references as last observed.
    pub owners: Vec<OwnerRef>,
    /// A deletionTimestamp was observed.
    pub being_deleted: bool,
    /// Being deleted with the `foregroundDeletion` finalizer.
    pub deleting_dependents: bool,
    /// Not observed through an informer yet (built from a dependent's owner reference).
    pub virtual_: bool,
}

impl Node {
    /// A node for an observed object.
    pub fn observed(identity: Arc<ObjectRef>, owners: Vec<OwnerRef>) -> Node {
        Node {
            identity,
            dependents: HashSet::new(),
            owners,
            being_deleted: false,
            deleting_dependents: false,
            virtual_: false,
        }
    }

    /// A virtual node for an owner known only from a reference.
    pub fn virtual_owner(identity: Arc<ObjectRef>) -> Node {
        Node {
            virtual_: true,
            ..Node::observed(identity, Vec::new())
        }
    }
}

/// What a worker reads of a node (a consistent copy taken under the graph lock).
#[derive(Clone, Debug)]
pub struct NodeView {
    /// Coordinates.
    pub identity: Arc<ObjectRef>,
    /// Owner references.
    pub owners: Vec<OwnerRef>,
    /// See [`Node::being_deleted`].
    pub being_deleted: bool,
    /// See [`Node::deleting_dependents`].
    pub deleting_dependents: bool,
    /// See [`Node::virtual_`].
    pub virtual_: bool,
    /// Number of dependents.
    pub dependents: usize,
}

/// The graph: UID → node (upstream `concurrentUIDToNode`; the caller holds the lock).
#[derive(Default, Debug)]
pub struct Graph {
    nodes: HashMap<Uid, Node>,
}

impl Graph {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node of `uid`.
    pub fn get(&self, uid: &Uid) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// The node of `uid`, mutably.
    pub fn get_mut(&mut self, uid: &Uid) -> Option<&mut Node> {
        self.nodes.get_mut(uid)
    }

    /// Insert or replace the node of its identity's UID.
    pub fn insert(&mut self, node: Node) {
        self.nodes.insert(node.identity.uid.clone(), node);
    }

    /// Remove the node of `uid`.
    pub fn remove(&mut self, uid: &Uid) -> Option<Node> {
        self.nodes.remove(uid)
    }

    /// A copy of what workers need of the node of `uid`.
    pub fn view(&self, uid: &Uid) -> Option<NodeView> {
        self.nodes.get(uid).map(|n| NodeView {
            identity: n.identity.clone(),
            owners: n.owners.clone(),
            being_deleted: n.being_deleted,
            deleting_dependents: n.deleting_dependents,
            virtual_: n.virtual_,
            dependents: n.dependents.len(),
        })
    }

    /// Views of the dependents of `uid`.
    pub fn dependents(&self, uid: &Uid) -> Vec<NodeView> {
        let Some(n) = self.nodes.get(uid) else {
            return Vec::new();
        };
        n.dependents.iter().filter_map(|d| self.view(d)).collect()
    }

    /// Upstream `blockingDependents`: the dependents whose reference to `uid` has
    /// `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &Uid) -> Vec<NodeView> {
        self.dependents(uid)
            .into_iter()
            .filter(|d| d.owners.iter().any(|o| o.uid == *uid && o.blocks()))
            .collect()
    }
}

/// Upstream `referencesDiffs`: references added, removed, and changed (same UID, other
/// fields differ: old, new).
pub fn references_diffs(
    old: &[OwnerRef],
    new: &[OwnerRef],
) -> (Vec<OwnerRef>, Vec<OwnerRef>, Vec<(OwnerRef, OwnerRef)>) {
    let mut old_by_uid: HashMap<&Uid, &OwnerRef> = old.iter().map(|r| (&r.uid, r)).collect();
    let (mut added, mut changed) = (Vec::new(), Vec::new());
    for r in new {
        match old_by_uid.remove(&r.uid) {
            Some(o) if o != r => changed.push((o.clone(), r.clone())),
            Some(_) => {}
            None => added.push(r.clone()),
        }
    }
    // removed, in the order of `old`
    let removed = old
        .iter()
        .filter(|r| old_by_uid.contains_key(&r.uid))
        .cloned()
        .collect();
    (added, removed, changed)
}

/// Upstream `partitionDependents`: dependents whose reference to `owner.uid` matches all
/// of `owner`'s coordinates, and those with a reference to that UID that does not (a
/// namespaced owner in another namespace never matches). A dependent can be in both.
pub fn partition_dependents(
    dependents: &[NodeView],
    owner: &ObjectRef,
) -> (Vec<NodeView>, Vec<NodeView>) {
    let owner_namespaced = owner.namespace.is_some();
    let (mut matching, mut nonmatching) = (Vec::new(), Vec::new());
    for dep in dependents {
        let (mut found_match, mut found_mismatch) = (false, false);
        if owner_namespaced && owner.namespace != dep.identity.namespace {
            found_mismatch = true;
        } else {
            for r in dep.owners.iter().filter(|r| r.uid == owner.uid) {
                if r.matches(owner) {
                    found_match = true;
                } else {
                    found_mismatch = true;
                }
            }
        }
        if found_match {
            matching.push(dep.clone());
        }
        if found_mismatch {
            nonmatching.push(dep.clone());
        }
    }
    (matching, nonmatching)
}

/// Upstream `getAlternateOwnerIdentity`: among the references of `deps` to the UID of
/// `absent` that name it differently, the first that sorts after `absent`, else the
/// first; `None` when there is no alternative.
pub fn alternate_owner_identity(deps: &[NodeView], absent: &ObjectRef) -> Option<ObjectRef> {
    let absent_cluster_scoped = absent.namespace.is_none();
    let mut seen: Vec<ObjectRef> = vec![absent.clone()];
    let mut first: Option<ObjectRef> = None;
    let mut first_following: Option<ObjectRef> = None;
    for dep in deps {
        for r in dep.owners.iter().filter(|r| r.uid == absent.uid) {
            if r.matches(absent)
                && (absent_cluster_scoped || absent.namespace == dep.identity.namespace)
            {
                continue;
            }
            let mut candidate = r.identity(dep.identity.namespace.clone());
            if absent_cluster_scoped
                && candidate.api_version == absent.api_version
                && candidate.kind == absent.kind
            {
                // that apiVersion/kind is known to be cluster-scoped
                candidate.namespace = None;
            }
            if seen.contains(&candidate) {
                continue;
            }
            seen.push(candidate.clone());
            if first
                .as_ref()
                .is_none_or(|f| reference_cmp(&candidate, f) == Ordering::Less)
            {
                first = Some(candidate.clone());
            }
            if reference_cmp(absent, &candidate) == Ordering::Less
                && first_following
                    .as_ref()
                    .is_none_or(|f| reference_cmp(&candidate, f) == Ordering::Less)
            {
                first_following = Some(candidate);
            }
        }
    }
    first_following.or(first)
}

/// Upstream `ReferenceCache` (absent owners): a least-recently-used set of identities
/// known not to exist, so that the many dependents of a deleted owner cost one lookup.
#[derive(Debug)]
pub struct AbsentOwnerCache {
    capacity: usize,
    stamp: u64,
    entries: HashMap<ObjectRef, u64>,
    order: VecDeque<(u64, ObjectRef)>,
}

impl AbsentOwnerCache {
    /// A cache of at most `capacity` identities (upstream: 500).
    pub fn new(capacity: usize) -> Self {
        AbsentOwnerCache {
            capacity: capacity.max(1),
            stamp: 0,
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    /// Remember `r` as absent.
    pub fn add(&mut self, r: ObjectRef) {
        self.touch(r);
        while self.entries.len() > self.capacity {
            let Some((stamp, oldest)) = self.order.pop_front() else {
                break;
            };
            if self.entries.get(&oldest) == Some(&stamp) {
                self.entries.remove(&oldest);
            }
        }
    }

    /// Whether `r` is known absent (and mark it recently used).
    pub fn has(&mut self, r: &ObjectRef) -> bool {
        if self.entries.contains_key(r) {
            self.touch(r.clone());
            true
        } else {
            false
        }
    }

    fn touch(&mut self, r: ObjectRef) {
        self.stamp += 1;
        self.entries.insert(r.clone(), self.stamp);
        self.order.push_back((self.stamp, r));
        // drop stale order entries now and then so the queue stays bounded
        if self.order.len() > self.capacity * 4 {
            let entries = &self.entries;
            self.order.retain(|(s, r)| entries.get(r) == Some(s));
        }
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
