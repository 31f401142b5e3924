//! Upstream's `stateful_set_utils_test.go` tables, plus the revision golden vector of
//! the compatibility test data.

#![allow(clippy::type_complexity)]

use super::*;
use crate::history::{equal_revision, hash_controller_revision, revision_data_bytes};
use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;

/// Upstream `newStatefulSet(n)`.
fn new_stateful_set(replicas: i32) -> StatefulSet {
    serde_json::from_value(json!({
        "metadata": {"name": "foo", "namespace": "default", "uid": "test"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"foo": "bar"}},
            "serviceName": "governingsvc",
            "revisionHistoryLimit": 2,
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                "spec": {
                    "containers": [{"name": "nginx", "image": "nginx", "volumeMounts": [
                        {"name": "datadir", "mountPath": "/tmp/zookeeper"},
                        {"name": "home", "mountPath": "/home"}
                    ]}],
                    "volumes": [{"name": "home", "hostPath": {"path": "/tmp/home"}}]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "datadir"},
                "spec": {"resources": {"requests": {"storage": "1"}}}
            }]
        }
    }))
    .expect("set")
}

#[test]
fn parent_name_and_ordinal_table() {
    let set = new_stateful_set(3);
    let pod = new_stateful_set_pod(&set, 1);
    assert_eq!(parent_name_and_ordinal(pod_name(&pod)), ("foo", 1));
    assert_eq!(parent_name_and_ordinal("1-bar"), ("", -1));
    assert_eq!(parent_name_and_ordinal("foo"), ("", -1));
    assert_eq!(parent_name_and_ordinal("foo-"), ("", -1));
    // not a 32-bit ordinal: the parent stays, the ordinal is -1
    assert_eq!(parent_name_and_ordinal("foo-99999999999"), ("foo", -1));
    assert_eq!(parent_name_and_ordinal("a-b-12"), ("a-b", 12));
}

#[test]
fn is_member_of_table() {
    let set = new_stateful_set(3);
    let mut set2 = new_stateful_set(3);
    set2.metadata.name = Some("foo2".into());
    let pod = new_stateful_set_pod(&set, 1);
    assert!(is_member_of(&set, &pod));
    assert!(!is_member_of(&set2, &pod));
}

#[test]
fn identity_matches_table() {
    let set = new_stateful_set(3);
    let pod = new_stateful_set_pod(&set, 1);
    assert!(identity_matches(&set, &pod));
    let mut p = pod.clone();
    p.metadata.name = Some("foo".into());
    assert!(!identity_matches(&set, &p));
    let mut p = pod.clone();
    p.metadata.namespace = Some(String::new());
    assert!(!identity_matches(&set, &p));
    let mut p = pod.clone();
    p.metadata
        .labels
        .as_mut()
        .expect("labels")
        .remove(POD_NAME_LABEL);
    assert!(!identity_matches(&set, &p));
}

#[test]
fn storage_matches_table() {
    let set = new_stateful_set(3);
    let pod = new_stateful_set_pod(&set, 1);
    assert!(storage_matches(&set, &pod));
    let breaks: Vec<Box<dyn Fn(&mut Pod)>> = vec![
        Box::new(|p| p.spec.as_mut().expect("spec").volumes = None),
        Box::new(|p| {
            for v in p.spec.as_mut().expect("spec").volumes.iter_mut().flatten() {
                v.persistent_volume_claim = None;
            }
        }),
        Box::new(|p| {
            for v in p.spec.as_mut().expect("spec").volumes.iter_mut().flatten() {
                if let Some(c) = v.persistent_volume_claim.as_mut() {
                    c.claim_name = "foo".into();
                }
            }
        }),
        Box::new(|p| p.metadata.name = Some("bar".into())),
    ];
    for (i, b) in breaks.iter().enumerate() {
        let mut p = pod.clone();
        b(&mut p);
        assert!(!storage_matches(&set, &p), "break {i}");
        if i < 3 {
            // upstream TestUpdateStorage: updateStorage repairs it
            update_storage(&set, &mut p);
            assert!(storage_matches(&set, &p), "repair {i}");
        }
    }
    // claim volumes come first, the template's own volumes after
    let names: Vec<String> = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .map(|vs| vs.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["datadir", "home"]);
}

