//! Validation of pod specs and pod templates (`ValidatePodSpec`, `ValidatePodTemplateSpec`
//! and their parts), shared by every kind that holds a pod template.

use crate::registry::validation::prelude::*;

impl Ctx<'_> {
    pub(crate) fn selector_immutable(&self, e: &mut Errs, spec: &Value) {
        let Some(old) = self.old else { return };
        // Selector updates are tolerated only by the removed apps/v1beta1 and extensions/v1beta1.
        if self.version == "v1beta1" && (self.group == "apps" || self.group == "extensions") {
            return;
        }
        let old_sel = get(old, "spec").and_then(|s| get(s, "selector"));
        if !json_eq(get(spec, "selector"), old_sel) {
            e.invalid(
                "spec.selector",
                Bad::Json(selector_json(get(spec, "selector"))),
                IMMUTABLE,
            );
        }
    }

    /// `ValidateDeploymentSpec` / `ValidateReplicaSetSpec` selector + template part.
    pub(crate) fn replica_selector_and_template(&self, e: &mut Errs, spec: &Value, what: &str) {
        let sel = get(spec, "selector");
        let mut sel_ok = true;
        match sel {
            None => e.required("spec.selector", ""),
            Some(s) => {
                sel_ok = validate_label_selector(e, s, "spec.selector");
                if obj(s, "matchLabels").is_none_or(|m| m.is_empty())
                    && items(s, "matchExpressions").is_empty()
                {
                    e.invalid(
                        "spec.selector",
                        Bad::Json(selector_json(Some(s))),
                        "empty selector is invalid for deployment",
                    );
                }
            }
        }
        if !sel_ok {
            e.invalid(
                "spec.selector",
                Bad::Json(selector_json(sel)),
                "invalid label selector",
            );
            return;
        }
        let empty = Value::Object(Map::new());
        let t = get(spec, "template").unwrap_or(&empty);
        template_selector_match(e, &parse_selector(sel), t, "spec.template");
        pod_template_spec(e, t, "spec.template");
        replica_template_policy(e, t, "spec.template", what);
    }
}

pub(crate) fn template_selector_match(e: &mut Errs, sel: &LabelSelector, t: &Value, path: &str) {
    if sel.is_empty() {
        return;
    }
    let labels = get(t, "metadata").and_then(|m| obj(m, "labels"));
    if !selects(sel, labels) {
        e.invalid(
            &format!("{path}.metadata.labels"),
            Bad::Json(map_json(labels)),
            "`selector` does not match template `labels`",
        );
    }
}

/// The restartPolicy/activeDeadlineSeconds checks of ReplicaSet/RC/DaemonSet templates.
pub(crate) fn replica_template_policy(e: &mut Errs, t: &Value, path: &str, what: &str) {
    let empty = Value::Object(Map::new());
    let spec = get(t, "spec").unwrap_or(&empty);
    if let Some(rp) = st(spec, "restartPolicy").filter(|r| !r.is_empty()) {
        if rp != "Always" {
            e.not_supported(&format!("{path}.spec.restartPolicy"), js(rp), &["Always"]);
        }
    }
    if get(spec, "activeDeadlineSeconds").is_some() {
        e.forbidden(
            &format!("{path}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {what} is not Supported"),
        );
    }
}

