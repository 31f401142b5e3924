//! The ReplicaSet and ReplicationController controllers against the embedded API
//! server (envtest), with `fake_kubelet` making pods Running and Ready.
//!
//! Assertions are about outcomes and orderings, with generous time bounds; nothing
//! asserts how fast something happens.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    Container, Pod, PodSpec, PodTemplateSpec, ReplicationController, ReplicationControllerSpec,
};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::{wait_for, WAIT};

const NS: &str = "default";

// ----- harness -----

struct Harness {
    env: TestEnv,
    cancel: CancellationToken,
    manager: JoinHandle<()>,
    kubelet: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Harness {
    /// A test server, a manager running `add`'s controllers through `client` (the
    /// server's own client when `None`), and a fake kubelet.
    async fn start(add: impl FnOnce(&Manager), client: Option<kube::Client>) -> Harness {
        let env = envtest::start().await.expect("test server");
        let options = ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        };
        let mgr = match client {
            Some(c) => Manager::with_client(c, options),
            None => {
                Manager::new(env.kube_config().await.expect("config"), options).expect("manager")
            }
        };
        add(&mgr);
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let manager = tokio::spawn(async move {
            if let Err(e) = mgr.start(c).await {
                panic!("manager failed: {e}");
            }
        });
        let mut h = Harness {
            env,
            cancel,
            manager,
            kubelet: None,
        };
        h.start_kubelet();
        h
    }

    fn start_kubelet(&mut self) {
        let c = CancellationToken::new();
        let task = envtest::fake_kubelet(self.env.client.clone(), None, c.clone());
        self.kubelet = Some((c, task));
    }

    async fn stop_kubelet(&mut self) {
        if let Some((c, task)) = self.kubelet.take() {
            c.cancel();
            let _ = task.await;
        }
    }

    fn client(&self) -> kube::Client {
        self.env.client.clone()
    }

    async fn stop(mut self) {
        self.stop_kubelet().await;
        self.cancel.cancel();
        let _ = tokio::time::timeout(WAIT, self.manager).await;
    }
}

fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn template(app: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels(&[("app", app), ("tier", "web")])),
            annotations: Some(labels(&[("from", "template")])),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

fn replica_set(name: &str, app: &str, replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(&[("app", app)])),
                match_expressions: None,
            },
            template: Some(template(app)),
            min_ready_seconds: None,
        },
        status: None,
    }
}

async fn create_rs(client: &kube::Client, rs: &ReplicaSet) -> ReplicaSet {
    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), rs)
        .await
        .expect("create ReplicaSet")
}

async fn get_rs(client: &kube::Client, name: &str) -> ReplicaSet {
    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .get(name)
        .await
        .expect("get ReplicaSet")
}

async fn scale_rs(client: &kube::Client, name: &str, replicas: i32) {
    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}})),
        )
        .await
        .expect("scale ReplicaSet");
}

/// Pods with `app=<app>`, active ones only (no deletion timestamp).
async fn active_pods(client: &kube::Client, app: &str) -> Vec<Pod> {
    let lp = ListParams::default().labels(&format!("app={app}"));
    Api::<Pod>::namespaced(client.clone(), NS)
        .list(&lp)
        .await
        .expect("list pods")
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

fn name_set(pods: &[Pod]) -> BTreeSet<String> {
    pods.iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

fn controller_ref(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
}

fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Wait until the status of ReplicaSet `name` satisfies `ok`.
async fn wait_status(
    client: &kube::Client,
    name: &str,
    what: &str,
    ok: impl Fn(&ReplicaSet, &ReplicaSetStatus) -> bool,
) -> ReplicaSet {
    wait_for(what, || async {
        let rs = get_rs(client, name).await;
        let status = rs.status.clone().unwrap_or_default();
        ok(&rs, &status).then_some(rs)
    })
    .await
}

fn counts(s: &ReplicaSetStatus) -> (i32, i32, i32, i32) {
    (
        s.replicas,
        s.fully_labeled_replicas.unwrap_or(0),
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
    )
}

/// Events about `name` with `reason`, from `controller`.
async fn events(client: &kube::Client, name: &str, reason: &str, controller: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.reason.as_deref() == Some(reason)
                && e.reporting_controller.as_deref() == Some(controller)
        })
        .collect()
}

