//! The StatefulSet controller and ControllerRevision history against the embedded API
//! server (envtest). `fake_kubelet` makes pods Running and Ready; orderings are
//! observed with watches. Nothing asserts how fast something happens.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_controllers::controller_utils::ControllerIdentity;
use coxswain_controllers::history::{
    hash_controller_revision, new_controller_revision, History, CONTROLLER_REVISION_HASH_LABEL,
};
use coxswain_controllers::statefulset::utils::{POD_INDEX_LABEL, POD_NAME_LABEL, REVISION_LABEL};
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::Api;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::wait_for;

const NS: &str = "default";

struct Running {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

/// A manager running the StatefulSet controller through `client`.
fn start_manager(client: kube::Client) -> Running {
    let mgr = Manager::with_client(
        client,
        ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    );
    mgr.add(coxswain_controllers::statefulset::statefulset_controller(
        &mgr, 5,
    ))
    .expect("add controller");
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = mgr.start(c).await {
            panic!("manager failed: {e}");
        }
    });
    Running { cancel, task }
}

fn kubelet(env: &TestEnv, delay: Option<Duration>) -> Running {
    let cancel = CancellationToken::new();
    let task = envtest::fake_kubelet(env.client.clone(), delay, cancel.clone());
    Running { cancel, task }
}

fn sts(name: &str, replicas: i32, extra: serde_json::Value) -> StatefulSet {
    let mut v = json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas,
            "serviceName": format!("{name}-svc"),
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]}
            }
        }
    });
    merge(&mut v["spec"], extra);
    serde_json::from_value(v).expect("statefulset")
}

fn merge(a: &mut serde_json::Value, b: serde_json::Value) {
    if let (Some(a), serde_json::Value::Object(b)) = (a.as_object_mut(), b) {
        for (k, v) in b {
            a.insert(k, v);
        }
    }
}

async fn create(client: &kube::Client, s: &StatefulSet) {
    Api::<StatefulSet>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), s)
        .await
        .expect("create StatefulSet");
}

async fn get(client: &kube::Client, name: &str) -> StatefulSet {
    Api::<StatefulSet>::namespaced(client.clone(), NS)
        .get(name)
        .await
        .expect("get StatefulSet")
}

async fn patch(client: &kube::Client, name: &str, body: serde_json::Value) {
    Api::<StatefulSet>::namespaced(client.clone(), NS)
        .patch(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .expect("patch StatefulSet");
}

async fn pods(client: &kube::Client, app: &str) -> BTreeMap<String, Pod> {
    Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect()
}

async fn revisions(client: &kube::Client, app: &str) -> Vec<ControllerRevision> {
    let mut revs = Api::<ControllerRevision>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list revisions")
        .items;
    revs.sort_by_key(|r| r.revision);
    revs
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn label<'a>(pod: &'a Pod, key: &str) -> &'a str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map_or("", String::as_str)
}

/// Wait until the status of `name` satisfies `ok`.
async fn wait_status(
    client: &kube::Client,
    name: &str,
    what: &str,
    ok: impl Fn(&StatefulSet) -> bool,
) -> StatefulSet {
    wait_for(what, || async {
        let s = get(client, name).await;
        ok(&s).then_some(s)
    })
    .await
}

fn status_of(s: &StatefulSet) -> (i32, i32, i32, i32, i32) {
    let st = s.status.clone().unwrap_or_default();
    (
        st.replicas,
        st.ready_replicas.unwrap_or(0),
        st.available_replicas.unwrap_or(0),
        st.current_replicas.unwrap_or(0),
        st.updated_replicas.unwrap_or(0),
    )
}

fn settled(s: &StatefulSet, n: i32) -> bool {
    let st = s.status.clone().unwrap_or_default();
    st.observed_generation == s.metadata.generation && status_of(s) == (n, n, n, n, n)
}