/// `ValidatePodTemplateSpec`.
pub(crate) fn pod_template_spec(e: &mut Errs, t: &Value, path: &str) {
    let empty = Value::Object(Map::new());
    let meta = get(t, "metadata").unwrap_or(&empty);
    validate_labels(e, obj(meta, "labels"), &child(path, "labels"));
    validate_annotations(e, obj(meta, "annotations"), &child(path, "annotations"));
    let spec = get(t, "spec").unwrap_or(&empty);
    let sp = child(path, "spec");
    pod_spec(e, spec, &sp);
    if !items(spec, "ephemeralContainers").is_empty() {
        e.forbidden(
            &child(&sp, "ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        );
    }
}

/// `ValidatePodSpec` (the commonly exercised subset).
pub(crate) fn pod_spec(e: &mut Errs, spec: &Value, path: &str) {
    let grace = int(spec, "terminationGracePeriodSeconds");
    // Volumes: names and a single source each.
    let mut vol_names: Vec<&str> = Vec::new();
    let mut pvc_vols: Vec<&str> = Vec::new();
    for (i, vol) in items(spec, "volumes").iter().enumerate() {
        let vp = index(&child(path, "volumes"), i);
        let mut local = Errs::default();
        let sources: Vec<&String> = vol
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, v)| *k != "name" && !v.is_null())
                    .map(|(k, _)| k)
                    .collect()
            })
            .unwrap_or_default();
        for extra in sources.iter().skip(1) {
            let name = if extra.as_str() == "downwardAPI" {
                "downwarAPI"
            } else {
                extra.as_str()
            };
            local.forbidden(&child(&vp, name), "may not specify more than 1 volume type");
        }
        if sources.is_empty() {
            local.required(&vp, "must specify a volume type");
        }
        let name = st(vol, "name").unwrap_or("");
        let np = child(&vp, "name");
        if name.is_empty() {
            local.required(&np, "");
        } else {
            local.each(&np, name, dns1123_label_errs(name));
        }
        if vol_names.contains(&name) {
            local.duplicate(&np, s(name));
        }
        if local.0.is_empty() {
            vol_names.push(name);
            if get(vol, "persistentVolumeClaim").is_some() || get(vol, "ephemeral").is_some() {
                pvc_vols.push(name);
            }
        } else {
            e.0.extend(local.0);
        }
    }
    // Containers.
    let containers = items(spec, "containers");
    let cp = child(path, "containers");
    let mut all_names: Vec<&str> = Vec::new();
    if containers.is_empty() {
        e.required(&cp, "");
    } else {
        for (i, c) in containers.iter().enumerate() {
            let p = index(&cp, i);
            container_common(e, c, &p, &vol_names);
            let name = st(c, "name").unwrap_or("");
            if all_names.contains(&name) {
                e.duplicate(&child(&p, "name"), s(name));
            } else {
                all_names.push(name);
            }
            probes(e, c, &p, grace);
            if get(c, "restartPolicy").is_some() {
                e.forbidden(
                    &child(&p, "restartPolicy"),
                    "may not be set for non-init containers",
                );
            }
        }
        host_port_conflicts(e, containers.iter().enumerate(), &cp);
    }
    let icp = child(path, "initContainers");
    for (i, c) in items(spec, "initContainers").iter().enumerate() {
        let p = index(&icp, i);
        container_common(e, c, &p, &vol_names);
        let mut restart_always = false;
        if let Some(rp) = st(c, "restartPolicy") {
            if rp != "Always" {
                e.not_supported(&child(&p, "restartPolicy"), js(rp), &["Always"]);
            }
            restart_always = rp == "Always";
        }
        let name = st(c, "name").unwrap_or("");
        if all_names.contains(&name) {
            e.duplicate(&child(&p, "name"), s(name));
        } else if !name.is_empty() {
            all_names.push(name);
        }
        host_port_conflicts(e, std::iter::once((i, c)), &icp);
        if restart_always {
            probes(e, c, &p, grace);
        } else {
            for f in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if get(c, f).is_some() {
                    e.forbidden(
                        &child(&p, f),
                        "may not be set for init containers without restartPolicy=Always",
                    );
                }
            }
        }
        if !items(c, "resizePolicy").is_empty() {
            e.invalid(
                &child(&p, "resizePolicy"),
                Bad::Json(get(c, "resizePolicy").cloned().unwrap_or(Value::Null)),
                "must not be set for init containers",
            );
        }
    }
    // hostNetwork dependencies.
    if boolean(spec, "hostNetwork") == Some(true) {
        for (i, c) in containers.iter().enumerate() {
            for (j, port) in items(c, "ports").iter().enumerate() {
                let hp = int(port, "hostPort").unwrap_or(0);
                let cport = int(port, "containerPort").unwrap_or(0);
                // Defaulting copies containerPort into an unset hostPort for pods, so an
                // unset (0) hostPort is tolerated for pods as well as templates.
                if hp != 0 && hp != cport {
                    e.invalid(
                        &child(&index(&child(&index(&cp, i), "ports"), j), "hostPort"),
                        Bad::Int(hp),
                        "must match `containerPort` when `hostNetwork` is true",
                    );
                }
            }
        }
    }
    if let Some(rp) = st(spec, "restartPolicy").filter(|x| !x.is_empty()) {
        if !["Always", "OnFailure", "Never"].contains(&rp) {
            e.not_supported(
                &child(path, "restartPolicy"),
                js(rp),
                &["Always", "OnFailure", "Never"],
            );
        }
    }
    let dns_policy = st(spec, "dnsPolicy").filter(|x| !x.is_empty());
    if let Some(dp) = dns_policy {
        if !["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"].contains(&dp) {
            e.not_supported(
                &child(path, "dnsPolicy"),
                js(dp),
                &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
            );
        }
    }
    validate_labels(e, obj(spec, "nodeSelector"), &child(path, "nodeSelector"));
    if let Some(sc) = get(spec, "securityContext") {
        id_ranges(e, sc, &child(path, "securityContext"));
    }
    if dns_policy == Some("None") {
        let dc = get(spec, "dnsConfig");
        match dc {
            None => e.required(
                &child(path, "dnsConfig"),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            ),
            Some(dc) if items(dc, "nameservers").is_empty() => e.required(
                &child(&child(path, "dnsConfig"), "nameservers"),
                "must provide at least one DNS nameserver when `dnsPolicy` is None",
            ),
            _ => {}
        }
    }
    for (i, g) in items(spec, "readinessGates").iter().enumerate() {
        let ct = st(g, "conditionType").unwrap_or("");
        e.each(
            &child(&index(&child(path, "readinessGates"), i), "conditionType"),
            ct,
            qualified_name_errs(ct),
        );
    }
    let mut gates: Vec<&str> = Vec::new();
    for (i, g) in items(spec, "schedulingGates").iter().enumerate() {
        let gp = index(&child(path, "schedulingGates"), i);
        let n = st(g, "name").unwrap_or("");
        e.each(&gp, n, qualified_name_errs(n));
        if gates.contains(&n) {
            e.duplicate(&gp, s(n));
        }
        gates.push(n);
    }
    for (f, rule) in [
        ("serviceAccountName", NameRule::Subdomain),
        ("nodeName", NameRule::Subdomain),
    ] {
        if let Some(v) = st(spec, f).filter(|v| !v.is_empty()) {
            e.each(&child(path, f), v, rule.check(v, false));
        }
    }
    if let Some(ads) = int(spec, "activeDeadlineSeconds") {
        if !(1..=i32::MAX as i64).contains(&ads) {
            e.invalid(
                &child(path, "activeDeadlineSeconds"),
                Bad::Int(ads),
                "must be between 1 and 2147483647, inclusive",
            );
        }
    }
    for f in ["hostname", "subdomain"] {
        if let Some(v) = st(spec, f).filter(|v| !v.is_empty()) {
            e.each(&child(path, f), v, dns1123_label_errs(v));
        }
    }
    if let Some(v) = st(spec, "priorityClassName").filter(|v| !v.is_empty()) {
        e.each(
            &child(path, "priorityClassName"),
            v,
            dns1123_subdomain_errs(v),
        );
    }
    if let Some(v) = st(spec, "runtimeClassName") {
        e.each(
            &child(path, "runtimeClassName"),
            v,
            dns1123_subdomain_errs(v),
        );
    }
    if let Some(pp) = st(spec, "preemptionPolicy") {
        if pp != "PreemptLowerPriority" && pp != "Never" {
            e.not_supported(
                &child(path, "preemptionPolicy"),
                js(pp),
                &["PreemptLowerPriority", "Never"],
            );
        }
    }
    if let Some(os) = get(spec, "os") {
        let n = st(os, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&child(path, "os"), "name"), "cannot be empty");
        } else if n != "linux" && n != "windows" {
            e.not_supported(&child(path, "os"), js(n), &["linux", "windows"]);
        }
    }
}

