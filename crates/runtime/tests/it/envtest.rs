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
