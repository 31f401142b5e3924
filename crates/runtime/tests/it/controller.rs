//! Controllers against the embedded API server: a ConfigMap→Secret controller with
//! `owns` converges and re-converges; errors back off exponentially; panics are caught.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Cache;
use coxswain_runtime::client::Client;
use coxswain_runtime::controller::{Action, ControllerOptions, ReconcileError, ReconcileResult};
use coxswain_runtime::controllerutil::set_controller_reference;
use coxswain_runtime::envtest;
use coxswain_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::ByteString;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

async fn eventually(what: &str, mut f: impl AsyncFnMut() -> bool) {
    for _ in 0..300 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out: {what}");
}

fn cm(name: &str, v: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.into());
    c.data = Some(BTreeMap::from([("k".to_string(), v.to_string())]));
    c
}

/// The example's reconcile, on the helpers: the Secret is created or updated to mirror
/// the ConfigMap, which controls it.
async fn mirror(cache: Arc<Cache>, key: ObjectKey) -> ReconcileResult {
    let client = Client::new(cache);
    let Some(cm) = client.get::<ConfigMap>(&key).await? else {
        return Ok(Action::Done);
    };
    let mut secret = Secret::default();
    secret.metadata.name = Some(key.name().to_string());
    secret.metadata.namespace = key.namespace().map(str::to_string);
    client
        .create_or_update(secret, |s| {
            set_controller_reference(cm.as_ref(), s)?;
            s.data = cm.data.as_ref().map(|d| {
                d.iter()
                    .map(|(k, v)| (k.clone(), ByteString(v.clone().into_bytes())))
                    .collect()
            });
            Ok(())
        })
        .await?;
    Ok(Action::Done)
}

fn secret_value(s: &Secret) -> Option<String> {
    s.data
        .as_ref()?
        .get("k")
        .map(|b| String::from_utf8_lossy(&b.0).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configmap_to_secret_converges_and_reconverges() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Arc::new(Cache::new(env.client.clone(), cancel.clone()));
    let c = cache.clone();
    let controller = ControllerBuilder::new(&cache)
        .named("mirror")
        .for_::<ConfigMap>()
        .owns::<Secret>()
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 2,
            ..Default::default()
        })
        .build(move |_ctx, key| mirror(c.clone(), key));
    let stats = controller.stats();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("a", "1"))
        .await
        .expect("create");
    eventually("secret a created", async || {
        secrets
            .get_opt("a")
            .await
            .ok()
            .flatten()
            .and_then(|s| secret_value(&s))
            .as_deref()
            == Some("1")
    })
    .await;
    // an update of the ConfigMap flows into the Secret
    cms.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"data": {"k": "2"}})),
    )
    .await
    .expect("patch");
    eventually("secret a updated", async || {
        secrets
            .get_opt("a")
            .await
            .ok()
            .flatten()
            .and_then(|s| secret_value(&s))
            .as_deref()
            == Some("2")
    })
    .await;
    // deleting the owned child wakes the owner, which recreates it
    let old_uid = secrets.get("a").await.expect("get").metadata.uid;
    secrets
        .delete("a", &DeleteParams::default())
        .await
        .expect("delete child");
    eventually("secret a recreated", async || {
        secrets
            .get_opt("a")
            .await
            .ok()
            .flatten()
            .is_some_and(|s| s.metadata.uid != old_uid && secret_value(&s).as_deref() == Some("2"))
    })
    .await;
    // tampering with the child is repaired
    secrets
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"k": "eA=="}})),
        )
        .await
        .expect("tamper");
    eventually("secret a repaired", async || {
        secrets
            .get_opt("a")
            .await
            .ok()
            .flatten()
            .and_then(|s| secret_value(&s))
            .as_deref()
            == Some("2")
    })
    .await;
    assert!(stats.success.load(Ordering::Relaxed) >= 4);
    assert_eq!(stats.panics.load(Ordering::Relaxed), 0);
    cancel.cancel();
    run.await.expect("controller stops");
}

