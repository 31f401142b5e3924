//! Upstream `index_test.go` and the matching tables of `pv_helpers_test.go`, ported.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeSpec,
    PersistentVolumeStatus, VolumeNodeAffinity, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

use super::*;

const RWO: &str = "ReadWriteOnce";
const ROX: &str = "ReadOnlyMany";
const RWX: &str = "ReadWriteMany";
const RWOP: &str = "ReadWriteOncePod";

fn modes(m: &[&str]) -> Vec<String> {
    m.iter().map(|s| s.to_string()).collect()
}

fn storage(size: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([("storage".to_string(), Quantity(size.into()))])
}

/// Upstream `makePVC`: `claim01` in `myns`, ROX+RWO, requesting `size`.
fn make_pvc(size: &str, f: impl FnOnce(&mut PersistentVolumeClaim)) -> PersistentVolumeClaim {
    let mut pvc = PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some("claim01".into()),
            namespace: Some("myns".into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(modes(&[ROX, RWO])),
            resources: Some(VolumeResourceRequirements {
                requests: Some(storage(size)),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    f(&mut pvc);
    pvc
}

fn spec(pvc: &mut PersistentVolumeClaim) -> &mut PersistentVolumeClaimSpec {
    pvc.spec.as_mut().unwrap()
}

fn selector(key: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([(key.to_string(), "true".to_string())])),
        ..Default::default()
    }
}

/// A volume: UID (what the tables expect), name, size, modes, class, phase.
fn pv(uid: &str, name: &str, size: &str, m: &[&str], class: &str) -> PersistentVolume {
    PersistentVolume {
        metadata: ObjectMeta {
            uid: Some(uid.into()),
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(storage(size)),
            access_modes: Some(modes(m)),
            storage_class_name: (!class.is_empty()).then(|| class.to_string()),
            ..Default::default()
        }),
        status: Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        }),
    }
}

fn with_claim_ref(mut v: PersistentVolume, r: ObjectReference) -> PersistentVolume {
    v.spec.as_mut().unwrap().claim_ref = Some(r);
    v
}

fn with_labels(mut v: PersistentVolume, key: &str) -> PersistentVolume {
    v.metadata.labels = Some(BTreeMap::from([(key.to_string(), "true".to_string())]));
    v
}

fn with_phase(mut v: PersistentVolume, phase: &str) -> PersistentVolume {
    v.status.as_mut().unwrap().phase = (!phase.is_empty()).then(|| phase.to_string());
    v
}

fn with_affinity(mut v: PersistentVolume, key: &str, value: &str) -> PersistentVolume {
    v.spec.as_mut().unwrap().node_affinity = Some(VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: key.into(),
                    operator: "In".into(),
                    values: Some(vec![value.into()]),
                }]),
                ..Default::default()
            }],
        }),
    });
    v
}

fn uid_ref(uid: &str) -> ObjectReference {
    ObjectReference {
        uid: Some(uid.into()),
        ..Default::default()
    }
}

