//! Request bodies in Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), as
//! client-go sends them when configured for protobuf (kube-controller-manager,
//! kube-scheduler, most Go controllers): the magic `k8s\0` and a `runtime.Unknown`
//! envelope around the object's protobuf. The bodies are built with an encoder that is
//! not the server's decoder: the `k8s-pb` types (generated from upstream's `.proto`
//! files) encoded by `prost`. Every kind of body an endpoint reads is covered: objects
//! (create, update), DeleteOptions (delete, deletecollection), Scale, Binding, status,
//! finalize and approval bodies, plus the 400 and 415 answers for bodies the server
//! cannot read.

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::certificates::v1 as certificates;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

use crate::common::{request, start, Server};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A body as client-go's protobuf serializer writes it.
fn pb<M: Message>(api_version: &str, kind: &str, obj: &M) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(obj.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn meta(name: &str, namespace: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: Some(name.into()),
        namespace: (!namespace.is_empty()).then(|| namespace.into()),
        ..Default::default()
    })
}

/// Send `body` with `content_type`; the status code and the JSON answer.
fn send(s: &Server, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    let (code, _, b) = request(
        s.running.addr,
        method,
        path,
        content_type,
        "application/json",
        body,
    );
    let v = if b.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&b).unwrap_or_else(|e| {
            panic!(
                "{method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&b)
            )
        })
    };
    (code, v)
}

fn create(s: &Server, path: &str, obj: Value) -> Value {
    let (code, v) = s.json("POST", path, "application/json", "application/json", &obj);
    assert_eq!(code, 201, "POST {path}: {v}");
    v
}

fn get(s: &Server, path: &str) -> (u16, Value) {
    s.json("GET", path, "", "application/json", &Value::Null)
}

fn delete_options(opts: meta::DeleteOptions) -> Vec<u8> {
    pb("v1", "DeleteOptions", &opts)
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn delete_options_in_protobuf_are_read() {
    let s = start();
    create(&s, CMS, json!({"metadata": {"name": "a"}}));
    // dryRun: the object stays
    let dry = delete_options(meta::DeleteOptions {
        dry_run: vec!["All".into()],
        ..Default::default()
    });
    let (code, v) = send(&s, "DELETE", &format!("{CMS}/a"), PROTOBUF, &dry);
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{CMS}/a")).0, 200);
    // a precondition that does not hold: 409
    let stale = delete_options(meta::DeleteOptions {
        preconditions: Some(meta::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    });
    let (code, v) = send(&s, "DELETE", &format!("{CMS}/a"), PROTOBUF, &stale);
    assert_eq!(code, 409, "{v}");
    assert!(
        v["message"].as_str().unwrap_or("").contains("not-the-uid"),
        "{v}"
    );

    // propagationPolicy Orphan: the orphan finalizer holds the object
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    create(&s, deps, deployment("web", 1));
    let orphan = delete_options(meta::DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    });
    let (code, v) = send(&s, "DELETE", &format!("{deps}/web"), PROTOBUF, &orphan);
    assert_eq!(code, 200, "{v}");
    let (_, d) = get(&s, &format!("{deps}/web"));
    assert_eq!(d["metadata"]["finalizers"], json!(["orphan"]), "{d}");
    assert!(d["metadata"]["deletionTimestamp"].is_string(), "{d}");

    // gracePeriodSeconds 0 deletes a pod at once (its default is 30 seconds)
    let pods = "/api/v1/namespaces/default/pods";
    create(&s, pods, pod("p"));
    let now = delete_options(meta::DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    });
    let (code, v) = send(&s, "DELETE", &format!("{pods}/p"), PROTOBUF, &now);
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{pods}/p")).0, 404);

    // the apiVersion client-go sends for a group's DeleteOptions varies; all decode
    create(&s, CMS, json!({"metadata": {"name": "b"}}));
    let body = pb(
        "meta.k8s.io/v1",
        "DeleteOptions",
        &meta::DeleteOptions::default(),
    );
    let (code, v) = send(&s, "DELETE", &format!("{CMS}/b"), PROTOBUF, &body);
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{CMS}/b")).0, 404);
}

