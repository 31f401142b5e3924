//! The DaemonSet controller against the embedded API server (envtest), with
//! `fake_kubelet` making pods Running and Ready (it does not bind them: daemon pods are
//! counted on the node their `metadata.name` affinity pins them to, as upstream).
//!
//! Assertions are about outcomes; waits are bounded generously, nothing is timed.

use std::collections::{BTreeMap, BTreeSet};

use coxswain_controllers::daemon::util::get_target_node_name;
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::{wait_for, WAIT};

const NS: &str = "default";

/// A manager running only the DaemonSet controller against `env`.
struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

async fn run_controller(env: &TestEnv) -> Running {
    let options = ManagerOptions {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(env.kube_config().await.expect("config"), options).expect("manager");
    mgr.add(coxswain_controllers::daemon::daemonset_controller(&mgr, 2))
        .expect("controller added");
    // the API server taints new nodes not-ready:NoSchedule; this controller takes the
    // taint off as it follows the nodes' conditions
    mgr.add(
        coxswain_controllers::nodelifecycle::node_lifecycle_controller(&mgr, &Default::default()),
    )
    .expect("node lifecycle controller added");
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = mgr.start(c).await {
            panic!("manager failed: {e}");
        }
    });
    Running { cancel, task }
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        let _ = tokio::time::timeout(WAIT, self.task).await;
    }
}

struct Harness {
    env: TestEnv,
    controller: Option<Running>,
    kubelet: (CancellationToken, JoinHandle<()>),
    binder: JoinHandle<()>,
}

/// A stand-in for the scheduler and the rest of the kubelet: binds each new unbound
/// pod to the node its `metadata.name` affinity names, through `pods/binding`, and
/// removes pods that are being deleted (their containers "stop" at once).
fn binder(client: kube::Client, cancel: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let cache = coxswain_runtime::cache::Cache::new(client.clone(), cancel.clone());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Pod>();
        cache.informer::<Pod>().add_handler(move |change| {
            if let coxswain_runtime::cache::Change::Added(p)
            | coxswain_runtime::cache::Change::Updated { new: p, .. } = change
            {
                let unbound = p.spec.as_ref().is_none_or(|s| s.node_name.is_none());
                if unbound || p.metadata.deletion_timestamp.is_some() {
                    let _ = tx.send((**p).clone());
                }
            }
        });
        loop {
            let pod = tokio::select! {
                _ = cancel.cancelled() => return,
                p = rx.recv() => match p { Some(p) => p, None => return },
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            let api = Api::<Pod>::namespaced(client.clone(), NS);
            if pod.metadata.deletion_timestamp.is_some() {
                let _ = api
                    .delete(
                        &name,
                        &DeleteParams {
                            grace_period_seconds: Some(0),
                            ..Default::default()
                        },
                    )
                    .await;
                continue;
            }
            let Ok(node) = get_target_node_name(&pod) else {
                continue;
            };
            let binding = json!({
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": NS, "uid": pod.metadata.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            });
            let _ = api
                .create_subresource::<_, serde_json::Value>(
                    "binding",
                    &name,
                    &PostParams::default(),
                    &binding,
                )
                .await;
        }
    })
}

impl Harness {
    async fn start() -> Harness {
        let env = envtest::start().await.expect("test server");
        let controller = Some(run_controller(&env).await);
        let c = CancellationToken::new();
        let task = envtest::fake_kubelet(env.client.clone(), None, c.clone());
        let binder = binder(env.client.clone(), c.clone());
        Harness {
            env,
            controller,
            kubelet: (c, task),
            binder,
        }
    }

    fn client(&self) -> kube::Client {
        self.env.client.clone()
    }

    async fn stop(mut self) {
        if let Some(c) = self.controller.take() {
            c.stop().await;
        }
        self.kubelet.0.cancel();
        let _ = (&mut self.kubelet.1).await;
        let _ = (&mut self.binder).await;
    }
}

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
}

async fn add_node(client: &kube::Client, name: &str, labels: &[(&str, &str)]) {
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node(name, labels))
        .await
        .expect("node created");
}

