//! Response bodies: a stored object rendered as a request asked (the whole object in the
//! request's version, `PartialObjectMetadata`, or a `Table`).

use bytes::Bytes;
use serde_json::Value;

use crate::endpoints::negotiate::Rendering;
use crate::endpoints::table::Tabulator;
use crate::registry::catalog::ResourceDef;
use crate::registry::versions::present;
use crate::storage::store::StoredObject;
use apimachinery::status::{ApiError, ApiResult};

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