/// Records the delays the controller asks the exponential limiter for.
struct Recording {
    inner: ItemExponentialFailureRateLimiter<ObjectKey>,
    delays: Mutex<Vec<Duration>>,
}

impl RateLimiter<ObjectKey> for Recording {
    fn when(&self, key: &ObjectKey) -> Duration {
        let d = self.inner.when(key);
        self.delays.lock().expect("delays").push(d);
        d
    }
    fn forget(&self, key: &ObjectKey) {
        self.inner.forget(key)
    }
    fn num_requeues(&self, key: &ObjectKey) -> u32 {
        self.inner.num_requeues(key)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_reconcile_backs_off_exponentially_then_forgets() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Cache::new(env.client.clone(), cancel.clone());
    let limiter = Arc::new(Recording {
        inner: ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(10),
        ),
        delays: Mutex::new(Vec::new()),
    });
    let attempts = Arc::new(AtomicU32::new(0));
    let retries_seen = Arc::new(Mutex::new(Vec::new()));
    let a = attempts.clone();
    let rs = retries_seen.clone();
    let controller = ControllerBuilder::new(&cache)
        .for_::<ConfigMap>()
        .with_options(ControllerOptions {
            rate_limiter: Some(limiter.clone()),
            ..Default::default()
        })
        .build(
            move |ctx: coxswain_runtime::controller::Context, key: ObjectKey| {
                let a = a.clone();
                let rs = rs.clone();
                async move {
                    if key.name() != "flaky" {
                        return Ok(Action::Done);
                    }
                    rs.lock().expect("retries").push(ctx.retries);
                    // fail five times, then succeed
                    if a.fetch_add(1, Ordering::SeqCst) < 5 {
                        Err(ReconcileError::msg("not yet"))
                    } else {
                        Ok(Action::Done)
                    }
                }
            },
        );
    let stats = controller.stats();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("flaky", "1"))
        .await
        .expect("create");
    eventually("success after retries", async || {
        attempts.load(Ordering::SeqCst) >= 6
    })
    .await;
    let delays = limiter.delays.lock().expect("delays").clone();
    assert_eq!(
        delays,
        vec![5, 10, 20, 40, 80]
            .into_iter()
            .map(Duration::from_millis)
            .collect::<Vec<_>>(),
        "each failure doubles the delay"
    );
    assert_eq!(stats.errors.load(Ordering::Relaxed), 5);
    assert_eq!(
        retries_seen.lock().expect("retries")[..6],
        [0, 1, 2, 3, 4, 5],
        "the context counts retries"
    );
    eventually("forgotten after success", async || {
        limiter.num_requeues(&ObjectKey::namespaced("default", "flaky")) == 0
    })
    .await;
    cancel.cancel();
    run.await.expect("controller stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_reconcile_does_not_kill_the_controller() {
    let env = envtest::start().await.expect("env");
    let cancel = CancellationToken::new();
    let cache = Cache::new(env.client.clone(), cancel.clone());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let calls = Arc::new(AtomicU32::new(0));
    let (s, n) = (seen.clone(), calls.clone());
    let controller =
        ControllerBuilder::new(&cache)
            .for_::<ConfigMap>()
            .build(move |_ctx, key: ObjectKey| {
                let (s, n) = (s.clone(), n.clone());
                async move {
                    if key.name() == "boom" && n.fetch_add(1, Ordering::SeqCst) == 0 {
                        panic!("reconcile exploded");
                    }
                    s.lock().expect("seen").push(key.name().to_string());
                    Ok(Action::Done)
                }
            });
    let stats = controller.stats();
    let run = tokio::spawn(controller.run(cancel.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    cms.create(&PostParams::default(), &cm("boom", "1"))
        .await
        .expect("create");
    cms.create(&PostParams::default(), &cm("calm", "1"))
        .await
        .expect("create");
    eventually("both reconciled", async || {
        let s = seen.lock().expect("seen");
        s.contains(&"boom".to_string()) && s.contains(&"calm".to_string())
    })
    .await;
    assert_eq!(stats.panics.load(Ordering::Relaxed), 1);
    cancel.cancel();
    run.await.expect("controller stops");
}
