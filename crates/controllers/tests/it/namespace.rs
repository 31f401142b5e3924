//! The namespace controller (with the garbage collector) against the embedded API
//! server: a deleted namespace is emptied, waits on its content's finalizers with the
//! upstream conditions, then disappears.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::{garbagecollector, namespace};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, NamespaceCondition, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const NS: &str = "doomed";
const HOLD: &str = "test.coxswain.dev/hold";

fn condition<'a>(ns: &'a Namespace, t: &str) -> Option<&'a NamespaceCondition> {
    ns.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == t)
}

fn is_true(ns: &Namespace, t: &str) -> bool {
    condition(ns, t).is_some_and(|c| c.status == "True")
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_content_then_the_namespace() {
    common::logs();
    let h = Harness::start(&[namespace::descriptor(), garbagecollector::descriptor()]).await;
    let c = h.client();
    h.namespace(NS).await;
    h.namespace("survivor").await;
    let cms = Api::<ConfigMap>::namespaced(c.clone(), NS);
    let secrets = Api::<Secret>::namespaced(c.clone(), NS);
    let deployments = Api::<Deployment>::namespaced(c.clone(), NS);
    let pp = PostParams::default();
    for i in 0..3 {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": "v"}}),
        )
        .expect("configmap");
        cms.create(&pp, &cm).await.expect("configmap created");
        let s: Secret = serde_json::from_value(
            json!({"metadata": {"name": format!("secret-{i}")}, "stringData": {"k": "v"}}),
        )
        .expect("secret");
        secrets.create(&pp, &s).await.expect("secret created");
    }
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .expect("deployment");
    deployments
        .create(&pp, &d)
        .await
        .expect("deployment created");
    let held: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": [HOLD]}}))
            .expect("configmap");
    cms.create(&pp, &held)
        .await
        .expect("held configmap created");
    let elsewhere: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "cm-0"}})).expect("configmap");
    let survivors = Api::<ConfigMap>::namespaced(c.clone(), "survivor");
    survivors
        .create(&pp, &elsewhere)
        .await
        .expect("configmap elsewhere");

    let namespaces = Api::<Namespace>::all(c.clone());
    namespaces
        .delete(NS, &DeleteParams::default())
        .await
        .expect("delete namespace");

    // the content goes, except what waits on its finalizer
    wait_for("deletable content removed", || async {
        let left_cms = cms.list(&ListParams::default()).await.ok()?.items.len();
        let left_secrets = secrets.list(&ListParams::default()).await.ok()?.items.len();
        let left_deployments = deployments
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .len();
        (left_cms == 1 && left_secrets == 0 && left_deployments == 0).then_some(())
    })
    .await;
    let held = cms
        .get("held")
        .await
        .expect("held configmap waits on its finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());

    // the namespace stays Terminating and says why
    let ns = wait_for("remaining-content conditions", || async {
        let ns = namespaces.get(NS).await.ok()?;
        (is_true(&ns, "NamespaceContentRemaining") && is_true(&ns, "NamespaceFinalizersRemaining"))
            .then_some(ns)
    })
    .await;
    assert_eq!(
        ns.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    assert!(ns
        .spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|x| x == "kubernetes")));
    let remaining = condition(&ns, "NamespaceContentRemaining").expect("condition");
    assert_eq!(remaining.reason.as_deref(), Some("SomeResourcesRemain"));
    assert_eq!(
        remaining.message.as_deref(),
        Some("Some resources are remaining: configmaps. has 1 resource instances")
    );
    let finalizers = condition(&ns, "NamespaceFinalizersRemaining").expect("condition");
    assert_eq!(finalizers.reason.as_deref(), Some("SomeFinalizerRemain"));
    assert_eq!(
        finalizers.message.as_deref(),
        Some("Some finalizers are remaining: test.coxswain.dev/hold in 1 resource instances")
    );
    for (t, reason) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
        ),
        ("NamespaceDeletionContentFailure", "ContentDeleted"),
    ] {
        let c = condition(&ns, t).unwrap_or_else(|| panic!("{t} present"));
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref()),
            ("False", Some(reason)),
            "{t}"
        );
    }
    // nothing new can be created meanwhile
    let late: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "late"}})).expect("configmap");
    assert!(cms.create(&pp, &late).await.is_err());

    // releasing the finalizer lets the namespace go
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release finalizer");
    wait_for("namespace removed", || async {
        namespaces.get_opt(NS).await.ok()?.is_none().then_some(())
    })
    .await;
    assert!(
        survivors.get_opt("cm-0").await.expect("get").is_some(),
        "other namespaces are untouched"
    );
    assert!(namespaces.get_opt("survivor").await.expect("get").is_some());
    h.stop().await;
}

#[tokio::test]
async fn an_empty_namespace_goes_at_once_and_others_stay() {
    common::logs();
    let h = Harness::start(&[namespace::descriptor()]).await;
    let c = h.client();
    h.namespace("empty").await;
    let namespaces = Api::<Namespace>::all(c.clone());
    namespaces
        .delete("empty", &DeleteParams::default())
        .await
        .expect("delete");
    let ns = namespaces.get("empty").await.expect("kept until finalized");
    assert_eq!(
        ns.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    wait_for("empty namespace removed", || async {
        namespaces
            .get_opt("empty")
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
    assert!(namespaces.get_opt("default").await.expect("get").is_some());
    h.stop().await;
}
