//! OpenAPI v3 component schemas of Rust API types (k8s-openapi's), with what
//! kube-apiserver adds to them: patch strategies and merge keys, list and map types,
//! atomic structs.
//!
//! [`Definitions::generate`] turns the types a caller registers into schemas; the
//! registry registers every kind of its catalogue once (`registry::catalog::definitions`).
//! The same definitions serve three jobs: the `/openapi/v3` documents, pruning and
//! reporting of unknown fields (`fieldValidation`), and the type knowledge strategic merge
//! patch needs.

pub mod patch_meta;

use schemars::{JsonSchema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Prefix of component references.
pub const REF_PREFIX: &str = "#/components/schemas/";

/// Registers a type's schema (and those it refers to) with a generator.
pub type Register = fn(&mut SchemaGenerator);

/// [`Register`] of type `T`.
pub fn register<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

/// Whether `value` decodes as type `T` (what a typed decode of a request body checks:
/// wrong field types are 400s), with serde's message otherwise.
pub fn decodes_as<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    T::deserialize(value).map(|_| ()).map_err(|e| e.to_string())
}

/// Generated definitions, keyed by definition name (`io.k8s.api.apps.v1.Deployment`).
pub struct Definitions(Map<String, Value>);

impl Definitions {
    /// The definitions of the types `types` register (and of every type they refer to).
    pub fn generate(types: impl IntoIterator<Item = Register>) -> Definitions {
        let mut generator = schemars::generate::SchemaSettings::openapi3().into_generator();
        for register in types {
            register(&mut generator);
        }
        let mut defs = generator.take_definitions(true);
        for (_, schema) in defs.iter_mut() {
            normalise_refs(schema);
        }
        add_patch_extensions(&mut defs);
        untyped_json_schema_types(&mut defs);
        for name in ATOMIC_STRUCTS {
            if let Some(d) = defs.get_mut(*name).and_then(Value::as_object_mut) {
                d.insert(
                    "x-kubernetes-map-type".into(),
                    Value::String("atomic".into()),
                );
            }
        }
        Definitions(defs)
    }

    /// Every definition.
    pub fn all(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// Follow a property schema to the object schema it describes, if any.
    fn resolve(&self, schema: &Value) -> Option<&Value> {
        ref_name(schema).and_then(|n| self.get(n))
    }

    /// Remove fields the schema of `definition_name` does not know from `value`; return
    /// their paths (`spec.foo`, `spec.containers[0].bar`) in document order. Times are
    /// written as the Go types print them ([`apimachinery::time::normalize_time`]).
    pub fn prune_unknown(&self, definition_name: &str, value: &mut Value) -> Vec<String> {
        let mut unknown = Vec::new();
        if let Some(def) = self.get(definition_name) {
            self.prune_with(def, value, String::new(), &mut unknown);
        }
        unknown
    }

    /// The element definition of field `field` of definition `ty`: the referenced object
    /// type of the field itself, of its array items or of its map values.
    pub fn field_elem_type(&self, ty: &str, field: &str) -> Option<(&str, &Value)> {
        let prop = self.get(ty)?.get("properties")?.get(field)?;
        let target = if let Some(n) = ref_name(prop) {
            Some(n)
        } else if let Some(items) = prop.get("items") {
            ref_name(items)
        } else if let Some(ap) = prop.get("additionalProperties") {
            ref_name(ap)
        } else {
            None
        };
        let name = target?;
        let (k, _) = self.0.get_key_value(name)?;
        Some((k.as_str(), prop))
    }

    fn prune_with(
        &self,
        schema: &Value,
        value: &mut Value,
        path: String,
        unknown: &mut Vec<String>,
    ) {
        if let Value::String(s) = value {
            match ref_name(schema) {
                Some(TIME) => apimachinery::time::normalize_time(s, false),
                Some(MICRO_TIME) => apimachinery::time::normalize_time(s, true),
                _ => {}
            }
            return;
        }
        let schema = self.resolve(schema).unwrap_or(schema);
        if schema
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
        {
            return;
        }
        match value {
            Value::Object(obj) => {
                if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                    let keys: Vec<String> = obj.keys().cloned().collect();
                    for k in keys {
                        let child_path = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        match props.get(&k) {
                            Some(child_schema) => {
                                if let Some(child) = obj.get_mut(&k) {
                                    self.prune_with(child_schema, child, child_path, unknown);
                                }
                            }
                            None => {
                                obj.remove(&k);
                                unknown.push(child_path);
                            }
                        }
                    }
                } else if let Some(ap) =
                    schema.get("additionalProperties").filter(|a| a.is_object())
                {
                    for (k, child) in obj.iter_mut() {
                        let child_path = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        self.prune_with(ap, child, child_path, unknown);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = schema.get("items") {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.prune_with(item_schema, item, format!("{path}[{i}]"), unknown);
                    }
                }
            }
            _ => {}
        }
    }
}
/// Types declared `+structType=atomic` upstream (`x-kubernetes-map-type: atomic` on the
/// definition in kube-apiserver's OpenAPI): server-side apply owns them as a whole.
const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.api.autoscaling.v1.CrossVersionObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.EndpointAddress",
    "io.k8s.api.core.v1.EndpointPort",
    "io.k8s.api.core.v1.FileKeySelector",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.ScopeSelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.SecretReference",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.discovery.v1.EndpointPort",
    "io.k8s.api.networking.v1.ServiceBackendPort",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.rbac.v1.Subject",
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
];

