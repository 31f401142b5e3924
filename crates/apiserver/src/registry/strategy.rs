//! Per-kind write strategies: what the server sets, keeps and resets on create, update,
//! status update and delete, as upstream registry strategies (`PrepareForCreate`,
//! `PrepareForUpdate`, `ResetObjectMetaForStatus`, graceful deletion) do.

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::registry::catalog::ResourceDef;

/// Kinds whose objects carry `metadata.generation`.
pub fn uses_generation(def: &ResourceDef) -> bool {
    def.custom.is_some()
        || matches!(
            def.kind,
            "Pod"
                | "Deployment"
                | "ReplicaSet"
                | "StatefulSet"
                | "DaemonSet"
                | "Job"
                | "CronJob"
                | "ReplicationController"
                | "PodDisruptionBudget"
                | "HorizontalPodAutoscaler"
                | "NetworkPolicy"
                | "Ingress"
                | "ServiceCIDR"
                | "CustomResourceDefinition"
        )
}

/// Upstream's alphabet for generated names (no vowels, no confusable characters).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Upstream keeps at most 58 characters of the prefix (63 - 5 random characters).
const MAX_GENERATED_PREFIX: usize = 58;

/// A name from `generateName` as upstream's `SimpleNameGenerator` makes it.
pub fn generate_name(prefix: &str) -> String {
    let mut base: String = prefix.chars().take(MAX_GENERATED_PREFIX).collect();
    let mut rng = rand::rng();
    for _ in 0..5 {
        let i = rng.random_range(0..ALPHANUMS.len());
        base.push(ALPHANUMS[i] as char);
    }
    base
}

/// The metadata map of an object (created when missing).
pub fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let o = obj.as_object_mut()?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if !m.is_object() {
        *m = json!({});
    }
    m.as_object_mut()
}

/// `metadata.<field>` as a string.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Set what the server owns on create: uid, creationTimestamp, generation, and clear
/// what clients may not set (deletion fields), then apply the kind's create rules.
pub fn prepare_create(def: &ResourceDef, obj: &mut Value) {
    if let Some(m) = meta_mut(obj) {
        m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        m.insert(
            "creationTimestamp".into(),
            json!(apimachinery::time::now_rfc3339()),
        );
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        m.remove("selfLink");
        if uses_generation(def) {
            m.insert("generation".into(), json!(1));
        } else {
            m.remove("generation");
        }
    }
    // clients do not set status on create; defaulting fills what upstream records
    // (pod phase and QoS class, namespace phase, service load balancer). Nodes keep
    // theirs: kubelets register with their status (upstream node PrepareForCreate).
    if def.custom.is_some() {
        // custom resources with a status subresource drop the status on create
        if def.has_status() {
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
    } else if def.has_status() && !(def.group.is_empty() && def.kind == "Node") {
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), json!({}));
        }
    }
}

/// Metadata fields the server owns: kept from the stored object on every update.
const SYSTEM_META: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

/// Prepare an update of the main resource: keep system metadata and (for kinds with a
/// status subresource) the stored status; bump generation when the spec changed.
pub fn prepare_update(def: &ResourceDef, old: &Value, new: &mut Value) {
    copy_system_meta(old, new);
    if def.has_status() {
        if let Some(o) = new.as_object_mut() {
            match old.get("status") {
                Some(s) => {
                    o.insert("status".into(), s.clone());
                }
                None => {
                    o.remove("status");
                }
            }
        }
    }
    if def.kind == "Namespace" {
        // spec.finalizers only change through /finalize
        if let (Some(o), Some(f)) = (new.as_object_mut(), old.pointer("/spec/finalizers")) {
            let spec = o.entry("spec").or_insert_with(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.insert("finalizers".into(), f.clone());
            }
        }
    }
    if def.group == "apiextensions.k8s.io" && def.kind == "CustomResourceDefinition" {
        record_stored_version(new);
    }
    bump_generation(def, old, new);
}

/// Upstream's CRD `PrepareForUpdate`: a new storage version joins `status.storedVersions`.
fn record_stored_version(crd: &mut Value) {
    let storage: Option<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v.get("name").cloned());
    let Some(storage) = storage else {
        return;
    };
    let Some(o) = crd.as_object_mut() else {
        return;
    };
    let status = o.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = &mut status["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(a) = stored.as_array_mut() {
        if !a.contains(&storage) {
            a.push(storage);
        }
    }
}

