//! Upstream's `plugin/pkg/admission/limitranger/admission_test.go` tables:
//! `TestDefaultContainerResourceRequirements`, `TestMergePodResourceRequirements`,
//! `TestPodLimitFunc` (success and error cases), `TestPodLimitFuncApplyDefault` and
//! `TestPersistentVolumeClaimLimitFunc`, plus the exact messages.

use super::*;

/// `getComputeResourceList`.
fn res(cpu: &str, memory: &str) -> Value {
    let mut m = Map::new();
    if !cpu.is_empty() {
        m.insert("cpu".into(), json!(cpu));
    }
    if !memory.is_empty() {
        m.insert("memory".into(), json!(memory));
    }
    Value::Object(m)
}

/// `getLocalStorageResourceList`.
fn eph(v: &str) -> Value {
    if v.is_empty() {
        json!({})
    } else {
        json!({"ephemeral-storage": v})
    }
}

/// `getStorageResourceList`.
fn storage(v: &str) -> Value {
    if v.is_empty() {
        json!({})
    } else {
        json!({"storage": v})
    }
}

fn none() -> Value {
    json!({})
}

/// `getResourceRequirements`: empty lists are left out, as Go's omitempty does.
fn rr(requests: Value, limits: Value) -> Value {
    let mut m = Map::new();
    if requests.as_object().is_some_and(|o| !o.is_empty()) {
        m.insert("requests".into(), requests);
    }
    if limits.as_object().is_some_and(|o| !o.is_empty()) {
        m.insert("limits".into(), limits);
    }
    Value::Object(m)
}

/// `validPod`.
fn valid_pod(name: &str, n: usize, resources: Value) -> Value {
    let cs: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("foo-{i}"), "image": format!("foo:V{i}"), "resources": resources}))
        .collect();
    json!({"metadata": {"name": name, "namespace": "test"}, "spec": {"containers": cs}})
}

/// `validPodInit`.
fn valid_pod_init(mut pod: Value, resources: &[Value]) -> Value {
    let cs: Vec<Value> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| json!({"name": format!("foo-{i}"), "image": format!("foo:V{i}"), "resources": r}))
        .collect();
    pod["spec"]["initContainers"] = json!(cs);
    pod
}

/// `withRestartableInitContainer`.
fn with_sidecar(requests: Value, limits: Value, mut pod: Value) -> Value {
    let n = pod["spec"]["initContainers"].as_array().map_or(0, Vec::len);
    let c = json!({"name": format!("foo-{n}"), "restartPolicy": "Always", "resources": rr(requests, limits)});
    match pod["spec"]["initContainers"].as_array_mut() {
        Some(a) => a.push(c),
        None => pod["spec"]["initContainers"] = json!([c]),
    }
    pod
}

/// `createLimitRange`.
fn lr(
    kind: &str,
    min: Value,
    max: Value,
    default: Value,
    default_request: Value,
    ratio: Value,
) -> Value {
    let mut item = Map::new();
    item.insert("type".into(), json!(kind));
    for (k, v) in [
        ("min", min),
        ("max", max),
        ("default", default),
        ("defaultRequest", default_request),
        ("maxLimitRequestRatio", ratio),
    ] {
        if v.as_object().is_some_and(|o| !o.is_empty()) {
            item.insert(k.into(), v);
        }
    }
    json!({"metadata": {"name": "abc", "namespace": "test"}, "spec": {"limits": [item]}})
}

/// `validLimitRange`.
fn valid_limit_range() -> Value {
    json!({"metadata": {"name": "abc", "namespace": "test"}, "spec": {"limits": [
        {"type": "Pod", "max": res("200m", "4Gi"), "min": res("50m", "2Mi")},
        {"type": "Container", "max": res("100m", "2Gi"), "min": res("25m", "1Mi"),
         "default": res("75m", "10Mi"), "defaultRequest": res("50m", "5Mi")},
    ]}})
}

fn ctr(name: &str, n: usize, requests: Value, limits: Value) -> Value {
    valid_pod(name, n, rr(requests, limits))
}

