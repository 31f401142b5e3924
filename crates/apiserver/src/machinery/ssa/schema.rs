//! Type resolution from OpenAPI v3 JSON schemas, following how
//! `k8s.io/kube-openapi/pkg/schemaconv` converts OpenAPI models into
//! structured-merge-diff types.
//!
//! * `type: object` → a map; `properties` are struct fields,
//!   `additionalProperties` gives the type of other keys;
//!   `x-kubernetes-map-type: atomic` makes it atomic (granular otherwise).
//!   The map type may also be set on a `$ref`/`allOf` wrapper.
//! * `type: array` → a list; `x-kubernetes-list-type` `set`/`map` make it
//!   associative (`x-kubernetes-list-map-keys` for maps), atomic otherwise.
//! * `integer`/`number`/`boolean`/`string` → scalars.
//! * no `type` (e.g. `x-kubernetes-int-or-string`, or a bare
//!   `x-kubernetes-preserve-unknown-fields`) → any of scalar, list or map,
//!   picked by the value.
//! * no schema, unresolvable references and fields not declared in a struct
//!   → smd's "deduced" type: maps granular, lists atomic, scalars leaves.
//! * `Quantity` and `RawExtension` → untyped atomic values, as upstream.

use serde_json::{Map, Value};

/// A schema to interpret objects with: a root OpenAPI v3 schema value and a
/// resolver for `#/components/schemas/<name>` (or `#/definitions/<name>`)
/// references.
#[derive(Clone, Copy)]
pub struct Schema<'a> {
    root: &'a Value,
    resolve: &'a dyn Fn(&str) -> Option<&'a Value>,
    cache: Option<&'a AtomCache<'a>>,
    fixed: bool,
}

/// Resolved types of schema nodes, kept for the duration of one operation (keyed by the
/// node's address, stable while the schema is borrowed).
#[derive(Default)]
pub struct AtomCache<'a>(
    std::cell::RefCell<
        std::collections::HashMap<usize, Atom<'a>, std::hash::BuildHasherDefault<AddressHasher>>,
    >,
);

/// A hasher for node addresses: one multiply (SipHash was about 5% of field management).
#[derive(Default)]
pub struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 =
                (self.0.rotate_left(5) ^ u64::from(*b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // addresses are 8-aligned: fold the high bits into the low ones the table uses
        let x = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
}

impl std::fmt::Debug for Schema<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schema").field("root", self.root).finish()
    }
}

/// A reference to a type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TypeRef<'a> {
    /// An OpenAPI schema node (possibly a `$ref` or `allOf` wrapper).
    Node(&'a Value),
    /// smd's `__untyped_deduced_`.
    Deduced,
    /// smd's `__untyped_atomic_`.
    Untyped,
}

/// The kind of a scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarKind {
    Numeric,
    String,
    Boolean,
    Untyped,
}

/// A list type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ListType<'a> {
    pub atomic: bool,
    /// `x-kubernetes-list-map-keys` as the schema holds it (borrowed: atoms are copied
    /// on every resolve).
    pub keys: ListKeys<'a>,
    pub elem: TypeRef<'a>,
}

/// The key field names of an associative list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ListKeys<'a>(&'a [Value]);

impl<'a> ListKeys<'a> {
    /// The key names, in schema order.
    pub fn iter(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.0.iter().filter_map(Value::as_str)
    }

    /// Whether the list has no keys (a set, or atomic).
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// A map or struct type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MapType<'a> {
    pub atomic: bool,
    pub props: Option<&'a Map<String, Value>>,
    pub elem: TypeRef<'a>,
}

impl<'a> MapType<'a> {
    /// The declared field `name`, if any.
    pub fn field(&self, name: &str) -> Option<&'a Value> {
        self.props.and_then(|p| p.get(name))
    }

    /// The type of the value under `key`.
    pub fn child_type(&self, key: &str) -> TypeRef<'a> {
        match self.field(key) {
            Some(s) => TypeRef::Node(s),
            None => self.elem,
        }
    }

    /// Whether this is a deduced map without declared fields.
    pub fn is_untyped_deduced(&self) -> bool {
        self.props.is_none() && matches!(self.elem, TypeRef::Deduced)
    }
}

/// A resolved type: any combination of scalar, list and map.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Atom<'a> {
    pub scalar: Option<ScalarKind>,
    pub list: Option<ListType<'a>>,
    pub map: Option<MapType<'a>>,
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

fn ref_name(s: &Value) -> Option<&str> {
    let r = s.get("$ref").and_then(Value::as_str).or_else(|| {
        let all = s.get("allOf")?.as_array()?;
        if all.len() == 1 {
            all[0].get("$ref").and_then(Value::as_str)
        } else {
            None
        }
    })?;
    Some(r.rsplit('/').next().unwrap_or(r))
}

fn map_type_ext(s: &Value) -> Option<bool> {
    match s.get("x-kubernetes-map-type").and_then(Value::as_str) {
        Some("atomic") => Some(true),
        Some(_) => Some(false),
        None => None,
    }
}