/// What a pod watch saw, in order: (event, pod name, ready, revision label).
type Seen = Arc<Mutex<Vec<(&'static str, String, bool, String)>>>;

async fn watch_pods(client: &kube::Client, app: &str) -> (Seen, JoinHandle<()>) {
    let seen: Seen = Arc::default();
    let api = Api::<Pod>::namespaced(client.clone(), NS);
    let rv = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let wp = WatchParams::default().labels(&format!("app={app}"));
    let s = seen.clone();
    let task = tokio::spawn(async move {
        let mut stream = api.watch(&wp, &rv).await.expect("watch").boxed();
        while let Some(Ok(ev)) = stream.next().await {
            let (kind, pod) = match ev {
                WatchEvent::Added(p) => ("ADDED", p),
                WatchEvent::Modified(p) => ("MODIFIED", p),
                WatchEvent::Deleted(p) => ("DELETED", p),
                _ => continue,
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            let rev = label(&pod, REVISION_LABEL).to_string();
            let kind = if kind == "MODIFIED" && pod.metadata.deletion_timestamp.is_some() {
                "DELETING"
            } else {
                kind
            };
            s.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((kind, name, is_ready(&pod), rev));
        }
    });
    (seen, task)
}

fn snapshot(seen: &Seen) -> Vec<(&'static str, String, bool, String)> {
    seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The order in which pods were first deleted (a deletion timestamp or removal).
fn deletion_order(seen: &Seen) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (kind, name, _, _) in snapshot(seen) {
        if (kind == "DELETING" || kind == "DELETED") && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

async fn events(client: &kube::Client, name: &str, reason: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
                && e.reporting_controller.as_deref() == Some("statefulset-controller")
        })
        .collect()
}

/// OrderedReady: pods are created one at a time in ordinal order, each only after its
/// predecessor is Ready; they carry their identity (name, labels, hostname, subdomain)
/// and claims from the templates; the status counts them. Scaling down deletes the
/// highest ordinal first, one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_ready_scale_up_identity_claims_and_scale_down() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, Some(Duration::from_millis(200)));
    let (seen, watch) = watch_pods(&client, "web").await;
    let set = sts(
        "web",
        3,
        json!({"volumeClaimTemplates": [{
            "metadata": {"name": "data", "labels": {"tier": "db"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
        }]}),
    );
    create(&client, &set).await;
    let s = wait_status(&client, "web", "3 ready replicas", |s| settled(s, 3)).await;

    // every pod was added only after its predecessor was seen Ready
    let log = snapshot(&seen);
    let mut ready: BTreeMap<String, bool> = BTreeMap::new();
    let mut added = Vec::new();
    for (kind, name, r, _) in &log {
        if *kind == "ADDED" {
            let ord: i32 = name
                .rsplit('-')
                .next()
                .and_then(|o| o.parse().ok())
                .expect("ordinal");
            if ord > 0 {
                assert_eq!(
                    ready.get(&format!("web-{}", ord - 1)),
                    Some(&true),
                    "{name} created before web-{} was ready: {log:?}",
                    ord - 1
                );
            }
            added.push(name.clone());
        }
        ready.insert(name.clone(), *r);
    }
    assert_eq!(added, ["web-0", "web-1", "web-2"]);

    let st = s.status.clone().unwrap_or_default();
    let revs = revisions(&client, "web").await;
    assert_eq!(revs.len(), 1);
    let rev_name = revs[0].metadata.name.clone().unwrap_or_default();
    assert_eq!(st.current_revision.as_deref(), Some(rev_name.as_str()));
    assert_eq!(st.update_revision.as_deref(), Some(rev_name.as_str()));
    assert_eq!(st.collision_count, Some(0));
    let hash = revs[0]
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
        .cloned()
        .unwrap_or_default();
    assert_eq!(rev_name, format!("web-{hash}"));

    let all = pods(&client, "web").await;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), NS);
    for (i, (name, pod)) in all.iter().enumerate() {
        assert_eq!(name, &format!("web-{i}"));
        assert_eq!(label(pod, POD_NAME_LABEL), name);
        assert_eq!(label(pod, POD_INDEX_LABEL), i.to_string());
        assert_eq!(label(pod, REVISION_LABEL), rev_name);
        let spec = pod.spec.clone().unwrap_or_default();
        assert_eq!(spec.hostname.as_deref(), Some(name.as_str()));
        assert_eq!(spec.subdomain.as_deref(), Some("web-svc"));
        let vol = &spec.volumes.unwrap_or_default()[0];
        assert_eq!(vol.name, "data");
        let claim_name = format!("data-web-{i}");
        assert_eq!(
            vol.persistent_volume_claim
                .as_ref()
                .map(|c| c.claim_name.as_str()),
            Some(claim_name.as_str())
        );
        let claim = claims.get(&claim_name).await.expect("claim exists");
        let labels = claim.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(labels.get("tier").map(String::as_str), Some("db"));
        // Retain/Retain: no owner
        assert!(claim
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty());
    }
    let notes: Vec<String> = events(&client, "web", "SuccessfulCreate")
        .await
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert!(
        notes.contains(&"create Pod web-0 in StatefulSet web successful".to_string()),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"create Claim data-web-0 Pod web-0 in StatefulSet web success".to_string()),
        "{notes:?}"
    );

    // scale to 1: web-2 goes first, then web-1
    patch(&client, "web", json!({"spec": {"replicas": 1}})).await;
    wait_status(&client, "web", "1 replica", |s| settled(s, 1)).await;
    wait_for("only web-0 left", || async {
        (pods(&client, "web").await.keys().collect::<Vec<_>>() == ["web-0"]).then_some(())
    })
    .await;
    assert_eq!(deletion_order(&seen), ["web-2", "web-1"]);
    // claims are retained
    assert!(claims.get("data-web-2").await.is_ok());

    watch.abort();
    kl.stop().await;
    mgr.stop().await;
}