#[test]
fn update_identity_table() {
    let set = new_stateful_set(3);
    let pod = new_stateful_set_pod(&set, 1);
    let mut p = pod.clone();
    p.metadata.namespace = Some(String::new());
    assert!(!identity_matches(&set, &p));
    update_identity(&set, &mut p);
    assert!(identity_matches(&set, &p));
    let mut p = pod.clone();
    p.metadata
        .labels
        .as_mut()
        .expect("labels")
        .remove(POD_NAME_LABEL);
    update_identity(&set, &mut p);
    assert!(identity_matches(&set, &p));
    assert_eq!(label(&p, POD_INDEX_LABEL), "1");
}

fn label<'a>(p: &'a Pod, k: &str) -> &'a str {
    p.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(k))
        .map_or("", String::as_str)
}

#[test]
fn new_pod_identity() {
    let set = new_stateful_set(3);
    let pod = new_stateful_set_pod(&set, 2);
    assert_eq!(pod_name(&pod), "foo-2");
    assert_eq!(pod.metadata.generate_name.as_deref(), Some("foo-"));
    let spec = pod.spec.clone().expect("spec");
    assert_eq!(spec.hostname.as_deref(), Some("foo-2"));
    assert_eq!(spec.subdomain.as_deref(), Some("governingsvc"));
    assert_eq!(label(&pod, POD_NAME_LABEL), "foo-2");
    assert_eq!(label(&pod, POD_INDEX_LABEL), "2");
    // upstream TestNewPodControllerRef
    let r = &pod.metadata.owner_references.clone().expect("refs")[0];
    assert_eq!(
        (
            r.api_version.as_str(),
            r.kind.as_str(),
            r.name.as_str(),
            r.uid.as_str()
        ),
        ("apps/v1", "StatefulSet", "foo", "test")
    );
    assert_eq!(r.controller, Some(true));
}

#[test]
fn retention_policy_table() {
    let mut set = new_stateful_set(3);
    assert_eq!(retention_policy(&set), ("Retain".into(), "Retain".into()));
    set.spec.persistent_volume_claim_retention_policy =
        serde_json::from_value(json!({"whenScaled": "Delete", "whenDeleted": "Retain"})).ok();
    assert_eq!(retention_policy(&set), ("Retain".into(), "Delete".into()));
    set.spec.persistent_volume_claim_retention_policy = None;
    assert_eq!(retention_policy(&set), ("Retain".into(), "Retain".into()));
}

fn owner(
    api_version: &str,
    kind: &str,
    name: &str,
    uid: &str,
    controller: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller,
        block_owner_deletion: None,
    }
}

#[test]
fn matches_ref_table() {
    let o = |name: &'static str, uid: &'static str| Owner {
        api_version: "v1",
        kind: "Pod",
        name,
        uid,
    };
    let r = owner("v1", "Pod", "fred", "abc", None);
    assert!(matches_ref(&r, &o("fred", "abc")));
    assert!(
        matches_ref(&r, &o("fred", "not-matching")),
        "the UID is ignored"
    );
    assert!(!matches_ref(&r, &o("joan", "abc")));
    let r = owner("beta2", "Pod", "fred", "abc", None);
    assert!(!matches_ref(&r, &o("fred", "abc")));
}

fn claim_with(refs: Vec<OwnerReference>) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("claim".into()),
            owner_references: (!refs.is_empty()).then_some(refs),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn policy(set: &mut StatefulSet, scaled: &str, deleted: &str) {
    set.spec.persistent_volume_claim_retention_policy =
        serde_json::from_value(json!({"whenScaled": scaled, "whenDeleted": deleted})).ok();
}

fn named_set(name: &str, uid: &str, replicas: i32) -> StatefulSet {
    let mut s = new_stateful_set(replicas);
    s.metadata.name = Some(name.into());
    s.metadata.uid = Some(uid.into());
    s
}

fn named_pod(name: &str, uid: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.uid = Some(uid.into());
    p
}

