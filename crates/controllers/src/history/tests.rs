use super::*;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

// Upstream golden data: testdata compatibility_revision_1.34.0.json (the revision of a
// StatefulSet `test` with template labels {app: foo}, annotations {test: value} and one
// container `test`, all defaults) and its 1.33 form with `creationTimestamp: null`.
const RAW_1_34: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;
const RAW_1_33: &str = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;

fn raw_revision(raw: &str) -> ControllerRevision {
    ControllerRevision {
        data: RawExtension(serde_json::from_str(raw).expect("json")),
        ..Default::default()
    }
}

fn fnv1(bytes: &[u8]) -> u32 {
    let mut h = Fnv1::new();
    h.write(bytes);
    h.0
}

#[test]
fn golden_hashes() {
    let rev = raw_revision(RAW_1_34);
    // the unstructured data re-marshals to exactly upstream's bytes
    assert_eq!(revision_data_bytes(&rev), RAW_1_34);
    assert_eq!(fnv1(format!("{RAW_1_34}0").as_bytes()), 3_325_552_446);
    assert_eq!(hash_controller_revision(&rev, Some(0)), "776999688b");
    assert_eq!(hash_controller_revision(&rev, Some(1)), "776999688c");
    assert_eq!(hash_controller_revision(&rev, None), "6855cb9558");
    assert_eq!(fnv1(RAW_1_34.as_bytes()), 2_411_765_114);
    let old = raw_revision(RAW_1_33);
    assert_eq!(revision_data_bytes(&old), RAW_1_33);
    assert_eq!(hash_controller_revision(&old, Some(0)), "c77f6d978");
    assert_eq!(
        controller_revision_name("test", &hash_controller_revision(&rev, Some(0))),
        "test-776999688b"
    );
}

#[test]
fn data_bytes_are_go_json() {
    // keys sorted at every level, HTML characters escaped as encoding/json does
    let rev = ControllerRevision {
        data: RawExtension(json!({"b": {"z": 1, "a": "x && <y>"}, "a": [2, "\u{2028}"]})),
        ..Default::default()
    };
    assert_eq!(
        revision_data_bytes(&rev),
        r#"{"a":[2,"\u2028"],"b":{"a":"x \u0026\u0026 \u003cy\u003e","z":1}}"#
    );
}

#[test]
fn revision_names_truncate_the_prefix() {
    assert_eq!(controller_revision_name("web", "abc"), "web-abc");
    let long = "a".repeat(300);
    let name = controller_revision_name(&long, "5d4f8c9b7");
    assert_eq!(name, format!("{}-5d4f8c9b7", "a".repeat(223)));
    assert!(name.len() <= 253);
}

fn set(name: &str, uid: &str, labels: &[(&str, &str)]) -> StatefulSet {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "serviceName": "svc",
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
            }
        }
    }))
    .expect("set")
}

fn raw_template(s: &StatefulSet) -> Value {
    serde_json::to_value(&s.spec.template).expect("template")
}

fn rev(s: &StatefulSet, revision: i64) -> ControllerRevision {
    let labels = s
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref());
    new_controller_revision(
        &s.metadata,
        coxswain_runtime::controllerutil::new_controller_ref(s),
        labels,
        raw_template(s),
        revision,
        None,
    )
}

#[test]
fn new_controller_revision_fields() {
    let ss1 = set("ss1", "ss1", &[("foo", "bar")]);
    let r = rev(&ss1, 7);
    let hash = hash_controller_revision(&r, None);
    assert_eq!(r.revision, Some(7));
    assert_eq!(r.metadata.name, Some(format!("ss1-{hash}")));
    assert_eq!(r.metadata.namespace.as_deref(), Some("default"));
    let labels = r.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("foo").map(String::as_str), Some("bar"));
    assert_eq!(labels.get(CONTROLLER_REVISION_HASH_LABEL), Some(&hash));
    let owner = coxswain_runtime::controllerutil::get_controller_of(&r.metadata).expect("ref");
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.uid.as_str(),
            owner.api_version.as_str()
        ),
        ("StatefulSet", "ss1", "apps/v1")
    );
    assert_eq!(owner.block_owner_deletion, Some(true));
    // the collision count changes the hash, hence the name
    let labels = Some(BTreeMap::new());
    let r1 = new_controller_revision(
        &ss1.metadata,
        coxswain_runtime::controllerutil::new_controller_ref(&ss1),
        labels.as_ref(),
        raw_template(&ss1),
        1,
        Some(1),
    );
    assert_ne!(r1.metadata.name, r.metadata.name);
}

