//! The generic store's rules around a write (upstream `k8s.io/apiserver/pkg/registry/rest`
//! `BeforeCreate`, `BeforeUpdate`, `BeforeDelete`), which call each kind's
//! [`Strategy`](crate::registry::catalog::Strategy).
//!
//! Every create runs: decode-time defaults → field manager → [`prepare_create`]
//! (server-owned metadata, then the kind's `PrepareForCreate`) → create-time defaults →
//! [`validate_object`]. Updates run decode-time defaults, [`prepare_update`] (or the
//! status/finalize variants) and validation. What is stored is what Go's decode,
//! protobuf storage and encode would make of it ([`go_roundtrip`]). Handlers call these
//! functions and never name a kind.

use rand::Rng;
use serde_json::{json, Map, Value};

use crate::machinery::protobuf::roundtrip;
pub use crate::machinery::protobuf::roundtrip::Mode;
use crate::registry::catalog::{Phase, ResourceDef, StatusMeta};
use apimachinery::status::{ApiError, ApiResult};

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

/// Add finalizer `f` to the object unless it has it.
pub fn add_finalizer(obj: &mut Value, f: &str) {
    if let Some(m) = meta_mut(obj) {
        let list = m.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(a) = list.as_array_mut() {
            if !a.iter().any(|x| x == f) {
                a.push(json!(f));
            }
        }
    }
}

/// `metadata.<field>` as a string.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Apply the kind's defaults: on create the decode-time defaults plus what creation
/// adds, on update only the decode-time defaults.
pub fn default_object(def: &ResourceDef, obj: &mut Value, phase: Phase) {
    def.strategy.default(def, obj, phase);
}

/// Validate an object about to be stored; `old` is the stored object on update.
pub fn validate_object(def: &ResourceDef, obj: &Value, old: Option<&Value>) -> ApiResult<()> {
    let causes = def.strategy.validate(def, obj, old);
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta_str(obj, "name").unwrap_or("");
    Err(ApiError::invalid(def.group, def.kind, name, causes))
}

/// Validate an update made through subresource `sub` (`None`: the main resource).
pub fn validate_update(
    def: &ResourceDef,
    sub: Option<crate::registry::catalog::Subresource>,
    obj: &Value,
    old: &Value,
) -> ApiResult<()> {
    let Some(sub) = sub else {
        return validate_object(def, obj, Some(old));
    };
    let causes = def.strategy.validate_subresource_update(def, sub, obj, old);
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta_str(obj, "name").unwrap_or("");
    Err(ApiError::invalid(def.group, def.kind, name, causes))
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
        // a kind that does not track generation keeps what the client sent (upstream
        // wipes only uid, timestamps and deletion fields)
        if def.strategy.uses_generation() {
            m.insert("generation".into(), json!(1));
        }
    }
    def.strategy.prepare_for_create(def, obj);
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
/// status subresource) the stored status, apply the kind's rules, bump generation
/// when the spec changed.
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
    def.strategy.prepare_for_update(old, new);
    bump_generation(def, old, new);
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
    if !def.strategy.uses_generation() || !def.strategy.bumps_generation(def, old, new) {
        return;
    }
    let g = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    if let Some(m) = meta_mut(new) {
        m.insert("generation".into(), json!(g));
    }
}

/// Upstream's bump when a deletion starts (`BeforeDelete` for graceful deletion,
/// `markAsDeleting` for finalizers): an object with a generation that gets its first
/// deletion timestamp counts one more, whatever its kind.
pub fn bump_generation_on_deletion(old: &Value, new: &mut Value) {
    if old.pointer("/metadata/deletionTimestamp").is_some()
        || new.pointer("/metadata/deletionTimestamp").is_none()
    {
        return;
    }
    let g = old
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if g > 0 {
        if let Some(m) = meta_mut(new) {
            m.insert("generation".into(), json!(g + 1));
        }
    }
}

/// The Go round trip of an object of `def` (`machinery::protobuf::roundtrip`): the
/// whole object for a built-in kind, the root `metadata` for a custom resource (the
/// rest of a custom resource is stored as sent). `false` for a built-in kind the Go
/// tables do not know (left as it is).
pub fn go_roundtrip(def: &ResourceDef, obj: &mut Value, mode: Mode) -> bool {
    if def.custom.is_some() {
        if let Some(meta) = obj.get_mut("metadata") {
            roundtrip::normalise_object_meta(meta, mode);
        }
        return true;
    }
    let api_version = def.api_version();
    roundtrip::normalise(&api_version, def.kind, obj, mode)
}

/// Whether two objects differ in anything but `metadata` (upstream's rule for custom
/// resources, and EndpointSlices').
pub fn content_differs(old: &Value, new: &Value) -> bool {
    match (old.as_object(), new.as_object()) {
        (Some(o), Some(n)) => {
            let count =
                |m: &serde_json::Map<String, Value>| m.keys().filter(|k| *k != "metadata").count();
            count(o) != count(n)
                || o.iter()
                    .any(|(k, v)| k != "metadata" && n.get(k) != Some(v))
        }
        _ => old != new,
    }
}

