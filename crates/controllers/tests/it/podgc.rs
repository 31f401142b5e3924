//! The pod garbage collector against the embedded API server (no kubelet, no
//! scheduler: the tests set pod phases and nodes themselves). It runs every 200 ms and
//! quarantines missing nodes for 1 s here (upstream's 20 s and 40 s are constants).

use std::time::Duration;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::podgc::{self, PodGcControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

const NS: &str = "podgc";
const HOLD: &str = "test.coxswain.dev/hold";

async fn start() -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        podgc: PodGcControllerOptions {
            terminated_pod_gc_threshold: 2,
            gc_check_period: Duration::from_millis(200),
            quarantine_time: Duration::from_secs(1),
        },
        ..Default::default()
    };
    let h = Harness::start_with(&[podgc::descriptor()], options).await;
    h.namespace(NS).await;
    h
}

async fn create_pod(pods: &Api<Pod>, name: &str, node: Option<&str>, finalizer: bool) {
    let finalizers: Vec<&str> = if finalizer { vec![HOLD] } else { vec![] };
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "finalizers": finalizers},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod created");
}

async fn set_phase(pods: &Api<Pod>, name: &str, phase: &str) {
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": phase}})),
    )
    .await
    .expect("phase set");
}

async fn create_node(c: &kube::Client, name: &str, taints: Value) {
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"taints": taints},
    }))
    .expect("node");
    Api::<Node>::all(c.clone())
        .create(&PostParams::default(), &node)
        .await
        .expect("node created");
}

async fn gone(pods: &Api<Pod>, name: &str) {
    wait_for(&format!("pod {name} deleted"), || async {
        pods.get_opt(name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

#[tokio::test]
async fn terminated_pods_beyond_the_threshold_oldest_first() {
    let h = start().await;
    let pods = Api::<Pod>::namespaced(h.client(), NS);
    for name in ["a", "b", "c", "d"] {
        create_pod(&pods, name, None, false).await;
    }
    create_pod(&pods, "running", None, false).await;
    set_phase(&pods, "running", "Running").await;
    for (name, phase) in [
        ("a", "Succeeded"),
        ("b", "Failed"),
        ("c", "Succeeded"),
        ("d", "Failed"),
    ] {
        set_phase(&pods, name, phase).await;
    }
    gone(&pods, "a").await;
    gone(&pods, "b").await;
    for name in ["c", "d", "running"] {
        pods.get(name).await.expect("kept");
    }
    h.stop().await;
}

#[tokio::test]
async fn pods_of_a_missing_node_are_failed_then_deleted() {
    let h = start().await;
    let c = h.client();
    let pods = Api::<Pod>::namespaced(c.clone(), NS);
    create_node(&c, "real", json!([])).await;
    // held by a finalizer so that the status the collector gave it can be read
    create_pod(&pods, "orphan", Some("ghost"), true).await;
    create_pod(&pods, "fine", Some("real"), false).await;
    set_phase(&pods, "orphan", "Running").await;
    set_phase(&pods, "fine", "Running").await;
    let pod = wait_for("the orphan deleted", || async {
        let p = pods.get("orphan").await.expect("orphan");
        p.metadata.deletion_timestamp.is_some().then_some(p)
    })
    .await;
    assert_eq!(phase(&pod), "Failed");
    let status = pod.status.expect("status");
    let condition = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .expect("DisruptionTarget");
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason.as_deref(), Some("DeletionByPodGC"));
    assert_eq!(
        condition.message.as_deref(),
        Some("PodGC: node no longer exists")
    );
    let fine = pods.get("fine").await.expect("fine");
    assert!(fine.metadata.deletion_timestamp.is_none());
    assert_eq!(phase(&fine), "Running");
    h.stop().await;
}

#[tokio::test]
async fn terminating_pods_unscheduled_or_on_out_of_service_nodes() {
    let h = start().await;
    let c = h.client();
    let pods = Api::<Pod>::namespaced(c.clone(), NS);
    let oos = json!([{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]);
    create_node(&c, "oos", oos).await;
    create_node(&c, "down", json!([])).await;
    create_pod(&pods, "stuck", Some("oos"), false).await;
    create_pod(&pods, "waiting", Some("down"), false).await;
    create_pod(&pods, "unscheduled", None, true).await;
    let long = DeleteParams {
        grace_period_seconds: Some(3600),
        ..DeleteParams::default()
    };
    for name in ["stuck", "waiting", "unscheduled"] {
        pods.delete(name, &long).await.expect("deleted");
    }
    // the out-of-service node's pod goes at once, not after its grace period
    gone(&pods, "stuck").await;
    // the never-scheduled one is failed (and deleted: its finalizer holds it here)
    wait_for("the unscheduled pod failed", || async {
        let p = pods.get("unscheduled").await.expect("pod");
        (phase(&p) == "Failed").then_some(())
    })
    .await;
    // a not-Ready node without the taint: its kubelet may still come back
    let p = pods.get("waiting").await.expect("still terminating");
    assert_ne!(phase(&p), "Failed");
    h.stop().await;
}
