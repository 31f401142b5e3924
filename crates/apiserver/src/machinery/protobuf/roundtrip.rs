//! The Go round trip of a built-in object, on its JSON: what kube-apiserver's decode
//! into the Go struct, protobuf storage and `encoding/json` encode make of a body.
//!
//! Upstream never stores the JSON a client sent: the body is decoded into the kind's Go
//! struct (`null` and absent become zero values), encoded as protobuf for etcd (which
//! cannot tell an empty slice or map from a nil one) and decoded back for the answer,
//! then encoded with `encoding/json` (`omitempty` drops zero scalars and empty slices and
//! maps, never structs; pointers keep their zeros). So a merge patch that empties
//! `metadata.ownerReferences` leaves no `ownerReferences` upstream, `replicas: 0` stays
//! (a pointer), `hostNetwork: false` goes, a container without `resources` gets
//! `resources: {}`, and a condition without `lastTransitionTime` gets `null`.
//!
//! [`normalise`] applies those rules to a JSON object in one pass guided by the field
//! tables the protobuf decoder uses (Go struct fields with their `omitempty`,
//! `omitzero` and pointer flags): values are changed in place, missing fields the Go
//! encoder writes are added, and keys the tables do not know are left alone. Key order
//! is not changed (clients do not depend on it). [`Mode::Decode`] is the object right
//! after decoding (an empty non-`omitempty` list is still `[]`), [`Mode::Storage`] after
//! a write to storage (it is `null`). `metadata.managedFields` is left to the field
//! manager: there, a decoded `[]` means "reset", unlike absent.
//!
//! Custom resources are not Go structs (their content is stored as sent), except their
//! `metadata`, which upstream round-trips through `ObjectMeta`:
//! [`normalise_object_meta`].

use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{
    lookup, schema, zero_value, Card, Field, Ty, FLAG_INLINE, FLAG_OMITEMPTY, FLAG_OMITZERO,
    FLAG_PTR,
};

/// When in an object's life the round trip is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Just decoded from a request: empty lists and maps a field does not omit are
    /// still `[]` and `{}`.
    Decode,
    /// Read back from storage: protobuf made every empty list and map nil.
    Storage,
}

/// Apply the Go round trip of `api_version` `kind` to `obj`; `false` (and `obj`
/// untouched) when the kind has no Go type in the tables.
pub fn normalise(api_version: &str, kind: &str, obj: &mut Value, mode: Mode) -> bool {
    let Some(index) = lookup(api_version, kind) else {
        return false;
    };
    if let Value::Object(map) = obj {
        message(index, map, mode, Place::Root);
    }
    true
}

/// Apply the `ObjectMeta` round trip to a custom resource's `metadata` (upstream
/// decodes it into `metav1.ObjectMeta` and back: empty finalizers, labels, owner
/// references go).
pub fn normalise_object_meta(meta: &mut Value, mode: Mode) {
    if let (Some(index), Value::Object(map)) = (object_meta(), meta) {
        message(index, map, mode, Place::Metadata);
    }
}

/// The index of `ObjectMeta` in the tables.
fn object_meta() -> Option<u16> {
    static INDEX: OnceLock<Option<u16>> = OnceLock::new();
    *INDEX.get_or_init(|| {
        schema::MESSAGES
            .iter()
            .position(|m| m.name == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
            .and_then(|i| u16::try_from(i).ok())
    })
}

/// The JSON of a message's Go zero value (cached: zero structs are built once).
fn zero_message(index: u16) -> Value {
    static ZEROS: OnceLock<Vec<OnceLock<Value>>> = OnceLock::new();
    let zeros = ZEROS.get_or_init(|| {
        (0..schema::MESSAGES.len())
            .map(|_| OnceLock::new())
            .collect()
    });
    match zeros.get(usize::from(index)) {
        Some(cell) => cell
            .get_or_init(|| zero_value(Ty::Msg(index), 0).unwrap_or(Value::Null))
            .clone(),
        None => Value::Null,
    }
}

/// The zero value of a field of kind `ty` (an element or map value: never a pointer).
fn zero_of(ty: Ty) -> Value {
    match ty {
        Ty::Msg(index) => zero_message(index),
        ty => zero_value(ty, 0).unwrap_or(Value::Null),
    }
}

/// Where a struct sits: the object's root, its `metadata` (whose managed fields are the
/// field manager's), or anywhere else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    Metadata,
    Other,
}

