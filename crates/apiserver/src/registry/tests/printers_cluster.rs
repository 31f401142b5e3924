//! Printers of the kinds once in `table/cluster.rs`, cell by cell.

use super::printer;
use crate::registry::table::prelude::*;

fn now() -> chrono::DateTime<chrono::Utc> {
    parse_time("2026-01-10T12:00:00Z").expect("time")
}

#[test]
fn endpoint_slices() {
    let v = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
        "ports": [{"port": 80}, {"name": "https"}, {}, {"port": 9}],
        "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}]});
    let cells = (printer("discovery.k8s.io", "EndpointSlice").print)(&v, now()).cells;
    assert_eq!(
        cells[1..4],
        [
            json!("IPv4"),
            json!("80,https,* + 1 more..."),
            json!("10.0.0.1,10.0.0.2,10.0.0.3")
        ]
    );
    let empty = (printer("discovery.k8s.io", "EndpointSlice").print)(
        &json!({"metadata": {"name": "e"}}),
        now(),
    )
    .cells;
    assert_eq!(empty[2..4], [json!("<unset>"), json!("<unset>")]);
}

#[test]
fn ingresses() {
    let v = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx",
        "rules": [{"host": "a"}, {"host": "b"}, {}, {"host": "c"}, {"host": "d"}], "tls": [{}]},
        "status": {"loadBalancer": {"ingress": [{"hostname": "lb"}, {"ip": "1.1.1.1"}]}}});
    let cells = (printer("networking.k8s.io", "Ingress").print)(&v, now()).cells;
    assert_eq!(
        cells[1..5],
        [
            json!("nginx"),
            json!("a,b,c + 2 more..."),
            json!("1.1.1.1,lb"),
            json!("80, 443")
        ]
    );
    let bare = (printer("networking.k8s.io", "Ingress").print)(
        &json!({"metadata": {"name": "i"}, "spec": {}}),
        now(),
    )
    .cells;
    assert_eq!(
        bare[1..5],
        [json!("<none>"), json!("*"), json!(""), json!("80")]
    );
}

#[test]
fn bindings_and_csrs() {
    let rb = json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "namespace": "ns", "name": "bot"}, {"kind": "User", "name": "bob"}]});
    let cells = binding_row(&rb, now()).cells;
    assert_eq!(cells[1], json!("ClusterRole/view"));
    assert_eq!(
        cells[3..],
        [json!("alice, bob"), json!("devs"), json!("ns/bot")]
    );

    let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "kubernetes.io/kube-apiserver-client",
        "username": "alice", "expirationSeconds": 3600},
        "status": {"conditions": [{"type": "Approved"}, {"type": "Failed"}], "certificate": "Zm9v"}});
    let cells =
        (printer("certificates.k8s.io", "CertificateSigningRequest").print)(&csr, now()).cells;
    assert_eq!(
        cells[2..],
        [
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("60m"),
            json!("Approved,Failed,Issued")
        ]
    );
}

#[test]
fn ip_addresses() {
    let ip = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}});
    assert_eq!(
        (printer("networking.k8s.io", "IPAddress").print)(&ip, now()).cells[1],
        json!("services/default/kubernetes")
    );
}