/// Prepare a status update: `status` from `new`, the spec from `old`; metadata as the
/// kind's [`Strategy::status_update_metadata`] says.
pub fn prepare_status_update(def: &ResourceDef, old: &Value, new: &Value) -> Value {
    if let StatusMeta::KeepExcept(keep_from_old) = def.strategy.status_update_metadata() {
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

/// Prepare a `/finalize` update: only `spec.finalizers` changes.
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
/// (metadata finalizers, or what the kind holds it by) keeps it.
pub fn ready_to_vanish(def: &ResourceDef, obj: &Value) -> bool {
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
    !meta_fin && !def.strategy.held_by_spec(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::Catalog;

    fn def(group: &str, kind: &str) -> &'static ResourceDef {
        let version = if group == "autoscaling" { "v2" } else { "v1" };
        Catalog::builtin()
            .by_kind(group, version, kind)
            .expect("known kind")
    }

    #[test]
    fn generated_names_follow_upstream() {
        let n = generate_name("gen-");
        assert_eq!(n.len(), 9);
        assert!(n[4..].bytes().all(|b| ALPHANUMS.contains(&b)));
        let long = "x".repeat(80);
        assert_eq!(generate_name(&long).len(), 63);
    }

    #[test]
    fn create_resets_the_status_unless_the_kind_registers_with_it() {
        let status = json!({"capacity": {"cpu": "8"}});
        let mut node = json!({"metadata": {"name": "n"}, "status": status});
        prepare_create(def("", "Node"), &mut node);
        assert_eq!(
            node["status"], status,
            "kubelets register nodes with their status"
        );
        assert!(node.pointer("/metadata/generation").is_none());
        let mut d = json!({"metadata": {"name": "d"}, "status": {"replicas": 3}});
        prepare_create(def("apps", "Deployment"), &mut d);
        assert_eq!(d["status"], json!({}));
        assert_eq!(d["metadata"]["generation"], 1);
        // a kind without generation keeps the client's (upstream does not wipe it)
        let mut cm = json!({"metadata": {"name": "c", "generation": 7}});
        prepare_create(def("", "ConfigMap"), &mut cm);
        assert_eq!(cm["metadata"]["generation"], 7);
        assert!(cm.get("status").is_none());
    }

    #[test]
    fn generation_bumps_on_spec_change_only() {
        let d = def("apps", "Deployment");
        let old = json!({"metadata": {"generation": 3, "uid": "u"}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
        let mut same = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 1}, "status": {"replicas": 9}});
        prepare_update(d, &old, &mut same);
        assert_eq!(same["metadata"]["generation"], 3);
        assert_eq!(
            same["status"]["replicas"], 1,
            "status is kept on main-resource update"
        );
        assert_eq!(same["metadata"]["uid"], "u");
        let mut changed = json!({"metadata": {}, "spec": {"replicas": 2}});
        prepare_update(d, &old, &mut changed);
        assert_eq!(changed["metadata"]["generation"], 4);
    }

    #[test]
    fn vanish_rules() {
        let cm = def("", "ConfigMap");
        let ns = def("", "Namespace");
        assert!(!ready_to_vanish(cm, &json!({"metadata": {}})));
        assert!(!ready_to_vanish(
            cm,
            &json!({"metadata": {"deletionTimestamp": "t", "deletionGracePeriodSeconds": 30}})
        ));
        assert!(ready_to_vanish(
            cm,
            &json!({"metadata": {"deletionTimestamp": "t", "finalizers": []}})
        ));
        assert!(!ready_to_vanish(
            cm,
            &json!({"metadata": {"deletionTimestamp": "t", "finalizers": ["x"]}})
        ));
        assert!(!ready_to_vanish(
            ns,
            &json!({"kind": "Namespace", "metadata": {"deletionTimestamp": "t"}, "spec": {"finalizers": ["kubernetes"]}})
        ));
    }

    #[test]
    fn crd_updates_record_a_new_storage_version() {
        let d = def("apiextensions.k8s.io", "CustomResourceDefinition");
        let old = json!({"metadata": {"name": "x", "generation": 1}, "spec": {"versions": [{"name": "v1", "storage": true}]}, "status": {"storedVersions": ["v1"]}});
        let mut new = json!({"metadata": {"name": "x"}, "spec": {"versions": [{"name": "v1", "storage": false}, {"name": "v2", "storage": true}]}});
        prepare_update(d, &old, &mut new);
        assert_eq!(new["status"]["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(new["metadata"]["generation"], 2);
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
        // a newer kind (HPA): metadata changes ignored
        let h = prepare_status_update(def("autoscaling", "HorizontalPodAutoscaler"), &old, &new);
        assert_eq!(h["metadata"]["annotations"]["x"], "1");
        assert_eq!(h["status"]["replicas"], 1);
    }
}
