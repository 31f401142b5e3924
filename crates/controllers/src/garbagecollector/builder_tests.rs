//! Graph builder cases, after upstream `garbagecollector_test.go` (`TestProcessEvent`,
//! `TestConflictingData`, the transition tests): events in, graph and queues out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::core::PartialObjectMeta;

use coxswain_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimitedQueue};

use super::*;

struct Fixture {
    graph: Graph,
    builder: GraphBuilder,
    delete: RateLimitedQueue<Item>,
    orphan: RateLimitedQueue<Item>,
    absent: Arc<Mutex<AbsentOwnerCache>>,
}

fn fixture() -> Fixture {
    // no delays: what is rate-limited is at once visible to `drain`
    let none = || ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::ZERO);
    let delete = RateLimitedQueue::with_rate_limiter(none());
    let orphan = RateLimitedQueue::with_rate_limiter(none());
    let absent = Arc::new(Mutex::new(AbsentOwnerCache::new(500)));
    Fixture {
        graph: Graph::default(),
        builder: GraphBuilder::new(delete.clone(), orphan.clone(), absent.clone(), None),
        delete,
        orphan,
        absent,
    }
}

fn gvk(api_version: &str, kind: &str) -> Arc<Gvk> {
    Arc::new(Gvk {
        api_version: api_version.into(),
        kind: kind.into(),
    })
}

fn uid(n: u32) -> String {
    format!("00000000-0000-0000-0000-{n:012}")
}

fn oref(kind: &str, name: &str, u: u32, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid(u),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

fn meta(ns: &str, name: &str, u: u32, owners: Vec<OwnerReference>) -> Meta {
    PartialObjectMeta {
        types: None,
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: (!ns.is_empty()).then(|| ns.to_string()),
            uid: Some(uid(u)),
            owner_references: (!owners.is_empty()).then_some(owners),
            ..ObjectMeta::default()
        },
        _phantom: Default::default(),
    }
}

fn deleting(mut m: Meta, finalizer: &str) -> Meta {
    m.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::now()));
    m.metadata.finalizers = Some(vec![finalizer.to_string()]);
    m
}

impl Fixture {
    fn send(&mut self, kind: EventKind, k: &str, obj: Meta, old: Option<Meta>) {
        let ev = GraphEvent::Observed {
            kind,
            gvk: gvk("v1", k),
            obj: Arc::new(obj),
            old: old.map(Arc::new),
        };
        self.builder.process(&mut self.graph, ev);
    }

    fn add(&mut self, k: &str, obj: Meta) {
        self.send(EventKind::Add, k, obj, None);
    }

    fn node(&self, u: u32) -> &Node {
        self.graph.get(&Uid::parse(&uid(u))).expect("node in graph")
    }

    fn has(&self, u: u32) -> bool {
        self.graph.get(&Uid::parse(&uid(u))).is_some()
    }

    fn dependents(&self, u: u32) -> Vec<String> {
        let mut v: Vec<String> = self
            .graph
            .dependents(&Uid::parse(&uid(u)))
            .iter()
            .map(|d| d.identity.name.to_string())
            .collect();
        v.sort();
        v
    }
}

/// Names in a queue, in order (the queue is drained).
async fn drain(q: &RateLimitedQueue<Item>) -> Vec<String> {
    let mut out = Vec::new();
    while !q.is_empty() {
        let Some(item) = q.get().await else { break };
        out.push(item.name.to_string());
        q.done(&item);
    }
    out
}

#[tokio::test]
async fn unknown_owner_becomes_a_virtual_node_then_observed() {
    let mut f = fixture();
    f.add(
        "Secret",
        meta("ns", "child", 2, vec![oref("ConfigMap", "owner", 1, false)]),
    );
    assert!(f.node(1).virtual_);
    assert_eq!(f.node(1).identity.ns(), "ns"); // placed in the dependent's namespace
    assert_eq!(f.dependents(1), ["child"]);
    // the collector is asked to verify the virtual owner
    assert_eq!(drain(&f.delete).await, ["owner"]);
    f.add("ConfigMap", meta("ns", "owner", 1, vec![]));
    assert!(!f.node(1).virtual_);
    assert_eq!(f.dependents(1), ["child"]);
    assert!(drain(&f.delete).await.is_empty());
    assert_eq!(f.graph.len(), 2);
}

