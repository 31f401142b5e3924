//! The EndpointSlice controller, after upstream's `pkg/controller/endpointslice` and the
//! reconciler of `k8s.io/endpointslice`.
//!
//! For every Service with a selector (not `ExternalName`; selector-less Services get
//! their slices from the mirroring controller or by hand) it keeps a set of EndpointSlices
//! per address type of the Service's `ipFamilies`, labelled
//! `kubernetes.io/service-name=<service>` and
//! `endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io`, owned by the
//! Service and named `<service>-<random>`. Each selected pod with an IP that is not
//! terminal is an endpoint: its addresses of that family, conditions `ready` (ready and
//! not terminating, or always with `publishNotReadyAddresses`), `serving` (ready) and
//! `terminating`, its node name, the node's `topology.kubernetes.io/zone` as zone, a
//! target reference, and its hostname when its subdomain is the Service's name. Ports
//! are computed per pod (a named `targetPort` is resolved in each pod's spec), and pods
//! with different resolved ports go to different slices. Placement follows upstream
//! ([`reconciler`]): at most `--max-endpoints-per-slice` endpoints per slice, unchanged
//! endpoints stay where they are, new ones fill the slices being written first, and a
//! Service without endpoints has one empty placeholder slice. Written slices carry the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation.
//!
//! Pod changes that can move an endpoint wake the Services that select the pod (old and
//! new labels) after `--endpoint-updates-batch-period`; slice changes made by someone
//! else (not the controller's own writes, [`tracker`]) wake the Service after at least
//! one second; a sync whose cache has not yet seen the controller's own last writes
//! fails as stale and is retried. Failures are `FailedToUpdateEndpointSlices` events on
//! the Service; retries back off from 1 s to 1000 s, and a Service is dropped after 15.
//!
//! Hints follow the Service's `trafficDistribution` (a hint for the endpoint's own zone,
//! and node for `PreferSameNode`, as upstream's `trafficdist`). Not done: the
//! proportional zone heuristic of the `service.kubernetes.io/topology-mode: Auto`
//! annotation (such Services get no hints), and the controller's Prometheus metrics.

pub mod reconciler;
pub mod tracker;
pub mod utils;

#[cfg(test)]
mod reconciler_tests;
#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Change, Store};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{EventHandler, Requests};
use coxswain_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, PostParams};
use kube::Api;

use crate::endpointutil::{
    format_trigger_time, pod_service_memberships, selector_matches,
    services_to_update_on_pod_change, TriggerTimeTracker, LAST_CHANGE_TRIGGER_TIME_ANNOTATION,
};
use reconciler::{plan, Params, Plan};
use tracker::EndpointSliceTracker;
use utils::{service_controller_key, LABEL_MANAGED_BY, LABEL_SERVICE_NAME};

/// Name of the controller (`names.EndpointSliceController`).
pub const CONTROLLER_NAME: &str = "endpointslice-controller";
/// The value of the managed-by label (upstream `controllerQualifiedName`).
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The event source (upstream's recorder component).
pub const EVENT_SOURCE: &str = "endpoint-slice-controller";
/// The most endpoints `--max-endpoints-per-slice` accepts.
pub const MAX_ENDPOINTS_PER_SLICE_LIMIT: usize = 1000;
/// The least delay before a sync woken by a slice change (upstream
/// `endpointSliceChangeMinSyncDelay`).
pub const ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY: Duration = Duration::from_secs(1);
/// Retries before a Service is dropped from the queue (upstream `maxRetries`).
pub const MAX_RETRIES: u32 = 15;

/// The controller's options (upstream `EndpointSliceControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct EndpointSliceControllerOptions {
    /// Services synced at once (`--concurrent-service-endpoint-syncs`, 5).
    pub concurrent_service_endpoint_syncs: usize,
    /// Endpoints per slice at most (`--max-endpoints-per-slice`, 100, at most 1000).
    pub max_endpoints_per_slice: usize,
    /// Delay of the syncs woken by pod changes, batching them
    /// (`--endpoint-updates-batch-period`, 0).
    pub endpoint_updates_batch_period: Duration,
}

