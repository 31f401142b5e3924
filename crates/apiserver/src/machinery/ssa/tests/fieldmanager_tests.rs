//! kube-apiserver field manager behaviour: managedFields encoding, stripped
//! metadata, before-first-apply, cap of update managers, conflict errors.

use crate::machinery::ssa::fieldmanager::{self, apply, update, ApplyError, Operation};
use crate::machinery::ssa::fieldpath::{field_path, Set};
use crate::machinery::ssa::schema::Schema;
use serde_json::{json, Value};

fn components() -> Value {
    json!({
        "io.k8s.api.apps.v1.Deployment": {"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
            "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}]},
            "status": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStatus"}]}}},
        "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "selector": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"}]},
            "template": {"type": "object", "properties": {
                "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                "spec": {"type": "object", "properties": {"containers": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                            "items": {"type": "object", "properties": {"containerPort": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"}}}}}}}}}}}}},
        "io.k8s.api.apps.v1.DeploymentStatus": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
            "name": {"type": "string"}, "namespace": {"type": "string"}, "uid": {"type": "string"},
            "resourceVersion": {"type": "string"}, "generation": {"type": "integer"},
            "creationTimestamp": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
            "finalizers": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "set"},
            "ownerReferences": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
                "items": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                    "uid": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string"}}}},
            "managedFields": {"type": "array", "items": {"type": "object"}}}}
    })
}

fn with_schema(f: impl FnOnce(&Schema)) {
    let comps = components();
    let root = json!({"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"});
    let resolve = |n: &str| comps.get(n);
    let s = Schema::new(&root, &resolve);
    f(&s);
}

/// What kube-apiserver's empty typed Deployment serializes to.
static EMPTY_DEPLOYMENT: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"creationTimestamp": null},
        "spec": {"selector": null, "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": null}}},
        "status": {}})
});

fn op<'a>(manager: &'a str, time: &'a str) -> Operation<'a> {
    Operation {
        manager,
        api_version: "apps/v1",
        kind: "Deployment",
        subresource: None,
        time,
        reset: None,
        empty: Some(&*EMPTY_DEPLOYMENT),
    }
}

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:01:00Z";
const T2: &str = "2024-01-01T00:02:00Z";

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"app": "x"}},
        "spec": {"replicas": replicas}})
}

fn with_mf(mut obj: Value, mf: Value) -> Value {
    fieldmanager::set_managed_fields(&mut obj, mf);
    obj
}

#[test]
fn create_records_update_and_strips_meta() {
    with_schema(|s| {
        let mut obj = deployment(1);
        obj["metadata"]["uid"] = json!("u1");
        obj["metadata"]["resourceVersion"] = json!("5");
        obj["metadata"]["creationTimestamp"] = json!(T0);
        let mf = update(s, None, &obj, &op("kubectl-client-side-apply", T0)).unwrap();
        assert_eq!(
            serde_json::to_string(&mf).unwrap(),
            r#"[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"apps/v1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{}}}}]"#
        );
    });
}

#[test]
fn apply_conflict_message_and_force() {
    with_schema(|s| {
        let live = deployment(1);
        let mf = update(s, None, &live, &op("kubectl-client-side-apply", T0)).unwrap();
        let mut live = with_mf(live, mf);
        live["metadata"]["uid"] = json!("u1");
        let e = apply(s, Some(&live), &deployment(3), &op("kubectl", T1), false).unwrap_err();
        assert_eq!(
            e.message(),
            r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas"#
        );
        assert_eq!(e.code(), 409);
        let st = e.to_status();
        assert_eq!(st["reason"], "Conflict");
        assert_eq!(
            st["details"]["causes"],
            json!([{"type": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using apps/v1", "field": ".spec.replicas"}])
        );
        // Two conflicts: plural form.
        let mut cfg = deployment(3);
        cfg["metadata"]["labels"]["app"] = json!("y");
        let e = apply(s, Some(&live), &cfg, &op("kubectl", T1), false).unwrap_err();
        assert_eq!(
            e.message(),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .metadata.labels.app\n- .spec.replicas"
        );
        // Force: the applier takes the field over.
        let r = apply(s, Some(&live), &deployment(3), &op("kubectl", T1), true).unwrap();
        assert!(r.changed);
        assert_eq!(r.object["spec"]["replicas"], 3);
        assert_eq!(
            serde_json::to_string(&r.managed_fields).unwrap(),
            concat!(
                r#"[{"manager":"kubectl","operation":"Apply","apiVersion":"apps/v1","time":"2024-01-01T00:01:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{}}}},"#,
                r#"{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"apps/v1","time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}]"#
            )
        );
        assert_eq!(r.object["metadata"]["managedFields"], r.managed_fields);
    });
}

#[test]
fn same_value_apply_does_not_conflict_and_noop_keeps_times() {
    with_schema(|s| {
        let live = deployment(1);
        let mf = update(s, None, &live, &op("controller", T0)).unwrap();
        let live = with_mf(live, mf);
        let r = apply(s, Some(&live), &deployment(1), &op("kubectl", T1), false).unwrap();
        assert!(!r.changed);
        // Nothing changed: the new applier entry has no time.
        assert_eq!(r.managed_fields[0]["manager"], "kubectl");
        assert!(r.managed_fields[0].get("time").is_none());
        assert_eq!(r.managed_fields[1]["time"], T0);
    });
}

#[test]
fn before_first_apply() {
    with_schema(|s| {
        let mut live = deployment(1);
        live["metadata"]["uid"] = json!("u1");
        // Updates of an existing object without managed fields are not tracked.
        assert_eq!(
            update(s, Some(&live), &deployment(2), &op("ctl", T0)).unwrap(),
            Value::Null
        );
        // The first apply attributes existing fields to before-first-apply.
        let e = apply(s, Some(&live), &deployment(2), &op("kubectl", T1), false).unwrap_err();
        assert_eq!(
            e.message(),
            r#"Apply failed with 1 conflict: conflict with "before-first-apply" using apps/v1: .spec.replicas"#
        );
        let r = apply(s, Some(&live), &deployment(1), &op("kubectl", T1), false).unwrap();
        assert_eq!(r.managed_fields[1]["manager"], "before-first-apply");
        assert_eq!(r.managed_fields[1]["operation"], "Update");
        assert_eq!(r.managed_fields[1]["time"], T1);
        assert_eq!(
            r.managed_fields[1]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}})
        );
    });
}

