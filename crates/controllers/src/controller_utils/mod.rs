//! What the workload controllers share, after upstream's `pkg/controller/controller_utils.go`,
//! `pkg/controller/controller_ref_manager.go` and `pkg/api/v1/pod/util.go`.
//!
//! - [`expectations`]: per-controller counts of creations and deletions that were
//!   issued but not yet seen in the cache, so that a controller never acts twice on
//!   the same stale picture (upstream `ControllerExpectations` and
//!   `UIDTrackingControllerExpectations`).
//! - [`pod`]: readiness and availability of a pod, active and terminating pods, the
//!   next moment a ready pod becomes available.
//! - [`ranking`]: which pods to delete first when scaling down (`ActivePodsWithRanks`).
//! - [`pod_control`]: pods from a template (`GetPodFromTemplate`), creation and
//!   deletion with events (`RealPodControl`), and slow-start batching.
//! - [`job`]: whether a Job finished, and how (`pkg/controller/job/util`).
//! - [`ref_manager`]: claiming children: adopting orphans that match a selector,
//!   releasing owned children that no longer match (`ControllerRefManager`).
//! - [`owner_index`]: the children a claim can act on (controlled by the claimer or
//!   orphans) and the pods a selector matches, through cache indexes instead of
//!   namespace scans.

pub mod consistency;
pub mod expectations;
pub mod job;
pub mod owner_index;
pub mod pod;
pub mod pod_control;
pub mod ranking;
pub mod ref_manager;
#[cfg(test)]
pub(crate) mod store_feed;

pub use expectations::{ControllerExpectations, EXPECTATIONS_TIMEOUT};
pub use pod::{
    filter_active_pods, filter_terminating_pods, is_pod_active, is_pod_available, is_pod_ready,
    is_pod_terminating, next_pod_availability_check, pod_key,
};
pub use pod_control::{
    get_pod_from_template, slow_start_batch, PodControl, BURST_REPLICAS, FAILED_CREATE_POD_REASON,
    FAILED_DELETE_POD_REASON, SLOW_START_INITIAL_BATCH_SIZE, SUCCESSFUL_CREATE_POD_REASON,
    SUCCESSFUL_DELETE_POD_REASON,
};
pub use ranking::{sort_active_pods_with_ranks, ActivePodsWithRanks, POD_DELETION_COST};
pub use ref_manager::{claim_pods, ClaimAction, ControllerIdentity};
