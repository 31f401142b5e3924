//! The orphan-pod queue (upstream `job_orphan_pod`, `syncOrphanPod`,
//! `handleSingleOrphanPod`): pods that still carry the tracking finalizer but no longer
//! belong to an unfinished Job controlled here get the finalizer removed, so they can go.
//! A request names one pod, or a Job's selector when the Job finished or was deleted
//! (then every matching pod of the namespace is looked at).

use std::fmt;
use std::sync::Arc;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, Context, ReconcileError, ReconcileResult, Reconciler};
use coxswain_runtime::controllerutil::get_controller_of;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Pod;

use super::cluster::api_not_found;
use super::conditions::is_job_finished;
use super::handlers::{resolve, Jobs};
use super::spec::{self, remove_tracking_finalizer_patch};
use crate::controller_utils::PodControl;

/// A request of the orphan queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OrphanPodKey {
    /// One pod.
    Name {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Every pod of a namespace that a (finished or deleted) Job's selector matches.
    Selector {
        /// The namespace.
        namespace: String,
        /// The selector in its string form.
        selector: String,
    },
}

impl fmt::Display for OrphanPodKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrphanPodKey::Name { namespace, name } => write!(f, "{namespace}/{name}"),
            OrphanPodKey::Selector {
                namespace,
                selector,
            } => write!(f, "{namespace}?{selector}"),
        }
    }
}

/// Whether the finalizer of `pod` may be removed: it is not controlled by a `batch/v1`
/// Job of this controller that is still running (upstream `handleSingleOrphanPod`). A pod
/// controlled by something else keeps its finalizer, and so does a pod of a Job managed
/// by another controller.
pub fn orphan_finalizer_removable(pod: &Pod, jobs: &dyn Jobs) -> bool {
    let Some(r) = get_controller_of(&pod.metadata) else {
        return true;
    };
    if r.kind != "Job" || r.api_version != "batch/v1" {
        return false;
    }
    match resolve(jobs, pod.metadata.namespace.as_deref(), r) {
        Some(job) if spec::managed_by_external_controller(&job).is_some() => false,
        Some(job) => is_job_finished(&job),
        None => true,
    }
}

/// Removes the finalizers of orphan pods.
pub struct OrphanReconciler {
    cache: Arc<Cache>,
    jobs: Arc<dyn Jobs>,
    pods: PodControl,
    live: kube::Client,
}

impl OrphanReconciler {
    /// Reads pods from `cache`, Jobs from `jobs` (and, for a Job missing there, from
    /// the API server through `live`), patches through `pods`.
    pub fn new(
        cache: Arc<Cache>,
        jobs: Arc<dyn Jobs>,
        pods: PodControl,
        live: kube::Client,
    ) -> Self {
        OrphanReconciler {
            cache,
            jobs,
            pods,
            live,
        }
    }

