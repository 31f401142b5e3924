//! The simulator against the embedded API server.

use std::future::Future;
use std::time::{Duration, Instant};

use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use coxswain_sim::{SimConfig, Simulator, MANAGED_LABEL};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

struct Sim {
    env: TestEnv,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Sim {
    async fn stop(self) {
        self.cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.task).await;
        drop(self.env);
    }
}

fn fast() -> SimConfig {
    SimConfig {
        node_lease_renew_interval: Duration::from_secs(1),
        node_lease_duration: Duration::from_secs(4),
        crash_loop_backoff: Duration::from_secs(1),
        crash_loop_max_backoff: Duration::from_secs(4),
        ..SimConfig::default()
    }
}

async fn start(config: SimConfig) -> Sim {
    start_with(config, |_| {}).await
}

/// [`start`], with more runnables added by `extra` (controllers under test).
async fn start_with(config: SimConfig, extra: impl FnOnce(&Manager)) -> Sim {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let env = envtest::start().await.expect("api server");
    let mgr = Manager::with_client(
        env.client.clone(),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    );
    let sim = Simulator::new(config).expect("config");
    sim.add_to(&mgr).expect("runnables");
    // as in `coxswain up`: the node lifecycle controller removes the not-ready taint
    // the API server puts on new nodes once they are Ready
    mgr.add(
        coxswain_controllers::nodelifecycle::node_lifecycle_controller(&mgr, &Default::default()),
    )
    .expect("node lifecycle controller");
    extra(&mgr);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = mgr.start(c).await {
            panic!("manager failed: {e}");
        }
    });
    Sim { env, cancel, task }
}

/// Poll `f` until it returns `Some`, for at most `WAIT`.
async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn pod(name: &str, extra: serde_json::Value) -> Pod {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    });
    merge(&mut v, extra);
    serde_json::from_value(v).expect("pod")
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    match (a, b) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn condition(p: &Pod, t: &str) -> Option<(String, Option<String>, Option<String>)> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == t)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn is_ready(p: &Pod) -> bool {
    condition(p, "Ready").is_some_and(|c| c.0 == "True")
}

async fn get(pods: &Api<Pod>, name: &str) -> Option<Pod> {
    pods.get_opt(name).await.ok().flatten()
}

async fn wait_pod(pods: &Api<Pod>, name: &str, what: &str, ok: impl Fn(&Pod) -> bool) -> Pod {
    eventually(&format!("pod {name}: {what}"), || async {
        get(pods, name).await.filter(|p| ok(p))
    })
    .await
}

async fn events_for(client: &kube::Client, name: &str, reason: &str) -> Vec<Event> {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    events
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
        })
        .collect()
}

