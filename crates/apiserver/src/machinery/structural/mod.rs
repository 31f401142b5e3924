//! Validation, defaulting and pruning of custom objects against a CRD version's
//! `openAPIV3Schema`, as apiextensions-apiserver does it: the structural schema checks
//! of a CRD's schemas ([`schema`]), value validation with kube-openapi's messages
//! ([`validator`], [`formats`]) and embedded `ObjectMeta` ([`objectmeta`]).

pub mod formats;
pub mod objectmeta;
pub mod schema;
#[cfg(test)]
mod tests;
pub mod validator;

use apimachinery::field::Cause;
use apimachinery::field::{self, child, index, key};
use apimachinery::gofmt;
use serde_json::{Map, Value};
use validator::S;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// `additionalProperties` of a structural schema: None (unset), Some(None) (set without
/// a schema), Some(Some(schema)).
fn additional<'a>(s: S<'a>) -> Option<Option<S<'a>>> {
    s.additional().map(|(_, sch)| sch)
}

fn embedded(s: S<'_>) -> bool {
    s.flag("x-kubernetes-embedded-resource")
}

/// Validates a custom object: kube-openapi schema validation (messages converted as
/// `kubeOpenAPIResultToFieldErrors` with a nil path), embedded resource checks
/// (`objectmeta.Validate`) and list-type invariants (`ValidateListSetsAndMaps`).
/// CEL rules are not applied here ([`crate::machinery::cel`]).
#[cfg(test)]
pub fn validate(schema: &Value, obj: &Value) -> Vec<Cause> {
    validate_update(schema, obj, None)
}

/// [`validate`] of an update over `old` (`None`: a create), ratcheting as upstream
/// does: schema errors of values unchanged from `old` are dropped, and list-type
/// errors count only when `old` had none.
pub fn validate_update(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(s) = S::new(schema) else {
        return vec![];
    };
    let res = validator::validate_ratcheting(s, obj, old, "");
    let mut out = validator::to_causes(&res, None);
    validate_embedded(s, obj, "", &mut out);
    let list_errors = |v: &Value| {
        let mut found = Vec::new();
        if let Value::Object(m) = v {
            list_sets_and_maps_object(s, m, "", &mut found);
        }
        found
    };
    let lists = list_errors(obj);
    if !lists.is_empty() && old.is_none_or(|o| list_errors(o).is_empty()) {
        out.extend(lists);
    }
    out
}

/// Validates a value against a schema as the default-value check does (`fldPath` = `base`).
pub fn validate_at(schema: &Value, obj: &Value, base: &str) -> Vec<Cause> {
    let Some(s) = S::new(schema) else {
        return vec![];
    };
    validator::to_causes(&validator::validate(s, obj, ""), Some(base))
}