fn rs_controller(mgr: &Manager) {
    mgr.add(coxswain_controllers::replicaset::replicaset_controller(
        mgr, 5,
    ))
    .expect("add controller");
}

// ----- tests -----

/// A ReplicaSet of 3 gets 3 pods made from its template, controlled by it, and reports
/// them in its status once the kubelet made them ready; each creation is an event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_ready_pods_and_reports_status() {
    let h = Harness::start(rs_controller, None).await;
    let client = h.client();
    let created = create_rs(&client, &replica_set("web", "web", 3)).await;
    let uid = created.metadata.uid.clone().expect("uid");

    let rs = wait_status(&client, "web", "3 available replicas", |rs, s| {
        counts(s) == (3, 3, 3, 3) && s.observed_generation == rs.metadata.generation
    })
    .await;
    assert_eq!(
        rs.status.as_ref().and_then(|s| s.terminating_replicas),
        Some(0)
    );
    assert_eq!(rs.status.as_ref().and_then(|s| s.conditions.clone()), None);

    let pods = active_pods(&client, "web").await;
    assert_eq!(pods.len(), 3);
    for p in &pods {
        let r = controller_ref(p).expect("controller reference");
        assert_eq!(
            (
                r.kind.as_str(),
                r.api_version.as_str(),
                r.name.as_str(),
                r.uid.as_str()
            ),
            ("ReplicaSet", "apps/v1", "web", uid.as_str())
        );
        assert_eq!(r.block_owner_deletion, Some(true));
        assert_eq!(p.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(
            p.metadata.labels,
            Some(labels(&[("app", "web"), ("tier", "web")]))
        );
        assert_eq!(
            p.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("from"))
                .map(String::as_str),
            Some("template")
        );
        assert!(is_ready(p));
    }
    let created_events = wait_for("3 SuccessfulCreate events", || async {
        let e = events(&client, "web", "SuccessfulCreate", "replicaset-controller").await;
        (e.len() == 3).then_some(e)
    })
    .await;
    let mut noted: Vec<String> = created_events
        .iter()
        .filter_map(|e| e.note.clone())
        .collect();
    noted.sort();
    let mut want: Vec<String> = name_set(&pods)
        .into_iter()
        .map(|n| format!("Created pod: {n}"))
        .collect();
    want.sort();
    assert_eq!(noted, want);
    assert!(created_events
        .iter()
        .all(|e| e.type_.as_deref() == Some("Normal")));

    // a deleted pod is replaced
    let victim = pods[0].metadata.name.clone().expect("name");
    Api::<Pod>::namespaced(client.clone(), NS)
        .delete(&victim, &Default::default())
        .await
        .expect("delete pod");
    wait_for("a replacement pod", || async {
        let now = active_pods(&client, "web").await;
        (now.len() == 3 && !name_set(&now).contains(&victim)).then_some(())
    })
    .await;
    h.stop().await;
}

