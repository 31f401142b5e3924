//! Fault-injection scenarios (issue 21) of the Service network and auth housekeeping
//! controllers: endpoints, EndpointSlices and their mirroring, the three service account
//! controllers, the root CA publisher, cluster role aggregation, the bootstrap token
//! controllers and the three CertificateSigningRequest controllers. Each runs under the
//! runtime's harness (see `mod.rs`) with the invariants upstream keeps.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use coxswain_controllers::registry::Descriptor;
use coxswain_controllers::{
    bootstrap, certificates, clusterroleaggregation, endpoint, endpointslice,
    endpointslicemirroring, rootcacertpublisher, serviceaccount,
};
use coxswain_runtime::fault::FaultKind;
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::testing::{check, Invariant, Scenario, World};
use futures::FutureExt;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{
    ConfigMap, Endpoints, Namespace, Node, Pod, Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{builtin, ensure};

type Res = Result<(), String>;

fn object<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("a valid object")
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn name_of<K: kube::Resource>(o: &K) -> &str {
    o.meta().name.as_deref().unwrap_or_default()
}

fn labels_of<K: kube::Resource>(o: &K) -> BTreeMap<String, String> {
    o.meta().labels.clone().unwrap_or_default()
}

fn annotations_of<K: kube::Resource>(o: &K) -> BTreeMap<String, String> {
    o.meta().annotations.clone().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// Services, pods, Endpoints and EndpointSlices
// ---------------------------------------------------------------------------------------

/// A pod `name` labelled `app: web` with a named port, given `ip` and readiness through
/// the status subresource (there is no kubelet in these scenarios).
async fn web_pod(w: &World, name: &str, ip: &str, ready: bool) -> Res {
    let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
    let p: Pod = object(json!({
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 8080}]}]},
    }));
    pods.create(&PostParams::default(), &p).await.map_err(err)?;
    set_ready(w, name, ip, ready).await
}

async fn set_ready(w: &World, name: &str, ip: &str, ready: bool) -> Res {
    let pods = Api::<Pod>::namespaced(w.client(), w.namespace());
    let status = if ready { "True" } else { "False" };
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": status}],
        }})),
    )
    .await
    .map_err(err)?;
    Ok(())
}

fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn pod_ip(p: &Pod) -> Option<String> {
    p.status.as_ref().and_then(|s| s.pod_ip.clone())
}

/// The (IP, ready) pairs the pods selected by `app: web` should give, from the
/// observer's view.
fn desired_web_endpoints(w: &World) -> BTreeSet<(String, bool)> {
    w.list::<Pod>()
        .iter()
        .filter(|p| labels_of(p.as_ref()).get("app").map(String::as_str) == Some("web"))
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter_map(|p| pod_ip(p).map(|ip| (ip, pod_ready(p))))
        .collect()
}

async fn create_service(w: &World, name: &str, selector: Option<Value>) -> Res {
    let mut spec = json!({"ports": [{"name": "web", "port": 80, "targetPort": "http"}]});
    if let Some(s) = selector {
        spec["selector"] = s;
    }
    let svc: Service = object(json!({"metadata": {"name": name}, "spec": spec}));
    Api::<Service>::namespaced(w.client(), w.namespace())
        .create(&PostParams::default(), &svc)
        .await
        .map_err(err)?;
    Ok(())
}

/// The (IP, ready) pairs of an Endpoints object, with duplicates kept.
fn endpoints_addresses(e: &Endpoints) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    for s in e.subsets.iter().flatten() {
        for a in s.addresses.iter().flatten() {
            out.push((a.ip.clone(), true));
        }
        for a in s.not_ready_addresses.iter().flatten() {
            out.push((a.ip.clone(), false));
        }
    }
    out.sort();
    out
}

/// The hand-written Endpoints of the selector-less Service `manual`.
fn manual_endpoints() -> Endpoints {
    object(json!({
        "metadata": {"name": "manual"},
        "subsets": [{"addresses": [{"ip": "192.168.9.9"}], "ports": [{"port": 9000, "protocol": "TCP"}]}],
    }))
}

