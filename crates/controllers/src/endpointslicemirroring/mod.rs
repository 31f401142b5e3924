//! The EndpointSlice mirroring controller: kube-controller-manager's
//! `endpointslice-mirroring-controller` (upstream `pkg/controller/endpointslicemirroring`).
//!
//! A Service without a selector gets no endpoints from the cluster: its users write the
//! Endpoints object themselves. This controller mirrors such custom Endpoints to
//! EndpointSlices, so that slice consumers see them too: each slice is labelled
//! `endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io` and
//! `kubernetes.io/service-name: <service>`, carries the Endpoints' other labels and
//! annotations, and is controlled by the Endpoints (owner reference). What a slice holds
//! is computed by [`reconciler::plan`].
//!
//! Nothing is mirrored for an Endpoints labelled `endpointslice.kubernetes.io/skip-mirror:
//! "true"` or carrying a leader-election record, nor when its Service is missing or has a
//! selector (then the endpoints and EndpointSlice controllers own them): slices mirrored
//! before are deleted. Slices are also deleted when the Endpoints goes.
//!
//! The controller watches Endpoints, Services (a Service without selector that comes,
//! goes, or gains or loses its selector) and its own slices (changed or deleted by
//! someone else, after `--mirroring-endpointslice-updates-batch-period`). A
//! [`tracker::SliceTracker`] recognises its own writes coming back, and a slice cache
//! older than them makes the sync wait for the cache rather than act on it. Upstream's
//! per-sync histograms and slice-change counter are exported ([`metrics`]).

pub mod metrics;
pub mod reconciler;
pub mod tracker;

#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::workqueue::rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, PostParams};
use kube::Api;

use crate::endpoint::is_namespace_terminating;
use reconciler::{LABEL_MANAGED_BY, LABEL_SERVICE_NAME, LABEL_SKIP_MIRROR, MANAGED_BY};
use tracker::SliceTracker;

/// The controller's name (queue, logs).
pub const CONTROLLER_NAME: &str = "endpoint_slice_mirroring";
/// The event source.
pub const EVENT_COMPONENT: &str = "endpoint-slice-mirroring-controller";
/// Event reason: addresses that are no IP were not mirrored.
pub const INVALID_IP_ADDRESS: &str = "InvalidIPAddress";
/// Event reason: addresses over `--mirroring-max-endpoints-per-subset` were not mirrored.
pub const TOO_MANY_ADDRESSES_TO_MIRROR: &str = "TooManyAddressesToMirror";
/// The annotation of a leader-election record (such Endpoints are never mirrored).
pub const LEADER_ELECTION_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// Syncs of one Endpoints that fail this many times in a row are dropped.
const MAX_RETRIES: u32 = 15;

/// The mirroring controller's options (upstream
/// `EndpointSliceMirroringControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct EndpointSliceMirroringControllerOptions {
    /// Workers (`--mirroring-concurrent-service-endpoint-syncs`, 5).
    pub concurrent_service_endpoint_syncs: usize,
    /// Endpoints mirrored per subset, hence per slice
    /// (`--mirroring-max-endpoints-per-subset`, 1000).
    pub max_endpoints_per_subset: usize,
    /// Delay of the syncs that slice changes cause, to batch them
    /// (`--mirroring-endpointslice-updates-batch-period`, 0).
    pub endpoint_updates_batch_period: Duration,
}

impl Default for EndpointSliceMirroringControllerOptions {
    fn default() -> Self {
        EndpointSliceMirroringControllerOptions {
            concurrent_service_endpoint_syncs: 5,
            max_endpoints_per_subset: 1000,
            endpoint_updates_batch_period: Duration::ZERO,
        }
    }
}

