//! The taint eviction controller against the embedded API server (no kubelet: a
//! deleted pod bound to a node keeps its deletionTimestamp, and a finalizer keeps the
//! pods readable so that their DisruptionTarget condition can be checked).

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::tainteviction;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

const NS: &str = "taints";
const HOLD: &str = "test.coxswain.dev/hold";

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

async fn taint(c: &kube::Client, node: &str, taints: Value) {
    Api::<Node>::all(c.clone())
        .patch(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"taints": taints}})),
        )
        .await
        .expect("node tainted");
}

async fn create_pod(pods: &Api<Pod>, name: &str, node: &str, tolerations: Value) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "finalizers": [HOLD]},
        "spec": {
            "nodeName": node,
            "tolerations": tolerations,
            "containers": [{"name": "c", "image": "busybox"}],
        },
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod created");
}

async fn deleted(pods: &Api<Pod>, name: &str) -> Pod {
    wait_for(&format!("pod {name} deleted"), || async {
        pods.get_opt(name)
            .await
            .expect("get")
            .filter(|p| p.metadata.deletion_timestamp.is_some())
    })
    .await
}

async fn release(pods: &Api<Pod>, names: &[&str]) {
    for name in names {
        let _ = pods
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"finalizers": null}})),
            )
            .await;
    }
}

async fn notes(c: &kube::Client, pod: &str) -> Vec<String> {
    Api::<Event>::namespaced(c.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(pod))
        .filter(|e| e.reason.as_deref() == Some("TaintManagerEviction"))
        .filter_map(|e| e.note)
        .collect()
}

fn no_execute(key: &str) -> Value {
    json!([{"key": key, "value": "v", "effect": "NoExecute"}])
}

#[tokio::test]
async fn untolerated_pods_go_at_once_tolerating_ones_after_their_seconds() {
    common::logs();
    let h = Harness::start(&[tainteviction::descriptor()]).await;
    h.namespace(NS).await;
    let c = h.client();
    let pods = Api::<Pod>::namespaced(c.clone(), NS);
    create_node(&c, "n1", json!([])).await;
    create_pod(&pods, "plain", "n1", json!([])).await;
    create_pod(
        &pods,
        "brief",
        "n1",
        json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 1}]),
    )
    .await;
    create_pod(
        &pods,
        "forever",
        "n1",
        json!([{"key": "k", "operator": "Exists", "effect": "NoExecute"}]),
    )
    .await;
    create_pod(&pods, "elsewhere", "n2", json!([])).await;

    taint(&c, "n1", no_execute("k")).await;
    let plain = deleted(&pods, "plain").await;
    let condition = plain
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .cloned()
        .expect("DisruptionTarget condition");
    assert_eq!(condition.status, "True");
    assert_eq!(condition.reason.as_deref(), Some("DeletionByTaintManager"));
    assert_eq!(
        condition.message.as_deref(),
        Some("Taint manager: deleting due to NoExecute taint")
    );
    deleted(&pods, "brief").await;
    wait_for("the eviction event", || async {
        notes(&c, "plain")
            .await
            .contains(&format!("Marking for deletion Pod {NS}/plain"))
            .then_some(())
    })
    .await;
    // the pods that tolerate forever or are on another node stay
    for name in ["forever", "elsewhere"] {
        let p = pods.get(name).await.expect("pod");
        assert!(p.metadata.deletion_timestamp.is_none(), "{name}");
    }

    // a pod bound later to the tainted node goes too
    create_pod(&pods, "late", "n1", json!([])).await;
    deleted(&pods, "late").await;
    release(&pods, &["plain", "brief", "forever", "elsewhere", "late"]).await;
    h.stop().await;
}

#[tokio::test]
async fn removing_the_taint_cancels_a_scheduled_deletion() {
    common::logs();
    let h = Harness::start(&[tainteviction::descriptor()]).await;
    h.namespace(NS).await;
    let c = h.client();
    let pods = Api::<Pod>::namespaced(c.clone(), NS);
    create_node(&c, "n1", no_execute("k")).await;
    create_pod(
        &pods,
        "patient",
        "n1",
        json!([{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3600}]),
    )
    .await;
    // a second taint the pod does not tolerate would delete it; instead the taint
    // goes, which cancels the hour-long countdown
    let probe = "probe";
    create_pod(&pods, probe, "n1", json!([])).await;
    deleted(&pods, probe).await;
    taint(&c, "n1", json!([])).await;
    wait_for("the cancellation event", || async {
        notes(&c, "patient")
            .await
            .contains(&format!("Cancelling deletion of Pod {NS}/patient"))
            .then_some(())
    })
    .await;
    let p = pods.get("patient").await.expect("pod");
    assert!(p.metadata.deletion_timestamp.is_none());
    release(&pods, &["patient", probe]).await;
    h.stop().await;
}