/// The apiextensions types holding arbitrary JSON (`JSON`, and the `JSONSchemaPropsOr*`
/// unions) carry no type upstream (only a description): any value is accepted, and
/// server-side apply treats them as deduced (atomic) values.
fn untyped_json_schema_types(defs: &mut Map<String, Value>) {
    for name in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        let key = format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}");
        if let Some(d) = defs.get_mut(&key).and_then(Value::as_object_mut) {
            d.retain(|k, _| k == "description");
        }
    }
}

/// Put the patch strategy, merge key, list type and map type of every field the
/// [`crate::machinery::schema::patch_meta`] table knows onto its property schema.
fn add_patch_extensions(defs: &mut Map<String, Value>) {
    for (def, field, meta) in crate::machinery::schema::patch_meta::all() {
        let Some(prop) = defs
            .get_mut(*def)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(*field))
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        if let Some(s) = meta.patch_strategy {
            prop.insert(
                "x-kubernetes-patch-strategy".into(),
                Value::String(s.into()),
            );
        }
        if let Some(k) = meta.patch_merge_key {
            prop.insert(
                "x-kubernetes-patch-merge-key".into(),
                Value::String(k.into()),
            );
        }
        if let Some(t) = meta.list_type {
            prop.insert("x-kubernetes-list-type".into(), Value::String(t.into()));
        }
        if !meta.list_map_keys.is_empty() {
            let keys = meta
                .list_map_keys
                .iter()
                .map(|k| Value::String((*k).into()))
                .collect();
            prop.insert("x-kubernetes-list-map-keys".into(), Value::Array(keys));
        }
        if let Some(t) = meta.map_type {
            prop.insert("x-kubernetes-map-type".into(), Value::String(t.into()));
        }
    }
}

/// Rewrite `{"$ref": X, "description": ...}` as `{"allOf": [{"$ref": X}], ...}` (OpenAPI
/// 3.0 ignores siblings of `$ref`; upstream documents use `allOf`).
fn normalise_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // a `$ref` property of a properties map (JSONSchemaProps has one) is not a ref
            if m.len() > 1 && m.get("$ref").is_some_and(Value::is_string) {
                if let Some(r) = m.remove("$ref") {
                    m.insert(
                        "allOf".into(),
                        Value::Array(vec![serde_json::json!({"$ref": r})]),
                    );
                }
            }
            for (_, child) in m.iter_mut() {
                normalise_refs(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalise_refs),
        _ => {}
    }
}