/// Parallel pod management with `ordinals.start`: every pod is created at once (no
/// kubelet, nothing gets ready), named from the start ordinal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_creates_all_pods_from_the_start_ordinal() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    create(
        &client,
        &sts(
            "par",
            3,
            json!({"podManagementPolicy": "Parallel", "ordinals": {"start": 2}}),
        ),
    )
    .await;
    wait_for("pods par-2..4", || async {
        let names: Vec<String> = pods(&client, "par").await.into_keys().collect();
        (names == ["par-2", "par-3", "par-4"]).then_some(())
    })
    .await;
    let s = wait_status(&client, "par", "3 replicas, none ready", |s| {
        status_of(s) == (3, 0, 0, 3, 3)
    })
    .await;
    assert_eq!(
        pods(&client, "par").await["par-3"]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_INDEX_LABEL))
            .map(String::as_str),
        Some("3")
    );
    assert!(s.status.is_some());
    // scale-down in parallel: both condemned pods go at once, nothing ready needed
    patch(&client, "par", json!({"spec": {"replicas": 1}})).await;
    wait_for("only par-2 left", || async {
        let names: Vec<String> = pods(&client, "par").await.into_keys().collect();
        (names == ["par-2"]).then_some(())
    })
    .await;
    mgr.stop().await;
}

/// `revisionHistoryLimit` bounds the revisions no pod uses: with 0, only the revision
/// the pods run survives a series of updates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_truncated_to_the_limit() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(&client, &sts("lim", 2, json!({"revisionHistoryLimit": 0}))).await;
    wait_status(&client, "lim", "2 ready", |s| settled(s, 2)).await;
    for image in ["img:2", "img:3"] {
        patch(
            &client,
            "lim",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}),
        )
        .await;
        wait_status(&client, "lim", "rolled", |s| {
            settled(s, 2)
                && s.status.as_ref().and_then(|st| st.current_revision.clone())
                    == s.status.as_ref().and_then(|st| st.update_revision.clone())
                && s.metadata.generation == s.status.as_ref().and_then(|st| st.observed_generation)
        })
        .await;
    }
    let s = get(&client, "lim").await;
    let current = s
        .status
        .and_then(|st| st.current_revision)
        .unwrap_or_default();
    let names = wait_for("old revisions deleted", || async {
        let names: Vec<String> = revisions(&client, "lim")
            .await
            .into_iter()
            .filter_map(|r| r.metadata.name)
            .collect();
        (names.len() == 1).then_some(names)
    })
    .await;
    assert_eq!(names, [current]);
    kl.stop().await;
    mgr.stop().await;
}