/// The fields of message `index` on `map`.
fn message(index: u16, map: &mut Map<String, Value>, mode: Mode, place: Place) {
    let Some(msg) = schema::MESSAGES.get(usize::from(index)) else {
        return;
    };
    for field in msg.fields {
        if field.flags & FLAG_INLINE != 0 {
            if let Ty::Msg(inner) = field.ty {
                inline(inner, msg.fields, map, mode);
            }
            continue;
        }
        let inner = match place {
            Place::Metadata if field.json == "managedFields" => continue,
            Place::Root if field.json == "metadata" => Place::Metadata,
            _ => Place::Other,
        };
        apply(field, map, mode, inner);
    }
}

/// An embedded struct's fields, flattened into `map`; a field of the outer struct with
/// the same name hides the embedded one (Go's rule).
fn inline(index: u16, outer: &[Field], map: &mut Map<String, Value>, mode: Mode) {
    let Some(msg) = schema::MESSAGES.get(usize::from(index)) else {
        return;
    };
    for field in msg.fields {
        if field.flags & FLAG_INLINE != 0 {
            if let Ty::Msg(inner) = field.ty {
                inline(inner, outer, map, mode);
            }
            continue;
        }
        let shadowed = outer
            .iter()
            .any(|f| f.flags & FLAG_INLINE == 0 && f.json == field.json);
        if !shadowed {
            apply(field, map, mode, Place::Other);
        }
    }
}

/// One field of a struct: its value normalised, dropped, or its zero added. Removals
/// keep the other keys' order.
fn apply(field: &Field, map: &mut Map<String, Value>, mode: Mode, place: Place) {
    let omit = field.flags & (FLAG_OMITEMPTY | FLAG_OMITZERO) != 0;
    let Some(value) = map.get_mut(field.json) else {
        // absent: what Go writes for the zero (nil) value
        if let Some(zero) = absent(field, omit) {
            map.insert(field.json.to_string(), zero);
        }
        return;
    };
    let keep = if value.is_null() {
        // null decodes as the zero value
        match absent(field, omit) {
            Some(zero) => {
                *value = zero;
                Keep::Yes
            }
            None => Keep::No,
        }
    } else {
        match field.card {
            Card::One => one(field, value, mode, place),
            Card::Rep => repeated(field, value, mode),
            Card::Map => mapped(field, value, mode),
        }
    };
    match keep {
        Keep::Yes => {}
        Keep::No => {
            map.shift_remove(field.json);
        }
        Keep::Nil => *value = Value::Null,
    }
}

/// What stays of a present value.
enum Keep {
    Yes,
    /// Dropped (`omitempty`).
    No,
    /// Written as `null` (a nil slice or map without `omitempty`).
    Nil,
}

/// What Go writes for a field that is absent or `null`: `None` to write nothing.
fn absent(field: &Field, omit: bool) -> Option<Value> {
    let ptr = field.flags & FLAG_PTR != 0;
    match field.card {
        Card::Rep | Card::Map => (!omit).then_some(Value::Null),
        Card::One if ptr => (!omit).then_some(Value::Null),
        Card::One => match field.ty {
            // structs are never empty for omitempty; omitzero drops their zero value
            Ty::Msg(index) => (field.flags & FLAG_OMITZERO == 0).then(|| zero_message(index)),
            Ty::Time
            | Ty::MicroTime
            | Ty::RawExtension
            | Ty::Quantity
            | Ty::IntOrString
            | Ty::Duration => (field.flags & FLAG_OMITZERO == 0).then(|| zero_of(field.ty)),
            // nil []byte, FieldsV1
            Ty::Bytes | Ty::FieldsV1 => (!omit).then_some(Value::Null),
            scalar => (!omit).then(|| zero_of(scalar)),
        },
    }
}

/// Whether a scalar JSON value is its Go type's zero (`""`, `0`, `false`).
fn scalar_zero(ty: Ty, v: &Value) -> bool {
    match (ty, v) {
        (Ty::Str | Ty::Bytes, Value::String(s)) => s.is_empty(),
        (Ty::Bool, Value::Bool(b)) => !b,
        (Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 | Ty::F32 | Ty::F64, Value::Number(n)) => {
            n.as_f64() == Some(0.0)
        }
        _ => false,
    }
}

