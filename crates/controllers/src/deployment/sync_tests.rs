//! Unit tests of `sync.rs`, ported from upstream `sync_test.go`.

use std::collections::HashMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::*;
use crate::deployment::testutil::*;

struct ScaleCase {
    name: &'static str,
    deployment: Deployment,
    old_deployment: Deployment,
    new_rs: Option<ReplicaSet>,
    old_rss: Vec<ReplicaSet>,
    expected_new: Option<i32>,
    expected_old: Vec<i32>,
    desired_replicas_annotations: HashMap<&'static str, i32>,
}

fn dep(replicas: i32, surge: Option<i32>, unavail: Option<i32>) -> Deployment {
    new_deployment(
        "foo",
        replicas,
        None,
        surge.map(IntOrString::Int),
        unavail.map(IntOrString::Int),
        &[],
    )
}

// Ported from upstream sync_test.go TestScale.
#[test]
fn scale_table() {
    let new_ts = Some(at(7200));
    let old_ts = Some(at(3600));
    let older_ts = Some(at(0));
    let updated_template = |replicas: i32| {
        let mut d = new_deployment("foo", replicas, None, None, None, &[("foo", "bar")]);
        if let Some(l) = d
            .spec
            .template
            .metadata
            .as_mut()
            .and_then(|m| m.labels.as_mut())
        {
            l.insert("another".into(), "label".into());
        }
        d
    };
    let case =
        |name, deployment, old_deployment, new_rs, old_rss, expected_new, expected_old| ScaleCase {
            name,
            deployment,
            old_deployment,
            new_rs,
            old_rss,
            expected_new,
            expected_old,
            desired_replicas_annotations: HashMap::new(),
        };
    let mut cases = vec![
        case(
            "normal scaling event: 10 -> 12",
            dep(12, None, None),
            dep(10, None, None),
            Some(rs("foo-v1", 10, &[], new_ts.clone())),
            vec![],
            Some(12),
            vec![],
        ),
        case(
            "normal scaling event: 10 -> 5",
            dep(5, None, None),
            dep(10, None, None),
            Some(rs("foo-v1", 10, &[], new_ts.clone())),
            vec![],
            Some(5),
            vec![],
        ),
        case(
            "proportional scaling: 5 -> 10",
            dep(10, None, None),
            dep(5, None, None),
            Some(rs("foo-v2", 2, &[], new_ts.clone())),
            vec![rs("foo-v1", 3, &[], old_ts.clone())],
            Some(4),
            vec![6],
        ),
        case(
            "proportional scaling: 5 -> 3",
            dep(3, None, None),
            dep(5, None, None),
            Some(rs("foo-v2", 2, &[], new_ts.clone())),
            vec![rs("foo-v1", 3, &[], old_ts.clone())],
            Some(1),
            vec![2],
        ),
        case(
            "proportional scaling: 9 -> 4",
            dep(4, None, None),
            dep(9, None, None),
            Some(rs("foo-v2", 8, &[], new_ts.clone())),
            vec![rs("foo-v1", 1, &[], old_ts.clone())],
            Some(4),
            vec![0],
        ),
        case(
            "proportional scaling: 7 -> 10",
            dep(10, None, None),
            dep(7, None, None),
            Some(rs("foo-v3", 2, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 3, &[], old_ts.clone()),
                rs("foo-v1", 2, &[], older_ts.clone()),
            ],
            Some(3),
            vec![4, 3],
        ),
        case(
            "proportional scaling: 13 -> 8",
            dep(8, None, None),
            dep(13, None, None),
            Some(rs("foo-v3", 2, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 8, &[], old_ts.clone()),
                rs("foo-v1", 3, &[], older_ts.clone()),
            ],
            Some(1),
            vec![5, 2],
        ),
        // scales up the new replica set
        case(
            "leftover distribution: 3 -> 4",
            dep(4, None, None),
            dep(3, None, None),
            Some(rs("foo-v3", 1, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 1, &[], old_ts.clone()),
                rs("foo-v1", 1, &[], older_ts.clone()),
            ],
            Some(2),
            vec![1, 1],
        ),
        // scales down the older replica set
        case(
            "leftover distribution: 3 -> 2",
            dep(2, None, None),
            dep(3, None, None),
            Some(rs("foo-v3", 1, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 1, &[], old_ts.clone()),
                rs("foo-v1", 1, &[], older_ts.clone()),
            ],
            Some(1),
            vec![1, 0],
        ),
        // scales up the latest replica set first
        case(
            "proportional scaling (no new rs): 4 -> 5",
            dep(5, None, None),
            dep(4, None, None),
            None,
            vec![
                rs("foo-v2", 2, &[], old_ts.clone()),
                rs("foo-v1", 2, &[], older_ts.clone()),
            ],
            None,
            vec![3, 2],
        ),
        // scales down to zero
        case(
            "proportional scaling: 6 -> 0",
            dep(0, None, None),
            dep(6, None, None),
            Some(rs("foo-v3", 3, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 2, &[], old_ts.clone()),
                rs("foo-v1", 1, &[], older_ts.clone()),
            ],
            Some(0),
            vec![0, 0],
        ),
        // scales up from zero
        case(
            "proportional scaling: 0 -> 6",
            dep(6, None, None),
            dep(6, None, None),
            Some(rs("foo-v3", 0, &[], new_ts.clone())),
            vec![
                rs("foo-v2", 0, &[], old_ts.clone()),
                rs("foo-v1", 0, &[], older_ts.clone()),
            ],
            Some(6),
            vec![0, 0],
        ),
        case(
            "deployment with surge pods",
            dep(20, Some(2), None),
            dep(10, Some(2), None),
            Some(rs("foo-v2", 6, &[], new_ts.clone())),
            vec![rs("foo-v1", 6, &[], old_ts.clone())],
            Some(11),
            vec![11],
        ),
        case(
            "change both surge and size",
            dep(50, Some(6), None),
            dep(10, Some(3), None),
            Some(rs("foo-v2", 5, &[], new_ts.clone())),
            vec![rs("foo-v1", 8, &[], old_ts.clone())],
            Some(22),
            vec![34],
        ),
        case(
            "change both size and template",
            updated_template(14),
            new_deployment("foo", 10, None, None, None, &[("foo", "bar")]),
            None,
            vec![
                rs("foo-v2", 7, &[], new_ts.clone()),
                rs("foo-v1", 3, &[], old_ts.clone()),
            ],
            None,
            vec![10, 4],
        ),
        case(
            "saturated but broken new replica set does not affect old pods",
            dep(2, Some(1), Some(1)),
            dep(2, Some(1), Some(1)),
            Some(rs_with_available("foo-v2", 2, 2, 0)),
            vec![rs("foo-v1", 1, &[], old_ts.clone())],
            Some(2),
            vec![1],
        ),
    ];
    // deployment.spec.replicas == 3 (one replica in each RS) scaled to 5; foo-v2 was last
    // scaled for 3 replicas
    let mut failed = case(
        "failed rs update",
        dep(5, None, None),
        dep(5, None, None),
        Some(rs("foo-v3", 2, &[], new_ts)),
        vec![rs("foo-v2", 1, &[], old_ts), rs("foo-v1", 1, &[], older_ts)],
        Some(2),
        vec![2, 1],
    );
    failed.desired_replicas_annotations.insert("foo-v2", 3);
    cases.push(failed);

    for mut c in cases {
        let annotate = |rs: &mut ReplicaSet, c: &ScaleCase| {
            let old_replicas = replicas(&c.old_deployment);
            let desired = c
                .desired_replicas_annotations
                .get(name(&rs.metadata))
                .copied()
                .unwrap_or(old_replicas);
            set_replicas_annotations(rs, desired, desired + max_surge(&c.old_deployment));
        };
        let mut new_rs = c.new_rs.take();
        if let Some(n) = new_rs.as_mut() {
            annotate(n, &c);
        }
        let mut old_rss = std::mem::take(&mut c.old_rss);
        for rs in old_rss.iter_mut() {
            annotate(rs, &c);
        }
        let mut sizes: HashMap<String, i32> = new_rs
            .iter()
            .chain(old_rss.iter())
            .map(|rs| (name(&rs.metadata).to_string(), rs_replicas(rs)))
            .collect();
        for (n, to) in plan_scale(&c.deployment, new_rs.as_ref(), &old_rss) {
            sizes.insert(n, to);
        }
        if let (Some(want), Some(n)) = (c.expected_new, new_rs.as_ref()) {
            assert_eq!(sizes[name(&n.metadata)], want, "{}: new", c.name);
        }
        assert_eq!(c.expected_old.len(), old_rss.len(), "{}", c.name);
        for (rs, want) in old_rss.iter().zip(&c.expected_old) {
            assert_eq!(
                sizes[name(&rs.metadata)],
                *want,
                "{}: old {}",
                c.name,
                name(&rs.metadata)
            );
        }
    }
}

