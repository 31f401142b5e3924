//! What one sync of a Job reads and writes, as a trait: the cluster behind the shared
//! cache and the delegating client ([`LiveCluster`]), or a recording fake in the unit
//! tests, so that upstream's `TestControllerSyncJob` tables run without a server (its
//! fake pod control and status updater play the same part).

use std::future::Future;
use std::sync::Arc;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::controllerutil::new_controller_ref;
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::jiff::Timestamp;

use crate::controller_utils::owner_index;
use crate::controller_utils::pod_control::PodControlError;
use crate::controller_utils::PodControl;

/// The pod index of [`LiveCluster`]: a pod's controller UID, or `orphan/<namespace>`
/// for a pod without controller (upstream `PodControllerUIDIndex`); the one index the
/// workload controllers share ([`owner_index::CONTROLLER_UID_INDEX`]).
pub const POD_CONTROLLER_UID_INDEX: &str = owner_index::CONTROLLER_UID_INDEX;

/// The index values of `pod` in [`POD_CONTROLLER_UID_INDEX`].
pub fn pod_controller_uid_index(pod: &Pod) -> Vec<String> {
    owner_index::controller_uid_index(pod)
}

/// The reads and writes of a Job sync.
pub trait Cluster: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// The Job at `key` from the cache.
    fn job(&self, key: &ObjectKey) -> impl Future<Output = Option<Arc<Job>>> + Send;
    /// The Job at `key` read from the server (adoption re-check).
    fn fresh_job(
        &self,
        key: &ObjectKey,
    ) -> impl Future<Output = Result<Option<Arc<Job>>, kube::Error>> + Send;
    /// The pods the Job controls and the orphans of its namespace (upstream
    /// `FilterPodsByOwner`).
    fn pods_of(&self, job: &Job) -> impl Future<Output = Vec<Arc<Pod>>> + Send;
    /// Create a pod of `job` from `template`, named with `generate_name` (`<job>-` when
    /// empty); records `SuccessfulCreate` / `FailedCreate`.
    fn create_pod(
        &self,
        job: &Job,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> impl Future<Output = Result<(), PodControlError>> + Send;
    /// Delete a pod of `job`; `Ok(false)` when it was gone. Records
    /// `SuccessfulDelete` / `FailedDelete`.
    fn delete_pod(
        &self,
        job: &Job,
        pod: &Pod,
    ) -> impl Future<Output = Result<bool, PodControlError>> + Send;
    /// Apply a strategic merge patch to `pod`.
    fn patch_pod(
        &self,
        pod: &Pod,
        patch: &serde_json::Value,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
    /// Replace the Job's status; the Job as stored.
    fn update_status(&self, job: &Job) -> impl Future<Output = Result<Job, kube::Error>> + Send;
    /// Record an event about `job`.
    fn event(&self, job: &Job, type_: EventType, reason: &str, message: &str);
}

/// The cluster seen through the manager's shared cache and client.
#[derive(Clone)]
pub struct LiveCluster {
    cache: Arc<Cache>,
    fresh: Client,
    status: Client,
    pods: PodControl,
    recorder: EventRecorder,
}

impl LiveCluster {
    /// Reads from the cache of `client`, writes through `client`, events by `recorder`.
    /// Adds the pod index the Job controller looks pods up by.
    pub fn new(client: Client, recorder: EventRecorder) -> Self {
        let cache = client.cache().clone();
        owner_index::register_controller_uid_index::<Pod>(&cache);
        LiveCluster {
            fresh: client.clone().uncached::<Job>(),
            status: client.clone(),
            pods: PodControl::new(client, recorder.clone()),
            cache,
            recorder,
        }
    }
}

impl Cluster for LiveCluster {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }

    async fn job(&self, key: &ObjectKey) -> Option<Arc<Job>> {
        self.cache.get::<Job>(key).await
    }

    async fn fresh_job(&self, key: &ObjectKey) -> Result<Option<Arc<Job>>, kube::Error> {
        self.fresh.get::<Job>(key).await
    }

    async fn pods_of(&self, job: &Job) -> Vec<Arc<Pod>> {
        let ns = job.metadata.namespace.as_deref().unwrap_or("");
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let mut pods = Vec::new();
        for value in [uid.to_string(), owner_index::orphan_value(ns)] {
            let found = self
                .cache
                .list_by_index::<Pod>(POD_CONTROLLER_UID_INDEX, &value)
                .await
                .unwrap_or_default();
            pods.extend(
                found
                    .into_iter()
                    .filter(|p| p.metadata.namespace.as_deref() == Some(ns)),
            );
        }
        pods
    }

    async fn create_pod(
        &self,
        job: &Job,
        template: &PodTemplateSpec,
        generate_name: &str,
    ) -> Result<(), PodControlError> {
        let ns = job.metadata.namespace.as_deref().unwrap_or("");
        let name = job.metadata.name.as_deref().unwrap_or("");
        self.pods
            .create_pod_with_generate_name(
                ns,
                template,
                &object_reference(job),
                name,
                &new_controller_ref(job),
                generate_name,
            )
            .await
            .map(|_| ())
    }

    async fn delete_pod(&self, job: &Job, pod: &Pod) -> Result<bool, PodControlError> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        self.pods.delete_pod(ns, name, &object_reference(job)).await
    }

    async fn patch_pod(&self, pod: &Pod, patch: &serde_json::Value) -> Result<(), kube::Error> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        self.pods.patch_pod(ns, name, patch).await
    }

    async fn update_status(&self, job: &Job) -> Result<Job, kube::Error> {
        self.status.update_status(job).await
    }

    fn event(&self, job: &Job, type_: EventType, reason: &str, message: &str) {
        self.recorder
            .event(&object_reference(job), None, type_, reason, "Sync", message);
    }
}

/// Whether a pod create or delete failed because the object is gone (404).
pub fn is_not_found(e: &PodControlError) -> bool {
    matches!(e, PodControlError::Api(kube::Error::Api(s)) if s.is_not_found())
}

/// Whether an API error is a 404.
pub fn api_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found())
}

/// The key of `job`.
pub fn job_key(job: &Job) -> ObjectKey {
    ObjectKey::of(job)
}
