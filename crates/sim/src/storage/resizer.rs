//! The simulated CSI external-resizer for [`DRIVER`], and the node side of expansion.
//!
//! As external-resizer, it takes the claims whose volume is the driver's (`spec.csi.driver`;
//! the expander's `volume.kubernetes.io/storage-resizer` annotation only matters for
//! CSI-migrated in-tree volumes, which the simulator has none of). When such a claim
//! is bound and asks for more storage than `status.capacity`, the resizer does what
//! external-resizer does:
//!
//! 1. claim status: `allocatedResources.storage` = the request,
//!    `allocatedResourceStatuses.storage: ControllerResizeInProgress`, condition
//!    `Resizing`; event `Resizing` (`External resizer is resizing volume pvc-...`);
//! 2. the volume's `spec.capacity` grows to the request (ControllerExpandVolume);
//! 3. the file system still has to grow on the node: `allocatedResourceStatuses.storage:
//!    NodeResizePending`, condition `FileSystemResizePending` (`Waiting for user to
//!    (re-)start a pod to finish file system resize of volume on node.`), event
//!    `FileSystemResizeRequired`.
//!
//! The simulated kubelet finishes ([`node_expansion`]) for a volume a running pod
//! mounts: `status.capacity` = the volume's, the resize status and conditions
//! cleared, event `FileSystemResizeSuccessful` — at once for a mounted volume, when a
//! pod next mounts it otherwise, as upstream.

use std::collections::BTreeMap;
use std::sync::Arc;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimCondition,
    PersistentVolumeClaimStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};

use super::DRIVER;
use apimachinery::quantity::parse_milli;

/// Claim resize status: the controller is expanding the volume.
pub const CONTROLLER_RESIZE_IN_PROGRESS: &str = "ControllerResizeInProgress";
/// Claim resize status: the file system must be expanded on the node.
pub const NODE_RESIZE_PENDING: &str = "NodeResizePending";
/// Claim condition while the controller expands.
pub const COND_RESIZING: &str = "Resizing";
/// Claim condition while the node expansion is pending.
pub const COND_FS_RESIZE_PENDING: &str = "FileSystemResizePending";
/// Message of [`COND_FS_RESIZE_PENDING`].
pub const FS_RESIZE_PENDING_MESSAGE: &str =
    "Waiting for user to (re-)start a pod to finish file system resize of volume on node.";

fn storage(m: Option<&BTreeMap<String, Quantity>>) -> Option<&Quantity> {
    m.and_then(|m| m.get("storage"))
}

fn value(q: Option<&Quantity>) -> Option<i128> {
    q.and_then(|q| parse_milli(&q.0))
}

/// The claim's storage request, if larger than its `status.capacity`.
pub fn wanted_growth(c: &PersistentVolumeClaim) -> Option<Quantity> {
    let req = storage(
        c.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref()),
    )?;
    let cap = value(storage(c.status.as_ref().and_then(|s| s.capacity.as_ref())))?;
    (parse_milli(&req.0)? > cap).then(|| req.clone())
}

fn with_condition(
    conds: &mut Vec<PersistentVolumeClaimCondition>,
    type_: &str,
    message: Option<&str>,
) {
    conds.retain(|c| c.type_ != type_);
    let now = Time(Timestamp::now());
    conds.push(PersistentVolumeClaimCondition {
        type_: type_.into(),
        status: "True".into(),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now),
        message: message.map(str::to_string),
        ..Default::default()
    });
}

/// The claim status after the controller started expanding to `size`.
pub fn controller_resize_started(
    s: &PersistentVolumeClaimStatus,
    size: &Quantity,
) -> PersistentVolumeClaimStatus {
    let mut s = s.clone();
    s.allocated_resources
        .get_or_insert_with(Default::default)
        .insert("storage".into(), size.clone());
    s.allocated_resource_statuses
        .get_or_insert_with(Default::default)
        .insert("storage".into(), CONTROLLER_RESIZE_IN_PROGRESS.into());
    let mut conds = s.conditions.take().unwrap_or_default();
    conds.retain(|c| c.type_ != COND_FS_RESIZE_PENDING);
    with_condition(&mut conds, COND_RESIZING, None);
    s.conditions = Some(conds);
    s
}

/// The claim status once the controller expanded and the node must follow.
pub fn node_resize_pending(s: &PersistentVolumeClaimStatus) -> PersistentVolumeClaimStatus {
    let mut s = s.clone();
    s.allocated_resource_statuses
        .get_or_insert_with(Default::default)
        .insert("storage".into(), NODE_RESIZE_PENDING.into());
    let mut conds = s.conditions.take().unwrap_or_default();
    conds.retain(|c| c.type_ != COND_RESIZING);
    with_condition(
        &mut conds,
        COND_FS_RESIZE_PENDING,
        Some(FS_RESIZE_PENDING_MESSAGE),
    );
    s.conditions = Some(conds);
    s
}

