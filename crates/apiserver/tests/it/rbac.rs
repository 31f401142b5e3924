//! RBAC authorization, escalation checks, the review APIs and public paths, against a
//! server with token authentication and `--authorization-mode=RBAC`: the admin token
//! (system:masters) sets up roles; `alice` and `bob` are plain users.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use coxswain_apiserver::auth::UserInfo;
use serde_json::{json, Value};

const ALICE: &str = "alice-token";
const BOB: &str = "bob-token";

struct Rbac {
    server: common::Server,
    admin: String,
}

/// One request with `token` (none when empty); the code and the JSON answer (or the
/// body as a string when it is not JSON).
fn call(addr: SocketAddr, token: &str, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    let auth = if token.is_empty() {
        String::new()
    } else {
        format!("Authorization: Bearer {token}\r\n")
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        bytes.len()
    );
    s.write_all(head.as_bytes()).expect("write");
    s.write_all(&bytes).expect("write body");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("head");
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("code");
    let mut body = raw[end + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = Vec::new();
        let mut b = &body[..];
        while let Some(pos) = b.windows(2).position(|w| w == b"\r\n") {
            let size =
                usize::from_str_radix(String::from_utf8_lossy(&b[..pos]).trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            out.extend_from_slice(&b[pos + 2..pos + 2 + size]);
            b = &b[pos + 4 + size..];
        }
        body = out;
    }
    let v = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).to_string()));
    (code, v)
}

impl Rbac {
    fn start() -> Rbac {
        let server = common::start_with(|c| {
            c.auth = true;
            c.extra_tokens = vec![
                (ALICE.into(), UserInfo::new("alice", &["devs"])),
                (BOB.into(), UserInfo::new("bob", &[])),
            ];
        });
        let admin = server.running.token.clone().expect("admin token");
        Rbac { server, admin }
    }

    fn as_user(&self, token: &str, method: &str, path: &str, body: &Value) -> (u16, Value) {
        call(self.server.running.addr, token, method, path, body)
    }

    fn admin(&self, method: &str, path: &str, body: &Value) -> Value {
        let (code, v) = self.as_user(&self.admin.clone(), method, path, body);
        assert!(code < 300, "{method} {path}: {code} {v}");
        v
    }
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

fn setup(r: &Rbac) {
    r.admin(
        "POST",
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "team"}}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"metadata": {"name": "pod-reader"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/namespaces/team/rolebindings"),
        &json!({"metadata": {"name": "read-pods"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
}

#[test]
fn rbac_allows_what_bindings_grant() {
    let r = Rbac::start();
    setup(&r);
    let (code, _) = r.as_user(ALICE, "GET", "/api/v1/namespaces/team/pods", &Value::Null);
    assert_eq!(code, 200);
    let (code, v) = r.as_user(
        ALICE,
        "GET",
        "/api/v1/namespaces/default/pods",
        &Value::Null,
    );
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(v["reason"], "Forbidden");
    let (code, v) = r.as_user(BOB, "GET", "/api/v1/namespaces/team/pods/x", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "pods \"x\" is forbidden: User \"bob\" cannot get resource \"pods\" in API group \"\" in the namespace \"team\""
    );
    // a binding to a group applies at once; its removal too
    r.admin(
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        &json!({"metadata": {"name": "devs-read"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
                "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let (code, _) = r.as_user(
        ALICE,
        "GET",
        "/api/v1/namespaces/default/pods",
        &Value::Null,
    );
    assert_eq!(code, 200);
    r.admin(
        "DELETE",
        &format!("{RBAC}/clusterrolebindings/devs-read"),
        &Value::Null,
    );
    let (code, _) = r.as_user(
        ALICE,
        "GET",
        "/api/v1/namespaces/default/pods",
        &Value::Null,
    );
    assert_eq!(code, 403);
    // a binding to a missing role gives the resolution error as the reason
    r.admin(
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        &json!({"metadata": {"name": "dangling"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "missing"},
                "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let (code, v) = r.as_user(BOB, "GET", "/api/v1/nodes", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found"
    );
}

#[test]
fn access_reviews_answer_as_the_authorizer() {
    let r = Rbac::start();
    setup(&r);
    let ssar = |token: &str, attrs: Value| {
        let (code, v) = r.as_user(
            token,
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attrs}),
        );
        assert_eq!(code, 201, "{v}");
        assert_eq!(v["kind"], "SelfSubjectAccessReview");
        v["status"].clone()
    };
    // bob may ask about himself: the bootstrap policy's system:basic-user lets every
    // authenticated user create self reviews
    let (code, v) = r.as_user(
        BOB,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["status"]["allowed"], false, "{v}");
    r.admin(
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"metadata": {"name": "reviewer"}, "rules": [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"]}]}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        &json!({"metadata": {"name": "reviewers"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reviewer"},
                "subjects": [{"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let s = ssar(
        ALICE,
        json!({"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"}}),
    );
    assert_eq!(
        s,
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"read-pods/team\" of ClusterRole \"pod-reader\" to User \"alice\""})
    );
    let s = ssar(
        ALICE,
        json!({"resourceAttributes": {"verb": "delete", "resource": "pods", "namespace": "team"}}),
    );
    assert_eq!(s, json!({"allowed": false}));
    // the admin is allowed by its group, before RBAC, without a reason
    let s = ssar(
        &r.admin.clone(),
        json!({"nonResourceAttributes": {"verb": "get", "path": "/anything"}}),
    );
    assert_eq!(s, json!({"allowed": true}));
    // validation as upstream
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &json!({"spec": {}}),
    );
    assert_eq!(code, 422);
    assert_eq!(
        v["message"],
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    // a SubjectAccessReview asks about someone else
    let v = r.admin(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}}),
    );
    assert_eq!(v["status"]["allowed"], true);
    let v = r.admin(
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        &json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}}),
    );
    assert_eq!(v["status"], json!({"allowed": false}));
    let (code, v) = r.as_user(
        &r.admin.clone(),
        "POST",
        "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
        &json!({"spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}}),
    );
    assert_eq!(code, 422);
    assert_eq!(
        v["message"],
        "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"team\": must match metadata.namespace"
    );
    // reviews are never stored: no list, no get
    let (code, _) = r.as_user(
        &r.admin.clone(),
        "GET",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &Value::Null,
    );
    assert_eq!(code, 405);
    // rules review: what alice may do in team
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        &json!({"spec": {"namespace": "team"}}),
    );
    assert_eq!(code, 201, "{v}");
    assert_eq!(
        v["status"],
        json!({
            "resourceRules": [
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io", "authentication.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"]},
                // the bootstrap policy's system:basic-user
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]},
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
            ],
            // system:discovery and system:public-info-viewer
            "nonResourceRules": [
                {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]},
                {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]},
            ],
            "incomplete": false,
        })
    );
}

