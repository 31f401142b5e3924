//! Typed operations on objects, following `structured-merge-diff/typed`:
//! merging an applied configuration into a live object, computing the field
//! set of an object, comparing two objects, and validating an object.
//! Removal of fields and schema reconciliation of field sets live in
//! the private `remove` module.

use crate::machinery::ssa::fieldpath::{path_to_string, Path, PathElement, Set};
use crate::machinery::ssa::schema::{Atom, ListType, MapType, ScalarKind, Schema, TypeRef};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One validation error, with the path it occurred at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// Path of the error, e.g. `.spec.ports[port=80]`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Formats validation errors as upstream's `ValidationErrors.Error()`.
pub fn format_errors(errs: &[ValidationError]) -> String {
    let one = |e: &ValidationError| {
        if e.path.is_empty() {
            e.message.clone()
        } else {
            format!("{}: {}", e.path, e.message)
        }
    };
    if errs.len() == 1 {
        return one(&errs[0]);
    }
    let mut lines = vec!["errors:".to_string()];
    lines.extend(errs.iter().map(|e| format!("  {}", one(e))));
    lines.join("\n")
}

pub(crate) type Errs = Vec<ValidationError>;

fn err(errs: &mut Errs, path: &[PathElement], message: String) {
    errs.push(ValidationError {
        path: path_to_string(path),
        message,
    });
}

/// Which parts of an atom apply to a value (upstream `deduceAtom`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Deduced {
    scalar: bool,
    list: bool,
    map: bool,
}

pub(crate) enum Handler<'x, 'a> {
    Map(&'x MapType<'a>),
    Scalar(ScalarKind),
    List(&'x ListType<'a>),
    Invalid,
}

pub(crate) fn deduce(atom: &Atom<'_>, v: Option<&Value>) -> Deduced {
    let full = Deduced {
        scalar: atom.scalar.is_some(),
        list: atom.list.is_some(),
        map: atom.map.is_some(),
    };
    let only = |scalar, list, map| Deduced { scalar, list, map };
    match v {
        Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) if full.scalar => {
            only(true, false, false)
        }
        Some(Value::Array(_)) if full.list => only(false, true, false),
        Some(Value::Object(_)) if full.map => only(false, false, true),
        _ => full,
    }
}

pub(crate) fn handler<'x, 'a>(atom: &'x Atom<'a>, d: Deduced) -> Handler<'x, 'a> {
    match (&atom.map, atom.scalar, &atom.list) {
        (Some(m), _, _) if d.map => Handler::Map(m),
        (_, Some(s), _) if d.scalar => Handler::Scalar(s),
        (_, _, Some(l)) if d.list => Handler::List(l),
        _ => Handler::Invalid,
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Checks a scalar value against its kind (upstream `validateScalar`).
pub(crate) fn validate_scalar(k: ScalarKind, v: Option<&Value>, prefix: &str) -> Option<String> {
    let v = v?;
    let ok = matches!(
        (k, v),
        (_, Value::Null)
            | (ScalarKind::Numeric, Value::Number(_))
            | (ScalarKind::String, Value::String(_))
            | (ScalarKind::Boolean, Value::Bool(_))
            | (
                ScalarKind::Untyped,
                Value::Number(_) | Value::String(_) | Value::Bool(_)
            )
    );
    if ok {
        return None;
    }
    let want = match k {
        ScalarKind::Numeric => "numeric (int or float)",
        ScalarKind::String => "string",
        ScalarKind::Boolean => "boolean",
        ScalarKind::Untyped => "any scalar",
    };
    Some(format!("{prefix}expected {want}, got {}", go_type(v)))
}

/// The path element of a list item (upstream `listItemToPathElement`).
pub(crate) fn list_item_pe<'a>(
    schema: &Schema<'a>,
    t: &ListType<'a>,
    child: &Value,
) -> Result<PathElement, String> {
    if t.atomic {
        return Err("invalid indexing of non-associative list".into());
    }
    if t.keys.is_empty() {
        return match child {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".into())
            }
            Value::Array(_) => Err("not supported: associative list with lists as elements".into()),
            Value::Null => {
                Err("associative list without keys has an element that's an explicit null".into())
            }
            v => Ok(PathElement::Value(v.clone())),
        };
    }
    let m = match child {
        Value::Null => return Err("associative list with keys may not have a null element".into()),
        Value::Object(m) => m,
        _ => return Err("associative list with keys may not have non-map elements".into()),
    };
    let mut key = Vec::new();
    for name in t.keys.iter() {
        if let Some(v) = m.get(name) {
            key.push((name.to_string(), v.clone()));
            continue;
        }
        let elem = schema.resolve(t.elem);
        let Some(em) = elem.map else {
            return Err(format!(
                "couldn't find default value for {name}: associative list may not have non-map types"
            ));
        };
        if let Some(def) = em.field(name).and_then(|f| f.get("default")) {
            if !def.is_null() {
                key.push((name.to_string(), def.clone()));
            }
        }
    }
    if key.is_empty() {
        let names: Vec<String> = t.keys.iter().map(|k| format!("{k:?}")).collect();
        return Err(format!(
            "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
            names.join(" ")
        ));
    }
    key.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(PathElement::Key(key))
}

fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    match v {
        Some(Value::Array(a)) => Some(a),
        _ => None,
    }
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// Keys of two maps: those of `lhs` in order, then those only in `rhs`.
fn zip_keys<'v>(
    lhs: Option<&'v Map<String, Value>>,
    rhs: Option<&'v Map<String, Value>>,
) -> Vec<&'v String> {
    let mut keys: Vec<&String> = lhs.map(|m| m.keys().collect()).unwrap_or_default();
    if let Some(r) = rhs {
        keys.extend(
            r.keys()
                .filter(|k| !lhs.is_some_and(|l| l.contains_key(*k))),
        );
    }
    keys
}

/// Walker for typed operations.
pub(crate) struct Typed<'s, 'a> {
    pub schema: &'s Schema<'a>,
}

impl<'a> Typed<'_, 'a> {
    // -- merge --------------------------------------------------------------

    /// Merges `rhs` into `lhs` (upstream `TypedValue.Merge` with `ruleKeepRHS`).
    pub fn merge(
        &self,
        tr: TypeRef<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Path,
        errs: &mut Errs,
    ) -> Option<Value> {
        let atom = self.schema.resolve(tr);
        let d = if rhs.is_none() {
            deduce(&atom, lhs)
        } else {
            deduce(&atom, rhs)
        };
        match handler(&atom, d) {
            Handler::Scalar(k) => {
                let le = validate_scalar(k, lhs, "lhs: ");
                let re = validate_scalar(k, rhs, "rhs: ");
                if let (Some(l), Some(r)) = (le, re) {
                    err(errs, path, l);
                    err(errs, path, r);
                    return None;
                }
                rhs.or(lhs).cloned()
            }
            Handler::List(t) => {
                let (l, r) = (as_list(lhs), as_list(rhs));
                let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
                if t.atomic || empty {
                    return rhs.or(lhs).cloned();
                }
                self.merge_list(t, l, r, path, errs)
            }
            Handler::Map(t) => {
                let (l, r) = (as_map(lhs), as_map(rhs));
                let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
                if t.atomic || empty {
                    return rhs.or(lhs).cloned();
                }
                let mut out = Map::new();
                for k in zip_keys(l, r) {
                    path.push(PathElement::Field(k.clone()));
                    let v = self.merge(
                        t.child_type(k),
                        l.and_then(|m| m.get(k)),
                        r.and_then(|m| m.get(k)),
                        path,
                        errs,
                    );
                    path.pop();
                    if let Some(v) = v {
                        out.insert(k.clone(), v);
                    }
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
            Handler::Invalid => {
                err(errs, path, "schema error: invalid atom: inlined".into());
                None
            }
        }
    }

    /// Indexes list items by path element.
    fn index_list<'v>(
        &self,
        t: &ListType<'a>,
        list: Option<&'v Vec<Value>>,
        allow_dups: bool,
        path: &Path,
        errs: &mut Errs,
    ) -> (Vec<PathElement>, BTreeMap<PathElement, Option<&'v Value>>) {
        let mut pes = Vec::new();
        let mut observed: BTreeMap<PathElement, Option<&'v Value>> = BTreeMap::new();
        for (i, child) in list.into_iter().flatten().enumerate() {
            let pe = match list_item_pe(self.schema, t, child) {
                Ok(pe) => pe,
                Err(e) => {
                    err(errs, path, format!("element {i}: {e}"));
                    continue;
                }
            };
            if observed.contains_key(&pe) {
                if !allow_dups {
                    err(errs, path, format!("duplicate entries for key {pe}"));
                    continue;
                }
                observed.insert(pe.clone(), None);
            } else {
                observed.insert(pe.clone(), Some(child));
            }
            pes.push(pe);
        }
        (pes, observed)
    }

    #[allow(clippy::too_many_arguments)]
    fn merge_item(
        &self,
        t: &ListType<'a>,
        pe: &PathElement,
        l: Option<&Value>,
        r: Option<&Value>,
        path: &mut Path,
        errs: &mut Errs,
        out: &mut Vec<Value>,
    ) {
        path.push(pe.clone());
        if let Some(v) = self.merge(t.elem, l, r, path, errs) {
            out.push(v);
        }
        path.pop();
    }

    fn merge_list(
        &self,
        t: &ListType<'a>,
        lhs: Option<&Vec<Value>>,
        rhs: Option<&Vec<Value>>,
        path: &mut Path,
        errs: &mut Errs,
    ) -> Option<Value> {
        let before = errs.len();
        let (rpes, robs) = self.index_list(t, rhs, false, path, errs);
        let (lpes, lobs) = self.index_list(t, lhs, true, path, errs);
        if errs.len() != before {
            return None;
        }
        const NULL: Value = Value::Null;
        // A duplicated live item is merged as an explicit null.
        let lget = |pe: &PathElement| lobs.get(pe).map(|v| v.unwrap_or(&NULL));
        let rget = |pe: &PathElement| robs.get(pe).and_then(|v| *v);
        let mut shared = rpes.iter().filter(|pe| lobs.contains_key(pe));
        let mut next_shared = shared.next();
        let mut merged_rhs: std::collections::BTreeSet<&PathElement> = Default::default();
        let mut out = Vec::new();
        let (mut li, mut ri) = (0, 0);
        while li < lpes.len() || ri < rpes.len() {
            if li < lpes.len() && ri < rpes.len() {
                let pe = &lpes[li];
                if *pe == rpes[ri] {
                    merged_rhs.insert(pe);
                    self.merge_item(t, pe, lget(pe), rget(pe), path, errs, &mut out);
                    li += 1;
                    ri += 1;
                    next_shared = shared.next();
                    continue;
                }
                if robs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < lpes.len() {
                let pe = &lpes[li];
                if !robs.contains_key(pe) {
                    let item = lhs.and_then(|l| l.get(li));
                    self.merge_item(t, pe, item, None, path, errs, &mut out);
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                }
            }
            if ri < rpes.len() {
                let pe = &rpes[ri];
                merged_rhs.insert(pe);
                self.merge_item(t, pe, lget(pe), rget(pe), path, errs, &mut out);
                ri += 1;
                if next_shared.is_some_and(|n| n == pe) {
                    next_shared = shared.next();
                }
            }
        }
        (!out.is_empty()).then_some(Value::Array(out))
    }

    // -- field sets ----------------------------------------------------------

    /// The field set of a value (upstream `TypedValue.ToFieldSet`).
    pub fn to_field_set(&self, tr: TypeRef<'a>, v: &Value, path: &mut Path, set: &mut Set) {
        let atom = self.schema.resolve(tr);
        match handler(&atom, deduce(&atom, Some(v))) {
            Handler::Scalar(_) => set.insert(path),
            Handler::List(t) => {
                if t.atomic {
                    set.insert(path);
                    return;
                }
                let Value::Array(list) = v else { return };
                let pes: Vec<Option<PathElement>> = list
                    .iter()
                    .map(|c| list_item_pe(self.schema, t, c).ok())
                    .collect();
                let mut seen = std::collections::BTreeSet::new();
                let mut dups = std::collections::BTreeSet::new();
                for pe in pes.iter().flatten() {
                    if !seen.insert(pe) && dups.insert(pe) {
                        path.push(pe.clone());
                        set.insert(path);
                        path.pop();
                    }
                }
                for (pe, child) in pes.iter().zip(list) {
                    let Some(pe) = pe else { continue };
                    if dups.contains(pe) {
                        continue;
                    }
                    path.push(pe.clone());
                    self.to_field_set(t.elem, child, path, set);
                    set.insert(path);
                    path.pop();
                }
            }
            Handler::Map(t) => {
                if t.atomic {
                    set.insert(path);
                    return;
                }
                let Value::Object(m) = v else { return };
                for (k, val) in m {
                    path.push(PathElement::Field(k.clone()));
                    self.to_field_set(t.child_type(k), val, path, set);
                    let leafish = val.is_null() || val.as_object().is_some_and(|o| o.is_empty());
                    if leafish || t.field(k).is_none() {
                        set.insert(path);
                    }
                    path.pop();
                }
            }
            Handler::Invalid => {}
        }
    }

    // -- compare ------------------------------------------------------------

    /// Compares `lhs` (old) with `rhs` (new), filling `cmp`.
    pub fn compare(
        &self,
        tr: TypeRef<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Path,
        cmp: &mut Comparison,
        errs: &mut Errs,
    ) {
        // equal subtrees have no added, modified or removed fields (and the new object
        // is validated on its own): most updates change a small part of an object
        if let (Some(l), Some(r)) = (lhs, rhs) {
            if l == r {
                return;
            }
        }
        let atom = self.schema.resolve(tr);
        let (dl, dr) = (deduce(&atom, lhs), deduce(&atom, rhs));
        let in_leaf = if rhs.is_none() {
            self.compare_atom(&atom, dl, lhs, rhs, path, cmp, errs)
        } else if lhs.is_none() || dl == dr {
            self.compare_atom(&atom, dr, lhs, rhs, path, cmp, errs)
        } else {
            self.compare_atom(&atom, dl, lhs, rhs, path, cmp, errs);
            self.compare_atom(&atom, dr, lhs, rhs, path, cmp, errs)
        };
        if !in_leaf {
            if lhs.is_none() {
                cmp.added.insert(path);
            } else if rhs.is_none() {
                cmp.removed.insert(path);
            }
        }
    }

    fn compare_leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, cmp: &mut Comparison) {
        match (lhs, rhs) {
            (None, _) => cmp.added.insert(path),
            (_, None) => cmp.removed.insert(path),
            (Some(l), Some(r)) => {
                if !crate::machinery::ssa::fieldpath::value_equals(l, r) {
                    cmp.modified.insert(path)
                }
            }
        }
    }

    /// Returns whether the node was handled as a leaf.
    #[allow(clippy::too_many_arguments)]
    fn compare_atom(
        &self,
        atom: &Atom<'a>,
        d: Deduced,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Path,
        cmp: &mut Comparison,
        errs: &mut Errs,
    ) -> bool {
        match handler(atom, d) {
            Handler::Scalar(k) => {
                let le = validate_scalar(k, lhs, "lhs: ");
                let re = validate_scalar(k, rhs, "rhs: ");
                if let (Some(l), Some(r)) = (le, re) {
                    err(errs, path, l);
                    err(errs, path, r);
                    return false;
                }
                Self::compare_leaf(lhs, rhs, path, cmp);
                true
            }
            Handler::List(t) => {
                let (l, r) = (as_list(lhs), as_list(rhs));
                let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
                if t.atomic || empty {
                    Self::compare_leaf(lhs, rhs, path, cmp);
                    return true;
                }
                self.compare_list(t, l, r, path, cmp, errs);
                false
            }
            Handler::Map(t) => {
                let (l, r) = (as_map(lhs), as_map(rhs));
                let empty = l.is_none_or(|l| l.is_empty()) && r.is_none_or(|r| r.is_empty());
                if t.atomic || empty {
                    Self::compare_leaf(lhs, rhs, path, cmp);
                    return true;
                }
                // `metadata.managedFields` is stripped from every manager's set: it is not
                // compared (a write's request may carry its managedFields apart)
                let in_metadata = path.len() == 1 && path[0] == PathElement::field("metadata");
                for k in zip_keys(l, r) {
                    if in_metadata && k == "managedFields" {
                        continue;
                    }
                    path.push(PathElement::Field(k.clone()));
                    self.compare(
                        t.child_type(k),
                        l.and_then(|m| m.get(k)),
                        r.and_then(|m| m.get(k)),
                        path,
                        cmp,
                        errs,
                    );
                    path.pop();
                }
                false
            }
            Handler::Invalid => {
                err(errs, path, "schema error: invalid atom: inlined".into());
                false
            }
        }
    }

    #[allow(clippy::type_complexity)]
    fn group_items<'v>(
        &self,
        t: &ListType<'a>,
        list: Option<&'v Vec<Value>>,
        path: &Path,
        errs: &mut Errs,
    ) -> Vec<(PathElement, Vec<&'v Value>)> {
        let mut out: Vec<(PathElement, Vec<&Value>)> = Vec::new();
        let mut idx: BTreeMap<PathElement, usize> = BTreeMap::new();
        for (i, child) in list.into_iter().flatten().enumerate() {
            match list_item_pe(self.schema, t, child) {
                Ok(pe) => match idx.get(&pe) {
                    Some(&j) => out[j].1.push(child),
                    None => {
                        idx.insert(pe.clone(), out.len());
                        out.push((pe, vec![child]));
                    }
                },
                Err(e) => err(errs, path, format!("element {i}: {e}")),
            }
        }
        out
    }

    fn compare_list(
        &self,
        t: &ListType<'a>,
        lhs: Option<&Vec<Value>>,
        rhs: Option<&Vec<Value>>,
        path: &mut Path,
        cmp: &mut Comparison,
        errs: &mut Errs,
    ) {
        let lg = self.group_items(t, lhs, path, errs);
        let rg = self.group_items(t, rhs, path, errs);
        let lmap: BTreeMap<&PathElement, &Vec<&Value>> = lg.iter().map(|(p, v)| (p, v)).collect();
        let rmap: BTreeMap<&PathElement, &Vec<&Value>> = rg.iter().map(|(p, v)| (p, v)).collect();
        let mut all: Vec<&PathElement> = lg.iter().map(|(p, _)| p).collect();
        all.extend(rg.iter().map(|(p, _)| p).filter(|p| !lmap.contains_key(p)));
        let empty = Vec::new();
        for pe in all {
            let l = lmap.get(pe).copied().unwrap_or(&empty);
            let r = rmap.get(pe).copied().unwrap_or(&empty);
            path.push(pe.clone());
            if l.len() <= 1 && r.len() <= 1 {
                self.compare(
                    t.elem,
                    l.first().copied(),
                    r.first().copied(),
                    path,
                    cmp,
                    errs,
                );
            } else if l.len() >= 2 && r.len() >= 2 {
                let same = l.len() == r.len()
                    && l.iter()
                        .zip(r.iter())
                        .all(|(a, b)| crate::machinery::ssa::fieldpath::value_equals(a, b));
                if !same {
                    cmp.modified.insert(path);
                }
            } else if l.len() >= 2 {
                if let Some(rv) = r.first() {
                    self.compare(t.elem, None, Some(rv), path, cmp, errs);
                }
                cmp.removed.insert(path);
            } else {
                if let Some(lv) = l.first() {
                    self.compare(t.elem, Some(lv), None, path, cmp, errs);
                }
                cmp.added.insert(path);
            }
            path.pop();
        }
    }

    // -- validation -------------------------------------------------------------

    /// Validates a value (upstream `TypedValue.Validate`); unknown struct
    /// fields are accepted (typed as deduced). The path is kept borrowed and only
    /// spelled out for an error.
    pub(crate) fn validate<'v>(
        &self,
        tr: TypeRef<'a>,
        v: &'v Value,
        allow_dups: bool,
        path: &mut Vec<Seg<'v, 'a>>,
        errs: &mut Errs,
    ) {
        let atom = self.schema.resolve(tr);
        match handler(&atom, deduce(&atom, Some(v))) {
            Handler::Scalar(k) => {
                if let Some(e) = validate_scalar(k, Some(v), "") {
                    self.seg_err(errs, path, e);
                }
            }
            Handler::List(t) => {
                let list = match v {
                    Value::Null => return,
                    Value::Array(a) => a,
                    other => {
                        return self.seg_err(errs, path, format!("expected list, got {other}"))
                    }
                };
                let mut seen = std::collections::BTreeSet::new();
                for (i, child) in list.iter().enumerate() {
                    let seg = if t.atomic {
                        Seg::Index(i)
                    } else {
                        match list_item_pe(self.schema, t, child) {
                            Ok(pe) => {
                                // upstream's AllowDuplicates skips the check (and the keys
                                // need not be kept)
                                if !allow_dups && !seen.insert(pe.clone()) {
                                    self.seg_err(
                                        errs,
                                        path,
                                        format!("duplicate entries for key {pe}"),
                                    );
                                }
                                Seg::Item(*t, child)
                            }
                            Err(e) => return self.seg_err(errs, path, format!("element {i}: {e}")),
                        }
                    };
                    path.push(seg);
                    self.validate(t.elem, child, allow_dups, path, errs);
                    path.pop();
                }
            }
            Handler::Map(t) => {
                let m = match v {
                    Value::Null => return,
                    Value::Object(m) => m,
                    other => return self.seg_err(errs, path, format!("expected map, got {other}")),
                };
                for (k, val) in m {
                    path.push(Seg::Field(k));
                    self.validate(t.child_type(k), val, allow_dups, path, errs);
                    path.pop();
                }
            }
            Handler::Invalid => {
                self.seg_err(errs, path, "schema error: invalid atom: inlined".into())
            }
        }
    }

    fn seg_err(&self, errs: &mut Errs, path: &[Seg<'_, 'a>], message: String) {
        let owned: Path = path
            .iter()
            .map(|s| match s {
                Seg::Field(k) => PathElement::Field((*k).to_string()),
                Seg::Index(i) => PathElement::Index(*i as i64),
                Seg::Item(t, child) => {
                    list_item_pe(self.schema, t, child).unwrap_or(PathElement::Index(0))
                }
            })
            .collect();
        err(errs, &owned, message);
    }
}

