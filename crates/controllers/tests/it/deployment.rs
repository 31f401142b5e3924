//! The Deployment controller against the embedded API server (envtest).
//!
//! A deliberately minimal ReplicaSet controller lives in this file (pods to match
//! `spec.replicas`, the status counts), so that these tests do not depend on the real one.
//! Pods become Running and Ready through `envtest::fake_kubelet`, or through a selective
//! stand-in that leaves pods of a "broken" image unready. Invariants of a rollout are
//! checked on every pod change a watch observes, not by sampling at intervals.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use coxswain_controllers::deployment::{deployment_controller, util};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{Action, Controller, ReconcileError, Reconciler};
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::wait_for;

const NS: &str = "default";

// ---------------------------------------------------------------------------------------
// a minimal ReplicaSet controller (tests only)

fn selector_string(rs: &ReplicaSet) -> String {
    rs.spec
        .selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn active(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    p.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded") | Some("Failed"))
}

async fn sync_replica_set(client: kube::Client, key: ObjectKey) -> Result<Action, kube::Error> {
    let ns = key.namespace().unwrap_or(NS);
    let rss: Api<ReplicaSet> = Api::namespaced(client.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(client, ns);
    // read fresh: a stale spec must never create pods beyond the current one
    let Some(rs) = rss.get_opt(key.name()).await? else {
        return Ok(Action::Done);
    };
    if rs.metadata.deletion_timestamp.is_some() {
        return Ok(Action::Done);
    }
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let lp = ListParams::default().labels(&selector_string(&rs));
    let owned = |list: Vec<Pod>| -> Vec<Pod> {
        list.into_iter()
            .filter(|p| util::is_controlled_by(&p.metadata, &uid) && active(p))
            .collect()
    };
    let mut mine = owned(pods.list(&lp).await?.items);
    let want = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    if mine.len() < want {
        let template = rs.spec.template.clone().unwrap_or_default();
        for _ in mine.len()..want {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {
                    "generateName": format!("{}-", key.name()),
                    "labels": template.metadata.as_ref().and_then(|m| m.labels.clone()),
                    "ownerReferences": [{
                        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": key.name(),
                        "uid": uid, "controller": true, "blockOwnerDeletion": true,
                    }],
                },
                "spec": template.spec,
            }))
            .map_err(kube::Error::SerdeError)?;
            pods.create(&PostParams::default(), &pod).await?;
        }
    } else if mine.len() > want {
        // unready pods go first, then the newest
        mine.sort_by(|a, b| {
            pod_ready(a).cmp(&pod_ready(b)).then_with(|| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
            })
        });
        for p in &mine[..mine.len() - want] {
            let name = p.metadata.name.clone().unwrap_or_default();
            pods.delete(&name, &DeleteParams::default()).await?;
        }
    }
    let now = owned(pods.list(&lp).await?.items);
    let ready = now.iter().filter(|p| pod_ready(p)).count();
    let status = json!({"status": {
        "replicas": now.len(),
        "fullyLabeledReplicas": now.len(),
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": rs.metadata.generation,
    }});
    rss.patch_status(key.name(), &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(Action::Done)
}

fn replicaset_controller(mgr: &Manager) -> Controller<impl Reconciler> {
    let client = mgr.kube_client().clone();
    ControllerBuilder::new(mgr.cache())
        .named("test-replicaset")
        .for_::<ReplicaSet>()
        .owns::<Pod>()
        .build(move |_ctx, key: ObjectKey| {
            let client = client.clone();
            async move {
                sync_replica_set(client, key)
                    .await
                    .map_err(|e| ReconcileError::msg(e.to_string()))
            }
        })
}

// ---------------------------------------------------------------------------------------
// kubelet stand-ins