fn container_lr(min: Value, max: Value, ratio: Value) -> Value {
    lr("Container", min, max, none(), none(), ratio)
}

fn pod_lr(min: Value, max: Value, ratio: Value) -> Value {
    lr("Pod", min, max, none(), none(), ratio)
}

fn annotation(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
}

#[test]
fn default_container_resource_requirements() {
    let (requests, limits) = default_requirements(&valid_limit_range());
    assert_eq!(Value::Object(requests), res("50m", "5Mi"));
    assert_eq!(Value::Object(limits), res("75m", "10Mi"));
}

#[test]
fn merge_pod_resource_requirements() {
    let (requests, limits) = default_requirements(&valid_limit_range());
    // no resources: every default, and the annotation says so
    let mut pod = valid_pod("empty-resources", 1, json!({}));
    merge_pod(&mut pod, &requests, &limits);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        rr(res("50m", "5Mi"), res("75m", "10Mi"))
    );
    assert_eq!(
        annotation(&pod),
        Some("LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0")
    );
    // some resources: only the missing ones, init containers too
    let input = rr(res("", "512Mi"), none());
    let mut pod = valid_pod_init(valid_pod("limit-memory", 1, input.clone()), &[input]);
    merge_pod(&mut pod, &requests, &limits);
    let expected = rr(res("50m", "512Mi"), res("75m", "10Mi"));
    assert_eq!(pod["spec"]["containers"][0]["resources"], expected);
    assert_eq!(pod["spec"]["initContainers"][0]["resources"], expected);
    assert_eq!(
        annotation(&pod),
        Some("LimitRanger plugin set: cpu request for container foo-0; cpu, memory limit for container foo-0; cpu request for init container foo-0; cpu, memory limit for init container foo-0")
    );
    // everything given: nothing merged, no annotation
    let input = rr(res("100m", "512Mi"), res("200m", "1G"));
    let init = rr(res("200m", "1G"), res("400m", "2G"));
    let mut pod = valid_pod_init(
        valid_pod("limit-memory", 1, input.clone()),
        std::slice::from_ref(&init),
    );
    merge_pod(&mut pod, &requests, &limits);
    assert_eq!(pod["spec"]["containers"][0]["resources"], input);
    assert_eq!(pod["spec"]["initContainers"][0]["resources"], init);
    assert_eq!(annotation(&pod), None);
}

#[test]
fn pod_limit_func_apply_default() {
    let mut pod = valid_pod_init(valid_pod("foo", 1, json!({})), &[json!({})]);
    mutate(&[valid_limit_range()], "pods", &mut pod);
    for key in ["containers", "initContainers"] {
        let r = &pod["spec"][key][0]["resources"];
        assert_eq!(r["limits"], res("75m", "10Mi"), "{key}");
        assert_eq!(r["requests"], res("50m", "5Mi"), "{key}");
    }
}

