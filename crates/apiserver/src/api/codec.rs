//! Versions: objects are stored in one version per resource and served in the version
//! a request names (`autoscaling/v1` HPAs from `autoscaling/v2` storage, `events.k8s.io/v1`
//! Events from core `v1` storage), converted by [`crate::conversion`].

use bytes::Bytes;
use serde_json::Value;

use crate::catalog::{Catalog, ResourceDef};
use crate::store::StoredObject;
use crate::table::{TableOptions, Tabulator};
use apimachinery::status::{ApiError, ApiResult};

/// How objects are rendered in a response, negotiated from `Accept`
/// ([`super::negotiate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rendering {
    /// The whole object in the request's version.
    Full,
    /// `meta.k8s.io/v1` `PartialObjectMetadata`: kind, apiVersion and metadata only.
    Metadata,
    /// A `meta.k8s.io` `Table` ([`crate::table`]).
    Table(TableOptions),
}

impl Rendering {
    /// From an `Accept` header: the first clause this server can produce wins; 406 when
    /// there is none.
    pub fn negotiate(accept: &str) -> ApiResult<Rendering> {
        super::negotiate::negotiate(accept)
    }

    /// `kind` and `apiVersion` of a list in this rendering.
    pub fn list_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (def.list_kind(), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadataList".into(), "meta.k8s.io/v1".into()),
            Rendering::Table(o) => ("Table".into(), o.version.api_version().into()),
        }
    }

    /// `kind` and `apiVersion` of one object in this rendering.
    pub fn object_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (def.kind.to_string(), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadata".into(), "meta.k8s.io/v1".into()),
            Rendering::Table(o) => ("Table".into(), o.version.api_version().into()),
        }
    }
}

/// A stored object as `def`'s version, rendered as asked (a table of one row for
/// [`Rendering::Table`]).
pub fn render(
    def: &'static ResourceDef,
    obj: &StoredObject,
    rendering: Rendering,
) -> ApiResult<Bytes> {
    match rendering {
        Rendering::Full => present(def, obj),
        Rendering::Metadata => {
            let v = obj.value()?;
            let meta = v
                .get("metadata")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            let out = serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta});
            to_bytes(&out)
        }
        Rendering::Table(opts) => {
            to_bytes(&Tabulator::new(def, opts).object_table(&obj.value()?, true)?)
        }
    }
}

/// Serialise a value.
pub fn to_bytes(v: &Value) -> ApiResult<Bytes> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(format!("serialising object: {e}")))
}

/// The stored representation's resource for `def`.
pub fn storage_def(def: &'static ResourceDef) -> &'static ResourceDef {
    Catalog::builtin().storage_def(def)
}

fn convert(def: &ResourceDef, from: &ResourceDef, to: &ResourceDef, v: Value) -> ApiResult<Value> {
    if def.custom.is_some() {
        return Ok(crate::crd::convert_none(v, &to.api_version()));
    }
    crate::conversion::convert(def.kind, &from.api_version(), &to.api_version(), v).map_err(|e| {
        ApiError::internal(format!(
            "converting {} from {} to {}: {e}",
            def.kind,
            from.api_version(),
            to.api_version()
        ))
    })
}

/// Whether `def` is served from another version's storage.
pub fn converts(def: &ResourceDef) -> bool {
    def.storage_of.is_some()
}

/// A stored object as `def`'s version (bytes).
pub fn present(def: &'static ResourceDef, obj: &StoredObject) -> ApiResult<Bytes> {
    if !converts(def) {
        return Ok(obj.json.clone());
    }
    let v = present_value(def, obj.value()?)?;
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(format!("serialising object: {e}")))
}

/// A stored object value as `def`'s version.
pub fn present_value(def: &'static ResourceDef, v: Value) -> ApiResult<Value> {
    if !converts(def) {
        return Ok(v);
    }
    convert(def, storage_def(def), def, v)
}

/// An object of `def`'s version as the stored version.
pub fn to_storage(def: &'static ResourceDef, v: Value) -> ApiResult<Value> {
    if !converts(def) {
        return Ok(v);
    }
    convert(def, def, storage_def(def), v)
}
