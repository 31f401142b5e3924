//! The node IPAM controller: kube-controller-manager's `node-ipam-controller` with its
//! `RangeAllocator` (upstream `pkg/controller/nodeipam`, `ipam/range_allocator.go`).
//!
//! With `--allocate-node-cidrs` it gives every node without `spec.podCIDRs` one block
//! of `--node-cidr-mask-size` (`/24` for IPv4, `/64` for IPv6 by default; the per-family
//! `--node-cidr-mask-size-ipv4`/`-ipv6` for dual stack) from each `--cluster-cidr`
//! (comma separated, at most one per IP family), skipping the blocks that overlap
//! `--service-cluster-ip-range`. The blocks nodes already hold are recorded (from a live
//! list, as upstream's quorum read) before any allocation (an allocation outside the cluster CIDRs stops the controller, as
//! upstream), and a node's blocks are freed when it is deleted. When the range is
//! exhausted the node gets the Warning event `CIDRNotAvailable` ("Node n status is now:
//! CIDRNotAvailable") and is retried with backoff; a patch that keeps failing gives
//! `CIDRAssignmentFailed`. Without `--allocate-node-cidrs` the controller does not run;
//! with it but without a valid `--cluster-cidr` it refuses to start.
//!
//! Unlike upstream, which trusts its cache, the node is read live right before the
//! patch, and the patch carries its resourceVersion: a second allocation racing the
//! cache (this API server does not yet refuse changing a set `podCIDR`) cannot
//! overwrite the first.

pub mod cidrset;

use crate::clientbuilder::ClusterAccess;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::events::{EventRecorder, EventType};
use coxswain_runtime::handler::{Funcs, Requests};
use coxswain_runtime::manager::{runnable, BoxError, Runnable};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, ObjectReference};
use kube::api::{ListParams, Patch, PatchParams};
use kube::Api;
use serde_json::json;

use cidrset::{Cidr, CidrSet, CidrSetError};

/// Name of the controller.
pub const CONTROLLER_NAME: &str = "node-ipam-controller";
/// The event source of the allocator (upstream's recorder component).
pub const EVENT_SOURCE: &str = "cidrAllocator";
/// Default node mask for IPv4 (upstream `defaultNodeMaskCIDRIPv4`).
pub const DEFAULT_NODE_MASK_IPV4: u8 = 24;
/// Default node mask for IPv6 (upstream `defaultNodeMaskCIDRIPv6`).
pub const DEFAULT_NODE_MASK_IPV6: u8 = 64;
/// Workers (upstream `cidrUpdateWorkers`).
pub const WORKERS: usize = 30;
/// Patch attempts per allocation (upstream `cidrUpdateRetries`).
pub const UPDATE_RETRIES: usize = 3;

