//! Cost of field management per write: `managedFields` of a Pod on create, on a
//! kubelet-style status update and on a metadata update, and a server-side apply of a
//! Deployment; and the Go round trip (`machinery::protobuf::roundtrip`) every write of a
//! built-in kind takes. Prints microseconds per operation.
//!
//! `cargo bench -p coxswain-apiserver --bench managed_fields`

use std::time::Instant;

use coxswain_apiserver::bench;
use serde_json::{json, Value};

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9c-abcde", "namespace": "default", "generateName": "web-7d4b9c-",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "0d6c3b2e-9b7a-4c1e-8f51-1a2b3c4d5e6f", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0, "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"}
    })
}

fn running(mut p: Value) -> Value {
    p["spec"]["nodeName"] = json!("sim-node-1");
    p["status"] = json!({
        "phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.2", "podIP": "10.244.1.7",
        "podIPs": [{"ip": "10.244.1.7"}], "startTime": "2026-11-29T10:00:00Z",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-29T10:00:01Z"},
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-29T10:00:01Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:00:02Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-29T10:00:02Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T10:00:00Z"}],
        "containerStatuses": [{"name": "web", "image": "nginx:1.27", "imageID": "docker.io/library/nginx@sha256:abc",
            "containerID": "containerd://0123", "ready": true, "started": true, "restartCount": 0,
            "state": {"running": {"startedAt": "2026-11-29T10:00:02Z"}}, "lastState": {}}]
    });
    p
}

fn time<F: FnMut()>(name: &str, n: u32, mut f: F) {
    for _ in 0..n / 10 {
        f();
    }
    let start = Instant::now();
    for _ in 0..n {
        f();
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("  {name:<48} {per:>8.1} µs/op");
}

fn main() {
    let pods = bench::resource("", "v1", "pods").expect("pods");
    let deployments = bench::resource("apps", "v1", "deployments").expect("deployments");
    println!("field management per write (one core)");
    let mut created = pod();
    pods.record_update(false, "kube-controller-manager", None, &mut created);
    // stored objects have a uid (the field manager validates only objects without one)
    created["metadata"]["uid"] = json!("5b7e7a52-2f4c-4b8e-9d0a-6f1e2d3c4b5a");
    created["metadata"]["creationTimestamp"] = json!("2026-11-29T10:00:00Z");
    time("(baseline: building the objects alone)", 2000, || {
        let p = running(created.clone());
        std::hint::black_box(p);
    });
    time("create: Pod managedFields", 2000, || {
        let mut p = pod();
        pods.record_update(false, "kube-controller-manager", None, &mut p);
    });
    let mut status = running(created.clone());
    pods.record_update(true, "kubelet", Some(&created), &mut status);
    time("status update: Pod Running (kubelet)", 2000, || {
        let mut p = running(created.clone());
        pods.record_update(true, "kubelet", Some(&created), &mut p);
    });
    time("update: one label on a running Pod", 2000, || {
        let mut p = status.clone();
        p["metadata"]["labels"]["extra"] = json!("x");
        pods.record_update(false, "kubectl-label", Some(&status), &mut p);
    });
    time("(baseline: cloning a running Pod)", 2000, || {
        std::hint::black_box(status.clone());
    });
    time(
        "Go round trip of a running Pod (decode + storage)",
        2000,
        || {
            let mut p = status.clone();
            pods.roundtrip(&mut p, false);
            pods.roundtrip(&mut p, true);
            std::hint::black_box(p);
        },
    );
    let dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}});
    let mut live = deployments
        .apply("kubectl", None, &dep, false)
        .expect("apply");
    live["metadata"]["uid"] = json!("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d");
    time("apply: Deployment, unchanged config", 2000, || {
        let _ = deployments.apply("kubectl", Some(&live), &dep, false);
    });
}