fn daemon_set(name: &str, strategy: serde_json::Value) -> DaemonSet {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}
            },
            "updateStrategy": strategy,
        }
    }))
    .expect("daemon set")
}

/// The live (not terminating) pods of `app`, by target node.
async fn pods_by_node(client: &kube::Client, app: &str) -> BTreeMap<String, Vec<Pod>> {
    let pods = Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("pods");
    let mut map: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    for p in pods.items {
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let node = get_target_node_name(&p).expect("daemon pods are pinned to a node");
        map.entry(node).or_default().push(p);
    }
    map
}

/// Wait until every node of `want` has exactly one pod of `app` and no other node has
/// any.
async fn wait_one_per_node(
    client: &kube::Client,
    app: &str,
    want: &[&str],
) -> BTreeMap<String, Vec<Pod>> {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    wait_for(&format!("one pod of {app} on each of {want:?}"), || async {
        let map = pods_by_node(client, app).await;
        let nodes: BTreeSet<String> = map.keys().cloned().collect();
        (nodes == want && map.values().all(|v| v.len() == 1)).then_some(map)
    })
    .await
}

async fn status(client: &kube::Client, name: &str) -> k8s_openapi::api::apps::v1::DaemonSetStatus {
    Api::<DaemonSet>::namespaced(client.clone(), NS)
        .get_status(name)
        .await
        .expect("daemon set")
        .status
        .unwrap_or_default()
}

fn rolling(max_surge: serde_json::Value, max_unavailable: serde_json::Value) -> serde_json::Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}})
}

/// One pod per node, pinned by affinity and with the daemon tolerations; nodes added
/// later get a pod; a NoSchedule taint keeps the pod (misscheduled), a NoExecute taint
/// evicts it; a node that stops matching the nodeSelector loses its pod.
#[tokio::test]
async fn daemon_set_follows_nodes_and_taints() {
    crate::common::logs();
    let h = Harness::start().await;
    let client = h.client();
    for n in ["n1", "n2"] {
        add_node(&client, n, &[("role", "worker")]).await;
    }
    let dss = Api::<DaemonSet>::namespaced(client.clone(), NS);
    dss.create(
        &PostParams::default(),
        &daemon_set("agent", rolling(json!(0), json!(1))),
    )
    .await
    .expect("created");
    let map = wait_one_per_node(&client, "agent", &["n1", "n2"]).await;
    let pod = &map["n1"][0];
    let affinity = serde_json::to_value(&pod.spec.as_ref().expect("spec").affinity).expect("json");
    assert_eq!(
        affinity,
        json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
        ]}}})
    );
    let spec = pod.spec.as_ref().expect("spec");
    let tolerations: BTreeSet<String> = spec
        .tolerations
        .iter()
        .flatten()
        .filter_map(|t| t.key.clone())
        .collect();
    assert!(tolerations.contains("node.kubernetes.io/not-ready"));
    assert!(tolerations.contains("node.kubernetes.io/unschedulable"));
    let labels = pod.metadata.labels.as_ref().expect("labels");
    assert_eq!(
        labels.get("pod-template-generation").map(String::as_str),
        Some("1")
    );
    assert!(labels.contains_key("controller-revision-hash"));
    wait_for("status of 2 ready", || async {
        let s = status(&client, "agent").await;
        (s.desired_number_scheduled == 2
            && s.current_number_scheduled == 2
            && s.number_ready == 2
            && s.number_available == Some(2)
            && s.updated_number_scheduled == Some(2)
            && s.observed_generation == Some(1))
        .then_some(())
    })
    .await;

    // a node added later
    add_node(&client, "n3", &[("role", "worker")]).await;
    wait_one_per_node(&client, "agent", &["n1", "n2", "n3"]).await;

    // NoSchedule: the pod stays and is misscheduled
    let nodes = Api::<Node>::all(client.clone());
    let taint = |effect: &str| json!({"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": effect}]}});
    nodes
        .patch(
            "n2",
            &PatchParams::default(),
            &Patch::Merge(&taint("NoSchedule")),
        )
        .await
        .expect("tainted");
    wait_for("n2 misscheduled", || async {
        let s = status(&client, "agent").await;
        (s.number_misscheduled == 1 && s.desired_number_scheduled == 2).then_some(())
    })
    .await;
    assert_eq!(
        pods_by_node(&client, "agent").await.get("n2").map(Vec::len),
        Some(1)
    );

    // NoExecute: evicted, not replaced
    nodes
        .patch(
            "n2",
            &PatchParams::default(),
            &Patch::Merge(&taint("NoExecute")),
        )
        .await
        .expect("tainted");
    wait_one_per_node(&client, "agent", &["n1", "n3"]).await;

    // a nodeSelector on role=worker, then n3 relabelled
    let sel = json!({"spec": {"template": {"spec": {"nodeSelector": {"role": "worker"}}}}});
    dss.patch("agent", &PatchParams::default(), &Patch::Merge(&sel))
        .await
        .expect("patched");
    wait_for("pods of the new template", || async {
        let map = pods_by_node(&client, "agent").await;
        let gen2 = map.values().flatten().all(|p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("pod-template-generation"))
                .map(String::as_str)
                == Some("2")
        });
        (gen2 && map.len() == 2 && map.values().all(|v| v.len() == 1)).then_some(())
    })
    .await;
    nodes
        .patch(
            "n3",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"role": "db"}}})),
        )
        .await
        .expect("relabelled");
    wait_one_per_node(&client, "agent", &["n1"]).await;

    // events name the pods
    let events = Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events");
    assert!(events
        .items
        .iter()
        .any(|e| e.reason.as_deref() == Some("SuccessfulCreate")
            && e.reporting_controller.as_deref() == Some("daemonset-controller")));
    assert!(events
        .items
        .iter()
        .any(|e| e.reason.as_deref() == Some("SuccessfulDelete")));
    h.stop().await;
}