#[test]
fn escalation_is_refused() {
    let r = Rbac::start();
    setup(&r);
    // alice may write roles and bindings in team, and holds get/list on pods there
    r.admin(
        "POST",
        &format!("{RBAC}/namespaces/team/roles"),
        &json!({"metadata": {"name": "rbac-editor"}, "rules": [{"verbs": ["create", "update", "patch"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]}]}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/namespaces/team/rolebindings"),
        &json!({"metadata": {"name": "alice-edits"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rbac-editor"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let roles = format!("{RBAC}/namespaces/team/roles");
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &roles,
        &json!({"metadata": {"name": "reader"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
    );
    assert_eq!(code, 201, "{v}");
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &roles,
        &json!({"metadata": {"name": "deleter"}, "rules": [{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods", "secrets"]}]}),
    );
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}"
    );
    assert_eq!(v["details"]["name"], "deleter");
    assert_eq!(v["details"]["kind"], "roles");
    // an update that adds rules not held is refused too (merge patch)
    let mut s = TcpStream::connect(r.server.running.addr).expect("connect");
    let body =
        json!({"rules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]}).to_string();
    let head = format!(
        "PATCH {roles}/reader HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALICE}\r\nContent-Type: application/merge-patch+json\r\nAccept: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).expect("write");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(
        out.contains("is attempting to grant RBAC permissions not currently held"),
        "{out}"
    );
    // bindings: to a role whose rules alice holds, yes; to one she does not, no
    let bindings = format!("{RBAC}/namespaces/team/rolebindings");
    let bind = |name: &str, kind: &str, role: &str| {
        json!({"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
               "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]})
    };
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &bindings,
        &bind("bob-reads", "ClusterRole", "pod-reader"),
    );
    assert_eq!(code, 201, "{v}");
    r.admin(
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"metadata": {"name": "everything"}, "rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
    );
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &bindings,
        &bind("bob-all", "ClusterRole", "everything"),
    );
    assert_eq!(code, 403);
    assert!(
        v["message"].as_str().unwrap_or("").starts_with(
            "rolebindings.rbac.authorization.k8s.io \"bob-all\" is forbidden: user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}"
        ),
        "{v}"
    );
    // with `bind` on that role she may
    r.admin(
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"metadata": {"name": "binder"}, "rules": [{"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["everything"]}]}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/namespaces/team/rolebindings"),
        &json!({"metadata": {"name": "alice-binds"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "binder"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &bindings,
        &bind("bob-all", "ClusterRole", "everything"),
    );
    assert_eq!(code, 201, "{v}");
    // and with `escalate` on roles, any role
    r.admin(
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"metadata": {"name": "escalator"}, "rules": [{"verbs": ["escalate"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]}]}),
    );
    r.admin(
        "POST",
        &format!("{RBAC}/namespaces/team/rolebindings"),
        &json!({"metadata": {"name": "alice-escalates"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "escalator"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    let (code, v) = r.as_user(
        ALICE,
        "POST",
        &roles,
        &json!({"metadata": {"name": "deleter"}, "rules": [{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods", "secrets"]}]}),
    );
    assert_eq!(code, 201, "{v}");
}

#[test]
fn token_and_self_subject_reviews() {
    let r = Rbac::start();
    let v = r.admin(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": ALICE}}),
    );
    assert_eq!(v["status"]["authenticated"], true);
    assert_eq!(
        v["status"]["user"],
        json!({"username": "alice", "groups": ["devs", "system:authenticated"]})
    );
    let v = r.admin(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"spec": {"token": "nope"}}),
    );
    assert_eq!(v["status"].get("authenticated"), None);
    assert_eq!(v["status"]["user"], json!({}));
    let (code, v) = r.as_user(
        &r.admin.clone(),
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"spec": {}}),
    );
    assert_eq!(code, 400);
    assert_eq!(
        v["message"],
        "token is required for TokenReview in authentication"
    );
    let v = r.admin(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    );
    assert_eq!(v["status"]["userInfo"]["username"], "kubernetes-admin");
    assert_eq!(
        v["status"]["userInfo"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
}

#[test]
fn public_paths_and_credentials() {
    let r = Rbac::start();
    for p in ["/healthz", "/livez", "/readyz", "/version"] {
        let (code, _) = r.as_user("", "GET", p, &Value::Null);
        assert_eq!(code, 200, "{p} without credentials");
        // invalid credentials are refused even there, as upstream
        let (code, v) = r.as_user("wrong", "GET", p, &Value::Null);
        assert_eq!(code, 401, "{p} with a wrong token");
        assert_eq!(
            v,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }
    // anonymous requests (on by default, as kube-apiserver's) may not read discovery:
    // system:discovery is bound to authenticated users only
    let (code, v) = r.as_user("", "GET", "/apis", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
    );
    // every authenticated user reads discovery (system:discovery), but not other paths
    let (code, _) = r.as_user(BOB, "GET", "/apis", &Value::Null);
    assert_eq!(code, 200);
    let (code, v) = r.as_user(BOB, "GET", "/metrics", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        v["message"],
        "forbidden: User \"bob\" cannot get path \"/metrics\""
    );
}

#[test]
fn review_kinds_in_discovery_as_kube_apiserver() {
    let s = common::start();
    let want = common::fixture("discovery/apis-aggregated.json");
    let (code, got) = s.json(
        "GET",
        "/apis",
        "application/json",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        &Value::Null,
    );
    assert_eq!(code, 200);
    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|g| g["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let got_names = names(&got);
    for g in ["authentication.k8s.io", "authorization.k8s.io"] {
        let pick = |v: &Value| {
            v["items"]
                .as_array()
                .expect("items")
                .iter()
                .find(|x| x["metadata"]["name"] == g)
                .cloned()
                .unwrap_or_else(|| panic!("{g} missing"))
        };
        assert_eq!(pick(&got), pick(&want), "{g}");
    }
    // upstream's group order: after events.k8s.io, before autoscaling
    let pos = |n: &str| got_names.iter().position(|x| x == n).expect(n);
    assert!(pos("events.k8s.io") < pos("authentication.k8s.io"));
    assert!(pos("authorization.k8s.io") < pos("autoscaling"));
    let (code, v) = s.json(
        "GET",
        "/apis/authorization.k8s.io/v1",
        "application/json",
        "application/json",
        &Value::Null,
    );
    assert_eq!(code, 200);
    for r in v["resources"].as_array().expect("resources") {
        assert_eq!(r["verbs"], json!(["create"]), "{r}");
    }
    // OpenAPI: one POST per review
    let (code, doc) = s.json(
        "GET",
        "/openapi/v3/apis/authorization.k8s.io/v1",
        "application/json",
        "application/json",
        &Value::Null,
    );
    assert_eq!(code, 200);
    let paths = doc["paths"].as_object().expect("paths");
    let mut keys: Vec<&String> = paths.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        ]
    );
    assert_eq!(
        paths["/apis/authorization.k8s.io/v1/subjectaccessreviews"]["post"]["operationId"],
        "createAuthorizationV1SubjectAccessReview"
    );
}
