//! The storage admission plugins: upstream's `setdefault` `TestAdmission` table,
//! `StorageObjectInUseProtection` and `PersistentVolumeClaimResize`.

use serde_json::{json, Value};

use crate::registry::core::persistentvolumeclaim::admission::*;

fn class(name: &str, default: Option<&str>, created: &str) -> Value {
    let mut c = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name, "creationTimestamp": created},
        "provisioner": name,
    });
    if let Some(d) = default {
        c["metadata"]["annotations"] = json!({IS_DEFAULT_CLASS_ANNOTATION: d});
    }
    c
}

fn claim(class: Option<&str>) -> Value {
    let mut c = json!({"metadata": {"name": "claim", "namespace": "ns"}, "spec": {}});
    if let Some(cl) = class {
        c["spec"]["storageClassName"] = json!(cl);
    }
    c
}

const T0: &str = "2022-01-01T00:00:00Z";

/// Upstream `plugin/pkg/admission/storage/storageclass/setdefault` `TestAdmission`.
#[test]
fn default_storage_class_follows_upstream_table() {
    let default1 = class("default1", Some("true"), T0);
    let default2 = class("default2", Some("true"), T0);
    let false_default = class("nondefault1", Some("false"), T0);
    let no_default = class("nondefault2", None, T0);
    let empty_default = class("nondefault2", Some(""), T0);
    // upstream's classes differ by a nanosecond; stored timestamps have seconds
    let newer = class("default1", Some("true"), "2022-01-01T00:00:01Z");
    let older = class("default2", Some("true"), T0);
    let non_defaults = [false_default, no_default, empty_default];
    let with = |extra: &[&Value]| -> Vec<Value> {
        extra
            .iter()
            .map(|v| (*v).clone())
            .chain(non_defaults.iter().cloned())
            .collect()
    };
    let cases: Vec<(&str, Vec<Value>, Option<&str>, &str)> = vec![
        ("no default, no modification of PVCs", with(&[]), None, ""),
        (
            "one default, modify PVC with class=nil",
            with(&[&default1]),
            None,
            "default1",
        ),
        (
            "one default, no modification of PVC with class=''",
            with(&[&default1]),
            Some(""),
            "",
        ),
        (
            "one default, no modification of PVC with class='foo'",
            with(&[&default1]),
            Some("foo"),
            "foo",
        ),
        (
            "two defaults, no modification of PVC with class=''",
            with(&[&default1, &default2]),
            Some(""),
            "",
        ),
        (
            "two defaults, no modification of PVC with class='foo'",
            with(&[&default1, &default2]),
            Some("foo"),
            "foo",
        ),
        (
            "two defaults with same creation time, choose the one with smaller name",
            with(&[&default2, &default1]),
            None,
            "default1",
        ),
        (
            "two defaults, choose the one with newer creation time",
            with(&[&older, &newer]),
            None,
            "default1",
        ),
    ];
    for (name, classes, requested, expected) in cases {
        let mut c = claim(requested);
        set_default_class(&mut c, &classes);
        assert_eq!(claim_class(&c), expected, "{name}");
    }
    // the beta annotation is a request for a class too
    let mut c = claim(None);
    c["metadata"]["annotations"] = json!({BETA_STORAGE_CLASS_ANNOTATION: "gold"});
    assert_eq!(set_default_class(&mut c, &with(&[&default1])), None);
    assert!(c["spec"].get("storageClassName").is_none());
    // and the beta default annotation marks a default
    let beta = json!({"metadata": {"name": "beta", "annotations": {BETA_IS_DEFAULT_CLASS_ANNOTATION: "true"}}});
    assert!(is_default_class(&beta));
}

#[test]
fn protection_finalizer_is_added_once() {
    let mut c = claim(None);
    add_finalizer(&mut c, PVC_PROTECTION_FINALIZER);
    add_finalizer(&mut c, PVC_PROTECTION_FINALIZER);
    assert_eq!(
        c["metadata"]["finalizers"],
        json!([PVC_PROTECTION_FINALIZER])
    );
    let mut c = claim(None);
    c["metadata"]["finalizers"] = json!(["example.com/mine"]);
    add_finalizer(&mut c, PVC_PROTECTION_FINALIZER);
    assert_eq!(
        c["metadata"]["finalizers"],
        json!(["example.com/mine", PVC_PROTECTION_FINALIZER])
    );
}

fn sized(size: &str, phase: &str, class: Option<&str>) -> Value {
    let mut c = claim(class);
    c["spec"]["resources"] = json!({"requests": {"storage": size}});
    c["status"] = json!({"phase": phase});
    c
}

/// Upstream `PersistentVolumeClaimResize` (admission_test.go cases, without the
/// in-tree volume plugin checks later releases dropped).
#[test]
fn resize_needs_a_bound_claim_and_an_expandable_class() {
    let classes = |name: &str| match name {
        "gold" => Some(json!({"metadata": {"name": "gold"}, "allowVolumeExpansion": true})),
        "silver" => Some(json!({"metadata": {"name": "silver"}, "allowVolumeExpansion": false})),
        "bronze" => Some(json!({"metadata": {"name": "bronze"}})),
        _ => None,
    };
    let bound_only = "persistentvolumeclaims \"claim\" is forbidden: Only bound persistent volume claims can be expanded";
    let no_resize = "persistentvolumeclaims \"claim\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize";
    let cases: Vec<(&str, Value, Value, Option<&str>)> = vec![
        (
            "pvc-resize of unbound claim is forbidden",
            sized("1Gi", "Pending", Some("gold")),
            sized("2Gi", "Pending", Some("gold")),
            Some(bound_only),
        ),
        (
            "growing a bound claim of an expandable class is allowed",
            sized("1Gi", "Bound", Some("gold")),
            sized("2Gi", "Bound", Some("gold")),
            None,
        ),
        (
            "class with allowVolumeExpansion false",
            sized("1Gi", "Bound", Some("silver")),
            sized("2Gi", "Bound", Some("silver")),
            Some(no_resize),
        ),
        (
            "class without allowVolumeExpansion",
            sized("1Gi", "Bound", Some("bronze")),
            sized("2Gi", "Bound", Some("bronze")),
            Some(no_resize),
        ),
        (
            "class that does not exist",
            sized("1Gi", "Bound", Some("missing")),
            sized("2Gi", "Bound", Some("missing")),
            Some(no_resize),
        ),
        (
            "claim without a class",
            sized("1Gi", "Bound", None),
            sized("2Gi", "Bound", None),
            Some(no_resize),
        ),
        (
            "changing the class while growing",
            sized("1Gi", "Bound", Some("silver")),
            sized("2Gi", "Bound", Some("gold")),
            Some(no_resize),
        ),
        (
            "same size in another notation is no growth",
            sized("1Gi", "Pending", Some("silver")),
            sized("1024Mi", "Pending", Some("silver")),
            None,
        ),
        (
            "shrinking is not this plugin's business",
            sized("2Gi", "Pending", None),
            sized("1Gi", "Pending", None),
            None,
        ),
    ];
    for (name, old, new, expected) in cases {
        let got = check_resize("claim", &old, &new, classes);
        match (expected, got) {
            (None, Ok(())) => {}
            (Some(msg), Err(e)) => {
                assert_eq!(e.code, 403, "{name}");
                assert_eq!(e.reason, "Forbidden", "{name}");
                assert_eq!(e.message, msg, "{name}");
            }
            (want, got) => panic!("{name}: want {want:?}, got {:?}", got.err()),
        }
    }
}
