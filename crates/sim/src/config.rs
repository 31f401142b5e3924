//! The simulator's configuration and its defaults.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use k8s_openapi::api::core::v1::Taint;

use crate::Error;

/// Label (value `"true"`) that marks the nodes the simulator owns by default.
pub const MANAGED_LABEL: &str = "sim.coxswain.dev/managed";

/// Nodes per heartbeat worker at least (see [`SimConfig::node_workers`]): a worker renews
/// its nodes' Leases (every 10 s) in time while a renewal takes up to 200 ms.
pub const NODES_PER_HEARTBEAT_WORKER: usize = 50;

/// Node annotation that stops (`"stopped"`) or runs (any other value) a managed node's
/// heartbeats and kubelet; without it, [`SimConfig::stopped_heartbeats`] decides.
pub const HEARTBEAT_ANNOTATION: &str = "sim.coxswain.dev/heartbeat";

/// What to simulate and how. [`Default`] gives the documented defaults; every field
/// may be changed before [`crate::Simulator::new`] (which validates them).
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Nodes to create (or adopt) at start: `<node_name_prefix><i>` for `i` in
    /// `0..nodes` (default 3).
    pub nodes: usize,
    /// Prefix of the node names (default `sim-node-`).
    pub node_name_prefix: String,
    /// `status.capacity` of the created nodes (default cpu `32`, memory `256Gi`, pods
    /// `110`, ephemeral-storage `100Gi`).
    pub capacity: BTreeMap<String, String>,
    /// `status.allocatable` of the created nodes (default: the capacity).
    pub allocatable: Option<BTreeMap<String, String>>,
    /// Extra labels of the created nodes (added to `kubernetes.io/hostname`,
    /// `kubernetes.io/os`, `kubernetes.io/arch`, their `beta.` forms,
    /// `topology.kubernetes.io/zone` and `node.kubernetes.io/instance-type`).
    pub labels: BTreeMap<String, String>,
    /// Zones the created nodes are spread over, round robin (default `zone-a`,
    /// `zone-b`, `zone-c`; empty: no zone label).
    pub zones: Vec<String>,
    /// `node.kubernetes.io/instance-type` of the created nodes (default
    /// `coxswain-sim.32x256`).
    pub instance_type: String,
    /// `kubernetes.io/os` and `nodeInfo.operatingSystem` (default `linux`).
    pub os: String,
    /// `kubernetes.io/arch` and `nodeInfo.architecture` (default `amd64`).
    pub arch: String,
    /// Taints of the created nodes (default none).
    pub taints: Vec<Taint>,
    /// Label (with value `"true"`) marking the nodes the simulator owns: only those get
    /// heartbeats and simulated kubelet behaviour, so the simulator coexists with real
    /// nodes. A node created by anyone with this label is simulated too (default
    /// [`MANAGED_LABEL`]).
    pub managed_label: String,
    /// `leaseDurationSeconds` of the node Leases (upstream default 40 s).
    pub node_lease_duration: Duration,
    /// How often node Leases are renewed (upstream: a quarter of the duration, 10 s).
    pub node_lease_renew_interval: Duration,
    /// How often an unchanged node status is reported, refreshing the conditions'
    /// `lastHeartbeatTime` (upstream `nodeStatusReportFrequency`, 5 min).
    pub node_status_report_frequency: Duration,
    /// `nodeInfo.kubeletVersion` (default `v1.36.0-coxswain`).
    pub kubelet_version: String,
    /// Delay from a container's start to its readiness (default 0; the
    /// `sim.coxswain.dev/ready-after` annotation overrides it per pod).
    pub pod_ready_delay: Duration,
    /// How long the containers of Job pods run before exiting with code 0, and how long
    /// `fail`/`crash-loop` containers run before failing (default 1 s).
    pub job_pod_run_duration: Duration,
    /// First crash-loop back-off; it doubles per restart (upstream 10 s).
    pub crash_loop_backoff: Duration,
    /// Longest crash-loop back-off (upstream 300 s).
    pub crash_loop_max_backoff: Duration,
    /// Run the scheduler (default true). Turn it off next to a real kube-scheduler.
    pub scheduler: bool,
    /// Pods with this `spec.schedulerName` are scheduled (default `default-scheduler`).
    pub scheduler_name: String,
    /// First retry delay of a pod that could not be scheduled; it doubles per failure
    /// (default 1 s, upstream `podInitialBackoffSeconds`). Node and pod changes that may
    /// make room retry waiting pods at once.
    pub scheduler_initial_backoff: Duration,
    /// Longest retry delay of an unschedulable pod (default 60 s).
    pub scheduler_max_backoff: Duration,
    /// Share of the nodes to find feasible before scoring, 1 to 100 (default 0: the
    /// upstream adaptive value, 50% minus 1% per 125 nodes, at least 100 nodes).
    pub percentage_of_nodes_to_score: u32,
    /// Emit a `Scheduled` event for every bound pod, as kube-scheduler does (default
    /// true).
    pub scheduled_events: bool,
    /// Pod CIDRs: node `i` gets the `/24` starting at this address plus `i * 256`, so
    /// `10.244.<i>.0/24` for the first 256 nodes (default `10.244.0.0`).
    pub pod_cidr_base: Ipv4Addr,
    /// Leave the nodes' pod CIDRs to the controller manager's node IPAM controller
    /// (`--allocate-node-cidrs`) instead of giving each node the block at
    /// `pod_cidr_base` (default false). A node's pods then wait, Pending without an IP,
    /// until its `spec.podCIDR` is set, as a kubelet whose network plug-in needs the
    /// node's allocation.
    pub wait_for_pod_cidr: bool,
    /// Node addresses: node `i` gets this address plus `i` as its InternalIP (default
    /// `172.18.0.2`).
    pub node_ip_base: Ipv4Addr,
    /// Concurrent workers of the simulated kubelet (default 16).
    pub kubelet_workers: usize,
    /// Concurrent scheduling workers: decisions are made one at a time, bindings run in
    /// parallel (default 16).
    pub scheduler_workers: usize,
    /// Concurrent node heartbeat workers (default 8). Real kubelets renew their Leases
    /// independently, so the simulator runs at least one worker per
    /// [`NODES_PER_HEARTBEAT_WORKER`] nodes ([`SimConfig::heartbeat_workers`]): 5,000 nodes
    /// renew 500 Leases a second, more than 8 workers keep up with once the API server's
    /// latency grows under load, and late renewals make the node lifecycle controller
    /// mark nodes NotReady.
    pub node_workers: usize,
    /// Simulate the cloud's service load balancers (default true): `type: LoadBalancer`
    /// Services without a `loadBalancerClass` get an address from
    /// [`SimConfig::load_balancer_ip_range`] (see [`crate::servicelb`]). Turn it off
    /// where a real cloud provider or another implementation serves them.
    pub load_balancers: bool,
    /// The IPv4 CIDR load balancer addresses come from (default `172.18.255.0/24`).
    pub load_balancer_ip_range: String,
    /// Simulate storage (default true): the default StorageClass `standard`, the CSI
    /// driver `csi.sim.coxswain.dev` with its provisioner, attacher and resizer, and
    /// the kubelets' volume handling (see [`crate::storage`]). Turn it off where real
    /// storage serves the cluster.
    pub storage: bool,
    /// Concurrent workers of the simulated provisioner (default 16).
    pub provisioner_workers: usize,
    /// How long a pod waits for its volumes before the kubelet reports `FailedMount`
    /// (and again after each such period; upstream `podAttachAndMountTimeout`, 2m3s).
    pub volume_mount_timeout: Duration,
    /// Managed nodes whose heartbeats are stopped unless their
    /// [`HEARTBEAT_ANNOTATION`] says otherwise (default none): no Lease renewal, no
    /// status report, and their kubelet does nothing to their pods, as a dead node.
    pub stopped_heartbeats: std::collections::BTreeSet<String>,
}

