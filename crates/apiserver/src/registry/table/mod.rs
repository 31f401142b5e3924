//! Server-side `Table` output: what `kubectl get` prints.
//!
//! A client that sends `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` gets a
//! `meta.k8s.io/v1` `Table` instead of objects: column definitions (name, type, format,
//! description, priority; priority 1 columns are the `-o wide` ones) and one row of cells
//! per object, as upstream's printers (`pkg/printers/internalversion/printers.go`) compute
//! them. Kinds without a printer get upstream's default table (`Name`, `Created At`).
//!
//! Each row carries the object as asked by the `includeObject` query parameter: `None`,
//! `Metadata` (the default: a `PartialObjectMetadata`) or `Object` (the whole object in the
//! request's version). Printers read the stored representation of an object, so one
//! printer serves every version of a kind (`events.k8s.io/v1` Events are printed from
//! their core `v1` storage, as upstream prints the internal version).

use std::collections::BTreeSet;

use crate::machinery::schema::Definitions;

use chrono::{DateTime, SecondsFormat, Utc};

/// What the kinds' printers use: column constructors, row helpers and the shared cells.
pub(crate) mod prelude {
    pub(crate) use super::*;
    pub(crate) use apimachinery::duration::human_duration;
    pub(crate) use apimachinery::time::{elapsed, parse_time, since};
    pub(crate) use chrono::{DateTime, Utc};
    pub(crate) use serde_json::{json, Value};
}
use serde_json::{json, Map, Value};

/// Where a column's description comes from.
#[derive(Clone, Copy, Debug)]
pub enum Desc {
    /// A fixed text.
    Text(&'static str),
    /// The OpenAPI description of a property: definition name and property name, as
    /// upstream takes `SwaggerDoc()` of a Go type.
    Field(&'static str, &'static str),
}

impl Desc {
    /// The description text (property descriptions from `defs`); empty when the
    /// schema does not describe the property.
    pub fn text(self, defs: &Definitions) -> String {
        match self {
            Desc::Text(t) => t.to_string(),
            Desc::Field(def, prop) => defs
                .get(def)
                .and_then(|d| d.get("properties"))
                .and_then(|p| p.get(prop))
                .and_then(|p| p.get("description"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }
    }
}

/// One column definition of a table.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Header (`kubectl` prints it upper-cased).
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `boolean`, `date`.
    pub ty: &'static str,
    /// OpenAPI format: `name` for the column that names the object, else empty.
    pub format: &'static str,
    /// 0 for the default columns, 1 for the `-o wide` ones.
    pub priority: u32,
    /// The description.
    pub desc: Desc,
}

/// Definition name of `metav1.ObjectMeta`.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The `Name` column every printer starts with.
pub const NAME: Column = Column {
    name: "Name",
    ty: "string",
    format: "name",
    priority: 0,
    desc: Desc::Field(OBJECT_META, "name"),
};

/// The `Age` column.
pub const AGE: Column = string("Age", Desc::Field(OBJECT_META, "creationTimestamp"));

/// A `string` column.
pub const fn string(name: &'static str, desc: Desc) -> Column {
    Column {
        name,
        ty: "string",
        format: "",
        priority: 0,
        desc,
    }
}

/// An `integer` column.
pub const fn integer(name: &'static str, desc: Desc) -> Column {
    Column {
        ty: "integer",
        ..string(name, desc)
    }
}

/// A `boolean` column.
pub const fn boolean(name: &'static str, desc: Desc) -> Column {
    Column {
        ty: "boolean",
        ..string(name, desc)
    }
}

/// The same column shown only with `-o wide` (priority 1).
pub const fn wide(c: Column) -> Column {
    Column { priority: 1, ..c }
}

/// A description taken from the schema of `def`'s property `prop`.
pub const fn field(def: &'static str, prop: &'static str) -> Desc {
    Desc::Field(def, prop)
}

/// A fixed description.
pub const fn text(t: &'static str) -> Desc {
    Desc::Text(t)
}

/// The cells of one row plus its row conditions (pods: `Completed`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// One cell per column (some upstream printers give more cells than columns).
    pub cells: Vec<Value>,
    /// `conditions` of the row, when any.
    pub conditions: Option<Value>,
}

impl Row {
    /// A row of cells without conditions.
    pub fn of(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// How one kind is printed: its columns and the function computing a row from an object
/// (in its stored representation) at a given time.
pub struct Printer {
    /// Column definitions, in order.
    pub columns: &'static [Column],
    /// Cells of one object.
    pub print: fn(&Value, DateTime<Utc>) -> Row,
}

/// Columns of the default table (upstream `rest.NewDefaultTableConvertor`).
pub const DEFAULT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Created At",
        ty: "date",
        format: "",
        priority: 0,
        desc: Desc::Field(OBJECT_META, "creationTimestamp"),
    },
];

fn default_row(v: &Value, _now: DateTime<Utc>) -> Row {
    let created = s(v, "/metadata/creationTimestamp");
    let created = apimachinery::time::parse_time(created)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
        .unwrap_or_else(|| "0001-01-01T00:00:00Z".into());
    Row::of(vec![name(v), json!(created)])
}

/// The default table (kinds without a printer).
pub static DEFAULT: Printer = Printer {
    columns: DEFAULT_COLUMNS,
    print: default_row,
};

/// The `autoscaling/v1` `Scale` table (`/scale` subresources).
pub static SCALE: Printer = Printer {
    columns: &[
        Column { format: "", ..NAME },
        integer(
            "Desired",
            field("io.k8s.api.autoscaling.v1.ScaleSpec", "replicas"),
        ),
        integer(
            "Available",
            field("io.k8s.api.autoscaling.v1.ScaleStatus", "replicas"),
        ),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(int(v, "/spec/replicas")),
            json!(int(v, "/status/replicas")),
            age(v, now),
        ])
    },
};

