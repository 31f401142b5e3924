//! The HPA controller against the embedded API server (1 s sync period): the target's
//! `/scale` read and written through discovery, min/max limits, a missing target, and
//! (with the server's metrics.k8s.io, from the pods' simulated usage annotations)
//! scaling up on high usage and back down after a short stabilization window.

use std::time::Duration;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::podautoscaler::{self, HpaControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::Api;
use serde_json::{json, Value};

async fn start(ns: &str) -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        hpa: HpaControllerOptions {
            sync_period: Duration::from_secs(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let h = Harness::start_with(&[podautoscaler::descriptor()], options).await;
    h.namespace(ns).await;
    h
}

fn hpa(
    name: &str,
    kind: &str,
    api_version: &str,
    target: &str,
    min: i32,
    max: i32,
    extra: Value,
) -> HorizontalPodAutoscaler {
    let mut v = json!({
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": api_version, "kind": kind, "name": target},
            "minReplicas": min, "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    });
    if let (Some(spec), Value::Object(extra)) = (v["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    serde_json::from_value(v).expect("hpa")
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx",
                                       "resources": {"requests": {"cpu": "100m"}}}]}}},
    }))
    .expect("deployment")
}

fn condition(h: &HorizontalPodAutoscaler, type_: &str) -> Option<(String, String, String)> {
    h.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

async fn event(c: &kube::Client, ns: &str, reason: &str, note: &str) {
    let events: Api<Event> = Api::namespaced(c.clone(), ns);
    wait_for(&format!("event {reason}: {note}"), || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.reason.as_deref() == Some(reason) && e.note.as_deref() == Some(note))
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn missing_target_cannot_scale() {
    let ns = "hpa-missing";
    let h = start(ns).await;
    let c = h.client();
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    hpas.create(
        &PostParams::default(),
        &hpa("web", "Deployment", "apps/v1", "nope", 1, 5, json!({})),
    )
    .await
    .expect("hpa");
    let (status, reason, message) = wait_for("AbleToScale False", || async {
        let got = hpas.get("web").await.ok()?;
        condition(&got, "AbleToScale")
    })
    .await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "FailedGetScale")
    );
    assert!(
        message.starts_with("the HPA controller was unable to get the target's current scale: "),
        "{message}"
    );
    assert!(message.contains("not found"), "{message}");
    event(
        &c,
        ns,
        "FailedGetScale",
        "deployments.apps \"nope\" not found",
    )
    .await;
    // an unknown kind is reported the same way
    hpas.create(
        &PostParams::default(),
        &hpa("odd", "Gadget", "example.com/v1", "g", 1, 5, json!({})),
    )
    .await
    .expect("hpa");
    let (_, reason, message) = wait_for("AbleToScale False for an unknown kind", || async {
        condition(&hpas.get("odd").await.ok()?, "AbleToScale")
    })
    .await;
    assert_eq!(reason, "FailedGetScale");
    assert!(
        message.ends_with("no matches for kind \"Gadget\" in group \"example.com\""),
        "{message}"
    );
    h.stop().await;
}

#[tokio::test]
async fn replicas_outside_min_max_are_brought_within() {
    let ns = "hpa-limits";
    let h = start(ns).await;
    let c = h.client();
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), ns);
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), ns);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    deployments
        .create(&PostParams::default(), &deployment("big", 7))
        .await
        .expect("deployment");
    hpas.create(
        &PostParams::default(),
        &hpa("big", "Deployment", "apps/v1", "big", 1, 3, json!({})),
    )
    .await
    .expect("hpa");
    wait_for("the deployment scaled down to maxReplicas", || async {
        let d = deployments.get("big").await.ok()?;
        (d.spec.replicas == Some(3)).then_some(())
    })
    .await;
    event(
        &c,
        ns,
        "SuccessfulRescale",
        "New size: 3; reason: Current number of replicas above Spec.MaxReplicas",
    )
    .await;
    let got = wait_for("status written", || async {
        let got = hpas.get("big").await.ok()?;
        (got.status.as_ref()?.desired_replicas == 3).then_some(got)
    })
    .await;
    let s = got.status.clone().unwrap();
    assert_eq!(s.current_replicas, Some(7));
    assert!(s.last_scale_time.is_some());
    // upstream rebuilds the status without observedGeneration
    assert_eq!(s.observed_generation, None);
    let (st, reason, message) = condition(&got, "AbleToScale").unwrap();
    assert_eq!((st.as_str(), reason.as_str()), ("True", "SucceededRescale"));
    assert_eq!(
        message,
        "the HPA controller was able to update the target scale to 3"
    );
    // below minReplicas, through the ReplicaSet's scale subresource (no selector needed)
    let rs: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "small"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "small"}},
                 "template": {"metadata": {"labels": {"app": "small"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap();
    rss.create(&PostParams::default(), &rs).await.expect("rs");
    hpas.create(
        &PostParams::default(),
        &hpa("small", "ReplicaSet", "apps/v1", "small", 2, 4, json!({})),
    )
    .await
    .expect("hpa");
    wait_for("the replicaset scaled up to minReplicas", || async {
        (rss.get("small").await.ok()?.spec.replicas == Some(2)).then_some(())
    })
    .await;
    event(
        &c,
        ns,
        "SuccessfulRescale",
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas",
    )
    .await;
    h.stop().await;
}

#[tokio::test]
async fn missing_metrics_are_reported() {
    let ns = "hpa-nometrics";
    let h = start(ns).await;
    let c = h.client();
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), ns);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    deployments
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .expect("deployment");
    hpas.create(
        &PostParams::default(),
        &hpa("web", "Deployment", "apps/v1", "web", 1, 5, json!({})),
    )
    .await
    .expect("hpa");
    let (st, reason, message) = wait_for("ScalingActive False", || async {
        condition(&hpas.get("web").await.ok()?, "ScalingActive")
    })
    .await;
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "FailedGetResourceMetric")
    );
    assert!(
        message.starts_with(
            "the HPA was unable to compute the replica count: failed to get cpu utilization: "
        ),
        "{message}"
    );
    let got = hpas.get("web").await.unwrap();
    assert_eq!(got.status.unwrap().current_replicas, Some(2));
    assert_eq!(deployments.get("web").await.unwrap().spec.replicas, Some(2));
    h.stop().await;
}

