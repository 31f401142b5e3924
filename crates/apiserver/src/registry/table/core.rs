//! Printers of core (`v1`) kinds other than pods and workloads: Services, Nodes,
//! Namespaces, ConfigMaps, Secrets, ServiceAccounts, Events, Endpoints,
//! PersistentVolumes, PersistentVolumeClaims and ResourceQuotas.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{
    age, arr, field, format_labels, int, map_len, name, opt_s, s, string, text, wide, Printer, Row,
    AGE, NAME,
};
use apimachinery::time::since;

pub(super) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    if !group.is_empty() {
        return None;
    }
    Some(match kind {
        "Service" => &SERVICE,
        "Node" => &NODE,
        "Namespace" => &NAMESPACE,
        "ConfigMap" => &CONFIG_MAP,
        "Secret" => &SECRET,
        "ServiceAccount" => &SERVICE_ACCOUNT,
        "Event" => &EVENT,
        "Endpoints" => &ENDPOINTS,
        "ResourceQuota" => &RESOURCE_QUOTA,
        _ => return None,
    })
}

const SERVICE_SPEC: &str = "io.k8s.api.core.v1.ServiceSpec";

/// Load-balancer ingress points: IPs, else hostnames, sorted and de-duplicated.
pub(super) fn load_balancer_ingress(v: &Value, ptr: &str) -> String {
    let set: BTreeSet<&str> = arr(v, ptr)
        .iter()
        .filter_map(|i| {
            let ip = i.get("ip").and_then(Value::as_str).unwrap_or("");
            let host = i.get("hostname").and_then(Value::as_str).unwrap_or("");
            [ip, host].into_iter().find(|s| !s.is_empty())
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn strings(v: &Value, ptr: &str) -> Vec<String> {
    arr(v, ptr)
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect()
}

fn external_ip(v: &Value) -> String {
    let external = strings(v, "/spec/externalIPs");
    match s(v, "/spec/type") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let lb = load_balancer_ingress(v, "/status/loadBalancer/ingress");
            let mut all: Vec<String> = Vec::new();
            if !lb.is_empty() {
                all.extend(lb.split(',').map(str::to_string));
            }
            if !external.is_empty() {
                all.extend(external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => s(v, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    }
}

fn ports(v: &Value) -> String {
    let list: Vec<String> = arr(v, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("");
            match p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) {
                n if n > 0 => format!("{port}:{n}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    if list.is_empty() {
        "<none>".into()
    } else {
        list.join(",")
    }
}

/// Services.
pub static SERVICE: Printer = Printer {
    columns: &[
        NAME,
        string("Type", field(SERVICE_SPEC, "type")),
        string("Cluster-IP", field(SERVICE_SPEC, "clusterIP")),
        string("External-IP", field(SERVICE_SPEC, "externalIPs")),
        string("Port(s)", field(SERVICE_SPEC, "ports")),
        AGE,
        wide(string("Selector", field(SERVICE_SPEC, "selector"))),
    ],
    print: |v, now| {
        let cluster_ip = arr(v, "/spec/clusterIPs")
            .first()
            .and_then(Value::as_str)
            .unwrap_or("<none>");
        Row::of(vec![
            name(v),
            json!(s(v, "/spec/type")),
            json!(cluster_ip),
            json!(external_ip(v)),
            json!(ports(v)),
            age(v, now),
            json!(format_labels(v.pointer("/spec/selector"))),
        ])
    },
};

const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";

fn node_address(v: &Value, ty: &str) -> String {
    arr(v, "/status/addresses")
        .iter()
        .find(|a| a.get("type").and_then(Value::as_str) == Some(ty))
        .and_then(|a| a.get("address").and_then(Value::as_str))
        .unwrap_or("<none>")
        .to_string()
}

fn node_status(v: &Value) -> String {
    let ready = arr(v, "/status/conditions")
        .iter()
        .rev()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = vec![match ready {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if super::flag(v, "/spec/unschedulable") {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

fn node_roles(v: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(labels) = v.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, val) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role" {
                if let Some(r) = val.as_str().filter(|r| !r.is_empty()) {
                    roles.insert(r.to_string());
                }
            }
        }
    }
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    }
}

fn or_unknown(v: &Value, ptr: &str) -> Value {
    json!(opt_s(v, ptr)
        .filter(|x| !x.is_empty())
        .unwrap_or("<unknown>"))
}

/// Nodes.
pub static NODE: Printer = Printer {
    columns: &[
        NAME,
        string("Status", text("The status of the node")),
        string("Roles", text("The roles of the node")),
        AGE,
        string("Version", field(NODE_INFO, "kubeletVersion")),
        wide(string(
            "Internal-IP",
            field("io.k8s.api.core.v1.NodeStatus", "addresses"),
        )),
        wide(string(
            "External-IP",
            field("io.k8s.api.core.v1.NodeStatus", "addresses"),
        )),
        wide(string("OS-Image", field(NODE_INFO, "osImage"))),
        wide(string("Kernel-Version", field(NODE_INFO, "kernelVersion"))),
        wide(string(
            "Container-Runtime",
            field(NODE_INFO, "containerRuntimeVersion"),
        )),
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(node_status(v)),
            json!(node_roles(v)),
            age(v, now),
            json!(s(v, "/status/nodeInfo/kubeletVersion")),
            json!(node_address(v, "InternalIP")),
            json!(node_address(v, "ExternalIP")),
            or_unknown(v, "/status/nodeInfo/osImage"),
            or_unknown(v, "/status/nodeInfo/kernelVersion"),
            or_unknown(v, "/status/nodeInfo/containerRuntimeVersion"),
        ])
    },
};

/// Namespaces.
pub static NAMESPACE: Printer = Printer {
    columns: &[
        NAME,
        string("Status", text("The status of the namespace")),
        AGE,
    ],
    print: |v, now| Row::of(vec![name(v), json!(s(v, "/status/phase")), age(v, now)]),
};

/// ConfigMaps.
pub static CONFIG_MAP: Printer = Printer {
    columns: &[
        NAME,
        string("Data", field("io.k8s.api.core.v1.ConfigMap", "data")),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(map_len(v, "/data") + map_len(v, "/binaryData")),
            age(v, now),
        ])
    },
};

/// Secrets.
pub static SECRET: Printer = Printer {
    columns: &[
        NAME,
        string("Type", field("io.k8s.api.core.v1.Secret", "type")),
        string("Data", field("io.k8s.api.core.v1.Secret", "data")),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(s(v, "/type")),
            json!(map_len(v, "/data")),
            age(v, now),
        ])
    },
};

