//! CustomResourceDefinitions: the resources they define, served next to the built-in
//! kinds.
//!
//! A CRD (`apiextensions.k8s.io/v1`) is stored like any object; what it defines is
//! served once its names are accepted ([`names`]): every served version becomes a
//! [`ResourceDef`] in the server's [`Catalog`] ([`Registry`]), so routing, discovery,
//! OpenAPI, storage, watch and tables treat custom resources as they treat built-in
//! kinds. What differs is described by a [`CustomVersion`] on the definition: the
//! structural schema (validation, defaulting, pruning: [`structural`]), the
//! `/status` and `/scale` subresources and the printer columns.
//!
//! Definitions of custom resources live as long as the process (`&'static`): a CRD
//! change builds new ones and the old ones are leaked. CRDs change rarely (a few
//! kilobytes per change); in exchange every request path keeps the zero-cost
//! `&'static ResourceDef` the built-in kinds use.

pub mod names;
pub mod openapi;
pub mod webhook;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use serde_json::Value;

use apimachinery::field::Cause;
use apimachinery::gofmt;
use apimachinery::names::NameRule;

use crate::registry::catalog::{Phase, Strategy};
use crate::registry::table::{name, Row, NAME};
use crate::registry::validation::Ctx;
use chrono::{DateTime, Utc};
use serde_json::json;

use crate::registry::catalog::{
    Catalog, Conversion, CustomVersion, PrinterColumn, ResourceDef, ScalePaths, Subresource,
};