/// Upstream `createTestVolumes` (deliberately out of order).
fn create_test_volumes() -> Vec<PersistentVolume> {
    vec![
        pv("gce-pd-10", "gce003", "10G", &[RWO, ROX], ""),
        with_claim_ref(
            pv("gce-pd-20", "gce004", "20G", &[RWO, ROX], ""),
            uid_ref("def456"),
        ),
        pv("nfs-5", "nfs002", "5G", &[RWO, ROX, RWX], ""),
        with_claim_ref(
            pv("gce-pd-1", "gce001", "1G", &[RWO, ROX], ""),
            uid_ref("abc123"),
        ),
        pv("nfs-10", "nfs003", "10G", &[RWO, ROX, RWX], ""),
        pv("gce-pd-5", "gce002", "5G", &[RWO, ROX], ""),
        pv("nfs-1", "nfs001", "1G", &[RWO, ROX, RWX], ""),
        with_labels(
            pv("gce-pd-2", "gce0022", "20000G", &[RWO], ""),
            "should-exist",
        ),
        with_labels(
            pv("gce-pd-silver1", "gce0023", "10000G", &[RWO], "silver"),
            "should-exist",
        ),
        pv("gce-pd-silver2", "gce0024", "100G", &[RWO], "silver"),
        pv("gce-pd-gold", "gce0025", "50G", &[RWO], "gold"),
        pv("local-pd-very-large", "local001", "200E", &[RWO], "large"),
        pv(
            "local-pd-extremely-large",
            "local002",
            "800E",
            &[RWO],
            "large",
        ),
        with_affinity(
            pv("affinity-pv", "affinity001", "100G", &[RWO, ROX], "wait"),
            "key1",
            "value1",
        ),
        with_affinity(
            pv("affinity-pv2", "affinity002", "150G", &[RWO, ROX], "wait"),
            "key1",
            "value1",
        ),
        with_claim_ref(
            with_affinity(
                pv(
                    "affinity-prebound",
                    "affinity003",
                    "100G",
                    &[RWO, ROX],
                    "wait",
                ),
                "key1",
                "value1",
            ),
            ObjectReference {
                name: Some("claim02".into()),
                namespace: Some("myns".into()),
                ..Default::default()
            },
        ),
        with_affinity(
            pv("affinity-pv3", "affinity004", "200G", &[RWO, ROX], "wait"),
            "key1",
            "value3",
        ),
        with_phase(
            with_affinity(
                pv(
                    "affinity-pv4-pending",
                    "affinity005",
                    "200G",
                    &[RWO, ROX],
                    "wait",
                ),
                "key1",
                "value4",
            ),
            "Pending",
        ),
        with_phase(
            with_affinity(
                pv(
                    "affinity-pv4-failed",
                    "affinity006",
                    "200G",
                    &[RWO, ROX],
                    "wait",
                ),
                "key1",
                "value4",
            ),
            "Failed",
        ),
        with_phase(
            with_affinity(
                pv(
                    "affinity-pv4-released",
                    "affinity007",
                    "200G",
                    &[RWO, ROX],
                    "wait",
                ),
                "key1",
                "value4",
            ),
            "Released",
        ),
        with_phase(
            with_affinity(
                pv(
                    "affinity-pv4-empty",
                    "affinity008",
                    "200G",
                    &[RWO, ROX],
                    "wait",
                ),
                "key1",
                "value4",
            ),
            "",
        ),
    ]
}

fn index_of(volumes: Vec<PersistentVolume>) -> VolumeIndex {
    let mut index = VolumeIndex::new();
    for v in volumes {
        index.add(Arc::new(v));
    }
    index
}

fn uid_of(v: &Option<Arc<PersistentVolume>>) -> String {
    v.as_ref()
        .and_then(|v| v.metadata.uid.clone())
        .unwrap_or_default()
}

fn name_of(v: &Option<Arc<PersistentVolume>>) -> String {
    v.as_ref()
        .and_then(|v| v.metadata.name.clone())
        .unwrap_or_default()
}

/// The scenarios of upstream `TestMatchVolume`: name, expected volume UID ("" for no
/// match), claim.
fn match_volume_scenarios() -> Vec<(&'static str, &'static str, PersistentVolumeClaim)> {
    vec![
        (
            "successful-match-gce-10",
            "gce-pd-10",
            make_pvc("8G", |_| {}),
        ),
        (
            "successful-match-nfs-5",
            "nfs-5",
            make_pvc("5G", |p| {
                spec(p).access_modes = Some(modes(&[ROX, RWO, RWX]))
            }),
        ),
        (
            "successful-skip-1g-bound-volume",
            "gce-pd-5",
            make_pvc("1G", |_| {}),
        ),
        ("successful-no-match", "", make_pvc("999G", |_| {})),
        (
            "successful-no-match-due-to-label",
            "",
            make_pvc("999G", |p| {
                spec(p).selector = Some(selector("should-not-exist"))
            }),
        ),
        (
            "successful-no-match-due-to-size-constraint-with-label-selector",
            "",
            make_pvc("20000G", |p| {
                spec(p).selector = Some(selector("should-exist"));
                spec(p).access_modes = Some(modes(&[ROX, RWO]));
            }),
        ),
        (
            "successful-match-due-with-constraint-and-label-selector",
            "gce-pd-2",
            make_pvc("20000G", |p| {
                spec(p).selector = Some(selector("should-exist"));
                spec(p).access_modes = Some(modes(&[RWO]));
            }),
        ),
        (
            "successful-match-with-class",
            "gce-pd-silver1",
            make_pvc("1G", |p| {
                spec(p).selector = Some(selector("should-exist"));
                spec(p).access_modes = Some(modes(&[RWO]));
                spec(p).storage_class_name = Some("silver".into());
            }),
        ),
        (
            "successful-match-with-class-and-labels",
            "gce-pd-silver2",
            make_pvc("1G", |p| {
                spec(p).access_modes = Some(modes(&[RWO]));
                spec(p).storage_class_name = Some("silver".into());
            }),
        ),
        (
            "successful-match-very-large",
            "local-pd-very-large",
            make_pvc("200E", |p| {
                spec(p).access_modes = Some(modes(&[RWO]));
                spec(p).storage_class_name = Some("large".into());
            }),
        ),
        (
            "successful-match-exact-extremely-large",
            "local-pd-extremely-large",
            make_pvc("800E", |p| {
                spec(p).access_modes = Some(modes(&[RWO]));
                spec(p).storage_class_name = Some("large".into());
            }),
        ),
        (
            "successful-no-match-way-too-large",
            "",
            make_pvc("950E", |p| {
                spec(p).access_modes = Some(modes(&[RWO]));
                spec(p).storage_class_name = Some("large".into());
            }),
        ),
    ]
}

