//! kube-apiserver's field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal`):
//! `managedFields` encoding, manager identifiers, stripped metadata fields,
//! the "before-first-apply" manager, the cap of update managers and the
//! conflict error.
//!
//! The chain reproduced here is upstream's default one:
//! version check → skip-non-applied → cap managers → build manager info →
//! managed-fields updater (times) → strip meta → structured merge.
//! The last-applied-configuration annotation handling is not reproduced.

use crate::machinery::ssa::fieldpath::{field_path, Set};
use crate::machinery::ssa::manager::{Conflict, ManagedFields, UpdateError, Updater, VersionedSet};
use crate::machinery::ssa::merge::validate;
use crate::machinery::ssa::schema::Schema;
use apimachinery::gofmt::write_json_string as write_go_string;
use std::borrow::Cow;

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Maximum number of `Update` managers before the oldest are merged.
pub const DEFAULT_MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
const CURRENT_OPERATION: &str = "current-operation";

/// One write to record.
#[derive(Clone, Copy, Debug)]
pub struct Operation<'a> {
    /// The field manager (`fieldManager` query parameter; empty → `unknown`).
    pub manager: &'a str,
    /// API version of the request, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// Kind of the resource, e.g. `Deployment` (checked on apply).
    pub kind: &'a str,
    /// Subresource written (`status`, `scale`…), `None` for the main resource.
    pub subresource: Option<&'a str>,
    /// Current time, RFC 3339 in seconds (e.g. `2024-05-01T10:00:00Z`);
    /// stamped on the entries this operation changes.
    pub time: &'a str,
    /// Reset fields: fields this operation can never own (e.g. `status` on
    /// the main resource). The caller's strategy is responsible for resetting
    /// their values in the object.
    pub reset: Option<&'a Set>,
    /// The "new empty object" of the kind (upstream `objectCreater.New`),
    /// used as the live object on create and as the base the
    /// before-first-apply manager is computed from. For built-in kinds,
    /// kube-apiserver's empty typed objects serialize with e.g. `spec: {}`
    /// and `status: {}`, which keeps `"."` off those fields; `None` means
    /// `{"apiVersion": ..., "kind": ...}` (what CRDs get).
    pub empty: Option<&'a Value>,
}

impl Operation<'_> {
    fn subresource(&self) -> &str {
        self.subresource.unwrap_or("")
    }

    fn empty_object(&self) -> Value {
        match self.empty {
            Some(e) => e.clone(),
            None => json!({"apiVersion": self.api_version, "kind": self.kind}),
        }
    }
}

/// Errors of [`apply`] and [`update`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// Fields owned by other managers would change (HTTP 409).
    Conflicts(Vec<Conflict>),
    /// The request is malformed (HTTP 400): wrong apiVersion/kind,
    /// `metadata.managedFields` set in an applied configuration.
    BadRequest(String),
    /// The objects or the managed fields are invalid for the schema, e.g. a
    /// list-map item missing its keys, duplicate keys in the applied
    /// configuration, undecodable live `managedFields`. Upstream returns
    /// these as internal errors (HTTP 500).
    Invalid(String),
}

/// A `metav1.StatusCause` of a conflict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConflictCause {
    /// Always `FieldManagerConflict`.
    pub cause_type: &'static str,
    /// `conflict with "<manager>" using <apiVersion>`.
    pub message: String,
    /// The field, e.g. `.spec.replicas`.
    pub field: String,
}

impl ApplyError {
    /// The error message, as upstream's status message.
    pub fn message(&self) -> String {
        match self {
            ApplyError::Conflicts(c) => conflict_message(c),
            ApplyError::BadRequest(m) | ApplyError::Invalid(m) => m.clone(),
        }
    }

