//! Encoding of objects as Kubernetes protobuf (`application/vnd.kubernetes.protobuf`),
//! the inverse of the decoder next to it: an object's JSON (as the server stores and
//! answers it) becomes the bytes kube-apiserver's gogo-protobuf marshalling writes for
//! the same Go struct, wrapped in the `k8s\0` magic and a `runtime.Unknown` envelope.
//!
//! The rules are those of the generated `Marshal` methods of `k8s.io/api`:
//!
//! * fields are written in field-number order;
//! * non-pointer scalars, strings and structs are always written (zero values
//!   included: a JSON field that is absent or `null` is the Go zero value), pointer
//!   fields only when set, slices element by element, `[]byte` when not nil;
//! * maps are repeated entries `{key = 1, value = 2}` sorted by key;
//! * `resource.Quantity` is `{string = 1}`, `metav1.Time` `{seconds = 1, nanos = 2}`
//!   (an empty message for the zero time), `metav1.Duration` `{duration = 1}`,
//!   `intstr.IntOrString` `{type = 1, intVal = 2, strVal = 3}`, `runtime.RawExtension`
//!   and `metav1.FieldsV1` `{raw = 1}` holding the JSON.
//!
//! Like gogo, the encoder writes back to front, so the length of a nested message is
//! known when its prefix is written: one pass over the value, no size pre-pass and no
//! copies of nested messages; the buffer is reversed once at the end.

use std::borrow::Cow;
use std::sync::OnceLock;

use base64::Engine as _;
use bytes::{BufMut, Bytes};
use serde_json::{Map, Value};

use super::{lookup, schema, Card, Field, Ty, FLAG_INLINE, FLAG_PTR, MAGIC, MAX_DEPTH};

/// Wire type of varints.
const VARINT: u64 = 0;
/// Wire type of fixed 64-bit values.
const FIXED64: u64 = 1;
/// Wire type of length-delimited values.
const LEN: u64 = 2;
/// Wire type of fixed 32-bit values.
const FIXED32: u64 = 5;

/// Whether objects of `api_version` `kind` have a protobuf encoding here (built-in
/// kinds; not custom resources).
pub fn encodable(api_version: &str, kind: &str) -> bool {
    lookup(api_version, kind).is_some()
}

/// An object (with its `apiVersion` and `kind`) as a Kubernetes protobuf body: the
/// magic, then the `runtime.Unknown` envelope around the object's own encoding.
/// `None` when the kind has no protobuf schema (custom resources, for one).
pub fn encode(obj: &Value) -> Option<Result<Vec<u8>, String>> {
    let mut w = Rev::with_capacity(256);
    match envelope(&mut w, obj) {
        Ok(true) => Some(Ok(w.finish())),
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    }
}

/// One watch event in the protobuf stream framing: a 4-byte big-endian length, then the
/// `meta.v1.WatchEvent` (unwrapped: the stream serialiser writes no envelope) whose
/// `object` holds the object's protobuf body (magic and envelope included). `None`
/// when the object's kind has no protobuf schema.
pub fn watch_event(out: &mut Vec<u8>, event_type: &str, obj: &Value) -> Option<Result<(), String>> {
    let mut w = Rev::with_capacity(256);
    let start = w.len();
    // WatchEvent { type = 1; RawExtension object = 2 { bytes raw = 1 } }
    let encoded = w.message(2, |w| w.message(1, |w| envelope(w, obj)));
    match encoded {
        Ok(true) => {}
        Ok(false) => return None,
        Err(e) => return Some(Err(e)),
    }
    w.bytes_field(1, event_type.as_bytes());
    let len = w.len() - start;
    let Ok(len32) = u32::try_from(len) else {
        return Some(Err("protobuf: watch event too large".to_string()));
    };
    w.raw(&len32.to_be_bytes());
    out.extend_from_slice(&w.finish());
    Some(Ok(()))
}

/// One stored object version's protobuf answer, encoded once and kept with the object
/// (see `StoredObject::protobuf`): the whole body (magic and `runtime.Unknown`
/// envelope, what a GET answers and a watch event wraps) and the range of the object's
/// own message inside it (what a list embeds as an item).
#[derive(Debug, Clone)]
pub struct Encoded {
    /// Magic, envelope and object.
    pub full: Bytes,
    /// The object's message type (its schema index).
    index: u16,
    /// Where the object's message starts in `full` (it ends 4 bytes before the end:
    /// the envelope's empty `contentEncoding` and `contentType` follow it).
    body_start: usize,
}

impl Encoded {
    /// The object's own message (the envelope's `raw`), as a list item embeds it.
    pub fn body(&self) -> Bytes {
        self.full.slice(self.body_start..self.full.len() - 4)
    }

    fn message(&self) -> &[u8] {
        &self.full[self.body_start..self.full.len() - 4]
    }
}

/// The protobuf answer of an object from its JSON (as [`encode`]), keeping where the
/// object's own message lies. `Ok(None)` when the kind has no protobuf schema.
pub fn encode_object(json: &[u8]) -> Result<Option<Encoded>, String> {
    let v: Value = serde_json::from_slice(json)
        .map_err(|e| format!("protobuf: the object is not JSON: {e}"))?;
    let Value::Object(map) = &v else {
        return Err("protobuf: the object is not a JSON object".to_string());
    };
    let str_of = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (str_of("apiVersion"), str_of("kind"));
    let Some(index) = lookup(api_version, kind) else {
        return Ok(None);
    };
    let mut w = Rev::with_capacity(json.len() / 2 + 64);
    let mut body_len = 0;
    envelope_with(&mut w, api_version, kind, |w| {
        let start = w.len();
        message(w, index, map, 0)?;
        body_len = w.len() - start;
        Ok(())
    })?;
    let full = w.finish();
    let body_start = full.len() - 4 - body_len;
    Ok(Some(Encoded {
        full: Bytes::from(full),
        index,
        body_start,
    }))
}

