//! Kubernetes strategic merge patch (SMP) application.
//!
//! A strategic merge patch (`application/strategic-merge-patch+json`) is a
//! JSON object that looks like a partial copy of the object being patched. It
//! behaves like a JSON merge patch (RFC 7386) — objects merge recursively and a
//! `null` value deletes a field — except that the *schema* of the patched type
//! decides how lists are combined:
//!
//! * Lists whose field declares `patchStrategy: merge` plus a `patchMergeKey`
//!   (e.g. `containers`, keyed by `name`) are merged item by item: a patch item
//!   is merged into the live item with the same merge-key value, or appended
//!   when there is none.
//! * Lists of primitives with `patchStrategy: merge` (e.g. `finalizers`) are
//!   merged as a set union.
//! * All other lists are replaced wholesale, as in JSON merge patch.
//!
//! A patch may additionally carry *directives*:
//!
//! * `"$patch": "replace"` inside an object replaces the object instead of
//!   merging it; as an item of a merging list it replaces the whole list with
//!   the other items of the patch list.
//! * `"$patch": "delete"` inside an object deletes its content (the field
//!   becomes `{}`); as an item of a merging list it deletes every live item
//!   with the same merge key.
//! * `"$deleteFromPrimitiveList/<field>": [..]` removes values from a list of
//!   primitives.
//! * `"$setElementOrder/<field>": [..]` gives the final relative order of the
//!   items of a merging list (the patch items first sorted by it, the
//!   server-only items keep their place relative to the live list).
//!   Without it, merged items follow the patch list's order and, as upstream
//!   does, new items land *before* live items the patch does not mention.
//! * `"$retainKeys": [..]` clears every field of the live object that is not
//!   listed (used for fields declared with the `retainKeys` strategy, such as
//!   union types like a deployment's `strategy`).
//!
//! This module is a from-scratch Rust implementation of the *application* side
//! of upstream's `k8s.io/apimachinery/pkg/util/strategicpatch`
//! (`StrategicMergePatch`), including its list-ordering rules and its error
//! messages. The schema is consulted through the small [`PatchSchema`] trait so
//! that the server can back it with whatever type metadata it has.
//!
//! Deliberate differences from upstream, all on inputs upstream handles
//! inconsistently or by panicking:
//!
//! * A field unknown to the schema is merged like a JSON merge patch (objects
//!   recursively, lists replaced) instead of failing with "unable to find api
//!   field".
//! * Values that are newly inserted (the live object has no such field, or a
//!   field of another JSON type, or a replaced list) are "materialised": nested
//!   `null`s are dropped (as upstream does), and nested directives are applied
//!   as if patching an empty object, so no `$patch`, `$retainKeys`,
//!   `$setElementOrder/…` or `$deleteFromPrimitiveList/…` key can leak into
//!   the stored object. A new object carrying `"$patch": "replace"` keeps its
//!   content (upstream drops it).
//! * Numbers compare by numeric value (`1 == 1.0`); comparing objects or lists
//!   as merge keys compares them structurally instead of panicking.
//! * Nesting deeper than an internal limit is rejected with an error.

use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

/// Maximum JSON nesting depth processed; deeper input is rejected. It matches
/// serde_json's parser recursion limit, so a parsed document never hits it,
/// while bounding stack use for programmatically built values.
const MAX_DEPTH: usize = 128;
/// Longest rendering of a value inside an error message.
const MAX_MESSAGE_VALUE_LEN: usize = 1024;

/// How a field of an object type is patched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPatchInfo {
    /// patch strategies from the `patchStrategy` tag, e.g. ["merge"], ["retainKeys"], ["merge","retainKeys"], [] = replace
    ///
    /// A comma separated entry (`"merge,retainKeys"`) is accepted too. Only
    /// `merge` changes how lists are patched and only `replace` changes how
    /// objects are patched; `retainKeys` is informational when applying (the
    /// `$retainKeys` directive in the patch is what clears fields).
    pub strategies: Vec<String>,
    /// `patchMergeKey` for lists of objects merged by key
    pub merge_key: Option<String>,
    /// The type (definition name, e.g. "io.k8s.api.core.v1.Container") of the field's value, or of its list items / map values; None for primitives/unknown
    ///
    /// The name is passed back verbatim to [`PatchSchema::field`] when the
    /// patch descends into the value. For a map-valued field
    /// (`additionalProperties`) a schema can return a name of its own choosing
    /// (e.g. `"map:io.k8s.api.core.v1.Container"`) and answer every key of
    /// that name with the value type.
    pub elem_type: Option<String>,
}

/// Schema knowledge needed to apply a strategic merge patch.
///
/// Any `Fn(&str, &str) -> Option<FieldPatchInfo>` closure is a schema.
pub trait PatchSchema {
    /// Info for field `field` of object type `ty`; None when the field is unknown (treated as a plain replace/merge of maps like JSON merge patch semantics upstream uses for unknown fields).
    fn field(&self, ty: &str, field: &str) -> Option<FieldPatchInfo>;
}

impl<F> PatchSchema for F
where
    F: Fn(&str, &str) -> Option<FieldPatchInfo>,
{
    fn field(&self, ty: &str, field: &str) -> Option<FieldPatchInfo> {
        self(ty, field)
    }
}

/// A schema that knows no type: every field is patched with JSON merge patch
/// semantics (objects merge recursively, lists are replaced), while patch
/// directives are still honoured.
#[derive(Clone, Copy, Debug, Default)]
#[cfg(test)]
pub struct NoSchema;

#[cfg(test)]
impl PatchSchema for NoSchema {
    fn field(&self, _ty: &str, _field: &str) -> Option<FieldPatchInfo> {
        None
    }
}

/// Why a strategic merge patch could not be applied.
#[derive(Debug, Clone, PartialEq)]
pub enum SmpError {
    /// The original object or the patch is not a JSON object (upstream's
    /// "invalid JSON document").
    InvalidDocument,
    /// The patch is malformed: unknown `$patch` directive, missing merge key,
    /// `$setElementOrder` list not matching the patch list, mixed list item
    /// types, and so on. The message follows upstream's wording.
    BadPatch(String),
    /// The schema returned inconsistent metadata (e.g. an unexpected
    /// combination of patch strategies).
    InvalidSchema(String),
}

impl fmt::Display for SmpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmpError::InvalidDocument => f.write_str("invalid JSON document"),
            SmpError::BadPatch(msg) | SmpError::InvalidSchema(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for SmpError {}

/// Apply `patch` to `original` (both JSON objects) for an object whose root type is `root_type`.
///
/// `root_type` is the name given to [`PatchSchema::field`] for the top-level
/// fields; an empty name means "unknown type". A JSON `null` original or
/// patch counts as an empty object (as upstream, which decodes both into a
/// Go map); any other non-object is [`SmpError::InvalidDocument`].
///
/// The inputs are not modified; key order of the original is preserved and
/// new keys are appended in patch order.
pub fn apply_strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &dyn PatchSchema,
    root_type: &str,
) -> Result<Value, SmpError> {
    let original = match original {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return Err(SmpError::InvalidDocument),
    };
    let patch = match patch {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return Err(SmpError::InvalidDocument),
    };
    let patcher = Patcher { schema };
    let ty = if root_type.is_empty() {
        None
    } else {
        Some(root_type)
    };
    patcher.merge_map(original, patch, ty, 0).map(Value::Object)
}

type JsonMap = Map<String, Value>;
type SmpResult<T> = std::result::Result<T, SmpError>;

/// Patch metadata of one field, resolved from [`FieldPatchInfo`].
#[derive(Debug, Default)]
struct Meta {
    /// The strategy other than `retainKeys`: "", "merge" or "replace".
    strategy: String,
    merge_key: String,
    elem: Option<String>,
}

impl Meta {
    fn is_merge(&self) -> bool {
        self.strategy == MERGE_DIRECTIVE
    }
}

/// JSON kind of a list element, used to check that list items agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

struct Patcher<'a> {
    schema: &'a dyn PatchSchema,
}