fn set_ref(set: &StatefulSet) -> OwnerReference {
    coxswain_runtime::controllerutil::new_controller_ref(set)
}

// Upstream TestIsClaimOwnerUpToDate: each row under 8 variations of existing refs.
#[test]
fn is_claim_owner_up_to_date_table() {
    // (scaled, deleted, replicas, ordinal, needs pod ref, needs set ref)
    let rows = [
        ("Retain", "Retain", 2, 1, false, false),
        ("Retain", "Delete", 2, 1, false, true),
        ("Delete", "Retain", 2, 2, true, false),
        ("Delete", "Retain", 2, 1, false, false),
        ("Delete", "Delete", 2, 2, true, false),
        ("Delete", "Delete", 2, 1, false, true),
    ];
    for (scaled, deleted, replicas, ord, needs_pod, needs_set) in rows {
        let mut set = named_set("stateful-set", "ss-456", replicas);
        policy(&mut set, scaled, deleted);
        let pod = named_pod(&format!("pod-{ord}"), "pod-123");
        for set_pod_ref in [false, true] {
            for set_set_ref in [false, true] {
                for extra in [false, true] {
                    let mut refs = Vec::new();
                    if set_pod_ref {
                        refs.push(pod_owner_ref(&pod));
                    }
                    if set_set_ref {
                        refs.push(set_ref(&set));
                    }
                    if extra {
                        refs.push(owner("v1", "Pod", "rand1", "rand1", None));
                        refs.push(owner("v1", "Pod", "rand2", "rand2", None));
                    }
                    let claim = claim_with(refs);
                    let want = set_pod_ref == needs_pod && set_set_ref == needs_set;
                    assert_eq!(
                        is_claim_owner_up_to_date(&claim, &set, &pod),
                        want,
                        "{scaled}/{deleted} ord {ord} pod ref {set_pod_ref} set ref {set_set_ref} extra {extra}"
                    );
                }
            }
        }
    }
}

// Upstream TestClaimOwnerUpToDateEdgeCases.
#[test]
fn claim_owner_up_to_date_edge_cases() {
    let mut set = named_set("stateful-set", "ss-456", 1);
    let pod = named_pod("pod-1", "pod-123");
    policy(&mut set, "Delete", "Delete");
    let pod_ctrl = owner("v1", "Pod", "pod-1", "pod-123", Some(true));
    assert!(is_claim_owner_up_to_date(
        &claim_with(vec![pod_ctrl.clone()]),
        &set,
        &pod
    ));
    let pod_non = owner("v1", "Pod", "pod-1", "pod-123", None);
    assert!(!is_claim_owner_up_to_date(
        &claim_with(vec![pod_non]),
        &set,
        &pod
    ));
    let pod_stale = owner("v1", "Pod", "pod-1", "pod-stale", Some(true));
    assert!(is_claim_owner_up_to_date(
        &claim_with(vec![pod_stale]),
        &set,
        &pod
    ));
    let other = owner("v1", "Pod", "Random", "random", Some(true));
    assert!(!is_claim_owner_up_to_date(
        &claim_with(vec![pod_ctrl, other]),
        &set,
        &pod
    ));

    policy(&mut set, "Retain", "Delete");
    let set_ctrl = owner(
        "apps/v1",
        "StatefulSet",
        "stateful-set",
        "ss-456",
        Some(true),
    );
    assert!(is_claim_owner_up_to_date(
        &claim_with(vec![set_ctrl.clone()]),
        &set,
        &pod
    ));
    let set_non = owner("appsv1", "StatefulSet", "stateful-set", "ss-456", None);
    assert!(!is_claim_owner_up_to_date(
        &claim_with(vec![set_non]),
        &set,
        &pod
    ));
    let set_stale = owner(
        "apps/v1",
        "StatefulSet",
        "stateful-set",
        "set-stale",
        Some(true),
    );
    assert!(is_claim_owner_up_to_date(
        &claim_with(vec![set_stale]),
        &set,
        &pod
    ));
    let other_set = owner("apps/v1", "StatefulSet", "other", "other-uid", Some(true));
    assert!(!is_claim_owner_up_to_date(
        &claim_with(vec![set_ctrl, other_set]),
        &set,
        &pod
    ));
}

