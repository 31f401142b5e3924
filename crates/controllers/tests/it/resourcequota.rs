//! The resource quota controller (`resourcequota-controller`) with the API server's
//! ResourceQuota admission: status.used is filled in, creates beyond the quota are
//! refused with upstream's message, deletions give quota back, object counts of any
//! resource (`count/deployments.apps`) are tracked, and a changed spec.hard shows in
//! status.hard.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::resourcequota;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, ResourceQuota};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

const NS: &str = "quota";

fn used(rq: &ResourceQuota, name: &str) -> Option<String> {
    rq.status
        .as_ref()?
        .used
        .as_ref()?
        .get(name)
        .map(|q| q.0.clone())
}

async fn wait_used(api: &Api<ResourceQuota>, quota: &str, name: &str, want: &str) {
    wait_for(&format!("{quota} used {name}={want}"), || async {
        let rq = api.get(quota).await.expect("quota");
        (used(&rq, name).as_deref() == Some(want)).then_some(())
    })
    .await;
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]}}))
    .unwrap()
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]}}}}))
    .unwrap()
}

fn quota(name: &str, hard: Value) -> ResourceQuota {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"hard": hard}})).unwrap()
}

#[tokio::test]
async fn quota_usage_is_counted_enforced_and_given_back() {
    common::logs();
    let h = Harness::start(&[resourcequota::descriptor()]).await;
    h.namespace(NS).await;
    let quotas = Api::<ResourceQuota>::namespaced(h.client(), NS);
    let pods = Api::<Pod>::namespaced(h.client(), NS);
    let deployments = Api::<Deployment>::namespaced(h.client(), NS);
    let pp = PostParams::default();
    pods.create(&pp, &pod("before")).await.unwrap();
    quotas
        .create(&pp, &quota("q", json!({"pods": "2"})))
        .await
        .unwrap();
    quotas
        .create(
            &pp,
            &quota(
                "counts",
                json!({"count/deployments.apps": "1", "configmaps": "10"}),
            ),
        )
        .await
        .unwrap();
    // the controller counts what exists (the pod created before the quota)
    wait_used(&quotas, "q", "pods", "1").await;
    wait_used(&quotas, "counts", "count/deployments.apps", "0").await;
    let rq = quotas.get("q").await.unwrap();
    let hard = rq.status.as_ref().and_then(|s| s.hard.as_ref()).unwrap();
    assert_eq!(hard.get("pods").map(|q| q.0.as_str()), Some("2"));

    // admission charges the second pod, refuses the third
    pods.create(&pp, &pod("second")).await.unwrap();
    assert_eq!(
        used(&quotas.get("q").await.unwrap(), "pods").as_deref(),
        Some("2")
    );
    let err = pods.create(&pp, &pod("third")).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("want a Status error, got {err:?}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(
        status.message,
        "pods \"third\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
    // a dry run is judged (and, below, charges nothing)
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    assert!(pods.create(&dry, &pod("third")).await.is_err());

    // a deleted pod gives its quota back (replenishment by the controller)
    pods.delete("before", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    wait_used(&quotas, "q", "pods", "1").await;
    pods.create(&dry, &pod("third")).await.unwrap();
    assert_eq!(
        used(&quotas.get("q").await.unwrap(), "pods").as_deref(),
        Some("1")
    );
    pods.create(&pp, &pod("third")).await.unwrap();

    // object counts of any resource
    deployments.create(&pp, &deployment("one")).await.unwrap();
    let err = deployments
        .create(&pp, &deployment("two"))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("want a Status error, got {err:?}");
    };
    assert_eq!(
        status.message,
        "deployments.apps \"two\" is forbidden: exceeded quota: counts, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"
    );
    deployments
        .delete("one", &DeleteParams::default())
        .await
        .unwrap();
    wait_used(&quotas, "counts", "count/deployments.apps", "0").await;
    deployments.create(&pp, &deployment("two")).await.unwrap();

    // a new hard limit shows in status.hard, with its usage
    quotas
        .patch(
            "q",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"pods": "5", "services": "3"}}})),
        )
        .await
        .unwrap();
    wait_used(&quotas, "q", "services", "0").await;
    let rq = quotas.get("q").await.unwrap();
    let hard = rq.status.as_ref().and_then(|s| s.hard.as_ref()).unwrap();
    assert_eq!(hard.get("pods").map(|q| q.0.as_str()), Some("5"));
    assert_eq!(used(&rq, "pods").as_deref(), Some("2"));
    h.stop().await;
}

