//! Path elements, field sets (trees of path elements) and the `FieldsV1`
//! wire format, following `sigs.k8s.io/structured-merge-diff/fieldpath`.
//!
//! Values are compared and printed the way the Go implementation does it
//! (numbers < strings < booleans < lists < maps < null), and `FieldsV1` is
//! encoded byte for byte as upstream does (children sorted by path element,
//! `"."` first for nodes that are members themselves, key values escaped as
//! Go's `encoding/json` would).

use apimachinery::gofmt;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::fmt::{self, Write as _};

// ---------------------------------------------------------------------------
// Values (Go semantics)
// ---------------------------------------------------------------------------

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

fn as_float(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) if n.as_i64().is_none() => n.as_f64(),
        _ => None,
    }
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 2,
        Value::Bool(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
        Value::Null => 6,
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    if a > b {
        Ordering::Greater
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Equal
    }
}

/// Total order on values, as `value.Compare` in structured-merge-diff.
pub fn value_compare(lhs: &Value, rhs: &Value) -> Ordering {
    if let (Value::Number(_), Value::Number(_)) = (lhs, rhs) {
        return match (as_int(lhs), as_int(rhs)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => float_cmp(num_f64(lhs), num_f64(rhs)),
        };
    }
    let (rl, rr) = (type_rank(lhs), type_rank(rhs));
    if rl != rr {
        return rl.cmp(&rr);
    }
    match (lhs, rhs) {
        (Value::String(a), Value::String(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter().zip(b.iter()) {
                let c = value_compare(x, y);
                if c != Ordering::Equal {
                    return c;
                }
            }
            a.len().cmp(&b.len())
        }
        (Value::Object(a), Value::Object(b)) => map_compare(a, b),
        _ => Ordering::Equal,
    }
}

fn num_f64(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

fn map_compare(a: &Map<String, Value>, b: &Map<String, Value>) -> Ordering {
    if a.is_empty() && b.is_empty() {
        return Ordering::Equal;
    }
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    for (i, k) in keys.iter().enumerate() {
        let c = if i == a.len() {
            Ordering::Less
        } else if i == b.len() {
            Ordering::Greater
        } else {
            match (a.get(*k), b.get(*k)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(x), Some(y)) => value_compare(x, y),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Equality on values, as `value.Equals` (ints and floats compare numerically).
pub fn value_equals(lhs: &Value, rhs: &Value) -> bool {
    match (lhs, rhs) {
        (Value::Number(_), Value::Number(_)) => {
            if as_float(lhs).is_some() || as_float(rhs).is_some() {
                num_f64(lhs) == num_f64(rhs)
            } else {
                as_int(lhs) == as_int(rhs)
            }
        }
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Null, Value::Null) => true,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_equals(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| value_equals(v, w)))
        }
        _ => false,
    }
}

/// Appends `v` as compact JSON the way Go's `encoding/json` would marshal it
/// (map keys sorted, HTML characters escaped in string values).
pub fn write_go_json(out: &mut String, v: &Value) {
    gofmt::write_json(out, v, gofmt::KeyOrder::Sorted);
}

/// `value.ToString`: how values are printed inside path strings.
pub fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => gofmt::float_v(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => gofmt::quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(value_to_string).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

// ---------------------------------------------------------------------------
// Path elements
// ---------------------------------------------------------------------------

/// One step of a path into an object.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a struct or a key of a map: `f:<name>`.
    Field(String),
    /// An item of an associative list with keys, identified by its key
    /// fields, sorted by name: `k:{"name":"x"}`.
    Key(Vec<(String, Value)>),
    /// An item of a set (associative list of scalars): `v:<json>`.
    Value(Value),
    /// An item of a non-associative list by position: `i:<n>`.
    Index(i64),
}

impl PathElement {
    /// Shorthand for a field element.
    pub fn field(name: &str) -> Self {
        PathElement::Field(name.to_string())
    }

    /// Builds a key element from name/value pairs (sorted by name).
    #[cfg(test)]
    pub fn key(fields: &[(&str, Value)]) -> Self {
        let mut v: Vec<(String, Value)> = fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(v)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// Serializes the element as a `FieldsV1` key (`f:`, `k:`, `v:`, `i:`).
    pub fn serialize(&self) -> String {
        let mut out = String::new();
        match self {
            PathElement::Field(n) => {
                out.push_str("f:");
                out.push_str(n);
            }
            PathElement::Key(fields) => {
                out.push_str("k:{");
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    gofmt::write_json_string(&mut out, k, false);
                    out.push(':');
                    write_go_json(&mut out, v);
                }
                out.push('}');
            }
            PathElement::Value(v) => {
                out.push_str("v:");
                write_go_json(&mut out, v);
            }
            PathElement::Index(i) => {
                let _ = write!(out, "i:{i}");
            }
        }
        out
    }

    /// Parses a `FieldsV1` key. `Ok(None)` means an unknown element type,
    /// which upstream silently skips.
    pub fn deserialize(s: &str) -> Result<Option<PathElement>, String> {
        let b = s.as_bytes();
        if b.len() < 2 {
            return Err("key must be 2 characters long:".into());
        }
        if b[1] != b':' {
            return Err(format!("missing colon: {s}"));
        }
        let rest = &s[2..];
        match b[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                Ok(Some(PathElement::Value(v)))
            }
            b'k' => {
                let v: Value = serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let Value::Object(m) = v else {
                    return Err(format!("expected a JSON object in key {s}"));
                };
                let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            b'i' => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| format!("strconv.Atoi: parsing {rest:?}: {e}")),
            _ => Ok(None),
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for i in 0.. {
                    match (a.get(i), b.get(i)) {
                        (None, None) => return Ordering::Equal,
                        (None, _) => return Ordering::Less,
                        (_, None) => return Ordering::Greater,
                        (Some(x), Some(y)) => {
                            let c = x.0.as_bytes().cmp(y.0.as_bytes());
                            if c != Ordering::Equal {
                                return c;
                            }
                            let c = value_compare(&x.1, &y.1);
                            if c != Ordering::Equal {
                                return c;
                            }
                        }
                    }
                }
                Ordering::Equal
            }
            (PathElement::Value(a), PathElement::Value(b)) => value_compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PathElement::Key(a), PathElement::Key(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| x.0 == y.0 && value_equals(&x.1, &y.1))
            }
            (PathElement::Value(a), PathElement::Value(b)) => value_equals(a, b),
            _ => self.cmp(other) == Ordering::Equal,
        }
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(n) => write!(f, ".{n}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path: a sequence of path elements.
pub type Path = Vec<PathElement>;

/// Prints a path as upstream does, e.g. `.spec.containers[name="x"].image`.
pub fn path_to_string(p: &[PathElement]) -> String {
    p.iter().map(|e| e.to_string()).collect()
}

/// Builds a path of field names, e.g. `field_path(&["spec", "replicas"])`.
pub fn field_path(names: &[&str]) -> Path {
    names.iter().map(|n| PathElement::field(n)).collect()
}

// ---------------------------------------------------------------------------
// Sets
// ---------------------------------------------------------------------------

/// A set of paths, stored as a tree: `members` are the path elements that
/// end a path at this node, `children` the subtrees (both sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Set {
    members: Vec<PathElement>,
    children: Vec<(PathElement, Set)>,
}

fn find_child<'a>(children: &'a [(PathElement, Set)], pe: &PathElement) -> Option<&'a Set> {
    children
        .binary_search_by(|(p, _)| p.cmp(pe))
        .ok()
        .map(|i| &children[i].1)
}