/// Marks pods Running and Ready, except those whose image contains "broken".
fn selective_kubelet(client: kube::Client, cancel: CancellationToken) -> Cache {
    let cache = Cache::new(client.clone(), cancel);
    let informer = cache.informer::<Pod>();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ObjectKey>();
    informer.add_handler(move |c| {
        if let Change::Added(p) = c {
            let image = p
                .spec
                .as_ref()
                .and_then(|s| s.containers.first())
                .and_then(|c| c.image.clone())
                .unwrap_or_default();
            if !image.contains("broken") {
                let _ = tx.send(ObjectKey::of(p.as_ref()));
            }
        }
    });
    tokio::spawn(async move {
        while let Some(key) = rx.recv().await {
            let pods: Api<Pod> = Api::namespaced(client.clone(), key.namespace().unwrap_or(NS));
            let status = json!({"status": {
                "phase": "Running",
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "ContainersReady", "status": "True"},
                ],
            }});
            let _ = pods
                .patch_status(key.name(), &PatchParams::default(), &Patch::Merge(&status))
                .await;
        }
    });
    cache
}

enum Kubelet {
    Fake,
    Selective,
    None,
}

// ---------------------------------------------------------------------------------------
// harness

struct Harness {
    env: TestEnv,
    cancel: CancellationToken,
    _caches: Vec<Cache>,
}

impl Harness {
    async fn start(kubelet: Kubelet) -> Harness {
        let env = envtest::start().await.expect("test server");
        let cancel = CancellationToken::new();
        let mgr = Manager::new(
            env.kube_config().await.expect("config"),
            ManagerOptions {
                metrics_bind_address: "0".into(),
                ..Default::default()
            },
        )
        .expect("manager");
        mgr.add(deployment_controller(&mgr, 2))
            .expect("deployment controller");
        mgr.add(replicaset_controller(&mgr))
            .expect("replicaset controller");
        let mgr = Arc::new(mgr);
        let (m, c) = (mgr.clone(), cancel.clone());
        tokio::spawn(async move { m.start(c).await });
        let mut caches = Vec::new();
        match kubelet {
            Kubelet::Fake => {
                envtest::fake_kubelet(env.client.clone(), None, cancel.clone());
            }
            Kubelet::Selective => {
                caches.push(selective_kubelet(env.client.clone(), cancel.clone()))
            }
            Kubelet::None => {}
        }
        Harness {
            env,
            cancel,
            _caches: caches,
        }
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.env.client.clone(), NS)
    }

    fn replicasets(&self) -> Api<ReplicaSet> {
        Api::namespaced(self.env.client.clone(), NS)
    }

    async fn create(&self, d: &Deployment) -> Deployment {
        self.deployments()
            .create(&PostParams::default(), d)
            .await
            .expect("create deployment")
    }

    async fn get(&self, name: &str) -> Deployment {
        self.deployments().get(name).await.expect("get deployment")
    }

    async fn patch(&self, name: &str, patch: serde_json::Value) {
        self.deployments()
            .patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            .expect("patch deployment");
    }

    /// `kubectl set image` (with a change-cause, as `--record` did).
    async fn set_image(&self, name: &str, image: &str) {
        self.patch(
            name,
            json!({
                "metadata": {"annotations": {util::CHANGE_CAUSE_ANNOTATION: format!("set image {image}")}},
                "spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}},
            }),
        )
        .await;
    }

    /// The ReplicaSets controlled by the Deployment, lowest revision first.
    async fn owned(&self, d: &Deployment) -> Vec<ReplicaSet> {
        let uid = d.metadata.uid.clone().unwrap_or_default();
        let mut v: Vec<ReplicaSet> = self
            .replicasets()
            .list(&ListParams::default())
            .await
            .expect("list replicasets")
            .items
            .into_iter()
            .filter(|rs| util::is_controlled_by(&rs.metadata, &uid))
            .collect();
        util::sort_by_revision(&mut v);
        v
    }

    /// Wait until `kubectl rollout status` would say "successfully rolled out".
    async fn rolled_out(&self, name: &str) -> Deployment {
        wait_for(&format!("rollout of {name}"), || async {
            let d = self.get(name).await;
            rollout_done(&d).expect("rollout failed").then_some(d)
        })
        .await
    }

    async fn events(&self, name: &str) -> Vec<(String, String)> {
        let api: Api<Event> = Api::namespaced(self.env.client.clone(), NS);
        let mut v: Vec<Event> = api
            .list(&ListParams::default())
            .await
            .expect("events")
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .collect();
        v.sort_by(|a, b| {
            a.event_time
                .cmp(&b.event_time)
                .then(a.metadata.name.cmp(&b.metadata.name))
        });
        v.into_iter()
            .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
            .collect()
    }

    async fn wait_event(&self, name: &str, reason: &str, note: &str) {
        wait_for(&format!("event {reason}: {note}"), || async {
            self.events(name)
                .await
                .iter()
                .any(|(r, n)| r == reason && n == note)
                .then_some(())
        })
        .await
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// What `kubectl rollout status` decides (polymorphichelpers `DeploymentStatusViewer`):
/// `Ok(true)` done, `Ok(false)` waiting, `Err` exceeded the progress deadline.
fn rollout_done(d: &Deployment) -> Result<bool, String> {
    let st = d.status.clone().unwrap_or_default();
    if d.metadata.generation.unwrap_or(0) > st.observed_generation.unwrap_or(0) {
        return Ok(false);
    }
    if util::deployment_condition(d, util::PROGRESSING).and_then(|c| c.reason.as_deref())
        == Some(util::TIMED_OUT_REASON)
    {
        return Err(format!(
            "deployment {:?} exceeded its progress deadline",
            d.metadata.name
        ));
    }
    let updated = st.updated_replicas.unwrap_or(0);
    Ok(updated >= d.spec.replicas.unwrap_or(1)
        && st.replicas.unwrap_or(0) <= updated
        && st.available_replicas.unwrap_or(0) >= updated)
}

fn deployment(name: &str, replicas: i32, image: &str, strategy: serde_json::Value) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": {util::CHANGE_CAUSE_ANNOTATION: "create"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }))
    .expect("deployment")
}

