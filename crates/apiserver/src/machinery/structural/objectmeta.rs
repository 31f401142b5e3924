//! ObjectMeta handling inside `x-kubernetes-embedded-resource` objects: coercion
//! (drop unknown and malformed fields, as `objectmeta.CoerceWithOptions` with
//! DropInvalidFields) and validation (`objectmeta.Validate`'s embedded-resource checks).

use apimachinery::field::Cause;
use apimachinery::field::{self, child, index};
use apimachinery::gofmt;
use apimachinery::names::{
    is_dns1035_label, is_dns1123_label, is_label_value, is_path_segment, is_qualified_name,
};
use serde_json::{Map, Value};

#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Str,
    Int,
    Time,
    StrMap,
    StrList,
    OwnerRefs,
    ManagedFields,
}

fn shape(k: &str) -> Option<Shape> {
    Some(match k {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
            Shape::Str
        }
        "generation" | "deletionGracePeriodSeconds" => Shape::Int,
        "creationTimestamp" | "deletionTimestamp" => Shape::Time,
        "labels" | "annotations" => Shape::StrMap,
        "finalizers" => Shape::StrList,
        "ownerReferences" => Shape::OwnerRefs,
        "managedFields" => Shape::ManagedFields,
        _ => return None,
    })
}

fn is_rfc3339(s: &str) -> bool {
    s.len() >= 20
        && crate::machinery::structural::formats::is_date(&s[..10])
        && crate::machinery::structural::formats::validates("date-time", s)
}

/// Checks a field value against ObjectMeta's Go type; Err is the json unmarshal error.
fn check(k: &str, sh: Shape, v: &Value) -> Result<(), String> {
    let err = |t: &str| {
        Err(format!(
            "json: cannot unmarshal {} into Go struct field ObjectMeta.{k} of type {t}",
            apimachinery::gofmt::json_kind(v)
        ))
    };
    match (sh, v) {
        (_, Value::Null) => Ok(()),
        (Shape::Str, Value::String(_)) => Ok(()),
        (Shape::Str, _) => err("string"),
        (Shape::Int, Value::Number(n)) if n.as_i64().is_some() => Ok(()),
        (Shape::Int, _) => err("int64"),
        (Shape::Time, Value::String(s)) if is_rfc3339(s) => Ok(()),
        (Shape::Time, Value::String(s)) => Err(format!(
            "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse",
            gofmt::quote(s)
        )),
        (Shape::Time, _) => err("v1.Time"),
        (Shape::StrMap, Value::Object(m)) if m.values().all(|x| x.is_string() || x.is_null()) => {
            Ok(())
        }
        (Shape::StrMap, _) => err("map[string]string"),
        (Shape::StrList, Value::Array(a)) if a.iter().all(|x| x.is_string() || x.is_null()) => {
            Ok(())
        }
        (Shape::StrList, _) => err("[]string"),
        (Shape::OwnerRefs | Shape::ManagedFields, Value::Array(a))
            if a.iter().all(|x| x.is_object() || x.is_null()) =>
        {
            Ok(())
        }
        (Shape::OwnerRefs, _) => err("[]v1.OwnerReference"),
        (Shape::ManagedFields, _) => err("[]v1.ManagedFieldsEntry"),
    }
}

/// Whether `metadata` decodes into ObjectMeta; Err carries the decode error.
pub fn decode_error(meta: &Value) -> Option<String> {
    let Value::Object(m) = meta else {
        if meta.is_null() {
            return None;
        }
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            apimachinery::gofmt::json_kind(meta)
        ));
    };
    m.iter()
        .filter_map(|(k, v)| shape(k).and_then(|sh| check(k, sh, v).err()))
        .next()
}

fn known_sub(sh: Shape, k: &str) -> bool {
    match sh {
        Shape::OwnerRefs => matches!(
            k,
            "apiVersion" | "kind" | "name" | "uid" | "controller" | "blockOwnerDeletion"
        ),
        _ => matches!(
            k,
            "manager"
                | "operation"
                | "apiVersion"
                | "time"
                | "fieldsType"
                | "fieldsV1"
                | "subresource"
        ),
    }
}

/// Coerces an embedded resource's `metadata` (dropping unknown and malformed fields and
/// empty values, as a decode/encode round trip through ObjectMeta does). Returns the
/// unknown field paths, prefixed by `field_path` + `.metadata`.
pub fn coerce(meta: &mut Value, field_path: &str) -> Vec<String> {
    let prefix = child(field_path, "metadata");
    let mut unknown = vec![];
    let Value::Object(m) = meta else {
        return unknown;
    };
    let mut out = Map::new();
    let taken = std::mem::take(m);
    for (k, v) in taken {
        let Some(sh) = shape(&k) else {
            unknown.push(format!("{prefix}.{k}"));
            continue;
        };
        if check(&k, sh, &v).is_err() {
            continue;
        }
        let v = match (sh, v) {
            (_, Value::Null) => continue,
            (Shape::Str, Value::String(s)) if s.is_empty() => continue,
            (Shape::Int, Value::Number(n)) if n.as_i64() == Some(0) && k == "generation" => {
                continue
            }
            (Shape::StrMap, Value::Object(mm)) if mm.is_empty() => continue,
            (Shape::StrMap, Value::Object(mm)) => Value::Object(
                mm.into_iter()
                    .map(|(a, b)| {
                        (
                            a,
                            if b.is_null() {
                                Value::String(String::new())
                            } else {
                                b
                            },
                        )
                    })
                    .collect(),
            ),
            (Shape::StrList | Shape::OwnerRefs | Shape::ManagedFields, Value::Array(a))
                if a.is_empty() =>
            {
                continue
            }
            (Shape::OwnerRefs | Shape::ManagedFields, Value::Array(a)) => {
                let mut items = vec![];
                for (i, item) in a.into_iter().enumerate() {
                    let mut obj = match item {
                        Value::Object(o) => o,
                        _ => Map::new(),
                    };
                    obj.retain(|kk, _| {
                        let ok = known_sub(sh, kk);
                        if !ok {
                            unknown.push(format!("{prefix}.{k}[{i}].{kk}"));
                        }
                        ok
                    });
                    items.push(Value::Object(obj));
                }
                Value::Array(items)
            }
            (_, v) => v,
        };
        out.insert(k, v);
    }
    *m = out;
    unknown
}

