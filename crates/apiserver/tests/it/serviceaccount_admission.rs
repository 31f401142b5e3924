//! ServiceAccount admission through the API (plugin turned on, as `coxswain apiserver`
//! and `up` run it): a pod whose account does not exist is refused with upstream's 403,
//! one whose account exists runs as it with its credentials mounted and its image pull
//! secrets; and `--disable-admission-plugins` turns built-in plugins off.

use crate::common::{self, Server};
use coxswain_apiserver::server::AdmissionPlugin;
use serde_json::{json, Value};

const JSON: &str = "application/json";

fn post(s: &Server, path: &str, body: Value) -> (u16, Value) {
    s.json("POST", path, JSON, JSON, &body)
}

fn pod(meta: Value, spec: Value) -> Value {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "app", "image": "x"}]);
    json!({"metadata": meta, "spec": spec})
}

fn namespace(s: &Server, name: &str) {
    let (code, v) = post(s, "/api/v1/namespaces", json!({"metadata": {"name": name}}));
    assert_eq!(code, 201, "{v}");
}

#[test]
fn pods_run_as_existing_accounts_only() {
    let s = common::start_with(|c| c.admission_plugins.enable(AdmissionPlugin::ServiceAccount));
    namespace(&s, "sa");
    let pods = "/api/v1/namespaces/sa/pods";

    // no `default` account yet: refused, as kube-apiserver refuses it
    let (code, st) = post(&s, pods, pod(json!({"name": "early"}), json!({})));
    assert_eq!(code, 403, "{st}");
    assert_eq!(st["reason"], "Forbidden");
    assert_eq!(
        st["message"],
        "pods \"early\" is forbidden: error looking up service account sa/default: serviceaccount \"default\" not found"
    );
    assert_eq!(st["details"]["name"], "early");
    assert_eq!(st["details"]["kind"], "pods");
    // a generated name is not made yet: the message names the prefix
    let (code, st) = post(&s, pods, pod(json!({"generateName": "web-"}), json!({})));
    assert_eq!(code, 403, "{st}");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with("pods \"web-\" is forbidden: "),
        "{st}"
    );
    // a dry run is refused alike, and nothing was stored
    let (code, _) = post(
        &s,
        &format!("{pods}?dryRun=All"),
        pod(json!({"name": "early"}), json!({})),
    );
    assert_eq!(code, 403);
    let (code, _) = s.json("GET", &format!("{pods}/early"), JSON, JSON, &Value::Null);
    assert_eq!(code, 404);

    // a pod created just before its namespace's `default` account waits for it (as
    // upstream looks the account up again for a while before refusing)
    let (code, waited) = std::thread::scope(|scope| {
        let pod = scope.spawn(|| post(&s, pods, pod(json!({"name": "waited"}), json!({}))));
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (code, v) = post(
            &s,
            "/api/v1/namespaces/sa/serviceaccounts",
            json!({"metadata": {"name": "default"}, "imagePullSecrets": [{"name": "registry"}]}),
        );
        assert_eq!(code, 201, "{v}");
        pod.join().expect("pod request")
    });
    assert_eq!(code, 201, "{waited}");
    assert_eq!(
        waited["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
    let (code, made) = post(&s, pods, pod(json!({"name": "ok"}), json!({})));
    assert_eq!(code, 201, "{made}");
    let spec = &made["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "registry"}]));
    let volume = spec["volumes"][0]["name"].as_str().unwrap();
    assert!(volume.starts_with("kube-api-access-"), "{spec}");
    assert_eq!(spec["containers"][0]["volumeMounts"][0]["name"], volume);
    // its own pull secrets stay; automounting off mounts nothing
    let (code, made) = post(
        &s,
        pods,
        pod(
            json!({"name": "own"}),
            json!({"imagePullSecrets": [{"name": "mine"}], "automountServiceAccountToken": false}),
        ),
    );
    assert_eq!(code, 201, "{made}");
    assert_eq!(made["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
    assert!(made["spec"].get("volumes").is_none(), "{made}");

    // a named account must exist too
    let (code, st) = post(
        &s,
        pods,
        pod(
            json!({"name": "robot"}),
            json!({"serviceAccountName": "robot"}),
        ),
    );
    assert_eq!(code, 403, "{st}");
    assert_eq!(
        st["message"],
        "pods \"robot\" is forbidden: error looking up service account sa/robot: serviceaccount \"robot\" not found"
    );
}

#[test]
fn disabled_plugins_do_not_run() {
    // the harness's default: ServiceAccount off, so a namespace without accounts admits
    // pods; LimitRanger and ResourceQuota off as well here
    let s = common::start_with(|c| {
        c.admission_plugins.disable(AdmissionPlugin::LimitRanger);
        c.admission_plugins.disable(AdmissionPlugin::ResourceQuota);
    });
    namespace(&s, "off");
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/off/limitranges",
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "100m"}}]}}),
    );
    assert_eq!(code, 201, "{v}");
    let (code, v) = post(
        &s,
        "/api/v1/namespaces/off/resourcequotas",
        json!({"metadata": {"name": "none"}, "spec": {"hard": {"pods": "0"}}}),
    );
    assert_eq!(code, 201, "{v}");
    let (code, made) = post(
        &s,
        "/api/v1/namespaces/off/pods",
        pod(json!({"name": "free"}), json!({})),
    );
    assert_eq!(code, 201, "{made}");
    // without the plugin nothing names the account (as kube-apiserver without it)
    assert!(made["spec"].get("serviceAccountName").is_none(), "{made}");
    assert!(made["spec"].get("volumes").is_none(), "{made}");
    assert!(
        made["spec"]["containers"][0]
            .get("resources")
            .is_none_or(|r| r == &json!({})),
        "{made}"
    );
}