/// Scaling up adds pods; scaling down deletes the lowest ranked first: not-ready
/// pods before ready ones, then the lowest pod-deletion-cost. Deleted pods that are
/// still terminating are reported in `terminatingReplicas`, not in `replicas`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_up_and_down_deletes_lowest_ranked_first() {
    let mut h = Harness::start(rs_controller, None).await;
    let client = h.client();
    // scheduled pods are deleted gracefully: they linger as terminating (no real kubelet)
    let mut rs = replica_set("web", "web", 3);
    if let Some(spec) = rs.spec.template.as_mut().and_then(|t| t.spec.as_mut()) {
        spec.node_name = Some("node-1".into());
    }
    create_rs(&client, &rs).await;
    wait_status(&client, "web", "3 ready", |_, s| counts(s) == (3, 3, 3, 3)).await;
    let ready = name_set(&active_pods(&client, "web").await);

    // new pods stay pending without a kubelet
    h.stop_kubelet().await;
    scale_rs(&client, "web", 5).await;
    wait_status(&client, "web", "5 replicas, 3 ready", |_, s| {
        s.replicas == 5 && s.ready_replicas == Some(3)
    })
    .await;
    let all = active_pods(&client, "web").await;
    assert_eq!(all.len(), 5);
    assert_eq!(all.iter().filter(|p| is_ready(p)).count(), 3);

    scale_rs(&client, "web", 3).await;
    let rs = wait_status(&client, "web", "3 replicas and 2 terminating", |_, s| {
        s.replicas == 3 && s.terminating_replicas == Some(2)
    })
    .await;
    assert_eq!(counts(rs.status.as_ref().expect("status")), (3, 3, 3, 3));
    assert_eq!(
        name_set(&active_pods(&client, "web").await),
        ready,
        "the not-ready pods go first"
    );

    // the cheapest pod to delete goes next
    let cheap = ready.iter().next().cloned().expect("a pod");
    Api::<Pod>::namespaced(client.clone(), NS)
        .patch(
            &cheap,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "-100"}}})),
        )
        .await
        .expect("annotate");
    scale_rs(&client, "web", 2).await;
    let left = wait_for("2 pods left", || async {
        let now = active_pods(&client, "web").await;
        (now.len() == 2).then_some(name_set(&now))
    })
    .await;
    assert!(
        !left.contains(&cheap),
        "the pod with the lowest deletion cost is deleted"
    );
    wait_status(&client, "web", "2 replicas and 3 terminating", |_, s| {
        s.replicas == 2 && s.terminating_replicas == Some(3)
    })
    .await;
    wait_for("3 SuccessfulDelete events", || async {
        let e = events(&client, "web", "SuccessfulDelete", "replicaset-controller").await;
        (e.len() == 3).then_some(())
    })
    .await;
    let deleted_note = format!("Deleted pod: {cheap}");
    let notes: Vec<String> = events(&client, "web", "SuccessfulDelete", "replicaset-controller")
        .await
        .into_iter()
        .filter_map(|e| e.note)
        .collect();
    assert!(notes.contains(&deleted_note), "{notes:?}");
    h.stop().await;
}

/// Orphans matching the selector are adopted instead of creating pods; a pod that
/// stops matching is released and replaced; a pod controlled by someone else is left
/// alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adopts_orphans_and_releases_pods_that_stop_matching() {
    let h = Harness::start(rs_controller, None).await;
    let client = h.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let orphan = |name: &str, owner: Option<OwnerReference>| Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: Some(labels(&[("app", "adopt")])),
            owner_references: owner.map(|o| vec![o]),
            ..Default::default()
        },
        spec: template("adopt").spec,
        status: None,
    };
    for name in ["orphan-1", "orphan-2"] {
        pods.create(&PostParams::default(), &orphan(name, None))
            .await
            .expect("create orphan");
    }
    let foreign = OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: "someone".into(),
        uid: "6f1c7b1e-0000-4000-8000-000000000001".into(),
        controller: Some(true),
        block_owner_deletion: None,
    };
    pods.create(
        &PostParams::default(),
        &orphan("foreign", Some(foreign.clone())),
    )
    .await
    .expect("create foreign");

    let rs = create_rs(&client, &replica_set("adopter", "adopt", 2)).await;
    let uid = rs.metadata.uid.clone().expect("uid");
    wait_status(&client, "adopter", "2 ready replicas", |_, s| {
        s.replicas == 2 && s.ready_replicas == Some(2)
    })
    .await;
    let owned = |p: &Pod| controller_ref(p).is_some_and(|r| r.uid == uid);
    let now = active_pods(&client, "adopt").await;
    assert_eq!(now.len(), 3, "no pod was created: the orphans were adopted");
    let adopted: BTreeSet<String> = now
        .iter()
        .filter(|p| owned(p))
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(
        adopted,
        BTreeSet::from(["orphan-1".to_string(), "orphan-2".to_string()])
    );
    let f = pods.get("foreign").await.expect("foreign");
    assert_eq!(
        controller_ref(&f),
        Some(&foreign),
        "a pod controlled by another owner is not adopted"
    );

    // relabelled: released (the reference removed) and replaced
    pods.patch(
        "orphan-1",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"app": "gone"}}})),
    )
    .await
    .expect("relabel");
    wait_for("orphan-1 released", || async {
        let p = pods.get("orphan-1").await.ok()?;
        p.metadata
            .owner_references
            .as_ref()
            .is_none_or(|r| r.iter().all(|r| r.uid != uid))
            .then_some(())
    })
    .await;
    wait_for("a replacement for orphan-1", || async {
        let now = active_pods(&client, "adopt").await;
        let mine: Vec<&Pod> = now.iter().filter(|p| owned(p)).collect();
        (mine.len() == 2
            && mine
                .iter()
                .all(|p| p.metadata.name.as_deref() != Some("orphan-1")))
        .then_some(())
    })
    .await;
    h.stop().await;
}

