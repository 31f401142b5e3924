//! `metadata.generation` of every built-in kind through its strategy, as upstream's
//! `PrepareForCreate` and `PrepareForUpdate` (`pkg/registry/<group>/<kind>/strategy.go`)
//! set it: 1 at create for the kinds that track it (a client's value is kept by the
//! others, whose generation an update pins to the stored one), and bumped by the updates
//! the kind's strategy counts.

use serde_json::{json, Value};

use crate::registry::catalog::{Catalog, ResourceDef};
use crate::registry::rest;

/// One served kind: the top-level field that holds its content, whether it tracks
/// generation, and which updates bump it.
struct Row {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    /// The field an update of the kind's content changes (`spec` for most kinds).
    content: &'static str,
    /// 1 at create (else the client's value is kept).
    tracked: bool,
    /// Bumped by a content change, a label change, an annotation change.
    bumps: [bool; 3],
}

const fn row(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    content: &'static str,
    tracked: bool,
    bumps: [bool; 3],
) -> Row {
    Row {
        group,
        version,
        kind,
        content,
        tracked,
        bumps,
    }
}

const NONE: [bool; 3] = [false; 3];
const CONTENT: [bool; 3] = [true, false, false];

/// Upstream 1.36's rules, kind by kind.
const ROWS: &[Row] = &[
    row("", "v1", "ConfigMap", "data", false, NONE),
    row("", "v1", "Endpoints", "subsets", false, NONE),
    row("", "v1", "Event", "message", false, NONE),
    row("", "v1", "LimitRange", "spec", false, NONE),
    row("", "v1", "Namespace", "spec", false, NONE),
    row("", "v1", "Node", "spec", false, NONE),
    row("", "v1", "PersistentVolumeClaim", "spec", false, NONE),
    row("", "v1", "PersistentVolume", "spec", false, NONE),
    // updatePodGeneration: spec changes
    row("", "v1", "Pod", "spec", true, CONTENT),
    // podTemplateStrategy: template changes
    row("", "v1", "PodTemplate", "template", true, CONTENT),
    row("", "v1", "ReplicationController", "spec", true, CONTENT),
    row("", "v1", "ResourceQuota", "spec", false, NONE),
    row("", "v1", "Secret", "data", false, NONE),
    row("", "v1", "ServiceAccount", "secrets", false, NONE),
    row("", "v1", "Service", "spec", false, NONE),
    row("apps", "v1", "ControllerRevision", "data", false, NONE),
    row("apps", "v1", "DaemonSet", "spec", true, CONTENT),
    // deploymentStrategy: spec or annotations (copied to the replica sets)
    row(
        "apps",
        "v1",
        "Deployment",
        "spec",
        true,
        [true, false, true],
    ),
    row("apps", "v1", "ReplicaSet", "spec", true, CONTENT),
    row("apps", "v1", "StatefulSet", "spec", true, CONTENT),
    row("events.k8s.io", "v1", "Event", "note", false, NONE),
    // HPAGeneration is not enabled in 1.36
    row(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "spec",
        false,
        NONE,
    ),
    row(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "spec",
        false,
        NONE,
    ),
    row("batch", "v1", "CronJob", "spec", true, CONTENT),
    row("batch", "v1", "Job", "spec", true, CONTENT),
    row(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "spec",
        false,
        NONE,
    ),
    row(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "spec",
        true,
        CONTENT,
    ),
    row("networking.k8s.io", "v1", "Ingress", "spec", true, CONTENT),
    row("networking.k8s.io", "v1", "IPAddress", "spec", false, NONE),
    row(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "spec",
        false,
        NONE,
    ),
    row("policy", "v1", "PodDisruptionBudget", "spec", true, CONTENT),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "subjects",
        false,
        NONE,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "rules",
        false,
        NONE,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "subjects",
        false,
        NONE,
    ),
    row(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "rules",
        false,
        NONE,
    ),
    row("storage.k8s.io", "v1", "CSIDriver", "spec", true, CONTENT),
    row("storage.k8s.io", "v1", "CSINode", "spec", false, NONE),
    row(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "storageClassName",
        false,
        NONE,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "provisioner",
        false,
        NONE,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "spec",
        false,
        NONE,
    ),
    row(
        "storage.k8s.io",
        "v1",
        "VolumeAttributesClass",
        "parameters",
        false,
        NONE,
    ),
    // the webhook configurations' strategies: bumped when `webhooks` changes
    row(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "webhooks",
        true,
        CONTENT,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "webhooks",
        true,
        CONTENT,
    ),
    row(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "spec",
        true,
        CONTENT,
    ),
    // priorityClassStrategy: 1 at create, never bumped
    row(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "value",
        true,
        NONE,
    ),
    row("coordination.k8s.io", "v1", "Lease", "spec", false, NONE),
    // the admission policies and bindings: spec changes
    row(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingAdmissionPolicy",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingAdmissionPolicyBinding",
        "spec",
        true,
        CONTENT,
    ),
    // endpointSliceStrategy: anything but metadata, or the labels
    row(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpoints",
        true,
        [true, true, false],
    ),
    // runtimeClassStrategy: no generation
    row("node.k8s.io", "v1", "RuntimeClass", "handler", false, NONE),
    // deviceClassStrategy and resourceSliceStrategy: spec changes
    row(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "spec",
        false,
        NONE,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "spec",
        false,
        NONE,
    ),
    row(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "spec",
        true,
        CONTENT,
    ),
    // flowSchemaStrategy, priorityLevelConfigurationStrategy: spec changes
    row(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        "spec",
        true,
        CONTENT,
    ),
    row(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        "spec",
        true,
        CONTENT,
    ),
    // apiServiceStrategy: no generation
    row(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "spec",
        false,
        NONE,
    ),
];

