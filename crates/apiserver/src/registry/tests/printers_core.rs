//! Printers of the kinds once in `table/core.rs`, cell by cell.

use super::printer;
use crate::registry::core::endpoints::printer::format_endpoints;
use crate::registry::core::resourcequota::printer::quota_columns;
use crate::registry::table::prelude::*;

fn now() -> DateTime<Utc> {
    parse_time("2026-01-10T12:00:00Z").expect("time")
}

#[test]
fn services() {
    // upstream TestPrintService (wide)
    let svc = |spec: Value, status: Value| {
        let v = json!({"metadata": {"name": "s"}, "spec": spec, "status": status});
        (printer("", "Service").print)(&v, now()).cells
    };
    let lb = svc(
        json!({"type": "LoadBalancer", "clusterIPs": ["1.5.6.7"], "ports": [
            {"port": 80, "protocol": "TCP"}, {"port": 8090, "protocol": "UDP"}, {"port": 8000, "protocol": "TCP"}],
            "selector": {"foo": "bar"}}),
        json!({"loadBalancer": {"ingress": [{"ip": "3.4.5.6"}, {"ip": "2.3.4.5"}, {"ip": "5.6.7.8", "hostname": "host5678"}]}}),
    );
    assert_eq!(
        lb[1..],
        [
            json!("LoadBalancer"),
            json!("1.5.6.7"),
            json!("2.3.4.5,3.4.5.6,5.6.7.8"),
            json!("80/TCP,8090/UDP,8000/TCP"),
            json!("<unknown>"),
            json!("foo=bar")
        ]
    );
    let np = svc(
        json!({"type": "NodePort", "clusterIPs": ["10.9.8.7"], "ports": [{"port": 8888, "nodePort": 9999, "protocol": "TCP"}]}),
        json!({}),
    );
    assert_eq!(
        np[2..5],
        [json!("10.9.8.7"), json!("<none>"), json!("8888:9999/TCP")]
    );
    assert_eq!(np[6], json!("<none>"));
    let pending = svc(json!({"type": "LoadBalancer", "ports": []}), json!({}));
    assert_eq!(
        pending[2..5],
        [json!("<none>"), json!("<pending>"), json!("<none>")]
    );
    let ext = svc(
        json!({"type": "ExternalName", "externalName": "my.database.example.com"}),
        json!({}),
    );
    assert_eq!(ext[3], json!("my.database.example.com"));
    let with_ips = svc(
        json!({"type": "ClusterIP", "clusterIPs": ["10.0.0.1"], "externalIPs": ["80.11.12.10", "80.11.12.11"]}),
        json!({}),
    );
    assert_eq!(with_ips[3], json!("80.11.12.10,80.11.12.11"));
}

#[test]
fn nodes() {
    let node = |meta: Value, spec: Value, status: Value| {
        let mut v = json!({"metadata": meta, "spec": spec, "status": status});
        v["metadata"]["name"] = json!("n");
        (printer("", "Node").print)(&v, now()).cells
    };
    let ready = node(
        json!({"labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "", "kubernetes.io/role": "edge"}}),
        json!({"unschedulable": true}),
        json!({"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Debian"},
            "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}]}),
    );
    assert_eq!(
        ready[1..],
        [
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,edge,worker"),
            json!("<unknown>"),
            json!("v1.36.0"),
            json!("10.0.0.5"),
            json!("<none>"),
            json!("Debian"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
    let unknown = node(json!({}), json!({}), json!({}));
    assert_eq!(unknown[1..3], [json!("Unknown"), json!("<none>")]);
    let not_ready = node(
        json!({}),
        json!({}),
        json!({"conditions": [{"type": "Ready", "status": "Unknown"}]}),
    );
    assert_eq!(not_ready[1], json!("NotReady"));
}

#[test]
fn events() {
    let ev = json!({"metadata": {"name": "e1"}, "type": "Warning", "reason": "BackOff",
        "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{app}"},
        "source": {"component": "kubelet", "host": "node-1"}, "message": " Back-off restarting \n",
        "firstTimestamp": "2026-01-10T11:00:00Z", "lastTimestamp": "2026-01-10T11:59:00Z", "count": 7});
    assert_eq!(
        (printer("", "Event").print)(&ev, now()).cells,
        vec![
            json!("60s"),
            json!("Warning"),
            json!("BackOff"),
            json!("pod/web-1"),
            json!("spec.containers{app}"),
            json!("kubelet, node-1"),
            json!("Back-off restarting"),
            json!("60m"),
            json!(7),
            json!("e1")
        ]
    );
    // events.k8s.io style: eventTime, series, reporting controller
    let new_style = json!({"metadata": {"name": "e2"}, "type": "Normal", "reason": "Scheduled",
        "involvedObject": {"kind": "Node"}, "reportingComponent": "scheduler",
        "eventTime": "2026-01-10T11:58:00.000000Z", "series": {"count": 3, "lastObservedTime": "2026-01-10T11:59:50.000000Z"}});
    let cells = (printer("", "Event").print)(&new_style, now()).cells;
    assert_eq!(cells[0], json!("10s"));
    assert_eq!(cells[3], json!("node"));
    assert_eq!(cells[5], json!("scheduler"));
    assert_eq!(cells[7], json!("2m"));
    assert_eq!(cells[8], json!(3));
    let single = json!({"metadata": {"name": "e3"}, "eventTime": "2026-01-10T11:59:00.000000Z"});
    let cells = (printer("", "Event").print)(&single, now()).cells;
    assert_eq!(
        (cells[0].clone(), cells[8].clone()),
        (json!("60s"), json!(1))
    );
}

#[test]
fn endpoints_and_quotas() {
    let ep = json!({"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8"}], "ports": [{"port": 80}, {"port": 443}]}]});
    assert_eq!(
        format_endpoints(&ep),
        "1.2.3.4:80,5.6.7.8:80,1.2.3.4:443 + 1 more..."
    );
    assert_eq!(format_endpoints(&json!({})), "<none>");
    let headless = json!({"subsets": [{"addresses": [{"ip": "fd00::1"}]}]});
    assert_eq!(format_endpoints(&headless), "fd00::1");

    let quota = json!({"metadata": {"name": "q"}, "status": {
        "hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi", "cpu": "1"},
        "used": {"pods": "3", "limits.cpu": "500m", "cpu": "0"}}});
    assert_eq!(
        quota_columns(&quota),
        (
            "cpu: 0/1, pods: 3/10, requests.memory: 0/1Gi".to_string(),
            "limits.cpu: 500m/2".to_string()
        )
    );
}

#[test]
fn config_maps_and_secrets_count_keys() {
    let cm = json!({"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(
        (printer("", "ConfigMap").print)(&cm, now()).cells[1],
        json!(3)
    );
    let secret = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "MQ=="}});
    assert_eq!(
        (printer("", "Secret").print)(&secret, now()).cells[1..3],
        [json!("Opaque"), json!(1)]
    );
}