impl EndpointSliceMirroringControllerOptions {
    /// Upstream's option validation: 1 to 50 workers, 1 to 1000 endpoints per subset.
    pub fn validate(&self) -> Vec<String> {
        let mut errors = Vec::new();
        let workers = self.concurrent_service_endpoint_syncs;
        if workers < 1 {
            errors.push(format!(
                "mirroring-concurrent-service-endpoint-syncs must not be less than 1, but got {workers}"
            ));
        } else if workers > 50 {
            errors.push(format!(
                "mirroring-concurrent-service-endpoint-syncs must not be more than 50, but got {workers}"
            ));
        }
        let max = self.max_endpoints_per_subset;
        if max < 1 {
            errors.push(format!(
                "mirroring-max-endpoints-per-subset must not be less than 1, but got {max}"
            ));
        } else if max > 1000 {
            errors.push(format!(
                "mirroring-max-endpoints-per-subset must not be more than 1000, but got {max}"
            ));
        }
        errors
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("endpointslicemirroring-controller")`).
pub const SERVICE_ACCOUNT: &str = "endpointslicemirroring-controller";

/// The registry entry: `endpointslice-mirroring-controller`, alias
/// `endpointslicemirroring`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "endpointslice-mirroring-controller",
        aliases: &["endpointslicemirroring"],
        disabled_by_default: false,
        constructor: |ctx| {
            let o = &ctx.options.endpointslice_mirroring;
            let errors = o.validate();
            if !errors.is_empty() {
                return Err(errors.join(", "));
            }
            Ok(Some(Box::new(endpointslice_mirroring_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                o,
            ))))
        },
    }
}

/// Whether an Endpoints is to be mirrored at all (upstream `shouldMirror`; whether its
/// Service exists without selector is checked in the sync).
pub fn should_mirror(endpoints: &Endpoints) -> bool {
    let skip = endpoints
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SKIP_MIRROR))
        .is_some_and(|v| v == "true");
    let leader = endpoints
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LEADER_ELECTION_ANNOTATION));
    !skip && !leader
}

fn managed_by_us(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MANAGED_BY))
        .is_some_and(|v| v == MANAGED_BY)
}

fn service_name_label(slice: &EndpointSlice) -> Option<&String> {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_SERVICE_NAME))
}

/// Whether the slice is one this controller mirrored for the Endpoints
/// `namespace/name` (upstream `endpointSlicesMirroredForService`'s selector).
pub fn mirrored_for(slice: &EndpointSlice, namespace: &str, name: &str) -> bool {
    slice.metadata.namespace.as_deref() == Some(namespace)
        && managed_by_us(slice)
        && service_name_label(slice).is_some_and(|n| n == name)
}

/// The Endpoints a slice mirrors (upstream `endpointsControllerKey`).
fn endpoints_key(slice: &EndpointSlice) -> Option<ObjectKey> {
    let name = service_name_label(slice).filter(|n| !n.is_empty())?;
    Some(ObjectKey::namespaced(
        slice.metadata.namespace.as_deref().unwrap_or_default(),
        name,
    ))
}

fn endpoints_handler() -> Funcs<Endpoints> {
    Funcs::new()
        .on_add(|e: &Endpoints, q: &Requests<'_, ObjectKey>| {
            if should_mirror(e) {
                q.add(ObjectKey::of(e));
            }
        })
        .on_update(
            |old: &Endpoints, new: &Endpoints, q: &Requests<'_, ObjectKey>| {
                if should_mirror(old) || should_mirror(new) {
                    q.add(ObjectKey::of(new));
                }
            },
        )
        .on_delete(|e: &Endpoints, q: &Requests<'_, ObjectKey>| {
            if should_mirror(e) {
                q.add(ObjectKey::of(e));
            }
        })
}

fn service_handler() -> Funcs<Service> {
    let no_selector = |s: &Service| s.spec.as_ref().is_none_or(|s| s.selector.is_none());
    Funcs::new()
        .on_add(move |s: &Service, q: &Requests<'_, ObjectKey>| {
            if no_selector(s) {
                q.add(ObjectKey::of(s));
            }
        })
        .on_update(
            move |old: &Service, new: &Service, q: &Requests<'_, ObjectKey>| {
                if no_selector(old) != no_selector(new) {
                    q.add(ObjectKey::of(new));
                }
            },
        )
        .on_delete(move |s: &Service, q: &Requests<'_, ObjectKey>| {
            if no_selector(s) {
                q.add(ObjectKey::of(s));
            }
        })
}

fn slice_handler(tracker: Arc<SliceTracker>, batch: Duration) -> Funcs<EndpointSlice> {
    let enqueue = move |s: &EndpointSlice, q: &Requests<'_, ObjectKey>| {
        if let Some(key) = endpoints_key(s) {
            q.add_after(key, batch);
        }
    };
    let (t1, t2, t3) = (tracker.clone(), tracker.clone(), tracker);
    Funcs::new()
        .on_add(move |s: &EndpointSlice, q: &Requests<'_, ObjectKey>| {
            if managed_by_us(s) && t1.should_sync(s) {
                enqueue(s, q);
            }
        })
        .on_update(
            move |old: &EndpointSlice, new: &EndpointSlice, q: &Requests<'_, ObjectKey>| {
                // the controller never changes the service-name label, users may
                if service_name_label(old) != service_name_label(new) {
                    enqueue(new, q);
                    enqueue(old, q);
                    return;
                }
                if managed_by_us(old) != managed_by_us(new)
                    || (managed_by_us(new) && t2.should_sync(new))
                {
                    enqueue(new, q);
                }
            },
        )
        .on_delete(move |s: &EndpointSlice, q: &Requests<'_, ObjectKey>| {
            // a deletion the controller did not make: mirror again
            if managed_by_us(s) && t3.has(s) && !t3.handle_deletion(s) {
                enqueue(s, q);
            }
        })
}

/// The mirroring controller, ready to be added to `mgr`.
pub fn endpointslice_mirroring_controller(
    mgr: &impl ClusterAccess,
    options: &EndpointSliceMirroringControllerOptions,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    // registered from the start, as upstream's
    metrics::metrics();
    let tracker = Arc::new(SliceTracker::default());
    let reconciler = MirroringReconciler {
        endpoints: cache.informer::<Endpoints>().store().clone(),
        services: cache.informer::<Service>().store().clone(),
        slices: cache.informer::<EndpointSlice>().store().clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_COMPONENT),
        tracker: tracker.clone(),
        max_endpoints_per_subset: options.max_endpoints_per_subset,
    };
    // upstream: a 1 s .. 100 s per-item backoff, and 10 qps overall for retries
    let limiter: Vec<Box<dyn RateLimiter<ObjectKey>>> = vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(100),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ];
    let workers = options.concurrent_service_endpoint_syncs.max(1);
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(
            ControllerOptions::workers(workers).with_rate_limiter(MaxOfRateLimiter::new(limiter)),
        )
        .for_with::<Endpoints>(endpoints_handler())
        .watches_with::<Service>(service_handler(), Vec::new())
        .watches_with::<EndpointSlice>(
            slice_handler(tracker, options.endpoint_updates_batch_period),
            Vec::new(),
        )
        .build(reconciler)
}

/// Mirrors one Endpoints (upstream `syncEndpoints`).
pub struct MirroringReconciler {
    endpoints: Arc<Store<Endpoints>>,
    services: Arc<Store<Service>>,
    slices: Arc<Store<EndpointSlice>>,
    client: kube::Client,
    recorder: EventRecorder,
    tracker: Arc<SliceTracker>,
    max_endpoints_per_subset: usize,
}

impl MirroringReconciler {
    /// The slices this controller mirrored for `namespace/name`, from the cache.
    fn mirrored(&self, namespace: &str, name: &str) -> Vec<Arc<EndpointSlice>> {
        self.slices
            .list_namespace(namespace)
            .into_iter()
            .filter(|s| mirrored_for(s, namespace, name))
            .collect()
    }

    /// Delete every slice mirrored for `namespace/name` (upstream
    /// `deleteMirroredSlices`).
    async fn delete_mirrored(&self, namespace: &str, name: &str) -> Result<(), ReconcileError> {
        let slices = self.mirrored(namespace, name);
        self.tracker.delete_owner(namespace, name);
        let api = Api::<EndpointSlice>::namespaced(self.client.clone(), namespace);
        let mut errors = Vec::new();
        for s in &slices {
            let slice_name = s.metadata.name.as_deref().unwrap_or_default();
            match api.delete(slice_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.first() {
            None => Ok(()),
            Some(e) => Err(ReconcileError::msg(format!(
                "error(s) deleting {}/{} EndpointSlices for {namespace}/{name} Endpoints, including: {e}",
                errors.len(),
                slices.len()
            ))),
        }
    }

    async fn sync(&self, key: &ObjectKey) -> Result<(), ReconcileError> {
        let namespace = key.namespace().unwrap_or_default();
        let name = key.name();
        let Some(endpoints) = self.endpoints.get(key) else {
            return self.delete_mirrored(namespace, name).await;
        };
        if !should_mirror(&endpoints) {
            return self.delete_mirrored(namespace, name).await;
        }
        let Some(service) = self.services.get(key) else {
            return self.delete_mirrored(namespace, name).await;
        };
        if service.spec.as_ref().is_some_and(|s| s.selector.is_some()) {
            return self.delete_mirrored(namespace, name).await;
        }
        let slices = self.mirrored(namespace, name);
        let refs: Vec<&EndpointSlice> = slices.iter().map(|s| s.as_ref()).collect();
        if self.tracker.stale(namespace, name, &refs) {
            return Err(ReconcileError::msg(
                "EndpointSlice informer cache is out of date",
            ));
        }
        let existing: Vec<EndpointSlice> = slices.iter().map(|s| (**s).clone()).collect();
        let plan = reconciler::plan(&endpoints, &existing, self.max_endpoints_per_subset);
        let m = metrics::metrics();
        m.skipped.observe(plan.skipped_addresses as f64);
        m.added.observe(plan.totals.added as f64);
        m.updated.observe(plan.totals.updated as f64);
        m.removed.observe(plan.totals.removed as f64);

        let reference = object_reference(endpoints.as_ref());
        if plan.invalid_addresses > 0 {
            self.recorder.event(
                &reference,
                None,
                EventType::Warning,
                INVALID_IP_ADDRESS,
                "Mirroring",
                &format!(
                    "Skipped {} invalid IP addresses when mirroring to EndpointSlices",
                    plan.invalid_addresses
                ),
            );
        }
        if plan.skipped_addresses > plan.invalid_addresses {
            tracing::info!(endpoints = %key, skipped = plan.skipped_addresses, "addresses in Endpoints were skipped due to exceeding MaxEndpointsPerSubset");
            self.recorder.event(
                &reference,
                None,
                EventType::Warning,
                TOO_MANY_ADDRESSES_TO_MIRROR,
                "Mirroring",
                &format!(
                    "A max of {} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
                    self.max_endpoints_per_subset, plan.skipped_addresses
                ),
            );
        }
        self.finalize(&endpoints, plan).await
    }

    /// Carry out a plan (upstream `finalize`).
    async fn finalize(
        &self,
        endpoints: &Endpoints,
        plan: reconciler::Plan,
    ) -> Result<(), ReconcileError> {
        let namespace = endpoints.metadata.namespace.as_deref().unwrap_or_default();
        let name = endpoints.metadata.name.as_deref().unwrap_or_default();
        let api = Api::<EndpointSlice>::namespaced(self.client.clone(), namespace);
        // no new slices for an Endpoints being deleted
        if endpoints.metadata.deletion_timestamp.is_none() {
            for s in &plan.to_create {
                match api.create(&PostParams::default(), s).await {
                    Ok(created) => {
                        self.tracker.update(&created);
                        metrics::metrics().change("create");
                    }
                    Err(e) if is_namespace_terminating(&e) => return Ok(()),
                    Err(e) => {
                        return Err(ReconcileError::msg(format!(
                            "failed to create EndpointSlice for Endpoints {namespace}/{name}: {e}"
                        )))
                    }
                }
            }
        }
        for s in &plan.to_update {
            let slice_name = s.metadata.name.as_deref().unwrap_or_default();
            match api.replace(slice_name, &PostParams::default(), s).await {
                Ok(updated) => {
                    self.tracker.update(&updated);
                    metrics::metrics().change("update");
                }
                Err(e) => {
                    return Err(ReconcileError::msg(format!(
                        "failed to update {slice_name} EndpointSlice for Endpoints {namespace}/{name}: {e}"
                    )))
                }
            }
        }
        for s in &plan.to_delete {
            let slice_name = s.metadata.name.as_deref().unwrap_or_default();
            match api.delete(slice_name, &DeleteParams::default()).await {
                Ok(_) => {
                    self.tracker.expect_deletion(s);
                    metrics::metrics().change("delete");
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    return Err(ReconcileError::msg(format!(
                        "failed to delete {slice_name} EndpointSlice for Endpoints {namespace}/{name}: {e}"
                    )))
                }
            }
        }
        Ok(())
    }
}

impl Reconciler for MirroringReconciler {
    async fn reconcile(&self, ctx: Context, key: ObjectKey) -> ReconcileResult {
        let started = std::time::Instant::now();
        let result = self.sync(&key).await;
        metrics::metrics()
            .sync_duration
            .observe(started.elapsed().as_secs_f64());
        match result {
            Ok(()) => Ok(Action::Done),
            Err(e) if ctx.retries + 1 >= MAX_RETRIES => {
                tracing::info!(endpoints = %key, error = %e, "retry budget exceeded, dropping Endpoints out of the queue");
                Err(ReconcileError::terminal(e.to_string()))
            }
            Err(e) => Err(e),
        }
    }
}