#[test]
fn create_on_apply_and_prune() {
    with_schema(|s| {
        let mut cfg = deployment(1);
        cfg["spec"]["template"] = json!({"spec": {"containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 80}]}, {"name": "b", "image": "j"}]}});
        let r = apply(s, None, &cfg, &op("kubectl", T0), false).unwrap();
        assert_eq!(
            serde_json::to_string(&r.managed_fields[0]["fieldsV1"]).unwrap(),
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}},"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
        );
        // Dropping container b from the applied config removes it.
        cfg["spec"]["template"]["spec"]["containers"] =
            json!([{"name": "a", "image": "i", "ports": [{"containerPort": 80}]}]);
        let r2 = apply(s, Some(&r.object), &cfg, &op("kubectl", T1), false).unwrap();
        assert_eq!(
            r2.object["spec"]["template"]["spec"]["containers"],
            cfg["spec"]["template"]["spec"]["containers"]
        );
        assert_eq!(r2.object["metadata"]["name"], "d");
    });
}

#[test]
fn object_meta_types() {
    with_schema(|s| {
        let mut cfg = deployment(1);
        cfg["metadata"]["finalizers"] = json!(["a/b"]);
        cfg["metadata"]["ownerReferences"] = json!([{"uid": "o1", "name": "n", "kind": "K"}]);
        cfg["metadata"]["annotations"] = json!({"k": "v"});
        let r = apply(s, None, &cfg, &op("one", T0), false).unwrap();
        assert_eq!(
            r.managed_fields[0]["fieldsV1"]["f:metadata"],
            json!({"f:annotations": {"f:k": {}}, "f:finalizers": {"v:\"a/b\"": {}}, "f:labels": {"f:app": {}},
                   "f:ownerReferences": {"k:{\"uid\":\"o1\"}": {}}})
        );
        // A second applier adds a finalizer: sets are merged.
        let mut cfg2 = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["c/d"]}});
        let r2 = apply(s, Some(&r.object), &cfg2, &op("two", T1), false).unwrap();
        assert_eq!(r2.object["metadata"]["finalizers"], json!(["a/b", "c/d"]));
        cfg2["metadata"]["finalizers"] = json!([]);
        let r3 = apply(s, Some(&r2.object), &cfg2, &op("two", T2), false).unwrap();
        assert_eq!(r3.object["metadata"]["finalizers"], json!(["a/b"]));
    });
}

#[test]
fn cap_update_managers() {
    with_schema(|s| {
        let mut obj = deployment(0);
        let mut mf = Value::Null;
        for i in 0..12 {
            let t = format!("2024-01-01T00:00:{i:02}Z");
            let name = format!("m{i:02}");
            let new = with_mf(
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "labels": {name.clone(): "x"}}, "spec": {"replicas": 0}}),
                Value::Null,
            );
            let mut merged = obj.clone();
            merged["metadata"]["labels"][&name] = json!("x");
            let _ = new;
            let live = with_mf(obj.clone(), mf.clone());
            mf = update(
                s,
                if i == 0 { None } else { Some(&live) },
                &merged,
                &op(&name, &t),
            )
            .unwrap();
            obj = merged;
        }
        let managers: Vec<&str> = mf
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(
            managers,
            vec![
                "ancient-changes",
                "m03",
                "m04",
                "m05",
                "m06",
                "m07",
                "m08",
                "m09",
                "m10",
                "m11"
            ]
        );
        let ancient = &mf[0];
        assert_eq!(ancient["time"], "2024-01-01T00:00:02Z");
        assert_eq!(
            ancient["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:m00": {}, "f:m01": {}, "f:m02": {}}}, "f:spec": {"f:replicas": {}}})
        );
    });
}

