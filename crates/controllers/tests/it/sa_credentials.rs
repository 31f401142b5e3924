//! Every built-in controller under `--use-service-account-credentials` against the
//! embedded API server with RBAC and only the bootstrap roles: each controller runs as
//! `system:serviceaccount:kube-system:<name>` with a TokenRequest token, a workload
//! touches the controllers, and no request of any controller's account may be refused
//! (the client builder records every 401 and 403 it meets).
//!
//! It relies on the API server's TokenRequest and service account authenticator, the
//! RBAC authorizer and the bootstrap controller roles.

use std::collections::BTreeSet;

use coxswain_controllers::clientbuilder::{self, SERVICE_ACCOUNT_NAMESPACE};
use coxswain_controllers::controller_manager::{self, ControllerManagerConfig};
use coxswain_runtime::envtest;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Namespace, Node, Pod, ResourceQuota, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{logs, wait_for};

/// The accounts upstream's controllers run as (`ClientOrDie(...)`), for the
/// controllers `*` turns on.
const ACCOUNTS: &[&str] = &[
    "attachdetach-controller",
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemon-set-controller",
    "deployment-controller",
    "disruption-controller",
    "endpoint-controller",
    "endpointslice-controller",
    "endpointslicemirroring-controller",
    "ephemeral-volume-controller",
    "expand-controller",
    "generic-garbage-collector",
    "horizontal-pod-autoscaler",
    "job-controller",
    "legacy-service-account-token-cleaner",
    "namespace-controller",
    "node-controller",
    "persistent-volume-binder",
    "pod-garbage-collector",
    "pv-protection-controller",
    "pvc-protection-controller",
    "replicaset-controller",
    "replication-controller",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "service-account-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "ttl-controller",
];

fn object<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]