/// A failed daemon pod is deleted (FailedDaemonPod) and replaced.
#[tokio::test]
async fn failed_daemon_pod_is_replaced() {
    crate::common::logs();
    let h = Harness::start().await;
    let client = h.client();
    add_node(&client, "n1", &[]).await;
    Api::<DaemonSet>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &daemon_set("fail", json!({"type": "OnDelete"})),
        )
        .await
        .expect("created");
    let map = wait_one_per_node(&client, "fail", &["n1"]).await;
    let first = map["n1"][0].metadata.name.clone().expect("name");
    wait_for("first pod running", || async {
        let p = Api::<Pod>::namespaced(client.clone(), NS)
            .get(&first)
            .await
            .ok()?;
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    Api::<Pod>::namespaced(client.clone(), NS)
        .patch_status(
            &first,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"phase": "Failed"}})),
        )
        .await
        .expect("failed");
    wait_for("a replacement pod", || async {
        let map = pods_by_node(&client, "fail").await;
        let pods = map.get("n1")?;
        (pods.len() == 1 && pods[0].metadata.name.as_deref() != Some(first.as_str())).then_some(())
    })
    .await;
    let events = Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events");
    let note = format!("Found failed daemon pod {NS}/{first} on node n1, will try to kill it");
    assert!(events
        .items
        .iter()
        .any(|e| e.reason.as_deref() == Some("FailedDaemonPod")
            && e.note.as_deref() == Some(note.as_str())));
    h.stop().await;
}