impl Set {
    /// The empty set.
    pub fn new() -> Self {
        Set::default()
    }

    /// A set holding the given paths.
    pub fn from_paths(paths: &[Path]) -> Self {
        let mut s = Set::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// Members at this node (sorted).
    pub fn members(&self) -> &[PathElement] {
        &self.members
    }

    /// Children of this node (sorted).
    pub fn children(&self) -> &[(PathElement, Set)] {
        &self.children
    }

    fn insert_member(&mut self, pe: PathElement) {
        if let Err(i) = self.members.binary_search(&pe) {
            self.members.insert(i, pe);
        }
    }

    fn descend(&mut self, pe: &PathElement) -> &mut Set {
        let i = match self.children.binary_search_by(|(p, _)| p.cmp(pe)) {
            Ok(i) => i,
            Err(i) => {
                self.children.insert(i, (pe.clone(), Set::new()));
                i
            }
        };
        &mut self.children[i].1
    }

    /// Inserts a path (no-op for the empty path).
    pub fn insert(&mut self, p: &[PathElement]) {
        match p {
            [] => {}
            [last] => self.insert_member(last.clone()),
            [first, rest @ ..] => self.descend(first).insert(rest),
        }
    }

    /// Whether the set holds exactly this path.
    pub fn has(&self, p: &[PathElement]) -> bool {
        match p {
            [] => false,
            [last] => self.members.binary_search(last).is_ok(),
            [first, rest @ ..] => find_child(&self.children, first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether the set holds a member at this node.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.binary_search(pe).is_ok()
    }

    /// The subtree under `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&Set> {
        find_child(&self.children, pe)
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.iter().all(|(_, c)| c.is_empty())
    }

    /// Union of two sets.
    pub fn union(&self, other: &Set) -> Set {
        let mut members = self.members.clone();
        for m in &other.members {
            if let Err(i) = members.binary_search(m) {
                members.insert(i, m.clone());
            }
        }
        let mut children = self.children.clone();
        for (pe, s) in &other.children {
            match children.binary_search_by(|(p, _)| p.cmp(pe)) {
                Ok(i) => children[i].1 = children[i].1.union(s),
                Err(i) => children.insert(i, (pe.clone(), s.clone())),
            }
        }
        Set { members, children }
    }

    /// Intersection of two sets.
    pub fn intersection(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, s)| {
                let o = other.child(pe)?;
                let r = s.intersection(o);
                (!r.is_empty()).then(|| (pe.clone(), r))
            })
            .collect();
        Set { members, children }
    }