async fn every_controller_works_as_its_service_account_with_the_bootstrap_roles() {
    logs();
    let env = envtest::start().await.expect("test server");
    let root = env.client.clone();
    let kube = env.kube_config().await.expect("client config");
    let config = ControllerManagerConfig {
        leader_elect: false,
        use_service_account_credentials: true,
        min_resync_period: std::time::Duration::ZERO,
        ..ControllerManagerConfig::default()
    };
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let manager = tokio::spawn(async move {
        let registry = coxswain_controllers::builtin();
        controller_manager::run_with_address(kube, &config, &registry, stop, "0", |_| {}).await
    });

    // the workload, written as the admin
    let ns = "sa-credentials";
    Api::<Namespace>::all(root.clone())
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": ns}})),
        )
        .await
        .expect("namespace");
    let labels = json!({"app": "web"});
    let template = json!({
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    });
    let pp = PostParams::default();
    Api::<Deployment>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": template},
            })),
        )
        .await
        .expect("deployment");
    Api::<Service>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "web"},
                "spec": {"selector": labels, "ports": [{"port": 80}]},
            })),
        )
        .await
        .expect("service");
    Api::<Job>::namespaced(root.clone(), ns)
        .create(&pp, &object(json!({
            "metadata": {"name": "once"},
            "spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            }},
        })))
        .await
        .expect("job");
    let db = json!({"app": "db"});
    Api::<StatefulSet>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "db"},
                "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": db},
                    "template": {"metadata": {"labels": db},
                        "spec": {"containers": [{"name": "c", "image": "postgres"}]}}},
            })),
        )
        .await
        .expect("statefulset");
    Api::<ClusterRole>::all(root.clone())
        .create(&pp, &object(json!({
            "metadata": {"name": "sa-credentials-aggregate"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"sa-credentials": "true"}}]},
        })))
        .await
        .expect("aggregated role");
    Api::<ClusterRole>::all(root.clone())
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "sa-credentials-part", "labels": {"sa-credentials": "true"}},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            })),
        )
        .await
        .expect("aggregated part");

    // a node (its annotation, taints and daemon pods), a budget, a quota, an autoscaler
    Api::<Node>::all(root.clone())
        .create(
            &pp,
            &object(json!({"metadata": {"name": "sa-credentials-node"}})),
        )
        .await
        .expect("node");
    let agent = json!({"app": "agent"});
    Api::<DaemonSet>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": agent},
                    "template": {"metadata": {"labels": agent},
                        "spec": {"containers": [{"name": "c", "image": "agent"}]}}},
            })),
        )
        .await
        .expect("daemon set");
    Api::<PodDisruptionBudget>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "web"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
            })),
        )
        .await
        .expect("budget");
    Api::<ResourceQuota>::namespaced(root.clone(), ns)
        .create(
            &pp,
            &object(json!({
                "metadata": {"name": "pods"},
                "spec": {"hard": {"pods": "100"}},
            })),
        )
        .await
        .expect("quota");
    Api::<HorizontalPodAutoscaler>::namespaced(root.clone(), ns)
        .create(&pp, &object(json!({
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}]},
        })))
        .await
        .expect("autoscaler");

    // what the controllers write, each as its own account
    let nodes: Api<Node> = Api::all(root.clone());
    wait_for("the node's TTL annotation", || async {
        let n = nodes.get("sa-credentials-node").await.ok()?;
        n.metadata
            .annotations
            .as_ref()?
            .get("node.alpha.kubernetes.io/ttl")
            .cloned()
    })
    .await;
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(root.clone(), ns);
    wait_for("the budget's status", || async {
        let b = budgets.get("web").await.ok()?;
        b.status?.observed_generation
    })
    .await;
    let quotas: Api<ResourceQuota> = Api::namespaced(root.clone(), ns);
    wait_for("the quota's usage", || async {
        let q = quotas.get("pods").await.ok()?;
        q.status?.used
    })
    .await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(root.clone(), ns);
    wait_for("the autoscaler's conditions", || async {
        let h = hpas.get("web").await.ok()?;
        h.status?.conditions.filter(|c| !c.is_empty())
    })
    .await;
    let sas: Api<ServiceAccount> = Api::namespaced(root.clone(), ns);
    wait_for("the default service account", || async {
        sas.get_opt("default").await.ok().flatten()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(root.clone(), ns);
    wait_for("the root CA config map", || async {
        cms.get_opt("kube-root-ca.crt").await.ok().flatten()
    })
    .await;
    let rs: Api<ReplicaSet> = Api::namespaced(root.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(root.clone(), ns);
    wait_for("the deployment's replica set", || async {
        rs.list(&ListParams::default())
            .await
            .ok()
            .filter(|l| !l.items.is_empty())
    })
    .await;
    wait_for(
        "the pods of the deployment, the job, the stateful set and the daemon set",
        || async {
            let l = pods.list(&ListParams::default()).await.ok()?;
            let owners: BTreeSet<String> = l
                .items
                .iter()
                .flat_map(|p| p.metadata.owner_references.iter().flatten())
                .map(|o| o.kind.clone())
                .collect();
            (l.items.len() >= 5 && owners.len() == 4).then_some(())
        },
    )
    .await;
    let slices: Api<EndpointSlice> = Api::namespaced(root.clone(), ns);
    wait_for("the service's endpoint slice", || async {
        slices
            .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
            .await
            .ok()
            .filter(|l| !l.items.is_empty())
    })
    .await;
    let endpoints: Api<Endpoints> = Api::namespaced(root.clone(), ns);
    wait_for("the service's endpoints", || async {
        endpoints.get_opt("web").await.ok().flatten()
    })
    .await;
    let roles: Api<ClusterRole> = Api::all(root.clone());
    wait_for("the aggregated rules", || async {
        roles
            .get("sa-credentials-aggregate")
            .await
            .ok()
            .filter(|r| r.rules.as_ref().is_some_and(|r| !r.is_empty()))
    })
    .await;
    // nothing was refused while the workload settled
    let refused = clientbuilder::refusals();
    assert!(
        refused.is_empty(),
        "requests refused to controllers: {refused:#?}"
    );

    // the namespace controller and the garbage collector empty and remove the namespace
    Api::<Namespace>::all(root.clone())
        .delete(ns, &DeleteParams::default())
        .await
        .expect("namespace deleted");
    let namespaces: Api<Namespace> = Api::all(root.clone());
    wait_for("the namespace to go", || async {
        matches!(namespaces.get_opt(ns).await, Ok(None)).then_some(())
    })
    .await;

    // every controller ran as its own account, and none was refused anything
    let system: Api<ServiceAccount> = Api::namespaced(root.clone(), SERVICE_ACCOUNT_NAMESPACE);
    for account in ACCOUNTS {
        wait_for(&format!("service account {account}"), || async {
            system.get_opt(account).await.ok().flatten()
        })
        .await;
    }
    Api::<Node>::all(root.clone())
        .delete("sa-credentials-node", &DeleteParams::default())
        .await
        .expect("node deleted");

    // while it terminates, creates in it are refused with 403 as kube-apiserver refuses
    // them ("... because it is being terminated"): the only refusals allowed
    let prefixes = [
        format!("/api/v1/namespaces/{ns}/"),
        format!("/apis/apps/v1/namespaces/{ns}/"),
        format!("/apis/events.k8s.io/v1/namespaces/{ns}/"),
        format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/"),
        format!("/apis/batch/v1/namespaces/{ns}/"),
        format!("/apis/policy/v1/namespaces/{ns}/"),
        format!("/apis/autoscaling/v2/namespaces/{ns}/"),
    ];
    let refused: Vec<_> = clientbuilder::refusals()
        .into_iter()
        .filter(|r| !(r.method == "POST" && prefixes.iter().any(|p| r.path.starts_with(p))))
        .collect();
    assert!(
        refused.is_empty(),
        "requests refused to controllers: {refused:#?}"
    );
    cancel.cancel();
    manager
        .await
        .expect("controller manager task")
        .expect("controller manager stops cleanly");
}
