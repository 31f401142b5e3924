//! The pure helpers of the StatefulSet controller, after upstream's
//! `pkg/controller/statefulset/stateful_set_utils.go`: pod names and ordinals, the
//! identity and storage a pod must have, claims from `volumeClaimTemplates` and the
//! owner references the retention policy asks for, revisions of the pod template, and
//! the status rules.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, PodTemplateSpec, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use serde_json::{json, Value};

use crate::controller_utils::{get_pod_from_template, is_pod_available, is_pod_ready};
use crate::history::new_controller_revision;

/// The label naming the pod's StatefulSet pod (upstream `StatefulSetPodNameLabel`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with the pod's ordinal (upstream `PodIndexLabel`).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// The label with the name of the revision a pod was made from (upstream
/// `ControllerRevisionHashLabelKey`).
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// `podManagementPolicy: Parallel`.
pub const PARALLEL: &str = "Parallel";
/// `updateStrategy.type: RollingUpdate`.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `updateStrategy.type: OnDelete`.
pub const ON_DELETE: &str = "OnDelete";
/// Retention policy value that keeps claims.
pub const RETAIN: &str = "Retain";
/// Retention policy value that deletes claims.
pub const DELETE: &str = "Delete";

/// The parent name and ordinal of a pod name `<parent>-<ordinal>` (upstream
/// `getParentNameAndOrdinal`): `("", -1)` when the name has no such form; an ordinal
/// that is no 32-bit integer is -1.
pub fn parent_name_and_ordinal(name: &str) -> (&str, i32) {
    let Some(dash) = name.rfind('-') else {
        return ("", -1);
    };
    let (parent, digits) = (&name[..dash], &name[dash + 1..]);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return ("", -1);
    }
    (parent, digits.parse::<i32>().unwrap_or(-1))
}

fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or("")
}

/// The ordinal of a pod, -1 when its name has none.
pub fn get_ordinal(pod: &Pod) -> i32 {
    parent_name_and_ordinal(pod_name(pod)).1
}

/// The name of the pod with `ordinal` of `set`.
pub fn get_pod_name(set: &StatefulSet, ordinal: i32) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// The set's name.
pub fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or("")
}

/// Whether `pod` belongs to `set` by name (upstream `isMemberOf`).
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    parent_name_and_ordinal(pod_name(pod)).0 == set_name(set)
}

/// `spec.replicas` (1 when unset).
pub fn replicas(set: &StatefulSet) -> i32 {
    set.spec.replicas.unwrap_or(1)
}

/// The first ordinal (`spec.ordinals.start`, 0).
pub fn start_ordinal(set: &StatefulSet) -> i32 {
    set.spec
        .ordinals
        .as_ref()
        .and_then(|o| o.start)
        .unwrap_or(0)
}

/// The last ordinal: start + replicas - 1.
pub fn end_ordinal(set: &StatefulSet) -> i32 {
    start_ordinal(set) + replicas(set) - 1
}

/// Whether `ordinal` is in [start, end].
pub fn ordinal_in_range(set: &StatefulSet, ordinal: i32) -> bool {
    ordinal >= start_ordinal(set) && ordinal <= end_ordinal(set)
}

/// The name of the claim of template `claim` for the pod with `ordinal`:
/// `<claim>-<set>-<ordinal>`.
pub fn claim_name(set: &StatefulSet, claim: &PersistentVolumeClaim, ordinal: i32) -> String {
    format!(
        "{}-{}-{ordinal}",
        claim.metadata.name.as_deref().unwrap_or(""),
        set_name(set)
    )
}

/// The pod a claim named `<template>-<pod>` belongs to, given the claim template
/// names (upstream `getClaimPodName`); `""` when none fits.
pub fn claim_pod_name(set: &StatefulSet, claim: &str) -> String {
    let prefix = format!("-{}-", set_name(set));
    let Some(i) = claim.rfind(&prefix) else {
        return String::new();
    };
    let pod = &claim[i + 1..];
    let (parent, ord) = parent_name_and_ordinal(pod);
    if parent == set_name(set) && ord >= 0 {
        pod.to_string()
    } else {
        String::new()
    }
}

fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec.volume_claim_templates.as_deref().unwrap_or(&[])
}