fn validate_embedded(s: S<'_>, x: &Value, pth: &str, out: &mut Vec<Cause>) {
    match x {
        Value::Object(m) => {
            if embedded(s) {
                objectmeta::validate_embedded(pth, m, out);
            }
            for (k, v) in m {
                if let Some(p) = s.prop(k) {
                    validate_embedded(p, v, &child(pth, k), out);
                } else if let Some(Some(ap)) = additional(s) {
                    validate_embedded(ap, v, &key(pth, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items() {
                for (i, v) in a.iter().enumerate() {
                    validate_embedded(items, v, &index(pth, i), out);
                }
            }
        }
        _ => {}
    }
}

// ---- listtype ----

fn list_sets_and_maps_object(s: S<'_>, m: &Map<String, Value>, pth: &str, out: &mut Vec<Cause>) {
    if let Some(Some(ap)) = additional(s) {
        for (k, v) in m {
            list_sets_and_maps(ap, v, &key(pth, k), out);
        }
    }
    for (k, v) in m {
        if let Some(p) = s.prop(k) {
            list_sets_and_maps(p, v, &child(pth, k), out);
        }
    }
}

fn list_sets_and_maps(s: S<'_>, v: &Value, pth: &str, out: &mut Vec<Cause>) {
    match v {
        Value::Array(a) => {
            match s.str("x-kubernetes-list-type") {
                "set" => {
                    for i in non_unique(a.iter()) {
                        out.push(field::duplicate(&index(pth, i), a[i].clone()));
                    }
                }
                "map" => list_map(s, a, pth, out),
                _ => {}
            }
            if let Some(items) = s.items() {
                for (i, x) in a.iter().enumerate() {
                    list_sets_and_maps(items, x, &index(pth, i), out);
                }
            }
        }
        Value::Object(m) => list_sets_and_maps_object(s, m, pth, out),
        _ => {}
    }
}

/// Indices of second occurrences of repeated values (Go `validateListSet`).
fn non_unique<'a>(items: impl Iterator<Item = &'a Value>) -> Vec<usize> {
    let mut seen: Vec<(String, usize)> = vec![];
    let mut out = vec![];
    for (i, x) in items.enumerate() {
        // int64 and float64 differ as Go map keys; gofmt::json keeps 1 vs 1.5 apart but
        // renders float 1.0 as "1", so tag floats.
        let k = match x {
            Value::Number(n) if matches!(gofmt::num(n), gofmt::Num::Float(_)) => {
                format!("f:{}", gofmt::json(x))
            }
            _ => gofmt::json(x),
        };
        match seen.iter_mut().find(|(s, _)| *s == k) {
            Some((_, n)) => {
                *n += 1;
                if *n == 2 {
                    out.push(i);
                }
            }
            None => seen.push((k, 1)),
        }
    }
    out
}

fn list_map(s: S<'_>, a: &[Value], pth: &str, out: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(field::invalid(
                &index(pth, i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let keys = s.strs("x-kubernetes-list-map-keys");
    if keys.len() == 1 {
        let kf = keys[0];
        // None = unspecified key
        let vals: Vec<Option<&Value>> = a
            .iter()
            .map(|x| x.as_object().and_then(|o| o.get(kf)))
            .collect();
        let tagged: Vec<Value> = vals
            .iter()
            .map(|v| match v {
                None => Value::String("\u{0}unspecified".into()),
                Some(v) => Value::Array(vec![(*v).clone()]),
            })
            .collect();
        for i in non_unique(tagged.iter()) {
            let bad = match vals[i] {
                None => Value::Object(Map::new()),
                Some(v) => {
                    let mut m = Map::new();
                    m.insert(kf.to_string(), v.clone());
                    Value::Object(m)
                }
            };
            out.push(field::duplicate(&index(pth, i), bad));
        }
        return;
    }
    let composite: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut m = Map::new();
            if let Some(o) = x.as_object() {
                for k in &keys {
                    if let Some(v) = o.get(*k) {
                        m.insert(k.to_string(), v.clone());
                    }
                }
            }
            Value::Object(m)
        })
        .collect();
    for i in non_unique(composite.iter()) {
        out.push(field::duplicate(&index(pth, i), composite[i].clone()));
    }
}

// ---- defaulting ----

fn non_nullable_null(x: &Value, s: Option<S<'_>>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.flag("nullable"))
}

/// Applies `default`s (upstream `structuraldefaulting.Default`): missing properties and
/// nulls of non-nullable properties get a deep copy of their default; recursion continues
/// into defaulted values, additionalProperties values and array items.
pub fn default(schema: &Value, obj: &mut Value) {
    if let Some(s) = S::new(schema) {
        default_rec(obj, s, 0);
    }
}

fn default_rec(x: &mut Value, s: S<'_>, depth: usize) {
    if depth > 512 {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, p) in s.props() {
                let Some(d) = p.default() else { continue };
                let set = match m.get(k.as_str()) {
                    None => true,
                    Some(v) => non_nullable_null(v, Some(p)),
                };
                if set {
                    m.insert(k.clone(), d.clone());
                }
            }
            let ap = additional(s);
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.prop(k) {
                    default_rec(v, p, depth + 1);
                } else if let Some(ap) = ap {
                    let Some(ap) = ap else { continue };
                    if non_nullable_null(v, Some(ap)) {
                        *v = ap.default().cloned().unwrap_or(Value::Null);
                    }
                    default_rec(v, ap, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = s.items() else { return };
            for v in a.iter_mut() {
                if non_nullable_null(v, Some(items)) {
                    *v = items.default().cloned().unwrap_or(Value::Null);
                }
                default_rec(v, items, depth + 1);
            }
        }
        _ => {}
    }
}

// ---- pruning ----

struct Pruner {
    paths: Vec<String>,
}

fn join(parent: &str, k: &str) -> String {
    if parent.is_empty() {
        k.to_string()
    } else {
        format!("{parent}.{k}")
    }
}

impl Pruner {
    /// `prune(x, s)`; `s` None means no schema; `emb` overrides the embedded flag (root).
    fn prune(&mut self, x: &mut Value, s: Option<S<'_>>, emb: bool, path: &str) {
        if let Some(s) = s {
            if s.flag("x-kubernetes-preserve-unknown-fields") {
                self.skip_prune(x, s, emb, path);
                return;
            }
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    for k in m.keys() {
                        self.paths.push(join(path, k));
                    }
                    m.clear();
                    return;
                };
                let ap = additional(s);
                let mut remove = vec![];
                for (k, v) in m.iter_mut() {
                    if emb && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    if let Some(p) = s.prop(k) {
                        let e = embedded(p);
                        self.prune(v, Some(p), e, &join(path, k));
                    } else if let Some(ap) = ap {
                        let e = ap.is_some_and(embedded);
                        self.prune(v, ap, e, &join(path, k));
                    } else {
                        if !META_FIELDS.contains(&k.as_str()) || !path.is_empty() {
                            self.paths.push(join(path, k));
                        }
                        remove.push(k.clone());
                    }
                }
                m.retain(|k, _| !remove.contains(k));
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items());
                let e = items.is_some_and(embedded);
                for (i, v) in a.iter_mut().enumerate() {
                    self.prune(v, items, e, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: S<'_>, emb: bool, path: &str) {
        match x {
            Value::Object(m) => {
                let ap = additional(s);
                for (k, v) in m.iter_mut() {
                    if emb && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    if let Some(p) = s.prop(k) {
                        self.prune(v, Some(p), embedded(p), &join(path, k));
                    } else if let Some(ap) = ap {
                        self.prune(v, ap, ap.is_some_and(embedded), &join(path, k));
                    }
                }
            }
            Value::Array(a) => {
                if let Some(items) = s.items() {
                    for (i, v) in a.iter_mut().enumerate() {
                        self.skip_prune(v, items, embedded(items), &format!("{path}[{i}]"));
                    }
                }
            }
            _ => {}
        }
    }
}

fn schema_for_field<'a>(k: &str, s: Option<S<'a>>) -> Option<S<'a>> {
    let s = s?;
    if let Some(p) = s.prop(k) {
        return Some(p);
    }
    additional(s).flatten()
}

/// `PruneNonNullableNullsWithoutDefaults`.
fn prune_nulls(x: &mut Value, s: Option<S<'_>>, root: bool) {
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                if root && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let sch = schema_for_field(k, s);
                !(v.is_null() && sch.is_some_and(|p| !p.flag("nullable") && p.default().is_none()))
            });
            for (k, v) in m.iter_mut() {
                if root && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                prune_nulls(v, schema_for_field(k, s), false);
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items());
            for v in a.iter_mut() {
                prune_nulls(v, items, false);
            }
        }
        _ => {}
    }
}

