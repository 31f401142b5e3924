//! The Endpoints and EndpointSlice mirroring controllers against the embedded API
//! server. There is no kubelet here: the tests give pods their IP and readiness through
//! the status subresource.

use crate::common;

use common::{wait_for, Harness};
use coxswain_controllers::{endpoint, endpointslicemirroring};
use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

async fn pod(pods: &Api<Pod>, name: &str, ip: &str, ready: bool) {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 8080}]}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &p)
        .await
        .expect("pod created");
    set_ready(pods, name, ip, ready).await;
}

async fn set_ready(pods: &Api<Pod>, name: &str, ip: &str, ready: bool) {
    let status = if ready { "True" } else { "False" };
    // as a kubelet: the transition time is what the trigger-time annotation reports
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": status, "lastTransitionTime": now}],
        }})),
    )
    .await
    .expect("pod status");
}

/// The ready and not-ready IPs of the Endpoints, once they are `want`.
async fn wait_addresses(api: &Api<Endpoints>, name: &str, want: (&[&str], &[&str])) -> Endpoints {
    let what = format!("endpoints {name} with {want:?}");
    wait_for(&what, || async {
        let e = api.get_opt(name).await.expect("get")?;
        let ips = |f: fn(&k8s_openapi::api::core::v1::EndpointSubset) -> Option<&Vec<_>>| {
            let mut v: Vec<String> = e
                .subsets
                .iter()
                .flatten()
                .flat_map(|s| f(s).into_iter().flatten())
                .map(|a: &k8s_openapi::api::core::v1::EndpointAddress| a.ip.clone())
                .collect();
            v.sort();
            v
        };
        let ready = ips(|s| s.addresses.as_ref());
        let not_ready = ips(|s| s.not_ready_addresses.as_ref());
        (ready == want.0 && not_ready == want.1).then_some(e)
    })
    .await
}

