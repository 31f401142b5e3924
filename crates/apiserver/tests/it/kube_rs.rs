//! kube-rs (`kube` with its runtime feature) syncs reflectors from the embedded server in
//! both watcher modes: paginated LIST then WATCH, and the streaming list (watch-list with
//! `sendInitialEvents` and the initial-events-end bookmark).

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_string());
    c.metadata.labels = Some(BTreeMap::from([("app".to_string(), "reflect".to_string())]));
    c.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    c
}

async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn reflector_syncs(streaming: bool) {
    let (running, client, _dir) = common::start_with_client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..30 {
        api.create(&PostParams::default(), &cm(&format!("pre-{i}"), "0"))
            .await
            .expect("create");
    }
    // an object the selector excludes
    let mut other = cm("other", "0");
    other.metadata.labels = None;
    api.create(&PostParams::default(), &other)
        .await
        .expect("create other");

    let mut wc = watcher::Config::default()
        .labels("app=reflect")
        .page_size(7);
    if streaming {
        wc = wc.streaming_lists();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector(writer, watcher(api.clone(), wc)).applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .expect("store becomes ready")
        .expect("writer alive");
    assert_eq!(
        reader.state().len(),
        30,
        "initial sync sees exactly the selected objects"
    );

    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("post-{i}"), "0"))
            .await
            .expect("create");
    }
    api.patch(
        "pre-3",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "changed"}})),
    )
    .await
    .expect("patch");
    api.delete("pre-0", &DeleteParams::default())
        .await
        .expect("delete");
    api.delete("pre-1", &DeleteParams::default())
        .await
        .expect("delete");
    // leaving the selector removes the object from the store too
    api.patch(
        "pre-2",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"app": null}}})),
    )
    .await
    .expect("unlabel");
    wait_for("reflector to converge", || {
        let state = reader.state();
        let changed = state
            .iter()
            .find(|c| c.name_any() == "pre-3")
            .and_then(|c| c.data.as_ref().and_then(|d| d.get("v").cloned()));
        state.len() == 32 && changed.as_deref() == Some("changed")
    })
    .await;
    let names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
    assert!(!names.contains(&"pre-0".to_string()) && !names.contains(&"pre-2".to_string()));
    assert!(names.contains(&"post-4".to_string()));
    // the server's list agrees with the reflector
    let listed = api
        .list(&ListParams::default().labels("app=reflect"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 32);
    task.abort();
    running.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_list_watch() {
    reflector_syncs(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_streaming_list() {
    reflector_syncs(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_list_get_and_watch() {
    use kube::api::WatchEvent;
    use kube::core::PartialObjectMeta as PartialObjectMetadata;
    let (running, client, _dir) = common::start_with_client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &cm("meta", "0"))
        .await
        .expect("create");
    let list = api
        .list_metadata(&ListParams::default())
        .await
        .expect("metadata list");
    let item: &PartialObjectMetadata<ConfigMap> = list.items.first().expect("one item");
    assert_eq!(item.metadata.name.as_deref(), Some("meta"));
    assert_eq!(
        item.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let one = api.get_metadata("meta").await.expect("metadata get");
    assert_eq!(
        one.metadata.labels.as_ref().map(|l| l["app"].as_str()),
        Some("reflect")
    );
    let stream = api
        .watch_metadata(
            &kube::api::WatchParams::default().timeout(2),
            &list.metadata.resource_version.clone().unwrap_or_default(),
        )
        .await
        .expect("metadata watch");
    let mut stream = std::pin::pin!(stream);
    api.patch(
        "meta",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "1"}})),
    )
    .await
    .expect("patch");
    let ev = stream.next().await.expect("an event").expect("decoded");
    match ev {
        WatchEvent::Modified(o) => assert_eq!(o.metadata.name.as_deref(), Some("meta")),
        other => panic!("unexpected {other:?}"),
    }
    running.shutdown.cancel();
}