#[test]
fn match_volume() {
    let index = index_of(create_test_volumes());
    for (name, expected, claim) in match_volume_scenarios() {
        let got = index.find_best_match_for_claim(&claim, false).unwrap();
        assert_eq!(uid_of(&got), expected, "scenario {name}");
    }
}

#[test]
fn best_match_delayed() {
    // upstream TestBestMatchDelayed: with delayed binding nothing unbound matches
    let index = index_of(create_test_volumes());
    for (name, _, claim) in match_volume_scenarios() {
        let got = index.find_best_match_for_claim(&claim, true).unwrap();
        assert!(got.is_none(), "scenario {name}: {}", uid_of(&got));
    }
}

#[test]
fn matching_with_bound_volumes() {
    let index = index_of(vec![
        with_claim_ref(
            pv("gce-pd-1", "gce001", "1G", &[RWO, ROX], ""),
            uid_ref("abc123"),
        ),
        pv("gce-pd-2", "gce002", "1G", &[RWO, ROX], ""),
    ]);
    let claim = make_pvc("1G", |_| {});
    let got = index.find_best_match_for_claim(&claim, false).unwrap();
    assert_eq!(name_of(&got), "gce002");
}

fn sorted_by_capacity(mut v: Vec<Arc<PersistentVolume>>) -> Vec<String> {
    v.sort_by_key(|v| volume_capacity(v).unwrap());
    v.iter()
        .map(|v| v.metadata.uid.clone().unwrap_or_default())
        .collect()
}

#[test]
fn list_by_access_modes() {
    let index = index_of(create_test_volumes());
    let got = sorted_by_capacity(index.list_by_access_modes(&modes(&[RWO, ROX])));
    assert_eq!(got[..3], ["gce-pd-1", "gce-pd-5", "gce-pd-10"]);
    let got = sorted_by_capacity(index.list_by_access_modes(&modes(&[RWO, ROX, RWX])));
    assert_eq!(got, ["nfs-1", "nfs-5", "nfs-10"]);
}

#[test]
fn all_possible_access_modes() {
    let index = index_of(create_test_volumes());
    // the test volumes have three sets: RWO, RWO+ROX and RWO+ROX+RWX
    let possible = index.all_possible_matching_access_modes(&modes(&[RWO]));
    assert_eq!(possible.len(), 3);
    assert!(possible.iter().all(|m| m.contains(&RWO.to_string())));
    assert_eq!(
        possible.iter().map(Vec::len).collect::<Vec<_>>(),
        [1, 2, 3],
        "smallest sets first"
    );
    let possible = index.all_possible_matching_access_modes(&modes(&[RWX]));
    assert_eq!(possible.len(), 1);
    assert!(possible[0].contains(&RWX.to_string()));
}

