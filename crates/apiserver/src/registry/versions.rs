//! Versions: objects are stored in one version per resource and served in the version
//! a request names (`autoscaling/v1` HPAs from `autoscaling/v2` storage, `events.k8s.io/v1`
//! Events from core `v1` storage), converted by [`crate::registry::conversion`]; custom
//! resources convert as their CRD says.

use bytes::Bytes;
use serde_json::Value;

use crate::registry::catalog::{Catalog, ResourceDef};
use crate::storage::store::StoredObject;
use apimachinery::status::{ApiError, ApiResult};

/// The stored representation's resource for `def`.
pub fn storage_def(def: &'static ResourceDef) -> &'static ResourceDef {
    Catalog::builtin().storage_def(def)
}

fn convert(def: &ResourceDef, from: &ResourceDef, to: &ResourceDef, v: Value) -> ApiResult<Value> {
    def.strategy
        .convert(v, &from.api_version(), &to.api_version())
        .map_err(|e| {
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

/// An object of `def`'s version (already round-tripped as `def`'s version) as the
/// stored version: converted, and round-tripped as the stored version's kind.
pub fn to_storage(def: &'static ResourceDef, v: Value) -> ApiResult<Value> {
    if !converts(def) {
        return Ok(v);
    }
    let to = storage_def(def);
    let mut stored = convert(def, def, to, v)?;
    crate::registry::rest::go_roundtrip(to, &mut stored, crate::registry::rest::Mode::Storage);
    Ok(stored)
}