fn parse_group_version(s: &str) -> Result<(), String> {
    if s.is_empty() || s == "/" {
        return Ok(());
    }
    if s.matches('/').count() > 1 {
        return Err(format!("unexpected GroupVersion string: {s}"));
    }
    Ok(())
}

/// `validateEmbeddedResource`: checks apiVersion, kind and metadata of an embedded object at `pth`.
pub fn validate_embedded(pth: &str, x: &Map<String, Value>, out: &mut Vec<Cause>) {
    if !x.contains_key("apiVersion") {
        out.push(field::required(&child(pth, "apiVersion"), ""));
    }
    if !x.contains_key("kind") {
        out.push(field::required(&child(pth, "kind"), ""));
    }
    for (k, v) in x {
        match k.as_str() {
            "apiVersion" => {
                let p = child(pth, "apiVersion");
                match v.as_str() {
                    None => out.push(field::invalid(&p, v.clone(), "must be a string")),
                    Some("") => out.push(field::invalid(&p, "", "must not be empty")),
                    Some(s) => {
                        if let Err(e) = parse_group_version(s) {
                            out.push(field::invalid(&p, s, &e));
                        }
                    }
                }
            }
            "kind" => {
                let p = child(pth, "kind");
                match v.as_str() {
                    None => out.push(field::invalid(&p, v.clone(), "must be a string")),
                    Some("") => out.push(field::invalid(&p, "", "must not be empty")),
                    Some(s) => {
                        let errs = is_dns1035_label(&s.to_lowercase());
                        if !errs.is_empty() {
                            out.push(field::invalid(
                                &p,
                                s,
                                &format!(
                                    "may have mixed case, but should otherwise match: {}",
                                    errs.join(",")
                                ),
                            ));
                        }
                    }
                }
            }
            "metadata" => {
                let p = child(pth, "metadata");
                if let Some(e) = decode_error(v) {
                    out.push(field::invalid(&p, v.clone(), &e));
                } else {
                    validate_object_meta(v, &p, out);
                }
            }
            _ => {}
        }
    }
}

/// `ValidateObjectMetaAccessor` for an embedded resource (path-segment names, namespace
/// required only when set).
pub fn validate_object_meta(meta: &Value, p: &str, out: &mut Vec<Cause>) {
    let empty = Map::new();
    let m = meta.as_object().unwrap_or(&empty);
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let gen_name = s("generateName");
    if !gen_name.is_empty() {
        for msg in is_path_segment(gen_name, true) {
            out.push(field::invalid(&child(p, "generateName"), gen_name, &msg));
        }
    }
    let name = if s("name").is_empty() {
        "fakename"
    } else {
        s("name")
    };
    for msg in is_path_segment(name, false) {
        out.push(field::invalid(&child(p, "name"), name, &msg));
    }
    let ns = s("namespace");
    if !ns.is_empty() {
        for msg in is_dns1123_label(ns) {
            out.push(field::invalid(&child(p, "namespace"), ns, &msg));
        }
    }
    if let Some(g) = m.get("generation").and_then(Value::as_i64) {
        if g < 0 {
            out.push(field::invalid(
                &child(p, "generation"),
                g,
                "must be greater than or equal to 0",
            ));
        }
    }
    if let Some(labels) = m.get("labels").and_then(Value::as_object) {
        let lp = child(p, "labels");
        for (k, v) in labels {
            for msg in is_qualified_name(k) {
                out.push(field::invalid(&lp, k.as_str(), &msg));
            }
            let v = v.as_str().unwrap_or("");
            for msg in is_label_value(v) {
                out.push(field::invalid(&lp, v, &msg));
            }
        }
    }
    if let Some(ann) = m.get("annotations").and_then(Value::as_object) {
        let ap = child(p, "annotations");
        let mut total = 0usize;
        for (k, v) in ann {
            for msg in is_qualified_name(&k.to_lowercase()) {
                out.push(field::invalid(&ap, k.as_str(), &msg));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            out.push(field::too_long(&ap, 256 * 1024));
        }
    }
    if let Some(fins) = m.get("finalizers").and_then(Value::as_array) {
        let fp = child(p, "finalizers");
        for (i, f) in fins.iter().enumerate() {
            let f = f.as_str().unwrap_or("");
            for msg in is_qualified_name(f) {
                out.push(field::invalid(&index(&fp, i), f, &msg));
            }
        }
    }
}