#[test]
fn finding_volume_with_different_access_modes() {
    let gce = pv("001", "gce", "10G", &[RWO, ROX], "");
    let ebs = pv("002", "ebs", "10G", &[RWO], "");
    let nfs = pv("003", "nfs", "10G", &[RWO, ROX, RWX], "");
    let mut index = index_of(vec![gce.clone(), ebs.clone(), nfs.clone()]);
    let mut claim = make_pvc("1G", |p| spec(p).access_modes = Some(modes(&[RWO])));
    let find = |index: &VolumeIndex, claim: &PersistentVolumeClaim| {
        name_of(&index.find_best_match_for_claim(claim, false).unwrap())
    };
    assert_eq!(find(&index, &claim), "ebs");

    spec(&mut claim).access_modes = Some(modes(&[RWO, ROX]));
    assert_eq!(find(&index, &claim), "gce");

    // the order of the requested modes does not matter
    spec(&mut claim).access_modes = Some(modes(&[RWX, RWO, ROX]));
    assert_eq!(find(&index, &claim), "nfs");

    // fewer modes requested still match
    spec(&mut claim).access_modes = Some(modes(&[RWX]));
    assert_eq!(find(&index, &claim), "nfs");

    // the exact match is bound: the next level up of modes
    index.add(Arc::new(with_claim_ref(ebs, ObjectReference::default())));
    spec(&mut claim).access_modes = Some(modes(&[RWO]));
    assert_eq!(find(&index, &claim), "gce");

    // continue up the levels of modes
    index.add(Arc::new(with_claim_ref(
        gce.clone(),
        ObjectReference::default(),
    )));
    assert_eq!(find(&index, &claim), "nfs");

    // partial mode request
    index.add(Arc::new(gce));
    spec(&mut claim).access_modes = Some(modes(&[ROX]));
    assert_eq!(find(&index, &claim), "gce");
}

#[test]
fn finding_prebound_volumes() {
    let claim = make_pvc("1Gi", |p| spec(p).access_modes = Some(modes(&[RWO])));
    let claim_ref = ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        api_version: Some("v1".into()),
        name: Some("claim01".into()),
        namespace: Some("myns".into()),
        ..Default::default()
    };
    let test_volume = |name: &str, size: &str| pv(name, name, size, &[RWO], "");
    let pv1 = test_volume("pv1", "1Gi");
    let pv5 = test_volume("pv5", "5Gi");
    let pv8 = test_volume("pv8", "8Gi");
    let bad_size = test_volume("pvBadSize", "1Mi");
    let mut bad_mode = test_volume("pvBadMode", "1Gi");
    bad_mode.spec.as_mut().unwrap().access_modes = Some(modes(&[ROX]));
    let mut index = index_of(vec![
        pv1.clone(),
        pv5.clone(),
        pv8.clone(),
        bad_size.clone(),
        bad_mode.clone(),
    ]);
    let find =
        |index: &VolumeIndex| name_of(&index.find_best_match_for_claim(&claim, false).unwrap());

    // exact match on size
    assert_eq!(find(&index), "pv1");

    // the exact match is pre-bound elsewhere: the next size up
    let elsewhere = ObjectReference {
        name: Some("foo".into()),
        namespace: Some("bar".into()),
        ..Default::default()
    };
    index.add(Arc::new(with_claim_ref(pv1.clone(), elsewhere)));
    assert_eq!(find(&index), "pv5");

    // the exact match is available but the largest volume is pre-bound to the claim
    index.add(Arc::new(pv1.clone()));
    index.add(Arc::new(with_claim_ref(pv8.clone(), claim_ref.clone())));
    assert_eq!(find(&index), "pv8");

    // a volume too small pre-bound to the claim: the exact match
    index.add(Arc::new(pv8));
    index.add(Arc::new(with_claim_ref(
        bad_size.clone(),
        claim_ref.clone(),
    )));
    assert_eq!(find(&index), "pv1");

    // a volume without the right access mode pre-bound to the claim: the exact match
    index.add(Arc::new(bad_size));
    index.add(Arc::new(with_claim_ref(bad_mode, claim_ref)));
    assert_eq!(find(&index), "pv1");
}

