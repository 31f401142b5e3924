//! What the DRA kinds' validation shares (upstream `pkg/apis/resource/validation`):
//! driver, pool and device names, device claims (requests, selectors, constraints,
//! configuration) and allocation results. The main rules are here; the advanced
//! features behind alpha gates (consumable capacity, binding conditions, device
//! taints' effects beyond the enum, partitionable devices' counters) are checked only
//! for their shape.

use crate::registry::validation::prelude::*;

/// `resource.DeviceRequestsMaxSize`, also the limit of constraints and configs.
pub(crate) const MAX_REQUESTS: usize = 32;
/// `resource.DeviceSelectorsMaxSize`.
pub(crate) const MAX_SELECTORS: usize = 32;
/// `resource.DeviceConfigMaxSize`.
pub(crate) const MAX_CONFIGS: usize = 32;
/// `resource.FirstAvailableDeviceRequestMaxSize`.
pub(crate) const MAX_SUBREQUESTS: usize = 8;
/// `resource.CELSelectorExpressionMaxLength`.
pub(crate) const MAX_CEL_LENGTH: usize = 10 * 1024;
/// `resource.OpaqueParametersMaxLength`.
pub(crate) const MAX_PARAMETERS_LENGTH: usize = 10 * 1024;
/// `resource.ResourceSliceMaxDevices`.
pub(crate) const MAX_DEVICES: usize = 128;
/// `resource.ResourceSliceMaxDevicesWithAdvancedFeatures` (taints, counters, lists).
pub(crate) const MAX_DEVICES_ADVANCED: usize = 64;
/// `resource.ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
pub(crate) const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// `resource.PoolNameMaxLength`.
pub(crate) const MAX_POOL_NAME: usize = 253;
/// `resource.DeviceTaintsMaxLength`.
pub(crate) const MAX_TAINTS: usize = 16;
/// `resource.ResourceClaimReservedForMaxSize`.
pub(crate) const MAX_RESERVED_FOR: usize = 256;
/// `resource.AllocationResultsMaxSize`.
pub(crate) const MAX_RESULTS: usize = 32;

/// `field.TooMany` of a list longer than `max` (declarative `maxItems`).
fn too_many(e: &mut Errs, list: &[Value], max: usize, path: &str) -> bool {
    if list.len() > max {
        e.too_many(path, list.len() as i64, max as i64);
        return true;
    }
    false
}

/// `ValidateCSIDriverName` (the driver of slices, results and opaque configs).
pub(crate) fn driver_name(e: &mut Errs, name: &str, path: &str) {
    if name.is_empty() {
        e.required(path, "");
        return;
    }
    if name.len() > 63 {
        e.too_long(path, 63);
    }
    let lower = name.to_lowercase();
    for m in dns1123_subdomain_errs(&lower) {
        e.invalid(path, s(name), &m);
    }
}

/// `validatePoolName`: required, at most 253 characters, `/`-separated DNS subdomains.
pub(crate) fn pool_name(e: &mut Errs, name: &str, path: &str) {
    if name.is_empty() {
        e.required(path, "");
        return;
    }
    if name.len() > MAX_POOL_NAME {
        e.too_long(path, MAX_POOL_NAME);
    }
    for part in name.split('/') {
        e.each(path, part, dns1123_subdomain_errs(part));
    }
}

/// A DNS label (device names, request names).
pub(crate) fn label_name(e: &mut Errs, name: &str, path: &str) {
    if name.is_empty() {
        e.required(path, "");
    } else {
        e.each(path, name, dns1123_label_errs(name));
    }
}

/// `validateCELExpression` of a device selector: at most 10 KiB, compiles.
pub(crate) fn cel_expression(e: &mut Errs, expr: &str, path: &str) {
    if expr.is_empty() {
        e.required(path, "");
        return;
    }
    if expr.len() > MAX_CEL_LENGTH {
        e.too_long(path, MAX_CEL_LENGTH);
        return;
    }
    if let Some(msg) = crate::machinery::cel::syntax_error(expr) {
        e.invalid(path, s(expr), &msg);
    }
}

/// `validateSelectorSlice`: every selector has a CEL expression that compiles.
/// `stored`: unchanged selectors of a stored object are not compiled again.
pub(crate) fn selectors(e: &mut Errs, list: &[Value], path: &str, stored: bool) {
    if too_many(e, list, MAX_SELECTORS, path) {
        return;
    }
    for (i, sel) in list.iter().enumerate() {
        let p = index(path, i);
        match get(sel, "cel") {
            None => e.required(&child(&p, "cel"), ""),
            Some(cel) if !stored => cel_expression(
                e,
                st(cel, "expression").unwrap_or(""),
                &child(&child(&p, "cel"), "expression"),
            ),
            Some(_) => {}
        }
    }
}