/// The storage key of CustomResourceDefinitions.
pub const CRD_RESOURCE: &str = "apiextensions.k8s.io/customresourcedefinitions";
/// The finalizer that keeps a CRD until its objects are deleted.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn leak_list(v: Option<&Value>) -> &'static [&'static str] {
    let items: Vec<&'static str> = v
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(leak).collect())
        .unwrap_or_default();
    Box::leak(items.into_boxed_slice())
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The default printer columns of a custom resource without any (upstream: Age only,
/// after the Name column every table has).
fn default_columns() -> Vec<PrinterColumn> {
    vec![PrinterColumn {
        name: "Age".into(),
        ty: "date".into(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata".into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

fn columns_of(version: &Value) -> Vec<PrinterColumn> {
    let Some(cols) = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
    else {
        return default_columns();
    };
    cols.iter()
        .map(|c| PrinterColumn {
            name: str_at(c, "/name").to_string(),
            ty: str_at(c, "/type").to_string(),
            format: str_at(c, "/format").to_string(),
            description: str_at(c, "/description").to_string(),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            json_path: str_at(c, "/jsonPath").to_string(),
        })
        .collect()
}

fn is_true(crd: &Value, condition: &str) -> bool {
    crd.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == condition && c["status"] == "True")
        })
}

/// The definitions of every version of the resource `crd` defines (served ones first
/// in spec order, then the storage version when it is not served), or nothing when its
/// names are not accepted yet. Only the served ones are put in the catalogue.
pub fn build(crd: &Value) -> Vec<(&'static ResourceDef, bool)> {
    if !is_true(crd, "Established") && !is_true(crd, "NamesAccepted") {
        return Vec::new();
    }
    let names = match crd.pointer("/status/acceptedNames") {
        Some(n) if !str_at(n, "/plural").is_empty() && !str_at(n, "/kind").is_empty() => n,
        _ => return Vec::new(),
    };
    let group = leak(str_at(crd, "/spec/group"));
    let plural = leak(str_at(names, "/plural"));
    let kind = leak(str_at(names, "/kind"));
    let singular = match str_at(names, "/singular") {
        "" => leak(&kind.to_ascii_lowercase()),
        s => leak(s),
    };
    let list_kind = match str_at(names, "/listKind") {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let namespaced = str_at(crd, "/spec/scope") != "Cluster";
    let short_names = leak_list(names.get("shortNames"));
    let categories = leak_list(names.get("categories"));
    let terminating =
        crd.pointer("/metadata/deletionTimestamp").is_some() || is_true(crd, "Terminating");
    let conversion = match str_at(crd, "/spec/conversion/strategy") {
        "Webhook" => Conversion::Webhook(
            crd.pointer("/spec/conversion/webhook")
                .cloned()
                .unwrap_or(Value::Null),
        ),
        _ => Conversion::None,
    };
    let versions: &[Value] = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(storage_version) = versions
        .iter()
        .find(|v| v["storage"] == true)
        .map(|v| leak(str_at(v, "/name")))
    else {
        return Vec::new();
    };
    let mut out: Vec<(&'static ResourceDef, bool)> = Vec::new();
    let mut customs: Vec<&'static CustomVersion> = Vec::new();
    for v in versions {
        let served = v["served"] == true;
        let name = str_at(v, "/name");
        if name.is_empty() {
            continue;
        }
        let is_storage = name == storage_version;
        if !served && !is_storage {
            continue;
        }
        let status = v
            .pointer("/subresources/status")
            .is_some_and(Value::is_object);
        let scale = v
            .pointer("/subresources/scale")
            .filter(|s| s.is_object())
            .map(|s| ScalePaths {
                spec_replicas: str_at(s, "/specReplicasPath").to_string(),
                status_replicas: str_at(s, "/statusReplicasPath").to_string(),
                label_selector: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
        let mut subs = Vec::new();
        if scale.is_some() {
            subs.push(Subresource::Scale);
        }
        if status {
            subs.push(Subresource::Status);
        }
        let deprecation_warning = (v["deprecated"] == true).then(|| {
            v.get("deprecationWarning")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{group}/{name} {kind} is deprecated"))
        });
        let selectable: Vec<&'static str> = v
            .get("selectableFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.get("jsonPath").and_then(Value::as_str))
                    .map(|p| leak(p.trim_start_matches('.')))
                    .collect()
            })
            .unwrap_or_default();
        let custom: &'static CustomVersion = Box::leak(Box::new(CustomVersion {
            schema: v.pointer("/schema/openAPIV3Schema").cloned(),
            columns: columns_of(v),
            scale,
            deprecation_warning,
            conversion: conversion.clone(),
            list_kind: list_kind.clone(),
            terminating,
            storage: OnceLock::new(),
            published: OnceLock::new(),
        }));
        let def: &'static ResourceDef = Box::leak(Box::new(ResourceDef {
            group,
            version: leak(name),
            kind,
            plural,
            singular,
            namespaced,
            short_names,
            categories,
            subresources: Box::leak(subs.into_boxed_slice()),
            field_selectors: Box::leak(selectable.into_boxed_slice()),
            delete_collection: true,
            storage_of: (!is_storage).then_some((group, storage_version)),
            custom: Some(custom),
            strategy: &CUSTOM,
            typed: None,
        }));
        customs.push(custom);
        out.push((def, served));
    }
    if let Some(storage) = out
        .iter()
        .map(|(d, _)| *d)
        .find(|d| d.version == storage_version)
    {
        for c in customs {
            let _ = c.storage.set(storage);
        }
    }
    out
}

/// The kind's published OpenAPI schema ([`openapi::kind_schema`]), built once: the
/// OpenAPI documents and every write's field management read it.
pub fn published_schema(custom: &CustomVersion) -> &Value {
    custom
        .published
        .get_or_init(|| openapi::kind_schema(custom))
}

/// Upstream's checks of the scale subresource's fields on every write
/// (`customResourceValidator.ValidateScaleSpec`/`ValidateScaleStatus`): the replicas at
/// `specReplicasPath` and `statusReplicasPath` must be non-negative int32 integers and
/// the value at `labelSelectorPath` a string. The field is the path as the CRD gives it.
pub fn scale_causes(custom: &CustomVersion, obj: &Value) -> Vec<apimachinery::field::Cause> {
    use apimachinery::field::{invalid, Bad};
    let Some(scale) = &custom.scale else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for path in [&scale.spec_replicas, &scale.status_replicas] {
        match nested(obj, path, "int64", |v| v.as_i64().filter(|_| !v.is_f64())) {
            Err(e) => out.push(invalid(path, 0, &e)),
            Ok(Some(n)) if n < 0 => {
                out.push(invalid(path, n, "should be a non-negative integer"));
            }
            Ok(Some(n)) if n > i64::from(i32::MAX) => out.push(invalid(
                path,
                n,
                &format!("should be less than or equal to {}", i32::MAX),
            )),
            Ok(_) => {}
        }
    }
    if let Some(path) = &scale.label_selector {
        if let Err(e) = nested(obj, path, "string", |v| v.as_str().map(|_| ())) {
            out.push(invalid(path, Bad::from(""), &e));
        }
    }
    out
}