    /// Whether the pod's controlling Job, missing from the cache, still runs on the
    /// API server: the cache may lag (a Job informer behind the pod informer after a
    /// restart or on a standby that just became leader), and the finalizer of a running
    /// Job's pod must stay (not upstream, which trusts its cache here).
    async fn controller_runs_live(&self, pod: &Pod) -> Result<bool, kube::Error> {
        let Some(r) = get_controller_of(&pod.metadata) else {
            return Ok(false);
        };
        if r.kind != "Job" || r.api_version != "batch/v1" {
            return Ok(false);
        }
        if resolve(self.jobs.as_ref(), pod.metadata.namespace.as_deref(), r).is_some() {
            return Ok(false);
        }
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let api = kube::Api::<k8s_openapi::api::batch::v1::Job>::namespaced(self.live.clone(), ns);
        match api.get(&r.name).await {
            Ok(job) => Ok(job.metadata.uid.as_deref() == Some(r.uid.as_str())
                && !is_job_finished(&job)
                && spec::managed_by_external_controller(&job).is_none()),
            Err(e) if api_not_found(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn handle(&self, pod: &Pod) -> Result<(), kube::Error> {
        if !orphan_finalizer_removable(pod, self.jobs.as_ref()) {
            return Ok(());
        }
        if self.controller_runs_live(pod).await? {
            return Ok(());
        }
        let Some(patch) = remove_tracking_finalizer_patch(pod) else {
            return Ok(());
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let name = pod.metadata.name.as_deref().unwrap_or("");
        match self.pods.patch_pod(ns, name, &patch).await {
            Err(e) if !api_not_found(&e) => Err(e),
            _ => Ok(()),
        }
    }
}

impl Reconciler<OrphanPodKey> for OrphanReconciler {
    async fn reconcile(&self, _ctx: Context, key: OrphanPodKey) -> ReconcileResult {
        match &key {
            OrphanPodKey::Name { namespace, name } => {
                let Some(pod) = self
                    .cache
                    .get::<Pod>(&ObjectKey::namespaced(namespace, name))
                    .await
                else {
                    tracing::debug!(pod = %key, "orphan pod has been deleted");
                    return Ok(Action::Done);
                };
                self.handle(&pod).await?;
            }
            OrphanPodKey::Selector {
                namespace,
                selector,
            } => {
                let selector = LabelSelector::parse(selector).map_err(|e| {
                    ReconcileError::terminal(format!("invalid label selector: {e}"))
                })?;
                let no_labels = Default::default();
                let mut failed = None;
                for pod in self.cache.list::<Pod>(Some(namespace)).await {
                    if !selector.matches_labels(pod.metadata.labels.as_ref().unwrap_or(&no_labels))
                    {
                        continue;
                    }
                    if let Err(e) = self.handle(&pod).await {
                        tracing::warn!(pod = %ObjectKey::of(pod.as_ref()), error = %e, "syncing orphan pod failed");
                        failed = Some(e);
                    }
                }
                // upstream queues each pod on its own, retried on its own; here the sweep
                // is retried (the pods done meanwhile have no finalizer left to remove)
                if let Some(e) = failed {
                    return Err(ReconcileError::from(e).context("removing orphan pods' finalizers"));
                }
            }
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::testutil::{J, P};
    use k8s_openapi::api::batch::v1::Job;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use std::collections::HashMap;

    struct Map(HashMap<ObjectKey, Arc<Job>>);

    impl Jobs for Map {
        fn get(&self, key: &ObjectKey) -> Option<Arc<Job>> {
            self.0.get(key).cloned()
        }
        fn in_namespace(&self, _: &str) -> Vec<Arc<Job>> {
            self.0.values().cloned().collect()
        }
    }

    fn owner(
        kind: &str,
        api_version: &str,
        name: &str,
        uid: &str,
        controller: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller,
            block_owner_deletion: None,
        }
    }

    // Upstream TestSyncOrphanPod (job_controller_test.go): whether the finalizer goes.
    #[test]
    fn sync_orphan_pod_table() {
        let running = J::new("running", 1, Some(1)).build();
        let finished = J::new("finished", 1, Some(1))
            .condition("Complete", "True", "", "")
            .build();
        let mut finished = finished;
        finished.metadata.uid = Some("finished-uid".into());
        let jobs = Map(HashMap::from([
            (ObjectKey::of(&running), Arc::new(running.clone())),
            (ObjectKey::of(&finished), Arc::new(finished.clone())),
        ]));
        let pod = |refs: Vec<OwnerReference>| {
            let mut p = P::new("p").finalizer();
            p.0.metadata.owner_references = Some(refs);
            p.0
        };
        let cases = [
            (
                "controlled by an existing running job",
                vec![owner("Job", "batch/v1", "running", "job-uid", Some(true))],
                false,
            ),
            (
                "controlled by an existing finished job",
                vec![owner(
                    "Job",
                    "batch/v1",
                    "finished",
                    "finished-uid",
                    Some(true),
                )],
                true,
            ),
            (
                "controlled by a non-existing job",
                vec![owner("Job", "batch/v1", "gone", "gone-uid", Some(true))],
                true,
            ),
            (
                "controlled by cronjob",
                vec![owner("CronJob", "batch/v1", "cj", "cj-uid", Some(true))],
                false,
            ),
            ("not controlled", vec![], true),
            (
                "controlled by a custom CRD kind Job",
                vec![owner("Job", "example/v1", "running", "job-uid", Some(true))],
                false,
            ),
            (
                "owned by a running job, not as controller",
                vec![owner("Job", "batch/v1", "running", "job-uid", None)],
                true,
            ),
            (
                "owned by a CRD, not as controller",
                vec![owner("Job", "example/v1", "running", "job-uid", None)],
                true,
            ),
        ];
        for (name, refs, want) in cases {
            assert_eq!(
                orphan_finalizer_removable(&pod(refs), &jobs),
                want,
                "{name}"
            );
        }
        // a pod of a job managed elsewhere keeps its finalizer
        let mut external = J::new("ext", 1, Some(1))
            .managed_by("example.com/queue")
            .condition("Complete", "True", "", "")
            .build();
        external.metadata.uid = Some("ext-uid".into());
        let jobs = Map(HashMap::from([(
            ObjectKey::of(&external),
            Arc::new(external),
        )]));
        assert!(!orphan_finalizer_removable(
            &pod(vec![owner("Job", "batch/v1", "ext", "ext-uid", Some(true))]),
            &jobs
        ));
    }
}