/// The claims of the pod with `ordinal` (upstream `getPersistentVolumeClaims`), keyed
/// by template name: copies of the templates named `<claim>-<set>-<ordinal>`, with the
/// selector's `matchLabels` over the template labels.
pub fn get_persistent_volume_claims(
    set: &StatefulSet,
    ordinal: i32,
) -> BTreeMap<String, PersistentVolumeClaim> {
    let mut claims = BTreeMap::new();
    for t in claim_templates(set) {
        let mut claim = t.clone();
        claim.metadata.name = Some(claim_name(set, t, ordinal));
        claim.metadata.namespace = set.metadata.namespace.clone();
        if let Some(selector) = &set.spec.selector.match_labels {
            let labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
            for (k, v) in selector {
                labels.insert(k.clone(), v.clone());
            }
        }
        claim.status = None;
        claims.insert(t.metadata.name.clone().unwrap_or_default(), claim);
    }
    claims
}

/// Whether the pod's identity is the one its ordinal calls for (upstream
/// `identityMatches`).
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let (parent, ordinal) = parent_name_and_ordinal(pod_name(pod));
    ordinal >= 0
        && parent == set_name(set)
        && pod_name(pod) == get_pod_name(set, ordinal)
        && pod.metadata.namespace == set.metadata.namespace
        && pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_NAME_LABEL))
            .map(String::as_str)
            == Some(pod_name(pod))
}

/// Whether the pod mounts the claims its ordinal calls for (upstream
/// `storageMatches`).
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let ordinal = get_ordinal(pod);
    if ordinal < 0 {
        return false;
    }
    let volumes: BTreeMap<&str, &Volume> = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .map(|vs| vs.iter().map(|v| (v.name.as_str(), v)).collect())
        .unwrap_or_default();
    claim_templates(set).iter().all(|t| {
        let name = t.metadata.name.as_deref().unwrap_or("");
        volumes.get(name).is_some_and(|v| {
            v.persistent_volume_claim
                .as_ref()
                .is_some_and(|c| c.claim_name == claim_name(set, t, ordinal))
        })
    })
}

/// Give the pod the claim volumes of its ordinal (upstream `updateStorage`): one volume
/// per claim template, first, in template order, then the pod's other volumes.
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let ordinal = get_ordinal(pod);
    let templates = claim_templates(set);
    let spec = pod.spec.get_or_insert_with(Default::default);
    let current = spec.volumes.take().unwrap_or_default();
    let mut volumes: Vec<Volume> = templates
        .iter()
        .map(|t| Volume {
            name: t.metadata.name.clone().unwrap_or_default(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim_name(set, t, ordinal),
                read_only: Some(false),
            }),
            ..Volume::default()
        })
        .collect();
    for v in current {
        if !templates
            .iter()
            .any(|t| t.metadata.name.as_deref() == Some(v.name.as_str()))
        {
            volumes.push(v);
        }
    }
    spec.volumes = (!volumes.is_empty()).then_some(volumes);
}

/// Give the pod its name, namespace and identity labels (upstream `updateIdentity`).
pub fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let ordinal = get_ordinal(pod);
    let name = get_pod_name(set, ordinal);
    pod.metadata.name = Some(name.clone());
    pod.metadata.namespace = set.metadata.namespace.clone();
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.into(), name);
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
}

/// `updateIdentity` plus, at creation only, hostname and subdomain (upstream
/// `initIdentity`).
fn init_identity(set: &StatefulSet, pod: &mut Pod) {
    update_identity(set, pod);
    let name = pod_name(pod).to_string();
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = Some(name);
    spec.subdomain = Some(set.spec.service_name.clone().unwrap_or_default());
}

/// The pod's revision label.
pub fn get_pod_revision(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map_or("", String::as_str)
}

fn set_pod_revision(pod: &mut Pod, revision: &str) {
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.into(), revision.into());
}

/// The pod with `ordinal` of `set` (upstream `newStatefulSetPod`).
pub fn new_stateful_set_pod(set: &StatefulSet, ordinal: i32) -> Pod {
    let controller_ref = coxswain_runtime::controllerutil::new_controller_ref(set);
    let mut pod = get_pod_from_template(&set.spec.template, set_name(set), Some(controller_ref));
    pod.metadata.name = Some(get_pod_name(set, ordinal));
    init_identity(set, &mut pod);
    update_storage(set, &mut pod);
    pod
}

