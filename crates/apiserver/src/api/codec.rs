//! Versions: objects are stored in one version per resource and served in the version
//! a request names (`autoscaling/v1` HPAs from `autoscaling/v2` storage, `events.k8s.io/v1`
//! Events from core `v1` storage), converted by [`crate::conversion`].

use bytes::Bytes;
use serde_json::Value;

use crate::catalog::{Catalog, ResourceDef};
use crate::status::{ApiError, ApiResult};
use crate::store::StoredObject;

/// How objects are rendered in a response, negotiated from `Accept`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rendering {
    /// The whole object in the request's version.
    Full,
    /// `meta.k8s.io/v1` `PartialObjectMetadata`: kind, apiVersion and metadata only.
    Metadata,
}

impl Rendering {
    /// From an `Accept` header: the first entry this server can produce wins.
    pub fn negotiate(accept: &str) -> Rendering {
        for part in accept.split(',') {
            let p = part.replace(' ', "");
            if p.contains("as=PartialObjectMetadata") && p.contains("g=meta.k8s.io") {
                return Rendering::Metadata;
            }
            if p.contains("as=") {
                continue; // tables and other forms: not served, try the next entry
            }
            if p.starts_with("application/json")
                || p.starts_with("*/*")
                || p.starts_with("application/yaml")
            {
                return Rendering::Full;
            }
        }
        Rendering::Full
    }

    /// `kind` and `apiVersion` of a list in this rendering.
    pub fn list_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (format!("{}List", def.kind), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadataList".into(), "meta.k8s.io/v1".into()),
        }
    }

    /// `kind` and `apiVersion` of one object in this rendering.
    pub fn object_kind(self, def: &ResourceDef) -> (String, String) {
        match self {
            Rendering::Full => (def.kind.to_string(), def.api_version()),
            Rendering::Metadata => ("PartialObjectMetadata".into(), "meta.k8s.io/v1".into()),
        }
    }
}

/// A stored object as `def`'s version, rendered as asked.
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
            serde_json::to_vec(&out)
                .map(Bytes::from)
                .map_err(|e| ApiError::internal(format!("serialising object: {e}")))
        }
    }
}

/// The stored representation's resource for `def`.
pub fn storage_def(def: &'static ResourceDef) -> &'static ResourceDef {
    Catalog::builtin().storage_def(def)
}

fn convert(def: &ResourceDef, from: &ResourceDef, to: &ResourceDef, v: Value) -> ApiResult<Value> {
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
