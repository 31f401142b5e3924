//! What protobuf answers save a client: the decode cost at the client of a LIST of
//! pods and of a WATCH stream of pod events, JSON (serde into the `k8s-openapi` types,
//! as kube-rs does) against protobuf (prost into the `k8s-pb` types, as a client-go-style
//! client does), on the bytes the server writes for the same objects. Also the server's
//! cost to build each LIST answer from the stored JSON (no cache; then with the
//! encoding cached per stored object: first LIST, cold, and the next, warm). Prints a table.
//!
//! `cargo bench -p coxswain-apiserver --bench protobuf_decode [-- <pods>]` (default 5000)

use std::time::Instant;

use coxswain_apiserver::bench;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::WatchEvent;
use k8s_openapi::List;
use prost::Message;
use serde_json::{json, Value};

/// The allocator of the `coxswain` binary, so the figures are the product's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A running pod as the server stores it (defaults, status, managed fields).
fn pod(i: usize) -> Value {
    json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": format!("web-7d4b9c-{i:05}"), "generateName": "web-7d4b9c-", "namespace": "default",
            "uid": format!("0d6c3b2e-9b7a-4c1e-8f51-{i:012}"), "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": "2026-11-29T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c",
                "uid": "0d6c3b2e-9b7a-4c1e-8f51-1a2b3c4d5e6f", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                "time": "2026-11-29T10:00:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}]},
        "spec": {
            "volumes": [{"name": "kube-api-access-abcde", "projected": {"sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
                "defaultMode": 420}}],
            "containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "volumeMounts": [{"name": "kube-api-access-abcde", "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "sim-node-1",
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"
        },
        "status": {
            "phase": "Running", "hostIP": "10.0.0.2", "hostIPs": [{"ip": "10.0.0.2"}],
            "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}], "startTime": "2026-11-29T10:00:00Z",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:01Z"},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:01Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:02Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:02Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T10:00:00Z"}],
            "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": "2026-11-29T10:00:02Z"}},
                "lastState": {}, "ready": true, "restartCount": 0, "image": "nginx:1.27",
                "imageID": "docker.io/library/nginx@sha256:abc", "containerID": "containerd://0123", "started": true}],
            "qosClass": "Burstable"
        }
    })
}

/// Best of `runs` timings of `f`, in milliseconds.
fn best<T>(runs: u32, mut f: impl FnMut() -> T) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64() * 1e3);
    }
    best
}

