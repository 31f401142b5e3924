//! The envtest helpers themselves.

use std::time::Duration;

use coxswain_runtime::envtest;
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::Api;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_kubelet_makes_new_pods_running_and_ready() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let kubelet = envtest::fake_kubelet(env.client.clone(), None, cancel.clone());
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let mut ready = false;
    for _ in 0..200 {
        let p = pods.get("web").await.expect("get");
        let status = p.status.unwrap_or_default();
        ready = status.phase.as_deref() == Some("Running")
            && status
                .conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
            && status.pod_ip.is_some();
        if ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ready, "the pod became Running and Ready");
    cancel.cancel();
    let _ = kubelet.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_kubelet_binds_pods_to_its_nodes_and_removes_terminating_pods_at_once() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let kubelet = envtest::FakeKubelet {
        delay: None,
        delete_terminating: true,
        nodes: 2,
    }
    .run(env.client.clone(), cancel.clone());
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let mut running = None;
    for _ in 0..200 {
        let p = pods.get("web").await.expect("get");
        if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
            running = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let running = running.expect("the pod runs");
    let node = running.spec.and_then(|s| s.node_name).unwrap_or_default();
    assert!(
        node.starts_with("fake-node-"),
        "bound to a stand-in node: {node:?}"
    );
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.client.clone());
    let ready = nodes
        .get(&node)
        .await
        .expect("the stand-in node exists")
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    assert!(ready, "the stand-in node is Ready");
    // a bound pod is deleted gracefully (30 s by default): the stand-in ends it at once
    pods.delete("web", &Default::default())
        .await
        .expect("delete");
    let mut gone = false;
    for _ in 0..200 {
        if pods.get_opt("web").await.expect("get").is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(
        gone,
        "the terminating pod was removed well within its grace period"
    );
    cancel.cancel();
    let _ = kubelet.await;
}