/// The pod with `ordinal`, at the current revision while it lies below the partition
/// of a rolling update, at the update revision otherwise (upstream
/// `newVersionedStatefulSetPod`).
pub fn new_versioned_stateful_set_pod(
    current_set: &StatefulSet,
    update_set: &StatefulSet,
    current_revision: &str,
    update_revision: &str,
    ordinal: i32,
) -> Pod {
    let strategy = current_set.spec.update_strategy.as_ref();
    let rolling = strategy.and_then(|s| s.type_.as_deref()) == Some(ROLLING_UPDATE);
    let start = start_ordinal(current_set);
    let at_current = match strategy.and_then(|s| s.rolling_update.as_ref()) {
        None => {
            rolling
                && ordinal
                    < start
                        + current_set
                            .status
                            .as_ref()
                            .and_then(|s| s.current_replicas)
                            .unwrap_or(0)
        }
        Some(ru) => ordinal < start + ru.partition.unwrap_or(0),
    };
    if at_current {
        let mut pod = new_stateful_set_pod(current_set, ordinal);
        set_pod_revision(&mut pod, current_revision);
        pod
    } else {
        let mut pod = new_stateful_set_pod(update_set, ordinal);
        set_pod_revision(&mut pod, update_revision);
        pod
    }
}

/// Whether the pod is made (a placeholder has no phase; upstream `isCreated`).
pub fn is_created(pod: &Pod) -> bool {
    !phase(pod).is_empty()
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Phase Pending.
pub fn is_pending(pod: &Pod) -> bool {
    phase(pod) == "Pending"
}

/// Phase Failed.
pub fn is_failed(pod: &Pod) -> bool {
    phase(pod) == "Failed"
}

/// Phase Succeeded.
pub fn is_succeeded(pod: &Pod) -> bool {
    phase(pod) == "Succeeded"
}

/// Has a deletion timestamp.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Running and Ready.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    phase(pod) == "Running" && is_pod_ready(pod)
}

/// Ready for `min_ready_seconds` at `now`.
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    is_pod_available(pod, min_ready_seconds, now)
}

/// Running, Ready and not terminating.
pub fn is_healthy(pod: &Pod) -> bool {
    is_running_and_ready(pod) && !is_terminating(pod)
}

/// Not healthy or not available (upstream `isUnavailable`).
pub fn is_unavailable(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    !is_healthy(pod) || !is_running_and_available(pod, min_ready_seconds, now)
}

/// Whether pods may be created and deleted in parallel (`podManagementPolicy: Parallel`).
pub fn allows_burst(set: &StatefulSet) -> bool {
    set.spec.pod_management_policy.as_deref() == Some(PARALLEL)
}

/// `spec.minReadySeconds` (0).
pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec.min_ready_seconds.unwrap_or(0)
}

/// The retention policy: (whenDeleted, whenScaled), Retain when unset.
pub fn retention_policy(set: &StatefulSet) -> (String, String) {
    let p = set.spec.persistent_volume_claim_retention_policy.as_ref();
    (
        p.and_then(|p| p.when_deleted.clone())
            .unwrap_or_else(|| RETAIN.into()),
        p.and_then(|p| p.when_scaled.clone())
            .unwrap_or_else(|| RETAIN.into()),
    )
}

/// A reference from a claim to the pod (controller, blocking deletion).
fn pod_owner_ref(pod: &Pod) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod_name(pod).into(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// What an owner is, for reference matching.
struct Owner<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
}

fn set_owner(set: &StatefulSet) -> Owner<'_> {
    Owner {
        api_version: "apps/v1",
        kind: "StatefulSet",
        name: set_name(set),
        uid: set.metadata.uid.as_deref().unwrap_or(""),
    }
}

fn pod_owner(pod: &Pod) -> Owner<'_> {
    Owner {
        api_version: "v1",
        kind: "Pod",
        name: pod_name(pod),
        uid: pod.metadata.uid.as_deref().unwrap_or(""),
    }
}

/// Whether `r` names `owner` by apiVersion, kind and name (the UID is ignored; upstream
/// `matchesRef`).
fn matches_ref(r: &OwnerReference, owner: &Owner<'_>) -> bool {
    r.api_version == owner.api_version && r.kind == owner.kind && r.name == owner.name
}

