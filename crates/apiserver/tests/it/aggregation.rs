//! `apiregistration.k8s.io/v1`: the local APIServices of the server's own group versions
//! (and of CRDs), validation and table, and an APIService served by another API server:
//! a tiny HTTPS server in the test serving `wardle.example.com/v1alpha1`, reached
//! through the service mapping, its `Available` condition, its group in discovery and
//! requests proxied with the user's identity in `X-Remote-*` headers.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};

use crate::common::{start, start_with, Server};

const AR: &str = "/apis/apiregistration.k8s.io/v1";
const JSON: &str = "application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn get(s: &Server, path: &str) -> (u16, Value) {
    s.json("GET", path, JSON, JSON, &Value::Null)
}

/// Watch `path` (a watch URL) until an event's text contains every one of `needles`;
/// returns that event line. Bounded by the watch's `timeoutSeconds`.
fn watch_until(addr: SocketAddr, path: &str, needles: &[&str]) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).expect("write");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = s.read(&mut chunk).unwrap_or(0);
        assert!(
            n > 0,
            "watch ended before {needles:?}: {}",
            String::from_utf8_lossy(&buf)
        );
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_string();
        for line in text.lines() {
            if line.starts_with('{') && needles.iter().all(|n| line.contains(n)) {
                return line.to_string();
            }
        }
    }
}

#[test]
fn local_api_services_are_available() {
    let s = start();
    let (code, list) = get(&s, &format!("{AR}/apiservices"));
    assert_eq!(code, 200);
    let items = list["items"].as_array().expect("items");
    let names: Vec<&str> = items
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name"))
        .collect();
    for want in [
        "v1.",
        "v1.apps",
        "v1.apiregistration.k8s.io",
        "v2.autoscaling",
        "v1.autoscaling",
        "v1.flowcontrol.apiserver.k8s.io",
        "v1.coordination.k8s.io",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for i in items {
        assert!(i["spec"].get("service").is_none(), "{i}");
        let c = &i["status"]["conditions"][0];
        assert_eq!(c["type"], "Available", "{i}");
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "Local");
        assert_eq!(c["message"], "Local APIServices are always available");
        assert_eq!(
            i["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
            "onstart"
        );
    }
    let apps = items
        .iter()
        .find(|i| i["metadata"]["name"] == "v1.apps")
        .expect("v1.apps");
    assert_eq!(
        apps["spec"],
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15})
    );
    let (_, table) = s.json(
        "GET",
        &format!("{AR}/apiservices/v1.apps"),
        JSON,
        TABLE,
        &Value::Null,
    );
    let cols: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(cols, ["Name", "Service", "Available", "Age"]);
    assert_eq!(table["rows"][0]["cells"][1], "Local");
    assert_eq!(table["rows"][0]["cells"][2], "True");
}