fn has_ctrl(claim: &PersistentVolumeClaim, uid: &str) -> bool {
    claim
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.uid == uid && r.controller == Some(true))
}

// Upstream TestUpdateClaimOwnerRefForSetAndPod.
#[test]
fn update_claim_owner_ref_for_set_and_pod_table() {
    // (scaled, deleted, condemned, unexpected controller, wants set ref, wants pod ref)
    let rows = [
        ("Retain", "Retain", false, false, false, false),
        ("Retain", "Delete", false, false, true, false),
        ("Delete", "Retain", false, false, false, false),
        ("Delete", "Retain", true, false, false, true),
        ("Delete", "Delete", false, false, true, false),
        ("Delete", "Delete", true, false, false, true),
        ("Delete", "Delete", true, true, false, false),
    ];
    for (scaled, deleted, condemned, unexpected, want_set, want_pod) in rows {
        let mut set = named_set("ss", "ss-123", 5);
        policy(&mut set, scaled, deleted);
        let pod = named_pod(if condemned { "pod-8" } else { "pod-1" }, "pod-456");
        for pre_pod in [false, true] {
            for pre_set in [false, true] {
                for extra in [false, true] {
                    let mut refs = Vec::new();
                    if pre_pod {
                        refs.push(pod_owner_ref(&pod));
                    }
                    if pre_set {
                        refs.push(set_ref(&set));
                    }
                    if extra {
                        refs.push(owner("custom/v1", "random", "random", "abc", None));
                    }
                    if unexpected {
                        refs.push(owner("custom/v1", "Unknown", "unknown", "xyz", Some(true)));
                    }
                    let mut claim = claim_with(refs);
                    update_claim_owner_ref_for_set_and_pod(&mut claim, &set, &pod);
                    let what = format!("{scaled}/{deleted} condemned {condemned} unexpected {unexpected} pre {pre_pod}/{pre_set}/{extra}");
                    assert_eq!(has_ctrl(&claim, "ss-123"), want_set, "{what}");
                    assert_eq!(has_ctrl(&claim, "pod-456"), want_pod, "{what}");
                    assert_eq!(
                        claim
                            .metadata
                            .owner_references
                            .iter()
                            .flatten()
                            .any(|r| r.uid == "abc"),
                        extra,
                        "{what}: other owners stay"
                    );
                }
            }
        }
    }
}

// Upstream TestUpdateClaimControllerRef.
#[test]
fn update_claim_controller_ref_table() {
    let mut set = named_set("sts", "123", 1);
    policy(&mut set, "Delete", "Delete");
    let pod = named_pod("pod-0", "456");
    let sts_ctrl = owner("apps/v1", "StatefulSet", "sts", "123", Some(true));
    let cases: Vec<(Vec<OwnerReference>, Vec<(&str, &str, &str)>)> = vec![
        (
            vec![sts_ctrl.clone(), owner("someone", "Else", "foo", "", None)],
            vec![
                ("apps/v1", "StatefulSet", "sts"),
                ("someone", "Else", "foo"),
            ],
        ),
        (
            vec![owner("apps/v1", "StatefulSet", "sts", "123", None)],
            vec![("apps/v1", "StatefulSet", "sts")],
        ),
        (
            vec![owner("someone", "else", "sts", "456", None)],
            vec![
                ("someone", "else", "sts"),
                ("apps/v1", "StatefulSet", "sts"),
            ],
        ),
        (vec![], vec![("apps/v1", "StatefulSet", "sts")]),
        (
            vec![owner("apps/v1", "StatefulSet", "sts", "", Some(true))],
            vec![],
        ),
        (
            vec![owner("apps/v1", "StatefulSet", "sts", "", None)],
            vec![],
        ),
    ];
    for (i, (refs, want)) in cases.into_iter().enumerate() {
        let mut claim = claim_with(refs);
        update_claim_owner_ref_for_set_and_pod(&mut claim, &set, &pod);
        let mut got: Vec<(String, String, String)> = claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .map(|r| (r.api_version.clone(), r.kind.clone(), r.name.clone()))
            .collect();
        let mut want: Vec<(String, String, String)> = want
            .into_iter()
            .map(|(a, k, n)| (a.into(), k.into(), n.into()))
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "case {i}");
    }
}

