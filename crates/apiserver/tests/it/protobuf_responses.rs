//! Answers in Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), as client-go
//! asks for them for built-in kinds (`Accept: application/vnd.kubernetes.protobuf,
//! application/json`): GET, LIST, WATCH (length-prefixed `WatchEvent` frames), write
//! answers and error `Status` bodies. The answers are read with an implementation that
//! is not the server's: the `k8s-pb` types (generated from upstream's `.proto` files)
//! decoded by `prost`; and the protobuf and JSON answers for the same objects are
//! compared field by field (the protobuf read back into JSON the way client-go would
//! print it). Custom resources stay JSON (406 when protobuf is all the client takes).

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{json, Value};

use crate::common::{request, start, Server};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
/// What client-go sends for built-in kinds.
const CLIENT_GO: &str = "application/vnd.kubernetes.protobuf, application/json";

/// A protobuf answer: status code, content type, and the envelope read by prost.
struct Answer {
    code: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    fn unknown(&self) -> Unknown {
        assert_eq!(
            self.content_type,
            PROTOBUF,
            "a protobuf answer (code {}): {}",
            self.code,
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(&self.body[..4], b"k8s\0", "the magic");
        Unknown::decode(&self.body[4..]).expect("runtime.Unknown")
    }

    /// The object in the envelope, checking the envelope's kind.
    fn object<M: Message + Default>(&self, api_version: &str, kind: &str) -> M {
        let u = self.unknown();
        let tm = u.type_meta.clone().unwrap_or_default();
        if tm.kind.as_deref() == Some("Status") && kind != "Status" {
            let st = meta::Status::decode(u.raw.as_deref().unwrap_or_default());
            panic!("a Status instead of a {kind} (code {}): {st:?}", self.code);
        }
        assert_eq!(
            (tm.api_version.as_deref(), tm.kind.as_deref()),
            (Some(api_version), Some(kind))
        );
        assert_eq!(u.content_encoding.as_deref().unwrap_or(""), "");
        M::decode(u.raw.as_deref().unwrap_or_default()).expect("prost decodes the object")
    }
}

fn content_type(head: &str) -> String {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default()
}

fn call(s: &Server, method: &str, path: &str, ctype: &str, accept: &str, body: &[u8]) -> Answer {
    let (code, head, body) = request(s.running.addr, method, path, ctype, accept, body);
    Answer {
        code,
        content_type: content_type(&head),
        body,
    }
}

fn json_call(s: &Server, method: &str, path: &str, body: &Value) -> (u16, Value) {
    s.json(method, path, "application/json", "application/json", body)
}

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

/// Paths where two JSON values differ (empty when equal).
fn diff(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                diff(
                    &format!("{path}/{k}"),
                    v,
                    y.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
            for (k, v) in y {
                if !x.contains_key(k) {
                    diff(&format!("{path}/{k}"), &Value::Null, v, out);
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}/{i}"), v, w, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {a} vs {b}")),
    }
}

/// The JSON answer and the protobuf answer (its bytes) of one GET.
fn same_answer(s: &Server, path: &str) -> (Value, Vec<u8>) {
    let (code, js) = s.json("GET", path, "", "application/json", &Value::Null);
    assert_eq!(code, 200, "GET {path}: {js}");
    let a = call(s, "GET", path, "", CLIENT_GO, b"");
    assert_eq!(a.code, 200);
    assert_eq!(a.content_type, PROTOBUF, "GET {path}");
    (js, a.body)
}

/// Compare the JSON answer with the protobuf answer of the same object, field by
/// field: prost decodes the protobuf into the k8s-pb type and encodes it again, and
/// that body is sent back as a dry-run update (unchanged, so answered with the object
/// as stored, in JSON): every field must have survived the trip through k8s-pb.
fn compare<M: Message + Default>(s: &Server, path: &str) {
    let out = compare_with::<M>(s, path, |_| {});
    assert!(
        out.is_empty(),
        "{path}: JSON vs protobuf:\n{}",
        out.join("\n")
    );
}