fn def(r: &Row) -> &'static ResourceDef {
    Catalog::builtin()
        .by_kind(r.group, r.version, r.kind)
        .unwrap_or_else(|| panic!("{} {} is not served", r.group, r.kind))
}

/// The kind's object as stored, with generation `g` (none when `g` is 0).
fn stored(r: &Row, g: i64) -> Value {
    let def = def(r);
    let mut meta = json!({
        "name": "x", "uid": "u", "resourceVersion": "7",
        "labels": {"a": "1"}, "annotations": {"b": "1"},
    });
    if g > 0 {
        meta["generation"] = json!(g);
    }
    let mut obj = json!({"apiVersion": def.api_version(), "kind": r.kind, "metadata": meta});
    obj[r.content] = json!({"content": 1});
    if has_status(def) {
        obj["status"] = json!({"observed": 1});
    }
    obj
}

/// Whether the kind's schema has a `status`.
fn has_status(def: &ResourceDef) -> bool {
    crate::registry::catalog::definitions()
        .get(&def.definition())
        .and_then(|d| d.pointer("/properties/status"))
        .is_some()
}

fn generation(v: &Value) -> Option<i64> {
    v.pointer("/metadata/generation").and_then(Value::as_i64)
}

#[test]
fn every_served_kind_has_a_row() {
    let missing: Vec<String> = Catalog::builtin()
        .resources()
        .iter()
        .filter(|d| d.custom.is_none())
        // reviews are never stored: nothing has a generation
        .filter(|d| !d.strategy.create_only())
        .filter(|d| {
            !ROWS
                .iter()
                .any(|r| (r.group, r.version, r.kind) == (d.group, d.version, d.kind))
        })
        .map(|d| format!("{} {} {}", d.group, d.version, d.kind))
        .collect();
    assert!(missing.is_empty(), "no generation rule for {missing:?}");
    let by_kind = |k: &str| def(ROWS.iter().find(|r| r.kind == k).expect("row"));
    assert!(has_status(by_kind("Deployment")) && !has_status(by_kind("EndpointSlice")));
}

#[test]
fn create_sets_generation_as_upstream() {
    for r in ROWS {
        let mut obj = stored(r, 5);
        rest::prepare_create(def(r), &mut obj);
        let want = if r.tracked { 1 } else { 5 };
        assert_eq!(generation(&obj), Some(want), "{} {}", r.group, r.kind);
    }
}

