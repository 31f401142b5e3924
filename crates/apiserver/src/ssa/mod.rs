//! Server-side apply field management with the semantics of
//! `sigs.k8s.io/structured-merge-diff` and kube-apiserver's field manager.
//!
//! * [`fieldpath`]: path elements, field sets, `FieldsV1` encoding.
//! * [`schema`]: types from OpenAPI v3 schemas (built-in kinds and CRDs).
//! * [`merge`]: merging, field sets, comparison and validation of objects.
//! * [`manager`]: the structured-merge-diff `Updater` (update, apply,
//!   conflicts, pruning of fields no longer applied).
//! * [`fieldmanager`]: kube-apiserver's wrappers, the entry points a server
//!   calls: [`fieldmanager::update`] and [`fieldmanager::apply`].
//!
//! ```
//! use serde_json::json;
//! use coxswain_apiserver::ssa::{fieldmanager, Schema};
//! let root = json!({"type": "object", "properties": {
//!     "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}});
//! let resolve = |_: &str| None;
//! let schema = Schema::new(&root, &resolve);
//! let op = fieldmanager::Operation {
//!     manager: "kubectl", api_version: "example.com/v1", kind: "Foo",
//!     subresource: None, time: "2024-01-01T00:00:00Z", reset: None, empty: None,
//! };
//! let config = json!({"apiVersion": "example.com/v1", "kind": "Foo",
//!     "metadata": {"name": "a"}, "spec": {"replicas": 1}});
//! let applied = fieldmanager::apply(&schema, None, &config, &op, false).unwrap();
//! assert_eq!(applied.managed_fields[0]["fieldsV1"],
//!     json!({"f:spec": {"f:replicas": {}}}));
//! ```

pub mod empty;
pub mod fieldmanager;
pub mod fieldpath;
pub mod manager;
pub mod merge;
mod remove;
pub mod schema;

pub use fieldmanager::{apply, update, Applied, ApplyError, Operation};
pub use fieldpath::{Path, PathElement, Set};
pub use manager::{Conflict, ManagedFields, UpdateError, Updater, VersionedSet};
pub use schema::Schema;

#[cfg(test)]
mod tests;