#[test]
fn crd_group_versions_get_api_services() {
    let s = start();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.toys.example.com"},
        "spec": {"group": "toys.example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let (code, _) = s.json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        JSON,
        JSON,
        &crd,
    );
    assert_eq!(code, 201);
    let line = watch_until(
        s.running.addr,
        &format!("{AR}/apiservices?watch=1&fieldSelector=metadata.name%3Dv1.toys.example.com&timeoutSeconds=20"),
        &["\"Local\""],
    );
    let ev: Value = serde_json::from_str(&line).expect("event");
    assert_eq!(
        ev["object"]["spec"],
        json!({"group": "toys.example.com", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        ev["object"]["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    // the CRD goes: so does its APIService
    let (code, _) = s.json(
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.toys.example.com",
        JSON,
        JSON,
        &Value::Null,
    );
    assert_eq!(code, 200);
    watch_until(
        s.running.addr,
        &format!("{AR}/apiservices?watch=1&fieldSelector=metadata.name%3Dv1.toys.example.com&timeoutSeconds=20"),
        &["\"DELETED\""],
    );
}

#[test]
fn validation_messages_are_upstreams() {
    let s = start();
    let (code, st) = s.json(
        "POST",
        &format!("{AR}/apiservices"),
        JSON,
        JSON,
        &json!({"metadata": {"name": "v1.wrong"},
                "spec": {"group": "wardle.example.com", "version": "v1", "groupPriorityMinimum": 0,
                         "versionPriority": 2000, "insecureSkipTLSVerify": true, "caBundle": "AAAA"}}),
    );
    assert_eq!(code, 422, "{st}");
    let messages: Vec<(&str, &str)> = st["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            ("metadata.name", "Invalid value: \"v1.wrong\": must be `spec.version+\".\"+spec.group`: \"v1.wardle.example.com\""),
            ("spec.groupPriorityMinimum", "Invalid value: 0: must be positive and less than 20000"),
            ("spec.versionPriority", "Invalid value: 2000: must be positive and less than 1000"),
            ("spec.caBundle", "Invalid value: \"3 bytes\": local APIServices may not have a caBundle"),
            ("spec.insecureSkipTLSVerify", "Invalid value: true: local APIServices may not have insecureSkipTLSVerify"),
        ]
    );
}

/// A CA and a serving certificate for `dns_name`, signed by it: (CA PEM, cert PEM, key PEM).
fn certificates(dns_name: &str) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("ca key");
    let ca_cert = ca.self_signed(&ca_key).expect("ca cert");
    let params = CertificateParams::new(vec![dns_name.to_string()]).expect("params");
    let key = KeyPair::generate().expect("key");
    let cert = params
        .signed_by(&key, &Issuer::new(ca, ca_key))
        .expect("cert");
    (ca_cert.pem(), cert.pem(), key.serialize_pem())
}

/// What the fake API server answers.
fn answer(req: &http::Request<hyper::body::Incoming>) -> (u16, Value) {
    let h = |k: &str| -> Vec<String> {
        req.headers()
            .get_all(k)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    match req.uri().path() {
        "/apis/wardle.example.com/v1alpha1" => (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "wardle.example.com/v1alpha1",
                   "resources": [{"name": "flunders", "singularName": "flunder", "namespaced": true,
                                  "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]}]}),
        ),
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders" => (
            200,
            json!({"kind": "FlunderList", "apiVersion": "wardle.example.com/v1alpha1", "metadata": {},
                   "items": [{"kind": "Flunder", "apiVersion": "wardle.example.com/v1alpha1",
                              "metadata": {"name": "seen", "namespace": "default",
                                           "annotations": {"user": h("x-remote-user").join(","),
                                                           "groups": h("x-remote-group").join(","),
                                                           "authorization": h("authorization").join(",")}}}]}),
        ),
        _ => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}),
        ),
    }
}

/// Serve the fake API server over TLS on a free port, on its own thread.
fn fake_api_server(cert_pem: String, key_pem: String) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let certs: Vec<rustls::pki_types::CertificateDer<'static>> =
                rustls_pemfile::certs(&mut cert_pem.as_bytes())
                    .collect::<Result<_, _>>()
                    .expect("certs");
            let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
                .expect("key")
                .expect("a key");
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("versions")
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .expect("server config");
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|req| async move {
                        let (code, body) = answer(&req);
                        let resp = http::Response::builder()
                            .status(code)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body.to_string())))
                            .expect("response");
                        Ok::<_, std::convert::Infallible>(resp)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
                });
            }
        });
    });
    addr
}

