//! Simulated nodes, a small scheduler and kubelet behaviour for pods, so that workloads
//! progress with no real nodes (what [kwok](https://kwok.sigs.k8s.io) does).
//!
//! Three parts run against any Kubernetes API (the embedded one or a real cluster),
//! reading through the runtime's shared [`Cache`](coxswain_runtime::cache::Cache):
//!
//! * **Nodes** ([`nodes`]): `SimConfig::nodes` nodes are created (or adopted) with the
//!   usual labels, capacity, addresses and `nodeInfo`; every node carrying the managed
//!   label (`sim.coxswain.dev/managed=true` by default), whoever created it, reports
//!   `Ready=True` and no pressure, renews its Lease in `kube-node-lease` every 10 s
//!   (duration 40 s) and refreshes its status every 5 minutes or when it changes, as
//!   kubelet's defaults. Nodes without the label are never touched, so the simulator
//!   coexists with real nodes. A node annotated `sim.coxswain.dev/heartbeat: "stopped"`
//!   (or named in [`SimConfig::stopped_heartbeats`], `coxswain sim --stop-heartbeats`,
//!   unless annotated otherwise, e.g. `"running"`) is a dead node: its Lease and
//!   status are no longer renewed (the node lifecycle controller then marks it
//!   `Unknown` and taints it) and its kubelet leaves its pods alone (deleted ones stay
//!   `Terminating`); removing the annotation brings it back. A deleted node is not
//!   created again: the configured nodes are created once, at start.
//! * **Scheduler** ([`scheduler`]): binds pending pods of the configured
//!   `schedulerName` through `pods/binding`, with upstream's filters (unschedulable
//!   nodes, taints and tolerations, nodeSelector and required node affinity, host
//!   ports, resource fit and pod count) and the weighted sum of upstream's scores
//!   (least allocated, balanced allocation, `PreferNoSchedule` taints, preferred node
//!   affinity, and topology spreading, so a Deployment's replicas spread over nodes
//!   and zones as kube-scheduler spreads them — see [`spread`]); pods that fit
//!   nowhere get `PodScheduled=False`/`Unschedulable` with upstream's message ("0/3
//!   nodes are available: 3 Insufficient cpu.") and a `FailedScheduling` event. Turn
//!   it off ([`SimConfig::scheduler`]) next to a real kube-scheduler.
//! * **Kubelet** ([`kubelet`], [`podstatus`]): pods bound to managed nodes go
//!   `Pending` → `Running` with the kubelet's conditions, container statuses, a pod IP
//!   from the node's pod CIDR and the node's host IP; they become ready after
//!   [`SimConfig::pod_ready_delay`]; Job pods exit 0 after
//!   [`SimConfig::job_pod_run_duration`] and end `Succeeded`. A deleted pod's
//!   containers stop as well-behaved processes do: after their preStop `sleep` hooks
//!   they exit 0 on SIGTERM at once (not at the end of the grace period), the pod
//!   reports `Succeeded` (or `Failed` if a container had failed) and is removed.
//!
//! * **Service load balancers** ([`servicelb`]): a simulated cloud gives `type:
//!   LoadBalancer` Services an address from [`SimConfig::load_balancer_ip_range`], with
//!   the cleanup finalizer and events of a cloud provider's service controller.
//! * **Storage** ([`storage`]): the default StorageClass `standard`
//!   (`WaitForFirstConsumer`, reclaim `Delete`, expandable), the CSIDriver
//!   `csi.sim.coxswain.dev` and a CSINode per managed node, created when absent; a
//!   simulated CSI external-provisioner that creates a PersistentVolume (`pvc-<uid>`,
//!   node affinity to the chosen node) for each claim the PV binder hands to the
//!   driver, and deletes released ones; an external-attacher that marks the driver's
//!   VolumeAttachments attached; an external-resizer that grows volumes, whose file
//!   systems the kubelet then grows. The scheduler places pods with
//!   `WaitForFirstConsumer` claims and honours bound volumes' node affinity
//!   ([`volumebinding`]); the kubelet starts a pod's containers only once its claims
//!   are bound and its volumes attached, and reports `volumesInUse`. Turn the driver
//!   off ([`SimConfig::storage`]) where real storage serves the cluster.
//!
//! # Per-pod behaviour
//!
//! Annotations on a pod change what its containers do (all containers alike; init
//! containers always complete at once). Bad values are reported in an
//! `InvalidSimulatorAnnotation` warning event and ignored.
//!
//! | annotation | value | effect |
//! |---|---|---|
//! | `sim.coxswain.dev/ready-after` | duration (`5s`, `1m30s`) | containers become ready this long after they start |
//! | `sim.coxswain.dev/never-ready` | `"true"` | containers run but never become ready |
//! | `sim.coxswain.dev/start-after` | duration | the pod stays `Pending` (`ContainerCreating`) this long |
//! | `sim.coxswain.dev/complete-after` | duration | containers exit 0 this long after they start |
//! | `sim.coxswain.dev/fail` | exit code, not 0 | containers exit with that code after `fail-after` |
//! | `sim.coxswain.dev/fail-indexes` | completion indexes (`1,3-5`) | `fail`/`crash-loop` apply only to Job pods of these indexes |
//! | `sim.coxswain.dev/fail-after` | duration | run time before `fail`/`crash-loop` exits (default: the Job run duration) |
//! | `sim.coxswain.dev/crash-loop` | `"true"` | containers exit 1 after `fail-after`, every time they run |
//! | `sim.coxswain.dev/log` | text | the lines every container writes once it starts (`kubectl logs`) |
//! | `sim.coxswain.dev/log.<container>` | text | the lines container `<container>` writes (preferred over `log`) |
//! | `sim.coxswain.dev/log-interval` | duration | containers write one line per interval while they run: the annotated lines in turn, or `line 1`, `line 2`, ... |
//! | `sim.coxswain.dev/cpu-usage` | quantity or load curve | the pod's cpu usage in `kubectl top` and `metrics.k8s.io`, shared evenly by containers without their own (see *Resource usage*) |
//! | `sim.coxswain.dev/cpu-usage.<container>` | quantity or load curve | container `<container>`'s cpu usage (preferred over `cpu-usage`) |
//! | `sim.coxswain.dev/memory-usage` | quantity or load curve | the pod's memory usage, as `cpu-usage` |
//! | `sim.coxswain.dev/memory-usage.<container>` | quantity or load curve | container `<container>`'s memory usage |
//! | `sim.coxswain.dev/ignore-sigterm` | `"true"` | containers ignore SIGTERM: a deleted pod stays `Terminating` for its whole grace period, then its containers are killed (exit code 137, reason `Error`, phase `Failed`) |
//!
//! What follows an exit is the kubelet's rule, by `restartPolicy`: under `Never` the
//! pod ends `Succeeded` (all exited 0) or `Failed`; under `OnFailure` failed containers
//! restart; under `Always` (the default for bare pods and the only choice in
//! Deployments) every exited container restarts, with `CrashLoopBackOff` waits that
//! double from [`SimConfig::crash_loop_backoff`] (10 s) up to 5 minutes, a growing
//! `restartCount` and the exit in `lastState.terminated`. So `fail` gives phase
//! `Failed` to pods with `restartPolicy: Never` (Job pods, typically), and a crash loop
//! to the others. Durations are counted from timestamps with second precision: never
//! early, at most about a second late.
//!
//! # Logs
//!
//! No process runs, so the log annotations describe what containers write; the embedded
//! API server serves them on `pods/log` (what `kubectl logs` reads) from the pod's
//! annotations and container statuses, as the kubelet would serve a real log. Line `i`
//! of a run is written at the container's `startedAt` plus `i` times the interval (all
//! at `startedAt` without one), so `--tail`, `--since`, `--since-time` and
//! `--timestamps` give the same answer on every call; a terminated container's log ends
//! at its `finishedAt`, `--previous` reads the run in `lastState.terminated`, and
//! `kubectl logs -f` streams each new line when its time comes and ends when the
//! container stops or the pod is deleted. A container without these annotations writes
//! nothing. `pods/exec`, `pods/attach` and `pods/portforward` fail with a `Status` that
//! says the node is simulated: there is no process to run a command in.
//!
//! # Resource usage
//!
//! No process runs either, so the usage annotations say what containers use; the
//! embedded API server serves it as metrics-server would (`metrics.k8s.io/v1beta1`
//! NodeMetrics and PodMetrics, what `kubectl top` and the HPA read; on with
//! `coxswain up`). A value is a quantity (`400m` cpu, `128Mi` memory) or a load curve
//! over the time since the container started: `100m,2m=800m,10m=200m` is 100m from the
//! start, 800m from two minutes, 200m from ten (Go durations, increasing; only the
//! first step may omit its duration; before a first step that names one, the default
//! applies). `kubectl annotate pod web sim.coxswain.dev/cpu-usage=900m --overwrite`
//! changes the usage at once. Without annotations a container uses 1m cpu and 8Mi
//! memory; a node uses the sum of its Running pods plus 100m and 512Mi for its system
//! daemons. Only Running pods on Ready nodes report usage. A value that does not parse
//! is ignored (the default applies) and the metrics answer carries a `Warning` saying
//! why.
//!
//! # Running it
//!
//! Inside a [`Manager`] (as `coxswain up` does), sharing its cache, client and events:
//!
//! ```no_run
//! # async fn demo(mgr: coxswain_runtime::manager::Manager) -> Result<(), coxswain_sim::Error> {
//! let sim = coxswain_sim::Simulator::new(coxswain_sim::SimConfig::default())?;
//! sim.add_to(&mgr)?;
//! // ... add the controllers, then mgr.start(cancel).await
//! # Ok(()) }
//! ```
//!
//! Standalone (`coxswain sim --kubeconfig ...`): [`run`] builds a manager around the
//! client (no metrics or probe servers) and runs until the token is cancelled.
//!
//! The runnables need leader election (the manager's default for controllers): with
//! several replicas only the leader simulates.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod behaviour;
mod conditions;
pub mod config;
pub mod filters;
pub mod ipam;
pub mod kubelet;
pub mod nodes;
pub mod podstatus;
pub mod resources;
pub mod scheduler;
pub mod servicelb;
pub mod spread;
pub mod storage;
mod table;
pub mod volumebinding;

