//! Fault-injection scenarios (issue 21) of the node, volume, quota and autoscaling
//! controllers: node-lifecycle, taint-eviction, ttl, node-ipam, the persistent volume
//! binder, pvc-protection, pv-protection, expand, ephemeral, attach-detach,
//! resourcequota and horizontal-pod-autoscaler. See `mod.rs`.
//!
//! No kubelet runs in these scenarios: the workloads play the kubelet's, the
//! scheduler's and the external attacher's part through the admin client, as the
//! controllers' own integration tests do.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::ensure;
use coxswain_controllers::nodeipam::{self, NodeIpamControllerOptions};
use coxswain_controllers::nodelifecycle::{self, NodeLifecycleControllerOptions};
use coxswain_controllers::podautoscaler::{self, HpaControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use coxswain_controllers::volume::attachdetach;
use coxswain_controllers::volume::persistentvolume::{
    self as binder, PersistentVolumeBinderControllerOptions,
};
use coxswain_controllers::volume::{ephemeral, expand, pvcprotection, pvprotection};
use coxswain_controllers::{resourcequota, tainteviction, ttl};
use coxswain_runtime::fault::FaultKind;
use coxswain_runtime::testing::{check, run, Invariant, Scenario, World};
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, ResourceQuota,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::storage::v1::{StorageClass, VolumeAttachment};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::builtin_with;

// ---------------------------------------------------------------------------------
// shared helpers

type R<T = ()> = Result<T, String>;

fn obj<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("a valid object")
}

async fn create<K>(api: &Api<K>, v: Value) -> R<K>
where
    K: Resource + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), &obj(v))
        .await
        .map_err(|e| format!("create: {e}"))
}

async fn merge<K>(api: &Api<K>, name: &str, patch: Value) -> R
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(|_| ())
        .map_err(|e| format!("patch {name}: {e}"))
}

async fn merge_status<K>(api: &Api<K>, name: &str, patch: Value) -> R
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(|_| ())
        .map_err(|e| format!("patch status of {name}: {e}"))
}

async fn delete<K>(api: &Api<K>, name: &str, dp: &DeleteParams) -> R
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(format!("delete {name}: {e}")),
    }
}

fn annotation<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn deleting<K: Resource>(o: &K) -> bool {
    o.meta().deletion_timestamp.is_some()
}

fn node(name: &str, extra: Value) -> Value {
    let mut v = json!({"metadata": {"name": name}});
    merge_json(&mut v, extra);
    v
}

fn merge_json(base: &mut Value, extra: Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge_json(b.entry(k).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e,
    }
}

fn taints(n: &Node) -> Vec<(String, String)> {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.effect))
        .collect()
}

fn condition_status(n: &Node, type_: &str) -> Option<String> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn pod_condition(p: &Pod, type_: &str) -> Option<(String, Option<String>)> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

fn pod(name: &str, node: Option<&str>, volumes: Value, extra: Value) -> Value {
    let mut v = json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": volumes,
        },
    });
    merge_json(&mut v, extra);
    v
}

fn claim(name: &str, extra: Value) -> Value {
    let mut v = json!({
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
    });
    merge_json(&mut v, extra);
    v
}

fn volume(name: &str, extra: Value) -> Value {
    let mut v = json!({
        "metadata": {"name": name},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain",
                 "csi": {"driver": "csi.example.com", "volumeHandle": name}},
    });
    merge_json(&mut v, extra);
    v
}