/// `AccumulateUniqueHostPorts` over the given containers.
pub(crate) fn host_port_conflicts<'a>(
    e: &mut Errs,
    cs: impl Iterator<Item = (usize, &'a Value)>,
    path: &str,
) {
    let mut seen: Vec<String> = Vec::new();
    for (i, c) in cs {
        for (j, p) in items(c, "ports").iter().enumerate() {
            let hp = int(p, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let k = format!(
                "{}/{}/{hp}",
                st(p, "protocol").unwrap_or("TCP"),
                st(p, "hostIP").unwrap_or("")
            );
            if seen.contains(&k) {
                e.duplicate(
                    &child(&index(&child(&index(path, i), "ports"), j), "hostPort"),
                    s(&k),
                );
            } else {
                seen.push(k);
            }
        }
    }
}

/// runAsUser / runAsGroup ranges of a (pod or container) security context.
pub(crate) fn id_ranges(e: &mut Errs, sc: &Value, path: &str) {
    for f in ["runAsUser", "runAsGroup"] {
        if let Some(v) = int(sc, f) {
            if !(0..=0xffff_ffff).contains(&v) {
                e.invalid(
                    &child(path, f),
                    Bad::Int(v),
                    "must be between 0 and 4294967295, inclusive",
                );
            }
        }
    }
}

pub(crate) fn validate_protocol(e: &mut Errs, p: &Value, path: &str) {
    if let Some(proto) = st(p, "protocol").filter(|x| !x.is_empty()) {
        if !["TCP", "UDP", "SCTP"].contains(&proto) {
            e.not_supported(&child(path, "protocol"), js(proto), &["SCTP", "TCP", "UDP"]);
        }
    }
}

/// `ValidatePortNumOrName`.
pub(crate) fn port_num_or_name(e: &mut Errs, v: &Value, path: &str, zero_is_default: bool) {
    match v {
        Value::String(name) => e.each(path, name, port_name_errs(name)),
        other => {
            if let Some(n) = as_int(other) {
                if n == 0 && zero_is_default {
                    return;
                }
                if !(1..=65535).contains(&n) {
                    e.invalid(path, Bad::Int(n), PORT_RANGE);
                }
            }
        }
    }
}

/// `validateContainerCommon` (subset).
pub(crate) fn container_common(e: &mut Errs, c: &Value, path: &str, volumes: &[&str]) {
    let name = st(c, "name").unwrap_or("");
    let np = child(path, "name");
    if name.is_empty() {
        e.required(&np, "");
    } else {
        e.each(&np, name, dns1123_label_errs(name));
    }
    if st(c, "image").unwrap_or("").is_empty() {
        e.required(&child(path, "image"), "");
    }
    if let Some(tmp) = st(c, "terminationMessagePolicy").filter(|x| !x.is_empty()) {
        if tmp != "File" && tmp != "FallbackToLogsOnError" {
            e.not_supported(
                &child(path, "terminationMessagePolicy"),
                js(tmp),
                &["File", "FallbackToLogsOnError"],
            );
        }
    }
    // Ports.
    let pp = child(path, "ports");
    let mut port_names: Vec<&str> = Vec::new();
    for (i, p) in items(c, "ports").iter().enumerate() {
        let ip = index(&pp, i);
        if let Some(n) = st(p, "name").filter(|n| !n.is_empty()) {
            let msgs = port_name_errs(n);
            if !msgs.is_empty() {
                e.each(&child(&ip, "name"), n, msgs);
            } else if port_names.contains(&n) {
                e.duplicate(&child(&ip, "name"), s(n));
            } else {
                port_names.push(n);
            }
        }
        match int(p, "containerPort").unwrap_or(0) {
            0 => e.required(&child(&ip, "containerPort"), ""),
            cport if !(1..=65535).contains(&cport) => {
                e.invalid(&child(&ip, "containerPort"), Bad::Int(cport), PORT_RANGE)
            }
            _ => {}
        }
        if let Some(hp) = int(p, "hostPort").filter(|h| *h != 0) {
            if !(1..=65535).contains(&hp) {
                e.invalid(&child(&ip, "hostPort"), Bad::Int(hp), PORT_RANGE);
            }
        }
        validate_protocol(e, p, &ip);
    }
    // Env.
    let ep = child(path, "env");
    for (i, ev) in items(c, "env").iter().enumerate() {
        let ip = index(&ep, i);
        let n = st(ev, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&ip, "name"), "");
        } else {
            e.each(&child(&ip, "name"), n, env_var_name_errs(n));
        }
        if let Some(vf) = get(ev, "valueFrom") {
            env_value_from(e, ev, vf, &child(&ip, "valueFrom"));
        }
    }
    let efp = child(path, "envFrom");
    for (i, ef) in items(c, "envFrom").iter().enumerate() {
        let ip = index(&efp, i);
        if let Some(prefix) = st(ef, "prefix").filter(|p| !p.is_empty()) {
            e.each(&child(&ip, "prefix"), prefix, env_var_name_errs(prefix));
        }
        let mut n = 0;
        for f in ["configMapRef", "secretRef"] {
            if let Some(r) = get(ef, f) {
                n += 1;
                let name = st(r, "name").unwrap_or("");
                let rp = child(&child(&ip, f), "name");
                if name.is_empty() {
                    e.required(&rp, "");
                } else {
                    e.each(&rp, name, NameRule::Subdomain.check(name, true));
                }
            }
        }
        if n == 0 {
            e.invalid(
                &efp,
                s(""),
                "must specify one of: `configMapRef` or `secretRef`",
            );
        } else if n > 1 {
            e.invalid(
                &efp,
                s(""),
                "may not have more than one field specified at a time",
            );
        }
    }
    // Volume mounts.
    let vmp = child(path, "volumeMounts");
    let mut mount_points: Vec<&str> = Vec::new();
    for (i, m) in items(c, "volumeMounts").iter().enumerate() {
        let ip = index(&vmp, i);
        let n = st(m, "name").unwrap_or("");
        if n.is_empty() {
            e.required(&child(&ip, "name"), "");
        }
        if !volumes.contains(&n) {
            e.not_found(&child(&ip, "name"), s(n));
        }
        let mp = st(m, "mountPath").unwrap_or("");
        if mp.is_empty() {
            e.required(&child(&ip, "mountPath"), "");
        }
        if mount_points.contains(&mp) {
            e.invalid(&child(&ip, "mountPath"), s(mp), "must be unique");
        }
        mount_points.push(mp);
    }
    if let Some(pp) = st(c, "imagePullPolicy").filter(|x| !x.is_empty()) {
        if !["Always", "IfNotPresent", "Never"].contains(&pp) {
            e.not_supported(
                &child(path, "imagePullPolicy"),
                js(pp),
                &["Always", "IfNotPresent", "Never"],
            );
        }
    }
    if let Some(sc) = get(c, "securityContext") {
        id_ranges(e, sc, &child(path, "securityContext"));
    }
}

