//! Informer and shared cache against the embedded API server.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::{Cache, Change, InformerConfig};
use coxswain_runtime::envtest;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

fn cm(name: &str, app: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_string());
    c.metadata.labels = Some(BTreeMap::from([("app".to_string(), app.to_string())]));
    c.data = Some(BTreeMap::from([("v".to_string(), "0".to_string())]));
    c
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out: {what}");
}

fn names(store: &coxswain_runtime::cache::Store<ConfigMap>) -> BTreeSet<String> {
    store
        .list()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_syncs_and_delivers_changes_in_order() {
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    for i in 0..20 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), "x"))
            .await
            .expect("create");
    }
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    cache.index_field::<ConfigMap>("app", |c| {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect()
    });
    let all = cache.list::<ConfigMap>(Some("default")).await;
    assert_eq!(all.len(), 20, "initial sync");
    assert!(
        all.iter().all(|c| c.metadata.managed_fields.is_none()),
        "managedFields stripped"
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    cache.informer::<ConfigMap>().add_handler(move |c| {
        let entry = match c {
            Change::Added(o) => format!("add {}", o.metadata.name.as_deref().unwrap_or("")),
            Change::Updated { new, .. } => {
                format!("update {}", new.metadata.name.as_deref().unwrap_or(""))
            }
            Change::Deleted(o) => format!("delete {}", o.metadata.name.as_deref().unwrap_or("")),
        };
        l.lock().expect("log").push(entry);
    });
    assert_eq!(
        log.lock().expect("log").len(),
        20,
        "a late handler first sees the cached objects"
    );
    api.create(&PostParams::default(), &cm("new", "y"))
        .await
        .expect("create");
    api.patch(
        "new",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "1"}})),
    )
    .await
    .expect("patch");
    api.delete("new", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("three changes", || log.lock().expect("log").len() >= 23).await;
    let tail: Vec<String> = log.lock().expect("log")[20..].to_vec();
    assert_eq!(tail, vec!["add new", "update new", "delete new"]);
    let by_app = cache
        .list_by_index::<ConfigMap>("app", "x")
        .await
        .expect("index exists");
    assert_eq!(by_app.len(), 20);
    assert!(cache
        .get::<ConfigMap>(&ObjectKey::namespaced("default", "c3"))
        .await
        .is_some());
    assert!(cache
        .get::<ConfigMap>(&ObjectKey::namespaced("default", "new"))
        .await
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_informer_and_one_watch_per_kind_is_shared() {
    let env = envtest::start().await.expect("env");
    let before = env.server().watcher_count();
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let a = cache.informer::<ConfigMap>();
    let b = cache.informer::<ConfigMap>();
    assert!(Arc::ptr_eq(&a, &b), "two users get the same informer");
    a.wait_for_sync().await;
    b.wait_for_sync().await;
    assert_eq!(cache.informer_count(), 1);
    eventually("one watch connection", || {
        env.server().watcher_count() == before + 1
    })
    .await;
    // a different selector is a different informer
    let c = cache.informer_with::<ConfigMap>(InformerConfig {
        label_selector: Some("app=x".into()),
        ..Default::default()
    });
    c.wait_for_sync().await;
    assert_eq!(cache.informer_count(), 2);
    eventually("two watch connections", || {
        env.server().watcher_count() == before + 2
    })
    .await;
}

async fn survives_restart(watch_list: bool) {
    let mut env = envtest::start_with(|c| {
        c.persist = true;
        c.history = 2;
    })
    .await
    .expect("env");
    let api = |env: &envtest::TestEnv| -> Api<ConfigMap> {
        Api::namespaced(env.client.clone(), "default")
    };
    for i in 0..10 {
        api(&env)
            .create(&PostParams::default(), &cm(&format!("c{i}"), "x"))
            .await
            .expect("create");
    }
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let inf = cache.informer_with::<ConfigMap>(InformerConfig {
        watch_list,
        ..Default::default()
    });
    inf.wait_for_sync().await;
    assert_eq!(inf.store().len(), 10);
    let deleted = Arc::new(Mutex::new(BTreeSet::new()));
    let d = deleted.clone();
    inf.add_handler(move |c| {
        if let Change::Deleted(o) = c {
            d.lock()
                .expect("set")
                .insert(o.metadata.name.clone().unwrap_or_default());
        }
    });
    env.restart().await.expect("restart");
    // more writes than the restarted server's history keeps: a watch that resumes from
    // the informer's last resourceVersion gets 410 and relists
    for i in 10..13 {
        api(&env)
            .create(&PostParams::default(), &cm(&format!("c{i}"), "x"))
            .await
            .expect("create after restart");
    }
    api(&env)
        .delete("c0", &DeleteParams::default())
        .await
        .expect("delete");
    api(&env)
        .delete("c1", &DeleteParams::default())
        .await
        .expect("delete");
    api(&env)
        .patch(
            "c2",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"v": "9"}})),
        )
        .await
        .expect("patch");
    let want: BTreeSet<String> = (2..13).map(|i| format!("c{i}")).collect();
    eventually("informer converges after the restart", || {
        names(inf.store()) == want
            && inf
                .store()
                .get(&ObjectKey::namespaced("default", "c2"))
                .and_then(|c| c.data.as_ref().and_then(|d| d.get("v").cloned()))
                .as_deref()
                == Some("9")
    })
    .await;
    let seen = deleted.lock().expect("set").clone();
    assert_eq!(
        seen,
        BTreeSet::from(["c0".to_string(), "c1".to_string()]),
        "handlers saw exactly the deletions"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_survives_restart_and_410_with_watch_list() {
    survives_restart(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_survives_restart_and_410_with_list_watch() {
    survives_restart(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_informer_for_a_kind_known_at_run_time() {
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    api.create(&PostParams::default(), &cm("dyn", "x"))
        .await
        .expect("create");
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "ConfigMap"),
        "configmaps",
    );
    let inf = cache.dynamic_informer(&ar, InformerConfig::default());
    inf.wait_for_sync().await;
    let obj: Arc<DynamicObject> = inf
        .store()
        .get(&ObjectKey::namespaced("default", "dyn"))
        .expect("cached");
    assert_eq!(obj.data["data"]["v"], "0");
    // same resource, same informer; the typed informer is a different one
    assert!(Arc::ptr_eq(
        &inf,
        &cache.dynamic_informer(&ar, InformerConfig::default())
    ));
    cache.informer::<ConfigMap>().wait_for_sync().await;
    assert_eq!(cache.informer_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resync_redelivers_cached_objects_as_updates() {
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    api.create(&PostParams::default(), &cm("r", "x"))
        .await
        .expect("create");
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let inf = cache.informer_with::<ConfigMap>(InformerConfig {
        resync: Some(Duration::from_millis(100)),
        ..Default::default()
    });
    inf.wait_for_sync().await;
    let resyncs = Arc::new(Mutex::new(0usize));
    let r = resyncs.clone();
    inf.add_handler(move |c| {
        if let Change::Updated { old, new } = c {
            if old.metadata.resource_version == new.metadata.resource_version {
                *r.lock().expect("count") += 1;
            }
        }
    });
    eventually("two resyncs", || *resyncs.lock().expect("count") >= 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_informer_holds_metadata_only() {
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    api.create(&PostParams::default(), &cm("m1", "x"))
        .await
        .expect("create");
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let inf = cache.metadata_informer::<ConfigMap>(InformerConfig::default());
    inf.wait_for_sync().await;
    let m = inf
        .store()
        .get(&ObjectKey::namespaced("default", "m1"))
        .expect("cached");
    assert_eq!(
        m.metadata.labels.as_ref().map(|l| l["app"].as_str()),
        Some("x")
    );
    api.delete("m1", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("deletion seen", || inf.store().is_empty()).await;
    // distinct from the full-object informer of the same kind
    cache.informer::<ConfigMap>().wait_for_sync().await;
    assert_eq!(cache.informer_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transforms_apply_before_storing() {
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    api.create(&PostParams::default(), &cm("t", "x"))
        .await
        .expect("create");
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    cache.set_transform::<ConfigMap>(|mut c| {
        c.data = None;
        c
    });
    let got = cache
        .get::<ConfigMap>(&ObjectKey::namespaced("default", "t"))
        .await
        .expect("cached");
    assert!(got.data.is_none(), "data dropped by the transform");
    assert_eq!(got.metadata.name.as_deref(), Some("t"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_and_decoded_storage_hold_the_same_objects() {
    use coxswain_runtime::cache::Storage;
    let env = envtest::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("s{i}"), "x"))
            .await
            .expect("create");
    }
    let cache = Cache::new(env.client.clone(), CancellationToken::new());
    let compact = cache.informer::<ConfigMap>();
    let decoded = cache.informer_with::<ConfigMap>(InformerConfig {
        storage: Storage::Decoded,
        ..InformerConfig::default()
    });
    assert_eq!(cache.informer_count(), 2);
    compact.wait_for_sync().await;
    decoded.wait_for_sync().await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    compact.add_handler(move |c| {
        if let Change::Updated { old, new } = c {
            log.lock().unwrap().push(format!(
                "{} {:?}->{:?}",
                new.metadata.name.as_deref().unwrap_or(""),
                old.data.as_ref().and_then(|d| d.get("v")),
                new.data.as_ref().and_then(|d| d.get("v")),
            ));
        }
    });
    api.patch(
        "s3",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"v": "1"}})),
    )
    .await
    .expect("patch");
    eventually("update delivered", || !seen.lock().unwrap().is_empty()).await;
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [r#"s3 Some("0")->Some("1")"#]
    );
    eventually("both stores updated", || {
        decoded.store().list() == compact.store().list()
            && compact
                .store()
                .get(&ObjectKey::namespaced("default", "s3"))
                .is_some_and(|c| {
                    c.data.as_ref().and_then(|d| d.get("v")).map(String::as_str) == Some("1")
                })
    })
    .await;
    // compact reads decode a private copy each time; decoded reads share one value
    let key = ObjectKey::namespaced("default", "s1");
    let (a, b) = (
        compact.store().get(&key).unwrap(),
        compact.store().get(&key).unwrap(),
    );
    assert!(!Arc::ptr_eq(&a, &b) && a == b);
    let (a, b) = (
        decoded.store().get(&key).unwrap(),
        decoded.store().get(&key).unwrap(),
    );
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(
        compact
            .store()
            .keys()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "default/s0",
            "default/s1",
            "default/s2",
            "default/s3",
            "default/s4"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_restricted_cache_watches_one_namespace() {
    use k8s_openapi::api::core::v1::Namespace;
    let env = envtest::start().await.expect("env");
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let mut team = Namespace::default();
    team.metadata.name = Some("team".into());
    namespaces
        .create(&PostParams::default(), &team)
        .await
        .expect("namespace");
    Api::<ConfigMap>::namespaced(env.client.clone(), "team")
        .create(&PostParams::default(), &cm("mine", "x"))
        .await
        .expect("create");
    Api::<ConfigMap>::namespaced(env.client.clone(), "default")
        .create(&PostParams::default(), &cm("other", "x"))
        .await
        .expect("create");
    let cache = Cache::namespaced(env.client.clone(), "team", CancellationToken::new());
    let cms = cache.list::<ConfigMap>(None).await;
    let names: Vec<String> = cms.iter().filter_map(|c| c.metadata.name.clone()).collect();
    assert_eq!(names, vec!["mine".to_string()]);
    // cluster-scoped kinds are not restricted
    let all_ns = cache.list::<Namespace>(None).await;
    assert!(
        all_ns.len() >= 5,
        "default, kube-system, kube-public, kube-node-lease, team"
    );
}