// Upstream TestScale "proportional scaling: 0 -> 6" also checks that the old replica sets
// were not written: the writer skips entries whose size and annotations are right.
#[test]
fn scale_plan_leaves_settled_replica_sets_alone() {
    let d = dep(6, None, None);
    let mut v3 = rs("foo-v3", 0, &[], Some(at(2)));
    let mut v2 = rs("foo-v2", 0, &[], Some(at(1)));
    set_replicas_annotations(&mut v3, 6, 6);
    set_replicas_annotations(&mut v2, 6, 6);
    let plan = plan_scale(&d, Some(&v3), std::slice::from_ref(&v2));
    assert_eq!(plan, vec![("foo-v3".to_string(), 6)]);
    assert!(!replicas_annotations_need_update(&v2, 6, 6));
}

fn cleanup_deletions(old: &[ReplicaSet], limit: i32) -> Vec<String> {
    let d = new_deployment("foo", 1, Some(limit), None, None, &[("foo", "bar")]);
    let mut got = plan_cleanup(old, &d);
    got.sort();
    got
}

// Ported from upstream sync_test.go TestDeploymentController_cleanupDeployment.
#[test]
fn cleanup_deployment_table() {
    let mut already_deleted = rs_with_status("foo-1", 0, 0);
    already_deleted.metadata.deletion_timestamp = Some(at(0));
    let cases: Vec<(Vec<ReplicaSet>, i32, usize)> = vec![
        (
            vec![
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 0),
                rs_with_status("foo-3", 0, 0),
            ],
            1,
            2,
        ),
        // only the replica set with spec.replicas = status.replicas = 0 goes
        (
            vec![
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 1),
                rs_with_status("foo-3", 1, 0),
                rs_with_status("foo-4", 1, 1),
            ],
            0,
            1,
        ),
        (
            vec![rs_with_status("foo-1", 0, 0), rs_with_status("foo-2", 0, 0)],
            0,
            2,
        ),
        (
            vec![rs_with_status("foo-1", 1, 1), rs_with_status("foo-2", 1, 1)],
            0,
            0,
        ),
        (vec![already_deleted], 0, 0),
        // unlimited history
        (
            vec![
                rs_with_status("foo-1", 0, 0),
                rs_with_status("foo-2", 0, 0),
                rs_with_status("foo-3", 0, 0),
            ],
            i32::MAX,
            0,
        ),
    ];
    for (i, (old, limit, want)) in cases.into_iter().enumerate() {
        assert_eq!(cleanup_deletions(&old, limit).len(), want, "scenario {i}");
    }
    // a ReplicaSet whose controller has not observed its latest spec stays
    let mut unobserved = rs_with_status("foo-1", 0, 0);
    unobserved.metadata.generation = Some(2);
    assert!(cleanup_deletions(&[unobserved], 0).is_empty());
}