/// `validateEnvVarValueFrom` (subset).
pub(crate) fn env_value_from(e: &mut Errs, ev: &Value, vf: &Value, path: &str) {
    let mut n = 0;
    if let Some(fr) = get(vf, "fieldRef") {
        n += 1;
        let fp = child(path, "fieldRef");
        let av = st(fr, "apiVersion").unwrap_or("v1");
        let fpath = st(fr, "fieldPath").unwrap_or("");
        if fpath.is_empty() {
            e.required(&child(&fp, "fieldPath"), "");
        } else if av != "v1" {
            e.invalid(
                &child(&fp, "fieldPath"),
                s(fpath),
                &format!("error converting fieldPath: unsupported pod version: {av}"),
            );
        } else {
            const ENV_PATHS: [&str; 9] = [
                "metadata.name",
                "metadata.namespace",
                "metadata.uid",
                "spec.nodeName",
                "spec.serviceAccountName",
                "status.hostIP",
                "status.hostIPs",
                "status.podIP",
                "status.podIPs",
            ];
            const CONVERTIBLE: [&str; 14] = [
                "metadata.annotations",
                "metadata.labels",
                "metadata.name",
                "metadata.namespace",
                "metadata.uid",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.serviceAccountName",
                "spec.schedulerName",
                "status.phase",
                "status.hostIP",
                "status.hostIPs",
                "status.podIP",
                "status.podIPs",
            ];
            let subscripted = fpath
                .strip_suffix("']")
                .and_then(|p| p.split_once("['"))
                .filter(|(base, _)| *base == "metadata.annotations" || *base == "metadata.labels");
            if let Some((base, sub)) = subscripted {
                let sub = if base == "metadata.annotations" {
                    sub.to_lowercase()
                } else {
                    sub.to_string()
                };
                e.each(&fp, &sub, qualified_name_errs(&sub));
            } else if !CONVERTIBLE.contains(&fpath) && fpath != "spec.host" {
                e.invalid(
                    &child(&fp, "fieldPath"),
                    s(fpath),
                    &format!("error converting fieldPath: field label not supported: {fpath}"),
                );
            } else {
                let internal = if fpath == "spec.host" {
                    "spec.nodeName"
                } else {
                    fpath
                };
                if !ENV_PATHS.contains(&internal) {
                    e.not_supported(&child(&fp, "fieldPath"), s(internal), &ENV_PATHS);
                }
            }
        }
    }
    if get(vf, "resourceFieldRef").is_some() {
        n += 1;
    }
    for f in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(r) = get(vf, f) {
            n += 1;
            let rp = child(path, f);
            let name = st(r, "name").unwrap_or("");
            e.each(&child(&rp, "name"), name, dns1123_subdomain_errs(name));
            let k = st(r, "key").unwrap_or("");
            if k.is_empty() {
                e.required(&child(&rp, "key"), "");
            } else {
                e.each(&child(&rp, "key"), k, config_map_key_errs(k));
            }
        }
    }
    if n == 0 {
        e.invalid(
            path,
            s(""),
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        );
    } else if st(ev, "value").is_some_and(|v| !v.is_empty()) {
        e.invalid(
            path,
            s(""),
            "may not be specified when `value` is not empty",
        );
    } else if n > 1 {
        e.invalid(
            path,
            s(""),
            "may not have more than one field specified at a time",
        );
    }
}