/// prost's view of a protobuf body: the envelope, then the object.
fn pb_object<M: Message + Default>(body: &[u8]) -> M {
    let u = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).expect("envelope");
    M::decode(u.raw.as_deref().unwrap_or_default()).expect("object")
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5000);
    let runs = 5;
    let items: Vec<Value> = (0..n).map(pod).collect();
    let list = json!({"kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": "99999"}, "items": items});

    // LIST bodies
    let list_json = serde_json::to_vec(&list).unwrap();
    let list_pb = bench::protobuf_encode(&list).unwrap();
    // WATCH bodies: one MODIFIED event per pod
    let mut watch_json = Vec::new();
    let mut watch_pb = Vec::new();
    for p in &items {
        serde_json::to_writer(&mut watch_json, &json!({"type": "MODIFIED", "object": p})).unwrap();
        watch_json.push(b'\n');
        bench::protobuf_watch_event(&mut watch_pb, "MODIFIED", p).unwrap();
    }

    // the same objects either way
    let a: List<Pod> = serde_json::from_slice(&list_json).unwrap();
    let b: k8s_pb::api::core::v1::PodList = pb_object(&list_pb);
    assert_eq!(a.items.len(), b.items.len());
    assert_eq!(
        a.items[n - 1].metadata.name,
        b.items[n - 1].metadata.as_ref().unwrap().name
    );

    let list_json_ms = best(runs, || {
        serde_json::from_slice::<List<Pod>>(&list_json).unwrap()
    });
    let list_pb_ms = best(runs, || {
        pb_object::<k8s_pb::api::core::v1::PodList>(&list_pb)
    });
    let watch_json_ms = best(runs, || {
        watch_json
            .split(|c| *c == b'\n')
            .filter(|l| !l.is_empty())
            .fold(0, |n, l| {
                std::hint::black_box(serde_json::from_slice::<WatchEvent<Pod>>(l).unwrap());
                n + 1
            })
    });
    let watch_pb_ms = best(runs, || {
        let mut rest = watch_pb.as_slice();
        let mut count = 0;
        while rest.len() >= 4 {
            let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            let ev =
                k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&rest[4..4 + len])
                    .unwrap();
            let raw = ev.object.unwrap().raw.unwrap();
            std::hint::black_box(pb_object::<k8s_pb::api::core::v1::Pod>(&raw));
            rest = &rest[4 + len..];
            count += 1;
        }
        count
    });
    // the server's side: a LIST answer from the stored JSON of the items (JSON: the
    // bytes joined; protobuf: each item parsed and encoded)
    let stored: Vec<Vec<u8>> = items
        .iter()
        .map(|p| serde_json::to_vec(p).unwrap())
        .collect();
    let meta = json!({"resourceVersion": "99999"});
    let enc_json_ms = best(runs, || {
        let mut out = Vec::with_capacity(list_json.len());
        out.extend_from_slice(br#"{"kind":"PodList","apiVersion":"v1","metadata":"#);
        serde_json::to_writer(&mut out, &meta).unwrap();
        out.extend_from_slice(br#","items":["#);
        for (i, s) in stored.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(s);
        }
        out.extend_from_slice(b"]}");
        out
    });
    let enc_pb_ms = best(runs, || {
        bench::protobuf_encode_list("v1", "PodList", &meta, &stored).unwrap()
    });
    assert_eq!(
        bench::protobuf_encode_list("v1", "PodList", &meta, &stored).unwrap(),
        list_pb
    );
    // the same from stored objects, whose encoding is cached with them: the first LIST
    // (cold: every item encoded and kept), then the next ones (warm: embedded as kept)
    let mut cold_pb_ms = f64::MAX;
    for _ in 0..runs {
        let fresh = bench::stored(&stored).unwrap();
        let t = Instant::now();
        std::hint::black_box(
            bench::protobuf_encode_list_stored("v1", "PodList", &meta, &fresh).unwrap(),
        );
        cold_pb_ms = cold_pb_ms.min(t.elapsed().as_secs_f64() * 1e3);
    }
    let cache = bench::stored(&stored).unwrap();
    assert_eq!(
        bench::protobuf_encode_list_stored("v1", "PodList", &meta, &cache).unwrap(),
        list_pb
    );
    let warm_pb_ms = best(runs, || {
        bench::protobuf_encode_list_stored("v1", "PodList", &meta, &cache).unwrap()
    });
    assert_eq!(
        bench::protobuf_encode_list_stored("v1", "PodList", &meta, &cache).unwrap(),
        list_pb
    );
    // of which the encoder alone (from the list's value; JSON: serde_json's writer)
    let val_json_ms = best(runs, || serde_json::to_vec(&list).unwrap());
    let val_pb_ms = best(runs, || bench::protobuf_encode(&list).unwrap());

    println!("client decode cost, {n} pods (best of {runs})");
    println!(
        "{:<28} {:>12} {:>12} {:>10} {:>9}",
        "", "JSON", "protobuf", "ratio", "size"
    );
    let row = |name: &str, j: f64, p: f64, js: usize, ps: usize| {
        println!(
            "{name:<28} {j:>9.1} ms {p:>9.1} ms {:>9.1}x {:>8.0}%",
            j / p,
            100.0 * ps as f64 / js as f64
        );
    };
    row(
        "LIST decode",
        list_json_ms,
        list_pb_ms,
        list_json.len(),
        list_pb.len(),
    );
    row(
        "WATCH decode (n events)",
        watch_json_ms,
        watch_pb_ms,
        watch_json.len(),
        watch_pb.len(),
    );
    row(
        "server: LIST, no cache",
        enc_json_ms,
        enc_pb_ms,
        list_json.len(),
        list_pb.len(),
    );
    row(
        "server: LIST, cache cold",
        enc_json_ms,
        cold_pb_ms,
        list_json.len(),
        list_pb.len(),
    );
    row(
        "server: LIST, cache warm",
        enc_json_ms,
        warm_pb_ms,
        list_json.len(),
        list_pb.len(),
    );
    row(
        "server: encode a LIST value",
        val_json_ms,
        val_pb_ms,
        list_json.len(),
        list_pb.len(),
    );
    println!(
        "bytes: LIST JSON {} / protobuf {}; WATCH JSON {} / protobuf {}",
        list_json.len(),
        list_pb.len(),
        watch_json.len(),
        watch_pb.len()
    );
}