/// The node side: the claim status after the file system of `pv` grew, if the claim
/// waits for it (`NodeResizePending` or `FileSystemResizePending`, and the volume is
/// larger than `status.capacity`).
pub fn node_expansion(
    c: &PersistentVolumeClaim,
    pv: &PersistentVolume,
) -> Option<PersistentVolumeClaimStatus> {
    let s = c.status.as_ref()?;
    let pending = s
        .allocated_resource_statuses
        .as_ref()
        .and_then(|m| m.get("storage"))
        .is_some_and(|v| v == NODE_RESIZE_PENDING)
        || s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == COND_FS_RESIZE_PENDING && c.status == "True");
    if !pending {
        return None;
    }
    let pv_size = storage(pv.spec.as_ref().and_then(|s| s.capacity.as_ref()))?;
    let cap = value(storage(s.capacity.as_ref())).unwrap_or(0);
    if parse_milli(&pv_size.0)? < cap {
        return None;
    }
    let mut s = s.clone();
    s.capacity
        .get_or_insert_with(Default::default)
        .insert("storage".into(), pv_size.clone());
    if let Some(m) = s.allocated_resource_statuses.as_mut() {
        m.remove("storage");
    }
    if s.allocated_resource_statuses
        .as_ref()
        .is_some_and(|m| m.is_empty())
    {
        s.allocated_resource_statuses = None;
    }
    if let Some(conds) = s.conditions.as_mut() {
        conds.retain(|c| c.type_ != COND_FS_RESIZE_PENDING && c.type_ != COND_RESIZING);
    }
    if s.conditions.as_ref().is_some_and(|c| c.is_empty()) {
        s.conditions = None;
    }
    Some(s)
}

/// Whether a bound claim asks for more than it has and is not waiting for the node
/// (whether its volume is the driver's is checked on the volume).
pub fn wants_resize(c: &PersistentVolumeClaim) -> bool {
    c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
        && wanted_growth(c).is_some()
        && c.status
            .as_ref()
            .and_then(|s| s.allocated_resource_statuses.as_ref())
            .and_then(|m| m.get("storage"))
            .is_none_or(|v| {
                v != NODE_RESIZE_PENDING || {
                    // a larger request than the one being finished on the node
                    let alloc = value(storage(
                        c.status
                            .as_ref()
                            .and_then(|s| s.allocated_resources.as_ref()),
                    ));
                    let req = wanted_growth(c).and_then(|q| parse_milli(&q.0));
                    req > alloc
                }
            })
}

/// The simulated external-resizer.
pub struct Resizer {
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
}

impl Resizer {
    /// The resizer, reading from `cache`.
    pub fn new(cache: Arc<Cache>, client: kube::Client, recorder: EventRecorder) -> Arc<Self> {
        cache.informer::<PersistentVolume>();
        Arc::new(Resizer {
            cache,
            client,
            recorder,
        })
    }

    fn event(&self, c: &PersistentVolumeClaim, type_: EventType, reason: &str, note: &str) {
        self.recorder
            .event(&object_reference(c), None, type_, reason, "Resize", note);
    }

