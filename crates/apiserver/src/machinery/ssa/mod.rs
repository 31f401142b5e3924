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
//! The test `apply_records_the_applied_fields` shows a minimal apply.

pub mod empty;
pub mod fieldmanager;
pub mod fieldpath;
pub mod manager;
pub mod merge;
mod remove;
pub mod schema;

pub use fieldmanager::{ApplyError, Operation};
pub use schema::Schema;

#[cfg(test)]
mod tests;