#[tokio::test]
async fn endpoints_follow_the_pods_of_a_service() {
    common::logs();
    let h = Harness::start(&[endpoint::descriptor(), endpointslicemirroring::descriptor()]).await;
    let ns = "ep";
    h.namespace(ns).await;
    let services = Api::<Service>::namespaced(h.client(), ns);
    let pods = Api::<Pod>::namespaced(h.client(), ns);
    let endpoints = Api::<Endpoints>::namespaced(h.client(), ns);
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"},
            "ports": [{"name": "web", "port": 80, "targetPort": "http"}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("service created");
    // an Endpoints with no address yet, labelled as the Service plus the controller's label
    let e = wait_addresses(&endpoints, "web", (&[], &[])).await;
    let labels = e.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("tier").map(String::as_str), Some("front"));
    assert_eq!(
        labels
            .get("endpoints.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpoint-controller")
    );

    pod(&pods, "a", "10.1.0.1", true).await;
    pod(&pods, "b", "10.1.0.2", false).await;
    let e = wait_addresses(&endpoints, "web", (&["10.1.0.1"], &["10.1.0.2"])).await;
    let subset = &e.subsets.as_ref().unwrap()[0];
    let port = &subset.ports.as_ref().unwrap()[0];
    assert_eq!(
        (port.name.as_deref(), port.port),
        (Some("web"), 8080),
        "the named target port, resolved"
    );
    let target = subset.addresses.as_ref().unwrap()[0]
        .target_ref
        .clone()
        .unwrap();
    assert_eq!(
        (target.kind.as_deref(), target.name.as_deref()),
        (Some("Pod"), Some("a"))
    );
    assert!(e
        .metadata
        .annotations
        .unwrap_or_default()
        .contains_key("endpoints.kubernetes.io/last-change-trigger-time"));

    // readiness moves an address; deletion removes it
    set_ready(&pods, "b", "10.1.0.2", true).await;
    wait_addresses(&endpoints, "web", (&["10.1.0.1", "10.1.0.2"], &[])).await;
    pods.delete("a", &DeleteParams::default())
        .await
        .expect("pod deleted");
    wait_addresses(&endpoints, "web", (&["10.1.0.2"], &[])).await;

    // a hand-deleted Endpoints comes back
    endpoints
        .delete("web", &DeleteParams::default())
        .await
        .expect("endpoints deleted");
    wait_addresses(&endpoints, "web", (&["10.1.0.2"], &[])).await;

    // the controller's Endpoints are never mirrored (the Service has a selector)
    let slices = Api::<EndpointSlice>::namespaced(h.client(), ns);
    let mirrored = ListParams::default()
        .labels("endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io");
    assert!(slices.list(&mirrored).await.expect("list").items.is_empty());

    // the Service goes, so does its Endpoints
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("service deleted");
    wait_for("endpoints deleted", || async {
        endpoints
            .get_opt("web")
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await;
    h.stop().await;
}

/// The mirrored slices of `name`, once `check` accepts them.
async fn wait_slices(
    api: &Api<EndpointSlice>,
    name: &str,
    what: &str,
    check: impl Fn(&[EndpointSlice]) -> bool,
) -> Vec<EndpointSlice> {
    let params = ListParams::default().labels(&format!(
        "kubernetes.io/service-name={name},endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io"
    ));
    wait_for(what, || async {
        let items = api.list(&params).await.expect("list").items;
        check(&items).then_some(items)
    })
    .await
}

fn ips(slices: &[EndpointSlice]) -> Vec<String> {
    let mut v: Vec<String> = slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .flat_map(|e| e.addresses.clone())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn custom_endpoints_of_a_selectorless_service_are_mirrored() {
    common::logs();
    let h = Harness::start(&[endpoint::descriptor(), endpointslicemirroring::descriptor()]).await;
    let ns = "mirror";
    h.namespace(ns).await;
    let services = Api::<Service>::namespaced(h.client(), ns);
    let endpoints = Api::<Endpoints>::namespaced(h.client(), ns);
    let slices = Api::<EndpointSlice>::namespaced(h.client(), ns);
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"ports": [{"name": "pg", "port": 5432}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("service created");
    let ep: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "db", "labels": {"team": "data"}, "annotations": {"note": "hand-written"}},
        "subsets": [{
            "addresses": [{"ip": "192.168.1.10"}, {"ip": "fd00::10"}],
            "notReadyAddresses": [{"ip": "192.168.1.11"}],
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
        }],
    }))
    .expect("endpoints");
    let created = endpoints
        .create(&PostParams::default(), &ep)
        .await
        .expect("endpoints created");

    // one slice per address type, labelled, annotated and owned by the Endpoints
    let got = wait_slices(&slices, "db", "an IPv4 and an IPv6 slice", |s| s.len() == 2).await;
    assert_eq!(ips(&got), ["192.168.1.10", "192.168.1.11", "fd00::10"]);
    for s in &got {
        let labels = s.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("team").map(String::as_str), Some("data"));
        assert_eq!(
            s.metadata
                .annotations
                .clone()
                .unwrap_or_default()
                .get("note")
                .map(String::as_str),
            Some("hand-written")
        );
        let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("Endpoints", "db")
        );
        assert_eq!(Some(&owner.uid), created.metadata.uid.as_ref());
        assert!(s.metadata.name.as_deref().unwrap().starts_with("db-"));
        let ready: Vec<(String, Option<bool>)> = s
            .endpoints
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.addresses[0].clone(),
                    e.conditions.as_ref().and_then(|c| c.ready),
                )
            })
            .collect();
        for (ip, r) in ready {
            assert_eq!(r, Some(ip != "192.168.1.11"), "{ip}");
        }
    }
    let v4 = got
        .iter()
        .find(|s| s.address_type == "IPv4")
        .unwrap()
        .clone();

    // a change of the Endpoints rewrites the slice in place, the IPv6 slice goes
    endpoints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"subsets": [{
                "addresses": [{"ip": "192.168.1.12"}],
                "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
            }]})),
        )
        .await
        .expect("endpoints patched");
    let got = wait_slices(&slices, "db", "the new address only", |s| {
        ips(s) == ["192.168.1.12"]
    })
    .await;
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].metadata.name, v4.metadata.name,
        "the IPv4 slice is updated, not replaced"
    );

    // a slice deleted by someone else is written again
    slices
        .delete(
            got[0].metadata.name.as_deref().unwrap(),
            &DeleteParams::default(),
        )
        .await
        .expect("slice deleted");
    wait_slices(&slices, "db", "the slice mirrored again", |s| {
        ips(s) == ["192.168.1.12"] && s[0].metadata.name != got[0].metadata.name
    })
    .await;

    // skip-mirror: the slices go
    endpoints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}}})),
        )
        .await
        .expect("labelled");
    wait_slices(&slices, "db", "no slices when skipped", |s| s.is_empty()).await;
    endpoints
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"endpointslice.kubernetes.io/skip-mirror": null}}}),
            ),
        )
        .await
        .expect("unlabelled");
    wait_slices(&slices, "db", "mirrored again", |s| {
        ips(s) == ["192.168.1.12"]
    })
    .await;

    // the endpoints controller leaves a selector-less Service's Endpoints alone
    let e = endpoints.get("db").await.expect("get");
    assert_eq!(
        e.subsets.unwrap()[0].addresses.as_ref().unwrap()[0].ip,
        "192.168.1.12"
    );

    // the Endpoints goes, so do the slices
    endpoints
        .delete("db", &DeleteParams::default())
        .await
        .expect("endpoints deleted");
    wait_slices(&slices, "db", "no slices after the Endpoints went", |s| {
        s.is_empty()
    })
    .await;

    // written again, mirrored again; the Service gains a selector: the Endpoints become
    // the endpoints controller's, the mirrored slices go
    endpoints
        .create(&PostParams::default(), &ep)
        .await
        .expect("endpoints created again");
    wait_slices(&slices, "db", "mirrored after re-creation", |s| {
        s.len() == 2
    })
    .await;
    services
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"selector": {"app": "db"}}})),
        )
        .await
        .expect("selector added");
    wait_slices(
        &slices,
        "db",
        "no slices once the Service selects pods",
        |s| s.is_empty(),
    )
    .await;
    let e = wait_addresses(&endpoints, "db", (&[], &[])).await;
    assert_eq!(
        e.metadata
            .labels
            .unwrap_or_default()
            .get("endpoints.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("endpoint-controller")
    );

    // slice writes are counted by operation, as upstream's changes metric
    let text = coxswain_runtime::metrics::global().encode();
    for op in ["create", "update", "delete"] {
        assert!(
            text.contains(&format!(
                "endpoint_slice_mirroring_controller_changes_total{{operation=\"{op}\"}}"
            )),
            "{op} in {text}"
        );
    }
    assert!(text.contains("endpoint_slice_mirroring_controller_endpoints_added_per_sync_count"));
    h.stop().await;
}