impl<'a> Schema<'a> {
    /// A schema rooted at `root` (e.g. `{"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}`
    /// or a CRD's `openAPIV3Schema`), resolving references with `resolve`
    /// (given the name after the last `/`).
    pub fn new(root: &'a Value, resolve: &'a dyn Fn(&str) -> Option<&'a Value>) -> Self {
        Schema {
            root,
            resolve,
            cache: None,
            fixed: false,
        }
    }

    /// The same schema, declared never to change while the process runs (the built-in
    /// kinds'): managed field sets need no reconciling with schema changes.
    pub fn fixed(self) -> Self {
        Schema {
            fixed: true,
            ..self
        }
    }

    /// Whether the schema never changes ([`Schema::fixed`]).
    pub fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// The same schema, remembering resolved types in `cache` (one operation's worth:
    /// objects are walked node by node, resolving the same types again and again).
    pub fn with_cache(self, cache: &'a AtomCache<'a>) -> Self {
        Schema {
            cache: Some(cache),
            ..self
        }
    }

    pub(crate) fn root(&self) -> TypeRef<'a> {
        TypeRef::Node(self.root)
    }

    /// Resolves a type reference into its atom.
    pub(crate) fn resolve(&self, tr: TypeRef<'a>) -> Atom<'a> {
        match tr {
            TypeRef::Deduced => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(ListType {
                    atomic: true,
                    keys: ListKeys::default(),
                    elem: TypeRef::Untyped,
                }),
                map: Some(MapType {
                    atomic: false,
                    props: None,
                    elem: TypeRef::Deduced,
                }),
            },
            TypeRef::Untyped => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(ListType {
                    atomic: true,
                    keys: ListKeys::default(),
                    elem: TypeRef::Untyped,
                }),
                map: Some(MapType {
                    atomic: true,
                    props: None,
                    elem: TypeRef::Untyped,
                }),
            },
            TypeRef::Node(s) => {
                let Some(cache) = self.cache else {
                    return self.resolve_node(s);
                };
                let key = s as *const Value as usize;
                if let Some(hit) = cache.0.borrow().get(&key) {
                    return *hit;
                }
                let atom = self.resolve_node(s);
                cache.0.borrow_mut().insert(key, atom);
                atom
            }
        }
    }

    fn resolve_node(&self, wrapper: &'a Value) -> Atom<'a> {
        let mut s = wrapper;
        let mut override_atomic = None;
        let mut depth = 0;
        while let Some(name) = ref_name(s) {
            if name == QUANTITY || name == RAW_EXTENSION {
                return self.resolve(TypeRef::Untyped);
            }
            if override_atomic.is_none() {
                override_atomic = map_type_ext(s);
            }
            depth += 1;
            match (self.resolve)(name) {
                Some(t) if depth < 64 => s = t,
                _ => return self.resolve(TypeRef::Deduced),
            }
        }
        let mut atom = self.parse(s);
        if let (Some(m), Some(a)) = (atom.map.as_mut(), override_atomic) {
            m.atomic = a;
        }
        atom
    }

    fn parse(&self, s: &'a Value) -> Atom<'a> {
        if !s.is_object() {
            return self.resolve(TypeRef::Deduced);
        }
        let typ = match s.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or(""),
            _ => "",
        };
        match typ {
            "" => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(self.parse_list(s)),
                map: Some(self.parse_object(s)),
            },
            "object" => Atom {
                map: Some(self.parse_object(s)),
                ..Default::default()
            },
            "array" => Atom {
                list: Some(self.parse_list(s)),
                ..Default::default()
            },
            "integer" | "number" => Atom {
                scalar: Some(ScalarKind::Numeric),
                ..Default::default()
            },
            "string" => Atom {
                scalar: Some(ScalarKind::String),
                ..Default::default()
            },
            "boolean" => Atom {
                scalar: Some(ScalarKind::Boolean),
                ..Default::default()
            },
            _ => Atom {
                scalar: Some(ScalarKind::Untyped),
                ..Default::default()
            },
        }
    }

    fn parse_object(&self, s: &'a Value) -> MapType<'a> {
        let props = s.get("properties").and_then(Value::as_object);
        let elem = match s.get("additionalProperties") {
            Some(ap @ Value::Object(_)) => TypeRef::Node(ap),
            _ => TypeRef::Deduced,
        };
        MapType {
            atomic: map_type_ext(s).unwrap_or(false),
            props,
            elem,
        }
    }

    fn parse_list(&self, s: &'a Value) -> ListType<'a> {
        let elem = match s.get("items") {
            Some(it @ Value::Object(_)) => TypeRef::Node(it),
            Some(_) => TypeRef::Deduced,
            None => TypeRef::Untyped,
        };
        let (atomic, keys) = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => (false, ListKeys::default()),
            Some("map") => (
                false,
                ListKeys(
                    s.get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(Vec::as_slice)
                        .unwrap_or_default(),
                ),
            ),
            _ => (true, ListKeys::default()),
        };
        ListType { atomic, keys, elem }
    }
}