use std::sync::Arc;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Change;
use coxswain_runtime::controller::{Context, ControllerOptions};
use coxswain_runtime::handler::EnqueueMapped;
use coxswain_runtime::manager::{runnable, Manager, ManagerError, ManagerOptions};
use coxswain_runtime::predicate::BoxPredicate;
use coxswain_runtime::workqueue::ItemExponentialFailureRateLimiter;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, Pod};
use tokio_util::sync::CancellationToken;

pub use config::{SimConfig, MANAGED_LABEL};
pub use kubelet::Kubelet;
pub use nodes::NodeManager;
pub use scheduler::Scheduler;

/// Why the simulator could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad configuration value.
    #[error("invalid simulator configuration: {0}")]
    Config(String),
    /// The manager failed (standalone [`run`]) or refused a runnable.
    #[error(transparent)]
    Manager(#[from] ManagerError),
}

/// The simulator: validated configuration, and the parts it adds to a manager.
#[derive(Clone, Debug)]
pub struct Simulator {
    config: Arc<SimConfig>,
}

/// The parts of a simulator added to a manager (for diagnostics and tests).
pub struct Parts {
    /// The node heartbeats.
    pub nodes: Arc<NodeManager>,
    /// The scheduler, when enabled.
    pub scheduler: Option<Arc<Scheduler>>,
    /// The kubelets.
    pub kubelet: Arc<Kubelet>,
    /// The simulated cloud's service load balancers, when enabled.
    pub load_balancers: Option<Arc<servicelb::LoadBalancers>>,
    /// The simulated CSI provisioner, when storage is simulated.
    pub provisioner: Option<Arc<storage::provisioner::Provisioner>>,
}