/// An image update with `partition: 2` replaces only ordinal 2; lowering the partition
/// rolls the rest, highest first, and the update revision becomes current; going back
/// to the first template renumbers its revision instead of creating one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_partition_and_rollback() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(&client, &sts("roll", 3, json!({}))).await;
    let s = wait_status(&client, "roll", "3 ready", |s| settled(s, 3)).await;
    let rev1 = s
        .status
        .clone()
        .unwrap_or_default()
        .current_revision
        .unwrap_or_default();
    let first_uids: BTreeMap<String, Option<String>> = pods(&client, "roll")
        .await
        .into_iter()
        .map(|(n, p)| (n, p.metadata.uid))
        .collect();

    let (seen, watch) = watch_pods(&client, "roll").await;
    patch(
        &client,
        "roll",
        json!({"spec": {
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}},
            "template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}
        }}),
    )
    .await;
    let s = wait_status(&client, "roll", "ordinal 2 updated", |s| {
        let st = s.status.clone().unwrap_or_default();
        st.observed_generation == s.metadata.generation
            && st.updated_replicas == Some(1)
            && st.ready_replicas == Some(3)
            && st.current_replicas == Some(2)
    })
    .await;
    let st = s.status.clone().unwrap_or_default();
    let rev2 = st.update_revision.clone().unwrap_or_default();
    assert_ne!(rev1, rev2);
    assert_eq!(st.current_revision.as_deref(), Some(rev1.as_str()));
    let now = pods(&client, "roll").await;
    assert_eq!(label(&now["roll-2"], REVISION_LABEL), rev2);
    for n in ["roll-0", "roll-1"] {
        assert_eq!(label(&now[n], REVISION_LABEL), rev1);
        assert_eq!(now[n].metadata.uid, first_uids[n], "{n} untouched");
    }
    let image = |p: &Pod| {
        p.spec
            .as_ref()
            .map(|s| s.containers[0].image.clone().unwrap_or_default())
    };
    assert_eq!(image(&now["roll-2"]).as_deref(), Some("img:2"));
    assert_eq!(deletion_order(&seen), ["roll-2"]);

    // partition 0: the rest roll, 1 then 0, and the update revision becomes current
    patch(
        &client,
        "roll",
        json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}),
    )
    .await;
    let s = wait_status(&client, "roll", "all updated", |s| {
        settled(s, 3)
            && s.status
                .as_ref()
                .and_then(|st| st.current_revision.as_deref())
                == Some(rev2.as_str())
    })
    .await;
    assert_eq!(deletion_order(&seen), ["roll-2", "roll-1", "roll-0"]);
    assert_eq!(
        s.status
            .clone()
            .unwrap_or_default()
            .update_revision
            .as_deref(),
        Some(rev2.as_str())
    );

    // back to the first template: revision 1 becomes revision 3, no new object
    patch(
        &client,
        "roll",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:1"}]}}}}),
    )
    .await;
    wait_status(&client, "roll", "rolled back", |s| {
        settled(s, 3)
            && s.status
                .as_ref()
                .and_then(|st| st.current_revision.as_deref())
                == Some(rev1.as_str())
    })
    .await;
    let revs = revisions(&client, "roll").await;
    let numbered: Vec<(String, Option<i64>)> = revs
        .iter()
        .map(|r| (r.metadata.name.clone().unwrap_or_default(), r.revision))
        .collect();
    assert_eq!(numbered, [(rev2.clone(), Some(2)), (rev1.clone(), Some(3))]);
    assert!(events(&client, "roll", "FailedDelete").await.is_empty());

    watch.abort();
    kl.stop().await;
    mgr.stop().await;
}

/// A failed pod is deleted and recreated under the same name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_pods_are_recreated() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(&client, &sts("fail", 2, json!({}))).await;
    wait_status(&client, "fail", "2 ready", |s| settled(s, 2)).await;
    let before = pods(&client, "fail").await["fail-1"].metadata.uid.clone();
    Api::<Pod>::namespaced(client.clone(), NS)
        .patch_status(
            "fail-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Failed"}})),
        )
        .await
        .expect("fail the pod");
    wait_for("fail-1 recreated and ready", || async {
        let p = pods(&client, "fail").await.remove("fail-1")?;
        (p.metadata.uid != before && is_ready(&p)).then_some(())
    })
    .await;
    let notes: Vec<String> = events(&client, "fail", "SuccessfulDelete")
        .await
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert_eq!(notes, ["delete Pod fail-1 in StatefulSet fail successful"]);
    kl.stop().await;
    mgr.stop().await;
}