fn rolling(surge: serde_json::Value, unavailable: serde_json::Value) -> serde_json::Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})
}

fn condition(d: &Deployment, type_: &str) -> (String, String) {
    util::deployment_condition(d, type_)
        .map(|c| {
            (
                c.status.clone().unwrap_or_default(),
                c.reason.clone().unwrap_or_default(),
            )
        })
        .unwrap_or_default()
}

fn ann<'a>(rs: &'a ReplicaSet, key: &str) -> Option<&'a str> {
    util::annotation(&rs.metadata, key)
}

fn image(rs: &ReplicaSet) -> String {
    util::rs_template(rs)
        .spec
        .and_then(|s| s.containers.first().and_then(|c| c.image.clone()))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// the rollout invariants, checked on every pod change

#[derive(Debug, Default)]
struct Seen {
    changes: usize,
    max_pods: usize,
    min_available: Option<usize>,
    hashes_at_once: usize,
}

/// Watch the pods labelled `app=<app>` and record, after every change, the active pods,
/// the available ones and how many template hashes run at once.
fn watch_pods(
    client: kube::Client,
    cancel: CancellationToken,
    app: &str,
) -> (Cache, Arc<Mutex<Seen>>) {
    let cache = Cache::new(client, cancel);
    let informer = cache.informer::<Pod>();
    let store = informer.store().clone();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (s, app) = (seen.clone(), app.to_string());
    informer.add_handler(move |_| {
        let pods: Vec<Arc<Pod>> = store
            .list_namespace(NS)
            .into_iter()
            .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("app")) == Some(&app))
            .filter(|p| active(p))
            .collect();
        let available = pods.iter().filter(|p| pod_ready(p)).count();
        let hashes: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| {
                p.metadata
                    .labels
                    .as_ref()?
                    .get(util::DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY)
                    .cloned()
            })
            .collect();
        let mut seen = s.lock().unwrap_or_else(|e| e.into_inner());
        seen.changes += 1;
        seen.max_pods = seen.max_pods.max(pods.len());
        seen.min_available = Some(seen.min_available.map_or(available, |m| m.min(available)));
        seen.hashes_at_once = seen.hashes_at_once.max(hashes.len());
    });
    (cache, seen)
}

