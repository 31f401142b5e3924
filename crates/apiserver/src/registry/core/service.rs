//! Service (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use crate::storage::store::View;
use apimachinery::field::Cause;
use apimachinery::status::{ApiError, ApiResult};
use serde_json::json;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["svc"], &ServiceStrategy).in_all();

/// What Service does differently.
pub struct ServiceStrategy;

impl Strategy for ServiceStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.clusterIP", "spec.type"]
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.service(e, obj))
    }

    fn allocate(&self, view: &View<'_>, obj: &mut Value) -> ApiResult<()> {
        assign_cluster_ip(view, obj)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::SERVICE)
    }
}

/// The service CIDR cluster IPs come from (upstream default 10.96.0.0/12).
const SERVICE_CIDR_BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_CIDR_SIZE: u32 = 1 << 20;

/// Pick a free cluster IP (random probe over the service CIDR, skipping .0 and .1).
fn allocate_cluster_ip(view: &View<'_>) -> ApiResult<String> {
    let used: std::collections::HashSet<String> = view
        .table("/services")
        .map(|t| {
            t.values()
                .filter_map(|o| o.field("spec.clusterIP").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    use rand::Rng;
    let mut rng = rand::rng();
    for _ in 0..64 {
        let off = rng.random_range(2..SERVICE_CIDR_SIZE - 1);
        let ip = std::net::Ipv4Addr::from(SERVICE_CIDR_BASE + off).to_string();
        if !used.contains(&ip) {
            return Ok(ip);
        }
    }
    Err(ApiError::internal(
        "failed to allocate a serviceIP: range is full",
    ))
}

fn assign_cluster_ip(view: &View<'_>, obj: &mut Value) -> ApiResult<()> {
    let ty = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if ty == "ExternalName" {
        return Ok(());
    }
    let given = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if given == "None" {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("clusterIPs".into(), json!(["None"]));
        }
        return Ok(());
    }
    let ip = if given.is_empty() {
        allocate_cluster_ip(view)?
    } else {
        let in_use = view.table("/services").is_some_and(|t| {
            t.values()
                .any(|o| o.field("spec.clusterIP") == Some(given.as_str()))
        });
        if in_use {
            return Err(ApiError::invalid(
                "",
                "Service",
                crate::registry::rest::meta_str(obj, "name").unwrap_or(""),
                vec![apimachinery::status::Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: [\"{given}\"]: failed to allocate IP {given}: provided IP is already allocated"),
                    field: "spec.clusterIPs".into(),
                }],
            ));
        }
        given
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
    }
    Ok(())
}

pub(crate) mod validation {
    use crate::registry::core::podspec::validation::{port_num_or_name, validate_protocol};
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn service(&self, e: &mut Errs, o: &Value) {
            if let Some(old) = self.old {
                self.meta_update(e, o, old, true);
            }
            self.meta_create(e, o, NameRule::Label1035, true);
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            let ty = st(spec, "type").unwrap_or("ClusterIP");
            let cluster_ips: Vec<&str> = match arr(spec, "clusterIPs") {
                Some(a) => a.iter().filter_map(|v| v.as_str()).collect(),
                None => st(spec, "clusterIP")
                    .filter(|c| !c.is_empty())
                    .into_iter()
                    .collect(),
            };
            let headless = cluster_ips.first() == Some(&"None");
            let ports = items(spec, "ports");
            if ports.is_empty() && !headless && ty != "ExternalName" {
                e.required("spec.ports", "");
            }
            match ty {
                "LoadBalancer" => {
                    for (i, p) in ports.iter().enumerate() {
                        if int(p, "port") == Some(10250) {
                            e.invalid(
                                &index("spec.ports", i),
                                Bad::Int(10250),
                                "may not expose port 10250 externally since it is used by kubelet",
                            );
                        }
                    }
                    if headless {
                        e.invalid(
                            "spec.clusterIPs[0]",
                            s("None"),
                            "may not be set to 'None' for LoadBalancer services",
                        );
                    }
                }
                "NodePort" if headless => {
                    e.invalid(
                        "spec.clusterIPs[0]",
                        s("None"),
                        "may not be set to 'None' for NodePort services",
                    );
                }
                "ExternalName" => {
                    if !cluster_ips.is_empty() {
                        e.forbidden(
                            "spec.clusterIPs",
                            "may not be set for ExternalName services",
                        );
                    }
                    if !items(spec, "ipFamilies").is_empty() {
                        e.forbidden(
                            "spec.ipFamilies",
                            "may not be set for ExternalName services",
                        );
                    }
                    if get(spec, "ipFamilyPolicy").is_some() {
                        e.forbidden(
                            "spec.ipFamilyPolicy",
                            "may not be set for ExternalName services",
                        );
                    }
                    let en = st(spec, "externalName").unwrap_or("");
                    let cname = en.strip_suffix('.').unwrap_or(en);
                    if cname.is_empty() {
                        e.required("spec.externalName", "");
                    } else {
                        e.each("spec.externalName", cname, dns1123_subdomain_errs(cname));
                    }
                }
                _ => {}
            }
            let mut names: Vec<&str> = Vec::new();
            for (i, p) in ports.iter().enumerate() {
                let pp = index("spec.ports", i);
                let name = st(p, "name").unwrap_or("");
                if ports.len() > 1 && name.is_empty() {
                    e.required(&child(&pp, "name"), "");
                } else if !name.is_empty() {
                    e.each(&child(&pp, "name"), name, dns1123_label_errs(name));
                    if names.contains(&name) {
                        e.duplicate(&child(&pp, "name"), s(name));
                    } else {
                        names.push(name);
                    }
                }
                if let Some(port) = int(p, "port").or(Some(0)) {
                    if !(1..=65535).contains(&port) {
                        e.invalid(&child(&pp, "port"), Bad::Int(port), PORT_RANGE);
                    }
                }
                validate_protocol(e, p, &pp);
                if let Some(tp) = get(p, "targetPort") {
                    port_num_or_name(e, tp, &child(&pp, "targetPort"), true);
                }
                if let Some(ap) = st(p, "appProtocol") {
                    e.each(&child(&pp, "appProtocol"), ap, qualified_name_errs(ap));
                }
            }
            validate_labels(e, obj(spec, "selector"), "spec.selector");
            if let Some(sa) = st(spec, "sessionAffinity").filter(|x| !x.is_empty()) {
                match sa {
                    "ClientIP" => {
                        let t = get(spec, "sessionAffinityConfig")
                            .and_then(|c| get(c, "clientIP"))
                            .and_then(|c| int(c, "timeoutSeconds"));
                        if let Some(t) = t.filter(|t| *t <= 0 || *t > 86400) {
                            e.invalid(
                                "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                                Bad::Int(t),
                                "must be greater than 0 and less than 86400",
                            );
                        }
                    }
                    "None" => {
                        if get(spec, "sessionAffinityConfig").is_some() {
                            e.forbidden(
                                "spec.sessionAffinityConfig",
                                "must not be set when session affinity is None",
                            );
                        }
                    }
                    other => {
                        e.not_supported("spec.sessionAffinity", js(other), &["ClientIP", "None"])
                    }
                }
            }
            if let Some(t) = st(spec, "type").filter(|x| !x.is_empty()) {
                if !["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"].contains(&t) {
                    e.not_supported(
                        "spec.type",
                        js(t),
                        &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
                    );
                }
            }
            if ty == "ClusterIP" {
                for (i, p) in ports.iter().enumerate() {
                    if int(p, "nodePort").is_some_and(|n| n != 0) {
                        e.forbidden(
                            &child(&index("spec.ports", i), "nodePort"),
                            "may not be used when `type` is 'ClusterIP'",
                        );
                    }
                }
            }
            let proto = |p: &Value| st(p, "protocol").unwrap_or("TCP").to_string();
            let mut node_ports: Vec<(String, i64)> = Vec::new();
            for (i, p) in ports.iter().enumerate() {
                let Some(np) = int(p, "nodePort").filter(|n| *n != 0) else {
                    continue;
                };
                let k = (proto(p), np);
                if node_ports.contains(&k) {
                    e.duplicate(&child(&index("spec.ports", i), "nodePort"), Bad::Int(np));
                }
                node_ports.push(k);
            }
            let mut seen: Vec<(String, i64)> = Vec::new();
            for (i, p) in ports.iter().enumerate() {
                let k = (proto(p), int(p, "port").unwrap_or(0));
                if seen.contains(&k) {
                    let mut key = Map::new();
                    key.insert("Name".into(), Value::from(""));
                    key.insert("Protocol".into(), Value::from(k.0.clone()));
                    key.insert("AppProtocol".into(), Value::Null);
                    key.insert("Port".into(), Value::from(k.1));
                    key.insert("TargetPort".into(), Value::from(0));
                    key.insert("NodePort".into(), Value::from(0));
                    e.duplicate(&index("spec.ports", i), Bad::Json(Value::Object(key)));
                }
                seen.push(k);
            }
            if !items(spec, "loadBalancerSourceRanges").is_empty() && ty != "LoadBalancer" {
                e.forbidden(
                    "spec.LoadBalancerSourceRanges",
                    "may only be used when `type` is 'LoadBalancer'",
                );
            }
            if get(spec, "allocateLoadBalancerNodePorts").is_some() && ty != "LoadBalancer" {
                e.forbidden(
                    "spec.allocateLoadBalancerNodePorts",
                    "may only be used when `type` is 'LoadBalancer'",
                );
            }
            let externally_accessible = ty == "LoadBalancer"
                || ty == "NodePort"
                || (ty == "ClusterIP" && !items(spec, "externalIPs").is_empty());
            if let Some(etp) = st(spec, "externalTrafficPolicy").filter(|x| !x.is_empty()) {
                if !externally_accessible {
                    e.invalid(
                        "spec.externalTrafficPolicy",
                        js(etp),
                        "may only be set for externally-accessible services",
                    );
                } else if etp != "Cluster" && etp != "Local" {
                    e.not_supported("spec.externalTrafficPolicy", js(etp), &["Cluster", "Local"]);
                }
            }
            if let Some(itp) = st(spec, "internalTrafficPolicy") {
                if itp != "Cluster" && itp != "Local" {
                    e.not_supported("spec.internalTrafficPolicy", js(itp), &["Cluster", "Local"]);
                }
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        service(o, phase);
    }

    pub(crate) fn service(o: &mut Obj, phase: Phase) {
        let Some(spec) = child(o, "spec") else {
            if phase.create() {
                status_shape(o, &[("loadBalancer", json!({}))]);
            }
            return;
        };
        default_str(spec, "sessionAffinity", "None");
        match str_at(spec, "sessionAffinity") {
            "None" => {
                spec.remove("sessionAffinityConfig");
            }
            "ClientIP" => {
                let has_timeout = spec
                    .get("sessionAffinityConfig")
                    .and_then(|c| c.get("clientIP"))
                    .and_then(|c| c.get("timeoutSeconds"))
                    .is_some_and(|t| !t.is_null());
                if !has_timeout {
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": 10800}}),
                    );
                }
            }
            _ => {}
        }
        default_str(spec, "type", "ClusterIP");
        each_obj(spec, "ports", |p| {
            default_str(p, "protocol", "TCP");
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if unset {
                if let Some(port @ Value::Number(_)) = p.get("port") {
                    let port = port.clone();
                    p.insert("targetPort".into(), port);
                }
            }
        });
        let svc_type = str_at(spec, "type").to_string();
        let has_external_ips = !is_empty_coll(spec, "externalIPs");
        let externally_accessible = svc_type == "LoadBalancer"
            || svc_type == "NodePort"
            || (svc_type == "ClusterIP" && has_external_ips);
        if externally_accessible {
            default_str(spec, "externalTrafficPolicy", "Cluster");
        }
        let ip_family_types =
            matches!(svc_type.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer");
        if ip_family_types {
            default_ptr(spec, "internalTrafficPolicy", json!("Cluster"));
        }
        if svc_type == "LoadBalancer" {
            default_ptr(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        if phase.create() {
            if ip_family_types {
                service_ip_families(spec);
            } else {
                spec.remove("ipFamilies");
                spec.remove("ipFamilyPolicy");
            }
        }
        if svc_type == "LoadBalancer" {
            if let Some(lb) = child(o, "status").and_then(|s| child(s, "loadBalancer")) {
                each_obj(lb, "ingress", |ing| {
                    if !is_empty_str(ing, "ip") {
                        default_ptr(ing, "ipMode", json!("VIP"));
                    }
                });
            }
        }
        if phase.create() {
            status_shape(o, &[("loadBalancer", json!({}))]);
        }
    }

    /// The IP family fields the Service registry fills at create time, for a cluster whose
    /// only service CIDR is IPv4.
    pub(crate) fn service_ip_families(spec: &mut Obj) {
        let mut ips: Vec<String> = match spec.get("clusterIPs") {
            Some(Value::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect(),
            _ => match spec.get("clusterIP").and_then(Value::as_str) {
                Some(ip) if !ip.is_empty() => vec![ip.to_string()],
                _ => Vec::new(),
            },
        };
        let headless = ips.first().map(String::as_str) == Some("None");
        let Some(families) = (match spec.get_mut("ipFamilies") {
            None | Some(Value::Null) => {
                spec.insert("ipFamilies".into(), json!([]));
                spec.get_mut("ipFamilies").and_then(Value::as_array_mut)
            }
            Some(Value::Array(a)) => Some(a),
            _ => None,
        }) else {
            return;
        };
        // Families follow the literal cluster IPs the client gave.
        for (i, ip) in ips.drain(..).enumerate() {
            if ip == "None" || ip.is_empty() {
                break;
            }
            if i >= families.len() {
                let fam = if ip.contains(':') { "IPv6" } else { "IPv4" };
                families.push(json!(fam));
            }
        }
        let selectorless = spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        let Some(families) = spec.get_mut("ipFamilies").and_then(Value::as_array_mut) else {
            return;
        };
        if headless && selectorless {
            // The one case where the policy defaults to dual-stack, even on a single-stack
            // cluster.
            if families.is_empty() {
                families.push(json!("IPv4"));
            }
            default_ptr(spec, "ipFamilyPolicy", json!("RequireDualStack"));
            let dual = matches!(
                spec.get("ipFamilyPolicy").and_then(Value::as_str),
                Some("RequireDualStack" | "PreferDualStack")
            );
            let Some(families) = spec.get_mut("ipFamilies").and_then(Value::as_array_mut) else {
                return;
            };
            if dual && families.len() == 1 {
                match families[0].as_str() {
                    Some("IPv4") => families.push(json!("IPv6")),
                    Some("IPv6") => families.push(json!("IPv4")),
                    _ => {}
                }
            }
            return;
        }
        let count = families.len();
        if families.is_empty() {
            families.push(json!("IPv4"));
        }
        let policy = if count < 2 {
            "SingleStack"
        } else {
            "RequireDualStack"
        };
        default_ptr(spec, "ipFamilyPolicy", json!(policy));
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const SERVICE_SPEC: &str = "io.k8s.api.core.v1.ServiceSpec";

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
    pub(crate) static SERVICE: Printer = Printer {
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
}