/// `validateDeviceConfiguration`: an `opaque` configuration with a driver and
/// parameters (a JSON object of at most 10 KiB).
pub(crate) fn device_configuration(e: &mut Errs, config: &Value, path: &str) {
    let Some(opaque) = get(config, "opaque") else {
        e.required(&child(path, "opaque"), "");
        return;
    };
    let p = child(path, "opaque");
    driver_name(e, st(opaque, "driver").unwrap_or(""), &child(&p, "driver"));
    let pp = child(&p, "parameters");
    match get(opaque, "parameters") {
        None => e.required(&pp, ""),
        Some(v) => {
            let raw = v.to_string();
            if raw.len() > MAX_PARAMETERS_LENGTH {
                e.too_long(&pp, MAX_PARAMETERS_LENGTH);
            } else if !v.is_object() {
                e.invalid(&pp, Bad::Omit, "parameters must be a valid JSON object");
            }
        }
    }
}

/// Request names and, for requests with `firstAvailable`, their subrequest names.
pub(crate) fn request_names(devices: &Value) -> Vec<(String, Option<Vec<String>>)> {
    items(devices, "requests")
        .iter()
        .map(|r| {
            let name = st(r, "name").unwrap_or("").to_string();
            let subs = arr(r, "firstAvailable").filter(|a| !a.is_empty()).map(|a| {
                a.iter()
                    .map(|s| st(s, "name").unwrap_or("").to_string())
                    .collect()
            });
            (name, subs)
        })
        .collect()
}

/// `requestNames.Has`: `req` or `req/sub`.
fn has_request(names: &[(String, Option<Vec<String>>)], reference: &str) -> bool {
    let segments: Vec<&str> = reference.split('/').collect();
    if segments.len() > 2 {
        return false;
    }
    let Some((_, subs)) = names.iter().find(|(n, _)| n == segments[0]) else {
        return false;
    };
    match segments.get(1) {
        None => true,
        Some(sub) => subs.as_ref().is_some_and(|s| s.iter().any(|x| x == sub)),
    }
}

const REQUEST_REF: &str =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

/// `validateRequestNameRef` for each entry of a `requests` list (unique).
fn request_refs(e: &mut Errs, refs: &[Value], names: &[(String, Option<Vec<String>>)], path: &str) {
    if too_many(e, refs, MAX_REQUESTS, path) {
        return;
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let p = index(path, i);
        let name = r.as_str().unwrap_or("");
        if seen.contains(&name) {
            e.duplicate(&p, s(name));
            continue;
        }
        seen.push(name);
        let segments: Vec<&str> = name.split('/').collect();
        if segments.len() > 2 {
            e.invalid(&p, s(name), REQUEST_REF);
            continue;
        }
        for seg in &segments {
            label_name(e, seg, &p);
        }
        if !has_request(names, name) {
            e.invalid(&p, s(name), REQUEST_REF);
        }
    }
}

/// `validateDeviceAllocationMode`.
fn allocation_mode(e: &mut Errs, r: &Value, path: &str) {
    let mode = st(r, "allocationMode").unwrap_or("");
    let count = int(r, "count").unwrap_or(0);
    match mode {
        "All" => {
            if count != 0 {
                e.invalid(
                    &child(path, "count"),
                    Bad::Int(count),
                    "must not be specified when allocationMode is 'All'",
                );
            }
        }
        "ExactCount" => {
            if count <= 0 {
                e.invalid(
                    &child(path, "count"),
                    Bad::Int(count),
                    "must be greater than zero",
                );
            }
        }
        other => e.not_supported(
            &child(path, "allocationMode"),
            js(other),
            &["All", "ExactCount"],
        ),
    }
}

/// `validDeviceTaintEffects`, sorted.
const TAINT_EFFECTS: [&str; 3] = ["NoExecute", "NoSchedule", "None"];

/// `validateDeviceTaint` of a slice's device.
pub(crate) fn device_taint(e: &mut Errs, t: &Value, p: &str) {
    let k = st(t, "key").unwrap_or("");
    e.each(&child(p, "key"), k, qualified_name_errs(k));
    let v = st(t, "value").unwrap_or("");
    if !v.is_empty() {
        e.each(
            &child(p, "value"),
            v,
            apimachinery::names::is_label_value(v),
        );
    }
    let effect = st(t, "effect").unwrap_or("");
    if effect.is_empty() {
        e.required(&child(p, "effect"), "");
    } else if !TAINT_EFFECTS.contains(&effect) {
        e.not_supported(&child(p, "effect"), js(effect), &TAINT_EFFECTS);
    }
}