#[test]
fn has_owner_ref_table() {
    let meta = ObjectMeta {
        owner_references: Some(vec![
            owner("v1", "Pod", "a", "123", Some(true)),
            owner("v1", "Pod", "b", "456", Some(false)),
            owner("v1", "Pod", "c", "789", None),
        ]),
        ..Default::default()
    };
    for uid in ["123", "456", "789"] {
        assert!(has_owner_ref(&meta, uid), "{uid}");
    }
    assert!(!has_owner_ref(&meta, "012"));
}

// Upstream TestHasUnexpectedController.
#[test]
fn has_unexpected_controller_table() {
    let mut set = named_set("set", "set-uid", 3);
    let pod = named_pod("pod", "pod-uid");
    set.spec.persistent_volume_claim_retention_policy = None;
    let custom = owner("custom/v1", "Custom", "c", "c-uid", Some(true));
    assert!(!has_unexpected_controller(
        &claim_with(vec![custom.clone()]).metadata,
        &set,
        &pod
    ));
    // (refs, expected)
    let own_set = owner("apps/v1", "StatefulSet", "set", "set-uid", Some(true));
    let own_pod = owner("v1", "Pod", "pod", "pod-uid", Some(true));
    let rows: Vec<(Vec<OwnerReference>, bool)> = vec![
        (vec![custom.clone()], true),
        (
            vec![owner("custom/v1", "Custom", "c", "c-uid", Some(false))],
            false,
        ),
        (
            vec![owner("custom/v1", "Custom", "c", "c-uid", None)],
            false,
        ),
        (
            vec![owner("v1", "Pod", "simon", "simon-uid", Some(true))],
            true,
        ),
        (
            vec![owner("apps/v1", "Set", "simon", "simon-uid", Some(true))],
            true,
        ),
        (vec![own_set.clone()], false),
        (
            vec![owner("apps/v1", "StatefulSet", "set", "stale", Some(true))],
            true,
        ),
        (vec![own_pod.clone()], false),
        (vec![owner("v1", "Pod", "pod", "stale", Some(true))], true),
        (vec![own_pod.clone(), custom], true),
        (
            vec![
                own_pod,
                owner("custom/v1", "Custom", "c", "c-uid", Some(false)),
            ],
            false,
        ),
    ];
    for (scaled, deleted) in [
        ("Retain", "Delete"),
        ("Delete", "Retain"),
        ("Delete", "Delete"),
    ] {
        policy(&mut set, scaled, deleted);
        for (i, (refs, want)) in rows.iter().enumerate() {
            assert_eq!(
                has_unexpected_controller(&claim_with(refs.clone()).metadata, &set, &pod),
                *want,
                "{scaled}/{deleted} row {i}"
            );
        }
    }
}

// Upstream TestNonController.
#[test]
fn non_controller_table() {
    let set = named_set("set", "set", 3);
    let pod = named_pod("pod", "pod");
    let rows: Vec<(Vec<OwnerReference>, bool)> = vec![
        (
            vec![
                owner("v1", "Pod", "pod", "pod", Some(true)),
                owner("apps/v1", "StatefulSet", "set", "set", Some(true)),
            ],
            false,
        ),
        (
            vec![
                owner("apps/v1", "StatefulSet", "set", "set", Some(true)),
                owner("v1", "Pod", "pod", "pod", None),
            ],
            true,
        ),
        (
            vec![
                owner("apps/v1", "StatefulSet", "set", "set", None),
                owner("v1", "Pod", "pod", "pod", Some(true)),
            ],
            true,
        ),
        (
            vec![owner("apps/v1", "StatefulSet", "set", "set", Some(true))],
            false,
        ),
        (vec![owner("v1", "Pod", "pod", "pod", Some(true))], false),
        (vec![], false),
        (
            vec![owner("apps/v1", "StatefulSet", "set", "set", None)],
            true,
        ),
        (
            vec![owner("apps/v1", "StatefulSet", "set", "set", Some(false))],
            true,
        ),
        (vec![owner("v1", "pod", "pod", "pod", None)], true),
        (vec![owner("v1", "Pod", "x", "other", None)], false),
    ];
    for (i, (refs, want)) in rows.into_iter().enumerate() {
        assert_eq!(
            has_non_controller_owner(&claim_with(refs).metadata, &set, &pod),
            want,
            "row {i}"
        );
    }
}