impl Default for EndpointSliceControllerOptions {
    fn default() -> Self {
        EndpointSliceControllerOptions {
            concurrent_service_endpoint_syncs: 5,
            max_endpoints_per_slice: 100,
            endpoint_updates_batch_period: Duration::ZERO,
        }
    }
}

impl EndpointSliceControllerOptions {
    /// Upstream's validation: `--max-endpoints-per-slice` between 1 and 1000.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_endpoints_per_slice < 1
            || self.max_endpoints_per_slice > MAX_ENDPOINTS_PER_SLICE_LIMIT
        {
            return Err(format!(
                "max-endpoints-per-slice must be between 1 and {MAX_ENDPOINTS_PER_SLICE_LIMIT}, got {}",
                self.max_endpoints_per_slice
            ));
        }
        Ok(())
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("endpointslice-controller")`).
pub const SERVICE_ACCOUNT: &str = "endpointslice-controller";

/// The registry entry: `endpointslice-controller`, alias `endpointslice`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["endpointslice"],
        disabled_by_default: false,
        constructor: |ctx| {
            let options = &ctx.options.endpoint_slice;
            options.validate()?;
            Ok(Some(Box::new(endpointslice_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                options,
            ))))
        },
    }
}

/// The EndpointSlice controller.
pub fn endpointslice_controller(
    mgr: &impl ClusterAccess,
    options: &EndpointSliceControllerOptions,
) -> Controller<EndpointSliceReconciler> {
    let cache = mgr.cache();
    let services = cache.informer::<Service>().store().clone();
    let pods = cache.informer::<Pod>().store().clone();
    let slices = cache.informer::<EndpointSlice>().store().clone();
    let nodes = cache.informer::<Node>().store().clone();
    let tracker = Arc::new(EndpointSliceTracker::new());
    let batch = options.endpoint_updates_batch_period;
    let reconciler = EndpointSliceReconciler {
        client: mgr.kube_client().clone(),
        services: services.clone(),
        pods,
        slices,
        nodes,
        tracker: tracker.clone(),
        trigger_times: TriggerTimeTracker::new(),
        recorder: mgr.event_recorder(EVENT_SOURCE),
        max_endpoints_per_slice: options.max_endpoints_per_slice,
    };
    let rate_limiter = MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ]);
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions {
            max_concurrent_reconciles: options.concurrent_service_endpoint_syncs.max(1),
            rate_limiter: Some(Arc::new(rate_limiter)),
            ..ControllerOptions::default()
        })
        .for_::<Service>()
        .watches_with::<Pod>(
            PodHandler {
                services,
                batch_period: batch,
            },
            Vec::new(),
        )
        .watches_with::<EndpointSlice>(
            SliceHandler {
                tracker,
                delay: batch.max(ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY),
            },
            Vec::new(),
        )
        .watches_with::<Node>(NodeHandler, Vec::new())
        .build(reconciler)
}

/// Pod changes: the Services selecting the pod (upstream `addPod`/`updatePod`/`deletePod`).
struct PodHandler {
    services: Arc<Store<Service>>,
    batch_period: Duration,
}

impl EventHandler<Pod> for PodHandler {
    fn handle(&self, change: &Change<Pod>, queue: &Requests<'_, ObjectKey>) {
        let (pod, old) = match change {
            Change::Added(p) | Change::Deleted(p) => (p, None),
            Change::Updated { old, new } => (new, Some(old)),
        };
        let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
        let services = self.services.list_namespace(ns);
        let refs = services.iter().map(Arc::as_ref);
        let keys = match old {
            None => pod_service_memberships(refs, pod),
            Some(old) => services_to_update_on_pod_change(refs, old, pod),
        };
        for key in keys {
            queue.add_after(key, self.batch_period);
        }
    }
}

/// Slice changes not made by this controller wake the slice's Service (upstream
/// `onEndpointSliceAdd`/`Update`/`Delete`).
struct SliceHandler {
    tracker: Arc<EndpointSliceTracker>,
    delay: Duration,
}

fn managed_by_us(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MANAGED_BY))
        .is_some_and(|v| v == MANAGED_BY)
}

impl SliceHandler {
    fn queue(&self, slice: &EndpointSlice, queue: &Requests<'_, ObjectKey>) {
        match service_controller_key(slice) {
            Ok(key) => queue.add_after(key, self.delay),
            Err(e) => tracing::debug!(slice = ?slice.metadata.name, "{e}"),
        }
    }
}

impl EventHandler<EndpointSlice> for SliceHandler {
    fn handle(&self, change: &Change<EndpointSlice>, queue: &Requests<'_, ObjectKey>) {
        match change {
            Change::Added(s) => {
                if managed_by_us(s) && self.tracker.should_sync(s) {
                    self.queue(s, queue);
                }
            }
            Change::Updated { old, new } => {
                let name = |s: &EndpointSlice| {
                    s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(LABEL_SERVICE_NAME).cloned())
                };
                if name(old) != name(new) {
                    self.queue(new, queue);
                    self.queue(old, queue);
                    return;
                }
                if managed_by_us(old) != managed_by_us(new)
                    || (managed_by_us(new) && self.tracker.should_sync(new))
                {
                    self.queue(new, queue);
                }
            }
            Change::Deleted(s) => {
                if managed_by_us(s) && self.tracker.has(s) && !self.tracker.handle_deletion(s) {
                    self.queue(s, queue);
                }
            }
        }
    }
}

/// Nodes are watched for their zones; their changes wake nobody (no topology hints).
struct NodeHandler;

impl EventHandler<Node> for NodeHandler {}

/// Syncs one Service's slices (upstream `syncService` + `Reconciler.Reconcile`).
pub struct EndpointSliceReconciler {
    client: kube::Client,
    services: Arc<Store<Service>>,
    pods: Arc<Store<Pod>>,
    slices: Arc<Store<EndpointSlice>>,
    nodes: Arc<Store<Node>>,
    tracker: Arc<EndpointSliceTracker>,
    trigger_times: TriggerTimeTracker,
    recorder: EventRecorder,
    max_endpoints_per_slice: usize,
}

/// Why a sync failed.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cache has not yet seen this controller's own last writes (upstream
    /// `StaleInformerCache`).
    #[error("EndpointSlice informer cache is out of date")]
    StaleInformerCache,
    /// Writes failed or pods had to be left out.
    #[error("{}", .0.join("; "))]
    Failed(Vec<String>),
}

impl Reconciler for EndpointSliceReconciler {
    async fn reconcile(&self, ctx: Context, key: ObjectKey) -> ReconcileResult {
        if ctx.retries >= MAX_RETRIES {
            tracing::info!(service = %key, "retry budget exceeded, dropping service out of the queue");
            return Ok(Action::Done);
        }
        match self.sync(&key).await {
            Ok(()) => Ok(Action::Done),
            // upstream requeues with the rate limiter; an expected wait, not a failure
            Err(SyncError::StaleInformerCache) => {
                tracing::debug!(service = %key, "EndpointSlice informer cache is out of date, retrying");
                Ok(Action::Requeue)
            }
            Err(e) => Err(ReconcileError::from(e)),
        }
    }
}

impl EndpointSliceReconciler {
    async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(service) = self.services.get(key) else {
            self.trigger_times.delete_service(key);
            self.tracker.delete_service(key);
            return Ok(());
        };
        let spec = service.spec.clone().unwrap_or_default();
        if spec.type_.as_deref() == Some("ExternalName") {
            return Ok(());
        }
        let Some(selector) = spec.selector.as_ref() else {
            return Ok(());
        };
        let ns = key.namespace().unwrap_or_default();
        let name = key.name();
        let pods: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(ns)
            .into_iter()
            .filter(|p| selector_matches(selector, p.metadata.labels.as_ref()))
            .collect();
        let slices: Vec<Arc<EndpointSlice>> = self
            .slices
            .list_namespace(ns)
            .into_iter()
            .filter(|s| {
                let l = s.metadata.labels.as_ref();
                l.and_then(|l| l.get(LABEL_SERVICE_NAME))
                    .is_some_and(|v| v == name)
                    && managed_by_us(s)
                    && s.metadata.deletion_timestamp.is_none()
            })
            .collect();
        let refs: Vec<&EndpointSlice> = slices.iter().map(Arc::as_ref).collect();
        if self.tracker.stale_slices(&service, &refs) {
            return Err(SyncError::StaleInformerCache);
        }
        let trigger_time = self
            .trigger_times
            .compute_endpoint_last_change_trigger_time(&service, pods.iter().map(Arc::as_ref));
        let node = |n: &str| self.nodes.get(&ObjectKey::cluster(n));
        let plan = plan(
            &service,
            &pods,
            &Params {
                existing: &slices,
                node: &node,
                max_endpoints_per_slice: self.max_endpoints_per_slice,
                controller_name: MANAGED_BY,
            },
        );
        let mut errors = plan.errors.clone();
        if let Err(e) = self.apply(&service, plan, trigger_time).await {
            errors.push(e);
        }
        if errors.is_empty() {
            return Ok(());
        }
        let note = format!(
            "Error updating Endpoint Slices for Service {ns}/{name}: {}",
            errors.join("; ")
        );
        self.recorder.event(
            &object_reference(service.as_ref()),
            None,
            EventType::Warning,
            "FailedToUpdateEndpointSlices",
            "Update",
            &note,
        );
        Err(SyncError::Failed(errors))
    }

    /// Upstream `finalize`'s writes: creations (not for a Service being deleted),
    /// updates, deletions; each recorded in the tracker.
    async fn apply(
        &self,
        service: &Service,
        plan: Plan,
        trigger_time: Option<k8s_openapi::jiff::Timestamp>,
    ) -> Result<(), String> {
        let ns = service.metadata.namespace.as_deref().unwrap_or_default();
        let svc = service.metadata.name.as_deref().unwrap_or_default();
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), ns);
        let annotate = |slice: &mut EndpointSlice| {
            let a = slice
                .metadata
                .annotations
                .get_or_insert_with(Default::default);
            match trigger_time {
                Some(t) => {
                    a.insert(
                        LAST_CHANGE_TRIGGER_TIME_ANNOTATION.into(),
                        format_trigger_time(t),
                    );
                }
                None => {
                    a.remove(LAST_CHANGE_TRIGGER_TIME_ANNOTATION);
                }
            }
        };
        if service.metadata.deletion_timestamp.is_none() {
            for mut slice in plan.to_create {
                annotate(&mut slice);
                match api.create(&PostParams::default(), &slice).await {
                    Ok(created) => self.tracker.update(&created),
                    Err(kube::Error::Api(s))
                        if s.details.as_ref().is_some_and(|d| {
                            d.causes.iter().any(|c| c.reason == "NamespaceTerminating")
                        }) =>
                    {
                        return Ok(());
                    }
                    Err(e) => {
                        return Err(format!(
                            "failed to create EndpointSlice for Service {ns}/{svc}: {e}"
                        ))
                    }
                }
            }
        }
        for mut slice in plan.to_update {
            annotate(&mut slice);
            let name = slice.metadata.name.clone().unwrap_or_default();
            match api.replace(&name, &PostParams::default(), &slice).await {
                Ok(updated) => self.tracker.update(&updated),
                Err(e) => {
                    return Err(format!(
                        "failed to update {name} EndpointSlice for Service {ns}/{svc}: {e}"
                    ))
                }
            }
        }
        for slice in plan.to_delete {
            let name = slice.metadata.name.clone().unwrap_or_default();
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => self.tracker.expect_deletion(&slice),
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(format!(
                        "failed to delete {name} EndpointSlice for Service {ns}/{svc}: {e}"
                    ))
                }
            }
        }
        Ok(())
    }
}