/// `validateDeviceToleration` (the operator is defaulted to `Equal`).
fn device_tolerations(e: &mut Errs, list: &[Value], path: &str) {
    for (i, t) in list.iter().enumerate() {
        let p = index(path, i);
        let k = st(t, "key").unwrap_or("");
        if !k.is_empty() {
            e.each(&child(&p, "key"), k, qualified_name_errs(k));
        }
        let value = st(t, "value").unwrap_or("");
        match st(t, "operator").unwrap_or("") {
            "Exists" => {
                if !value.is_empty() {
                    e.invalid(
                        &child(&p, "value"),
                        s(value),
                        "must be empty for operator `Exists`",
                    );
                }
            }
            "Equal" => e.each(
                &child(&p, "value"),
                value,
                apimachinery::names::is_label_value(value),
            ),
            "" => e.required(&child(&p, "operator"), ""),
            other => e.not_supported(&child(&p, "operator"), js(other), &["Equal", "Exists"]),
        }
        let effect = st(t, "effect").unwrap_or("");
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            e.not_supported(&child(&p, "effect"), js(effect), &TAINT_EFFECTS);
        }
    }
}

/// The parts an exact request and a subrequest share.
fn request_body(e: &mut Errs, r: &Value, path: &str, stored: bool) {
    let class = st(r, "deviceClassName").unwrap_or("");
    let cp = child(path, "deviceClassName");
    if class.is_empty() {
        e.required(&cp, "");
    } else {
        e.each(&cp, class, dns1123_subdomain_errs(class));
    }
    selectors(e, items(r, "selectors"), &child(path, "selectors"), stored);
    allocation_mode(e, r, path);
    device_tolerations(e, items(r, "tolerations"), &child(path, "tolerations"));
}

/// `validateDeviceClaim`: `spec.devices` of a claim (or a template's claim spec).
pub(crate) fn device_claim(e: &mut Errs, devices: &Value, path: &str, stored: bool) {
    let names = request_names(devices);
    let requests = items(devices, "requests");
    let rp = child(path, "requests");
    if !too_many(e, requests, MAX_REQUESTS, &rp) {
        let mut seen: Vec<&str> = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            let p = index(&rp, i);
            let name = st(r, "name").unwrap_or("");
            if seen.contains(&name) {
                e.duplicate(&p, Bad::Json(r.clone()));
                continue;
            }
            seen.push(name);
            label_name(e, name, &child(&p, "name"));
            let first = items(r, "firstAvailable");
            let exactly = get(r, "exactly");
            match (first.is_empty(), exactly) {
                (true, None) => {
                    e.required(&p, "exactly one of `exactly` or `firstAvailable` is required")
                }
                (false, Some(_)) => e.invalid(
                    &p,
                    Bad::Unstructured(Value::Null),
                    "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
                ),
                (false, None) => {
                    let fp = child(&p, "firstAvailable");
                    if !too_many(e, first, MAX_SUBREQUESTS, &fp) {
                        let mut sub_seen: Vec<&str> = Vec::new();
                        for (j, sr) in first.iter().enumerate() {
                            let sp = index(&fp, j);
                            let sname = st(sr, "name").unwrap_or("");
                            if sub_seen.contains(&sname) {
                                e.duplicate(&sp, Bad::Json(sr.clone()));
                                continue;
                            }
                            sub_seen.push(sname);
                            label_name(e, sname, &child(&sp, "name"));
                            request_body(e, sr, &sp, stored);
                        }
                    }
                }
                (true, Some(x)) => request_body(e, x, &child(&p, "exactly"), stored),
            }
        }
    }
    let constraints = items(devices, "constraints");
    let cp = child(path, "constraints");
    if !too_many(e, constraints, MAX_REQUESTS, &cp) {
        for (i, c) in constraints.iter().enumerate() {
            let p = index(&cp, i);
            request_refs(e, items(c, "requests"), &names, &child(&p, "requests"));
            if let Some(a) = st(c, "matchAttribute") {
                fully_qualified_name(e, a, &child(&p, "matchAttribute"));
            } else if let Some(a) = st(c, "distinctAttribute") {
                fully_qualified_name(e, a, &child(&p, "distinctAttribute"));
            } else {
                e.required(&child(&p, "matchAttribute"), "");
            }
        }
    }
    let configs = items(devices, "config");
    let fp = child(path, "config");
    if !too_many(e, configs, MAX_CONFIGS, &fp) {
        for (i, c) in configs.iter().enumerate() {
            let p = index(&fp, i);
            request_refs(e, items(c, "requests"), &names, &child(&p, "requests"));
            device_configuration(e, c, &p);
        }
    }
}

