//! Simulated nodes: registration, node status and Lease heartbeats.
//!
//! At start the registrar creates the configured nodes (or leaves existing ones alone:
//! managed ones are adopted, unmanaged ones are real nodes and never touched). A
//! controller then keeps every node that carries the managed label alive, whoever
//! created it, as a kubelet does: it gives the node a pod CIDR (when it has none),
//! renews its Lease in `kube-node-lease` every renew interval (with up to 4% jitter,
//! as upstream) and writes the node status when it changes or when the status report
//! frequency passed since the last `lastHeartbeatTime`. When a managed node is deleted
//! its Lease goes too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::ObjectKey;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rand::Rng;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use coxswain_runtime::controllerutil::owner_reference;

use crate::config::SimConfig;
use crate::ipam::{node_cidr, nth_address, parse_cidr};
use crate::podstatus::digest;
use apimachinery::quantity::parse_milli;

/// Namespace of the node Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// Whether `node` carries the managed label of `cfg`.
pub fn is_managed(cfg: &SimConfig, node: &Node) -> bool {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(&cfg.managed_label))
        .is_some_and(|v| v == "true")
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

fn quantities(m: &BTreeMap<String, String>) -> BTreeMap<String, Quantity> {
    m.iter()
        .map(|(k, v)| (k.clone(), Quantity(v.clone())))
        .collect()
}

fn uuid_from(hex: &str) -> String {
    let h = |a: usize, b: usize| hex.get(a..b).unwrap_or("0");
    format!(
        "{}-{}-{}-{}-{}",
        h(0, 8),
        h(8, 12),
        h(12, 16),
        h(16, 20),
        h(20, 32)
    )
}

/// Labels of configured node `i`.
pub fn node_labels(cfg: &SimConfig, name: &str, i: usize) -> BTreeMap<String, String> {
    let mut l = BTreeMap::new();
    l.insert("kubernetes.io/hostname".to_string(), name.to_string());
    l.insert("kubernetes.io/os".into(), cfg.os.clone());
    l.insert("kubernetes.io/arch".into(), cfg.arch.clone());
    l.insert("beta.kubernetes.io/os".into(), cfg.os.clone());
    l.insert("beta.kubernetes.io/arch".into(), cfg.arch.clone());
    if !cfg.zones.is_empty() {
        l.insert(
            "topology.kubernetes.io/zone".into(),
            cfg.zones[i % cfg.zones.len()].clone(),
        );
    }
    if !cfg.instance_type.is_empty() {
        l.insert(
            "node.kubernetes.io/instance-type".into(),
            cfg.instance_type.clone(),
        );
    }
    l.extend(cfg.labels.clone());
    l.insert(cfg.managed_label.clone(), "true".into());
    l
}

/// Keeps the managed nodes alive.
pub struct NodeManager {
    cfg: Arc<SimConfig>,
    cache: Arc<Cache>,
    nodes: Api<Node>,
    leases: Api<Lease>,
    boot: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// index of each managed node (its pod CIDR and address slot)
    index: HashMap<String, u32>,
    used: HashSet<u32>,
    leases: HashMap<String, Lease>,
}