/// Whether the first reference naming `owner` has another UID (upstream
/// `hasStaleOwnerRef`).
fn has_stale_owner_ref(meta: &ObjectMeta, owner: &Owner<'_>) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| matches_ref(r, owner))
        .is_some_and(|r| r.uid != owner.uid)
}

/// Whether some reference has `uid` (upstream `hasOwnerRef`).
fn has_owner_ref(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|r| r.uid == uid)
}

/// Whether a reference to the set or the pod is not a controller reference (upstream
/// `hasNonControllerOwner`).
fn has_non_controller_owner(meta: &ObjectMeta, set: &StatefulSet, pod: &Pod) -> bool {
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let pod_uid = pod.metadata.uid.as_deref().unwrap_or("");
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| (r.uid == set_uid || r.uid == pod_uid) && r.controller != Some(true))
}

/// Whether the claim has a controller other than the set or the pod (upstream
/// `hasUnexpectedController`; never with a Retain/Retain policy).
fn has_unexpected_controller(meta: &ObjectMeta, set: &StatefulSet, pod: &Pod) -> bool {
    let (deleted, scaled) = retention_policy(set);
    if deleted == RETAIN && scaled == RETAIN {
        return false;
    }
    let (so, po) = (set_owner(set), pod_owner(pod));
    for r in meta.owner_references.iter().flatten() {
        if matches_ref(r, &so) {
            if r.uid != so.uid {
                return true;
            }
            continue;
        }
        if matches_ref(r, &po) {
            if r.uid != po.uid {
                return true;
            }
            continue;
        }
        if r.controller == Some(true) {
            return true;
        }
    }
    false
}

/// Whether the claim has a controller other than the set or the pod, which makes the
/// retention policy ignore it (upstream `hasUnexpectedController`).
pub fn has_unexpected_claim_controller(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> bool {
    has_unexpected_controller(&claim.metadata, set, pod)
}

/// (set controller ref wanted, pod controller ref wanted) for a claim of `pod`.
fn wanted_refs(set: &StatefulSet, pod: &Pod) -> (bool, bool) {
    let (deleted, scaled) = retention_policy(set);
    let condemned = !ordinal_in_range(set, get_ordinal(pod));
    let deleted = if deleted == DELETE { DELETE } else { RETAIN };
    let scaled = if scaled == DELETE { DELETE } else { RETAIN };
    match (scaled, deleted) {
        (RETAIN, RETAIN) => (false, false),
        (RETAIN, _) => (true, false),
        (_, RETAIN) => (false, condemned),
        _ => (!condemned, condemned),
    }
}

fn has_controller_ref_to(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|r| r.uid == uid && r.controller == Some(true))
}

