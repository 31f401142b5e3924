//! The Endpoints controller: kube-controller-manager's `endpoints-controller`
//! (upstream `pkg/controller/endpoint`).
//!
//! Every Service with a selector gets one `v1` Endpoints object of the same name
//! listing its pods: ready pods (or all, with `publishNotReadyAddresses`) under
//! `addresses`, the others under `notReadyAddresses`, each with its node, a reference to
//! the pod and, when the pod's subdomain is the Service, its hostname; ports are the
//! Service's, a named `targetPort` resolved in each pod. The subsets are packed into
//! the canonical layout of [`subsets::repack_subsets`]. What is written is computed by
//! [`compute::endpoints_to_write`]: the Service's labels plus
//! `endpoints.kubernetes.io/managed-by: endpoint-controller` (and
//! `service.kubernetes.io/headless` for a Service without cluster IP), the
//! `endpoints.kubernetes.io/last-change-trigger-time` annotation, and at most 1,000
//! addresses (`endpoints.kubernetes.io/over-capacity: truncated` when cut). Nothing is
//! written when nothing changed.
//!
//! Services without a selector (their Endpoints are written by hand, and mirrored to
//! slices by [`crate::endpointslicemirroring`]) and `ExternalName` Services are left
//! alone. When a Service goes, its Endpoints is deleted; Endpoints left over from a
//! Service deleted while the controller was down are found once at start.
//!
//! Pod changes reach the Services that select the pod (old and new labels), after
//! `--endpoint-updates-batch-period`; Service changes and Endpoints deletions at once.
//! An update is conditional on the cached resourceVersion (a conflict is retried); a
//! cache that still holds a version the controller already replaced makes the sync wait
//! for the cache (upstream's `staleEndpointsTracker`).

pub mod compute;
pub mod subsets;

#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::api::{DeleteParams, PostParams};
use kube::Api;

use crate::endpointslicemirroring::LEADER_ELECTION_ANNOTATION;
use crate::endpointutil::{
    pod_service_memberships, selector_matches, services_to_update_on_pod_change, TriggerTimeTracker,
};

/// The controller's name (queue, logs).
pub const CONTROLLER_NAME: &str = "endpoint";
/// The event source.
pub const EVENT_COMPONENT: &str = "endpoint-controller";
/// Syncs of one Service that fail this many times in a row are dropped.
const MAX_RETRIES: u32 = 15;

/// The Endpoints controller's options (upstream `EndpointControllerConfiguration`).
#[derive(Clone, Debug)]
pub struct EndpointControllerOptions {
    /// Workers (`--concurrent-endpoint-syncs`, 5).
    pub concurrent_endpoint_syncs: usize,
    /// Delay of the syncs pod changes cause, to batch them
    /// (`--endpoint-updates-batch-period`, 0).
    pub endpoint_updates_batch_period: Duration,
}