/// `validateFullyQualifiedName`: `<domain>/<id>`, the domain a DNS subdomain of at
/// most 63 characters, the id a C identifier of at most 32.
pub(crate) fn fully_qualified_name(e: &mut Errs, name: &str, path: &str) {
    match name.split_once('/') {
        None => e.required(path, "must include a domain"),
        Some((domain, id)) => {
            if domain.is_empty() {
                e.required(path, "the domain must not be empty");
            } else {
                if domain.len() > 63 {
                    e.too_long(path, 63);
                }
                e.each(path, domain, dns1123_subdomain_errs(domain));
            }
            c_identifier(e, id, path);
        }
    }
}

/// `validateCIdentifier`, at most 32 characters (attribute and capacity ids).
pub(crate) fn c_identifier(e: &mut Errs, id: &str, path: &str) {
    if id.len() > 32 {
        e.too_long(path, 32);
    }
    let ok = !id.is_empty()
        && id
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        e.invalid(
            path,
            s(id),
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        );
    }
}

/// `validateQualifiedName`: an attribute or capacity key, an id with an optional
/// domain.
pub(crate) fn qualified_key(e: &mut Errs, name: &str, path: &str) {
    if name.is_empty() {
        e.required(path, "name required");
        return;
    }
    match name.split_once('/') {
        None => c_identifier(e, name, path),
        Some(_) => fully_qualified_name(e, name, path),
    }
}

/// `resource.DeviceAttributeMaxValueLength`.
pub(crate) const MAX_ATTRIBUTE_VALUE: usize = 64;

/// A DeviceAttribute's value fields, in Go struct order.
const ATTRIBUTE_FIELDS: [&str; 8] = [
    "int", "bool", "string", "version", "ints", "bools", "strings", "versions",
];

/// `validateDeviceAttribute`: exactly one value; strings at most 64 bytes; versions
/// semantic versions; lists not empty.
pub(crate) fn device_attribute(e: &mut Errs, v: &Value, path: &str) {
    let set: Vec<&str> = ATTRIBUTE_FIELDS
        .iter()
        .copied()
        .filter(|f| get(v, f).is_some())
        .collect();
    if let Some(sv) = st(v, "string") {
        if sv.len() > MAX_ATTRIBUTE_VALUE {
            e.too_long(&child(path, "string"), MAX_ATTRIBUTE_VALUE);
        }
    }
    if let Some(ver) = st(v, "version") {
        version_value(e, ver, &child(path, "version"));
    }
    for list in ["bools", "ints", "strings", "versions"] {
        let Some(items) = arr(v, list) else { continue };
        let lp = child(path, list);
        if items.is_empty() {
            e.invalid(
                &lp,
                Bad::Json(Value::Array(Vec::new())),
                "must not be empty if specified",
            );
        }
        for (i, item) in items.iter().enumerate() {
            let Some(sv) = item.as_str() else { continue };
            if list == "strings" && sv.len() > MAX_ATTRIBUTE_VALUE {
                e.too_long(&index(&lp, i), MAX_ATTRIBUTE_VALUE);
            }
            if list == "versions" {
                version_value(e, sv, &index(&lp, i));
            }
        }
    }
    match set.len() {
        0 => e.invalid(path, s(""), "exactly one value must be specified"),
        1 => {}
        _ => {
            // a DeviceAttribute as encoding/json writes it: struct field order
            let ordered: Map<String, Value> = set
                .iter()
                .filter_map(|f| get(v, f).map(|x| (f.to_string(), x.clone())))
                .collect();
            e.invalid(
                path,
                Bad::Json(Value::Object(ordered)),
                "exactly one value must be specified",
            );
        }
    }
}

/// `validateDeviceAttributeVersionValue`: semver 2.0.0, at most 64 bytes.
fn version_value(e: &mut Errs, v: &str, path: &str) {
    if !is_semver(v) {
        e.invalid(
            path,
            s(v),
            "must be a string compatible with semver.org spec 2.0.0",
        );
    }
    if v.len() > MAX_ATTRIBUTE_VALUE {
        e.too_long(path, MAX_ATTRIBUTE_VALUE);
    }
}