#[test]
fn delete_collection_reads_protobuf_options() {
    let s = start();
    for n in ["c1", "c2"] {
        create(
            &s,
            CMS,
            json!({"metadata": {"name": n, "labels": {"set": "x"}}}),
        );
    }
    let dry = delete_options(meta::DeleteOptions {
        dry_run: vec!["All".into()],
        ..Default::default()
    });
    let path = format!("{CMS}?labelSelector=set%3Dx");
    let (code, v) = send(&s, "DELETE", &path, PROTOBUF, &dry);
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["items"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(get(&s, &format!("{CMS}/c1")).0, 200);
    let (code, v) = send(
        &s,
        "DELETE",
        &path,
        PROTOBUF,
        &delete_options(Default::default()),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{CMS}/c1")).0, 404);
    assert_eq!(get(&s, &format!("{CMS}/c2")).0, 404);
}

#[test]
fn objects_in_protobuf_are_created_and_updated() {
    let s = start();
    let cm = core::ConfigMap {
        metadata: meta("pbcm", ""),
        data: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    };
    let (code, v) = send(&s, "POST", CMS, PROTOBUF, &pb("v1", "ConfigMap", &cm));
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["data"], json!({"k": "v"}));
    let updated = core::ConfigMap {
        data: [("k".to_string(), "w".to_string())].into(),
        ..cm
    };
    let (code, v) = send(
        &s,
        "PUT",
        &format!("{CMS}/pbcm"),
        PROTOBUF,
        &pb("v1", "ConfigMap", &updated),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{CMS}/pbcm")).1["data"], json!({"k": "w"}));
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    })
}

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