/// The controller's options (upstream `KubeCloudSharedConfiguration` +
/// `NodeIPAMControllerConfiguration`); 0 mask sizes mean "not set".
#[derive(Clone, Debug, Default)]
pub struct NodeIpamControllerOptions {
    /// `--allocate-node-cidrs`.
    pub allocate_node_cidrs: bool,
    /// `--cluster-cidr` (comma separated).
    pub cluster_cidr: String,
    /// `--service-cluster-ip-range` (comma separated, primary and secondary).
    pub service_cluster_ip_range: String,
    /// `--node-cidr-mask-size`.
    pub node_cidr_mask_size: u8,
    /// `--node-cidr-mask-size-ipv4`.
    pub node_cidr_mask_size_ipv4: u8,
    /// `--node-cidr-mask-size-ipv6`.
    pub node_cidr_mask_size_ipv6: u8,
}

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("node-controller")`).
pub const SERVICE_ACCOUNT: &str = "node-controller";

/// The registry entry: `node-ipam-controller`, alias `nodeipam`.
pub fn descriptor() -> crate::registry::Descriptor {
    crate::registry::Descriptor {
        name: CONTROLLER_NAME,
        aliases: &["nodeipam"],
        disabled_by_default: false,
        constructor: |ctx| {
            let o = &ctx.options.node_ipam;
            if !o.allocate_node_cidrs {
                return Ok(None);
            }
            let params = AllocatorParams::from_options(o)?;
            let allocator = RangeAllocator::new(&params)?;
            Ok(Some(Box::new(node_ipam_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
                allocator,
            ))))
        },
    }
}

/// What the allocator is made from (upstream `CIDRAllocatorParams`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocatorParams {
    /// The cluster CIDRs (one, or one per family).
    pub cluster_cidrs: Vec<Cidr>,
    /// The service ranges to keep out.
    pub service_cidrs: Vec<Cidr>,
    /// The node mask of each cluster CIDR.
    pub node_mask_sizes: Vec<u8>,
}

impl AllocatorParams {
    /// Validate the flags as kube-controller-manager's `newNodeIpamController`
    /// (`validateCIDRs`, `setNodeCIDRMaskSizes`).
    pub fn from_options(o: &NodeIpamControllerOptions) -> Result<AllocatorParams, String> {
        let cluster_cidrs = validate_cidrs(&o.cluster_cidr)?;
        let mut service_cidrs = Vec::new();
        for s in o
            .service_cluster_ip_range
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            match Cidr::parse(s) {
                Ok(c) => service_cidrs.push(c),
                Err(e) => {
                    tracing::warn!(cidr = s, error = %e, "unsuccessful parsing of service CIDR")
                }
            }
        }
        if service_cidrs.len() == 2 && service_cidrs[0].is_ipv6() == service_cidrs[1].is_ipv6() {
            return Err(
                "serviceCIDR and secondaryServiceCIDR are not dualstack (from different IPfamiles)"
                    .into(),
            );
        }
        let node_mask_sizes = node_cidr_mask_sizes(o, &cluster_cidrs)?;
        Ok(AllocatorParams {
            cluster_cidrs,
            service_cidrs,
            node_mask_sizes,
        })
    }
}

/// Upstream `validateCIDRs`: one CIDR, or two of different families.
pub fn validate_cidrs(list: &str) -> Result<Vec<Cidr>, String> {
    let mut cidrs = Vec::new();
    for s in list.trim().split(',') {
        cidrs.push(Cidr::parse(s)?);
    }
    let dual = cidrs.iter().any(|c| c.is_ipv6()) && cidrs.iter().any(|c| !c.is_ipv6());
    if cidrs.len() > 1 && !dual {
        return Err(format!(
            "len of ClusterCIDRs=={} and they are not configured as dual stack (at least one from each IPFamily",
            cidrs.len()
        ));
    }
    if cidrs.len() > 2 {
        return Err(format!(
            "length of clusterCIDRs is:{} more than max allowed of 2",
            cidrs.len()
        ));
    }
    Ok(cidrs)
}

/// Upstream `setNodeCIDRMaskSizes`.
pub fn node_cidr_mask_sizes(
    o: &NodeIpamControllerOptions,
    cluster: &[Cidr],
) -> Result<Vec<u8>, String> {
    let sorted = |v4: u8, v6: u8| -> Vec<u8> {
        cluster
            .iter()
            .map(|c| if c.is_ipv6() { v6 } else { v4 })
            .collect()
    };
    let (mut v4, mut v6) = (DEFAULT_NODE_MASK_IPV4, DEFAULT_NODE_MASK_IPV6);
    if cluster.len() > 1 {
        if o.node_cidr_mask_size != 0 {
            return Err(
                "usage of --node-cidr-mask-size is not allowed with dual-stack clusters".into(),
            );
        }
        if o.node_cidr_mask_size_ipv4 != 0 {
            v4 = o.node_cidr_mask_size_ipv4;
        }
        if o.node_cidr_mask_size_ipv6 != 0 {
            v6 = o.node_cidr_mask_size_ipv6;
        }
        return Ok(sorted(v4, v6));
    }
    let single_v6 = cluster.first().is_some_and(Cidr::is_ipv6);
    if o.node_cidr_mask_size != 0 {
        if o.node_cidr_mask_size_ipv4 != 0 || o.node_cidr_mask_size_ipv6 != 0 {
            return Err("usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific flags".into());
        }
        return Ok(sorted(o.node_cidr_mask_size, o.node_cidr_mask_size));
    }
    if o.node_cidr_mask_size_ipv4 != 0 {
        if single_v6 {
            return Err(
                "usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster"
                    .into(),
            );
        }
        v4 = o.node_cidr_mask_size_ipv4;
    }
    if o.node_cidr_mask_size_ipv6 != 0 {
        if !single_v6 {
            return Err(
                "usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster"
                    .into(),
            );
        }
        v6 = o.node_cidr_mask_size_ipv6;
    }
    Ok(sorted(v4, v6))
}

fn pod_cidrs(node: &Node) -> &[String] {
    node.spec
        .as_ref()
        .and_then(|s| s.pod_cidrs.as_deref())
        .unwrap_or_default()
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// The blocks of every cluster CIDR (upstream `rangeAllocator` without its I/O), and
/// which node holds which blocks as far as this process knows.
#[derive(Debug, Clone)]
pub struct RangeAllocator {
    sets: Vec<CidrSet>,
    /// The blocks each node (by name) was seen with or given by this process: a node
    /// deleted while the cache still shows it without its blocks (the watch event of
    /// the patch that gave them was missed and the deletion came with the relist) gives
    /// them back all the same, where upstream leaks them until a restart.
    held: BTreeMap<String, Vec<Cidr>>,
}

impl RangeAllocator {
    /// An allocator for `params`, with the service ranges kept out (upstream
    /// `NewCIDRRangeAllocator` + `filterOutServiceRange`).
    pub fn new(params: &AllocatorParams) -> Result<RangeAllocator, String> {
        let mut sets = Vec::new();
        for (c, mask) in params.cluster_cidrs.iter().zip(&params.node_mask_sizes) {
            sets.push(CidrSet::new(*c, *mask).map_err(|e| e.to_string())?);
        }
        let mut r = RangeAllocator {
            sets,
            held: BTreeMap::new(),
        };
        for service in &params.service_cidrs {
            for set in &mut r.sets {
                if set.cluster().overlaps(service) {
                    if let Err(e) = set.occupy(service) {
                        tracing::error!(error = %e, %service, "filtering out the service CIDR");
                    }
                }
            }
        }
        Ok(r)
    }

    /// The cluster CIDR sets.
    pub fn sets(&self) -> &[CidrSet] {
        &self.sets
    }

    /// Mark `node`'s blocks taken (upstream `occupyCIDRs`).
    pub fn occupy(&mut self, node: &Node) -> Result<(), String> {
        let name = node_name(node);
        let mut held = Vec::new();
        for (idx, s) in pod_cidrs(node).iter().enumerate() {
            let cidr =
                Cidr::parse(s).map_err(|_| format!("failed to parse node {name}, CIDR {s}"))?;
            let Some(set) = self.sets.get_mut(idx) else {
                return Err(format!("node:{name} has an allocated cidr: {s} at index:{idx} that does not exist in cluster cidrs configuration"));
            };
            set.occupy(&cidr).map_err(|e| {
                format!(
                    "failed to mark cidr[{cidr}] at idx [{idx}] as occupied for node: {name}: {e}"
                )
            })?;
            held.push(cidr);
        }
        if !held.is_empty() {
            self.held.insert(name.to_string(), held);
        }
        Ok(())
    }

    /// Record that node `name` was given `cidrs` (its patch went through).
    pub fn assigned(&mut self, name: &str, cidrs: &[Cidr]) {
        self.held.insert(name.to_string(), cidrs.to_vec());
    }

    /// Free `node`'s blocks (upstream `ReleaseCIDR`), and those this process knows it
    /// held.
    pub fn release_node(&mut self, node: &Node) -> Result<(), String> {
        let name = node_name(node);
        let known = self.held.remove(name).unwrap_or_default();
        let mut cidrs = Vec::new();
        for s in pod_cidrs(node) {
            cidrs.push(
                Cidr::parse(s)
                    .map_err(|e| format!("failed to parse CIDR {s} on Node {name}: {e}"))?,
            );
        }
        if cidrs.is_empty() {
            cidrs = known;
        }
        for (idx, cidr) in cidrs.iter().enumerate() {
            let Some(set) = self.sets.get_mut(idx) else {
                return Err(format!("node:{name} has an allocated cidr: {cidr} at index:{idx} that does not exist in cluster cidrs configuration"));
            };
            set.release(cidr)
                .map_err(|e| format!("error when releasing CIDR {cidr}: {e}"))?;
        }
        Ok(())
    }

    /// One block from every cluster CIDR; on exhaustion nothing stays taken.
    pub fn allocate(&mut self) -> Result<Vec<Cidr>, (usize, CidrSetError)> {
        let mut got: Vec<Cidr> = Vec::new();
        for idx in 0..self.sets.len() {
            match self.sets[idx].allocate_next() {
                Ok(c) => got.push(c),
                Err(e) => {
                    self.release(&got);
                    return Err((idx, e));
                }
            }
        }
        Ok(got)
    }

    /// Give back blocks from [`RangeAllocator::allocate`].
    pub fn release(&mut self, cidrs: &[Cidr]) {
        for (set, c) in self.sets.iter_mut().zip(cidrs) {
            if let Err(e) = set.release(c) {
                tracing::error!(error = %e, cidr = %c, "releasing CIDR");
            }
        }
    }
}

fn node_reference(node: &Node) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: node.metadata.name.clone(),
        uid: node.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

/// Upstream `RecordNodeStatusChange`.
fn record_node_status_change(recorder: &EventRecorder, node: &Node, status: &str) {
    recorder.event(
        &node_reference(node),
        None,
        EventType::Warning,
        status,
        "Allocate",
        &format!("Node {} status is now: {status}", node_name(node)),
    );
}

/// The shared allocator state.
type Shared = Arc<Mutex<RangeAllocator>>;

fn lock(a: &Shared) -> MutexGuard<'_, RangeAllocator> {
    a.lock().unwrap_or_else(|e| e.into_inner())
}

/// Allocates or records one node's blocks (upstream `syncNode`).
pub struct IpamReconciler {
    nodes: Arc<Store<Node>>,
    client: kube::Client,
    recorder: EventRecorder,
    allocator: Shared,
}

impl IpamReconciler {
    /// Patch the node with `cidrs` unless it got some meanwhile (upstream
    /// `updateCIDRsAllocation`).
    async fn update_allocation(&self, name: &str, cidrs: Vec<Cidr>) -> ReconcileResult {
        let strings: Vec<String> = cidrs.iter().map(Cidr::to_string).collect();
        let api = Api::<Node>::all(self.client.clone());
        let node = match api.get(name).await {
            Ok(n) => n,
            Err(e) => {
                lock(&self.allocator).release(&cidrs);
                return Err(ReconcileError::from(e).context("reading the node"));
            }
        };
        let current = pod_cidrs(&node);
        if current == strings.as_slice() {
            lock(&self.allocator).assigned(name, &cidrs);
            return Ok(Action::Done);
        }
        if !current.is_empty() {
            tracing::error!(node = name, pod_cidrs = ?current, "node already has a CIDR allocated; releasing the new one");
            let mut a = lock(&self.allocator);
            a.release(&cidrs);
            if let Err(e) = a.occupy(&node) {
                return Err(ReconcileError::msg(e));
            }
            return Ok(Action::Done);
        }
        let patch = json!({
            "metadata": {"resourceVersion": node.metadata.resource_version},
            "spec": {"podCIDR": strings[0], "podCIDRs": strings},
        });
        let mut last = None;
        let mut maybe_applied = false;
        for _ in 0..UPDATE_RETRIES {
            match api
                .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                Ok(_) => {
                    tracing::info!(node = name, pod_cidrs = ?strings, "set node PodCIDR");
                    lock(&self.allocator).assigned(name, &cidrs);
                    return Ok(Action::Done);
                }
                Err(e) => {
                    // a server timeout may have gone through: the retries then conflict
                    // on the resourceVersion it changed
                    maybe_applied |= matches!(&e, kube::Error::Api(s) if s.code == 504);
                    last = Some(e);
                }
            }
        }
        let e = last.expect("at least one attempt");
        if maybe_applied {
            if let Ok(now) = api.get(name).await {
                if pod_cidrs(&now) == strings.as_slice() {
                    tracing::info!(node = name, pod_cidrs = ?strings, "set node PodCIDR");
                    lock(&self.allocator).assigned(name, &cidrs);
                    return Ok(Action::Done);
                }
            }
        }
        tracing::error!(node = name, error = %e, "failed to update node PodCIDR after multiple attempts");
        record_node_status_change(&self.recorder, &node, "CIDRAssignmentFailed");
        // as upstream: a server timeout may have gone through, keep the blocks then
        if !maybe_applied {
            lock(&self.allocator).release(&cidrs);
        }
        Err(ReconcileError::from(e).context("setting the node's pod CIDRs"))
    }
}

impl Reconciler for IpamReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(node) = self.nodes.get(&key) else {
            return Ok(Action::Done);
        };
        if node.metadata.deletion_timestamp.is_some() {
            lock(&self.allocator)
                .release_node(&node)
                .map_err(ReconcileError::msg)?;
            return Ok(Action::Done);
        }
        if !pod_cidrs(&node).is_empty() {
            lock(&self.allocator)
                .occupy(&node)
                .map_err(ReconcileError::msg)?;
            return Ok(Action::Done);
        }
        let allocated = lock(&self.allocator).allocate();
        match allocated {
            Ok(cidrs) => self.update_allocation(key.name(), cidrs).await,
            Err((idx, e)) => {
                record_node_status_change(&self.recorder, &node, "CIDRNotAvailable");
                Err(ReconcileError::msg(format!(
                    "failed to allocate cidr from cluster cidr at idx:{idx}: {e}"
                )))
            }
        }
    }
}

fn node_handler(allocator: Shared) -> Funcs<Node> {
    Funcs::new()
        .on_add(|n: &Node, q: &Requests<'_, ObjectKey>| q.add(ObjectKey::of(n)))
        .on_update(|_, n: &Node, q: &Requests<'_, ObjectKey>| q.add(ObjectKey::of(n)))
        .on_delete(move |n: &Node, q: &Requests<'_, ObjectKey>| {
            if let Err(e) = lock(&allocator).release_node(n) {
                tracing::error!(error = %e, "error while processing CIDR Release");
            }
            q.add(ObjectKey::of(n));
        })
}

/// The controller as a runnable of `mgr`: once the node cache synced, the blocks of
/// existing nodes are recorded, then nodes are reconciled.
pub fn node_ipam_controller(mgr: &impl ClusterAccess, allocator: RangeAllocator) -> impl Runnable {
    let nodes = mgr.cache().informer::<Node>();
    let store = nodes.store().clone();
    let client = mgr.kube_client().clone();
    let list_client = client.clone();
    let recorder = mgr.event_recorder(EVENT_SOURCE);
    let allocator: Shared = Arc::new(Mutex::new(allocator));
    let reconciler = IpamReconciler {
        nodes: store.clone(),
        client,
        recorder,
        allocator: allocator.clone(),
    };
    let controller = ControllerBuilder::new(mgr.cache())
        .named(CONTROLLER_NAME)
        .with_options(ControllerOptions::workers(WORKERS))
        .for_with::<Node>(node_handler(allocator.clone()))
        .build(reconciler);
    runnable(CONTROLLER_NAME, true, move |cancel| async move {
        tokio::select! {
            _ = nodes.wait_for_sync() => {}
            _ = cancel.cancelled() => return Ok::<(), BoxError>(()),
        }
        // the blocks nodes hold, from a live list as upstream's `listNodes` (a quorum
        // read): a cache listed from a lagging server would miss blocks given out just
        // before a restart, and hand them out again
        let live = Api::<Node>::all(list_client)
            .list(&ListParams::default())
            .await
            .map_err(|e| BoxError::from(format!("listing nodes: {e}")))?;
        {
            let mut a = lock(&allocator);
            for node in &live.items {
                // garbage or an out-of-range block: the controller cannot run
                a.occupy(node).map_err(BoxError::from)?;
            }
        }
        tracing::info!(
            controller = CONTROLLER_NAME,
            "starting range CIDR allocator"
        );
        Runnable::start(Box::new(controller), cancel).await
    })
}