async fn metrics_start(ns: &str) -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        hpa: HpaControllerOptions {
            sync_period: Duration::from_secs(1),
            // the pods below are ready from the start: no warm-up to wait for
            cpu_initialization_period: Duration::ZERO,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = Harness::start_with_metrics_api(&[podautoscaler::descriptor()], options).await;
    h.namespace(ns).await;
    h
}

/// A Ready node for the metrics API to report pods on.
async fn ready_node(c: &kube::Client, name: &str) {
    let nodes: Api<Node> = Api::all(c.clone());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("node");
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                "lastHeartbeatTime": now(), "lastTransitionTime": now()}]}}),
            ),
        )
        .await
        .expect("node ready");
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

/// A running, ready pod of `app` requesting 100m cpu and using `usage` (the simulated
/// usage annotation the metrics API reads).
async fn running_pod(pods: &Api<Pod>, name: &str, app: &str, usage: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app},
                     "annotations": {"sim.coxswain.dev/cpu-usage": usage}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx",
                 "resources": {"requests": {"cpu": "100m"}}}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pod");
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "startTime": now(),
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now()}]}})),
    )
    .await
    .expect("pod running");
}

fn replicaset(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }))
    .unwrap()
}

#[tokio::test]
async fn scales_up_on_usage_and_down_after_the_stabilization_window() {
    let ns = "hpa-usage";
    let h = metrics_start(ns).await;
    let c = h.client();
    ready_node(&c, "node-1").await;
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(c.clone(), ns);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    rss.create(&PostParams::default(), &replicaset("load", 1))
        .await
        .expect("rs");
    running_pod(&pods, "load-0", "load", "200m").await;
    let behavior = json!({"behavior": {"scaleDown": {"stabilizationWindowSeconds": 2}}});
    hpas.create(
        &PostParams::default(),
        &hpa("load", "ReplicaSet", "apps/v1", "load", 1, 10, behavior),
    )
    .await
    .expect("hpa");
    // 200m of 100m requested at a 50% target: ratio 4, one ready pod → 4 replicas
    wait_for("scale up to 4", || async {
        (rss.get("load").await.ok()?.spec.replicas == Some(4)).then_some(())
    })
    .await;
    event(
        &c,
        ns,
        "SuccessfulRescale",
        "New size: 4; reason: cpu resource utilization (percentage of request) above target",
    )
    .await;
    let got = wait_for("status with the current metric", || async {
        let got = hpas.get("load").await.ok()?;
        (got.status.as_ref()?.desired_replicas == 4).then_some(got)
    })
    .await;
    let metric = &got
        .status
        .as_ref()
        .unwrap()
        .current_metrics
        .as_ref()
        .unwrap()[0];
    let current = &metric.resource.as_ref().unwrap().current;
    assert_eq!(current.average_utilization, Some(200));
    assert_eq!(current.average_value.as_ref().unwrap().0, "200m");
    let (st, reason, _) = condition(&got, "ScalingActive").unwrap();
    assert_eq!((st.as_str(), reason.as_str()), ("True", "ValidMetricFound"));
    let (st, reason, _) = condition(&got, "ScalingLimited").unwrap();
    assert_eq!(
        (st.as_str(), reason.as_str()),
        ("False", "DesiredWithinRange")
    );
    // the load drops: 10% of the request → back to 1 once the 2 s window has passed
    pods.patch(
        "load-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"sim.coxswain.dev/cpu-usage": "10m"}}})),
    )
    .await
    .expect("usage lowered");
    wait_for("scale down to 1", || async {
        (rss.get("load").await.ok()?.spec.replicas == Some(1)).then_some(())
    })
    .await;
    event(
        &c,
        ns,
        "SuccessfulRescale",
        "New size: 1; reason: All metrics below target",
    )
    .await;

    // maxReplicas caps the proposal: ScalingLimited TooManyReplicas
    rss.create(&PostParams::default(), &replicaset("capped", 1))
        .await
        .expect("rs");
    running_pod(&pods, "capped-0", "capped", "400m").await;
    hpas.create(
        &PostParams::default(),
        &hpa("capped", "ReplicaSet", "apps/v1", "capped", 1, 3, json!({})),
    )
    .await
    .expect("hpa");
    wait_for("scale up to maxReplicas", || async {
        (rss.get("capped").await.ok()?.spec.replicas == Some(3)).then_some(())
    })
    .await;
    let (st, reason, message) = wait_for("ScalingLimited", || async {
        let got = hpas.get("capped").await.ok()?;
        (got.status.as_ref()?.desired_replicas == 3).then_some(())?;
        condition(&got, "ScalingLimited")
    })
    .await;
    assert_eq!((st.as_str(), reason.as_str()), ("True", "TooManyReplicas"));
    assert_eq!(
        message,
        "the desired replica count is more than the maximum replica count"
    );
    h.stop().await;
}

