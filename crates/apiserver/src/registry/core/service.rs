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

    fn prepare_for_update(&self, old: &Value, new: &mut Value) {
        drop_type_dependent_fields(old, new);
    }

    fn allocate(&self, view: &View<'_>, obj: &mut Value) -> ApiResult<()> {
        assign_cluster_ip(view, obj)?;
        node_ports::assign(view, None, obj)
    }

    fn allocate_update(&self, view: &View<'_>, old: &Value, new: &mut Value) -> ApiResult<()> {
        if svc_type(old) == "ExternalName" && svc_type(new) != "ExternalName" {
            if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                defaults::service_ip_families(spec);
            }
            assign_cluster_ip(view, new)?;
        }
        node_ports::patch_allocated(old, new);
        node_ports::assign(view, Some(old), new)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::SERVICE)
    }
}

/// `spec.type`, `ClusterIP` when unset.
fn svc_type(svc: &Value) -> &str {
    svc.pointer("/spec/type")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .unwrap_or("ClusterIP")
}

/// Whether the type uses node ports (upstream `needsNodePort`).
fn needs_node_port(svc: &Value) -> bool {
    matches!(svc_type(svc), "NodePort" | "LoadBalancer")
}

/// Whether the Service needs a health check node port (upstream `needsHCNodePort`).
fn needs_hc_node_port(svc: &Value) -> bool {
    svc_type(svc) == "LoadBalancer"
        && svc
            .pointer("/spec/externalTrafficPolicy")
            .and_then(Value::as_str)
            == Some("Local")
}

/// Whether the Service is reachable from outside the cluster (upstream
/// `ExternallyAccessible`).
fn externally_accessible(svc: &Value) -> bool {
    match svc_type(svc) {
        "NodePort" | "LoadBalancer" => true,
        "ClusterIP" => svc
            .pointer("/spec/externalIPs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        _ => false,
    }
}

/// The non-zero `spec.ports[].nodePort` values.
fn port_node_ports(svc: &Value) -> Vec<i64> {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                .filter(|n| *n != 0)
                .collect()
        })
        .unwrap_or_default()
}

/// `spec.healthCheckNodePort`, 0 when unset.
fn hc_node_port(svc: &Value) -> i64 {
    svc.pointer("/spec/healthCheckNodePort")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Upstream `dropTypeDependentFields` (run on update, after the stored status was put
/// back): when the type changes, fields only the old type used are dropped, but only
/// those the user left as they were (a changed one is the user's and meets validation).
fn drop_type_dependent_fields(old: &Value, new: &mut Value) {
    let same = |p: &str, new: &Value| old.pointer(p) == new.pointer(p);
    let clear_ips = svc_type(old) != "ExternalName" && svc_type(new) == "ExternalName";
    let drop_ips = clear_ips && same("/spec/clusterIP", new) && same("/spec/clusterIPs", new);
    let drop_families = clear_ips && same("/spec/ipFamilies", new);
    let drop_policy = clear_ips && same("/spec/ipFamilyPolicy", new);
    let drop_node_ports = needs_node_port(old) && !needs_node_port(new) && {
        let had = port_node_ports(old);
        port_node_ports(new).iter().all(|n| had.contains(n))
    };
    let drop_hc = needs_hc_node_port(old)
        && !needs_hc_node_port(new)
        && hc_node_port(old) == hc_node_port(new);
    let was_lb = svc_type(old) == "LoadBalancer";
    let is_lb = svc_type(new) == "LoadBalancer";
    let drop_alloc = was_lb
        && !is_lb
        && matches!(
            (
                old.pointer("/spec/allocateLoadBalancerNodePorts"),
                new.pointer("/spec/allocateLoadBalancerNodePorts"),
            ),
            (Some(a @ Value::Bool(_)), Some(b @ Value::Bool(_))) if a == b
        );
    let drop_class = was_lb && !is_lb && same("/spec/loadBalancerClass", new);
    let drop_etp = externally_accessible(old)
        && !externally_accessible(new)
        && same("/spec/externalTrafficPolicy", new);
    if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
        let mut drop = |f: &str, when: bool| {
            if when {
                spec.remove(f);
            }
        };
        drop("clusterIP", drop_ips);
        drop("clusterIPs", drop_ips);
        drop("ipFamilies", drop_families);
        drop("ipFamilyPolicy", drop_policy);
        drop("healthCheckNodePort", drop_hc);
        drop("allocateLoadBalancerNodePorts", drop_alloc);
        drop("loadBalancerClass", drop_class);
        drop("externalTrafficPolicy", drop_etp);
        if drop_node_ports {
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    p.remove("nodePort");
                }
            }
        }
    }
    // the load balancer status goes with the type (upstream clears it here)
    if !is_lb {
        if let Some(st) = new.get_mut("status").and_then(Value::as_object_mut) {
            if st.contains_key("loadBalancer") {
                st.insert("loadBalancer".into(), json!({}));
            }
        }
    }
}