/// With every watch event 300 ms late and a stream of unrelated pod changes waking the
/// controller constantly, a rolling update still deletes each pod exactly once (a sync
/// on a cache that has not seen its own deletion would delete the replacement) and
/// nothing fails; a manager restarted in the middle finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_cache_and_restart_delete_each_pod_once() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(lagging(&env).await);
    let kl = kubelet(&env, None);
    create(&client, &sts("lag", 3, json!({}))).await;
    wait_status(&client, "lag", "3 ready", |s| settled(s, 3)).await;

    // unrelated pod changes every 20 ms: each wakes the controller
    let noise = {
        let client = client.clone();
        tokio::spawn(async move {
            let api = Api::<Pod>::namespaced(client, NS);
            for i in 0u64.. {
                let name = format!("lag-{}", i % 3);
                let _ = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(
                            json!({"metadata": {"annotations": {"noise": i.to_string()}}}),
                        ),
                    )
                    .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let (seen, watch) = watch_pods(&client, "lag").await;
    patch(
        &client,
        "lag",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}}),
    )
    .await;
    // restart the manager once the first replacement exists
    wait_for("lag-2 replaced", || async {
        let p = pods(&client, "lag").await.remove("lag-2")?;
        (p.spec.as_ref()?.containers[0].image.as_deref() == Some("img:2")).then_some(())
    })
    .await;
    mgr.stop().await;
    let mgr = start_manager(lagging(&env).await);
    let s = wait_status(&client, "lag", "all updated", |s| {
        settled(s, 3)
            && s.status.as_ref().and_then(|st| st.current_revision.clone())
                == s.status.as_ref().and_then(|st| st.update_revision.clone())
            && s.status
                .as_ref()
                .and_then(|st| st.current_revision.clone())
                .is_some()
    })
    .await;
    noise.abort();
    let deletions: Vec<String> = snapshot(&seen)
        .into_iter()
        .filter(|(k, ..)| *k == "DELETED")
        .map(|(_, n, ..)| n)
        .collect();
    assert_eq!(
        deletions,
        ["lag-2", "lag-1", "lag-0"],
        "each pod deleted once"
    );
    assert!(events(&client, "lag", "FailedDelete").await.is_empty());
    assert!(events(&client, "lag", "FailedCreate").await.is_empty());
    let update = s
        .status
        .and_then(|st| st.update_revision)
        .unwrap_or_default();
    for p in pods(&client, "lag").await.values() {
        assert_eq!(label(p, REVISION_LABEL), update);
    }
    watch.abort();
    kl.stop().await;
    mgr.stop().await;
}

/// OnDelete: a template change replaces nothing until a pod is deleted, which comes
/// back at the update revision; the current revision does not roll over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_delete_replaces_only_deleted_pods() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(
        &client,
        &sts("od", 2, json!({"updateStrategy": {"type": "OnDelete"}})),
    )
    .await;
    let s = wait_status(&client, "od", "2 ready", |s| settled(s, 2)).await;
    let rev1 = s
        .status
        .and_then(|st| st.current_revision)
        .unwrap_or_default();
    patch(
        &client,
        "od",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}}),
    )
    .await;
    let s = wait_status(&client, "od", "update revision observed", |s| {
        let st = s.status.clone().unwrap_or_default();
        st.observed_generation == s.metadata.generation
            && st.update_revision.as_deref().is_some_and(|u| u != rev1)
    })
    .await;
    let st = s.status.clone().unwrap_or_default();
    assert_eq!(
        (st.current_replicas, st.updated_replicas.unwrap_or(0)),
        (Some(2), 0)
    );
    let rev2 = st.update_revision.unwrap_or_default();
    Api::<Pod>::namespaced(client.clone(), NS)
        .delete("od-1", &Default::default())
        .await
        .expect("delete od-1");
    let s = wait_status(&client, "od", "od-1 replaced", |s| {
        let st = s.status.clone().unwrap_or_default();
        st.updated_replicas == Some(1) && st.ready_replicas == Some(2)
    })
    .await;
    let now = pods(&client, "od").await;
    assert_eq!(label(&now["od-1"], REVISION_LABEL), rev2);
    assert_eq!(label(&now["od-0"], REVISION_LABEL), rev1);
    assert_eq!(
        s.status.and_then(|st| st.current_revision).as_deref(),
        Some(rev1.as_str())
    );
    kl.stop().await;
    mgr.stop().await;
}