/// A template the API server refuses for pods: `FailedCreate` events and the
/// `ReplicaFailure` condition; fixing the template clears the condition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_failures_set_and_clear_replica_failure() {
    let h = Harness::start(rs_controller, None).await;
    let client = h.client();
    // valid in a template, refused for a pod: a node name with scheduling gates
    let mut rs = replica_set("broken", "broken", 2);
    if let Some(spec) = rs.spec.template.as_mut().and_then(|t| t.spec.as_mut()) {
        spec.node_name = Some("node-1".into());
        spec.scheduling_gates = Some(vec![k8s_openapi::api::core::v1::PodSchedulingGate {
            name: "example.com/gate".into(),
        }]);
    }
    create_rs(&client, &rs).await;
    let failed = wait_status(&client, "broken", "ReplicaFailure", |_, s| {
        s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_.as_deref() == Some("ReplicaFailure"))
    })
    .await;
    let cond = failed
        .status
        .and_then(|s| s.conditions)
        .and_then(|c| {
            c.into_iter()
                .find(|c| c.type_.as_deref() == Some("ReplicaFailure"))
        })
        .expect("condition");
    assert_eq!(cond.status.as_deref(), Some("True"));
    assert_eq!(cond.reason.as_deref(), Some("FailedCreate"));
    assert!(
        cond.message
            .as_deref()
            .is_some_and(|m| m.contains("schedulingGates") || m.contains("nodeName")),
        "{cond:?}"
    );
    let warnings = wait_for("a FailedCreate event", || async {
        let e = events(&client, "broken", "FailedCreate", "replicaset-controller").await;
        (!e.is_empty()).then_some(e)
    })
    .await;
    assert!(warnings
        .iter()
        .all(|e| e.type_.as_deref() == Some("Warning")));
    assert!(warnings.iter().all(|e| e
        .note
        .as_deref()
        .is_some_and(|n| n.starts_with("Error creating: "))));
    assert!(active_pods(&client, "broken").await.is_empty());

    Api::<ReplicaSet>::namespaced(client.clone(), NS)
        .patch("broken", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"template": {"spec": {"schedulingGates": null, "nodeName": null}}}})))
        .await
        .expect("fix template");
    wait_status(&client, "broken", "2 ready and no condition", |_, s| {
        s.replicas == 2 && s.ready_replicas == Some(2) && s.conditions.is_none()
    })
    .await;
    h.stop().await;
}