/// Node ports (upstream `portallocator` over `--service-node-port-range`, default
/// 30000-32767): which ports are taken is read from the stored Services on every
/// allocation, so a deleted Service or a dropped port frees its node port and nothing
/// needs rebuilding after a restart.
mod node_ports {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// The first port of the node-port range.
    pub(super) const MIN: i64 = 30000;
    /// The last port of the node-port range.
    pub(super) const MAX: i64 = 32767;

    /// Node ports (and health check node ports) of the stored Services except `skip`.
    fn used(view: &View<'_>, skip: &str) -> ApiResult<HashSet<i64>> {
        let mut out = HashSet::new();
        let Some(table) = view.table("/services") else {
            return Ok(out);
        };
        for (key, o) in table.iter() {
            if key == skip {
                continue;
            }
            let v = o.value()?;
            out.extend(port_node_ports(&v));
            let hc = hc_node_port(&v);
            if hc != 0 {
                out.insert(hc);
            }
        }
        Ok(out)
    }

    /// A free port: a random start, then the next free one (wrapping), as upstream's
    /// random pick never collides.
    fn next_free(taken: &HashSet<i64>) -> Option<i64> {
        use rand::Rng;
        let size = MAX - MIN + 1;
        let start = rand::rng().random_range(0..size);
        (0..size)
            .map(|i| MIN + (start + i) % size)
            .find(|p| !taken.contains(p))
    }

