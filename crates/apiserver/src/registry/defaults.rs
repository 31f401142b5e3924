//! Server-side defaulting for built-in Kubernetes objects held as [`serde_json::Value`].
//!
//! A real kube-apiserver fills in many fields that a client left out. Most come from the
//! per-group defaulting functions (`pkg/apis/<group>/<version>/defaults.go` plus the generated
//! `zz_generated.defaults.go`, which applies nested defaulters such as the container, probe,
//! volume and port ones wherever those types appear). Those run every time an object is
//! decoded: on create, on update and when an object is read back from storage. A few more
//! come from the registry strategies (`PrepareForCreate`), from admission plugins that are
//! always on (priority), from conversion round trips (`serviceAccount` mirrors
//! `serviceAccountName`, StatefulSet claim templates get `apiVersion`/`kind`) and from the way
//! Go serialises struct fields that are never omitted (`resources: {}`, template
//! `metadata: {}`, zero counters in `status`), and resource quantities are always written
//! back in canonical form (`"0.5"` becomes `"500m"`, `"1024Mi"` becomes `"1Gi"`).
//!
//! Each kind's registry file applies its defaults in its strategy's `default`, in one of
//! two phases ([`crate::registry::catalog::Phase`]): `Create` is everything a create
//! request gets (scheme defaults plus the create-time additions: namespace `kubernetes`
//! finalizer, pod `status.phase`/`qosClass`, priority and the `DefaultTolerationSeconds`
//! tolerations, the `TaintNodesByCondition` not-ready taint of a new Node, Service IP
//! family fields, zero-valued `status` stanzas, the Job's generated
//! selector); `Scheme` is only what upstream applies on every decode (updates, `/status`
//! and `/finalize` writes), where create-only additions must not come back (a namespace
//! finalizer that the namespace controller removed, for instance). This module holds the
//! JSON helpers they share; pod templates' defaults are `core::podspec::defaults`.
//!
//! Not done here: cluster IP and node port allocation, the service-account admission
//! plugin (token volume, `serviceAccountName: default`: the endpoints layer's
//! `serviceaccount_admission`, which reads the account from the store), name generation,
//! `metadata.generation`, and anything controllers write into `status`.
//!
//! Every function leaves alone a field whose JSON type is not what the Kubernetes schema
//! expects: bad input is for validation to reject, never a reason to panic here.

use apimachinery::quantity;
use serde_json::{json, Map, Value};

/// A JSON object being defaulted.
pub(crate) type Obj = Map<String, Value>;

/// What the kinds' defaulting code uses: the shared JSON helpers and quantities.
pub(crate) mod prelude {
    pub(crate) use super::*;
    pub(crate) use crate::registry::catalog::Phase;
    pub(crate) use apimachinery::quantity::{self, Quantity};
    pub(crate) use serde_json::{json, Map, Value};
}

// ---------------------------------------------------------------------------------------
// JSON helpers. Every one tolerates missing keys and wrong types.
// ---------------------------------------------------------------------------------------

/// The object under `key`, if it is one.
pub(crate) fn child<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object under `key`, inserting `{}` when the key is missing or null. `None` when the
/// key holds some other JSON type.
pub(crate) fn child_or_insert<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    if is_nil(m, key) {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    child(m, key)
}

/// Run `f` on every object element of the array under `key`.
pub(crate) fn each_obj(m: &mut Obj, key: &str, mut f: impl FnMut(&mut Obj)) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for item in items {
            if let Value::Object(o) = item {
                f(o);
            }
        }
    }
}

/// Missing or null: a nil Go pointer, slice or map.
pub(crate) fn is_nil(m: &Obj, key: &str) -> bool {
    matches!(m.get(key), None | Some(Value::Null))
}

/// Missing, null or `""`: an empty Go string.
pub(crate) fn is_empty_str(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// Missing, null or numerically zero: a zero Go integer.
pub(crate) fn is_zero_num(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Missing, null, `[]` or `{}`: `len(x) == 0` for a Go slice or map.
pub(crate) fn is_empty_coll(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        _ => false,
    }
}

/// Default a pointer-typed field: set when missing or null.
pub(crate) fn default_ptr(m: &mut Obj, key: &str, v: Value) {
    if is_nil(m, key) {
        m.insert(key.to_string(), v);
    }
}

/// Default a string field: set when missing, null or empty.
pub(crate) fn default_str(m: &mut Obj, key: &str, v: &str) {
    if is_empty_str(m, key) {
        m.insert(key.to_string(), Value::String(v.to_string()));
    }
}

/// Default an integer field whose zero value means "unset".
pub(crate) fn default_nonzero(m: &mut Obj, key: &str, v: i64) {
    if is_zero_num(m, key) {
        m.insert(key.to_string(), json!(v));
    }
}

/// The string under `key`, or `""`.
pub(crate) fn str_at<'a>(m: &'a Obj, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Fill a zero-valued `status` stanza at create time: `status` becomes an object if it is
/// missing or null, and each listed field is added when missing.
pub(crate) fn status_shape(o: &mut Obj, fields: &[(&str, Value)]) {
    if let Some(status) = child_or_insert(o, "status") {
        for (k, v) in fields {
            if !status.contains_key(*k) {
                status.insert((*k).to_string(), v.clone());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// core/v1
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Pods, pod templates, containers, volumes
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Pod-level resources and QoS
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Resource quantities
// ---------------------------------------------------------------------------------------

/// Rewrite a resource list (`{name: quantity}`) under `key` in canonical form, rounding up
/// to milli precision first when `round` is set (`SetDefaults_ResourceList`). Entries that
/// do not parse are left for validation to reject.
pub(crate) fn resource_list(m: &mut Obj, key: &str, round: bool) {
    if let Some(list) = child(m, key) {
        for (_, v) in list.iter_mut() {
            if let Some(q) = quantity::from_json(v) {
                let q = if round { q.round_up_milli() } else { q };
                *v = Value::String(q.canonical());
            }
        }
    }
}

/// Rewrite the single quantity under `key` in canonical form.
pub(crate) fn canonical_quantity_at(m: &mut Obj, key: &str, round: bool) {
    if let Some(v) = m.get_mut(key) {
        if let Some(q) = quantity::from_json(v) {
            let q = if round { q.round_up_milli() } else { q };
            *v = Value::String(q.canonical());
        }
    }
}

// ---------------------------------------------------------------------------------------
// apps/v1
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// batch/v1
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// autoscaling
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Other groups
// ---------------------------------------------------------------------------------------