fn phase_of_volume(v: &PersistentVolume) -> &str {
    v.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn phase_of_claim(c: &PersistentVolumeClaim) -> &str {
    c.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

fn volume_name_of(c: &PersistentVolumeClaim) -> &str {
    c.spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// Events of `reason` about object `name` (the observer's view).
fn has_event(w: &World, name: &str, reason: &str) -> bool {
    w.list::<Event>().iter().any(|e| {
        e.reason.as_deref() == Some(reason)
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
    })
}

// ---------------------------------------------------------------------------------
// ttl-controller

/// Every node gets the TTL annotation of the cluster size (0 s below 100 nodes); a
/// wrong value is put back; nodes come and go.
fn ttl_scenario() -> Scenario {
    Scenario::new("ttl")
        .controllers(builtin_with(
            vec![ttl::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<Node>()
        .workload(|w: World| {
            async move {
                let nodes = Api::<Node>::all(w.client());
                for n in ["a", "b"] {
                    create(&nodes, node(n, json!({}))).await?;
                }
                w.wait("ttl 0 on a and b", |w| all_ttl_zero(w, &["a", "b"]))
                    .await?;
                merge(
                    &nodes,
                    "a",
                    json!({"metadata": {"annotations": {ttl::TTL_ANNOTATION: "15"}}}),
                )
                .await?;
                create(&nodes, node("c", json!({}))).await?;
                delete(&nodes, "b", &DeleteParams::default()).await?;
                w.wait("ttl 0 put back on a, set on c", |w| {
                    all_ttl_zero(w, &["a", "c"])
                })
                .await
            }
            .boxed()
        })
        // the controller only ever writes the small cluster's TTL: any other value
        // is the workload's own (on node a)
        .invariant(Invariant::new("the TTL written is 0 s", |w| {
            for n in w.list::<Node>() {
                let v = annotation(&n.metadata, ttl::TTL_ANNOTATION);
                let workloads = n.name_any() == "a" && v == Some("15");
                if !(matches!(v, None | Some("0")) || workloads) {
                    return Err(format!("node {} has ttl {v:?}", n.name_any()));
                }
            }
            Ok(())
        }))
        .converged("every node has ttl 0", |w| {
            let names: Vec<String> = w.list::<Node>().iter().map(|n| n.name_any()).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            all_ttl_zero(w, &names)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_under_faults() {
    crate::common::logs();
    check(&ttl_scenario()).await;
}

fn all_ttl_zero(w: &World, names: &[&str]) -> R {
    for name in names {
        let n = w
            .get::<Node>(name)
            .ok_or_else(|| format!("node {name} missing"))?;
        let v = annotation(&n.metadata, ttl::TTL_ANNOTATION);
        ensure(v == Some("0"), || format!("node {name} has ttl {v:?}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// node-ipam-controller

/// The per-run record of the pod CIDRs each node (by uid) was first seen with.
#[derive(Default)]
struct FirstCidrs(Mutex<BTreeMap<String, Vec<String>>>);

fn pod_cidrs(n: &Node) -> Vec<String> {
    n.spec
        .as_ref()
        .and_then(|s| s.pod_cidrs.clone())
        .unwrap_or_default()
}

/// A /22 cut in /24s with the service range on the second: three blocks for four
/// nodes, one of which is deleted before the fourth comes.
fn node_ipam_scenario() -> Scenario {
    let options = ControllerManagerOptions {
        node_ipam: NodeIpamControllerOptions {
            allocate_node_cidrs: true,
            cluster_cidr: "10.10.0.0/22".into(),
            service_cluster_ip_range: "10.10.1.0/24".into(),
            node_cidr_mask_size: 24,
            ..Default::default()
        },
        ..Default::default()
    };
    const BLOCKS: [&str; 3] = ["10.10.0.0/24", "10.10.2.0/24", "10.10.3.0/24"];
    Scenario::new("node-ipam")
        .controllers(builtin_with(vec![nodeipam::descriptor()], options))
        .observe::<Node>()
        .workload(|w: World| {
            async move {
                let nodes = Api::<Node>::all(w.client());
                for n in ["a", "b", "c"] {
                    create(&nodes, node(n, json!({}))).await?;
                }
                w.wait("a, b and c allocated", |w| allocated(w, &["a", "b", "c"]))
                    .await?;
                delete(&nodes, "a", &DeleteParams::default()).await?;
                create(&nodes, node("d", json!({}))).await?;
                w.wait("d gets a's block", |w| allocated(w, &["b", "c", "d"]))
                    .await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "no block is held by two nodes; blocks come from the cluster CIDR, off the service range",
            |w| {
                let mut holder: BTreeMap<String, String> = BTreeMap::new();
                for n in w.list::<Node>() {
                    let cidrs = pod_cidrs(&n);
                    if cidrs.len() > 1 {
                        return Err(format!("node {} has {cidrs:?}", n.name_any()));
                    }
                    for c in cidrs {
                        if !BLOCKS.contains(&c.as_str()) {
                            return Err(format!("node {} got {c}", n.name_any()));
                        }
                        if let Some(other) = holder.insert(c.clone(), n.name_any()) {
                            return Err(format!("{c} held by {other} and {}", n.name_any()));
                        }
                    }
                }
                Ok(())
            },
        ))
        .invariant(Invariant::new("a node's block never changes", |w| {
            let first = w.state::<FirstCidrs>();
            let mut first = first.0.lock().unwrap_or_else(|e| e.into_inner());
            for n in w.list::<Node>() {
                let cidrs = pod_cidrs(&n);
                if cidrs.is_empty() {
                    continue;
                }
                let uid = n.uid().unwrap_or_default();
                let seen = first.entry(uid).or_insert_with(|| cidrs.clone());
                if *seen != cidrs {
                    return Err(format!(
                        "node {} went from {seen:?} to {cidrs:?}",
                        n.name_any()
                    ));
                }
            }
            Ok(())
        }))
        .converged("b, c and d hold one block each", |w| {
            allocated(w, &["b", "c", "d"])?;
            ensure(w.get::<Node>("a").is_none(), || "a still there".into())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ipam_under_faults() {
    crate::common::logs();
    check(&node_ipam_scenario()).await;
}

fn allocated(w: &World, names: &[&str]) -> R {
    for name in names {
        let n = w
            .get::<Node>(name)
            .ok_or_else(|| format!("node {name} missing"))?;
        let spec = n.spec.clone().unwrap_or_default();
        let cidrs = spec.pod_cidrs.unwrap_or_default();
        ensure(cidrs.len() == 1, || {
            format!("node {name} has pod CIDRs {cidrs:?}")
        })?;
        ensure(spec.pod_cidr.as_deref() == Some(cidrs[0].as_str()), || {
            format!("node {name}: podCIDR differs from podCIDRs")
        })?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// node-lifecycle-controller

/// The annotation that keeps a node's Lease renewed by [`kubelets`].
const ALIVE: &str = "test.coxswain.dev/kubelet-alive";

/// The kubelets' heartbeat: every 200 ms, the Lease of every node annotated
/// [`ALIVE`]`: "true"` is renewed (the workload stops a kubelet by changing it).
fn kubelets(
) -> impl Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    |client, cancel| {
        async move {
            let nodes: Api<Node> = Api::all(client.clone());
            let leases: Api<Lease> =
                Api::namespaced(client, nodelifecycle::NODE_LEASE_NAMESPACE);
            while !cancel.is_cancelled() {
                let alive = nodes
                    .list(&Default::default())
                    .await
                    .map(|l| l.items)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|n| annotation(&n.metadata, ALIVE) == Some("true"))
                    .map(|n| n.name_any());
                for name in alive {
                    let lease = json!({
                        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": name},
                        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                 "renewTime": Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()},
                    });
                    let _ = leases
                        .patch(
                            &name,
                            &PatchParams::apply("kubelet").force(),
                            &Patch::Apply(lease),
                        )
                        .await;
                }
                tokio::select! {
                    _ = cancel.cancelled() => {}
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        }
        .boxed()
    }
}

async fn set_alive(nodes: &Api<Node>, name: &str, alive: bool) -> R {
    merge(
        nodes,
        name,
        json!({"metadata": {"annotations": {ALIVE: alive.to_string()}}}),
    )
    .await
}

async fn post_ready(nodes: &Api<Node>, name: &str) -> R {
    let now = Timestamp::now().to_string();
    merge_status(
        nodes,
        name,
        json!({"status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }]}}),
    )
    .await
}

/// Set once the workload stopped n1's kubelet.
#[derive(Default)]
struct Stopped(AtomicBool);

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";

/// Two nodes; one stops renewing its Lease (Unknown, tainted unreachable, its pod
/// marked not Ready) and comes back (Ready, untainted); the other stays healthy.
fn node_lifecycle_scenario() -> Scenario {
    let options = ControllerManagerOptions {
        node_lifecycle: NodeLifecycleControllerOptions {
            node_monitor_period: Duration::from_millis(100),
            node_monitor_grace_period: Duration::from_millis(1500),
            node_startup_grace_period: Duration::from_millis(1500),
            node_eviction_rate: 100.0,
            ..Default::default()
        },
        ..Default::default()
    };
    Scenario::new("node-lifecycle")
        .controllers(builtin_with(vec![nodelifecycle::descriptor()], options))
        .observe::<Node>()
        .observe::<Pod>()
        .component(kubelets())
        .workload(|w: World| {
            async move {
                let nodes = Api::<Node>::all(w.client());
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                for n in ["n1", "n2"] {
                    create(
                        &nodes,
                        node(n, json!({"metadata": {"annotations": {ALIVE: "true"}}})),
                    )
                    .await?;
                    post_ready(&nodes, n).await?;
                }
                w.wait("n1 and n2 Ready, untainted", |w| {
                    healthy(w, "n1")?;
                    healthy(w, "n2")
                })
                .await?;
                create(&pods, pod("p", Some("n1"), json!([]), json!({}))).await?;
                let now = Timestamp::now().to_string();
                merge_status(
                    &pods,
                    "p",
                    json!({"status": {"phase": "Running", "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}),
                )
                .await?;
                // n1's kubelet stops
                w.state::<Stopped>().0.store(true, Ordering::SeqCst);
                set_alive(&nodes, "n1", false).await?;
                w.wait("n1 Unknown, tainted unreachable, its pod not Ready", |w| {
                    unreachable(w, "n1")?;
                    let p = w.get::<Pod>("p").ok_or("pod p missing")?;
                    ensure(
                        pod_condition(&p, "Ready").map(|c| c.0).as_deref() == Some("False"),
                        || "pod p still Ready".into(),
                    )
                })
                .await?;
                // and comes back
                set_alive(&nodes, "n1", true).await?;
                post_ready(&nodes, "n1").await?;
                w.wait("n1 Ready again, untainted", |w| healthy(w, "n1"))
                    .await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "nothing is marked unhealthy before a kubelet stopped",
            |w| {
                if w.state::<Stopped>().0.load(Ordering::SeqCst) {
                    return Ok(());
                }
                for n in w.list::<Node>() {
                    ensure(
                        condition_status(&n, "Ready").as_deref() != Some("Unknown")
                            && !taints(&n).iter().any(|(_, e)| e == "NoExecute"),
                        || format!("{} marked unhealthy: {:?}", n.name_any(), taints(&n)),
                    )?;
                }
                for p in w.list::<Pod>() {
                    ensure(
                        pod_condition(&p, "Ready").map(|c| c.0).as_deref() != Some("False"),
                        || format!("pod {} marked not Ready", p.name_any()),
                    )?;
                }
                Ok(())
            },
        ))
        .invariant(Invariant::new(
            "the healthy node is never Unknown nor tainted NoExecute",
            |w| {
                let Some(n) = w.get::<Node>("n2") else {
                    return Ok(());
                };
                ensure(
                    condition_status(&n, "Ready").as_deref() != Some("Unknown"),
                    || "n2 went Unknown".into(),
                )?;
                ensure(!taints(&n).iter().any(|(_, e)| e == "NoExecute"), || {
                    format!("n2 tainted {:?}", taints(&n))
                })
            },
        ))
        .invariant(Invariant::new("no taint is on a node twice", |w| {
            for n in w.list::<Node>() {
                let t = taints(&n);
                let set: BTreeSet<_> = t.iter().collect();
                ensure(set.len() == t.len(), || {
                    format!("node {} has taints {t:?}", n.name_any())
                })?;
            }
            Ok(())
        }))
        .converged("both nodes Ready and untainted", |w| {
            healthy(w, "n1")?;
            healthy(w, "n2")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_lifecycle_under_faults() {
    crate::common::logs();
    check(&node_lifecycle_scenario()).await;
}

fn healthy(w: &World, name: &str) -> R {
    let n = w
        .get::<Node>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    ensure(
        condition_status(&n, "Ready").as_deref() == Some("True"),
        || format!("{name} not Ready"),
    )?;
    ensure(taints(&n).is_empty(), || {
        format!("{name} tainted {:?}", taints(&n))
    })
}

fn unreachable(w: &World, name: &str) -> R {
    let n = w
        .get::<Node>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    ensure(
        condition_status(&n, "Ready").as_deref() == Some("Unknown"),
        || format!("{name} not Unknown"),
    )?;
    let t = taints(&n);
    for effect in ["NoExecute", "NoSchedule"] {
        ensure(
            t.contains(&(UNREACHABLE.to_string(), effect.to_string())),
            || format!("{name} tainted {t:?}"),
        )?;
    }
    ensure(!t.iter().any(|(k, _)| k == NOT_READY), || {
        format!("{name} tainted {t:?}")
    })
}

// ---------------------------------------------------------------------------------
// taint-eviction-controller

const HOLD: &str = "test.coxswain.dev/hold";

/// Set once the workload tainted n1.
#[derive(Default)]
struct Tainted(AtomicBool);

/// Pods on a node tainted NoExecute: the untolerating one goes at once, the one
/// tolerating it for a second after that second, the one tolerating it forever and
/// the one on another node stay; a pod bound to the tainted node later goes too.
/// A finalizer keeps the deleted pods readable.
fn taint_eviction_scenario() -> Scenario {
    Scenario::new("taint-eviction")
        .controllers(builtin_with(
            vec![tainteviction::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<Pod>()
        .observe::<Node>()
        .workload(|w: World| {
            async move {
                let nodes = Api::<Node>::all(w.client());
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                create(&nodes, node("n1", json!({}))).await?;
                create(&nodes, node("n2", json!({}))).await?;
                let hold = json!({"metadata": {"finalizers": [HOLD]}});
                let tolerate = |secs: Option<i64>| {
                    let mut t = json!({"key": "k", "operator": "Exists", "effect": "NoExecute"});
                    if let Some(s) = secs {
                        t["tolerationSeconds"] = json!(s);
                    }
                    let mut v = hold.clone();
                    v["spec"] = json!({"tolerations": [t]});
                    v
                };
                create(&pods, pod("plain", Some("n1"), json!([]), hold.clone())).await?;
                create(&pods, pod("brief", Some("n1"), json!([]), tolerate(Some(1)))).await?;
                create(&pods, pod("forever", Some("n1"), json!([]), tolerate(None))).await?;
                create(&pods, pod("elsewhere", Some("n2"), json!([]), hold.clone())).await?;
                w.state::<Tainted>().0.store(true, Ordering::SeqCst);
                merge(
                    &nodes,
                    "n1",
                    json!({"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}]}}),
                )
                .await?;
                w.wait("plain evicted", |w| evicted(w, "plain")).await?;
                create(&pods, pod("late", Some("n1"), json!([]), hold.clone())).await?;
                w.wait("brief and late evicted", |w| {
                    evicted(w, "brief")?;
                    evicted(w, "late")
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "only pods that do not tolerate the taint go, and only after it is set, with their DisruptionTarget condition",
            |w| {
                let tainted = w.state::<Tainted>().0.load(Ordering::SeqCst);
                for p in w.list::<Pod>() {
                    if !deleting(p.as_ref()) {
                        continue;
                    }
                    let name = p.name_any();
                    ensure(tainted && !["forever", "elsewhere"].contains(&name.as_str()), || {
                        format!("pod {name} deleted")
                    })?;
                    ensure(
                        pod_condition(&p, "DisruptionTarget")
                            == Some((
                                "True".into(),
                                Some(tainteviction::DISRUPTION_REASON.into()),
                            )),
                        || format!("pod {name} deleted without its DisruptionTarget condition"),
                    )?;
                }
                Ok(())
            },
        ))
        .converged("plain, brief and late evicted; forever and elsewhere kept", |w| {
            for name in ["plain", "brief", "late"] {
                evicted(w, name)?;
            }
            for name in ["forever", "elsewhere"] {
                let p = w.get::<Pod>(name).ok_or_else(|| format!("{name} missing"))?;
                ensure(!deleting(p.as_ref()), || format!("{name} deleted"))?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taint_eviction_under_faults() {
    crate::common::logs();
    check(&taint_eviction_scenario()).await;
}

fn evicted(w: &World, name: &str) -> R {
    let p = w
        .get::<Pod>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    ensure(deleting(p.as_ref()), || format!("{name} not deleted"))?;
    ensure(
        pod_condition(&p, "DisruptionTarget")
            .map(|c| c.0)
            .as_deref()
            == Some("True"),
        || format!("{name} without DisruptionTarget"),
    )
}

// ---------------------------------------------------------------------------------
// persistentvolume-binder-controller

/// Three volumes, three claims: each claim bound to one volume and that volume to it;
/// a deleted claim's volume (Retain) is Released.
fn persistentvolume_binder_scenario() -> Scenario {
    let options = ControllerManagerOptions {
        persistent_volume_binder: PersistentVolumeBinderControllerOptions {
            pv_claim_binder_sync_period: Duration::from_secs(1),
            ..Default::default()
        },
        ..Default::default()
    };
    Scenario::new("persistentvolume-binder")
        .controllers(builtin_with(vec![binder::descriptor()], options))
        .observe::<PersistentVolume>()
        .observe::<PersistentVolumeClaim>()
        .workload(|w: World| {
            async move {
                let pvs = Api::<PersistentVolume>::all(w.client());
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(w.client(), w.namespace());
                for v in ["v1", "v2", "v3"] {
                    create(&pvs, volume(v, json!({}))).await?;
                }
                for c in ["c1", "c2", "c3"] {
                    create(&pvcs, claim(c, json!({}))).await?;
                }
                w.wait("every claim bound", |w| {
                    for c in ["c1", "c2", "c3"] {
                        bound_both_ways(w, c)?;
                    }
                    Ok(())
                })
                .await?;
                let gone = w
                    .get::<PersistentVolumeClaim>("c1")
                    .map(|c| volume_name_of(&c).to_string())
                    .ok_or("c1 missing")?;
                *w.state::<ReleasedVolume>()
                    .0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = gone.clone();
                delete(&pvcs, "c1", &DeleteParams::default()).await?;
                // no pvc-protection controller here: the admission's finalizer goes by hand
                merge(&pvcs, "c1", json!({"metadata": {"finalizers": null}}))
                    .await
                    .or_else(|e| if e.contains("404") { Ok(()) } else { Err(e) })?;
                w.wait("c1's volume Released", |w| released(w, &gone)).await
            }
            .boxed()
        })
        .invariant(Invariant::new("no volume is named by two claims", |w| {
            let mut by: BTreeMap<String, String> = BTreeMap::new();
            for c in w.list::<PersistentVolumeClaim>() {
                let v = volume_name_of(&c);
                if v.is_empty() {
                    continue;
                }
                if let Some(other) = by.insert(v.to_string(), c.name_any()) {
                    return Err(format!("{v} named by {other} and {}", c.name_any()));
                }
            }
            Ok(())
        }))
        .converged("c2, c3 bound both ways, c1's volume Released", |w| {
            bound_both_ways(w, "c2")?;
            bound_both_ways(w, "c3")?;
            let gone = w
                .state::<ReleasedVolume>()
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            released(w, &gone)?;
            // every other volume is free again or bound to a live claim that names it
            for v in w.list::<PersistentVolume>() {
                if v.name_any() == gone {
                    continue;
                }
                let r = v.spec.as_ref().and_then(|s| s.claim_ref.as_ref());
                let Some(r) = r else {
                    ensure(phase_of_volume(&v) == "Available", || {
                        format!("{} is {}", v.name_any(), phase_of_volume(&v))
                    })?;
                    continue;
                };
                let c = w
                    .get::<PersistentVolumeClaim>(r.name.as_deref().unwrap_or_default())
                    .ok_or_else(|| format!("{} bound to a missing claim", v.name_any()))?;
                ensure(
                    volume_name_of(&c) == v.name_any() && c.uid() == r.uid,
                    || {
                        format!(
                            "{} bound to {} which names {}",
                            v.name_any(),
                            c.name_any(),
                            volume_name_of(&c)
                        )
                    },
                )?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistentvolume_binder_under_faults() {
    crate::common::logs();
    check(&persistentvolume_binder_scenario()).await;
}

#[derive(Default)]
struct ReleasedVolume(Mutex<String>);

fn bound_both_ways(w: &World, name: &str) -> R {
    let c = w
        .get::<PersistentVolumeClaim>(name)
        .ok_or_else(|| format!("claim {name} missing"))?;
    ensure(phase_of_claim(&c) == "Bound", || {
        format!("{name} not Bound")
    })?;
    let v = volume_name_of(&c);
    let pv = w
        .get::<PersistentVolume>(v)
        .ok_or_else(|| format!("volume {v:?} of {name} missing"))?;
    let r = pv
        .spec
        .as_ref()
        .and_then(|s| s.claim_ref.as_ref())
        .ok_or_else(|| format!("{v} has no claimRef"))?;
    ensure(r.name.as_deref() == Some(name) && r.uid == c.uid(), || {
        format!("{v} bound to {:?}", r.name)
    })?;
    ensure(phase_of_volume(&pv) == "Bound", || format!("{v} not Bound"))?;
    ensure(
        annotation(&c.metadata, binder::ANN_BIND_COMPLETED) == Some("yes"),
        || format!("{name} without bind-completed"),
    )
}

fn released(w: &World, name: &str) -> R {
    let v = w
        .get::<PersistentVolume>(name)
        .ok_or_else(|| format!("volume {name} missing"))?;
    ensure(phase_of_volume(&v) == "Released", || {
        format!("{name} is {}", phase_of_volume(&v))
    })
}

// ---------------------------------------------------------------------------------
// pvc-protection-controller

/// Whether the pod `user` (which holds claim `used`) may still exist.
#[derive(Default)]
struct UserAlive(AtomicBool);

/// Claims deleted while a scheduled pod uses them stay until the pod is gone; unused
/// ones (and the claim of an unscheduled pod) go; a claim that lost its finalizer gets
/// it back.
fn pvc_protection_scenario() -> Scenario {
    Scenario::new("pvc-protection")
        .controllers(builtin_with(
            vec![pvcprotection::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<PersistentVolumeClaim>()
        .observe::<Pod>()
        .workload(|w: World| {
            async move {
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(w.client(), w.namespace());
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                for c in ["used", "waiting", "unused", "bare"] {
                    create(&pvcs, claim(c, json!({}))).await?;
                }
                w.state::<UserAlive>().0.store(true, Ordering::SeqCst);
                let uses =
                    |c: &str| json!([{"name": "d", "persistentVolumeClaim": {"claimName": c}}]);
                create(&pods, pod("user", Some("node-1"), uses("used"), json!({}))).await?;
                create(&pods, pod("pending", None, uses("waiting"), json!({}))).await?;
                merge(&pvcs, "bare", json!({"metadata": {"finalizers": null}})).await?;
                for c in ["used", "waiting", "unused"] {
                    delete(&pvcs, c, &DeleteParams::default()).await?;
                }
                w.wait("the unused claims gone, bare protected", |w| {
                    for c in ["waiting", "unused"] {
                        ensure(w.get::<PersistentVolumeClaim>(c).is_none(), || {
                            format!("{c} still there")
                        })?;
                    }
                    protected(w, "bare")
                })
                .await?;
                w.state::<UserAlive>().0.store(false, Ordering::SeqCst);
                delete(&pods, "user", &DeleteParams::default().grace_period(0)).await?;
                w.wait("the used claim gone with its pod", |w| {
                    ensure(w.get::<PersistentVolumeClaim>("used").is_none(), || {
                        "used still there".into()
                    })
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "a claim used by a scheduled pod is never removed",
            |w| {
                if !w.state::<UserAlive>().0.load(Ordering::SeqCst) {
                    return Ok(());
                }
                ensure(w.get::<PersistentVolumeClaim>("used").is_some(), || {
                    "claim used removed while its pod runs".into()
                })
            },
        ))
        .converged("deleted claims gone, the live one protected", |w| {
            for c in ["used", "waiting", "unused"] {
                ensure(w.get::<PersistentVolumeClaim>(c).is_none(), || {
                    format!("{c} still there")
                })?;
            }
            protected(w, "bare")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pvc_protection_under_faults() {
    crate::common::logs();
    check(&pvc_protection_scenario()).await;
}

fn protected(w: &World, name: &str) -> R {
    let c = w
        .get::<PersistentVolumeClaim>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    ensure(
        c.finalizers() == [pvcprotection::PVC_PROTECTION_FINALIZER],
        || format!("{name} has finalizers {:?}", c.finalizers()),
    )
}

// ---------------------------------------------------------------------------------
// pv-protection-controller

/// Whether volume `bound` may go (the workload released it).
#[derive(Default)]
struct BoundReleased(AtomicBool);

/// A deleted volume stays while Bound and goes once Released; an Available one goes
/// at once; one that lost its finalizer gets it back.
fn pv_protection_scenario() -> Scenario {
    Scenario::new("pv-protection")
        .controllers(builtin_with(
            vec![pvprotection::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<PersistentVolume>()
        .workload(|w: World| {
            async move {
                let pvs = Api::<PersistentVolume>::all(w.client());
                for (v, phase) in [
                    ("bound", "Bound"),
                    ("available", "Available"),
                    ("bare", "Available"),
                ] {
                    create(&pvs, volume(v, json!({}))).await?;
                    merge_status(&pvs, v, json!({"status": {"phase": phase}})).await?;
                }
                merge(&pvs, "bare", json!({"metadata": {"finalizers": null}})).await?;
                for v in ["bound", "available"] {
                    delete(&pvs, v, &DeleteParams::default()).await?;
                }
                w.wait("the Available volume gone, bare protected", |w| {
                    ensure(w.get::<PersistentVolume>("available").is_none(), || {
                        "available still there".into()
                    })?;
                    pv_protected(w, "bare")
                })
                .await?;
                w.state::<BoundReleased>().0.store(true, Ordering::SeqCst);
                merge_status(&pvs, "bound", json!({"status": {"phase": "Released"}})).await?;
                w.wait("the Released volume gone", |w| {
                    ensure(w.get::<PersistentVolume>("bound").is_none(), || {
                        "bound still there".into()
                    })
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new("a Bound volume is never removed", |w| {
            if w.state::<BoundReleased>().0.load(Ordering::SeqCst) {
                return Ok(());
            }
            ensure(w.get::<PersistentVolume>("bound").is_some(), || {
                "volume bound removed while Bound".into()
            })
        }))
        .converged("deleted volumes gone, the live one protected", |w| {
            for v in ["bound", "available"] {
                ensure(w.get::<PersistentVolume>(v).is_none(), || {
                    format!("{v} still there")
                })?;
            }
            pv_protected(w, "bare")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pv_protection_under_faults() {
    crate::common::logs();
    check(&pv_protection_scenario()).await;
}

fn pv_protected(w: &World, name: &str) -> R {
    let v = w
        .get::<PersistentVolume>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    ensure(
        v.finalizers() == [pvprotection::PV_PROTECTION_FINALIZER],
        || format!("{name} has finalizers {:?}", v.finalizers()),
    )
}

// ---------------------------------------------------------------------------------
// expand (persistentvolume-expander)

/// Growing a Bound claim of an expandable class is handed to the external resizer
/// (an event; the controller writes nothing else).
fn expand_scenario() -> Scenario {
    Scenario::new("expand")
        .controllers(builtin_with(
            vec![expand::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<PersistentVolumeClaim>()
        .observe::<Event>()
        .workload(|w: World| {
            async move {
                let ns = w.namespace().to_string();
                let classes = Api::<StorageClass>::all(w.client());
                create(
                    &classes,
                    json!({"metadata": {"name": "expandable"}, "provisioner": "csi.example.com",
                           "allowVolumeExpansion": true}),
                )
                .await?;
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(w.client(), &ns);
                let pvs = Api::<PersistentVolume>::all(w.client());
                let c = create(
                    &pvcs,
                    claim(
                        "data",
                        json!({"spec": {"storageClassName": "expandable", "volumeName": "pv-data"}}),
                    ),
                )
                .await?;
                create(
                    &pvs,
                    volume(
                        "pv-data",
                        json!({"spec": {"storageClassName": "expandable",
                            "claimRef": {"namespace": ns, "name": "data", "uid": c.uid()}}}),
                    ),
                )
                .await?;
                merge_status(&pvs, "pv-data", json!({"status": {"phase": "Bound"}})).await?;
                merge_status(
                    &pvcs,
                    "data",
                    json!({"status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                        "accessModes": ["ReadWriteOnce"]}}),
                )
                .await?;
                merge(
                    &pvcs,
                    "data",
                    json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}}),
                )
                .await?;
                w.wait("ExternalExpanding", |w| {
                    ensure(has_event(w, "data", "ExternalExpanding"), || "no event yet".into())
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new("the claim's size is never changed", |w| {
            let Some(c) = w.get::<PersistentVolumeClaim>("data") else {
                return Ok(());
            };
            let cap = c
                .status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get("storage"))
                .map(|q| q.0.clone());
            ensure(matches!(cap.as_deref(), None | Some("1Gi")), || {
                format!("capacity {cap:?}")
            })
        }))
        .converged("the expansion handed over", |w| {
            ensure(has_event(w, "data", "ExternalExpanding"), || {
                "no ExternalExpanding event".into()
            })
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_under_faults() {
    crate::common::logs();
    check(&expand_scenario()).await;
}

// ---------------------------------------------------------------------------------
// ephemeral-volume-controller

/// Pods with generic ephemeral volumes get one claim per volume, controlled by the
/// pod; a deleted claim is created again.
fn ephemeral_scenario() -> Scenario {
    Scenario::new("ephemeral")
        .controllers(builtin_with(
            vec![ephemeral::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<PersistentVolumeClaim>()
        .observe::<Pod>()
        .workload(|w: World| {
            async move {
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(w.client(), w.namespace());
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                let template = json!({"volumeClaimTemplate": {
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                             "resources": {"requests": {"storage": "1Gi"}}}}});
                create(
                    &pods,
                    pod(
                        "app",
                        None,
                        json!([{"name": "scratch", "ephemeral": template},
                               {"name": "cache", "ephemeral": template}]),
                        json!({}),
                    ),
                )
                .await?;
                create(
                    &pods,
                    pod(
                        "b",
                        None,
                        json!([{"name": "scratch", "ephemeral": template}]),
                        json!({}),
                    ),
                )
                .await?;
                w.wait("the claims", |w| ephemeral_claims(w, &EPHEMERAL_CLAIMS))
                    .await?;
                let first = w
                    .get::<PersistentVolumeClaim>("app-scratch")
                    .and_then(|c| c.uid())
                    .ok_or("app-scratch missing")?;
                merge(
                    &pvcs,
                    "app-scratch",
                    json!({"metadata": {"finalizers": null}}),
                )
                .await?;
                delete(&pvcs, "app-scratch", &DeleteParams::default()).await?;
                w.wait("app-scratch created again", |w| {
                    let c = w
                        .get::<PersistentVolumeClaim>("app-scratch")
                        .ok_or("app-scratch missing")?;
                    ensure(c.uid().as_deref() != Some(first.as_str()), || {
                        "still the first claim".into()
                    })?;
                    ephemeral_claims(w, &EPHEMERAL_CLAIMS)
                })
                .await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "every claim is controlled by the pod it is named after",
            |w| {
                for c in w.list::<PersistentVolumeClaim>() {
                    let owners = c.owner_references();
                    ensure(
                        owners.len() == 1
                            && owners[0].kind == "Pod"
                            && owners[0].controller == Some(true),
                        || format!("{} owned by {owners:?}", c.name_any()),
                    )?;
                    ensure(
                        c.name_any().starts_with(&format!("{}-", owners[0].name)),
                        || format!("{} owned by {}", c.name_any(), owners[0].name),
                    )?;
                }
                Ok(())
            },
        ))
        .converged("one claim per ephemeral volume, owned by its pod", |w| {
            ephemeral_claims(w, &EPHEMERAL_CLAIMS)?;
            let n = w.list::<PersistentVolumeClaim>().len();
            ensure(n == EPHEMERAL_CLAIMS.len(), || format!("{n} claims"))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ephemeral_under_faults() {
    crate::common::logs();
    check(&ephemeral_scenario()).await;
}

const EPHEMERAL_CLAIMS: [(&str, &str); 3] = [
    ("app-scratch", "app"),
    ("app-cache", "app"),
    ("b-scratch", "b"),
];

fn ephemeral_claims(w: &World, want: &[(&str, &str)]) -> R {
    for (name, owner) in want {
        let c = w
            .get::<PersistentVolumeClaim>(name)
            .ok_or_else(|| format!("claim {name} missing"))?;
        let p = w
            .get::<Pod>(owner)
            .ok_or_else(|| format!("pod {owner} missing"))?;
        let owners = c.owner_references();
        ensure(
            owners.len() == 1
                && owners[0].uid == p.uid().unwrap_or_default()
                && owners[0].block_owner_deletion == Some(true),
            || format!("{name} owned by {owners:?}"),
        )?;
        ensure(!deleting(c.as_ref()), || format!("{name} being deleted"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// attach-detach-controller

const DRIVER: &str = "csi.example.com";

fn unique(pv: &str) -> String {
    attachdetach::unique_volume_name(DRIVER, pv)
}

/// Mark every VolumeAttachment attached (the external attacher's part) until `want`
/// (by name) are all attached.
async fn attach_all(w: &World, want: &[String]) -> R {
    let vas = Api::<VolumeAttachment>::all(w.client());
    loop {
        let mut pending = Vec::new();
        for name in want {
            match w.get::<VolumeAttachment>(name) {
                Some(va) if va.status.as_ref().is_some_and(|s| s.attached) => {}
                Some(_) => {
                    merge_status(&vas, name, json!({"status": {"attached": true}})).await?;
                }
                None => pending.push(name.clone()),
            }
        }
        if pending.is_empty() {
            return Ok(());
        }
        w.wait("the VolumeAttachments", |w| {
            ensure(
                pending
                    .iter()
                    .all(|n| w.get::<VolumeAttachment>(n).is_some()),
                || format!("waiting for {pending:?}"),
            )
        })
        .await?;
    }
}

/// Volumes of pods on controller-managed nodes are attached and listed in the node's
/// `volumesAttached`; a volume no pod needs is detached; a ReadWriteOnce volume in use
/// on one node is not attached to a second one until it was detached from the first.
fn attach_detach_scenario() -> Scenario {
    Scenario::new("attach-detach")
        .controllers(builtin_with(
            vec![attachdetach::descriptor()],
            ControllerManagerOptions::default(),
        ))
        .observe::<VolumeAttachment>()
        .observe::<Node>()
        .workload(|w: World| {
            async move {
                let ns = w.namespace().to_string();
                let nodes = Api::<Node>::all(w.client());
                let pvcs = Api::<PersistentVolumeClaim>::namespaced(w.client(), &ns);
                let pvs = Api::<PersistentVolume>::all(w.client());
                let pods = Api::<Pod>::namespaced(w.client(), &ns);
                for n in ["node-1", "node-2"] {
                    create(
                        &nodes,
                        node(n, json!({"metadata": {"annotations": {
                            attachdetach::CONTROLLER_MANAGED_ANNOTATION: "true"}}})),
                    )
                    .await?;
                    merge_status(
                        &nodes,
                        n,
                        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
                    )
                    .await?;
                }
                for name in ["one", "two"] {
                    let pv = format!("pv-{name}");
                    let c = create(&pvcs, claim(name, json!({"spec": {"volumeName": pv}}))).await?;
                    create(
                        &pvs,
                        volume(&pv, json!({"spec": {"claimRef": {"namespace": ns, "name": name, "uid": c.uid()}}})),
                    )
                    .await?;
                    merge_status(&pvcs, name, json!({"status": {"phase": "Bound"}})).await?;
                }
                let uses = |c: &str| json!([{"name": "d", "persistentVolumeClaim": {"claimName": c}}]);
                create(&pods, pod("p1", Some("node-1"), uses("one"), json!({}))).await?;
                create(&pods, pod("p2", Some("node-1"), uses("two"), json!({}))).await?;
                let va = |pv: &str, n: &str| attachdetach::attachment_name(pv, DRIVER, n);
                attach_all(&w, &[va("pv-one", "node-1"), va("pv-two", "node-1")]).await?;
                w.wait("node-1 lists both volumes", |w| {
                    node_lists(w, "node-1", &[unique("pv-one"), unique("pv-two")])
                })
                .await?;
                // p1 goes: pv-one is detached
                delete(&pods, "p1", &DeleteParams::default().grace_period(0)).await?;
                w.wait("pv-one detached", |w| {
                    ensure(w.get::<VolumeAttachment>(&va("pv-one", "node-1")).is_none(), || {
                        "pv-one still attached".into()
                    })?;
                    node_lists(w, "node-1", &[unique("pv-two")])
                })
                .await?;
                // a pod on node-2 wants pv-two while p2 still uses it on node-1
                create(&pods, pod("p3", Some("node-2"), uses("two"), json!({}))).await?;
                w.wait("the multi-attach refusal", |w| {
                    ensure(has_event(w, "p3", "FailedAttachVolume"), || "no event yet".into())
                })
                .await?;
                delete(&pods, "p2", &DeleteParams::default().grace_period(0)).await?;
                attach_all(&w, &[va("pv-two", "node-2")]).await?;
                w.wait("pv-two moved to node-2", |w| {
                    node_lists(w, "node-1", &[])?;
                    node_lists(w, "node-2", &[unique("pv-two")])
                })
                .await
            }
            .boxed()
        })
        .observe::<Event>()
        .invariant(Invariant::new(
            "a ReadWriteOnce volume is never attached to two nodes",
            |w| {
                let mut on: BTreeMap<String, String> = BTreeMap::new();
                for va in w.list::<VolumeAttachment>() {
                    let pv = va.spec.source.persistent_volume_name.clone().unwrap_or_default();
                    if let Some(other) = on.insert(pv.clone(), va.spec.node_name.clone()) {
                        return Err(format!("{pv} attached to {other} and {}", va.spec.node_name));
                    }
                }
                Ok(())
            },
        ))
        .converged("only pv-two, on node-2, attached and listed", |w| {
            let vas: Vec<String> = w.list::<VolumeAttachment>().iter().map(|v| v.name_any()).collect();
            let want = attachdetach::attachment_name("pv-two", DRIVER, "node-2");
            ensure(vas == [want], || format!("attachments {vas:?}"))?;
            node_lists(w, "node-1", &[])?;
            node_lists(w, "node-2", &[unique("pv-two")])
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_detach_under_faults() {
    crate::common::logs();
    check(&attach_detach_scenario()).await;
}

fn node_lists(w: &World, name: &str, want: &[String]) -> R {
    let n = w
        .get::<Node>(name)
        .ok_or_else(|| format!("{name} missing"))?;
    let listed: Vec<String> = n
        .status
        .clone()
        .and_then(|s| s.volumes_attached)
        .unwrap_or_default()
        .into_iter()
        .map(|a| a.name)
        .collect();
    let mut want = want.to_vec();
    want.sort();
    ensure(listed == want, || format!("{name} lists {listed:?}"))
}

// ---------------------------------------------------------------------------------
// resourcequota-controller

/// The most pods the quota allows (the workload lowers it before raising the limit).
#[derive(Default)]
struct PodLimit(AtomicI32);

fn live_pods(w: &World) -> usize {
    w.list::<Pod>()
        .iter()
        .filter(|p| {
            !matches!(
                p.status.as_ref().and_then(|s| s.phase.as_deref()),
                Some("Succeeded" | "Failed")
            )
        })
        .count()
}

/// A quota of two pods: usage counted (a pod that existed before the quota), charged
/// by admission, given back on deletion (so a third pod fits), and a raised limit
/// shows in status.hard.
///
/// A recount reads pods from the informer, which may not show a pod admission just
/// charged: it then writes a usage one short, and only the next full recount
/// (`--resource-quota-sync-period`, upstream's recovery) puts it right. The period is
/// 1 s here so that convergence is reached within the bound.
fn resourcequota_scenario() -> Scenario {
    resourcequota_scenario_every(Duration::from_secs(1))
}

/// The scenario with a full recount every `sync_period`.
fn resourcequota_scenario_every(sync_period: Duration) -> Scenario {
    let options = ControllerManagerOptions {
        resource_quota: resourcequota::ResourceQuotaControllerOptions {
            resource_quota_sync_period: sync_period,
            ..Default::default()
        },
        ..Default::default()
    };
    Scenario::new("resourcequota")
        .controllers(builtin_with(vec![resourcequota::descriptor()], options))
        .observe::<ResourceQuota>()
        .observe::<Pod>()
        .workload(|w: World| {
            async move {
                let quotas = Api::<ResourceQuota>::namespaced(w.client(), w.namespace());
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                w.state::<PodLimit>().0.store(2, Ordering::SeqCst);
                create(&pods, pod("before", None, json!([]), json!({}))).await?;
                create(
                    &quotas,
                    json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "2"}}}),
                )
                .await?;
                w.wait("q counts 1 pod", |w| quota_used(w, "1")).await?;
                create(&pods, pod("second", None, json!([]), json!({}))).await?;
                // refused, unless a recount raced admission (see the invariant)
                let mut third = create(&pods, pod("third", None, json!([]), json!({})))
                    .await
                    .is_ok();
                delete(&pods, "before", &DeleteParams::default().grace_period(0)).await?;
                w.wait("q gives the pod back", |w| {
                    ensure(w.get::<Pod>("before").is_none(), || {
                        "before still seen".into()
                    })?;
                    quota_used(w, &live_pods(w).to_string())
                })
                .await?;
                // the observer's quota may lag the server's: a refusal waits for the
                // quota's next version
                while !third {
                    let seen = w
                        .get::<ResourceQuota>("q")
                        .and_then(|q| q.resource_version());
                    match create(&pods, pod("third", None, json!([]), json!({}))).await {
                        Ok(_) => third = true,
                        Err(e) if e.contains("exceeded quota") => {
                            w.wait("quota q changes", |w| {
                                let now = w
                                    .get::<ResourceQuota>("q")
                                    .and_then(|q| q.resource_version());
                                ensure(now != seen, || format!("q still at {seen:?}: {e}"))
                            })
                            .await?;
                        }
                        Err(e) => return Err(e),
                    }
                }
                w.state::<PodLimit>().0.store(3, Ordering::SeqCst);
                merge(&quotas, "q", json!({"spec": {"hard": {"pods": "3"}}})).await?;
                w.wait("q shows the new limit", |w| {
                    quota_used(w, "2")?;
                    quota_hard(w, "3")
                })
                .await
            }
            .boxed()
        })
        // a recount at an arbitrary moment (a retried or re-run sync after a refused or
        // lost write, a restart, a standby taking over) reads pods from the informer,
        // which may not show a pod admission just charged: the recount then lowers
        // status.used and admission lets one pod too many in. Upstream's controller
        // recounts from its listers the same way; only a fault-free run (and the watch
        // faults, which only make the quota's own writes conflict) keeps the bound.
        .invariant(
            Invariant::new("never more pods than the quota allows", |w| {
                let limit = w.state::<PodLimit>().0.load(Ordering::SeqCst);
                if limit == 0 {
                    return Ok(());
                }
                let n = live_pods(w);
                ensure(n <= limit as usize, || format!("{n} pods, limit {limit}"))
            })
            .except(&[
                FaultKind::Conflict,
                FaultKind::TooManyRequests,
                FaultKind::ServerError,
                FaultKind::Timeout,
                FaultKind::Crash,
                FaultKind::CrashStale,
                FaultKind::LeaderMove,
            ]),
        )
        .converged(
            "status.used counts the pods, status.hard is spec.hard",
            |w| {
                quota_used(w, &live_pods(w).to_string())?;
                quota_hard(w, "3")
            },
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resourcequota_under_faults() {
    crate::common::logs();
    check(&resourcequota_scenario()).await;
}

fn quota_used(w: &World, want: &str) -> R {
    let q = w.get::<ResourceQuota>("q").ok_or("quota q missing")?;
    let used = q
        .status
        .as_ref()
        .and_then(|s| s.used.as_ref())
        .and_then(|u| u.get("pods"))
        .map(|q| q.0.clone());
    ensure(used.as_deref() == Some(want), || {
        format!("q used pods={used:?}")
    })
}

fn quota_hard(w: &World, want: &str) -> R {
    let q = w.get::<ResourceQuota>("q").ok_or("quota q missing")?;
    let hard = q
        .status
        .as_ref()
        .and_then(|s| s.hard.as_ref())
        .and_then(|u| u.get("pods"))
        .map(|q| q.0.clone());
    ensure(hard.as_deref() == Some(want), || {
        format!("q hard pods={hard:?}")
    })
}

// ---------------------------------------------------------------------------------
// horizontal-pod-autoscaler

/// The HPA's bounds as the workload last set them (min, max).
#[derive(Default)]
struct Bounds(Mutex<(i32, i32)>);

/// A Deployment (no deployment controller: only its scale) outside its HPA's bounds is
/// brought within them, then within new bounds.
fn horizontal_pod_autoscaler_scenario() -> Scenario {
    let options = ControllerManagerOptions {
        hpa: HpaControllerOptions {
            sync_period: Duration::from_millis(250),
            ..Default::default()
        },
        ..Default::default()
    };
    Scenario::new("horizontal-pod-autoscaler")
        .controllers(builtin_with(vec![podautoscaler::descriptor()], options))
        .observe::<Deployment>()
        .observe::<HorizontalPodAutoscaler>()
        .workload(|w: World| {
            async move {
                let deployments = Api::<Deployment>::namespaced(w.client(), w.namespace());
                let hpas = Api::<HorizontalPodAutoscaler>::namespaced(w.client(), w.namespace());
                create(
                    &deployments,
                    json!({"metadata": {"name": "web"}, "spec": {"replicas": 7,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "c", "image": "nginx",
                                "resources": {"requests": {"cpu": "100m"}}}]}}}}),
                )
                .await?;
                *w.state::<Bounds>().0.lock().unwrap_or_else(|e| e.into_inner()) = (1, 3);
                create(
                    &hpas,
                    json!({"metadata": {"name": "web"}, "spec": {
                        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "minReplicas": 1, "maxReplicas": 3,
                        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50}}}]}}),
                )
                .await?;
                w.wait("scaled to 3", |w| scaled(w, 3)).await?;
                *w.state::<Bounds>().0.lock().unwrap_or_else(|e| e.into_inner()) = (5, 6);
                merge(&hpas, "web", json!({"spec": {"minReplicas": 5, "maxReplicas": 6}})).await?;
                w.wait("scaled to 5", |w| scaled(w, 5)).await
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "the controller only scales to the bounds the HPA sets",
            |w| {
                let Some(d) = w.get::<Deployment>("web") else {
                    return Ok(());
                };
                let r = d.spec.replicas.unwrap_or(1);
                ensure([7, 3, 5].contains(&r), || format!("web scaled to {r}"))
            },
        ))
        .converged("the target within bounds, the status saying so", |w| {
            let (min, _) = *w.state::<Bounds>().0.lock().unwrap_or_else(|e| e.into_inner());
            scaled(w, min)
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn horizontal_pod_autoscaler_under_faults() {
    crate::common::logs();
    check(&horizontal_pod_autoscaler_scenario()).await;
}

/// The target has `want` replicas and the HPA's status says so (`currentReplicas`:
/// `desiredReplicas` keeps its old value, as upstream's, when the scale write failed
/// and no metrics are served to compute a new one).
fn scaled(w: &World, want: i32) -> R {
    let d = w.get::<Deployment>("web").ok_or("deployment web missing")?;
    let r = d.spec.replicas;
    ensure(r == Some(want), || format!("web has {r:?} replicas"))?;
    let h = w
        .get::<HorizontalPodAutoscaler>("web")
        .ok_or("hpa web missing")?;
    let current = h.status.as_ref().and_then(|s| s.current_replicas);
    ensure(current == Some(want), || format!("hpa current {current:?}"))
}

// ---------------------------------------------------------------------------------
// regressions: plans the harness found failing, replayed

async fn replay(scenario: Scenario, plan: &str) {
    crate::common::logs();
    let plan = plan.parse().expect("a plan");
    let r = run(&scenario, &plan).await;
    assert!(r.failure.is_none(), "{plan}: {:?}", r.failure);
}

/// The watch event of the patch that gave node a its block was dropped; a was deleted
/// before the relist showed the block, so the deletion (from the relist) came without
/// it and the block leaked: d never got one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ipam_regression_drop_at_1() {
    replay(node_ipam_scenario(), "drop@1").await;
}

/// The watch event of the quota's first status write came late: the pod deletion that
/// followed looked for quotas tracking pods in `status.hard` of the cached quota, which
/// had none yet, so the pod was never given back (until the 5 min resync, upstream's
/// default period, which this replay keeps).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resourcequota_regression_delay_at_1() {
    replay(
        resourcequota_scenario_every(Duration::from_secs(300)),
        "delay@1",
    )
    .await;
}

/// A restart after the first allocation listed the nodes from a lagging server (node a
/// without its block): the block was handed to b as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_ipam_regression_crash_stale_at_1() {
    replay(node_ipam_scenario(), "crash-stale@1").await;
}

/// A VolumeAttachment create refused with 409 Conflict was taken for one that already
/// exists: the volume was never attached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_detach_regression_conflict_at_2() {
    replay(attach_detach_scenario(), "conflict@2").await;
}

/// The status write that marked n1 Unknown timed out after it was applied: the retry
/// read n1 back already Unknown, saw no Ready → not Ready transition, and n1's pod was
/// never marked not Ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_lifecycle_regression_timeout_at_3() {
    replay(node_lifecycle_scenario(), "timeout@3").await;
}