/// One watch event (the framing of [`watch_event`]) around an object's already encoded
/// protobuf body (`Encoded::full`).
pub fn watch_event_encoded(
    out: &mut impl BufMut,
    event_type: &str,
    full: &[u8],
) -> Result<(), String> {
    // WatchEvent { type = 1; RawExtension object = 2 { bytes raw = 1 } }, front to back
    let object_len = field_len(1, full.len());
    let len = field_len(1, event_type.len()) + field_len(2, object_len);
    let Ok(len32) = u32::try_from(len) else {
        return Err("protobuf: watch event too large".to_string());
    };
    out.put_slice(&len32.to_be_bytes());
    put_field(out, 1, event_type.as_bytes());
    put_key_len(out, 2, object_len);
    put_field(out, 1, full);
    Ok(())
}

/// An item of a list to encode: the JSON of an object, or a stored object whose
/// protobuf encoding is already at hand (embedded as it is when its message type is the
/// list's item type; its JSON otherwise, and when the list kind has no schema).
#[derive(Debug, Clone)]
pub enum ListItem {
    /// An object's JSON, parsed and encoded.
    Json(Bytes),
    /// An object's JSON and its encoding.
    Encoded(Bytes, Encoded),
}

impl ListItem {
    /// The item's JSON.
    pub fn json(&self) -> &Bytes {
        match self {
            ListItem::Json(j) | ListItem::Encoded(j, _) => j,
        }
    }
}

/// A list of `api_version` `kind` (`PodList`, ...) from its `metadata` and its items,
/// without building the list's value: each item is embedded (already encoded) or parsed
/// and encoded in turn. `None` when the kind has no protobuf schema.
pub fn encode_list(
    api_version: &str,
    kind: &str,
    metadata: &Value,
    items: &[ListItem],
) -> Option<Result<Vec<u8>, String>> {
    let index = lookup(api_version, kind)?;
    let msg = &schema::MESSAGES[usize::from(index)];
    let field = |name: &str| msg.fields.iter().find(|f| f.json == name);
    let (Some(meta), Some(item), 2) = (field("metadata"), field("items"), msg.fields.len()) else {
        return None;
    };
    let (Ty::Msg(meta_index), Ty::Msg(item_index)) = (meta.ty, item.ty) else {
        return None;
    };
    // the items' messages: cached ones as they are, the others encoded here
    let mut messages: Vec<Cow<'_, [u8]>> = Vec::with_capacity(items.len());
    for it in items {
        if let ListItem::Encoded(_, e) = it {
            if e.index == item_index {
                messages.push(Cow::Borrowed(e.message()));
                continue;
            }
        }
        let encoded = serde_json::from_slice::<Value>(it.json())
            .map_err(|e| format!("protobuf: a list item is not JSON: {e}"))
            .and_then(|v| {
                let Value::Object(map) = v else {
                    return Err("protobuf: a list item is not an object".to_string());
                };
                let mut w = Rev::with_capacity(it.json().len() / 2);
                message(&mut w, item_index, &map, 1)?;
                Ok(w.finish())
            });
        match encoded {
            Ok(m) => messages.push(Cow::Owned(m)),
            Err(e) => return Some(Err(e)),
        }
    }
    let empty = Map::new();
    let mut w = Rev::with_capacity(256);
    if let Err(e) = message(
        &mut w,
        meta_index,
        metadata.as_object().unwrap_or(&empty),
        1,
    ) {
        return Some(Err(e));
    }
    let meta_message = w.finish();
    // then the list front to back (the items are not copied twice): the magic, the
    // envelope (as `envelope_with` writes it) around the list's fields in number order
    let items_len: usize = messages.iter().map(|m| field_len(item.num, m.len())).sum();
    let body_len = field_len(meta.num, meta_message.len()) + items_len;
    let type_meta_len = field_len(1, api_version.len()) + field_len(2, kind.len());
    let total = MAGIC.len() + field_len(1, type_meta_len) + field_len(2, body_len) + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    put_key_len(&mut out, 1, type_meta_len);
    put_field(&mut out, 1, api_version.as_bytes());
    put_field(&mut out, 2, kind.as_bytes());
    put_key_len(&mut out, 2, body_len);
    let put_items = |out: &mut Vec<u8>| {
        for m in &messages {
            put_field(out, item.num, m);
        }
    };
    if meta.num < item.num {
        put_field(&mut out, meta.num, &meta_message);
        put_items(&mut out);
    } else {
        put_items(&mut out);
        put_field(&mut out, meta.num, &meta_message);
    }
    put_field(&mut out, 3, b"");
    put_field(&mut out, 4, b"");
    debug_assert_eq!(out.len(), total);
    Some(Ok(out))
}

/// Bytes of `v` as a varint.
fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Bytes of a length-delimited field `num` of `n` bytes.
fn field_len(num: u32, n: usize) -> usize {
    varint_len((u64::from(num) << 3) | LEN) + varint_len(n as u64) + n
}