/// Liveness/readiness/startup probes and lifecycle handlers (subset).
pub(crate) fn probes(e: &mut Errs, c: &Value, path: &str, grace: Option<i64>) {
    if let Some(lc) = get(c, "lifecycle") {
        for h in ["postStart", "preStop"] {
            if let Some(handler) = get(lc, h) {
                validate_handler(
                    e,
                    handler,
                    &child(&child(path, "lifecycle"), h),
                    grace,
                    true,
                );
            }
        }
    }
    for f in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(p) = get(c, f) else { continue };
        let pp = child(path, f);
        validate_handler(e, p, &pp, grace, false);
        for n in [
            "initialDelaySeconds",
            "timeoutSeconds",
            "periodSeconds",
            "successThreshold",
            "failureThreshold",
        ] {
            e.nonnegative(&child(&pp, n), int(p, n));
        }
        if let Some(t) = int(p, "terminationGracePeriodSeconds") {
            if f == "readinessProbe" {
                e.invalid(
                    &child(&pp, "terminationGracePeriodSeconds"),
                    Bad::Int(t),
                    "must not be set for readinessProbes",
                );
            } else if t <= 0 {
                e.invalid(
                    &child(&pp, "terminationGracePeriodSeconds"),
                    Bad::Int(t),
                    "must be greater than 0",
                );
            }
        }
        if f != "readinessProbe" {
            if let Some(st) = int(p, "successThreshold").filter(|s| *s != 1) {
                e.invalid(&child(&pp, "successThreshold"), Bad::Int(st), "must be 1");
            }
        }
    }
}