    /// HTTP status code upstream answers with.
    #[cfg(test)]
    pub fn code(&self) -> u16 {
        match self {
            ApplyError::Conflicts(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::Invalid(_) => 500,
        }
    }

    /// The status causes (one per conflict; empty otherwise).
    pub fn causes(&self) -> Vec<ConflictCause> {
        match self {
            ApplyError::Conflicts(c) => c
                .iter()
                .map(|c| ConflictCause {
                    cause_type: "FieldManagerConflict",
                    message: format!("conflict with {}", print_manager(&c.manager)),
                    field: c.path_string(),
                })
                .collect(),
            _ => vec![],
        }
    }

    /// A `metav1.Status` object for the error.
    #[cfg(test)]
    pub fn to_status(&self) -> Value {
        let (reason, details) = match self {
            ApplyError::Conflicts(_) => {
                let causes: Vec<Value> = self
                    .causes()
                    .into_iter()
                    .map(|c| json!({"type": c.cause_type, "message": c.message, "field": c.field}))
                    .collect();
                ("Conflict", Some(json!({ "causes": causes })))
            }
            ApplyError::BadRequest(_) => ("BadRequest", None),
            ApplyError::Invalid(_) => ("InternalError", None),
        };
        let mut s = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message(), "reason": reason,
        });
        if let Some(d) = details {
            s["details"] = d;
        }
        s["code"] = json!(self.code());
        s
    }
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyError {}

fn id_field<'v>(id: &'v Value, k: &str) -> &'v str {
    id.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Upstream `printManager`: `"name"`, plus ` with subresource "s"` and, for
/// update managers, ` using <apiVersion>`.
pub fn print_manager(manager: &str) -> String {
    let Ok(id) = serde_json::from_str::<Value>(manager) else {
        return format!("{manager:?}");
    };
    let mut s = format!("{:?}", id_field(&id, "manager"));
    let sub = id_field(&id, "subresource");
    if !sub.is_empty() {
        s = format!("{s} with subresource {sub:?}");
    }
    if id_field(&id, "operation") == "Update" {
        s = format!("{s} using {}", id_field(&id, "apiVersion"));
    }
    s
}

