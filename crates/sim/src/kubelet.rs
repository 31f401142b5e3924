//! Simulated kubelets: the pod lifecycle on managed nodes.
//!
//! One controller serves every managed node. For each pod bound to one it gives the
//! pod an address from the node's pod CIDR, then moves its status along with
//! [`crate::podstatus::step`] (start, readiness, exits, restarts, completion) and
//! reconciles again when the next change is due. Graceful deletion is honoured as a
//! kubelet does: a pod that never ran (or already finished) is removed at once; the
//! containers of a running one are stopped ([`crate::podstatus::stopping`]): after
//! their preStop sleep hooks they exit 0 on SIGTERM at once, or, with the
//! `sim.coxswain.dev/ignore-sigterm` annotation, are killed (137) when the grace
//! period ends; the pod's final status (containers terminated, phase `Succeeded` or
//! `Failed`) is reported, then it is removed: a delete with `gracePeriodSeconds: 0`
//! and the pod's uid as precondition, which the API server completes (finalizers
//! permitting).
//!
//! Volumes (the volume manager's part): a pod whose PersistentVolumeClaims (its
//! `persistentVolumeClaim` volumes and its generic ephemeral volumes' `<pod>-<volume>`
//! claims) are not all bound to an existing volume stays `Pending` with its
//! containers `ContainerCreating` and no sandbox (no pod IP); on a node whose volumes
//! the attach/detach controller manages (`volumes.kubernetes.io/controller-managed-attach-detach`),
//! a CSI volume whose driver requires attachment must also be listed in the node's
//! `status.volumesAttached` (`kubernetes.io/csi/<driver>^<volumeHandle>`). Claim and
//! node changes bring the pod back. Each node reports the CSI volumes of its pods in
//! `status.volumesInUse` (so they are not detached under them), and a mounted
//! volume whose claim waits for a file system expansion is expanded
//! ([`crate::storage::resizer::node_expansion`]): the claim's `status.capacity` grows
//! and `FileSystemResizeSuccessful` is reported.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod, PodStatus};
use k8s_openapi::api::storage::v1::CSIDriver;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};

use crate::behaviour::{behaviour_of, Defaults};
use crate::config::SimConfig;
use crate::ipam::{Held, Ipam};
use crate::nodes::{internal_ip, is_managed};
use crate::podstatus::{step, stopping, Env, Stopping};

/// Name of the pod index by node.
pub const NODE_INDEX: &str = "sim.coxswain.dev/node";
/// Name of the index of pods bound to nodes by their claims (`<namespace>/<claim>`).
pub const CLAIM_INDEX: &str = "sim.coxswain.dev/pod-claims";

/// The name a node's `volumesAttached`/`volumesInUse` give a CSI volume.
pub fn unique_volume_name(driver: &str, handle: &str) -> String {
    format!("kubernetes.io/csi/{driver}^{handle}")
}

/// What the kubelet needs of a managed node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeNet {
    /// Its InternalIP.
    pub host_ip: Option<String>,
    /// Its pod CIDR.
    pub pod_cidr: Option<String>,
    /// Whether its heartbeats are stopped ([`SimConfig::heartbeats_stopped`]): its
    /// kubelet is dead and leaves its pods alone.
    pub stopped: bool,
    /// Its `status.volumesAttached` (pods wait for their volumes' attachment).
    pub attached: Vec<String>,
}

impl NodeNet {
    fn of(cfg: &SimConfig, node: &Node) -> NodeNet {
        NodeNet {
            host_ip: internal_ip(node).map(|ip| ip.to_string()),
            pod_cidr: node.spec.as_ref().and_then(|s| s.pod_cidr.clone()),
            stopped: cfg.heartbeats_stopped(node),
            attached: node
                .status
                .as_ref()
                .and_then(|s| s.volumes_attached.as_ref())
                .map(|v| v.iter().map(|a| a.name.clone()).collect())
                .unwrap_or_default(),
        }
    }
}