/// `validateHandler`.
pub(crate) fn validate_handler(
    e: &mut Errs,
    h: &Value,
    path: &str,
    grace: Option<i64>,
    lifecycle: bool,
) {
    let kinds: &[&str] = if lifecycle {
        &["exec", "httpGet", "tcpSocket", "sleep"]
    } else {
        &["exec", "httpGet", "tcpSocket", "grpc"]
    };
    let mut n = 0;
    for k in kinds {
        let Some(a) = get(h, k) else { continue };
        let ap = child(path, k);
        if n > 0 {
            e.forbidden(&ap, "may not specify more than 1 handler type");
            continue;
        }
        n += 1;
        match *k {
            "exec" => {
                if items(a, "command").is_empty() {
                    e.required(&child(&ap, "command"), "");
                }
            }
            "httpGet" => {
                if let Some(port) = get(a, "port") {
                    port_num_or_name(e, port, &child(&ap, "port"), false);
                }
                if let Some(sc) = st(a, "scheme").filter(|x| !x.is_empty()) {
                    if sc != "HTTP" && sc != "HTTPS" {
                        e.not_supported(&child(&ap, "scheme"), js(sc), &["HTTP", "HTTPS"]);
                    }
                }
            }
            "tcpSocket" | "grpc" => {
                let port = get(a, "port").cloned().unwrap_or(Value::from(0));
                port_num_or_name(e, &port, &child(&ap, "port"), false);
            }
            _ => {
                let secs = int(a, "seconds").unwrap_or(0);
                let g = grace.unwrap_or(30);
                if secs <= 0 || secs > g {
                    e.invalid(
                        &ap,
                        Bad::Int(secs),
                        &format!("must be greater than 0 and less than terminationGracePeriodSeconds ({g})"),
                    );
                }
            }
        }
    }
    if n == 0 {
        e.required(path, "must specify a handler type");
    }
}