impl NodeManager {
    /// A manager writing through `client`, reading nodes from `cache`.
    pub fn new(cfg: Arc<SimConfig>, cache: Arc<Cache>, client: kube::Client) -> Arc<Self> {
        Arc::new(NodeManager {
            nodes: Api::all(client.clone()),
            leases: Api::namespaced(client, LEASE_NAMESPACE),
            boot: format!("{}", Timestamp::now().as_nanosecond()),
            cfg,
            cache,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The index of `node`: its configured index, the slot of its pod CIDR, or the
    /// lowest free slot after the configured nodes.
    fn index_of(&self, node: &Node) -> u32 {
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut st = self.lock();
        if let Some(i) = st.index.get(&name) {
            return *i;
        }
        let base = u32::from(self.cfg.pod_cidr_base);
        let from_cidr = node
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.as_deref())
            // an allocation of the IPAM controller says nothing of the slot
            .filter(|_| !self.cfg.wait_for_pod_cidr)
            .and_then(parse_cidr)
            .and_then(|(net, _)| net.checked_sub(base))
            .map(|off| off / 256);
        let i = match self.cfg.configured_index(&name) {
            Some(i) => i as u32,
            None => from_cidr.unwrap_or_else(|| {
                let mut i = self.cfg.nodes as u32;
                while st.used.contains(&i) {
                    i += 1;
                }
                i
            }),
        };
        st.used.insert(i);
        st.index.insert(name, i);
        i
    }

    fn forget(&self, name: &str) -> bool {
        let mut st = self.lock();
        st.leases.remove(name);
        match st.index.remove(name) {
            Some(i) => {
                st.used.remove(&i);
                true
            }
            None => false,
        }
    }

    /// The node to create for configured index `i`.
    pub fn new_node(&self, i: usize) -> Node {
        let name = self.cfg.node_name(i);
        let cidr =
            (!self.cfg.wait_for_pod_cidr).then(|| node_cidr(self.cfg.pod_cidr_base, i as u32));
        let mut node = Node {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(node_labels(&self.cfg, &name, i)),
                annotations: Some(BTreeMap::from([
                    ("node.alpha.kubernetes.io/ttl".to_string(), "0".to_string()),
                    (
                        crate::storage::ANN_CONTROLLER_MANAGED_ATTACH_DETACH.to_string(),
                        "true".to_string(),
                    ),
                ])),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                pod_cidr: cidr.clone(),
                pod_cidrs: cidr.map(|c| vec![c]),
                provider_id: Some(format!("coxswain-sim://{name}")),
                taints: (!self.cfg.taints.is_empty()).then(|| self.cfg.taints.clone()),
                ..Default::default()
            }),
            status: None,
        };
        node.status = Some(self.desired_status(&node, i as u32, Timestamp::now()));
        node
    }

    fn internal_ip(&self, node: &Node, i: u32) -> String {
        node.status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
            .map(|a| a.address.clone())
            .unwrap_or_else(|| nth_address(self.cfg.node_ip_base, i).to_string())
    }