#[test]
fn status_bodies_in_protobuf() {
    let s = start();
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    create(&s, deps, deployment("web", 2));
    let d = apps::Deployment {
        metadata: meta("web", "default"),
        status: Some(apps::DeploymentStatus {
            replicas: Some(2),
            ready_replicas: Some(1),
            observed_generation: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    };
    let (code, v) = send(
        &s,
        "PUT",
        &format!("{deps}/web/status"),
        PROTOBUF,
        &pb("apps/v1", "Deployment", &d),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["status"]["readyReplicas"], 1, "{v}");
    // the status subresource keeps the stored spec
    assert_eq!(v["spec"]["replicas"], 2, "{v}");

    // a namespace's finalize subresource
    create(
        &s,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "fin"}}),
    );
    let ns = core::Namespace {
        metadata: meta("fin", ""),
        spec: Some(core::NamespaceSpec {
            finalizers: vec!["example.com/hold".into()],
        }),
        ..Default::default()
    };
    let (code, v) = send(
        &s,
        "PUT",
        "/api/v1/namespaces/fin/finalize",
        PROTOBUF,
        &pb("v1", "Namespace", &ns),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["spec"]["finalizers"], json!(["example.com/hold"]), "{v}");

    // a certificate signing request's approval subresource
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    // a real request: the server checks its PEM block and signature as upstream
    let key = rcgen::KeyPair::generate().expect("key");
    let request = rcgen::CertificateParams::new(Vec::<String>::new())
        .expect("params")
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    use base64::Engine;
    create(
        &s,
        csrs,
        json!({"metadata": {"name": "csr"}, "spec": {
            "request": base64::engine::general_purpose::STANDARD.encode(request),
            "signerName": "example.com/signer", "usages": ["digital signature"]
        }}),
    );
    let csr = certificates::CertificateSigningRequest {
        metadata: meta("csr", ""),
        status: Some(certificates::CertificateSigningRequestStatus {
            conditions: vec![certificates::CertificateSigningRequestCondition {
                r#type: Some("Approved".into()),
                status: Some("True".into()),
                reason: Some("ByTest".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let (code, v) = send(
        &s,
        "PUT",
        &format!("{csrs}/csr/approval"),
        PROTOBUF,
        &pb("certificates.k8s.io/v1", "CertificateSigningRequest", &csr),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["status"]["conditions"][0]["reason"], "ByTest", "{v}");
}

fn scale(name: &str, namespace: &str, replicas: i32) -> Vec<u8> {
    let s = autoscaling::Scale {
        metadata: meta(name, namespace),
        spec: Some(autoscaling::ScaleSpec {
            replicas: Some(replicas),
        }),
        status: None,
    };
    pb("autoscaling/v1", "Scale", &s)
}

#[test]
fn scale_bodies_in_protobuf() {
    let s = start();
    let workloads = [
        (
            "/apis/apps/v1/namespaces/default/deployments",
            deployment("d", 1),
        ),
        (
            "/apis/apps/v1/namespaces/default/replicasets",
            deployment("r", 1),
        ),
        ("/apis/apps/v1/namespaces/default/statefulsets", {
            let mut v = deployment("s", 1);
            v["spec"]["serviceName"] = json!("s");
            v
        }),
        (
            "/api/v1/namespaces/default/replicationcontrollers",
            json!({"metadata": {"name": "rc"}, "spec": {"replicas": 1, "selector": {"app": "rc"},
                "template": {"metadata": {"labels": {"app": "rc"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        ),
    ];
    for (path, obj) in workloads {
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        create(&s, path, obj);
        let (code, v) = send(
            &s,
            "PUT",
            &format!("{path}/{name}/scale"),
            PROTOBUF,
            &scale(&name, "default", 3),
        );
        assert_eq!(code, 200, "{path}: {v}");
        assert_eq!(v["kind"], "Scale");
        assert_eq!(v["spec"]["replicas"], 3, "{path}: {v}");
        assert_eq!(get(&s, &format!("{path}/{name}")).1["spec"]["replicas"], 3);
        // autoscaling/v1 ScaleSpec.replicas is omitempty: zero replicas is `"spec": {}`
        let (code, v) = send(
            &s,
            "PUT",
            &format!("{path}/{name}/scale"),
            PROTOBUF,
            &scale(&name, "default", 0),
        );
        assert_eq!((code, &v["spec"]), (200, &json!({})), "{path}: {v}");
        let (_, v) = get(&s, &format!("{path}/{name}/scale"));
        assert_eq!(v["spec"], json!({}), "{path}: {v}");
        assert_eq!(v["status"]["replicas"], 0, "{path}: {v}");
        assert!(v["status"]["selector"].is_string(), "{path}: {v}");
    }

    // a custom resource's scale subresource
    create(
        &s,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json!({
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }),
    );
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    create(
        &s,
        gadgets,
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"replicas": 1}}),
    );
    let (code, v) = send(
        &s,
        "PUT",
        &format!("{gadgets}/g/scale"),
        PROTOBUF,
        &scale("g", "default", 4),
    );
    assert_eq!(code, 200, "{v}");
    assert_eq!(get(&s, &format!("{gadgets}/g")).1["spec"]["replicas"], 4);
    // without a labelSelectorPath the Scale has no selector (omitempty), not ""
    let (_, v) = get(&s, &format!("{gadgets}/g/scale"));
    assert_eq!(v["status"], json!({"replicas": 0}), "{v}");
    // custom resources themselves have no protobuf encoding: 415 as upstream
    let (code, v) = send(
        &s,
        "POST",
        gadgets,
        PROTOBUF,
        &pb("example.com/v1", "Gadget", &core::ConfigMap::default()),
    );
    assert_eq!(code, 415, "{v}");
    assert_eq!(
        v["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
}

#[test]
fn binding_bodies_in_protobuf() {
    let s = start();
    let pods = "/api/v1/namespaces/default/pods";
    create(&s, pods, pod("b"));
    let binding = core::Binding {
        metadata: meta("b", "default"),
        target: Some(core::ObjectReference {
            kind: Some("Node".into()),
            name: Some("node-1".into()),
            ..Default::default()
        }),
    };
    let (code, v) = send(
        &s,
        "POST",
        &format!("{pods}/b/binding"),
        PROTOBUF,
        &pb("v1", "Binding", &binding),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        get(&s, &format!("{pods}/b")).1["spec"]["nodeName"],
        "node-1"
    );
}

/// An Eviction as client-go's `EvictV1` sends it in protobuf (what `kubectl drain`
/// posts): the pod goes, with the Eviction's delete options honoured.
#[test]
fn eviction_bodies_in_protobuf() {
    use k8s_pb::api::policy::v1 as policy;
    let s = start();
    let pods = "/api/v1/namespaces/default/pods";
    let mut p = pod("e");
    p["spec"]["nodeName"] = json!("node-1");
    create(&s, pods, p);
    let eviction = policy::Eviction {
        metadata: meta("e", "default"),
        delete_options: Some(meta::DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        }),
    };
    let (code, v) = send(
        &s,
        "POST",
        &format!("{pods}/e/eviction"),
        PROTOBUF,
        &pb("policy/v1", "Eviction", &eviction),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(get(&s, &format!("{pods}/e")).0, 404);
}

#[test]
fn unreadable_bodies_get_upstream_errors() {
    let s = start();
    // not protobuf at all
    let (code, v) = send(&s, "POST", CMS, PROTOBUF, b"{\"metadata\":{}}");
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap_or("")
            .contains("provided data does not appear to be a protobuf message"),
        "{v}"
    );
    // a truncated envelope
    let mut cut = pb("v1", "ConfigMap", &core::ConfigMap::default());
    cut.truncate(9);
    let (code, v) = send(&s, "POST", CMS, PROTOBUF, &cut);
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    // DeleteOptions that are not protobuf
    create(&s, CMS, json!({"metadata": {"name": "x"}}));
    let (code, v) = send(&s, "DELETE", &format!("{CMS}/x"), PROTOBUF, b"nope");
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    // a media type no serializer reads: 415, for objects and for DeleteOptions
    let supported = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for (method, path) in [("POST", CMS.to_string()), ("DELETE", format!("{CMS}/x"))] {
        let (code, v) = send(&s, method, &path, "text/plain", b"{}");
        assert_eq!(code, 415, "{method} {v}");
        assert_eq!(v["reason"], "UnsupportedMediaType");
        assert_eq!(v["message"], supported);
    }
    // the object was not deleted by any of that
    assert_eq!(get(&s, &format!("{CMS}/x")).0, 200);
    // JSON DeleteOptions with a field of the wrong type: 400
    let (code, v) = send(
        &s,
        "DELETE",
        &format!("{CMS}/x"),
        "application/json",
        br#"{"gracePeriodSeconds":"soon"}"#,
    );
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
}