/// `unstructured.NestedInt64`/`NestedString` at a `.a.b` path: `Ok(None)` when absent,
/// the typed value, or the accessor error upstream reports.
fn nested<T>(
    obj: &Value,
    path: &str,
    want: &str,
    typed: impl Fn(&Value) -> Option<T>,
) -> Result<Option<T>, String> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let json_path = |n: usize| format!(".{}", fields[..n].join("."));
    let mut cur = obj;
    for (i, field) in fields.iter().enumerate() {
        match cur {
            Value::Null => return Ok(None),
            Value::Object(m) => match m.get(*field) {
                Some(v) => cur = v,
                None => return Ok(None),
            },
            other => {
                return Err(format!(
                    "{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    json_path(i + 1),
                    gofmt::value_v(other),
                    gofmt::type_name(other)
                ))
            }
        }
    }
    match typed(cur) {
        Some(t) => Ok(Some(t)),
        None => Err(format!(
            "{} accessor error: {} is of the type {}, expected {want}",
            json_path(fields.len()),
            gofmt::value_v(cur),
            gofmt::type_name(cur)
        )),
    }
}

/// Set the value at a dotted path (`.spec.replicas`), creating objects on the way.
pub fn set_at_path(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    let Some((last, parents)) = parts.split_last() else {
        return;
    };
    let mut cur = obj;
    for p in parents {
        if !cur.is_object() {
            return;
        }
        let next = &mut cur[*p];
        if !next.is_object() {
            *next = Value::Object(serde_json::Map::new());
        }
        cur = next;
    }
    if cur.is_object() {
        cur[*last] = value;
    }
}

/// What of a CRD decides its definitions: a rebuild happens only when this changes.
fn fingerprint(crd: &Value) -> Value {
    serde_json::json!({
        "uid": crd.pointer("/metadata/uid"),
        "deleting": crd.pointer("/metadata/deletionTimestamp").is_some(),
        "spec": crd.get("spec"),
        "names": crd.pointer("/status/acceptedNames"),
        "conditions": crd.pointer("/status/conditions").map(|c| {
            c.as_array().map(|a| a.iter().map(|x| (x["type"].clone(), x["status"].clone())).collect::<Vec<_>>())
        }),
    })
}

/// The strategy of every custom resource: what its CRD version says (structural
/// schema defaults, pruning and validation, CEL rules, scale subresource paths).
pub struct CustomStrategy;

/// The one [`CustomStrategy`].
pub static CUSTOM: CustomStrategy = CustomStrategy;

/// upstream's `hasBlockingErr`: the CEL rules are not run on an object whose shape is
/// wrong (type, required, enum or size violations).
const BLOCKING: [&str; 5] = [
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

impl Strategy for CustomStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// `customResourceStrategy`: any change but of `metadata` (the status too, which
    /// the update keeps from the stored object when it has its own subresource).
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        crate::registry::rest::content_differs(old, new)
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(schema) = def.custom.and_then(|c| c.schema.as_ref()) {
            crate::machinery::structural::default(schema, obj);
        }
    }

    /// A custom resource with a status subresource drops the status on create.
    fn prepare_for_create(&self, def: &ResourceDef, obj: &mut Value) {
        if def.has_status() {
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        let mut found = Ctx::new(def, old).meta_only(obj, NameRule::Subdomain);
        let Some(custom) = def.custom else {
            return found;
        };
        if let Some(schema) = &custom.schema {
            found.extend(crate::machinery::structural::validate_update(
                schema, obj, old,
            ));
        }
        found.extend(scale_causes(custom, obj));
        if let Some(schema) = &custom.schema {
            if found.iter().any(|c| BLOCKING.contains(&c.reason.as_ref())) {
                found.push(apimachinery::field::invalid(
                    "<nil>",
                    Value::Null,
                    "some validation rules were not checked because the object was invalid; \
                     correct the existing errors to complete validation",
                ));
            } else {
                found.extend(crate::machinery::cel::validate(schema, obj, old));
            }
        }
        found
    }
}