#[test]
fn pod_limit_func_success_cases() {
    let cases = [
        (
            ctr("ctr-min-cpu-request", 1, res("100m", ""), none()),
            container_lr(res("50m", ""), none(), none()),
        ),
        (
            ctr(
                "ctr-min-cpu-request-limit",
                1,
                res("100m", ""),
                res("200m", ""),
            ),
            container_lr(res("50m", ""), none(), none()),
        ),
        (
            ctr("ctr-min-memory-request", 1, res("", "60Mi"), none()),
            container_lr(res("", "50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-min-memory-request-limit",
                1,
                res("", "60Mi"),
                res("", "100Mi"),
            ),
            container_lr(res("", "50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-max-cpu-request-limit",
                1,
                res("500m", ""),
                res("1", ""),
            ),
            container_lr(none(), res("2", ""), none()),
        ),
        (
            ctr("ctr-max-cpu-limit", 1, none(), res("1", "")),
            container_lr(none(), res("2", ""), none()),
        ),
        (
            ctr(
                "ctr-max-mem-request-limit",
                1,
                res("", "250Mi"),
                res("", "500Mi"),
            ),
            container_lr(none(), res("", "1Gi"), none()),
        ),
        (
            ctr("ctr-max-cpu-ratio", 1, res("500m", ""), res("750m", "")),
            container_lr(none(), none(), res("1.5", "")),
        ),
        (
            ctr("ctr-max-mem-limit", 1, none(), res("", "500Mi")),
            container_lr(none(), res("", "1Gi"), none()),
        ),
        (
            ctr("pod-min-cpu-request", 2, res("75m", ""), none()),
            pod_lr(res("100m", ""), none(), none()),
        ),
        (
            ctr(
                "pod-min-cpu-request-limit",
                2,
                res("75m", ""),
                res("200m", ""),
            ),
            pod_lr(res("100m", ""), none(), none()),
        ),
        (
            ctr("pod-min-memory-request", 2, res("", "60Mi"), none()),
            pod_lr(res("", "100Mi"), none(), none()),
        ),
        (
            ctr(
                "pod-min-memory-request-limit",
                2,
                res("", "60Mi"),
                res("", "100Mi"),
            ),
            pod_lr(res("", "100Mi"), none(), none()),
        ),
        (
            valid_pod_init(
                ctr("pod-init-min-memory-request", 2, res("", "60Mi"), none()),
                &[rr(res("", "100Mi"), none())],
            ),
            pod_lr(res("", "100Mi"), none(), none()),
        ),
        (
            valid_pod_init(
                ctr(
                    "pod-init-min-memory-request-limit",
                    2,
                    res("", "60Mi"),
                    res("", "100Mi"),
                ),
                &[rr(res("", "80Mi"), res("", "100Mi"))],
            ),
            pod_lr(res("", "100Mi"), none(), none()),
        ),
        (
            ctr(
                "pod-max-cpu-request-limit",
                2,
                res("500m", ""),
                res("1", ""),
            ),
            pod_lr(none(), res("2", ""), none()),
        ),
        (
            ctr("pod-max-cpu-limit", 2, none(), res("1", "")),
            pod_lr(none(), res("2", ""), none()),
        ),
        (
            valid_pod_init(
                ctr(
                    "pod-init-max-cpu-request-limit",
                    2,
                    res("500m", ""),
                    res("1", ""),
                ),
                &[
                    rr(res("1", ""), res("2", "")),
                    rr(res("1", ""), res("1", "")),
                ],
            ),
            pod_lr(none(), res("2", ""), none()),
        ),
        (
            valid_pod_init(
                ctr("pod-init-max-cpu-limit", 2, none(), res("1", "")),
                &[rr(none(), res("2", "")), rr(none(), res("2", ""))],
            ),
            pod_lr(none(), res("2", ""), none()),
        ),
        (
            ctr(
                "pod-max-mem-request-limit",
                2,
                res("", "250Mi"),
                res("", "500Mi"),
            ),
            pod_lr(none(), res("", "1Gi"), none()),
        ),
        (
            ctr("pod-max-mem-limit", 2, none(), res("", "500Mi")),
            pod_lr(none(), res("", "1Gi"), none()),
        ),
        (
            ctr("pod-max-mem-ratio", 3, res("", "300Mi"), res("", "450Mi")),
            pod_lr(none(), res("", "2Gi"), res("", "1.5")),
        ),
        (
            ctr(
                "ctr-1-min-local-ephemeral-storage-request",
                1,
                eph("60Mi"),
                none(),
            ),
            container_lr(eph("50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-1-min-local-ephemeral-storage-request-limit",
                1,
                eph("60Mi"),
                eph("100Mi"),
            ),
            container_lr(eph("50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-1-max-local-ephemeral-storage-request-limit",
                1,
                eph("250Mi"),
                eph("500Mi"),
            ),
            container_lr(none(), eph("1Gi"), none()),
        ),
        (
            ctr(
                "ctr-1-max-local-ephemeral-storage-limit",
                1,
                none(),
                eph("500Mi"),
            ),
            container_lr(none(), eph("1Gi"), none()),
        ),
        (
            ctr(
                "ctr-2-min-local-ephemeral-storage-request",
                2,
                eph("60Mi"),
                none(),
            ),
            container_lr(eph("50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-2-min-local-ephemeral-storage-request-limit",
                2,
                eph("60Mi"),
                eph("100Mi"),
            ),
            container_lr(eph("50Mi"), none(), none()),
        ),
        (
            ctr(
                "ctr-2-max-local-ephemeral-storage-request-limit",
                2,
                eph("250Mi"),
                eph("500Mi"),
            ),
            container_lr(none(), eph("600Mi"), none()),
        ),
        (
            ctr(
                "ctr-2-max-local-ephemeral-storage-limit",
                2,
                none(),
                eph("500Mi"),
            ),
            container_lr(none(), eph("600Mi"), none()),
        ),
        (
            ctr(
                "pod-min-local-ephemeral-storage-request",
                2,
                eph("60Mi"),
                none(),
            ),
            pod_lr(eph("100Mi"), none(), none()),
        ),
        (
            ctr(
                "pod-min-local-ephemeral-storage-request-limit",
                2,
                eph("60Mi"),
                eph("100Mi"),
            ),
            pod_lr(eph("100Mi"), none(), none()),
        ),
        (
            valid_pod_init(
                ctr(
                    "pod-init-min-local-ephemeral-storage-request",
                    2,
                    eph("60Mi"),
                    none(),
                ),
                &[rr(eph("100Mi"), none())],
            ),
            pod_lr(eph("100Mi"), none(), none()),
        ),
        (
            valid_pod_init(
                ctr(
                    "pod-init-min-local-ephemeral-storage-request-limit",
                    2,
                    eph("60Mi"),
                    eph("100Mi"),
                ),
                &[rr(eph("80Mi"), eph("100Mi"))],
            ),
            pod_lr(eph("100Mi"), none(), none()),
        ),
        (
            ctr(
                "pod-max-local-ephemeral-storage-request-limit",
                2,
                eph("250Mi"),
                eph("500Mi"),
            ),
            pod_lr(none(), eph("1Gi"), none()),
        ),
        (
            ctr(
                "pod-max-local-ephemeral-storage-limit",
                2,
                none(),
                eph("500Mi"),
            ),
            pod_lr(none(), eph("1Gi"), none()),
        ),
        (
            ctr(
                "pod-max-local-ephemeral-storage-ratio",
                3,
                eph("300Mi"),
                eph("450Mi"),
            ),
            pod_lr(none(), eph("2Gi"), eph("1.5")),
        ),
    ];
    for (mut pod, range) in cases {
        mutate(std::slice::from_ref(&range), "pods", &mut pod);
        assert_eq!(
            validate(&[range], "pods", &pod),
            Ok(()),
            "{}",
            pod["metadata"]["name"]
        );
    }
}

#[test]
fn pod_limit_func_error_cases() {
    let cases = [
        (ctr("ctr-min-cpu-request", 1, res("40m", ""), none()), container_lr(res("50m", ""), none(), none()), "minimum cpu usage per Container is 50m, but request is 40m"),
        (ctr("ctr-min-cpu-request-limit", 1, res("40m", ""), res("200m", "")), container_lr(res("50m", ""), none(), none()), "minimum cpu usage per Container is 50m, but request is 40m"),
        (ctr("ctr-min-cpu-no-request-limit", 1, none(), none()), container_lr(res("50m", ""), none(), none()), "minimum cpu usage per Container is 50m.  No request is specified"),
        (ctr("ctr-min-memory-request", 1, res("", "40Mi"), none()), container_lr(res("", "50Mi"), none(), none()), "minimum memory usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-min-memory-request-limit", 1, res("", "40Mi"), res("", "100Mi")), container_lr(res("", "50Mi"), none(), none()), "minimum memory usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-min-memory-no-request-limit", 1, none(), none()), container_lr(res("", "50Mi"), none(), none()), "minimum memory usage per Container is 50Mi.  No request is specified"),
        (ctr("ctr-max-cpu-request-limit", 1, res("500m", ""), res("2500m", "")), container_lr(none(), res("2", ""), none()), "maximum cpu usage per Container is 2, but limit is 2500m"),
        (ctr("ctr-max-cpu-limit", 1, none(), res("2500m", "")), container_lr(none(), res("2", ""), none()), "maximum cpu usage per Container is 2, but limit is 2500m"),
        (ctr("ctr-max-cpu-no-request-limit", 1, none(), none()), container_lr(none(), res("2", ""), none()), "maximum cpu usage per Container is 2.  No limit is specified"),
        (ctr("ctr-max-cpu-ratio", 1, res("1250m", ""), res("2500m", "")), container_lr(none(), none(), res("1", "")), "cpu max limit to request ratio per Container is 1, but provided ratio is 2.000000"),
        (ctr("ctr-max-mem-request-limit", 1, res("", "250Mi"), res("", "2Gi")), container_lr(none(), res("", "1Gi"), none()), "maximum memory usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-max-mem-limit", 1, none(), res("", "2Gi")), container_lr(none(), res("", "1Gi"), none()), "maximum memory usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-max-mem-no-request-limit", 1, none(), none()), container_lr(none(), res("", "1Gi"), none()), "maximum memory usage per Container is 1Gi.  No limit is specified"),
        (ctr("pod-min-cpu-request", 1, res("75m", ""), none()), pod_lr(res("100m", ""), none(), none()), "minimum cpu usage per Pod is 100m, but request is 75m"),
        (ctr("pod-min-cpu-request-limit", 1, res("75m", ""), res("200m", "")), pod_lr(res("100m", ""), none(), none()), "minimum cpu usage per Pod is 100m, but request is 75m"),
        (ctr("pod-min-memory-request", 1, res("", "60Mi"), none()), pod_lr(res("", "100Mi"), none(), none()), "minimum memory usage per Pod is 100Mi, but request is 60Mi"),
        (ctr("pod-min-memory-request-limit", 1, res("", "60Mi"), res("", "100Mi")), pod_lr(res("", "100Mi"), none(), none()), "minimum memory usage per Pod is 100Mi, but request is 60Mi"),
        (ctr("pod-max-cpu-request-limit", 3, res("500m", ""), res("1", "")), pod_lr(none(), res("2", ""), none()), "maximum cpu usage per Pod is 2, but limit is 3"),
        (ctr("pod-max-cpu-limit", 3, none(), res("1", "")), pod_lr(none(), res("2", ""), none()), "maximum cpu usage per Pod is 2, but limit is 3"),
        (ctr("pod-max-mem-request-limit", 3, res("", "250Mi"), res("", "500Mi")), pod_lr(none(), res("", "1Gi"), none()), "maximum memory usage per Pod is 1Gi, but limit is 1500Mi"),
        (ctr("pod-max-mem-limit", 3, none(), res("", "500Mi")), pod_lr(none(), res("", "1Gi"), none()), "maximum memory usage per Pod is 1Gi, but limit is 1500Mi"),
        (
            valid_pod_init(ctr("pod-init-max-mem-limit", 1, none(), res("", "500Mi")), &[rr(none(), res("", "1.5Gi"))]),
            pod_lr(none(), res("", "1Gi"), none()),
            "maximum memory usage per Pod is 1Gi, but limit is 1536Mi",
        ),
        (ctr("pod-max-mem-ratio", 3, res("", "250Mi"), res("", "500Mi")), pod_lr(none(), res("", "2Gi"), res("", "1.5")), "memory max limit to request ratio per Pod is 1500m, but provided ratio is 2.000000"),
        (ctr("ctr-1-min-local-ephemeral-storage-request", 1, eph("40Mi"), none()), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-1-min-local-ephemeral-storage-request-limit", 1, eph("40Mi"), eph("100Mi")), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-1-min-local-ephemeral-storage-no-request-limit", 1, none(), none()), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi.  No request is specified"),
        (ctr("ctr-1-max-local-ephemeral-storage-request-limit", 1, eph("250Mi"), eph("2Gi")), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-1-max-local-ephemeral-storage-limit", 1, none(), eph("2Gi")), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-1-max-local-ephemeral-storage-no-request-limit", 1, none(), none()), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi.  No limit is specified"),
        // two containers with the same violation: one (deduplicated) message
        (ctr("ctr-2-min-local-ephemeral-storage-request", 2, eph("40Mi"), none()), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-2-min-local-ephemeral-storage-request-limit", 2, eph("40Mi"), eph("100Mi")), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi"),
        (ctr("ctr-2-min-local-ephemeral-storage-no-request-limit", 2, none(), none()), container_lr(eph("50Mi"), none(), none()), "minimum ephemeral-storage usage per Container is 50Mi.  No request is specified"),
        (ctr("ctr-2-max-local-ephemeral-storage-request-limit", 2, eph("250Mi"), eph("2Gi")), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-2-max-local-ephemeral-storage-limit", 2, none(), eph("2Gi")), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi, but limit is 2Gi"),
        (ctr("ctr-2-max-local-ephemeral-storage-no-request-limit", 2, none(), none()), container_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Container is 1Gi.  No limit is specified"),
        (ctr("pod-min-local-ephemeral-storage-request", 1, eph("60Mi"), none()), pod_lr(eph("100Mi"), none(), none()), "minimum ephemeral-storage usage per Pod is 100Mi, but request is 60Mi"),
        (ctr("pod-min-local-ephemeral-storage-request-limit", 1, eph("60Mi"), eph("100Mi")), pod_lr(eph("100Mi"), none(), none()), "minimum ephemeral-storage usage per Pod is 100Mi, but request is 60Mi"),
        (ctr("pod-max-local-ephemeral-storage-request-limit", 3, eph("250Mi"), eph("500Mi")), pod_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Pod is 1Gi, but limit is 1500Mi"),
        (ctr("pod-max-local-ephemeral-storage-limit", 3, none(), eph("500Mi")), pod_lr(none(), eph("1Gi"), none()), "maximum ephemeral-storage usage per Pod is 1Gi, but limit is 1500Mi"),
        (
            valid_pod_init(ctr("pod-init-max-local-ephemeral-storage-limit", 1, none(), eph("500Mi")), &[rr(none(), eph("1.5Gi"))]),
            pod_lr(none(), eph("1Gi"), none()),
            "maximum ephemeral-storage usage per Pod is 1Gi, but limit is 1536Mi",
        ),
        (ctr("pod-max-local-ephemeral-storage-ratio", 3, eph("250Mi"), eph("500Mi")), pod_lr(none(), eph("2Gi"), eph("1.5")), "ephemeral-storage max limit to request ratio per Pod is 1500m, but provided ratio is 2.000000"),
        // a sidecar's request adds to the pod's: 1000m + 1500m > 2
        (
            with_sidecar(res("1500m", ""), none(), ctr("ctr-max-cpu-limit-restartable-init-container", 1, res("1000m", ""), res("1500m", ""))),
            pod_lr(none(), res("2", ""), none()),
            "maximum cpu usage per Pod is 2, but request is 2500m",
        ),
    ];
    for (mut pod, range, want) in cases {
        mutate(std::slice::from_ref(&range), "pods", &mut pod);
        assert_eq!(
            validate(&[range], "pods", &pod),
            Err(want.to_string()),
            "{}",
            pod["metadata"]["name"]
        );
    }
}

#[test]
fn several_violations_are_aggregated_in_brackets() {
    // the real-world message: a limit above max and a ratio above the maximum
    let range = lr(
        "Container",
        none(),
        res("", "400Gi"),
        none(),
        none(),
        res("", "3"),
    );
    let pod = ctr("pod-4", 1, res("", "100Gi"), res("", "800Gi"));
    assert_eq!(
        validate(&[range], "pods", &pod),
        Err("[maximum memory usage per Container is 400Gi, but limit is 800Gi, memory max limit to request ratio per Container is 3, but provided ratio is 8.000000]".into())
    );
}

#[test]
fn limit_ranges_apply_in_turn() {
    // the first LimitRange's defaults win; the second only fills what is missing
    let first = lr(
        "Container",
        none(),
        none(),
        res("1", ""),
        res("500m", ""),
        none(),
    );
    let second = lr(
        "Container",
        none(),
        none(),
        res("2", "1Gi"),
        res("1", "512Mi"),
        none(),
    );
    let mut pod = ctr("p", 1, none(), none());
    mutate(&[first.clone(), second.clone()], "pods", &mut pod);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        rr(res("500m", "512Mi"), res("1", "1Gi"))
    );
    // the annotation says what the last LimitRange that set something set
    assert_eq!(
        annotation(&pod),
        Some("LimitRanger plugin set: memory request for container foo-0; memory limit for container foo-0")
    );
    // the first violated LimitRange answers
    let strict = container_lr(none(), res("100m", ""), none());
    assert_eq!(
        validate(&[first, strict], "pods", &pod),
        Err("maximum cpu usage per Container is 100m, but limit is 1".into())
    );
    // PersistentVolumeClaims are never defaulted
    let mut pvc = json!({"metadata": {"name": "c"}, "spec": {}});
    mutate(
        &[lr(
            "Container",
            none(),
            none(),
            res("1", ""),
            none(),
            none(),
        )],
        "persistentvolumeclaims",
        &mut pvc,
    );
    assert_eq!(pvc, json!({"metadata": {"name": "c"}, "spec": {}}));
}

#[test]
fn handled_requests() {
    assert!(handles("", "pods", false, false));
    assert!(!handles("", "pods", false, true));
    assert!(!handles("", "pods", true, false));
    assert!(handles("", "persistentvolumeclaims", false, true));
    assert!(!handles("", "services", false, false));
    assert!(!handles("apps", "pods", false, false));
}

fn pvc(name: &str, requests: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "test"}, "spec": {"resources": {"requests": requests}}})
}

