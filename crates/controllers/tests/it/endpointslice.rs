//! The EndpointSlice controller against the embedded API server (no kubelet: the tests
//! set pod IPs and readiness themselves, and create the node the pods run on).

use std::collections::BTreeSet;

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::endpointslice::{self, EndpointSliceControllerOptions};
use coxswain_controllers::registry::ControllerManagerOptions;
use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::{json, Value};

async fn start(max_endpoints_per_slice: usize, ns: &str) -> Harness {
    common::logs();
    let options = ControllerManagerOptions {
        endpoint_slice: EndpointSliceControllerOptions {
            max_endpoints_per_slice,
            ..Default::default()
        },
        ..Default::default()
    };
    let h = Harness::start_with(&[endpointslice::descriptor()], options).await;
    h.namespace(ns).await;
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
    }))
    .expect("node");
    Api::<Node>::all(h.client())
        .create(&PostParams::default(), &node)
        .await
        .expect("node created");
    h
}

async fn create(client: &kube::Client, ns: &str, obj: Value) {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    match kind.as_str() {
        "Service" => {
            let svc: Service = serde_json::from_value(obj).expect("service");
            Api::<Service>::namespaced(client.clone(), ns)
                .create(&PostParams::default(), &svc)
                .await
                .expect("service created");
        }
        _ => {
            let pod: Pod = serde_json::from_value(obj).expect("pod");
            Api::<Pod>::namespaced(client.clone(), ns)
                .create(&PostParams::default(), &pod)
                .await
                .expect("pod created");
        }
    }
}

/// A pod labelled `app`, on node-1, with a container port `http` (`http_port`).
async fn create_pod(client: &kube::Client, ns: &str, name: &str, app: &str, http_port: i32) {
    create(
        client,
        ns,
        json!({
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {
                "nodeName": "node-1",
                "containers": [{"name": "c", "image": "nginx",
                    "ports": [{"name": "http", "containerPort": http_port}]}],
            },
        }),
    )
    .await;
}

/// What a kubelet reports: running, this IP, ready or not.
async fn set_status(client: &kube::Client, ns: &str, name: &str, ip: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    Api::<Pod>::namespaced(client.clone(), ns)
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": status,
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            }})),
        )
        .await
        .expect("status set");
}

async fn slices(client: &kube::Client, ns: &str, service: &str) -> Vec<EndpointSlice> {
    Api::<EndpointSlice>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("kubernetes.io/service-name={service}")))
        .await
        .expect("slices listed")
        .items
}

/// (address, ready) of every endpoint of the Service's slices.
async fn endpoints(client: &kube::Client, ns: &str, service: &str) -> BTreeSet<(String, bool)> {
    slices(client, ns, service)
        .await
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .map(|e| {
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
            (e.addresses[0].clone(), ready)
        })
        .collect()
}

fn set(items: &[(&str, bool)]) -> BTreeSet<(String, bool)> {
    items.iter().map(|(a, r)| (a.to_string(), *r)).collect()
}