impl Default for SimConfig {
    fn default() -> Self {
        let capacity = [
            ("cpu", "32"),
            ("memory", "256Gi"),
            ("pods", "110"),
            ("ephemeral-storage", "100Gi"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        SimConfig {
            nodes: 3,
            node_name_prefix: "sim-node-".into(),
            capacity,
            allocatable: None,
            labels: BTreeMap::new(),
            zones: vec!["zone-a".into(), "zone-b".into(), "zone-c".into()],
            instance_type: "coxswain-sim.32x256".into(),
            os: "linux".into(),
            arch: "amd64".into(),
            taints: Vec::new(),
            managed_label: MANAGED_LABEL.into(),
            node_lease_duration: Duration::from_secs(40),
            node_lease_renew_interval: Duration::from_secs(10),
            node_status_report_frequency: Duration::from_secs(300),
            kubelet_version: "v1.36.0-coxswain".into(),
            pod_ready_delay: Duration::ZERO,
            job_pod_run_duration: Duration::from_secs(1),
            crash_loop_backoff: Duration::from_secs(10),
            crash_loop_max_backoff: Duration::from_secs(300),
            scheduler: true,
            scheduler_name: "default-scheduler".into(),
            scheduler_initial_backoff: Duration::from_secs(1),
            scheduler_max_backoff: Duration::from_secs(60),
            percentage_of_nodes_to_score: 0,
            scheduled_events: true,
            pod_cidr_base: Ipv4Addr::new(10, 244, 0, 0),
            wait_for_pod_cidr: false,
            node_ip_base: Ipv4Addr::new(172, 18, 0, 2),
            kubelet_workers: 16,
            scheduler_workers: 16,
            node_workers: 8,
            load_balancers: true,
            load_balancer_ip_range: "172.18.255.0/24".into(),
            storage: true,
            provisioner_workers: 16,
            volume_mount_timeout: Duration::from_secs(123),
            stopped_heartbeats: Default::default(),
        }
    }
}

impl SimConfig {
    /// The node heartbeat workers to run: [`SimConfig::node_workers`], and at least one
    /// per [`NODES_PER_HEARTBEAT_WORKER`] nodes.
    pub fn heartbeat_workers(&self) -> usize {
        self.node_workers
            .max(self.nodes.div_ceil(NODES_PER_HEARTBEAT_WORKER))
            .max(1)
    }

    /// Whether `node`'s heartbeats are stopped: its [`HEARTBEAT_ANNOTATION`] is
    /// `"stopped"`, or it has none and is one of [`SimConfig::stopped_heartbeats`].
    pub fn heartbeats_stopped(&self, node: &k8s_openapi::api::core::v1::Node) -> bool {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        match node
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HEARTBEAT_ANNOTATION))
        {
            Some(v) => v == "stopped",
            None => self.stopped_heartbeats.contains(name),
        }
    }