/// The simulated kubelets.
pub struct Kubelet {
    cfg: Arc<SimConfig>,
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
    ipam: Ipam,
    nodes: Mutex<HashMap<String, NodeNet>>,
    /// pods already warned about bad annotations (and the uid warned about)
    warned: Mutex<HashMap<ObjectKey, String>>,
    /// when pods waiting for their volumes were last warned about it
    mount_warned: Mutex<HashMap<ObjectKey, Timestamp>>,
}

fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()?
        .node_name
        .as_deref()
        .filter(|n| !n.is_empty())
}

impl Kubelet {
    /// Kubelets for the managed nodes of `cache`; registers the node index on pods and
    /// starts following the managed nodes' addresses.
    pub fn new(
        cfg: Arc<SimConfig>,
        cache: Arc<Cache>,
        client: kube::Client,
        recorder: EventRecorder,
    ) -> Arc<Self> {
        cache.index_field::<Pod>(NODE_INDEX, |p: &Pod| {
            node_of(p).map(str::to_string).into_iter().collect()
        });
        cache.index_field::<Pod>(CLAIM_INDEX, |p: &Pod| {
            if node_of(p).is_none() {
                return Vec::new();
            }
            let ns = p.metadata.namespace.as_deref().unwrap_or("");
            crate::volumebinding::pod_claims(p)
                .into_iter()
                .map(|c| format!("{ns}/{c}"))
                .collect()
        });
        cache.informer::<PersistentVolumeClaim>();
        cache.informer::<PersistentVolume>();
        cache.informer::<CSIDriver>();
        let k = Arc::new(Kubelet {
            cfg: cfg.clone(),
            cache: cache.clone(),
            client,
            recorder,
            ipam: Ipam::default(),
            nodes: Mutex::new(HashMap::new()),
            warned: Mutex::new(HashMap::new()),
            mount_warned: Mutex::new(HashMap::new()),
        });
        let me = Arc::downgrade(&k);
        cache
            .informer::<Node>()
            .add_handler(move |c: &Change<Node>| {
                let Some(k) = me.upgrade() else { return };
                let mut nodes = k.nodes.lock().unwrap_or_else(|e| e.into_inner());
                match c {
                    Change::Added(n) | Change::Updated { new: n, .. } if is_managed(&k.cfg, n) => {
                        nodes.insert(
                            n.metadata.name.clone().unwrap_or_default(),
                            NodeNet::of(&k.cfg, n),
                        );
                    }
                    Change::Added(n) | Change::Updated { new: n, .. } | Change::Deleted(n) => {
                        let name = n.metadata.name.as_deref().unwrap_or("");
                        if nodes.remove(name).is_some() {
                            k.ipam.forget_node(name);
                        }
                    }
                }
            });
        k
    }

    /// Whether a node change may let the kubelet act on the node's pods (the node
    /// became managed, got its address or CIDR, or its heartbeats stopped or
    /// restarted).
    pub fn node_change_matters(cfg: &SimConfig, c: &Change<Node>) -> bool {
        match c {
            Change::Added(n) => is_managed(cfg, n),
            Change::Updated { old, new } => {
                is_managed(cfg, new)
                    && (!is_managed(cfg, old) || NodeNet::of(cfg, old) != NodeNet::of(cfg, new))
            }
            Change::Deleted(_) => false,
        }
    }

    /// The pods bound to `node` (for the node watch of the controller).
    pub fn pods_on(&self, node: &Node) -> Vec<ObjectKey> {
        let name = node.metadata.name.as_deref().unwrap_or("");
        self.cache
            .informer::<Pod>()
            .store()
            .by_index(NODE_INDEX, name)
            .unwrap_or_default()
            .iter()
            .map(|p| ObjectKey::of(p.as_ref()))
            .collect()
    }

