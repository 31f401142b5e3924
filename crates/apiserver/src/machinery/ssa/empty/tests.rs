use super::*;
use serde_json::{json, Map};

/// Every kind of the brief, to check coverage.
const KINDS: &[(&str, &str, &str)] = &[
    ("", "v1", "ConfigMap"),
    ("", "v1", "Endpoints"),
    ("", "v1", "Event"),
    ("", "v1", "LimitRange"),
    ("", "v1", "Namespace"),
    ("", "v1", "Node"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "PersistentVolume"),
    ("", "v1", "Pod"),
    ("", "v1", "PodTemplate"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "ResourceQuota"),
    ("", "v1", "Secret"),
    ("", "v1", "ServiceAccount"),
    ("", "v1", "Service"),
    ("apps", "v1", "ControllerRevision"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("batch", "v1", "CronJob"),
    ("batch", "v1", "Job"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("events.k8s.io", "v1", "Event"),
    ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("networking.k8s.io", "v1", "IPAddress"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("networking.k8s.io", "v1", "ServiceCIDR"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("storage.k8s.io", "v1", "CSIDriver"),
    ("storage.k8s.io", "v1", "CSINode"),
    ("storage.k8s.io", "v1", "CSIStorageCapacity"),
    ("storage.k8s.io", "v1", "StorageClass"),
    ("storage.k8s.io", "v1", "VolumeAttachment"),
    ("storage.k8s.io", "v1", "VolumeAttributesClass"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
];

fn get(group: &str, version: &str, kind: &str) -> Value {
    empty_object(group, version, kind)
        .unwrap_or_else(|| panic!("no empty object for {group}/{version} {kind}"))
}

#[test]
fn every_kind_is_an_object_with_empty_metadata() {
    for &(g, v, k) in KINDS {
        let o = get(g, v, k);
        let o = o
            .as_object()
            .unwrap_or_else(|| panic!("{k} is not an object"));
        // 1.36: creationTimestamp is `omitempty,omitzero`, so zero metadata is `{}`.
        assert_eq!(o.get("metadata"), Some(&json!({})), "{g}/{v} {k}");
        assert!(
            !o.contains_key("apiVersion") && !o.contains_key("kind"),
            "{k}: TypeMeta is omitempty"
        );
    }
    assert_eq!(known_kinds().count(), KINDS.len());
    for (g, v, k) in known_kinds() {
        assert!(KINDS.contains(&(g, v, k)), "unexpected kind {g}/{v} {k}");
    }
}

#[test]
fn unknown_kinds_are_none() {
    assert_eq!(empty_object("apps", "v1", "Widget"), None);
    assert_eq!(empty_object("apps", "v1beta1", "Deployment"), None);
    assert_eq!(empty_object("", "v1", "deployment"), None);
    assert_eq!(empty_object("example.com", "v1", "Foo"), None);
}

fn pod_template() -> Value {
    json!({"metadata": {}, "spec": {"containers": null}})
}

#[test]
fn hand_checked_shapes() {
    let cases = [
        (
            ("apps", "v1", "Deployment"),
            json!({"metadata": {}, "spec": {"selector": null, "template": pod_template(), "strategy": {}}, "status": {}}),
        ),
        (
            ("", "v1", "Pod"),
            json!({"metadata": {}, "spec": {"containers": null}, "status": {}}),
        ),
        (
            ("", "v1", "Service"),
            json!({"metadata": {}, "spec": {}, "status": {"loadBalancer": {}}}),
        ),
        (("", "v1", "ConfigMap"), json!({"metadata": {}})),
        (("", "v1", "Secret"), json!({"metadata": {}})),
        (
            ("", "v1", "Namespace"),
            json!({"metadata": {}, "spec": {}, "status": {}}),
        ),
        (
            ("coordination.k8s.io", "v1", "Lease"),
            json!({"metadata": {}, "spec": {}}),
        ),
        (
            ("batch", "v1", "Job"),
            json!({"metadata": {}, "spec": {"template": pod_template()}, "status": {}}),
        ),
        (
            ("batch", "v1", "CronJob"),
            json!({"metadata": {}, "spec": {"schedule": "", "jobTemplate": {"metadata": {}, "spec": {"template": pod_template()}}}, "status": {}}),
        ),
        (
            ("apps", "v1", "StatefulSet"),
            json!({"metadata": {}, "spec": {"selector": null, "template": pod_template(), "serviceName": "", "updateStrategy": {}},
                   "status": {"replicas": 0, "availableReplicas": 0}}),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
            json!({"metadata": {}, "roleRef": {"apiGroup": "", "kind": "", "name": ""}}),
        ),
        (
            ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
            json!({"metadata": {}, "rules": null}),
        ),
        (
            ("scheduling.k8s.io", "v1", "PriorityClass"),
            json!({"metadata": {}, "value": 0}),
        ),
        (
            ("networking.k8s.io", "v1", "NetworkPolicy"),
            json!({"metadata": {}, "spec": {"podSelector": {}}}),
        ),
        (
            ("apps", "v1", "ControllerRevision"),
            json!({"metadata": {}, "data": null, "revision": 0}),
        ),
    ];
    for ((g, v, k), want) in cases {
        assert_eq!(get(g, v, k), want, "{g}/{v} {k}");
    }
}

#[test]
fn nested_struct_fields() {
    let node = get("", "v1", "Node");
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert!(node["status"]["nodeInfo"].is_object());
    let crd = get("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    assert_eq!(crd["spec"]["names"], json!({"plural": "", "kind": ""}));
    assert_eq!(
        crd["status"]["acceptedNames"],
        json!({"plural": "", "kind": ""})
    );
    let ev = get("events.k8s.io", "v1", "Event");
    assert_eq!(ev["regarding"], json!({}));
    assert_eq!(ev["deprecatedSource"], json!({}));
    assert_eq!(
        get("", "v1", "PersistentVolumeClaim")["spec"]["resources"],
        json!({})
    );
    assert_eq!(
        get("storage.k8s.io", "v1", "VolumeAttachment")["spec"]["source"],
        json!({})
    );
    assert_eq!(
        get("autoscaling", "v2", "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"],
        json!({"kind": "", "name": ""})
    );
    assert_eq!(
        get("networking.k8s.io", "v1", "Ingress")["status"],
        json!({"loadBalancer": {}})
    );
}

/// Walks a fieldsV1 node alongside the empty object.
///
/// A `f:` node without `"."` that has children must be present in the empty object: as an
/// object (a non-pointer struct), or, for a list (children `k:`/`v:`/`i:`), possibly as
/// `null` (a nil slice without `omitempty`, e.g. `spec.containers`: structured-merge-diff
/// treats the null as an existing, empty list, so the list itself is not recorded as added). A node with `"."` must be absent
/// (it was added by the create). List elements and map entries (`k:`, `v:`, `i:`) are skipped.
fn check_fields(
    fields: &Map<String, Value>,
    empty: Option<&Value>,
    path: &str,
    errors: &mut Vec<String>,
    checked: &mut usize,
) {
    for (key, child) in fields {
        let Some(name) = key.strip_prefix("f:") else {
            continue;
        }; // ".", k:, v:, i:
        let child = child.as_object().expect("fieldsV1 nodes are objects");
        let here = format!("{path}.{name}");
        let field = empty.and_then(|e| e.get(name));
        if child.contains_key(".") {
            *checked += 1;
            if let Some(f) = field {
                errors.push(format!(
                    "{here}: has \".\" but is present in the empty object as {f}"
                ));
            }
        } else if !child.is_empty() {
            *checked += 1;
            let is_list = child
                .keys()
                .any(|k| k.starts_with("k:") || k.starts_with("v:") || k.starts_with("i:"));
            match field {
                Some(f) if f.is_object() => check_fields(child, Some(f), &here, errors, checked),
                Some(Value::Null) if is_list => {}
                other => errors.push(format!(
                    "{here}: lacks \".\" but the empty object has {other:?}"
                )),
            }
        }
    }
}

#[test]
fn reference_managed_fields_agree() {
    let dir_buf = reference_dir("objects");
    let dir = dir_buf.as_path();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let (mut files, mut checked, mut errors) = (0, 0, Vec::new());
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let obj: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (Some(api_version), Some(kind)) = (obj["apiVersion"].as_str(), obj["kind"].as_str())
        else {
            continue;
        };
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let Some(empty) = empty_object(group, version, kind) else {
            continue;
        };
        let Some(mfs) = obj["metadata"]["managedFields"].as_array() else {
            continue;
        };
        for mf in mfs {
            if mf["operation"] != "Update" || mf.get("subresource").is_some() {
                continue;
            }
            let fields = mf["fieldsV1"].as_object().expect("fieldsV1");
            check_fields(
                fields,
                Some(&empty),
                &path.file_name().unwrap().to_string_lossy(),
                &mut errors,
                &mut checked,
            );
            files += 1;
        }
    }
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(
        files >= 10,
        "expected most reference objects to be checked, got {files}"
    );
    assert!(checked > 0);
    eprintln!("checked {checked} fieldsV1 nodes in {files} managedFields entries");
}

/// The `$ref` of an OpenAPI v3 property (direct or via `allOf`), as a definition name.
fn schema_ref(prop: &Value) -> Option<&str> {
    let r = prop
        .get("$ref")
        .or_else(|| prop["allOf"].as_array()?.iter().find_map(|a| a.get("$ref")))?;
    r.as_str()?.rsplit('/').next()
}

/// Walks a definition alongside an empty object: kube-openapi marks exactly the non-pointer
/// struct fields with `"default": {}`, so those (and only those) must be objects here; every
/// key of the empty object must be a property of the definition.
fn check_schema(
    schemas: &Map<String, Value>,
    def: &str,
    empty: &Value,
    path: &str,
    errors: &mut Vec<String>,
) {
    let props = schemas[def]["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (name, prop) in &props {
        let defaulted = prop.get("default") == Some(&json!({}));
        let target = schema_ref(prop);
        let string_like = target.is_some_and(|t| schemas[t]["type"] == "string"); // Time, Quantity, IntOrString
        let field = empty.get(name);
        if defaulted != field.is_some_and(Value::is_object) && !string_like {
            errors.push(format!(
                "{path}.{name}: openapi default {{}} = {defaulted}, empty object has {field:?}"
            ));
        }
        if let (Some(f), Some(t)) = (field.filter(|f| f.is_object()), target) {
            check_schema(schemas, t, f, &format!("{path}.{name}"), errors);
        }
    }
    for key in empty.as_object().into_iter().flat_map(Map::keys) {
        if !props.contains_key(key) {
            errors.push(format!("{path}.{key}: not a property of {def}"));
        }
    }
}

#[test]
fn openapi_defaults_agree() {
    let dir_buf = reference_dir("openapi-v3");
    let dir = dir_buf.as_path();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut schemas = Map::new();
    for entry in entries {
        let path = entry.unwrap().path();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if let Some(s) = doc["components"]["schemas"].as_object() {
            schemas.extend(s.clone());
        }
    }
    let mut errors = Vec::new();
    for (g, v, k) in known_kinds() {
        let def = schemas.iter().find_map(|(name, s)| {
            let gvks = s["x-kubernetes-group-version-kind"].as_array()?;
            gvks.iter()
                .any(|x| x["group"] == g && x["version"] == v && x["kind"] == k)
                .then_some(name.clone())
        });
        let Some(def) = def else {
            errors.push(format!("{g}/{v} {k}: no OpenAPI definition"));
            continue;
        };
        check_schema(&schemas, &def, &get(g, v, k), k, &mut errors);
    }
    assert!(errors.is_empty(), "{errors:#?}");
}

use crate::reference::dir as reference_dir;

#[test]
fn empty_objects_of_known_kinds_only() {
    let d = empty_object("apps", "v1", "Deployment").expect("known kind");
    assert_eq!(d["spec"]["strategy"], serde_json::json!({}));
    assert!(empty_object("example.com", "v1", "Widget").is_none());
}
