//! Removing fields from objects and schema-aware field set helpers, following
//! `structured-merge-diff/typed/remove.go`, `reconcile_schema.go` and
//! `fieldpath.Set.EnsureNamedFieldsAreMembers`.

use crate::machinery::ssa::fieldpath::{Path, PathElement, Set};
use crate::machinery::ssa::merge::{deduce, handler, list_item_pe, Handler};
use crate::machinery::ssa::schema::{Schema, TypeRef};
use serde_json::{Map, Value};

/// Removes the fields in `to_remove` from `v` (upstream `RemoveItems`).
/// Returns `Value::Null` when nothing is left of a list or map.
pub(crate) fn remove_items<'a>(
    schema: &Schema<'a>,
    tr: TypeRef<'a>,
    v: &Value,
    to_remove: &Set,
) -> Value {
    let atom = schema.resolve(tr);
    match handler(&atom, deduce(&atom, Some(v))) {
        Handler::Scalar(_) => v.clone(),
        Handler::List(t) => {
            let Value::Array(list) = v else {
                return Value::Null;
            };
            if list.is_empty() || t.atomic {
                return Value::Null;
            }
            let mut out = Vec::new();
            for item in list {
                let pe = list_item_pe(schema, t, item).ok();
                let Some(pe) = pe else {
                    out.push(item.clone());
                    continue;
                };
                if to_remove.has_member(&pe) {
                    continue;
                }
                match to_remove.child(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        out.push(remove_items(schema, t.elem, item, sub))
                    }
                    _ => out.push(item.clone()),
                }
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            }
        }
        Handler::Map(t) => {
            let Value::Object(m) = v else {
                return Value::Null;
            };
            if m.is_empty() || t.atomic {
                return Value::Null;
            }
            let mut out = Map::new();
            for (k, val) in m {
                let pe = PathElement::Field(k.clone());
                if to_remove.has_member(&pe) {
                    continue;
                }
                match to_remove.child(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        out.insert(k.clone(), remove_items(schema, t.child_type(k), val, sub));
                    }
                    _ => {
                        out.insert(k.clone(), val.clone());
                    }
                }
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Object(out)
            }
        }
        Handler::Invalid => Value::Null,
    }
}

/// Adds, as members, the children of `s` that are named struct fields
/// (upstream `Set.EnsureNamedFieldsAreMembers`).
pub(crate) fn ensure_named_fields_are_members<'a>(
    schema: &Schema<'a>,
    tr: Option<TypeRef<'a>>,
    s: &Set,
) -> Set {
    let atom = tr.map(|t| schema.resolve(t)).unwrap_or_default();
    let mut out = s.clone();
    for (pe, _) in s.children() {
        if let (PathElement::Field(n), Some(m)) = (pe, &atom.map) {
            if m.field(n).is_some() {
                out.insert(std::slice::from_ref(pe));
            }
        }
    }
    for (pe, child) in out.children_mut().iter_mut() {
        let ctr = match (&*pe, &atom.map, &atom.list) {
            (PathElement::Field(n), Some(m), _) => Some(m.child_type(n)),
            (PathElement::Key(_), _, Some(l)) => Some(l.elem),
            _ => None,
        };
        *child = ensure_named_fields_are_members(schema, ctr, child);
    }
    out
}

struct Reconcile {
    to_remove: Set,
    to_add: Set,
}

/// Rewrites a managed field set after schema changes made a granular field
/// atomic (upstream `ReconcileFieldSetWithSchema`). Returns `None` when
/// nothing changes.
pub(crate) fn reconcile_field_set<'a>(schema: &Schema<'a>, set: &Set) -> Option<Set> {
    let mut r = Reconcile {
        to_remove: Set::new(),
        to_add: Set::new(),
    };
    reconcile(
        schema,
        schema.root(),
        Some(set),
        false,
        &mut Vec::new(),
        &mut r,
    );
    if r.to_remove.is_empty() && r.to_add.is_empty() {
        return None;
    }
    Some(set.recursive_difference(&r.to_remove).union(&r.to_add))
}

fn reconcile<'a>(
    schema: &Schema<'a>,
    tr: TypeRef<'a>,
    set: Option<&Set>,
    is_atomic: bool,
    path: &mut Path,
    r: &mut Reconcile,
) {
    let atom = schema.resolve(tr);
    // Upstream handles the first non-empty part in the order map, scalar, list.
    if let Some(m) = &atom.map {
        if m.is_untyped_deduced() {
            return;
        }
        if !is_atomic && m.atomic {
            if set.is_some_and(|s| s.size() > 0) {
                r.to_remove.insert(path);
                r.to_add.insert(path);
            }
            return;
        }
        if let Some(s) = set {
            visit(
                s,
                path,
                r,
                |pe| match pe {
                    PathElement::Field(n) => Some(m.child_type(n)),
                    _ => None,
                },
                schema,
            );
        }
    } else if atom.scalar.is_some() {
    } else if let Some(l) = &atom.list {
        if !is_atomic && l.atomic {
            if !path.is_empty() {
                r.to_remove.insert(path);
                r.to_add.insert(path);
            }
            return;
        }
        if let Some(s) = set {
            visit(s, path, r, |_| Some(l.elem), schema);
        }
    }
}

fn visit<'a>(
    s: &Set,
    path: &mut Path,
    r: &mut Reconcile,
    child_type: impl Fn(&PathElement) -> Option<TypeRef<'a>>,
    schema: &Schema<'a>,
) {
    let mut handle = |pe: &PathElement, is_member: bool| {
        if let Some(tr) = child_type(pe) {
            let child = s.child(pe);
            path.push(pe.clone());
            reconcile(schema, tr, child, is_member && child.is_none(), path, r);
            path.pop();
        }
    };
    for (pe, _) in s.children() {
        if !s.has_member(pe) {
            handle(pe, false);
        }
    }
    for pe in s.members() {
        handle(pe, true);
    }
}