// Ported from upstream sync_test.go TestDeploymentController_cleanupDeploymentOrder.
#[test]
fn cleanup_deployment_order_table() {
    let with_rev = |name: &str, replicas: i32, created: i64, rev: &str| {
        let mut r = rs(name, replicas, &[("foo", "bar")], Some(at(created)));
        if !rev.is_empty() {
            r.metadata.annotations =
                Some([(REVISION_ANNOTATION.to_string(), rev.to_string())].into());
        }
        r.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
            replicas,
            ..Default::default()
        });
        r
    };
    // creation order is always foo-1 < foo-2 < foo-3 < foo-4
    let cases: Vec<(Vec<ReplicaSet>, i32, Vec<&str>)> = vec![
        (
            vec![with_rev("foo-1", 0, -60, "1"), with_rev("foo-2", 0, 0, "2")],
            1,
            vec!["foo-1"],
        ),
        (
            vec![with_rev("foo-1", 0, -60, "2"), with_rev("foo-2", 0, 0, "1")],
            1,
            vec!["foo-2"],
        ),
        (
            vec![with_rev("foo-1", 0, -60, "1"), with_rev("foo-2", 0, 0, "")],
            1,
            vec!["foo-2"],
        ),
        (
            vec![with_rev("foo-1", 0, -60, ""), with_rev("foo-2", 0, 0, "2")],
            1,
            vec!["foo-1"],
        ),
        (
            vec![
                with_rev("foo-1", 1, -60, "1"),
                with_rev("foo-2", 0, 0, "2"),
                with_rev("foo-3", 0, 60, "3"),
            ],
            1,
            vec!["foo-2"],
        ),
        (
            vec![
                with_rev("foo-1", 1, -60, "1"),
                with_rev("foo-2", 1, 0, "2"),
                with_rev("foo-3", 0, 60, "3"),
            ],
            1,
            vec![],
        ),
        (
            vec![
                with_rev("foo-1", 0, -60, "3"),
                with_rev("foo-2", 0, 0, "1"),
                with_rev("foo-3", 0, 60, "4"),
                with_rev("foo-4", 0, 120, "2"),
            ],
            2,
            vec!["foo-2", "foo-4"],
        ),
    ];
    for (i, (old, limit, want)) in cases.into_iter().enumerate() {
        assert_eq!(cleanup_deletions(&old, limit), want, "scenario {i}");
    }
}

