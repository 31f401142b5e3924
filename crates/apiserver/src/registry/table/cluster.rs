//! Printers of the remaining API groups: coordination, discovery, networking, RBAC,
//! certificates and scheduling.

use serde_json::{json, Value};

use super::{
    age, arr, boolean, field, flag, format_label_selector, int, integer, name, opt_s, s, string,
    text, wide, Column, Printer, Row, AGE, NAME,
};
use apimachinery::duration::human_duration;

pub(super) fn printer(group: &str, kind: &str) -> Option<&'static Printer> {
    Some(match (group, kind) {
        ("coordination.k8s.io", "Lease") => &LEASE,
        ("discovery.k8s.io", "EndpointSlice") => &ENDPOINT_SLICE,
        ("networking.k8s.io", "Ingress") => &INGRESS,
        ("networking.k8s.io", "IngressClass") => &INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &NETWORK_POLICY,
        ("networking.k8s.io", "IPAddress") => &IP_ADDRESS,
        ("networking.k8s.io", "ServiceCIDR") => &SERVICE_CIDR,
        ("rbac.authorization.k8s.io", "RoleBinding") => &ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => &CLUSTER_ROLE_BINDING,
        ("certificates.k8s.io", "CertificateSigningRequest") => &CSR,
        ("scheduling.k8s.io", "PriorityClass") => &PRIORITY_CLASS,
        _ => return None,
    })
}

/// Leases.
pub static LEASE: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Holder",
            field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
        ),
        AGE,
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(s(v, "/spec/holderIdentity")),
            age(v, now),
        ])
    },
};

/// Up to three entries joined with `,`, then `+ N more...`; `<unset>` when empty.
fn list_with_more(items: Vec<String>) -> String {
    const MAX: usize = 3;
    let count = items.len();
    let shown = items[..count.min(MAX)].join(",");
    if count > MAX {
        format!("{shown} + {} more...", count - MAX)
    } else if shown.is_empty() {
        "<unset>".into()
    } else {
        shown
    }
}

const SLICE: &str = "io.k8s.api.discovery.v1.EndpointSlice";

/// EndpointSlices.
pub static ENDPOINT_SLICE: Printer = Printer {
    columns: &[
        NAME,
        string("AddressType", field(SLICE, "addressType")),
        string("Ports", field(SLICE, "ports")),
        string("Endpoints", field(SLICE, "endpoints")),
        AGE,
    ],
    print: |v, now| {
        let ports = arr(v, "/ports")
            .iter()
            .map(
                |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(Value::String(n))) => n.clone(),
                    _ => "*".into(),
                },
            )
            .collect();
        let addresses = arr(v, "/endpoints")
            .iter()
            .flat_map(|e| {
                e.get("addresses")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
            })
            .map(|a| a.as_str().unwrap_or("").to_string())
            .collect();
        Row::of(vec![
            name(v),
            json!(s(v, "/addressType")),
            json!(list_with_more(ports)),
            json!(list_with_more(addresses)),
            age(v, now),
        ])
    },
};