// ---------------------------------------------------------------------------------------
// tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolling_update_keeps_surge_and_availability_bounds() {
    let h = Harness::start(Kubelet::Fake).await;
    // (name, replicas, maxSurge, maxUnavailable, resolved surge, resolved unavailable)
    let cases = [
        ("surge", 3, json!(1), json!(0), 1, 0),
        ("unavail", 4, json!(0), json!(1), 0, 1),
        ("pct", 4, json!("25%"), json!("25%"), 1, 1),
    ];
    for (name, replicas, surge, unavail, _, _) in &cases {
        h.create(&deployment(
            name,
            *replicas,
            "nginx:1",
            rolling(surge.clone(), unavail.clone()),
        ))
        .await;
    }
    let mut watches = Vec::new();
    for (name, replicas, _, _, surge, unavail) in cases.clone() {
        let d = h.rolled_out(name).await;
        // the first rollout: one ReplicaSet <name>-<hash>, revision 1, conditions as upstream
        let rss = h.owned(&d).await;
        assert_eq!(rss.len(), 1, "{name}");
        let first = &rss[0];
        let hash = first
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(util::DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY))
            .cloned()
            .expect("hash label");
        assert_eq!(
            first.metadata.name.as_deref(),
            Some(format!("{name}-{hash}").as_str())
        );
        assert_eq!(
            first
                .spec
                .selector
                .match_labels
                .as_ref()
                .and_then(|m| m.get(util::DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY)),
            Some(&hash)
        );
        assert_eq!(ann(first, util::REVISION_ANNOTATION), Some("1"));
        assert_eq!(ann(first, util::CHANGE_CAUSE_ANNOTATION), Some("create"));
        assert_eq!(
            ann(first, util::DESIRED_REPLICAS_ANNOTATION),
            Some(replicas.to_string().as_str())
        );
        assert_eq!(
            ann(first, util::MAX_REPLICAS_ANNOTATION),
            Some((replicas + surge).to_string().as_str())
        );
        let d = wait_for("revision annotation", || async {
            let d = h.get(name).await;
            (util::annotation(&d.metadata, util::REVISION_ANNOTATION) == Some("1")).then_some(d)
        })
        .await;
        assert_eq!(
            condition(&d, util::PROGRESSING),
            ("True".into(), util::NEW_RS_AVAILABLE_REASON.into())
        );
        assert_eq!(
            condition(&d, util::AVAILABLE),
            ("True".into(), util::MINIMUM_REPLICAS_AVAILABLE.into())
        );
        let first_name = first.metadata.name.clone().unwrap_or_default();
        h.wait_event(
            name,
            "ScalingReplicaSet",
            &format!("Scaled up replica set {first_name} from 0 to {replicas}"),
        )
        .await;

        let (cache, seen) = watch_pods(h.env.client.clone(), h.cancel.clone(), name);
        cache.informer::<Pod>().wait_for_sync().await;
        watches.push((name, replicas, surge, unavail, first_name, cache, seen));
    }
    for (name, ..) in &cases {
        h.set_image(name, "nginx:2").await;
    }
    for (name, replicas, surge, unavail, first_name, _cache, seen) in watches {
        let d = h.rolled_out(name).await;
        let rss = h.owned(&d).await;
        assert_eq!(rss.len(), 2, "{name}");
        let (old, new) = (&rss[0], &rss[1]);
        assert_eq!(old.metadata.name.as_deref(), Some(first_name.as_str()));
        assert_eq!(old.spec.replicas, Some(0), "{name}: old scaled to zero");
        assert_eq!(new.spec.replicas, Some(replicas));
        assert_eq!(image(new), "nginx:2");
        assert_eq!(ann(new, util::REVISION_ANNOTATION), Some("2"));
        assert_eq!(
            ann(new, util::CHANGE_CAUSE_ANNOTATION),
            Some("set image nginx:2")
        );
        assert_eq!(
            ann(old, util::CHANGE_CAUSE_ANNOTATION),
            Some("create"),
            "kubectl rollout history keeps the old cause"
        );
        let seen = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
        assert!(
            seen.changes > replicas as usize,
            "{name}: the watch saw the rollout ({seen:?})"
        );
        assert!(
            seen.max_pods <= (replicas + surge) as usize,
            "{name}: pods above replicas+maxSurge: {seen:?}"
        );
        assert!(
            seen.min_available.unwrap_or(0) >= (replicas - unavail) as usize,
            "{name}: availability below replicas-maxUnavailable: {seen:?}"
        );
        // the events tell the steps in order: the new ReplicaSet grows, the old one shrinks
        let new_name = new.metadata.name.clone().unwrap_or_default();
        let down = format!("Scaled down replica set {first_name} from ");
        wait_for("the old ReplicaSet scaled to zero", || async {
            let events = h.events(name).await;
            events
                .iter()
                .any(|(r, n)| {
                    r == "ScalingReplicaSet" && n.starts_with(&down) && n.ends_with(" to 0")
                })
                .then_some(())
        })
        .await;
        let events = h.events(name).await;
        let ups = events
            .iter()
            .filter(|(r, n)| {
                r == "ScalingReplicaSet"
                    && n.starts_with(&format!("Scaled up replica set {new_name}"))
            })
            .count();
        assert!(ups >= 1, "{name}: {events:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_reuses_the_old_replica_set_with_a_new_revision() {
    let h = Harness::start(Kubelet::Fake).await;
    h.create(&deployment(
        "web",
        2,
        "nginx:1",
        rolling(json!(1), json!(0)),
    ))
    .await;
    h.rolled_out("web").await;
    h.set_image("web", "nginx:2").await;
    let d = h.rolled_out("web").await;
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 2);
    let (v1, v2) = (rss[0].clone(), rss[1].clone());

    // kubectl rollout undo: a JSON patch of the template (hash label removed) and the
    // annotations of revision 1
    let mut template = serde_json::to_value(util::rs_template(&v1)).expect("template");
    if let Some(l) = template
        .pointer_mut("/metadata/labels")
        .and_then(|l| l.as_object_mut())
    {
        l.remove(util::DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY);
    }
    let mut annotations: BTreeMap<String, String> = d
        .metadata
        .annotations
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| util::skip_copy_annotation(k))
        .collect();
    for (k, v) in v1.metadata.annotations.clone().unwrap_or_default() {
        if !util::skip_copy_annotation(&k) {
            annotations.insert(k, v);
        }
    }
    let patch = json!([
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": annotations},
    ]);
    let req = http::Request::patch(format!("/apis/apps/v1/namespaces/{NS}/deployments/web"))
        .header("Content-Type", "application/json-patch+json")
        .body(serde_json::to_vec(&patch).expect("patch"))
        .expect("request");
    let _: Deployment = h.env.client.request(req).await.expect("json patch");

    h.rolled_out("web").await;
    let d = wait_for("revision 3", || async {
        let d = h.get("web").await;
        (util::annotation(&d.metadata, util::REVISION_ANNOTATION) == Some("3")).then_some(d)
    })
    .await;
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 2, "no third ReplicaSet: revision 1's is reused");
    let v1_now = rss
        .iter()
        .find(|rs| rs.metadata.name == v1.metadata.name)
        .expect("v1 kept");
    assert_eq!(ann(v1_now, util::REVISION_ANNOTATION), Some("3"));
    assert_eq!(ann(v1_now, util::REVISION_HISTORY_ANNOTATION), Some("1"));
    assert_eq!(v1_now.spec.replicas, Some(2));
    assert_eq!(
        util::annotation(&d.metadata, util::CHANGE_CAUSE_ANNOTATION),
        Some("create")
    );
    let v2_now = rss
        .iter()
        .find(|rs| rs.metadata.name == v2.metadata.name)
        .expect("v2 kept");
    assert_eq!(v2_now.spec.replicas, Some(0));

    // the deprecated rollback annotation, to revision 2
    h.patch(
        "web",
        json!({"metadata": {"annotations": {util::DEPRECATED_ROLLBACK_TO: "2"}}}),
    )
    .await;
    let d = wait_for("rolled back to revision 2", || async {
        let d = h.get("web").await;
        let done = util::annotation(&d.metadata, util::REVISION_ANNOTATION) == Some("4")
            && rollout_done(&d) == Ok(true);
        done.then_some(d)
    })
    .await;
    assert_eq!(
        util::annotation(&d.metadata, util::DEPRECATED_ROLLBACK_TO),
        None,
        "the request is cleared"
    );
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 2);
    let v2_now = rss
        .iter()
        .find(|rs| rs.metadata.name == v2.metadata.name)
        .expect("v2 kept");
    assert_eq!(ann(v2_now, util::REVISION_ANNOTATION), Some("4"));
    assert_eq!(ann(v2_now, util::REVISION_HISTORY_ANNOTATION), Some("2"));
    assert_eq!(image(v2_now), "nginx:2");
    h.wait_event(
        "web",
        util::ROLLBACK_DONE,
        "Rolled back deployment \"web\" to revision 2",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stops_the_rollout_and_resume_continues_it() {
    let h = Harness::start(Kubelet::Fake).await;
    let mut d = deployment("web", 2, "nginx:1", rolling(json!(1), json!(0)));
    d.spec.progress_deadline_seconds = Some(600);
    h.create(&d).await;
    let d = h.rolled_out("web").await;
    assert_eq!(h.owned(&d).await.len(), 1);

    h.patch("web", json!({"spec": {"paused": true}})).await;
    h.set_image("web", "nginx:2").await;
    // scaling still works while paused
    h.deployments()
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale");
    let d = wait_for("paused and observed", || async {
        let d = h.get("web").await;
        let st = d.status.clone().unwrap_or_default();
        let observed = st.observed_generation >= d.metadata.generation;
        let paused = condition(&d, util::PROGRESSING)
            == ("Unknown".into(), util::PAUSED_DEPLOY_REASON.into());
        (observed && paused && st.available_replicas == Some(3)).then_some(d)
    })
    .await;
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 1, "no rollout while paused");
    assert_eq!(image(&rss[0]), "nginx:1");
    assert_eq!(rss[0].spec.replicas, Some(3), "scaled while paused");
    assert_eq!(
        rollout_done(&d),
        Ok(false),
        "kubectl rollout status waits for the new template"
    );

    h.patch("web", json!({"spec": {"paused": false}})).await;
    let d = h.rolled_out("web").await;
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 2);
    assert_eq!(image(&rss[1]), "nginx:2");
    assert_eq!(rss[1].spec.replicas, Some(3));
    assert_eq!(rss[0].spec.replicas, Some(0));
    let d = wait_for("complete condition", || async {
        let d = h.get("web").await;
        (condition(&d, util::PROGRESSING).1 == util::NEW_RS_AVAILABLE_REASON).then_some(d)
    })
    .await;
    assert_eq!(condition(&d, util::PROGRESSING).0, "True");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_mid_rollout_is_proportional() {
    let h = Harness::start(Kubelet::Selective).await;
    h.create(&deployment(
        "web",
        10,
        "nginx:1",
        rolling(json!(3), json!(2)),
    ))
    .await;
    let d = h.rolled_out("web").await;
    let uid = d.metadata.uid.clone().unwrap_or_default();
    // a template whose pods never become ready: the rollout stops at 8 old + 5 new
    h.set_image("web", "nginx:broken").await;
    let sizes = |rss: &[ReplicaSet]| {
        rss.iter()
            .map(|rs| rs.spec.replicas.unwrap_or(0))
            .collect::<Vec<_>>()
    };
    wait_for("stuck rollout 8 + 5", || async {
        let rss = h.owned(&h.get("web").await).await;
        (sizes(&rss) == [8, 5]).then_some(())
    })
    .await;
    h.deployments()
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 30}})),
        )
        .await
        .expect("scale");
    // upstream e2e testProportionalScalingDeployment: 33 allowed, shared 20 and 13
    let rss = wait_for("proportional 20 + 13", || async {
        let d = h.get("web").await;
        let rss = h.owned(&d).await;
        (sizes(&rss) == [20, 13]).then_some(rss)
    })
    .await;
    for rs in &rss {
        assert!(util::is_controlled_by(&rs.metadata, &uid));
        assert_eq!(ann(rs, util::DESIRED_REPLICAS_ANNOTATION), Some("30"));
        assert_eq!(ann(rs, util::MAX_REPLICAS_ANNOTATION), Some("33"));
    }
    // and it stays there: the old pods are available, the new ones never
    let d = wait_for("status after scaling", || async {
        let d = h.get("web").await;
        let st = d.status.clone().unwrap_or_default();
        (st.replicas == Some(33) && st.available_replicas == Some(20)).then_some(d)
    })
    .await;
    assert_eq!(sizes(&h.owned(&d).await), [20, 13]);
    assert_eq!(d.status.and_then(|s| s.updated_replicas), Some(13));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recreate_never_runs_old_and_new_pods_together() {
    let h = Harness::start(Kubelet::Fake).await;
    h.create(&deployment(
        "web",
        3,
        "nginx:1",
        json!({"type": "Recreate"}),
    ))
    .await;
    let d = h.rolled_out("web").await;
    assert_eq!(h.owned(&d).await.len(), 1);
    let (cache, seen) = watch_pods(h.env.client.clone(), h.cancel.clone(), "web");
    cache.informer::<Pod>().wait_for_sync().await;
    h.set_image("web", "nginx:2").await;
    let d2 = h.rolled_out("web").await;
    assert!(d2.metadata.generation > d.metadata.generation);
    let rss = h.owned(&d2).await;
    assert_eq!(rss.len(), 2);
    assert_eq!(
        (rss[0].spec.replicas, rss[1].spec.replicas),
        (Some(0), Some(3))
    );
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.changes > 3, "the watch saw the rollout: {seen:?}");
    assert_eq!(
        seen.hashes_at_once, 1,
        "old and new pods ran together: {seen:?}"
    );
    assert!(seen.max_pods <= 3, "{seen:?}");
    assert_eq!(
        seen.min_available,
        Some(0),
        "Recreate goes through zero: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_deadline_exceeded_when_pods_never_become_ready() {
    let h = Harness::start(Kubelet::None).await;
    let mut d = deployment("web", 2, "nginx:1", rolling(json!(1), json!(0)));
    d.spec.progress_deadline_seconds = Some(2);
    h.create(&d).await;
    let d = wait_for("ProgressDeadlineExceeded", || async {
        let d = h.get("web").await;
        (condition(&d, util::PROGRESSING) == ("False".into(), util::TIMED_OUT_REASON.into()))
            .then_some(d)
    })
    .await;
    assert!(rollout_done(&d).is_err(), "kubectl rollout status fails");
    assert_eq!(
        condition(&d, util::AVAILABLE),
        ("False".into(), util::MINIMUM_REPLICAS_UNAVAILABLE.into())
    );
    let msg = util::deployment_condition(&d, util::PROGRESSING)
        .and_then(|c| c.message.clone())
        .unwrap_or_default();
    assert!(
        msg.starts_with("ReplicaSet \"web-") && msg.ends_with("\" has timed out progressing."),
        "{msg}"
    );
    let st = d.status.unwrap_or_default();
    assert_eq!(
        (
            st.replicas,
            st.updated_replicas,
            st.available_replicas,
            st.unavailable_replicas
        ),
        (Some(2), Some(2), None, Some(2))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hash_collision_bumps_collision_count() {
    let h = Harness::start(Kubelet::Fake).await;
    let mut d = deployment("web", 1, "nginx:1", rolling(json!(1), json!(0)));
    d.spec.paused = Some(true);
    let created = h.create(&d).await;
    // the name the controller would use is taken by a ReplicaSet of another template
    let hash = util::compute_hash(&created.spec.template, None);
    let squatter: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": format!("web-{hash}"), "labels": {"app": "other"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "other"}},
            "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": [{"name": "x", "image": "busybox"}]}},
        },
    }))
    .expect("replicaset");
    h.replicasets()
        .create(&PostParams::default(), &squatter)
        .await
        .expect("squatter");
    h.patch("web", json!({"spec": {"paused": false}})).await;
    let d = h.rolled_out("web").await;
    assert_eq!(d.status.as_ref().and_then(|s| s.collision_count), Some(1));
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 1);
    assert_eq!(
        rss[0].metadata.name.as_deref(),
        Some(
            format!(
                "web-{}",
                util::compute_hash(&created.spec.template, Some(1))
            )
            .as_str()
        )
    );
    let other = h
        .replicasets()
        .get(&format!("web-{hash}"))
        .await
        .expect("squatter stays");
    assert!(coxswain_runtime::controllerutil::get_controller_of(&other.metadata).is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_limit_adoption_and_release() {
    let h = Harness::start(Kubelet::Fake).await;
    // an orphan with the template and labels of the Deployment to come is adopted and used
    let orphan: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web-orphan", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}},
        },
    }))
    .expect("replicaset");
    h.replicasets()
        .create(&PostParams::default(), &orphan)
        .await
        .expect("orphan");
    let mut d = deployment("web", 2, "nginx:1", rolling(json!(1), json!(0)));
    d.spec.revision_history_limit = Some(1);
    h.create(&d).await;
    let d = h.rolled_out("web").await;
    let rss = h.owned(&d).await;
    assert_eq!(rss.len(), 1, "the orphan is the new ReplicaSet");
    assert_eq!(rss[0].metadata.name.as_deref(), Some("web-orphan"));
    assert_eq!(rss[0].spec.replicas, Some(2));

    for img in ["nginx:2", "nginx:3", "nginx:4"] {
        h.set_image("web", img).await;
        h.rolled_out("web").await;
    }
    let rss = wait_for("history trimmed to one old ReplicaSet", || async {
        let rss = h.owned(&h.get("web").await).await;
        (rss.len() == 2).then_some(rss)
    })
    .await;
    assert_eq!(image(&rss[1]), "nginx:4");
    assert_eq!(image(&rss[0]), "nginx:3", "the newest old revision is kept");
    assert!(
        h.replicasets()
            .get_opt("web-orphan")
            .await
            .expect("get")
            .is_none(),
        "lowest revisions go first"
    );

    // a ReplicaSet relabelled out of the selector is released
    let old_name = rss[0].metadata.name.clone().unwrap_or_default();
    h.replicasets()
        .patch(
            &old_name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"app": "gone"}}})),
        )
        .await
        .expect("relabel");
    wait_for("released", || async {
        let rs = h.replicasets().get(&old_name).await.expect("get");
        coxswain_runtime::controllerutil::get_controller_of(&rs.metadata)
            .is_none()
            .then_some(())
    })
    .await;
}
