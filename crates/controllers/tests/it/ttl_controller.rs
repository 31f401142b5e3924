//! The TTL controller (`ttl-controller`) against the embedded API server: every node
//! gets `node.alpha.kubernetes.io/ttl` for the cluster size (0 s for a small cluster),
//! and a wrong value is put back.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::ttl;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

fn ttl_of(n: &Node) -> Option<String> {
    n.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ttl::TTL_ANNOTATION).cloned())
}

#[tokio::test]
async fn nodes_get_the_ttl_annotation_of_the_cluster_size() {
    common::logs();
    let h = Harness::start(&[ttl::descriptor()]).await;
    let nodes = Api::<Node>::all(h.client());
    for name in ["a", "b"] {
        let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
    }
    for name in ["a", "b"] {
        wait_for(&format!("ttl annotation on {name}"), || async {
            let n = nodes.get(name).await.expect("node");
            (ttl_of(&n).as_deref() == Some("0")).then_some(())
        })
        .await;
    }
    // a wrong value is corrected
    nodes
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {ttl::TTL_ANNOTATION: "15"}}})),
        )
        .await
        .unwrap();
    wait_for("ttl annotation put back", || async {
        let n = nodes.get("a").await.expect("node");
        (ttl_of(&n).as_deref() == Some("0")).then_some(())
    })
    .await;
    h.stop().await;
}