/// A present singular value.
fn one(field: &Field, value: &mut Value, mode: Mode, place: Place) -> Keep {
    let ptr = field.flags & FLAG_PTR != 0;
    match field.ty {
        Ty::Msg(index) => {
            if let Value::Object(inner) = value {
                message(index, inner, mode, place);
                if !ptr && field.flags & FLAG_OMITZERO != 0 && *value == zero_message(index) {
                    return Keep::No;
                }
            }
            Keep::Yes
        }
        Ty::Time | Ty::MicroTime => {
            // Go's zero time is written as null (or omitted by omitzero)
            if !ptr && value.as_str() == Some("0001-01-01T00:00:00Z") {
                if field.flags & FLAG_OMITZERO != 0 {
                    return Keep::No;
                }
                *value = Value::Null;
            }
            Keep::Yes
        }
        Ty::RawExtension | Ty::FieldsV1 | Ty::Quantity | Ty::IntOrString | Ty::Duration => {
            Keep::Yes
        }
        // pointers keep their zeros (`replicas: 0`)
        _ if ptr => Keep::Yes,
        ty => {
            if field.flags & (FLAG_OMITEMPTY | FLAG_OMITZERO) != 0 && scalar_zero(ty, value) {
                Keep::No
            } else {
                Keep::Yes
            }
        }
    }
}

/// A present list.
fn repeated(field: &Field, value: &mut Value, mode: Mode) -> Keep {
    let Value::Array(items) = value else {
        return Keep::Yes;
    };
    if items.is_empty() {
        return empty(field, mode);
    }
    for item in items.iter_mut() {
        element(field.ty, item, mode);
    }
    Keep::Yes
}

/// A present map.
fn mapped(field: &Field, value: &mut Value, mode: Mode) -> Keep {
    let Value::Object(entries) = value else {
        return Keep::Yes;
    };
    if entries.is_empty() {
        return empty(field, mode);
    }
    for (_, v) in entries.iter_mut() {
        if v.is_null() {
            *v = match field.ty {
                // a nil []byte: null after decoding, "" after protobuf storage
                Ty::Bytes if mode == Mode::Storage => Value::String(String::new()),
                Ty::Bytes => Value::Null,
                Ty::Msg(index) if unwrapped(index) => Value::Null,
                ty => zero_of(ty),
            };
        } else if let Ty::Msg(index) = field.ty {
            if unwrapped(index) {
                // a named slice (`ExtraValue`): the bare list
                if let Value::Array(items) = v {
                    if items.is_empty() && mode == Mode::Storage {
                        *v = Value::Null;
                    } else if let Some(inner) = wrapped(index) {
                        for item in items.iter_mut() {
                            element(inner, item, mode);
                        }
                    }
                }
            } else {
                element(field.ty, v, mode);
            }
        }
    }
    Keep::Yes
}

/// A slice or map element (never a pointer: `null` is the element type's zero).
fn element(ty: Ty, item: &mut Value, mode: Mode) {
    match (ty, &mut *item) {
        (_, Value::Null) => *item = zero_of(ty),
        (Ty::Msg(index), Value::Object(inner)) => message(index, inner, mode, Place::Other),
        _ => {}
    }
}

/// An empty list or map: `omitempty` drops it; otherwise `[]`/`{}` right after
/// decoding, `null` after storage.
fn empty(field: &Field, mode: Mode) -> Keep {
    if field.flags & (FLAG_OMITEMPTY | FLAG_OMITZERO) != 0 {
        Keep::No
    } else if mode == Mode::Storage {
        Keep::Nil
    } else {
        Keep::Yes
    }
}

/// Whether message `index` is a named-slice wrapper (its JSON is a bare list).
fn unwrapped(index: u16) -> bool {
    schema::MESSAGES
        .get(usize::from(index))
        .is_some_and(|m| m.unwrap)
}

/// The element type of a named-slice wrapper.
fn wrapped(index: u16) -> Option<Ty> {
    schema::MESSAGES
        .get(usize::from(index))
        .and_then(|m| m.fields.first())
        .map(|f| f.ty)
}

#[cfg(test)]
mod tests;