/// [`compare`] with `change` applied to the k8s-pb object on the way: the differences.
fn compare_with<M: Message + Default>(
    s: &Server,
    path: &str,
    change: impl FnOnce(&mut M),
) -> Vec<String> {
    let (js, body) = same_answer(s, path);
    let api_version = js["apiVersion"].as_str().unwrap().to_string();
    let kind = js["kind"].as_str().unwrap().to_string();
    let a = Answer {
        code: 200,
        content_type: PROTOBUF.into(),
        body,
    };
    let mut obj: M = a.object(&api_version, &kind);
    change(&mut obj);
    // back through the server's protobuf request decoder: a dry-run update of the
    // decoded object (unchanged, so the answer is the object as stored)
    let again = pb(&api_version, &kind, &obj);
    let (code, _, b) = request(
        s.running.addr,
        "PUT",
        &format!("{path}?dryRun=All"),
        PROTOBUF,
        "application/json",
        &again,
    );
    let back: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
    assert_eq!(code, 200, "PUT {path}: {back}");
    let mut out = Vec::new();
    diff("", &js, &back, &mut out);
    out
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web", "empty": ""}, "annotations": {"a": "b"}},
        "spec": {
            "containers": [{
                "name": "c", "image": "nginx:1.27", "command": ["sh", "-c", "sleep 1"],
                "ports": [{"containerPort": 8080, "name": "http"}],
                "env": [{"name": "X", "value": ""}, {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "resources": {"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": 8080}}
            }],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}],
            "activeDeadlineSeconds": 600,
            "priority": 0
        }
    })
}