/// The definition a schema refers to (`$ref` or a one-element `allOf`).
pub fn ref_name(schema: &Value) -> Option<&str> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.strip_prefix(REF_PREFIX);
    }
    schema
        .get("allOf")?
        .as_array()?
        .first()?
        .get("$ref")?
        .as_str()?
        .strip_prefix(REF_PREFIX)
}

const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::{apps, coordination, core};
    use serde_json::json;
    use std::sync::OnceLock;

    fn defs() -> &'static Definitions {
        static D: OnceLock<Definitions> = OnceLock::new();
        D.get_or_init(|| {
            Definitions::generate([
                register::<coordination::v1::Lease> as Register,
                register::<core::v1::Pod>,
                register::<core::v1::ConfigMap>,
                register::<apps::v1::Deployment>,
            ])
        })
    }

    fn prune_unknown(name: &str, v: &mut Value) -> Vec<String> {
        defs().prune_unknown(name, v)
    }

    #[test]
    fn times_are_stored_as_go_prints_them() {
        let mut l = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "creationTimestamp": "2026-11-29T10:00:00.5+02:00"},
            "spec": {"holderIdentity": "me", "renewTime": "2026-11-29T22:00:45.858494789+02:00",
                "acquireTime": "2026-11-29T20:00:45Z", "leaseDurationSeconds": 15}});
        prune_unknown("io.k8s.api.coordination.v1.Lease", &mut l);
        assert_eq!(l["metadata"]["creationTimestamp"], "2026-11-29T08:00:00Z");
        assert_eq!(l["spec"]["renewTime"], "2026-11-29T20:00:45.858494Z");
        assert_eq!(l["spec"]["acquireTime"], "2026-11-29T20:00:45.000000Z");
        assert_eq!(l["spec"]["holderIdentity"], "me");
        // conditions in lists, and values that are not times are left alone
        let mut p = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:00:00.123-01:00"},
            {"type": "X", "status": "True", "lastTransitionTime": "yesterday"}]}});
        prune_unknown("io.k8s.api.core.v1.Pod", &mut p);
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-29T11:00:00Z"
        );
        assert_eq!(
            p["status"]["conditions"][1]["lastTransitionTime"],
            "yesterday"
        );
    }

    #[test]
    fn prunes_unknown_fields_with_paths() {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x", "bogus": 1},
            "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i", "nope": true}]}}}
        });
        let unknown = prune_unknown("io.k8s.api.apps.v1.Deployment", &mut d);
        assert_eq!(
            unknown,
            vec!["metadata.bogus", "spec.template.spec.containers[0].nope"]
        );
        assert!(d["metadata"].get("bogus").is_none());
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "i");
        let mut cm = json!({"data": {"a": "b"}, "metadata": {"labels": {"x": "y"}}});
        assert!(prune_unknown("io.k8s.api.core.v1.ConfigMap", &mut cm).is_empty());
    }

    #[test]
    fn typed_check_catches_wrong_types() {
        let bad = json!({"spec": {"replicas": "three", "selector": {}, "template": {}}});
        assert!(decodes_as::<apps::v1::Deployment>(&bad).is_err());
        let good = json!({"metadata": {"name": "x"}, "spec": {"replicas": 3, "selector": {}, "template": {}}});
        assert!(decodes_as::<apps::v1::Deployment>(&good).is_ok());
    }

    #[test]
    fn elem_types() {
        let (t, _) = defs()
            .field_elem_type("io.k8s.api.core.v1.PodSpec", "containers")
            .expect("containers");
        assert_eq!(t, "io.k8s.api.core.v1.Container");
        let (t, _) = defs()
            .field_elem_type("io.k8s.api.apps.v1.Deployment", "spec")
            .expect("spec");
        assert_eq!(t, "io.k8s.api.apps.v1.DeploymentSpec");
    }
}
