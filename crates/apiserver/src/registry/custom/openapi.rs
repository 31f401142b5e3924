//! The OpenAPI v3 schema of a custom resource kind as upstream publishes it: the CRD's
//! `openAPIV3Schema` with `apiVersion`, `kind` and `metadata` described as for every
//! kind (metadata a reference to `ObjectMeta`) and the `x-kubernetes-group-version-kind`.

use serde_json::{json, Map, Value};

use super::CustomVersion;
use crate::machinery::schema::REF_PREFIX;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The component schema of a custom resource kind.
pub fn kind_schema(custom: &CustomVersion) -> Value {
    let mut schema = custom
        .schema
        .clone()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let Some(o) = schema.as_object_mut() else {
        return schema;
    };
    o.entry("type").or_insert_with(|| json!("object"));
    let props = o
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(p) = props.as_object_mut() {
        p.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}),
        );
        p.insert(
            "kind".into(),
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}),
        );
        p.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": format!("{REF_PREFIX}{OBJECT_META}")}], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    schema
}