/// Upstream `getConflictMessage`.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if conflicts.len() == 1 {
        let c = &conflicts[0];
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&c.manager),
            c.path_string()
        );
    }
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in conflicts {
        by.entry(&c.manager).or_default().push(c.path_string());
    }
    let mut lines = Vec::new();
    for (m, paths) in by {
        lines.push(format!("conflicts with {}:", print_manager(m)));
        lines.extend(paths.into_iter().map(|p| format!("- {p}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

/// Upstream `BuildManagerIdentifier`: the JSON of the entry without
/// fields and time (and without apiVersion for appliers).
pub fn manager_identifier(
    manager: &str,
    operation: &str,
    api_version: &str,
    subresource: &str,
) -> String {
    let mut out = String::from("{");
    let mut first = true;
    let api_version = if operation == "Apply" {
        ""
    } else {
        api_version
    };
    for (k, v) in [
        ("manager", manager),
        ("operation", operation),
        ("apiVersion", api_version),
        ("subresource", subresource),
    ] {
        if v.is_empty() {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&format!("\"{k}\":"));
        write_go_string(&mut out, v, true);
    }
    out.push('}');
    out
}

/// Decoded `managedFields`: field sets and times keyed by manager identifier.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Managed {
    /// Field sets by manager identifier.
    pub fields: ManagedFields,
    /// Entry times (RFC 3339) by manager identifier.
    pub times: BTreeMap<String, String>,
}

/// Upstream `DecodeManagedFields`. `null`/absent decodes as empty.
pub fn decode_managed_fields(v: Option<&Value>) -> Result<Managed, String> {
    match v {
        None | Some(Value::Null) => Ok(Managed::default()),
        Some(v) => decode_entries(Cow::Borrowed(v), true),
    }
}

/// `managedFields` as stored on an object the server wrote: the entries are read but
/// each manager's `FieldsV1` is kept as JSON until an operation needs it decoded.
pub fn decode_stored_managed_fields(v: Value) -> Managed {
    decode_entries(Cow::Owned(v), false).unwrap_or_default()
}

/// Reads the entries of `managedFields`; `check_sets` decodes every field set at once
/// (for what a client sent: an undecodable one is an error, as upstream).
/// A borrowed value is read in place (the sets are decoded from it); an owned one gives
/// up its `FieldsV1` values without copies.
fn decode_entries(v: Cow<'_, Value>, check_sets: bool) -> Result<Managed, String> {
    let mut managed = Managed::default();
    let entries: Vec<Cow<'_, Value>> = match v {
        Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
        Cow::Owned(Value::Array(a)) => a.into_iter().map(Cow::Owned).collect(),
        Cow::Borrowed(Value::Null) | Cow::Owned(Value::Null) => return Ok(managed),
        other => return Err(format!("managedFields must be a list, got {other}")),
    };
    for (i, entry) in entries.into_iter().enumerate() {
        let Some(e) = entry.as_object() else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let s = |k: &str| -> Result<&str, String> {
            match e.get(k) {
                None | Some(Value::Null) => Ok(""),
                Some(Value::String(s)) => Ok(s),
                Some(o) => Err(format!(
                    "json: cannot unmarshal {o} into field {k} of type string"
                )),
            }
        };
        let operation = s("operation")?;
        if operation != "Apply" && operation != "Update" {
            return Err("operation must be `Apply` or `Update`".into());
        }
        let applied = operation == "Apply";
        let api_version = s("apiVersion")?.to_string();
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".into());
        }
        match s("fieldsType")? {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            t => {
                return Err(format!(
                    "invalid fieldsType {t:?} in managed fields entry {i}"
                ))
            }
        }
        let time = s("time")?.to_string();
        if !time.is_empty() && parse_rfc3339(&time).is_none() {
            return Err(format!("invalid time {time:?} in managed fields entry {i}"));
        }
        let id = manager_identifier(s("manager")?, operation, &api_version, s("subresource")?);
        let vs = if check_sets {
            let set = match e.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(f) => Set::from_fields_v1(f).map_err(|err| {
                    format!(
                        "error decoding versioned set from entry {i}: error decoding set: {err}"
                    )
                })?,
            };
            VersionedSet::new(set, api_version, applied)
        } else {
            let raw = match entry {
                Cow::Owned(Value::Object(mut m)) => m.remove("fieldsV1"),
                other => other.get("fieldsV1").cloned(),
            };
            match raw {
                None | Some(Value::Null) => VersionedSet::new(Set::new(), api_version, applied),
                Some(raw) => VersionedSet::from_fields_v1(raw, api_version, applied),
            }
        };
        managed.fields.insert(id.clone(), vs);
        if time.is_empty() {
            managed.times.remove(&id);
        } else {
            managed.times.insert(id, time);
        }
    }
    Ok(managed)
}

/// Upstream `encodeManagedFields` + sorting. Returns `Value::Null` when no
/// manager is left (the field should then be removed from the object).
pub fn encode_managed_fields(managed: Managed) -> Value {
    if managed.fields.is_empty() {
        return Value::Null;
    }
    struct E {
        manager: String,
        operation: &'static str,
        api_version: String,
        time: Option<String>,
        subresource: String,
        set: VersionedSet,
    }
    let Managed { fields, mut times } = managed;
    let mut entries: Vec<E> = fields
        .into_iter()
        .map(|(id, vs)| {
            let idv: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
            E {
                manager: id_field(&idv, "manager").to_string(),
                operation: if vs.applied || id_field(&idv, "operation") == "Apply" {
                    "Apply"
                } else {
                    "Update"
                },
                api_version: vs.api_version.clone(),
                time: times.remove(&id),
                subresource: id_field(&idv, "subresource").to_string(),
                set: vs,
            }
        })
        .collect();
    let secs = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339).unwrap_or(0);
    entries.sort_by(|p, q| {
        p.operation
            .cmp(q.operation)
            .then(secs(&p.time).cmp(&secs(&q.time)))
            .then(p.manager.cmp(&q.manager))
            .then(p.api_version.cmp(&q.api_version))
            .then(p.subresource.cmp(&q.subresource))
    });
    let out = entries
        .into_iter()
        .map(|e| {
            let mut m = Map::new();
            if !e.manager.is_empty() {
                m.insert("manager".into(), e.manager.into());
            }
            m.insert("operation".into(), e.operation.into());
            m.insert("apiVersion".into(), e.api_version.into());
            if let Some(t) = e.time {
                m.insert("time".into(), t.into());
            }
            m.insert("fieldsType".into(), "FieldsV1".into());
            m.insert("fieldsV1".into(), e.set.into_fields_v1());
            if !e.subresource.is_empty() {
                m.insert("subresource".into(), e.subresource.into());
            }
            Value::Object(m)
        })
        .collect();
    Value::Array(out)
}