/// ServiceAccounts.
pub static SERVICE_ACCOUNT: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Secrets",
            field("io.k8s.api.core.v1.ServiceAccount", "secrets"),
        ),
        AGE,
    ],
    print: |v, now| Row::of(vec![name(v), json!(arr(v, "/secrets").len()), age(v, now)]),
};

const EVENT_DEF: &str = "io.k8s.api.core.v1.Event";

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

fn print_event(v: &Value, now: DateTime<Utc>) -> Row {
    let present = |ptr: &str| opt_s(v, ptr).filter(|t| !t.is_empty());
    let first = match present("/firstTimestamp") {
        Some(t) => since(Some(t), now),
        None => since(present("/eventTime"), now),
    };
    let mut last = match present("/lastTimestamp") {
        Some(t) => since(Some(t), now),
        None => first.clone(),
    };
    let mut count = int(v, "/count");
    if v.get("series").is_some_and(Value::is_object) {
        last = since(present("/series/lastObservedTime"), now);
        count = int(v, "/series/count");
    } else if count == 0 {
        // singleton events of the events.k8s.io API carry no count
        count = 1;
    }
    let kind = s(v, "/involvedObject/kind").to_lowercase();
    let target = match s(v, "/involvedObject/name") {
        "" => kind,
        n => format!("{kind}/{n}"),
    };
    let component = first_non_empty(s(v, "/source/component"), s(v, "/reportingComponent"));
    let instance = first_non_empty(s(v, "/source/host"), s(v, "/reportingInstance"));
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    Row::of(vec![
        json!(last),
        json!(s(v, "/type")),
        json!(s(v, "/reason")),
        json!(target),
        json!(s(v, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(v, "/message").trim()),
        json!(first),
        json!(count),
        name(v),
    ])
}

/// Events (core `v1` storage; also serves `events.k8s.io/v1`).
pub static EVENT: Printer = Printer {
    columns: &[
        string("Last Seen", field(EVENT_DEF, "lastTimestamp")),
        string("Type", field(EVENT_DEF, "type")),
        string("Reason", field(EVENT_DEF, "reason")),
        string("Object", field(EVENT_DEF, "involvedObject")),
        wide(string(
            "Subobject",
            field("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
        )),
        wide(string("Source", field(EVENT_DEF, "source"))),
        string("Message", field(EVENT_DEF, "message")),
        wide(string("First Seen", field(EVENT_DEF, "firstTimestamp"))),
        wide(string("Count", field(EVENT_DEF, "count"))),
        wide(NAME),
    ],
    print: print_event,
};

fn format_endpoints(v: &Value) -> String {
    let subsets = arr(v, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = ss
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ip = |a: &Value| {
            a.get("ip")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let ports = ss
            .get("ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if ports.is_empty() {
            // headless services may have no ports
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(ip(a));
            }
            continue;
        }
        for port in ports {
            let p = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                let host = ip(a);
                list.push(if host.contains(':') {
                    format!("[{host}]:{p}")
                } else {
                    format!("{host}:{p}")
                });
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

/// Endpoints.
pub static ENDPOINTS: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Endpoints",
            field("io.k8s.api.core.v1.Endpoints", "subsets"),
        ),
        AGE,
    ],
    print: |v, now| Row::of(vec![name(v), json!(format_endpoints(v)), age(v, now)]),
};

fn quota_columns(v: &Value) -> (String, String) {
    let Some(hard) = v.pointer("/status/hard").and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    for resource in names {
        let used = v
            .pointer("/status/used")
            .and_then(|u| u.get(resource.as_str()))
            .map(super::int_or_string)
            .unwrap_or_else(|| "0".into());
        let entry = format!(
            "{resource}: {used}/{}",
            super::int_or_string(&hard[resource.as_str()])
        );
        let mut pieces = resource.split('.');
        let is_limit = pieces.next() == Some("limits") && pieces.next().is_some();
        if is_limit {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    (requests.join(", "), limits.join(", "))
}

/// ResourceQuotas.
pub static RESOURCE_QUOTA: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Request",
            text("Request represents a minimum amount of cpu/memory that a container may consume."),
        ),
        string("Limit", text("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.")),
        AGE,
    ],
    print: |v, now| {
        let (requests, limits) = quota_columns(v);
        Row::of(vec![name(v), json!(requests), json!(limits), age(v, now)])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::time::parse_time;

    fn now() -> DateTime<Utc> {
        parse_time("2026-01-10T12:00:00Z").expect("time")
    }

    #[test]
    fn services() {
        // upstream TestPrintService (wide)
        let svc = |spec: Value, status: Value| {
            let v = json!({"metadata": {"name": "s"}, "spec": spec, "status": status});
            (SERVICE.print)(&v, now()).cells
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
            (NODE.print)(&v, now()).cells
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
            print_event(&ev, now()).cells,
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
        let cells = print_event(&new_style, now()).cells;
        assert_eq!(cells[0], json!("10s"));
        assert_eq!(cells[3], json!("node"));
        assert_eq!(cells[5], json!("scheduler"));
        assert_eq!(cells[7], json!("2m"));
        assert_eq!(cells[8], json!(3));
        let single =
            json!({"metadata": {"name": "e3"}, "eventTime": "2026-01-10T11:59:00.000000Z"});
        let cells = print_event(&single, now()).cells;
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
        assert_eq!((CONFIG_MAP.print)(&cm, now()).cells[1], json!(3));
        let secret = json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"a": "MQ=="}});
        assert_eq!(
            (SECRET.print)(&secret, now()).cells[1..3],
            [json!("Opaque"), json!(1)]
        );
    }
}
