//! The controller helpers against the embedded API server: the finalizer protocol (add,
//! cleanup then removal, failed cleanup kept and retried, deletion while the controller
//! is down), create-or-update and create-or-patch (controller-runtime's test cases),
//! server-side apply through the client, and delayed and timer-fed enqueues.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::{ApplyOptions, Client, UpsertError};
use coxswain_runtime::controller::{Action, ControllerOptions, ReconcileError};
use coxswain_runtime::controllerutil::OperationResult;
use coxswain_runtime::envtest;
use coxswain_runtime::finalizer::{finalizer, Event};
use coxswain_runtime::handler::{EnqueueObject, EventHandlerExt};
use coxswain_runtime::workqueue::ItemExponentialFailureRateLimiter;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::Api;
use tokio_util::sync::CancellationToken;

const FIN: &str = "example.com/cleanup";

/// Wait (through a watch) until `cond` holds for `name`, at most 20 s.
async fn wait_for<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    cond: impl kube::runtime::wait::Condition<K>,
) where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    K::DynamicType: Default,
{
    tokio::time::timeout(
        Duration::from_secs(20),
        await_condition(api.clone(), name, cond),
    )
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {name}: {what}"))
    .expect("watch");
}

fn gone(c: Option<&ConfigMap>) -> bool {
    c.is_none()
}

fn has_finalizer(c: Option<&ConfigMap>) -> bool {
    c.and_then(|c| c.metadata.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|f| f == FIN))
}

/// What the finalizer controller saw: "apply:<name>", "cleanup:<name>", "cleanup-failed".
#[derive(Clone)]
struct Log(Arc<tokio::sync::watch::Sender<Vec<String>>>);

impl Default for Log {
    fn default() -> Self {
        Log(Arc::new(tokio::sync::watch::channel(Vec::new()).0))
    }
}

impl Log {
    fn push(&self, s: String) {
        self.0.send_modify(|l| l.push(s));
    }
    fn count(&self, prefix: &str) -> usize {
        count(&self.0.borrow(), prefix)
    }
    /// Wait until `prefix` was logged at least once.
    async fn seen(&self, prefix: &str) {
        let mut rx = self.0.subscribe();
        tokio::time::timeout(
            Duration::from_secs(20),
            rx.wait_for(|l| count(l, prefix) > 0),
        )
        .await
        .unwrap_or_else(|_| panic!("never logged {prefix}"))
        .expect("log");
    }
}

fn count(log: &[String], prefix: &str) -> usize {
    log.iter().filter(|e| e.starts_with(prefix)).count()
}

/// A controller keeping `FIN` on ConfigMaps; its cleanup fails `failures` times first.
fn finalizing_controller(
    cache: &Arc<Cache>,
    log: Log,
    failures: u32,
    name: &str,
) -> coxswain_runtime::controller::Controller<impl coxswain_runtime::controller::Reconciler> {
    let client = Client::new(cache.clone());
    let failed = Arc::new(AtomicU32::new(0));
    let options =
        ControllerOptions::default().with_rate_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(20),
            Duration::from_millis(200),
        ));
    ControllerBuilder::new(cache)
        .named(name)
        .for_::<ConfigMap>()
        .with_options(options)
        .build(move |_ctx, key: ObjectKey| {
            let (client, log, failed) = (client.clone(), log.clone(), failed.clone());
            async move {
                let Some(cm) = client.get::<ConfigMap>(&key).await? else {
                    return Ok(Action::Done);
                };
                finalizer(&client, FIN, cm, |event| async move {
                    match event {
                        Event::Apply(c) => {
                            log.push(format!("apply:{}", c.metadata.name.as_deref().unwrap()));
                            Ok(Action::Done)
                        }
                        Event::Cleanup(c) => {
                            if failed.fetch_add(1, Ordering::SeqCst) < failures {
                                log.push("cleanup-failed".into());
                                return Err(ReconcileError::msg("the bucket is busy"));
                            }
                            log.push(format!("cleanup:{}", c.metadata.name.as_deref().unwrap()));
                            Ok(Action::Done)
                        }
                    }
                })
                .await
            }
        })
}