/// Coerces metadata of nested embedded resources (`objectmeta.CoerceWithOptions`,
/// not at the resource root). Returns unknown metadata field paths.
fn coerce(x: &mut Value, s: S<'_>, fpath: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            if embedded(s) {
                m.retain(|k, v| !((k == "apiVersion" || k == "kind") && !v.is_string()));
                if let Some(meta) = m.get_mut("metadata") {
                    if objectmeta::decode_error(meta).is_none() || meta.is_object() {
                        out.extend(objectmeta::coerce(meta, fpath));
                    }
                }
            }
            let ap = additional(s);
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.prop(k) {
                    coerce(v, p, &child(fpath, k), out);
                } else if let Some(Some(ap)) = ap {
                    coerce(v, ap, &key(fpath, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items() {
                for (i, v) in a.iter_mut().enumerate() {
                    coerce(v, items, &index(fpath, i), out);
                }
            }
        }
        _ => {}
    }
}

/// Prunes fields not specified by the schema (`pruning.PruneWithOptions` with the root
/// treated as an embedded resource, so root `apiVersion`, `kind` and `metadata` are kept
/// untouched), then drops nulls of non-nullable fields without default
/// (`PruneNonNullableNullsWithoutDefaults`) and coerces metadata of nested embedded
/// resources. Returns the unknown field paths as upstream reports them: pruned paths
/// sorted, followed by sorted unknown embedded-metadata paths.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let s = S::new(schema);
    let mut p = Pruner { paths: vec![] };
    p.prune(obj, s, true, "");
    p.paths.sort();
    prune_nulls(obj, s, true);
    let mut meta = vec![];
    if let (Some(s), Value::Object(m)) = (s, &mut *obj) {
        for (k, v) in m.iter_mut() {
            if META_FIELDS.contains(&k.as_str()) {
                continue;
            }
            if let Some(ps) = s.prop(k) {
                coerce(v, ps, k, &mut meta);
            } else if let Some(Some(ap)) = additional(s) {
                coerce(v, ap, &key("", k), &mut meta);
            }
        }
    }
    meta.sort();
    p.paths.extend(meta);
    p.paths
}

/// `pruning.Prune(v, s, s.XEmbeddedResource)` on a value (used for default values).
pub(crate) fn prune_value(s: S<'_>, v: &mut Value) {
    let mut p = Pruner { paths: vec![] };
    p.prune(v, Some(s), embedded(s), "");
}
