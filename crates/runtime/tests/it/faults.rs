//! The fault-injection harness (`coxswain_runtime::testing`) on controllers written with
//! the runtime: the `configmap_to_secret` example passes the systematic plans; a
//! deliberately broken controller (it counts its children in the cache and keeps no
//! expectations) is caught, shrunk to one fault, and replayed from the plan; its fixed
//! twin passes the same plans.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::client::{Client, ListOptions};
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::controllerutil::set_controller_reference;
use coxswain_runtime::fault::{FaultKind, Plan};
use coxswain_runtime::manager::Manager;
use coxswain_runtime::testing::{self, check, Exploration, Invariant, Scenario, World};
use coxswain_runtime::ObjectKey;
use futures::FutureExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;

#[path = "../../examples/configmap_to_secret.rs"]
#[allow(dead_code)]
mod example;

fn mirrored(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"mirror": "secret"}},
        "data": {"k": value},
    }))
    .expect("configmap")
}

fn secret_data(s: &Secret) -> BTreeMap<String, String> {
    s.data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(&v.0).into_owned()))
        .collect()
}

/// The example controller under the harness: the test is the scenario, one call runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_controller_passes_the_systematic_fault_plans() {
    let summary = check(&example_scenario()).await;
    assert!(
        summary.writes >= 4,
        "the example wrote {} times",
        summary.writes
    );
}

/// The faults that restart processes do: a crash starts a fresh process, a stale crash
/// makes its informers list at the old version, a leadership move hands over to the
/// standby and restarts the old leader as a new standby.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_stale_restarts_and_leadership_moves_happen() {
    let scenario = example_scenario();
    let crash = testing::run(&scenario, &"crash@2".parse().expect("plan")).await;
    assert_eq!(crash.failure, None, "{:?}", crash.injected);
    assert_eq!(crash.incarnations, 2, "{:?}", crash.injected);
    let stale = testing::run(&scenario, &"crash-stale@2".parse().expect("plan")).await;
    assert_eq!(stale.failure, None, "{:?}", stale.injected);
    assert!(
        stale
            .injected
            .iter()
            .any(|l| l.starts_with("stale list of /api/v1/secrets at")),
        "{:?}",
        stale.injected
    );
    let moved = testing::run(&scenario, &"leader-move@2".parse().expect("plan")).await;
    assert_eq!(moved.failure, None, "{:?}", moved.injected);
    assert_eq!(
        moved.incarnations, 3,
        "two replicas and the old leader restarted: {:?}",
        moved.injected
    );
    let dropped = testing::run(&scenario, &"drop@1".parse().expect("plan")).await;
    assert_eq!(dropped.failure, None, "{:?}", dropped.injected);
    assert!(
        dropped
            .injected
            .iter()
            .any(|l| l.starts_with("dropped the watch event of /api/v1/secrets/")),
        "{:?}",
        dropped.injected
    );
}