// ----------------------------------------------------------------------------------
// Reading objects: missing or mistyped fields read as Go's zero values.

/// The string at a JSON pointer, `""` when absent.
pub(crate) fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// The string at a JSON pointer, when present.
pub(crate) fn opt_s<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

/// The integer at a JSON pointer, 0 when absent.
pub(crate) fn int(v: &Value, ptr: &str) -> i64 {
    v.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

/// The boolean at a JSON pointer, false when absent.
pub(crate) fn flag(v: &Value, ptr: &str) -> bool {
    v.pointer(ptr).and_then(Value::as_bool).unwrap_or(false)
}

/// The array at a JSON pointer, empty when absent.
pub(crate) fn arr<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Number of entries of the map at a JSON pointer.
pub(crate) fn map_len(v: &Value, ptr: &str) -> usize {
    v.pointer(ptr)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

/// The object's name as a cell.
pub(crate) fn name(v: &Value) -> Value {
    json!(s(v, "/metadata/name"))
}

/// The object's age as a cell.
pub(crate) fn age(v: &Value, now: DateTime<Utc>) -> Value {
    json!(apimachinery::time::since(
        opt_s(v, "/metadata/creationTimestamp"),
        now
    ))
}

/// Whether the object is being deleted.
pub(crate) fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// `labels.FormatLabels`: `k=v` pairs sorted by key, `<none>` when empty.
pub(crate) fn format_labels(m: Option<&Value>) -> String {
    let Some(m) = m.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: empty for empty or missing selectors,
/// `<invalid>` for bad ones.
pub(crate) fn selector_string(sel: Option<&Value>) -> String {
    match apimachinery::selector::LabelSelector::from_label_selector_json(
        sel.unwrap_or(&Value::Null),
    ) {
        Ok(s) => s.to_string(),
        Err(_) => "<invalid>".into(),
    }
}

/// `metav1.FormatLabelSelector`: `<none>` for empty or missing selectors, `<error>` for
/// bad ones.
pub(crate) fn format_label_selector(sel: Option<&Value>) -> String {
    match apimachinery::selector::LabelSelector::from_label_selector_json(
        sel.unwrap_or(&Value::Null),
    ) {
        Ok(s) => {
            let s = s.to_string();
            if s.is_empty() {
                "<none>".into()
            } else {
                s
            }
        }
        Err(_) => "<error>".into(),
    }
}

/// Container names and images of a pod spec, each joined with `,`.
pub(crate) fn containers(pod_spec: Option<&Value>) -> (String, String) {
    let list = pod_spec
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let names: Vec<&str> = list
        .iter()
        .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let images: Vec<&str> = list
        .iter()
        .map(|c| c.get("image").and_then(Value::as_str).unwrap_or(""))
        .collect();
    (names.join(","), images.join(","))
}

/// Go's `IntOrString.String()` (and plain values): numbers and strings as written.
pub(crate) fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// `printBool`: `True` or `False`.
pub(crate) fn bool_word(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

// ----------------------------------------------------------------------------------
// Cells several kinds share.

pub(crate) const CONTAINERS: Column = wide(string(
    "Containers",
    text("Names of each container in the template."),
));

pub(crate) const IMAGES: Column = wide(string(
    "Images",
    text("Images referenced by each container in the template."),
));

pub(crate) fn template_spec(v: &Value) -> Option<&Value> {
    v.pointer("/spec/template/spec")
}

/// Load-balancer ingress points: IPs, else hostnames, sorted and de-duplicated.
pub(crate) fn load_balancer_ingress(v: &Value, ptr: &str) -> String {
    let set: BTreeSet<&str> = arr(v, ptr)
        .iter()
        .filter_map(|i| {
            let ip = i.get("ip").and_then(Value::as_str).unwrap_or("");
            let host = i.get("hostname").and_then(Value::as_str).unwrap_or("");
            [ip, host].into_iter().find(|s| !s.is_empty())
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

/// Up to three entries joined with `,`, then `+ N more...`; `<unset>` when empty.
pub(crate) fn list_with_more(items: Vec<String>) -> String {
    const MAX: usize = 3;
    let count = items.len();
    let shown = items[..count.min(MAX)].join(",");
    if count > MAX {
        format!("{shown} + {} more...", count - MAX)
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

pub(crate) fn binding_row(v: &Value, now: chrono::DateTime<chrono::Utc>) -> Row {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut sas = Vec::new();
    for subject in arr(v, "/subjects") {
        let name = s(subject, "/name").to_string();
        match s(subject, "/kind") {
            "ServiceAccount" => sas.push(format!("{}/{name}", s(subject, "/namespace"))),
            "User" => users.push(name),
            "Group" => groups.push(name),
            _ => {}
        }
    }
    Row::of(vec![
        name(v),
        json!(format!(
            "{}/{}",
            s(v, "/roleRef/kind"),
            s(v, "/roleRef/name")
        )),
        age(v, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ])
}

pub(crate) const fn binding_columns(kind: &'static str, who: [&'static str; 3]) -> [Column; 6] {
    [
        NAME,
        string("Role", field(kind, "roleRef")),
        AGE,
        wide(string("Users", text(who[0]))),
        wide(string("Groups", text(who[1]))),
        wide(string("ServiceAccounts", text(who[2]))),
    ]
}

/// `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP` in that order, each once.
pub(crate) fn access_modes(v: &Value, ptr: &str) -> String {
    let modes: Vec<&str> = arr(v, ptr).iter().filter_map(Value::as_str).collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.contains(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

pub(crate) const BETA_STORAGE_CLASS: &str =
    "/metadata/annotations/volume.beta.kubernetes.io~1storage-class";

pub(crate) fn storage_class(v: &Value) -> String {
    opt_s(v, BETA_STORAGE_CLASS)
        .or_else(|| opt_s(v, "/spec/storageClassName"))
        .unwrap_or("")
        .to_string()
}

pub(crate) fn phase_or_terminating(v: &Value) -> String {
    if deleting(v) {
        "Terminating".into()
    } else {
        s(v, "/status/phase").to_string()
    }
}

/// A quantity as stored (canonical), `0` when absent (Go's zero `Quantity`).
pub(crate) fn quantity(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .map(crate::registry::table::int_or_string)
        .filter(|q| !q.is_empty())
        .unwrap_or_else(|| "0".into())
}

pub(crate) fn unset(v: &Value, ptr: &str) -> Value {
    json!(opt_s(v, ptr).unwrap_or("<unset>"))
}

/// The value of annotation `key` is `true`.
pub(crate) fn annotation_true(v: &Value, key: &str) -> bool {
    v.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        == Some("true")
}