/// Parses an RFC 3339 timestamp into Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    apimachinery::time::parse_rfc3339_nanos(s)
        .and_then(|n| i64::try_from(n.div_euclid(1_000_000_000)).ok())
}

/// The fields kube-apiserver never records ownership of (`stripmeta.go`).
pub fn stripped_fields() -> Set {
    let mut s = Set::new();
    for p in [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ] {
        s.insert(&field_path(p));
    }
    s
}

fn strip(managed: &mut Managed, id: &str) {
    static STRIPPED: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    let stripped = STRIPPED.get_or_init(stripped_fields);
    if let Some(vs) = managed.fields.get_mut(id) {
        if vs.meets(stripped) {
            let rest = vs.set().difference(stripped);
            vs.replace(rest);
        }
        if vs.is_empty() {
            managed.fields.remove(id);
        }
    }
}

fn meta_str<'v>(obj: &'v Value, k: &str) -> &'v str {
    obj.get("metadata")
        .and_then(|m| m.get(k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn gvk_string(api_version: &str, kind: &str) -> String {
    let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{g}/{v}, Kind={kind}")
}

fn object_gvknn(obj: &Value) -> String {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}; {}",
        meta_str(obj, "namespace"),
        meta_str(obj, "name"),
        gvk_string(av, kind)
    )
}

/// A copy of `obj` without `metadata.managedFields`.
pub fn without_managed_fields(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    o
}

/// Sets (or, for `Value::Null`, removes) `metadata.managedFields` on `obj`.
pub fn set_managed_fields(obj: &mut Value, managed_fields: Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if managed_fields.is_null() {
        if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        return;
    }
    let meta = o
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(m) = meta.as_object_mut() {
        m.insert("managedFields".into(), managed_fields);
    }
}

fn invalid(e: UpdateError) -> ApplyError {
    match e {
        UpdateError::Conflicts(c) => ApplyError::Conflicts(c),
        UpdateError::Invalid(m) => ApplyError::Invalid(m),
    }
}

/// The inner update chain: cap(build-manager-info(managed-fields-updater(strip(smd)))).
fn update_chain(
    schema: &Schema<'_>,
    live: &Value,
    new: &Value,
    mut managed: Managed,
    manager: &str,
    op: &Operation<'_>,
) -> Result<Managed, ApplyError> {
    let manager = if manager.is_empty() {
        "unknown"
    } else {
        manager
    };
    let id = manager_identifier(manager, "Update", op.api_version, op.subresource());
    // the live object was checked when it was stored; on an update the comparison below
    // checks what changed (equal parts are valid as before), so only a new object is
    // validated whole
    if meta_str(live, "uid").is_empty() {
        validate(schema, new, true).map_err(|e| {
            ApplyError::Invalid(format!(
                "failed to convert new object ({}) to smd typed: {e}",
                object_gvknn(new)
            ))
        })?;
    }
    let updater = Updater {
        schema,
        ignore: op.reset,
    };
    managed.fields = updater
        .update(
            live,
            new,
            op.api_version,
            std::mem::take(&mut managed.fields),
            CURRENT_OPERATION,
        )
        .map_err(|e| match e {
            UpdateError::Invalid(m) => ApplyError::Invalid(format!(
                "failed to update ManagedFields ({}): {m}",
                object_gvknn(new)
            )),
            other => invalid(other),
        })?;
    strip(&mut managed, CURRENT_OPERATION);
    if let Some(vs) = managed.fields.remove(CURRENT_OPERATION) {
        let set = match managed.fields.get(&id) {
            Some(prev) => vs.set().union(prev.set()),
            None => vs.set().clone(),
        };
        managed.fields.insert(
            id.clone(),
            VersionedSet::new(set, vs.api_version, vs.applied),
        );
        managed.times.insert(id, op.time.to_string());
    }
    cap_update_managers(&mut managed, DEFAULT_MAX_UPDATE_MANAGERS);
    Ok(managed)
}