fn endpoints_scenario() -> Scenario {
    Scenario::new("endpoints")
        .controllers(builtin(vec![endpoint::descriptor()]))
        .observe::<Pod>()
        .observe::<Service>()
        .observe::<Endpoints>()
        .workload(|w: World| {
            async move {
                let endpoints = Api::<Endpoints>::namespaced(w.client(), w.namespace());
                let services = Api::<Service>::namespaced(w.client(), w.namespace());
                // a selector-less Service whose Endpoints are the user's
                create_service(&w, "manual", None).await?;
                endpoints
                    .create(&PostParams::default(), &manual_endpoints())
                    .await
                    .map_err(err)?;
                create_service(&w, "web", Some(json!({"app": "web"}))).await?;
                create_service(&w, "gone", Some(json!({"app": "web"}))).await?;
                web_pod(&w, "a", "10.1.0.1", true).await?;
                web_pod(&w, "b", "10.1.0.2", false).await?;
                let want = |ips: Vec<(&'static str, bool)>| {
                    move |w: &World| {
                        let e = w.get::<Endpoints>("web").ok_or("no endpoints web")?;
                        let got = endpoints_addresses(&e);
                        let want: Vec<(String, bool)> =
                            ips.iter().map(|(i, r)| (i.to_string(), *r)).collect();
                        ensure(got == want, || {
                            format!("web endpoints {got:?}, want {want:?}")
                        })
                    }
                };
                w.wait(
                    "a ready, b not ready",
                    want(vec![("10.1.0.1", true), ("10.1.0.2", false)]),
                )
                .await?;
                set_ready(&w, "b", "10.1.0.2", true).await?;
                w.wait(
                    "a and b ready",
                    want(vec![("10.1.0.1", true), ("10.1.0.2", true)]),
                )
                .await?;
                Api::<Pod>::namespaced(w.client(), w.namespace())
                    .delete("a", &DeleteParams::default().grace_period(0))
                    .await
                    .map_err(err)?;
                w.wait("only b", want(vec![("10.1.0.2", true)])).await?;
                // the Service goes, so does its Endpoints
                w.wait("endpoints of gone", |w| {
                    w.get::<Endpoints>("gone")
                        .map(|_| ())
                        .ok_or_else(|| "no endpoints gone".to_string())
                })
                .await?;
                services
                    .delete("gone", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // the controller never writes the Endpoints of a Service without a selector
        .invariant(Invariant::new(
            "hand-written endpoints untouched",
            |w| match w.get::<Endpoints>("manual") {
                None => Ok(()),
                Some(e) => ensure(e.subsets == manual_endpoints().subsets, || {
                    format!("manual endpoints changed: {:?}", e.subsets)
                }),
            },
        ))
        // an address is listed once: ready and not-ready addresses are disjoint
        .invariant(Invariant::new("no address listed twice", |w| {
            for e in w.list::<Endpoints>() {
                let got = endpoints_addresses(&e);
                let ips: BTreeSet<&String> = got.iter().map(|(ip, _)| ip).collect();
                ensure(ips.len() == got.len(), || {
                    format!(
                        "endpoints {} list an address twice: {got:?}",
                        name_of(e.as_ref())
                    )
                })?;
            }
            Ok(())
        }))
        .converged("endpoints follow the pods and services", |w| {
            let want: Vec<(String, bool)> = desired_web_endpoints(w).into_iter().collect();
            let e = w.get::<Endpoints>("web").ok_or("no endpoints web")?;
            let got = endpoints_addresses(&e);
            ensure(got == want, || {
                format!("web endpoints {got:?}, want {want:?}")
            })?;
            ensure(
                labels_of(e.as_ref())
                    .get("endpoints.kubernetes.io/managed-by")
                    .map(String::as_str)
                    == Some("endpoint-controller"),
                || "web endpoints not labelled managed-by".to_string(),
            )?;
            ensure(w.get::<Endpoints>("gone").is_none(), || {
                "endpoints of the deleted service left over".to_string()
            })?;
            ensure(w.get::<Endpoints>("manual").is_some(), || {
                "hand-written endpoints deleted".to_string()
            })
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_under_faults() {
    crate::common::logs();
    check(&endpoints_scenario()).await;
}

fn managed_slices(w: &World, service: &str, managed_by: &str) -> Vec<Arc<EndpointSlice>> {
    w.list::<EndpointSlice>()
        .into_iter()
        .filter(|s| {
            let l = labels_of(s.as_ref());
            l.get("kubernetes.io/service-name").map(String::as_str) == Some(service)
                && l.get("endpointslice.kubernetes.io/managed-by")
                    .map(String::as_str)
                    == Some(managed_by)
                && s.metadata.deletion_timestamp.is_none()
        })
        .collect()
}

/// The (address, ready) pairs of slices, duplicates kept.
fn slice_endpoints(slices: &[Arc<EndpointSlice>]) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = slices
        .iter()
        .flat_map(|s| s.endpoints.clone().unwrap_or_default())
        .flat_map(|e| {
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false);
            e.addresses.into_iter().map(move |a| (a, ready))
        })
        .collect();
    out.sort();
    out
}

const SLICE_CONTROLLER: &str = "endpointslice-controller.k8s.io";
const MIRRORING_CONTROLLER: &str = "endpointslicemirroring-controller.k8s.io";

fn endpointslice_scenario() -> Scenario {
    Scenario::new("endpointslice")
        .controllers(builtin(vec![endpointslice::descriptor()]))
        .observe::<Pod>()
        .observe::<Service>()
        .observe::<EndpointSlice>()
        .setup(|w: World| {
            async move {
                let node: Node = object(json!({
                    "metadata": {"name": "node-1", "labels": {"topology.kubernetes.io/zone": "zone-a"}},
                }));
                Api::<Node>::all(w.client())
                    .create(&PostParams::default(), &node)
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                create_service(&w, "web", Some(json!({"app": "web"}))).await?;
                create_service(&w, "empty", Some(json!({"app": "nothing"}))).await?;
                web_pod(&w, "a", "10.1.0.1", true).await?;
                web_pod(&w, "b", "10.1.0.2", false).await?;
                let want = |ips: Vec<(&'static str, bool)>| {
                    move |w: &World| {
                        let got = slice_endpoints(&managed_slices(w, "web", SLICE_CONTROLLER));
                        let want: Vec<(String, bool)> =
                            ips.iter().map(|(i, r)| (i.to_string(), *r)).collect();
                        ensure(got == want, || format!("web slices {got:?}, want {want:?}"))
                    }
                };
                w.wait(
                    "a ready, b not ready",
                    want(vec![("10.1.0.1", true), ("10.1.0.2", false)]),
                )
                .await?;
                set_ready(&w, "b", "10.1.0.2", true).await?;
                web_pod(&w, "c", "10.1.0.3", true).await?;
                w.wait(
                    "a, b and c ready",
                    want(vec![
                        ("10.1.0.1", true),
                        ("10.1.0.2", true),
                        ("10.1.0.3", true),
                    ]),
                )
                .await?;
                Api::<Pod>::namespaced(w.client(), w.namespace())
                    .delete("a", &DeleteParams::default().grace_period(0))
                    .await
                    .map_err(err)?;
                w.wait(
                    "b and c",
                    want(vec![("10.1.0.2", true), ("10.1.0.3", true)]),
                )
                .await?;
                Ok(())
            }
            .boxed()
        })
        // every slice the controller writes is labelled for and owned by its Service
        .invariant(Invariant::new("slices owned by their service", |w| {
            let services: BTreeMap<String, String> = w
                .list::<Service>()
                .iter()
                .map(|s| {
                    (
                        name_of(s.as_ref()).to_string(),
                        s.metadata.uid.clone().unwrap_or_default(),
                    )
                })
                .collect();
            for s in w.list::<EndpointSlice>() {
                let l = labels_of(s.as_ref());
                if l.get("endpointslice.kubernetes.io/managed-by").map(String::as_str)
                    != Some(SLICE_CONTROLLER)
                {
                    continue;
                }
                let svc = l.get("kubernetes.io/service-name").cloned().unwrap_or_default();
                let owner = s
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true));
                ensure(
                    owner.is_some_and(|o| o.kind == "Service" && o.name == svc),
                    || format!("slice {} not controlled by service {svc}", name_of(s.as_ref())),
                )?;
                // the observer may not have seen the service yet, never another one
                if let (Some(uid), Some(o)) = (services.get(&svc), owner) {
                    ensure(&o.uid == uid, || {
                        format!("slice {} owned by another {svc}", name_of(s.as_ref()))
                    })?;
                }
                ensure(s.endpoints.as_ref().map_or(0, Vec::len) <= 100, || {
                    format!("slice {} over max endpoints", name_of(s.as_ref()))
                })?;
            }
            Ok(())
        }))
        // one endpoint per pod across the slices of a Service. A create whose answer is
        // lost (Timeout), a stale cache after a restart (CrashStale) or a new leader
        // whose cache has not seen the last create yet (LeaderMove) can make upstream's
        // controller write the endpoint into a second slice too (its tracker knows only
        // the writes it saw answered), removed again at the next sync. Every single-fault
        // plan of this workload passes without the exception (the retry backs off 1 s,
        // the cache has caught up by then); a late watch event on top may not.
        .invariant(
            Invariant::new("an address once per service", |w| {
                for svc in ["web", "empty"] {
                    let got = slice_endpoints(&managed_slices(w, svc, SLICE_CONTROLLER));
                    let ips: BTreeSet<&String> = got.iter().map(|(ip, _)| ip).collect();
                    ensure(ips.len() == got.len(), || {
                        format!("{svc} slices list an address twice: {got:?}")
                    })?;
                }
                Ok(())
            })
            .except(&[
                FaultKind::Timeout,
                FaultKind::CrashStale,
                FaultKind::LeaderMove,
            ]),
        )
        .converged("slices follow the pods; one placeholder for no pods", |w| {
            let want: Vec<(String, bool)> = desired_web_endpoints(w).into_iter().collect();
            let web = managed_slices(w, "web", SLICE_CONTROLLER);
            let got = slice_endpoints(&web);
            ensure(got == want, || format!("web slices {got:?}, want {want:?}"))?;
            ensure(
                web.iter().all(|s| s.endpoints.as_ref().is_some_and(|e| !e.is_empty())),
                || "an empty slice next to the endpoints of web".to_string(),
            )?;
            let empty = managed_slices(w, "empty", SLICE_CONTROLLER);
            ensure(
                empty.len() == 1 && slice_endpoints(&empty).is_empty(),
                || format!("{} slices for a service without pods, want one placeholder", empty.len()),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpointslice_under_faults() {
    crate::common::logs();
    check(&endpointslice_scenario()).await;
}

fn db_endpoints(name: &str, ready: &[&str], not_ready: &[&str], skip: bool) -> Endpoints {
    let addr = |ips: &[&str]| ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
    let mut labels = json!({"team": "data"});
    if skip {
        labels["endpointslice.kubernetes.io/skip-mirror"] = json!("true");
    }
    object(json!({
        "metadata": {"name": name, "labels": labels},
        "subsets": [{
            "addresses": addr(ready),
            "notReadyAddresses": addr(not_ready),
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}],
        }],
    }))
}

/// (address, ready) pairs.
type Addresses = Vec<(String, bool)>;

/// What the workload last wrote to each hand-written Endpoints (`None`: deleted).
#[derive(Default)]
struct MirrorState {
    written: Mutex<BTreeMap<String, Option<Addresses>>>,
}

fn endpointslicemirroring_scenario() -> Scenario {
    Scenario::new("endpointslice-mirroring")
        .controllers(builtin(vec![endpointslicemirroring::descriptor()]))
        .observe::<Service>()
        .observe::<Endpoints>()
        .observe::<EndpointSlice>()
        .workload(|w: World| {
            async move {
                let endpoints = Api::<Endpoints>::namespaced(w.client(), w.namespace());
                for name in ["db", "old", "skipped"] {
                    create_service(&w, name, None).await?;
                }
                // a Service with a selector: its Endpoints are the endpoints controller's
                // (not running here), never mirrored
                create_service(&w, "selected", Some(json!({"app": "web"}))).await?;
                endpoints
                    .create(
                        &PostParams::default(),
                        &db_endpoints("selected", &["10.5.0.1"], &[], false),
                    )
                    .await
                    .map_err(err)?;
                let state = w.state::<MirrorState>();
                let record = |name: &str, e: Option<&Endpoints>| {
                    let mut m = state.written.lock().unwrap_or_else(|e| e.into_inner());
                    m.insert(name.to_string(), e.map(endpoints_addresses));
                };
                let pp = PostParams::default();
                let db = db_endpoints("db", &["10.2.0.1", "10.2.0.2"], &["10.2.0.3"], false);
                record("db", Some(&db));
                endpoints.create(&pp, &db).await.map_err(err)?;
                let old = db_endpoints("old", &["10.3.0.1"], &[], false);
                record("old", Some(&old));
                endpoints.create(&pp, &old).await.map_err(err)?;
                endpoints
                    .create(&pp, &db_endpoints("skipped", &["10.4.0.1"], &[], true))
                    .await
                    .map_err(err)?;
                let mirrored = |name: &'static str, want: Vec<(&'static str, bool)>| {
                    move |w: &World| {
                        let got = slice_endpoints(&managed_slices(w, name, MIRRORING_CONTROLLER));
                        let want: Vec<(String, bool)> =
                            want.iter().map(|(i, r)| (i.to_string(), *r)).collect();
                        ensure(got == want, || {
                            format!("{name} slices {got:?}, want {want:?}")
                        })
                    }
                };
                w.wait(
                    "db mirrored",
                    mirrored(
                        "db",
                        vec![("10.2.0.1", true), ("10.2.0.2", true), ("10.2.0.3", false)],
                    ),
                )
                .await?;
                w.wait("old mirrored", mirrored("old", vec![("10.3.0.1", true)]))
                    .await?;
                // the user rewrites db and deletes old
                let mut current = endpoints.get("db").await.map_err(err)?;
                let db = db_endpoints("db", &["10.2.0.2", "10.2.0.4"], &[], false);
                current.subsets = db.subsets.clone();
                record("db", Some(&db));
                endpoints.replace("db", &pp, &current).await.map_err(err)?;
                record("old", None);
                endpoints
                    .delete("old", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                w.wait(
                    "db rewritten",
                    mirrored("db", vec![("10.2.0.2", true), ("10.2.0.4", true)]),
                )
                .await?;
                Ok(())
            }
            .boxed()
        })
        // Endpoints labelled skip-mirror, or of a Service with a selector, are never
        // mirrored
        .invariant(Invariant::new("skip-mirror and selectors respected", |w| {
            for name in ["skipped", "selected"] {
                let n = managed_slices(w, name, MIRRORING_CONTROLLER).len();
                ensure(n == 0, || format!("{n} slices mirror Endpoints {name}"))?;
            }
            Ok(())
        }))
        // a mirrored address is one the user wrote at some point
        .invariant(Invariant::new("only written addresses mirrored", |w| {
            let ok: BTreeSet<String> = ["10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.3.0.1"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            for s in w.list::<EndpointSlice>() {
                for e in s.endpoints.iter().flatten() {
                    for a in &e.addresses {
                        ensure(ok.contains(a), || format!("unknown address {a} mirrored"))?;
                    }
                }
            }
            Ok(())
        }))
        .converged(
            "slices mirror the Endpoints once; none for a deleted one",
            |w| {
                let written = w.state::<MirrorState>();
                let written = written
                    .written
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                for (name, want) in written {
                    let slices = managed_slices(w, &name, MIRRORING_CONTROLLER);
                    match want {
                        None => ensure(slices.is_empty(), || {
                            format!(
                                "{} slices left over for deleted Endpoints {name}",
                                slices.len()
                            )
                        })?,
                        Some(want) => {
                            let got = slice_endpoints(&slices);
                            ensure(got == want, || {
                                format!("{name} slices {got:?}, want {want:?}")
                            })?;
                            ensure(slices.len() == 1, || {
                                format!("{} slices for {name}, want one", slices.len())
                            })?;
                            let e = w.get::<Endpoints>(&name).ok_or("no endpoints")?;
                            for s in &slices {
                                let owner = s.metadata.owner_references.iter().flatten().next();
                                ensure(
                                    owner.is_some_and(|o| {
                                        o.kind == "Endpoints"
                                            && Some(&o.uid) == e.metadata.uid.as_ref()
                                    }),
                                    || {
                                        format!(
                                            "slice {} not owned by Endpoints {name}",
                                            name_of(s.as_ref())
                                        )
                                    },
                                )?;
                                ensure(
                                    labels_of(s.as_ref()).get("team").map(String::as_str)
                                        == Some("data"),
                                    || "labels not mirrored".to_string(),
                                )?;
                            }
                        }
                    }
                }
                Ok(())
            },
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpointslicemirroring_under_faults() {
    crate::common::logs();
    check(&endpointslicemirroring_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// Service accounts, their legacy tokens, the root CA, aggregated cluster roles
// ---------------------------------------------------------------------------------------

fn namespace_active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Active")
}

async fn create_namespace(w: &World, name: &str) -> Res {
    Api::<Namespace>::all(w.client())
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": name}})),
        )
        .await
        .map_err(err)?;
    Ok(())
}

fn serviceaccount_scenario() -> Scenario {
    Scenario::new("serviceaccount")
        .controllers(builtin(vec![serviceaccount::descriptor()]))
        .observe::<Namespace>()
        .observe::<ServiceAccount>()
        .workload(|w: World| {
            async move {
                create_namespace(&w, "team-a").await?;
                create_namespace(&w, "team-b").await?;
                let has_default = |ns: &'static str| {
                    move |w: &World| {
                        let found = w.list_all::<ServiceAccount>().iter().any(|sa| {
                            sa.metadata.namespace.as_deref() == Some(ns)
                                && name_of(sa.as_ref()) == "default"
                        });
                        ensure(found, || format!("no default account in {ns}"))
                    }
                };
                w.wait("default account in team-a", has_default("team-a"))
                    .await?;
                w.wait("default account in team-b", has_default("team-b"))
                    .await?;
                // a deleted default account comes back
                Api::<ServiceAccount>::namespaced(w.client(), "team-a")
                    .delete("default", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // the controller creates only `default` accounts
        .invariant(Invariant::new("only default accounts", |w| {
            for sa in w.list_all::<ServiceAccount>() {
                ensure(name_of(sa.as_ref()) == "default", || {
                    format!("unexpected account {}", name_of(sa.as_ref()))
                })?;
            }
            Ok(())
        }))
        .converged("every active namespace has its default account", |w| {
            let accounts = w.list_all::<ServiceAccount>();
            for ns in w.list::<Namespace>() {
                if !namespace_active(&ns) {
                    continue;
                }
                let name = name_of(ns.as_ref());
                ensure(
                    accounts.iter().any(|sa| {
                        sa.metadata.namespace.as_deref() == Some(name)
                            && name_of(sa.as_ref()) == "default"
                    }),
                    || format!("no default account in {name}"),
                )?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serviceaccount_under_faults() {
    crate::common::logs();
    check(&serviceaccount_scenario()).await;
}

/// The key the token controller signs with, made once per test process (upstream reads
/// it from `--service-account-private-key-file`).
fn token_key() -> &'static apimachinery::serviceaccount::SigningKey {
    static KEY: OnceLock<apimachinery::serviceaccount::SigningKey> = OnceLock::new();
    KEY.get_or_init(|| apimachinery::serviceaccount::SigningKey::generate().expect("a key"))
}

const ROOT_CA: &[u8] = b"CA Data";

/// The token controller with the test key and root CA (upstream needs
/// `--service-account-private-key-file`).
fn token_controller() -> Descriptor {
    Descriptor {
        name: serviceaccount::tokens::NAME,
        aliases: &[],
        disabled_by_default: false,
        constructor: |ctx| {
            let generator: serviceaccount::tokens::TokenGenerator =
                Arc::new(|sa: &ServiceAccount, secret: &Secret| {
                    apimachinery::serviceaccount::sign_legacy(
                        token_key(),
                        sa.metadata.namespace.as_deref().unwrap_or(""),
                        sa.metadata.name.as_deref().unwrap_or(""),
                        sa.metadata.uid.as_deref().unwrap_or(""),
                        secret.metadata.name.as_deref().unwrap_or(""),
                    )
                    .map_err(|e| e.to_string())
                });
            Ok(Some(Box::new(serviceaccount::tokens::tokens_controller(
                ctx.manager.cache(),
                ctx.manager.kube_client().clone(),
                serviceaccount::tokens::TokensControllerOptions {
                    generator,
                    root_ca: Some(ROOT_CA.to_vec()),
                    workers: 2,
                },
            )) as Box<dyn Runnable>))
        },
    }
}

fn token_secret(name: &str, account: &str) -> Secret {
    object(json!({
        "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}},
        "type": "kubernetes.io/service-account-token",
    }))
}

fn secret_data(s: &Secret, key: &str) -> Option<Vec<u8>> {
    s.data
        .as_ref()
        .and_then(|d| d.get(key))
        .map(|b| b.0.clone())
}

/// Set once the workload saw the token of `keeper` created: it must stay.
#[derive(Default)]
struct KeeperSeen(AtomicBool);

fn serviceaccount_token_scenario() -> Scenario {
    Scenario::new("serviceaccount-token")
        .controllers(builtin(vec![token_controller()]))
        .observe::<ServiceAccount>()
        .observe::<Secret>()
        .workload(|w: World| {
            async move {
                let accounts = Api::<ServiceAccount>::namespaced(w.client(), w.namespace());
                let secrets = Api::<Secret>::namespaced(w.client(), w.namespace());
                let pp = PostParams::default();
                for name in ["keeper", "builder"] {
                    accounts
                        .create(&pp, &object(json!({"metadata": {"name": name}})))
                        .await
                        .map_err(err)?;
                }
                secrets
                    .create(&pp, &token_secret("keeper-token", "keeper"))
                    .await
                    .map_err(err)?;
                secrets
                    .create(&pp, &token_secret("builder-token", "builder"))
                    .await
                    .map_err(err)?;
                w.wait("keeper-token seen", |w| {
                    w.get::<Secret>("keeper-token")
                        .map(|_| ())
                        .ok_or_else(|| "not yet".to_string())
                })
                .await?;
                w.state::<KeeperSeen>().0.store(true, Ordering::SeqCst);
                let filled = |name: &'static str| {
                    move |w: &World| {
                        let s = w.get::<Secret>(name).ok_or("missing")?;
                        ensure(secret_data(&s, "token").is_some(), || {
                            format!("{name} has no token")
                        })
                    }
                };
                w.wait("builder-token filled", filled("builder-token"))
                    .await?;
                // a token of an account that does not exist is deleted
                secrets
                    .create(&pp, &token_secret("ghost-token", "ghost"))
                    .await
                    .map_err(err)?;
                // the account's tokens go with it
                accounts
                    .delete("builder", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "a live account's token is never deleted",
            |w| {
                if !w.state::<KeeperSeen>().0.load(Ordering::SeqCst) {
                    return Ok(());
                }
                ensure(w.get::<Secret>("keeper-token").is_some(), || {
                    "the token of an existing account was deleted".to_string()
                })
            },
        ))
        .converged("tokens filled; orphan tokens deleted", |w| {
            let keeper = w
                .get::<ServiceAccount>("keeper")
                .ok_or("no keeper account")?;
            let s = w
                .get::<Secret>("keeper-token")
                .ok_or("keeper-token deleted")?;
            let token = secret_data(&s, "token").ok_or("keeper-token has no token")?;
            let token = String::from_utf8(token).map_err(err)?;
            apimachinery::serviceaccount::jwt::parse(&token)
                .map_err(err)?
                .verify(&[token_key().public_key()])
                .map_err(err)?;
            let claims =
                apimachinery::serviceaccount::jwt::unverified_claims(&token).ok_or("no claims")?;
            ensure(
                claims["sub"] == "system:serviceaccount:faults:keeper",
                || format!("keeper-token for {}", claims["sub"]),
            )?;
            ensure(
                secret_data(&s, "ca.crt").as_deref() == Some(ROOT_CA),
                || "keeper-token has no ca.crt".to_string(),
            )?;
            ensure(
                secret_data(&s, "namespace").as_deref() == Some(w.namespace().as_bytes()),
                || "keeper-token has no namespace".to_string(),
            )?;
            ensure(
                annotations_of(s.as_ref()).get("kubernetes.io/service-account.uid")
                    == keeper.metadata.uid.as_ref(),
                || "keeper-token lacks the account's uid".to_string(),
            )?;
            ensure(w.get::<Secret>("builder-token").is_none(), || {
                "the token of a deleted account is left".to_string()
            })?;
            ensure(w.get::<Secret>("ghost-token").is_none(), || {
                "the token of a missing account is left".to_string()
            })
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serviceaccount_token_under_faults() {
    crate::common::logs();
    check(&serviceaccount_token_scenario()).await;
}

const INVALID_SINCE: &str = "kubernetes.io/legacy-token-invalid-since";
const LAST_USED: &str = "kubernetes.io/legacy-token-last-used";

/// The cleaner evaluating every 100 ms with a clean-up period of one millisecond, so
/// that the tokens of the scenario are old enough at once (upstream: one day, one year).
fn legacy_token_cleaner() -> Descriptor {
    Descriptor {
        name: serviceaccount::cleaner::NAME,
        aliases: &[],
        disabled_by_default: false,
        constructor: |ctx| {
            let c = serviceaccount::cleaner::legacy_sa_token_cleaner(
                ctx.manager.cache(),
                ctx.manager.kube_client().clone(),
                &serviceaccount::cleaner::LegacySaTokenCleanerOptions {
                    clean_up_period: Duration::from_millis(1),
                },
                Duration::from_millis(100),
            )?;
            Ok(Some(Box::new(c) as Box<dyn Runnable>))
        },
    }
}

fn today() -> String {
    serviceaccount::cleaner::format_date(k8s_openapi::jiff::Timestamp::now())
}

/// The Secrets of the run's namespace the observer has seen.
#[derive(Default)]
struct SeenSecrets(Mutex<BTreeSet<String>>);

/// `Err` when one of `names`, once seen, is gone.
fn kept_once_seen(w: &World, names: &[&str]) -> Res {
    let seen = w.state::<SeenSecrets>();
    let mut seen = seen.0.lock().unwrap_or_else(|e| e.into_inner());
    for name in names {
        let present = w.get::<Secret>(name).is_some();
        if present {
            seen.insert(name.to_string());
        }
        ensure(present || !seen.contains(*name), || {
            format!("{name} deleted")
        })?;
    }
    Ok(())
}

/// Set by the workload before it deletes the pod mounting `mounted-token`.
#[derive(Default)]
struct Unmounted(AtomicBool);

fn legacy_token_cleaner_scenario() -> Scenario {
    Scenario::new("legacy-serviceaccount-token-cleaner")
        .controllers(builtin(vec![legacy_token_cleaner()]))
        .observe::<Secret>()
        .observe::<ServiceAccount>()
        .observe::<Pod>()
        .setup(|w: World| {
            async move {
                let pp = PostParams::default();
                Api::<ConfigMap>::namespaced(w.client(), "kube-system")
                    .create(
                        &pp,
                        &object(json!({
                            "metadata": {"name": serviceaccount::cleaner::TRACKING_CONFIG_MAP},
                            "data": {"since": "2020-01-01"},
                        })),
                    )
                    .await
                    .map_err(err)?;
                let secrets = Api::<Secret>::namespaced(w.client(), w.namespace());
                let mut stale = token_secret("stale-token", "app");
                stale.metadata.labels = Some(BTreeMap::from([(INVALID_SINCE.into(), "2020-01-02".into())]));
                let mut recent = token_secret("recent-token", "app");
                recent.metadata.labels = Some(BTreeMap::from([(LAST_USED.into(), today())]));
                for s in [
                    stale,
                    token_secret("unused-token", "app"),
                    token_secret("mounted-token", "app"),
                    recent,
                    token_secret("unreferenced-token", "app"),
                ] {
                    secrets.create(&pp, &s).await.map_err(err)?;
                }
                let refs: Vec<Value> = ["stale-token", "unused-token", "mounted-token", "recent-token"]
                    .iter()
                    .map(|n| json!({"name": n}))
                    .collect();
                Api::<ServiceAccount>::namespaced(w.client(), w.namespace())
                    .create(&pp, &object(json!({"metadata": {"name": "app"}, "secrets": refs})))
                    .await
                    .map_err(err)?;
                Api::<Pod>::namespaced(w.client(), w.namespace())
                    .create(
                        &pp,
                        &object(json!({
                            "metadata": {"name": "user"},
                            "spec": {
                                "containers": [{"name": "c", "image": "app"}],
                                "volumes": [{"name": "t", "secret": {"secretName": "mounted-token"}}],
                            },
                        })),
                    )
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                w.wait("the stale token deleted and the unused one invalidated", |w| {
                    ensure(w.get::<Secret>("stale-token").is_none(), || "stale-token left".into())?;
                    let s = w.get::<Secret>("unused-token").ok_or("unused-token deleted")?;
                    ensure(labels_of(s.as_ref()).contains_key(INVALID_SINCE), || {
                        "unused-token not invalidated".into()
                    })
                })
                .await?;
                // once no pod mounts it, a token is invalidated too
                w.state::<Unmounted>().0.store(true, Ordering::SeqCst);
                Api::<Pod>::namespaced(w.client(), w.namespace())
                    .delete("user", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("used, unreferenced or mounted tokens are kept", |w| {
            kept_once_seen(w, &["recent-token", "unreferenced-token", "unused-token", "mounted-token"])?;
            let mut untouched = vec!["recent-token", "unreferenced-token"];
            if !w.state::<Unmounted>().0.load(Ordering::SeqCst) {
                untouched.push("mounted-token");
            }
            for name in untouched {
                if let Some(s) = w.get::<Secret>(name) {
                    ensure(!labels_of(s.as_ref()).contains_key(INVALID_SINCE), || {
                        format!("{name} invalidated")
                    })?;
                }
            }
            Ok(())
        }))
        .converged("unused tokens invalidated today; stale ones deleted", |w| {
            ensure(w.get::<Secret>("stale-token").is_none(), || "stale-token left".into())?;
            for name in ["unused-token", "mounted-token"] {
                let s = w.get::<Secret>(name).ok_or("missing")?;
                ensure(
                    labels_of(s.as_ref()).get(INVALID_SINCE) == Some(&today()),
                    || format!("{name} not invalidated today"),
                )?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_serviceaccount_token_cleaner_under_faults() {
    crate::common::logs();
    check(&legacy_token_cleaner_scenario()).await;
}

const BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nfaults\n-----END CERTIFICATE-----\n";

fn root_ca_data() -> BTreeMap<String, String> {
    rootcacertpublisher::desired_data(BUNDLE)
}

/// The publisher with a fixed bundle (upstream: `--root-ca-file`).
fn root_ca_publisher() -> Descriptor {
    Descriptor {
        name: rootcacertpublisher::NAME,
        aliases: &[],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(rootcacertpublisher::new_controller(
                &ctx.clients(rootcacertpublisher::SERVICE_ACCOUNT)?,
                BUNDLE.to_string(),
            )) as Box<dyn Runnable>))
        },
    }
}

fn rootcacertpublisher_scenario() -> Scenario {
    Scenario::new("root-ca-cert-publisher")
        .controllers(builtin(vec![root_ca_publisher()]))
        .observe::<Namespace>()
        .observe::<ConfigMap>()
        .workload(|w: World| {
            async move {
                create_namespace(&w, "team-a").await?;
                let published = |ns: String| {
                    move |w: &World| {
                        let found = w.list_all::<ConfigMap>().iter().any(|c| {
                            c.metadata.namespace.as_deref() == Some(ns.as_str())
                                && name_of(c.as_ref()) == rootcacertpublisher::CONFIG_MAP_NAME
                                && c.data.as_ref() == Some(&root_ca_data())
                        });
                        ensure(found, || format!("no root CA in {ns}"))
                    }
                };
                w.wait("root CA in team-a", published("team-a".into()))
                    .await?;
                w.wait(
                    "root CA in the run's namespace",
                    published(w.namespace().to_string()),
                )
                .await?;
                // a tampered copy is corrected, a deleted one recreated
                let maps = Api::<ConfigMap>::namespaced(w.client(), w.namespace());
                maps.patch(
                    rootcacertpublisher::CONFIG_MAP_NAME,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"data": {"ca.crt": "tampered"}})),
                )
                .await
                .map_err(err)?;
                w.wait(
                    "the tampered copy corrected",
                    published(w.namespace().to_string()),
                )
                .await?;
                Api::<ConfigMap>::namespaced(w.client(), "team-a")
                    .delete(
                        rootcacertpublisher::CONFIG_MAP_NAME,
                        &DeleteParams::default(),
                    )
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // the publisher writes the bundle and its description, nothing else
        .invariant(Invariant::new("only the bundle is published", |w| {
            for c in w.list_all::<ConfigMap>() {
                if name_of(c.as_ref()) != rootcacertpublisher::CONFIG_MAP_NAME {
                    continue;
                }
                let data = c.data.clone().unwrap_or_default();
                let tampered = data.get("ca.crt").map(String::as_str) == Some("tampered");
                ensure(data == root_ca_data() || tampered, || {
                    format!("unexpected root CA data {data:?}")
                })?;
            }
            Ok(())
        }))
        .converged("every active namespace has the root CA", |w| {
            let maps = w.list_all::<ConfigMap>();
            for ns in w.list::<Namespace>() {
                if !namespace_active(&ns) {
                    continue;
                }
                let name = name_of(ns.as_ref());
                let cm = maps.iter().find(|c| {
                    c.metadata.namespace.as_deref() == Some(name)
                        && name_of(c.as_ref()) == rootcacertpublisher::CONFIG_MAP_NAME
                });
                let cm = cm.ok_or_else(|| format!("no root CA in {name}"))?;
                ensure(cm.data.as_ref() == Some(&root_ca_data()), || {
                    format!("wrong root CA in {name}")
                })?;
                ensure(
                    annotations_of(cm.as_ref())
                        .contains_key(rootcacertpublisher::DESCRIPTION_ANNOTATION),
                    || format!("root CA in {name} not described"),
                )?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rootcacertpublisher_under_faults() {
    crate::common::logs();
    check(&rootcacertpublisher_scenario()).await;
}

fn rule(verb: &str, resource: &str) -> PolicyRule {
    PolicyRule {
        verbs: vec![verb.into()],
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![resource.into()]),
        ..PolicyRule::default()
    }
}

fn part(name: &str, selected: bool, rules: Vec<PolicyRule>) -> ClusterRole {
    let mut labels = BTreeMap::from([("faults".to_string(), "part".to_string())]);
    if selected {
        labels.insert("aggregate-to-agg".into(), "true".into());
    }
    ClusterRole {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels),
            ..Default::default()
        },
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

/// Every rule the workload ever gave a part, recorded before the write.
#[derive(Default)]
struct GivenRules(Mutex<Vec<PolicyRule>>);

fn clusterroleaggregation_scenario() -> Scenario {
    Scenario::new("clusterrole-aggregation")
        .controllers(builtin(vec![clusterroleaggregation::descriptor()]))
        .observe::<ClusterRole>()
        .workload(|w: World| {
            async move {
                let roles = Api::<ClusterRole>::all(w.client());
                let pp = PostParams::default();
                let given = w.state::<GivenRules>();
                let give = |rules: &[PolicyRule]| {
                    given
                        .0
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(rules.iter().cloned())
                };
                roles
                    .create(
                        &pp,
                        &object(json!({
                            "metadata": {"name": "agg"},
                            "aggregationRule": {"clusterRoleSelectors": [
                                {"matchLabels": {"aggregate-to-agg": "true"}}]},
                        })),
                    )
                    .await
                    .map_err(err)?;
                let p1 = vec![rule("get", "pods")];
                let p2 = vec![rule("list", "services"), rule("get", "pods")];
                give(&p1);
                give(&p2);
                roles
                    .create(&pp, &part("p1", true, p1))
                    .await
                    .map_err(err)?;
                roles
                    .create(&pp, &part("p2", true, p2))
                    .await
                    .map_err(err)?;
                w.wait("agg holds p1 and p2", |w| {
                    let agg = w.get::<ClusterRole>("agg").ok_or("no agg")?;
                    let got = agg.rules.clone().unwrap_or_default();
                    let want = vec![rule("get", "pods"), rule("list", "services")];
                    ensure(got == want, || format!("agg rules {got:?}"))
                })
                .await?;
                // p1's rules change, p2 leaves the selection
                let p1 = vec![rule("watch", "nodes")];
                give(&p1);
                let mut cur = roles.get("p1").await.map_err(err)?;
                cur.rules = Some(p1);
                roles.replace("p1", &pp, &cur).await.map_err(err)?;
                let mut cur = roles.get("p2").await.map_err(err)?;
                cur.metadata.labels = part("p2", false, Vec::new()).metadata.labels;
                roles.replace("p2", &pp, &cur).await.map_err(err)?;
                let p3 = vec![rule("delete", "secrets")];
                give(&p3);
                roles
                    .create(&pp, &part("p3", true, p3))
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // the aggregated role never holds a rule no selected role ever had
        .invariant(Invariant::new("aggregated rules come from parts", |w| {
            let given = w.state::<GivenRules>();
            let given = given.0.lock().unwrap_or_else(|e| e.into_inner());
            let Some(agg) = w.get::<ClusterRole>("agg") else {
                return Ok(());
            };
            let rules = agg.rules.clone().unwrap_or_default();
            for r in &rules {
                ensure(given.contains(r), || {
                    format!("agg holds unknown rule {r:?}")
                })?;
            }
            let distinct: Vec<&PolicyRule> = rules
                .iter()
                .enumerate()
                .filter(|(i, r)| !rules[..*i].contains(r))
                .map(|(_, r)| r)
                .collect();
            ensure(distinct.len() == rules.len(), || {
                "agg holds a rule twice".to_string()
            })
        }))
        .converged(
            "every aggregated role holds the union of the roles it selects",
            |w| {
                let roles = w.list::<ClusterRole>();
                let agg = roles
                    .iter()
                    .find(|r| name_of(r.as_ref()) == "agg")
                    .ok_or("no agg")?;
                ensure(agg.aggregation_rule.is_some(), || {
                    "agg lost its rule".to_string()
                })?;
                for role in &roles {
                    let Some(want) = aggregated_rules(role, &roles) else {
                        continue;
                    };
                    let got = role.rules.clone().unwrap_or_default();
                    ensure(got == want, || {
                        format!("{} rules {got:?}, want {want:?}", name_of(role.as_ref()))
                    })?;
                }
                Ok(())
            },
        )
}

/// Upstream's aggregation of `role` over `roles`: each selector in turn selects roles
/// (itself excluded) in name order, their rules appended without repeats; `None` for a
/// role without aggregation rule or with selectors other than `matchLabels`.
fn aggregated_rules(role: &ClusterRole, roles: &[Arc<ClusterRole>]) -> Option<Vec<PolicyRule>> {
    let selectors = role
        .aggregation_rule
        .as_ref()?
        .cluster_role_selectors
        .clone()?;
    let mut sorted: Vec<&Arc<ClusterRole>> = roles.iter().collect();
    sorted.sort_by(|a, b| name_of(a.as_ref()).cmp(name_of(b.as_ref())));
    let mut want: Vec<PolicyRule> = Vec::new();
    for sel in selectors {
        if sel
            .match_expressions
            .as_ref()
            .is_some_and(|e| !e.is_empty())
        {
            return None;
        }
        let match_labels = sel.match_labels.unwrap_or_default();
        for r in &sorted {
            if name_of(r.as_ref()) == name_of(role) {
                continue;
            }
            let labels = labels_of(r.as_ref());
            if !match_labels.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                continue;
            }
            for rule in r.rules.clone().unwrap_or_default() {
                if !want.contains(&rule) {
                    want.push(rule);
                }
            }
        }
    }
    Some(want)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusterroleaggregation_under_faults() {
    crate::common::logs();
    check(&clusterroleaggregation_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// Bootstrap tokens
// ---------------------------------------------------------------------------------------

fn bootstrap_token(id: &str, secret: &str, signing: bool, expiration: Option<String>) -> Secret {
    let mut data = json!({"token-id": id, "token-secret": secret});
    if signing {
        data["usage-bootstrap-signing"] = json!("true");
    }
    if let Some(e) = expiration {
        data["expiration"] = json!(e);
    }
    let data: BTreeMap<String, Value> = serde_json::from_value::<BTreeMap<String, String>>(data)
        .expect("text data")
        .into_iter()
        .map(|(k, v)| (k, json!(base64_of(v.as_bytes()))))
        .collect();
    object(json!({
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": data,
    }))
}

fn in_namespace<K>(w: &World, ns: &str, name: &str) -> Option<Arc<K>>
where
    K: coxswain_runtime::cache::CachedKind,
    K::Scope: 'static,
{
    w.list_all::<K>()
        .into_iter()
        .find(|o| o.meta().namespace.as_deref() == Some(ns) && name_of(o.as_ref()) == name)
}

const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters: []\n";

fn signatures(w: &World) -> Result<BTreeMap<String, String>, String> {
    let cm =
        in_namespace::<ConfigMap>(w, "kube-public", "cluster-info").ok_or("no cluster-info")?;
    Ok(cm
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k.starts_with(bootstrap::JWS_SIGNATURE_KEY_PREFIX))
        .collect())
}

fn signature(id: &str, secret: &str) -> (String, String) {
    (
        format!("{}{id}", bootstrap::JWS_SIGNATURE_KEY_PREFIX),
        bootstrap::compute_detached_signature(KUBECONFIG, id, secret),
    )
}

fn bootstrap_signer_scenario() -> Scenario {
    Scenario::new("bootstrap-signer")
        .controllers(builtin(vec![bootstrap::signer::descriptor()]))
        .observe::<ConfigMap>()
        .observe::<Secret>()
        .setup(|w: World| {
            async move {
                let _ = Api::<Namespace>::all(w.client())
                    .create(&PostParams::default(), &object(json!({"metadata": {"name": "kube-public"}})))
                    .await;
                Api::<ConfigMap>::namespaced(w.client(), "kube-public")
                    .create(
                        &PostParams::default(),
                        &object(json!({"metadata": {"name": "cluster-info"}, "data": {"kubeconfig": KUBECONFIG}})),
                    )
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                let secrets = Api::<Secret>::namespaced(w.client(), "kube-system");
                let pp = PostParams::default();
                let past = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
                secrets.create(&pp, &bootstrap_token("aaaaaa", "aaaaaaaaaaaaaaaa", true, None)).await.map_err(err)?;
                secrets.create(&pp, &bootstrap_token("bbbbbb", "bbbbbbbbbbbbbbbb", true, None)).await.map_err(err)?;
                secrets.create(&pp, &bootstrap_token("cccccc", "cccccccccccccccc", false, None)).await.map_err(err)?;
                secrets
                    .create(&pp, &bootstrap_token("dddddd", "dddddddddddddddd", true, Some(past)))
                    .await
                    .map_err(err)?;
                w.wait("aaaaaa and bbbbbb sign", |w| {
                    let got = signatures(w)?;
                    let want = BTreeMap::from([
                        signature("aaaaaa", "aaaaaaaaaaaaaaaa"),
                        signature("bbbbbb", "bbbbbbbbbbbbbbbb"),
                    ]);
                    ensure(got == want, || format!("signatures {got:?}"))
                })
                .await?;
                secrets
                    .delete("bootstrap-token-aaaaaa", &DeleteParams::default())
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        // only tokens valid for signing sign, with their own secret
        .invariant(Invariant::new("only signing tokens sign", |w| {
            let Ok(got) = signatures(w) else { return Ok(()) };
            let ok = BTreeMap::from([
                signature("aaaaaa", "aaaaaaaaaaaaaaaa"),
                signature("bbbbbb", "bbbbbbbbbbbbbbbb"),
            ]);
            for (k, v) in &got {
                ensure(ok.get(k) == Some(v), || format!("unexpected signature {k}"))?;
            }
            Ok(())
        }))
        .converged("cluster-info signed by the live signing tokens", |w| {
            let got = signatures(w)?;
            let want = BTreeMap::from([signature("bbbbbb", "bbbbbbbbbbbbbbbb")]);
            ensure(got == want, || format!("signatures {got:?}, want {want:?}"))?;
            let cm = in_namespace::<ConfigMap>(w, "kube-public", "cluster-info").ok_or("no cluster-info")?;
            ensure(
                cm.data.as_ref().and_then(|d| d.get("kubeconfig")).map(String::as_str) == Some(KUBECONFIG),
                || "kubeconfig changed".to_string(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_signer_under_faults() {
    crate::common::logs();
    check(&bootstrap_signer_scenario()).await;
}

/// Set once the workload saw the live tokens created.
#[derive(Default)]
struct LiveSeen(AtomicBool);

fn token_cleaner_scenario() -> Scenario {
    Scenario::new("token-cleaner")
        .controllers(builtin(vec![bootstrap::tokencleaner::descriptor()]))
        .observe::<Secret>()
        .workload(|w: World| {
            async move {
                let secrets = Api::<Secret>::namespaced(w.client(), "kube-system");
                let pp = PostParams::default();
                let past = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
                let future = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
                secrets
                    .create(
                        &pp,
                        &bootstrap_token("livea1", "aaaaaaaaaaaaaaaa", false, Some(future)),
                    )
                    .await
                    .map_err(err)?;
                secrets
                    .create(
                        &pp,
                        &bootstrap_token("liveb2", "bbbbbbbbbbbbbbbb", false, None),
                    )
                    .await
                    .map_err(err)?;
                w.wait("live tokens seen", |w| {
                    for id in ["livea1", "liveb2"] {
                        in_namespace::<Secret>(w, "kube-system", &format!("bootstrap-token-{id}"))
                            .ok_or("not yet")?;
                    }
                    Ok(())
                })
                .await?;
                w.state::<LiveSeen>().0.store(true, Ordering::SeqCst);
                secrets
                    .create(
                        &pp,
                        &bootstrap_token("old111", "cccccccccccccccc", false, Some(past.clone())),
                    )
                    .await
                    .map_err(err)?;
                secrets
                    .create(
                        &pp,
                        &bootstrap_token("old222", "dddddddddddddddd", true, Some(past)),
                    )
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("unexpired tokens are kept", |w| {
            if !w.state::<LiveSeen>().0.load(Ordering::SeqCst) {
                return Ok(());
            }
            for id in ["livea1", "liveb2"] {
                ensure(
                    in_namespace::<Secret>(w, "kube-system", &format!("bootstrap-token-{id}"))
                        .is_some(),
                    || format!("unexpired token {id} deleted"),
                )?;
            }
            Ok(())
        }))
        .converged("expired tokens deleted", |w| {
            for id in ["old111", "old222"] {
                ensure(
                    in_namespace::<Secret>(w, "kube-system", &format!("bootstrap-token-{id}"))
                        .is_none(),
                    || format!("expired token {id} left"),
                )?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_cleaner_under_faults() {
    crate::common::logs();
    check(&token_cleaner_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// CertificateSigningRequests
// ---------------------------------------------------------------------------------------

/// A PEM certificate request for `cn` in `orgs`.
fn request_pem(cn: &str, orgs: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

const CLIENT_USAGES: &[&str] = &["digital signature", "key encipherment", "client auth"];

fn csr(name: &str, signer: &str, cn: &str, orgs: &[&str]) -> CertificateSigningRequest {
    object(json!({
        "metadata": {"name": name},
        "spec": {
            "request": base64_of(request_pem(cn, orgs).as_bytes()),
            "signerName": signer,
            "usages": CLIENT_USAGES,
        },
    }))
}

fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

async fn approve(w: &World, name: &str) -> Res {
    decide(w, name, "Approved").await
}

/// Adds the condition `ty` (`Approved` or `Denied`) through the approval subresource.
async fn decide(w: &World, name: &str, ty: &str) -> Res {
    let api = Api::<CertificateSigningRequest>::all(w.client());
    let mut c = api.get(name).await.map_err(err)?;
    c.status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(object(
            json!({"type": ty, "status": "True", "reason": "Test", "message": "decided by the test"}),
        ));
    api.replace_subresource("approval", name, &PostParams::default(), &c)
        .await
        .map_err(err)?;
    Ok(())
}

fn csr_approved(c: &CertificateSigningRequest) -> bool {
    certificates::is_approved(c)
}

fn approvals(c: &CertificateSigningRequest) -> usize {
    certificates::conditions(c)
        .iter()
        .filter(|c| c.type_ == "Approved")
        .count()
}

/// The scenario's signing CA (PEM certificate, PEM key), made once per test process.
fn test_ca() -> &'static (String, String) {
    static CA: OnceLock<(String, String)> = OnceLock::new();
    CA.get_or_init(|| {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::default();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "faults-ca");
        let cert = params.self_signed(&key).expect("ca");
        (cert.pem(), key.serialize_pem())
    })
}

/// The signer with the test CA for `kubernetes.io/kube-apiserver-client` only.
fn csr_signer() -> Descriptor {
    Descriptor {
        name: certificates::signer::NAME,
        aliases: &[],
        disabled_by_default: false,
        constructor: |ctx| {
            let (cert, key) = test_ca();
            let ca = certificates::signer::CertificateAuthority::from_pem(cert, key)?;
            let signers = BTreeMap::from([(
                certificates::KUBE_APISERVER_CLIENT.to_string(),
                Arc::new(ca),
            )]);
            Ok(Some(Box::new(certificates::signer::new_controller(
                &ctx.clients(certificates::signer::SERVICE_ACCOUNT)?,
                signers,
                certificates::signer::DEFAULT_DURATION,
            )) as Box<dyn Runnable>))
        },
    }
}

/// The first certificate the observer saw on each request.
#[derive(Default)]
struct Issued(Mutex<BTreeMap<String, Vec<u8>>>);

fn certificate_of(c: &CertificateSigningRequest) -> Option<Vec<u8>> {
    certificates::certificate(c).map(<[u8]>::to_vec)
}

fn csrsigning_scenario() -> Scenario {
    Scenario::new("csrsigning")
        .controllers(builtin(vec![csr_signer()]))
        .observe::<CertificateSigningRequest>()
        .workload(|w: World| {
            async move {
                let api = Api::<CertificateSigningRequest>::all(w.client());
                let pp = PostParams::default();
                api.create(
                    &pp,
                    &csr(
                        "alice",
                        certificates::KUBE_APISERVER_CLIENT,
                        "alice",
                        &["dev"],
                    ),
                )
                .await
                .map_err(err)?;
                api.create(
                    &pp,
                    &csr("bob", certificates::KUBE_APISERVER_CLIENT, "bob", &["dev"]),
                )
                .await
                .map_err(err)?;
                api.create(&pp, &csr("carol", "example.com/other", "carol", &[]))
                    .await
                    .map_err(err)?;
                approve(&w, "alice").await?;
                approve(&w, "carol").await?;
                api.create(
                    &pp,
                    &csr(
                        "dave",
                        certificates::KUBE_APISERVER_CLIENT,
                        "dave",
                        &["dev"],
                    ),
                )
                .await
                .map_err(err)?;
                decide(&w, "dave", "Denied").await?;
                w.wait("alice issued", |w| {
                    let c = w
                        .get::<CertificateSigningRequest>("alice")
                        .ok_or("no alice")?;
                    ensure(certificate_of(&c).is_some(), || "alice not issued".into())
                })
                .await?;
                approve(&w, "bob").await?;
                Ok(())
            }
            .boxed()
        })
        // only approved requests of a running signer are signed, once: a certificate,
        // once issued, never changes
        .invariant(Invariant::new("issued once, only when approved", |w| {
            let issued = w.state::<Issued>();
            let mut issued = issued.0.lock().unwrap_or_else(|e| e.into_inner());
            for c in w.list::<CertificateSigningRequest>() {
                let name = name_of(c.as_ref()).to_string();
                let Some(cert) = certificate_of(&c) else {
                    continue;
                };
                ensure(csr_approved(&c), || {
                    format!("{name} issued without approval")
                })?;
                ensure(name != "carol", || {
                    "a request of another signer issued".to_string()
                })?;
                let first = issued.entry(name.clone()).or_insert_with(|| cert.clone());
                ensure(*first == cert, || format!("{name}'s certificate replaced"))?;
            }
            Ok(())
        }))
        .converged("approved requests issued", |w| {
            for name in ["alice", "bob"] {
                let c = w
                    .get::<CertificateSigningRequest>(name)
                    .ok_or("missing csr")?;
                let cert = certificate_of(&c).ok_or_else(|| format!("{name} not issued"))?;
                apimachinery::x509::validate_certificate_pem(&cert)?;
                ensure(
                    !certificates::conditions(&c)
                        .iter()
                        .any(|c| c.type_ == "Failed"),
                    || format!("{name} failed"),
                )?;
            }
            // another signer's request, and a denied one, stay unsigned
            for name in ["carol", "dave"] {
                let c = w
                    .get::<CertificateSigningRequest>(name)
                    .ok_or_else(|| format!("missing {name}"))?;
                ensure(certificate_of(&c).is_none(), || format!("{name} issued"))?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csrsigning_under_faults() {
    crate::common::logs();
    check(&csrsigning_scenario()).await;
}

fn csrapproving_scenario() -> Scenario {
    Scenario::new("csrapproving")
        .controllers(builtin(vec![certificates::approver::descriptor()]))
        .observe::<CertificateSigningRequest>()
        // mallory may create requests, not node client ones
        .setup(|w: World| {
            async move {
                let pp = PostParams::default();
                Api::<ClusterRole>::all(w.client())
                    .create(
                        &pp,
                        &object(json!({
                            "metadata": {"name": "csr-requester"},
                            "rules": [{"apiGroups": ["certificates.k8s.io"],
                                "resources": ["certificatesigningrequests"],
                                "verbs": ["create", "get"]}],
                        })),
                    )
                    .await
                    .map_err(err)?;
                Api::<ClusterRoleBinding>::all(w.client())
                    .create(
                        &pp,
                        &object(json!({
                            "metadata": {"name": "csr-requester"},
                            "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                "kind": "ClusterRole", "name": "csr-requester"},
                            "subjects": [{"apiGroup": "rbac.authorization.k8s.io",
                                "kind": "User", "name": "mallory"}],
                        })),
                    )
                    .await
                    .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .workload(|w: World| {
            async move {
                // a node client request by a user the SubjectAccessReview refuses
                let request = csr(
                    "mallory",
                    certificates::KUBE_APISERVER_CLIENT_KUBELET,
                    "system:node:n3",
                    &["system:nodes"],
                );
                let req =
                    http::Request::post("/apis/certificates.k8s.io/v1/certificatesigningrequests")
                        .header("Content-Type", "application/json")
                        .header("Impersonate-User", "mallory")
                        .body(serde_json::to_vec(&request).map_err(err)?)
                        .map_err(err)?;
                let created: CertificateSigningRequest =
                    w.client().request(req).await.map_err(err)?;
                ensure(created.spec.username.as_deref() == Some("mallory"), || {
                    format!("requested as {:?}", created.spec.username)
                })?;
                let api = Api::<CertificateSigningRequest>::all(w.client());
                let pp = PostParams::default();
                // kubelet client requests (the admin may create nodeclient requests)
                for (name, node) in [("node-1", "system:node:n1"), ("node-2", "system:node:n2")] {
                    api.create(
                        &pp,
                        &csr(
                            name,
                            certificates::KUBE_APISERVER_CLIENT_KUBELET,
                            node,
                            &["system:nodes"],
                        ),
                    )
                    .await
                    .map_err(err)?;
                }
                // not a kubelet request: left to a human
                api.create(
                    &pp,
                    &csr(
                        "user",
                        certificates::KUBE_APISERVER_CLIENT,
                        "alice",
                        &["dev"],
                    ),
                )
                .await
                .map_err(err)?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new(
            "approved once, only kubelet requests",
            |w| {
                for c in w.list::<CertificateSigningRequest>() {
                    let name = name_of(c.as_ref());
                    ensure(approvals(&c) <= 1, || format!("{name} approved twice"))?;
                    if name == "user" || name == "mallory" {
                        ensure(approvals(&c) == 0, || format!("{name}'s request approved"))?;
                    }
                }
                Ok(())
            },
        ))
        .converged("kubelet client requests approved", |w| {
            for name in ["node-1", "node-2"] {
                let c = w
                    .get::<CertificateSigningRequest>(name)
                    .ok_or("missing csr")?;
                let approved = certificates::conditions(&c)
                    .iter()
                    .any(|c| c.type_ == "Approved" && c.reason.as_deref() == Some("AutoApproved"));
                ensure(approved, || format!("{name} not auto-approved"))?;
            }
            Ok(())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csrapproving_under_faults() {
    crate::common::logs();
    check(&csrapproving_scenario()).await;
}

/// A certificate signed by the test CA that expired an hour ago.
fn expired_certificate() -> String {
    let (cert, key) = test_ca();
    let issuer = rcgen::Issuer::from_ca_cert_pem(cert, rcgen::KeyPair::from_pem(key).expect("key"))
        .expect("issuer");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "old");
    let now = ::time::OffsetDateTime::now_utc();
    params.not_before = now - ::time::Duration::hours(2);
    params.not_after = now - ::time::Duration::hours(1);
    let leaf = rcgen::KeyPair::generate().expect("key");
    params.signed_by(&leaf, &issuer).expect("certificate").pem()
}

async fn issue(w: &World, name: &str, cert: &str) -> Res {
    let api = Api::<CertificateSigningRequest>::all(w.client());
    let mut c = api.get(name).await.map_err(err)?;
    c.status.get_or_insert_with(Default::default).certificate =
        Some(k8s_openapi::ByteString(cert.as_bytes().to_vec()));
    api.replace_status(name, &PostParams::default(), &c)
        .await
        .map_err(err)?;
    Ok(())
}

/// Set once the workload saw the fresh request.
#[derive(Default)]
struct FreshSeen(AtomicBool);

fn csrcleaner_scenario() -> Scenario {
    Scenario::new("csrcleaner")
        .controllers(builtin(vec![certificates::cleaner::descriptor()]))
        .observe::<CertificateSigningRequest>()
        .workload(|w: World| {
            async move {
                let api = Api::<CertificateSigningRequest>::all(w.client());
                let pp = PostParams::default();
                api.create(
                    &pp,
                    &csr("fresh", certificates::KUBE_APISERVER_CLIENT, "fresh", &[]),
                )
                .await
                .map_err(err)?;
                w.wait("fresh seen", |w| {
                    w.get::<CertificateSigningRequest>("fresh")
                        .map(|_| ())
                        .ok_or_else(|| "not yet".to_string())
                })
                .await?;
                w.state::<FreshSeen>().0.store(true, Ordering::SeqCst);
                api.create(
                    &pp,
                    &csr("expired", certificates::KUBE_APISERVER_CLIENT, "old", &[]),
                )
                .await
                .map_err(err)?;
                approve(&w, "expired").await?;
                issue(&w, "expired", &expired_certificate()).await?;
                Ok(())
            }
            .boxed()
        })
        .invariant(Invariant::new("pending requests are kept", |w| {
            if !w.state::<FreshSeen>().0.load(Ordering::SeqCst) {
                return Ok(());
            }
            ensure(
                w.get::<CertificateSigningRequest>("fresh").is_some(),
                || "a fresh pending request deleted".to_string(),
            )
        }))
        .converged("a request with an expired certificate deleted", |w| {
            ensure(
                w.get::<CertificateSigningRequest>("expired").is_none(),
                || "expired request left".to_string(),
            )
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csrcleaner_under_faults() {
    crate::common::logs();
    check(&csrcleaner_scenario()).await;
}

// ---------------------------------------------------------------------------------------
// Regressions: the plans that found bugs, replayed
// ---------------------------------------------------------------------------------------

/// Replays `plan` on `scenario`: it must pass, and the fault must have hit `request`.
async fn replay(scenario: Scenario, plan: &str, request: &str) {
    let report = coxswain_runtime::testing::run(&scenario, &plan.parse().expect("plan")).await;
    assert!(
        report.injected.iter().any(|i| i.contains(request)),
        "{plan} did not hit {request}: {:?}",
        report.injected
    );
    assert_eq!(report.failure, None, "{plan}");
}

/// A 409 that is not `AlreadyExists` on the `default` account's creation was taken for
/// success: the account was never created (upstream retries all but `AlreadyExists`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serviceaccount_regression_conflict_at_1() {
    crate::common::logs();
    replay(serviceaccount_scenario(), "conflict@1", "/serviceaccounts").await;
}

/// A refused update of a token Secret was never retried (upstream waits for an event
/// that a refusal nobody else caused never brings): the token stayed empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serviceaccount_token_regression_conflict_at_1() {
    crate::common::logs();
    replay(
        serviceaccount_token_scenario(),
        "conflict@1",
        "PUT /api/v1/namespaces/faults/secrets/",
    )
    .await;
}

/// A refused deletion of an expired bootstrap token was dropped: the token stayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_cleaner_regression_conflict_at_1() {
    crate::common::logs();
    replay(
        token_cleaner_scenario(),
        "conflict@1",
        "DELETE /api/v1/namespaces/kube-system/secrets/",
    )
    .await;
}

/// The publisher's own ConfigMap's watch event dropped, then the copy tampered with
/// before the relist: the relist brings it as an addition, which the publisher ignored
/// (as upstream, until a resync hours later), so it stayed wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rootcacertpublisher_regression_drop_at_2() {
    crate::common::logs();
    replay(
        rootcacertpublisher_scenario(),
        "drop@2",
        "POST /api/v1/namespaces/faults/configmaps",
    )
    .await;
}