fn ingress_hosts(v: &Value) -> String {
    const MAX: usize = 3;
    let rules = arr(v, "/spec/rules");
    // upstream stops collecting once three hosts are listed and then there are more rules
    let mut list = Vec::new();
    let mut more = false;
    for r in rules {
        if list.len() == MAX {
            more = true;
        }
        if let Some(h) = r.get("host").and_then(Value::as_str) {
            if !more && !h.is_empty() {
                list.push(h);
            }
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

/// Ingresses.
pub static INGRESS: Printer = Printer {
    columns: &[
        NAME,
        string("Class", text("The name of the IngressClass resource that should be used for additional configuration")),
        string("Hosts", text("Hosts that incoming requests are matched against before the ingress rule")),
        string("Address", text("Address is a list containing ingress points for the load-balancer")),
        string("Ports", text("Ports of TLS configurations that open")),
        AGE,
    ],
    print: |v, now| {
        let ports = if arr(v, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        Row::of(vec![
            name(v),
            json!(opt_s(v, "/spec/ingressClassName").unwrap_or("<none>")),
            json!(ingress_hosts(v)),
            json!(super::core::load_balancer_ingress(
                v,
                "/status/loadBalancer/ingress"
            )),
            json!(ports),
            age(v, now),
        ])
    },
};

/// IngressClasses.
pub static INGRESS_CLASS: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Controller",
            text("Controller that is responsible for handling this class"),
        ),
        string(
            "Parameters",
            text("A reference to a resource with additional parameters"),
        ),
        AGE,
    ],
    print: |v, now| {
        let parameters = match v.pointer("/spec/parameters").filter(|p| p.is_object()) {
            Some(p) => {
                let mut out = s(p, "/kind").to_string();
                if let Some(g) = opt_s(p, "/apiGroup") {
                    out = format!("{out}.{g}");
                }
                format!("{out}/{}", s(p, "/name"))
            }
            None => "<none>".into(),
        };
        Row::of(vec![
            name(v),
            json!(s(v, "/spec/controller")),
            json!(parameters),
            age(v, now),
        ])
    },
};

/// NetworkPolicies.
pub static NETWORK_POLICY: Printer = Printer {
    columns: &[
        NAME,
        string(
            "Pod-Selector",
            field("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"),
        ),
        AGE,
    ],
    print: |v, now| {
        // a missing podSelector is the empty selector in the Go struct, not nil
        let selector = v.pointer("/spec/podSelector").cloned().unwrap_or(json!({}));
        Row::of(vec![
            name(v),
            json!(format_label_selector(Some(&selector))),
            age(v, now),
        ])
    },
};

/// IPAddresses. Upstream declares two columns and prints three cells (the age last);
/// clients print the declared columns.
pub static IP_ADDRESS: Printer = Printer {
    columns: &[
        NAME,
        string(
            "ParentRef",
            field("io.k8s.api.networking.v1.IPAddressSpec", "parentRef"),
        ),
    ],
    print: |v, now| {
        let parent = match v.pointer("/spec/parentRef").filter(|p| p.is_object()) {
            Some(p) => {
                let group = s(p, "/group");
                let resource = s(p, "/resource");
                let mut out = if group.is_empty() {
                    resource.to_lowercase()
                } else {
                    format!("{resource}.{group}").to_lowercase()
                };
                if let Some(ns) = opt_s(p, "/namespace").filter(|n| !n.is_empty()) {
                    out = format!("{out}/{ns}");
                }
                format!("{out}/{}", s(p, "/name"))
            }
            None => "<none>".into(),
        };
        Row::of(vec![name(v), json!(parent), age(v, now)])
    },
};

/// ServiceCIDRs.
pub static SERVICE_CIDR: Printer = Printer {
    columns: &[
        NAME,
        string(
            "CIDRs",
            field("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs"),
        ),
        AGE,
    ],
    print: |v, now| {
        let cidrs: Vec<&str> = arr(v, "/spec/cidrs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        Row::of(vec![name(v), json!(cidrs.join(",")), age(v, now)])
    },
};

fn binding_row(v: &Value, now: chrono::DateTime<chrono::Utc>) -> Row {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut sas = Vec::new();
    for subject in arr(v, "/subjects") {
        let name = s(subject, "/name").to_string();
        match s(subject, "/kind") {
            "ServiceAccount" => sas.push(format!("{}/{name}", s(subject, "/namespace"))),
            "User" => users.push(name),
            "Group" => groups.push(name),
            _ => {}
        }
    }
    Row::of(vec![
        name(v),
        json!(format!(
            "{}/{}",
            s(v, "/roleRef/kind"),
            s(v, "/roleRef/name")
        )),
        age(v, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ])
}

const fn binding_columns(kind: &'static str, who: [&'static str; 3]) -> [Column; 6] {
    [
        NAME,
        string("Role", field(kind, "roleRef")),
        AGE,
        wide(string("Users", text(who[0]))),
        wide(string("Groups", text(who[1]))),
        wide(string("ServiceAccounts", text(who[2]))),
    ]
}

const ROLE_BINDING_COLUMNS: [Column; 6] = binding_columns(
    "io.k8s.api.rbac.v1.RoleBinding",
    [
        "Users in the roleBinding",
        "Groups in the roleBinding",
        "ServiceAccounts in the roleBinding",
    ],
);

const CLUSTER_ROLE_BINDING_COLUMNS: [Column; 6] = binding_columns(
    "io.k8s.api.rbac.v1.ClusterRoleBinding",
    [
        "Users in the clusterRoleBinding",
        "Groups in the clusterRoleBinding",
        "ServiceAccounts in the clusterRoleBinding",
    ],
);

/// RoleBindings.
pub static ROLE_BINDING: Printer = Printer {
    columns: &ROLE_BINDING_COLUMNS,
    print: binding_row,
};

/// ClusterRoleBindings.
pub static CLUSTER_ROLE_BINDING: Printer = Printer {
    columns: &CLUSTER_ROLE_BINDING_COLUMNS,
    print: binding_row,
};

const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

fn csr_condition(v: &Value) -> String {
    let has = |ty: &str| {
        arr(v, "/status/conditions")
            .iter()
            .any(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !s(v, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// CertificateSigningRequests.
pub static CSR: Printer = Printer {
    columns: &[
        NAME,
        AGE,
        string("SignerName", field(CSR_SPEC, "signerName")),
        string("Requestor", field(CSR_SPEC, "request")),
        string("RequestedDuration", field(CSR_SPEC, "expirationSeconds")),
        string(
            "Condition",
            field(
                "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
                "conditions",
            ),
        ),
    ],
    print: |v, now| {
        let signer = opt_s(v, "/spec/signerName")
            .filter(|x| !x.is_empty())
            .unwrap_or("<none>");
        let duration = v
            .pointer("/spec/expirationSeconds")
            .and_then(Value::as_i64)
            .map_or_else(
                || "<none>".to_string(),
                |secs| human_duration(secs.saturating_mul(1_000_000_000)),
            );
        Row::of(vec![
            name(v),
            age(v, now),
            json!(signer),
            json!(s(v, "/spec/username")),
            json!(duration),
            json!(csr_condition(v)),
        ])
    },
};

const PRIORITY_CLASS_DEF: &str = "io.k8s.api.scheduling.v1.PriorityClass";

/// PriorityClasses.
pub static PRIORITY_CLASS: Printer = Printer {
    columns: &[
        NAME,
        integer("Value", field(PRIORITY_CLASS_DEF, "value")),
        boolean("Global-Default", field(PRIORITY_CLASS_DEF, "globalDefault")),
        AGE,
        string(
            "PreemptionPolicy",
            field(PRIORITY_CLASS_DEF, "preemptionPolicy"),
        ),
    ],
    print: |v, now| {
        Row::of(vec![
            name(v),
            json!(int(v, "/value")),
            json!(flag(v, "/globalDefault")),
            age(v, now),
            json!(s(v, "/preemptionPolicy")),
        ])
    },
};

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::time::parse_time;

    fn now() -> chrono::DateTime<chrono::Utc> {
        parse_time("2026-01-10T12:00:00Z").expect("time")
    }

    #[test]
    fn endpoint_slices() {
        let v = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "https"}, {}, {"port": 9}],
            "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3"]}]});
        let cells = (ENDPOINT_SLICE.print)(&v, now()).cells;
        assert_eq!(
            cells[1..4],
            [
                json!("IPv4"),
                json!("80,https,* + 1 more..."),
                json!("10.0.0.1,10.0.0.2,10.0.0.3")
            ]
        );
        let empty = (ENDPOINT_SLICE.print)(&json!({"metadata": {"name": "e"}}), now()).cells;
        assert_eq!(empty[2..4], [json!("<unset>"), json!("<unset>")]);
    }

    #[test]
    fn ingresses() {
        let v = json!({"metadata": {"name": "i"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a"}, {"host": "b"}, {}, {"host": "c"}, {"host": "d"}], "tls": [{}]},
            "status": {"loadBalancer": {"ingress": [{"hostname": "lb"}, {"ip": "1.1.1.1"}]}}});
        let cells = (INGRESS.print)(&v, now()).cells;
        assert_eq!(
            cells[1..5],
            [
                json!("nginx"),
                json!("a,b,c + 2 more..."),
                json!("1.1.1.1,lb"),
                json!("80, 443")
            ]
        );
        let bare = (INGRESS.print)(&json!({"metadata": {"name": "i"}, "spec": {}}), now()).cells;
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
        let cells = (CSR.print)(&csr, now()).cells;
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
            (IP_ADDRESS.print)(&ip, now()).cells[1],
            json!("services/default/kubernetes")
        );
    }
}