fn names(revs: &[&ControllerRevision]) -> Vec<String> {
    revs.iter()
        .map(|r| r.metadata.name.clone().unwrap_or_default())
        .collect()
}

// Upstream TestFindEqualRevisions.
#[test]
fn find_equal_revisions_table() {
    let ss1 = set("ss1", "ss1", &[("foo", "bar")]);
    let ss2 = set("ss2", "ss2", &[("goo", "car")]);
    let ss1_rev1 = rev(&ss1, 1);
    let ss1_rev2 = rev(&ss1, 2);
    let ss2_rev1 = rev(&ss2, 1);
    let ss2_rev2 = rev(&ss2, 2);
    let _ = ss1_rev2;
    let hay = vec![ss1_rev1.clone(), ss2_rev1.clone(), ss2_rev2.clone()];
    let found = find_equal_revisions(&hay, &ss1_rev1);
    assert_eq!(found.len(), 1);
    assert_eq!(names(&found), names(&[&ss1_rev1]));
    let empty: Vec<ControllerRevision> = Vec::new();
    assert!(find_equal_revisions(&empty, &ss1_rev1).is_empty());
    let hay = vec![ss2_rev2, ss2_rev1];
    assert!(find_equal_revisions(&hay, &ss1_rev1).is_empty());
}

#[test]
fn equal_revision_rules() {
    let ss1 = set("ss1", "ss1", &[("foo", "bar")]);
    let a = rev(&ss1, 1);
    assert!(equal_revision(None, None));
    assert!(!equal_revision(Some(&a), None));
    assert!(!equal_revision(None, Some(&a)));
    assert!(equal_revision(Some(&a), Some(&a.clone())));
    // numeric hash labels that differ: unequal even with the same data
    let mut x = a.clone();
    let mut y = a.clone();
    x.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(CONTROLLER_REVISION_HASH_LABEL.into(), "123".into());
    y.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(CONTROLLER_REVISION_HASH_LABEL.into(), "456".into());
    assert!(!equal_revision(Some(&x), Some(&y)));
    // a label that does not parse is not compared
    y.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(CONTROLLER_REVISION_HASH_LABEL.into(), "5d4f8c9b7".into());
    assert!(equal_revision(Some(&x), Some(&y)));
    // different data
    let ss2 = set("ss2", "ss2", &[("goo", "car")]);
    assert!(!equal_revision(Some(&a), Some(&rev(&ss2, 1))));
}

// Upstream TestSortControllerRevisions.
#[test]
fn sort_controller_revisions_table() {
    let ss1 = set("ss1", "ss1", &[("foo", "bar")]);
    let t0 = Timestamp::from_second(1_700_000_000).expect("time");
    let named = |name: &str, revision: i64, secs: i64| {
        let mut r = rev(&ss1, revision);
        r.metadata.name = Some(name.into());
        r.metadata.creation_timestamp = Some(Time(
            t0.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(secs))
                .expect("time"),
        ));
        r
    };
    let rev1 = named("ss1-rev1", 1, 0);
    let rev2 = named("ss1-rev2", 2, 0);
    let rev3 = named("ss1-rev3", 3, 0);
    let rev3_time2 = named("ss1-rev3time2", 3, 1);
    let rev3_time2_name2 = named("ss1-rev3time2name2", 3, 1);
    let table: Vec<(Vec<&ControllerRevision>, Vec<&ControllerRevision>)> = vec![
        (vec![&rev2, &rev1, &rev3], vec![&rev1, &rev2, &rev3]),
        (vec![&rev1, &rev2, &rev3], vec![&rev1, &rev2, &rev3]),
        (vec![&rev3, &rev2, &rev1], vec![&rev1, &rev2, &rev3]),
        (
            vec![&rev3, &rev3_time2, &rev2, &rev1],
            vec![&rev1, &rev2, &rev3, &rev3_time2],
        ),
        // ties on number and time fall back to the name
        (
            vec![&rev3_time2_name2, &rev3_time2, &rev1],
            vec![&rev1, &rev3_time2, &rev3_time2_name2],
        ),
        (vec![], vec![]),
    ];
    for (mut input, want) in table {
        sort_controller_revisions(&mut input);
        assert_eq!(names(&input), names(&want));
    }
}

#[test]
fn next_revision_numbers() {
    let ss1 = set("ss1", "ss1", &[("foo", "bar")]);
    let none: Vec<ControllerRevision> = Vec::new();
    assert_eq!(next_revision(&none), 1);
    let mut revs = vec![rev(&ss1, 3), rev(&ss1, 1)];
    sort_controller_revisions(&mut revs);
    assert_eq!(next_revision(&revs), 4);
}