    fn invalid(obj: &Value, field: String, port: i64, why: &str) -> ApiError {
        ApiError::invalid(
            "",
            "Service",
            crate::registry::rest::meta_str(obj, "name").unwrap_or(""),
            vec![apimachinery::status::Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: {port}: {why}"),
                field,
            }],
        )
    }

    /// Why `port` cannot be taken, if it cannot (upstream's allocator errors).
    fn refusal(port: i64, used: &HashSet<i64>) -> Option<String> {
        if !(MIN..=MAX).contains(&port) {
            Some(format!(
                "provided port is not in the valid range. The range of valid ports is {MIN}-{MAX}"
            ))
        } else if used.contains(&port) {
            Some("provided port is already allocated".into())
        } else {
            None
        }
    }

    /// Upstream `patchAllocatedValues` for node ports: an update that leaves out a
    /// port's node port (or the health check node port) keeps the stored one, matched by
    /// port name, unless another port of the new spec already claims it.
    pub(super) fn patch_allocated(old: &Value, new: &mut Value) {
        if needs_node_port(old) && needs_node_port(new) {
            let old_ports = port_node_ports(old);
            let claimed: HashSet<i64> = port_node_ports(new)
                .into_iter()
                .filter(|n| old_ports.contains(n))
                .collect();
            let by_name: HashMap<String, i64> = old
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map(|ps| {
                    ps.iter()
                        .map(|p| {
                            (
                                p.get("name")
                                    .and_then(Value::as_str)
                                    .unwrap_or("")
                                    .to_string(),
                                p.get("nodePort").and_then(Value::as_i64).unwrap_or(0),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(ports) = new.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                        continue;
                    }
                    let name = p.get("name").and_then(Value::as_str).unwrap_or("");
                    if let Some(&n) = by_name.get(name) {
                        if n != 0 && !claimed.contains(&n) {
                            p.insert("nodePort".into(), json!(n));
                        }
                    }
                }
            }
        }
        if needs_hc_node_port(old) && needs_hc_node_port(new) && hc_node_port(new) == 0 {
            let hc = hc_node_port(old);
            if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
                if hc != 0 {
                    spec.insert("healthCheckNodePort".into(), json!(hc));
                }
            }
        }
    }

    /// Give `obj` (created, or updated from `old`) the node ports its type needs: the
    /// requested ones when free and in range (the Service's own stored ones always
    /// are), a free one for each port without (one per port number, so TCP and UDP on
    /// one port share it) when the type allocates them, and a health check node port
    /// for a LoadBalancer with `externalTrafficPolicy: Local`.
    pub(super) fn assign(view: &View<'_>, old: Option<&Value>, obj: &mut Value) -> ApiResult<()> {
        if !needs_node_port(obj) {
            return Ok(());
        }
        let ns = crate::registry::rest::meta_str(obj, "namespace").unwrap_or("");
        let name = crate::registry::rest::meta_str(obj, "name").unwrap_or("");
        let mut taken = used(view, &format!("{ns}/{name}"))?;
        let owned: HashSet<i64> = old
            .map(|o| {
                let mut v = port_node_ports(o);
                v.push(hc_node_port(o));
                v.into_iter().filter(|n| *n != 0).collect()
            })
            .unwrap_or_default();
        let allocate_new = svc_type(obj) == "NodePort"
            || obj.pointer("/spec/allocateLoadBalancerNodePorts") != Some(&Value::Bool(false));
        // the requested ports first, so that a picked one never takes a requested one
        let requested = port_node_ports(obj);
        let mut mine: HashSet<i64> = HashSet::new();
        for (i, np) in obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))
            .enumerate()
        {
            if np == 0 || mine.contains(&np) {
                continue;
            }
            if !owned.contains(&np) {
                if let Some(why) = refusal(np, &taken) {
                    return Err(invalid(obj, format!("spec.ports[{i}].nodePort"), np, &why));
                }
            }
            mine.insert(np);
        }
        taken.extend(requested);
        // a requested health check node port is reserved before any port is picked
        let wants_hc = needs_hc_node_port(obj);
        let requested_hc = if wants_hc { hc_node_port(obj) } else { 0 };
        if requested_hc != 0 {
            if !owned.contains(&requested_hc) {
                if let Some(why) = refusal(requested_hc, &taken) {
                    return Err(ApiError::internal(format!(
                        "failed to allocate requested HealthCheck NodePort {requested_hc}: {why}"
                    )));
                }
            }
            taken.insert(requested_hc);
        }
        let mut by_port: HashMap<i64, i64> = HashMap::new();
        if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                if !allocate_new || p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    continue;
                }
                let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
                let np = match by_port.get(&port) {
                    Some(&n) => n,
                    None => {
                        let n = next_free(&taken).ok_or_else(|| {
                            ApiError::internal("failed to allocate a nodePort: range is full")
                        })?;
                        taken.insert(n);
                        by_port.insert(port, n);
                        n
                    }
                };
                p.insert("nodePort".into(), json!(np));
            }
        }
        if wants_hc && requested_hc == 0 {
            let hc = next_free(&taken).ok_or_else(|| {
                ApiError::internal("failed to allocate a HealthCheck NodePort 0: range is full")
            })?;
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert("healthCheckNodePort".into(), json!(hc));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored Service of type `ty` with everything its type would have allocated.
    fn stored(ty: &str) -> Value {
        let mut spec = json!({
            "type": ty,
            "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30093},
                      {"name": "b", "port": 443, "protocol": "TCP", "nodePort": 30076}],
        });
        match ty {
            "ClusterIP" => {
                for p in spec["ports"].as_array_mut().into_iter().flatten() {
                    p.as_object_mut().map(|p| p.remove("nodePort"));
                }
            }
            "NodePort" => spec["externalTrafficPolicy"] = json!("Cluster"),
            "LoadBalancer" => {
                spec["externalTrafficPolicy"] = json!("Local");
                spec["healthCheckNodePort"] = json!(30111);
                spec["allocateLoadBalancerNodePorts"] = json!(true);
                spec["loadBalancerClass"] = json!("example.com/lb");
            }
            _ => {}
        }
        json!({"metadata": {"name": "svc"}, "spec": spec,
               "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}})
    }

    /// Upstream `TestDropTypeDependentFields`, case by case: the stored type, the
    /// update (a merge of spec fields onto the stored object), and the spec fields the
    /// prepared update then has (`null`: absent).
    #[test]
    fn drop_type_dependent_fields_as_upstream() {
        let cases: &[(&str, &str, Value, Value)] = &[
            (
                "no change",
                "LoadBalancer",
                json!({}),
                json!({"healthCheckNodePort": 30111, "allocateLoadBalancerNodePorts": true,
                       "loadBalancerClass": "example.com/lb", "externalTrafficPolicy": "Local",
                       "nodePorts": [30093, 30076]}),
            ),
            (
                "clusterIP to ExternalName: cluster IPs and families dropped",
                "ClusterIP",
                json!({"type": "ExternalName", "externalName": "example.com"}),
                json!({"clusterIP": null, "clusterIPs": null, "ipFamilies": null,
                       "ipFamilyPolicy": null}),
            ),
            (
                "clusterIP to ExternalName: changed cluster IPs kept",
                "ClusterIP",
                json!({"type": "ExternalName", "clusterIP": "10.96.0.11",
                       "clusterIPs": ["10.96.0.11"], "ipFamilyPolicy": "PreferDualStack"}),
                json!({"clusterIP": "10.96.0.11", "clusterIPs": ["10.96.0.11"],
                       "ipFamilies": null, "ipFamilyPolicy": "PreferDualStack"}),
            ),
            (
                "NodePort to ClusterIP: node ports dropped",
                "NodePort",
                json!({"type": "ClusterIP"}),
                json!({"nodePorts": [0, 0], "externalTrafficPolicy": null,
                       "clusterIP": "10.96.0.10"}),
            ),
            (
                "NodePort to ClusterIP: a removed port still drops them",
                "NodePort",
                json!({"type": "ClusterIP",
                       "ports": [{"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30093}]}),
                json!({"nodePorts": [0]}),
            ),
            (
                "NodePort to ClusterIP: a changed node port is kept",
                "NodePort",
                json!({"type": "ClusterIP",
                       "ports": [{"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30094},
                                 {"name": "b", "port": 443, "protocol": "TCP", "nodePort": 30076}]}),
                json!({"nodePorts": [30094, 30076]}),
            ),
            (
                "NodePort to ClusterIP: a changed externalTrafficPolicy is kept",
                "NodePort",
                json!({"type": "ClusterIP", "externalTrafficPolicy": "Local"}),
                json!({"externalTrafficPolicy": "Local", "nodePorts": [0, 0]}),
            ),
            (
                "NodePort to ClusterIP with externalIPs: still externally accessible",
                "NodePort",
                json!({"type": "ClusterIP", "externalIPs": ["192.0.2.7"]}),
                json!({"externalTrafficPolicy": "Cluster", "nodePorts": [0, 0]}),
            ),
            (
                "LoadBalancer to NodePort: node ports kept, LB-only fields dropped",
                "LoadBalancer",
                json!({"type": "NodePort"}),
                json!({"nodePorts": [30093, 30076], "healthCheckNodePort": null,
                       "allocateLoadBalancerNodePorts": null, "loadBalancerClass": null,
                       "externalTrafficPolicy": "Local", "lbStatus": {}}),
            ),
            (
                "LoadBalancer to NodePort: changed LB fields kept",
                "LoadBalancer",
                json!({"type": "NodePort", "healthCheckNodePort": 30112,
                       "allocateLoadBalancerNodePorts": false,
                       "loadBalancerClass": "example.com/other"}),
                json!({"healthCheckNodePort": 30112, "allocateLoadBalancerNodePorts": false,
                       "loadBalancerClass": "example.com/other"}),
            ),
            (
                "LoadBalancer Local to Cluster: health check node port dropped",
                "LoadBalancer",
                json!({"externalTrafficPolicy": "Cluster"}),
                json!({"healthCheckNodePort": null, "allocateLoadBalancerNodePorts": true,
                       "loadBalancerClass": "example.com/lb",
                       "lbStatus": {"ingress": [{"ip": "192.0.2.1"}]}}),
            ),
            (
                "LoadBalancer to ClusterIP: everything type-dependent dropped",
                "LoadBalancer",
                json!({"type": "ClusterIP"}),
                json!({"nodePorts": [0, 0], "healthCheckNodePort": null,
                       "allocateLoadBalancerNodePorts": null, "loadBalancerClass": null,
                       "externalTrafficPolicy": null, "clusterIP": "10.96.0.10",
                       "ipFamilies": ["IPv4"], "lbStatus": {}}),
            ),
        ];
        for (name, ty, update, want) in cases {
            let old = stored(ty);
            let mut new = old.clone();
            for (k, v) in update.as_object().into_iter().flatten() {
                new["spec"][k] = v.clone();
            }
            ServiceStrategy.prepare_for_update(&old, &mut new);
            for (k, v) in want.as_object().into_iter().flatten() {
                let got = match k.as_str() {
                    "nodePorts" => json!(new["spec"]["ports"].as_array().map(|ps| ps
                        .iter()
                        .map(|p| p.get("nodePort").cloned().unwrap_or(json!(0)))
                        .collect::<Vec<_>>())),
                    "lbStatus" => new["status"]["loadBalancer"].clone(),
                    _ => new["spec"].get(k).cloned().unwrap_or(Value::Null),
                };
                assert_eq!(&got, v, "{name}: {k} in {new}");
            }
        }
    }
}