fn example_scenario() -> Scenario {
    Scenario::new("configmap-to-secret")
        .controllers(|mgr| Ok(example::add_controller(mgr)?))
        .observe::<ConfigMap>()
        .observe::<Secret>()
        .workload(|w: World| {
            async move {
                let cms = Api::<ConfigMap>::namespaced(w.client(), w.namespace());
                let secrets = Api::<Secret>::namespaced(w.client(), w.namespace());
                let e = |e: kube::Error| e.to_string();
                for i in 0..3 {
                    cms.create(&PostParams::default(), &mirrored(&format!("cm-{i}"), "v1"))
                        .await
                        .map_err(e)?;
                }
                w.wait("a secret per configmap", |w| {
                    (w.list::<Secret>().len() == 3)
                        .then_some(())
                        .ok_or_else(|| format!("{} secrets", w.list::<Secret>().len()))
                })
                .await?;
                let patch = serde_json::json!({"data": {"k": "v2"}});
                cms.patch("cm-0", &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map_err(e)?;
                secrets
                    .delete("cm-1", &DeleteParams::default())
                    .await
                    .map_err(e)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "every secret is controlled by its configmap",
            |w| {
                for s in w.list::<Secret>() {
                    let owner = s
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .find(|o| o.controller == Some(true));
                    match owner {
                        Some(o)
                            if o.kind == "ConfigMap"
                                && Some(&o.name) == s.metadata.name.as_ref() => {}
                        _ => {
                            return Err(format!(
                                "secret {:?} has no configmap controller",
                                s.metadata.name
                            ))
                        }
                    }
                }
                Ok(())
            },
        ))
        .converged("every mirrored configmap has a secret with its data", |w| {
            let cms = w.list::<ConfigMap>();
            let mirrored: Vec<_> = cms
                .iter()
                .filter(|c| {
                    c.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("mirror"))
                        .is_some()
                })
                .collect();
            if mirrored.len() != 3 {
                return Err(format!("{} mirrored configmaps", mirrored.len()));
            }
            for cm in mirrored {
                let name = cm.metadata.name.as_deref().unwrap_or_default();
                let Some(s) = w.get::<Secret>(name) else {
                    return Err(format!("no secret {name}"));
                };
                let want: BTreeMap<String, String> = cm.data.clone().unwrap_or_default();
                if secret_data(&s) != want {
                    return Err(format!(
                        "secret {name} has {:?}, want {want:?}",
                        secret_data(&s)
                    ));
                }
            }
            Ok(())
        })
}

/// How many children a parent wants: its `fanout` label.
fn wanted(cm: &ConfigMap) -> usize {
    cm.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("fanout"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A fan-out controller: a ConfigMap labelled `fanout=N` gets N Secrets it controls.
/// `broken` counts the existing children in the cache, which lags behind its own creates
/// (upstream's controllers keep expectations for exactly this); the fixed one counts them
/// with a quorum read from the server.
fn fanout(
    broken: bool,
) -> impl Fn(&Manager) -> Result<(), coxswain_runtime::manager::BoxError> + Send + Sync {
    move |mgr: &Manager| {
        let client = mgr.client().clone();
        let controller = ControllerBuilder::new(mgr.cache())
            .named(if broken { "fanout-broken" } else { "fanout" })
            .for_::<ConfigMap>()
            .owns::<Secret>()
            .build(move |_ctx, key| reconcile_fanout(client.clone(), key, broken));
        mgr.add(controller)?;
        Ok(())
    }
}

async fn reconcile_fanout(client: Client, key: ObjectKey, broken: bool) -> ReconcileResult {
    let Some(parent) = client.get::<ConfigMap>(&key).await? else {
        return Ok(Action::Done);
    };
    let want = wanted(&parent);
    let uid = parent.metadata.uid.clone().unwrap_or_default();
    let owned = |s: &Secret| {
        s.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid && o.controller == Some(true))
    };
    let have = if broken {
        let opts = ListOptions {
            namespace: key.namespace().map(str::to_string),
            ..Default::default()
        };
        client
            .list::<Secret>(&opts)
            .await?
            .iter()
            .filter(|s| owned(s))
            .count()
    } else {
        let api = Api::<Secret>::namespaced(
            client.kube_client().clone(),
            key.namespace().unwrap_or("default"),
        );
        api.list(&Default::default())
            .await?
            .items
            .iter()
            .filter(|s| owned(s))
            .count()
    };
    for _ in have..want {
        let mut child = Secret::default();
        child.metadata.generate_name = Some(format!("{}-", key.name()));
        child.metadata.namespace = key.namespace().map(str::to_string);
        set_controller_reference(parent.as_ref(), &mut child)?;
        let api = Api::<Secret>::namespaced(
            client.kube_client().clone(),
            key.namespace().unwrap_or("default"),
        );
        api.create(&PostParams::default(), &child).await?;
    }
    Ok(Action::Done)
}

/// The largest `fanout` the workload asked for so far.
#[derive(Default)]
struct Allowed(AtomicUsize);

fn fanout_scenario(broken: bool) -> Scenario {
    Scenario::new(if broken { "fanout-broken" } else { "fanout" })
        .controllers(fanout(broken))
        .observe::<ConfigMap>()
        .observe::<Secret>()
        .workload(|w: World| {
            async move {
                let cms = Api::<ConfigMap>::namespaced(w.client(), w.namespace());
                let allowed = w.state::<Allowed>();
                let mut parent = ConfigMap::default();
                parent.metadata.name = Some("parent".into());
                for n in [2usize, 3, 4] {
                    allowed.0.store(n, Ordering::SeqCst);
                    let labels = BTreeMap::from([("fanout".to_string(), n.to_string())]);
                    if n == 2 {
                        parent.metadata.labels = Some(labels);
                        cms.create(&PostParams::default(), &parent)
                            .await
                            .map_err(|e| e.to_string())?;
                    } else {
                        let patch = serde_json::json!({"metadata": {"labels": labels}});
                        cms.patch("parent", &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    w.wait("children", |w| {
                        let have = w.list::<Secret>().len();
                        (have >= n)
                            .then_some(())
                            .ok_or_else(|| format!("{have} of {n} children"))
                    })
                    .await?;
                }
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("never more children than asked for", |w| {
            let allowed = w.state::<Allowed>().0.load(Ordering::SeqCst);
            let have = w.list::<Secret>().len();
            (have <= allowed)
                .then_some(())
                .ok_or_else(|| format!("{have} children, at most {allowed} asked for"))
        }))
        .converged("as many children as asked for", |w| {
            let want = w
                .get::<ConfigMap>("parent")
                .map(|p| wanted(&p))
                .unwrap_or(0);
            let have = w.list::<Secret>().len();
            (have == want && want == 4)
                .then_some(())
                .ok_or_else(|| format!("{have} children, want {want}"))
        })
        .faults(&[FaultKind::Conflict, FaultKind::WatchDelay])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_without_expectations_is_caught_shrunk_and_replayed() {
    // a late watch event catches it every time; a refused create (`conflict`) only when
    // the retry outruns the cache, which depends on the machine's load
    let scenario = fanout_scenario(true).faults(&[FaultKind::WatchDelay]);
    let exploration = Exploration {
        seed: 21,
        steps: None,
        random: 2,
        replay: None,
    };
    let failure = testing::explore(&scenario, &exploration)
        .await
        .expect_err("the broken controller must fail a plan");
    let report = failure.to_string();
    assert!(report.contains("seed 21"), "{report}");
    assert!(report.contains("COXSWAIN_FAULT_PLAN='"), "{report}");
    assert!(
        report.contains("never more children than asked for"),
        "{report}"
    );
    assert_eq!(failure.shrunk.faults.len(), 1, "{report}");
    assert_eq!(
        failure.shrunk.faults[0].kind,
        FaultKind::WatchDelay,
        "{report}"
    );
    // the printed plan replays: parse it back and run it again
    let replay: Plan = failure
        .shrunk
        .to_string()
        .parse()
        .expect("printed plan parses");
    let again = testing::run(&scenario, &replay).await;
    assert!(
        again.failure.is_some(),
        "replaying {replay} passed: {:?}",
        again.injected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fixed_fanout_controller_passes_the_plans_that_catch_the_broken_one() {
    check(&fanout_scenario(false)).await;
}

#[test]
fn a_failure_report_names_seed_plan_and_replay() {
    let f = testing::Failure {
        scenario: "x".into(),
        seed: 9,
        plan: "crash@2,delay@4".parse().expect("plan"),
        shrunk: "delay@4".parse().expect("plan"),
        reason: "invariant \"y\" violated".into(),
        injected: vec!["delay@4: POST /api/v1/namespaces/faults/secrets".into()],
    };
    let s = f.to_string();
    assert!(
        s.contains("failed under plan crash@2,delay@4 (seed 9)"),
        "{s}"
    );
    assert!(s.contains("smallest failing plan: delay@4"), "{s}");
    assert!(s.contains("COXSWAIN_FAULT_PLAN='delay@4'"), "{s}");
}