fn copy_system_meta(old: &Value, new: &mut Value) {
    let old_meta = old.get("metadata").and_then(Value::as_object);
    if let Some(m) = meta_mut(new) {
        for f in SYSTEM_META {
            match old_meta.and_then(|om| om.get(*f)) {
                Some(v) => {
                    m.insert((*f).into(), v.clone());
                }
                None => {
                    m.remove(*f);
                }
            }
        }
    }
}

fn bump_generation(def: &ResourceDef, old: &Value, new: &mut Value) {
    if !uses_generation(def) {
        return;
    }
    let spec_changed = {
        let strip = |v: &Value| -> Value {
            let mut c = v.clone();
            if let Some(o) = c.as_object_mut() {
                o.remove("metadata");
                // without a status subresource, a custom resource's status is content
                if def.custom.is_none() || def.has_status() {
                    o.remove("status");
                }
            }
            c
        };
        strip(old) != strip(new)
    };
    let deleting_now = old.pointer("/metadata/deletionTimestamp").is_none()
        && new.pointer("/metadata/deletionTimestamp").is_some();
    if spec_changed || deleting_now {
        let g = old
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        if let Some(m) = meta_mut(new) {
            m.insert("generation".into(), json!(g));
        }
    }
}

/// Kinds whose upstream status strategy only resets the spec, so a status update also
/// writes the object's metadata (labels, annotations, ...); newer kinds call
/// `ResetObjectMetaForStatus` and ignore metadata changes.
fn status_update_keeps_metadata(def: &ResourceDef) -> bool {
    matches!(
        (def.group, def.kind),
        (
            "",
            "Pod" | "Node" | "Service" | "ReplicationController" | "Namespace"
        ) | (
            "apps",
            "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
        ) | ("batch", "Job" | "CronJob")
    )
}

/// Prepare a status update: `status` from `new`, the spec from `old`; metadata from `new`
/// (system fields kept) for the kinds whose upstream strategy allows it (Deployment keeps
/// its labels, Pod its owner references), from `old` for the others.
pub fn prepare_status_update(def: &ResourceDef, old: &Value, new: &Value) -> Value {
    if status_update_keeps_metadata(def) {
        let mut out = new.clone();
        if let Some(o) = out.as_object_mut() {
            match old.get("spec") {
                Some(spec) => {
                    o.insert("spec".into(), spec.clone());
                }
                None => {
                    o.remove("spec");
                }
            }
            if o.get("metadata").is_none_or(|m| !m.is_object()) {
                o.insert(
                    "metadata".into(),
                    old.get("metadata").cloned().unwrap_or(json!({})),
                );
            }
        }
        copy_system_meta(old, &mut out);
        let keep_from_old: &[&str] = match def.kind {
            "Deployment" => &["labels"],
            "Pod" => &["ownerReferences"],
            _ => &[],
        };
        if let Some(m) = meta_mut(&mut out) {
            for f in keep_from_old {
                match old.pointer(&format!("/metadata/{f}")) {
                    Some(v) => {
                        m.insert((*f).into(), v.clone());
                    }
                    None => {
                        m.remove(*f);
                    }
                }
            }
        }
        return out;
    }
    let mut out = old.clone();
    if let Some(o) = out.as_object_mut() {
        match new.get("status") {
            Some(s) => {
                o.insert("status".into(), s.clone());
            }
            None => {
                o.remove("status");
            }
        }
    }
    out
}

/// Prepare a namespace `/finalize` update: only `spec.finalizers` changes.
pub fn prepare_finalize_update(old: &Value, new: &Value) -> Value {
    let mut out = old.clone();
    let fin = new
        .pointer("/spec/finalizers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    if let Some(o) = out.as_object_mut() {
        let spec = o.entry("spec").or_insert_with(|| json!({}));
        if let Some(s) = spec.as_object_mut() {
            s.insert("finalizers".into(), fin);
        }
    }
    out
}

