//! Graph cases, after upstream `graph_builder_test.go` / `garbagecollector_test.go`
//! (`TestGetAlternateOwnerIdentity` is ported whole).

use super::*;

fn id(api_version: &str, kind: &str, ns: &str, name: &str, uid: &str) -> ObjectRef {
    ObjectRef {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: Uid::parse(uid),
        namespace: (!ns.is_empty()).then(|| Arc::from(ns)),
    }
}

fn owner(r: &ObjectRef) -> OwnerRef {
    OwnerRef {
        api_version: r.api_version.clone(),
        kind: r.kind.clone(),
        name: r.name.clone(),
        uid: r.uid.clone(),
        controller: None,
        block_owner_deletion: None,
    }
}

fn node(identity: ObjectRef, owners: Vec<ObjectRef>) -> NodeView {
    NodeView {
        identity: Arc::new(identity),
        owners: owners.iter().map(owner).collect(),
        being_deleted: false,
        deleting_dependents: false,
        virtual_: false,
        dependents: 0,
    }
}

#[test]
fn uids_round_trip() {
    for s in [
        "8c7f4a3e-2b1d-4c5e-9f60-123456789abc",
        "00000000-0000-0000-0000-000000000000",
        "8C7F4A3E-2B1D-4C5E-9F60-123456789ABC",
        "wrong-uid",
        "",
        "8c7f4a3e2b1d4c5e9f60123456789abc",
    ] {
        assert_eq!(Uid::parse(s).to_string(), s);
    }
    assert!(matches!(
        Uid::parse("8c7f4a3e-2b1d-4c5e-9f60-123456789abc"),
        Uid::Uuid(_)
    ));
    assert!(matches!(
        Uid::parse("8C7F4A3E-2B1D-4C5E-9F60-123456789ABC"),
        Uid::Other(_)
    ));
    assert!(std::mem::size_of::<Uid>() <= 24);
}

#[test]
fn reference_diffs_find_added_removed_and_changed() {
    let a = owner(&id("v1", "A", "", "a", "1"));
    let b = owner(&id("v1", "B", "", "b", "2"));
    let c = owner(&id("v1", "C", "", "c", "3"));
    let mut b2 = b.clone();
    b2.block_owner_deletion = Some(true);
    let (added, removed, changed) =
        references_diffs(&[a.clone(), b.clone()], &[b2.clone(), c.clone()]);
    assert_eq!(added, [c]);
    assert_eq!(removed, [a]);
    assert_eq!(changed, [(b, b2)]);
    let (added, removed, changed) = references_diffs(&[], &[]);
    assert!(added.is_empty() && removed.is_empty() && changed.is_empty());
}

#[test]
fn partition_dependents_by_coordinates() {
    let parent = id("v1", "Parent", "ns1", "p", "puid");
    let good = node(id("v1", "Child", "ns1", "good", "c1"), vec![parent.clone()]);
    let other_ns = node(id("v1", "Child", "ns2", "far", "c2"), vec![parent.clone()]);
    let renamed = node(
        id("v1", "Child", "ns1", "renamed", "c3"),
        vec![id("v1", "Parent", "ns1", "other-name", "puid")],
    );
    let (m, n) = partition_dependents(&[good, other_ns, renamed], &parent);
    let names = |v: &[NodeView]| {
        v.iter()
            .map(|d| d.identity.name.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&m), ["good"]);
    assert_eq!(names(&n), ["far", "renamed"]);
}