#[test]
fn has_stale_owner_ref_table() {
    let meta = claim_with(vec![
        owner("v1", "Pod", "bob", "123", None),
        owner("v1", "Pod", "shirley", "456", None),
    ])
    .metadata;
    let o = |name: &'static str, uid: &'static str| Owner {
        api_version: "v1",
        kind: "Pod",
        name,
        uid,
    };
    assert!(!has_stale_owner_ref(&meta, &o("bob", "123")));
    assert!(has_stale_owner_ref(&meta, &o("shirley", "789")));
    assert!(!has_stale_owner_ref(&meta, &o("yvonne", "345")));
}

fn ready_pod(phase: &str, ready: Option<Timestamp>) -> Pod {
    let mut p = named_pod("foo-0", "u");
    p.status = Some(PodStatus {
        phase: Some(phase.into()),
        conditions: ready.map(|t| {
            vec![k8s_openapi::api::core::v1::PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time(t)),
                ..Default::default()
            }]
        }),
        ..Default::default()
    });
    p
}

#[test]
fn running_and_ready_and_availability() {
    let set = new_stateful_set(3);
    assert!(!is_running_and_ready(&new_stateful_set_pod(&set, 0)));
    assert!(!is_created(&new_stateful_set_pod(&set, 0)));
    assert!(!is_running_and_ready(&ready_pod("Running", None)));
    let now = Timestamp::now();
    assert!(is_running_and_ready(&ready_pod("Running", Some(now))));
    // upstream TestStatefulSetAvailability: minReadySeconds 3600
    let long_ago = now - SignedDuration::from_mins(120);
    let recent = now - SignedDuration::from_mins(30);
    assert!(is_running_and_available(
        &ready_pod("Running", Some(long_ago)),
        3600,
        now
    ));
    assert!(!is_running_and_available(
        &ready_pod("Running", Some(recent)),
        3600,
        now
    ));
    assert!(is_unavailable(
        &ready_pod("Running", Some(recent)),
        3600,
        now
    ));
    let mut terminating = ready_pod("Running", Some(long_ago));
    terminating.metadata.deletion_timestamp = Some(Time(now));
    assert!(is_unavailable(&terminating, 0, now));
}

#[test]
fn ascending_ordinal_sorts_pods() {
    let set = new_stateful_set(10);
    let mut pods: Vec<Pod> = [7, 2, 9, 0, 5, 1, 8, 3, 6, 4]
        .iter()
        .map(|&i| new_stateful_set_pod(&set, i))
        .collect();
    pods.sort_by_key(get_ordinal);
    let ords: Vec<i32> = pods.iter().map(get_ordinal).collect();
    assert_eq!(ords, (0..10).collect::<Vec<_>>());
}

// Upstream TestCreateApplyRevision.
#[test]
fn create_apply_revision() {
    let mut set = new_stateful_set(1);
    set.status = Some(StatefulSetStatus {
        collision_count: Some(0),
        ..Default::default()
    });
    let rev1 = new_revision(&set, 1, Some(0));
    let mut changed = set.clone();
    changed
        .spec
        .template
        .spec
        .as_mut()
        .expect("spec")
        .containers[0]
        .name = "foo".into();
    changed
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert("foo".into(), "bar".into());
    let rev2 = new_revision(&changed, 2, Some(0));
    assert!(!equal_revision(Some(&rev1), Some(&rev2)));
    let restored_set = apply_revision(&changed, &rev1);
    let restored = new_revision(&restored_set, 3, Some(0));
    assert!(equal_revision(Some(&rev1), Some(&restored)));
    assert_eq!(
        restored
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("foo"))
            .map(String::as_str),
        Some("bar"),
        "annotations come from the live set"
    );
}