/// ReplicationControllers go through the same code: pods, status, events of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_controller_works() {
    let h = Harness::start(
        |mgr| {
            mgr.add(coxswain_controllers::replicaset::replication_controller(
                mgr, 2,
            ))
            .expect("add controller");
        },
        None,
    )
    .await;
    let client = h.client();
    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), NS);
    let rc = ReplicationController {
        metadata: ObjectMeta {
            name: Some("legacy".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(ReplicationControllerSpec {
            replicas: Some(2),
            selector: Some(labels(&[("app", "legacy")])),
            template: Some(template("legacy")),
            min_ready_seconds: None,
        }),
        status: None,
    };
    let created = rcs
        .create(&PostParams::default(), &rc)
        .await
        .expect("create RC");
    let uid = created.metadata.uid.clone().expect("uid");
    let rc = wait_for("2 available replicas", || async {
        let rc = rcs.get("legacy").await.ok()?;
        let s = rc.status.clone()?;
        (s.replicas == 2
            && s.ready_replicas == Some(2)
            && s.available_replicas == Some(2)
            && s.fully_labeled_replicas == Some(2))
        .then_some(rc)
    })
    .await;
    assert_eq!(
        rc.status.as_ref().and_then(|s| s.observed_generation),
        rc.metadata.generation
    );
    let pods = active_pods(&client, "legacy").await;
    assert_eq!(pods.len(), 2);
    for p in &pods {
        let r = controller_ref(p).expect("controller reference");
        assert_eq!(
            (r.kind.as_str(), r.api_version.as_str(), r.uid.as_str()),
            ("ReplicationController", "v1", uid.as_str())
        );
    }
    wait_for(
        "2 SuccessfulCreate events from replication-controller",
        || async {
            (events(
                &client,
                "legacy",
                "SuccessfulCreate",
                "replication-controller",
            )
            .await
            .len()
                == 2)
                .then_some(())
        },
    )
    .await;
    rcs.patch(
        "legacy",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 0}})),
    )
    .await
    .expect("scale RC");
    wait_for("no pods", || async {
        active_pods(&client, "legacy")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    h.stop().await;
}

/// `minReadySeconds`: ready pods count as available only after it, and the controller
/// comes back by itself to report them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_ready_seconds_delays_availability() {
    let h = Harness::start(rs_controller, None).await;
    let client = h.client();
    let mut rs = replica_set("slow", "slow", 2);
    rs.spec.min_ready_seconds = Some(2);
    create_rs(&client, &rs).await;
    wait_status(&client, "slow", "2 ready, 0 available", |_, s| {
        s.ready_replicas == Some(2) && s.available_replicas.unwrap_or(0) == 0
    })
    .await;
    wait_status(&client, "slow", "2 available", |_, s| {
        s.available_replicas == Some(2)
    })
    .await;
    h.stop().await;
}

// ----- a cache that lags: watch responses delayed -----

pub(crate) mod lag {
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use bytes::Bytes;
    use futures::future::BoxFuture;
    use http_body::Frame;
    use http_body_util::combinators::UnsyncBoxBody;
    use http_body_util::{BodyExt, StreamBody};

    pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

    /// Delays every chunk of every watch response by a fixed latency (requests and
    /// other responses are untouched): the informers see the API server's changes
    /// late, while the controller's own writes return at once.
    #[derive(Clone, Copy)]
    pub struct WatchLag(pub Duration);

    impl<S> tower::Layer<S> for WatchLag {
        type Service = WatchLagService<S>;
        fn layer(&self, inner: S) -> Self::Service {
            WatchLagService { inner, lag: self.0 }
        }
    }

    #[derive(Clone)]
    pub struct WatchLagService<S> {
        inner: S,
        lag: Duration,
    }

    impl<S, Req, B> tower::Service<http::Request<Req>> for WatchLagService<S>
    where
        S: tower::Service<http::Request<Req>, Response = http::Response<B>>,
        S::Future: Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        type Response = http::Response<UnsyncBoxBody<Bytes, BoxError>>;
        type Error = S::Error;
        type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            self.inner.poll_ready(cx)
        }

        fn call(&mut self, req: http::Request<Req>) -> Self::Future {
            let watch = req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
            let lag = self.lag;
            let fut = self.inner.call(req);
            Box::pin(async move {
                let resp = fut.await?;
                Ok(resp.map(|body| {
                    if watch {
                        delayed(body, lag)
                    } else {
                        body.map_err(Into::into).boxed_unsync()
                    }
                }))
            })
        }
    }

    type Item = (tokio::time::Instant, Result<Frame<Bytes>, BoxError>);

    fn delayed<B>(body: B, lag: Duration) -> UnsyncBoxBody<Bytes, BoxError>
    where
        B: http_body::Body<Data = Bytes> + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Item>();
        tokio::spawn(async move {
            let mut body = body;
            while let Some(frame) = Pin::new(&mut body).frame().await {
                if tx
                    .send((tokio::time::Instant::now() + lag, frame.map_err(Into::into)))
                    .is_err()
                {
                    return;
                }
            }
        });
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            let (at, frame) = rx.recv().await?;
            tokio::time::sleep_until(at).await;
            Some((frame, rx))
        });
        StreamBody::new(stream).boxed_unsync()
    }
}