#[test]
fn json_and_protobuf_answers_agree() {
    let s = start();
    let ns = "/api/v1/namespaces/default";
    let created = [
        (format!("{ns}/pods"), pod("web-0")),
        (
            format!("{ns}/configmaps"),
            json!({"metadata": {"name": "cm"}, "data": {"a": "1", "b": ""}, "binaryData": {"bin": "AAEC/w=="}}),
        ),
        (
            format!("{ns}/secrets"),
            json!({"metadata": {"name": "s"}, "stringData": {"p": "hunter2"}, "type": "Opaque"}),
        ),
        (
            format!("{ns}/services"),
            json!({"metadata": {"name": "svc"}, "spec": {"selector": {"app": "web"},
                "ports": [{"port": 80, "targetPort": "http", "name": "http"}, {"port": 443, "targetPort": 8443, "name": "https"}]}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments".to_string(),
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 0,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 0}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
        ),
        (
            "/apis/batch/v1/namespaces/default/cronjobs".to_string(),
            json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases".to_string(),
            json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-02T03:04:05.123456Z", "renewTime": "2026-01-02T03:04:06.000001Z"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles".to_string(),
            json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ),
    ];
    for (path, obj) in &created {
        let (code, v) = json_call(&s, "POST", path, obj);
        assert_eq!(code, 201, "POST {path}: {v}");
    }
    compare::<core::Pod>(&s, &format!("{ns}/pods/web-0"));
    compare::<core::ConfigMap>(&s, &format!("{ns}/configmaps/cm"));
    compare::<core::Secret>(&s, &format!("{ns}/secrets/s"));
    compare::<core::Service>(&s, &format!("{ns}/services/svc"));
    compare::<apps::Deployment>(&s, "/apis/apps/v1/namespaces/default/deployments/web");
    compare::<k8s_pb::api::batch::v1::CronJob>(&s, "/apis/batch/v1/namespaces/default/cronjobs/cj");
    compare::<k8s_pb::api::coordination::v1::Lease>(
        &s,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
    );
    compare::<k8s_pb::api::rbac::v1::Role>(
        &s,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
    );
    compare::<core::Namespace>(&s, "/api/v1/namespaces/default");
    // the comparison sees a changed field
    let out = compare_with::<core::ConfigMap>(&s, &format!("{ns}/configmaps/cm"), |cm| {
        cm.data.insert("a".into(), "2".into());
    });
    assert_eq!(out, ["/data/a: \"1\" vs \"2\""]);

    // values prost reads, against the JSON answer
    let (_, js) = json_call(&s, "GET", &format!("{ns}/pods/web-0"), &Value::Null);
    let a = call(&s, "GET", &format!("{ns}/pods/web-0"), "", CLIENT_GO, b"");
    let p: core::Pod = a.object("v1", "Pod");
    let md = p.metadata.clone().unwrap();
    assert_eq!(md.uid.as_deref(), js["metadata"]["uid"].as_str());
    assert_eq!(
        md.resource_version.as_deref(),
        js["metadata"]["resourceVersion"].as_str()
    );
    assert_eq!(md.labels.get("empty").map(String::as_str), Some(""));
    let created_at = js["metadata"]["creationTimestamp"].as_str().unwrap();
    let secs = md.creation_timestamp.unwrap().seconds.unwrap();
    assert_eq!(
        chrono::DateTime::from_timestamp(secs, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
        created_at
    );
    let spec = p.spec.unwrap();
    assert_eq!(spec.active_deadline_seconds, Some(600));
    assert_eq!(
        spec.termination_grace_period_seconds,
        js["spec"]["terminationGracePeriodSeconds"].as_i64()
    );
    let c = &spec.containers[0];
    assert_eq!(
        c.resources.as_ref().unwrap().limits["memory"]
            .string
            .as_deref(),
        Some("256Mi")
    );
    assert_eq!(
        c.image_pull_policy.as_deref(),
        js["spec"]["containers"][0]["imagePullPolicy"].as_str()
    );

    // LIST: the same items either way
    let (_, jl) = json_call(&s, "GET", &format!("{ns}/configmaps"), &Value::Null);
    let a = call(&s, "GET", &format!("{ns}/configmaps"), "", CLIENT_GO, b"");
    let l: core::ConfigMapList = a.object("v1", "ConfigMapList");
    assert_eq!(
        l.metadata.unwrap().resource_version.as_deref(),
        jl["metadata"]["resourceVersion"].as_str()
    );
    let names: Vec<_> = l
        .items
        .iter()
        .map(|i| i.metadata.clone().unwrap().name.unwrap())
        .collect();
    let jnames: Vec<_> = jl["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, jnames);
    let cm = l
        .items
        .iter()
        .find(|c| c.metadata.as_ref().unwrap().name.as_deref() == Some("cm"))
        .unwrap();
    assert_eq!(cm.binary_data["bin"], vec![0u8, 1, 2, 255]);
    assert_eq!(cm.data["b"], "");

    // a paged list carries continue and remainingItemCount
    json_call(
        &s,
        "POST",
        &format!("{ns}/configmaps"),
        &json!({"metadata": {"name": "cm2"}}),
    );
    let a = call(
        &s,
        "GET",
        &format!("{ns}/configmaps?limit=1"),
        "",
        CLIENT_GO,
        b"",
    );
    let l: core::ConfigMapList = a.object("v1", "ConfigMapList");
    let lm = l.metadata.unwrap();
    assert!(lm.r#continue.is_some_and(|c| !c.is_empty()));
    assert_eq!(l.items.len(), 1);
    assert!(lm.remaining_item_count.is_some_and(|n| n >= 1));

    // metadata-only (the metadata client), protobuf too
    let a = call(
        &s,
        "GET",
        &format!("{ns}/pods"),
        "",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        b"",
    );
    let l: meta::PartialObjectMetadataList =
        a.object("meta.k8s.io/v1", "PartialObjectMetadataList");
    assert_eq!(
        l.items[0].metadata.as_ref().unwrap().name.as_deref(),
        Some("web-0")
    );

    // tables stay JSON (protobuf tables are not served)
    let a = call(
        &s,
        "GET",
        &format!("{ns}/pods"),
        "",
        "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1,application/json",
        b"",
    );
    assert_eq!((a.code, a.content_type.as_str()), (200, "application/json"));
    let t: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(t["kind"], "Table");

    // JSON first in Accept: JSON
    let a = call(
        &s,
        "GET",
        &format!("{ns}/pods/web-0"),
        "",
        "application/json, application/vnd.kubernetes.protobuf",
        b"",
    );
    assert_eq!(a.content_type, "application/json");
}

#[test]
fn write_answers_and_errors_in_protobuf() {
    let s = start();
    let cms = "/api/v1/namespaces/default/configmaps";
    // create: a protobuf body, a protobuf answer (201)
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("c".into()),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    };
    let a = call(
        &s,
        "POST",
        cms,
        PROTOBUF,
        CLIENT_GO,
        &pb("v1", "ConfigMap", &cm),
    );
    assert_eq!(a.code, 201);
    // the answer is the stored version's encoding: what a GET of it answers
    let get = call(&s, "GET", &format!("{cms}/c"), PROTOBUF, CLIENT_GO, b"");
    assert_eq!(a.body, get.body);
    let got: core::ConfigMap = a.object("v1", "ConfigMap");
    let md = got.metadata.unwrap();
    assert!(md.uid.is_some_and(|u| !u.is_empty()));
    assert_eq!(got.data["k"], "v");

    // update
    let mut upd = cm.clone();
    upd.data.insert("k".into(), "w".into());
    upd.metadata.as_mut().unwrap().resource_version = md.resource_version.clone();
    let a = call(
        &s,
        "PUT",
        &format!("{cms}/c"),
        PROTOBUF,
        CLIENT_GO,
        &pb("v1", "ConfigMap", &upd),
    );
    assert_eq!(a.code, 200);
    let get = call(&s, "GET", &format!("{cms}/c"), PROTOBUF, CLIENT_GO, b"");
    assert_eq!(a.body, get.body);
    let got: core::ConfigMap = a.object("v1", "ConfigMap");
    assert_eq!(got.data["k"], "w");

    // patch (JSON patch body, protobuf answer)
    let a = call(
        &s,
        "PATCH",
        &format!("{cms}/c"),
        "application/merge-patch+json",
        CLIENT_GO,
        br#"{"data":{"x":"y"}}"#,
    );
    assert_eq!(a.code, 200);
    let got: core::ConfigMap = a.object("v1", "ConfigMap");
    assert_eq!(got.data["x"], "y");

    // delete: a success Status (a configmap is gone at once)
    let a = call(&s, "DELETE", &format!("{cms}/c"), "", CLIENT_GO, b"");
    assert_eq!(a.code, 200);
    let st: meta::Status = a.object("v1", "Status");
    assert_eq!(st.status.as_deref(), Some("Success"));
    assert_eq!(st.details.unwrap().name.as_deref(), Some("c"));
    // a pod with a grace period: the object, marked for deletion
    let pods = "/api/v1/namespaces/default/pods";
    let (code, v) = json_call(
        &s,
        "POST",
        pods,
        &json!({"metadata": {"name": "p", "finalizers": ["example.com/hold"]},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(code, 201, "{v}");
    let a = call(&s, "DELETE", &format!("{pods}/p"), "", CLIENT_GO, b"");
    assert_eq!(a.code, 200);
    let p: core::Pod = a.object("v1", "Pod");
    assert!(p.metadata.unwrap().deletion_timestamp.is_some());

    // errors: Status in protobuf, as upstream
    let a = call(&s, "GET", &format!("{cms}/c"), "", CLIENT_GO, b"");
    assert_eq!(a.code, 404);
    let st: meta::Status = a.object("v1", "Status");
    assert_eq!(st.code, Some(404));
    assert_eq!(st.reason.as_deref(), Some("NotFound"));
    assert_eq!(st.status.as_deref(), Some("Failure"));
    assert_eq!(st.message.as_deref(), Some("configmaps \"c\" not found"));
    let d = st.details.unwrap();
    assert_eq!(
        (d.name.as_deref(), d.kind.as_deref()),
        (Some("c"), Some("configmaps"))
    );

    // an invalid object: 422 with causes
    let bad = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: Some("Not_Valid".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let a = call(
        &s,
        "POST",
        cms,
        PROTOBUF,
        CLIENT_GO,
        &pb("v1", "ConfigMap", &bad),
    );
    assert_eq!(a.code, 422);
    let st: meta::Status = a.object("v1", "Status");
    assert_eq!(st.reason.as_deref(), Some("Invalid"));
    let causes = st.details.unwrap().causes;
    assert_eq!(causes[0].field.as_deref(), Some("metadata.name"));

    // the same error in JSON for a JSON client
    let (code, v) = json_call(&s, "GET", &format!("{cms}/c"), &Value::Null);
    assert_eq!((code, v["reason"].as_str()), (404, Some("NotFound")));
}

#[test]
fn custom_resources_stay_json() {
    let s = start();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let (code, v) = json_call(
        &s,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(code, 201, "{v}");
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let (code, v) = json_call(
        &s,
        "POST",
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}),
    );
    assert_eq!(code, 201, "{v}");
    // client-go's dynamic client asks for JSON anyway; a typed-style Accept falls back
    let a = call(&s, "GET", &format!("{widgets}/w"), "", CLIENT_GO, b"");
    assert_eq!((a.code, a.content_type.as_str()), (200, "application/json"));
    let v: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(v["spec"]["size"], 1);
    // protobuf alone is not acceptable for a custom resource
    let a = call(&s, "GET", &format!("{widgets}/w"), "", PROTOBUF, b"");
    assert_eq!(a.code, 406);
    let v: Value = serde_json::from_slice(&a.body).unwrap();
    assert_eq!(v["reason"], "NotAcceptable");
    // errors of custom resources stay JSON
    let a = call(&s, "GET", &format!("{widgets}/none"), "", CLIENT_GO, b"");
    assert_eq!((a.code, a.content_type.as_str()), (404, "application/json"));
    // but their metadata is served in protobuf (PartialObjectMetadata is built in)
    let a = call(
        &s,
        "GET",
        widgets,
        "",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        b"",
    );
    let l: meta::PartialObjectMetadataList =
        a.object("meta.k8s.io/v1", "PartialObjectMetadataList");
    assert_eq!(
        l.items[0].metadata.as_ref().unwrap().name.as_deref(),
        Some("w")
    );
}

/// The frames of a protobuf watch body: 4-byte big-endian length, then a WatchEvent.
fn frames(body: &[u8]) -> Vec<meta::WatchEvent> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        assert!(rest.len() >= 4, "a truncated frame length");
        let len = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        assert!(rest.len() >= 4 + len, "a truncated frame");
        out.push(meta::WatchEvent::decode(&rest[4..4 + len]).expect("WatchEvent"));
        rest = &rest[4 + len..];
    }
    out
}

/// The object of a watch event: the protobuf body (magic and envelope) in `object.raw`.
fn event_object<M: Message + Default>(ev: &meta::WatchEvent, kind: &str) -> M {
    let raw = ev.object.clone().unwrap().raw.unwrap();
    Answer {
        code: 200,
        content_type: PROTOBUF.into(),
        body: raw,
    }
    .object("v1", kind)
}

/// A client-go-style flow on pods, all in protobuf: create (protobuf body and
/// answer), list, then watch from the list's resourceVersion through an update and a
/// delete; plus the initial-events watch with its BOOKMARK.
#[test]
fn client_go_style_pods_through_protobuf() {
    let s = start();
    let pods = "/api/v1/namespaces/default/pods";
    let mk = |name: &str| core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            labels: [("app".to_string(), "web".to_string())].into(),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: Some("c".into()),
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    for name in ["a", "b"] {
        let a = call(
            &s,
            "POST",
            pods,
            PROTOBUF,
            CLIENT_GO,
            &pb("v1", "Pod", &mk(name)),
        );
        assert_eq!(a.code, 201);
        let p: core::Pod = a.object("v1", "Pod");
        // defaults applied by the server arrive in protobuf
        let spec = p.spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
        assert_eq!(
            spec.containers[0].termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
    }
    let a = call(&s, "GET", pods, "", CLIENT_GO, b"");
    let list: core::PodList = a.object("v1", "PodList");
    assert_eq!(list.items.len(), 2);
    let rv = list.metadata.unwrap().resource_version.unwrap();

    // changes after the list
    let a = call(
        &s,
        "PATCH",
        &format!("{pods}/a"),
        "application/merge-patch+json",
        CLIENT_GO,
        br#"{"metadata":{"labels":{"x":"1"}}}"#,
    );
    assert_eq!(a.code, 200);
    let zero = pb(
        "v1",
        "DeleteOptions",
        &meta::DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    );
    let a = call(
        &s,
        "DELETE",
        &format!("{pods}/b"),
        PROTOBUF,
        CLIENT_GO,
        &zero,
    );
    assert_eq!(a.code, 200);

    // the watch from the list's resourceVersion replays them (and ends at its timeout)
    let (code, head, body) = request(
        s.running.addr,
        "GET",
        &format!("{pods}?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
        "",
        CLIENT_GO,
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(
        content_type(&head),
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let evs = frames(&body);
    let seen: Vec<(String, String)> = evs
        .iter()
        .map(|e| {
            let p: core::Pod = event_object(e, "Pod");
            (e.r#type.clone().unwrap(), p.metadata.unwrap().name.unwrap())
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("MODIFIED".to_string(), "a".to_string()),
            ("DELETED".to_string(), "b".to_string())
        ]
    );
    let modified: core::Pod = event_object(&evs[0], "Pod");
    assert_eq!(modified.metadata.unwrap().labels["x"], "1");

    // the initial events of a watch-list, closed by the initial-events-end BOOKMARK
    let (code, _, body) = request(
        s.running.addr,
        "GET",
        &format!("{pods}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1"),
        "",
        "application/vnd.kubernetes.protobuf;stream=watch",
        b"",
    );
    assert_eq!(code, 200);
    let evs = frames(&body);
    assert_eq!(evs[0].r#type.as_deref(), Some("ADDED"));
    let first: core::Pod = event_object(&evs[0], "Pod");
    assert_eq!(first.metadata.unwrap().name.as_deref(), Some("a"));
    let bookmark = evs
        .iter()
        .find(|e| e.r#type.as_deref() == Some("BOOKMARK"))
        .expect("a BOOKMARK");
    let b: core::Pod = event_object(bookmark, "Pod");
    let bm = b.metadata.unwrap();
    assert_eq!(
        bm.annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    assert!(bm.resource_version.is_some_and(|r| !r.is_empty()));

    // a JSON watch is unchanged
    let (code, head, body) = request(
        s.running.addr,
        "GET",
        &format!("{pods}?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
        "",
        "application/json",
        b"",
    );
    assert_eq!(code, 200);
    assert_eq!(content_type(&head), "application/json");
    let lines: Vec<Value> = body
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["type"], "MODIFIED");
}

/// The protobuf watch frames of a JSON watch body's events, encoded from their values
/// (the encoding without the stored objects' cache).
fn frames_of_json(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let ev: Value = serde_json::from_slice(l).unwrap();
        coxswain_apiserver::bench::protobuf_watch_event(
            &mut out,
            ev["type"].as_str().unwrap(),
            &ev["object"],
        )
        .unwrap();
    }
    out
}

/// Protobuf answers of stored objects come from each object version's encoding, cached
/// the first time: a LIST (cache cold, then warm), a GET and watch events (initial and
/// replayed) are byte for byte the encoding of the JSON answers' values.
#[test]
fn cached_encodings_are_the_uncached_bytes() {
    let s = start();
    let pods = "/api/v1/namespaces/default/pods";
    let (code, first) = json_call(&s, "POST", pods, &pod("p-0"));
    assert_eq!(code, 201, "{first}");
    let rv0 = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 1..4 {
        let (code, v) = json_call(&s, "POST", pods, &pod(&format!("p-{i}")));
        assert_eq!(code, 201, "{v}");
    }
    let (code, v) = s.json(
        "PATCH",
        &format!("{pods}/p-1"),
        "application/merge-patch+json",
        "application/json",
        &json!({"metadata": {"labels": {"x": "1"}}}),
    );
    assert_eq!(code, 200, "{v}");

    let (code, list) = s.json("GET", pods, "", "application/json", &Value::Null);
    assert_eq!(code, 200);
    let uncached = coxswain_apiserver::bench::protobuf_encode(&list).unwrap();
    for round in ["cold", "warm"] {
        let a = call(&s, "GET", pods, "", CLIENT_GO, b"");
        assert_eq!(a.content_type, PROTOBUF);
        assert!(a.body == uncached, "LIST, cache {round}");
    }
    // a page of it, and a label-selected one
    for q in ["limit=2", "labelSelector=x%3D1"] {
        let path = format!("{pods}?{q}");
        let (_, js) = s.json("GET", &path, "", "application/json", &Value::Null);
        let a = call(&s, "GET", &path, "", CLIENT_GO, b"");
        assert!(
            a.body == coxswain_apiserver::bench::protobuf_encode(&js).unwrap(),
            "{q}"
        );
    }
    for name in ["p-0", "p-1"] {
        let (js, body) = same_answer(&s, &format!("{pods}/{name}"));
        assert!(
            body == coxswain_apiserver::bench::protobuf_encode(&js).unwrap(),
            "GET {name}"
        );
    }

    // watches: the initial state (ADDED), and the history from the first create
    for q in [
        "watch=1&timeoutSeconds=1".to_string(),
        format!("watch=1&resourceVersion={rv0}&timeoutSeconds=1"),
    ] {
        let path = format!("{pods}?{q}");
        let (code, _, json_body) =
            request(s.running.addr, "GET", &path, "", "application/json", b"");
        assert_eq!(code, 200);
        let (code, _, pb_body) = request(s.running.addr, "GET", &path, "", CLIENT_GO, b"");
        assert_eq!(code, 200);
        assert!(!pb_body.is_empty(), "{q}");
        assert!(pb_body == frames_of_json(&json_body), "watch {q}");
    }
    // a deletion seen live by a protobuf watcher
    let watcher = {
        let addr = s.running.addr;
        let path = format!(
            "{pods}?watch=1&resourceVersion={}&timeoutSeconds=2",
            list["metadata"]["resourceVersion"].as_str().unwrap()
        );
        std::thread::spawn(move || request(addr, "GET", &path, "", CLIENT_GO, b""))
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    let (code, gone) = json_call(&s, "DELETE", &format!("{pods}/p-2"), &Value::Null);
    assert_eq!(code, 200, "{gone}");
    let (_, _, body) = watcher.join().unwrap();
    let evs = frames(&body);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0].r#type.as_deref(), Some("DELETED"));
    let mut expected = Vec::new();
    let p: core::Pod = event_object(&evs[0], "Pod");
    assert_eq!(p.metadata.unwrap().name.as_deref(), Some("p-2"));
    coxswain_apiserver::bench::protobuf_watch_event(&mut expected, "DELETED", &gone).unwrap();
    assert!(body == expected, "live DELETED");
}