impl Patcher<'_> {
    fn meta(&self, ty: Option<&str>, field: &str) -> SmpResult<Meta> {
        let info = ty
            .and_then(|ty| self.schema.field(ty, field))
            .unwrap_or_default();
        let strategy = strategy_without_retain_keys(&info.strategies)?;
        Ok(Meta {
            strategy,
            merge_key: info.merge_key.unwrap_or_default(),
            elem: info.elem_type,
        })
    }

    /// Merge `patch` into `original`, both objects of type `ty`.
    fn merge_map(
        &self,
        mut original: JsonMap,
        mut patch: JsonMap,
        ty: Option<&str>,
        depth: usize,
    ) -> SmpResult<JsonMap> {
        check_depth(depth)?;
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some(REPLACE_DIRECTIVE) => {
                    patch.shift_remove(DIRECTIVE_MARKER);
                    self.merge_map(JsonMap::new(), patch, ty, depth)
                }
                Some(DELETE_DIRECTIVE) => Ok(JsonMap::new()),
                _ => Err(bad_patch_type(directive, &patch)),
            };
        }

        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch, ty, depth)?;

        for (key, patch_value) in patch {
            let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                let stripped = extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?;
                if stripped.is_empty() {
                    // Names no field; upstream ends up ignoring it too.
                    continue;
                }
                (stripped, true)
            } else {
                (key, false)
            };

            if patch_value.is_null() {
                original.shift_remove(&key);
                continue;
            }

            let Some(current) = original.get_mut(&key) else {
                if !is_delete_list {
                    let meta = self.meta(ty, &key)?;
                    if let Some(value) = self.materialize(patch_value, &meta, depth + 1)? {
                        original.insert(key, value);
                    }
                }
                continue;
            };

            match (current, patch_value) {
                (Value::Object(current), Value::Object(patch_map)) => {
                    let meta = self.meta(ty, &key)?;
                    if meta.strategy == REPLACE_DIRECTIVE {
                        *current = patch_map;
                    } else {
                        let taken = std::mem::take(current);
                        *current =
                            self.merge_map(taken, patch_map, meta.elem.as_deref(), depth + 1)?;
                    }
                }
                (Value::Array(current), Value::Array(patch_list)) => {
                    let meta = self.meta(ty, &key)?;
                    let taken = std::mem::take(current);
                    *current = if meta.is_merge() || is_delete_list {
                        self.merge_slice(taken, patch_list, &meta, is_delete_list, depth + 1)?
                            .0
                    } else {
                        self.materialize_array(patch_list, &meta, depth + 1)?
                    };
                }
                (current, patch_value) => {
                    if kind_of(current) == kind_of(&patch_value) {
                        // Two primitives of the same type: plain replacement.
                        *current = patch_value;
                    } else if !is_delete_list {
                        let meta = self.meta(ty, &key)?;
                        match self.materialize(patch_value, &meta, depth + 1)? {
                            Some(value) => *current = value,
                            None => {
                                original.shift_remove(&key);
                            }
                        }
                    }
                }
            }
        }
        Ok(original)
    }

    /// Process every `$setElementOrder/<field>` directive of `patch`, merging
    /// the named list together with its patch list and ordering the result.
    fn merge_set_element_order(
        &self,
        original: &mut JsonMap,
        patch: &mut JsonMap,
        ty: Option<&str>,
        depth: usize,
    ) -> SmpResult<()> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
            .cloned()
            .collect();
        for key in keys {
            let Some(order_value) = patch.shift_remove(&key) else {
                continue;
            };
            let Value::Array(set_order) = order_value else {
                return Err(bad_arg_type("[]interface {}", &order_value));
            };
            let field = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;

            let original_list = match original.get(&field) {
                None => None,
                Some(Value::Array(list)) => Some(list.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let patch_list = match patch.get(&field) {
                None => None,
                Some(Value::Array(list)) => Some(list.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let meta = self.meta(ty, &field)?;
            validate_patch_with_set_order_list(
                patch_list.as_deref().unwrap_or(&[]),
                &set_order,
                &meta.merge_key,
            )?;

            let raw_patch_list = patch_list.clone().unwrap_or_default();
            let (merged, server_order) = match (original_list, patch_list) {
                (None, None) => continue,
                (Some(original_list), None) => (original_list.clone(), original_list),
                (None, Some(patch_list)) => (
                    self.materialize_array(patch_list, &meta, depth + 1)?,
                    Vec::new(),
                ),
                (Some(original_list), Some(patch_list)) => {
                    if meta.is_merge() {
                        self.merge_slice(original_list, patch_list, &meta, false, depth + 1)?
                    } else {
                        (
                            self.materialize_array(patch_list, &meta, depth + 1)?,
                            original_list,
                        )
                    }
                }
            };

            let (patch_items, server_only) = if meta.merge_key.is_empty() {
                partition_primitives(merged, &set_order)
            } else {
                partition_maps(merged, &set_order, &meta.merge_key)?
            };
            let kind = element_kind(&[&server_order, &raw_patch_list])?;
            let ordered = normalize_element_order(
                patch_items,
                server_only,
                &set_order,
                &server_order,
                &meta.merge_key,
                kind,
            )?;
            original.insert(field.clone(), Value::Array(ordered));
            patch.shift_remove(&field);
        }
        Ok(())
    }

    /// Merge two lists of a field with strategy `merge` (or a
    /// `$deleteFromPrimitiveList` list when `is_delete_list`).
    ///
    /// Returns the merged list and the "server order" view that upstream's
    /// `$setElementOrder` handling observes afterwards: upstream edits the
    /// live list in place (deletions shift items left, new items are appended
    /// into the freed slots), so the live list it later uses for ordering is
    /// the intermediate merge result cut to the live list's length.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        meta: &Meta,
        is_delete_list: bool,
        depth: usize,
    ) -> SmpResult<(Vec<Value>, Vec<Value>)> {
        check_depth(depth)?;
        if original.is_empty() && patch.is_empty() {
            return Ok((original, Vec::new()));
        }
        let kind = element_kind(&[&original, &patch])?;

        if kind != Kind::Object {
            if is_delete_list {
                let view = original.clone();
                return Ok((delete_from_slice(original, &patch), view));
            }
            let mut both = original.clone();
            both.extend(patch.iter().cloned());
            let merged = deduplicate(both);
            let (patch_items, server_only) = partition_primitives(merged, &patch);
            let ordered =
                normalize_element_order(patch_items, server_only, &patch, &original, "", kind)?;
            return Ok((ordered, original));
        }

        let merge_key = meta.merge_key.as_str();
        if merge_key.is_empty() {
            return Err(SmpError::BadPatch(format!(
                "cannot merge lists without merge key for {}",
                meta.elem.as_deref().unwrap_or("unknown type")
            )));
        }
        let elem = meta.elem.as_deref();
        let live_len = original.len();

        // Special elements: `$patch` items of the patch list.
        let mut items = original;
        let mut replace = false;
        let mut plain_patch: Vec<Value> = Vec::new();
        for item in patch {
            let Value::Object(obj) = item else {
                return Err(bad_arg_type("map[string]interface {}", &item));
            };
            let Some(directive) = obj.get(DIRECTIVE_MARKER) else {
                plain_patch.push(Value::Object(obj));
                continue;
            };
            match directive.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let Some(key_value) = obj.get(merge_key) else {
                        return Err(no_merge_key(&obj, merge_key));
                    };
                    let wanted = scalar_key(key_value);
                    for (i, live) in items.iter().enumerate() {
                        if !live.is_object() {
                            return Err(SmpError::BadPatch(format!(
                                "value for key {i} is not a map"
                            )));
                        }
                    }
                    items.retain(|live| merge_key_of(live, merge_key) != wanted);
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err(SmpError::BadPatch(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ))
                }
                _ => return Err(bad_patch_type(directive, &obj)),
            }
        }

        if replace {
            let view: Vec<Value> = items.into_iter().take(live_len).collect();
            validate_merge_key_in_lists(merge_key, &[&plain_patch])?;
            let mut out = Vec::with_capacity(plain_patch.len());
            for item in plain_patch {
                if let Value::Object(obj) = item {
                    if let Some(value) = self.materialize_object(obj, elem, depth + 1)? {
                        out.push(value);
                    }
                }
            }
            return Ok((out, view));
        }

        // Merge the plain patch items into the live items by merge key.
        let server_base = items.clone();
        let mut positions = first_positions(&items, |v| merge_key_of(v, merge_key));
        for patch_item in &plain_patch {
            let Some(obj) = patch_item.as_object() else {
                continue;
            };
            let Some(key_value) = obj.get(merge_key) else {
                return Err(no_merge_key(obj, merge_key));
            };
            let wanted = scalar_key(key_value);
            match positions.get(&wanted) {
                Some(&i) => {
                    let live = match std::mem::take(&mut items[i]) {
                        Value::Object(live) => live,
                        _ => JsonMap::new(),
                    };
                    let merged = self.merge_map(live, obj.clone(), elem, depth + 1)?;
                    items[i] = Value::Object(merged);
                }
                None => {
                    let mut value = self
                        .materialize_object(obj.clone(), elem, depth + 1)?
                        .unwrap_or_else(|| Value::Object(JsonMap::new()));
                    if let Value::Object(new_item) = &mut value {
                        if !new_item.contains_key(merge_key) {
                            new_item.insert(merge_key.to_string(), key_value.clone());
                        }
                    }
                    positions.insert(wanted, items.len());
                    items.push(value);
                }
            }
        }

        let view: Vec<Value> = items.iter().take(live_len).cloned().collect();
        let (patch_items, server_only) = partition_maps(items, &plain_patch, merge_key)?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &plain_patch,
            &server_base,
            merge_key,
            Kind::Object,
        )?;
        Ok((ordered, view))
    }

    /// The value stored for a patch value that has nothing to merge with.
    /// `None` means the field is dropped.
    fn materialize(&self, value: Value, meta: &Meta, depth: usize) -> SmpResult<Option<Value>> {
        check_depth(depth)?;
        match value {
            Value::Null => Ok(None),
            Value::Object(obj) => self.materialize_object(obj, meta.elem.as_deref(), depth),
            Value::Array(list) => Ok(Some(Value::Array(
                self.materialize_array(list, meta, depth)?,
            ))),
            other => Ok(Some(other)),
        }
    }

    /// A new object: apply it to an empty object. `$patch: delete` drops it.
    fn materialize_object(
        &self,
        mut obj: JsonMap,
        ty: Option<&str>,
        depth: usize,
    ) -> SmpResult<Option<Value>> {
        check_depth(depth)?;
        if let Some(directive) = obj.get(DIRECTIVE_MARKER) {
            match directive.as_str() {
                Some(DELETE_DIRECTIVE) => return Ok(None),
                Some(REPLACE_DIRECTIVE) => {
                    obj.shift_remove(DIRECTIVE_MARKER);
                }
                _ => return Err(bad_patch_type(directive, &obj)),
            }
        }
        Ok(Some(Value::Object(self.merge_map(
            JsonMap::new(),
            obj,
            ty,
            depth,
        )?)))
    }

    /// A new (or replacing) list. In a merging list of objects, `$patch`
    /// items are list-level directives and are consumed.
    fn materialize_array(
        &self,
        list: Vec<Value>,
        meta: &Meta,
        depth: usize,
    ) -> SmpResult<Vec<Value>> {
        check_depth(depth)?;
        let list_directives = meta.is_merge() && !meta.merge_key.is_empty();
        let nested = Meta {
            elem: meta.elem.clone(),
            ..Meta::default()
        };
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            match item {
                Value::Object(obj) => {
                    if list_directives {
                        if let Some(directive) = obj.get(DIRECTIVE_MARKER) {
                            match directive.as_str() {
                                Some(DELETE_DIRECTIVE) | Some(REPLACE_DIRECTIVE) => continue,
                                Some(MERGE_DIRECTIVE) => {
                                    return Err(SmpError::BadPatch(
                                        "merging lists cannot yet be specified in the patch"
                                            .to_string(),
                                    ))
                                }
                                _ => return Err(bad_patch_type(directive, &obj)),
                            }
                        }
                    }
                    if let Some(value) =
                        self.materialize_object(obj, meta.elem.as_deref(), depth + 1)?
                    {
                        out.push(value);
                    }
                }
                Value::Array(inner) => {
                    out.push(Value::Array(self.materialize_array(
                        inner,
                        &nested,
                        depth + 1,
                    )?));
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }
}

fn check_depth(depth: usize) -> SmpResult<()> {
    if depth > MAX_DEPTH {
        Err(SmpError::BadPatch(format!(
            "patch nesting exceeds the maximum depth of {MAX_DEPTH}"
        )))
    } else {
        Ok(())
    }
}

/// Upstream's `extractRetainKeysPatchStrategy`: drop `retainKeys` and return
/// the remaining strategy.
fn strategy_without_retain_keys(strategies: &[String]) -> SmpResult<String> {
    let parts: Vec<&str> = strategies
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    match parts.as_slice() {
        [] => Ok(String::new()),
        [single] if *single == RETAIN_KEYS_STRATEGY => Ok(String::new()),
        [single] => Ok((*single).to_string()),
        [first, second] if *first == RETAIN_KEYS_STRATEGY => Ok((*second).to_string()),
        [first, second] if *second == RETAIN_KEYS_STRATEGY => Ok((*first).to_string()),
        _ => Err(SmpError::InvalidSchema(format!(
            "unexpected patch strategy: [{}]",
            parts.join(" ")
        ))),
    }
}

/// `"$prefix/field"` -> `"field"`.
fn extract_key(key: &str, prefix: &str) -> SmpResult<String> {
    match key.split_once('/') {
        Some((head, field)) if head == prefix => Ok(field.to_string()),
        _ => Err(SmpError::BadPatch(
            if prefix == DELETE_FROM_PRIMITIVE_LIST_PREFIX {
                "invalid patch format of primitive list"
            } else {
                "invalid patch format of setElementOrder list"
            }
            .to_string(),
        )),
    }
}

/// Apply a `$retainKeys` directive: validate it against the patch and clear
/// every field of `original` it does not name.
fn apply_retain_keys(original: &mut JsonMap, patch: &mut JsonMap) -> SmpResult<()> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let bad = || SmpError::BadPatch("invalid patch format of retainKeys".to_string());
    let Value::Array(list) = retain else {
        return Err(bad());
    };
    let retained: HashSet<&str> = list.iter().filter_map(Value::as_str).collect();
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || key.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained.contains(key.as_str()) {
            return Err(bad());
        }
    }
    original.retain(|key, _| retained.contains(key.as_str()));
    Ok(())
}