/// Upstream's `semverRe`: `MAJOR.MINOR.PATCH[-pre.release][+build.meta]`, no leading
/// zeros in numeric identifiers.
pub(crate) fn is_semver(v: &str) -> bool {
    let numeric = |x: &str| {
        !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit()) && (x == "0" || !x.starts_with('0'))
    };
    let ident =
        |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    if build.is_some_and(|b| !b.split('.').all(ident)) {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let pre_ok = pre.is_none_or(|p| {
        p.split('.')
            .all(|x| ident(x) && (numeric(x) || x.bytes().any(|b| !b.is_ascii_digit())))
    });
    let parts: Vec<&str> = core.split('.').collect();
    pre_ok && parts.len() == 3 && parts.iter().all(|x| numeric(x))
}

/// The status checks of a claim (`validateResourceClaimStatusUpdate`): reservations
/// need an allocation, an allocation is immutable once set, a new one names the
/// claim's requests.
pub(crate) fn claim_status(e: &mut Errs, claim: &Value, old: &Value) {
    let empty = Value::Object(Map::new());
    let status = get(claim, "status").unwrap_or(&empty);
    let old_status = get(old, "status").unwrap_or(&empty);
    let reserved = items(status, "reservedFor");
    let rp = "status.reservedFor";
    if !too_many(e, reserved, MAX_RESERVED_FOR, rp) {
        let mut seen: Vec<&str> = Vec::new();
        for (i, r) in reserved.iter().enumerate() {
            let p = index(rp, i);
            let uid = st(r, "uid").unwrap_or("");
            if !uid.is_empty() && seen.contains(&uid) {
                e.duplicate(&p, Bad::Json(r.clone()));
                continue;
            }
            seen.push(uid);
            for f in ["resource", "name", "uid"] {
                if st(r, f).unwrap_or("").is_empty() {
                    e.required(&child(&p, f), "");
                }
            }
        }
    }
    let allocation = get(status, "allocation");
    let deleted = get(claim, "metadata")
        .and_then(|m| get(m, "deletionTimestamp"))
        .is_some();
    if !reserved.is_empty() {
        if allocation.is_none() {
            e.forbidden(rp, "may not be specified when `allocated` is not set");
        } else if deleted {
            let old_reserved = items(old_status, "reservedFor");
            if reserved.iter().any(|r| !old_reserved.contains(r)) {
                e.forbidden(
                    rp,
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                );
            }
        }
    }
    let old_allocation = get(old_status, "allocation");
    match (allocation, old_allocation) {
        (Some(a), Some(o)) if !json_eq(Some(a), Some(o)) => {
            e.invalid("status.allocation", Bad::Json(a.clone()), IMMUTABLE);
        }
        (Some(a), None) => {
            let names = request_names(
                get(claim, "spec")
                    .and_then(|s| get(s, "devices"))
                    .unwrap_or(&empty),
            );
            allocation_result(e, a, "status.allocation", &names);
        }
        _ => {}
    }
}

/// `validateAllocationResult` of a new allocation.
fn allocation_result(e: &mut Errs, a: &Value, path: &str, names: &[(String, Option<Vec<String>>)]) {
    let empty = Value::Object(Map::new());
    let devices = get(a, "devices").unwrap_or(&empty);
    let dp = child(path, "devices");
    let results = items(devices, "results");
    let rp = child(&dp, "results");
    if !too_many(e, results, MAX_RESULTS, &rp) {
        for (i, r) in results.iter().enumerate() {
            let p = index(&rp, i);
            let request = st(r, "request").unwrap_or("");
            let reqp = child(&p, "request");
            let segments: Vec<&str> = request.split('/').collect();
            if segments.len() > 2 {
                e.invalid(&reqp, s(request), REQUEST_REF);
            } else {
                for seg in &segments {
                    label_name(e, seg, &reqp);
                }
                if !has_request(names, request) {
                    e.invalid(&reqp, s(request), REQUEST_REF);
                }
            }
            driver_name(e, st(r, "driver").unwrap_or(""), &child(&p, "driver"));
            pool_name(e, st(r, "pool").unwrap_or(""), &child(&p, "pool"));
            label_name(e, st(r, "device").unwrap_or(""), &child(&p, "device"));
        }
    }
    let configs = items(devices, "config");
    let cp = child(&dp, "config");
    if !too_many(e, configs, 2 * MAX_CONFIGS, &cp) {
        for (i, c) in configs.iter().enumerate() {
            let p = index(&cp, i);
            match st(c, "source").unwrap_or("") {
                "" => e.required(&child(&p, "source"), ""),
                "FromClaim" | "FromClass" => {}
                other => {
                    e.not_supported(&child(&p, "source"), js(other), &["FromClaim", "FromClass"])
                }
            }
            request_refs(e, items(c, "requests"), names, &child(&p, "requests"));
            device_configuration(e, c, &p);
        }
    }
}