#[test]
fn invalid_managed_fields() {
    with_schema(|s| {
        let mut live = with_mf(
            deployment(1),
            json!([{"manager": "x", "operation": "Bogus", "apiVersion": "apps/v1", "fieldsType": "FieldsV1"}]),
        );
        live["metadata"]["uid"] = json!("u1");
        // Update: invalid managed fields are dropped (object existing → untracked).
        assert_eq!(
            update(s, Some(&live), &deployment(2), &op("ctl", T0)).unwrap(),
            Value::Null
        );
        // Apply: an error.
        let e = apply(s, Some(&live), &deployment(2), &op("kubectl", T1), false).unwrap_err();
        assert_eq!(
            e.message(),
            "failed to decode managed fields: operation must be `Apply` or `Update`"
        );
        // `[]` in the request resets the managed fields on update.
        let good = with_mf(
            deployment(1),
            update(s, None, &deployment(1), &op("a", T0)).unwrap(),
        );
        let reset = with_mf(deployment(1), json!([]));
        let mf = update(s, Some(&good), &reset, &op("b", T1)).unwrap();
        assert_eq!(mf, Value::Null);
    });
}

#[test]
fn apply_request_errors() {
    with_schema(|s| {
        let mut cfg = deployment(1);
        cfg["apiVersion"] = json!("apps/v2");
        let e = apply(s, None, &cfg, &op("k", T0), false).unwrap_err();
        assert_eq!(
            e,
            ApplyError::BadRequest("invalid object type: apps/v2, Kind=Deployment".into())
        );
        let cfg = with_mf(deployment(1), json!([]));
        let e = apply(s, None, &cfg, &op("k", T0), false).unwrap_err();
        assert_eq!(e.message(), "metadata.managedFields must be nil");
        let mut cfg = deployment(1);
        cfg["spec"]["template"] = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
        let e = apply(s, None, &cfg, &op("k", T0), false).unwrap_err();
        assert_eq!(
            e.message(),
            r#"failed to create typed patch object (default/d; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="a"]"#
        );
        assert_eq!(e.code(), 500);
    });
}

#[test]
fn reset_fields_status() {
    with_schema(|s| {
        let reset = Set::from_paths(&[field_path(&["status"])]);
        let mut o = op("kubectl", T0);
        o.reset = Some(&reset);
        let mut cfg = deployment(1);
        cfg["status"] = json!({"replicas": 5});
        let r = apply(s, None, &cfg, &o, false).unwrap();
        assert!(r.managed_fields[0]["fieldsV1"].get("f:status").is_none());
        // The status subresource owns status only.
        let spec_reset = Set::from_paths(&[field_path(&["spec"]), field_path(&["metadata"])]);
        let mut so = op("controller", T1);
        so.subresource = Some("status");
        so.reset = Some(&spec_reset);
        let mut new = r.object.clone();
        new["status"]["replicas"] = json!(6);
        let mf = update(s, Some(&r.object), &new, &so).unwrap();
        assert_eq!(
            mf[1],
            json!({"manager": "controller", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
                   "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:replicas": {}}}, "subresource": "status"})
        );
        assert_eq!(
            fieldmanager::print_manager(&fieldmanager::manager_identifier(
                "controller",
                "Update",
                "apps/v1",
                "status"
            )),
            r#""controller" with subresource "status" using apps/v1"#
        );
    });
}

#[test]
fn crd_schema_without_refs() {
    let comps = components();
    let meta = comps["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].clone();
    let root = json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": meta,
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "size": {"x-kubernetes-int-or-string": true},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"a": {"type": "string"}}}}}}});
    let resolve = |_: &str| None;
    let s = Schema::new(&root, &resolve);
    let o = Operation {
        manager: "m",
        api_version: "example.com/v1",
        kind: "Foo",
        subresource: None,
        time: T0,
        reset: None,
        empty: None,
    };
    let cfg = json!({"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f", "labels": {"a": "b"}},
        "spec": {"size": "50%", "embedded": {"a": "x"}, "free": {"x": [1, 2]}}});
    let r = apply(&s, None, &cfg, &o, false).unwrap();
    assert_eq!(
        r.managed_fields[0]["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:embedded": {"f:a": {}}, "f:free": {".": {}, "f:x": {}}, "f:size": {}}})
    );
    assert_eq!(r.object, cfg.clone().tap_mf(&r.managed_fields));
    // Unstructured create: `spec` was added as a whole, so it is a member.
    let mf = update(&s, None, &cfg, &o).unwrap();
    assert_eq!(mf[0]["fieldsV1"]["f:spec"]["."], json!({}));
}