// Upstream TestRollingUpdateApplyRevision.
#[test]
fn rolling_update_apply_revision() {
    let set = new_stateful_set(1);
    let current = new_revision(&set, 1, Some(0));
    let original = set.spec.template.clone();
    let mut updated_set = set.clone();
    updated_set
        .spec
        .template
        .spec
        .as_mut()
        .expect("spec")
        .containers[0]
        .env = serde_json::from_value(json!([{"name": "foo", "value": "bar"}])).ok();
    let update = new_revision(&updated_set, 2, Some(0));
    assert_eq!(
        apply_revision(&updated_set, &current).spec.template,
        original
    );
    assert_eq!(
        apply_revision(&set, &update).spec.template,
        updated_set.spec.template
    );
}

// Upstream TestGetPersistentVolumeClaims.
#[test]
fn get_persistent_volume_claims_table() {
    let cases: Vec<(
        Option<serde_json::Value>,
        Option<serde_json::Value>,
        Option<serde_json::Value>,
    )> = vec![
        (None, None, None),
        (
            Some(json!({"test": "test"})),
            None,
            Some(json!({"test": "test"})),
        ),
        (
            Some(json!({"name": "foo"})),
            Some(json!({"test": "test"})),
            Some(json!({"test": "test", "name": "foo"})),
        ),
        (
            Some(json!({"test": "foo"})),
            Some(json!({"test": "test"})),
            Some(json!({"test": "foo"})),
        ),
    ];
    for (i, (selector, template, want)) in cases.into_iter().enumerate() {
        let mut set = new_stateful_set(1);
        set.spec.selector.match_labels = selector.and_then(|s| serde_json::from_value(s).ok());
        set.spec.volume_claim_templates.as_mut().expect("templates")[0]
            .metadata
            .labels = template.and_then(|t| serde_json::from_value(t).ok());
        let claims = get_persistent_volume_claims(&set, 0);
        let claim = &claims["datadir"];
        assert_eq!(claim.metadata.name.as_deref(), Some("datadir-foo-0"));
        let want: Option<BTreeMap<String, String>> =
            want.and_then(|w| serde_json::from_value(w).ok());
        assert_eq!(claim.metadata.labels, want, "case {i}");
    }
}

// Upstream TestGetStatefulSetMaxUnavailable.
#[test]
fn max_unavailable_table() {
    let int = |i| Some(IntOrString::Int(i));
    let pct = |s: &str| Some(IntOrString::String(s.into()));
    let cases = [
        (None, 10, 1),
        (int(3), 10, 3),
        (int(3), 0, 3),
        (int(0), 0, 1),
        (pct("10%"), 25, 2),
        (pct("100%"), 5, 5),
        (pct("50%"), 5, 2),
        (pct("10%"), 5, 1),
        (pct("1%"), 0, 1),
        (pct("0%"), 0, 1),
    ];
    for (mu, replicas, want) in cases {
        assert_eq!(
            get_max_unavailable(mu.as_ref(), replicas),
            want,
            "{mu:?} {replicas}"
        );
    }
}

#[test]
fn claim_pod_name_table() {
    let mut set = new_stateful_set(3);
    set.metadata.name = Some("my-set".into());
    assert_eq!(claim_pod_name(&set, "volume-my-set-2"), "my-set-2");
    assert_eq!(claim_pod_name(&set, "long-volume-my-set-20"), "my-set-20");
    assert_eq!(claim_pod_name(&set, "volume-2-my-set"), "");
    assert_eq!(claim_pod_name(&set, "volume-pod-2"), "");
}

