use super::*;
use crate::daemon::util::tests::{
    labels, new_ds, new_node, taint, with_taints, DS_LABEL, DS_LABEL2, NODE_LABEL,
};
use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use std::collections::HashMap;

#[derive(Default)]
struct Map(HashMap<ObjectKey, Arc<DaemonSet>>);

impl DaemonSets for Map {
    fn get(&self, key: &ObjectKey) -> Option<Arc<DaemonSet>> {
        self.0.get(key).cloned()
    }
    fn in_namespace(&self, namespace: &str) -> Vec<Arc<DaemonSet>> {
        let mut v: Vec<_> = self
            .0
            .values()
            .filter(|d| d.metadata.namespace.as_deref() == Some(namespace))
            .cloned()
            .collect();
        v.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        v
    }
    fn all(&self) -> Vec<Arc<DaemonSet>> {
        self.in_namespace("default")
    }
}

struct Pods(Vec<Arc<Pod>>);

impl PodsOnNode for Pods {
    fn on_node(&self, node: &str) -> Vec<Arc<Pod>> {
        self.0
            .iter()
            .filter(|p| pod_node_index(p).first().map(String::as_str) == Some(node))
            .cloned()
            .collect()
    }
}

/// Upstream's handler fixtures: foo1 and foo2 select DS_LABEL, foo3 selects DS_LABEL2.
fn sets() -> Vec<Arc<DaemonSet>> {
    let mut foo3 = new_ds("foo3");
    foo3.spec.selector = LabelSelector {
        match_labels: Some(labels(DS_LABEL2)),
        ..Default::default()
    };
    vec![
        Arc::new(new_ds("foo1")),
        Arc::new(new_ds("foo2")),
        Arc::new(foo3),
    ]
}

fn lookup(sets: &[Arc<DaemonSet>]) -> Lookup {
    Lookup {
        sets: Arc::new(Map(sets
            .iter()
            .map(|d| (ObjectKey::of(d.as_ref()), d.clone()))
            .collect())),
    }
}

fn pod(
    name: &str,
    node: &str,
    l: &[(&str, &str)],
    owner: Option<&DaemonSet>,
    rv: &str,
) -> Arc<Pod> {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("default".into());
    p.metadata.resource_version = Some(rv.into());
    p.metadata.labels = Some(labels(l));
    p.metadata.owner_references =
        owner.map(|o| vec![coxswain_runtime::controllerutil::new_controller_ref(o)]);
    p.spec = Some(PodSpec {
        node_name: Some(node.into()),
        ..Default::default()
    });
    Arc::new(p)
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::namespaced("default", name)
}

// TestAddPod, TestAddPodOrphan, TestUpdatePod*, TestDeletePod*, TestDeleteNoDaemonPod.
#[test]
fn pod_events_wake_owner_or_matching_sets() {
    let sets = sets();
    let exp = Arc::new(ControllerExpectations::new());
    let h = PodHandler {
        expectations: exp.clone(),
        lookup: lookup(&sets),
    };
    let owned = pod("p", "node-0", DS_LABEL, Some(&sets[0]), "1");
    exp.expect_creations(&key("foo1"), 1);
    assert_eq!(h.keys(&Change::Added(owned.clone())), vec![key("foo1")]);
    assert!(exp.satisfied(&key("foo1")));
    let orphan = pod("o", "node-0", DS_LABEL, None, "1");
    assert_eq!(
        h.keys(&Change::Added(orphan.clone())),
        vec![key("foo1"), key("foo2")]
    );

    let bumped = pod("p", "node-0", DS_LABEL, Some(&sets[0]), "2");
    assert_eq!(
        h.keys(&Change::Updated {
            old: owned.clone(),
            new: bumped
        }),
        vec![key("foo1")]
    );
    let same_labels = pod("o", "node-0", DS_LABEL, None, "2");
    assert!(h
        .keys(&Change::Updated {
            old: orphan.clone(),
            new: same_labels
        })
        .is_empty());
    let relabelled = pod("o", "node-0", DS_LABEL2, None, "2");
    assert_eq!(
        h.keys(&Change::Updated {
            old: orphan.clone(),
            new: relabelled
        }),
        vec![key("foo3")]
    );
    let moved = pod("p", "node-0", DS_LABEL, Some(&sets[1]), "3");
    assert_eq!(
        h.keys(&Change::Updated {
            old: owned.clone(),
            new: moved
        }),
        vec![key("foo1"), key("foo2")]
    );
    let released = pod("p", "node-0", DS_LABEL, None, "3");
    assert_eq!(
        h.keys(&Change::Updated {
            old: owned.clone(),
            new: released
        }),
        vec![key("foo1"), key("foo2")]
    );

    exp.expect_deletions(&key("foo1"), [crate::controller_utils::pod_key(&owned)]);
    assert_eq!(h.keys(&Change::Deleted(owned.clone())), vec![key("foo1")]);
    assert!(exp.satisfied(&key("foo1")));
    assert!(h.keys(&Change::Deleted(orphan)).is_empty());
    // a pod of another kind of controller wakes nobody
    let mut rs_pod = (*pod("r", "node-0", DS_LABEL, Some(&sets[0]), "1")).clone();
    rs_pod.metadata.owner_references.as_mut().unwrap()[0].kind = "ReplicaSet".into();
    assert!(h.keys(&Change::Deleted(Arc::new(rs_pod))).is_empty());
}