#[test]
fn new_replica_set_carries_hash_owner_and_annotations() {
    let mut d = new_deployment(
        "web",
        3,
        None,
        Some(IntOrString::Int(1)),
        Some(IntOrString::Int(0)),
        &[("app", "web")],
    );
    d.metadata.annotations = Some(
        [
            (
                CHANGE_CAUSE_ANNOTATION.to_string(),
                "kubectl set image".to_string(),
            ),
            (LAST_APPLIED_CONFIG_ANNOTATION.to_string(), "{}".to_string()),
        ]
        .into(),
    );
    let rs = new_replica_set_for(&d, &[], "1").expect("valid");
    let hash = compute_hash(&template(&d), None);
    assert_eq!(name(&rs.metadata), format!("web-{hash}"));
    let spec = &rs.spec;
    assert_eq!(
        spec.replicas,
        Some(3),
        "nothing else runs: straight to replicas"
    );
    assert_eq!(
        spec.selector
            .match_labels
            .as_ref()
            .and_then(|m| m.get(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY)),
        Some(&hash)
    );
    assert_eq!(
        spec.selector
            .match_labels
            .as_ref()
            .and_then(|m| m.get("app"))
            .map(String::as_str),
        Some("web")
    );
    let tl = rs_template(&rs)
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    assert_eq!(tl.get(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY), Some(&hash));
    assert_eq!(
        rs.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY)),
        Some(&hash)
    );
    assert!(is_controlled_by(&rs.metadata, "uid-web"));
    assert_eq!(annotation(&rs.metadata, REVISION_ANNOTATION), Some("1"));
    assert_eq!(
        annotation(&rs.metadata, DESIRED_REPLICAS_ANNOTATION),
        Some("3")
    );
    assert_eq!(annotation(&rs.metadata, MAX_REPLICAS_ANNOTATION), Some("4"));
    assert_eq!(
        annotation(&rs.metadata, CHANGE_CAUSE_ANNOTATION),
        Some("kubectl set image")
    );
    assert_eq!(
        annotation(&rs.metadata, LAST_APPLIED_CONFIG_ANNOTATION),
        None
    );
    // a rollout next to an old ReplicaSet starts within the surge
    let old = rs_with_available("web-old", 3, 3, 3);
    let rs = new_replica_set_for(&d, std::slice::from_ref(&old), "2").expect("valid");
    assert_eq!(rs_replicas(&rs), 1);
    // a collision moves the name
    d.status = Some(DeploymentStatus {
        collision_count: Some(1),
        ..Default::default()
    });
    let moved = new_replica_set_for(&d, &[], "1").expect("valid");
    assert_ne!(name(&moved.metadata), format!("web-{hash}"));
}

#[test]
fn status_counts_and_availability() {
    let d = new_deployment(
        "web",
        3,
        None,
        Some(IntOrString::Int(1)),
        Some(IntOrString::Int(1)),
        &[],
    );
    let mut d = d;
    d.metadata.generation = Some(4);
    let new = rs_with_available("web-new", 2, 2, 1);
    let old = rs_with_available("web-old", 2, 2, 2);
    let s = calculate_status(&[&old, &new], Some(&new), &d, Timestamp::now());
    assert_eq!(s.observed_generation, Some(4));
    assert_eq!(s.replicas, Some(4));
    assert_eq!(s.updated_replicas, Some(2));
    assert_eq!(s.available_replicas, Some(3));
    assert_eq!(s.unavailable_replicas, Some(1));
    let avail = get_condition(&s, AVAILABLE).expect("available");
    assert_eq!(
        (avail.status.as_deref(), avail.reason.as_deref()),
        (Some("True"), Some(MINIMUM_REPLICAS_AVAILABLE))
    );
    let none = rs_with_available("web-new", 3, 3, 1);
    let s = calculate_status(&[&none], Some(&none), &d, Timestamp::now());
    let avail = get_condition(&s, AVAILABLE).expect("available");
    assert_eq!(
        (avail.status.as_deref(), avail.reason.as_deref()),
        (Some("False"), Some(MINIMUM_REPLICAS_UNAVAILABLE))
    );
    assert_eq!(s.unavailable_replicas, Some(2));
    // zero counts are omitted, as a server stores them; writing it again is no change
    let empty = calculate_status(&[], None, &d, Timestamp::now());
    assert_eq!(empty.replicas, None);
    let mut stored = d.clone();
    let mut written = empty.clone();
    written.replicas = Some(0);
    stored.status = Some(written);
    assert!(status_unchanged(&stored, &empty));
}