/// Upstream `capUpdateManagers`: merges the oldest update managers into
/// `ancient-changes` (one per API version) until at most `max` are left.
pub fn cap_update_managers(managed: &mut Managed, max: usize) {
    let mut updaters: Vec<String> = managed
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(k, _)| k.clone())
        .collect();
    if updaters.len() <= max {
        return;
    }
    let secs = |m: &Managed, id: &str| m.times.get(id).and_then(|t| parse_rfc3339(t)).unwrap_or(0);
    updaters.sort_by(|a, b| secs(managed, a).cmp(&secs(managed, b)).then(a.cmp(b)));
    let mut first_by_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for m in &updaters {
        if length <= max {
            break;
        }
        let Some(vs) = managed.fields.get(m).cloned() else {
            continue;
        };
        let time = managed.times.get(m).cloned();
        let bucket = manager_identifier(ANCIENT_CHANGES, "Update", &vs.api_version, "");
        if let Some(first) = first_by_version.get(&vs.api_version) {
            if !managed.fields.contains_key(&bucket) {
                if let Some(s) = managed.fields.remove(first) {
                    managed.fields.insert(bucket.clone(), s);
                }
            }
            let prev = managed
                .fields
                .get(&bucket)
                .map(|b| b.set().clone())
                .unwrap_or_default();
            managed.fields.insert(
                bucket.clone(),
                VersionedSet::new(vs.set().union(&prev), vs.api_version.clone(), vs.applied),
            );
            managed.fields.remove(m);
            length -= 1;
            match time {
                Some(t) => managed.times.insert(bucket, t),
                None => managed.times.remove(&bucket),
            };
        } else {
            first_by_version.insert(vs.api_version.clone(), m.clone());
        }
    }
}

fn is_reset_managed_fields(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Array(a)) if a.is_empty() => true,
        Some(Value::Array(a)) if a.len() == 1 => {
            a[0].as_object().is_some_and(|o| o.values().all(is_zero))
        }
        _ => false,
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Records a non-apply write (create, update, non-apply patch) of `new`
/// over `live` (`None` on create). Returns the new `managedFields` value
/// (`Value::Null`: remove the field). As upstream, the request's own
/// `managedFields` are used when set and valid (`[]` resets them), except
/// on subresources; undecodable ones fall back to the live ones, then to
/// none; an existing object without managed fields stays untracked.
#[cfg(test)]
pub fn update(
    schema: &Schema<'_>,
    live: Option<&Value>,
    new: &Value,
    op: &Operation<'_>,
) -> Result<Value, ApplyError> {
    let new_mf = new
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .cloned();
    update_owned(schema, live, new, new_mf, op)
}

/// [`update`] with the request's `managedFields` taken out of `new` (`new` may still
/// hold them: they are never compared). Sets equal to the stored ones are kept as
/// JSON and written back untouched unless the write changes what they own.
pub fn update_owned(
    schema: &Schema<'_>,
    live: Option<&Value>,
    new: &Value,
    new_mf: Option<Value>,
    op: &Operation<'_>,
) -> Result<Value, ApplyError> {
    let empty = op.empty_object();
    let live_obj = live.unwrap_or(&empty);
    let live_mf = live_obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .filter(|v| !v.is_null());
    let from_live = || {
        live_mf
            .map(|v| decode_stored_managed_fields(v.clone()))
            .unwrap_or_default()
    };
    // what the client sent back unchanged was checked when it was stored
    let unchanged = |v: &Value| live_mf.is_some_and(|l| l == v);
    let managed = match new_mf {
        Some(v) if op.subresource().is_empty() && is_reset_managed_fields(Some(&v)) => {
            Managed::default()
        }
        Some(v) if unchanged(&v) => decode_stored_managed_fields(v),
        Some(v) if op.subresource().is_empty() => match decode_managed_fields(Some(&v)) {
            Ok(m) if !m.fields.is_empty() => m,
            _ => from_live(),
        },
        _ => from_live(),
    };
    if managed.fields.is_empty() && !meta_str(live_obj, "uid").is_empty() {
        return Ok(Value::Null);
    }
    // `metadata.managedFields` is one of the stripped fields: the objects are compared
    // as they are (no copies without it)
    let managed = update_chain(schema, live_obj, new, managed, op.manager, op)?;
    Ok(encode_managed_fields(managed))
}

