//! The disruption controller: kube-controller-manager's `disruption-controller` (alias
//! `disruption`, upstream `pkg/controller/disruption`).
//!
//! For every PodDisruptionBudget it writes the status the eviction subresource relies
//! on: `expectedPods` (with an integer `minAvailable`, the selected pods; otherwise the
//! sum of the scales of the pods' controllers: ReplicationControllers, Deployments,
//! ReplicaSets, StatefulSets, or any resource with a `scale` subresource),
//! `desiredHealthy` (percentages rounded up), `currentHealthy` (ready pods neither
//! terminating nor recently evicted), `disruptionsAllowed`, `disruptedPods` (entries
//! dropped once their pod is terminating or gone, or after [`calc::DELETION_TIMEOUT`],
//! with a recheck when the next one expires), `observedGeneration` and the
//! `DisruptionAllowed` condition (`SufficientPods`, `InsufficientPods`, or `SyncFailed`
//! when the budget cannot be computed: then no disruption is allowed). Events:
//! `NoPods`, `CalculateExpectedPodCountFailed`, `UnmanagedPods`, `NotDeleted`.
//!
//! A second queue (upstream `stalePodDisruptionQueue`) resets a pod's True
//! `DisruptionTarget` condition to False when the pod was not deleted within
//! [`calc::STALE_POD_DISRUPTION_TIMEOUT`] (an eviction that was approved but whose
//! deletion never happened).
//!
//! The calculations are in [`calc`] and tested as upstream's tables.

pub mod calc;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::discovery::SharedDiscovery;
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::manager::runnable;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::PostParams;
use kube::Api;

use calc::{ControllerAndScale, ScaleFinder};

/// The name upstream's controller logs and queues under.
pub const CONTROLLER_NAME: &str = "disruption";

/// The disruption controller's options (upstream has no flags of its own).
#[derive(Clone, Debug)]
pub struct DisruptionControllerOptions {
    /// How long a pod may keep a stale `DisruptionTarget` condition (upstream's
    /// constant 2 minutes; shorter in tests).
    pub stale_pod_disruption_timeout: Duration,
}