/// A template change with maxSurge 1 replaces every pod; a node never lacks a pod
/// (the new pod starts before the old one goes) and the history holds two
/// revisions, the second of which carries the current hash.
#[tokio::test]
async fn surge_rollout_keeps_a_pod_per_node_and_records_history() {
    crate::common::logs();
    let h = Harness::start().await;
    let client = h.client();
    for n in ["n1", "n2", "n3"] {
        add_node(&client, n, &[]).await;
    }
    let dss = Api::<DaemonSet>::namespaced(client.clone(), NS);
    dss.create(
        &PostParams::default(),
        &daemon_set("web", rolling(json!(1), json!(0))),
    )
    .await
    .expect("created");
    wait_one_per_node(&client, "web", &["n1", "n2", "n3"]).await;
    wait_for("all ready", || async {
        (status(&client, "web").await.number_ready == 3).then_some(())
    })
    .await;
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}});
    dss.patch("web", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .expect("patched");
    let max_per_node = std::sync::atomic::AtomicUsize::new(0);
    wait_for("rolled out", || async {
        let max_per_node = &max_per_node;
        let map = pods_by_node(&client, "web").await;
        for n in ["n1", "n2", "n3"] {
            assert!(
                map.get(n).is_some_and(|v| !v.is_empty()),
                "node {n} lost its pod: {map:?}"
            );
        }
        max_per_node.fetch_max(
            map.values().map(Vec::len).max().unwrap_or(0),
            std::sync::atomic::Ordering::SeqCst,
        );
        let s = status(&client, "web").await;
        let updated = map.values().flatten().all(|p| {
            p.spec.as_ref().map(|s| s.containers[0].image.as_deref()) == Some(Some("busybox:2"))
        });
        (updated
            && map.values().all(|v| v.len() == 1)
            && s.updated_number_scheduled == Some(3)
            && s.number_available == Some(3)
            && s.observed_generation == Some(2))
        .then_some(())
    })
    .await;
    assert!(max_per_node.into_inner() <= 2);
    let revisions = Api::<ControllerRevision>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("revisions");
    let mut numbers: Vec<i64> = revisions.items.iter().filter_map(|r| r.revision).collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2]);
    let ds = dss.get("web").await.expect("ds");
    let current = revisions
        .items
        .iter()
        .find(|r| r.revision == Some(2))
        .expect("revision 2");
    let hash = current
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        .cloned();
    let pods = pods_by_node(&client, "web").await;
    assert!(pods.values().flatten().all(|p| p
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("controller-revision-hash"))
        == hash.as_ref()));
    assert_eq!(
        current
            .metadata
            .owner_references
            .as_ref()
            .and_then(|o| o.first())
            .map(|o| o.uid.clone()),
        ds.metadata.uid
    );

    // undo: the first template comes back under a new revision number
    let first = revisions
        .items
        .iter()
        .find(|r| r.revision == Some(1))
        .expect("revision 1");
    dss.patch(
        "web",
        &PatchParams::default(),
        &Patch::Strategic(&first.data.0),
    )
    .await
    .expect("rolled back");
    wait_for("revision 1 renumbered to 3", || async {
        let revs = Api::<ControllerRevision>::namespaced(client.clone(), NS)
            .list(&ListParams::default().labels("app=web"))
            .await
            .ok()?;
        let mut numbers: Vec<i64> = revs.items.iter().filter_map(|r| r.revision).collect();
        numbers.sort();
        (numbers == [2, 3]).then_some(())
    })
    .await;
    h.stop().await;
}

/// A restarted controller with an empty cache and expectations acts on what the
/// server holds: no duplicate pods for nodes that already have one, a pod for a node
/// added while it was down, the deleted pod replaced.
#[tokio::test]
async fn restart_does_not_duplicate_pods() {
    crate::common::logs();
    let mut h = Harness::start().await;
    let client = h.client();
    for n in ["n1", "n2"] {
        add_node(&client, n, &[]).await;
    }
    Api::<DaemonSet>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &daemon_set("r", rolling(json!(0), json!(1))),
        )
        .await
        .expect("created");
    let before = wait_one_per_node(&client, "r", &["n1", "n2"]).await;
    h.controller.take().expect("running").stop().await;
    add_node(&client, "n3", &[]).await;
    let gone = before["n1"][0].metadata.name.clone().expect("name");
    Api::<Pod>::namespaced(client.clone(), NS)
        .delete(
            &gone,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .expect("deleted");
    h.controller = Some(run_controller(&h.env).await);
    let after = wait_one_per_node(&client, "r", &["n1", "n2", "n3"]).await;
    assert_eq!(after["n2"][0].metadata.name, before["n2"][0].metadata.name);
    assert_ne!(after["n1"][0].metadata.name.as_deref(), Some(gone.as_str()));
    // and it stays that way (the status settles with exactly three)
    wait_for("status of 3", || async {
        let s = status(&client, "r").await;
        (s.current_number_scheduled == 3 && s.number_ready == 3).then_some(())
    })
    .await;
    let settled = pods_by_node(&client, "r").await;
    assert!(settled.values().all(|v| v.len() == 1), "{settled:?}");
    h.stop().await;
}