    fn net_of(&self, node: &str) -> Option<NodeNet> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(node)
            .cloned()
    }

    fn seed(&self, node: &str) -> Vec<Held> {
        self.pods_of_node(node)
            .into_iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded") | Some("Failed"))
            })
            .filter_map(|p| {
                Some(Held {
                    key: ObjectKey::of(p.as_ref()),
                    uid: p.metadata.uid.clone()?,
                    ip: p.status.as_ref()?.pod_ip.clone()?,
                })
            })
            .collect()
    }

    fn pods_of_node(&self, node: &str) -> Vec<Arc<Pod>> {
        self.cache
            .informer::<Pod>()
            .store()
            .by_index(NODE_INDEX, node)
            .unwrap_or_default()
    }

    fn forget_pod(&self, key: &ObjectKey) {
        self.ipam.release(key);
        self.mount_warned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
        self.warned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key);
    }

    /// Remove a pod for good: delete with grace period 0 and the uid as precondition.
    async fn finish_deletion(&self, pod: &Pod, key: &ObjectKey) -> ReconcileResult {
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), key.namespace().unwrap_or("default"));
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..Default::default()
        };
        match api.delete(key.name(), &dp).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        self.forget_pod(key);
        Ok(Action::Done)
    }

    /// Write `status` as the pod's; `Some` action when the reconcile ends there (a
    /// conflict: look again with the newer pod; gone: forget it).
    async fn write_status(
        &self,
        pod: &Pod,
        key: &ObjectKey,
        status: PodStatus,
    ) -> Result<Option<Action>, kube::Error> {
        let mut updated = pod.clone();
        updated.metadata.managed_fields = None;
        updated.status = Some(status);
        let api: Api<Pod> =
            Api::namespaced(self.client.clone(), key.namespace().unwrap_or("default"));
        match api
            .replace_status(key.name(), &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(None),
            // a newer version is coming through the informer: look again then
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Some(Action::Requeue)),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                self.forget_pod(key);
                Ok(Some(Action::Done))
            }
            Err(e) => Err(e),
        }
    }

    /// Move one pod along.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        let Some(pod) = self.cache.get::<Pod>(&key).await else {
            self.forget_pod(&key);
            return Ok(Action::Done);
        };
        let Some(node) = node_of(&pod).map(str::to_string) else {
            return Ok(Action::Done);
        };
        let Some(net) = self.net_of(&node) else {
            // not a simulated node (or not yet seen): a real kubelet's business
            return Ok(Action::Done);
        };
        if net.stopped {
            // a dead kubelet: the pod keeps its last reported status, and a deleted
            // one stays Terminating until the node is back (or the pod is force
            // deleted), as on a real cluster
            return Ok(Action::Done);
        }
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        let phase = status.phase.as_deref().unwrap_or("Pending");
        let terminal = matches!(phase, "Succeeded" | "Failed");
        let now = Timestamp::now();

        let defaults = Defaults {
            ready_after: self.cfg.pod_ready_delay,
            run_duration: self.cfg.job_pod_run_duration,
        };
        if pod.metadata.deletion_timestamp.is_some() {
            let never_ran = phase == "Pending";
            if never_ran || terminal {
                return self.finish_deletion(&pod, &key).await;
            }
            let (behaviour, _) = behaviour_of(&pod, defaults);
            return match stopping(&pod, &behaviour, now) {
                Stopping::Wait(d) => Ok(Action::RequeueAfter(d)),
                Stopping::Stopped(status) => match self.write_status(&pod, &key, *status).await? {
                    Some(action) => Ok(action),
                    None => self.finish_deletion(&pod, &key).await,
                },
            };
        }
        if terminal {
            self.forget_pod(&key);
            return Ok(Action::Done);
        }
        let (Some(host_ip), Some(cidr)) = (net.host_ip.clone(), net.pod_cidr.clone()) else {
            // the node has no address or CIDR yet; its update will bring us back
            return Ok(Action::Done);
        };
        let started = status.start_time.is_some() && phase != "Pending";
        // volumes are attached and mounted before the sandbox is created; a claim or
        // node change brings the pod back
        let volumes_ready = started || self.volumes_ready(&pod, &node);

        let (behaviour, problems) = behaviour_of(&pod, defaults);
        if !problems.is_empty()
            && self
                .warned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key.clone(), uid.clone())
                .is_none_or(|warned| warned != uid)
        {
            for p in &problems {
                self.recorder.event(
                    &object_reference(pod.as_ref()),
                    None,
                    EventType::Warning,
                    "InvalidSimulatorAnnotation",
                    "Simulate",
                    p,
                );
            }
        }

        let pod_ip = match status.pod_ip.as_deref() {
            Some(ip) => {
                self.ipam.note(&key, &uid, &node, ip);
                Some(ip.to_string())
            }
            None if !volumes_ready => None,
            None => match self
                .ipam
                .assign(&key, &uid, &node, &cidr, || self.seed(&node))
            {
                Some(ip) => Some(ip.to_string()),
                None => {
                    self.recorder.event(
                        &object_reference(pod.as_ref()),
                        None,
                        EventType::Warning,
                        "FailedCreatePodSandBox",
                        "CreatePodSandbox",
                        &format!("Failed to create pod sandbox: no IP addresses available in range set: {cidr}"),
                    );
                    return Ok(Action::RequeueAfter(Duration::from_secs(10)));
                }
            },
        };
        let env = Env {
            now,
            host_ip,
            pod_ip,
            backoff_base: self.cfg.crash_loop_backoff,
            backoff_max: self.cfg.crash_loop_max_backoff,
            volumes_ready,
        };
        let next = step(&pod, &behaviour, &env);
        if let Some(new_status) = next.status {
            self.note_crashes(&pod, &new_status);
            if let Some(action) = self.write_status(&pod, &key, new_status).await? {
                return Ok(action);
            }
        }
        if volumes_ready {
            self.expand_file_systems(&pod, &node).await?;
        } else {
            let wait = self.mount_timeout(&pod, &key, &node, now);
            return Ok(Action::RequeueAfter(
                next.after.map_or(wait, |d| d.min(wait)),
            ));
        }
        Ok(match next.after {
            Some(d) => Action::RequeueAfter(d),
            None => Action::Done,
        })
    }

    /// The pods on nodes that use the claim `c` (for the claim watch).
    pub fn pods_of_claim(&self, c: &PersistentVolumeClaim) -> Vec<ObjectKey> {
        let key = format!(
            "{}/{}",
            c.metadata.namespace.as_deref().unwrap_or(""),
            c.metadata.name.as_deref().unwrap_or("")
        );
        self.cache
            .informer::<Pod>()
            .store()
            .by_index(CLAIM_INDEX, &key)
            .unwrap_or_default()
            .iter()
            .map(|p| ObjectKey::of(p.as_ref()))
            .collect()
    }

    /// The pod's claims with their volumes; None while one is missing or unbound (or,
    /// for an ephemeral volume, not the pod's).
    fn claimed_volumes(
        &self,
        pod: &Pod,
    ) -> Option<Vec<(Arc<PersistentVolumeClaim>, Arc<PersistentVolume>)>> {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let claims = self.cache.informer::<PersistentVolumeClaim>();
        let volumes = self.cache.informer::<PersistentVolume>();
        let ephemeral: Vec<String> = pod
            .spec
            .iter()
            .flat_map(|s| s.volumes.iter().flatten())
            .filter(|v| v.ephemeral.is_some())
            .map(|v| format!("{}-{}", pod.metadata.name.as_deref().unwrap_or(""), v.name))
            .collect();
        let mut out = Vec::new();
        for name in crate::volumebinding::pod_claims(pod) {
            let c = claims.store().get(&ObjectKey::namespaced(ns, &name))?;
            if ephemeral.contains(&name) && !crate::volumebinding::owned_by(&c, pod) {
                return None;
            }
            let pv_name = c
                .spec
                .as_ref()
                .and_then(|s| s.volume_name.as_deref())
                .filter(|n| !n.is_empty())?;
            let pv = volumes.store().get(&ObjectKey::cluster(pv_name))?;
            let bound_here = pv
                .spec
                .as_ref()
                .and_then(|s| s.claim_ref.as_ref())
                .is_some_and(|r| r.uid.is_some() && r.uid == c.metadata.uid);
            if !bound_here {
                return None;
            }
            out.push((c, pv));
        }
        Some(out)
    }

    /// Whether the CSI volume `pv` must be attached before it is mounted: its driver
    /// requires it (no CSIDriver object: it does, as upstream).
    fn attach_required(&self, pv: &PersistentVolume) -> Option<String> {
        let csi = pv.spec.as_ref()?.csi.as_ref()?;
        let required = self
            .cache
            .informer::<CSIDriver>()
            .store()
            .get(&ObjectKey::cluster(&csi.driver))
            .is_none_or(|d| d.spec.attach_required != Some(false));
        required.then(|| unique_volume_name(&csi.driver, &csi.volume_handle))
    }

    /// Whether the pod's volumes can be mounted on `node`: its claims bound and, where
    /// the attach/detach controller attaches, its attachable volumes attached.
    fn volumes_ready(&self, pod: &Pod, node: &str) -> bool {
        let Some(vols) = self.claimed_volumes(pod) else {
            return false;
        };
        if vols.is_empty() {
            return true;
        }
        let Some(n) = self
            .cache
            .informer::<Node>()
            .store()
            .get(&ObjectKey::cluster(node))
        else {
            return false;
        };
        let controller_attaches = n
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::storage::ANN_CONTROLLER_MANAGED_ATTACH_DETACH))
            .is_some_and(|v| v == "true");
        if !controller_attaches {
            // the kubelet attaches them itself
            return true;
        }
        let attached: Vec<&str> = n
            .status
            .as_ref()
            .and_then(|s| s.volumes_attached.as_ref())
            .map(|v| v.iter().map(|a| a.name.as_str()).collect())
            .unwrap_or_default();
        vols.iter()
            .filter_map(|(_, pv)| self.attach_required(pv))
            .all(|name| attached.contains(&name.as_str()))
    }

    /// A pod waiting for its volumes: past the volume manager's timeout
    /// ([`SimConfig::volume_mount_timeout`] since the pod started) a `FailedMount` warning says what is missing, once per timeout;
    /// the time until the next check.
    fn mount_timeout(&self, pod: &Pod, key: &ObjectKey, node: &str, now: Timestamp) -> Duration {
        let start = pod
            .status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map_or(now, |t| t.0);
        let waited = Duration::from_nanos(
            (now.as_nanosecond() - start.as_nanosecond()).clamp(0, u64::MAX as i128) as u64,
        );
        let timeout = self.cfg.volume_mount_timeout;
        if waited < timeout {
            return timeout - waited;
        }
        let due = {
            let mut warned = self.mount_warned.lock().unwrap_or_else(|e| e.into_inner());
            let last = warned.get(key).copied();
            let due = last.is_none_or(|t: Timestamp| {
                now.as_nanosecond() - t.as_nanosecond() >= timeout.as_nanos() as i128
            });
            if due {
                warned.insert(key.clone(), now);
            }
            due
        };
        if due {
            self.recorder.event(
                &object_reference(pod),
                None,
                EventType::Warning,
                "FailedMount",
                "MountVolume",
                &self.mount_failure(pod, node),
            );
        }
        timeout
    }

    /// The kubelet's `FailedMount` message for a pod whose volumes are not ready.
    fn mount_failure(&self, pod: &Pod, node: &str) -> String {
        let ns = pod.metadata.namespace.as_deref().unwrap_or("");
        let pod_name = pod.metadata.name.as_deref().unwrap_or("");
        let claims = self.cache.informer::<PersistentVolumeClaim>();
        let volumes = self.cache.informer::<PersistentVolume>();
        let n = self
            .cache
            .informer::<Node>()
            .store()
            .get(&ObjectKey::cluster(node));
        let controller_attaches = n
            .as_ref()
            .and_then(|n| n.metadata.annotations.as_ref())
            .and_then(|a| a.get(crate::storage::ANN_CONTROLLER_MANAGED_ATTACH_DETACH))
            .is_some_and(|v| v == "true");
        let attached: Vec<String> = n
            .as_ref()
            .and_then(|n| n.status.as_ref())
            .and_then(|s| s.volumes_attached.as_ref())
            .map(|v| v.iter().map(|a| a.name.clone()).collect())
            .unwrap_or_default();
        let (mut unmounted, mut unattached, mut failed) = (Vec::new(), Vec::new(), Vec::new());
        let mut error: Option<String> = None;
        for v in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let claim = match (&v.persistent_volume_claim, &v.ephemeral) {
                (Some(c), _) => c.claim_name.clone(),
                (None, Some(_)) => format!("{pod_name}-{}", v.name),
                _ => continue,
            };
            let problem = match claims.store().get(&ObjectKey::namespaced(ns, &claim)) {
                None => Some(format!(
                    "failed to fetch PVC from API server: persistentvolumeclaims {claim:?} not found"
                )),
                Some(c) if c.metadata.deletion_timestamp.is_some() => {
                    Some("PVC is being deleted".to_string())
                }
                Some(c) if c.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Bound") => {
                    Some("PVC is not bound".to_string())
                }
                Some(c) => {
                    let pv_name = c
                        .spec
                        .as_ref()
                        .and_then(|s| s.volume_name.clone())
                        .unwrap_or_default();
                    match volumes.store().get(&ObjectKey::cluster(&pv_name)) {
                        None => Some(format!(
                            "failed to fetch PV {pv_name} from API server: persistentvolumes {pv_name:?} not found"
                        )),
                        Some(pv) => {
                            if let Some(unique) = self.attach_required(&pv) {
                                if controller_attaches && !attached.contains(&unique) {
                                    unattached.push(v.name.clone());
                                }
                            }
                            None
                        }
                    }
                }
            };
            if let Some(p) = problem {
                failed.push(v.name.clone());
                error.get_or_insert_with(|| format!("error processing PVC {ns}/{claim}: {p}"));
            }
            if failed.last() == Some(&v.name) || unattached.last() == Some(&v.name) {
                unmounted.push(v.name.clone());
            }
        }
        for l in [&mut unmounted, &mut unattached, &mut failed] {
            l.sort();
        }
        format!(
            "Unable to attach or mount volumes: unmounted volumes=[{}], unattached volumes=[{}], failed to process volumes=[{}]: {}",
            unmounted.join(" "),
            unattached.join(" "),
            failed.join(" "),
            error.unwrap_or_else(|| "timed out waiting for the condition".into())
        )
    }

    /// Finish the file system expansion of the pod's mounted volumes that wait for it.
    async fn expand_file_systems(&self, pod: &Pod, node: &str) -> Result<(), kube::Error> {
        let Some(vols) = self.claimed_volumes(pod) else {
            return Ok(());
        };
        for (c, pv) in vols {
            let Some(status) = crate::storage::resizer::node_expansion(&c, &pv) else {
                continue;
            };
            let mut updated = (*c).clone();
            updated.metadata.managed_fields = None;
            updated.status = Some(status);
            let api: Api<PersistentVolumeClaim> = Api::namespaced(
                self.client.clone(),
                c.metadata.namespace.as_deref().unwrap_or("default"),
            );
            match api
                .replace_status(
                    c.metadata.name.as_deref().unwrap_or(""),
                    &PostParams::default(),
                    &updated,
                )
                .await
            {
                Ok(_) => {}
                // a newer claim comes through the informer and brings the pod back
                Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => continue,
                Err(e) => return Err(e),
            }
            let note = format!(
                "MountVolume.NodeExpandVolume succeeded for volume {:?} {node}",
                pv.metadata.name.as_deref().unwrap_or("")
            );
            for r in [object_reference(c.as_ref()), object_reference(pod)] {
                self.recorder.event(
                    &r,
                    None,
                    EventType::Normal,
                    "FileSystemResizeSuccessful",
                    "NodeExpandVolume",
                    &note,
                );
            }
        }
        Ok(())
    }

    /// The volumes a node's kubelet reports in use: the CSI volumes of its pods that
    /// have not finished, sorted.
    pub fn volumes_in_use(&self, node: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .pods_of_node(node)
            .iter()
            .filter(|p| {
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                !matches!(phase, Some("Succeeded") | Some("Failed"))
            })
            .filter_map(|p| self.claimed_volumes(p))
            .flatten()
            .filter_map(|(_, pv)| {
                let csi = pv.spec.as_ref()?.csi.as_ref()?;
                Some(unique_volume_name(&csi.driver, &csi.volume_handle))
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Report the node's volumes in use (`status.volumesInUse`) when they changed.
    pub async fn reconcile_volumes_in_use(&self, key: ObjectKey) -> ReconcileResult {
        let Some(node) = self.cache.get::<Node>(&key).await else {
            return Ok(Action::Done);
        };
        if !is_managed(&self.cfg, &node) || self.cfg.heartbeats_stopped(&node) {
            return Ok(Action::Done);
        }
        let want = self.volumes_in_use(key.name());
        let have = node
            .status
            .as_ref()
            .and_then(|s| s.volumes_in_use.clone())
            .unwrap_or_default();
        if want == have {
            return Ok(Action::Done);
        }
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = serde_json::json!({"status": {"volumesInUse": want}});
        match api
            .patch_status(key.name(), &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            Err(e) => Err(e.into()),
        }
    }

    /// The node of a pod (for the volumes-in-use controller's pod watch).
    pub fn node_key_of(pod: &Pod) -> Vec<ObjectKey> {
        node_of(pod).map(ObjectKey::cluster).into_iter().collect()
    }

    /// The nodes of the pods using claim `c`.
    pub fn nodes_of_claim(&self, c: &PersistentVolumeClaim) -> Vec<ObjectKey> {
        let mut out: Vec<ObjectKey> = self
            .pods_of_claim(c)
            .iter()
            .filter_map(|k| self.cache.informer::<Pod>().store().get(k))
            .flat_map(|p| Self::node_key_of(&p))
            .collect();
        out.dedup();
        out
    }

    /// Emit `BackOff` for containers that just started backing off.
    fn note_crashes(&self, pod: &Pod, new: &k8s_openapi::api::core::v1::PodStatus) {
        let old = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref());
        for cs in new.container_statuses.iter().flatten() {
            let backing_off = |c: &k8s_openapi::api::core::v1::ContainerStatus| {
                c.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some("CrashLoopBackOff")
            };
            let was = old
                .and_then(|o| o.iter().find(|c| c.name == cs.name))
                .is_some_and(backing_off);
            if backing_off(cs) && !was {
                let meta = &pod.metadata;
                self.recorder.event(
                    &object_reference(pod),
                    None,
                    EventType::Warning,
                    "BackOff",
                    "Restarting",
                    &format!(
                        "Back-off restarting failed container {} in pod {}_{}({})",
                        cs.name,
                        meta.name.as_deref().unwrap_or(""),
                        meta.namespace.as_deref().unwrap_or(""),
                        meta.uid.as_deref().unwrap_or("")
                    ),
                );
            }
        }
    }

    /// Addresses in use (diagnostics).
    pub fn addresses_in_use(&self) -> usize {
        self.ipam.in_use()
    }
}