/// Check that the patch list items appear in the `$setElementOrder` list and
/// in the same relative order (deletions and directive items are ignored).
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    set_order: &[Value],
    merge_key: &str,
) -> SmpResult<()> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<&Value> = if merge_key.is_empty() {
        patch_list.iter().collect()
    } else {
        let mut kept = Vec::with_capacity(patch_list.len());
        for item in patch_list {
            let Some(obj) = item.as_object() else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if obj.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE) {
                kept.push(item);
            }
        }
        kept
    };

    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < non_delete.len() && order_index < set_order.len() {
        let item = non_delete[patch_index];
        if item
            .as_object()
            .is_some_and(|obj| obj.contains_key(DIRECTIVE_MARKER))
        {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(item, &set_order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_delete.len() && order_index >= set_order.len() {
        return Err(SmpError::BadPatch(format!(
            "The order in patch list:\n{}\n doesn't match {} list:\n{}\n",
            go_fmt_list(patch_list),
            SET_ELEMENT_ORDER_PREFIX,
            go_fmt_list(set_order)
        )));
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> SmpResult<bool> {
    if merge_key.is_empty() {
        return Ok(values_equal(left, right));
    }
    let Some(left_obj) = left.as_object() else {
        return Err(bad_arg_type("map[string]interface {}", left));
    };
    let Some(right_obj) = right.as_object() else {
        return Err(bad_arg_type("map[string]interface {}", right));
    };
    let Some(left_key) = left_obj.get(merge_key) else {
        return Err(no_merge_key(left_obj, merge_key));
    };
    let Some(right_key) = right_obj.get(merge_key) else {
        return Err(no_merge_key(right_obj, merge_key));
    };
    Ok(values_equal(left_key, right_key))
}

/// The common kind of the items of `lists` (upstream's `sliceElementType`).
fn element_kind(lists: &[&[Value]]) -> SmpResult<Kind> {
    let mut found: Option<Kind> = None;
    for list in lists {
        for item in list.iter() {
            let kind = kind_of(item);
            match found {
                None => {
                    if kind == Kind::Array {
                        return Err(SmpError::BadPatch(
                            "lists of lists are not supported".to_string(),
                        ));
                    }
                    found = Some(kind);
                }
                Some(previous) if previous != kind => {
                    let rendered: Vec<String> = lists.iter().map(|l| go_fmt_list(l)).collect();
                    return Err(SmpError::BadPatch(format!(
                        "list element types are not identical: [{}]",
                        rendered.join(" ")
                    )));
                }
                Some(_) => {}
            }
        }
    }
    found.ok_or_else(|| SmpError::BadPatch("no elements in any of the given slices".to_string()))
}

/// Remove duplicates (by value), keeping first occurrences.
fn deduplicate(list: Vec<Value>) -> Vec<Value> {
    let mut seen = HashSet::new();
    list.into_iter()
        .filter(|v| seen.insert(scalar_key(v)))
        .collect()
}

fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    let doomed: HashSet<String> = to_delete.iter().map(scalar_key).collect();
    current
        .into_iter()
        .filter(|v| !doomed.contains(&scalar_key(v)))
        .collect()
}

/// Split `list` into (items present in `by`, the others), by value.
fn partition_primitives(list: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    let present: HashSet<String> = by.iter().map(scalar_key).collect();
    list.into_iter()
        .partition(|v| present.contains(&scalar_key(v)))
}

/// Split `list` into (items whose merge key appears in `by`, the others).
fn partition_maps(
    list: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> SmpResult<(Vec<Value>, Vec<Value>)> {
    let mut present = HashSet::new();
    for (i, item) in by.iter().enumerate() {
        if !item.is_object() {
            return Err(SmpError::BadPatch(format!(
                "value for key {i} is not a map"
            )));
        }
        if let Some(key_value) = item.get(merge_key) {
            present.insert(scalar_key(key_value));
        }
    }
    let mut in_patch = Vec::new();
    let mut server_only = Vec::new();
    for item in list {
        let Some(obj) = item.as_object() else {
            return Err(bad_arg_type("map[string]interface {}", &item));
        };
        let Some(key_value) = obj.get(merge_key) else {
            return Err(no_merge_key(obj, merge_key));
        };
        if present.contains(&scalar_key(key_value)) {
            in_patch.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((in_patch, server_only))
}

fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> SmpResult<()> {
    for list in lists {
        for item in list.iter() {
            let Some(obj) = item.as_object() else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            if !obj.contains_key(merge_key) {
                return Err(no_merge_key(obj, merge_key));
            }
        }
    }
    Ok(())
}

/// Sort `patch_items` by `patch_order` and `server_only` by `server_order`,
/// then interleave them keeping the live list's relative order where both
/// items are known to it (upstream's `normalizeElementOrder`).
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> SmpResult<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;

    let server_index = OrderIndex::new(server_order, merge_key, kind);
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (server_index.position(l), server_index.position(r)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Stable-sort `to_sort` by position in `order`; in lists of objects the
/// `$patch: delete` items go last. Items absent from `order` keep their
/// relative order after the others.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> SmpResult<Vec<Value>> {
    let (keep, to_delete) = if kind == Kind::Object {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        to_sort.into_iter().partition(|v: &Value| {
            v.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE)
        })
    } else {
        (to_sort, Vec::new())
    };
    let index = OrderIndex::new(order, merge_key, kind);
    let mut keyed: Vec<(usize, Value)> = keep
        .into_iter()
        .map(|v| (index.position(&v).unwrap_or(usize::MAX), v))
        .collect();
    keyed.sort_by_key(|(position, _)| *position);
    let mut out: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    out.extend(to_delete);
    Ok(out)
}

/// Position (first occurrence) of items in a list, by merge key value for
/// objects and by value otherwise (upstream's `index`).
struct OrderIndex {
    positions: HashMap<String, usize>,
    by_merge_key: bool,
    merge_key: String,
}

impl OrderIndex {
    fn new(list: &[Value], merge_key: &str, kind: Kind) -> Self {
        let by_merge_key = kind == Kind::Object;
        let positions = if by_merge_key {
            first_positions(list, |v| merge_key_of(v, merge_key))
        } else {
            first_positions(list, scalar_key)
        };
        OrderIndex {
            positions,
            by_merge_key,
            merge_key: merge_key.to_string(),
        }
    }

    fn position(&self, item: &Value) -> Option<usize> {
        let key = if self.by_merge_key {
            merge_key_of(item, &self.merge_key)
        } else {
            scalar_key(item)
        };
        self.positions.get(&key).copied()
    }
}

fn first_positions(list: &[Value], key: impl Fn(&Value) -> String) -> HashMap<String, usize> {
    let mut positions = HashMap::with_capacity(list.len());
    for (i, item) in list.iter().enumerate() {
        positions.entry(key(item)).or_insert(i);
    }
    positions
}

/// Comparison key of an item's merge key value; a missing key (or a
/// non-object item) compares like JSON null, as upstream's Go `nil`.
fn merge_key_of(item: &Value, merge_key: &str) -> String {
    match item.as_object().and_then(|obj| obj.get(merge_key)) {
        Some(value) => scalar_key(value),
        None => scalar_key(&Value::Null),
    }
}

/// A string that is equal for equal JSON values, with numbers compared by
/// numeric value (`1`, `1.0` and `1e0` agree).
fn scalar_key(value: &Value) -> String {
    match value {
        Value::Null => "n".to_string(),
        Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                format!("#{i}")
            } else if let Some(u) = n.as_u64() {
                format!("#{u}")
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.0e18 {
                    format!("#{}", f as i64)
                } else {
                    format!("#f{f:e}")
                }
            }
        }
        Value::String(s) => format!("s{s}"),
        Value::Array(_) | Value::Object(_) => format!("j{}", canonical_json(value)),
    }
}

/// Compact JSON with sorted object keys and normalised numbers.
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Array(list) => {
            let items: Vec<String> = list.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(obj) => {
            let mut entries: Vec<(&String, &Value)> = obj.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let items: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        scalar => scalar_key(scalar),
    }
}

fn values_equal(left: &Value, right: &Value) -> bool {
    scalar_key(left) == scalar_key(right)
}

// ---------------------------------------------------------------------------
// Upstream-style error messages (Go `%v` rendering of decoded JSON).

fn no_merge_key(map: &JsonMap, merge_key: &str) -> SmpError {
    SmpError::BadPatch(format!(
        "map: {} does not contain declared merge key: {}",
        go_fmt_map(map),
        merge_key
    ))
}

fn bad_arg_type(expected: &str, actual: &Value) -> SmpError {
    SmpError::BadPatch(format!(
        "expected a {}, but received a {}",
        expected,
        go_type_name(actual)
    ))
}

fn bad_patch_type(directive: &Value, map: &JsonMap) -> SmpError {
    SmpError::BadPatch(format!(
        "unknown patch type: {} in map: {}",
        go_fmt(directive),
        go_fmt_map(map)
    ))
}

fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn go_fmt(value: &Value) -> String {
    let mut out = String::new();
    write_go(value, &mut out, 0);
    out
}

fn go_fmt_map(map: &JsonMap) -> String {
    let mut out = String::new();
    write_go_map(map, &mut out, 0);
    out
}

fn go_fmt_list(list: &[Value]) -> String {
    let mut out = String::new();
    write_go_list(list, &mut out, 0);
    out
}

fn write_go(value: &Value, out: &mut String, depth: usize) {
    if out.len() > MAX_MESSAGE_VALUE_LEN || depth > 16 {
        out.push_str("...");
        return;
    }
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(s),
        Value::Array(list) => write_go_list(list, out, depth),
        Value::Object(map) => write_go_map(map, out, depth),
    }
}

fn write_go_list(list: &[Value], out: &mut String, depth: usize) {
    out.push('[');
    for (i, item) in list.iter().enumerate() {
        if out.len() > MAX_MESSAGE_VALUE_LEN {
            out.push_str("...");
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        write_go(item, out, depth + 1);
    }
    out.push(']');
}

fn write_go_map(map: &JsonMap, out: &mut String, depth: usize) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    out.push_str("map[");
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if out.len() > MAX_MESSAGE_VALUE_LEN {
            out.push_str("...");
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(key);
        out.push(':');
        write_go(value, out, depth + 1);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    //! Upstream cases come from `staging/src/k8s.io/apimachinery/pkg/util/
    //! strategicpatch/patch_test.go`. Every YAML case there describes
    //! `original + twoWay -> modified` (or `twoWayResult`) and
    //! `current + threeWay -> result`; both applications are ported as
    //! separate rows named "<upstream description> (twoWay|threeWay)". Rows
    //! whose input would be identical to an earlier row are not repeated.

    use super::*;
    use serde_json::json;

    /// Models upstream's test struct `MergeItem` / `RetainKeysMergeItem`.
    struct MergeItemSchema;

    fn info(strategies: &[&str], merge_key: Option<&str>, elem: Option<&str>) -> FieldPatchInfo {
        FieldPatchInfo {
            strategies: strategies.iter().map(|s| s.to_string()).collect(),
            merge_key: merge_key.map(str::to_string),
            elem_type: elem.map(str::to_string),
        }
    }

    impl PatchSchema for MergeItemSchema {
        fn field(&self, ty: &str, field: &str) -> Option<FieldPatchInfo> {
            let merge_item = Some("mergeItem");
            match (ty, field) {
                ("mergeItem" | "retainKeysMergeItem", "name" | "value" | "other") => {
                    Some(info(&[], None, None))
                }
                ("mergeItem" | "retainKeysMergeItem", "mergingList") => {
                    Some(info(&["merge"], Some("name"), merge_item))
                }
                ("mergeItem" | "retainKeysMergeItem", "nonMergingList") => {
                    Some(info(&[], None, merge_item))
                }
                ("mergeItem" | "retainKeysMergeItem", "mergingIntList") => {
                    Some(info(&["merge"], None, None))
                }
                ("mergeItem" | "retainKeysMergeItem", "simpleMap") => Some(info(&[], None, None)),
                ("mergeItem", "nonMergingIntList") => Some(info(&[], None, None)),
                ("mergeItem", "mergeItemPtr") => Some(info(&["merge"], Some("name"), merge_item)),
                ("mergeItem", "replacingItem") => Some(info(&["replace"], None, None)),
                ("mergeItem", "retainKeysMap") => {
                    Some(info(&["retainKeys"], None, Some("retainKeysMergeItem")))
                }
                ("mergeItem", "retainKeysMergingList") => {
                    Some(info(&["merge", "retainKeys"], Some("name"), merge_item))
                }
                _ => None,
            }
        }
    }

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("bad test JSON {s}: {e}"))
    }

    fn apply(original: &str, patch: &str) -> Result<Value, SmpError> {
        apply_strategic_merge_patch(
            &parse(original),
            &parse(patch),
            &MergeItemSchema,
            "mergeItem",
        )
    }

    /// (upstream case, original, patch, expected result)
    type Case = (&'static str, &'static str, &'static str, &'static str);

    fn run_cases(cases: &[Case]) {
        let mut failures = Vec::new();
        for (name, original, patch, expected) in cases {
            match apply(original, patch) {
                Ok(got) if got == parse(expected) => {}
                Ok(got) => failures.push(format!(
                    "{name}:\n  original: {original}\n  patch:    {patch}\n  expected: {expected}\n  got:      {got}"
                )),
                Err(e) => failures.push(format!("{name}: unexpected error: {e}")),
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {} cases failed:\n{}",
            failures.len(),
            cases.len(),
            failures.join("\n")
        );
    }

    /// (upstream case, original, patch, expected error substring)
    type ErrCase = (&'static str, &'static str, &'static str, &'static str);

    fn run_error_cases(cases: &[ErrCase]) {
        let mut failures = Vec::new();
        for (name, original, patch, expected) in cases {
            match apply(original, patch) {
                Err(e) if e.to_string().contains(expected) => {}
                other => failures.push(format!(
                    "{name}: expected error containing {expected:?}, got {other:?}"
                )),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    // -----------------------------------------------------------------------
    // customStrategicMergePatchTestCaseData (original + twoWay -> modified)
    const CUSTOM_CASES: &[Case] = &[
        // upstream: customStrategicMergePatchTestCaseData "unique scalars when merging lists"
        (
            "unique scalars when merging lists",
            r#"{"mergingIntList":[1,2]}"#,
            r#"{"mergingIntList":[2,3]}"#,
            r#"{"mergingIntList":[1,2,3]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "delete map from nested map"
        (
            "delete map from nested map",
            r#"{"simpleMap":{"key1":1,"key2":1}}"#,
            r#"{"simpleMap":{"$patch":"delete"}}"#,
            r#"{"simpleMap":{}}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "delete all items from merging list"
        (
            "delete all items from merging list",
            r#"{"mergingList":[{"name":1},{"name":2}]}"#,
            r#"{"mergingList":[{"$patch":"replace"}]}"#,
            r#"{"mergingList":[]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "merge empty merging lists"
        (
            "merge empty merging lists",
            r#"{"mergingList":[]}"#,
            r#"{"mergingList":[]}"#,
            r#"{"mergingList":[]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "delete all keys from map"
        (
            "delete all keys from map",
            r#"{"name":1,"value":1}"#,
            r#"{"$patch":"replace"}"#,
            r#"{}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "add key and delete all keys from map"
        (
            "add key and delete all keys from map",
            r#"{"name":1,"value":1}"#,
            r#"{"other":"a","$patch":"replace"}"#,
            r#"{"other":"a"}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "delete all duplicate entries in a merging list"
        (
            "delete all duplicate entries in a merging list",
            r#"{"mergingList":[{"name":1},{"name":1},{"name":2,"value":"a"},{"name":3},{"name":3}]}"#,
            r#"{"mergingList":[{"name":1,"$patch":"delete"},{"name":3,"$patch":"delete"}]}"#,
            r#"{"mergingList":[{"name":2,"value":"a"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys map can add a field when no retainKeys directive present"
        (
            "retainKeys map can add a field when no retainKeys directive present",
            r#"{"retainKeysMap":{"name":"foo"}}"#,
            r#"{"retainKeysMap":{"value":"bar"}}"#,
            r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys map can change a field when no retainKeys directive present"
        (
            "retainKeys map can change a field when no retainKeys directive present",
            r#"{"retainKeysMap":{"name":"foo","value":"a"}}"#,
            r#"{"retainKeysMap":{"value":"b"}}"#,
            r#"{"retainKeysMap":{"name":"foo","value":"b"}}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys map can delete a field when no retainKeys directive present"
        (
            "retainKeys map can delete a field when no retainKeys directive present",
            r#"{"retainKeysMap":{"name":"foo","value":"a"}}"#,
            r#"{"retainKeysMap":{"value":null}}"#,
            r#"{"retainKeysMap":{"name":"foo"}}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys map merge an empty map"
        (
            "retainKeys map merge an empty map",
            r#"{"retainKeysMap":{"name":"foo","value":"a"}}"#,
            r#"{"retainKeysMap":{}}"#,
            r#"{"retainKeysMap":{"name":"foo","value":"a"}}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys list can add a field when no retainKeys directive present"
        (
            "retainKeys list can add a field when no retainKeys directive present",
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo"}]}"#,
            r#"{"retainKeysMergingList":[{"name":"foo","value":"a"}]}"#,
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys list can change a field when no retainKeys directive present"
        (
            "retainKeys list can change a field when no retainKeys directive present",
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#,
            r#"{"retainKeysMergingList":[{"name":"foo","value":"b"}]}"#,
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"b"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "retainKeys list can delete a field when no retainKeys directive present"
        (
            "retainKeys list can delete a field when no retainKeys directive present",
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#,
            r#"{"retainKeysMergingList":[{"name":"foo","value":null}]}"#,
            r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "preserve the order from the patch in a merging list"
        (
            "preserve the order from the patch in a merging list",
            r#"{"mergingList":[{"name":1},{"name":2,"value":"b"},{"name":3}]}"#,
            r#"{"mergingList":[{"name":3,"value":"c"},{"name":1,"value":"a"},{"name":2,"other":"x"}]}"#,
            r#"{"mergingList":[{"name":3,"value":"c"},{"name":1,"value":"a"},{"name":2,"value":"b","other":"x"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "preserve the order from the patch in a merging list 2"
        (
            "preserve the order from the patch in a merging list 2",
            r#"{"mergingList":[{"name":1},{"name":2,"value":"b"},{"name":3}]}"#,
            r#"{"mergingList":[{"name":3,"value":"c"},{"name":1,"value":"a"}]}"#,
            r#"{"mergingList":[{"name":2,"value":"b"},{"name":3,"value":"c"},{"name":1,"value":"a"}]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "preserve the order from the patch in a merging int list" (1st)
        (
            "preserve the order from the patch in a merging int list (1)",
            r#"{"mergingIntList":[1,2,3]}"#,
            r#"{"mergingIntList":[3,1,2]}"#,
            r#"{"mergingIntList":[3,1,2]}"#,
        ),
        // upstream: customStrategicMergePatchTestCaseData "preserve the order from the patch in a merging int list" (2nd)
        (
            "preserve the order from the patch in a merging int list (2)",
            r#"{"mergingIntList":[1,2,3]}"#,
            r#"{"mergingIntList":[3,1]}"#,
            r#"{"mergingIntList":[2,3,1]}"#,
        ),
    ];

    // customStrategicMergePatchRawTestCases (original + twoWay -> modified)
    const CUSTOM_RAW_CASES: &[Case] = &[
        // upstream: customStrategicMergePatchRawTestCases "$setElementOrder contains item that is not present in the list to be merged"
        ("$setElementOrder contains item that is not present in the list to be merged",
         r#"{"mergingList":[{"name":1},{"name":3}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":3},{"name":2},{"name":1}],"mergingList":[{"name":3,"value":3},{"name":1,"value":1}]}"#,
         r#"{"mergingList":[{"name":3,"value":3},{"name":1,"value":1}]}"#),
        // upstream: customStrategicMergePatchRawTestCases "$setElementOrder contains item that is not present in the int list to be merged"
        ("$setElementOrder contains item that is not present in the int list to be merged",
         r#"{"mergingIntList":[1,3]}"#, r#"{"$setElementOrder/mergingIntList":[3,2,1]}"#, r#"{"mergingIntList":[3,1]}"#),
        // upstream: customStrategicMergePatchRawTestCases "$deleteFromPrimitiveList of nonexistent item in primitive list should not add the item to the list"
        ("$deleteFromPrimitiveList of nonexistent item in primitive list should not add the item to the list",
         r#"{"mergingIntList":[1,2]}"#, r#"{"$deleteFromPrimitiveList/mergingIntList":[3]}"#, r#"{"mergingIntList":[1,2]}"#),
        // upstream: customStrategicMergePatchRawTestCases "$deleteFromPrimitiveList on empty primitive list should not add the item to the list"
        ("$deleteFromPrimitiveList on empty primitive list should not add the item to the list",
         r#"{"mergingIntList":null}"#, r#"{"$deleteFromPrimitiveList/mergingIntList":[3]}"#, r#"{"mergingIntList":null}"#),
        // upstream: customStrategicMergePatchRawTestCases "$deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list"
        ("$deleteFromPrimitiveList on nonexistent primitive list should not add the primitive list",
         r#"{"foo":["bar"]}"#, r#"{"$deleteFromPrimitiveList/mergingIntList":[3]}"#, r#"{"foo":["bar"]}"#),
        // upstream: customStrategicMergePatchRawTestCases "$deleteFromPrimitiveList should delete item from a list with merge patch strategy"
        ("$deleteFromPrimitiveList should delete item from a list with merge patch strategy",
         r#"{"mergingIntList":[1,2,3]}"#, r#"{"$deleteFromPrimitiveList/mergingIntList":[2]}"#, r#"{"mergingIntList":[1,3]}"#),
        // upstream: customStrategicMergePatchRawTestCases "$deleteFromPrimitiveList should delete item from a list without merge patch strategy"
        ("$deleteFromPrimitiveList should delete item from a list without merge patch strategy",
         r#"{"nonMergingIntList":[1,2,3]}"#, r#"{"$deleteFromPrimitiveList/nonMergingIntList":[2]}"#, r#"{"nonMergingIntList":[1,3]}"#),
    ];

    // customStrategicMergePatchRawTestCases with ExpectedError
    const CUSTOM_RAW_ERROR_CASES: &[ErrCase] = &[
        // upstream: customStrategicMergePatchRawTestCases "should check if order in $setElementOrder and patch list match"
        ("should check if order in $setElementOrder and patch list match",
         r#"{"mergingList":[{"name":1},{"name":3},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":3,"value":3},{"name":1,"value":1}]}"#,
         "doesn't match"),
        // upstream: customStrategicMergePatchRawTestCases "$setElementOrder contains item that is not present in the int list to be merged" (ExpectedError variant)
        ("$setElementOrder contains item that is not present in the int list to be merged (error)",
         r#"{"mergingIntList":[1,3,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2,3],"mergingIntList":[3,1]}"#,
         "doesn't match"),
        // upstream: customStrategicMergePatchRawTestCases "missing merge key should error out"
        ("missing merge key should error out",
         r#"{"mergingList":[{"name":1,"value":"a"}]}"#, r#"{"mergingList":[{"value":"b"}]}"#,
         "does not contain declared merge key"),
    ];

    // createStrategicMergePatchTestCaseData (twoWay: original + twoWay -> twoWayResult/modified;
    // threeWay: current + threeWay -> result)
    const CREATE_CASES: &[Case] = &[
        // upstream: createStrategicMergePatchTestCaseData "nil original"
        ("nil original (twoWay)", r#"{}"#, r#"{"name":1,"value":1}"#, r#"{"name":1,"value":1}"#),
        ("nil original (threeWay)", r#"{"name":1,"other":"a"}"#, r#"{"value":1}"#, r#"{"name":1,"value":1,"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "nil patch"
        ("nil patch (twoWay)", r#"{"name":1}"#, r#"{}"#, r#"{"name":1}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field to map"
        ("add field to map (twoWay)", r#"{"name":1}"#, r#"{"value":1}"#, r#"{"name":1,"value":1}"#),
        ("add field to map (threeWay)", r#"{"name":1,"other":"a"}"#, r#"{"value":1}"#, r#"{"name":1,"value":1,"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field to map with conflict"
        ("add field to map with conflict (threeWay)", r#"{"name":"a","other":"a"}"#, r#"{"name":1,"value":1}"#,
         r#"{"name":1,"value":1,"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field and delete field from map"
        ("add field and delete field from map (twoWay)", r#"{"name":1}"#, r#"{"name":null,"value":1}"#, r#"{"value":1}"#),
        ("add field and delete field from map (threeWay)", r#"{"name":1,"other":"a"}"#, r#"{"name":null,"value":1}"#,
         r#"{"value":1,"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field and delete field from map with conflict"
        ("add field and delete field from map with conflict (threeWay)", r#"{"name":"a","other":"a"}"#,
         r#"{"name":null,"value":1}"#, r#"{"value":1,"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete field from nested map"
        ("delete field from nested map (twoWay)", r#"{"simpleMap":{"key1":1,"key2":1}}"#,
         r#"{"simpleMap":{"key2":null}}"#, r#"{"simpleMap":{"key1":1}}"#),
        ("delete field from nested map (threeWay)", r#"{"simpleMap":{"key1":1,"key2":1,"other":"a"}}"#,
         r#"{"simpleMap":{"key2":null}}"#, r#"{"simpleMap":{"key1":1,"other":"a"}}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete field from nested map with conflict"
        ("delete field from nested map with conflict (threeWay)", r#"{"simpleMap":{"key1":"a","key2":1,"other":"a"}}"#,
         r#"{"simpleMap":{"key1":1,"key2":null}}"#, r#"{"simpleMap":{"key1":1,"other":"a"}}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete all fields from map"
        ("delete all fields from map (twoWay)", r#"{"name":1,"value":1}"#, r#"{"name":null,"value":null}"#, r#"{}"#),
        ("delete all fields from map (threeWay)", r#"{"name":1,"value":1,"other":"a"}"#, r#"{"name":null,"value":null}"#,
         r#"{"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete all fields from map with conflict"
        ("delete all fields from map with conflict (threeWay)", r#"{"name":1,"value":"a","other":"a"}"#,
         r#"{"name":null,"value":null}"#, r#"{"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field and delete all fields from map"
        ("add field and delete all fields from map (twoWay)", r#"{"name":1,"value":1}"#,
         r#"{"name":null,"value":null,"other":"a"}"#, r#"{"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "add field and delete all fields from map with conflict"
        ("add field and delete all fields from map with conflict (threeWay)", r#"{"name":1,"value":1,"other":"b"}"#,
         r#"{"name":null,"value":null,"other":"a"}"#, r#"{"other":"a"}"#),
        // upstream: createStrategicMergePatchTestCaseData "replace list of scalars"
        ("replace list of scalars (twoWay)", r#"{"nonMergingIntList":[1,2]}"#, r#"{"nonMergingIntList":[2,3]}"#,
         r#"{"nonMergingIntList":[2,3]}"#),
        // upstream: createStrategicMergePatchTestCaseData "replace list of scalars with conflict"
        ("replace list of scalars with conflict (threeWay)", r#"{"nonMergingIntList":[1,4]}"#,
         r#"{"nonMergingIntList":[2,3]}"#, r#"{"nonMergingIntList":[2,3]}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete all maps from merging list"
        ("delete all maps from merging list (twoWay)", r#"{"mergingList":[{"name":1},{"name":2}]}"#,
         r#"{"mergingList":[{"name":1,"$patch":"delete"},{"name":2,"$patch":"delete"}]}"#, r#"{"mergingList":[]}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete all maps from merging list with conflict"
        ("delete all maps from merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"other":"b"}]}"#,
         r#"{"mergingList":[{"name":1,"$patch":"delete"},{"name":2,"$patch":"delete"}]}"#, r#"{"mergingList":[]}"#),
        // upstream: createStrategicMergePatchTestCaseData "delete all maps from empty merging list"
        ("delete all maps from empty merging list (threeWay)", r#"{"mergingList":[]}"#,
         r#"{"mergingList":[{"name":1,"$patch":"delete"},{"name":2,"$patch":"delete"}]}"#, r#"{"mergingList":[]}"#),
        // upstream: createStrategicMergePatchTestCaseData "merge empty merging lists"
        ("merge empty merging lists (twoWay)", r#"{"mergingList":[]}"#, r#"{}"#, r#"{"mergingList":[]}"#),
        // upstream: createStrategicMergePatchTestCaseData "defined null values should propagate overwrite current fields (with conflict)"
        ("defined null values should propagate overwrite current fields (with conflict) (twoWay)",
         r#"{"name":2}"#, r#"{"name":1,"value":1,"other":null}"#, r#"{"name":1,"value":1}"#),
        ("defined null values should propagate overwrite current fields (with conflict) (threeWay)",
         r#"{"name":"a","other":"a"}"#, r#"{"name":1,"value":1,"other":null}"#, r#"{"name":1,"value":1}"#),
        // upstream: createStrategicMergePatchTestCaseData "defined null values should propagate removing original fields"
        ("defined null values should propagate removing original fields (twoWay)",
         r#"{"name":"original-name","value":"original-value"}"#, r#"{"name":"modified-name","value":null}"#,
         r#"{"name":"modified-name"}"#),
        ("defined null values should propagate removing original fields (threeWay)",
         r#"{"name":"original-name","value":"original-value","other":"current-other"}"#,
         r#"{"name":"modified-name","value":null}"#, r#"{"name":"modified-name","other":"current-other"}"#),
        // upstream: createStrategicMergePatchTestCaseData "nil patch with retainKeys map"
        ("nil patch with retainKeys map (threeWay)", r#"{"name":"a","value":"b","retainKeysMap":{"name":"foo"}}"#,
         r#"{}"#, r#"{"name":"a","value":"b","retainKeysMap":{"name":"foo"}}"#),
        // upstream: createStrategicMergePatchTestCaseData "retainKeys map with no change should not be present"
        ("retainKeys map with no change should not be present (twoWay)", r#"{"name":"a","retainKeysMap":{"name":"foo"}}"#,
         r#"{"value":"b"}"#, r#"{"name":"a","value":"b","retainKeysMap":{"name":"foo"}}"#),
        ("retainKeys map with no change should not be present (threeWay)",
         r#"{"name":"a","other":"c","retainKeysMap":{"name":"foo"}}"#,
         r#"{"value":"b"}"#, r#"{"name":"a","value":"b","other":"c","retainKeysMap":{"name":"foo"}}"#),
    ];

    // strategicMergePatchRawTestCases
    const RAW_CASES: &[Case] = &[
        // upstream: strategicMergePatchRawTestCases "delete items in lists of scalars"
        ("delete items in lists of scalars (twoWay)", r#"{"mergingIntList":[1,2,3]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[1,2]}"#),
        ("delete items in lists of scalars (threeWay)", r#"{"mergingIntList":[1,2,3,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[1,2,4]}"#),
        // upstream: strategicMergePatchRawTestCases "delete all duplicate items in lists of scalars"
        ("delete all duplicate items in lists of scalars (twoWay)", r#"{"mergingIntList":[1,2,3,3]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[1,2]}"#),
        ("delete all duplicate items in lists of scalars (threeWay)", r#"{"mergingIntList":[1,2,3,3,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[1,2,4]}"#),
        // upstream: strategicMergePatchRawTestCases "add and delete items in lists of scalars"
        ("add and delete items in lists of scalars (twoWay)", r#"{"mergingIntList":[1,2,3]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2,4],"$deleteFromPrimitiveList/mergingIntList":[3],"mergingIntList":[4]}"#,
         r#"{"mergingIntList":[1,2,4]}"#),
        ("add and delete items in lists of scalars (threeWay)", r#"{"mergingIntList":[1,2,3,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2,4],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[1,2,4]}"#),
        // upstream: strategicMergePatchRawTestCases "merge lists of maps"
        ("merge lists of maps (twoWay)", r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":4,"value":4},{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":1},{"name":2,"value":2},{"name":3,"value":3}]}"#),
        ("merge lists of maps (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":4,"value":4},{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "merge lists of maps with conflict"
        ("merge lists of maps with conflict (twoWay)", r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":1},{"name":2,"value":2},{"name":3,"value":3}]}"#),
        ("merge lists of maps with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":3,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":2,"value":2},{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list"
        ("add field to map in merging list (twoWay)", r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":1}]}"#,
         r#"{"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]}"#),
        ("add field to map in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":1}]}"#,
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list with conflict"
        ("add field to map in merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":3,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]}"#,
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2},{"name":3,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add duplicate field to map in merging list"
        ("add duplicate field to map in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#, r#"{}"#,
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add an item that already exists in current object in merging list"
        ("add an item that already exists in current object in merging list (twoWay)",
         r#"{"mergingList":[{"name":1,"value":"a"},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2},{"name":3}],"mergingList":[{"name":3}]}"#,
         r#"{"mergingList":[{"name":1,"value":"a"},{"name":2},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add duplicate field to map in merging list with conflict"
        ("add duplicate field to map in merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":3,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":2,"value":2}]}"#,
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "replace map field value in merging list"
        ("replace map field value in merging list (twoWay)", r#"{"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":"a"}]}"#,
         r#"{"mergingList":[{"name":1,"value":"a"},{"name":2,"value":2}]}"#),
        ("replace map field value in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":"a"}]}"#,
         r#"{"mergingList":[{"name":1,"value":"a","other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "replace map field value in merging list with conflict"
        ("replace map field value in merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"value":3,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":"a"}]}"#,
         r#"{"mergingList":[{"name":1,"value":"a","other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete map from merging list"
        ("delete map from merging list (twoWay)", r#"{"mergingList":[{"name":1},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2}],"mergingList":[{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2}]}"#),
        ("delete map from merging list (threeWay)", r#"{"mergingList":[{"name":1},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2}],"mergingList":[{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete map from merging list with conflict"
        ("delete map from merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2}],"mergingList":[{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete missing map from merging list"
        ("delete missing map from merging list (threeWay)", r#"{"mergingList":[{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2}],"mergingList":[{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete missing map from merging list with conflict"
        ("delete missing map from merging list with conflict (threeWay)", r#"{"mergingList":[{"name":3,"other":"a"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2}],"mergingList":[{"name":2},{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2},{"name":3,"other":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add map and delete map from merging list"
        ("add map and delete map from merging list (twoWay)", r#"{"mergingList":[{"name":1},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":3}],"mergingList":[{"name":3},{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2},{"name":3}]}"#),
        ("add map and delete map from merging list (threeWay)",
         r#"{"mergingList":[{"name":1},{"name":2,"other":"b"},{"name":4,"other":"c"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":3}],"mergingList":[{"name":3},{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"other":"b"},{"name":4,"other":"c"},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add map and delete map from merging list with conflict"
        ("add map and delete map from merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":4,"other":"c"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":3}],"mergingList":[{"name":2},{"name":3},{"name":1,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":4,"other":"c"},{"name":2},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete field from map in merging list"
        ("delete field from map in merging list (twoWay)", r#"{"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":null}]}"#,
         r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#),
        ("delete field from map in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":null}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete field from map in merging list with conflict"
        ("delete field from map in merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"value":"a","other":"a"},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":null}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete missing field from map in merging list"
        ("delete missing field from map in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":null}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete missing field from map in merging list with conflict"
        ("delete missing field from map in merging list with conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"value":null},{"name":2,"value":2}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "replace non merging list nested in merging list"
        ("replace non merging list nested in merging list (twoWay)",
         r#"{"mergingList":[{"name":1,"nonMergingList":[{"name":1},{"name":2,"value":2}]},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"nonMergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"nonMergingList":[{"name":1,"value":1}]},{"name":2}]}"#),
        ("replace non merging list nested in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":1},{"name":2,"value":2}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"nonMergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":1,"value":1}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "replace non merging list nested in merging list with value conflict"
        ("replace non merging list nested in merging list with value conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":1,"value":"c"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"nonMergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":1,"value":1}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "replace non merging list nested in merging list with deletion conflict"
        ("replace non merging list nested in merging list with deletion conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":2,"value":2}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":1,"nonMergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","nonMergingList":[{"name":1,"value":1}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list nested in merging list"
        ("add field to map in merging list nested in merging list (twoWay)",
         r#"{"mergingList":[{"name":1,"mergingList":[{"name":1},{"name":2,"value":2}]},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"name":1,"mergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]},{"name":2}]}"#),
        ("add field to map in merging list nested in merging list (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":1},{"name":2,"value":2}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"name":1,"mergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":1,"value":1},{"name":2,"value":2}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list nested in merging list with value conflict"
        ("add field to map in merging list nested in merging list with value conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":1,"value":"a","other":"c"},{"name":2,"value":"b","other":"d"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"name":1,"mergingList":[{"name":1,"value":1},{"name":2,"value":2}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":1,"value":1,"other":"c"},{"name":2,"value":2,"other":"d"}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list nested in merging list with deletion conflict" (1st)
        ("add field to map in merging list nested in merging list with deletion conflict (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":2,"value":2,"other":"d"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"name":1,"mergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":1,"value":1},{"name":2,"value":2,"other":"d"}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list nested in merging list with deletion conflict" (2nd, reordering)
        ("add field to map in merging list nested in merging list with deletion conflict, reordered (twoWay)",
         r#"{"mergingList":[{"name":1,"mergingList":[{"name":1},{"name":2,"value":2}]},{"name":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":2},{"name":1}],"name":1,"mergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"mergingList":[{"name":2,"value":2},{"name":1,"value":1}]},{"name":2}]}"#),
        ("add field to map in merging list nested in merging list with deletion conflict, reordered (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":2,"value":2,"other":"d"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"$setElementOrder/mergingList":[{"name":2},{"name":1}],"name":1,"mergingList":[{"name":1,"value":1}]}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a","mergingList":[{"name":2,"value":2,"other":"d"},{"name":1,"value":1}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add map to merging list by pointer"
        ("add map to merging list by pointer (twoWay)", r#"{"mergeItemPtr":[{"name":1}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"name":2}]}"#,
         r#"{"mergeItemPtr":[{"name":1},{"name":2}]}"#),
        ("add map to merging list by pointer (threeWay)", r#"{"mergeItemPtr":[{"name":1,"other":"a"},{"name":3}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"name":2}]}"#,
         r#"{"mergeItemPtr":[{"name":1,"other":"a"},{"name":2},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add map to merging list by pointer with conflict"
        ("add map to merging list by pointer with conflict (threeWay)", r#"{"mergeItemPtr":[{"name":3}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"name":1},{"name":2}]}"#,
         r#"{"mergeItemPtr":[{"name":1},{"name":2},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list by pointer"
        ("add field to map in merging list by pointer (twoWay)",
         r#"{"mergeItemPtr":[{"name":1,"mergeItemPtr":[{"name":1},{"name":2,"value":2}]},{"name":2}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"name":1,"mergeItemPtr":[{"name":1,"value":1}]}]}"#,
         r#"{"mergeItemPtr":[{"name":1,"mergeItemPtr":[{"name":1,"value":1},{"name":2,"value":2}]},{"name":2}]}"#),
        ("add field to map in merging list by pointer (threeWay)",
         r#"{"mergeItemPtr":[{"name":1,"other":"a","mergeItemPtr":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"name":1,"mergeItemPtr":[{"name":1,"value":1}]}]}"#,
         r#"{"mergeItemPtr":[{"name":1,"other":"a","mergeItemPtr":[{"name":1,"value":1,"other":"a"},{"name":2,"value":2,"other":"b"}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add field to map in merging list by pointer with conflict"
        ("add field to map in merging list by pointer with conflict (threeWay)",
         r#"{"mergeItemPtr":[{"name":1,"other":"a","mergeItemPtr":[{"name":1,"value":"a"},{"name":2,"value":2,"other":"b"}]},{"name":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"mergeItemPtr":[{"$setElementOrder/mergeItemPtr":[{"name":1},{"name":2}],"name":1,"mergeItemPtr":[{"name":1,"value":1}]}]}"#,
         r#"{"mergeItemPtr":[{"name":1,"other":"a","mergeItemPtr":[{"name":1,"value":1},{"name":2,"value":2,"other":"b"}]},{"name":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "merge lists of scalars"
        ("merge lists of scalars (twoWay)", r#"{"mergingIntList":[1,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2,3],"mergingIntList":[3]}"#, r#"{"mergingIntList":[1,2,3]}"#),
        ("merge lists of scalars (threeWay)", r#"{"mergingIntList":[1,2,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,2,3],"mergingIntList":[3]}"#, r#"{"mergingIntList":[1,2,3,4]}"#),
        // upstream: strategicMergePatchRawTestCases "add duplicate field to map in merging int list"
        ("add duplicate field to map in merging int list (threeWay)", r#"{"mergingIntList":[1,2,3]}"#, r#"{}"#,
         r#"{"mergingIntList":[1,2,3]}"#),
        // upstream: strategicMergePatchRawTestCases "add an item in a list of primitives and preserve order"
        ("add an item in a list of primitives and preserve order (twoWay)", r#"{"mergingIntList":[1,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[3,1,2],"mergingIntList":[3]}"#, r#"{"mergingIntList":[3,1,2]}"#),
        ("add an item in a list of primitives and preserve order (threeWay)", r#"{"mergingIntList":[1,4,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[3,1,2],"mergingIntList":[3]}"#, r#"{"mergingIntList":[3,1,4,2]}"#),
        // upstream: strategicMergePatchRawTestCases "delete an item in a list of primitives and preserve order"
        ("delete an item in a list of primitives and preserve order (twoWay)", r#"{"mergingIntList":[1,2,3]}"#,
         r#"{"$setElementOrder/mergingIntList":[2,1],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[2,1]}"#),
        // upstream: strategicMergePatchRawTestCases "add an item in a list and preserve order"
        ("add an item in a list and preserve order (twoWay)", r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":3},{"name":1},{"name":2}],"mergingList":[{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":3,"value":3},{"name":1},{"name":2,"value":2}]}"#),
        ("add an item in a list and preserve order (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":3},{"name":1},{"name":2}],"mergingList":[{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":3,"value":3},{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add multiple items in a list and preserve order"
        ("add multiple items in a list and preserve order (twoWay)", r#"{"mergingList":[{"name":1},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":4},{"name":2},{"name":3}],"mergingList":[{"name":4,"value":4},{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":1},{"name":4,"value":4},{"name":2,"value":2},{"name":3,"value":3}]}"#),
        ("add multiple items in a list and preserve order (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":1},{"name":4},{"name":2},{"name":3}],"mergingList":[{"name":4,"value":4},{"name":3,"value":3}]}"#,
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":4,"value":4},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete an item in a list and preserve order"
        ("delete an item in a list and preserve order (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":3,"value":3},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1}],"mergingList":[{"name":3,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"value":2},{"name":1}]}"#),
        ("delete an item in a list and preserve order (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1}],"mergingList":[{"name":3,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":2,"value":2,"other":"b"},{"name":1,"other":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "change an item in a list and preserve order"
        ("change an item in a list and preserve order (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":3,"value":3},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":3},{"name":1}],"mergingList":[{"name":3,"value":"x"}]}"#,
         r#"{"mergingList":[{"name":2,"value":2},{"name":3,"value":"x"},{"name":1}]}"#),
        ("change an item in a list and preserve order (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":3},{"name":1}],"mergingList":[{"name":3,"value":"x"}]}"#,
         r#"{"mergingList":[{"name":2,"value":2,"other":"b"},{"name":3,"value":"x"},{"name":1,"other":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "add and delete an item in a list and preserve order"
        ("add and delete an item in a list and preserve order (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":3,"value":3},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":1}],"mergingList":[{"name":4,"value":4},{"name":3,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":2,"value":2},{"name":1}]}"#),
        ("add and delete an item in a list and preserve order (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"},{"name":3,"value":3}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":1}],"mergingList":[{"name":4,"value":4},{"name":3,"$patch":"delete"}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":2,"value":2,"other":"b"},{"name":1,"other":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a list"
        ("set elements order in a list (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":3,"value":3},{"name":4,"value":4},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":3},{"name":1}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":2,"value":2},{"name":3,"value":3},{"name":1}]}"#),
        ("set elements order in a list (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":3,"value":3},{"name":4,"value":4},{"name":2,"value":2}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":3},{"name":1}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":2,"value":2},{"name":3,"value":3},{"name":1,"other":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a list with server-only items"
        ("set elements order in a list with server-only items (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":3,"value":3},{"name":4,"value":4},{"name":2,"value":2},{"name":9}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":3},{"name":1}]}"#,
         r#"{"mergingList":[{"name":4,"value":4},{"name":2,"value":2},{"name":3,"value":3},{"name":1,"other":"a"},{"name":9}]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a list with server-only items 2"
        ("set elements order in a list with server-only items 2 (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":2,"value":2},{"name":3,"value":3},{"name":4,"value":4}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},{"name":3}]}"#,
         r#"{"mergingList":[{"name":2,"value":2},{"name":1},{"name":4,"value":4},{"name":3,"value":3}]}"#),
        ("set elements order in a list with server-only items 2 (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2},{"name":9},{"name":3,"value":3},{"name":4,"value":4}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},{"name":3}]}"#,
         r#"{"mergingList":[{"name":2,"value":2},{"name":1,"other":"a"},{"name":9},{"name":4,"value":4},{"name":3,"value":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a list with server-only items 3"
        ("set elements order in a list with server-only items 3 (threeWay)",
         r#"{"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2},{"name":7},{"name":9},{"name":8},{"name":3,"value":3},{"name":4,"value":4}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},{"name":3}]}"#,
         r#"{"mergingList":[{"name":2,"value":2},{"name":1,"other":"a"},{"name":7},{"name":9},{"name":8},{"name":4,"value":4},{"name":3,"value":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "add an item in a int list and preserve order"
        ("add an item in a int list and preserve order (threeWay)", r#"{"mergingIntList":[1,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[3,1,2],"mergingIntList":[3]}"#, r#"{"mergingIntList":[3,1,2]}"#),
        // upstream: strategicMergePatchRawTestCases "add multiple items in a int list and preserve order"
        ("add multiple items in a int list and preserve order (twoWay)", r#"{"mergingIntList":[1,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[1,4,2,3],"mergingIntList":[4,3]}"#, r#"{"mergingIntList":[1,4,2,3]}"#),
        // upstream: strategicMergePatchRawTestCases "delete an item in a int list and preserve order"
        ("delete an item in a int list and preserve order (twoWay)", r#"{"mergingIntList":[1,3,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[2,1],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[2,1]}"#),
        // upstream: strategicMergePatchRawTestCases "add and delete an item in a int list and preserve order"
        ("add and delete an item in a int list and preserve order (twoWay)", r#"{"mergingIntList":[1,3,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[4,2,1],"mergingIntList":[4],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[4,2,1]}"#),
        ("add and delete an item in a int list and preserve order (threeWay)", r#"{"mergingIntList":[1,2,3]}"#,
         r#"{"$setElementOrder/mergingIntList":[4,2,1],"mergingIntList":[4],"$deleteFromPrimitiveList/mergingIntList":[3]}"#,
         r#"{"mergingIntList":[4,2,1]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a int list"
        ("set elements order in a int list (twoWay)", r#"{"mergingIntList":[1,3,4,2]}"#,
         r#"{"$setElementOrder/mergingIntList":[4,2,3,1]}"#, r#"{"mergingIntList":[4,2,3,1]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a int list with server-only items"
        ("set elements order in a int list with server-only items (threeWay)", r#"{"mergingIntList":[1,3,4,2,9]}"#,
         r#"{"$setElementOrder/mergingIntList":[4,2,3,1]}"#, r#"{"mergingIntList":[4,2,3,1,9]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a int list with server-only items 2"
        ("set elements order in a int list with server-only items 2 (threeWay)", r#"{"mergingIntList":[1,2,9,3,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[2,1,4,3]}"#, r#"{"mergingIntList":[2,1,9,4,3]}"#),
        // upstream: strategicMergePatchRawTestCases "set elements order in a int list with server-only items 3"
        ("set elements order in a int list with server-only items 3 (threeWay)", r#"{"mergingIntList":[1,2,7,9,8,3,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[2,1,4,3]}"#, r#"{"mergingIntList":[2,1,7,9,8,4,3]}"#),
        // upstream: strategicMergePatchRawTestCases "behavior of set element order for a merging list with duplicate"
        ("behavior of set element order for a merging list with duplicate (twoWay)",
         r#"{"mergingList":[{"name":1},{"name":2,"value":"dup1"},{"name":3},{"name":2,"value":"dup2"},{"name":4}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},{"name":3},{"name":2}]}"#,
         r#"{"mergingList":[{"name":2,"value":"dup1"},{"name":2,"value":"dup2"},{"name":1},{"name":4},{"name":3}]}"#),
        // upstream: strategicMergePatchRawTestCases "behavior of set element order for a merging int list with duplicate"
        ("behavior of set element order for a merging int list with duplicate (twoWay)", r#"{"mergingIntList":[1,2,3,2,4]}"#,
         r#"{"$setElementOrder/mergingIntList":[2,1,4,3,2]}"#, r#"{"mergingIntList":[2,2,1,4,3]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map should clear defaulted field"
        ("retainKeys map should clear defaulted field (twoWay)", r#"{}"#, r#"{"retainKeysMap":{"other":"bar"}}"#,
         r#"{"retainKeysMap":{"other":"bar"}}"#),
        ("retainKeys map should clear defaulted field (threeWay)", r#"{"retainKeysMap":{"value":"foo"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["other"],"other":"bar"}}"#, r#"{"retainKeysMap":{"other":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map should clear defaulted field with conflict (discriminated union)"
        ("retainKeys map should clear defaulted field with conflict (discriminated union) (threeWay)",
         r#"{"retainKeysMap":{"name":"type1","value":"foo"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","other"],"name":"type2","other":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"type2","other":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds a field"
        ("retainKeys map adds a field (twoWay)", r#"{"retainKeysMap":{"name":"foo"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds a field and clear a field"
        ("retainKeys map adds a field and clear a field (threeWay)", r#"{"retainKeysMap":{"name":"foo","other":"a"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes a field"
        ("retainKeys map deletes a field (twoWay)", r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name"],"value":null}}"#, r#"{"retainKeysMap":{"name":"foo"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes a field and clears a field"
        ("retainKeys map deletes a field and clears a field (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","other":"a"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name"],"value":null}}"#, r#"{"retainKeysMap":{"name":"foo"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map clears a field"
        ("retainKeys map clears a field (threeWay)", r#"{"retainKeysMap":{"name":"foo","value":"bar","other":"a"}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"]}}"#, r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map nested map with no change"
        ("retainKeys map nested map with no change (twoWay)", r#"{"retainKeysMap":{"name":"foo","simpleMap":{"key1":"a"}}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","simpleMap","value"],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a"}}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds a field in a nested map"
        ("retainKeys map adds a field in a nested map (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a","key3":"c"}}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","simpleMap","value"],"simpleMap":{"key2":"b"}}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a","key2":"b","key3":"c"}}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes a field in a nested map"
        ("retainKeys map deletes a field in a nested map (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a","key2":"b","key3":"c"}}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","simpleMap","value"],"simpleMap":{"key2":null}}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a","key3":"c"}}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map changes a field in a nested map"
        ("retainKeys map changes a field in a nested map (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"a","key2":"b","key3":"c"}}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","simpleMap","value"],"simpleMap":{"key1":"x"}}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"x","key2":"b","key3":"c"}}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map changes a field in a nested map with conflict"
        ("retainKeys map changes a field in a nested map with conflict (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"new","key2":"b","key3":"c"}}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","simpleMap","value"],"simpleMap":{"key1":"modified"}}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","simpleMap":{"key1":"modified","key2":"b","key3":"c"}}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map replaces non-merging list"
        ("retainKeys map replaces non-merging list (twoWay)",
         r#"{"retainKeysMap":{"name":"foo","value":"bar","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","nonMergingList","value"],"nonMergingList":[{"name":"a"},{"name":"c"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","nonMergingList":[{"name":"a"},{"name":"c"},{"name":"b"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map nested non-merging list with no change"
        ("retainKeys map nested non-merging list with no change (twoWay)",
         r#"{"retainKeysMap":{"name":"foo","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","nonMergingList","value"],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map nested non-merging list with no change with conflict"
        ("retainKeys map nested non-merging list with no change with conflict (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","nonMergingList":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","nonMergingList","value"],"value":"bar","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes nested non-merging list"
        ("retainKeys map deletes nested non-merging list (twoWay)",
         r#"{"retainKeysMap":{"name":"foo","nonMergingList":[{"name":"a"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"],"value":"bar","nonMergingList":null}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map delete nested non-merging list with conflict"
        ("retainKeys map delete nested non-merging list with conflict (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","nonMergingList":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"],"value":"bar","nonMergingList":null}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map nested merging int list with no change"
        ("retainKeys map nested merging int list with no change (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,3]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingIntList","name","value"],"$setElementOrder/mergingIntList":[1,2],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","mergingIntList":[1,2,3]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds an item in nested merging int list"
        ("retainKeys map adds an item in nested merging int list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,3]}}"#,
         r#"{"retainKeysMap":{"$setElementOrder/mergingIntList":[1,2,4],"$retainKeys":["mergingIntList","name"],"mergingIntList":[4]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,4,3]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes an item in nested merging int list"
        ("retainKeys map deletes an item in nested merging int list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,3,4]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingIntList","name"],"$deleteFromPrimitiveList/mergingIntList":[2],"$setElementOrder/mergingIntList":[1,3]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,3,4]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds an item and deletes an item in nested merging int list"
        ("retainKeys map adds an item and deletes an item in nested merging int list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,3,4]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingIntList","name"],"mergingIntList":[5],"$deleteFromPrimitiveList/mergingIntList":[2],"$setElementOrder/mergingIntList":[1,3,5]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,3,5,4]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes nested merging int list"
        ("retainKeys map deletes nested merging int list (twoWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingIntList":[1,2,3]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name"],"mergingIntList":null}}"#, r#"{"retainKeysMap":{"name":"foo"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map nested merging list with no change"
        ("retainKeys map nested merging list with no change (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingList","name","value"],"$setElementOrder/mergingList":[{"name":"a"},{"name":"b"}],"value":"bar"}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar","mergingList":[{"name":"a"},{"name":"b"},{"name":"c"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map adds an item in nested merging list"
        ("retainKeys map adds an item in nested merging list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b"},{"name":"x"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingList","name"],"$setElementOrder/mergingList":[{"name":"a"},{"name":"b"},{"name":"c"}],"mergingList":[{"name":"c"}]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"x"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map changes an item in nested merging list"
        ("retainKeys map changes an item in nested merging list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b","value":"foo"},{"name":"x"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingList","name"],"$setElementOrder/mergingList":[{"name":"a"},{"name":"b"}],"mergingList":[{"name":"b","value":"bar"}]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b","value":"bar"},{"name":"x"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes nested merging list"
        ("retainKeys map deletes nested merging list (twoWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["name","value"],"value":"bar","mergingList":null}}"#,
         r#"{"retainKeysMap":{"name":"foo","value":"bar"}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys map deletes an item in nested merging list"
        ("retainKeys map deletes an item in nested merging list (threeWay)",
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"b"},{"name":"x"}]}}"#,
         r#"{"retainKeysMap":{"$retainKeys":["mergingList","name"],"$setElementOrder/mergingList":[{"name":"a"}],"mergingList":[{"name":"b","$patch":"delete"}]}}"#,
         r#"{"retainKeysMap":{"name":"foo","mergingList":[{"name":"a"},{"name":"x"}]}}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps clears a field"
        ("retainKeys list of maps clears a field (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps clears a field with conflict"
        ("retainKeys list of maps clears a field with conflict (twoWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"old"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"modified"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"modified"}]}"#),
        ("retainKeys list of maps clears a field with conflict (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"new","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"modified"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"modified"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps changes a field and clear a field"
        ("retainKeys list of maps changes a field and clear a field (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"old","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"new"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"new"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps changes a field and clear a field with conflict"
        ("retainKeys list of maps changes a field and clear a field with conflict (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"modified","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"new"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"new"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps adds a field"
        ("retainKeys list of maps adds a field (twoWay)", r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"a"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps adds a field and clear a field"
        ("retainKeys list of maps adds a field and clear a field (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name","value"],"name":"foo","value":"a"}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps deletes a field"
        ("retainKeys list of maps deletes a field (twoWay)", r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name"],"name":"foo","value":null}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo"}]}"#),
        // upstream: strategicMergePatchRawTestCases "retainKeys list of maps deletes a field and clear a field"
        ("retainKeys list of maps deletes a field and clear a field (threeWay)",
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo","value":"a","other":"x"}]}"#,
         r#"{"$setElementOrder/retainKeysMergingList":[{"name":"bar"},{"name":"foo"}],"retainKeysMergingList":[{"$retainKeys":["name"],"name":"foo","value":null}]}"#,
         r#"{"retainKeysMergingList":[{"name":"bar"},{"name":"foo"}]}"#),
        // upstream: strategicMergePatchRawTestCases "delete and reorder in one list, reorder in another"
        ("delete and reorder in one list, reorder in another (twoWay)",
         r#"{"mergingList":[{"name":"a","value":"a"},{"name":"b","value":"b"}],"mergeItemPtr":[{"name":"c","value":"c"},{"name":"d","value":"d"}]}"#,
         r#"{"$setElementOrder/mergingList":[{"name":"b"}],"$setElementOrder/mergeItemPtr":[{"name":"d"},{"name":"c"}],"mergingList":[{"$patch":"delete","name":"a"}]}"#,
         r#"{"mergingList":[{"name":"b","value":"b"}],"mergeItemPtr":[{"name":"d","value":"d"},{"name":"c","value":"c"}]}"#),
    ];

    // replaceRawExtensionPatchTestCases (TestReplaceWithRawExtension)
    const RAW_EXTENSION_CASES: &[Case] = &[
        // upstream: replaceRawExtensionPatchTestCases "replace RawExtension field, rest unchanched"
        (
            "replace RawExtension field, rest unchanched (twoWay)",
            r#"{"name":"my-object","value":"some-value","other":"current-other","replacingItem":{"Some":"Generic","Yaml":"Inside","The":"RawExtension","Field":"Period"}}"#,
            r#"{"mergingList":[{"name":1},{"name":2},{"name":3}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":2},{"name":3}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
        ),
        (
            "replace RawExtension field, rest unchanched (threeWay)",
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":2},{"name":3}],"replacingItem":{"Some":"Generic","Yaml":"Inside","The":"RawExtension","Field":"Period"}}"#,
            r#"{"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":2},{"name":3}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
        ),
        // upstream: replaceRawExtensionPatchTestCases "replace RawExtension field and merge list"
        (
            "replace RawExtension field and merge list (twoWay)",
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1}],"replacingItem":{"Some":"Generic","Yaml":"Inside","The":"RawExtension","Field":"Period"}}"#,
            r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":2}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":2}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
        ),
        (
            "replace RawExtension field and merge list (threeWay)",
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":3}],"replacingItem":{"Some":"Generic","Yaml":"Inside","The":"RawExtension","Field":"Period"}}"#,
            r#"{"$setElementOrder/mergingList":[{"name":1},{"name":2}],"mergingList":[{"name":2}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
            r#"{"name":"my-object","value":"some-value","other":"current-other","mergingList":[{"name":1},{"name":2},{"name":3}],"replacingItem":{"Newly":"Modified","Yaml":"Inside","The":"RawExtension"}}"#,
        ),
    ];

    // TestUnknownField (fields unknown to the MergeItem schema)
    const UNKNOWN_FIELD_CASES: &[Case] = &[
        // upstream: TestUnknownField "no diff"
        (
            "no diff (twoWay)",
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
            r#"{}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
        ),
        // upstream: TestUnknownField "added only"
        (
            "added only (twoWay)",
            r#"{"name":"foo"}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"scalar":true}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
        ),
        // upstream: TestUnknownField "removed only"
        (
            "removed only (twoWay)",
            r#"{"name":"foo","scalar":true,"complex":{"nested":true}}"#,
            r#"{"complex":null,"scalar":null}"#,
            r#"{"name":"foo"}"#,
        ),
        (
            "removed only (threeWay)",
            r#"{"name":"foo","scalar":true,"complex":{"nested":true},"array":[1,2,3]}"#,
            r#"{"complex":null,"scalar":null}"#,
            r#"{"array":[1,2,3],"name":"foo"}"#,
        ),
        // upstream: TestUnknownField (newer) case adding `complex_nullable: {key: null}`
        (
            "discard nulls in nested map (twoWay)",
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
            r#"{"complex_nullable":{"key":null}}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"complex_nullable":{},"name":"foo","scalar":true}"#,
        ),
        // upstream: TestUnknownField "discard nulls in nested and adds not nulls"
        (
            "discard nulls in nested and adds not nulls (twoWay)",
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
            r#"{"complex_nullable":{"key":{"keynotnull":"value","keynull":null}}}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"complex_nullable":{"key":{"keynotnull":"value"}},"name":"foo","scalar":true}"#,
        ),
        // upstream: TestUnknownField "discard if modified all nulls"
        (
            "discard if modified all nulls (twoWay)",
            r#"{}"#,
            r#"{"complex":{"nested":null}}"#,
            r#"{"complex":{}}"#,
        ),
        // upstream: TestUnknownField "add only not nulls"
        (
            "add only not nulls (twoWay)",
            r#"{}"#,
            r#"{"complex":{"nested":null,"nested2":"foo"}}"#,
            r#"{"complex":{"nested2":"foo"}}"#,
        ),
        // upstream: TestUnknownField "null values in original are preserved"
        (
            "null values in original are preserved (twoWay)",
            r#"{"thing":null}"#,
            r#"{"nested":{"value":5}}"#,
            r#"{"nested":{"value":5},"thing":null}"#,
        ),
        // upstream: TestUnknownField "nested null values in original are preserved"
        (
            "nested null values in original are preserved (twoWay)",
            r#"{"complex":{"key":null},"thing":null}"#,
            r#"{"nested":{"value":5}}"#,
            r#"{"complex":{"key":null},"nested":{"value":5},"thing":null}"#,
        ),
        // upstream: TestUnknownField "add empty slices"
        (
            "add empty slices (twoWay)",
            r#"{"array":[1,2,3],"complex":{"nested":true},"name":"foo","scalar":true}"#,
            r#"{"complex_nullable":[]}"#,
            r#"{"array":[1,2,3],"complex":{"nested":true},"complex_nullable":[],"name":"foo","scalar":true}"#,
        ),
        // upstream: TestUnknownField "filter nulls from nested slices"
        (
            "filter nulls from nested slices (twoWay)",
            r#"{}"#,
            r#"{"complex_nullable":[{"inner_one":{"key_one":"foo","key_two":null}}]}"#,
            r#"{"complex_nullable":[{"inner_one":{"key_one":"foo"}}]}"#,
        ),
        // upstream: TestUnknownField "filter if slice is all empty"
        (
            "filter if slice is all empty (twoWay)",
            r#"{}"#,
            r#"{"complex_nullable":[{"inner_one":{"key_one":null,"key_two":null}}]}"#,
            r#"{"complex_nullable":[{"inner_one":{}}]}"#,
        ),
        // upstream: TestUnknownField "not filter nulls from non-associative slice"
        (
            "not filter nulls from non-associative slice (twoWay)",
            r#"{}"#,
            r#"{"complex_nullable":["key1",null,"key2"]}"#,
            r#"{"complex_nullable":["key1",null,"key2"]}"#,
        ),
    ];

    // TestNumberConversion (patch application half)
    const NUMBER_CASES: &[Case] = &[
        // upstream: TestNumberConversion "empty"
        ("empty", r#"{}"#, r#"{}"#, r#"{}"#),
        // upstream: TestNumberConversion "int32 medium"
        (
            "int32 medium",
            r#"{"int32":1000000}"#,
            r#"{"name":"newname"}"#,
            r#"{"int32":1000000,"name":"newname"}"#,
        ),
        // upstream: TestNumberConversion "int32 max"
        (
            "int32 max",
            r#"{"int32":2147483647}"#,
            r#"{"name":"newname"}"#,
            r#"{"int32":2147483647,"name":"newname"}"#,
        ),
        // upstream: TestNumberConversion "int64 medium"
        (
            "int64 medium",
            r#"{"int64":1000000}"#,
            r#"{"name":"newname"}"#,
            r#"{"int64":1000000,"name":"newname"}"#,
        ),
        // upstream: TestNumberConversion "int64 max"
        (
            "int64 max",
            r#"{"int64":9223372036854775807}"#,
            r#"{"name":"newname"}"#,
            r#"{"int64":9223372036854775807,"name":"newname"}"#,
        ),
        // upstream: TestNumberConversion "float32 max"
        (
            "float32 max",
            r#"{"float32":3.4028234663852886e+38}"#,
            r#"{"name":"newname"}"#,
            r#"{"float32":3.4028234663852886e+38,"name":"newname"}"#,
        ),
        // upstream: TestNumberConversion "float64 max"
        (
            "float64 max",
            r#"{"float64":1.7976931348623157e+308}"#,
            r#"{"name":"newname"}"#,
            r#"{"float64":1.7976931348623157e+308,"name":"newname"}"#,
        ),
    ];

    // Errors with upstream messages (patch.go / mergepatch/errors.go), not
    // tied to one upstream table.
    const ERROR_CASES: &[ErrCase] = &[
        (
            "unknown $patch directive in a map",
            r#"{"simpleMap":{"a":"b"}}"#,
            r#"{"simpleMap":{"$patch":"foo"}}"#,
            "unknown patch type: foo in map: map[$patch:foo]",
        ),
        (
            "unknown $patch directive at the root",
            r#"{}"#,
            r#"{"$patch":"bogus","name":1}"#,
            "unknown patch type: bogus in map: map[$patch:bogus name:1]",
        ),
        (
            "unknown $patch directive in a merging list",
            r#"{"mergingList":[{"name":1}]}"#,
            r#"{"mergingList":[{"name":1,"$patch":"bogus"}]}"#,
            "unknown patch type: bogus",
        ),
        (
            "$patch: merge in a merging list",
            r#"{"mergingList":[{"name":1}]}"#,
            r#"{"mergingList":[{"$patch":"merge"}]}"#,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            "$patch: delete without merge key",
            r#"{"mergingList":[{"name":1}]}"#,
            r#"{"mergingList":[{"$patch":"delete","value":1}]}"#,
            "map: map[$patch:delete value:1] does not contain declared merge key: name",
        ),
        (
            "live item without merge key",
            r#"{"mergingList":[{"value":1}]}"#,
            r#"{"mergingList":[{"name":2}]}"#,
            "does not contain declared merge key: name",
        ),
        (
            "$retainKeys not a list",
            r#"{"retainKeysMap":{"name":"a"}}"#,
            r#"{"retainKeysMap":{"$retainKeys":"name"}}"#,
            "invalid patch format of retainKeys",
        ),
        (
            "$retainKeys missing a patched field",
            r#"{"retainKeysMap":{"name":"a"}}"#,
            r#"{"retainKeysMap":{"$retainKeys":["name"],"value":"b"}}"#,
            "invalid patch format of retainKeys",
        ),
        (
            "malformed $setElementOrder key",
            r#"{}"#,
            r#"{"$setElementOrderX/mergingList":[]}"#,
            "invalid patch format of setElementOrder list",
        ),
        (
            "malformed $deleteFromPrimitiveList key",
            r#"{}"#,
            r#"{"$deleteFromPrimitiveList":[1]}"#,
            "invalid patch format of primitive list",
        ),
        (
            "$setElementOrder not a list",
            r#"{"mergingIntList":[1]}"#,
            r#"{"$setElementOrder/mergingIntList":5}"#,
            "expected a []interface {}, but received a int64",
        ),
        (
            "$setElementOrder for a non-list field",
            r#"{"mergingIntList":"x"}"#,
            r#"{"$setElementOrder/mergingIntList":[1]}"#,
            "expected a []interface {}, but received a string",
        ),
        (
            "lists of lists",
            r#"{"mergingIntList":[[1]]}"#,
            r#"{"mergingIntList":[[2]]}"#,
            "lists of lists are not supported",
        ),
        (
            "mixed list element types",
            r#"{"mergingIntList":[1]}"#,
            r#"{"mergingIntList":["a"]}"#,
            "list element types are not identical: [[1] [a]]",
        ),
        (
            "merging list of objects without merge key (unknown item type)",
            r#"{"mergingIntList":[{"a":1}]}"#,
            r#"{"mergingIntList":[{"a":2}]}"#,
            "cannot merge lists without merge key",
        ),
        (
            "$setElementOrder with nothing to order",
            r#"{"mergingIntList":[]}"#,
            r#"{"$setElementOrder/mergingIntList":[]}"#,
            "no elements in any of the given slices",
        ),
    ];

    #[test]
    fn upstream_custom_strategic_merge_patch_cases() {
        run_cases(CUSTOM_CASES);
        run_cases(CUSTOM_RAW_CASES);
        run_error_cases(CUSTOM_RAW_ERROR_CASES);
    }

    #[test]
    fn upstream_create_strategic_merge_patch_cases() {
        run_cases(CREATE_CASES);
    }

    #[test]
    fn upstream_strategic_merge_patch_raw_cases() {
        run_cases(RAW_CASES);
    }

    #[test]
    fn upstream_replace_with_raw_extension_cases() {
        run_cases(RAW_EXTENSION_CASES);
    }

    #[test]
    fn upstream_unknown_field_cases() {
        run_cases(UNKNOWN_FIELD_CASES);
    }

    #[test]
    fn upstream_number_conversion_cases() {
        let mut failures = Vec::new();
        for (name, original, patch, expected) in NUMBER_CASES {
            let got = apply_strategic_merge_patch(
                &parse(original),
                &parse(patch),
                &MergeItemSchema,
                "precisionItem",
            );
            match got {
                // Compare the serialised form: numbers must survive exactly.
                Ok(v)
                    if serde_json::to_string(&v).ok()
                        == serde_json::to_string(&parse(expected)).ok() => {}
                other => failures.push(format!("{name}: got {other:?}")),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn upstream_merge_patches_applied_in_sequence() {
        // upstream: TestMergeStrategicMergeMapPatchUsingLookupPatchMeta merges
        // the patches [1], [2], [1,3,4] into `mergingIntList: [2,1,3,4]`;
        // applying them one after another gives the same list (new items
        // go first when there is no `$setElementOrder`).
        let mut object = json!({});
        for patch in [
            json!({"mergingIntList": [1]}),
            json!({"mergingIntList": [2]}),
            json!({"mergingIntList": [1, 3, 4]}),
        ] {
            object = apply_strategic_merge_patch(&object, &patch, &MergeItemSchema, "mergeItem")
                .unwrap();
        }
        assert_eq!(object, json!({"mergingIntList": [2, 1, 3, 4]}));
    }

    #[test]
    fn upstream_style_errors() {
        run_error_cases(ERROR_CASES);
    }

    #[test]
    fn non_object_documents_are_rejected() {
        let obj = json!({"a": 1});
        for bad in [json!([1]), json!("x"), json!(1), json!(true)] {
            assert_eq!(
                apply_strategic_merge_patch(&obj, &bad, &NoSchema, ""),
                Err(SmpError::InvalidDocument)
            );
            assert_eq!(
                apply_strategic_merge_patch(&bad, &obj, &NoSchema, ""),
                Err(SmpError::InvalidDocument)
            );
        }
        assert_eq!(
            SmpError::InvalidDocument.to_string(),
            "invalid JSON document"
        );
    }

    #[test]
    fn null_documents_count_as_empty_objects() {
        let obj = json!({"a": 1});
        assert_eq!(
            apply_strategic_merge_patch(&obj, &Value::Null, &NoSchema, ""),
            Ok(obj.clone())
        );
        assert_eq!(
            apply_strategic_merge_patch(&Value::Null, &obj, &NoSchema, ""),
            Ok(obj)
        );
    }

    #[test]
    fn root_delete_directive_empties_the_object() {
        assert_eq!(
            apply(r#"{"name":1,"value":2}"#, r#"{"$patch":"delete"}"#),
            Ok(json!({}))
        );
    }

    #[test]
    fn unexpected_schema_strategy_is_reported() {
        let schema = |_: &str, _: &str| Some(info(&["merge", "replace"], None, None));
        let err = apply_strategic_merge_patch(
            &json!({"a": {"b": 1}}),
            &json!({"a": {"b": 2}}),
            &schema,
            "t",
        )
        .unwrap_err();
        assert_eq!(
            err,
            SmpError::InvalidSchema("unexpected patch strategy: [merge replace]".to_string())
        );
    }

    #[test]
    fn comma_separated_strategies_are_accepted() {
        let schema = |_: &str, field: &str| {
            (field == "list").then(|| info(&["merge,retainKeys"], Some("k"), None))
        };
        let got = apply_strategic_merge_patch(
            &json!({"list": [{"k": "a", "v": 1}]}),
            &json!({"list": [{"k": "b"}]}),
            &schema,
            "t",
        );
        // Without `$setElementOrder`, upstream puts new items before the
        // server-only ones.
        assert_eq!(got, Ok(json!({"list": [{"k": "b"}, {"k": "a", "v": 1}]})));
    }

    #[test]
    fn unknown_fields_follow_json_merge_patch() {
        let original = json!({"spec": {"a": 1, "list": [1, 2], "nested": {"x": 1, "y": 2}}});
        let patch = json!({"spec": {"a": null, "list": [3], "nested": {"y": null, "z": 3}}});
        let got = apply_strategic_merge_patch(&original, &patch, &NoSchema, "Anything");
        assert_eq!(
            got,
            Ok(json!({"spec": {"list": [3], "nested": {"x": 1, "z": 3}}}))
        );
    }

    #[test]
    fn merge_key_values_compare_numerically() {
        // Go decodes both 1 and 1.0 to the same number.
        assert_eq!(
            apply(
                r#"{"mergingList":[{"name":1,"value":"a"}]}"#,
                r#"{"mergingList":[{"name":1.0,"other":"b"}]}"#
            ),
            Ok(json!({"mergingList":[{"name":1.0,"value":"a","other":"b"}]}))
        );
    }

    #[test]
    fn new_values_do_not_leak_directives() {
        // A brand new merging list: `$patch` items are consumed, nulls dropped,
        // and the order follows `$setElementOrder`.
        let got = apply(
            r#"{}"#,
            r#"{"$setElementOrder/mergingList":[{"name":"b"},{"name":"a"}],
                "mergingList":[{"name":"b"},{"name":"x","$patch":"delete"},{"name":"a","value":null}]}"#,
        );
        assert_eq!(got, Ok(json!({"mergingList":[{"name":"b"},{"name":"a"}]})));

        // A brand new object with directives inside.
        let got = apply(
            r#"{}"#,
            r#"{"retainKeysMap":{"$retainKeys":["name","mergingIntList"],"name":"x",
                "$deleteFromPrimitiveList/mergingIntList":[1],"mergingIntList":[1,2]}}"#,
        );
        assert_eq!(
            got,
            Ok(json!({"retainKeysMap":{"name":"x","mergingIntList":[1,2]}}))
        );

        // A new object marked `$patch: replace` keeps its content; one
        // marked `$patch: delete` is not added.
        let got = apply(
            r#"{"name":"n"}"#,
            r#"{"simpleMap":{"$patch":"replace","k":"v"},"retainKeysMap":{"$patch":"delete"}}"#,
        );
        assert_eq!(got, Ok(json!({"name":"n","simpleMap":{"k":"v"}})));

        // Replacing a value of another type works the same way.
        let got = apply(
            r#"{"simpleMap":"text"}"#,
            r#"{"simpleMap":{"k":"v","gone":null}}"#,
        );
        assert_eq!(got, Ok(json!({"simpleMap":{"k":"v"}})));
    }

    #[test]
    fn replace_directive_in_nested_map_and_list() {
        assert_eq!(
            apply(
                r#"{"simpleMap":{"a":"1","b":"2"}}"#,
                r#"{"simpleMap":{"$patch":"replace","c":"3"}}"#
            ),
            Ok(json!({"simpleMap":{"c":"3"}}))
        );
        assert_eq!(
            apply(
                r#"{"mergingList":[{"name":1,"value":1},{"name":2}]}"#,
                r#"{"mergingList":[{"name":3,"value":3},{"$patch":"replace"}]}"#
            ),
            Ok(json!({"mergingList":[{"name":3,"value":3}]}))
        );
    }

    #[test]
    fn closure_schema_and_map_typed_fields() {
        // `labels`-like map of objects: the schema answers every key of the
        // synthetic map type with the value type.
        let schema = |ty: &str, field: &str| match (ty, field) {
            ("Pod", "containers") => Some(info(&["merge"], Some("name"), Some("Container"))),
            ("Pod", "byName") => Some(info(&[], None, Some("map:Container"))),
            ("map:Container", _) => Some(info(&[], None, Some("Container"))),
            ("Container", "ports") => Some(info(&["merge"], Some("containerPort"), Some("Port"))),
            _ => None,
        };
        let original = json!({
            "containers": [{"name": "a", "ports": [{"containerPort": 80}]}],
            "byName": {"x": {"ports": [{"containerPort": 1}]}}
        });
        let patch = json!({
            "containers": [{"name": "a", "ports": [{"containerPort": 81}]}],
            "byName": {"x": {"ports": [{"containerPort": 2}]}}
        });
        let got = apply_strategic_merge_patch(&original, &patch, &schema, "Pod").unwrap();
        assert_eq!(
            got,
            json!({
                "containers": [{"name": "a", "ports": [{"containerPort": 81}, {"containerPort": 80}]}],
                "byName": {"x": {"ports": [{"containerPort": 2}, {"containerPort": 1}]}}
            })
        );
    }

    #[test]
    fn original_key_order_is_preserved() {
        let got = apply(
            r#"{"value":1,"name":2,"other":3}"#,
            r#"{"name":9,"simpleMap":{}}"#,
        )
        .unwrap();
        let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["value", "name", "other", "simpleMap"]);
    }

    // -----------------------------------------------------------------------
    // Robustness: odd inputs must produce Ok or Err, never a panic.

    /// Small deterministic xorshift generator (no external crates).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const KEYS: &[&str] = &[
        "name",
        "value",
        "other",
        "mergingList",
        "nonMergingList",
        "mergingIntList",
        "nonMergingIntList",
        "mergeItemPtr",
        "simpleMap",
        "replacingItem",
        "retainKeysMap",
        "retainKeysMergingList",
        "$patch",
        "$retainKeys",
        "$setElementOrder/mergingList",
        "$setElementOrder/mergingIntList",
        "$setElementOrder/",
        "$deleteFromPrimitiveList/mergingIntList",
        "$deleteFromPrimitiveList/mergingList",
        "$deleteFromPrimitiveList/",
        "unknown",
    ];

    fn random_value(rng: &mut Rng, depth: u32) -> Value {
        let pick = if depth == 0 {
            rng.below(6)
        } else {
            rng.below(9)
        };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(rng.below(2) == 0),
            2 => json!(rng.below(4)),
            3 => json!(["delete", "replace", "merge", "a", "name"][rng.below(5) as usize]),
            4 => json!(1.5),
            5 => json!(-3),
            6 | 7 => {
                let mut map = JsonMap::new();
                for _ in 0..rng.below(5) {
                    let key = KEYS[rng.below(KEYS.len() as u64) as usize];
                    map.insert(key.to_string(), random_value(rng, depth - 1));
                }
                Value::Object(map)
            }
            _ => Value::Array(
                (0..rng.below(4))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
        }
    }

    #[test]
    fn random_inputs_never_panic() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut oks = 0;
        for _ in 0..20_000 {
            let original = random_value(&mut rng, 4);
            let patch = random_value(&mut rng, 4);
            if apply_strategic_merge_patch(&original, &patch, &MergeItemSchema, "mergeItem").is_ok()
            {
                oks += 1;
            }
            let _ = apply_strategic_merge_patch(&original, &patch, &NoSchema, "");
        }
        assert!(oks > 0);
    }

    /// RFC 7386 JSON merge patch, as a reference for patches without lists
    /// or directives.
    fn json_merge_patch(target: &Value, patch: &Value) -> Value {
        let Value::Object(patch_map) = patch else {
            return patch.clone();
        };
        let mut out = match target {
            Value::Object(map) => map.clone(),
            _ => JsonMap::new(),
        };
        for (key, value) in patch_map {
            if value.is_null() {
                out.shift_remove(key);
            } else {
                let merged = json_merge_patch(out.get(key).unwrap_or(&Value::Null), value);
                out.insert(key.clone(), merged);
            }
        }
        Value::Object(out)
    }

    fn random_plain_object(rng: &mut Rng, depth: u32) -> Value {
        let mut map = JsonMap::new();
        for _ in 0..rng.below(4) {
            let key = ["a", "b", "c", "d"][rng.below(4) as usize].to_string();
            let value = match rng.below(if depth == 0 { 3 } else { 5 }) {
                0 => Value::Null,
                1 => json!(rng.below(3)),
                2 => json!([rng.below(3), "x"]),
                _ => random_plain_object(rng, depth - 1),
            };
            map.insert(key, value);
        }
        Value::Object(map)
    }

    #[test]
    fn matches_json_merge_patch_without_schema_or_directives() {
        let mut rng = Rng(42);
        for _ in 0..5_000 {
            let original = random_plain_object(&mut rng, 3);
            let patch = random_plain_object(&mut rng, 3);
            let got = apply_strategic_merge_patch(&original, &patch, &NoSchema, "").unwrap();
            assert_eq!(
                got,
                json_merge_patch(&original, &patch),
                "{original} + {patch}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_rejected_not_overflowed() {
        let mut patch = json!({"leaf": 1});
        for _ in 0..300 {
            patch = json!({ "simpleMap": patch });
        }
        let mut original = json!({});
        for _ in 0..300 {
            original = json!({ "simpleMap": original });
        }
        let err = apply_strategic_merge_patch(&original, &patch, &MergeItemSchema, "mergeItem");
        assert!(matches!(err, Err(SmpError::BadPatch(ref m)) if m.contains("maximum depth")));
        let err = apply_strategic_merge_patch(&json!({}), &patch, &NoSchema, "");
        assert!(err.is_err());
    }

    #[test]
    fn odd_directive_values_error_cleanly() {
        for patch in [
            r#"{"$patch":null}"#,
            r#"{"$patch":5}"#,
            r#"{"$patch":["delete"]}"#,
            r#"{"$patch":{"a":1}}"#,
            r#"{"mergingList":[{"$patch":1}]}"#,
            r#"{"mergingList":[{"$patch":"delete","name":{"x":[1]}}]}"#,
            r#"{"$retainKeys":[1,null,{"a":1}],"name":1}"#,
            r#"{"$setElementOrder/mergingList":[1,2],"mergingList":[{"name":1}]}"#,
            r#"{"$setElementOrder/mergingList":[{"name":1}],"mergingList":[1]}"#,
            r#"{"$setElementOrder/mergingList":[{"name":1}],"mergingList":null}"#,
            r#"{"$deleteFromPrimitiveList/mergingList":[{"name":1}]}"#,
            r#"{"$deleteFromPrimitiveList/mergingIntList":null}"#,
            r#"{"mergingList":{"name":1}}"#,
            r#"{"mergingList":[null,{"name":1}]}"#,
            r#"{"mergingIntList":[null,1]}"#,
        ] {
            let _ = apply(
                r#"{"mergingList":[{"name":1},{"name":2}],"mergingIntList":[1,2]}"#,
                patch,
            );
            let _ = apply(r#"{}"#, patch);
        }
    }
}