#[tokio::test]
async fn compute_quota_requires_requests_and_limits() {
    common::logs();
    let h = Harness::start(&[resourcequota::descriptor()]).await;
    h.namespace(NS).await;
    let quotas = Api::<ResourceQuota>::namespaced(h.client(), NS);
    let pods = Api::<Pod>::namespaced(h.client(), NS);
    let pp = PostParams::default();
    quotas
        .create(
            &pp,
            &quota(
                "compute",
                json!({"requests.cpu": "1", "limits.memory": "1Gi"}),
            ),
        )
        .await
        .unwrap();
    wait_used(&quotas, "compute", "requests.cpu", "0").await;
    let err = pods.create(&pp, &pod("bare")).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("want a Status error, got {err:?}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: app; requests.cpu for: app"
    );
    let sized: Pod = serde_json::from_value(json!({"metadata": {"name": "sized"},
        "spec": {"containers": [{"name": "app", "image": "busybox", "resources": {
            "requests": {"cpu": "600m"}, "limits": {"memory": "512Mi"}}}]}}))
    .unwrap();
    pods.create(&pp, &sized).await.unwrap();
    let rq = quotas.get("compute").await.unwrap();
    assert_eq!(used(&rq, "requests.cpu").as_deref(), Some("600m"));
    assert_eq!(used(&rq, "limits.memory").as_deref(), Some("512Mi"));
    let mut again = sized.clone();
    again.metadata.name = Some("again".into());
    let err = pods.create(&pp, &again).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("want a Status error, got {err:?}");
    };
    assert_eq!(
        status.message,
        "pods \"again\" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_service_type_change_is_charged() {
    common::logs();
    let h = Harness::start(&[resourcequota::descriptor()]).await;
    h.namespace(NS).await;
    let quotas = Api::<ResourceQuota>::namespaced(h.client(), NS);
    let services = Api::<k8s_openapi::api::core::v1::Service>::namespaced(h.client(), NS);
    let pp = PostParams::default();
    quotas
        .create(
            &pp,
            &quota("q", json!({"services.nodeports": "1", "services": "5"})),
        )
        .await
        .unwrap();
    wait_used(&quotas, "q", "services.nodeports", "0").await;
    let svc = |name: &str, ports: Value| -> k8s_openapi::api::core::v1::Service {
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"selector": {"app": name}, "ports": ports}}))
        .unwrap()
    };
    services
        .create(
            &pp,
            &svc(
                "two",
                json!([{"name": "a", "port": 80}, {"name": "b", "port": 81}]),
            ),
        )
        .await
        .unwrap();
    services
        .create(&pp, &svc("one", json!([{"port": 80}])))
        .await
        .unwrap();
    assert_eq!(
        used(&quotas.get("q").await.unwrap(), "services").as_deref(),
        Some("2")
    );
    let to_node_port = Patch::Merge(json!({"spec": {"type": "NodePort"}}));
    let err = services
        .patch("two", &PatchParams::default(), &to_node_port)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("want a Status error, got {err:?}");
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "services \"two\" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"
    );
    services
        .patch("one", &PatchParams::default(), &to_node_port)
        .await
        .unwrap();
    wait_used(&quotas, "q", "services.nodeports", "1").await;
    // back to ClusterIP: the controller gives the node port back
    services
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"type": "ClusterIP"}})),
        )
        .await
        .unwrap();
    wait_used(&quotas, "q", "services.nodeports", "0").await;
    h.stop().await;
}