#[tokio::test]
async fn deleting_an_owner_queues_its_dependents_and_marks_it_absent() {
    let mut f = fixture();
    f.add("ConfigMap", meta("ns", "owner", 1, vec![]));
    f.add(
        "Secret",
        meta("ns", "a", 2, vec![oref("ConfigMap", "owner", 1, false)]),
    );
    f.add(
        "Secret",
        meta("ns", "b", 3, vec![oref("ConfigMap", "owner", 1, false)]),
    );
    assert!(drain(&f.delete).await.is_empty());
    f.send(
        EventKind::Delete,
        "ConfigMap",
        meta("ns", "owner", 1, vec![]),
        None,
    );
    assert!(!f.has(1));
    let mut queued = drain(&f.delete).await;
    queued.sort();
    assert_eq!(queued, ["a", "b"]);
    let owner = f
        .builder
        .identity(&gvk("v1", "ConfigMap"), &meta("ns", "owner", 1, vec![]));
    assert!(f.absent.lock().unwrap().has(&owner));
    // deleting a dependent takes it out of nobody's list (the owner is gone) quietly
    f.send(
        EventKind::Delete,
        "Secret",
        meta("ns", "a", 2, vec![]),
        None,
    );
    assert!(!f.has(2) && f.has(3));
}

#[tokio::test]
async fn foreground_deletion_marks_the_owner_and_queues_dependents() {
    let mut f = fixture();
    let owner = meta("ns", "owner", 1, vec![]);
    f.add("ConfigMap", owner.clone());
    f.add(
        "Secret",
        meta("ns", "a", 2, vec![oref("ConfigMap", "owner", 1, true)]),
    );
    f.add(
        "Secret",
        meta("ns", "b", 3, vec![oref("ConfigMap", "owner", 1, false)]),
    );
    let now = deleting(owner.clone(), FINALIZER_DELETE_DEPENDENTS);
    f.send(EventKind::Update, "ConfigMap", now.clone(), Some(owner));
    assert!(f.node(1).deleting_dependents && f.node(1).being_deleted);
    let mut queued = drain(&f.delete).await;
    queued.sort();
    assert_eq!(queued, ["a", "b", "owner"]);
    assert_eq!(
        f.graph
            .blocking_dependents(&Uid::parse(&uid(1)))
            .iter()
            .map(|d| d.identity.name.to_string())
            .collect::<Vec<_>>(),
        ["a"]
    );
    // a repeated update with the same state is no new transition
    f.send(EventKind::Update, "ConfigMap", now.clone(), Some(now));
    assert!(drain(&f.delete).await.is_empty());
    // the last dependent leaving wakes the owner waiting for it
    f.send(
        EventKind::Delete,
        "Secret",
        meta("ns", "a", 2, vec![oref("ConfigMap", "owner", 1, true)]),
        None,
    );
    assert_eq!(drain(&f.delete).await, ["owner"]);
}

#[tokio::test]
async fn orphan_deletion_goes_to_the_orphan_queue() {
    let mut f = fixture();
    let owner = meta("ns", "owner", 1, vec![]);
    f.add("ConfigMap", owner.clone());
    f.send(
        EventKind::Update,
        "ConfigMap",
        deleting(owner.clone(), FINALIZER_ORPHAN_DEPENDENTS),
        Some(owner),
    );
    assert_eq!(drain(&f.orphan).await, ["owner"]);
    assert!(drain(&f.delete).await.is_empty());
    // an object first seen while already being orphaned is queued too
    f.add(
        "ConfigMap",
        deleting(meta("ns", "late", 5, vec![]), FINALIZER_ORPHAN_DEPENDENTS),
    );
    assert_eq!(drain(&f.orphan).await, ["late"]);
}

#[tokio::test]
async fn removing_or_unblocking_a_reference_wakes_the_owner() {
    let mut f = fixture();
    f.add("ConfigMap", meta("ns", "owner", 1, vec![]));
    f.add("ConfigMap", meta("ns", "other", 9, vec![]));
    let blocked = meta("ns", "a", 2, vec![oref("ConfigMap", "owner", 1, true)]);
    f.add("Secret", blocked.clone());
    assert!(drain(&f.delete).await.is_empty());
    let mut unblocked = oref("ConfigMap", "owner", 1, false);
    unblocked.block_owner_deletion = Some(false);
    let now = meta("ns", "a", 2, vec![unblocked]);
    f.send(EventKind::Update, "Secret", now.clone(), Some(blocked));
    assert_eq!(drain(&f.delete).await, ["owner"]);
    // moving to another owner: removed from the old owner's dependents, added to the new
    let moved = meta("ns", "a", 2, vec![oref("ConfigMap", "other", 9, true)]);
    f.send(EventKind::Update, "Secret", moved, Some(now));
    assert!(f.dependents(1).is_empty());
    assert_eq!(f.dependents(9), ["a"]);
    assert!(drain(&f.delete).await.is_empty()); // the removed reference did not block
}