impl Default for EndpointControllerOptions {
    fn default() -> Self {
        EndpointControllerOptions {
            concurrent_endpoint_syncs: 5,
            endpoint_updates_batch_period: Duration::ZERO,
        }
    }
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("endpoint-controller")`).
pub const SERVICE_ACCOUNT: &str = "endpoint-controller";

/// The registry entry: `endpoints-controller`, alias `endpoint`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: "endpoints-controller",
        aliases: &["endpoint"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(endpoints_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                &ctx.options.endpoint,
            ))))
        },
    }
}

/// Whether the API server refused a creation because the namespace is being deleted
/// (the status cause `NamespaceTerminating`): nothing to retry.
pub(crate) fn is_namespace_terminating(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s)
        if s.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// The resourceVersions of Endpoints the controller replaced: the cache still holding
/// one of them is stale (upstream `staleEndpointsTracker`).
#[derive(Debug, Default)]
pub struct StaleEndpointsTracker {
    stale: Mutex<HashMap<ObjectKey, String>>,
}

impl StaleEndpointsTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectKey, String>> {
        self.stale.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record that this version of the Endpoints was replaced.
    pub fn stale(&self, endpoints: &Endpoints) {
        let rv = endpoints
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        self.lock().insert(ObjectKey::of(endpoints), rv);
    }

    /// Whether this version was replaced already.
    pub fn is_stale(&self, endpoints: &Endpoints) -> bool {
        let rv = endpoints
            .metadata
            .resource_version
            .as_deref()
            .unwrap_or_default();
        self.lock()
            .get(&ObjectKey::of(endpoints))
            .is_some_and(|s| s == rv)
    }

    /// Forget the Endpoints `key`.
    pub fn delete(&self, key: &ObjectKey) {
        self.lock().remove(key);
    }
}

fn pod_handler(services: Arc<Store<Service>>, batch: Duration) -> Funcs<Pod> {
    let (s1, s2, s3) = (services.clone(), services.clone(), services);
    let in_namespace = |store: &Store<Service>, pod: &Pod| {
        store.list_namespace(pod.metadata.namespace.as_deref().unwrap_or_default())
    };
    Funcs::new()
        .on_add(move |pod: &Pod, q: &Requests<'_, ObjectKey>| {
            let services = in_namespace(&s1, pod);
            for key in pod_service_memberships(services.iter().map(|s| s.as_ref()), pod) {
                q.add_after(key, batch);
            }
        })
        .on_update(move |old: &Pod, new: &Pod, q: &Requests<'_, ObjectKey>| {
            let services = in_namespace(&s2, new);
            for key in
                services_to_update_on_pod_change(services.iter().map(|s| s.as_ref()), old, new)
            {
                q.add_after(key, batch);
            }
        })
        .on_delete(move |pod: &Pod, q: &Requests<'_, ObjectKey>| {
            let services = in_namespace(&s3, pod);
            for key in pod_service_memberships(services.iter().map(|s| s.as_ref()), pod) {
                q.add_after(key, batch);
            }
        })
}

fn endpoints_handler() -> Funcs<Endpoints> {
    Funcs::new().on_delete(|e: &Endpoints, q: &Requests<'_, ObjectKey>| q.add(ObjectKey::of(e)))
}

/// The Endpoints controller, ready to be added to `mgr`.
pub fn endpoints_controller(
    mgr: &impl ClusterAccess,
    options: &EndpointControllerOptions,
) -> Controller<impl Reconciler> {
    let cache = mgr.cache();
    let services = cache.informer::<Service>().store().clone();
    let endpoints = cache.informer::<Endpoints>().store().clone();
    let reconciler = EndpointsReconciler {
        services: services.clone(),
        pods: cache.informer::<Pod>().store().clone(),
        endpoints: endpoints.clone(),
        client: mgr.kube_client().clone(),
        recorder: mgr.event_recorder(EVENT_COMPONENT),
        trigger_times: TriggerTimeTracker::new(),
        stale: StaleEndpointsTracker::default(),
    };
    let workers = match options.concurrent_endpoint_syncs {
        0 => EndpointControllerOptions::default().concurrent_endpoint_syncs,
        n => n,
    };
    // upstream `checkLeftoverEndpoints`: once at start, every Endpoints (but
    // leader-election records) is synced, so that one whose Service went while the
    // controller was down is deleted
    let checked = AtomicBool::new(false);
    ControllerBuilder::new(cache)
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(workers))
        .for_::<Service>()
        .watches_with::<Pod>(
            pod_handler(services, options.endpoint_updates_batch_period),
            Vec::new(),
        )
        .watches_with::<Endpoints>(endpoints_handler(), Vec::new())
        .every(Duration::from_secs(1), move |q| {
            if checked.swap(true, Ordering::Relaxed) {
                return;
            }
            for e in endpoints.list() {
                let leader = e
                    .metadata
                    .annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(LEADER_ELECTION_ANNOTATION));
                if !leader {
                    q.add(ObjectKey::of(e.as_ref()));
                }
            }
        })
        .build(reconciler)
}

/// Writes the Endpoints of one Service (upstream `syncService`).
pub struct EndpointsReconciler {
    services: Arc<Store<Service>>,
    pods: Arc<Store<Pod>>,
    endpoints: Arc<Store<Endpoints>>,
    client: kube::Client,
    recorder: EventRecorder,
    trigger_times: TriggerTimeTracker,
    stale: StaleEndpointsTracker,
}

impl EndpointsReconciler {
    async fn sync(&self, key: &ObjectKey) -> Result<(), ReconcileError> {
        let namespace = key.namespace().unwrap_or_default();
        let api = Api::<Endpoints>::namespaced(self.client.clone(), namespace);
        let Some(service) = self.services.get(key) else {
            // the Service is gone: so is its Endpoints
            match api.delete(key.name(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(ReconcileError::from(e).context("deleting the Endpoints")),
            }
            self.trigger_times.delete_service(key);
            self.stale.delete(key);
            return Ok(());
        };
        let spec = service.spec.clone().unwrap_or_default();
        if spec.type_.as_deref() == Some("ExternalName") {
            return Ok(());
        }
        // no selector: the Endpoints are the users'
        let Some(selector) = spec.selector.as_ref() else {
            return Ok(());
        };
        let pods: Vec<Arc<Pod>> = self
            .pods
            .list_namespace(namespace)
            .into_iter()
            .filter(|p| selector_matches(selector, p.metadata.labels.as_ref()))
            .collect();
        // computed even when nothing is written, to keep the tracker's state current
        let trigger_time = self
            .trigger_times
            .compute_endpoint_last_change_trigger_time(&service, pods.iter().map(|p| p.as_ref()));
        let (subsets, ready, not_ready) =
            compute::desired_subsets(&service, pods.iter().map(|p| p.as_ref()));

        let current = self.endpoints.get(key);
        if let Some(cur) = &current {
            if self.stale.is_stale(cur) {
                return Err(ReconcileError::msg(format!(
                    "endpoints informer cache is out of date, resource version {} already processed for endpoints {key}",
                    cur.metadata.resource_version.as_deref().unwrap_or_default()
                )));
            }
        }
        let Some(new) =
            compute::endpoints_to_write(&service, current.as_deref(), subsets, trigger_time)
        else {
            tracing::trace!(service = %key, "endpoints are equal, skipping update");
            return Ok(());
        };
        tracing::debug!(service = %key, ready, not_ready, "updating endpoints");
        let result = match &current {
            None => api.create(&PostParams::default(), &new).await,
            Some(_) => api.replace(key.name(), &PostParams::default(), &new).await,
        };
        match result {
            Ok(written) => {
                if let Some(cur) = &current {
                    if written.metadata.resource_version != cur.metadata.resource_version {
                        self.stale.stale(cur);
                    }
                }
                Ok(())
            }
            Err(e) if current.is_none() && is_namespace_terminating(&e) => Ok(()),
            Err(e) => {
                let reference = object_reference(&new);
                let (reason, note) = if current.is_none() {
                    (
                        "FailedToCreateEndpoint",
                        format!("Failed to create endpoint for service {key}: {e}"),
                    )
                } else {
                    (
                        "FailedToUpdateEndpoint",
                        format!("Failed to update endpoint {key}: {e}"),
                    )
                };
                self.recorder
                    .event(&reference, None, EventType::Warning, reason, "Sync", &note);
                Err(ReconcileError::from(e).context("writing the Endpoints"))
            }
        }
    }
}

impl Reconciler for EndpointsReconciler {
    async fn reconcile(&self, ctx: Context, key: ObjectKey) -> ReconcileResult {
        match self.sync(&key).await {
            Ok(()) => Ok(Action::Done),
            Err(e) if ctx.retries + 1 >= MAX_RETRIES => {
                tracing::info!(service = %key, error = %e, "dropping service out of the queue");
                Err(ReconcileError::terminal(e.to_string()))
            }
            Err(e) => Err(e),
        }
    }
}