/// whenDeleted and whenScaled Delete: claims of pods in range are controlled by the
/// set; the claim of a pod condemned by a scale-down is handed to the pod before the
/// pod is deleted (the garbage collector then removes it with the pod).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_policy_owner_references() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(
        &client,
        &sts(
            "ret",
            3,
            json!({
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Delete"},
                "volumeClaimTemplates": [{"metadata": {"name": "d"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
            }),
        ),
    )
    .await;
    let s = wait_status(&client, "ret", "3 ready", |s| settled(s, 3)).await;
    let set_uid = s.metadata.uid.clone().unwrap_or_default();
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), NS);
    let controller = |c: &PersistentVolumeClaim| {
        c.metadata
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.controller == Some(true))
            .map(|r| (r.kind.clone(), r.uid.clone()))
            .collect::<Vec<_>>()
    };
    let wait_claim_owner = |name: &'static str, kind: &'static str, uid: String| {
        let claims = claims.clone();
        async move {
            wait_for(&format!("{name} controlled by {kind}"), || async {
                let c = claims.get(name).await.ok()?;
                (controller(&c) == [(kind.to_string(), uid.clone())]).then_some(())
            })
            .await
        }
    };
    for i in 0..3 {
        let name: &'static str = ["d-ret-0", "d-ret-1", "d-ret-2"][i];
        wait_claim_owner(name, "StatefulSet", set_uid.clone()).await;
    }
    let pod2 = pods(&client, "ret").await["ret-2"]
        .metadata
        .uid
        .clone()
        .unwrap_or_default();
    patch(&client, "ret", json!({"spec": {"replicas": 2}})).await;
    wait_status(&client, "ret", "2 replicas", |s| settled(s, 2)).await;
    // no garbage collector here: the claim stays, owned by the deleted pod
    wait_claim_owner("d-ret-2", "Pod", pod2).await;
    wait_claim_owner("d-ret-0", "StatefulSet", set_uid).await;
    kl.stop().await;
    mgr.stop().await;
}

/// minReadySeconds: pods count as available only after it, and the controller comes
/// back by itself to count them (no other change happens).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_ready_seconds_delays_availability() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    create(
        &client,
        &sts(
            "mrs",
            2,
            json!({"minReadySeconds": 2, "podManagementPolicy": "Parallel"}),
        ),
    )
    .await;
    let s = wait_status(&client, "mrs", "2 ready", |s| {
        s.status.as_ref().and_then(|st| st.ready_replicas) == Some(2)
    })
    .await;
    assert!(s.status.and_then(|st| st.available_replicas).unwrap_or(0) < 2);
    wait_status(&client, "mrs", "2 available", |s| settled(s, 2)).await;
    kl.stop().await;
    mgr.stop().await;
}

/// A revision written by kube-controller-manager 1.33 (its template carries
/// `creationTimestamp: null`, so its bytes differ from what 1.36 encodes) is adopted as
/// the current and update revision: no new revision, no rollout (upstream's
/// compatibility test data, revision test-c77f6d978).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revision_from_an_older_encoder_starts_no_rollout() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let set: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "test", "namespace": NS, "annotations": {"test": "value"}},
        "spec": {
            "replicas": 1,
            "serviceName": "",
            "selector": {"matchLabels": {"app": "foo"}},
            "template": {
                "metadata": {"labels": {"app": "foo"}, "annotations": {"test": "value"}},
                "spec": {"containers": [{"name": "test", "image": "test"}]}
            }
        }
    }))
    .expect("set");
    let api = Api::<StatefulSet>::namespaced(client.clone(), NS);
    let created = api
        .create(&PostParams::default(), &set)
        .await
        .expect("create");
    let raw = r#"{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":{},"terminationGracePeriodSeconds":30}}}}"#;
    let old: ControllerRevision = serde_json::from_value(json!({
        "metadata": {
            "name": "test-c77f6d978",
            "namespace": NS,
            "labels": {"app": "foo", CONTROLLER_REVISION_HASH_LABEL: "c77f6d978"},
            "ownerReferences": [coxswain_runtime::controllerutil::new_controller_ref(&created)],
        },
        "data": serde_json::from_str::<serde_json::Value>(raw).expect("raw"),
        "revision": 1
    }))
    .expect("revision");
    Api::<ControllerRevision>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &old)
        .await
        .expect("old revision");
    let mgr = start_manager(client.clone());
    let kl = kubelet(&env, None);
    let s = wait_status(&client, "test", "1 ready", |s| settled(s, 1)).await;
    let st = s.status.unwrap_or_default();
    assert_eq!(st.current_revision.as_deref(), Some("test-c77f6d978"));
    assert_eq!(st.update_revision.as_deref(), Some("test-c77f6d978"));
    let names: Vec<String> = revisions(&client, "foo")
        .await
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    assert_eq!(names, ["test-c77f6d978"]);
    assert_eq!(
        label(&pods(&client, "foo").await["test-0"], REVISION_LABEL),
        "test-c77f6d978"
    );
    kl.stop().await;
    mgr.stop().await;
}