#[tokio::test]
async fn owner_in_another_namespace_makes_the_dependent_suspect() {
    let mut f = fixture();
    f.add("ConfigMap", meta("ns1", "owner", 1, vec![]));
    // good parent observed first, then the bad child
    f.add(
        "Secret",
        meta(
            "ns2",
            "child",
            2,
            vec![oref("ConfigMap", "owner", 1, false)],
        ),
    );
    assert_eq!(drain(&f.delete).await, ["child"]);
    // bad child first, then the parent is observed in another namespace
    let mut g = fixture();
    g.add(
        "Secret",
        meta(
            "ns2",
            "child",
            2,
            vec![oref("ConfigMap", "owner", 1, false)],
        ),
    );
    assert_eq!(drain(&g.delete).await, ["owner"]);
    g.add("ConfigMap", meta("ns1", "owner", 1, vec![]));
    assert_eq!(g.node(1).identity.ns(), "ns1");
    assert_eq!(drain(&g.delete).await, ["child"]);
}

#[tokio::test]
async fn cluster_scoped_virtual_owner_of_a_namespaced_dependent_is_verified() {
    let mut f = fixture();
    f.add(
        "Secret",
        meta("", "cluster-child", 2, vec![oref("Node", "n", 1, false)]),
    );
    assert_eq!(drain(&f.delete).await, ["n"]);
    // a namespaced child of the (still virtual, cluster-scoped) owner is suspect
    f.add(
        "Secret",
        meta("ns", "child", 3, vec![oref("Node", "n", 1, false)]),
    );
    assert_eq!(drain(&f.delete).await, ["child"]);
}

#[tokio::test]
async fn virtual_delete_of_a_disputed_virtual_node_switches_identity() {
    let mut f = fixture();
    f.add(
        "Secret",
        meta("ns", "c1", 2, vec![oref("Parent", "p", 1, false)]),
    );
    let mut alt = oref("Parent", "p", 1, false);
    alt.api_version = "v2".into();
    f.add("Secret", meta("ns", "c2", 3, vec![alt]));
    // c2 names the (virtual) owner otherwise: verified too
    assert_eq!(drain(&f.delete).await, ["p", "c2"]);
    let absent = f.node(1).identity.clone();
    assert_eq!(&*absent.api_version, "v1");
    f.builder
        .process(&mut f.graph, GraphEvent::VirtualDelete(absent.clone()));
    // kept, with the other identity; the dependent matching the absent one is queued
    assert!(f.has(1));
    assert_eq!(&*f.node(1).identity.api_version, "v2");
    assert!(f.absent.lock().unwrap().has(&absent));
    let mut queued = drain(&f.delete).await;
    queued.sort();
    assert_eq!(queued, ["c1", "p"]);
    // once nobody disputes it, a virtual delete removes it
    f.send(
        EventKind::Delete,
        "Secret",
        meta("ns", "c1", 2, vec![oref("Parent", "p", 1, false)]),
        None,
    );
    let now = f.node(1).identity.clone();
    f.builder
        .process(&mut f.graph, GraphEvent::VirtualDelete(now));
    assert!(!f.has(1));
    assert_eq!(drain(&f.delete).await, ["c2"]);
}

#[tokio::test]
async fn virtual_delete_never_removes_an_observed_node_named_otherwise() {
    let mut f = fixture();
    f.add("ConfigMap", meta("ns", "owner", 1, vec![]));
    let wrong = Arc::new(ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "someone-else".into(),
        uid: Uid::parse(&uid(1)),
        namespace: Some("ns".into()),
    });
    f.builder
        .process(&mut f.graph, GraphEvent::VirtualDelete(wrong));
    assert!(f.has(1));
    // the matching identity removes it
    let right = f.node(1).identity.clone();
    f.builder
        .process(&mut f.graph, GraphEvent::VirtualDelete(right));
    assert!(!f.has(1));
}

#[tokio::test]
async fn self_references_and_cycles_do_not_hang() {
    let mut f = fixture();
    f.add(
        "ConfigMap",
        meta("ns", "me", 1, vec![oref("ConfigMap", "me", 1, true)]),
    );
    assert_eq!(f.dependents(1), ["me"]);
    f.add(
        "ConfigMap",
        meta("ns", "a", 2, vec![oref("ConfigMap", "b", 3, true)]),
    );
    f.add(
        "ConfigMap",
        meta("ns", "b", 3, vec![oref("ConfigMap", "a", 2, true)]),
    );
    drain(&f.delete).await;
    f.send(
        EventKind::Delete,
        "ConfigMap",
        meta("ns", "a", 2, vec![oref("ConfigMap", "b", 3, true)]),
        None,
    );
    assert_eq!(drain(&f.delete).await, ["b"]);
    f.send(
        EventKind::Delete,
        "ConfigMap",
        meta("ns", "me", 1, vec![oref("ConfigMap", "me", 1, true)]),
        None,
    );
    assert!(!f.has(1));
}

#[tokio::test]
async fn kind_changes_update_the_identity() {
    let mut f = fixture();
    f.add("ConfigMap", meta("ns", "x", 1, vec![]));
    f.send(
        EventKind::Update,
        "OtherKind",
        meta("ns", "x", 1, vec![]),
        Some(meta("ns", "x", 1, vec![])),
    );
    assert_eq!(&*f.node(1).identity.kind, "OtherKind");
}