/// Append a varint (front to back).
fn put_varint(out: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        out.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    out.put_u8(v as u8);
}

/// Append the key and length of a length-delimited field `num` of `n` bytes.
fn put_key_len(out: &mut impl BufMut, num: u32, n: usize) {
    put_varint(out, (u64::from(num) << 3) | LEN);
    put_varint(out, n as u64);
}

/// Append a length-delimited field.
fn put_field(out: &mut impl BufMut, num: u32, b: &[u8]) {
    put_key_len(out, num, b.len());
    out.put_slice(b);
}

/// Write the envelope of `obj`; `false` when its kind is unknown.
fn envelope(w: &mut Rev, obj: &Value) -> Result<bool, String> {
    let Value::Object(map) = obj else {
        return Err("protobuf: the object is not a JSON object".to_string());
    };
    let str_of = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (str_of("apiVersion"), str_of("kind"));
    let Some(index) = lookup(api_version, kind) else {
        return Ok(false);
    };
    envelope_with(w, api_version, kind, |w| message(w, index, map, 0))?;
    Ok(true)
}

/// The magic and the `runtime.Unknown` envelope around the object `body` writes.
fn envelope_with(
    w: &mut Rev,
    api_version: &str,
    kind: &str,
    body: impl FnOnce(&mut Rev) -> Result<(), String>,
) -> Result<(), String> {
    // Unknown { TypeMeta typeMeta = 1; bytes raw = 2; string contentEncoding = 3;
    // string contentType = 4 }, written back to front
    w.bytes_field(4, b"");
    w.bytes_field(3, b"");
    w.message(2, body)?;
    w.message(1, |w| {
        w.bytes_field(2, kind.as_bytes());
        w.bytes_field(1, api_version.as_bytes());
        Ok(())
    })?;
    w.raw(MAGIC);
    Ok(())
}

/// The fields of each message by descending field number (the writer goes backwards).
fn descending(index: u16) -> &'static [u16] {
    static ORDER: OnceLock<Vec<Box<[u16]>>> = OnceLock::new();
    let order = ORDER.get_or_init(|| {
        schema::MESSAGES
            .iter()
            .map(|m| {
                let mut idx: Vec<u16> = (0..m.fields.len() as u16).collect();
                idx.sort_by_key(|&i| std::cmp::Reverse(m.fields[usize::from(i)].num));
                idx.into_boxed_slice()
            })
            .collect()
    });
    order.get(usize::from(index)).map_or(&[], |b| b)
}

/// A message's fields by JSON name: `(name, field index)`, sorted.
type Names = Box<[(&'static str, u16)]>;

/// The fields of each message with a JSON name, sorted by that name (to find the field
/// of a JSON key without hashing).
fn by_name(index: u16) -> &'static [(&'static str, u16)] {
    static NAMES: OnceLock<Vec<Names>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        schema::MESSAGES
            .iter()
            .map(|m| {
                let mut v: Vec<(&'static str, u16)> = m
                    .fields
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.flags & FLAG_INLINE == 0)
                    .map(|(i, f)| (f.json, i as u16))
                    .collect();
                v.sort_unstable();
                v.into_boxed_slice()
            })
            .collect()
    });
    names.get(usize::from(index)).map_or(&[], |b| b)
}

/// Most fields a message has for the on-stack lookup (larger ones hash instead).
const SLOTS: usize = 64;

/// Write the fields of message `index` from the JSON object `map`.
fn message(w: &mut Rev, index: u16, map: &Map<String, Value>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("protobuf: object nesting too deep".to_string());
    }
    let msg = schema::MESSAGES
        .get(usize::from(index))
        .ok_or("protobuf: schema index out of range")?;
    if msg.unwrap {
        return Err(format!("protobuf: {} is not an object", msg.name));
    }
    // the value of each field: one pass over the (usually few) keys present
    let mut slots: [Option<&Value>; SLOTS] = [None; SLOTS];
    let slotted = msg.fields.len() <= SLOTS;
    if slotted && !map.is_empty() {
        let names = by_name(index);
        for (k, v) in map {
            if let Ok(i) = names.binary_search_by(|(n, _)| (*n).cmp(k.as_str())) {
                slots[usize::from(names[i].1)] = Some(v);
            }
        }
    }
    for &i in descending(index) {
        let field = &msg.fields[usize::from(i)];
        if field.flags & FLAG_INLINE != 0 {
            let Ty::Msg(inner) = field.ty else {
                return Err(format!(
                    "protobuf: inline field of {} is not a message",
                    msg.name
                ));
            };
            if field.flags & FLAG_PTR != 0 && !inline_present(inner, map) {
                continue;
            }
            w.message(field.num, |w| message(w, inner, map, depth + 1))?;
            continue;
        }
        let value = if slotted {
            slots[usize::from(i)]
        } else {
            map.get(field.json)
        }
        .filter(|v| !v.is_null());
        match field.card {
            Card::One => match value {
                Some(v) => single(w, field, v, depth)?,
                None if field.flags & FLAG_PTR != 0 => {}
                None => zero(w, field, depth)?,
            },
            Card::Rep => match value {
                Some(Value::Array(items)) => {
                    for item in items.iter().rev() {
                        if item.is_null() {
                            zero(w, field, depth)?;
                        } else {
                            single(w, field, item, depth)?;
                        }
                    }
                }
                // a []byte-like scalar list given as one value is not valid JSON for Go
                Some(other) => return Err(wrong(msg.name, field, other)),
                None => {}
            },
            Card::Map => match value {
                Some(Value::Object(entries)) => {
                    let mut keys: Vec<&String> = entries.keys().collect();
                    keys.sort_unstable();
                    for key in keys.into_iter().rev() {
                        let v = &entries[key.as_str()];
                        w.message(field.num, |w| {
                            map_value(w, field, v, depth)?;
                            w.bytes_field(1, key.as_bytes());
                            Ok(())
                        })?;
                    }
                }
                Some(other) => return Err(wrong(msg.name, field, other)),
                None => {}
            },
        }
    }
    Ok(())
}