/// The definitions of one CRD's versions, each with whether it is served.
type Versions = Vec<(&'static ResourceDef, bool)>;

/// The custom resources a server serves, rebuilt from its CRDs.
pub struct Registry {
    catalog: RwLock<Arc<Catalog>>,
    built: Mutex<HashMap<String, (Value, Versions)>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            catalog: RwLock::new(Arc::new(Catalog::with_custom(&[]))),
            built: Mutex::new(HashMap::new()),
        }
    }
}

impl Registry {
    /// The current catalogue: built-in kinds and served custom resources.
    pub fn catalog(&self) -> Arc<Catalog> {
        match self.catalog.read() {
            Ok(c) => c.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Rebuild from the stored CRDs; returns whether anything changed.
    pub fn sync<'a>(&self, crds: impl IntoIterator<Item = &'a Value>) -> bool {
        let mut built = match self.built.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        };
        let mut seen = std::collections::HashSet::new();
        let mut changed = false;
        for crd in crds {
            let name = str_at(crd, "/metadata/name").to_string();
            let fp = fingerprint(crd);
            seen.insert(name.clone());
            if built.get(&name).is_some_and(|(f, _)| *f == fp) {
                continue;
            }
            changed = true;
            built.insert(name, (fp, build(crd)));
        }
        let before = built.len();
        built.retain(|k, _| seen.contains(k));
        changed |= built.len() != before;
        if !changed {
            return false;
        }
        let mut defs: Vec<&'static ResourceDef> = built
            .values()
            .flat_map(|(_, d)| d.iter().filter(|(_, served)| *served).map(|(d, _)| *d))
            .collect();
        defs.sort_by_key(|d| (d.group, d.version, d.plural));
        defs.dedup_by_key(|d| (d.group, d.version, d.plural));
        let catalog = Arc::new(Catalog::with_custom(&defs));
        match self.catalog.write() {
            Ok(mut c) => *c = catalog,
            Err(p) => *p.into_inner() = catalog,
        }
        true
    }

    /// The definition of the storage version of the resource CRD `crd_name` defines
    /// (served or not).
    pub fn storage_def_of(&self, crd_name: &str) -> Option<&'static ResourceDef> {
        let built = match self.built.lock() {
            Ok(b) => b,
            Err(p) => p.into_inner(),
        };
        let (_, defs) = built.get(crd_name)?;
        defs.first()
            .and_then(|(d, _)| d.custom)
            .and_then(CustomVersion::storage_def)
    }
}

/// Column definitions of a custom resource: Name, then its printer columns (upstream's
/// apiextensions `tableconvertor`).
pub fn table_columns(custom: &CustomVersion) -> Value {
    let mut cols = vec![json!({
        "name": NAME.name, "type": NAME.ty, "format": NAME.format,
        "description": NAME.desc.text(crate::registry::catalog::definitions()), "priority": 0,
    })];
    cols.extend(custom.columns.iter().map(|c| {
        json!({"name": c.name, "type": c.ty, "format": c.format, "description": c.description, "priority": c.priority})
    }));
    Value::Array(cols)
}

/// Cells of a custom resource: the first value each column's JSONPath finds, typed as
/// upstream's `cellForJSONValue` (dates as ages; mistyped values as null).
pub fn table_row(custom: &CustomVersion, v: &Value, now: DateTime<Utc>) -> Row {
    let mut cells = vec![name(v)];
    for c in &custom.columns {
        let found = crate::machinery::jsonpath::JsonPath::parse(&c.json_path)
            .ok()
            .and_then(|p| p.first(v).cloned());
        let cell = match (c.ty.as_str(), found) {
            (_, None) | (_, Some(Value::Null)) => Value::Null,
            ("integer", Some(Value::Number(n))) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, |i| json!(i)),
            ("number", Some(Value::Number(n))) => n.as_f64().map_or(Value::Null, |f| json!(f)),
            ("boolean", Some(b @ Value::Bool(_))) => b,
            ("string", Some(x)) => json!(crate::machinery::jsonpath::to_text(&x)),
            ("date", Some(Value::String(t))) => match apimachinery::time::parse_time(&t) {
                Some(t) => json!(apimachinery::time::elapsed(t, now)),
                None => json!("<invalid>"),
            },
            _ => Value::Null,
        };
        cells.push(cell);
    }
    Row::of(cells)
}