/// One step of a path under validation, borrowed from the value walked.
pub(crate) enum Seg<'v, 'a> {
    Field(&'v str),
    Index(usize),
    /// An item of an associative list: its path element is computed on demand.
    Item(ListType<'a>, &'v Value),
}

/// The result of comparing two objects: paths removed, modified and added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields present in the old object only.
    pub removed: Set,
    /// Fields present in both whose (leaf) values differ.
    pub modified: Set,
    /// Fields present in the new object only.
    pub added: Set,
}

impl Comparison {
    /// Removes `filter` (recursively) from all three sets.
    pub fn exclude(&mut self, filter: &Set) {
        if filter.is_empty() {
            return;
        }
        self.removed = self.removed.recursive_difference(filter);
        self.modified = self.modified.recursive_difference(filter);
        self.added = self.added.recursive_difference(filter);
    }
}

/// Merges `config` into `live` per the schema. Errors are formatted as
/// upstream's validation errors.
pub fn merge(schema: &Schema<'_>, live: &Value, config: &Value) -> Result<Value, String> {
    let mut errs = Vec::new();
    let out = Typed { schema }.merge(
        schema.root(),
        Some(live),
        Some(config),
        &mut Vec::new(),
        &mut errs,
    );
    if !errs.is_empty() {
        return Err(format_errors(&errs));
    }
    Ok(out.unwrap_or(Value::Null))
}

/// The set of fields of an object.
pub fn field_set(schema: &Schema<'_>, v: &Value) -> Set {
    let mut set = Set::new();
    Typed { schema }.to_field_set(schema.root(), v, &mut Vec::new(), &mut set);
    set
}

/// Compares two objects.
pub fn compare(schema: &Schema<'_>, old: &Value, new: &Value) -> Result<Comparison, String> {
    let mut errs = Vec::new();
    let mut cmp = Comparison::default();
    Typed { schema }.compare(
        schema.root(),
        Some(old),
        Some(new),
        &mut Vec::new(),
        &mut cmp,
        &mut errs,
    );
    if !errs.is_empty() {
        return Err(format_errors(&errs));
    }
    Ok(cmp)
}

/// Validates an object; `allow_duplicates` accepts duplicate list-map keys
/// and set items (as upstream does for live objects).
pub fn validate(schema: &Schema<'_>, v: &Value, allow_duplicates: bool) -> Result<(), String> {
    let mut errs = Vec::new();
    Typed { schema }.validate(
        schema.root(),
        v,
        allow_duplicates,
        &mut Vec::new(),
        &mut errs,
    );
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format_errors(&errs))
    }
}
