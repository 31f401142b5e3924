//! The TTL controller: kube-controller-manager's `ttl-controller` (upstream
//! `pkg/controller/ttl`).
//!
//! It sets the annotation `node.alpha.kubernetes.io/ttl` on every node: how many seconds
//! a kubelet may cache the Secrets and ConfigMaps its pods use, from the size of the
//! cluster. The size steps through upstream's boundaries with hysteresis (a step is
//! entered above its upper bound and left below the lower bound of the current one):
//!
//! | nodes        | TTL   |
//! |--------------|-------|
//! | 0 – 100      | 0 s   |
//! | 90 – 500     | 15 s  |
//! | 450 – 1000   | 30 s  |
//! | 900 – 2000   | 60 s  |
//! | 1800 –       | 300 s |
//!
//! Every node change enqueues the node; the annotation is patched only when it differs.
//! As upstream, a node deletion changes the desired TTL without enqueuing anything: the
//! remaining nodes pick the new value up at their next update (kubelets update their
//! status every few seconds).

#[cfg(test)]
mod tests;

use crate::clientbuilder::ClusterAccess;
use std::sync::{Arc, Mutex};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "ttl-controller";
/// The annotation (`v1.ObjectTTLAnnotationKey`).
pub const TTL_ANNOTATION: &str = "node.alpha.kubernetes.io/ttl";
/// Workers (upstream runs 5, without a flag).
pub const WORKERS: usize = 5;

/// One step of the cluster size table (upstream `ttlBoundary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// Below this many nodes the previous step applies.
    pub size_min: usize,
    /// Above this many nodes the next step applies.
    pub size_max: usize,
    /// The TTL of this step.
    pub ttl_seconds: u32,
}

/// Upstream `ttlBoundaries`.
pub const BOUNDARIES: [Boundary; 5] = [
    Boundary {
        size_min: 0,
        size_max: 100,
        ttl_seconds: 0,
    },
    Boundary {
        size_min: 90,
        size_max: 500,
        ttl_seconds: 15,
    },
    Boundary {
        size_min: 450,
        size_max: 1000,
        ttl_seconds: 30,
    },
    Boundary {
        size_min: 900,
        size_max: 2000,
        ttl_seconds: 60,
    },
    Boundary {
        size_min: 1800,
        size_max: i32::MAX as usize,
        ttl_seconds: 300,
    },
];

/// The TTL controller's options (upstream has none).
#[derive(Clone, Debug, Default)]
pub struct TtlControllerOptions {}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("ttl-controller")`).
pub const SERVICE_ACCOUNT: &str = "ttl-controller";

/// The registry entry: `ttl-controller`, alias `ttl`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["ttl"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(ttl_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

/// The cluster size and the TTL it calls for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterSize {
    /// Nodes seen (added minus deleted).
    pub node_count: usize,
    /// The step of [`BOUNDARIES`] the cluster is in.
    pub boundary_step: usize,
    /// The TTL every node should have.
    pub desired_ttl_seconds: u32,
}

impl ClusterSize {
    /// A node was added (upstream `addNode`).
    pub fn add_node(&mut self) {
        self.node_count += 1;
        if self.node_count > BOUNDARIES[self.boundary_step].size_max
            && self.boundary_step + 1 < BOUNDARIES.len()
        {
            self.boundary_step += 1;
            self.desired_ttl_seconds = BOUNDARIES[self.boundary_step].ttl_seconds;
        }
    }

    /// A node was deleted (upstream `deleteNode`).
    pub fn delete_node(&mut self) {
        self.node_count = self.node_count.saturating_sub(1);
        if self.node_count < BOUNDARIES[self.boundary_step].size_min && self.boundary_step > 0 {
            self.boundary_step -= 1;
            self.desired_ttl_seconds = BOUNDARIES[self.boundary_step].ttl_seconds;
        }
    }
}

/// The patch that gives `node` the TTL annotation `ttl`, or `None` when it already has
/// it (upstream `updateNodeIfNeeded` + `patchNodeWithAnnotation`; an annotation that is
/// not a number is replaced).
pub fn ttl_patch(node: &Node, ttl: u32) -> Option<Value> {
    let current = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(TTL_ANNOTATION))
        .and_then(|v| v.parse::<i64>().ok());
    if current == Some(i64::from(ttl)) {
        return None;
    }
    Some(json!({"metadata": {"annotations": {TTL_ANNOTATION: ttl.to_string()}}}))
}

fn node_handler(size: Arc<Mutex<ClusterSize>>) -> Funcs<Node> {
    let on_add = size.clone();
    Funcs::new()
        .on_add(move |n: &Node, q: &Requests<'_, ObjectKey>| {
            on_add.lock().unwrap_or_else(|e| e.into_inner()).add_node();
            q.add(ObjectKey::of(n));
        })
        .on_update(|_, n: &Node, q: &Requests<'_, ObjectKey>| q.add(ObjectKey::of(n)))
        .on_delete(move |_, _| size.lock().unwrap_or_else(|e| e.into_inner()).delete_node())
}

/// The TTL controller as a runnable of `mgr`.
pub fn ttl_controller(mgr: &impl ClusterAccess) -> Controller<TtlReconciler> {
    let size = Arc::new(Mutex::new(ClusterSize::default()));
    let reconciler = TtlReconciler {
        nodes: mgr.cache().informer::<Node>().store().clone(),
        client: mgr.kube_client().clone(),
        size: size.clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(WORKERS))
        .for_with::<Node>(node_handler(size))
        .build(reconciler)
}

/// Patches one node's annotation when it differs.
pub struct TtlReconciler {
    nodes: Arc<Store<Node>>,
    client: kube::Client,
    size: Arc<Mutex<ClusterSize>>,
}

impl Reconciler for TtlReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(node) = self.nodes.get(&key) else {
            return Ok(Action::Done);
        };
        let ttl = self
            .size
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .desired_ttl_seconds;
        let Some(patch) = ttl_patch(&node, ttl) else {
            return Ok(Action::Done);
        };
        Api::<Node>::all(self.client.clone())
            .patch(
                key.name(),
                &PatchParams::default(),
                &Patch::Strategic(patch),
            )
            .await
            .map_err(|e| ReconcileError::from(e).context("changing the ttl annotation"))?;
        tracing::debug!(node = key.name(), ttl, "changed ttl annotation");
        Ok(Action::Done)
    }
}
