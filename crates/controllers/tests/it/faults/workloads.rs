//! Fault-injection scenarios (issue 21) of the workload controllers and the collectors:
//! ReplicaSet, ReplicationController, Deployment, the garbage collector, the namespace
//! controller and the pod garbage collector. See `mod.rs`.
//!
//! Safety properties are upstream's guarantees checked on every observed change (each
//! against one observer informer, so a view is always a prefix of the history); bounds
//! that move with the workload are kept in per-run state, raised before a scale-up and
//! lowered only once the scale-down has been observed.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use coxswain_controllers::registry::{ControllerManagerOptions, Descriptor};
use coxswain_controllers::{deployment, garbagecollector, namespace, podgc, replicaset};
use coxswain_runtime::cache::CachedKind;
use coxswain_runtime::fault::FaultKind;
use coxswain_runtime::testing::{self, check, Invariant, Scenario, World};
use futures::FutureExt;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ReplicationController};
use k8s_openapi::NamespaceResourceScope;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{builtin, builtin_with, kubelet};

type Res = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn from_json<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

fn pp() -> PostParams {
    PostParams::default()
}

fn merge(v: Value) -> Patch<Value> {
    Patch::Merge(v)
}

// ---------------------------------------------------------------------------------------
// pods

fn is_active(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    p.metadata.deletion_timestamp.is_none() && !matches!(phase, Some("Succeeded" | "Failed"))
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// The uid of `meta`'s controller owner.
fn controller_uid(meta: &kube::api::ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

fn label<'a>(meta: &'a kube::api::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

/// Active pods of the run's namespace controlled by the object of uid `uid`.
fn owned_active(w: &World, uid: &str) -> Vec<Pod> {
    w.list::<Pod>()
        .iter()
        .filter(|p| controller_uid(&p.metadata) == Some(uid) && is_active(p))
        .map(|p| Pod::clone(p))
        .collect()
}

// ---------------------------------------------------------------------------------------
// ReplicaSet and ReplicationController: one scenario for both (the same controller code)

const RS_NAME: &str = "web";

/// The largest number of pods the workload allows at this moment.
#[derive(Default)]
struct Allowed(AtomicI32);

impl Allowed {
    fn set(&self, n: i32) {
        self.0.store(n, Ordering::SeqCst);
    }
    fn get(&self) -> i32 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the RS scenario needs to know of its kind.
trait Replicated:
    CachedKind + Resource<DynamicType = (), Scope = NamespaceResourceScope> + std::fmt::Debug
{
    /// The object with `replicas` and the selector/template label `app=web`.
    fn build(replicas: i32) -> Self;
    fn replicas(&self) -> i32;
    /// (replicas, fullyLabeled, ready, available, observedGeneration)
    fn counts(&self) -> (i32, i32, i32, i32, i64);
}

fn pod_template() -> Value {
    json!({
        "metadata": {"labels": {"app": RS_NAME}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    })
}

impl Replicated for ReplicaSet {
    fn build(replicas: i32) -> Self {
        from_json(json!({
            "metadata": {"name": RS_NAME},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": RS_NAME}},
                "template": pod_template(),
            },
        }))
    }
    fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }
    fn counts(&self) -> (i32, i32, i32, i32, i64) {
        let s = self.status.clone().unwrap_or_default();
        (
            s.replicas,
            s.fully_labeled_replicas.unwrap_or(0),
            s.ready_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
            s.observed_generation.unwrap_or(0),
        )
    }
}

impl Replicated for ReplicationController {
    fn build(replicas: i32) -> Self {
        from_json(json!({
            "metadata": {"name": RS_NAME},
            "spec": {
                "replicas": replicas,
                "selector": {"app": RS_NAME},
                "template": pod_template(),
            },
        }))
    }
    fn replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }
    fn counts(&self) -> (i32, i32, i32, i32, i64) {
        let s = self.status.clone().unwrap_or_default();
        (
            s.replicas,
            s.fully_labeled_replicas.unwrap_or(0),
            s.ready_replicas.unwrap_or(0),
            s.available_replicas.unwrap_or(0),
            s.observed_generation.unwrap_or(0),
        )
    }
}

/// The owner is synced: its active pods number `spec.replicas`, all ready, every pod
/// with its label is controlled by it, and its status says exactly that for its
/// current generation.
fn replicated_synced<K: Replicated>(w: &World) -> Res {
    let Some(rs) = w.get::<K>(RS_NAME) else {
        return Err(format!("{} {RS_NAME} not observed", K::kind(&())));
    };
    let uid = rs.meta().uid.clone().unwrap_or_default();
    let want = rs.replicas();
    let pods = owned_active(w, &uid);
    let ready = pods.iter().filter(|p| is_ready(p)).count() as i32;
    if pods.len() as i32 != want || ready != want {
        return Err(format!(
            "{} active pods ({ready} ready), want {want}",
            pods.len()
        ));
    }
    let strays: Vec<_> = w
        .list::<Pod>()
        .iter()
        .filter(|p| is_active(p) && label(&p.metadata, "app") == Some(RS_NAME))
        .filter(|p| controller_uid(&p.metadata) != Some(uid.as_str()))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    if !strays.is_empty() {
        return Err(format!("matching pods not adopted: {strays:?}"));
    }
    let generation = rs.meta().generation.unwrap_or(0);
    let got = rs.counts();
    let expected = (want, want, want, want, generation);
    if got != expected {
        return Err(format!(
            "status (replicas, fullyLabeled, ready, available, observedGeneration) = {got:?}, want {expected:?}"
        ));
    }
    Ok(())
}

/// Synced at `n` replicas (the observer has seen the workload's last scale).
fn at<K: Replicated>(n: i32) -> impl Fn(&World) -> Res {
    move |w| {
        let seen = w.get::<K>(RS_NAME).map(|rs| rs.replicas());
        if seen != Some(n) {
            return Err(format!("spec.replicas {seen:?} observed, want {n}"));
        }
        replicated_synced::<K>(w)
    }
}

fn replicated_scenario<K: Replicated>(name: &'static str, descriptor: Descriptor) -> Scenario {
    Scenario::new(name)
        .controllers(builtin(vec![descriptor]))
        .observe::<Pod>()
        .observe::<K>()
        .component(kubelet())
        .setup(|w: World| {
            async move {
                // an orphan that matches the selector: adopted, counted as a replica
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                let orphan: Pod = from_json(json!({
                    "metadata": {"name": "orphan", "labels": {"app": RS_NAME}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                }));
                pods.create(&pp(), &orphan).await.map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                let api = Api::<K>::namespaced(w.client(), w.namespace());
                let allowed = w.state::<Allowed>();
                allowed.set(3);
                api.create(&pp(), &K::build(3)).await.map_err(err)?;
                w.wait("3 replicas", at::<K>(3)).await?;
                allowed.set(5);
                let scale = |n: i32| json!({"spec": {"replicas": n}});
                api.patch(RS_NAME, &PatchParams::default(), &merge(scale(5)))
                    .await
                    .map_err(err)?;
                w.wait("scaled up to 5", at::<K>(5)).await?;
                api.patch(RS_NAME, &PatchParams::default(), &merge(scale(1)))
                    .await
                    .map_err(err)?;
                w.wait("scaled down to 1", at::<K>(1)).await?;
                allowed.set(1);
                // a replica lost (a node failure's effect on the workload): replaced
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                let victim = w
                    .list::<Pod>()
                    .iter()
                    .find(|p| is_active(p) && label(&p.metadata, "app") == Some(RS_NAME))
                    .and_then(|p| p.metadata.name.clone())
                    .ok_or("no pod to delete")?;
                pods.delete(&victim, &DeleteParams::default())
                    .await
                    .map_err(err)?;
                w.wait("the lost replica replaced", |w| {
                    if w.get::<Pod>(&victim).is_some_and(|p| is_active(&p)) {
                        return Err(format!("{victim} still active"));
                    }
                    at::<K>(1)(w)
                })
                .await?;
                Ok(())
            }
            .boxed()
        })
        // Upstream's expectations keep a ReplicaSet from acting on a cache that lacks
        // its own creations, but a creation whose answer was lost (Timeout) is counted
        // as failed and lowered at once, and a restarted controller listing a lagging
        // server (CrashStale) or a standby whose informer has not seen the old leader's
        // last creation (LeaderMove) have no expectations at all: upstream then creates a
        // pod too many and deletes it again. Everywhere else the bound holds.
        .invariant(
            Invariant::new("owned active pods ≤ replicas allowed", |w| {
                let Some(rs) = w.get::<K>(RS_NAME) else {
                    return Ok(());
                };
                let uid = rs.meta().uid.clone().unwrap_or_default();
                let n = owned_active(w, &uid).len() as i32;
                let max = w.state::<Allowed>().get();
                if n > max {
                    return Err(format!("{n} active pods, at most {max} allowed"));
                }
                Ok(())
            })
            .except(&[
                FaultKind::Timeout,
                FaultKind::CrashStale,
                FaultKind::LeaderMove,
            ]),
        )
        .converged("replicas and status match the spec", replicated_synced::<K>)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicaset_under_faults() {
    crate::common::logs();
    check(&replicated_scenario::<ReplicaSet>(
        "replicaset",
        replicaset::descriptor(),
    ))
    .await;
}

/// Found by the harness: the adoption patch's watch event dropped, the pod later deleted;
/// the informer handed the handlers the cached (unowned) copy, so the deletion the
/// ReplicaSet expected was never observed and it stopped managing its pods. Fixed in the
/// runtime's informer (a Deleted change carries the event's object, as client-go's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicaset_regression_drop_at_1() {
    crate::common::logs();
    let s = replicated_scenario::<ReplicaSet>("replicaset", replicaset::descriptor());
    let plan = "drop@1".parse().expect("plan");
    let report = testing::run(&s, &plan).await;
    assert_eq!(report.failure, None, "{report:?}");
    assert!(!report.injected.is_empty(), "the fault was injected");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicationcontroller_under_faults() {
    crate::common::logs();
    check(&replicated_scenario::<ReplicationController>(
        "replicationcontroller",
        replicaset::replication_descriptor(),
    ))
    .await;
}

// ---------------------------------------------------------------------------------------
// Deployment (with the ReplicaSet controller and a kubelet)

const DEPLOY: &str = "app";
const MAX_SURGE: i32 = 1;
const HISTORY: usize = 1;

/// The fewest ready pods the rollout may leave (maxUnavailable 0): raised once a
/// rollout is observed complete, lowered before a scale-down.
#[derive(Default)]
struct MinReady(AtomicI32);

fn deployment_obj(replicas: i32, image: &str) -> Deployment {
    from_json(json!({
        "metadata": {"name": DEPLOY},
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": HISTORY,
            "selector": {"matchLabels": {"app": DEPLOY}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": MAX_SURGE, "maxUnavailable": 0}},
            "template": {
                "metadata": {"labels": {"app": DEPLOY}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }))
}

fn image_of_rs(rs: &ReplicaSet) -> Option<&str> {
    rs.spec
        .template
        .as_ref()?
        .spec
        .as_ref()?
        .containers
        .first()?
        .image
        .as_deref()
}

/// The Deployment, its ReplicaSets and their pods are gone (nothing leaked).
fn deployment_collected(w: &World) -> Res {
    if w.get::<Deployment>(DEPLOY).is_some() {
        return Err("deployment remains".into());
    }
    let rss = w
        .list::<ReplicaSet>()
        .iter()
        .filter(|r| label(&r.metadata, "app") == Some(DEPLOY))
        .count();
    let pods = w
        .list::<Pod>()
        .iter()
        .filter(|p| label(&p.metadata, "app") == Some(DEPLOY))
        .count();
    if rss + pods > 0 {
        return Err(format!("{rss} ReplicaSets and {pods} pods leaked"));
    }
    Ok(())
}

/// Rolled out at `replicas` of `image` (the observer has seen the workload's last change).
fn rolled_out(replicas: i32, image: &'static str) -> impl Fn(&World) -> Res {
    move |w| {
        let d = w
            .get::<Deployment>(DEPLOY)
            .ok_or("deployment not observed")?;
        let seen = (d.spec.replicas, image_of_template(&d.spec.template));
        if seen != (Some(replicas), Some(image)) {
            return Err(format!(
                "spec {seen:?} observed, want ({replicas}, {image})"
            ));
        }
        deployment_complete(w)
    }
}

fn image_of_template(t: &k8s_openapi::api::core::v1::PodTemplateSpec) -> Option<&str> {
    t.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// The Deployment is rolled out: one ReplicaSet of the current template holds every
/// replica, all of its pods ready, old ones scaled to 0 and within the history limit,
/// and the status says so for the current generation.
fn deployment_complete(w: &World) -> Res {
    let Some(d) = w.get::<Deployment>(DEPLOY) else {
        return Err("deployment not observed".into());
    };
    let spec = d.spec.clone();
    let want = spec.replicas.unwrap_or(1);
    let image = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let uid = d.metadata.uid.clone().unwrap_or_default();
    let rss: Vec<_> = w
        .list::<ReplicaSet>()
        .iter()
        .filter(|r| controller_uid(&r.metadata) == Some(uid.as_str()))
        .map(|r| ReplicaSet::clone(r))
        .collect();
    let (new, old): (Vec<_>, Vec<_>) = rss
        .iter()
        .partition(|r| image_of_rs(r) == Some(image.as_str()));
    if new.len() != 1 {
        return Err(format!("{} ReplicaSets of the current template", new.len()));
    }
    let new = new[0];
    let replicas = new.spec.replicas.unwrap_or(0);
    if replicas != want {
        return Err(format!("new ReplicaSet at {replicas}, want {want}"));
    }
    if let Some(o) = old.iter().find(|r| r.spec.replicas.unwrap_or(0) != 0) {
        return Err(format!(
            "old ReplicaSet {:?} not scaled down",
            o.metadata.name
        ));
    }
    if old.len() > HISTORY {
        return Err(format!(
            "{} old ReplicaSets kept, limit {HISTORY}",
            old.len()
        ));
    }
    let new_uid = new.metadata.uid.clone().unwrap_or_default();
    let pods = owned_active(w, &new_uid);
    let ready = pods.iter().filter(|p| is_ready(p)).count() as i32;
    if pods.len() as i32 != want || ready != want {
        return Err(format!(
            "{} new pods ({ready} ready), want {want}",
            pods.len()
        ));
    }
    let stale: Vec<_> = w
        .list::<Pod>()
        .iter()
        .filter(|p| is_active(p) && controller_uid(&p.metadata) != Some(new_uid.as_str()))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    if !stale.is_empty() {
        return Err(format!("pods of old ReplicaSets remain: {stale:?}"));
    }
    let s = d.status.clone().unwrap_or_default();
    let got = (
        s.observed_generation.unwrap_or(0),
        s.replicas.unwrap_or(0),
        s.updated_replicas.unwrap_or(0),
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
        s.unavailable_replicas.unwrap_or(0),
    );
    let expected = (
        d.metadata.generation.unwrap_or(0),
        want,
        want,
        want,
        want,
        0,
    );
    if got != expected {
        return Err(format!(
            "status (observedGeneration, replicas, updated, ready, available, unavailable) = {got:?}, want {expected:?}"
        ));
    }
    let progressing = s
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .and_then(|c| c.reason.clone());
    if progressing.as_deref() != Some("NewReplicaSetAvailable") {
        return Err(format!("Progressing reason {progressing:?}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_under_faults() {
    crate::common::logs();
    let s = Scenario::new("deployment")
        .controllers(builtin(vec![
            deployment::descriptor(),
            replicaset::descriptor(),
            garbagecollector::descriptor(),
        ]))
        .observe::<Pod>()
        .observe::<ReplicaSet>()
        .observe::<Deployment>()
        .component(kubelet())
        .workload(|w: World| {
            async move {
                let api = Api::<Deployment>::namespaced(w.client(), w.namespace());
                let allowed = w.state::<Allowed>();
                allowed.set(2);
                api.create(&pp(), &deployment_obj(2, "nginx:1"))
                    .await
                    .map_err(err)?;
                w.wait("first rollout", rolled_out(2, "nginx:1")).await?;
                let min_ready = w.state::<MinReady>();
                min_ready.0.store(2, Ordering::SeqCst);
                // a rolling update that also scales up
                allowed.set(3);
                let patch = json!({"spec": {
                    "replicas": 3,
                    "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}},
                }});
                api.patch(DEPLOY, &PatchParams::default(), &merge(patch))
                    .await
                    .map_err(err)?;
                w.wait("second rollout at 3", rolled_out(3, "nginx:2"))
                    .await?;
                min_ready.0.store(1, Ordering::SeqCst);
                api.patch(
                    DEPLOY,
                    &PatchParams::default(),
                    &merge(json!({"spec": {"replicas": 1}})),
                )
                .await
                .map_err(err)?;
                w.wait("scaled down to 1", rolled_out(1, "nginx:2")).await?;
                allowed.set(1);
                // deleted (kubectl's background propagation): the collector takes its
                // ReplicaSets, then their pods
                min_ready.0.store(0, Ordering::SeqCst);
                api.delete(DEPLOY, &DeleteParams::default())
                    .await
                    .map_err(err)?;
                w.wait("deployment collected", deployment_collected).await?;
                Ok(())
            }
            .boxed()
        })
        // Upstream's rolling update never lets its ReplicaSets' replicas add up to more
        // than spec.replicas + maxSurge: every scale-up is computed from the ReplicaSets
        // it sees and written with their resourceVersion, so a stale view conflicts.
        .invariant(Invariant::new(
            "Σ ReplicaSet replicas ≤ replicas + maxSurge",
            |w| {
                let max = w.state::<Allowed>().get() + MAX_SURGE;
                let total: i32 = w
                    .list::<ReplicaSet>()
                    .iter()
                    .filter(|r| label(&r.metadata, "app") == Some(DEPLOY))
                    .map(|r| r.spec.replicas.unwrap_or(0))
                    .sum();
                if total > max {
                    return Err(format!("ReplicaSets hold {total} replicas, at most {max}"));
                }
                Ok(())
            },
        ))
        // maxUnavailable 0: an old ReplicaSet is scaled down only by what its successor
        // has made available (counted from the ReplicaSets' statuses), so the ready pods
        // never fall below the replicas of a completed rollout.
        .invariant(Invariant::new(
            "ready pods ≥ replicas - maxUnavailable",
            |w| {
                let min = w.state::<MinReady>().0.load(Ordering::SeqCst);
                let ready = w
                    .list::<Pod>()
                    .iter()
                    .filter(|p| {
                        label(&p.metadata, "app") == Some(DEPLOY) && is_active(p) && is_ready(p)
                    })
                    .count() as i32;
                if ready < min {
                    return Err(format!("{ready} ready pods, at least {min} required"));
                }
                Ok(())
            },
        ))
        // One ReplicaSet per template: a create whose answer was lost is found again
        // by its hash name, never duplicated.
        .invariant(Invariant::new("one ReplicaSet per template", |w| {
            let mut seen = BTreeSet::new();
            for r in w.list::<ReplicaSet>().iter() {
                if let Some(image) = image_of_rs(r) {
                    if !seen.insert(image.to_string()) {
                        return Err(format!("two ReplicaSets of {image}"));
                    }
                }
            }
            Ok(())
        }))
        .converged(
            "the deployment, its ReplicaSets and pods are gone",
            deployment_collected,
        );
    check(&s).await;
}

// ---------------------------------------------------------------------------------------
// garbage collector

/// ConfigMaps created by the workload that must never be deleted by the collector
/// (bystanders, dependents of live owners, orphaned dependents).
#[derive(Default)]
struct Protected {
    seen: Mutex<BTreeSet<String>>,
}

const KEEP: [&str; 4] = ["bystander", "live-dep", "orphan-dep-0", "orphan-dep-1"];
const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
const ORPHAN_FINALIZER: &str = "orphan";

fn owner_ref(cm: &ConfigMap, block: bool) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": cm.metadata.name,
        "uid": cm.metadata.uid,
        "controller": false,
        "blockOwnerDeletion": block,
    })
}

async fn create_cm(
    api: &Api<ConfigMap>,
    name: &str,
    owners: Vec<Value>,
) -> Result<ConfigMap, String> {
    let cm: ConfigMap = from_json(json!({
        "metadata": {"name": name, "ownerReferences": owners},
        "data": {"k": "v"},
    }));
    api.create(&pp(), &cm).await.map_err(err)
}

fn cm_names(w: &World) -> BTreeSet<String> {
    w.list::<ConfigMap>()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}

fn gc_done(w: &World) -> Res {
    let cms = w.list::<ConfigMap>();
    let names = cm_names(w);
    for gone in [
        "bg",
        "bg-dep-0",
        "bg-dep-1",
        "bg-dep-2",
        "fg",
        "fg-dep-0",
        "fg-dep-1",
        "orphan-owner",
    ] {
        if names.contains(gone) {
            return Err(format!("{gone} not collected"));
        }
    }
    for kept in KEEP.iter().chain(["live-owner"].iter()) {
        if !names.contains(*kept) {
            return Err(format!("{kept} missing"));
        }
    }
    for c in cms.iter() {
        let name = c.metadata.name.clone().unwrap_or_default();
        if name.starts_with("orphan-dep")
            && c.metadata
                .owner_references
                .as_ref()
                .is_some_and(|r| !r.is_empty())
        {
            return Err(format!("{name} still names its orphaning owner"));
        }
        if let Some(f) = c.metadata.finalizers.as_ref().filter(|f| !f.is_empty()) {
            return Err(format!("{name} keeps finalizers {f:?}"));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbagecollector_under_faults() {
    crate::common::logs();
    let s = Scenario::new("garbagecollector")
        .controllers(builtin(vec![garbagecollector::descriptor()]))
        .observe::<ConfigMap>()
        .workload(|w: World| {
            async move {
                let api = Api::<ConfigMap>::namespaced(w.client(), w.namespace());
                create_cm(&api, "bystander", vec![]).await?;
                let live = create_cm(&api, "live-owner", vec![]).await?;
                create_cm(&api, "live-dep", vec![owner_ref(&live, true)]).await?;
                // background: dependents collected after their owner
                let bg = create_cm(&api, "bg", vec![]).await?;
                for i in 0..3 {
                    create_cm(&api, &format!("bg-dep-{i}"), vec![owner_ref(&bg, false)]).await?;
                }
                // foreground: the owner waits for its blocking dependents
                let fg = create_cm(&api, "fg", vec![]).await?;
                for i in 0..2 {
                    create_cm(&api, &format!("fg-dep-{i}"), vec![owner_ref(&fg, true)]).await?;
                }
                // orphan: dependents stay, their references to the owner removed
                let orphan = create_cm(&api, "orphan-owner", vec![]).await?;
                for i in 0..2 {
                    create_cm(
                        &api,
                        &format!("orphan-dep-{i}"),
                        vec![owner_ref(&orphan, true)],
                    )
                    .await?;
                }
                w.wait("all created", |w| {
                    let n = cm_names(w).len();
                    if n >= 13 {
                        Ok(())
                    } else {
                        Err(format!("{n} observed"))
                    }
                })
                .await?;
                let with = |p: PropagationPolicy| DeleteParams {
                    propagation_policy: Some(p),
                    ..DeleteParams::default()
                };
                api.delete("bg", &with(PropagationPolicy::Background))
                    .await
                    .map_err(err)?;
                api.delete("fg", &with(PropagationPolicy::Foreground))
                    .await
                    .map_err(err)?;
                api.delete("orphan-owner", &with(PropagationPolicy::Orphan))
                    .await
                    .map_err(err)?;
                w.wait("collected", gc_done).await?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "bystanders, live and orphaned dependents are never deleted",
            |w| {
                let names = cm_names(w);
                let protected = w.state::<Protected>();
                let mut seen = protected.seen.lock().map_err(err)?;
                for k in KEEP {
                    if names.contains(k) {
                        seen.insert(k.to_string());
                    } else if seen.contains(k) {
                        return Err(format!("{k} was deleted"));
                    }
                }
                Ok(())
            },
        ))
        .invariant(Invariant::new(
            "a foreground owner outlives its blocking dependents",
            |w| {
                let names = cm_names(w);
                if !names.contains("fg") && names.iter().any(|n| n.starts_with("fg-dep-")) {
                    return Err("fg gone before its blocking dependents".into());
                }
                Ok(())
            },
        ))
        .converged("collected, nothing else, no finalizer left", gc_done);
    check(&s).await;
}

// ---------------------------------------------------------------------------------------
// namespace (with the garbage collector, as in kube-controller-manager)

const DOOMED: &str = "doomed";
const HOLD: &str = "test.coxswain.dev/hold";

/// Set once the workload has released the finalizer it holds.
#[derive(Default)]
struct Released(AtomicBool);

/// ConfigMaps of other namespaces seen so far (they must stay).
#[derive(Default)]
struct Survivors(Mutex<BTreeSet<String>>);

fn in_doomed(w: &World) -> Vec<ConfigMap> {
    w.list_all::<ConfigMap>()
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(DOOMED))
        .map(|c| ConfigMap::clone(c))
        .collect()
}

fn namespace_gone(w: &World) -> Res {
    if w.list::<Namespace>()
        .iter()
        .any(|n| n.metadata.name.as_deref() == Some(DOOMED))
    {
        return Err(format!("namespace {DOOMED} remains"));
    }
    let left = in_doomed(w);
    if !left.is_empty() {
        return Err(format!("{} ConfigMaps left in {DOOMED}", left.len()));
    }
    if w.get::<ConfigMap>("survivor").is_none() {
        return Err("survivor missing".into());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_under_faults() {
    crate::common::logs();
    let mut options = ControllerManagerOptions::default();
    options.namespace.deletion_grace_period = Duration::from_millis(100);
    let s = Scenario::new("namespace")
        .controllers(builtin_with(
            vec![namespace::descriptor(), garbagecollector::descriptor()],
            options,
        ))
        .observe::<Namespace>()
        .observe::<ConfigMap>()
        .workload(|w: World| {
            async move {
                let namespaces = Api::<Namespace>::all(w.client());
                namespaces
                    .create(&pp(), &from_json(json!({"metadata": {"name": DOOMED}})))
                    .await
                    .map_err(err)?;
                let doomed = Api::<ConfigMap>::namespaced(w.client(), DOOMED);
                let owner = create_cm(&doomed, "owner", vec![]).await?;
                for i in 0..2 {
                    create_cm(&doomed, &format!("cm-{i}"), vec![owner_ref(&owner, false)]).await?;
                }
                let held: ConfigMap =
                    from_json(json!({"metadata": {"name": "held", "finalizers": [HOLD]}}));
                doomed.create(&pp(), &held).await.map_err(err)?;
                let here = Api::<ConfigMap>::namespaced(w.client(), w.namespace());
                create_cm(&here, "survivor", vec![]).await?;
                namespaces
                    .delete(DOOMED, &DeleteParams::default())
                    .await
                    .map_err(err)?;
                // the content goes except what waits on its finalizer, and the
                // namespace's conditions say why it remains
                w.wait("content removed but the held one", |w| {
                    let left = in_doomed(w);
                    let names: Vec<_> = left
                        .iter()
                        .filter_map(|c| c.metadata.name.clone())
                        .collect();
                    if names != ["held"] {
                        return Err(format!("left: {names:?}"));
                    }
                    let ns = w.get::<Namespace>(DOOMED).ok_or("namespace gone early")?;
                    let conditions = ns
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.clone())
                        .unwrap_or_default();
                    let remaining = |t: &str| {
                        conditions
                            .iter()
                            .any(|c| c.type_ == t && c.status == "True")
                    };
                    if !(remaining("NamespaceContentRemaining")
                        && remaining("NamespaceFinalizersRemaining"))
                    {
                        return Err(format!("conditions {conditions:?}"));
                    }
                    Ok(())
                })
                .await?;
                w.state::<Released>().0.store(true, Ordering::SeqCst);
                doomed
                    .patch(
                        "held",
                        &PatchParams::default(),
                        &merge(json!({"metadata": {"finalizers": null}})),
                    )
                    .await
                    .map_err(err)?;
                w.wait("namespace removed", namespace_gone).await?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "a held finalizer is never removed by the controllers",
            |w| {
                if w.state::<Released>().0.load(Ordering::SeqCst) {
                    return Ok(());
                }
                for c in in_doomed(w) {
                    if c.metadata.name.as_deref() == Some("held")
                        && !c.metadata.finalizers.iter().flatten().any(|f| f == HOLD)
                    {
                        return Err("held lost its finalizer".into());
                    }
                }
                Ok(())
            },
        ))
        .invariant(Invariant::new("other namespaces are untouched", |w| {
            let here: BTreeSet<String> = w
                .list::<ConfigMap>()
                .iter()
                .filter_map(|c| c.metadata.name.clone())
                .collect();
            let survivors = w.state::<Survivors>();
            let mut seen = survivors.0.lock().map_err(err)?;
            if let Some(lost) = seen.iter().find(|n| !here.contains(*n)) {
                return Err(format!("{lost} deleted"));
            }
            seen.extend(here);
            Ok(())
        }))
        .converged("namespace and content gone, the rest kept", namespace_gone);
    check(&s).await;
}

// ---------------------------------------------------------------------------------------
// pod garbage collector

const THRESHOLD: usize = 2;

fn terminated(w: &World) -> Vec<String> {
    w.list::<Pod>()
        .iter()
        .filter(|p| matches!(phase(p), "Succeeded" | "Failed"))
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

/// Pods that must stay: running on a live node, or never scheduled and not terminating.
#[derive(Default)]
struct Running(Mutex<BTreeSet<String>>);

fn podgc_done(w: &World) -> Res {
    let names: BTreeSet<String> = w
        .list::<Pod>()
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let done = terminated(w);
    if done != ["t2", "t3"] {
        return Err(format!(
            "terminated pods {done:?}, want the newest {THRESHOLD}"
        ));
    }
    for gone in ["orphan", "t0", "t1"] {
        if names.contains(gone) {
            return Err(format!("{gone} not collected"));
        }
    }
    if !names.contains("running") {
        return Err("running missing".into());
    }
    Ok(())
}

/// Whether the number of terminated pods has reached the threshold (the collector
/// never takes it below again).
#[derive(Default)]
struct Reached(AtomicBool);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn podgc_under_faults() {
    crate::common::logs();
    let mut options = ControllerManagerOptions::default();
    options.podgc.terminated_pod_gc_threshold = THRESHOLD as i32;
    options.podgc.gc_check_period = Duration::from_millis(200);
    options.podgc.quarantine_time = Duration::from_millis(500);
    let s = Scenario::new("podgc")
        .controllers(builtin_with(vec![podgc::descriptor()], options))
        .observe::<Pod>()
        .observe::<Node>()
        .workload(|w: World| {
            async move {
                let nodes = Api::<Node>::all(w.client());
                nodes
                    .create(&pp(), &from_json(json!({"metadata": {"name": "real"}})))
                    .await
                    .map_err(err)?;
                let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
                let pod = |name: &str, node: Option<&str>| -> Pod {
                    from_json(json!({
                        "metadata": {"name": name},
                        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
                    }))
                };
                let set_phase = |name: &'static str, phase: &'static str| {
                    let pods = pods.clone();
                    async move {
                        pods.patch_status(
                            name,
                            &PatchParams::default(),
                            &merge(json!({"status": {"phase": phase}})),
                        )
                        .await
                        .map_err(err)
                    }
                };
                pods.create(&pp(), &pod("running", Some("real")))
                    .await
                    .map_err(err)?;
                set_phase("running", "Running").await?;
                // a pod bound to a node that does not exist: failed, then deleted
                pods.create(&pp(), &pod("orphan", Some("ghost")))
                    .await
                    .map_err(err)?;
                set_phase("orphan", "Running").await?;
                w.wait("the orphan collected", |w| match w.get::<Pod>("orphan") {
                    Some(_) => Err("orphan remains".into()),
                    None => Ok(()),
                })
                .await?;
                // terminated pods, oldest first: beyond the threshold the oldest go
                for name in ["t0", "t1", "t2", "t3"] {
                    pods.create(&pp(), &pod(name, None)).await.map_err(err)?;
                }
                for (name, p) in [
                    ("t0", "Succeeded"),
                    ("t1", "Failed"),
                    ("t2", "Succeeded"),
                    ("t3", "Failed"),
                ] {
                    set_phase(name, p).await?;
                }
                w.wait("collected", podgc_done).await?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "a pod running on a live node is never deleted",
            |w| {
                let running = w.state::<Running>();
                let mut seen = running.0.lock().map_err(err)?;
                if w.get::<Pod>("running").is_some() {
                    seen.insert("running".into());
                } else if seen.contains("running") {
                    return Err("running pod deleted".into());
                }
                Ok(())
            },
        ))
        .invariant(Invariant::new(
            "terminated pods never fall below the threshold",
            |w| {
                let n = terminated(w).len();
                let reached = w.state::<Reached>();
                if n >= THRESHOLD {
                    reached.0.store(true, Ordering::SeqCst);
                } else if reached.0.load(Ordering::SeqCst) {
                    return Err(format!("{n} terminated pods left, threshold {THRESHOLD}"));
                }
                Ok(())
            },
        ))
        .converged(
            "terminated pods down to the threshold, orphan gone",
            podgc_done,
        );
    check(&s).await;
}