/// Upstream `TestGetAlternateOwnerIdentity`.
#[test]
fn alternate_owner_identities() {
    let ns1child1 = id("v1", "Child", "ns1", "child1", "childuid11");
    let ns1child2 = id("v1", "Child", "ns1", "child2", "childuid12");
    let ns2child1 = id("v1", "Child", "ns2", "child1", "childuid21");
    let clusterchild1 = id("v1", "Child", "", "child1", "childuidc1");

    let nsabsentparentns1 = id("v1", "NSParent", "ns1", "parentname", "parentuid");
    let nsabsentparentns2 = id("v1", "NSParent", "ns2", "parentname", "parentuid");
    let nsabsentparent_version = id("xx", "NSParent", "ns1", "parentname", "parentuid");
    let nsabsentparent_kind = id("v1", "xxxxxxxx", "ns1", "parentname", "parentuid");
    let nsabsentparent_name = id("v1", "NSParent", "ns1", "xxxxxxxxxx", "parentuid");
    let clusterabsentparent = id("v1", "ClusterParent", "", "parentname", "parentuid");
    let clusterabsentparent_version = id("xx", "ClusterParent", "", "parentname", "parentuid");
    let clusterabsentparent_kind = id("v1", "xxxxxxxxxxxxx", "", "parentname", "parentuid");
    let clusterabsentparent_name = id("v1", "ClusterParent", "", "xxxxxxxxxx", "parentuid");
    let clusterabsentparent_ns1_version =
        id("xx", "ClusterParent", "ns1", "parentname", "parentuid");
    let clusterabsentparent_ns1_kind = id("v1", "xxxxxxxxxxxxx", "ns1", "parentname", "parentuid");

    let ordered_ns: Vec<ObjectRef> = (1..=5)
        .map(|v| id(&format!("v{v}"), "kind", "ns1", "name", "uid"))
        .collect();
    let ordered_cluster: Vec<ObjectRef> = (1..=5)
        .map(|v| id(&format!("v{v}"), "kind", "", "name", "uid"))
        .collect();

    let cases: Vec<(&str, Vec<NodeView>, &ObjectRef, Option<&ObjectRef>)> = vec![
        (
            "namespaced alternate version",
            vec![
                node(ns1child1.clone(), vec![nsabsentparentns1.clone()]),
                node(ns1child2.clone(), vec![nsabsentparent_version.clone()]),
            ],
            &nsabsentparentns1,
            Some(&nsabsentparent_version),
        ),
        (
            "namespaced alternate kind",
            vec![
                node(ns1child1.clone(), vec![nsabsentparentns1.clone()]),
                node(ns1child2.clone(), vec![nsabsentparent_kind.clone()]),
            ],
            &nsabsentparentns1,
            Some(&nsabsentparent_kind),
        ),
        (
            "namespaced alternate namespace",
            vec![
                node(ns1child1.clone(), vec![nsabsentparentns1.clone()]),
                node(ns2child1.clone(), vec![nsabsentparentns2.clone()]),
            ],
            &nsabsentparentns1,
            Some(&nsabsentparentns2),
        ),
        (
            "namespaced alternate name",
            vec![
                node(ns1child1.clone(), vec![nsabsentparentns1.clone()]),
                node(ns1child1.clone(), vec![nsabsentparent_name.clone()]),
            ],
            &nsabsentparentns1,
            Some(&nsabsentparent_name),
        ),
        (
            "cluster alternate version",
            vec![
                node(ns1child1.clone(), vec![clusterabsentparent.clone()]),
                node(ns1child2.clone(), vec![clusterabsentparent_version.clone()]),
            ],
            &clusterabsentparent,
            Some(&clusterabsentparent_ns1_version),
        ),
        (
            "cluster alternate kind",
            vec![
                node(ns1child1.clone(), vec![clusterabsentparent.clone()]),
                node(ns1child2.clone(), vec![clusterabsentparent_kind.clone()]),
            ],
            &clusterabsentparent,
            Some(&clusterabsentparent_ns1_kind),
        ),
        (
            "cluster alternate namespace",
            vec![
                node(ns1child1.clone(), vec![clusterabsentparent.clone()]),
                node(ns2child1.clone(), vec![clusterabsentparent.clone()]),
            ],
            &clusterabsentparent,
            None,
        ),
        (
            "cluster alternate name",
            vec![
                node(ns1child1.clone(), vec![clusterabsentparent.clone()]),
                node(ns1child1.clone(), vec![clusterabsentparent_name.clone()]),
            ],
            &clusterabsentparent,
            Some(&clusterabsentparent_name),
        ),
        (
            "namespaced ref from namespaced child returns first if absent is sorted last",
            vec![node(ns1child1.clone(), ordered_ns.clone())],
            &ordered_ns[4],
            Some(&ordered_ns[0]),
        ),
        (
            "namespaced ref from namespaced child returns next after absent",
            vec![node(ns1child1.clone(), ordered_ns.clone())],
            &ordered_ns[3],
            Some(&ordered_ns[4]),
        ),
        (
            "cluster ref from cluster child returns first if absent is sorted last",
            vec![node(clusterchild1.clone(), ordered_cluster.clone())],
            &ordered_cluster[4],
            Some(&ordered_cluster[0]),
        ),
        (
            "cluster ref from cluster child returns next after absent",
            vec![node(clusterchild1.clone(), ordered_cluster.clone())],
            &ordered_cluster[3],
            Some(&ordered_cluster[4]),
        ),
        (
            "ignore unrelated",
            vec![node(
                ns1child1.clone(),
                vec![
                    clusterabsentparent.clone(),
                    id("v1", "Parent", "ns1", "name", "anotheruid"),
                ],
            )],
            &clusterabsentparent,
            None,
        ),
        (
            "ignore matches",
            vec![node(
                ns1child1.clone(),
                vec![clusterabsentparent.clone(), clusterabsentparent.clone()],
            )],
            &clusterabsentparent,
            None,
        ),
        (
            "collapse duplicates",
            vec![node(
                clusterchild1.clone(),
                vec![
                    clusterabsentparent.clone(),
                    clusterabsentparent_kind.clone(),
                    clusterabsentparent_kind.clone(),
                ],
            )],
            &clusterabsentparent,
            Some(&clusterabsentparent_kind),
        ),
    ];
    for (name, deps, absent, expected) in cases {
        assert_eq!(
            alternate_owner_identity(&deps, absent).as_ref(),
            expected,
            "{name}"
        );
    }
}

#[test]
fn absent_owner_cache_forgets_least_recently_used() {
    let mut c = AbsentOwnerCache::new(2);
    let (a, b, d) = (
        id("v1", "A", "", "a", "1"),
        id("v1", "B", "", "b", "2"),
        id("v1", "D", "", "d", "3"),
    );
    c.add(a.clone());
    c.add(b.clone());
    assert!(c.has(&a)); // a is now the most recent
    c.add(d.clone());
    assert!(c.has(&a) && c.has(&d) && !c.has(&b));
    for i in 0..100 {
        c.add(id("v1", "X", "", "x", &i.to_string()));
    }
    assert!(c.order.len() <= 8 + 1);
}

#[test]
fn object_refs_print_as_upstream() {
    assert_eq!(
        id("apps/v1", "ReplicaSet", "ns", "rs", "u").to_string(),
        "[apps/v1/ReplicaSet, namespace: ns, name: rs, uid: u]"
    );
}