/// [`update_owned`], but on error returns the live object's `managedFields`
/// unchanged (upstream `UpdateNoErrors`, what the REST handlers use).
pub fn update_no_errors(
    schema: &Schema<'_>,
    live: Option<&Value>,
    new: &Value,
    new_mf: Option<Value>,
    op: &Operation<'_>,
) -> Value {
    update_owned(schema, live, new, new_mf, op).unwrap_or_else(|_| {
        live.and_then(|l| l.get("metadata"))
            .and_then(|m| m.get("managedFields"))
            .cloned()
            .unwrap_or(Value::Null)
    })
}

/// The result of an apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The new object, with `metadata.managedFields` set.
    pub object: Value,
    /// The new `managedFields` (`Value::Null` when none).
    pub managed_fields: Value,
    /// Whether the object (apart from managed fields) changed.
    pub changed: bool,
}

/// Server-side apply of `config` by `op.manager` onto `live` (`None` to
/// create). Returns the merged object with its managed fields, or the
/// conflicts (unless `force`).
pub fn apply(
    schema: &Schema<'_>,
    live: Option<&Value>,
    config: &Value,
    op: &Operation<'_>,
    force: bool,
) -> Result<Applied, ApplyError> {
    let empty = op.empty_object();
    let live_obj = live.unwrap_or(&empty);
    // an apply reads every manager's set (conflicts, pruning): decoded at once, with
    // upstream's error for a bad one
    let mut managed = decode_managed_fields(
        live_obj
            .get("metadata")
            .and_then(|m| m.get("managedFields")),
    )
    .map_err(|e| ApplyError::Invalid(format!("failed to decode managed fields: {e}")))?;
    // versionCheckManager
    let av = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if av != op.api_version || kind != op.kind {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(av, kind)
        )));
    }
    let live_clean = without_managed_fields(live_obj);
    // skipNonAppliedManager: attribute existing fields to before-first-apply.
    if managed.fields.is_empty() {
        managed = update_chain(
            schema,
            &op.empty_object(),
            &live_clean,
            managed,
            BEFORE_FIRST_APPLY,
            op,
        )
        .map_err(|e| {
            ApplyError::Invalid(format!(
                "failed to create manager for existing fields: {}",
                e.message()
            ))
        })?;
    }
    let manager = if op.manager.is_empty() {
        "unknown"
    } else {
        op.manager
    };
    let id = manager_identifier(manager, "Apply", op.api_version, op.subresource());
    // structuredMergeManager.Apply
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    validate(schema, config, false).map_err(|e| {
        ApplyError::Invalid(format!(
            "failed to create typed patch object ({}): {e}",
            object_gvknn(config)
        ))
    })?;
    // an existing object was checked when it was stored
    if meta_str(&live_clean, "uid").is_empty() {
        validate(schema, &live_clean, true).map_err(|e| {
            ApplyError::Invalid(format!(
                "failed to create typed live object ({}): {e}",
                object_gvknn(&live_clean)
            ))
        })?;
    }
    let updater = Updater {
        schema,
        ignore: op.reset,
    };
    let (new, fields) = updater
        .apply(
            &live_clean,
            config,
            op.api_version,
            std::mem::take(&mut managed.fields),
            &id,
            force,
        )
        .map_err(invalid)?;
    managed.fields = fields;
    strip(&mut managed, &id);
    let changed = new.is_some();
    let mut object = match new {
        Some(o) => {
            managed.times.insert(id, op.time.to_string());
            o
        }
        None => live_clean,
    };
    let mf = encode_managed_fields(managed);
    set_managed_fields(&mut object, mf.clone());
    Ok(Applied {
        object,
        managed_fields: mf,
        changed,
    })
}