fn pod_of(c: &Change<Pod>) -> &Pod {
    match c {
        Change::Added(p) | Change::Deleted(p) => p,
        Change::Updated { new, .. } => new,
    }
}

impl Simulator {
    /// A simulator with `config` (validated).
    pub fn new(config: SimConfig) -> Result<Simulator, Error> {
        config.validate()?;
        Ok(Simulator {
            config: Arc::new(config),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Add the simulator's runnables to `mgr`: the node registrar and heartbeat
    /// controller (`sim-nodes`), the scheduler (`sim-scheduler`, when enabled) and the
    /// kubelet (`sim-kubelet`). They use the manager's cache, client and event
    /// recorders (`default-scheduler`, `kubelet`), and start with the manager.
    pub fn add_to(&self, mgr: &Manager) -> Result<Parts, Error> {
        let cfg = self.config.clone();
        let cache = mgr.cache().clone();
        let client = mgr.kube_client().clone();

        let nodes = NodeManager::new(cfg.clone(), cache.clone(), client.clone());
        let managed = {
            let cfg = cfg.clone();
            move |c: &Change<Node>| match c {
                Change::Added(n) | Change::Deleted(n) => nodes::is_managed(&cfg, n),
                Change::Updated { old, new } => {
                    nodes::is_managed(&cfg, old) || nodes::is_managed(&cfg, new)
                }
            }
        };
        let n = nodes.clone();
        let node_controller = ControllerBuilder::new(&cache)
            .named("sim-nodes")
            .with_options(ControllerOptions {
                max_concurrent_reconciles: cfg.heartbeat_workers(),
                ..Default::default()
            })
            .for_::<Node>()
            .with_event_filter(managed)
            .build(move |_ctx: Context, key: ObjectKey| {
                let n = n.clone();
                async move { n.reconcile(key).await }
            });
        let n = nodes.clone();
        mgr.add(runnable(
            "sim-node-registrar",
            true,
            move |cancel| async move {
                n.register(cancel).await;
                Ok(())
            },
        ))?;
        mgr.add(node_controller)?;

        let scheduler = if cfg.scheduler {
            let s = Scheduler::new(
                cfg.clone(),
                cache.clone(),
                client.clone(),
                mgr.event_recorder(&cfg.scheduler_name),
            );
            let limiter = ItemExponentialFailureRateLimiter::<ObjectKey>::new(
                cfg.scheduler_initial_backoff,
                cfg.scheduler_max_backoff,
            );
            let c = cfg.clone();
            let r = s.clone();
            let controller = ControllerBuilder::new(&cache)
                .named("sim-scheduler")
                .with_options(ControllerOptions {
                    max_concurrent_reconciles: cfg.scheduler_workers.max(1),
                    rate_limiter: Some(Arc::new(limiter)),
                    ..Default::default()
                })
                .for_::<Pod>()
                .with_event_filter(move |ch: &Change<Pod>| {
                    !matches!(ch, Change::Deleted(_)) && Scheduler::interested(&c, pod_of(ch))
                })
                .build(move |_ctx: Context, key: ObjectKey| {
                    let r = r.clone();
                    async move { r.reconcile(key).await }
                });
            let queue = controller.queue().clone();
            let w = s.clone();
            mgr.add(runnable(
                "sim-scheduler-requeue",
                true,
                move |cancel| async move {
                    w.requeue_on_changes(queue, cancel).await;
                    Ok(())
                },
            ))?;
            mgr.add(controller)?;
            Some(s)
        } else {
            None
        };

        let kubelet = Kubelet::new(
            cfg.clone(),
            cache.clone(),
            client,
            mgr.event_recorder("kubelet"),
        );
        let k = kubelet.clone();
        let map = kubelet.clone();
        let c = cfg.clone();
        let node_matters: BoxPredicate<Node> =
            Arc::new(move |ch: &Change<Node>| Kubelet::node_change_matters(&c, ch));
        let by_claim = kubelet.clone();
        let kubelet_controller = ControllerBuilder::new(&cache)
            .named("sim-kubelet")
            .with_options(ControllerOptions {
                max_concurrent_reconciles: cfg.kubelet_workers.max(1),
                ..Default::default()
            })
            .for_::<Pod>()
            .with_event_filter(|ch: &Change<Pod>| {
                pod_of(ch)
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_some_and(|n| !n.is_empty())
            })
            .watches_with::<Node>(
                EnqueueMapped(move |n: &Node| map.pods_on(n)),
                vec![node_matters],
            )
            // a claim bound or resized may let its pods' volumes be mounted or grown
            .watches::<k8s_openapi::api::core::v1::PersistentVolumeClaim>(move |c| {
                by_claim.pods_of_claim(c)
            })
            .build(move |_ctx: Context, key: ObjectKey| {
                let k = k.clone();
                async move { k.reconcile(key).await }
            });
        mgr.add(kubelet_controller)?;
        // the nodes' status.volumesInUse, one node at a time
        let k = kubelet.clone();
        let by_claim = kubelet.clone();
        let c = cfg.clone();
        let in_use = ControllerBuilder::new(&cache)
            .named("sim-volumes-in-use")
            .for_::<Node>()
            .with_event_filter(move |ch: &Change<Node>| match ch {
                Change::Added(n) | Change::Updated { new: n, .. } => nodes::is_managed(&c, n),
                Change::Deleted(_) => false,
            })
            .watches::<Pod>(Kubelet::node_key_of)
            .watches::<k8s_openapi::api::core::v1::PersistentVolumeClaim>(move |c| {
                by_claim.nodes_of_claim(c)
            })
            .build(move |_ctx: Context, key: ObjectKey| {
                let k = k.clone();
                async move { k.reconcile_volumes_in_use(key).await }
            });
        mgr.add(in_use)?;
        let load_balancers = if cfg.load_balancers {
            let pool =
                servicelb::IpPool::parse(&cfg.load_balancer_ip_range).map_err(Error::Config)?;
            let lb = servicelb::LoadBalancers::new(
                cache.clone(),
                mgr.kube_client().clone(),
                mgr.event_recorder("service-controller"),
                pool,
            );
            let (first, max) = servicelb::RETRY_DELAYS;
            let limiter = ItemExponentialFailureRateLimiter::<ObjectKey>::new(first, max);
            let r = lb.clone();
            // one worker, as upstream's --concurrent-service-syncs default: allocations
            // are decided one at a time
            let controller = ControllerBuilder::new(&cache)
                .named("sim-service-lb")
                .with_options(ControllerOptions {
                    max_concurrent_reconciles: 1,
                    rate_limiter: Some(Arc::new(limiter)),
                    ..Default::default()
                })
                .for_::<k8s_openapi::api::core::v1::Service>()
                .build(move |_ctx: Context, key: ObjectKey| {
                    let r = r.clone();
                    async move { r.reconcile(key).await }
                });
            mgr.add(controller)?;
            Some(lb)
        } else {
            None
        };
        let provisioner = if cfg.storage {
            Some(add_storage(mgr, &cfg)?)
        } else {
            None
        };
        Ok(Parts {
            nodes,
            scheduler,
            kubelet,
            load_balancers,
            provisioner,
        })
    }
}

/// Add the simulated storage ([`storage`]): the default class and CSIDriver
/// (`sim-storage-defaults`), the CSINodes (`sim-csinodes`), the provisioner
/// (`sim-csi-provisioner`) and its deleter (`sim-csi-deleter`), the attacher
/// (`sim-csi-attacher`) and the resizer (`sim-csi-resizer`).
fn add_storage(
    mgr: &Manager,
    cfg: &Arc<SimConfig>,
) -> Result<Arc<storage::provisioner::Provisioner>, Error> {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::{StorageClass, VolumeAttachment};
    use storage::provisioner::{self as prov, Provisioner};

    let cache = mgr.cache().clone();
    let client = mgr.kube_client().clone();
    let c = client.clone();
    mgr.add(runnable(
        "sim-storage-defaults",
        true,
        move |_cancel| async move {
            storage::install_defaults(c).await;
            Ok(())
        },
    ))?;

    let csinodes = storage::CsiNodes::new(cfg.clone(), cache.clone(), client.clone());
    let c = cfg.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("sim-csinodes")
        .for_::<Node>()
        .with_event_filter(move |ch: &Change<Node>| match ch {
            Change::Added(n) | Change::Updated { new: n, .. } => nodes::is_managed(&c, n),
            Change::Deleted(_) => false,
        })
        .watches::<k8s_openapi::api::storage::v1::CSINode>(|n| vec![ObjectKey::of(n)])
        .build(move |_ctx: Context, key: ObjectKey| {
            let r = csinodes.clone();
            async move { r.reconcile(key).await }
        });
    mgr.add(controller)?;

    let p = Provisioner::new(
        cfg.clone(),
        cache.clone(),
        client,
        mgr.event_recorder(&prov::component()),
    );
    let r = p.clone();
    let by_class = p.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("sim-csi-provisioner")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: cfg.provisioner_workers.max(1),
            ..Default::default()
        })
        .for_::<PersistentVolumeClaim>()
        .with_event_filter(|ch: &Change<PersistentVolumeClaim>| match ch {
            Change::Added(c) | Change::Updated { new: c, .. } => prov::claim_wants_provisioning(c),
            Change::Deleted(_) => false,
        })
        .watches::<StorageClass>(move |sc| by_class.claims_of_class(sc))
        .build(move |_ctx: Context, key: ObjectKey| {
            let r = r.clone();
            async move { r.reconcile_claim(key).await }
        });
    mgr.add(controller)?;

    let r = p.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("sim-csi-deleter")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: cfg.provisioner_workers.max(1),
            ..Default::default()
        })
        .for_::<PersistentVolume>()
        .with_event_filter(prov::volume_change_matters)
        .watches::<VolumeAttachment>(Provisioner::volume_of_attachment)
        .build(move |_ctx: Context, key: ObjectKey| {
            let r = r.clone();
            async move { r.reconcile_volume(key).await }
        });
    mgr.add(controller)?;

    let attacher = storage::attacher::Attacher::new(cache.clone(), mgr.kube_client().clone());
    let r = attacher.clone();
    let new_volumes: BoxPredicate<PersistentVolume> =
        Arc::new(|ch: &Change<PersistentVolume>| matches!(ch, Change::Added(_)));
    let controller = ControllerBuilder::new(&cache)
        .named("sim-csi-attacher")
        .with_options(ControllerOptions {
            max_concurrent_reconciles: cfg.provisioner_workers.max(1),
            ..Default::default()
        })
        .for_::<VolumeAttachment>()
        .with_event_filter(storage::attacher::attachment_matters)
        .watches_with::<PersistentVolume>(
            EnqueueMapped(move |pv: &PersistentVolume| attacher.attachments_of(pv)),
            vec![new_volumes],
        )
        .build(move |_ctx: Context, key: ObjectKey| {
            let r = r.clone();
            async move { r.reconcile(key).await }
        });
    mgr.add(controller)?;

    let resizer = storage::resizer::Resizer::new(
        cache.clone(),
        mgr.kube_client().clone(),
        mgr.event_recorder("external-resizer"),
    );
    let controller = ControllerBuilder::new(&cache)
        .named("sim-csi-resizer")
        .for_::<PersistentVolumeClaim>()
        .with_event_filter(|ch: &Change<PersistentVolumeClaim>| match ch {
            Change::Added(c) | Change::Updated { new: c, .. } => storage::resizer::wants_resize(c),
            Change::Deleted(_) => false,
        })
        .build(move |_ctx: Context, key: ObjectKey| {
            let r = resizer.clone();
            async move { r.reconcile(key).await }
        });
    mgr.add(controller)?;
    Ok(p)
}

/// Run the simulator with `client` until `cancel` fires: a [`Manager`] around the
/// client (no metrics or health servers, no leader election) with the simulator's
/// runnables. For `coxswain sim --kubeconfig ...`.
pub async fn run(
    client: kube::Client,
    config: SimConfig,
    cancel: CancellationToken,
) -> Result<(), Error> {
    let sim = Simulator::new(config)?;
    let mgr = Manager::with_client(
        client,
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    );
    sim.add_to(&mgr)?;
    tracing::info!(nodes = sim.config().nodes, "node simulator starting");
    mgr.start(cancel).await?;
    tracing::info!("node simulator stopped: shutdown requested");
    Ok(())
}