/// A client whose watches deliver every event 300 ms late.
async fn lagging(env: &TestEnv) -> kube::Client {
    let config = env.kube_config().await.expect("config");
    kube::client::ClientBuilder::try_from(config)
        .expect("client builder")
        .with_layer(&crate::replicaset::lag::WatchLag(Duration::from_millis(
            300,
        )))
        .build()
}

// ----- history against the API (upstream controller_history_test.go) -----

fn history_for(env: &TestEnv) -> (History, CancellationToken) {
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    (History::new(Client::new(cache)), cancel)
}

async fn created_set(client: &kube::Client, name: &str, labels: serde_json::Value) -> StatefulSet {
    let mut s = sts(name, 3, json!({}));
    s.spec.selector.match_labels = serde_json::from_value(labels.clone()).ok();
    s.spec.template.metadata = serde_json::from_value(json!({"labels": labels})).ok();
    Api::<StatefulSet>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &s)
        .await
        .expect("create set")
}

fn rev_of(s: &StatefulSet, revision: i64) -> ControllerRevision {
    new_controller_revision(
        &s.metadata,
        coxswain_runtime::controllerutil::new_controller_ref(s),
        s.spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref()),
        serde_json::to_value(&s.spec.template).expect("template"),
        revision,
        Some(0),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_create_collision_list_adopt_release_update_delete() {
    let env = envtest::start().await.expect("test server");
    let client = env.client.clone();
    let (history, cancel) = history_for(&env);
    let ss1 = created_set(&client, "ss1", json!({"foo": "bar"})).await;
    let ss2 = created_set(&client, "ss2", json!({"goo": "car"})).await;
    let api = Api::<ControllerRevision>::namespaced(client.clone(), NS);
    let selector =
        apimachinery::selector::LabelSelector::from_meta(&ss1.spec.selector).expect("selector");

    // creates new; the same data again returns the existing revision
    let rev1 = rev_of(&ss1, 1);
    let mut count = 0;
    let created = history
        .create_controller_revision(&ss1.metadata, &rev1, &mut count)
        .await
        .expect("create");
    assert_eq!(created.metadata.name, rev1.metadata.name);
    assert_eq!(count, 0);
    let again = history
        .create_controller_revision(&ss1.metadata, &rev1, &mut count)
        .await
        .expect("create again");
    assert_eq!(
        (again.metadata.uid, count),
        (created.metadata.uid.clone(), 0)
    );
    // parents differ: no conflict
    let rev2_1 = rev_of(&ss2, 1);
    let mut c2 = 0;
    let created2 = history
        .create_controller_revision(&ss2.metadata, &rev2_1, &mut c2)
        .await
        .expect("create ss2");
    assert_eq!(created2.metadata.name, rev2_1.metadata.name);

    // renames on conflict: the name is taken by other data
    let mut changed = ss1.clone();
    changed.spec.template.metadata =
        serde_json::from_value(json!({"labels": {"foo": "not_bar"}})).ok();
    let mut other = rev_of(&changed, 2);
    let taken_hash = hash_controller_revision(&other, Some(0));
    let mut squatter = rev1.clone();
    squatter.metadata.name = Some(format!("ss1-{taken_hash}"));
    squatter.metadata.labels = None;
    api.create(&PostParams::default(), &squatter)
        .await
        .expect("squatter");
    other.metadata.name = Some(format!("ss1-{taken_hash}"));
    let mut count = 0;
    let renamed = history
        .create_controller_revision(&ss1.metadata, &other, &mut count)
        .await
        .expect("renamed");
    assert_eq!(count, 1);
    assert_eq!(
        renamed.metadata.name,
        Some(format!("ss1-{}", hash_controller_revision(&other, Some(1))))
    );
    // the hash label keeps the first attempt's hash (upstream quirk)
    assert_eq!(
        renamed
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL)),
        Some(&taken_hash)
    );
    let mut count2 = 1;
    let same = history
        .create_controller_revision(&ss1.metadata, &other, &mut count2)
        .await
        .expect("same again");
    assert_eq!(
        (same.metadata.name, count2),
        (renamed.metadata.name.clone(), 1)
    );

    // list: ss1's own and orphans matching its selector, not another owner's
    let mut orphan = rev_of(&ss1, 3);
    orphan.metadata.name = Some("ss1-orphan".into());
    orphan.metadata.owner_references = None;
    let orphan = api
        .create(&PostParams::default(), &orphan)
        .await
        .expect("orphan");
    let mut foreign = rev_of(&ss1, 1);
    foreign.metadata.name = Some("ss1-foreign".into());
    foreign.metadata.owner_references =
        Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
            &ss2,
        )]);
    api.create(&PostParams::default(), &foreign)
        .await
        .expect("foreign");
    let mut want = vec![
        created.metadata.name.clone().unwrap_or_default(),
        "ss1-orphan".to_string(),
    ];
    want.sort();
    wait_for("the cache lists ss1's revisions and the orphan", || async {
        let mut names: Vec<String> = history
            .list_controller_revisions(&ss1.metadata, &selector)
            .await
            .ok()?
            .iter()
            .filter_map(|r| r.metadata.name.clone())
            .collect();
        names.sort();
        (names == want).then_some(())
    })
    .await;

    // adopt: an orphan succeeds; an owned revision fails; a missing one is NotFound
    let ident = ControllerIdentity::of(&ss1);
    let adopted = history
        .adopt_controller_revision(&ident, &orphan)
        .await
        .expect("adopt");
    assert!(ident.controls(&adopted.metadata));
    let owned = history.adopt_controller_revision(&ident, &created2).await;
    assert!(owned
        .unwrap_err()
        .to_string()
        .starts_with("attempt to adopt revision owned by"));
    let mut ghost = orphan.clone();
    ghost.metadata.name = Some("ss1-ghost".into());
    assert!(history
        .adopt_controller_revision(&ident, &ghost)
        .await
        .unwrap_err()
        .is_not_found());

    // release: owned, orphan, other owner, missing: all fine
    let released = history
        .release_controller_revision(&ss1.metadata, &adopted)
        .await
        .expect("release")
        .expect("released");
    assert!(!ident.controls(&released.metadata));
    history
        .release_controller_revision(&ss1.metadata, &released)
        .await
        .expect("orphan");
    history
        .release_controller_revision(&ss1.metadata, &created2)
        .await
        .expect("other");
    assert!(history
        .release_controller_revision(&ss1.metadata, &ghost)
        .await
        .expect("missing")
        .is_none());

    // update: a new number, a no-op, and a conflict resolved from the cache
    let updated = history
        .update_controller_revision(&created, 7)
        .await
        .expect("update");
    assert_eq!(updated.revision, Some(7));
    let noop = history
        .update_controller_revision(&updated, 7)
        .await
        .expect("noop");
    assert_eq!(
        noop.metadata.resource_version,
        updated.metadata.resource_version
    );
    // `created` is stale now: the first update conflicts, the retry reads the cache
    let retried = history
        .update_controller_revision(&created, 9)
        .await
        .expect("retried");
    assert_eq!(retried.revision, Some(9));

    // delete: existing succeeds, missing fails
    history
        .delete_controller_revision(&retried)
        .await
        .expect("delete");
    assert!(history.delete_controller_revision(&retried).await.is_err());

    cancel.cancel();
}