    /// The name of configured node `i`.
    pub fn node_name(&self, i: usize) -> String {
        format!("{}{i}", self.node_name_prefix)
    }

    /// The index of a configured node named `name`, if it is one.
    pub fn configured_index(&self, name: &str) -> Option<usize> {
        let rest = name.strip_prefix(&self.node_name_prefix)?;
        let i: usize = rest.parse().ok()?;
        (i < self.nodes && self.node_name(i) == name).then_some(i)
    }

    /// The allocatable resources of created nodes.
    pub fn allocatable(&self) -> &BTreeMap<String, String> {
        self.allocatable.as_ref().unwrap_or(&self.capacity)
    }

    /// Check the configuration; the error names the first bad field.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(m));
        if self.nodes > 0
            && !apimachinery::names::is_dns1123_subdomain(&self.node_name(0)).is_empty()
        {
            return bad(format!(
                "node_name_prefix {:?} does not make valid node names",
                self.node_name_prefix
            ));
        }
        for (field, list) in [
            ("capacity", &self.capacity),
            ("allocatable", self.allocatable()),
        ] {
            for (k, v) in list {
                if !crate::filters::valid_quantity(v) {
                    return bad(format!("{field}[{k}] = {v:?} is not a quantity"));
                }
            }
        }
        if self.managed_label.is_empty() {
            return bad("managed_label is empty".into());
        }
        if self.node_lease_duration.as_secs() == 0
            || self.node_lease_renew_interval.is_zero()
            || self.node_lease_renew_interval >= self.node_lease_duration
        {
            return bad(format!(
                "node_lease_renew_interval ({:?}) must be shorter than a node_lease_duration of at least 1 s ({:?})",
                self.node_lease_renew_interval, self.node_lease_duration
            ));
        }
        if self.node_status_report_frequency.is_zero() {
            return bad("node_status_report_frequency is zero".into());
        }
        if self.crash_loop_backoff.is_zero()
            || self.crash_loop_max_backoff < self.crash_loop_backoff
        {
            return bad(
                "crash_loop_backoff must be positive and at most crash_loop_max_backoff".into(),
            );
        }
        if self.scheduler_initial_backoff.is_zero()
            || self.scheduler_max_backoff < self.scheduler_initial_backoff
        {
            return bad(
                "scheduler_initial_backoff must be positive and at most scheduler_max_backoff"
                    .into(),
            );
        }
        if self.percentage_of_nodes_to_score > 100 {
            return bad("percentage_of_nodes_to_score is over 100".into());
        }
        if self.volume_mount_timeout.is_zero() {
            return bad("volume_mount_timeout is zero".into());
        }
        if self.scheduler_name.is_empty() {
            return bad("scheduler_name is empty".into());
        }
        if let Err(e) = crate::servicelb::IpPool::parse(&self.load_balancer_ip_range) {
            return bad(e);
        }
        let last_cidr = u64::from(u32::from(self.pod_cidr_base)) + 256 * self.nodes as u64;
        let last_ip = u64::from(u32::from(self.node_ip_base)) + self.nodes as u64;
        if last_cidr > u64::from(u32::MAX) || last_ip > u64::from(u32::MAX) {
            return bad("too many nodes for pod_cidr_base / node_ip_base".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_workers_grow_with_the_nodes() {
        let mut c = SimConfig::default();
        assert_eq!(c.heartbeat_workers(), 8, "3 nodes: the configured 8");
        c.nodes = 5000;
        assert_eq!(c.heartbeat_workers(), 100, "one per 50 nodes");
        c.nodes = 401;
        assert_eq!(c.heartbeat_workers(), 9);
        c.node_workers = 0;
        c.nodes = 0;
        assert_eq!(c.heartbeat_workers(), 1, "never none");
    }

    #[test]
    fn defaults_are_valid_and_names_round_trip() {
        let c = SimConfig::default();
        assert!(c.validate().is_ok());
        assert_eq!(c.node_name(2), "sim-node-2");
        assert_eq!(c.configured_index("sim-node-2"), Some(2));
        assert_eq!(c.configured_index("sim-node-3"), None);
        assert_eq!(c.configured_index("sim-node-02"), None);
        assert_eq!(c.configured_index("other"), None);
    }

    #[test]
    fn bad_fields_are_named() {
        let mut c = SimConfig::default();
        c.capacity.insert("cpu".into(), "lots".into());
        let e = c.validate().map_err(|e| e.to_string());
        assert!(
            e.as_ref().is_err_and(|m| m.contains("capacity[cpu]")),
            "{e:?}"
        );
        let c = SimConfig {
            node_lease_renew_interval: Duration::from_secs(50),
            ..SimConfig::default()
        };
        assert!(c.validate().is_err());
        let c = SimConfig {
            node_name_prefix: "Bad_".into(),
            ..SimConfig::default()
        };
        assert!(c.validate().is_err());
        let c = SimConfig {
            load_balancer_ip_range: "172.18.255.0".into(),
            ..SimConfig::default()
        };
        let e = c.validate().map_err(|e| e.to_string());
        assert!(
            e.as_ref()
                .is_err_and(|m| m.contains("invalid load balancer IP range")),
            "{e:?}"
        );
    }
}