/// An update made to a stored object.
type Change = fn(&Row, &mut Value);

#[test]
fn updates_bump_generation_as_upstream() {
    let changes: [(&str, Change); 3] = [
        ("content", |r, v| v[r.content] = json!({"content": 2})),
        ("labels", |_, v| v["metadata"]["labels"]["a"] = json!("2")),
        ("annotations", |_, v| {
            v["metadata"]["annotations"]["b"] = json!("2")
        }),
    ];
    for r in ROWS {
        let old = stored(r, 3);
        for (i, (what, change)) in changes.iter().enumerate() {
            let mut new = old.clone();
            change(r, &mut new);
            // a client's generation is never taken on update
            new["metadata"]["generation"] = json!(40);
            rest::prepare_update(def(r), &old, &mut new);
            let want = if r.bumps[i] { 4 } else { 3 };
            assert_eq!(
                generation(&new),
                Some(want),
                "{} {}: {what} change",
                r.group,
                r.kind
            );
        }
        // status changes never bump a built-in kind's generation
        if !has_status(def(r)) {
            continue;
        }
        let mut new = old.clone();
        new["status"] = json!({"observed": 2});
        rest::prepare_update(def(r), &old, &mut new);
        assert_eq!(generation(&new), Some(3), "{} {}: status", r.group, r.kind);
        let status = rest::prepare_status_update(def(r), &old, &new);
        assert_eq!(
            generation(&status),
            Some(3),
            "{} {}: /status",
            r.group,
            r.kind
        );
    }
    // a kind without generation keeps none
    let cm = &ROWS[0];
    let old = stored(cm, 0);
    let mut new = old.clone();
    new["data"] = json!({"k": "v"});
    new["metadata"]["generation"] = json!(9);
    rest::prepare_update(def(cm), &old, &mut new);
    assert_eq!(generation(&new), None);
}

/// DaemonSets count template changes in `deprecated.daemonset.template.generation`
/// (apps/v1's form of the internal `spec.templateGeneration`), which a client cannot set
/// on update.
#[test]
fn daemon_set_template_generation() {
    let ds = ROWS
        .iter()
        .find(|r| r.kind == "DaemonSet")
        .expect("DaemonSet row");
    let d = def(ds);
    let ann = "deprecated.daemonset.template.generation";
    let mut created = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"x": 1}}}});
    rest::prepare_create(d, &mut created);
    assert_eq!(created["metadata"]["annotations"][ann], "1");
    // a client's template generation is honoured on create, as upstream's conversion does
    let mut given = json!({"metadata": {"name": "d", "annotations": {(ann): "4"}}, "spec": {}});
    rest::prepare_create(d, &mut given);
    assert_eq!(given["metadata"]["annotations"][ann], "4");

    let mut old = created.clone();
    old["metadata"]["generation"] = json!(2);
    old["metadata"]["annotations"][ann] = json!("2");
    // a template change: both counters
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["x"] = json!(2);
    rest::prepare_update(d, &old, &mut new);
    assert_eq!(
        (generation(&new), &new["metadata"]["annotations"][ann]),
        (Some(3), &json!("3"))
    );
    // another spec change: only generation
    let mut new = old.clone();
    new["spec"]["minReadySeconds"] = json!(5);
    rest::prepare_update(d, &old, &mut new);
    assert_eq!(
        (generation(&new), &new["metadata"]["annotations"][ann]),
        (Some(3), &json!("2"))
    );
    // the annotation itself is the server's: dropped or changed, it keeps its value
    for value in [Value::Null, json!("9")] {
        let mut new = old.clone();
        match &value {
            Value::Null => {
                new["metadata"]["annotations"]
                    .as_object_mut()
                    .map(|a| a.remove(ann));
            }
            v => new["metadata"]["annotations"][ann] = v.clone(),
        }
        rest::prepare_update(d, &old, &mut new);
        assert_eq!(
            (generation(&new), &new["metadata"]["annotations"][ann]),
            (Some(2), &json!("2")),
            "{value}"
        );
    }
}
