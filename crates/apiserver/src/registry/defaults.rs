//! Server-side defaulting for built-in Kubernetes objects held as [`serde_json::Value`].
//!
//! A real kube-apiserver fills in many fields that a client left out. Most come from the
//! per-group defaulting functions (`pkg/apis/<group>/<version>/defaults.go` plus the generated
//! `zz_generated.defaults.go`, which applies nested defaulters such as the container, probe,
//! volume and port ones wherever those types appear). Those run every time an object is
//! decoded: on create, on update and when an object is read back from storage. A few more
//! come from the registry strategies (`PrepareForCreate`), from admission plugins that are
//! always on (priority), from conversion round trips (`serviceAccount` mirrors
//! `serviceAccountName`, StatefulSet claim templates get `apiVersion`/`kind`) and from the way
//! Go serialises struct fields that are never omitted (`resources: {}`, template
//! `metadata: {}`, zero counters in `status`), and resource quantities are always written
//! back in canonical form (`"0.5"` becomes `"500m"`, `"1024Mi"` becomes `"1Gi"`).
//!
//! Entry points:
//!
//! * [`apply_defaults`]: everything a create request gets: scheme defaults plus the
//!   create-time additions (namespace `kubernetes` finalizer, pod `status.phase`/`qosClass`
//!   and priority, DaemonSet template-generation annotation, Service IP family fields, and
//!   zero-valued `status` stanzas).
//! * [`apply_scheme_defaults`]: only what upstream applies on every decode. Use it on
//!   update/replace, on `/finalize` and `/status` writes, and on objects read back from
//!   storage, where create-only additions must not come back (a namespace finalizer that
//!   the namespace controller removed, for instance).
//! * [`generate_job_selector`]: the Job strategy's generated selector and labels, which need
//!   the object's `uid` and so must run after the uid is assigned.
//!
//! Not done here: cluster IP and node port allocation, the service-account admission
//! plugin (token volume, `serviceAccountName: default`), the default-toleration-seconds
//! admission plugin, name generation, `metadata.generation`, and anything controllers
//! write into `status`.
//!
//! Every function leaves alone a field whose JSON type is not what the Kubernetes schema
//! expects: bad input is for validation to reject, never a reason to panic here.

use crate::registry::catalog::Phase;
use crate::registry::catalog::ResourceDef;
use apimachinery::quantity::{self, Quantity};
use serde_json::{json, Map, Value};

type Obj = Map<String, Value>;

/// Apply upstream defaults for `group`/`version`/`kind` ("" group = core) to `obj` in place.
///
/// This is what a create request gets: the scheme defaults of [`apply_scheme_defaults`]
/// plus the create-time additions of the registry strategies and always-on admission
/// plugins (see the module documentation). Kinds ending in `List` with an `items` array
/// have each item defaulted; the generic core `v1` `List` uses each item's own
/// `apiVersion` and `kind`. Unknown group/version/kind combinations and non-object
/// values are left untouched.
pub fn apply_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    apply(group, version, kind, obj, Phase::Create);
}

/// Apply only the defaults upstream applies every time an object is decoded.
///
/// Unlike [`apply_defaults`] this adds nothing that the registry strategies set only at
/// create time (namespace `kubernetes` finalizer, pod `status.phase`/`qosClass`, pod
/// priority, DaemonSet template-generation annotation, Service IP families, zero `status`
/// stanzas), so it is safe for updates, status writes and objects read back from storage.
pub fn apply_scheme_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    apply(group, version, kind, obj, Phase::Scheme);
}

/// Generate a `batch/v1` Job's selector and pod template labels, as the Job strategy does
/// at create time when `spec.manualSelector` is not `true`.
///
/// Adds `batch.kubernetes.io/job-name`, `job-name`, `batch.kubernetes.io/controller-uid` and
/// `controller-uid` to `spec.template.metadata.labels` (keeping any the user set), adds
/// `batch.kubernetes.io/controller-uid: <uid>` to `spec.selector.matchLabels`, then copies
/// the template labels to `metadata.labels` when the Job has none (upstream does this by
/// defaulting the object again when it is read back). Call it after [`apply_defaults`],
/// once `metadata.uid` is known.
pub fn generate_job_selector(obj: &mut Value, uid: &str) {
    let Some(o) = obj.as_object_mut() else { return };
    let name = o
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = child(o, "spec") else { return };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    {
        let Some(template) = child_or_insert(spec, "template") else {
            return;
        };
        let Some(meta) = child_or_insert(template, "metadata") else {
            return;
        };
        let Some(labels) = child_or_insert(meta, "labels") else {
            return;
        };
        for key in ["job-name", "batch.kubernetes.io/job-name"] {
            if !labels.contains_key(key) {
                labels.insert(key.into(), Value::String(name.clone()));
            }
        }
        for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
            if !labels.contains_key(key) {
                labels.insert(key.into(), Value::String(uid.to_string()));
            }
        }
    }
    if let Some(selector) = child_or_insert(spec, "selector") {
        if let Some(ml) = child_or_insert(selector, "matchLabels") {
            if !ml.contains_key("batch.kubernetes.io/controller-uid") {
                ml.insert(
                    "batch.kubernetes.io/controller-uid".into(),
                    Value::String(uid.to_string()),
                );
            }
        }
    }
    copy_template_labels_to_job(o);
}

/// The defaults of the kind as the central table knew them (being moved into the
/// kinds' registry files).
pub fn legacy(def: &ResourceDef, obj: &mut Value, phase: Phase) {
    match phase {
        Phase::Create => {
            apply_defaults(def.group, def.version, def.kind, obj);
            if def.kind == "Job" {
                let uid = obj
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                generate_job_selector(obj, &uid);
            }
        }
        Phase::Scheme => apply_scheme_defaults(def.group, def.version, def.kind, obj),
    }
}