fn pvc_lr(min: Value, max: Value) -> Value {
    lr("PersistentVolumeClaim", min, max, none(), none(), none())
}

#[test]
fn persistent_volume_claim_limit_func() {
    let ok = [
        (
            pvc("pvc-is-min-storage-request", storage("1Gi")),
            pvc_lr(storage("1Gi"), none()),
        ),
        (
            pvc("pvc-is-max-storage-request", storage("1Gi")),
            pvc_lr(none(), storage("1Gi")),
        ),
        (
            pvc("pvc-no-minmax-storage-request", storage("100Gi")),
            pvc_lr(storage(""), storage("")),
        ),
        (
            pvc("pvc-within-minmax-storage-request", storage("5Gi")),
            pvc_lr(storage("1Gi"), storage("10Gi")),
        ),
    ];
    for (claim, range) in ok {
        assert_eq!(
            validate(&[range], "persistentvolumeclaims", &claim),
            Ok(()),
            "{}",
            claim["metadata"]["name"]
        );
    }
    let bad = [
        (
            pvc("pvc-below-min-storage-request", storage("500Mi")),
            pvc_lr(storage("1Gi"), none()),
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi",
        ),
        (
            pvc("pvc-exceeds-max-storage-request", storage("100Gi")),
            pvc_lr(storage("1Gi"), storage("10Gi")),
            "maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 100Gi",
        ),
        (
            pvc("pvc-no-storage-request", json!({})),
            pvc_lr(storage("1Gi"), none()),
            "minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
        ),
        (
            pvc("pvc-no-storage-request-max", json!({})),
            pvc_lr(none(), storage("1Gi")),
            "maximum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified",
        ),
    ];
    for (claim, range, want) in bad {
        assert_eq!(
            validate(&[range], "persistentvolumeclaims", &claim),
            Err(want.to_string()),
            "{}",
            claim["metadata"]["name"]
        );
    }
}
