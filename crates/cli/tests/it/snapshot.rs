//! `coxswain snapshot save` during 16 concurrent writers and `coxswain snapshot restore`:
//! the restored server holds exactly the objects a LIST at the snapshot's
//! resourceVersion shows on the original, and a watch on it from that resourceVersion
//! starts there (no 410).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch, WatchEvent, WatchParams,
};
use kube::{Api, Client};

async fn server(dir: &Path) -> (coxswain_apiserver::server::Running, Client) {
    let mut cfg = coxswain_apiserver::server::Config::new(dir);
    cfg.bind = "127.0.0.1:0".parse().expect("addr");
    cfg.history = 1_000_000;
    let running = coxswain_apiserver::server::start(cfg)
        .await
        .expect("server starts");
    let kc = kube::config::Kubeconfig::read_from(&running.kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("client config");
    (running, Client::try_from(config).expect("client"))
}

/// name → (resourceVersion, data).
fn index(list: Vec<ConfigMap>) -> BTreeMap<String, (String, Option<BTreeMap<String, String>>)> {
    list.into_iter()
        .map(|c| {
            (
                format!(
                    "{}/{}",
                    c.metadata.namespace.unwrap_or_default(),
                    c.metadata.name.unwrap_or_default()
                ),
                (c.metadata.resource_version.unwrap_or_default(), c.data),
            )
        })
        .collect()
}

async fn writer(api: Api<ConfigMap>, t: usize, stop: Arc<AtomicBool>, writes: Arc<AtomicU64>) {
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let name = format!("w{t:02}-{}", i % 12);
        let ok = match i % 5 {
            4 => api.delete(&name, &DeleteParams::default()).await.is_ok(),
            _ => {
                let cm: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": name}, "data": {"i": i.to_string()}
                }))
                .expect("configmap");
                match api.create(&PostParams::default(), &cm).await {
                    Ok(_) => true,
                    Err(_) => api
                        .patch(
                            &name,
                            &PatchParams::default(),
                            &Patch::Merge(serde_json::json!({"data": {"i": i.to_string()}})),
                        )
                        .await
                        .is_ok(),
                }
            }
        };
        if ok {
            writes.fetch_add(1, Ordering::Relaxed);
        }
        i += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_during_16_writers_restores_to_a_list_at_its_resource_version() {
    let dir = tempfile::tempdir().expect("dir");
    let (running, client) = server(dir.path()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..16)
        .map(|t| {
            tokio::spawn(writer(
                Api::namespaced(client.clone(), "default"),
                t,
                stop.clone(),
                writes.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let file = dir.path().join("snap.ndjson");
    let save = tokio::process::Command::new(env!("CARGO_BIN_EXE_coxswain"))
        .args(["snapshot", "save"])
        .arg(&file)
        .arg("--kubeconfig")
        .arg(&running.kubeconfig)
        .output()
        .await
        .expect("snapshot save runs");
    let during = writes.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    let total = writes.load(Ordering::Relaxed);
    assert!(
        save.status.success(),
        "{}",
        String::from_utf8_lossy(&save.stderr)
    );
    assert!(
        total > during,
        "writes went on after the snapshot ({during} → {total})"
    );
    let snapshot = coxswain_apiserver::server::snapshot::read(&file).expect("a complete snapshot");
    let rv = snapshot.rv.to_string();
    assert!(
        String::from_utf8_lossy(&save.stdout).contains(&format!("at resourceVersion {rv}")),
        "{}",
        String::from_utf8_lossy(&save.stdout)
    );

    let all: Api<ConfigMap> = Api::all(client.clone());
    let at_snapshot = index(
        all.list(&ListParams::default().at(&rv).matching(VersionMatch::Exact))
            .await
            .expect("list at the snapshot's resourceVersion")
            .items,
    );
    let now = index(all.list(&ListParams::default()).await.expect("list").items);
    assert_ne!(
        at_snapshot, now,
        "the writers changed objects after the snapshot"
    );
    assert!(at_snapshot.len() > 16, "{}", at_snapshot.len());

    let restored_dir = tempfile::tempdir().expect("dir");
    let restore = tokio::process::Command::new(env!("CARGO_BIN_EXE_coxswain"))
        .args(["snapshot", "restore"])
        .arg(&file)
        .arg("--data-dir")
        .arg(restored_dir.path())
        .output()
        .await
        .expect("snapshot restore runs");
    assert!(
        restore.status.success(),
        "{}",
        String::from_utf8_lossy(&restore.stderr)
    );
    // a second restore into the same directory is refused
    let again = tokio::process::Command::new(env!("CARGO_BIN_EXE_coxswain"))
        .args(["snapshot", "restore"])
        .arg(&file)
        .arg("--data-dir")
        .arg(restored_dir.path())
        .output()
        .await
        .expect("snapshot restore runs");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a database"));

    let (restored, restored_client) = server(restored_dir.path()).await;
    let restored_all: Api<ConfigMap> = Api::all(restored_client.clone());
    let list = restored_all
        .list(&ListParams::default())
        .await
        .expect("list");
    assert_eq!(
        index(list.items),
        at_snapshot,
        "the restored server holds the snapshot"
    );

    // a watch from the snapshot's resourceVersion starts there
    let restored_default: Api<ConfigMap> = Api::namespaced(restored_client, "default");
    let mut events = restored_default
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .expect("watch from the snapshot's resourceVersion")
        .boxed();
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "after-restore"}, "data": {"a": "b"}
    }))
    .expect("configmap");
    let created = restored_default
        .create(&PostParams::default(), &cm)
        .await
        .expect("create on the restored server");
    let created_rv: u64 = created
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or("0")
        .parse()
        .expect("rv");
    assert!(created_rv > snapshot.rv);
    match tokio::time::timeout(Duration::from_secs(10), events.next()).await {
        Ok(Some(Ok(WatchEvent::Added(o)))) => {
            assert_eq!(o.metadata.name.as_deref(), Some("after-restore"))
        }
        other => panic!("expected the new object's ADDED event, got {other:?}"),
    }
    restored.shutdown.cancel();
    running.shutdown.cancel();
}