fn apply(group: &str, version: &str, kind: &str, obj: &mut Value, phase: Phase) {
    let Some(o) = obj.as_object_mut() else { return };
    if group.is_empty() && version == "v1" && kind == "List" {
        if let Some(Value::Array(items)) = o.get_mut("items") {
            for item in items {
                let api_version = item
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let item_kind = item
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let (g, v) = match api_version.split_once('/') {
                    Some((g, v)) => (g.to_string(), v.to_string()),
                    None => (String::new(), api_version.clone()),
                };
                if !item_kind.is_empty() && item_kind != "List" {
                    apply(&g, &v, &item_kind, item, phase);
                }
            }
        }
        return;
    }
    if let Some(base) = kind.strip_suffix("List") {
        if !base.is_empty() {
            if let Some(Value::Array(items)) = o.get_mut("items") {
                for item in items {
                    apply(group, version, base, item, phase);
                }
            }
            return;
        }
    }
    match (group, version) {
        ("", "v1") => core_v1(kind, o, phase),
        ("apps", "v1") => apps_v1(kind, o, phase),
        ("batch", "v1") => batch_v1(kind, o, phase),
        ("autoscaling", "v1") if kind == "HorizontalPodAutoscaler" => hpa_v1(o, phase),
        ("autoscaling", "v2") if kind == "HorizontalPodAutoscaler" => hpa_v2(o, phase),
        ("policy", "v1") if kind == "PodDisruptionBudget" && phase.create() => {
            status_shape(
                o,
                &[
                    ("disruptionsAllowed", json!(0)),
                    ("currentHealthy", json!(0)),
                    ("desiredHealthy", json!(0)),
                    ("expectedPods", json!(0)),
                ],
            );
        }
        ("networking.k8s.io", "v1") => networking_v1(kind, o, phase),
        ("discovery.k8s.io", "v1") if kind == "EndpointSlice" => {
            each_obj(o, "ports", |p| {
                default_ptr(p, "name", json!(""));
                default_ptr(p, "protocol", json!("TCP"));
            });
        }
        ("rbac.authorization.k8s.io", "v1") => rbac_v1(kind, o),
        ("storage.k8s.io", "v1") => storage_v1(kind, o),
        ("scheduling.k8s.io", "v1") if kind == "PriorityClass" => {
            default_ptr(o, "preemptionPolicy", json!("PreemptLowerPriority"));
            default_ptr(o, "value", json!(0));
        }
        ("admissionregistration.k8s.io", "v1") => admissionregistration_v1(kind, o),
        ("apiextensions.k8s.io", "v1") if kind == "CustomResourceDefinition" => crd_v1(o),
        ("apiregistration.k8s.io", "v1") if kind == "APIService" => {
            if let Some(service) = child(o, "spec").and_then(|s| child(s, "service")) {
                default_ptr(service, "port", json!(443));
            }
        }
        ("flowcontrol.apiserver.k8s.io", "v1") => flowcontrol_v1(kind, o),
        ("resource.k8s.io", "v1") | ("resource.k8s.io", "v1beta2") => resource_v1(kind, o),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// JSON helpers. Every one tolerates missing keys and wrong types.
// ---------------------------------------------------------------------------------------

/// The object under `key`, if it is one.
fn child<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object under `key`, inserting `{}` when the key is missing or null. `None` when the
/// key holds some other JSON type.
fn child_or_insert<'a>(m: &'a mut Obj, key: &str) -> Option<&'a mut Obj> {
    if is_nil(m, key) {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    child(m, key)
}

/// Run `f` on every object element of the array under `key`.
fn each_obj(m: &mut Obj, key: &str, mut f: impl FnMut(&mut Obj)) {
    if let Some(Value::Array(items)) = m.get_mut(key) {
        for item in items {
            if let Value::Object(o) = item {
                f(o);
            }
        }
    }
}

/// Missing or null: a nil Go pointer, slice or map.
fn is_nil(m: &Obj, key: &str) -> bool {
    matches!(m.get(key), None | Some(Value::Null))
}

/// Missing, null or `""`: an empty Go string.
fn is_empty_str(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// Missing, null or numerically zero: a zero Go integer.
fn is_zero_num(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Missing, null, `[]` or `{}`: `len(x) == 0` for a Go slice or map.
fn is_empty_coll(m: &Obj, key: &str) -> bool {
    match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        _ => false,
    }
}

/// Default a pointer-typed field: set when missing or null.
fn default_ptr(m: &mut Obj, key: &str, v: Value) {
    if is_nil(m, key) {
        m.insert(key.to_string(), v);
    }
}

/// Default a string field: set when missing, null or empty.
fn default_str(m: &mut Obj, key: &str, v: &str) {
    if is_empty_str(m, key) {
        m.insert(key.to_string(), Value::String(v.to_string()));
    }
}

/// Default an integer field whose zero value means "unset".
fn default_nonzero(m: &mut Obj, key: &str, v: i64) {
    if is_zero_num(m, key) {
        m.insert(key.to_string(), json!(v));
    }
}

/// The string under `key`, or `""`.
fn str_at<'a>(m: &'a Obj, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Fill a zero-valued `status` stanza at create time: `status` becomes an object if it is
/// missing or null, and each listed field is added when missing.
fn status_shape(o: &mut Obj, fields: &[(&str, Value)]) {
    if let Some(status) = child_or_insert(o, "status") {
        for (k, v) in fields {
            if !status.contains_key(*k) {
                status.insert((*k).to_string(), v.clone());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// core/v1
// ---------------------------------------------------------------------------------------

fn core_v1(kind: &str, o: &mut Obj, phase: Phase) {
    match kind {
        "Pod" => pod(o, phase),
        "PodTemplate" => {
            if let Some(t) = child(o, "template") {
                pod_template(t);
            }
        }
        "ReplicationController" => replication_controller(o, phase),
        "Service" => service(o, phase),
        "Namespace" => namespace(o, phase),
        "Secret" => default_str(o, "type", "Opaque"),
        "Endpoints" => {
            each_obj(o, "subsets", |ss| {
                each_obj(ss, "ports", |p| default_str(p, "protocol", "TCP"));
            });
        }
        "Node" => {
            if let Some(status) = child(o, "status") {
                if is_nil(status, "allocatable") {
                    if let Some(cap @ Value::Object(_)) = status.get("capacity") {
                        let cap = cap.clone();
                        status.insert("allocatable".into(), cap);
                    }
                }
                resource_list(status, "capacity", true);
                resource_list(status, "allocatable", true);
            }
        }
        "PersistentVolume" => persistent_volume(o),
        "PersistentVolumeClaim" => {
            if let Some(spec) = child(o, "spec") {
                pvc_spec(spec);
            }
            if let Some(status) = child_or_insert(o, "status") {
                default_str(status, "phase", "Pending");
                resource_list(status, "capacity", true);
                resource_list(status, "allocatedResources", true);
            }
        }
        "LimitRange" => {
            if let Some(spec) = child(o, "spec") {
                each_obj(spec, "limits", limit_range_item);
            }
        }
        "ResourceQuota" => {
            if let Some(spec) = child(o, "spec") {
                resource_list(spec, "hard", true);
            }
            if let Some(status) = child(o, "status") {
                resource_list(status, "hard", true);
                resource_list(status, "used", true);
            }
            if phase.create() {
                status_shape(o, &[]);
            }
        }
        _ => {}
    }
}

fn namespace(o: &mut Obj, phase: Phase) {
    let name = o
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty() {
        if let Some(meta) = child_or_insert(o, "metadata") {
            if let Some(labels) = child_or_insert(meta, "labels") {
                labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
            }
        }
    }
    if phase.create() {
        if let Some(spec) = child_or_insert(o, "spec") {
            match spec.get_mut("finalizers") {
                None | Some(Value::Null) => {
                    spec.insert("finalizers".into(), json!(["kubernetes"]));
                }
                Some(Value::Array(f)) if !f.iter().any(|v| v.as_str() == Some("kubernetes")) => {
                    f.push(json!("kubernetes"));
                }
                _ => {}
            }
        }
    }
    if let Some(status) = child_or_insert(o, "status") {
        default_str(status, "phase", "Active");
    }
}

fn replication_controller(o: &mut Obj, phase: Phase) {
    let template_labels = o
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(labels) = template_labels {
        let labels_empty = labels.as_object().is_some_and(Map::is_empty);
        if let Some(spec) = child(o, "spec") {
            if is_empty_coll(spec, "selector") && !labels_empty {
                spec.insert("selector".into(), labels.clone());
            }
        }
        if !labels_empty {
            if let Some(meta) = child_or_insert(o, "metadata") {
                if is_empty_coll(meta, "labels") {
                    meta.insert("labels".into(), labels);
                }
            }
        }
    }
    if let Some(spec) = child(o, "spec") {
        default_ptr(spec, "replicas", json!(1));
        if let Some(t) = child(spec, "template") {
            pod_template(t);
        }
    }
    if phase.create() {
        status_shape(o, &[("replicas", json!(0))]);
    }
}

fn service(o: &mut Obj, phase: Phase) {
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
    let ip_family_types = matches!(svc_type.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer");
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
fn service_ip_families(spec: &mut Obj) {
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

fn persistent_volume(o: &mut Obj) {
    if let Some(spec) = child(o, "spec") {
        default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
        default_ptr(spec, "volumeMode", json!("Filesystem"));
        resource_list(spec, "capacity", true);
        volume_sources(spec);
    }
    if let Some(status) = child_or_insert(o, "status") {
        default_str(status, "phase", "Pending");
    }
}

fn pvc_spec(spec: &mut Obj) {
    default_ptr(spec, "volumeMode", json!("Filesystem"));
    if let Some(res) = child_or_insert(spec, "resources") {
        resource_list(res, "limits", true);
        resource_list(res, "requests", true);
    }
}

fn limit_range_item(item: &mut Obj) {
    if str_at(item, "type") == "Container" {
        let max = item.get("max").and_then(Value::as_object).cloned();
        let min = item.get("min").and_then(Value::as_object).cloned();
        let mut default = match item.get("default") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(d)) => d.clone(),
            Some(_) => return,
        };
        let mut default_request = match item.get("defaultRequest") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(d)) => d.clone(),
            Some(_) => return,
        };
        for (k, v) in max.iter().flatten() {
            if !default.contains_key(k) {
                default.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in &default {
            if !default_request.contains_key(k) {
                default_request.insert(k.clone(), v.clone());
            }
        }
        for (k, v) in min.iter().flatten() {
            if !default_request.contains_key(k) {
                default_request.insert(k.clone(), v.clone());
            }
        }
        if !default.is_empty() {
            item.insert("default".into(), Value::Object(default));
        }
        if !default_request.is_empty() {
            item.insert("defaultRequest".into(), Value::Object(default_request));
        }
    }
    for key in [
        "max",
        "min",
        "default",
        "defaultRequest",
        "maxLimitRequestRatio",
    ] {
        resource_list(item, key, true);
    }
}

// ---------------------------------------------------------------------------------------
// Pods, pod templates, containers, volumes
// ---------------------------------------------------------------------------------------

fn pod(o: &mut Obj, phase: Phase) {
    if let Some(spec) = child(o, "spec") {
        pod_only_defaults(spec);
        pod_spec(spec);
        if phase.create() {
            pod_priority(spec);
        }
    }
    if phase.create() {
        let qos = o.get("spec").and_then(Value::as_object).map(pod_qos);
        if let Some(status) = child_or_insert(o, "status") {
            default_str(status, "phase", "Pending");
            if let Some(qos) = qos {
                default_str(status, "qosClass", qos);
            }
        }
    }
}

fn pod_template(t: &mut Obj) {
    child_or_insert(t, "metadata");
    if let Some(spec) = child(t, "spec") {
        pod_spec(spec);
    }
}

/// `SetDefaults_Pod`: what a Pod gets but a pod template does not.
fn pod_only_defaults(spec: &mut Obj) {
    for key in ["containers", "initContainers"] {
        each_obj(spec, key, |c| {
            let Some(res) = child(c, "resources") else {
                return;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                return;
            };
            let Some(requests) = child_or_insert(res, "requests") else {
                return;
            };
            for (k, v) in limits {
                if !requests.contains_key(&k) {
                    requests.insert(k, v);
                }
            }
            if requests.is_empty() {
                res.remove("requests");
            }
        });
    }
    pod_level_resources(spec);
    default_ptr(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        for key in ["containers", "initContainers"] {
            each_obj(spec, key, |c| {
                each_obj(c, "ports", |p| {
                    if is_zero_num(p, "hostPort") {
                        if let Some(cp @ Value::Number(_)) = p.get("containerPort") {
                            let cp = cp.clone();
                            p.insert("hostPort".into(), cp);
                        }
                    }
                });
            });
        }
    }
}

/// What the always-on `Priority` admission plugin sets on a new Pod, for the case where no
/// custom global-default PriorityClass exists.
fn pod_priority(spec: &mut Obj) {
    if !is_nil(spec, "priority") {
        return;
    }
    let value = match str_at(spec, "priorityClassName") {
        "" => 0,
        "system-node-critical" => 2_000_001_000,
        "system-cluster-critical" => 2_000_000_000,
        _ => return,
    };
    spec.insert("priority".into(), json!(value));
    default_ptr(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// `SetDefaults_PodSpec` and the generated nested defaulters for everything in a PodSpec.
fn pod_spec(spec: &mut Obj) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_ptr(spec, "securityContext", json!({}));
    default_ptr(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    // v1 conversion: `serviceAccount` is a deprecated alias of `serviceAccountName`.
    let sa_name = str_at(spec, "serviceAccountName").to_string();
    let sa_old = str_at(spec, "serviceAccount").to_string();
    let sa = if sa_name.is_empty() { sa_old } else { sa_name };
    if !sa.is_empty()
        && matches!(
            spec.get("serviceAccountName"),
            None | Some(Value::Null | Value::String(_))
        )
        && matches!(
            spec.get("serviceAccount"),
            None | Some(Value::Null | Value::String(_))
        )
    {
        spec.insert("serviceAccountName".into(), json!(sa));
        spec.insert("serviceAccount".into(), json!(sa));
    }
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        each_obj(spec, key, container);
    }
    each_obj(spec, "volumes", volume);
    resource_list(spec, "overhead", true);
    if let Some(res) = child(spec, "resources") {
        resource_list(res, "limits", true);
        resource_list(res, "requests", true);
    }
}

fn container(c: &mut Obj) {
    if is_empty_str(c, "imagePullPolicy") {
        let policy = pull_policy_for(str_at(c, "image"));
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    each_obj(c, "ports", |p| default_str(p, "protocol", "TCP"));
    each_obj(c, "env", |e| {
        if let Some(vf) = child(e, "valueFrom") {
            if let Some(fr) = child(vf, "fieldRef") {
                default_str(fr, "apiVersion", "v1");
            }
            if let Some(fk) = child(vf, "fileKeyRef") {
                default_ptr(fk, "optional", json!(false));
            }
        }
    });
    if let Some(res) = child_or_insert(c, "resources") {
        resource_list(res, "limits", true);
        resource_list(res, "requests", true);
    }
    for probe_key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, probe_key) {
            probe(p);
        }
    }
    if let Some(lc) = child(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = child(lc, hook).and_then(|h| child(h, "httpGet")) {
                http_get(h);
            }
        }
    }
}

fn probe(p: &mut Obj) {
    default_nonzero(p, "timeoutSeconds", 1);
    default_nonzero(p, "periodSeconds", 10);
    default_nonzero(p, "successThreshold", 1);
    default_nonzero(p, "failureThreshold", 3);
    if let Some(h) = child(p, "httpGet") {
        http_get(h);
    }
    if let Some(g) = child(p, "grpc") {
        default_ptr(g, "service", json!(""));
    }
}

fn http_get(h: &mut Obj) {
    default_str(h, "path", "/");
    default_str(h, "scheme", "HTTP");
}

/// Every volume source key a `Volume` can carry.
const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn volume(v: &mut Obj) {
    if VOLUME_SOURCES.iter().all(|k| is_nil(v, k)) {
        v.insert("emptyDir".into(), json!({}));
    }
    volume_sources(v);
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = child(v, key) {
            default_ptr(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = child(v, "downwardAPI") {
        each_obj(d, "items", downward_api_item);
    }
    if let Some(p) = child(v, "projected") {
        each_obj(p, "sources", |s| {
            if let Some(d) = child(s, "downwardAPI") {
                each_obj(d, "items", downward_api_item);
            }
            if let Some(t) = child(s, "serviceAccountToken") {
                default_ptr(t, "expirationSeconds", json!(3600));
            }
        });
    }
    if let Some(e) = child(v, "emptyDir") {
        canonical_quantity_at(e, "sizeLimit", false);
    }
    if let Some(t) = child(v, "ephemeral").and_then(|e| child(e, "volumeClaimTemplate")) {
        child_or_insert(t, "metadata");
        if let Some(spec) = child(t, "spec") {
            pvc_spec(spec);
        }
    }
    if let Some(img) = child(v, "image") {
        if is_empty_str(img, "pullPolicy") {
            let policy = pull_policy_for(str_at(img, "reference"));
            img.insert("pullPolicy".into(), json!(policy));
        }
    }
}

/// Defaults shared by pod volume sources and persistent volume sources.
fn volume_sources(v: &mut Obj) {
    if let Some(h) = child(v, "hostPath") {
        default_ptr(h, "type", json!(""));
    }
    if let Some(i) = child(v, "iscsi") {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = child(v, "rbd") {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(a) = child(v, "azureDisk") {
        default_ptr(a, "cachingMode", json!("ReadWrite"));
        default_ptr(a, "kind", json!("Shared"));
        default_ptr(a, "fsType", json!("ext4"));
        default_ptr(a, "readOnly", json!(false));
    }
    if let Some(s) = child(v, "scaleIO") {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

fn downward_api_item(item: &mut Obj) {
    if let Some(fr) = child(item, "fieldRef") {
        default_str(fr, "apiVersion", "v1");
    }
}

/// `Always` when the image reference names the `latest` tag (explicitly, or implicitly by
/// having neither tag nor digest), `IfNotPresent` otherwise, including for references
/// that do not parse.
fn pull_policy_for(image: &str) -> &'static str {
    match image_tag(image) {
        Some(Some("latest")) => "Always",
        _ => "IfNotPresent",
    }
}

/// The tag a container image reference resolves to: `None` if the reference is invalid,
/// `Some(None)` if it only has a digest, `Some(Some("latest"))` if it has neither.
fn image_tag(image: &str) -> Option<Option<&str>> {
    if image.is_empty() || !image.is_ascii() || image.chars().any(|c| c.is_whitespace()) {
        return None;
    }
    let (name_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let (alg, hex) = d.split_once(':')?;
        let alg_ok = !alg.is_empty()
            && alg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-_".contains(c));
        if !alg_ok || hex.len() < 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
    }
    let last_slash = name_tag.rfind('/');
    let (name, tag) = match name_tag.rfind(':') {
        Some(i) if last_slash.is_none_or(|s| i > s) => (&name_tag[..i], Some(&name_tag[i + 1..])),
        _ => (name_tag, None),
    };
    if let Some(t) = tag {
        let first_ok = t
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let rest_ok = t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !first_ok || !rest_ok || t.len() > 128 {
            return None;
        }
    }
    if !valid_repository(name) {
        return None;
    }
    Some(match (tag, digest) {
        (Some(t), _) => Some(t),
        (None, Some(_)) => None,
        (None, None) => Some("latest"),
    })
}

/// Loose check of the distribution reference grammar for `[domain/]path`.
fn valid_repository(name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    if name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    if parts.len() > 1 {
        let first = parts[0];
        let is_domain = first.contains('.')
            || first.contains(':')
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase());
        if is_domain {
            let ok = !first.is_empty()
                && first
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
            if !ok {
                return false;
            }
            parts.remove(0);
        }
    }
    parts.iter().all(|p| {
        let b = p.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_lowercase() | b[0].is_ascii_digit()
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"._-".contains(c))
    })
}

// ---------------------------------------------------------------------------------------
// Pod-level resources and QoS
// ---------------------------------------------------------------------------------------

fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn pod_level_supported(name: &str) -> bool {
    name == "cpu" || name == "memory" || is_hugepages(name)
}

/// Resource names that are native (no domain, or a `kubernetes.io` domain).
fn overcommit_allowed(name: &str) -> bool {
    let native = match name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    };
    native && !is_hugepages(name)
}

/// Quantity map keyed by resource name, keeping first-seen key order.
type QList = Vec<(String, Quantity)>;

fn qlist_get<'a>(l: &'a QList, name: &str) -> Option<&'a Quantity> {
    l.iter().find(|(k, _)| k == name).map(|(_, q)| q)
}

fn qlist_add(l: &mut QList, name: &str, q: Quantity) {
    match l.iter_mut().find(|(k, _)| k == name) {
        Some((_, cur)) => *cur = *cur + q,
        None => l.push((name.to_string(), q)),
    }
}

fn qlist_max(l: &mut QList, other: &QList) {
    for (name, q) in other {
        match l.iter_mut().find(|(k, _)| k == name) {
            Some((_, cur)) => {
                if q.nanos() > cur.nanos() {
                    *cur = *q;
                }
            }
            None => l.push((name.clone(), *q)),
        }
    }
}

/// Parse a resource list (`{name: quantity}`) into quantities, skipping bad entries.
fn qlist_of(v: Option<&Value>) -> QList {
    let mut out = QList::new();
    if let Some(Value::Object(m)) = v {
        for (k, q) in m {
            if let Some(q) = quantity::from_json(q) {
                out.push((k.clone(), q));
            }
        }
    }
    out
}

fn container_list(c: &Value, which: &str) -> QList {
    qlist_of(c.get("resources").and_then(|r| r.get(which)))
}

fn containers<'a>(spec: &'a Obj, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Requests or limits of all containers, following the sidecar formula of upstream's
/// `AggregateContainerRequests`/`AggregateContainerLimits`.
fn aggregate_containers(spec: &Obj, which: &str) -> QList {
    let mut total = QList::new();
    for c in containers(spec, "containers") {
        for (k, q) in container_list(c, which) {
            qlist_add(&mut total, &k, q);
        }
    }
    let mut sidecars = QList::new();
    let mut init_max = QList::new();
    for c in containers(spec, "initContainers") {
        let own = container_list(c, which);
        let is_sidecar = c.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        let usage = if is_sidecar {
            for (k, q) in &own {
                qlist_add(&mut total, k, *q);
                qlist_add(&mut sidecars, k, *q);
            }
            sidecars.clone()
        } else {
            let mut tmp = own;
            for (k, q) in &sidecars {
                qlist_add(&mut tmp, k, *q);
            }
            tmp
        };
        qlist_max(&mut init_max, &usage);
    }
    qlist_max(&mut total, &init_max);
    total
}

fn has_supported_key(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object)
        .is_some_and(|m| m.keys().any(|k| pod_level_supported(k)))
}

fn all_containers_have_limit(spec: &Obj, name: &str) -> bool {
    ["initContainers", "containers"].iter().all(|key| {
        containers(spec, key).iter().all(|c| {
            c.get("resources")
                .and_then(|r| r.get("limits"))
                .and_then(|l| l.get(name))
                .is_some()
        })
    })
}

/// Pod-level `spec.resources` defaults (`PodLevelResources`, on by default): hugepage
/// limits, then requests, then limits, each derived from the containers.
fn pod_level_resources(spec: &mut Obj) {
    if !matches!(spec.get("resources"), Some(Value::Object(_))) {
        return;
    }
    let agg_limits = aggregate_containers(spec, "limits");
    let agg_requests = aggregate_containers(spec, "requests");
    let all_have: Vec<(String, bool)> = agg_limits
        .iter()
        .map(|(k, _)| (k.clone(), all_containers_have_limit(spec, k)))
        .collect();
    let Some(res) = child(spec, "resources") else {
        return;
    };
    let limits_ok = matches!(
        res.get("limits"),
        None | Some(Value::Null | Value::Object(_))
    );
    let requests_ok = matches!(
        res.get("requests"),
        None | Some(Value::Null | Value::Object(_))
    );
    if !limits_ok || !requests_ok {
        return;
    }

    // Hugepage limits from the containers' limits.
    if !is_empty_coll(res, "limits") || !is_empty_coll(res, "requests") {
        let requests = res.get("requests").and_then(Value::as_object).cloned();
        let mut limits = res
            .get("limits")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, q) in &agg_limits {
            if !is_hugepages(k) || requests.as_ref().is_some_and(|r| r.contains_key(k)) {
                continue;
            }
            if !limits.contains_key(k) {
                limits.insert(k.clone(), json!(q.canonical()));
            }
        }
        if !limits.is_empty() {
            res.insert("limits".into(), Value::Object(limits));
        }
    }

    // Requests from the containers' requests, then from the pod-level limits.
    if !is_empty_coll(res, "limits") {
        let pod_limits = res
            .get("limits")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut requests = res
            .get("requests")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, q) in &agg_requests {
            if !requests.contains_key(k) && pod_level_supported(k) && overcommit_allowed(k) {
                requests.insert(k.clone(), json!(q.canonical()));
            }
        }
        for (k, v) in &pod_limits {
            if !requests.contains_key(k) && pod_level_supported(k) {
                requests.insert(k.clone(), v.clone());
            }
        }
        if !requests.is_empty() {
            res.insert("requests".into(), Value::Object(requests));
        }
    }

    // Limits from the containers' limits, when every container sets one.
    if !has_supported_key(res.get("limits")) && has_supported_key(res.get("requests")) {
        let mut limits = res
            .get("limits")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, q) in &agg_limits {
            let all = all_have.iter().any(|(n, a)| n == k && *a);
            if limits.contains_key(k) || !pod_level_supported(k) || !overcommit_allowed(k) || !all {
                continue;
            }
            limits.insert(k.clone(), json!(q.canonical()));
        }
        if !limits.is_empty() {
            res.insert("limits".into(), Value::Object(limits));
        }
    }
}

/// The QoS class the Pod strategy records in `status.qosClass`.
fn pod_qos(spec: &Obj) -> &'static str {
    fn qos_resource(name: &str) -> bool {
        name == "cpu" || name == "memory"
    }
    let mut requests = QList::new();
    let mut limits = QList::new();
    let mut guaranteed = true;
    let pod_level = spec
        .get("resources")
        .filter(|r| has_supported_key(r.get("requests")) || has_supported_key(r.get("limits")));
    if let Some(res) = pod_level {
        for (k, q) in qlist_of(res.get("requests")) {
            if qos_resource(&k) && q.nanos() > 0 {
                requests.push((k, q));
            }
        }
        let pod_limits = qlist_of(res.get("limits"));
        if pod_limits.is_empty() {
            guaranteed = false;
        } else {
            for (k, q) in pod_limits {
                if qos_resource(&k) && q.nanos() > 0 {
                    limits.push((k, q));
                }
            }
            if qlist_get(&limits, "cpu").is_none() || qlist_get(&limits, "memory").is_none() {
                guaranteed = false;
            }
        }
    } else {
        for key in ["containers", "initContainers"] {
            for c in containers(spec, key) {
                for (k, q) in container_list(c, "requests") {
                    if qos_resource(&k) && q.nanos() > 0 {
                        qlist_add(&mut requests, &k, q);
                    }
                }
                let mut found = QList::new();
                for (k, q) in container_list(c, "limits") {
                    if qos_resource(&k) && q.nanos() > 0 {
                        found.push((k.clone(), q));
                        qlist_add(&mut limits, &k, q);
                    }
                }
                if qlist_get(&found, "cpu").is_none() || qlist_get(&found, "memory").is_none() {
                    guaranteed = false;
                }
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        for (k, req) in &requests {
            if qlist_get(&limits, k).is_none_or(|l| l.nanos() != req.nanos()) {
                guaranteed = false;
                break;
            }
        }
    }
    if guaranteed && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

// ---------------------------------------------------------------------------------------
// Resource quantities
// ---------------------------------------------------------------------------------------

/// Rewrite a resource list (`{name: quantity}`) under `key` in canonical form, rounding up
/// to milli precision first when `round` is set (`SetDefaults_ResourceList`). Entries that
/// do not parse are left for validation to reject.
fn resource_list(m: &mut Obj, key: &str, round: bool) {
    if let Some(list) = child(m, key) {
        for (_, v) in list.iter_mut() {
            if let Some(q) = quantity::from_json(v) {
                let q = if round { q.round_up_milli() } else { q };
                *v = Value::String(q.canonical());
            }
        }
    }
}

/// Rewrite the single quantity under `key` in canonical form.
fn canonical_quantity_at(m: &mut Obj, key: &str, round: bool) {
    if let Some(v) = m.get_mut(key) {
        if let Some(q) = quantity::from_json(v) {
            let q = if round { q.round_up_milli() } else { q };
            *v = Value::String(q.canonical());
        }
    }
}

// ---------------------------------------------------------------------------------------
// apps/v1
// ---------------------------------------------------------------------------------------

fn apps_v1(kind: &str, o: &mut Obj, phase: Phase) {
    match kind {
        "Deployment" => {
            if let Some(spec) = child(o, "spec") {
                default_ptr(spec, "replicas", json!(1));
                if let Some(strategy) = child_or_insert(spec, "strategy") {
                    default_str(strategy, "type", "RollingUpdate");
                    if str_at(strategy, "type") == "RollingUpdate" {
                        if let Some(ru) = child_or_insert(strategy, "rollingUpdate") {
                            default_ptr(ru, "maxUnavailable", json!("25%"));
                            default_ptr(ru, "maxSurge", json!("25%"));
                        }
                    }
                }
                default_ptr(spec, "revisionHistoryLimit", json!(10));
                default_ptr(spec, "progressDeadlineSeconds", json!(600));
                if let Some(t) = child(spec, "template") {
                    pod_template(t);
                }
            }
            if phase.create() {
                status_shape(o, &[]);
            }
        }
        "ReplicaSet" => {
            if let Some(spec) = child(o, "spec") {
                default_ptr(spec, "replicas", json!(1));
                if let Some(t) = child(spec, "template") {
                    pod_template(t);
                }
            }
            if phase.create() {
                status_shape(o, &[("replicas", json!(0))]);
            }
        }
        "StatefulSet" => {
            if let Some(spec) = child(o, "spec") {
                stateful_set_spec(spec);
            }
            if phase.create() {
                status_shape(
                    o,
                    &[("replicas", json!(0)), ("availableReplicas", json!(0))],
                );
            }
        }
        "DaemonSet" => {
            if let Some(spec) = child(o, "spec") {
                if let Some(us) = child_or_insert(spec, "updateStrategy") {
                    default_str(us, "type", "RollingUpdate");
                    if str_at(us, "type") == "RollingUpdate" {
                        if let Some(ru) = child_or_insert(us, "rollingUpdate") {
                            default_ptr(ru, "maxUnavailable", json!(1));
                            default_ptr(ru, "maxSurge", json!(0));
                        }
                    }
                }
                default_ptr(spec, "revisionHistoryLimit", json!(10));
                if let Some(t) = child(spec, "template") {
                    pod_template(t);
                }
            }
            if phase.create() {
                if let Some(meta) = child_or_insert(o, "metadata") {
                    if let Some(ann) = child_or_insert(meta, "annotations") {
                        if !ann.contains_key("deprecated.daemonset.template.generation") {
                            ann.insert(
                                "deprecated.daemonset.template.generation".into(),
                                json!("1"),
                            );
                        }
                    }
                }
                status_shape(
                    o,
                    &[
                        ("currentNumberScheduled", json!(0)),
                        ("numberMisscheduled", json!(0)),
                        ("desiredNumberScheduled", json!(0)),
                        ("numberReady", json!(0)),
                    ],
                );
            }
        }
        _ => {}
    }
}

fn stateful_set_spec(spec: &mut Obj) {
    default_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = child_or_insert(spec, "updateStrategy") {
        if is_empty_str(us, "type") {
            us.insert("type".into(), json!("RollingUpdate"));
            default_ptr(us, "rollingUpdate", json!({}));
        }
        if str_at(us, "type") == "RollingUpdate" {
            if let Some(ru) = child(us, "rollingUpdate") {
                default_ptr(ru, "partition", json!(0));
            }
        }
    }
    if let Some(p) = child_or_insert(spec, "persistentVolumeClaimRetentionPolicy") {
        default_str(p, "whenDeleted", "Retain");
        default_str(p, "whenScaled", "Retain");
    }
    default_ptr(spec, "replicas", json!(1));
    default_ptr(spec, "revisionHistoryLimit", json!(10));
    if let Some(t) = child(spec, "template") {
        pod_template(t);
    }
    each_obj(spec, "volumeClaimTemplates", |pvc| {
        pvc.insert("apiVersion".into(), json!("v1"));
        pvc.insert("kind".into(), json!("PersistentVolumeClaim"));
        child_or_insert(pvc, "metadata");
        if let Some(s) = child(pvc, "spec") {
            pvc_spec(s);
        }
        if let Some(status) = child_or_insert(pvc, "status") {
            default_str(status, "phase", "Pending");
        }
    });
}

// ---------------------------------------------------------------------------------------
// batch/v1
// ---------------------------------------------------------------------------------------

fn batch_v1(kind: &str, o: &mut Obj, phase: Phase) {
    match kind {
        "Job" => {
            if let Some(spec) = child(o, "spec") {
                job_spec_defaults(spec);
            }
            copy_template_labels_to_job(o);
            if phase.create() {
                status_shape(o, &[]);
            }
        }
        "CronJob" => {
            if let Some(spec) = child(o, "spec") {
                default_str(spec, "concurrencyPolicy", "Allow");
                default_ptr(spec, "suspend", json!(false));
                default_ptr(spec, "successfulJobsHistoryLimit", json!(3));
                default_ptr(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(jt) = child_or_insert(spec, "jobTemplate") {
                    child_or_insert(jt, "metadata");
                    if let Some(js) = child(jt, "spec") {
                        job_spec_nested(js);
                    }
                }
            }
            if phase.create() {
                status_shape(o, &[]);
            }
        }
        _ => {}
    }
}

/// Type-level defaults inside a JobSpec (shared by Job and CronJob's job template).
fn job_spec_nested(spec: &mut Obj) {
    if let Some(pfp) = child(spec, "podFailurePolicy") {
        each_obj(pfp, "rules", |rule| {
            each_obj(rule, "onPodConditions", |c| {
                default_str(c, "status", "True")
            });
        });
    }
    if let Some(t) = child_or_insert(spec, "template") {
        pod_template(t);
    }
}

/// `SetDefaults_Job` for the spec.
fn job_spec_defaults(spec: &mut Obj) {
    if is_nil(spec, "completions") && is_nil(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    default_ptr(spec, "parallelism", json!(1));
    if is_nil(spec, "backoffLimit") {
        let limit = if is_nil(spec, "backoffLimitPerIndex") {
            6
        } else {
            i64::from(i32::MAX)
        };
        spec.insert("backoffLimit".into(), json!(limit));
    }
    default_ptr(spec, "completionMode", json!("NonIndexed"));
    default_ptr(spec, "suspend", json!(false));
    let replacement = if is_nil(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    default_ptr(spec, "podReplacementPolicy", json!(replacement));
    default_ptr(spec, "manualSelector", json!(false));
    job_spec_nested(spec);
}

/// A Job without labels takes its pod template's labels.
fn copy_template_labels_to_job(o: &mut Obj) {
    let labels = o
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
        .cloned();
    if let Some(labels) = labels {
        if let Some(meta) = child_or_insert(o, "metadata") {
            if is_empty_coll(meta, "labels") {
                meta.insert("labels".into(), Value::Object(labels));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// autoscaling
// ---------------------------------------------------------------------------------------

fn hpa_v1(o: &mut Obj, phase: Phase) {
    let has_metrics_annotation = o
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get("autoscaling.alpha.kubernetes.io/metrics"))
        .is_some();
    if let Some(spec) = child(o, "spec") {
        default_ptr(spec, "minReplicas", json!(1));
        // Applied while converting to the stored autoscaling/v2 form and back.
        if !has_metrics_annotation {
            default_ptr(spec, "targetCPUUtilizationPercentage", json!(80));
        }
    }
    if phase.create() {
        status_shape(
            o,
            &[("currentReplicas", json!(0)), ("desiredReplicas", json!(0))],
        );
    }
}

fn hpa_v2(o: &mut Obj, phase: Phase) {
    if let Some(spec) = child(o, "spec") {
        default_ptr(spec, "minReplicas", json!(1));
        if is_empty_coll(spec, "metrics") {
            spec.insert(
                "metrics".into(),
                json!([{
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 80}
                    }
                }]),
            );
        }
        if let Some(behavior) = child(spec, "behavior") {
            let up = json!({
                "stabilizationWindowSeconds": 0,
                "selectPolicy": "Max",
                "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}
                ]
            });
            let down = json!({
                "selectPolicy": "Max",
                "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
            });
            scaling_rules(behavior, "scaleUp", up);
            scaling_rules(behavior, "scaleDown", down);
        }
        each_obj(spec, "metrics", |m| {
            for src in [
                "object",
                "pods",
                "resource",
                "containerResource",
                "external",
            ] {
                if let Some(t) = child(m, src).and_then(|s| child(s, "target")) {
                    canonical_quantity_at(t, "value", false);
                    canonical_quantity_at(t, "averageValue", false);
                }
            }
        });
    }
    if phase.create() {
        status_shape(o, &[("desiredReplicas", json!(0))]);
    }
}

/// Fill unset fields of one HPA scaling-rules stanza from `defaults`.
fn scaling_rules(behavior: &mut Obj, key: &str, defaults: Value) {
    let Value::Object(mut rules) = defaults else {
        return;
    };
    match behavior.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::Object(given)) => {
            for field in [
                "selectPolicy",
                "stabilizationWindowSeconds",
                "policies",
                "tolerance",
            ] {
                if let Some(v) = given.get(field).filter(|v| !v.is_null()) {
                    rules.insert(field.into(), v.clone());
                }
            }
        }
        Some(_) => return,
    }
    behavior.insert(key.into(), Value::Object(rules));
}

// ---------------------------------------------------------------------------------------
// Other groups
// ---------------------------------------------------------------------------------------

fn networking_v1(kind: &str, o: &mut Obj, phase: Phase) {
    match kind {
        "NetworkPolicy" => {
            let Some(spec) = child(o, "spec") else { return };
            child_or_insert(spec, "podSelector");
            for dir in ["ingress", "egress"] {
                each_obj(spec, dir, |rule| {
                    each_obj(rule, "ports", |p| default_ptr(p, "protocol", json!("TCP")));
                });
            }
            if is_empty_coll(spec, "policyTypes") {
                let mut types = vec![json!("Ingress")];
                if !is_empty_coll(spec, "egress") {
                    types.push(json!("Egress"));
                }
                spec.insert("policyTypes".into(), Value::Array(types));
            }
        }
        "IngressClass" => {
            if let Some(p) = child(o, "spec").and_then(|s| child(s, "parameters")) {
                default_ptr(p, "scope", json!("Cluster"));
            }
        }
        "Ingress" if phase.create() => {
            status_shape(o, &[("loadBalancer", json!({}))]);
        }
        _ => {}
    }
}

fn rbac_v1(kind: &str, o: &mut Obj) {
    if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
        return;
    }
    if let Some(rr) = child(o, "roleRef") {
        default_str(rr, "apiGroup", "rbac.authorization.k8s.io");
    }
    each_obj(o, "subjects", |s| {
        if is_empty_str(s, "apiGroup") {
            match str_at(s, "kind") {
                "ServiceAccount" => {
                    s.insert("apiGroup".into(), json!(""));
                }
                "User" | "Group" => {
                    s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
                _ => {}
            }
        }
    });
}

fn storage_v1(kind: &str, o: &mut Obj) {
    match kind {
        "StorageClass" => {
            default_ptr(o, "reclaimPolicy", json!("Delete"));
            default_ptr(o, "volumeBindingMode", json!("Immediate"));
        }
        "CSIDriver" => {
            if let Some(spec) = child_or_insert(o, "spec") {
                default_ptr(spec, "attachRequired", json!(true));
                default_ptr(spec, "podInfoOnMount", json!(false));
                default_ptr(spec, "storageCapacity", json!(false));
                default_ptr(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
                if is_empty_coll(spec, "volumeLifecycleModes") {
                    spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
                }
                default_ptr(spec, "requiresRepublish", json!(false));
                default_ptr(spec, "seLinuxMount", json!(false));
            }
        }
        _ => {}
    }
}

fn admissionregistration_v1(kind: &str, o: &mut Obj) {
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            let mutating = kind == "MutatingWebhookConfiguration";
            each_obj(o, "webhooks", |w| {
                default_ptr(w, "failurePolicy", json!("Fail"));
                default_ptr(w, "matchPolicy", json!("Equivalent"));
                default_ptr(w, "namespaceSelector", json!({}));
                default_ptr(w, "objectSelector", json!({}));
                default_ptr(w, "timeoutSeconds", json!(10));
                if mutating {
                    default_ptr(w, "reinvocationPolicy", json!("Never"));
                }
                each_obj(w, "rules", |r| default_ptr(r, "scope", json!("*")));
                if let Some(svc) = child(w, "clientConfig").and_then(|c| child(c, "service")) {
                    default_ptr(svc, "port", json!(443));
                }
            });
        }
        "ValidatingAdmissionPolicy" => {
            if let Some(spec) = child(o, "spec") {
                default_ptr(spec, "failurePolicy", json!("Fail"));
                if let Some(mc) = child(spec, "matchConstraints") {
                    match_resources(mc);
                }
            }
        }
        "ValidatingAdmissionPolicyBinding" => {
            if let Some(mr) = child(o, "spec").and_then(|s| child(s, "matchResources")) {
                match_resources(mr);
            }
        }
        _ => {}
    }
}

fn match_resources(m: &mut Obj) {
    default_ptr(m, "matchPolicy", json!("Equivalent"));
    default_ptr(m, "namespaceSelector", json!({}));
    default_ptr(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        each_obj(m, key, |r| default_ptr(r, "scope", json!("*")));
    }
}

fn crd_v1(o: &mut Obj) {
    let mut storage_version = None;
    if let Some(spec) = child(o, "spec") {
        if let Some(names) = child(spec, "names") {
            let kind = str_at(names, "kind").to_string();
            if is_empty_str(names, "singular") {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if is_empty_str(names, "listKind") && !kind.is_empty() {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
        default_ptr(spec, "conversion", json!({"strategy": "None"}));
        if let Some(svc) = child(spec, "conversion")
            .and_then(|c| child(c, "webhook"))
            .and_then(|w| child(w, "clientConfig"))
            .and_then(|c| child(c, "service"))
        {
            default_ptr(svc, "port", json!(443));
        }
        if let Some(Value::Array(versions)) = spec.get("versions") {
            storage_version = versions
                .iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .and_then(|v| v.get("name").cloned());
        }
    }
    if let Some(name) = storage_version {
        if let Some(status) = child_or_insert(o, "status") {
            if is_empty_coll(status, "storedVersions") {
                status.insert("storedVersions".into(), json!([name]));
            }
        }
    }
}

fn flowcontrol_v1(kind: &str, o: &mut Obj) {
    let Some(spec) = child(o, "spec") else { return };
    match kind {
        "FlowSchema" => default_nonzero(spec, "matchingPrecedence", 1000),
        "PriorityLevelConfiguration" => {
            if let Some(ex) = child(spec, "exempt") {
                default_ptr(ex, "nominalConcurrencyShares", json!(0));
                default_ptr(ex, "lendablePercent", json!(0));
            }
            if let Some(lim) = child(spec, "limited") {
                default_ptr(lim, "nominalConcurrencyShares", json!(30));
                default_ptr(lim, "lendablePercent", json!(0));
                if let Some(q) = child(lim, "limitResponse").and_then(|r| child(r, "queuing")) {
                    default_nonzero(q, "handSize", 8);
                    default_nonzero(q, "queues", 64);
                    default_nonzero(q, "queueLengthLimit", 50);
                }
            }
        }
        _ => {}
    }
}

fn resource_v1(kind: &str, o: &mut Obj) {
    let spec = match kind {
        "ResourceClaim" => child(o, "spec"),
        "ResourceClaimTemplate" => child(o, "spec").and_then(|s| child(s, "spec")),
        _ => None,
    };
    let Some(devices) = spec.and_then(|s| child(s, "devices")) else {
        return;
    };
    fn exact(r: &mut Obj) {
        default_str(r, "allocationMode", "ExactCount");
        if str_at(r, "allocationMode") == "ExactCount" {
            default_nonzero(r, "count", 1);
        }
        each_obj(r, "tolerations", |t| default_str(t, "operator", "Equal"));
    }
    each_obj(devices, "requests", |req| {
        if let Some(e) = child(req, "exactly") {
            exact(e);
        }
        each_obj(req, "firstAvailable", exact);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        crate::reference::fixture(&format!("objects/{name}"))
    }

    /// Drop what the server sets that defaulting does not.
    fn strip_server_fields(v: &mut Value) {
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                meta.remove(k);
            }
        }
        if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
    }

    fn check(group: &str, version: &str, kind: &str, mut input: Value, file: &str) {
        apply_defaults(group, version, kind, &mut input);
        let mut want = fixture(file);
        strip_server_fields(&mut want);
        strip_server_fields(&mut input);
        assert_eq!(
            input,
            want,
            "{file}\n got: {}\nwant: {}",
            serde_json::to_string_pretty(&input).unwrap(),
            serde_json::to_string_pretty(&want).unwrap()
        );
    }

    fn defaulted(group: &str, version: &str, kind: &str, mut v: Value) -> Value {
        apply_defaults(group, version, kind, &mut v);
        v
    }

    #[test]
    fn fixture_deployment() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "golden"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                        "ports": [{"containerPort": 80}]}]}
                }
            }
        });
        check("apps", "v1", "Deployment", input, "deployment.json");
    }

    #[test]
    fn fixture_replicaset() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs1", "namespace": "golden"},
            "spec": {
                "selector": {"matchLabels": {"rs": "1"}},
                "template": {
                    "metadata": {"labels": {"rs": "1"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}
                }
            }
        });
        check("apps", "v1", "ReplicaSet", input, "replicaset.json");
    }

    #[test]
    fn fixture_statefulset() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "golden"},
            "spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "c", "image": "postgres"}]}
                }
            }
        });
        check("apps", "v1", "StatefulSet", input, "statefulset.json");
    }

    #[test]
    fn fixture_daemonset() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "golden"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}
                }
            }
        });
        check("apps", "v1", "DaemonSet", input, "daemonset.json");
    }

    #[test]
    fn fixture_job_with_generated_selector() {
        let mut input = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "once", "namespace": "golden"},
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]
            }}}
        });
        apply_defaults("batch", "v1", "Job", &mut input);
        let want = fixture("job.json");
        let uid = want["metadata"]["uid"].as_str().unwrap().to_string();
        generate_job_selector(&mut input, &uid);
        let mut want = want;
        strip_server_fields(&mut want);
        strip_server_fields(&mut input);
        assert_eq!(input, want);
    }

    #[test]
    fn fixture_cronjob() {
        let input = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "tick", "namespace": "golden"},
            "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]
                }}}}
            }
        });
        check("batch", "v1", "CronJob", input, "cronjob.json");
    }

    #[test]
    fn fixture_pod() {
        let mut input = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "golden"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}
        });
        apply_defaults("", "v1", "Pod", &mut input);
        let mut want = fixture("pod.json");
        strip_server_fields(&mut want);
        // Set by the ServiceAccount and DefaultTolerationSeconds admission plugins.
        let spec = want["spec"].as_object_mut().unwrap();
        for k in [
            "serviceAccount",
            "serviceAccountName",
            "tolerations",
            "volumes",
        ] {
            spec.remove(k);
        }
        want["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("volumeMounts");
        strip_server_fields(&mut input);
        assert_eq!(input, want);
    }

    #[test]
    fn fixture_service() {
        let input = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc", "namespace": "golden"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
        });
        check("", "v1", "Service", input, "service.json");
    }

    #[test]
    fn fixture_namespace() {
        let input = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "golden-ns"}
        });
        check("", "v1", "Namespace", input, "namespace.json");
    }

    #[test]
    fn fixture_pdb() {
        let input = json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb", "namespace": "golden"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
        });
        check("policy", "v1", "PodDisruptionBudget", input, "pdb.json");
    }

    #[test]
    fn fixture_lease() {
        let input = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l1", "namespace": "golden"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}
        });
        check("coordination.k8s.io", "v1", "Lease", input, "lease.json");
    }

    #[test]
    fn fixture_configmaps() {
        let input = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm1", "namespace": "golden", "labels": {"a": "b"}},
            "data": {"k": "v"}
        });
        check("", "v1", "ConfigMap", input, "configmap.json");
        let input = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "gen-vncnw", "generateName": "gen-", "namespace": "golden"}
        });
        check("", "v1", "ConfigMap", input, "generatename.json");
    }

    #[test]
    fn scale_is_untouched() {
        let input = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {}});
        assert_eq!(
            defaulted("autoscaling", "v1", "Scale", input.clone()),
            input
        );
    }

    #[test]
    fn image_pull_policy() {
        for (image, want) in [
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("nginx:1.25", "IfNotPresent"),
            ("localhost:5000/app", "Always"),
            ("localhost:5000/app:v2", "IfNotPresent"),
            ("registry.example.com/team/app:latest", "Always"),
            (
                "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "IfNotPresent",
            ),
            (
                "busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "Always",
            ),
            ("", "IfNotPresent"),
            ("BusyBox", "IfNotPresent"),
            ("bad image", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy_for(image), want, "{image}");
        }
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"containers": [
                {"name": "a", "image": "x", "imagePullPolicy": "Never"},
                {"name": "b"}
            ]}}),
        );
        assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
        assert_eq!(
            pod["spec"]["containers"][1]["imagePullPolicy"],
            "IfNotPresent"
        );
    }

    #[test]
    fn probes_lifecycle_env() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {
                "initContainers": [{"name": "i", "image": "x:1",
                    "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 0}}],
                "containers": [{
                    "name": "c", "image": "x:1",
                    "livenessProbe": {"httpGet": {"port": 8080}, "timeoutSeconds": 5},
                    "readinessProbe": {"grpc": {"port": 9000}},
                    "lifecycle": {"preStop": {"httpGet": {"port": 1, "path": "/q"}}},
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
                }],
                "ephemeralContainers": [{"name": "e", "image": "dbg"}]
            }}),
        );
        let c = &pod["spec"]["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 5,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/q");
        assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        let i = &pod["spec"]["initContainers"][0];
        assert_eq!(i["startupProbe"]["periodSeconds"], 10);
        assert_eq!(i["terminationMessagePolicy"], "File");
        let e = &pod["spec"]["ephemeralContainers"][0];
        assert_eq!(e["imagePullPolicy"], "Always");
        assert_eq!(e["resources"], json!({}));
    }

    #[test]
    fn volumes() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"containers": [], "volumes": [
                {"name": "a"},
                {"name": "b", "secret": {"secretName": "s"}},
                {"name": "c", "configMap": {"name": "cm", "defaultMode": 256}},
                {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                {"name": "e", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "t"}},
                    {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}
                ]}},
                {"name": "f", "hostPath": {"path": "/x"}},
                {"name": "g", "emptyDir": {"sizeLimit": "1024Mi"}},
                {"name": "h", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1000Mi"}}}}}},
                {"name": "i", "image": {"reference": "quay.io/x/y:v1"}},
                {"name": "j", "rbd": {"monitors": ["m"], "image": "i"}},
                {"name": "k", "azureDisk": {"diskName": "d", "diskURI": "u"}}
            ]}}),
        );
        let v = &pod["spec"]["volumes"];
        assert_eq!(v[0]["emptyDir"], json!({}));
        assert_eq!(v[1]["secret"]["defaultMode"], 420);
        assert_eq!(v[2]["configMap"]["defaultMode"], 256);
        assert_eq!(v[3]["downwardAPI"]["defaultMode"], 420);
        assert_eq!(
            v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            "v1"
        );
        assert_eq!(v[4]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
        assert_eq!(
            v[4]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            "v1"
        );
        assert_eq!(v[5]["hostPath"]["type"], "");
        assert_eq!(v[6]["emptyDir"]["sizeLimit"], "1Gi");
        let t = &v[7]["ephemeral"]["volumeClaimTemplate"];
        assert_eq!(t["metadata"], json!({}));
        assert_eq!(t["spec"]["volumeMode"], "Filesystem");
        assert_eq!(t["spec"]["resources"]["requests"]["storage"], "1000Mi");
        assert_eq!(v[8]["image"]["pullPolicy"], "IfNotPresent");
        assert_eq!(
            v[9]["rbd"],
            json!({"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
                   "keyring": "/etc/ceph/keyring"})
        );
        assert_eq!(v[10]["azureDisk"]["cachingMode"], "ReadWrite");
        assert_eq!(v[10]["azureDisk"]["kind"], "Shared");
        assert_eq!(v[10]["azureDisk"]["fsType"], "ext4");
        assert_eq!(v[10]["azureDisk"]["readOnly"], false);
    }

    #[test]
    fn resources_requests_from_limits_and_qos() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "x:1",
                "resources": {"limits": {"cpu": "0.5", "memory": 134217728}}}]}}),
        );
        let res = &pod["spec"]["containers"][0]["resources"];
        // A plain byte count stays decimal: only a binary suffix selects binary output.
        assert_eq!(res["limits"], json!({"cpu": "500m", "memory": "134217728"}));
        assert_eq!(
            res["requests"],
            json!({"cpu": "500m", "memory": "134217728"})
        );
        assert_eq!(pod["status"]["qosClass"], "Guaranteed");

        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"containers": [{"name": "c", "image": "x:1",
                "resources": {"requests": {"cpu": "100m"}}}]}}),
        );
        assert_eq!(pod["status"]["qosClass"], "Burstable");

        // Templates do not copy limits to requests.
        let d = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1",
                "resources": {"limits": {"cpu": "1"}}}]}}}}),
        );
        let res = &d["spec"]["template"]["spec"]["containers"][0]["resources"];
        assert!(res.get("requests").is_none());
        assert!(d["spec"]["template"]["spec"]
            .get("enableServiceLinks")
            .is_none());
    }

    #[test]
    fn pod_level_resources_defaults() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {
                "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
                "containers": [
                    {"name": "a", "image": "x:1", "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "b", "image": "x:1", "resources": {"requests": {"cpu": "250m"}}}
                ]
            }}),
        );
        assert_eq!(
            pod["spec"]["resources"]["requests"],
            json!({"cpu": "750m", "memory": "1Gi"})
        );
        assert_eq!(pod["status"]["qosClass"], "Burstable");

        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {
                "resources": {"requests": {"cpu": "1"}},
                "containers": [
                    {"name": "a", "image": "x:1", "resources": {"limits": {"memory": "1Gi", "cpu": "1"}}},
                    {"name": "b", "image": "x:1", "resources": {"limits": {"memory": "1Gi"}}}
                ]
            }}),
        );
        assert_eq!(pod["spec"]["resources"]["limits"], json!({"memory": "2Gi"}));
    }

    #[test]
    fn host_network_ports_and_priority() {
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"hostNetwork": true, "priorityClassName": "system-node-critical",
                "containers": [{"name": "c", "image": "x:1", "ports": [{"containerPort": 53, "protocol": "UDP"}]}]}}),
        );
        let p = &pod["spec"]["containers"][0]["ports"][0];
        assert_eq!(p["hostPort"], 53);
        assert_eq!(p["protocol"], "UDP");
        assert_eq!(pod["spec"]["priority"], 2_000_001_000);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");

        let mut pod = json!({"spec": {"containers": []}});
        apply_scheme_defaults("", "v1", "Pod", &mut pod);
        assert!(pod["spec"].get("priority").is_none());
        assert!(pod.get("status").is_none());
    }

    #[test]
    fn service_account_alias() {
        let pod = defaulted("", "v1", "Pod", json!({"spec": {"serviceAccount": "x"}}));
        assert_eq!(pod["spec"]["serviceAccountName"], "x");
        let pod = defaulted(
            "",
            "v1",
            "Pod",
            json!({"spec": {"serviceAccount": "old", "serviceAccountName": "new"}}),
        );
        assert_eq!(pod["spec"]["serviceAccount"], "new");
    }

    #[test]
    fn services() {
        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                "ports": [{"port": 443, "targetPort": "https", "protocol": "UDP"}, {"port": 80, "targetPort": 0}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "h"}]}}}),
        );
        let spec = &svc["spec"];
        assert_eq!(
            spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10800
        );
        assert_eq!(spec["ports"][0]["targetPort"], "https");
        assert_eq!(spec["ports"][0]["protocol"], "UDP");
        assert_eq!(spec["ports"][1]["targetPort"], 80);
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ipMode"], "VIP");
        assert!(svc["status"]["loadBalancer"]["ingress"][1]
            .get("ipMode")
            .is_none());

        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "x.example", "sessionAffinityConfig": {}}}),
        );
        assert!(svc["spec"].get("internalTrafficPolicy").is_none());
        assert!(svc["spec"].get("ipFamilies").is_none());
        assert!(svc["spec"].get("sessionAffinityConfig").is_none());

        let svc = defaulted("", "v1", "Service", json!({"spec": {"clusterIP": "None"}}));
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "RequireDualStack");

        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"clusterIP": "None", "ipFamilyPolicy": "SingleStack"}}),
        );
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"clusterIP": "None", "selector": {"a": "b"}}}),
        );
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"clusterIP": "fd00::10", "selector": {"a": "b"}}}),
        );
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv6"]));
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");

        let svc = defaulted(
            "",
            "v1",
            "Service",
            json!({"spec": {"ipFamilyPolicy": "PreferDualStack", "selector": {"a": "b"}}}),
        );
        assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(svc["spec"]["ipFamilyPolicy"], "PreferDualStack");
    }

    #[test]
    fn namespace_finalizer_is_create_only() {
        let mut ns = json!({"metadata": {"name": "x"}, "spec": {"finalizers": []}});
        apply_scheme_defaults("", "v1", "Namespace", &mut ns);
        assert_eq!(ns["spec"]["finalizers"], json!([]));
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "x");
        let ns = defaulted(
            "",
            "v1",
            "Namespace",
            json!({"spec": {"finalizers": ["a"]}}),
        );
        assert_eq!(ns["spec"]["finalizers"], json!(["a", "kubernetes"]));
        assert!(ns.get("metadata").is_none());
    }

    #[test]
    fn core_misc() {
        let s = defaulted("", "v1", "Secret", json!({"data": {}}));
        assert_eq!(s["type"], "Opaque");
        let e = defaulted(
            "",
            "v1",
            "Endpoints",
            json!({"subsets": [{"ports": [{"port": 1}]}]}),
        );
        assert_eq!(e["subsets"][0]["ports"][0]["protocol"], "TCP");
        let n = defaulted(
            "",
            "v1",
            "Node",
            json!({"status": {"capacity": {"cpu": "4", "memory": "8192Mi"}}}),
        );
        assert_eq!(
            n["status"]["allocatable"],
            json!({"cpu": "4", "memory": "8Gi"})
        );
        let pv = defaulted(
            "",
            "v1",
            "PersistentVolume",
            json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}}),
        );
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["spec"]["hostPath"]["type"], "");
        assert_eq!(pv["status"]["phase"], "Pending");
        let pvc = defaulted(
            "",
            "v1",
            "PersistentVolumeClaim",
            json!({"spec": {"resources": {"requests": {"storage": "1G"}}}}),
        );
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"]["phase"], "Pending");
        let lr = defaulted(
            "",
            "v1",
            "LimitRange",
            json!({"spec": {"limits": [
                {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
                {"type": "Pod", "max": {"cpu": "4"}}
            ]}}),
        );
        let item = &lr["spec"]["limits"][0];
        assert_eq!(item["default"], json!({"cpu": "2"}));
        assert_eq!(
            item["defaultRequest"],
            json!({"cpu": "2", "memory": "64Mi"})
        );
        assert!(lr["spec"]["limits"][1].get("default").is_none());
        let rc = defaulted(
            "",
            "v1",
            "ReplicationController",
            json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
        );
        assert_eq!(rc["spec"]["selector"], json!({"a": "b"}));
        assert_eq!(rc["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert_eq!(rc["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        let pt = defaulted(
            "",
            "v1",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}),
        );
        assert_eq!(pt["template"]["metadata"], json!({}));
        assert_eq!(pt["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn apps_variants() {
        let d = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let d = defaulted(
            "apps",
            "v1",
            "Deployment",
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
        );
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
        );
        let s = defaulted(
            "apps",
            "v1",
            "StatefulSet",
            json!({"spec": {"updateStrategy": {"type": "RollingUpdate"},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        );
        assert_eq!(
            s["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate"})
        );
        let vct = &s["spec"]["volumeClaimTemplates"][0];
        assert_eq!(vct["apiVersion"], "v1");
        assert_eq!(vct["kind"], "PersistentVolumeClaim");
        assert_eq!(vct["spec"]["volumeMode"], "Filesystem");
        assert_eq!(vct["status"], json!({"phase": "Pending"}));
        let ds = defaulted(
            "apps",
            "v1",
            "DaemonSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    }

    #[test]
    fn jobs() {
        let j = defaulted(
            "batch",
            "v1",
            "Job",
            json!({"metadata": {"name": "j"}, "spec": {"completions": 5, "backoffLimitPerIndex": 1,
                "completionMode": "Indexed",
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": []}}}}),
        );
        let spec = &j["spec"];
        assert_eq!(spec["completions"], 5);
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["backoffLimit"], 2147483647);
        assert_eq!(spec["podReplacementPolicy"], "Failed");
        assert_eq!(
            spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        assert_eq!(j["metadata"]["labels"], json!({"x": "y"}));

        let mut j = json!({"metadata": {"name": "m"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {}}}});
        apply_defaults("batch", "v1", "Job", &mut j);
        generate_job_selector(&mut j, "u");
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));

        let cj = defaulted(
            "batch",
            "v1",
            "CronJob",
            json!({"spec": {"suspend": true, "jobTemplate": {"spec": {"backoffLimit": 1,
                "template": {"spec": {"containers": []}}}}}}),
        );
        assert_eq!(cj["spec"]["suspend"], true);
        let js = &cj["spec"]["jobTemplate"]["spec"];
        assert!(js.get("completions").is_none());
        assert_eq!(js["template"]["spec"]["schedulerName"], "default-scheduler");
    }

    #[test]
    fn autoscalers() {
        let h = defaulted(
            "autoscaling",
            "v1",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 3}}),
        );
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(h["spec"]["targetCPUUtilizationPercentage"], 80);
        assert_eq!(
            h["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
        let h = defaulted(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
        );
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        let b = &h["spec"]["behavior"];
        assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
        assert_eq!(b["scaleDown"]["policies"][0]["type"], "Percent");
        assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
        assert_eq!(b["scaleUp"]["policies"].as_array().unwrap().len(), 2);
        let h = defaulted(
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            json!({"spec": {"maxReplicas": 3}}),
        );
        assert!(h["spec"].get("behavior").is_none());
    }

    #[test]
    fn other_groups() {
        let np = defaulted(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["podSelector"], json!({}));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let ic = defaulted(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            json!({"spec": {"parameters": {"kind": "K", "name": "n"}}}),
        );
        assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
        let ing = defaulted("networking.k8s.io", "v1", "Ingress", json!({"spec": {}}));
        assert_eq!(ing["status"], json!({"loadBalancer": {}}));
        let es = defaulted(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            json!({"ports": [{"port": 80}]}),
        );
        assert_eq!(
            es["ports"][0],
            json!({"port": 80, "name": "", "protocol": "TCP"})
        );
        let rb = defaulted(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
                {"kind": "ServiceAccount", "name": "a"}, {"kind": "User", "name": "u"},
                {"kind": "Group", "name": "g", "apiGroup": "x"}]}),
        );
        assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(rb["subjects"][0]["apiGroup"], "");
        assert_eq!(rb["subjects"][1]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(rb["subjects"][2]["apiGroup"], "x");
        let sc = defaulted(
            "storage.k8s.io",
            "v1",
            "StorageClass",
            json!({"provisioner": "p"}),
        );
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        let csi = defaulted("storage.k8s.io", "v1", "CSIDriver", json!({}));
        assert_eq!(csi["spec"]["attachRequired"], true);
        assert_eq!(csi["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        let pc = defaulted(
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            json!({"value": 5}),
        );
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(pc["value"], 5);
        let mw = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            json!({"webhooks": [{"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
                "rules": [{"operations": ["CREATE"]}]}]}),
        );
        let w = &mw["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
        let vap = defaulted(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": {"resourceRules": [{}]}}}),
        );
        assert_eq!(vap["spec"]["failurePolicy"], "Fail");
        assert_eq!(vap["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
        assert_eq!(
            vap["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
        let crd = defaulted(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        );
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        let api = defaulted(
            "apiregistration.k8s.io",
            "v1",
            "APIService",
            json!({"spec": {"service": {"name": "s"}}}),
        );
        assert_eq!(api["spec"]["service"]["port"], 443);
        let plc = defaulted(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
        );
        assert_eq!(
            plc["spec"]["limited"],
            json!({"limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}},
                   "nominalConcurrencyShares": 30, "lendablePercent": 0})
        );
        let fs = defaulted(
            "flowcontrol.apiserver.k8s.io",
            "v1",
            "FlowSchema",
            json!({"spec": {}}),
        );
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        let rc = defaulted(
            "resource.k8s.io",
            "v1",
            "ResourceClaim",
            json!({"spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "tolerations": [{"key": "k"}]}},
                {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "gpu", "allocationMode": "All"}]}
            ]}}}),
        );
        let reqs = &rc["spec"]["devices"]["requests"];
        assert_eq!(reqs[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(reqs[0]["exactly"]["count"], 1);
        assert_eq!(reqs[0]["exactly"]["tolerations"][0]["operator"], "Equal");
        assert!(reqs[1]["firstAvailable"][0].get("count").is_none());
    }

    #[test]
    fn lists_are_defaulted_per_item() {
        let list = defaulted(
            "",
            "v1",
            "SecretList",
            json!({"items": [{"data": {}}, {"type": "kubernetes.io/tls"}]}),
        );
        assert_eq!(list["items"][0]["type"], "Opaque");
        assert_eq!(list["items"][1]["type"], "kubernetes.io/tls");
        let list = defaulted(
            "",
            "v1",
            "List",
            json!({"items": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {}}, 7]}),
        );
        assert_eq!(list["items"][0]["spec"]["replicas"], 1);
        assert_eq!(list["items"][1], 7);
    }

    #[test]
    fn idempotent_on_fixtures() {
        for (g, v, k, file) in [
            ("apps", "v1", "Deployment", "deployment.json"),
            ("apps", "v1", "StatefulSet", "statefulset.json"),
            ("apps", "v1", "DaemonSet", "daemonset.json"),
            ("batch", "v1", "Job", "job.json"),
            ("batch", "v1", "CronJob", "cronjob.json"),
            ("", "v1", "Pod", "pod.json"),
            ("", "v1", "Service", "service.json"),
            ("", "v1", "Namespace", "namespace.json"),
        ] {
            let want = fixture(file);
            let mut got = want.clone();
            apply_defaults(g, v, k, &mut got);
            assert_eq!(got, want, "{file}");
        }
    }

    /// Replace every value reachable in `v` with each JSON type in turn, and make sure
    /// defaulting never panics.
    #[test]
    fn weird_input_never_panics() {
        let kinds: &[(&str, &str, &str)] = &[
            ("", "v1", "Pod"),
            ("", "v1", "PodTemplate"),
            ("", "v1", "ReplicationController"),
            ("", "v1", "Service"),
            ("", "v1", "Namespace"),
            ("", "v1", "Secret"),
            ("", "v1", "Endpoints"),
            ("", "v1", "Node"),
            ("", "v1", "PersistentVolume"),
            ("", "v1", "PersistentVolumeClaim"),
            ("", "v1", "LimitRange"),
            ("", "v1", "ResourceQuota"),
            ("", "v1", "List"),
            ("apps", "v1", "Deployment"),
            ("apps", "v1", "ReplicaSet"),
            ("apps", "v1", "StatefulSet"),
            ("apps", "v1", "DaemonSet"),
            ("batch", "v1", "Job"),
            ("batch", "v1", "CronJob"),
            ("autoscaling", "v1", "HorizontalPodAutoscaler"),
            ("autoscaling", "v2", "HorizontalPodAutoscaler"),
            ("policy", "v1", "PodDisruptionBudget"),
            ("networking.k8s.io", "v1", "NetworkPolicy"),
            ("networking.k8s.io", "v1", "IngressClass"),
            ("discovery.k8s.io", "v1", "EndpointSlice"),
            ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
            ("storage.k8s.io", "v1", "CSIDriver"),
            (
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingAdmissionPolicyBinding",
            ),
            ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            (
                "flowcontrol.apiserver.k8s.io",
                "v1",
                "PriorityLevelConfiguration",
            ),
            ("resource.k8s.io", "v1", "ResourceClaimTemplate"),
        ];
        let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {
            "hostNetwork": true, "resources": {"limits": {"cpu": "1"}},
            "containers": [{"image": "x", "ports": [{"containerPort": 1}],
                "resources": {"limits": {"cpu": "1", "memory": "1Mi"}},
                "livenessProbe": {"httpGet": {}, "grpc": {}},
                "lifecycle": {"postStart": {"httpGet": {}}},
                "env": [{"valueFrom": {"fieldRef": {}, "fileKeyRef": {}}}]}],
            "initContainers": [{"restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}}],
            "volumes": [{}, {"projected": {"sources": [{"downwardAPI": {"items": [{"fieldRef": {}}]},
                "serviceAccountToken": {}}]}},
                {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                {"emptyDir": {"sizeLimit": "1Gi"}}, {"image": {}}]
        }});
        let mut spec = json!({
            "names": {"kind": "K"}, "versions": [{"storage": true, "name": "v"}],
            "hard": {"cpu": "1"}, "limits": [{"type": "Container", "max": {"cpu": "1"}}],
            "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": [], "selector": {},
            "ports": [{"port": 1}], "type": "LoadBalancer", "sessionAffinity": "ClientIP",
            "capacity": {"storage": "1Gi"}, "hostPath": {},
            "resources": {"limits": {"cpu": "1"}, "requests": {"hugepages-2Mi": "2Mi"}},
            "strategy": {}, "updateStrategy": {}, "behavior": {"scaleUp": {}},
            "metrics": [{"resource": {"target": {}}}]
        });
        let more = json!({
            "matchResources": {"resourceRules": [{}]},
            "limited": {"limitResponse": {"queuing": {}}}, "exempt": {},
            "devices": {"requests": [{"exactly": {"tolerations": [{}]}, "firstAvailable": [{}]}]},
            "spec": {"devices": {"requests": [{"exactly": {}}]}},
            "egress": [{"ports": [{}]}],
            "podFailurePolicy": {"rules": [{"onPodConditions": [{}]}]},
            "volumeClaimTemplates": [{"spec": {"resources": {}}}],
            "jobTemplate": {"spec": {"template": {"spec": {}}}},
            "containers": [{"image": "x", "resources": {"limits": {"cpu": "1"}}}]
        });
        if let (Some(s), Value::Object(m)) = (spec.as_object_mut(), more) {
            s.extend(m);
            s.insert("template".into(), template);
        }
        let mut seed = json!({
            "metadata": {"name": "n", "labels": {"a": "b"}, "annotations": {}},
            "roleRef": {}, "subjects": [{}],
            "webhooks": [{"rules": [{}], "clientConfig": {"service": {}}}],
            "items": [{"apiVersion": "v1", "kind": "Pod", "spec": {}}],
            "subsets": [{"ports": [{}]}], "ports": [{}], "limits": [{}],
            "status": {"capacity": {"cpu": "1"}, "loadBalancer": {"ingress": [{"ip": "1"}]}}
        });
        seed["spec"] = spec;
        let replacements = [
            Value::Null,
            json!(true),
            json!(7),
            json!(-1.5),
            json!("s"),
            json!([]),
            json!([1, "x", null]),
            json!({}),
        ];
        // Collect JSON pointers to every node of the seed.
        fn pointers(v: &Value, prefix: String, out: &mut Vec<String>) {
            out.push(prefix.clone());
            match v {
                Value::Object(m) => {
                    for (k, c) in m {
                        pointers(c, format!("{prefix}/{k}"), out);
                    }
                }
                Value::Array(a) => {
                    for (i, c) in a.iter().enumerate() {
                        pointers(c, format!("{prefix}/{i}"), out);
                    }
                }
                _ => {}
            }
        }
        let mut ptrs = Vec::new();
        pointers(&seed, String::new(), &mut ptrs);
        for (g, v, k) in kinds {
            for ptr in &ptrs {
                for r in &replacements {
                    let mut obj = seed.clone();
                    if ptr.is_empty() {
                        obj = r.clone();
                    } else if let Some(slot) = obj.pointer_mut(ptr) {
                        *slot = r.clone();
                    }
                    apply_defaults(g, v, k, &mut obj);
                    apply_scheme_defaults(g, v, k, &mut obj);
                }
            }
            let mut obj = seed.clone();
            generate_job_selector(&mut obj, "u");
        }
    }
}
