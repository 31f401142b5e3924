//! The node IPAM controller against the embedded API server: pod CIDRs from
//! `--cluster-cidr` for new nodes, existing allocations kept, the service range and
//! released blocks respected, and `CIDRNotAvailable` when the range is exhausted.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::nodeipam::{self, NodeIpamControllerOptions};
use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions};
use coxswain_runtime::manager::{runnable, BoxError, Manager, ManagerOptions};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn create(nodes: &Api<Node>, name: &str, cidrs: Option<&[&str]>) {
    let mut spec = json!({});
    if let Some(c) = cidrs {
        spec = json!({"podCIDR": c[0], "podCIDRs": c});
    }
    let node: Node =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
}

async fn cidrs_of(nodes: &Api<Node>, name: &str) -> Vec<String> {
    wait_for(&format!("pod CIDRs of {name}"), || async {
        let n = nodes.get(name).await.expect("node");
        let spec = n.spec.unwrap_or_default();
        let cidrs = spec.pod_cidrs.unwrap_or_default();
        (!cidrs.is_empty()).then(|| {
            assert_eq!(spec.pod_cidr.as_deref(), Some(cidrs[0].as_str()));
            cidrs
        })
    })
    .await
}

fn options(cluster: &str, service: &str, mask: u8) -> ControllerManagerOptions {
    ControllerManagerOptions {
        node_ipam: NodeIpamControllerOptions {
            allocate_node_cidrs: true,
            cluster_cidr: cluster.into(),
            service_cluster_ip_range: service.into(),
            node_cidr_mask_size: mask,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::test]
async fn nodes_get_blocks_of_the_cluster_cidr_until_it_runs_out() {
    common::logs();
    // a /22 in /24s: 4 blocks, one held by a node created before the controller
    // started is not handed out again, and the service range takes another
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let c = env.client.clone();
    let nodes = Api::<Node>::all(c.clone());
    create(&nodes, "old", Some(&["10.10.0.0/24"])).await;
    let cancel = CancellationToken::new();
    let mgr = Manager::new(
        env.kube_config().await.expect("config"),
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("manager");
    let o = options("10.10.0.0/22", "10.10.1.0/24", 24);
    let inner = (nodeipam::descriptor().constructor)(&ControllerContext::new(&mgr, &o))
        .expect("built")
        .expect("enabled");
    mgr.add(runnable("ipam", true, move |cancel| async move {
        inner.start(cancel).await?;
        Ok::<(), BoxError>(())
    }))
    .expect("added");
    let stop = cancel.clone();
    let manager = tokio::spawn(async move { mgr.start(stop).await });
    create(&nodes, "a", None).await;
    create(&nodes, "b", None).await;
    let a = cidrs_of(&nodes, "a").await;
    let b = cidrs_of(&nodes, "b").await;
    let mut got = vec![a[0].clone(), b[0].clone()];
    got.sort();
    assert_eq!(got, ["10.10.2.0/24", "10.10.3.0/24"]);
    assert_eq!(cidrs_of(&nodes, "old").await, ["10.10.0.0/24"]);

    // nothing left: the node waits, with a warning
    create(&nodes, "c", None).await;
    wait_for("CIDRNotAvailable", || async {
        Api::<Event>::namespaced(c.clone(), "default")
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("CIDRNotAvailable")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("c")
            })
            .map(|e| {
                assert_eq!(e.type_.as_deref(), Some("Warning"));
                assert_eq!(
                    e.note.as_deref(),
                    Some("Node c status is now: CIDRNotAvailable")
                );
            })
    })
    .await;
    // a deleted node's block goes to the waiting one
    nodes.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(cidrs_of(&nodes, "c").await, a);
    cancel.cancel();
    let _ = manager.await;
}

#[tokio::test]
async fn dual_stack_nodes_get_one_block_per_family() {
    common::logs();
    let mut o = options("10.20.0.0/16,fd00:10::/56", "", 0);
    o.node_ipam.node_cidr_mask_size_ipv6 = 64;
    let h = Harness::start_with(&[nodeipam::descriptor()], o).await;
    let nodes = Api::<Node>::all(h.client());
    create(&nodes, "d", None).await;
    assert_eq!(
        cidrs_of(&nodes, "d").await,
        ["10.20.0.0/24", "fd00:10::/64"]
    );
    h.stop().await;
}

#[tokio::test]
async fn off_without_allocate_node_cidrs_and_refused_without_a_cluster_cidr() {
    let env = coxswain_runtime::envtest::start().await.expect("server");
    let mgr = coxswain_runtime::manager::Manager::new(
        env.kube_config().await.expect("config"),
        Default::default(),
    )
    .expect("manager");
    let build = |o: &ControllerManagerOptions| {
        (nodeipam::descriptor().constructor)(&ControllerContext::new(&mgr, o)).map(|r| r.is_some())
    };
    assert_eq!(build(&ControllerManagerOptions::default()), Ok(false));
    assert!(build(&options("", "", 0)).is_err());
    assert!(build(&options("10.0.0.0/8,10.1.0.0/16", "", 0)).is_err());
    assert!(build(&options("10.0.0.0/16,fd00::/48", "", 24)).is_err());
    assert_eq!(build(&options("10.0.0.0/16", "", 0)), Ok(true));
}
