//! ControllerRevision history, after upstream's `pkg/controller/history`.
//!
//! A controller that rolls out templates (StatefulSet, DaemonSet) records each distinct
//! template it has seen as an immutable `apps/v1` ControllerRevision: `data` holds the
//! template as a patch of the owner, `revision` orders the history, the name is
//! `<owner>-<hash>` and the label `controller.kubernetes.io/hash` carries the hash.
//!
//! - the pure part: [`new_controller_revision`], [`hash_controller_revision`] (FNV-1 32 of
//!   the data as Go's `encoding/json` writes it, plus the collision count),
//!   [`controller_revision_name`], [`equal_revision`], [`find_equal_revisions`],
//!   [`sort_controller_revisions`], [`next_revision`];
//! - [`History`]: listing a controller's revisions from the cache, and creating (with
//!   upstream's collision handling), renumbering, deleting, adopting and releasing them
//!   through the API server.

mod client;

pub use client::{History, HistoryError};

use std::cmp::Ordering;
use std::collections::BTreeMap;

use apimachinery::gofmt;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::Value;

use crate::deployment::util::hash::safe_encode_string;

/// The label holding a ControllerRevision's hash (upstream `ControllerRevisionHashLabel`).
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller.kubernetes.io/hash";

/// Longest owner-name prefix of a revision name: 253 minus the dash and the hash
/// (upstream `ControllerRevisionName` truncates to 223 bytes).
const MAX_PREFIX_LEN: usize = 223;

/// The name of the revision of the owner `prefix` with hash `hash`: `<prefix>-<hash>`,
/// the prefix cut to 223 bytes.
pub fn controller_revision_name(prefix: &str, hash: &str) -> String {
    let mut end = prefix.len().min(MAX_PREFIX_LEN);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}-{hash}", &prefix[..end])
}

/// The bytes upstream keeps in `data.raw`: the data as Go's `encoding/json` marshals
/// an unstructured value (keys sorted at every level, HTML characters escaped).
pub fn revision_data_bytes(rev: &ControllerRevision) -> String {
    match &rev.data {
        RawExtension(Value::Null) => String::new(),
        RawExtension(v) => gofmt::json(v),
    }
}

/// FNV-1 (not FNV-1a), 32 bit.
struct Fnv1(u32);

impl Fnv1 {
    fn new() -> Self {
        Fnv1(0x811c_9dc5)
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.wrapping_mul(0x0100_0193);
            self.0 ^= u32::from(*b);
        }
    }
}

/// The hash of a revision (upstream `HashControllerRevision`): FNV-1 32 over its data
/// and, when `probe` is given, the probe's decimal digits, safe-encoded.
pub fn hash_controller_revision(rev: &ControllerRevision, probe: Option<i32>) -> String {
    let mut h = Fnv1::new();
    h.write(revision_data_bytes(rev).as_bytes());
    if let Some(p) = probe {
        h.write(p.to_string().as_bytes());
    }
    safe_encode_string(&h.0.to_string())
}

/// A new revision of the owner `parent` (whose controller reference is `owner_ref`):
/// labels from `template_labels` plus the hash label, `data`, number `revision`, named
/// `<parent>-<hash>` with the hash of the data and `collision_count` (upstream
/// `NewControllerRevision`). The namespace is the parent's.
pub fn new_controller_revision(
    parent: &ObjectMeta,
    owner_ref: OwnerReference,
    template_labels: Option<&BTreeMap<String, String>>,
    data: Value,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let mut labels = template_labels.cloned().unwrap_or_default();
    let mut cr = ControllerRevision {
        metadata: ObjectMeta {
            namespace: parent.namespace.clone(),
            owner_references: Some(vec![owner_ref]),
            ..ObjectMeta::default()
        },
        data: RawExtension(data),
        revision: Some(revision),
    };
    let hash = hash_controller_revision(&cr, collision_count);
    cr.metadata.name = Some(controller_revision_name(
        parent.name.as_deref().unwrap_or(""),
        &hash,
    ));
    labels.insert(CONTROLLER_REVISION_HASH_LABEL.to_string(), hash);
    cr.metadata.labels = Some(labels);
    cr
}

/// A revision's number (0 when unset).
pub fn revision_number(rev: &ControllerRevision) -> i64 {
    rev.revision.unwrap_or(0)
}

fn hash_label_i32(rev: &ControllerRevision) -> Option<i32> {
    rev.metadata
        .labels
        .as_ref()?
        .get(CONTROLLER_REVISION_HASH_LABEL)?
        .parse()
        .ok()
}

/// Whether two revisions hold the same data (upstream `EqualRevision`): two absent
/// revisions are equal, one absent is not; hash labels that both parse as base-10
/// int32 and differ make them unequal; otherwise their data bytes decide.
pub fn equal_revision(a: Option<&ControllerRevision>, b: Option<&ControllerRevision>) -> bool {
    let (a, b) = match (a, b) {
        (None, None) => return true,
        (Some(a), Some(b)) => (a, b),
        _ => return false,
    };
    if let (Some(x), Some(y)) = (hash_label_i32(a), hash_label_i32(b)) {
        if x != y {
            return false;
        }
    }
    revision_data_bytes(a) == revision_data_bytes(b)
}

/// The revisions of `revisions` equal to `needle`, in their order (upstream
/// `FindEqualRevisions`).
pub fn find_equal_revisions<'a, R: std::borrow::Borrow<ControllerRevision>>(
    revisions: &'a [R],
    needle: &ControllerRevision,
) -> Vec<&'a R> {
    revisions
        .iter()
        .filter(|r| equal_revision(Some((*r).borrow()), Some(needle)))
        .collect()
}

/// Upstream `byRevision.Less`: by revision number, then creation time, then name.
pub fn compare_revisions(a: &ControllerRevision, b: &ControllerRevision) -> Ordering {
    revision_number(a)
        .cmp(&revision_number(b))
        .then_with(|| {
            let t = |r: &ControllerRevision| r.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(a).cmp(&t(b))
        })
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Sort revisions oldest first (stable; upstream `SortControllerRevisions`).
pub fn sort_controller_revisions<R: std::borrow::Borrow<ControllerRevision>>(revisions: &mut [R]) {
    revisions.sort_by(|a, b| compare_revisions(a.borrow(), b.borrow()));
}

/// The number of the next revision after the sorted `revisions`: one more than the
/// last, or 1 (upstream `nextRevision`).
pub fn next_revision<R: std::borrow::Borrow<ControllerRevision>>(revisions: &[R]) -> i64 {
    revisions
        .last()
        .map_or(1, |r| revision_number(r.borrow()) + 1)
}

#[cfg(test)]
mod tests;