fn cm(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some(BTreeMap::from([("k".to_string(), "v".to_string())]));
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_is_added_then_cleanup_runs_before_removal() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    let log = Log::default();
    let c = finalizing_controller(&cache, log.clone(), 0, "fin-basic");
    let run = tokio::spawn(c.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("a")).await.unwrap();
    wait_for(&cms, "a", "finalizer added", has_finalizer).await;
    // the reconcile that follows our own patch applies
    log.seen("apply:a").await;
    assert_eq!(log.count("cleanup"), 0);
    // a finalizer someone else holds is kept in place
    let mut other = cms.get("a").await.unwrap();
    other
        .metadata
        .finalizers
        .get_or_insert_with(Vec::new)
        .insert(0, "other.example.com/keep".into());
    cms.replace("a", &PostParams::default(), &other)
        .await
        .unwrap();
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    wait_for(
        &cms,
        "a",
        "our finalizer removed",
        |c: Option<&ConfigMap>| c.is_some_and(|c| !has_finalizer(Some(c))),
    )
    .await;
    assert_eq!(log.count("cleanup:a"), 1);
    let left = cms.get("a").await.unwrap();
    assert_eq!(
        left.metadata.finalizers,
        Some(vec!["other.example.com/keep".to_string()])
    );
    assert!(left.metadata.deletion_timestamp.is_some());
    // once the other finalizer goes, the object goes
    let mut last = left;
    last.metadata.finalizers = None;
    cms.replace("a", &PostParams::default(), &last)
        .await
        .unwrap();
    wait_for(&cms, "a", "gone", gone).await;
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_cleanup_keeps_the_finalizer_and_is_retried() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    let log = Log::default();
    let c = finalizing_controller(&cache, log.clone(), 2, "fin-retry");
    let run = tokio::spawn(c.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("b")).await.unwrap();
    wait_for(&cms, "b", "finalizer added", has_finalizer).await;
    cms.delete("b", &DeleteParams::default()).await.unwrap();
    // after the first failure the object is still there, finalizer and all
    log.seen("cleanup-failed").await;
    let held = cms.get_opt("b").await.unwrap();
    assert!(
        log.count("cleanup:b") > 0 || has_finalizer(held.as_ref()),
        "the finalizer went although the cleanup failed"
    );
    wait_for(&cms, "b", "gone", gone).await;
    assert_eq!(log.count("cleanup-failed"), 2);
    assert_eq!(log.count("cleanup:b"), 1);
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_while_the_controller_is_down_is_cleaned_up_on_start() {
    let env = envtest::start().await.expect("env");
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    {
        let cancel = CancellationToken::new();
        let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
        let log = Log::default();
        let run =
            tokio::spawn(finalizing_controller(&cache, log, 0, "fin-down-1").run(cancel.clone()));
        cms.create(&PostParams::default(), &cm("c")).await.unwrap();
        wait_for(&cms, "c", "finalizer added", has_finalizer).await;
        cancel.cancel();
        run.await.unwrap();
    }
    // deleted with nobody around: it waits on the finalizer
    cms.delete("c", &DeleteParams::default()).await.unwrap();
    let waiting = cms.get("c").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some() && has_finalizer(Some(&waiting)));
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    let log = Log::default();
    let run = tokio::spawn(
        finalizing_controller(&cache, log.clone(), 0, "fin-down-2").run(cancel.clone()),
    );
    wait_for(&cms, "c", "gone", gone).await;
    assert_eq!(log.count("cleanup:c"), 1);
    assert_eq!(log.count("apply"), 0, "a deleted object is not applied");
    cancel.cancel();
    run.await.unwrap();
}

fn deployment(name: &str) -> Deployment {
    let mut d = Deployment::default();
    d.metadata.name = Some(name.into());
    d.metadata.namespace = Some("default".into());
    d
}