/// A ReplicaSet of 100 never has more than 100 pods, even though the manager's cache
/// sees every change 400 ms late: expectations keep it from acting on what it has not
/// seen yet. Pods deleted behind its back are replaced without overshooting either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_replicas_never_overshoot_with_a_lagging_cache() {
    let env = envtest::start().await.expect("test server");
    let client = kube::client::ClientBuilder::try_from(env.kube_config().await.expect("config"))
        .expect("client builder")
        .with_layer(&lag::WatchLag(Duration::from_millis(400)))
        .build();
    let options = ManagerOptions {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::with_client(client, options);
    rs_controller(&mgr);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let manager = tokio::spawn(async move {
        if let Err(e) = mgr.start(c).await {
            panic!("manager failed: {e}");
        }
    });
    let kubelet_cancel = CancellationToken::new();
    let kubelet = envtest::fake_kubelet(env.client.clone(), None, kubelet_cancel.clone());
    let direct = env.client.clone();

    // sample the real pod count all along
    let max_seen = Arc::new(AtomicUsize::new(0));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (direct, max_seen, sampling) = (direct.clone(), max_seen.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut samples = 0usize;
            while sampling.load(Ordering::SeqCst) {
                let n = active_pods(&direct, "big").await.len();
                max_seen.fetch_max(n, Ordering::SeqCst);
                samples += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            samples
        })
    };

    create_rs(&direct, &replica_set("big", "big", 100)).await;
    wait_status(&direct, "big", "100 ready replicas", |_, s| {
        s.replicas == 100 && s.ready_replicas == Some(100)
    })
    .await;
    assert!(
        max_seen.load(Ordering::SeqCst) <= 100,
        "overshot while creating: {}",
        max_seen.load(Ordering::SeqCst)
    );

    // delete 10 pods at once behind its back: replaced, never more than 100
    let pods = active_pods(&direct, "big").await;
    let api: Api<Pod> = Api::namespaced(direct.clone(), NS);
    for p in pods.iter().take(10) {
        api.delete(
            p.metadata.name.as_deref().unwrap_or_default(),
            &Default::default(),
        )
        .await
        .expect("delete");
    }
    wait_for("100 pods again, none of the deleted", || async {
        let now = active_pods(&direct, "big").await;
        let gone = pods
            .iter()
            .take(10)
            .all(|p| !now.iter().any(|q| q.metadata.uid == p.metadata.uid));
        (now.len() == 100 && gone).then_some(())
    })
    .await;
    // keep sampling a while: late duplicates would show up now
    tokio::time::sleep(Duration::from_secs(3)).await;
    sampling.store(false, Ordering::SeqCst);
    let samples = sampler.await.expect("sampler");
    assert!(
        samples > 20,
        "the pod count was sampled continuously ({samples} samples)"
    );
    let max = max_seen.load(Ordering::SeqCst);
    assert!(max <= 100, "a ReplicaSet of 100 had {max} pods");
    assert_eq!(active_pods(&direct, "big").await.len(), 100);
    let rs = get_rs(&direct, "big").await;
    assert_eq!(rs.status.map(|s| s.replicas), Some(100));

    kubelet_cancel.cancel();
    let _ = kubelet.await;
    cancel.cancel();
    let _ = tokio::time::timeout(WAIT, manager).await;
}
