//! Structural schema checks (`structuralschema.ValidateStructural`) and default value
//! validation (`structuraldefaulting.ValidateDefaults`).

use crate::machinery::structural::validator::{self, S};
use apimachinery::field::Cause;
use apimachinery::field::{self, child, key};
use serde_json::Value;

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    }
}

fn set(s: S<'_>, k: &str) -> bool {
    s.0.get(k).is_some_and(|v| !is_zero(v))
}

/// `ValidateStructural`, errors sorted by their full text as upstream does.
pub fn validate_structural(s: S<'_>, path: &str) -> Vec<Cause> {
    let mut errs = vec![];
    invariants(s, Level::Root, path, &mut errs);
    completeness_vv(s, Some(s), path, path, &mut errs);
    errs.sort_by(|a, b| {
        format!("{}: {}", a.field, a.message).cmp(&format!("{}: {}", b.field, b.message))
    });
    errs
}

fn int_or_string_anyof(list: &[S<'_>]) -> bool {
    list.len() == 2
        && list[0].0.len() == 1
        && list[0].str("type") == "integer"
        && list[1].0.len() == 1
        && list[1].str("type") == "string"
}

fn invariants(s: S<'_>, lvl: Level, p: &str, errs: &mut Vec<Cause>) {
    let ty = s.str("type");
    let emb = s.flag("x-kubernetes-embedded-resource");
    let ios = s.flag("x-kubernetes-int-or-string");
    let puf = s.flag("x-kubernetes-preserve-unknown-fields");
    if ty == "array" && s.items().is_none() {
        errs.push(field::required(&child(p, "items"), "must be specified"));
    }
    if let Some(items) = s.items() {
        invariants(items, Level::Item, &child(p, "items"), errs);
    }
    for (k, v) in s.props() {
        invariants(v, Level::Field, &key(&child(p, "properties"), k), errs);
    }
    if let Some((_, ap)) = s.additional() {
        if lvl == Level::Root {
            errs.push(field::forbidden(
                &child(p, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(ap) = ap {
            invariants(ap, Level::Field, &child(p, "additionalProperties"), errs);
        }
    }
    if ios && puf {
        errs.push(field::invalid(
            &child(p, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if ios && emb {
        errs.push(field::invalid(
            &child(p, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any = int_or_string_anyof(&s.list("anyOf"));
    let skip_first_all = s
        .list("allOf")
        .first()
        .is_some_and(|a| int_or_string_anyof(&a.list("anyOf")));
    value_validation(s, skip_any, skip_first_all, p, errs);
    let check_meta = lvl == Level::Root || emb;
    if emb && ty != "object" {
        if ty.is_empty() {
            errs.push(field::required(
                &child(p, "type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(field::invalid(
                &child(p, "type"),
                ty,
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !ios && !puf {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(field::required(&child(p, "type"), msg));
    }
    if emb && s.additional().is_some() {
        errs.push(field::forbidden(
            &child(p, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(field::invalid(
            &child(p, "type"),
            ty,
            "must be object at the root",
        ));
    }
    for k in ["kind", "apiVersion"] {
        if let Some(ps) = s.prop(k) {
            if check_meta && ps.str("type") != "string" {
                errs.push(field::invalid(
                    &child(&key(&child(p, "properties"), k), "type"),
                    ps.str("type"),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = s.prop("metadata") {
        let mp = key(&child(p, "properties"), "metadata");
        if check_meta && meta.str("type") != "object" {
            errs.push(field::invalid(
                &child(&mp, "type"),
                meta.str("type"),
                "must be object",
            ));
        }
        if lvl == Level::Root {
            let props = meta.props();
            let only_names = !props.is_empty()
                && props
                    .iter()
                    .all(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName");
            let extra = meta.0.iter().any(|(k, v)| match k.as_str() {
                "type" | "default" => false,
                "properties" => !only_names && !is_zero(v),
                _ => !is_zero(v),
            });
            if extra {
                errs.push(field::forbidden(&mp, "must not specify anything other than name and generateName, but metadata is implicitly specified"));
            }
        }
    }
    if emb && !puf && s.props().is_empty() {
        errs.push(field::required(&child(p, "properties"), "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"));
    }
}

fn value_validation(
    s: S<'_>,
    skip_any: bool,
    skip_first_all: bool,
    p: &str,
    errs: &mut Vec<Cause>,
) {
    if !skip_any {
        for (i, b) in s.list("anyOf").into_iter().enumerate() {
            nested(b, false, &format!("{}[{i}]", child(p, "anyOf")), errs);
        }
    }
    for (i, b) in s.list("allOf").into_iter().enumerate() {
        nested(
            b,
            skip_first_all && i == 0,
            &format!("{}[{i}]", child(p, "allOf")),
            errs,
        );
    }
    for (i, b) in s.list("oneOf").into_iter().enumerate() {
        nested(b, false, &format!("{}[{i}]", child(p, "oneOf")), errs);
    }
    if let Some(n) = s.sub("not") {
        nested(n, false, &child(p, "not"), errs);
    }
    let pattern = s.str("pattern");
    if !pattern.is_empty() {
        if let Err(e) = validator::compile(pattern) {
            errs.push(field::invalid(
                &child(p, "pattern"),
                pattern,
                &format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

fn nested(v: S<'_>, skip_any: bool, p: &str, errs: &mut Vec<Cause>) {
    value_validation(v, skip_any, false, p, errs);
    if let Some(items) = v.items() {
        nested(items, false, &child(p, "items"), errs);
    }
    for (k, f) in v.props() {
        nested(f, false, &key(&child(p, "properties"), k), errs);
    }
    if set(v, "type") {
        errs.push(field::forbidden(
            &child(p, "type"),
            "must be empty to be structural",
        ));
    }
    if v.0.contains_key("additionalProperties") {
        errs.push(field::forbidden(
            &child(p, "additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    let checks: [(&str, &str); 12] = [
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
        ("", ""),
    ];
    for (k, msg) in checks {
        if k.is_empty() {
            continue;
        }
        let present = match k {
            "default" | "x-kubernetes-list-type" | "x-kubernetes-map-type" => {
                v.0.get(k).is_some_and(|x| !x.is_null())
            }
            _ => set(v, k),
        };
        if present {
            errs.push(field::forbidden(&child(p, k), msg));
        }
    }
    if v.has_prop("metadata") {
        errs.push(field::forbidden(
            &key(&child(p, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

fn completeness_vv(v: S<'_>, s: Option<S<'_>>, sp: &str, vp: &str, errs: &mut Vec<Cause>) {
    let Some(s) = s else {
        errs.push(field::required(
            sp,
            &format!("because it is defined in {vp}"),
        ));
        return;
    };
    if let Some(n) = v.sub("not") {
        completeness_nested(n, Some(s), sp, &child(vp, "not"), errs);
    }
    for name in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in v.list(name).into_iter().enumerate() {
            completeness_nested(b, Some(s), sp, &format!("{}[{i}]", child(vp, name)), errs);
        }
    }
}

fn completeness_nested(v: S<'_>, s: Option<S<'_>>, sp: &str, vp: &str, errs: &mut Vec<Cause>) {
    let Some(s) = s else {
        errs.push(field::required(
            sp,
            &format!("because it is defined in {vp}"),
        ));
        return;
    };
    completeness_vv(v, Some(s), sp, vp, errs);
    if let Some(items) = v.items() {
        completeness_nested(
            items,
            s.items(),
            &child(sp, "items"),
            &child(vp, "items"),
            errs,
        );
    }
    for (k, f) in v.props() {
        let vkp = key(&child(vp, "properties"), k);
        let skp = key(&child(sp, "properties"), k);
        match s.prop(k) {
            None => errs.push(field::required(
                &skp,
                &format!("because it is defined in {vkp}"),
            )),
            Some(sf) => completeness_nested(f, Some(sf), &skp, &vkp, errs),
        }
    }
}

/// `ValidateDefaults` with the root treated as a resource root; `p` is the
/// `...openAPIV3Schema` path.
pub fn validate_defaults(s: S<'_>, p: &str, require_pruned: bool) -> Vec<Cause> {
    let mut errs = vec![];
    defaults_rec(s, p, true, false, require_pruned, &mut errs);
    errs
}

fn defaults_rec(
    s: S<'_>,
    p: &str,
    root: bool,
    mut inside_meta: bool,
    require_pruned: bool,
    errs: &mut Vec<Cause>,
) {
    let emb = root || s.flag("x-kubernetes-embedded-resource");
    if s.flag("x-kubernetes-embedded-resource") {
        inside_meta = false;
    }
    if let Some(d) = s.default() {
        let dp = child(p, "default");
        if !inside_meta {
            if require_pruned {
                let mut pruned = d.clone();
                crate::machinery::structural::prune_value(s, &mut pruned);
                if &pruned != d {
                    errs.push(field::invalid(
                        &dp,
                        d.clone(),
                        "must not have unknown fields",
                    ));
                }
            }
            let mut meta_errs = vec![];
            if s.flag("x-kubernetes-embedded-resource") {
                if let Value::Object(m) = d {
                    crate::machinery::structural::objectmeta::validate_embedded(
                        &dp,
                        m,
                        &mut meta_errs,
                    );
                }
            }
            if !meta_errs.is_empty() {
                errs.extend(meta_errs);
            } else {
                errs.extend(crate::machinery::structural::validate_at(
                    &Value::Object(s.0.clone()),
                    d,
                    &dp,
                ));
            }
        }
    }
    if let Some(items) = s.items() {
        defaults_rec(
            items,
            &child(p, "items"),
            false,
            inside_meta,
            require_pruned,
            errs,
        );
    }
    for (k, ps) in s.props() {
        let sub_meta =
            inside_meta || (emb && (k == "metadata" || k == "apiVersion" || k == "kind"));
        defaults_rec(
            ps,
            &key(&child(p, "properties"), k),
            false,
            sub_meta,
            require_pruned,
            errs,
        );
    }
}