#[test]
fn ready_pod_wakes_again_after_min_ready_seconds() {
    let mut ds = new_ds("foo1");
    ds.spec.min_ready_seconds = Some(5);
    let sets = vec![Arc::new(ds)];
    let h = PodHandler {
        expectations: Arc::new(ControllerExpectations::new()),
        lookup: lookup(&sets),
    };
    let old = pod("p", "node-0", DS_LABEL, Some(&sets[0]), "1");
    let mut new = (*pod("p", "node-0", DS_LABEL, Some(&sets[0]), "2")).clone();
    new.status = Some(PodStatus {
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let (now, later) = h.updated(&old, &new);
    assert_eq!(now, vec![key("foo1")]);
    assert_eq!(later, Some((key("foo1"), Duration::from_secs(6))));
}

// TestUpdateNode, TestAddNode and syncNodeUpdate's conditions.
#[test]
fn node_changes_wake_affected_sets() {
    let mut selective = new_ds("ds");
    selective.spec.template.spec.as_mut().unwrap().node_selector = Some(labels(NODE_LABEL));
    let sets = vec![Arc::new(selective.clone())];
    let h = NodeHandler {
        lookup: lookup(&sets),
        pods: Arc::new(Pods(Vec::new())),
    };
    let plain = Arc::new(new_node("node1", &[]));
    let labelled = Arc::new(new_node("node1", NODE_LABEL));
    // nothing changed: ignored
    assert!(h
        .keys(&Change::Updated {
            old: plain.clone(),
            new: plain.clone()
        })
        .is_empty());
    // labels changed so that the DaemonSet should run there
    assert_eq!(
        h.keys(&Change::Updated {
            old: plain.clone(),
            new: labelled.clone()
        }),
        vec![key("ds")]
    );
    // a new node that does not match wakes nobody; one that matches does
    assert!(h.keys(&Change::Added(plain.clone())).is_empty());
    assert_eq!(h.keys(&Change::Added(labelled.clone())), vec![key("ds")]);
    assert!(h.keys(&Change::Deleted(labelled.clone())).is_empty());

    // a plain DaemonSet with its pod on the node: a NoExecute taint wakes it, a
    // status-only change does not
    let plain_ds = Arc::new(new_ds("ds"));
    let running = pod("p", "node1", DS_LABEL, Some(&plain_ds), "1");
    let h = NodeHandler {
        lookup: lookup(std::slice::from_ref(&plain_ds)),
        pods: Arc::new(Pods(vec![running])),
    };
    let tainted = Arc::new(with_taints(
        new_node("node1", &[]),
        vec![taint("dedicated", "user1", "NoExecute")],
    ));
    assert_eq!(
        h.keys(&Change::Updated {
            old: plain.clone(),
            new: tainted.clone()
        }),
        vec![key("ds")]
    );
    // NoSchedule: the pod stays but is now misscheduled, which the status must count
    let no_schedule = Arc::new(with_taints(
        new_node("node1", &[]),
        vec![taint("dedicated", "user1", "NoSchedule")],
    ));
    assert_eq!(
        h.keys(&Change::Updated {
            old: plain.clone(),
            new: no_schedule
        }),
        vec![key("ds")]
    );
    let mut status_only = (*plain).clone();
    status_only.status = Some(Default::default());
    assert!(h
        .keys(&Change::Updated {
            old: plain.clone(),
            new: Arc::new(status_only)
        })
        .is_empty());
    // taint removed: the pod is already there, nothing to do
    assert!(h
        .keys(&Change::Updated {
            old: tainted,
            new: plain.clone()
        })
        .is_empty());
}

#[test]
fn history_events() {
    let sets = sets();
    let h = HistoryHandler {
        lookup: lookup(&sets),
    };
    let mut cr = ControllerRevision::default();
    cr.metadata.name = Some("foo1-abc".into());
    cr.metadata.namespace = Some("default".into());
    cr.metadata.resource_version = Some("1".into());
    cr.metadata.labels = Some(labels(DS_LABEL));
    let orphan = Arc::new(cr.clone());
    assert_eq!(
        h.keys(&Change::Added(orphan.clone())),
        vec![key("foo1"), key("foo2")]
    );
    cr.metadata.owner_references =
        Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
            sets[0].as_ref(),
        )]);
    let owned = Arc::new(cr.clone());
    assert!(h.keys(&Change::Added(owned.clone())).is_empty());
    assert_eq!(h.keys(&Change::Deleted(owned.clone())), vec![key("foo1")]);
    cr.metadata.resource_version = Some("2".into());
    assert_eq!(
        h.keys(&Change::Updated {
            old: owned,
            new: Arc::new(cr)
        }),
        vec![key("foo1")]
    );
    assert!(h.keys(&Change::Deleted(orphan)).is_empty());
}