    /// Paths of `self` not in `other` (members compared per node).
    pub fn difference(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, s)| match other.child(pe) {
                None => Some((pe.clone(), s.clone())),
                Some(o) => {
                    let r = s.difference(o);
                    (!r.is_empty()).then(|| (pe.clone(), r))
                }
            })
            .collect();
        Set { members, children }
    }

    /// Like `difference`, but a member of `other` also removes the whole
    /// subtree under it from `self`.
    pub fn recursive_difference(&self, other: &Set) -> Set {
        let members = self
            .members
            .iter()
            .filter(|m| !other.has_member(m))
            .cloned()
            .collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, s)| {
                if other.has_member(pe) {
                    return None;
                }
                match other.child(pe) {
                    None => Some((pe.clone(), s.clone())),
                    Some(o) => {
                        let r = s.recursive_difference(o);
                        (!r.is_empty()).then(|| (pe.clone(), r))
                    }
                }
            })
            .collect();
        Set { members, children }
    }

    /// All paths, members of a node before its children.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, s) in &self.children {
            prefix.push(pe.clone());
            s.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Number of members plus children at this node (`Set.Size`).
    pub fn size(&self) -> usize {
        self.members.len() + self.children.len()
    }

    pub(crate) fn children_mut(&mut self) -> &mut Vec<(PathElement, Set)> {
        &mut self.children
    }

    // -- FieldsV1 ----------------------------------------------------------

    /// Encodes the set as `FieldsV1` JSON text, byte for byte as upstream.
    #[cfg(test)]
    pub fn to_json_string(&self) -> String {
        let mut out = String::from("{");
        self.emit(false, &mut out);
        out.push('}');
        out
    }

    #[cfg(test)]
    fn emit(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push(',');
            }
            first = false;
        };
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            sep(out);
            out.push_str("\".\":{}");
        }
        for (pe, child, member) in self.merged_entries() {
            sep(out);
            gofmt::write_json_string(out, &pe.serialize(), false);
            out.push_str(":{");
            if let Some(c) = child {
                c.emit(member, out);
            }
            out.push('}');
        }
    }

    /// Members and children merged in order: (element, subtree, is member).
    fn merged_entries(&self) -> Vec<(&PathElement, Option<&Set>, bool)> {
        let (mut mi, mut ci) = (0, 0);
        let mut out = Vec::new();
        while mi < self.members.len() || ci < self.children.len() {
            let m = self.members.get(mi);
            let c = self.children.get(ci);
            match (m, c) {
                (Some(m), Some((pe, s))) => match m.cmp(pe) {
                    Ordering::Less => {
                        out.push((m, None, true));
                        mi += 1;
                    }
                    Ordering::Greater => {
                        out.push((pe, Some(s), false));
                        ci += 1;
                    }
                    Ordering::Equal => {
                        out.push((pe, Some(s), true));
                        mi += 1;
                        ci += 1;
                    }
                },
                (Some(m), None) => {
                    out.push((m, None, true));
                    mi += 1;
                }
                (None, Some((pe, s))) => {
                    out.push((pe, Some(s), false));
                    ci += 1;
                }
                (None, None) => break,
            }
        }
        out
    }

    /// Encodes the set as a `FieldsV1` JSON value (key order preserved as
    /// upstream emits it when `serde_json/preserve_order` is enabled).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.to_map(false))
    }

    fn to_map(&self, include_self: bool) -> Map<String, Value> {
        let mut m = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (pe, child, member) in self.merged_entries() {
            let v = match child {
                Some(c) => c.to_map(member),
                None => Map::new(),
            };
            m.insert(pe.serialize(), Value::Object(v));
        }
        m
    }

    /// Whether any member path of this set is a member of the `FieldsV1` value `raw`
    /// (a non-empty intersection), found without decoding `raw`: only this set's
    /// paths are looked up.
    pub fn meets_fields_v1(&self, raw: &Value) -> bool {
        let Value::Object(m) = raw else {
            return false;
        };
        let is_member = |node: &Value| match node {
            Value::Object(o) => o.is_empty() || o.contains_key("."),
            _ => false,
        };
        self.members
            .iter()
            .any(|pe| m.get(&pe.serialize()).is_some_and(is_member))
            || self.children.iter().any(|(pe, sub)| {
                m.get(&pe.serialize())
                    .is_some_and(|node| sub.meets_fields_v1(node))
            })
    }

    /// Decodes a `FieldsV1` JSON value.
    pub fn from_fields_v1(v: &Value) -> Result<Set, String> {
        let (children, _) = read_v1(v)?;
        Ok(children.unwrap_or_default())
    }

    /// Decodes `FieldsV1` JSON text.
    #[cfg(test)]
    pub fn from_json_str(s: &str) -> Result<Set, String> {
        let v: Value = serde_json::from_str(s).map_err(|e| e.to_string())?;
        Set::from_fields_v1(&v)
    }
}

fn read_v1(v: &Value) -> Result<(Option<Set>, bool), String> {
    let m = match v {
        Value::Object(m) => m,
        Value::Null => return Ok((None, true)),
        _ => {
            return Err(format!(
                "ReadMapCB: expect {{ or n, but found {}",
                first_char(v)
            ))
        }
    };
    let mut children: Option<Set> = None;
    let mut is_member = false;
    for (k, v) in m {
        if k == "." {
            is_member = true;
            continue;
        }
        let Some(pe) =
            PathElement::deserialize(k).map_err(|e| format!("parsing key as path element: {e}"))?
        else {
            continue;
        };
        let (grand, child_member) = read_v1(v)?;
        if child_member {
            children
                .get_or_insert_with(Set::new)
                .insert_member(pe.clone());
        }
        if let Some(g) = grand {
            let c = children.get_or_insert_with(Set::new).descend(&pe);
            *c = c.union(&g);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

fn first_char(v: &Value) -> char {
    v.to_string().chars().next().unwrap_or(' ')
}
