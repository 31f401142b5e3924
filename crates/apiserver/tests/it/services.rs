//! The Service registry's node ports (upstream `portallocator` and `storage/alloc.go`):
//! NodePort and LoadBalancer Services get node ports from 30000-32767, requested ones are
//! honoured or refused with upstream's messages, ports are kept on update and released by
//! a type change or a delete; a type change drops what only the old type used
//! (`dropTypeDependentFields`), so a LoadBalancer Service patched to ClusterIP is valid.

use crate::common;
use serde_json::{json, Value};

const SVCS: &str = "/api/v1/namespaces/default/services";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

fn svc(name: &str, ty: &str, ports: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"type": ty, "selector": {"app": name}, "ports": ports}})
}

fn node_ports(v: &Value) -> Vec<i64> {
    v["spec"]["ports"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p["nodePort"].as_i64().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default()
}

fn in_range(n: i64) -> bool {
    (30000..=32767).contains(&n)
}

fn create(s: &common::Server, body: Value) -> (u16, Value) {
    s.json("POST", SVCS, JSON, JSON, &body)
}

fn patch(s: &common::Server, name: &str, body: Value) -> (u16, Value) {
    s.json("PATCH", &format!("{SVCS}/{name}"), MERGE, JSON, &body)
}

#[test]
fn node_ports_are_allocated_honoured_and_refused_as_upstream() {
    let s = common::start();
    let (code, a) = create(&s, svc("a", "NodePort", json!([{"port": 80}])));
    assert_eq!(code, 201, "{a}");
    let np = node_ports(&a)[0];
    assert!(in_range(np), "{a}");

    // the same port again: upstream's portallocator error, as a 422 on the port's field
    let (code, st) = create(
        &s,
        svc("b", "NodePort", json!([{"port": 80, "nodePort": np}])),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(
        st["message"],
        format!("Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: {np}: provided port is already allocated")
    );
    assert_eq!(
        st["details"]["causes"][0]["field"],
        "spec.ports[0].nodePort"
    );

    let (code, st) = create(
        &s,
        svc("b", "NodePort", json!([{"port": 80, "nodePort": 29999}])),
    );
    assert_eq!(code, 422, "{st}");
    assert_eq!(
        st["message"],
        "Service \"b\" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );

    // a free requested port is honoured
    let want = if np == 32767 { 30000 } else { np + 1 };
    let (code, b) = create(
        &s,
        svc("b", "NodePort", json!([{"port": 80, "nodePort": want}])),
    );
    assert_eq!(code, 201, "{b}");
    assert_eq!(node_ports(&b), vec![want]);

    // one port number with two protocols shares its node port; other ports get their own
    let (code, c) = create(
        &s,
        svc(
            "c",
            "LoadBalancer",
            json!([{"name": "dns", "port": 53, "protocol": "TCP"},
                   {"name": "dns-udp", "port": 53, "protocol": "UDP"},
                   {"name": "web", "port": 80}]),
        ),
    );
    assert_eq!(code, 201, "{c}");
    let cp = node_ports(&c);
    assert_eq!(cp[0], cp[1], "{c}");
    assert_ne!(cp[0], cp[2], "{c}");
    assert!(
        cp.iter().all(|n| in_range(*n) && *n != np && *n != want),
        "{c}"
    );

    // a requested node port may be shared within a Service only across protocols
    let (code, d) = create(
        &s,
        svc(
            "d",
            "NodePort",
            json!([{"name": "t", "port": 53, "protocol": "TCP", "nodePort": 31999},
                   {"name": "u", "port": 54, "protocol": "UDP", "nodePort": 31999}]),
        ),
    );
    if cp.contains(&31999) {
        assert_eq!(code, 422, "{d}");
    } else {
        assert_eq!(code, 201, "{d}");
        assert_eq!(node_ports(&d), vec![31999, 31999]);
    }

    // LoadBalancer without node ports: none allocated, but a requested one is honoured
    let mut e = svc("e", "LoadBalancer", json!([{"port": 80}]));
    e["spec"]["allocateLoadBalancerNodePorts"] = json!(false);
    let (code, e) = create(&s, e);
    assert_eq!(code, 201, "{e}");
    assert_eq!(node_ports(&e), vec![0]);
    assert!(e["spec"]["ports"][0].get("nodePort").is_none(), "{e}");

    // deleting a Service frees its node ports (allocation reads the stored Services)
    let (code, _) = s.json("DELETE", &format!("{SVCS}/a"), JSON, JSON, &Value::Null);
    assert_eq!(code, 200);
    let (code, f) = create(
        &s,
        svc("f", "NodePort", json!([{"port": 80, "nodePort": np}])),
    );
    assert_eq!(code, 201, "{f}");
    assert_eq!(node_ports(&f), vec![np]);

    // ClusterIP Services get none
    let (code, g) = create(&s, svc("g", "ClusterIP", json!([{"port": 80}])));
    assert_eq!(code, 201, "{g}");
    assert!(g["spec"]["ports"][0].get("nodePort").is_none(), "{g}");
}

#[test]
fn updates_keep_node_ports_and_type_changes_release_them() {
    let s = common::start();
    let mut lb = svc("lb", "LoadBalancer", json!([{"name": "http", "port": 80}]));
    lb["spec"]["externalTrafficPolicy"] = json!("Local");
    let (code, lb) = create(&s, lb);
    assert_eq!(code, 201, "{lb}");
    let np = node_ports(&lb)[0];
    let hc = lb["spec"]["healthCheckNodePort"].as_i64().unwrap_or(0);
    assert!(in_range(np) && in_range(hc) && np != hc, "{lb}");

    // a PUT that leaves the node port out keeps it (matched by port name)
    let mut put = lb.clone();
    put["spec"]["ports"] = json!([{"name": "http", "port": 80}]);
    put["spec"]
        .as_object_mut()
        .map(|m| m.remove("healthCheckNodePort"));
    let (code, got) = s.json("PUT", &format!("{SVCS}/lb"), JSON, JSON, &put);
    assert_eq!(code, 200, "{got}");
    assert_eq!(node_ports(&got), vec![np]);
    assert_eq!(got["spec"]["healthCheckNodePort"], json!(hc));

    // a new port on update gets its own
    let (code, got) = patch(
        &s,
        "lb",
        json!({"spec": {"ports": [{"name": "http", "port": 80, "nodePort": np},
                                  {"name": "https", "port": 443}]}}),
    );
    assert_eq!(code, 200, "{got}");
    let two = node_ports(&got);
    assert_eq!(two[0], np);
    assert!(in_range(two[1]) && two[1] != np && two[1] != hc, "{got}");

    // the type alone changes to ClusterIP: what only a LoadBalancer used is dropped
    let (code, got) = patch(&s, "lb", json!({"spec": {"type": "ClusterIP"}}));
    assert_eq!(code, 200, "{got}");
    let spec = &got["spec"];
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(node_ports(&got), vec![0, 0], "{got}");
    for f in [
        "allocateLoadBalancerNodePorts",
        "externalTrafficPolicy",
        "healthCheckNodePort",
    ] {
        assert!(spec.get(f).is_none(), "{f}: {got}");
    }
    assert_eq!(spec["clusterIP"], lb["spec"]["clusterIP"]);

    // the released ports can be requested by another Service
    let (code, other) = create(
        &s,
        svc("other", "NodePort", json!([{"port": 80, "nodePort": np}])),
    );
    assert_eq!(code, 201, "{other}");
    // a requested health check node port that is taken: upstream's internal error
    let mut taken_hc = svc("taken", "LoadBalancer", json!([{"port": 80}]));
    taken_hc["spec"]["externalTrafficPolicy"] = json!("Local");
    taken_hc["spec"]["healthCheckNodePort"] = json!(np);
    let (code, st) = create(&s, taken_hc);
    assert_eq!(code, 500, "{st}");
    assert_eq!(
        st["message"],
        format!("Internal error occurred: failed to allocate requested HealthCheck NodePort {np}: provided port is already allocated")
    );
    let mut hc_svc = svc("hc", "LoadBalancer", json!([{"port": 80}]));
    hc_svc["spec"]["externalTrafficPolicy"] = json!("Local");
    hc_svc["spec"]["healthCheckNodePort"] = json!(hc);
    let (code, got_hc) = create(&s, hc_svc);
    assert_eq!(code, 201, "{got_hc}");
    assert_eq!(got_hc["spec"]["healthCheckNodePort"], json!(hc));

    // back to NodePort: node ports are allocated on update, a taken one is refused
    let (code, got) = patch(
        &s,
        "lb",
        json!({"spec": {"type": "NodePort",
                        "ports": [{"name": "http", "port": 80, "nodePort": np}]}}),
    );
    assert_eq!(code, 422, "{got}");
    assert_eq!(
        got["message"],
        format!("Service \"lb\" is invalid: spec.ports[0].nodePort: Invalid value: {np}: provided port is already allocated")
    );
    let (code, got) = patch(&s, "lb", json!({"spec": {"type": "NodePort"}}));
    assert_eq!(code, 200, "{got}");
    let now = node_ports(&got);
    assert!(
        now.iter().all(|n| in_range(*n) && *n != np && *n != hc),
        "{got}"
    );
    assert_eq!(got["spec"]["externalTrafficPolicy"], "Cluster");

    // a user who changes a dependent field along with the type is not overridden:
    // validation answers as upstream
    let (code, got) = patch(
        &s,
        "hc",
        json!({"spec": {"type": "ClusterIP", "allocateLoadBalancerNodePorts": false}}),
    );
    assert_eq!(code, 422, "{got}");
}

#[test]
fn type_changes_to_and_from_external_name_handle_the_cluster_ip() {
    let s = common::start();
    let (code, a) = create(&s, svc("a", "NodePort", json!([{"port": 80}])));
    assert_eq!(code, 201, "{a}");

    // to ExternalName: the cluster IPs, families and node ports the user left go
    let (code, got) = patch(
        &s,
        "a",
        json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert_eq!(code, 200, "{got}");
    for f in [
        "clusterIP",
        "clusterIPs",
        "ipFamilies",
        "ipFamilyPolicy",
        "externalTrafficPolicy",
    ] {
        assert!(got["spec"].get(f).is_none(), "{f}: {got}");
    }
    assert_eq!(node_ports(&got), vec![0]);

    // back to ClusterIP: a new cluster IP and its family, as at create
    let (code, got) = patch(&s, "a", json!({"spec": {"type": "ClusterIP"}}));
    assert_eq!(code, 200, "{got}");
    let ip = got["spec"]["clusterIP"].as_str().unwrap_or("");
    assert!(ip.starts_with("10."), "{got}");
    assert_eq!(got["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(got["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(got["spec"]["ipFamilyPolicy"], "SingleStack");

    // a user who keeps a cluster IP while switching to ExternalName meets validation
    let (code, got) = patch(
        &s,
        "a",
        json!({"spec": {"type": "ExternalName", "externalName": "example.com",
                        "clusterIP": "10.96.0.77", "clusterIPs": ["10.96.0.77"]}}),
    );
    assert_eq!(code, 422, "{got}");
}

/// v1 Endpoints is deprecated since 1.33: every request to it (reads, writes, lists of
/// every namespace) carries upstream's `Warning` header; EndpointSlices and Services do not.
#[test]
fn v1_endpoints_requests_carry_the_deprecation_warning() {
    let s = common::start();
    let warning = "warning: 299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";
    let ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ext"},
                    "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]});
    let body = ep.to_string();
    let head = |method: &str, path: &str, body: &[u8]| {
        let (code, head, _) = common::request(s.running.addr, method, path, JSON, JSON, body);
        (code, head.to_ascii_lowercase())
    };
    for (method, path, body, want) in [
        (
            "POST",
            "/api/v1/namespaces/default/endpoints",
            body.as_bytes(),
            201,
        ),
        (
            "GET",
            "/api/v1/namespaces/default/endpoints/ext",
            &[][..],
            200,
        ),
        ("GET", "/api/v1/endpoints", &[][..], 200),
        (
            "DELETE",
            "/api/v1/namespaces/default/endpoints/ext",
            &[][..],
            200,
        ),
    ] {
        let (code, head) = head(method, path, body);
        assert_eq!(code, want, "{method} {path}");
        let lines = head.lines().filter(|l| l.starts_with("warning:"));
        assert_eq!(
            lines.collect::<Vec<_>>(),
            [warning.to_ascii_lowercase()],
            "{method} {path}"
        );
    }
    for path in [
        "/apis/discovery.k8s.io/v1/endpointslices",
        "/api/v1/namespaces/default/services",
    ] {
        let (code, head) = head("GET", path, &[]);
        assert_eq!(code, 200, "{path}");
        assert!(!head.contains("warning:"), "{path}: {head}");
    }
}