    /// Expand one claim's volume, if asked.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let Some(claim) = self.cache.get::<PersistentVolumeClaim>(&key).await else {
            return Ok(Action::Done);
        };
        if !wants_resize(&claim) {
            return Ok(Action::Done);
        }
        let Some(size) = wanted_growth(&claim) else {
            return Ok(Action::Done);
        };
        let Some(pv_name) = claim.spec.as_ref().and_then(|s| s.volume_name.clone()) else {
            return Ok(Action::Done);
        };
        let Some(pv) = self
            .cache
            .get::<PersistentVolume>(&ObjectKey::cluster(&pv_name))
            .await
        else {
            return Ok(Action::Done);
        };
        if pv
            .spec
            .as_ref()
            .and_then(|s| s.csi.as_ref())
            .map(|c| c.driver.as_str())
            != Some(DRIVER)
        {
            return Ok(Action::Done);
        }
        let claims: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), key.namespace().unwrap_or("default"));
        let pvs: Api<PersistentVolume> = Api::all(self.client.clone());
        let conflict =
            |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 404);

        // 1. the claim says the controller is at work
        let mut updated = (*claim).clone();
        updated.metadata.managed_fields = None;
        updated.status = Some(controller_resize_started(
            &claim.status.clone().unwrap_or_default(),
            &size,
        ));
        let updated = match claims
            .replace_status(key.name(), &PostParams::default(), &updated)
            .await
        {
            Ok(c) => c,
            Err(e) if conflict(&e) => return Ok(Action::Done),
            Err(e) => return Err(e.into()),
        };
        self.event(
            &claim,
            EventType::Normal,
            "Resizing",
            &format!("External resizer is resizing volume {pv_name}"),
        );
        // 2. ControllerExpandVolume: the volume grows
        let pv_size =
            value(storage(pv.spec.as_ref().and_then(|s| s.capacity.as_ref()))).unwrap_or(0);
        if parse_milli(&size.0).unwrap_or(0) > pv_size {
            let mut grown = (*pv).clone();
            grown.metadata.managed_fields = None;
            grown
                .spec
                .get_or_insert_with(Default::default)
                .capacity
                .get_or_insert_with(Default::default)
                .insert("storage".into(), size.clone());
            match pvs.replace(&pv_name, &PostParams::default(), &grown).await {
                Ok(_) => {}
                Err(e) if conflict(&e) => return Ok(Action::Requeue),
                Err(e) => {
                    self.event(
                        &claim,
                        EventType::Warning,
                        "VolumeResizeFailed",
                        &format!("resize volume {pv_name:?} by resizer {DRIVER:?} failed: {e}"),
                    );
                    return Err(e.into());
                }
            }
        }
        // 3. the file system follows on the node
        let mut pending = updated.clone();
        pending.metadata.managed_fields = None;
        pending.status = Some(node_resize_pending(
            &updated.status.clone().unwrap_or_default(),
        ));
        match claims
            .replace_status(key.name(), &PostParams::default(), &pending)
            .await
        {
            Ok(_) => {}
            Err(e) if conflict(&e) => return Ok(Action::Requeue),
            Err(e) => return Err(e.into()),
        }
        self.event(
            &claim,
            EventType::Normal,
            "FileSystemResizeRequired",
            "Require file system resize of volume on node",
        );
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(request: &str, capacity: &str, status: serde_json::Value) -> PersistentVolumeClaim {
        let mut v = json!({
            "metadata": {"name": "data", "namespace": "ns"},
            "spec": {"resources": {"requests": {"storage": request}}, "volumeName": "pv"},
            "status": {"phase": "Bound", "capacity": {"storage": capacity}},
        });
        if let (Some(a), serde_json::Value::Object(b)) = (v["status"].as_object_mut(), status) {
            a.extend(b);
        }
        serde_json::from_value(v).expect("claim")
    }

    #[test]
    fn resize_goes_through_controller_and_node() {
        let c = claim("2Gi", "1Gi", json!({}));
        assert!(wants_resize(&c));
        assert!(!wants_resize(&claim("1Gi", "1Gi", json!({}))));
        assert!(!wants_resize(&claim("512Mi", "1Gi", json!({}))));
        let size = wanted_growth(&c).expect("growth");
        let s = controller_resize_started(c.status.as_ref().unwrap(), &size);
        let v = serde_json::to_value(&s).expect("json");
        assert_eq!(v["allocatedResources"]["storage"], "2Gi");
        assert_eq!(
            v["allocatedResourceStatuses"]["storage"],
            CONTROLLER_RESIZE_IN_PROGRESS
        );
        assert_eq!(v["conditions"][0]["type"], COND_RESIZING);
        let s = node_resize_pending(&s);
        let v = serde_json::to_value(&s).expect("json");
        assert_eq!(
            v["allocatedResourceStatuses"]["storage"],
            NODE_RESIZE_PENDING
        );
        assert_eq!(v["conditions"].as_array().map(Vec::len), Some(1));
        assert_eq!(v["conditions"][0]["type"], COND_FS_RESIZE_PENDING);
        assert_eq!(v["conditions"][0]["message"], FS_RESIZE_PENDING_MESSAGE);
        assert_eq!(v["capacity"]["storage"], "1Gi", "not before the node");
        // pending on the node: not the resizer's any more
        let mut waiting = c.clone();
        waiting.status = Some(s.clone());
        assert!(!wants_resize(&waiting));
        let pv: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "2Gi"}}}))
        .expect("pv");
        let done = node_expansion(&waiting, &pv).expect("expanded");
        let v = serde_json::to_value(&done).expect("json");
        assert_eq!(v["capacity"]["storage"], "2Gi");
        assert!(v.get("conditions").is_none());
        assert!(v.get("allocatedResourceStatuses").is_none());
        assert_eq!(v["allocatedResources"]["storage"], "2Gi");
        // nothing pending: nothing to do
        assert!(node_expansion(&c, &pv).is_none());
    }
}