// The StatefulSet of upstream's testdata compatibility_set_1.34.0.json, as the API
// server returns it (defaults applied): its revision must be byte-identical to
// compatibility_revision_1.34.0.json, named test-776999688b.
#[test]
fn revision_of_the_compatibility_set_is_upstreams() {
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "test", "namespace": "default", "uid": "u",
                     "annotations": {"test": "value"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "foo"}},
            "serviceName": "",
            "template": {
                "metadata": {"labels": {"app": "foo"}, "annotations": {"test": "value"}},
                "spec": {
                    "containers": [{"name": "test", "image": "test", "resources": {},
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "securityContext": {},
                    "schedulerName": "default-scheduler"
                }
            },
            "volumeClaimTemplates": [{"metadata": {"name": "test"},
                "spec": {"resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }))
    .expect("set");
    let rev = new_revision(&set, 1, Some(0));
    assert_eq!(
        revision_data_bytes(&rev),
        r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#
    );
    assert_eq!(rev.metadata.name.as_deref(), Some("test-776999688b"));
    assert_eq!(hash_controller_revision(&rev, Some(0)), "776999688b");
    // the 1.33 revision (creationTimestamp: null) applied and re-encoded equals it
    let old_raw = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;
    let old = ControllerRevision {
        data: k8s_openapi::apimachinery::pkg::runtime::RawExtension(
            serde_json::from_str(old_raw).expect("raw"),
        ),
        ..Default::default()
    };
    assert!(!equal_revision(Some(&rev), Some(&old)));
    let reconstructed = new_revision(&apply_revision(&set, &old), -1, None);
    assert!(equal_revision(Some(&rev), Some(&reconstructed)));
}

// Upstream newVersionedStatefulSetPod: below the partition at the current revision.
#[test]
fn versioned_pods_follow_the_partition() {
    let mut current = new_stateful_set(3);
    current.spec.update_strategy =
        serde_json::from_value(json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))
            .ok();
    let mut update = current.clone();
    update.spec.template.spec.as_mut().expect("spec").containers[0].image = Some("new".into());
    let image = |p: &Pod| p.spec.as_ref().and_then(|s| s.containers[0].image.clone());
    for (ord, rev, img) in [(0, "cur", "nginx"), (1, "cur", "nginx"), (2, "upd", "new")] {
        let p = new_versioned_stateful_set_pod(&current, &update, "cur", "upd", ord);
        assert_eq!(label(&p, REVISION_LABEL), rev);
        assert_eq!(image(&p).as_deref(), Some(img));
    }
    // OnDelete: always the update revision
    current.spec.update_strategy = serde_json::from_value(json!({"type": "OnDelete"})).ok();
    let p = new_versioned_stateful_set_pod(&current, &update, "cur", "upd", 0);
    assert_eq!(label(&p, REVISION_LABEL), "upd");
    // no rollingUpdate: the current replicas of the status
    current.spec.update_strategy = serde_json::from_value(json!({"type": "RollingUpdate"})).ok();
    current.status = Some(StatefulSetStatus {
        current_replicas: Some(1),
        ..Default::default()
    });
    let p0 = new_versioned_stateful_set_pod(&current, &update, "cur", "upd", 0);
    let p1 = new_versioned_stateful_set_pod(&current, &update, "cur", "upd", 1);
    assert_eq!(
        (label(&p0, REVISION_LABEL), label(&p1, REVISION_LABEL)),
        ("cur", "upd")
    );
}

#[test]
fn status_rollover_and_write_rules() {
    let mut set = new_stateful_set(3);
    set.metadata.generation = Some(2);
    let mut status = StatefulSetStatus {
        observed_generation: Some(2),
        replicas: 3,
        ready_replicas: Some(3),
        updated_replicas: Some(3),
        current_replicas: Some(1),
        current_revision: Some("a".into()),
        update_revision: Some("b".into()),
        ..Default::default()
    };
    complete_rolling_update(&set, &mut status);
    assert_eq!(status.current_revision.as_deref(), Some("b"));
    assert_eq!(status.current_replicas, Some(3));
    // not all ready: no rollover
    let mut partial = StatefulSetStatus {
        ready_replicas: Some(2),
        current_revision: Some("a".into()),
        ..status.clone()
    };
    complete_rolling_update(&set, &mut partial);
    assert_eq!(partial.current_revision.as_deref(), Some("a"));
    // only the collision count changed: no write
    set.status = Some(status.clone());
    let mut same = status.clone();
    same.collision_count = Some(4);
    assert!(!inconsistent_status(&set, &same));
    same.available_replicas = Some(2);
    assert!(inconsistent_status(&set, &same));
    let mut newer = status;
    newer.observed_generation = Some(3);
    assert!(inconsistent_status(&set, &newer));
}