/// Whether an object may be removed for good: it is being deleted and nothing
/// (metadata finalizers, or a namespace's spec finalizers) holds it.
pub fn ready_to_vanish(obj: &Value) -> bool {
    if obj.pointer("/metadata/deletionTimestamp").is_none() {
        return false;
    }
    // a graceful deletion in progress (a pod with grace > 0) ends with a DELETE, not
    // with an update (upstream `shouldDeleteDuringUpdate`)
    if obj
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|g| g > 0)
    {
        return false;
    }
    let meta_fin = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let spec_fin = obj.get("kind").and_then(Value::as_str) == Some("Namespace")
        && obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
    !meta_fin && !spec_fin
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::Catalog;

    #[test]
    fn generated_names_follow_upstream() {
        let n = generate_name("gen-");
        assert_eq!(n.len(), 9);
        assert!(n[4..].bytes().all(|b| ALPHANUMS.contains(&b)));
        let long = "x".repeat(80);
        assert_eq!(generate_name(&long).len(), 63);
    }

    #[test]
    fn generation_bumps_on_spec_change_only() {
        let def = Catalog::builtin()
            .lookup("apps", "v1", "deployments")
            .expect("deployments");
        let old = json!({"metadata": {"generation": 3, "uid": "u"}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let mut same = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1}, "status": {"replicas": 9}});
        prepare_update(def, &old, &mut same);
        assert_eq!(same["metadata"]["generation"], 3);
        assert_eq!(
            same["status"]["replicas"], 1,
            "status is kept on main-resource update"
        );
        assert_eq!(same["metadata"]["uid"], "u");
        let mut changed = json!({"metadata": {}, "spec": {"replicas": 2}});
        prepare_update(def, &old, &mut changed);
        assert_eq!(changed["metadata"]["generation"], 4);
    }

    #[test]
    fn vanish_rules() {
        assert!(!ready_to_vanish(&json!({"metadata": {}})));
        assert!(!ready_to_vanish(
            &json!({"metadata": {"deletionTimestamp": "t", "deletionGracePeriodSeconds": 30}})
        ));
        assert!(ready_to_vanish(
            &json!({"metadata": {"deletionTimestamp": "t", "finalizers": []}})
        ));
        assert!(!ready_to_vanish(
            &json!({"metadata": {"deletionTimestamp": "t", "finalizers": ["x"]}})
        ));
        assert!(!ready_to_vanish(
            &json!({"kind": "Namespace", "metadata": {"deletionTimestamp": "t"}, "spec": {"finalizers": ["kubernetes"]}})
        ));
    }
}

#[cfg(test)]
mod status_update_tests {
    use super::*;
    use crate::registry::catalog::Catalog;

    #[test]
    fn crd_updates_record_a_new_storage_version() {
        let d = def("apiextensions.k8s.io", "CustomResourceDefinition");
        let old = json!({"metadata": {"name": "x", "generation": 1}, "spec": {"versions": [{"name": "v1", "storage": true}]}, "status": {"storedVersions": ["v1"]}});
        let mut new = json!({"metadata": {"name": "x"}, "spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]}});
        prepare_update(d, &old, &mut new);
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(new["metadata"]["generation"], 2);
    }

    fn def(group: &str, kind: &str) -> &'static ResourceDef {
        let version = if group == "autoscaling" { "v2" } else { "v1" };
        Catalog::builtin()
            .by_kind(group, version, kind)
            .expect("known kind")
    }

    #[test]
    fn legacy_status_updates_write_metadata_and_never_the_spec() {
        let old = json!({
            "metadata": {"name": "d", "uid": "u1", "labels": {"a": "1"}, "annotations": {"x": "1"}, "generation": 3},
            "spec": {"replicas": 1},
            "status": {"replicas": 0},
        });
        let new = json!({
            "metadata": {"name": "d", "uid": "other", "labels": {"a": "2"}, "annotations": {"x": "2"}, "generation": 9},
            "spec": {"replicas": 5},
            "status": {"replicas": 1},
        });
        // Deployment: annotations from the request, labels and spec kept
        let d = prepare_status_update(def("apps", "Deployment"), &old, &new);
        assert_eq!(d["metadata"]["annotations"]["x"], "2");
        assert_eq!(d["metadata"]["labels"]["a"], "1");
        assert_eq!(d["metadata"]["uid"], "u1");
        assert_eq!(d["metadata"]["generation"], 3);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["status"]["replicas"], 1);
        // ReplicaSet: labels too
        let r = prepare_status_update(def("apps", "ReplicaSet"), &old, &new);
        assert_eq!(r["metadata"]["labels"]["a"], "2");
        // a newer kind (Lease has no status; use HPA): metadata changes ignored
        let h = prepare_status_update(def("autoscaling", "HorizontalPodAutoscaler"), &old, &new);
        assert_eq!(h["metadata"]["annotations"]["x"], "1");
        assert_eq!(h["status"]["replicas"], 1);
    }
}