/// Whether any JSON field of the inline message `index` is present in `map`.
fn inline_present(index: u16, map: &Map<String, Value>) -> bool {
    schema::MESSAGES.get(usize::from(index)).is_some_and(|m| {
        m.fields.iter().any(|f| {
            if f.flags & FLAG_INLINE != 0 {
                matches!(f.ty, Ty::Msg(i) if inline_present(i, map))
            } else {
                map.get(f.json).is_some_and(|v| !v.is_null())
            }
        })
    })
}

fn wrong(msg: &str, field: &Field, v: &Value) -> String {
    let what = match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("protobuf: {msg}.{} cannot be {what}", field.json)
}

/// The value of a map entry (field 2 of the entry message).
fn map_value(w: &mut Rev, field: &Field, v: &Value, depth: usize) -> Result<(), String> {
    let entry = Field {
        num: 2,
        json: field.json,
        ty: field.ty,
        card: Card::One,
        flags: 0,
    };
    match (field.ty, v) {
        // a nil []byte value is not written
        (Ty::Bytes, Value::Null) => Ok(()),
        (_, Value::Null) => zero(w, &entry, depth),
        (Ty::Msg(index), Value::Array(items)) if is_wrapper(index) => {
            w.message(2, |w| wrapper(w, index, items, depth))
        }
        _ => single(w, &entry, v, depth),
    }
}

fn is_wrapper(index: u16) -> bool {
    schema::MESSAGES
        .get(usize::from(index))
        .is_some_and(|m| m.unwrap)
}

/// A named slice wrapper `{repeated items = 1}` from its JSON array.
fn wrapper(w: &mut Rev, index: u16, items: &[Value], depth: usize) -> Result<(), String> {
    let msg = &schema::MESSAGES[usize::from(index)];
    let Some(field) = msg.fields.first() else {
        return Ok(());
    };
    let inner = Field {
        num: field.num,
        json: field.json,
        ty: field.ty,
        card: Card::One,
        flags: 0,
    };
    for item in items.iter().rev() {
        if item.is_null() {
            zero(w, &inner, depth)?;
        } else {
            single(w, &inner, item, depth + 1)?;
        }
    }
    Ok(())
}

/// The Go zero value of a non-pointer field, as gogo writes it.
fn zero(w: &mut Rev, field: &Field, depth: usize) -> Result<(), String> {
    let num = field.num;
    match field.ty {
        Ty::Str => w.bytes_field(num, b""),
        Ty::Bool | Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 => w.varint_field(num, 0),
        Ty::F64 => w.fixed64_field(num, 0),
        Ty::F32 => w.fixed32_field(num, 0),
        // a nil []byte is not written
        Ty::Bytes => {}
        Ty::Msg(index) => {
            if is_wrapper(index) {
                w.message(num, |_| Ok(()))?;
            } else {
                w.message(num, |w| message(w, index, &Map::new(), depth + 1))?;
            }
        }
        Ty::Quantity => w.message(num, |w| {
            w.bytes_field(1, b"0");
            Ok(())
        })?,
        // the zero time and the nil RawExtension / FieldsV1 are empty messages
        Ty::Time | Ty::MicroTime | Ty::RawExtension | Ty::FieldsV1 => {
            w.message(num, |_| Ok(()))?;
        }
        Ty::Duration => w.message(num, |w| {
            w.varint_field(1, 0);
            Ok(())
        })?,
        Ty::IntOrString => w.message(num, |w| {
            w.bytes_field(3, b"");
            w.varint_field(2, 0);
            w.varint_field(1, 0);
            Ok(())
        })?,
    }
    Ok(())
}

/// An integer from JSON (integral floats accepted, as Go's decoder does not; the
/// server's own JSON never has them for integer fields).
fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|u| u as i64))
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        _ => None,
    }
}