fn managed_node(name: &str, labels: serde_json::Value, spec: serde_json::Value) -> Node {
    let mut l = json!({ MANAGED_LABEL: "true", "kubernetes.io/hostname": name });
    merge(&mut l, labels);
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": l},
        "spec": spec,
    }))
    .expect("node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_become_ready_and_renew_their_leases() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    // a real (unmanaged) node must be left alone
    let nodes: Api<Node> = Api::all(client.clone());
    let real: Node =
        serde_json::from_value(json!({"metadata": {"name": "real-node"}})).expect("node");
    nodes
        .create(&PostParams::default(), &real)
        .await
        .expect("real node");

    let ready = eventually("3 ready simulated nodes", || async {
        let list = nodes
            .list(&ListParams::default().labels(&format!("{MANAGED_LABEL}=true")))
            .await
            .ok()?;
        let ready: Vec<Node> = list
            .items
            .into_iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .collect();
        (ready.len() == 3).then_some(ready)
    })
    .await;
    let zones: std::collections::BTreeSet<String> = ready
        .iter()
        .filter_map(|n| {
            n.metadata
                .labels
                .as_ref()?
                .get("topology.kubernetes.io/zone")
                .cloned()
        })
        .collect();
    assert_eq!(zones.len(), 3, "nodes spread over three zones");
    for (i, n) in ready.iter().enumerate() {
        let name = n.metadata.name.clone().unwrap_or_default();
        let labels = n.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("kubernetes.io/hostname"), Some(&name));
        assert_eq!(
            labels.get("kubernetes.io/os").map(String::as_str),
            Some("linux")
        );
        assert_eq!(
            labels.get("kubernetes.io/arch").map(String::as_str),
            Some("amd64")
        );
        assert!(labels.contains_key("node.kubernetes.io/instance-type"));
        let status = n.status.clone().unwrap_or_default();
        let conds = status.conditions.unwrap_or_default();
        for t in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
            let c = conds.iter().find(|c| c.type_ == t).expect("condition");
            assert_eq!(c.status, "False", "{t}");
            assert!(c.last_heartbeat_time.is_some() && c.last_transition_time.is_some());
        }
        let addrs = status.addresses.unwrap_or_default();
        assert!(addrs.iter().any(|a| a.type_ == "InternalIP"));
        assert!(addrs
            .iter()
            .any(|a| a.type_ == "Hostname" && a.address == name));
        let info = status.node_info.expect("nodeInfo");
        assert_eq!(info.kubelet_version, "v1.36.0-coxswain");
        assert!(!info.container_runtime_version.is_empty());
        let cap = status.capacity.unwrap_or_default();
        assert_eq!(cap.get("cpu").map(|q| q.0.as_str()), Some("32"));
        assert_eq!(cap.get("pods").map(|q| q.0.as_str()), Some("110"));
        assert!(status.allocatable.is_some_and(|a| a.contains_key("memory")));
        assert_eq!(
            status
                .daemon_endpoints
                .and_then(|d| d.kubelet_endpoint)
                .map(|e| e.port),
            Some(10250)
        );
        let cidr = n
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.clone())
            .expect("pod CIDR");
        assert!(
            cidr.starts_with("10.244.") && cidr.ends_with(".0/24"),
            "{cidr} ({i})"
        );
    }

    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let first = eventually("lease of sim-node-0", || async {
        leases.get_opt("sim-node-0").await.ok().flatten()
    })
    .await;
    let spec = first.spec.clone().expect("lease spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("sim-node-0"));
    assert_eq!(spec.lease_duration_seconds, Some(4));
    let t0 = spec.renew_time.expect("renewTime").0;
    eventually("the lease to be renewed", || async {
        let l = leases.get_opt("sim-node-0").await.ok().flatten()?;
        let t = l.spec?.renew_time?.0;
        (t > t0).then_some(())
    })
    .await;
    for n in ["sim-node-1", "sim-node-2"] {
        assert!(
            leases.get_opt(n).await.ok().flatten().is_some(),
            "lease {n}"
        );
    }
    // the real node got neither status nor lease
    tokio::time::sleep(Duration::from_secs(2)).await;
    let real = nodes.get("real-node").await.expect("real node");
    assert!(real
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|c| c.is_empty()));
    assert!(leases.get_opt("real-node").await.ok().flatten().is_none());
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_are_spread_and_run_with_addresses_from_their_node() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let big = json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}]}});
    // the spread is a statement about 3 schedulable nodes: wait until all three are
    // registered, Ready and rid of the API server's not-ready taint, as a user who
    // checks `kubectl get nodes` first (else the first pods may all go to the first one)
    eventually("3 Ready nodes without taints", || async {
        let list = nodes.list(&ListParams::default()).await.ok()?;
        let schedulable = list
            .items
            .iter()
            .filter(|n| {
                let ready = n
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                let untainted = n
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_none_or(|t| t.is_empty());
                ready && untainted
            })
            .count();
        (schedulable == 3).then_some(())
    })
    .await;
    for i in 0..3 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("web-{i}"), big.clone()),
        )
        .await
        .expect("create");
    }
    let mut seen_nodes = std::collections::BTreeSet::new();
    for i in 0..3 {
        let name = format!("web-{i}");
        let p = wait_pod(&pods, &name, "Running and Ready", |p| {
            phase(p) == "Running" && is_ready(p)
        })
        .await;
        let node_name = p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .expect("bound");
        assert_eq!(
            condition(&p, "PodScheduled").map(|c| c.0),
            Some("True".into())
        );
        for c in [
            "Initialized",
            "ContainersReady",
            "PodReadyToStartContainers",
        ] {
            assert_eq!(condition(&p, c).map(|c| c.0), Some("True".into()), "{c}");
        }
        let node = nodes.get(&node_name).await.expect("node");
        let cidr = node
            .spec
            .as_ref()
            .and_then(|s| s.pod_cidr.clone())
            .expect("cidr");
        let status = p.status.clone().expect("status");
        let ip = status.pod_ip.clone().expect("pod IP");
        let prefix = cidr.trim_end_matches("0/24");
        assert!(ip.starts_with(prefix), "{ip} in {cidr}");
        assert_eq!(status.pod_ips.map(|v| v.len()), Some(1));
        let internal = node
            .status
            .as_ref()
            .and_then(|s| s.addresses.as_ref())
            .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
            .map(|a| a.address.clone());
        assert_eq!(status.host_ip, internal);
        assert!(status.start_time.is_some());
        assert_eq!(status.qos_class.as_deref(), Some("Burstable"));
        let cs = &status.container_statuses.expect("container statuses")[0];
        assert_eq!(
            (
                cs.name.as_str(),
                cs.image.as_str(),
                cs.ready,
                cs.started,
                cs.restart_count
            ),
            ("app", "nginx:1.27", true, Some(true), 0)
        );
        assert!(!cs.image_id.is_empty());
        assert!(cs
            .state
            .as_ref()
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .is_some());
        seen_nodes.insert(node_name);
    }
    assert_eq!(
        seen_nodes.len(),
        3,
        "least-allocated spreads 4-cpu pods over the 3 empty nodes"
    );
    // events are recorded asynchronously: wait for the scheduler's
    eventually("the Scheduled event", || async {
        events_for(&client, "web-0", "Scheduled")
            .await
            .into_iter()
            .find(|e| {
                e.note.as_deref().is_some_and(|n| {
                    n.starts_with("Successfully assigned default/web-0 to sim-node-")
                })
            })
    })
    .await;
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_pods_wait_for_a_matching_node() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    pods.create(
        &PostParams::default(),
        &pod(
            "wants-ssd",
            json!({"spec": {"nodeSelector": {"disk": "ssd"}}}),
        ),
    )
    .await
    .expect("create");
    let want = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
    let p = wait_pod(&pods, "wants-ssd", "Unschedulable", |p| {
        condition(p, "PodScheduled").is_some_and(|c| c.0 == "False" && c.2.as_deref() == Some(want))
    })
    .await;
    assert_eq!(
        condition(&p, "PodScheduled").and_then(|c| c.1),
        Some("Unschedulable".into())
    );
    assert!(p
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_none());
    eventually("a FailedScheduling event", || async {
        let ev = events_for(&client, "wants-ssd", "FailedScheduling").await;
        ev.into_iter()
            .find(|e| e.note.as_deref() == Some(want) && e.type_.as_deref() == Some("Warning"))
    })
    .await;

    // a matching simulated node appears: the pod lands there and runs
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .create(
            &PostParams::default(),
            &managed_node("ssd-node", json!({"disk": "ssd"}), json!({})),
        )
        .await
        .expect("node");
    let p = wait_pod(&pods, "wants-ssd", "running on ssd-node", |p| {
        phase(p) == "Running" && is_ready(p)
    })
    .await;
    assert_eq!(
        p.spec.and_then(|s| s.node_name).as_deref(),
        Some("ssd-node")
    );
    let node = nodes.get("ssd-node").await.expect("node");
    let cidr = node
        .spec
        .and_then(|s| s.pod_cidr)
        .expect("the simulator gave the node a CIDR");
    let ip = p.status.and_then(|s| s.pod_ip).expect("ip");
    assert!(
        ip.starts_with(cidr.trim_end_matches("0/24")),
        "{ip} in {cidr}"
    );
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_that_do_not_fit_stay_pending() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let huge = json!({"spec": {"containers": [{"name": "app", "image": "nginx",
        "resources": {"requests": {"cpu": "64"}}}]}});
    pods.create(&PostParams::default(), &pod("huge", huge))
        .await
        .expect("create");
    // and pods that fill the nodes: 3 x 30 cpu, then one more of 4 cannot fit
    let thirty = json!({"spec": {"containers": [{"name": "app", "image": "nginx",
        "resources": {"requests": {"cpu": "30"}}}]}});
    for i in 0..3 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("fill-{i}"), thirty.clone()),
        )
        .await
        .expect("create");
    }
    for i in 0..3 {
        wait_pod(&pods, &format!("fill-{i}"), "running", |p| {
            phase(p) == "Running"
        })
        .await;
    }
    let four = json!({"spec": {"containers": [{"name": "app", "image": "nginx",
        "resources": {"requests": {"cpu": "4"}}}]}});
    pods.create(&PostParams::default(), &pod("one-more", four))
        .await
        .expect("create");
    let want = "0/3 nodes are available: 3 Insufficient cpu.";
    for name in ["huge", "one-more"] {
        wait_pod(&pods, name, "Insufficient cpu", |p| {
            condition(p, "PodScheduled").is_some_and(|c| {
                c.0 == "False"
                    && c.1.as_deref() == Some("Unschedulable")
                    && c.2.as_deref() == Some(want)
            })
        })
        .await;
    }
    // room appears when a filler goes
    pods.delete("fill-1", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
    wait_pod(&pods, "one-more", "scheduled after room was made", |p| {
        phase(p) == "Running"
    })
    .await;
    let huge = get(&pods, "huge").await.expect("huge");
    assert_eq!(phase(&huge), "Pending");
    assert!(huge.spec.and_then(|s| s.node_name).is_none());
    sim.stop().await;
}