#[test]
fn an_api_service_served_elsewhere_is_proxied() {
    let (ca, cert, key) = certificates("api.wardle.svc");
    let backend = fake_api_server(cert, key);
    let s = start_with(|c| {
        c.service_map
            .insert("wardle", "api", 443, backend.to_string());
    });
    let apiservice = |ca: &str| {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": "v1alpha1.wardle.example.com"},
               "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                        "groupPriorityMinimum": 1000, "versionPriority": 15,
                        "service": {"namespace": "wardle", "name": "api"},
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(ca)}})
    };
    let (code, created) = s.json(
        "POST",
        &format!("{AR}/apiservices"),
        JSON,
        JSON,
        &apiservice(&ca),
    );
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["service"]["port"], 443);
    let watch = format!(
        "{AR}/apiservices?watch=1&fieldSelector=metadata.name%3Dv1alpha1.wardle.example.com&timeoutSeconds=20"
    );
    let ev = watch_until(s.running.addr, &watch, &["ServiceNotFound"]);
    assert!(
        ev.contains("service/api in \\\"wardle\\\" is not present"),
        "{ev}"
    );
    // the Service appears
    for (path, body) in [
        (
            "/api/v1/namespaces",
            json!({"metadata": {"name": "wardle"}}),
        ),
        (
            "/api/v1/namespaces/wardle/services",
            json!({"metadata": {"name": "api"}, "spec": {"ports": [{"port": 443, "targetPort": 8443}]}}),
        ),
    ] {
        let (code, v) = s.json("POST", path, JSON, JSON, &body);
        assert_eq!(code, 201, "{v}");
    }
    // the check runs again on the next APIService change or resync: touch it
    let (code, _) = s.json(
        "PATCH",
        &format!("{AR}/apiservices/v1alpha1.wardle.example.com"),
        "application/merge-patch+json",
        JSON,
        &json!({"metadata": {"labels": {"touched": "1"}}}),
    );
    assert_eq!(code, 200);
    let ev = watch_until(s.running.addr, &watch, &["\"Passed\"", "all checks passed"]);
    assert!(ev.contains("\"status\":\"True\""), "{ev}");

    // discovery lists the group
    let (_, apis) = get(&s, "/apis");
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(groups.last(), Some(&"wardle.example.com"));
    let (_, group) = get(&s, "/apis/wardle.example.com");
    assert_eq!(group["preferredVersion"]["version"], "v1alpha1");
    let (_, agg) = s.json("GET", "/apis", JSON, AGGREGATED, &Value::Null);
    let wardle = agg["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == "wardle.example.com")
        .expect("aggregated group");
    assert_eq!(
        wardle["versions"][0]["resources"][0]["resource"],
        "flunders"
    );
    assert_eq!(wardle["versions"][0]["resources"][0]["scope"], "Namespaced");
    // requests are proxied with the identity in X-Remote headers
    let (code, rl) = get(&s, "/apis/wardle.example.com/v1alpha1");
    assert_eq!(code, 200);
    assert_eq!(rl["resources"][0]["name"], "flunders");
    let (code, list) = get(
        &s,
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    );
    assert_eq!(code, 200, "{list}");
    let seen = &list["items"][0]["metadata"]["annotations"];
    // without authentication the server serves everyone as the anonymous user
    assert!(!seen["user"].as_str().unwrap_or("").is_empty(), "{seen}");
    assert_eq!(seen["authorization"], "");

    // a wrong CA: the discovery check fails
    let (other_ca, _, _) = certificates("api.wardle.svc");
    let (_, mut current) = get(&s, &format!("{AR}/apiservices/v1alpha1.wardle.example.com"));
    current["spec"]["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(other_ca));
    let (code, v) = s.json(
        "PUT",
        &format!("{AR}/apiservices/v1alpha1.wardle.example.com"),
        JSON,
        JSON,
        &current,
    );
    assert_eq!(code, 200, "{v}");
    let ev = watch_until(s.running.addr, &watch, &["FailedDiscoveryCheck"]);
    assert!(
        ev.contains("failing or missing response from https://api.wardle.svc:443/apis/wardle.example.com/v1alpha1"),
        "{ev}"
    );
    let (code, _) = get(
        &s,
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
    );
    assert_eq!(code, 404);
}

#[test]
fn discovery_of_the_new_groups_is_kube_apiservers() {
    let s = start();
    let want = crate::common::fixture("discovery/apis-aggregated.json");
    let (code, got) = s.json("GET", "/apis", JSON, AGGREGATED, &Value::Null);
    assert_eq!(code, 200);
    let find = |v: &Value, g: &str| {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .find(|x| x["metadata"]["name"] == g)
            .cloned()
            .unwrap_or_else(|| panic!("{g} missing"))
    };
    for g in ["apiregistration.k8s.io", "flowcontrol.apiserver.k8s.io"] {
        assert_eq!(find(&got, g), find(&want, g), "{g}");
    }
    // the groups served come in kube-apiserver's order
    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let recorded = names(&want);
    let served: Vec<String> = names(&got)
        .into_iter()
        .filter(|g| recorded.contains(g))
        .collect();
    let recorded: Vec<String> = recorded
        .into_iter()
        .filter(|g| served.contains(g))
        .collect();
    assert_eq!(served, recorded);
    assert_eq!(
        served.first().map(String::as_str),
        Some("apiregistration.k8s.io")
    );
}