    /// The status the node should report at `now` (heartbeat times set to `now`,
    /// transition times kept where the condition did not change).
    fn desired_status(&self, node: &Node, i: u32, now: Timestamp) -> NodeStatus {
        let name = node.metadata.name.clone().unwrap_or_default();
        let old = node.status.clone().unwrap_or_default();
        let stamp = Time(now);
        let cond = |t: &str, status: &str, reason: &str, message: &str| {
            let prev = old
                .conditions
                .iter()
                .flatten()
                .find(|c| c.type_ == t && c.status == status);
            NodeCondition {
                type_: t.into(),
                status: status.into(),
                reason: Some(reason.into()),
                message: Some(message.into()),
                last_heartbeat_time: Some(stamp.clone()),
                last_transition_time: prev
                    .and_then(|p| p.last_transition_time.clone())
                    .or_else(|| Some(stamp.clone())),
            }
        };
        let configured = self.cfg.configured_index(&name).is_some();
        let keep = |m: &Option<BTreeMap<String, Quantity>>| m.clone().filter(|m| !m.is_empty());
        let (capacity, allocatable) = if configured {
            (
                quantities(&self.cfg.capacity),
                quantities(self.cfg.allocatable()),
            )
        } else {
            let cap = keep(&old.capacity).unwrap_or_else(|| quantities(&self.cfg.capacity));
            let alloc = keep(&old.allocatable).unwrap_or_else(|| cap.clone());
            (cap, alloc)
        };
        let machine = digest(&[&name, "machine"]);
        NodeStatus {
            conditions: Some(vec![
                cond(
                    "MemoryPressure",
                    "False",
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                cond(
                    "DiskPressure",
                    "False",
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                cond(
                    "PIDPressure",
                    "False",
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                cond(
                    "Ready",
                    "True",
                    "KubeletReady",
                    "kubelet is posting ready status",
                ),
            ]),
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: self.internal_ip(node, i),
                },
                NodeAddress {
                    type_: "Hostname".into(),
                    address: name.clone(),
                },
            ]),
            capacity: Some(capacity),
            allocatable: Some(allocatable),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
            }),
            node_info: Some(NodeSystemInfo {
                architecture: self.cfg.arch.clone(),
                operating_system: self.cfg.os.clone(),
                boot_id: uuid_from(&digest(&[&name, &self.boot])),
                machine_id: machine[..32].to_string(),
                system_uuid: uuid_from(&machine[32..]),
                container_runtime_version: format!("coxswain-sim://{}", env!("CARGO_PKG_VERSION")),
                kernel_version: "6.8.0-coxswain-sim".into(),
                kubelet_version: self.cfg.kubelet_version.clone(),
                kube_proxy_version: String::new(),
                os_image: "coxswain simulated node".into(),
                ..Default::default()
            }),
            ..old
        }
    }

    /// Whether `a` and `b` differ in anything but heartbeat times.
    /// Quantities compare by value (the server may write them in canonical form).
    fn status_differs(a: &NodeStatus, b: &NodeStatus) -> bool {
        let values = |m: &Option<BTreeMap<String, Quantity>>| -> BTreeMap<String, Option<i128>> {
            m.iter()
                .flatten()
                .map(|(k, q)| (k.clone(), parse_milli(&q.0)))
                .collect()
        };
        let strip = |s: &NodeStatus| {
            let mut s = s.clone();
            for c in s.conditions.iter_mut().flatten() {
                c.last_heartbeat_time = None;
            }
            s.capacity = None;
            s.allocatable = None;
            s
        };
        strip(a) != strip(b)
            || values(&a.capacity) != values(&b.capacity)
            || values(&a.allocatable) != values(&b.allocatable)
    }

    /// Renew the node's Lease (create it if missing); the time until the next renewal.
    async fn renew_lease(&self, node: &Node) -> Result<Duration, kube::Error> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let interval = self.cfg.node_lease_renew_interval;
        let jitter = rand::rng().random_range(0.0..0.04);
        let next = interval.mul_f64(1.0 + jitter);
        let cached = self.lock().leases.get(&name).cloned();
        let now = Timestamp::now();
        if let Some(l) = &cached {
            let renewed = l
                .spec
                .as_ref()
                .and_then(|s| s.renew_time.as_ref())
                .map(|t| t.0);
            if let Some(r) = renewed {
                let age = now.as_nanosecond() - r.as_nanosecond();
                let left = interval.as_nanos() as i128 - age;
                if left > 0 {
                    return Ok(Duration::from_nanos(left as u64));
                }
            }
        }
        let spec = LeaseSpec {
            holder_identity: Some(name.clone()),
            lease_duration_seconds: Some(
                self.cfg.node_lease_duration.as_secs().min(i32::MAX as u64) as i32,
            ),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        };
        // the kubelet's lease is owned (not controlled) by its node; a node not yet
        // created has no uid, and its lease no owner
        let owner = owner_reference(node).ok().map(|r| vec![r]);
        let current = match cached {
            Some(l) => Some(l),
            None => match self.leases.get(&name).await {
                Ok(l) => Some(l),
                Err(e) if is_not_found(&e) => None,
                Err(e) => return Err(e),
            },
        };
        let result = match current {
            Some(mut l) => {
                l.spec = Some(LeaseSpec {
                    acquire_time: l.spec.as_ref().and_then(|s| s.acquire_time.clone()),
                    lease_transitions: l.spec.as_ref().and_then(|s| s.lease_transitions),
                    ..spec
                });
                if l.metadata
                    .owner_references
                    .as_ref()
                    .is_none_or(|o| o.is_empty())
                {
                    l.metadata.owner_references = owner;
                }
                l.metadata.managed_fields = None;
                self.leases.replace(&name, &PostParams::default(), &l).await
            }
            None => {
                let l = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(LEASE_NAMESPACE.into()),
                        owner_references: owner,
                        ..Default::default()
                    },
                    spec: Some(spec),
                };
                self.leases.create(&PostParams::default(), &l).await
            }
        };
        match result {
            Ok(l) => {
                self.lock().leases.insert(name, l);
                Ok(next)
            }
            Err(e) => {
                // a conflict or a vanished lease: read it afresh next time
                self.lock().leases.remove(&name);
                if is_conflict(&e) || is_not_found(&e) {
                    Ok(Duration::from_millis(200))
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Keep one node alive; reconciles again when its next heartbeat is due.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let name = key.name().to_string();
        let node = match self.cache.get::<Node>(&key).await {
            Some(n) if is_managed(&self.cfg, &n) => n,
            _ => {
                if self.forget(&name) {
                    match self.leases.delete(&name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(e) if is_not_found(&e) => {}
                        Err(e) => {
                            tracing::debug!(node = %name, error = %e, "deleting the lease of a node that is gone")
                        }
                    }
                }
                return Ok(Action::Done);
            }
        };
        let i = self.index_of(&node);
        if self.cfg.heartbeats_stopped(&node) {
            // a dead kubelet: no Lease renewal, no status; the annotation's change
            // brings the node back here
            return Ok(Action::Done);
        }
        let has_cidr = node
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.as_deref())
            .is_some();
        // with an IPAM controller the node keeps what it allocates, when it does
        if !has_cidr && !self.cfg.wait_for_pod_cidr {
            let cidr = node_cidr(self.cfg.pod_cidr_base, i);
            let patch = json!({"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}});
            self.nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        let lease_in = self.renew_lease(&node).await?;
        let now = Timestamp::now();
        let desired = self.desired_status(&node, i, now);
        let current = node.status.clone().unwrap_or_default();
        let last_beat = current
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .and_then(|c| c.last_heartbeat_time.as_ref())
            .map(|t| t.0);
        let freq = self.cfg.node_status_report_frequency;
        let since_beat = last_beat.map(|t| now.as_nanosecond() - t.as_nanosecond());
        let report_due = since_beat.is_none_or(|age| age >= freq.as_nanos() as i128);
        let status_in = if report_due || Self::status_differs(&desired, &current) {
            // the attach/detach controller's and the kubelet volume manager's fields
            // are theirs: a stale copy must not overwrite them
            let mut body = desired.clone();
            body.volumes_attached = None;
            body.volumes_in_use = None;
            let patch = json!({"status": body});
            self.nodes
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            freq
        } else {
            let age = since_beat.unwrap_or(0).max(0) as u128;
            Duration::from_nanos(freq.as_nanos().saturating_sub(age).min(u64::MAX as u128) as u64)
        };
        Ok(Action::RequeueAfter(
            lease_in.min(status_in).max(Duration::from_millis(10)),
        ))
    }

    /// Create the configured nodes that do not exist yet (at most 16 at a time). Nodes
    /// that exist are adopted when managed and left alone otherwise. Returns when done
    /// or cancelled.
    pub async fn register(self: Arc<Self>, cancel: CancellationToken) {
        let existing: HashMap<String, Arc<Node>> = tokio::select! {
            l = self.cache.list::<Node>(None) => l.into_iter().map(|n| (n.metadata.name.clone().unwrap_or_default(), n)).collect(),
            _ = cancel.cancelled() => {
                tracing::info!("sim node registrar stops: shutdown requested before the node cache synced");
                return;
            }
        };
        let mut todo = Vec::new();
        for i in 0..self.cfg.nodes {
            let name = self.cfg.node_name(i);
            match existing.get(&name) {
                Some(n) if is_managed(&self.cfg, n) => {
                    tracing::debug!(node = %name, "adopting existing simulated node")
                }
                Some(_) => {
                    tracing::warn!(node = %name, label = %self.cfg.managed_label, "a node of that name exists without the managed label; leaving it alone")
                }
                None => todo.push(i),
            }
        }
        let created = futures::stream::iter(todo)
            .map(|i| {
                let me = self.clone();
                let cancel = cancel.clone();
                async move { me.create_with_retry(i, &cancel).await }
            })
            .buffer_unordered(16)
            .filter(|ok| futures::future::ready(*ok))
            .count()
            .await;
        tracing::info!(
            created,
            nodes = self.cfg.nodes,
            "simulated nodes registered"
        );
    }

    async fn create_with_retry(&self, i: usize, cancel: &CancellationToken) -> bool {
        let node = self.new_node(i);
        let name = self.cfg.node_name(i);
        let mut wait = Duration::from_millis(500);
        for attempt in 1..=6 {
            match self.nodes.create(&PostParams::default(), &node).await {
                Ok(_) => return true,
                Err(e) if is_conflict(&e) => return false,
                Err(e) if attempt == 6 => {
                    tracing::error!(node = %name, error = %e, "cannot create simulated node; giving up");
                }
                Err(e) => {
                    tracing::warn!(node = %name, error = %e, attempt, "creating simulated node failed; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = cancel.cancelled() => return false,
                    }
                    wait *= 2;
                }
            }
        }
        false
    }
}

/// The InternalIP of `node`, if reported.
pub fn internal_ip(node: &Node) -> Option<Ipv4Addr> {
    node.status
        .as_ref()?
        .addresses
        .as_ref()?
        .iter()
        .find(|a| a.type_ == "InternalIP")?
        .address
        .parse()
        .ok()
}