fn node(value: &str) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{value}")),
            labels: Some(BTreeMap::from([("key1".to_string(), value.to_string())])),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn find_match_volume_with_node() {
    // upstream TestFindMatchVolumeWithNode: the scheduler's path
    let volumes = create_test_volumes();
    let claim = |size: &str, f: &dyn Fn(&mut PersistentVolumeClaim)| {
        make_pvc(size, |p| {
            spec(p).storage_class_name = Some("wait".into());
            f(p);
        })
    };
    let cases: Vec<(&str, &str, PersistentVolumeClaim, Node, Vec<&str>)> = vec![
        (
            "success-match",
            "affinity-pv",
            claim("100G", &|_| {}),
            node("value1"),
            vec![],
        ),
        (
            "success-prebound",
            "affinity-prebound",
            claim("100G", &|p| p.metadata.name = Some("claim02".into())),
            node("value1"),
            vec![],
        ),
        (
            "success-exclusion",
            "affinity-pv2",
            claim("100G", &|_| {}),
            node("value1"),
            vec!["affinity001"],
        ),
        (
            "fail-exclusion",
            "",
            claim("100G", &|_| {}),
            node("value1"),
            vec!["affinity001", "affinity002"],
        ),
        (
            "fail-accessmode",
            "",
            claim("100G", &|p| spec(p).access_modes = Some(modes(&[RWX]))),
            node("value1"),
            vec![],
        ),
        (
            "fail-nodeaffinity",
            "",
            claim("100G", &|_| {}),
            node("value2"),
            vec![],
        ),
        (
            "fail-prebound-node-affinity",
            "",
            claim("100G", &|p| p.metadata.name = Some("claim02".into())),
            node("value2"),
            vec![],
        ),
        (
            "fail-nonavaiable",
            "",
            claim("100G", &|_| {}),
            node("value4"),
            vec![],
        ),
        (
            "success-bad-and-good-node-affinity",
            "affinity-pv3",
            claim("100G", &|_| {}),
            node("value3"),
            vec![],
        ),
    ];
    for (name, expected, claim, node, excluded) in cases {
        let excluded: HashSet<String> = excluded.into_iter().map(String::from).collect();
        let got = find_matching_volume(&claim, &volumes, Some(&node), &excluded, true).unwrap();
        let got = got.and_then(|v| v.metadata.uid.clone()).unwrap_or_default();
        assert_eq!(got, expected, "case {name}");
    }
}

#[test]
fn check_access_modes_table() {
    // upstream TestCheckAccessModes
    let cases: [(&[&str], &[&str], bool); 6] = [
        (&[RWO], &[RWO, ROX], true),
        (&[RWX], &[RWO], false),
        (&[RWOP], &[RWOP], true),
        (&[RWO], &[RWOP], false),
        (&[RWO, RWX], &[RWO, ROX, RWX], true),
        (&[RWOP], &[RWO, ROX, RWX], false),
    ];
    for (claim_m, volume_m, expected) in cases {
        let claim = make_pvc("1G", |p| spec(p).access_modes = Some(modes(claim_m)));
        let volume = pv("v", "v", "1G", volume_m, "");
        assert_eq!(
            check_access_modes(&claim, &volume),
            expected,
            "{claim_m:?} on {volume_m:?}"
        );
    }
}

fn with_volume_mode(mut v: PersistentVolume, mode: Option<&str>) -> PersistentVolume {
    v.spec.as_mut().unwrap().volume_mode = mode.map(String::from);
    v
}

fn claim_with_mode(mode: Option<&str>) -> PersistentVolumeClaim {
    make_pvc("1G", |p| spec(p).volume_mode = mode.map(String::from))
}

#[test]
fn volume_mode_check() {
    // upstream TestVolumeModeCheck: (pv mode, pvc mode, mismatch)
    let block = Some("Block");
    let fs = Some("Filesystem");
    let cases = [
        ("pvc-block-pv-block", block, block, false),
        ("pvc-fs-pv-fs", fs, fs, false),
        ("pvc-fs-pv-block", block, fs, true),
        ("pvc-block-pv-fs", fs, block, true),
        ("pvc-block-pv-nil", None, block, true),
        ("pvc-nil-pv-block", block, None, true),
        ("pvc-nil-pv-fs", fs, None, false),
        ("pvc-fs-pv-nil", None, fs, false),
        ("pvc-nil-pv-nil", None, None, false),
    ];
    for (name, pv_mode, pvc_mode, mismatch) in cases {
        let volume = with_volume_mode(pv("v", "v", "1G", &[RWO], ""), pv_mode);
        assert_eq!(
            volume_mode_mismatch(&claim_with_mode(pvc_mode), &volume),
            mismatch,
            "{name}"
        );
    }
}

#[test]
fn filtering_volume_modes() {
    // upstream TestFilteringVolumeModes
    let index = index_of(vec![
        with_volume_mode(pv("block", "block", "10G", &[RWO, ROX], ""), Some("Block")),
        with_volume_mode(pv("fs", "fs", "10G", &[RWO, ROX], ""), Some("Filesystem")),
    ]);
    let cases = [
        ("block pvc finds the block pv", Some("Block"), "block"),
        (
            "filesystem pvc finds the filesystem pv",
            Some("Filesystem"),
            "fs",
        ),
        ("unset pvc finds the filesystem pv", None, "fs"),
    ];
    for (name, mode, expected) in cases {
        let got = index
            .find_best_match_for_claim(&claim_with_mode(mode), false)
            .unwrap();
        assert_eq!(name_of(&got), expected, "{name}");
    }
    let only_fs = index_of(vec![pv("fs", "fs", "10G", &[RWO, ROX], "")]);
    let got = only_fs
        .find_best_match_for_claim(&claim_with_mode(Some("Block")), false)
        .unwrap();
    assert!(
        got.is_none(),
        "a block claim never gets a filesystem volume"
    );
}