#[tokio::test]
async fn slices_follow_the_pods_of_a_service() {
    let ns = "eps";
    let h = start(100, ns).await;
    let c = h.client();
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "web", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    )
    .await;
    // no pods: one placeholder slice
    let placeholder = wait_for("the placeholder slice", || async {
        let s = slices(&c, ns, "web").await;
        (s.len() == 1).then(|| s[0].clone())
    })
    .await;
    assert!(placeholder.endpoints.iter().flatten().next().is_none());
    let labels = placeholder.metadata.labels.clone().unwrap();
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(labels["team"], "a");
    assert!(placeholder
        .metadata
        .name
        .as_deref()
        .unwrap()
        .starts_with("web-"));
    let owner = &placeholder.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Service", "web")
    );

    for (i, port) in [(1, 8080), (2, 8080), (3, 9090)] {
        create_pod(&c, ns, &format!("web-{i}"), "web", port).await;
        set_status(&c, ns, &format!("web-{i}"), &format!("10.1.0.{i}"), true).await;
    }
    // a pod of another app is not an endpoint
    create_pod(&c, ns, "other", "other", 8080).await;
    set_status(&c, ns, "other", "10.1.0.99", true).await;
    let want = set(&[("10.1.0.1", true), ("10.1.0.2", true), ("10.1.0.3", true)]);
    wait_for("three ready endpoints", || async {
        (endpoints(&c, ns, "web").await == want).then_some(())
    })
    .await;
    // the named port resolves per pod: two port sets, two slices, no placeholder left
    let s = slices(&c, ns, "web").await;
    let mut ports: Vec<(i32, usize)> = s
        .iter()
        .map(|s| {
            let p = s.ports.as_ref().unwrap()[0].port.unwrap();
            (p, s.endpoints.as_ref().map_or(0, Vec::len))
        })
        .collect();
    ports.sort();
    assert_eq!(ports, vec![(8080, 2), (9090, 1)]);
    let ep = s
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .next()
        .unwrap();
    assert_eq!(ep.node_name.as_deref(), Some("node-1"));
    assert_eq!(ep.zone.as_deref(), Some("zone-a"));
    assert_eq!(ep.target_ref.as_ref().unwrap().kind.as_deref(), Some("Pod"));
    assert!(s.iter().all(|s| s
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("endpoints.kubernetes.io/last-change-trigger-time"))));

    // a pod that stops being ready stays, not ready
    set_status(&c, ns, "web-2", "10.1.0.2", false).await;
    let want = set(&[("10.1.0.1", true), ("10.1.0.2", false), ("10.1.0.3", true)]);
    wait_for("web-2 not ready", || async {
        (endpoints(&c, ns, "web").await == want).then_some(())
    })
    .await;

    // scale down: a deleted pod leaves
    Api::<Pod>::namespaced(c.clone(), ns)
        .delete("web-1", &DeleteParams::default().grace_period(0))
        .await
        .expect("pod deleted");
    let want = set(&[("10.1.0.2", false), ("10.1.0.3", true)]);
    wait_for("web-1 gone", || async {
        (endpoints(&c, ns, "web").await == want).then_some(())
    })
    .await;

    // a slice deleted by someone else is recreated
    let victim = slices(&c, ns, "web")
        .await
        .into_iter()
        .find(|s| s.ports.as_ref().unwrap()[0].port == Some(9090))
        .unwrap();
    Api::<EndpointSlice>::namespaced(c.clone(), ns)
        .delete(
            victim.metadata.name.as_deref().unwrap(),
            &DeleteParams::default(),
        )
        .await
        .expect("slice deleted");
    wait_for("the deleted slice recreated", || async {
        let s = slices(&c, ns, "web").await;
        let back = s.iter().any(|s| {
            s.metadata.name != victim.metadata.name
                && s.ports.as_ref().unwrap()[0].port == Some(9090)
        });
        back.then_some(())
    })
    .await;

    // a headless Service: endpoints carry the hostname of pods in its subdomain
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "db"},
            "spec": {"clusterIP": "None", "selector": {"app": "db"}}}),
    )
    .await;
    create(
        &c,
        ns,
        json!({"kind": "Pod", "metadata": {"name": "db-0", "labels": {"app": "db"}},
            "spec": {"nodeName": "node-1", "hostname": "db-0", "subdomain": "db",
                "containers": [{"name": "c", "image": "postgres"}]}}),
    )
    .await;
    set_status(&c, ns, "db-0", "10.1.1.1", true).await;
    let db = wait_for("the headless Service's endpoint", || async {
        let s = slices(&c, ns, "db").await;
        let has = s
            .iter()
            .any(|s| s.endpoints.iter().flatten().next().is_some());
        has.then_some(s)
    })
    .await;
    assert_eq!(db.len(), 1);
    assert_eq!(
        db[0].metadata.labels.as_ref().unwrap()["service.kubernetes.io/headless"],
        ""
    );
    let ep = &db[0].endpoints.as_ref().unwrap()[0];
    assert_eq!(ep.hostname.as_deref(), Some("db-0"));
    assert!(db[0].ports.iter().flatten().next().is_none());

    // Services without a selector and ExternalName Services get no slices
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "manual"},
            "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "external"},
            "spec": {"type": "ExternalName", "externalName": "example.com",
                "selector": {"app": "web"}}}),
    )
    .await;
    // a later Service's slice shows the earlier ones were synced
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "later"},
            "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}}),
    )
    .await;
    wait_for("the later Service's placeholder", || async {
        (slices(&c, ns, "later").await.len() == 1).then_some(())
    })
    .await;
    assert!(slices(&c, ns, "manual").await.is_empty());
    assert!(slices(&c, ns, "external").await.is_empty());
    h.stop().await;
}

#[tokio::test]
async fn max_endpoints_per_slice_splits_endpoints() {
    let ns = "eps-max";
    let h = start(2, ns).await;
    let c = h.client();
    create(
        &c,
        ns,
        json!({"kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    )
    .await;
    for i in 1..=5 {
        create_pod(&c, ns, &format!("web-{i}"), "web", 8080).await;
        set_status(&c, ns, &format!("web-{i}"), &format!("10.2.0.{i}"), true).await;
    }
    wait_for("five endpoints in slices of at most two", || async {
        let s = slices(&c, ns, "web").await;
        let mut sizes: Vec<usize> = s
            .iter()
            .map(|s| s.endpoints.as_ref().map_or(0, Vec::len))
            .collect();
        sizes.sort();
        (sizes.iter().sum::<usize>() == 5 && sizes.iter().all(|n| *n <= 2)).then_some(())
    })
    .await;
    h.stop().await;
}
