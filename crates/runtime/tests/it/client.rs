//! The delegating client against the embedded API server: cached reads (with label and
//! index selectors), direct writes, status and scale subresources, per-kind opt-out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::selector::LabelSelector;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::{Client, ListOptions};
use coxswain_runtime::envtest;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use tokio_util::sync::CancellationToken;

fn cm(name: &str, app: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    c
}

async fn until<T>(mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..200 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_reads_direct_writes() {
    let env = envtest::start().await.expect("env");
    let cache = Arc::new(Cache::new(env.client.clone(), CancellationToken::new()));
    cache.index_field::<ConfigMap>("app", |c| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect()
    });
    let client = Client::new(cache.clone());
    for (n, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        client.create(&cm(n, app)).await.expect("create");
    }
    let web = until(async || {
        let l = client
            .list::<ConfigMap>(&ListOptions {
                labels: Some(LabelSelector::from_match_labels([("app", "web")])),
                ..Default::default()
            })
            .await
            .expect("list");
        (l.len() == 2).then_some(l)
    })
    .await;
    assert!(web.iter().all(|c| c
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l["app"] == "web")));
    let db = until(async || {
        let l = client
            .list::<ConfigMap>(&ListOptions {
                index: Some(("app".into(), "db".into())),
                ..Default::default()
            })
            .await
            .expect("index list");
        (!l.is_empty()).then_some(l)
    })
    .await;
    assert_eq!(db.len(), 1);
    assert_eq!(db[0].metadata.name.as_deref(), Some("c"));
    let missing = client
        .list::<ConfigMap>(&ListOptions {
            index: Some(("nope".into(), "x".into())),
            ..Default::default()
        })
        .await;
    assert!(missing.is_err(), "a list by an unknown index is an error");
    let key = ObjectKey::namespaced("default", "a");
    let mut a = (*client
        .get::<ConfigMap>(&key)
        .await
        .expect("get")
        .expect("cached"))
    .clone();
    a.data = Some(BTreeMap::from([("k".to_string(), "v".to_string())]));
    client.update(&a).await.expect("update");
    client
        .patch::<ConfigMap, _>(
            &key,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("patch");
    let seen = until(async || {
        client
            .get::<ConfigMap>(&key)
            .await
            .ok()
            .flatten()
            .filter(|c| {
                c.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("x"))
            })
    })
    .await;
    assert_eq!(seen.data.as_ref().map(|d| d["k"].as_str()), Some("v"));
    assert!(client
        .delete::<ConfigMap>(&key, &DeleteParams::default())
        .await
        .expect("delete"));
    assert!(!client
        .delete::<ConfigMap>(&key, &DeleteParams::default())
        .await
        .expect("second delete"));
    until(async || {
        client
            .get::<ConfigMap>(&key)
            .await
            .ok()
            .and_then(|o| o.is_none().then_some(()))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_scale_and_uncached_reads() {
    let env = envtest::start().await.expect("env");
    let cache = Arc::new(Cache::new(env.client.clone(), CancellationToken::new()));
    let client = Client::new(cache.clone()).uncached::<Deployment>();
    let d: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .expect("deployment");
    client.create(&d).await.expect("create");
    let key = ObjectKey::namespaced("default", "web");
    // uncached: visible at once, and no informer was started for Deployments
    let got = client
        .get::<Deployment>(&key)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(cache.informer_count(), 0);
    let scale = client.scale::<Deployment>(&key, 4).await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(
        client
            .get_scale::<Deployment>(&key)
            .await
            .expect("get scale")
            .spec
            .and_then(|s| s.replicas),
        Some(4)
    );
    let mut with_status = (*got).clone();
    with_status.metadata.resource_version = None;
    with_status.status = Some(
        serde_json::from_value(serde_json::json!({"replicas": 4, "readyReplicas": 2}))
            .expect("status"),
    );
    let updated = client
        .update_status(&with_status)
        .await
        .expect("status update");
    assert_eq!(
        updated.status.as_ref().and_then(|s| s.ready_replicas),
        Some(2)
    );
    assert_eq!(
        updated.spec.replicas,
        Some(4),
        "status writes keep the spec"
    );
    let patched: Deployment = client
        .patch_status(
            &key,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"readyReplicas": 4}})),
        )
        .await
        .expect("status patch");
    assert_eq!(patched.status.and_then(|s| s.ready_replicas), Some(4));
    let listed = client
        .list::<Deployment>(&ListOptions::default())
        .await
        .expect("direct list");
    assert_eq!(listed.len(), 1);
}