/// One non-null singular value.
fn single(w: &mut Rev, field: &Field, v: &Value, depth: usize) -> Result<(), String> {
    let num = field.num;
    let bad = || format!("protobuf: unexpected value for {}: {v}", field.json);
    match field.ty {
        Ty::Str => w.bytes_field(num, v.as_str().ok_or_else(bad)?.as_bytes()),
        Ty::Bool => w.varint_field(num, u64::from(v.as_bool().ok_or_else(bad)?)),
        // Go sign-extends int32 to 64 bits on the wire
        Ty::I32 => w.varint_field(num, integer(v).ok_or_else(bad)? as i32 as i64 as u64),
        Ty::I64 => w.varint_field(num, integer(v).ok_or_else(bad)? as u64),
        Ty::U32 => w.varint_field(num, u64::from(integer(v).ok_or_else(bad)? as u32)),
        Ty::U64 => w.varint_field(num, integer(v).ok_or_else(bad)? as u64),
        Ty::F64 => w.fixed64_field(num, v.as_f64().ok_or_else(bad)?.to_bits()),
        Ty::F32 => w.fixed32_field(num, (v.as_f64().ok_or_else(bad)? as f32).to_bits()),
        Ty::Bytes => {
            let s = v.as_str().ok_or_else(bad)?;
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| format!("protobuf: {} is not base64: {e}", field.json))?;
            w.bytes_field(num, &b);
        }
        Ty::Msg(index) => match v {
            Value::Object(map) => w.message(num, |w| message(w, index, map, depth + 1))?,
            Value::Array(items) if is_wrapper(index) => {
                w.message(num, |w| wrapper(w, index, items, depth + 1))?
            }
            _ => return Err(bad()),
        },
        Ty::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(bad()),
            };
            w.message(num, |w| {
                w.bytes_field(1, s.as_bytes());
                Ok(())
            })?;
        }
        Ty::Time | Ty::MicroTime => {
            let s = v.as_str().ok_or_else(bad)?;
            let nanos = apimachinery::time::parse_rfc3339_nanos(s)
                .ok_or_else(|| format!("protobuf: {} is not a time: {s:?}", field.json))?;
            let secs = nanos.div_euclid(1_000_000_000) as i64;
            let mut frac = nanos.rem_euclid(1_000_000_000) as i64;
            if field.ty == Ty::Time {
                // metav1.Time keeps whole seconds
                frac = 0;
            } else {
                frac -= frac % 1000;
            }
            w.message(num, |w| {
                w.varint_field(2, frac as u64);
                w.varint_field(1, secs as u64);
                Ok(())
            })?;
        }
        Ty::Duration => {
            let s = v.as_str().ok_or_else(bad)?;
            let nanos = apimachinery::duration::parse(s)?;
            w.message(num, |w| {
                w.varint_field(1, nanos as u64);
                Ok(())
            })?;
        }
        Ty::IntOrString => match v {
            Value::String(s) => w.message(num, |w| {
                w.bytes_field(3, s.as_bytes());
                w.varint_field(2, 0);
                w.varint_field(1, 1);
                Ok(())
            })?,
            _ => {
                let i = integer(v).ok_or_else(bad)?;
                w.message(num, |w| {
                    w.bytes_field(3, b"");
                    w.varint_field(2, i as i32 as i64 as u64);
                    w.varint_field(1, 0);
                    Ok(())
                })?
            }
        },
        Ty::RawExtension | Ty::FieldsV1 => {
            let raw = serde_json::to_vec(v).map_err(|e| e.to_string())?;
            w.message(num, |w| {
                w.bytes_field(1, &raw);
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// A protobuf writer that writes back to front: every value is pushed reversed, so a
/// nested message is complete (and its length known) before its tag and length are
/// pushed; [`Rev::finish`] reverses the buffer once.
struct Rev {
    buf: Vec<u8>,
}

impl Rev {
    fn with_capacity(n: usize) -> Self {
        Rev {
            buf: Vec::with_capacity(n),
        }
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes that must appear in this order in the output.
    fn raw(&mut self, b: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(b);
        self.buf[start..].reverse();
    }

    fn varint(&mut self, mut v: u64) {
        let mut tmp = [0u8; 10];
        let mut n = 0;
        while v >= 0x80 {
            tmp[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        tmp[n] = v as u8;
        n += 1;
        self.buf.extend(tmp[..n].iter().rev());
    }

    fn key(&mut self, num: u32, wire: u64) {
        self.varint((u64::from(num) << 3) | wire);
    }

    fn varint_field(&mut self, num: u32, v: u64) {
        self.varint(v);
        self.key(num, VARINT);
    }

    fn fixed64_field(&mut self, num: u32, v: u64) {
        self.raw(&v.to_le_bytes());
        self.key(num, FIXED64);
    }

    fn fixed32_field(&mut self, num: u32, v: u32) {
        self.raw(&v.to_le_bytes());
        self.key(num, FIXED32);
    }

    fn bytes_field(&mut self, num: u32, b: &[u8]) {
        self.raw(b);
        self.varint(b.len() as u64);
        self.key(num, LEN);
    }

    /// A length-delimited field whose content `body` writes (back to front).
    fn message<T>(
        &mut self,
        num: u32,
        body: impl FnOnce(&mut Self) -> Result<T, String>,
    ) -> Result<T, String> {
        let start = self.buf.len();
        let out = body(self)?;
        let n = self.buf.len() - start;
        self.varint(n as u64);
        self.key(num, LEN);
        Ok(out)
    }

    fn finish(mut self) -> Vec<u8> {
        self.buf.reverse();
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machinery::protobuf::decode;
    use prost::Message as _;
    use serde_json::json;

    macro_rules! fixtures {
        ($($name:literal),* $(,)?) => {
            [$((
                $name,
                include_bytes!(concat!("../../../tests/fixtures/protobuf/", $name, ".bin"))
                    .as_slice(),
            )),*]
        };
    }

    /// Every request body kubectl (client-go's gogo marshalling) wrote for the decoder's
    /// fixtures.
    fn kubectl_bodies() -> [(&'static str, &'static [u8]); 17] {
        fixtures!(
            "namespace",
            "deployment",
            "configmap",
            "secret",
            "service",
            "job",
            "cronjob",
            "role",
            "rolebinding",
            "clusterrole",
            "serviceaccount",
            "resourcequota",
            "priorityclass",
            "poddisruptionbudget",
            "ingress",
            "tokenrequest",
            "selfsubjectaccessreview",
        )
    }

    fn enc(v: &Value) -> Vec<u8> {
        encode(v).expect("encodable").expect("encodes")
    }

    /// Decoding what client-go wrote and encoding it again gives client-go's bytes:
    /// field order, zero values, pointers, maps, quantities, times, int-or-strings.
    #[test]
    fn kubectl_bodies_are_reproduced_byte_for_byte() {
        for (name, bin) in kubectl_bodies() {
            let v = decode(bin).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(enc(&v), bin, "{name}");
        }
    }

    /// The independent decoder (prost, with the k8s-pb types generated from upstream's
    /// `.proto` files) reads the same objects from our bytes: prost decodes, re-encodes,
    /// and our decoder reads that back to the same JSON.
    fn via_prost<M: prost::Message + Default>(v: &Value) -> Value {
        let body = enc(v);
        let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..])
            .expect("envelope decodes with prost");
        let tm = unknown.type_meta.clone().expect("typeMeta");
        assert_eq!(tm.api_version.as_deref(), v["apiVersion"].as_str());
        assert_eq!(tm.kind.as_deref(), v["kind"].as_str());
        let obj = M::decode(unknown.raw.as_deref().unwrap_or_default()).expect("prost decodes");
        let again = k8s_pb::apimachinery::pkg::runtime::Unknown {
            raw: Some(obj.encode_to_vec()),
            ..unknown
        };
        let mut back = MAGIC.to_vec();
        back.extend(again.encode_to_vec());
        decode(&back).expect("our decoder reads prost's bytes")
    }

    #[test]
    fn prost_reads_what_we_write() {
        use k8s_pb::api::{apps::v1 as apps, core::v1 as core};
        for (name, bin) in kubectl_bodies() {
            let v = decode(bin).unwrap();
            let kind = v["kind"].as_str().unwrap();
            let back = match kind {
                "Namespace" => via_prost::<core::Namespace>(&v),
                "Deployment" => via_prost::<apps::Deployment>(&v),
                "ConfigMap" => via_prost::<core::ConfigMap>(&v),
                "Secret" => via_prost::<core::Secret>(&v),
                "Service" => via_prost::<core::Service>(&v),
                "Job" => via_prost::<k8s_pb::api::batch::v1::Job>(&v),
                "CronJob" => via_prost::<k8s_pb::api::batch::v1::CronJob>(&v),
                "Role" => via_prost::<k8s_pb::api::rbac::v1::Role>(&v),
                "RoleBinding" => via_prost::<k8s_pb::api::rbac::v1::RoleBinding>(&v),
                "ClusterRole" => via_prost::<k8s_pb::api::rbac::v1::ClusterRole>(&v),
                "ServiceAccount" => via_prost::<core::ServiceAccount>(&v),
                "ResourceQuota" => via_prost::<core::ResourceQuota>(&v),
                "PriorityClass" => via_prost::<k8s_pb::api::scheduling::v1::PriorityClass>(&v),
                "PodDisruptionBudget" => {
                    via_prost::<k8s_pb::api::policy::v1::PodDisruptionBudget>(&v)
                }
                "Ingress" => via_prost::<k8s_pb::api::networking::v1::Ingress>(&v),
                "TokenRequest" => via_prost::<k8s_pb::api::authentication::v1::TokenRequest>(&v),
                "SelfSubjectAccessReview" => {
                    via_prost::<k8s_pb::api::authorization::v1::SelfSubjectAccessReview>(&v)
                }
                other => panic!("{name}: no k8s-pb type for {other}"),
            };
            assert_eq!(back, v, "{name}");
        }
    }

    /// A server-side pod: status, conditions, times, quantities, int-or-strings,
    /// managed fields, owner references, probes, negative and large integers.
    fn pod() -> Value {
        json!({
            "kind": "Pod",
            "apiVersion": "v1",
            "metadata": {
                "name": "web-1", "namespace": "default", "uid": "8d6c-1",
                "resourceVersion": "42", "generation": 3,
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "deletionTimestamp": "2026-01-02T03:05:05Z",
                "deletionGracePeriodSeconds": 30,
                "labels": {"b": "2", "a": "1", "empty": ""},
                "annotations": {"note": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                    "uid": "u-1", "controller": true, "blockOwnerDeletion": true}],
                "finalizers": ["f/one"],
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}]
            },
            "spec": {
                "containers": [{
                    "name": "c", "image": "nginx",
                    "command": ["sh", "-c"], "args": ["echo hi"],
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "env": [{"name": "A", "value": "1"},
                        {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                        "initialDelaySeconds": 0, "timeoutSeconds": 1, "periodSeconds": 10,
                        "successThreshold": 1, "failureThreshold": 3},
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1,
                        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Always",
                    "securityContext": {"runAsUser": 0, "privileged": false}
                }],
                "restartPolicy": "Always",
                "terminationGracePeriodSeconds": 30,
                "activeDeadlineSeconds": -1,
                "dnsPolicy": "ClusterFirst",
                "nodeName": "node-1",
                "securityContext": {},
                "schedulerName": "default-scheduler",
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
                "priority": -2147483648,
                "enableServiceLinks": true,
                "overhead": {"cpu": "10m"}
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-01-02T03:04:06Z"}],
                "hostIP": "10.0.0.1",
                "podIP": "10.1.0.5",
                "podIPs": [{"ip": "10.1.0.5"}],
                "startTime": "2026-01-02T03:04:05Z",
                "containerStatuses": [{"name": "c", "state": {"running": {"startedAt": "2026-01-02T03:04:06Z"}},
                    "lastState": {}, "ready": true, "restartCount": 0, "image": "nginx",
                    "imageID": "", "containerID": "containerd://abc", "started": true}],
                "qosClass": "Burstable"
            }
        })
    }

    #[test]
    fn server_objects_read_the_same_with_prost() {
        use k8s_pb::api::core::v1 as core;
        let pod = pod();
        let ours = decode(&enc(&pod)).unwrap();
        assert_eq!(via_prost::<core::Pod>(&pod), ours);
        // the values survive: spot checks on what prost decoded
        let body = enc(&pod);
        let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
        let p = core::Pod::decode(unknown.raw.as_deref().unwrap()).unwrap();
        let md = p.metadata.as_ref().unwrap();
        assert_eq!(md.name.as_deref(), Some("web-1"));
        assert_eq!(md.generation, Some(3));
        assert_eq!(
            md.creation_timestamp.as_ref().unwrap().seconds,
            Some(1_767_323_045)
        );
        assert_eq!(md.deletion_grace_period_seconds, Some(30));
        assert_eq!(md.labels.get("empty").map(String::as_str), Some(""));
        assert_eq!(md.owner_references[0].controller, Some(true));
        let mf = &md.managed_fields[0];
        let fields: Value =
            serde_json::from_slice(mf.fields_v1.as_ref().unwrap().raw.as_deref().unwrap()).unwrap();
        assert_eq!(fields, pod["metadata"]["managedFields"][0]["fieldsV1"]);
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.active_deadline_seconds, Some(-1));
        assert_eq!(spec.priority, Some(i32::MIN));
        assert_eq!(spec.overhead["cpu"].string.as_deref(), Some("10m"));
        let c = &spec.containers[0];
        assert_eq!(
            c.resources.as_ref().unwrap().limits["memory"]
                .string
                .as_deref(),
            Some("128Mi")
        );
        let port = c
            .liveness_probe
            .as_ref()
            .unwrap()
            .handler
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap()
            .port
            .as_ref()
            .unwrap();
        assert_eq!(
            (port.r#type, port.str_val.as_deref()),
            (Some(1), Some("http"))
        );
        let port = c
            .readiness_probe
            .as_ref()
            .unwrap()
            .handler
            .as_ref()
            .unwrap()
            .tcp_socket
            .as_ref()
            .unwrap()
            .port
            .as_ref()
            .unwrap();
        assert_eq!((port.r#type, port.int_val), (Some(0), Some(8080)));
        assert_eq!(c.security_context.as_ref().unwrap().run_as_user, Some(0));
        let st = p.status.as_ref().unwrap();
        assert_eq!(
            st.conditions[0]
                .last_transition_time
                .as_ref()
                .unwrap()
                .seconds,
            Some(1_767_323_046)
        );
        // a null time is Go's zero time: an empty message
        assert_eq!(
            st.conditions[0].last_probe_time.as_ref().unwrap().seconds,
            None
        );
        assert_eq!(st.container_statuses[0].ready, Some(true));
        assert_eq!(st.container_statuses[0].restart_count, Some(0));
    }

    #[test]
    fn lists_status_and_watch_events() {
        use k8s_pb::api::core::v1 as core;
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        let list = json!({"kind": "PodList", "apiVersion": "v1",
            "metadata": {"resourceVersion": "7", "continue": "c", "remainingItemCount": 2},
            "items": [pod(), {"metadata": {"name": "b"}}]});
        let body = enc(&list);
        let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
        let l = core::PodList::decode(unknown.raw.as_deref().unwrap()).unwrap();
        assert_eq!(l.items.len(), 2);
        assert_eq!(l.metadata.as_ref().unwrap().remaining_item_count, Some(2));
        assert_eq!(
            l.items[1].metadata.as_ref().unwrap().name.as_deref(),
            Some("b")
        );

        let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": "pods \"x\" not found", "reason": "NotFound",
            "details": {"name": "x", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "message": "m", "field": "spec"}]},
            "code": 404});
        let body = enc(&status);
        let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
        assert_eq!(
            unknown.type_meta.as_ref().unwrap().kind.as_deref(),
            Some("Status")
        );
        let s = meta::Status::decode(unknown.raw.as_deref().unwrap()).unwrap();
        assert_eq!(s.code, Some(404));
        assert_eq!(s.reason.as_deref(), Some("NotFound"));
        assert_eq!(
            s.details.as_ref().unwrap().causes[0].field.as_deref(),
            Some("spec")
        );

        let mut frame = Vec::new();
        watch_event(&mut frame, "ADDED", &pod()).unwrap().unwrap();
        let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
        assert_eq!(len, frame.len() - 4);
        let ev = meta::WatchEvent::decode(&frame[4..]).unwrap();
        assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
        let raw = ev.object.unwrap().raw.unwrap();
        assert_eq!(raw, enc(&pod()));

        // a list from its items' JSON is the same as from the list's value
        let items: Vec<ListItem> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| ListItem::Json(serde_json::to_vec(i).unwrap().into()))
            .collect();
        let by_items = encode_list("v1", "PodList", &list["metadata"], &items)
            .unwrap()
            .unwrap();
        assert_eq!(by_items, enc(&list));
        assert!(encode_list("example.com/v1", "WidgetList", &json!({}), &items).is_none());
        assert!(encode_list(
            "v1",
            "PodList",
            &json!({}),
            &[ListItem::Json(Bytes::from_static(b"nope"))]
        )
        .unwrap()
        .is_err());

        // and the same from items encoded beforehand (the stored objects' cache), all
        // or some of them
        let cached: Vec<ListItem> = items
            .iter()
            .map(|i| {
                let v: Value = serde_json::from_slice(i.json()).unwrap();
                let item = v.clone();
                // items without kind (allowed in a list) have nothing to cache
                let Some(e) = encode_object(i.json()).unwrap() else {
                    assert!(encode(&item).is_none());
                    return i.clone();
                };
                assert_eq!(&e.full[..], &enc(&v)[..]);
                ListItem::Encoded(i.json().clone(), e)
            })
            .collect();
        let by_cache = encode_list("v1", "PodList", &list["metadata"], &cached)
            .unwrap()
            .unwrap();
        assert_eq!(by_cache, by_items);
        let mixed: Vec<ListItem> = cached
            .iter()
            .zip(&items)
            .enumerate()
            .map(|(n, (c, i))| if n % 2 == 0 { c.clone() } else { i.clone() })
            .collect();
        assert_eq!(
            encode_list("v1", "PodList", &list["metadata"], &mixed)
                .unwrap()
                .unwrap(),
            by_items
        );
        // an encoded item of another type than the list's items is encoded from its JSON
        let node = json!({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}});
        let node_json = Bytes::from(serde_json::to_vec(&node).unwrap());
        let node_enc = encode_object(&node_json).unwrap().unwrap();
        assert!(cached.iter().any(|c| matches!(c, ListItem::Encoded(..))));
        assert_eq!(
            encode_list(
                "v1",
                "PodList",
                &json!({}),
                &[ListItem::Encoded(node_json.clone(), node_enc.clone())]
            ),
            encode_list("v1", "PodList", &json!({}), &[ListItem::Json(node_json)])
        );
        assert!(encode_object(br#"{"kind":"Widget","apiVersion":"x/v1"}"#)
            .unwrap()
            .is_none());
        assert!(encode_object(b"nope").is_err());

        // a watch event around an encoded object is the same as from its value
        let mut from_cache = Vec::new();
        let pod_json = serde_json::to_vec(&pod()).unwrap();
        let pod_enc = encode_object(&pod_json).unwrap().unwrap();
        watch_event_encoded(&mut from_cache, "ADDED", &pod_enc.full).unwrap();
        assert_eq!(from_cache, frame);
        let unknown =
            k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&pod_enc.full[4..]).unwrap();
        assert_eq!(&pod_enc.body()[..], unknown.raw.as_deref().unwrap());

        // unknown kinds are not encoded
        assert!(encode(&json!({"kind": "Widget", "apiVersion": "example.com/v1"})).is_none());
        assert!(watch_event(
            &mut frame,
            "ADDED",
            &json!({"kind": "Widget", "apiVersion": "x/v1"})
        )
        .is_none());
    }

    #[test]
    fn bad_values_are_errors_not_panics() {
        for bad in [
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": 5}}),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"creationTimestamp": "yesterday"}}),
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"labels": ["a"]}}),
            json!({"kind": "Secret", "apiVersion": "v1", "data": {"a": "!!"}}),
            json!({"kind": "Pod", "apiVersion": "v1", "spec": {"containers": {}}}),
        ] {
            assert!(encode(&bad).unwrap().is_err(), "{bad}");
        }
    }

    /// What kube-apiserver 1.36 answered in JSON (objects, error Status bodies, watch
    /// events' objects) goes through protobuf and back unchanged: the encoder writes
    /// what the decoder (Go's "unmarshal, then encoding/json") turns into the same JSON.
    #[test]
    fn kube_apiserver_answers_survive_protobuf() {
        let mut seen = 0;
        for sub in ["objects", "errors"] {
            let dir = crate::reference::dir(sub);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            for path in files {
                let mut v: Value =
                    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
                // errors are recorded as {request, code, body}
                if let Some(body) = v.get("body").cloned() {
                    v = match body {
                        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::Null),
                        other => other,
                    };
                }
                if v.get("kind").is_none() {
                    continue;
                }
                let back = decode(&enc(&v)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert_eq!(back, v, "{}", path.display());
                seen += 1;
            }
        }
        for file in ["watch-from-rv.ndjson", "watch-list.ndjson"] {
            let text = std::fs::read_to_string(crate::reference::dir("watch").join(file)).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let ev: Value = serde_json::from_str(line).unwrap();
                let obj = &ev["object"];
                let mut frame = Vec::new();
                watch_event(&mut frame, ev["type"].as_str().unwrap(), obj)
                    .unwrap()
                    .unwrap();
                let we = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&frame[4..])
                    .unwrap();
                assert_eq!(we.r#type.as_deref(), ev["type"].as_str());
                let back = decode(&we.object.unwrap().raw.unwrap()).unwrap();
                assert_eq!(&back, obj, "{file}");
                seen += 1;
            }
        }
        assert!(seen >= 38, "{seen} answers");
    }

    /// Every kind in the tables encodes its empty object, and the decoder reads it.
    #[test]
    fn every_kind_encodes_empty() {
        for &(av, kind, _) in schema::KINDS {
            let v = json!({"kind": kind, "apiVersion": av});
            let back = decode(&enc(&v)).unwrap_or_else(|e| panic!("{av} {kind}: {e}"));
            assert_eq!(back["kind"], json!(kind));
        }
    }
}