/// Upstream's `specr`: one busybox container selected by foo=bar.
fn spec(d: &mut Deployment) {
    let labels = BTreeMap::from([("foo".to_string(), "bar".to_string())]);
    d.spec = DeploymentSpec {
        selector: LabelSelector {
            match_labels: Some(labels.clone()),
            ..Default::default()
        },
        template: PodTemplateSpec {
            metadata: Some(kube::api::ObjectMeta {
                labels: Some(labels),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "busybox".into(),
                    image: Some("busybox".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        },
        ..Default::default()
    };
}

fn replicas(d: &Deployment) -> Option<i32> {
    d.spec.replicas
}

fn direct_client(cache: &Arc<Cache>) -> Client {
    // upstream's tests read through a direct client: a just-created object is visible
    Client::new(cache.clone()).uncached::<Deployment>()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_update_follows_controller_runtime() {
    let env = envtest::start().await.expect("env");
    let cache = Arc::new(Cache::new(env.client.clone(), CancellationToken::new()));
    let client = direct_client(&cache);
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), "default");
    // U1: created
    let (r, _) = client
        .create_or_update(deployment("u"), |d| {
            spec(d);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Created);
    let got = api.get("u").await.unwrap();
    assert_eq!(
        got.spec.template.spec.unwrap().containers[0]
            .image
            .as_deref(),
        Some("busybox")
    );
    // U2: updated
    let (r, _) = client
        .create_or_update(deployment("u"), |d| {
            d.spec.replicas = Some(2);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Updated);
    assert_eq!(replicas(&api.get("u").await.unwrap()), Some(2));
    // U3: unchanged, also when a quantity is written in another notation
    let rv = api.get("u").await.unwrap().metadata.resource_version;
    let (r, _) = client
        .create_or_update(deployment("u"), |_| Ok(()))
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Unchanged);
    assert_eq!(api.get("u").await.unwrap().metadata.resource_version, rv);
    // U4-U6: renaming or moving the object is refused, nothing written
    let err = client
        .create_or_update(deployment("u4"), |d| {
            spec(d);
            d.metadata.name = Some("u4-1".into());
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(matches!(err, UpsertError::KeyChanged), "{err}");
    assert!(
        api.get_opt("u4").await.unwrap().is_none() && api.get_opt("u4-1").await.unwrap().is_none()
    );
    for rename in [true, false] {
        let err = client
            .create_or_update(deployment("u"), |d| {
                if rename {
                    d.metadata.name = Some("u-1".into());
                } else {
                    d.metadata.namespace = Some("default-1".into());
                }
                Ok(())
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "MutateFn cannot mutate object name and/or object namespace"
        );
    }
    // a failing mutate writes nothing
    let err = client
        .create_or_update(deployment("u"), |_| Err("no capacity".into()))
        .await
        .unwrap_err();
    assert!(matches!(err, UpsertError::Mutate(_)) && err.to_string() == "no capacity");
    // U7: a failed read never calls mutate
    let unreachable =
        kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    let dead = Client::new(Arc::new(Cache::new(unreachable, CancellationToken::new())))
        .uncached::<Deployment>();
    let err = dead
        .create_or_update(deployment("u"), |_| {
            panic!("mutate called after a failed read")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, UpsertError::Api(_)), "{err}");
}

fn status(ready: i32, replicas: i32) -> DeploymentStatus {
    DeploymentStatus {
        ready_replicas: Some(ready),
        replicas: Some(replicas),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_patch_follows_controller_runtime() {
    let env = envtest::start().await.expect("env");
    let cache = Arc::new(Cache::new(env.client.clone(), CancellationToken::new()));
    let client = direct_client(&cache);
    let api: Api<Deployment> = Api::namespaced(env.client.clone(), "default");
    // P1
    let (r, _) = client
        .create_or_patch(deployment("p"), |d| {
            spec(d);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Created);
    // P2: spec patched; what is returned is what the server has
    let (r, local) = client
        .create_or_patch(deployment("p"), |d| {
            d.spec.replicas = Some(2);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Updated);
    let fetched = api.get("p").await.unwrap();
    assert_eq!(replicas(&fetched), Some(2));
    assert_eq!(
        local.metadata.resource_version,
        fetched.metadata.resource_version
    );
    // P3
    let (r, _) = client
        .create_or_patch(deployment("p"), |_| Ok(()))
        .await
        .unwrap();
    assert_eq!(r, OperationResult::Unchanged);
    // P4: only the status
    let (r, local) = client
        .create_or_patch(deployment("p"), |d| {
            d.status = Some(status(1, 3));
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::UpdatedStatusOnly);
    let fetched = api.get("p").await.unwrap();
    assert_eq!(
        fetched.status.as_ref().and_then(|s| s.ready_replicas),
        Some(1)
    );
    assert_eq!(
        local.metadata.resource_version,
        fetched.metadata.resource_version
    );
    // P5/P6: both, and the status survives the spec patch's answer
    let (r, local) = client
        .create_or_patch(deployment("p"), |d| {
            d.spec.replicas = Some(5);
            let s = d.status.get_or_insert_with(Default::default);
            s.ready_replicas = Some(2);
            s.conditions = Some(vec![k8s_openapi::api::apps::v1::DeploymentCondition {
                type_: Some("Progressing".into()),
                status: Some("True".into()),
                ..Default::default()
            }]);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(r, OperationResult::UpdatedStatus);
    let fetched = api.get("p").await.unwrap();
    assert_eq!(replicas(&fetched), Some(5));
    let st = fetched.status.clone().unwrap();
    assert_eq!(st.ready_replicas, Some(2));
    assert_eq!(st.conditions.map(|c| c.len()), Some(1));
    assert_eq!(
        local.metadata.resource_version,
        fetched.metadata.resource_version
    );
    assert_eq!(local.status, fetched.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_owns_fields_and_field_owner_names_writes() {
    let env = envtest::start().await.expect("env");
    let cache = Arc::new(Cache::new(env.client.clone(), CancellationToken::new()));
    let client = Client::new(cache.clone()).with_field_owner("my-controller");
    let mut c = cm("applied");
    c.metadata.namespace = Some("default".into());
    let applied = client.apply(&c, &ApplyOptions::default()).await.unwrap();
    let managers: Vec<String> = applied
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| Some(format!("{}:{}", m.manager.clone()?, m.operation.clone()?)))
        .collect();
    assert_eq!(managers, ["my-controller:Apply"]);
    // a second manager taking a field it does not own conflicts unless forced
    let mut other = cm("applied");
    other.metadata.namespace = Some("default".into());
    other.data = Some(BTreeMap::from([("k".to_string(), "other".to_string())]));
    let plain = Client::new(cache.clone());
    let err = plain
        .apply(
            &other,
            &ApplyOptions {
                field_manager: "intruder".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409),
        "{err}"
    );
    let taken = plain
        .apply(&other, &ApplyOptions::force("intruder"))
        .await
        .unwrap();
    assert_eq!(taken.data.unwrap()["k"], "other");
    // plain writes carry the client's field owner
    let created = client
        .create(&{
            let mut x = cm("owned");
            x.metadata.namespace = Some("default".into());
            x
        })
        .await
        .unwrap();
    assert_eq!(
        created.metadata.managed_fields.unwrap()[0]
            .manager
            .as_deref(),
        Some("my-controller")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_handlers_and_timers_feed_the_queue() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, tokio::time::Instant)>();
    let controller = ControllerBuilder::new(&cache)
        .named("delayed")
        .for_with::<ConfigMap>(EventHandlerExt::<ConfigMap, ObjectKey>::after(
            EnqueueObject,
            Duration::from_millis(300),
        ))
        .every(Duration::from_millis(100), move |q| {
            q.add(ObjectKey::cluster("tick"));
        })
        .build(move |_ctx, key: ObjectKey| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((key.name().to_string(), tokio::time::Instant::now()));
                Ok(Action::Done)
            }
        });
    let run = tokio::spawn(controller.run(cancel.clone()));
    cache.informer::<ConfigMap>().wait_for_sync().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let created = tokio::time::Instant::now();
    cms.create(&PostParams::default(), &cm("late"))
        .await
        .unwrap();
    let mut ticks = 0;
    let at = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match rx.recv().await {
                Some((name, at)) if name == "late" => return at,
                Some(_) => ticks += 1,
                None => panic!("controller stopped"),
            }
        }
    })
    .await
    .expect("the ConfigMap was never reconciled");
    // the delay is a minimum: never reconciled before it
    assert!(
        at.duration_since(created) >= Duration::from_millis(300),
        "reconciled {:?} after the change",
        at.duration_since(created)
    );
    assert!(
        ticks >= 1,
        "the timer fed nothing before the delayed request"
    );
    cancel.cancel();
    run.await.unwrap();
}