impl Default for DisruptionControllerOptions {
    fn default() -> Self {
        DisruptionControllerOptions {
            stale_pod_disruption_timeout: calc::STALE_POD_DISRUPTION_TIMEOUT,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("disruption-controller")`).
pub const SERVICE_ACCOUNT: &str = "disruption-controller";

/// The registry entry: `disruption-controller`, alias `disruption`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "disruption-controller",
        aliases: &["disruption"],
        disabled_by_default: false,
        constructor: |ctx| {
            let budgets = disruption_controller(&ctx.clients(SERVICE_ACCOUNT)?);
            let stale = stale_pod_disruption_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                ctx.options.disruption.stale_pod_disruption_timeout,
            );
            Ok(Some(Box::new(runnable(
                "disruption-controller",
                true,
                move |cancel| async move {
                    tokio::join!(budgets.run(cancel.clone()), stale.run(cancel));
                    Ok(())
                },
            ))))
        },
    }
}

fn ref_group_kind(r: &OwnerReference, kind: &str, groups: &[&str]) -> bool {
    let group = coxswain_runtime::discovery::parse_group_version(&r.api_version)
        .map(|(g, _)| g)
        .unwrap_or_default();
    r.kind == kind && groups.contains(&group.as_str())
}

/// The controllers of pods, from the cache, then any scale subresource.
pub struct LiveFinder {
    rcs: Arc<Store<ReplicationController>>,
    rss: Arc<Store<ReplicaSet>>,
    deployments: Arc<Store<Deployment>>,
    statefulsets: Arc<Store<StatefulSet>>,
    discovery: SharedDiscovery,
    client: kube::Client,
}

fn uid_matches(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    r: &OwnerReference,
) -> bool {
    meta.uid.as_deref() == Some(r.uid.as_str())
}

impl LiveFinder {
    fn replicaset(&self, r: &OwnerReference, ns: &str) -> Option<Arc<ReplicaSet>> {
        if !ref_group_kind(r, "ReplicaSet", &["apps", "extensions"]) {
            return None;
        }
        self.rss
            .get(&ObjectKey::namespaced(ns, &r.name))
            .filter(|rs| uid_matches(&rs.metadata, r))
    }

    /// GET the `scale` subresource of what the reference names (upstream
    /// `getScaleController`).
    async fn scale(
        &self,
        r: &OwnerReference,
        ns: &str,
    ) -> Result<Option<ControllerAndScale>, String> {
        let mut info = self
            .discovery
            .current()
            .mapping(&r.api_version, &r.kind)
            .cloned();
        if info.is_none() {
            let fresh = self
                .discovery
                .fresh(Duration::from_secs(1))
                .await
                .map_err(|e| e.to_string())?;
            info = fresh.mapping(&r.api_version, &r.kind).cloned();
        }
        let Some(info) = info else {
            let (group, version) =
                coxswain_runtime::discovery::parse_group_version(&r.api_version)?;
            return Err(format!(
                "no matches for kind {:?} in version {:?}",
                r.kind,
                if group.is_empty() {
                    version
                } else {
                    format!("{group}/{version}")
                }
            ));
        };
        let base = if info.group.is_empty() {
            format!("/api/{}", info.version)
        } else {
            format!("/apis/{}/{}", info.group, info.version)
        };
        let collection = format!("{base}/namespaces/{ns}/{}", info.plural);
        let req = kube::core::Request::new(collection)
            .get_subresource("scale", &r.name)
            .map_err(|e| e.to_string())?;
        match self.client.request::<serde_json::Value>(req).await {
            Ok(scale) => {
                let uid = scale
                    .pointer("/metadata/uid")
                    .and_then(|v| v.as_str())
                    .unwrap_or("");
                if uid != r.uid {
                    return Ok(None);
                }
                let replicas = scale
                    .pointer("/spec/replicas")
                    .and_then(|v| v.as_i64())
                    .unwrap_or(0);
                Ok(Some(ControllerAndScale {
                    uid: uid.to_string(),
                    scale: replicas as i32,
                }))
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {
                // missing object, or a resource without the scale subresource
                let req = kube::core::Request::new(base.clone())
                    .list(&kube::api::ListParams::default())
                    .map_err(|e| e.to_string())?;
                let list: serde_json::Value =
                    self.client.request(req).await.map_err(|e| e.to_string())?;
                let name = format!("{}/scale", info.plural);
                let scalable = list["resources"].as_array().is_some_and(|rs| {
                    rs.iter().any(|x| {
                        x["name"] == name.as_str()
                            && x["kind"] == "Scale"
                            && x["group"] == "autoscaling"
                            && x["version"] == "v1"
                    })
                });
                if !scalable {
                    let gr = if info.group.is_empty() {
                        info.plural.clone()
                    } else {
                        format!("{}.{}", info.plural, info.group)
                    };
                    return Err(format!("{gr} does not implement the scale subresource"));
                }
                Ok(None)
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

impl ScaleFinder for LiveFinder {
    async fn find(
        &self,
        r: &OwnerReference,
        ns: &str,
    ) -> Result<Option<ControllerAndScale>, String> {
        // ReplicationController
        if ref_group_kind(r, "ReplicationController", &[""]) {
            if let Some(rc) = self
                .rcs
                .get(&ObjectKey::namespaced(ns, &r.name))
                .filter(|rc| uid_matches(&rc.metadata, r))
            {
                let scale = rc.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                return Ok(Some(ControllerAndScale {
                    uid: r.uid.clone(),
                    scale,
                }));
            }
        }
        // a ReplicaSet of a Deployment counts as the Deployment
        if let Some(rs) = self.replicaset(r, ns) {
            let parent = rs
                .metadata
                .owner_references
                .as_deref()
                .unwrap_or_default()
                .iter()
                .find(|o| o.controller == Some(true));
            if let Some(p) = parent {
                if ref_group_kind(p, "Deployment", &["apps", "extensions"]) {
                    if let Some(d) = self
                        .deployments
                        .get(&ObjectKey::namespaced(ns, &p.name))
                        .filter(|d| uid_matches(&d.metadata, p))
                    {
                        let scale = d.spec.replicas.unwrap_or(1);
                        return Ok(Some(ControllerAndScale {
                            uid: p.uid.clone(),
                            scale,
                        }));
                    }
                }
            }
            // a ReplicaSet not controlled by a Deployment
            if parent.is_none_or(|p| p.kind != "Deployment") {
                let scale = rs.spec.replicas.unwrap_or(1);
                return Ok(Some(ControllerAndScale {
                    uid: r.uid.clone(),
                    scale,
                }));
            }
        }
        if ref_group_kind(r, "StatefulSet", &["apps"]) {
            if let Some(ss) = self
                .statefulsets
                .get(&ObjectKey::namespaced(ns, &r.name))
                .filter(|ss| uid_matches(&ss.metadata, r))
            {
                let scale = ss.spec.replicas.unwrap_or(1);
                return Ok(Some(ControllerAndScale {
                    uid: r.uid.clone(),
                    scale,
                }));
            }
        }
        self.scale(r, ns).await
    }
}

/// The PodDisruptionBudget reconciler.
pub struct DisruptionReconciler {
    pdbs: Arc<Store<PodDisruptionBudget>>,
    pods: Arc<Store<Pod>>,
    finder: LiveFinder,
    client: kube::Client,
    recorder: EventRecorder,
}

fn pdb_keys_for_pod(pdbs: &Store<PodDisruptionBudget>, pod: &Pod) -> Vec<ObjectKey> {
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mut matching: Vec<ObjectKey> = pdbs
        .list_namespace(ns)
        .iter()
        .filter(|b| calc::selects_pod(b, pod))
        .map(|b| ObjectKey::of(b.as_ref()))
        .collect();
    matching.sort();
    matching
}

/// The PodDisruptionBudget controller (upstream's main queue).
pub fn disruption_controller(mgr: &impl ClusterAccess) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let pdbs = cache.informer::<PodDisruptionBudget>().store().clone();
    let finder = LiveFinder {
        rcs: cache.informer::<ReplicationController>().store().clone(),
        rss: cache.informer::<ReplicaSet>().store().clone(),
        deployments: cache.informer::<Deployment>().store().clone(),
        statefulsets: cache.informer::<StatefulSet>().store().clone(),
        discovery: mgr.discovery().clone(),
        client: mgr.kube_client().clone(),
    };
    let reconciler = DisruptionReconciler {
        pdbs: pdbs.clone(),
        pods: cache.informer::<Pod>().store().clone(),
        finder,
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder("controllermanager"),
    };
    let for_pods = pdbs.clone();
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .for_::<PodDisruptionBudget>()
        .watches::<Pod>(move |pod| pdb_keys_for_pod(&for_pods, pod))
        .build(reconciler)
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl DisruptionReconciler {
    fn event(&self, pdb: &PodDisruptionBudget, type_: EventType, reason: &str, note: &str) {
        self.recorder
            .event(&object_reference(pdb), None, type_, reason, "Sync", note);
    }

    async fn write_status(&self, pdb: &PodDisruptionBudget) -> Result<(), kube::Error> {
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        Api::<PodDisruptionBudget>::namespaced(self.client.clone(), ns)
            .replace_status(
                pdb.metadata.name.as_deref().unwrap_or_default(),
                &PostParams::default(),
                pdb,
            )
            .await
            .map(|_| ())
    }

    /// Upstream `trySync`: `Ok(recheck)` or why it failed (a conflict apart).
    async fn try_sync(&self, pdb: &PodDisruptionBudget) -> Result<Option<Timestamp>, SyncError> {
        let ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
        let all: Vec<Pod> = self
            .pods
            .list_namespace(ns)
            .iter()
            .map(|p| (**p).clone())
            .collect();
        let pods = match calc::pods_for_pdb(pdb, &all) {
            Ok(p) => p,
            Err(e) => {
                self.event(
                    pdb,
                    EventType::Warning,
                    "NoPods",
                    &format!("Failed to get pods: {e}"),
                );
                return Err(SyncError::Failed(e));
            }
        };
        if pods.is_empty() {
            self.event(pdb, EventType::Normal, "NoPods", "No matching pods found");
        }
        let (expected, desired, unmanaged) =
            match calc::expected_pod_count(&self.finder, pdb, &pods).await {
                Ok(v) => v,
                Err(e) => {
                    self.event(
                        pdb,
                        EventType::Warning,
                        "CalculateExpectedPodCountFailed",
                        &format!("Failed to calculate the number of expected pods: {e}"),
                    );
                    return Err(SyncError::Failed(e));
                }
            };
        if !unmanaged.is_empty() {
            let selector = pdb
                .spec
                .as_ref()
                .and_then(|s| s.selector.as_ref())
                .map(|s| format!("{s:?}"))
                .unwrap_or_else(|| "nil".into());
            self.event(
                pdb,
                EventType::Warning,
                "UnmanagedPods",
                &format!("Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."),
            );
        }
        let now = Timestamp::now();
        let disrupted = calc::build_disrupted_pod_map(pdb, &pods, now);
        for name in &disrupted.not_deleted {
            if let Some(p) = pods
                .iter()
                .find(|p| p.metadata.name.as_deref() == Some(name))
            {
                let pdb_ns = pdb.metadata.namespace.as_deref().unwrap_or_default();
                self.recorder.event(
                    &object_reference(*p),
                    None,
                    EventType::Warning,
                    "NotDeleted",
                    "Sync",
                    &format!(
                        "Pod was expected by PDB {pdb_ns}/{pdb_ns} to be deleted but it wasn't"
                    ),
                );
            }
        }
        let healthy = calc::count_healthy_pods(&pods, &disrupted.kept, now);
        if let Some(status) = calc::new_status(pdb, healthy, desired, expected, disrupted.kept, now)
        {
            let mut new = pdb.clone();
            new.status = Some(status);
            self.write_status(&new).await.map_err(|e| {
                if is_conflict(&e) {
                    SyncError::Conflict(e)
                } else {
                    SyncError::Failed(e.to_string())
                }
            })?;
        }
        Ok(disrupted.recheck)
    }
}

enum SyncError {
    Conflict(kube::Error),
    Failed(String),
}

impl Reconciler for DisruptionReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pdb) = self.pdbs.get(&key) else {
            return Ok(Action::Done);
        };
        match self.try_sync(&pdb).await {
            Ok(None) => Ok(Action::Done),
            Ok(Some(at)) => {
                let d = Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or_default();
                Ok(Action::RequeueAfter(d))
            }
            Err(SyncError::Conflict(e)) => {
                Err(ReconcileError::from(e).context("updating the PodDisruptionBudget status"))
            }
            Err(SyncError::Failed(e)) => {
                tracing::error!(pdb = %key, error = %e, "Failed to sync PDB");
                let mut new = (*pdb).clone();
                new.status = Some(calc::fail_safe_status(&pdb, &e, Timestamp::now()));
                self.write_status(&new)
                    .await
                    .map_err(|w| ReconcileError::from(w).context("writing the fail-safe status"))?;
                // upstream: a successful fail-safe ends the sync; the budget is synced again
                // on its next change
                Ok(Action::Done)
            }
        }
    }
}

/// Resets stale `DisruptionTarget` conditions (upstream `stalePodDisruptionQueue`).
pub struct StalePodDisruptionReconciler {
    pods: Arc<Store<Pod>>,
    client: kube::Client,
    timeout: Duration,
}

fn stale_handler(timeout: Duration) -> Funcs<Pod> {
    let enqueue = move |pod: &Pod, q: &Requests<'_, ObjectKey>| {
        if let Some(wait) = calc::stale_disruption_wait(pod, Timestamp::now(), timeout) {
            q.add_after(ObjectKey::of(pod), wait);
        }
    };
    Funcs::new()
        .on_add(enqueue)
        .on_update(move |_, new, q| enqueue(new, q))
}

/// The stale DisruptionTarget cleanup controller.
pub fn stale_pod_disruption_controller(
    mgr: &impl ClusterAccess,
    timeout: Duration,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let reconciler = StalePodDisruptionReconciler {
        pods: cache.informer::<Pod>().store().clone(),
        client: mgr.kube_client().clone(),
        timeout,
    };
    ControllerBuilder::new(cache)
        .named("stale_pod_disruption")
        .for_with::<Pod>(stale_handler(timeout))
        .build(reconciler)
}

impl Reconciler for StalePodDisruptionReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(pod) = self.pods.get(&key) else {
            return Ok(Action::Done);
        };
        let now = Timestamp::now();
        match calc::stale_disruption_wait(&pod, now, self.timeout) {
            None => return Ok(Action::Done),
            Some(wait) if !wait.is_zero() => return Ok(Action::RequeueAfter(wait)),
            Some(_) => {}
        }
        let mut new = (*pod).clone();
        if !calc::reset_disruption_target(&mut new, now) {
            return Ok(Action::Done);
        }
        Api::<Pod>::namespaced(self.client.clone(), key.namespace().unwrap_or_default())
            .replace_status(key.name(), &PostParams::default(), &new)
            .await
            .map_err(|e| {
                ReconcileError::from(e).context("resetting the DisruptionTarget condition")
            })?;
        tracing::info!(pod = %key, "Reset stale DisruptionTarget condition to False");
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