#[tokio::test]
async fn custom_resources_scale_through_their_scale_subresource() {
    let ns = "hpa-custom";
    let h = start(ns).await;
    let c = h.client();
    let crds = Api::<DynamicObject>::all_with(
        c.clone(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let crd: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "workers.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "workers", "singular": "worker", "kind": "Worker"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}}}],
        },
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("crd");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Worker"),
        "workers",
    );
    let workers: Api<DynamicObject> = Api::namespaced_with(c.clone(), ns, &ar);
    let worker = |name: &str, replicas: i32| -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Worker",
            "metadata": {"name": name}, "spec": {"replicas": replicas}}))
        .unwrap()
    };
    wait_for("the custom resource served", || async {
        workers
            .create(&PostParams::default(), &worker("many", 6))
            .await
            .ok()
    })
    .await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    hpas.create(
        &PostParams::default(),
        &hpa("many", "Worker", "example.com/v1", "many", 1, 2, json!({})),
    )
    .await
    .expect("hpa");
    wait_for("the custom resource scaled to maxReplicas", || async {
        let w = workers.get("many").await.ok()?;
        (w.data["spec"]["replicas"] == 2).then_some(())
    })
    .await;
    event(
        &c,
        ns,
        "SuccessfulRescale",
        "New size: 2; reason: Current number of replicas above Spec.MaxReplicas",
    )
    .await;
    // within range, the metrics need the scale's selector: none → InvalidSelector
    workers
        .create(&PostParams::default(), &worker("nosel", 2))
        .await
        .expect("worker");
    hpas.create(
        &PostParams::default(),
        &hpa(
            "nosel",
            "Worker",
            "example.com/v1",
            "nosel",
            1,
            5,
            json!({}),
        ),
    )
    .await
    .expect("hpa");
    let (st, reason, message) = wait_for("ScalingActive False", || async {
        condition(&hpas.get("nosel").await.ok()?, "ScalingActive")
    })
    .await;
    assert_eq!((st.as_str(), reason.as_str()), ("False", "InvalidSelector"));
    assert_eq!(message, "the HPA target's scale is missing a selector");
    event(&c, ns, "SelectorRequired", "selector is required").await;
    h.stop().await;
}

#[tokio::test]
async fn two_hpas_over_the_same_pods_are_ambiguous() {
    let ns = "hpa-ambiguous";
    let h = metrics_start(ns).await;
    let c = h.client();
    ready_node(&c, "node-1").await;
    let rss: Api<ReplicaSet> = Api::namespaced(c.clone(), ns);
    let pods: Api<Pod> = Api::namespaced(c.clone(), ns);
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(c.clone(), ns);
    rss.create(&PostParams::default(), &replicaset("shared", 1))
        .await
        .expect("rs");
    running_pod(&pods, "shared-0", "shared", "50m").await;
    for name in ["first", "second"] {
        hpas.create(
            &PostParams::default(),
            &hpa(name, "ReplicaSet", "apps/v1", "shared", 1, 5, json!({})),
        )
        .await
        .expect("hpa");
    }
    // once both have seen the pods' selector, each sync of either finds the other
    let message = wait_for("AmbiguousSelector", || async {
        let got = hpas.get("first").await.ok()?;
        let (st, reason, message) = condition(&got, "ScalingActive")?;
        (st == "False" && reason == "AmbiguousSelector").then_some(message)
    })
    .await;
    assert_eq!(
        message,
        "pods by selector app=shared are controlled by multiple HPAs: [{first hpa-ambiguous} {second hpa-ambiguous}]"
    );
    // deleting one ends the ambiguity
    hpas.delete("second", &Default::default())
        .await
        .expect("delete");
    wait_for("ValidMetricFound again", || async {
        let (st, reason, _) = condition(&hpas.get("first").await.ok()?, "ScalingActive")?;
        (st == "True" && reason == "ValidMetricFound").then_some(())
    })
    .await;
    h.stop().await;
}
