//! Defaults of pod specs and pod templates (`SetDefaults_PodSpec`, containers, probes,
//! volumes, resources, the QoS class), shared by every kind that holds a pod template.

use crate::registry::defaults::prelude::*;

pub(crate) fn pod(o: &mut Obj, phase: Phase) {
    if let Some(spec) = child(o, "spec") {
        pod_only_defaults(spec);
        pod_spec(spec);
        if phase.create() {
            pod_priority(spec);
            default_toleration_seconds(spec);
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

pub(crate) fn pod_template(t: &mut Obj) {
    child_or_insert(t, "metadata");
    if let Some(spec) = child(t, "spec") {
        pod_spec(spec);
    }
}

/// `SetDefaults_Pod`: what a Pod gets but a pod template does not.
pub(crate) fn pod_only_defaults(spec: &mut Obj) {
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
pub(crate) fn pod_priority(spec: &mut Obj) {
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

/// Taints every pod tolerates for five minutes unless it says otherwise.
const DEFAULT_TOLERATED_TAINTS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

/// What the always-on `DefaultTolerationSeconds` admission plugin adds to a new Pod: a
/// `NoExecute` toleration of 300 seconds for each of the not-ready and unreachable node
/// taints the pod does not already tolerate, where a toleration counts when its key is
/// the taint's or empty and its effect `NoExecute` or empty (whatever its operator or
/// seconds), appended after the pod's own.
pub(crate) fn default_toleration_seconds(spec: &mut Obj) {
    if is_nil(spec, "tolerations") {
        spec.insert("tolerations".into(), json!([]));
    }
    let Some(Value::Array(tolerations)) = spec.get_mut("tolerations") else {
        return;
    };
    let tolerates = |taint: &str| {
        tolerations.iter().any(|t| {
            let key = t.get("key").and_then(Value::as_str).unwrap_or("");
            let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (key == taint || key.is_empty()) && (effect == "NoExecute" || effect.is_empty())
        })
    };
    let missing: Vec<&str> = DEFAULT_TOLERATED_TAINTS
        .into_iter()
        .filter(|taint| !tolerates(taint))
        .collect();
    for taint in missing {
        tolerations.push(json!({
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }));
    }
    if tolerations.is_empty() {
        spec.remove("tolerations");
    }
}

/// `SetDefaults_PodSpec` and the generated nested defaulters for everything in a PodSpec.
pub(crate) fn pod_spec(spec: &mut Obj) {
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

pub(crate) fn container(c: &mut Obj) {
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

pub(crate) fn probe(p: &mut Obj) {
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

pub(crate) fn http_get(h: &mut Obj) {
    default_str(h, "path", "/");
    default_str(h, "scheme", "HTTP");
}

/// Every volume source key a `Volume` can carry.
pub(crate) const VOLUME_SOURCES: &[&str] = &[
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

pub(crate) fn volume(v: &mut Obj) {
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
pub(crate) fn volume_sources(v: &mut Obj) {
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

pub(crate) fn downward_api_item(item: &mut Obj) {
    if let Some(fr) = child(item, "fieldRef") {
        default_str(fr, "apiVersion", "v1");
    }
}

/// `Always` when the image reference names the `latest` tag (explicitly, or implicitly by
/// having neither tag nor digest), `IfNotPresent` otherwise, including for references
/// that do not parse.
pub(crate) fn pull_policy_for(image: &str) -> &'static str {
    match image_tag(image) {
        Some(Some("latest")) => "Always",
        _ => "IfNotPresent",
    }
}

/// The tag a container image reference resolves to: `None` if the reference is invalid,
/// `Some(None)` if it only has a digest, `Some(Some("latest"))` if it has neither.
pub(crate) fn image_tag(image: &str) -> Option<Option<&str>> {
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
pub(crate) fn valid_repository(name: &str) -> bool {
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

pub(crate) fn is_hugepages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

pub(crate) fn pod_level_supported(name: &str) -> bool {
    name == "cpu" || name == "memory" || is_hugepages(name)
}

/// Resource names that are native (no domain, or a `kubernetes.io` domain).
pub(crate) fn overcommit_allowed(name: &str) -> bool {
    let native = match name.split_once('/') {
        None => true,
        Some((domain, _)) => domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"),
    };
    native && !is_hugepages(name)
}

/// Quantity map keyed by resource name, keeping first-seen key order.
pub(crate) type QList = Vec<(String, Quantity)>;

pub(crate) fn qlist_get<'a>(l: &'a QList, name: &str) -> Option<&'a Quantity> {
    l.iter().find(|(k, _)| k == name).map(|(_, q)| q)
}

pub(crate) fn qlist_add(l: &mut QList, name: &str, q: Quantity) {
    match l.iter_mut().find(|(k, _)| k == name) {
        Some((_, cur)) => *cur = *cur + q,
        None => l.push((name.to_string(), q)),
    }
}

pub(crate) fn qlist_max(l: &mut QList, other: &QList) {
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
pub(crate) fn qlist_of(v: Option<&Value>) -> QList {
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

pub(crate) fn container_list(c: &Value, which: &str) -> QList {
    qlist_of(c.get("resources").and_then(|r| r.get(which)))
}

pub(crate) fn containers<'a>(spec: &'a Obj, key: &str) -> &'a [Value] {
    spec.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Requests or limits of all containers, following the sidecar formula of upstream's
/// `AggregateContainerRequests`/`AggregateContainerLimits`.
pub(crate) fn aggregate_containers(spec: &Obj, which: &str) -> QList {
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

pub(crate) fn has_supported_key(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object)
        .is_some_and(|m| m.keys().any(|k| pod_level_supported(k)))
}

pub(crate) fn all_containers_have_limit(spec: &Obj, name: &str) -> bool {
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
pub(crate) fn pod_level_resources(spec: &mut Obj) {
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
pub(crate) fn pod_qos(spec: &Obj) -> &'static str {
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

pub(crate) fn pvc_spec(spec: &mut Obj) {
    default_ptr(spec, "volumeMode", json!("Filesystem"));
    if let Some(res) = child_or_insert(spec, "resources") {
        resource_list(res, "limits", true);
        resource_list(res, "requests", true);
    }
}