trait TapMf {
    fn tap_mf(self, mf: &Value) -> Value;
}

impl TapMf for Value {
    fn tap_mf(mut self, mf: &Value) -> Value {
        fieldmanager::set_managed_fields(&mut self, mf.clone());
        self
    }
}

#[test]
fn rfc3339_and_sorting() {
    assert_eq!(fieldmanager::parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        fieldmanager::parse_rfc3339("2024-01-01T00:00:00Z"),
        Some(1704067200)
    );
    assert_eq!(
        fieldmanager::parse_rfc3339("2024-01-01T01:00:00.5+01:00"),
        Some(1704067200)
    );
    assert_eq!(fieldmanager::parse_rfc3339("nope"), None);
    let mf = json!([
        {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}},
        {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": T1, "fieldsType": "FieldsV1", "fieldsV1": {"f:b": {}}},
        {"manager": "z", "operation": "Update", "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:c": {}}},
        {"manager": "y", "operation": "Apply", "apiVersion": "v1", "time": T2, "fieldsType": "FieldsV1", "fieldsV1": {"f:d": {}}}
    ]);
    let m = fieldmanager::decode_managed_fields(Some(&mf)).unwrap();
    let enc = fieldmanager::encode_managed_fields(m.clone());
    let names: Vec<&str> = enc
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["y", "z", "a", "b"]);
}

#[test]
fn never_panics_on_garbage() {
    with_schema(|s| {
        for live in [
            json!(null),
            json!(1),
            json!("x"),
            json!([1]),
            json!({"metadata": 5}),
            json!({"spec": {"replicas": "x"}}),
        ] {
            for cfg in [
                json!(null),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": [1]}),
                deployment(1),
            ] {
                let _ = apply(s, Some(&live), &cfg, &op("k", T0), false);
                let _ = update(s, Some(&live), &cfg, &op("k", T0));
            }
        }
        let bad_mf = [
            json!("x"),
            json!([1]),
            json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"k:[": {}}}]),
        ];
        for mf in bad_mf {
            let live = with_mf(deployment(1), mf);
            assert!(apply(s, Some(&live), &deployment(1), &op("k", T0), false).is_err());
        }
    });
}

/// Stored sets are read as JSON and decoded only when a write touches them: an update
/// takes the fields it changes from their owners and drops the fields it removes from
/// every owner, while sets it does not touch come back byte for byte.
#[test]
fn updates_touch_only_the_sets_they_change() {
    with_schema(|s| {
        let mut live = deployment(1);
        live["metadata"]["uid"] = json!("u1");
        live["metadata"]["labels"] = json!({"app": "x", "tier": "web", "team": "a"});
        let mf = json!([
            {"manager": "labeler", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:tier": {}}}}},
            {"manager": "team", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}}},
            {"manager": "scaler", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
        ]);
        let live = with_mf(live, mf.clone());
        // the request carries the stored managedFields back (as clients do): `tier`
        // changes hands, `team` is removed, `replicas` is left alone
        let mut new = live.clone();
        new["metadata"]["labels"] = json!({"app": "x", "tier": "api"});
        let got =
            fieldmanager::update_owned(s, Some(&live), &new, Some(mf.clone()), &op("editor", T1))
                .unwrap();
        let by: std::collections::BTreeMap<&str, &Value> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["manager"].as_str().unwrap(), &e["fieldsV1"]))
            .collect();
        assert_eq!(
            by.keys().copied().collect::<Vec<_>>(),
            ["editor", "labeler", "scaler"],
            "team owned only the removed label: {got}"
        );
        assert_eq!(
            *by["labeler"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        );
        assert_eq!(
            *by["editor"],
            json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
        );
        assert_eq!(*by["scaler"], mf[2]["fieldsV1"]);
        // the same through `update`, which copies the request's managedFields
        assert_eq!(
            update(s, Some(&live), &new, &op("editor", T1)).unwrap(),
            got
        );
        // a request with managedFields that differ from the stored ones is decoded and
        // checked: an undecodable set falls back to the stored ones
        let bad = json!([{"manager": "x", "operation": "Update", "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"k:[": {}}}]);
        assert_eq!(
            fieldmanager::update_owned(s, Some(&live), &new, Some(bad), &op("editor", T1)).unwrap(),
            got
        );
    });
}