#[test]
fn storage_object_in_use_protection_filtering() {
    // upstream TestStorageObjectInUseProtectionFiltering
    let volume = pv("pv", "pv", "1G", &[RWO, ROX], "");
    let mut deleting = volume.clone();
    deleting.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
    let claim = make_pvc("1G", |_| {});
    assert_eq!(check_volume_satisfy_claim(&volume, &claim), Ok(()));
    assert_eq!(
        check_volume_satisfy_claim(&deleting, &claim),
        Err("the volume is marked for deletion \"pv\"".into())
    );
    let index = index_of(vec![volume]);
    assert!(index
        .find_best_match_for_claim(&claim, false)
        .unwrap()
        .is_some());
    let index = index_of(vec![deleting]);
    assert!(index
        .find_best_match_for_claim(&claim, false)
        .unwrap()
        .is_none());
}

#[test]
fn volume_satisfy_claim_reasons() {
    // the reasons of upstream checkVolumeSatisfyClaim, in their order
    let volume = pv("pv", "pv", "1G", &[RWO], "gold");
    let claim = |f: &dyn Fn(&mut PersistentVolumeClaim)| {
        make_pvc("1G", |p| {
            spec(p).access_modes = Some(modes(&[RWO]));
            spec(p).storage_class_name = Some("gold".into());
            f(p);
        })
    };
    assert_eq!(check_volume_satisfy_claim(&volume, &claim(&|_| {})), Ok(()));
    let too_big = claim(&|p| {
        spec(p).resources.as_mut().unwrap().requests = Some(storage("2G"));
    });
    assert_eq!(
        check_volume_satisfy_claim(&volume, &too_big),
        Err("requested PV is too small".into())
    );
    let other_class = claim(&|p| spec(p).storage_class_name = Some("silver".into()));
    assert_eq!(
        check_volume_satisfy_claim(&volume, &other_class),
        Err("storageClassName does not match".into())
    );
    let block = claim(&|p| spec(p).volume_mode = Some("Block".into()));
    assert_eq!(
        check_volume_satisfy_claim(&volume, &block),
        Err("incompatible volumeMode".into())
    );
    let rwx = claim(&|p| spec(p).access_modes = Some(modes(&[RWX])));
    assert_eq!(
        check_volume_satisfy_claim(&volume, &rwx),
        Err("incompatible accessMode".into())
    );
}

#[test]
fn invalid_selector_is_an_error() {
    let index = index_of(create_test_volumes());
    let claim = make_pvc("1G", |p| {
        spec(p).selector = Some(LabelSelector {
            match_labels: Some(BTreeMap::from([("a b".to_string(), "c".to_string())])),
            ..Default::default()
        })
    });
    let err = index.find_best_match_for_claim(&claim, false).unwrap_err();
    assert!(
        err.starts_with("error creating internal label selector for claim: "),
        "{err}"
    );
}

#[test]
fn access_mode_strings() {
    assert_eq!(
        access_modes_as_string(&modes(&[RWX, RWO, ROX, RWO])),
        "RWO,ROX,RWX"
    );
    assert_eq!(access_modes_as_string(&modes(&[RWOP])), "RWOP");
    assert_eq!(
        access_modes_from_string("RWO,ROX,RWX"),
        modes(&[RWO, ROX, RWX])
    );
}

#[test]
fn classes_from_annotation_or_field() {
    let mut claim = make_pvc("1G", |_| {});
    assert_eq!(claim_class(&claim), "");
    assert!(!claim_has_class(&claim));
    spec(&mut claim).storage_class_name = Some(String::new());
    assert!(claim_has_class(&claim), "an empty class is a class");
    spec(&mut claim).storage_class_name = Some("gold".into());
    assert_eq!(claim_class(&claim), "gold");
    claim.metadata.annotations = Some(BTreeMap::from([(
        ANN_BETA_STORAGE_CLASS.to_string(),
        "silver".to_string(),
    )]));
    assert_eq!(claim_class(&claim), "silver", "the annotation wins");
}