/// Whether the claim's owner references are what the retention policy asks for
/// (upstream `isClaimOwnerUpToDate`).
pub fn is_claim_owner_up_to_date(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> bool {
    let meta = &claim.metadata;
    if has_stale_owner_ref(meta, &set_owner(set)) || has_stale_owner_ref(meta, &pod_owner(pod)) {
        return true;
    }
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let pod_uid = pod.metadata.uid.as_deref().unwrap_or("");
    if has_unexpected_controller(meta, set, pod) {
        return !(has_owner_ref(meta, set_uid) || has_owner_ref(meta, pod_uid));
    }
    if has_non_controller_owner(meta, set, pod) {
        return false;
    }
    let (want_set, want_pod) = wanted_refs(set, pod);
    has_controller_ref_to(meta, set_uid) == want_set
        && has_controller_ref_to(meta, pod_uid) == want_pod
}

/// Fix the claim's owner references for the retention policy (upstream
/// `updateClaimOwnerRefForSetAndPod`); returns whether it changed.
pub fn update_claim_owner_ref_for_set_and_pod(
    claim: &mut PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
) -> bool {
    let before = claim.metadata.owner_references.clone();
    let unexpected = has_unexpected_controller(&claim.metadata, set, pod);
    let (so, po) = (set_owner(set), pod_owner(pod));
    let mut refs: Vec<OwnerReference> = claim
        .metadata
        .owner_references
        .take()
        .unwrap_or_default()
        .into_iter()
        .filter(|r| !matches_ref(r, &so) && !matches_ref(r, &po))
        .collect();
    if !unexpected {
        let (want_set, want_pod) = wanted_refs(set, pod);
        let mut add = |r: OwnerReference| {
            if !refs.iter().any(|x| x.uid == r.uid) {
                refs.push(r);
            }
        };
        if want_set {
            add(coxswain_runtime::controllerutil::new_controller_ref(set));
        }
        if want_pod {
            add(pod_owner_ref(pod));
        }
    }
    claim.metadata.owner_references = (!refs.is_empty()).then_some(refs);
    claim.metadata.owner_references != before
}

/// Whether a claim of `pod` still names an earlier pod of the same name (upstream's
/// stale-pod check in `PodClaimIsStale`, for one claim).
pub fn claim_has_stale_pod_ref(claim: &PersistentVolumeClaim, pod: &Pod) -> bool {
    has_stale_owner_ref(&claim.metadata, &pod_owner(pod))
}

/// `maxUnavailable` of a rolling update scaled to `replicas` (rounding down), at least
/// 1 (upstream `getStatefulSetMaxUnavailable`).
pub fn get_max_unavailable(max_unavailable: Option<&IntOrString>, replicas: i32) -> i32 {
    let n = match max_unavailable {
        None => 1,
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => {
            let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
            (pct * i64::from(replicas) / 100) as i32
        }
    };
    n.max(1)
}

// ---- revisions

/// The revision data of a set (upstream `getPatch`): its pod template, marked to
/// replace the whole template when applied.
pub fn get_patch(set: &StatefulSet) -> Value {
    let mut template = serde_json::to_value(&set.spec.template).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut template {
        m.insert("$patch".into(), Value::String("replace".into()));
    } else {
        template = json!({"$patch": "replace"});
    }
    json!({"spec": {"template": template}})
}

/// The revision of `set` numbered `revision` (upstream `newRevision`): its template as
/// data, the template labels, every annotation of the set.
pub fn new_revision(
    set: &StatefulSet,
    revision: i64,
    collision_count: Option<i32>,
) -> ControllerRevision {
    let owner_ref = coxswain_runtime::controllerutil::new_controller_ref(set);
    let labels = set
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.as_ref());
    let mut cr = new_controller_revision(
        &set.metadata,
        owner_ref,
        labels,
        get_patch(set),
        revision,
        collision_count,
    );
    if let Some(a) = &set.metadata.annotations {
        cr.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .extend(a.clone());
    }
    cr
}

/// The set with the template of `revision` (upstream `ApplyRevision`; the data of a
/// StatefulSet revision replaces the template wholesale).
pub fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> StatefulSet {
    let mut out = set.clone();
    let template = revision
        .data
        .0
        .get("spec")
        .and_then(|s| s.get("template"))
        .cloned()
        .map(|mut t| {
            if let Value::Object(m) = &mut t {
                m.remove("$patch");
            }
            t
        });
    if let Some(t) = template.and_then(|t| serde_json::from_value::<PodTemplateSpec>(t).ok()) {
        out.spec.template = t;
    }
    out
}

/// Roll the current revision over when a rolling update is complete (upstream
/// `completeRollingUpdate`).
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    let rolling = set
        .spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(ROLLING_UPDATE)
        == ROLLING_UPDATE;
    let r = replicas(set);
    if rolling
        && status.updated_replicas.unwrap_or(0) == r
        && status.ready_replicas.unwrap_or(0) == r
        && status.replicas == r
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

/// Whether `status` differs from the set's stored status in what the controller
/// writes (upstream `inconsistentStatus`; the collision count alone does not count).
pub fn inconsistent_status(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
    let old = set.status.clone().unwrap_or_default();
    status.observed_generation.unwrap_or(0) > old.observed_generation.unwrap_or(0)
        || status.replicas != old.replicas
        || status.current_replicas.unwrap_or(0) != old.current_replicas.unwrap_or(0)
        || status.ready_replicas.unwrap_or(0) != old.ready_replicas.unwrap_or(0)
        || status.updated_replicas.unwrap_or(0) != old.updated_replicas.unwrap_or(0)
        || status.current_revision.as_deref().unwrap_or("")
            != old.current_revision.as_deref().unwrap_or("")
        || status.available_replicas.unwrap_or(0) != old.available_replicas.unwrap_or(0)
        || status.update_revision.as_deref().unwrap_or("")
            != old.update_revision.as_deref().unwrap_or("")
}

#[cfg(test)]
#[path = "utils_tests.rs"]
mod tests;
