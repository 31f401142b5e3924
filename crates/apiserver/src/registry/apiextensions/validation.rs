//! Validation of apiextensions.k8s.io/v1 CustomResourceDefinition objects
//! (`ValidateCustomResourceDefinition` / `ValidateCustomResourceDefinitionUpdate`).
//!
//! Paths follow upstream, which validates the internal version: schemas, subresources
//! and printer columns identical in every version are reported under the top-level
//! `spec.validation`, `spec.subresources` and `spec.additionalPrinterColumns`, and
//! internal field names are used (`webhookClientConfig`, `JSONPath`).

use crate::machinery::structural::schema as structural_schema;
use crate::machinery::structural::validator::S;
use apimachinery::field::Cause;
use apimachinery::field::{self, child, index, key};
use apimachinery::names::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::{Map, Value};

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for p in path {
        cur = cur.as_object()?.get(*p)?;
    }
    Some(cur).filter(|v| !v.is_null())
}

fn gstr<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    get(v, path).and_then(Value::as_str).unwrap_or("")
}

fn arr(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn strs(v: Option<&Value>) -> Vec<String> {
    arr(v)
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

/// Whether a schema is structural; returns the causes upstream reports when it is not
/// (`path` is the `openAPIV3Schema` path, e.g. `spec.validation.openAPIV3Schema`).
#[cfg(test)]
pub fn structural_errors(schema: &Value, path: &str) -> Vec<Cause> {
    match S::new(schema) {
        Some(s) => structural_schema::validate_structural(s, path),
        None => vec![field::required(
            &child(path, "type"),
            "must not be empty at the root",
        )],
    }
}

struct Ctx {
    require_structural: bool,
    require_pruned_defaults: bool,
    require_atomic_set: bool,
    require_map_list_keys: bool,
}

/// Validate an apiextensions.k8s.io/v1 CustomResourceDefinition (already defaulted). `old` is the stored object on update.
pub fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut errs = vec![];
    let spec = get(crd, &["spec"])
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let group = gstr(&spec, &["group"]);
    let plural = gstr(&spec, &["names", "plural"]);
    // metadata
    if old.is_none() {
        let name = gstr(crd, &["metadata", "name"]);
        if name.is_empty() {
            errs.push(field::required(
                "metadata.name",
                "name or generateName is required",
            ));
        } else {
            let mut msgs = is_dns1123_subdomain(name);
            if name != format!("{plural}.{group}") {
                msgs.push(r#"must be spec.names.plural+"."+spec.group"#.to_string());
            }
            for m in msgs {
                errs.push(field::invalid("metadata.name", name, &m));
            }
        }
    }
    if !gstr(crd, &["metadata", "namespace"]).is_empty() {
        errs.push(field::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    let ctx = Ctx {
        require_structural: true,
        require_pruned_defaults: old.is_none_or(|o| !old_has(o, has_unpruned_defaults)),
        require_atomic_set: old.is_none_or(|o| !old_has(o, has_non_atomic_set)),
        require_map_list_keys: old
            .is_none_or(|o| !old_has(o, |s| !map_list_keys(s, "").is_empty())),
    };
    let require_openapi = old.is_none_or(|o| {
        arr(get(o, &["spec", "versions"]))
            .iter()
            .all(|v| get(v, &["schema", "openAPIV3Schema"]).is_some())
    });
    spec_errors(
        &spec,
        &ctx,
        require_openapi,
        old.is_none_or(old_conversion_ok),
        &mut errs,
    );
    if let Some(o) = old {
        let established = arr(get(o, &["status", "conditions"]))
            .iter()
            .any(|c| gstr(c, &["type"]) == "Established" && gstr(c, &["status"]) == "True");
        let immutable = |errs: &mut Vec<Cause>, path: &[&str], f: &str| {
            let (n, p) = (gstr(&spec, path), gstr(o, &[&["spec"], path].concat()));
            if n != p {
                errs.push(field::invalid(f, n, "field is immutable"));
            }
        };
        if established {
            immutable(&mut errs, &["scope"], "spec.scope");
            immutable(&mut errs, &["names", "kind"], "spec.names.kind");
        }
        immutable(&mut errs, &["group"], "spec.group");
        immutable(&mut errs, &["names", "plural"], "spec.names.plural");
    }
    if let Some(an) = get(crd, &["status", "acceptedNames"]) {
        names_errors(an, "status.acceptedNames", &mut errs);
    }
    stored_versions(crd, &spec, &mut errs);
    let puf = get(&spec, &["preserveUnknownFields"]).and_then(Value::as_bool) == Some(true);
    let old_puf = old
        .and_then(|o| get(o, &["spec", "preserveUnknownFields"]))
        .and_then(Value::as_bool)
        == Some(true);
    if puf && !old_puf {
        errs.push(field::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn old_conversion_ok(o: &Value) -> bool {
    let v = strs(get(
        o,
        &["spec", "conversion", "webhook", "conversionReviewVersions"],
    ));
    v.is_empty() || v.iter().any(|x| x == "v1" || x == "v1beta1")
}

fn old_has(o: &Value, pred: fn(S<'_>) -> bool) -> bool {
    arr(get(o, &["spec", "versions"])).iter().any(|v| {
        get(v, &["schema", "openAPIV3Schema"])
            .and_then(S::new)
            .is_some_and(|s| schema_has(s, pred))
    })
}

fn schema_has(s: S<'_>, pred: fn(S<'_>) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    s.items().is_some_and(|i| schema_has(i, pred))
        || ["allOf", "anyOf", "oneOf"]
            .iter()
            .any(|k| s.list(k).into_iter().any(|b| schema_has(b, pred)))
        || s.sub("not").is_some_and(|n| schema_has(n, pred))
        || s.props().into_iter().any(|(_, p)| schema_has(p, pred))
        || s.additional()
            .and_then(|a| a.1)
            .is_some_and(|a| schema_has(a, pred))
}

fn has_unpruned_defaults(s: S<'_>) -> bool {
    // conservative approximation: a default with object content not fully described
    s.default().is_some_and(|d| {
        let mut p = d.clone();
        crate::machinery::structural::prune_value(s, &mut p);
        &p != d
    })
}

fn has_non_atomic_set(s: S<'_>) -> bool {
    if s.str("x-kubernetes-list-type") != "set" {
        return false;
    }
    let Some(is) = s.items() else { return false };
    match is.str("type") {
        "array" => {
            is.0.get("x-kubernetes-list-type")
                .is_some_and(|v| !v.is_null())
                && is.str("x-kubernetes-list-type") != "atomic"
        }
        "object" => is.str("x-kubernetes-map-type") != "atomic",
        _ => false,
    }
}

fn stored_versions(crd: &Value, spec: &Value, errs: &mut Vec<Cause>) {
    let path = "status.storedVersions";
    let sv = strs(get(crd, &["status", "storedVersions"]));
    let bad: Value = Value::Array(sv.iter().map(|s| Value::String(s.clone())).collect());
    if sv.is_empty() {
        errs.push(field::invalid(
            path,
            bad,
            "must have at least one stored version",
        ));
        return;
    }
    let mut remaining: Vec<(usize, &String)> = vec![];
    for (i, v) in sv.iter().enumerate() {
        remaining.retain(|(_, x)| *x != v);
        remaining.push((i, v));
    }
    for v in arr(get(spec, &["versions"])) {
        let name = gstr(v, &["name"]);
        let found = remaining.iter().any(|(_, x)| x.as_str() == name);
        if get(v, &["storage"]).and_then(Value::as_bool) == Some(true) && !found {
            errs.push(field::invalid(
                path,
                bad.clone(),
                &format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, x)| x.as_str() != name);
    }
    remaining.sort();
    for (i, v) in remaining {
        errs.push(field::invalid(&index(path, i), v.as_str(), &format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions")));
    }
}

/// Versions' values for `field` and whether all are identical (v1 → internal hoisting).
fn hoisted<'a>(versions: &'a [Value], field: &str) -> (bool, Option<&'a Value>) {
    let vals: Vec<Option<&Value>> = versions
        .iter()
        .map(|v| get(v, &[field]).filter(|x| !is_empty_val(x)))
        .collect();
    let identical = !vals.is_empty() && vals.iter().all(|x| *x == vals[0]);
    (identical, if identical { vals[0] } else { None })
}

fn is_empty_val(v: &Value) -> bool {
    v.is_null() || v.as_array().is_some_and(Vec::is_empty)
}

fn spec_errors(
    spec: &Value,
    ctx: &Ctx,
    require_openapi: bool,
    require_review_version: bool,
    errs: &mut Vec<Cause>,
) {
    let group = gstr(spec, &["group"]);
    if group.is_empty() {
        errs.push(field::required("spec.group", ""));
    } else {
        let e = is_dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(field::invalid("spec.group", group, &e.join(",")));
        } else if group.split('.').count() < 2 {
            errs.push(field::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    match gstr(spec, &["scope"]) {
        "" => errs.push(field::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        s => errs.push(field::not_supported(
            "spec.scope",
            s,
            &["Cluster", "Namespaced"],
        )),
    }
    let versions = arr(get(spec, &["versions"]));
    let (schema_same, top_schema) = hoisted(versions, "schema");
    let (sub_same, top_sub) = hoisted(versions, "subresources");
    let (col_same, top_cols) = hoisted(versions, "additionalPrinterColumns");
    let top_validation = top_schema.filter(|_| schema_same);
    if require_openapi
        && top_validation
            .and_then(|v| get(v, &["openAPIV3Schema"]))
            .is_none()
    {
        for (i, v) in versions.iter().enumerate() {
            if get(v, &["schema", "openAPIV3Schema"]).is_none() {
                errs.push(field::required(
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    "",
                ));
            }
        }
    }
    let status_of = |sub: Option<&Value>| sub.and_then(|s| get(s, &["status"])).is_some();
    let any_status = versions
        .iter()
        .any(|v| status_of(get(v, &["subresources"])));
    let mut storage = 0;
    let mut names: Vec<&str> = vec![];
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vp = format!("spec.versions[{i}]");
        let name = gstr(v, &["name"]);
        if get(v, &["storage"]).and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        if names.contains(&name) {
            unique = false;
        } else {
            names.push(name);
        }
        let e = is_dns1035_label(name);
        if !e.is_empty() {
            errs.push(field::invalid(&child(&vp, "name"), name, &e.join(",")));
        }
        let deprecated = get(v, &["deprecated"]).and_then(Value::as_bool) == Some(true);
        if let Some(w) = get(v, &["deprecationWarning"]).and_then(Value::as_str) {
            let wp = child(&vp, "deprecationWarning");
            if !deprecated {
                errs.push(field::invalid(
                    &wp,
                    w,
                    "can only be set for deprecated versions",
                ));
            } else {
                if w.len() > 256 {
                    errs.push(field::invalid(&wp, w, "must be <= 256 characters long"));
                }
                if w.is_empty() {
                    errs.push(field::invalid(&wp, w, "must not be an empty string"));
                }
                if let Some((i, _)) = w.char_indices().find(|(_, c)| c.is_control()) {
                    errs.push(field::invalid(&wp, w, &format!("must only contain printable UTF-8 characters; non-printable character found at index {i}")));
                }
            }
        }
        let sub = if sub_same {
            top_sub
        } else {
            get(v, &["subresources"])
        };
        if !schema_same {
            if let Some(schema) = get(v, &["schema"]) {
                validation_errors(schema, status_of(sub), ctx, &child(&vp, "schema"), errs);
            }
        }
        if !sub_same {
            subresource_errors(get(v, &["subresources"]), &child(&vp, "subresources"), errs);
        }
        if !col_same {
            for (j, c) in arr(get(v, &["additionalPrinterColumns"]))
                .iter()
                .enumerate()
            {
                column_errors(c, &format!("{vp}.additionalPrinterColumns[{j}]"), errs);
            }
        }
    }
    if !unique {
        errs.push(field::invalid(
            "spec.versions",
            Value::Array(versions.to_vec()),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(field::invalid(
            "spec.versions",
            Value::Array(versions.to_vec()),
            "must have exactly one version marked as storage version",
        ));
    }
    let names_v = get(spec, &["names"]).cloned().unwrap_or(Value::Null);
    for (f, p) in [
        ("plural", "spec.names.plural"),
        ("singular", "spec.names.singular"),
        ("kind", "spec.names.kind"),
        ("listKind", "spec.names.listKind"),
    ] {
        if gstr(&names_v, &[f]).is_empty() {
            errs.push(field::required(p, ""));
        }
    }
    names_errors(&names_v, "spec.names", errs);
    if schema_same {
        if let Some(schema) = top_validation {
            validation_errors(schema, any_status, ctx, "spec.validation", errs);
        }
    }
    if sub_same {
        subresource_errors(top_sub, "spec.subresources", errs);
    }
    if col_same {
        for (j, c) in arr(top_cols).iter().enumerate() {
            column_errors(c, &format!("spec.additionalPrinterColumns[{j}]"), errs);
        }
    }
    conversion_errors(spec, require_review_version, errs);
}

fn names_errors(n: &Value, p: &str, errs: &mut Vec<Cause>) {
    for f in ["plural", "singular"] {
        let v = gstr(n, &[f]);
        let e = is_dns1035_label(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(field::invalid(&child(p, f), v, &e.join(",")));
        }
    }
    for f in ["kind", "listKind"] {
        let v = gstr(n, &[f]);
        let e = is_dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(field::invalid(
                &child(p, f),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    for (i, s) in strs(get(n, &["shortNames"])).iter().enumerate() {
        let e = is_dns1035_label(s);
        if !e.is_empty() {
            errs.push(field::invalid(
                &format!("{p}.shortNames[{i}]"),
                s.as_str(),
                &e.join(","),
            ));
        }
    }
    let kind = gstr(n, &["kind"]);
    if !kind.is_empty() && kind == gstr(n, &["listKind"]) {
        errs.push(field::invalid(
            &child(p, "listKind"),
            kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, s) in strs(get(n, &["categories"])).iter().enumerate() {
        let e = is_dns1035_label(s);
        if !e.is_empty() {
            errs.push(field::invalid(
                &format!("{p}.categories[{i}]"),
                s.as_str(),
                &e.join(","),
            ));
        }
    }
}

fn simple_json_path(s: &str, p: &str, errs: &mut Vec<Cause>) -> bool {
    if s.is_empty() {
        errs.push(field::invalid(p, s, "must not be empty"));
        false
    } else if !s.starts_with('.') {
        errs.push(field::invalid(
            p,
            s,
            "must be a simple json path starting with .",
        ));
        false
    } else {
        true
    }
}

fn subresource_errors(sub: Option<&Value>, p: &str, errs: &mut Vec<Cause>) {
    let Some(scale) = sub.and_then(|s| get(s, &["scale"])) else {
        return;
    };
    for (f, prefix, msg) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let fp = format!("{p}.scale.{f}");
        let v = gstr(scale, &[f]);
        if v.is_empty() {
            errs.push(field::required(&fp, ""));
        } else if simple_json_path(v, &fp, errs) && !v.starts_with(prefix) {
            errs.push(field::invalid(&fp, v, msg));
        }
    }
    let ls = gstr(scale, &["labelSelectorPath"]);
    let fp = format!("{p}.scale.labelSelectorPath");
    if !ls.is_empty()
        && simple_json_path(ls, &fp, errs)
        && !ls.starts_with(".spec.")
        && !ls.starts_with(".status.")
    {
        errs.push(field::invalid(
            &fp,
            ls,
            "should be a json path under either .spec or .status",
        ));
    }
}

fn column_errors(c: &Value, p: &str, errs: &mut Vec<Cause>) {
    if gstr(c, &["name"]).is_empty() {
        errs.push(field::required(&child(p, "name"), ""));
    }
    let types = "boolean,date,integer,number,string";
    match gstr(c, &["type"]) {
        "" => errs.push(field::required(
            &child(p, "type"),
            &format!("must be one of {types}"),
        )),
        "integer" | "number" | "string" | "boolean" | "date" => {}
        t => errs.push(field::invalid(
            &child(p, "type"),
            t,
            &format!("must be one of {types}"),
        )),
    }
    let f = gstr(c, &["format"]);
    if !f.is_empty()
        && ![
            "int32",
            "int64",
            "float",
            "double",
            "byte",
            "date",
            "date-time",
            "password",
        ]
        .contains(&f)
    {
        errs.push(field::invalid(
            &child(p, "format"),
            f,
            "must be one of byte,date,date-time,double,float,int32,int64,password",
        ));
    }
    let jp = gstr(c, &["jsonPath"]);
    let jpp = child(p, "JSONPath");
    if jp.is_empty() {
        errs.push(field::required(&jpp, ""));
    } else {
        simple_json_path(jp, &jpp, errs);
    }
}

fn conversion_errors(spec: &Value, require_review_version: bool, errs: &mut Vec<Cause>) {
    let Some(conv) = get(spec, &["conversion"]) else {
        return;
    };
    let p = "spec.conversion";
    let strategy = gstr(conv, &["strategy"]);
    match strategy {
        "" => errs.push(field::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        s => errs.push(field::not_supported(
            "spec.conversion.strategy",
            s,
            &["None", "Webhook"],
        )),
    }
    let cc = get(conv, &["webhook", "clientConfig"]);
    let crv = get(conv, &["webhook", "conversionReviewVersions"]);
    if strategy == "Webhook" {
        let ccp = format!("{p}.webhookClientConfig");
        match cc {
            None => errs.push(field::required(
                &ccp,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let url = get(cc, &["url"]);
                let svc = get(cc, &["service"]);
                if url.is_some() == svc.is_some() {
                    errs.push(field::required(
                        &ccp,
                        "exactly one of url or service is required",
                    ));
                } else if let Some(u) = url.and_then(Value::as_str) {
                    let up = format!("{ccp}.url");
                    if !u.starts_with("https://") {
                        errs.push(field::invalid(
                            &up,
                            u,
                            "'https' is the only allowed URL scheme",
                        ));
                    }
                } else if let Some(s) = svc {
                    let sp = format!("{ccp}.service");
                    if gstr(s, &["name"]).is_empty() {
                        errs.push(field::required(
                            &child(&sp, "name"),
                            "service name is required",
                        ));
                    }
                    if gstr(s, &["namespace"]).is_empty() {
                        errs.push(field::required(
                            &child(&sp, "namespace"),
                            "service namespace is required",
                        ));
                    }
                }
            }
        }
        let rp = format!("{p}.conversionReviewVersions");
        let versions = strs(crv);
        if versions.is_empty() {
            errs.push(field::required(&rp, ""));
        } else {
            let mut seen: Vec<&str> = vec![];
            for (i, v) in versions.iter().enumerate() {
                if seen.contains(&v.as_str()) {
                    errs.push(field::invalid(
                        &index(&rp, i),
                        v.as_str(),
                        "duplicate version",
                    ));
                    continue;
                }
                seen.push(v);
                for e in is_dns1035_label(v) {
                    errs.push(field::invalid(&index(&rp, i), v.as_str(), &e));
                }
            }
            if require_review_version && !versions.iter().any(|v| v == "v1" || v == "v1beta1") {
                let bad = Value::Array(versions.iter().map(|v| Value::String(v.clone())).collect());
                errs.push(field::invalid(
                    &rp,
                    bad,
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if cc.is_some() {
            errs.push(field::forbidden(
                &format!("{p}.webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !arr(crv).is_empty() {
            errs.push(field::forbidden(
                &format!("{p}.conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

const ROOT_ALLOWED: &[(&str, &str)] = &[
    ("description", "Description"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("required", "Required"),
    ("items", "Items"),
    ("properties", "Properties"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-validations", "XValidations"),
];

fn validation_errors(validation: &Value, status: bool, ctx: &Ctx, p: &str, errs: &mut Vec<Cause>) {
    let Some(schema_v) = get(validation, &["openAPIV3Schema"]) else {
        return;
    };
    let sp = child(p, "openAPIV3Schema");
    let Some(s) = S::new(schema_v) else {
        errs.push(field::invalid(&sp, schema_v.clone(), "must be an object"));
        return;
    };
    let mut local = vec![];
    if status {
        let set = |k: &str, v: &Value| match v {
            Value::Bool(false) => matches!(
                k,
                "additionalProperties" | "additionalItems" | "x-kubernetes-preserve-unknown-fields"
            ),
            v => !is_zero_val(v),
        };
        if s.0.iter().any(|(k, v)| set(k, v) && k == "type") && s.str("type") != "object" {
            local.push(field::invalid(&format!("{sp}.type"), s.str("type"), r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#));
        } else if s
            .0
            .iter()
            .any(|(k, v)| set(k, v) && !ROOT_ALLOWED.iter().any(|(j, _)| j == k))
        {
            let names: Vec<&str> = ROOT_ALLOWED.iter().map(|(_, g)| *g).collect();
            local.push(field::invalid(&sp, schema_v.clone(), &format!("only [{}] fields are allowed at the root of the schema if the status subresource is enabled", names.join(" "))));
        }
    }
    if s.flag("nullable") {
        local.push(field::forbidden(
            &format!("{sp}.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    if ctx.require_structural {
        let se = structural_schema::validate_structural(s, &sp);
        if !se.is_empty() {
            local.extend(se);
        } else {
            local.extend(structural_schema::validate_defaults(
                s,
                &sp,
                ctx.require_pruned_defaults,
            ));
        }
    }
    openapi_schema_errors(s, &sp, true, Ssv::default(), ctx, &mut local);
    errs.extend(local);
}

fn is_zero_val(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    }
}

#[derive(Clone, Default)]
struct Ssv {
    forbid_defaults: Option<String>,
    inside_meta: bool,
}

fn openapi_schema_errors(
    s: S<'_>,
    p: &str,
    root: bool,
    ssv: Ssv,
    ctx: &Ctx,
    errs: &mut Vec<Cause>,
) {
    let ty = s.str("type");
    if !ty.is_empty()
        && !["string", "number", "integer", "boolean", "array", "object"].contains(&ty)
    {
        errs.push(field::not_supported(
            &child(p, "type"),
            ty,
            &["array", "boolean", "integer", "number", "object", "string"],
        ));
    }
    if s.default().is_some() {
        if let Some(reason) = &ssv.forbid_defaults {
            let detail = if reason.is_empty() {
                "must not be set".to_string()
            } else {
                format!("must not be set {reason}")
            };
            errs.push(field::forbidden(&child(p, "default"), &detail));
        }
    }
    for (k, msg) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if s.0.get(k).is_some_and(|v| !is_zero_val(v)) {
            errs.push(field::forbidden(&child(p, k), msg));
        }
    }
    if ty == "null" {
        errs.push(field::forbidden(
            &child(p, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.0.get("items").is_some_and(Value::is_array) {
        errs.push(field::forbidden(
            &child(p, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_meta && s.flag("x-kubernetes-embedded-resource") {
        errs.push(field::forbidden(
            &child(p, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if s.flag("uniqueItems") {
        errs.push(field::forbidden(
            &child(p, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let props = s.props();
    if let Some((allows, ap)) = s.additional() {
        if !props.is_empty() && (!allows || ap.is_some()) {
            errs.push(field::forbidden(
                &child(p, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(ap) = ap {
            let mut sub = ssv.clone();
            if ssv.inside_meta {
                sub.forbid_defaults =
                    Some("inside additionalProperties applying to object metadata".into());
            }
            openapi_schema_errors(ap, &child(p, "additionalProperties"), false, sub, ctx, errs);
        }
    }
    for (k, ps) in &props {
        let mut sub = ssv.clone();
        if (root || s.flag("x-kubernetes-embedded-resource"))
            && ["metadata", "kind", "apiVersion"].contains(&k.as_str())
        {
            sub.inside_meta = true;
            if root {
                sub.forbid_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi_schema_errors(*ps, &key(&child(p, "properties"), k), false, sub, ctx, errs);
    }
    if let Some(n) = s.sub("not") {
        openapi_schema_errors(n, &child(p, "not"), false, ssv.clone(), ctx, errs);
    }
    for name in ["allOf", "oneOf", "anyOf"] {
        for (i, b) in s.list(name).into_iter().enumerate() {
            openapi_schema_errors(
                b,
                &format!("{}[{i}]", child(p, name)),
                false,
                ssv.clone(),
                ctx,
                errs,
            );
        }
    }
    if let Some(items) = s.items() {
        openapi_schema_errors(items, &child(p, "items"), false, ssv.clone(), ctx, errs);
    }
    if s.0.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(field::invalid(
            &child(p, "x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let map_type =
        s.0.get("x-kubernetes-map-type")
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().unwrap_or(""));
    if map_type.is_some() && ty != "object" {
        if ty.is_empty() {
            errs.push(field::required(
                &child(p, "type"),
                "must be object if x-kubernetes-map-type is specified",
            ));
        } else {
            errs.push(field::invalid(
                &child(p, "type"),
                ty,
                "must be object if x-kubernetes-map-type is specified",
            ));
        }
    }
    if let Some(mt) = map_type {
        if mt != "atomic" && mt != "granular" {
            errs.push(field::not_supported(
                &child(p, "x-kubernetes-map-type"),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type =
        s.0.get("x-kubernetes-list-type")
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().unwrap_or(""));
    if list_type.is_some() && ty != "array" {
        if ty.is_empty() {
            errs.push(field::required(
                &child(p, "type"),
                "must be array if x-kubernetes-list-type is specified",
            ));
        } else {
            errs.push(field::invalid(
                &child(p, "type"),
                ty,
                "must be array if x-kubernetes-list-type is specified",
            ));
        }
    } else if ctx.require_atomic_set && list_type == Some("set") {
        if let Some(is) = s.items() {
            let ip = child(p, "items");
            match is.str("type") {
                "array" => {
                    let lt = is.0.get("x-kubernetes-list-type").filter(|v| !v.is_null());
                    if lt.is_some_and(|v| v.as_str() != Some("atomic")) {
                        errs.push(field::invalid(
                            &child(&ip, "x-kubernetes-list-type"),
                            lt.cloned().unwrap_or(Value::Null),
                            "must be atomic as item of a list with x-kubernetes-list-type=set",
                        ));
                    }
                }
                "object" if is.str("x-kubernetes-map-type") != "atomic" => {
                    let lt =
                        is.0.get("x-kubernetes-list-type")
                            .cloned()
                            .unwrap_or(Value::Null);
                    errs.push(field::invalid(
                        &child(&ip, "x-kubernetes-map-type"),
                        lt,
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    ));
                }
                _ => {}
            }
        }
    }
    if let Some(lt) = list_type {
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(field::not_supported(
                &child(p, "x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys = s.strs("x-kubernetes-list-map-keys");
    let keys_v = Value::Array(keys.iter().map(|k| Value::String(k.to_string())).collect());
    if !keys.is_empty() {
        match list_type {
            None => errs.push(field::required(
                &child(p, "x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(lt) => errs.push(field::invalid(
                &child(p, "x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(field::required(
                &child(p, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match s.0.get("items") {
            None | Some(Value::Null) => errs.push(field::required(
                &child(p, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(Value::Object(_)) => {}
            Some(other) => errs.push(field::invalid(
                &child(p, "items"),
                other.clone(),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
        }
        if let Some(is) = s.items() {
            let ip = child(p, "items");
            if is.str("type") != "object" {
                errs.push(field::invalid(
                    &child(&ip, "type"),
                    is.str("type"),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen: Vec<&str> = vec![];
                for k in &keys {
                    match is.prop(k) {
                        Some(ks) => {
                            if ks.str("type") == "array" || ks.str("type") == "object" {
                                errs.push(field::invalid(&child(&key(&child(&ip, "properties"), k), "type"), "object", "must be a scalar type if parent array's x-kubernetes-list-type is map"));
                            }
                        }
                        None => errs.push(field::invalid(
                            &child(p, "x-kubernetes-list-map-keys"),
                            keys_v.clone(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(k) {
                        errs.push(field::invalid(
                            &child(p, "x-kubernetes-list-map-keys"),
                            keys_v.clone(),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            }
        }
    }
    if ctx.require_map_list_keys {
        errs.extend(map_list_keys(s, p));
    }
    for (i, rule) in arr(s.0.get("x-kubernetes-validations")).iter().enumerate() {
        let rp = format!("{p}.x-kubernetes-validations[{i}]");
        let r = gstr(rule, &["rule"]);
        let msg = gstr(rule, &["message"]);
        if r.trim().is_empty() {
            errs.push(field::required(
                &child(&rp, "rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            errs.push(field::invalid(
                &child(&rp, "message"),
                msg,
                "must be non-empty if specified",
            ));
        } else if msg.trim().contains(['\n', '\r']) {
            errs.push(field::invalid(
                &child(&rp, "message"),
                msg,
                "must not contain line breaks",
            ));
        } else if r.trim().contains(['\n', '\r']) && msg.trim().is_empty() {
            errs.push(field::required(
                &child(&rp, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let me = gstr(rule, &["messageExpression"]);
        if !me.is_empty() && me.trim().is_empty() {
            errs.push(field::required(
                &child(&rp, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = get(rule, &["reason"]).and_then(Value::as_str) {
            if ![
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ]
            .contains(&reason)
            {
                errs.push(field::not_supported(
                    &child(&rp, "reason"),
                    reason,
                    &[
                        "FieldValueDuplicate",
                        "FieldValueForbidden",
                        "FieldValueInvalid",
                        "FieldValueRequired",
                    ],
                ));
            }
        }
    }
}

fn map_list_keys(s: S<'_>, p: &str) -> Vec<Cause> {
    let mut errs = vec![];
    let Some(is) = s.items() else { return errs };
    let lt = s.str("x-kubernetes-list-type");
    if lt != "set" && lt != "map" {
        return errs;
    }
    let ip = child(p, "items");
    if is.flag("nullable") {
        errs.push(field::forbidden(
            &child(&ip, "nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = is.strs("required");
        for k in s.strs("x-kubernetes-list-map-keys") {
            let Some(ks) = is.prop(k) else { continue };
            let kp = key(&child(&ip, "properties"), k);
            if !required.contains(&k) && ks.default().is_none() {
                errs.push(field::required(&child(&kp, "default"), "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
            }
            if ks.flag("nullable") {
                errs.push(field::forbidden(
                    &child(&kp, "nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}