fn job_owner() -> serde_json::Value {
    json!({"metadata": {"ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "batch",
        "uid": "00000000-0000-0000-0000-000000000001", "controller": true}]},
        "spec": {"restartPolicy": "Never"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behaviours_complete_crash_fail_and_delay_readiness() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    pods.create(&pp, &pod("job-pod", job_owner()))
        .await
        .expect("create");
    pods.create(
        &pp,
        &pod(
            "crasher",
            json!({"metadata": {"annotations": {"sim.coxswain.dev/crash-loop": "true"}}}),
        ),
    )
    .await
    .expect("create");
    pods.create(&pp, &pod("failer", json!({"metadata": {"annotations": {"sim.coxswain.dev/fail": "3"}}, "spec": {"restartPolicy": "Never"}}))).await.expect("create");
    pods.create(
        &pp,
        &pod(
            "slow",
            json!({"metadata": {"annotations": {"sim.coxswain.dev/ready-after": "3s"}}}),
        ),
    )
    .await
    .expect("create");
    pods.create(
        &pp,
        &pod(
            "odd",
            json!({"metadata": {"annotations": {"sim.coxswain.dev/ready-after": "soon"}}}),
        ),
    )
    .await
    .expect("create");

    let done = wait_pod(&pods, "job-pod", "Succeeded", |p| phase(p) == "Succeeded").await;
    let cs = &done
        .status
        .clone()
        .and_then(|s| s.container_statuses)
        .expect("statuses")[0];
    let term = cs
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!(
        (term.exit_code, term.reason.as_deref(), cs.ready),
        (0, Some("Completed"), false)
    );
    assert_eq!(
        condition(&done, "Ready").map(|c| (c.0, c.1)),
        Some(("False".into(), Some("PodCompleted".into())))
    );

    let failed = wait_pod(&pods, "failer", "Failed", |p| phase(p) == "Failed").await;
    let cs = &failed
        .status
        .and_then(|s| s.container_statuses)
        .expect("statuses")[0];
    let term = cs
        .state
        .as_ref()
        .and_then(|s| s.terminated.clone())
        .expect("terminated");
    assert_eq!((term.exit_code, term.reason.as_deref()), (3, Some("Error")));

    let restarts = |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .map_or(0, |c| c[0].restart_count)
    };
    let looping = wait_pod(&pods, "crasher", "crash looping", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| {
                c[0].state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some("CrashLoopBackOff")
            })
    })
    .await;
    let last = looping
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c[0].last_state.clone())
        .and_then(|s| s.terminated)
        .expect("lastState");
    assert_eq!((last.exit_code, last.reason.as_deref()), (1, Some("Error")));
    assert_eq!(phase(&looping), "Running");
    let first = restarts(&looping);
    wait_pod(&pods, "crasher", "more restarts", |p| {
        restarts(p) >= first + 2
    })
    .await;
    eventually("a BackOff event", || async {
        events_for(&client, "crasher", "BackOff")
            .await
            .into_iter()
            .next()
    })
    .await;

    let slow = wait_pod(&pods, "slow", "Ready", is_ready).await;
    let status = slow.status.expect("status");
    let started = status
        .container_statuses
        .as_ref()
        .and_then(|c| c[0].state.as_ref()?.running.as_ref()?.started_at.clone())
        .expect("startedAt")
        .0;
    let ready_at = status
        .conditions
        .as_ref()
        .and_then(|c| {
            c.iter()
                .find(|c| c.type_ == "Ready")?
                .last_transition_time
                .clone()
        })
        .expect("ready time")
        .0;
    let delay = ready_at.as_second() - started.as_second();
    assert!(delay >= 3, "ready {delay}s after start");

    // a bad annotation value is reported and ignored
    wait_pod(&pods, "odd", "Ready", is_ready).await;
    let ev = eventually("an InvalidSimulatorAnnotation event", || async {
        events_for(&client, "odd", "InvalidSimulatorAnnotation")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert!(ev.note.is_some_and(|n| n.contains("ready-after")));
    sim.stop().await;
}

/// Start watching pod `name` (before deleting it), from its current version.
async fn watch_pod(
    pods: &Api<Pod>,
    name: &str,
) -> impl futures::Stream<Item = Result<WatchEvent<Pod>, kube::Error>> {
    let rv = get(pods, name)
        .await
        .and_then(|p| p.metadata.resource_version)
        .expect("pod version");
    let wp = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(60);
    pods.watch(&wp, &rv).await.expect("watch").boxed()
}

/// The pod as it was when it went away (the DELETED event's object).
async fn until_deleted(
    name: &str,
    events: impl futures::Stream<Item = Result<WatchEvent<Pod>, kube::Error>>,
) -> Pod {
    let mut events = std::pin::pin!(events);
    while let Some(ev) = events.try_next().await.expect("watch event") {
        if let WatchEvent::Deleted(p) = ev {
            return p;
        }
    }
    panic!("pod {name} not deleted within the watch");
}

fn terminated(p: &Pod) -> (i32, String, Time, Time) {
    let t = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c[0].state.as_ref())
        .and_then(|s| s.terminated.clone())
        .unwrap_or_else(|| panic!("not terminated: {:?}", p.status));
    (
        t.exit_code,
        t.reason.unwrap_or_default(),
        t.finished_at.expect("finishedAt"),
        p.metadata
            .deletion_timestamp
            .clone()
            .expect("deletionTimestamp"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pods_stop_on_sigterm_unless_they_ignore_it() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pp = PostParams::default();
    let ignoring =
        json!({"metadata": {"annotations": {"sim.coxswain.dev/ignore-sigterm": "true"}}});
    for (name, extra) in [
        ("prompt", json!({})),
        ("stubborn", ignoring),
        (
            "stuck",
            json!({"metadata": {"annotations": {"sim.coxswain.dev/start-after": "1h"}}}),
        ),
    ] {
        pods.create(&pp, &pod(name, extra)).await.expect("create");
    }
    for name in ["prompt", "stubborn"] {
        wait_pod(&pods, name, "Running", |p| phase(p) == "Running").await;
    }
    let stuck = wait_pod(&pods, "stuck", "bound and Pending", |p| {
        p.status.as_ref().is_some_and(|s| s.start_time.is_some()) && phase(p) == "Pending"
    })
    .await;
    let waiting = stuck
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c[0].state.clone())
        .and_then(|s| s.waiting)
        .and_then(|w| w.reason);
    assert_eq!(waiting.as_deref(), Some("ContainerCreating"));

    // a process that exits on SIGTERM ends long before its 30 s grace period
    let events = watch_pod(&pods, "prompt").await;
    pods.delete("prompt", &DeleteParams::default().grace_period(30))
        .await
        .expect("delete");
    let gone = until_deleted("prompt", events).await;
    assert_eq!(phase(&gone), "Succeeded");
    let (code, reason, finished, grace_end) = terminated(&gone);
    assert_eq!((code, reason.as_str()), (0, "Completed"));
    assert!(
        finished.0 < grace_end.0,
        "stopped at {finished:?}, grace period until {grace_end:?}"
    );

    // one that ignores it is Terminating until the grace period ends, then killed
    let events = watch_pod(&pods, "stubborn").await;
    pods.delete("stubborn", &DeleteParams::default().grace_period(2))
        .await
        .expect("delete");
    let terminating = get(&pods, "stubborn")
        .await
        .expect("still there during its grace period");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert_eq!(phase(&terminating), "Running");
    let gone = until_deleted("stubborn", events).await;
    assert_eq!(phase(&gone), "Failed");
    let (code, reason, finished, grace_end) = terminated(&gone);
    assert_eq!((code, reason.as_str()), (137, "Error"));
    assert!(
        finished.0 >= grace_end.0,
        "killed at {finished:?}, grace period until {grace_end:?}"
    );

    // a pod that never ran goes at once
    let events = watch_pod(&pods, "stuck").await;
    let asked = Instant::now();
    pods.delete("stuck", &DeleteParams::default().grace_period(30))
        .await
        .expect("delete");
    let gone = until_deleted("stuck", events).await;
    assert_eq!(phase(&gone), "Pending");
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "a pod that never ran goes at once ({:?})",
        asked.elapsed()
    );
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taints_repel_pods_without_tolerations() {
    let sim = start(fast()).await;
    let client = sim.env.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .create(
            &PostParams::default(),
            &managed_node(
                "gpu-node",
                json!({"accel": "gpu"}),
                json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}),
            ),
        )
        .await
        .expect("node");
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let sel = json!({"spec": {"nodeSelector": {"accel": "gpu"}}});
    pods.create(&PostParams::default(), &pod("intolerant", sel.clone()))
        .await
        .expect("create");
    let mut tolerant = sel.clone();
    merge(
        &mut tolerant,
        json!({"spec": {"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}}),
    );
    pods.create(&PostParams::default(), &pod("tolerant", tolerant))
        .await
        .expect("create");
    let any = json!({"spec": {"tolerations": [{"operator": "Exists"}], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node"]}]}]}}}}});
    pods.create(&PostParams::default(), &pod("tolerates-all", any))
        .await
        .expect("create");

    let want = "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 3 node(s) didn't match Pod's node affinity/selector.";
    wait_pod(
        &pods,
        "intolerant",
        "Unschedulable because of the taint",
        |p| {
            condition(p, "PodScheduled")
                .is_some_and(|c| c.0 == "False" && c.2.as_deref() == Some(want))
        },
    )
    .await;
    for name in ["tolerant", "tolerates-all"] {
        let p = wait_pod(&pods, name, "running on gpu-node", |p| {
            phase(p) == "Running"
        })
        .await;
        assert_eq!(
            p.spec.and_then(|s| s.node_name).as_deref(),
            Some("gpu-node")
        );
    }
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_run_stops_on_cancel() {
    let env = envtest::start().await.expect("api server");
    let cancel = CancellationToken::new();
    let task = tokio::spawn(coxswain_sim::run(
        env.client.clone(),
        SimConfig { nodes: 1, ..fast() },
        cancel.clone(),
    ));
    let nodes: Api<Node> = Api::all(env.client.clone());
    eventually("the node", || async {
        nodes.get_opt("sim-node-0").await.ok().flatten()
    })
    .await;
    cancel.cancel();
    let out = tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .expect("stops")
        .expect("joins");
    assert!(out.is_ok(), "{out:?}");
    let bad = coxswain_sim::run(
        env.client.clone(),
        SimConfig {
            nodes: 1,
            node_name_prefix: "UPPER".into(),
            ..fast()
        },
        CancellationToken::new(),
    )
    .await;
    assert!(matches!(bad, Err(coxswain_sim::Error::Config(_))));
}

fn lb_service(name: &str) -> k8s_openapi::api::core::v1::Service {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"type": "LoadBalancer", "selector": {"app": name},
                 "ports": [{"port": 80, "protocol": "TCP"}]},
    }))
    .expect("service")
}

fn lb_ip(s: &k8s_openapi::api::core::v1::Service) -> Option<String> {
    s.status
        .as_ref()?
        .load_balancer
        .as_ref()?
        .ingress
        .as_ref()?
        .first()?
        .ip
        .clone()
}

#[tokio::test]
async fn load_balancer_services_get_addresses_from_the_pool_until_it_runs_out() {
    use k8s_openapi::api::core::v1::Service;
    use kube::api::{Patch, PatchParams};
    let sim = start(SimConfig {
        nodes: 1,
        load_balancer_ip_range: "10.200.0.0/30".into(),
        ..fast()
    })
    .await;
    let svcs: Api<Service> = Api::namespaced(sim.env.client.clone(), "default");
    for name in ["a", "b"] {
        svcs.create(&PostParams::default(), &lb_service(name))
            .await
            .expect("create");
    }
    let mut got = Vec::new();
    for name in ["a", "b"] {
        let s = eventually(&format!("{name} gets an address"), || async {
            svcs.get_opt(name)
                .await
                .ok()
                .flatten()
                .filter(|s| lb_ip(s).is_some())
        })
        .await;
        assert!(s
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "service.kubernetes.io/load-balancer-cleanup"));
        let ingress = &s
            .status
            .as_ref()
            .unwrap()
            .load_balancer
            .as_ref()
            .unwrap()
            .ingress;
        assert_eq!(ingress.as_ref().unwrap()[0].ip_mode.as_deref(), Some("VIP"));
        got.push(lb_ip(&s).unwrap());
    }
    got.sort();
    assert_eq!(got, ["10.200.0.1", "10.200.0.2"]);
    eventually("EnsuredLoadBalancer", || async {
        (!events_for(&sim.env.client, "a", "EnsuredLoadBalancer")
            .await
            .is_empty())
        .then_some(())
    })
    .await;

    // the pool is exhausted: no address, a warning, retries
    svcs.create(&PostParams::default(), &lb_service("c"))
        .await
        .expect("create c");
    let failed = eventually("SyncLoadBalancerFailed", || async {
        events_for(&sim.env.client, "c", "SyncLoadBalancerFailed")
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        failed.note.as_deref(),
        Some("Error syncing load balancer: failed to ensure load balancer: no available IP addresses in load balancer pool 10.200.0.0/30")
    );
    assert_eq!(failed.type_.as_deref(), Some("Warning"));
    assert_eq!(lb_ip(&svcs.get("c").await.expect("c")), None);

    // a stops being a load balancer: its address is released, its status and finalizer go
    let a_ip = lb_ip(&svcs.get("a").await.expect("a")).expect("a's address");
    svcs.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"type": "ClusterIP"}})),
    )
    .await
    .expect("type change");
    eventually("a cleaned up", || async {
        let s = svcs.get_opt("a").await.ok().flatten()?;
        (lb_ip(&s).is_none() && s.metadata.finalizers.as_ref().is_none_or(|f| f.is_empty()))
            .then_some(())
    })
    .await;
    // the event is recorded asynchronously, after the finalizer's removal
    eventually("DeletedLoadBalancer", || async {
        events_for(&sim.env.client, "a", "DeletedLoadBalancer")
            .await
            .into_iter()
            .next()
    })
    .await;
    // ... and c gets it on a retry
    let c = eventually("c gets the released address", || async {
        svcs.get_opt("c")
            .await
            .ok()
            .flatten()
            .and_then(|s| lb_ip(&s))
    })
    .await;
    assert_eq!(c, a_ip);

    // deleting a load balancer Service completes once its finalizer is removed
    svcs.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    eventually("b deleted", || async {
        svcs.get_opt("b")
            .await
            .ok()
            .map(|s| s.is_none())
            .filter(|gone| *gone)
    })
    .await;
    sim.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_ipam_controller_pods_wait_for_the_node_allocation() {
    let sim = start(SimConfig {
        nodes: 1,
        wait_for_pod_cidr: true,
        ..fast()
    })
    .await;
    let client = sim.env.client.clone();
    let nodes: Api<Node> = Api::all(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let node = eventually("the node", || async {
        nodes.get_opt("sim-node-0").await.expect("get")
    })
    .await;
    assert!(
        node.spec
            .as_ref()
            .and_then(|s| s.pod_cidr.as_ref())
            .is_none(),
        "the simulator left the pod CIDR to the IPAM controller"
    );
    pods.create(&PostParams::default(), &pod("waits", json!({})))
        .await
        .expect("create");
    // bound, but no address without the node's allocation
    let p = wait_pod(&pods, "waits", "bound", |p| {
        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("sim-node-0")
    })
    .await;
    assert_eq!(phase(&p), "Pending");
    assert!(p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_none());
    assert!(nodes
        .get("sim-node-0")
        .await
        .expect("node")
        .spec
        .and_then(|s| s.pod_cidr)
        .is_none());
    // the IPAM controller's allocation arrives: the pod gets an address from it
    nodes
        .patch(
            "sim-node-0",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"spec": {"podCIDR": "10.99.7.0/24", "podCIDRs": ["10.99.7.0/24"]}}),
            ),
        )
        .await
        .expect("allocation");
    let p = wait_pod(&pods, "waits", "running", |p| phase(p) == "Running").await;
    let ip = p.status.and_then(|s| s.pod_ip).expect("ip");
    assert!(ip.starts_with("10.99.7."), "{ip}");
    sim.stop().await;
}

#[path = "sim/storage.rs"]
mod storage;
