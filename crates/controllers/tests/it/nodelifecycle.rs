//! The node lifecycle controller against the embedded API server (no kubelet: the
//! tests write node status, Leases and pods themselves), with a 3 s grace period and a
//! 100 ms monitor period.

use std::time::Duration;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::nodelifecycle::{self, NodeLifecycleControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "nodelifecycle";

async fn start() -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        node_lifecycle: NodeLifecycleControllerOptions {
            node_monitor_period: Duration::from_millis(100),
            node_monitor_grace_period: Duration::from_secs(3),
            node_startup_grace_period: Duration::from_secs(3),
            node_eviction_rate: 100.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = Harness::start_with(&[nodelifecycle::descriptor()], options).await;
    h.namespace(NS).await;
    h
}

fn taint_keys(n: &Node) -> Vec<(String, String)> {
    n.spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key, t.effect))
        .collect()
}

fn ready_of(n: &Node) -> Option<String> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

async fn post_ready(nodes: &Api<Node>, name: &str) {
    let now = Timestamp::now().to_string();
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastHeartbeatTime": now, "lastTransitionTime": now,
            }]}})),
        )
        .await
        .expect("status");
}

/// Keep `name`'s Lease renewed every 300 ms (a live kubelet) until the task is dropped.
fn keep_alive(client: kube::Client, name: &'static str) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
        loop {
            let lease = json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                         "renewTime": Timestamp::now().strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()},
            });
            let _ = leases
                .patch(
                    name,
                    &PatchParams::apply("kubelet").force(),
                    &Patch::Apply(lease),
                )
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    })
}

#[tokio::test]
async fn a_node_that_stops_posting_goes_unknown_tainted_and_back() {
    let h = start().await;
    let nodes: Api<Node> = Api::all(h.client());
    let pods: Api<Pod> = Api::namespaced(h.client(), NS);
    // a healthy node, so the cluster is not fully disrupted when n1 stops (then
    // upstream stops tainting altogether)
    let healthy: Node = serde_json::from_value(json!({"metadata": {"name": "n2"}})).unwrap();
    nodes
        .create(&PostParams::default(), &healthy)
        .await
        .unwrap();
    post_ready(&nodes, "n2").await;
    let alive = keep_alive(h.client(), "n2");
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    let created = nodes.create(&PostParams::default(), &node).await.unwrap();
    // the API server's TaintNodesByCondition
    assert_eq!(
        taint_keys(&created),
        [(
            "node.kubernetes.io/not-ready".to_string(),
            "NoSchedule".to_string()
        )]
    );
    post_ready(&nodes, "n1").await;
    // Ready: the not-ready taint goes
    wait_for("the not-ready taint removed", || async {
        let n = nodes.get("n1").await.ok()?;
        taint_keys(&n).is_empty().then_some(())
    })
    .await;
    // a running pod on it
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let now = Timestamp::now().to_string();
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": now}]}})),
    )
    .await
    .unwrap();
    // no heartbeat for the grace period: Unknown, tainted unreachable, pod not Ready
    let n = wait_for("the node Unknown", || async {
        let n = nodes.get("n1").await.ok()?;
        (ready_of(&n).as_deref() == Some("Unknown")).then_some(n)
    })
    .await;
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready").cloned())
        .unwrap();
    assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
    wait_for("the unreachable taints", || async {
        let n = nodes.get("n1").await.ok()?;
        let keys = taint_keys(&n);
        let has =
            |e: &str| keys.contains(&("node.kubernetes.io/unreachable".to_string(), e.to_string()));
        (has("NoExecute") && has("NoSchedule")).then_some(())
    })
    .await;
    wait_for("the pod marked not Ready", || async {
        let p = pods.get("p").await.ok()?;
        let c = p.status?.conditions?;
        c.iter()
            .any(|c| c.type_ == "Ready" && c.status == "False")
            .then_some(())
    })
    .await;
    // it posts again: Ready, untainted
    post_ready(&nodes, "n1").await;
    wait_for("the node untainted", || async {
        let n = nodes.get("n1").await.ok()?;
        (ready_of(&n).as_deref() == Some("True") && taint_keys(&n).is_empty()).then_some(())
    })
    .await;
    alive.abort();
    h.stop().await;
}
