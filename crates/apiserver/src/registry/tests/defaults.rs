//! Defaults of the built-in kinds through their strategies, against what a real
//! kube-apiserver 1.36 returned for the same minimal bodies (`objects/`) and upstream's
//! defaulting tests.

use crate::registry::catalog::{Catalog, Phase};

/// The create-time defaults of a built-in kind, through its strategy.
fn apply_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    let def = Catalog::builtin()
        .by_kind(group, version, kind)
        .unwrap_or_else(|| panic!("no built-in kind {group}/{version} {kind}"));
    def.strategy.default(def, obj, Phase::Create);
}

/// The decode-time defaults of a built-in kind.
fn apply_scheme_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    let def = Catalog::builtin()
        .by_kind(group, version, kind)
        .unwrap_or_else(|| panic!("no built-in kind {group}/{version} {kind}"));
    def.strategy.default(def, obj, Phase::Scheme);
}

use crate::registry::batch::job::defaults::generate_job_selector;
use crate::registry::core::podspec::defaults::pull_policy_for;
use serde_json::{json, Value};

fn fixture(name: &str) -> Value {
    crate::reference::fixture(&format!("objects/{name}"))
}

/// Drop what the server sets that defaulting does not.
fn strip_server_fields(v: &mut Value) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(k);
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(Value::as_object_mut) {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
}

/// What a create makes of `input` (the strategy's create rules, then the create-time
/// defaults), against the recorded answer.
fn check(group: &str, version: &str, kind: &str, mut input: Value, file: &str) {
    let def = Catalog::builtin()
        .by_kind(group, version, kind)
        .unwrap_or_else(|| panic!("no built-in kind {group}/{version} {kind}"));
    crate::registry::rest::prepare_create(def, &mut input);
    apply_defaults(group, version, kind, &mut input);
    let mut want = fixture(file);
    strip_server_fields(&mut want);
    strip_server_fields(&mut input);
    assert_eq!(
        input,
        want,
        "{file}\n got: {}\nwant: {}",
        serde_json::to_string_pretty(&input).unwrap(),
        serde_json::to_string_pretty(&want).unwrap()
    );
}

fn defaulted(group: &str, version: &str, kind: &str, mut v: Value) -> Value {
    apply_defaults(group, version, kind, &mut v);
    v
}

#[test]
fn fixture_deployment() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "golden"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25",
                    "ports": [{"containerPort": 80}]}]}
            }
        }
    });
    check("apps", "v1", "Deployment", input, "deployment.json");
}

#[test]
fn fixture_replicaset() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "rs1", "namespace": "golden"},
        "spec": {
            "selector": {"matchLabels": {"rs": "1"}},
            "template": {
                "metadata": {"labels": {"rs": "1"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            }
        }
    });
    check("apps", "v1", "ReplicaSet", input, "replicaset.json");
}

#[test]
fn fixture_statefulset() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "golden"},
        "spec": {
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "c", "image": "postgres"}]}
            }
        }
    });
    check("apps", "v1", "StatefulSet", input, "statefulset.json");
}

#[test]
fn fixture_daemonset() {
    let input = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "golden"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            }
        }
    });
    check("apps", "v1", "DaemonSet", input, "daemonset.json");
}

#[test]
fn fixture_job_with_generated_selector() {
    let mut input = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "once", "namespace": "golden"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]
        }}}
    });
    let mut want = fixture("job.json");
    // the create defaults name the Job's uid, set by then
    input["metadata"]["uid"] = want["metadata"]["uid"].clone();
    apply_defaults("batch", "v1", "Job", &mut input);
    strip_server_fields(&mut want);
    strip_server_fields(&mut input);
    assert_eq!(input, want);
}

#[test]
fn fixture_cronjob() {
    let input = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "tick", "namespace": "golden"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "busybox"}]
            }}}}
        }
    });
    check("batch", "v1", "CronJob", input, "cronjob.json");
}

#[test]
fn fixture_pod() {
    let mut input = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p1", "namespace": "golden"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    });
    apply_defaults("", "v1", "Pod", &mut input);
    let mut want = fixture("pod.json");
    strip_server_fields(&mut want);
    // Set by the ServiceAccount admission plugin.
    let spec = want["spec"].as_object_mut().unwrap();
    for k in ["serviceAccount", "serviceAccountName", "volumes"] {
        spec.remove(k);
    }
    want["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("volumeMounts");
    strip_server_fields(&mut input);
    assert_eq!(input, want);
}

#[test]
fn fixture_service() {
    let input = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "golden"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    });
    check("", "v1", "Service", input, "service.json");
}

#[test]
fn fixture_namespace() {
    let input = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "golden-ns"}
    });
    check("", "v1", "Namespace", input, "namespace.json");
}

#[test]
fn fixture_pdb() {
    let input = json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb", "namespace": "golden"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    });
    check("policy", "v1", "PodDisruptionBudget", input, "pdb.json");
}

#[test]
fn fixture_lease() {
    let input = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l1", "namespace": "golden"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}
    });
    check("coordination.k8s.io", "v1", "Lease", input, "lease.json");
}

#[test]
fn fixture_configmaps() {
    let input = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm1", "namespace": "golden", "labels": {"a": "b"}},
        "data": {"k": "v"}
    });
    check("", "v1", "ConfigMap", input, "configmap.json");
    let input = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "gen-vncnw", "generateName": "gen-", "namespace": "golden"}
    });
    check("", "v1", "ConfigMap", input, "generatename.json");
}

#[test]
fn image_pull_policy() {
    for (image, want) in [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("nginx:1.25", "IfNotPresent"),
        ("localhost:5000/app", "Always"),
        ("localhost:5000/app:v2", "IfNotPresent"),
        ("registry.example.com/team/app:latest", "Always"),
        (
            "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "IfNotPresent",
        ),
        (
            "busybox:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "Always",
        ),
        ("", "IfNotPresent"),
        ("BusyBox", "IfNotPresent"),
        ("bad image", "IfNotPresent"),
    ] {
        assert_eq!(pull_policy_for(image), want, "{image}");
    }
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"containers": [
            {"name": "a", "image": "x", "imagePullPolicy": "Never"},
            {"name": "b"}
        ]}}),
    );
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
    assert_eq!(
        pod["spec"]["containers"][1]["imagePullPolicy"],
        "IfNotPresent"
    );
}

#[test]
fn probes_lifecycle_env() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {
            "initContainers": [{"name": "i", "image": "x:1",
                "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 0}}],
            "containers": [{
                "name": "c", "image": "x:1",
                "livenessProbe": {"httpGet": {"port": 8080}, "timeoutSeconds": 5},
                "readinessProbe": {"grpc": {"port": 9000}},
                "lifecycle": {"preStop": {"httpGet": {"port": 1, "path": "/q"}}},
                "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
            }],
            "ephemeralContainers": [{"name": "e", "image": "dbg"}]
        }}),
    );
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 5,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["path"], "/q");
    assert_eq!(c["lifecycle"]["preStop"]["httpGet"]["scheme"], "HTTP");
    assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    let i = &pod["spec"]["initContainers"][0];
    assert_eq!(i["startupProbe"]["periodSeconds"], 10);
    assert_eq!(i["terminationMessagePolicy"], "File");
    let e = &pod["spec"]["ephemeralContainers"][0];
    assert_eq!(e["imagePullPolicy"], "Always");
    assert_eq!(e["resources"], json!({}));
}

#[test]
fn volumes() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"containers": [], "volumes": [
            {"name": "a"},
            {"name": "b", "secret": {"secretName": "s"}},
            {"name": "c", "configMap": {"name": "cm", "defaultMode": 256}},
            {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"name": "e", "projected": {"sources": [
                {"serviceAccountToken": {"path": "t"}},
                {"downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}
            ]}},
            {"name": "f", "hostPath": {"path": "/x"}},
            {"name": "g", "emptyDir": {"sizeLimit": "1024Mi"}},
            {"name": "h", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1000Mi"}}}}}},
            {"name": "i", "image": {"reference": "quay.io/x/y:v1"}},
            {"name": "j", "rbd": {"monitors": ["m"], "image": "i"}},
            {"name": "k", "azureDisk": {"diskName": "d", "diskURI": "u"}}
        ]}}),
    );
    let v = &pod["spec"]["volumes"];
    assert_eq!(v[0]["emptyDir"], json!({}));
    assert_eq!(v[1]["secret"]["defaultMode"], 420);
    assert_eq!(v[2]["configMap"]["defaultMode"], 256);
    assert_eq!(v[3]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(v[4]["projected"]["defaultMode"], 420);
    assert_eq!(
        v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(
        v[4]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(v[5]["hostPath"]["type"], "");
    assert_eq!(v[6]["emptyDir"]["sizeLimit"], "1Gi");
    let t = &v[7]["ephemeral"]["volumeClaimTemplate"];
    assert_eq!(t["metadata"], json!({}));
    assert_eq!(t["spec"]["volumeMode"], "Filesystem");
    assert_eq!(t["spec"]["resources"]["requests"]["storage"], "1000Mi");
    assert_eq!(v[8]["image"]["pullPolicy"], "IfNotPresent");
    assert_eq!(
        v[9]["rbd"],
        json!({"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin",
               "keyring": "/etc/ceph/keyring"})
    );
    assert_eq!(v[10]["azureDisk"]["cachingMode"], "ReadWrite");
    assert_eq!(v[10]["azureDisk"]["kind"], "Shared");
    assert_eq!(v[10]["azureDisk"]["fsType"], "ext4");
    assert_eq!(v[10]["azureDisk"]["readOnly"], false);
}

#[test]
fn resources_requests_from_limits_and_qos() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "x:1",
            "resources": {"limits": {"cpu": "0.5", "memory": 134217728}}}]}}),
    );
    let res = &pod["spec"]["containers"][0]["resources"];
    // A plain byte count stays decimal: only a binary suffix selects binary output.
    assert_eq!(res["limits"], json!({"cpu": "500m", "memory": "134217728"}));
    assert_eq!(
        res["requests"],
        json!({"cpu": "500m", "memory": "134217728"})
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");

    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"containers": [{"name": "c", "image": "x:1",
            "resources": {"requests": {"cpu": "100m"}}}]}}),
    );
    assert_eq!(pod["status"]["qosClass"], "Burstable");

    // Templates do not copy limits to requests.
    let d = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x:1",
            "resources": {"limits": {"cpu": "1"}}}]}}}}),
    );
    let res = &d["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert!(res.get("requests").is_none());
    assert!(d["spec"]["template"]["spec"]
        .get("enableServiceLinks")
        .is_none());
}

#[test]
fn pod_level_resources_defaults() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {
            "resources": {"limits": {"cpu": "2", "memory": "1Gi"}},
            "containers": [
                {"name": "a", "image": "x:1", "resources": {"requests": {"cpu": "500m"}}},
                {"name": "b", "image": "x:1", "resources": {"requests": {"cpu": "250m"}}}
            ]
        }}),
    );
    assert_eq!(
        pod["spec"]["resources"]["requests"],
        json!({"cpu": "750m", "memory": "1Gi"})
    );
    assert_eq!(pod["status"]["qosClass"], "Burstable");

    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {
            "resources": {"requests": {"cpu": "1"}},
            "containers": [
                {"name": "a", "image": "x:1", "resources": {"limits": {"memory": "1Gi", "cpu": "1"}}},
                {"name": "b", "image": "x:1", "resources": {"limits": {"memory": "1Gi"}}}
            ]
        }}),
    );
    assert_eq!(pod["spec"]["resources"]["limits"], json!({"memory": "2Gi"}));
}

#[test]
fn host_network_ports_and_priority() {
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"hostNetwork": true, "priorityClassName": "system-node-critical",
            "containers": [{"name": "c", "image": "x:1", "ports": [{"containerPort": 53, "protocol": "UDP"}]}]}}),
    );
    let p = &pod["spec"]["containers"][0]["ports"][0];
    assert_eq!(p["hostPort"], 53);
    assert_eq!(p["protocol"], "UDP");
    assert_eq!(pod["spec"]["priority"], 2_000_001_000);
    assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");

    let mut pod = json!({"spec": {"containers": []}});
    apply_scheme_defaults("", "v1", "Pod", &mut pod);
    assert!(pod["spec"].get("priority").is_none());
    assert!(pod.get("status").is_none());
}

#[test]
fn service_account_alias() {
    let pod = defaulted("", "v1", "Pod", json!({"spec": {"serviceAccount": "x"}}));
    assert_eq!(pod["spec"]["serviceAccountName"], "x");
    let pod = defaulted(
        "",
        "v1",
        "Pod",
        json!({"spec": {"serviceAccount": "old", "serviceAccountName": "new"}}),
    );
    assert_eq!(pod["spec"]["serviceAccount"], "new");
}

#[test]
fn services() {
    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
            "ports": [{"port": 443, "targetPort": "https", "protocol": "UDP"}, {"port": 80, "targetPort": 0}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "h"}]}}}),
    );
    let spec = &svc["spec"];
    assert_eq!(
        spec["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        10800
    );
    assert_eq!(spec["ports"][0]["targetPort"], "https");
    assert_eq!(spec["ports"][0]["protocol"], "UDP");
    assert_eq!(spec["ports"][1]["targetPort"], 80);
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
    assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ipMode"], "VIP");
    assert!(svc["status"]["loadBalancer"]["ingress"][1]
        .get("ipMode")
        .is_none());

    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"type": "ExternalName", "externalName": "x.example", "sessionAffinityConfig": {}}}),
    );
    assert!(svc["spec"].get("internalTrafficPolicy").is_none());
    assert!(svc["spec"].get("ipFamilies").is_none());
    assert!(svc["spec"].get("sessionAffinityConfig").is_none());

    let svc = defaulted("", "v1", "Service", json!({"spec": {"clusterIP": "None"}}));
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "RequireDualStack");

    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"clusterIP": "None", "ipFamilyPolicy": "SingleStack"}}),
    );
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"clusterIP": "None", "selector": {"a": "b"}}}),
    );
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"clusterIP": "fd00::10", "selector": {"a": "b"}}}),
    );
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv6"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");

    let svc = defaulted(
        "",
        "v1",
        "Service",
        json!({"spec": {"ipFamilyPolicy": "PreferDualStack", "selector": {"a": "b"}}}),
    );
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "PreferDualStack");
}

#[test]
fn namespace_finalizer_is_create_only() {
    let mut ns = json!({"metadata": {"name": "x"}, "spec": {"finalizers": []}});
    apply_scheme_defaults("", "v1", "Namespace", &mut ns);
    assert_eq!(ns["spec"]["finalizers"], json!([]));
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "x");
    let ns = defaulted(
        "",
        "v1",
        "Namespace",
        json!({"spec": {"finalizers": ["a"]}}),
    );
    assert_eq!(ns["spec"]["finalizers"], json!(["a", "kubernetes"]));
    assert!(ns.get("metadata").is_none());
}

#[test]
fn core_misc() {
    let s = defaulted("", "v1", "Secret", json!({"data": {}}));
    assert_eq!(s["type"], "Opaque");
    let e = defaulted(
        "",
        "v1",
        "Endpoints",
        json!({"subsets": [{"ports": [{"port": 1}]}]}),
    );
    assert_eq!(e["subsets"][0]["ports"][0]["protocol"], "TCP");
    let n = defaulted(
        "",
        "v1",
        "Node",
        json!({"status": {"capacity": {"cpu": "4", "memory": "8192Mi"}}}),
    );
    assert_eq!(
        n["status"]["allocatable"],
        json!({"cpu": "4", "memory": "8Gi"})
    );
    let pv = defaulted(
        "",
        "v1",
        "PersistentVolume",
        json!({"spec": {"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/d"}}}),
    );
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["spec"]["hostPath"]["type"], "");
    assert_eq!(pv["status"]["phase"], "Pending");
    let pvc = defaulted(
        "",
        "v1",
        "PersistentVolumeClaim",
        json!({"spec": {"resources": {"requests": {"storage": "1G"}}}}),
    );
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pvc["status"]["phase"], "Pending");
    let lr = defaulted(
        "",
        "v1",
        "LimitRange",
        json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}}
        ]}}),
    );
    let item = &lr["spec"]["limits"][0];
    assert_eq!(item["default"], json!({"cpu": "2"}));
    assert_eq!(
        item["defaultRequest"],
        json!({"cpu": "2", "memory": "64Mi"})
    );
    assert!(lr["spec"]["limits"][1].get("default").is_none());
    let rc = defaulted(
        "",
        "v1",
        "ReplicationController",
        json!({"spec": {"template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
    );
    assert_eq!(rc["spec"]["selector"], json!({"a": "b"}));
    assert_eq!(rc["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(rc["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    let pt = defaulted(
        "",
        "v1",
        "PodTemplate",
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}),
    );
    assert_eq!(pt["template"]["metadata"], json!({}));
    assert_eq!(pt["template"]["spec"]["restartPolicy"], "Always");
}

#[test]
fn apps_variants() {
    let d = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    let d = defaulted(
        "apps",
        "v1",
        "Deployment",
        json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}),
    );
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
    );
    let s = defaulted(
        "apps",
        "v1",
        "StatefulSet",
        json!({"spec": {"updateStrategy": {"type": "RollingUpdate"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
    );
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );
    let vct = &s["spec"]["volumeClaimTemplates"][0];
    assert_eq!(vct["apiVersion"], "v1");
    assert_eq!(vct["kind"], "PersistentVolumeClaim");
    assert_eq!(vct["spec"]["volumeMode"], "Filesystem");
    assert_eq!(vct["status"], json!({"phase": "Pending"}));
    let ds = defaulted(
        "apps",
        "v1",
        "DaemonSet",
        json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
    );
    assert_eq!(ds["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn jobs() {
    let j = defaulted(
        "batch",
        "v1",
        "Job",
        json!({"metadata": {"name": "j"}, "spec": {"completions": 5, "backoffLimitPerIndex": 1,
            "completionMode": "Indexed",
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"containers": []}}}}),
    );
    let spec = &j["spec"];
    assert_eq!(spec["completions"], 5);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["backoffLimit"], 2147483647);
    assert_eq!(spec["podReplacementPolicy"], "Failed");
    assert_eq!(
        spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    assert_eq!(j["metadata"]["labels"], json!({"x": "y"}));

    let mut j = json!({"metadata": {"name": "m"}, "spec": {"manualSelector": true,
        "selector": {"matchLabels": {"a": "b"}}, "template": {"spec": {}}}});
    apply_defaults("batch", "v1", "Job", &mut j);
    generate_job_selector(&mut j, "u");
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"a": "b"}}));

    let cj = defaulted(
        "batch",
        "v1",
        "CronJob",
        json!({"spec": {"suspend": true, "jobTemplate": {"spec": {"backoffLimit": 1,
            "template": {"spec": {"containers": []}}}}}}),
    );
    assert_eq!(cj["spec"]["suspend"], true);
    let js = &cj["spec"]["jobTemplate"]["spec"];
    assert!(js.get("completions").is_none());
    assert_eq!(js["template"]["spec"]["schedulerName"], "default-scheduler");
}

#[test]
fn autoscalers() {
    let h = defaulted(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 3}}),
    );
    assert_eq!(h["spec"]["minReplicas"], 1);
    assert_eq!(h["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(
        h["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    let h = defaulted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    assert_eq!(
        h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    let b = &h["spec"]["behavior"];
    assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 60);
    assert_eq!(b["scaleDown"]["policies"][0]["type"], "Percent");
    assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
    assert_eq!(b["scaleUp"]["policies"].as_array().unwrap().len(), 2);
    let h = defaulted(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        json!({"spec": {"maxReplicas": 3}}),
    );
    assert!(h["spec"].get("behavior").is_none());
}

#[test]
fn other_groups() {
    let np = defaulted(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["podSelector"], json!({}));
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    let ic = defaulted(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        json!({"spec": {"parameters": {"kind": "K", "name": "n"}}}),
    );
    assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
    let ing = defaulted("networking.k8s.io", "v1", "Ingress", json!({"spec": {}}));
    assert_eq!(ing["status"], json!({"loadBalancer": {}}));
    let es = defaulted(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        json!({"ports": [{"port": 80}]}),
    );
    assert_eq!(
        es["ports"][0],
        json!({"port": 80, "name": "", "protocol": "TCP"})
    );
    let rb = defaulted(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        json!({"roleRef": {"kind": "Role", "name": "r"}, "subjects": [
            {"kind": "ServiceAccount", "name": "a"}, {"kind": "User", "name": "u"},
            {"kind": "Group", "name": "g", "apiGroup": "x"}]}),
    );
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "");
    assert_eq!(rb["subjects"][1]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][2]["apiGroup"], "x");
    let sc = defaulted(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        json!({"provisioner": "p"}),
    );
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let csi = defaulted("storage.k8s.io", "v1", "CSIDriver", json!({}));
    assert_eq!(csi["spec"]["attachRequired"], true);
    assert_eq!(csi["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
    let pc = defaulted(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        json!({"value": 5}),
    );
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(pc["value"], 5);
    let crd = defaulted(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"},
            "versions": [{"name": "v1", "served": true, "storage": true}]}}),
    );
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn idempotent_on_fixtures() {
    for (g, v, k, file) in [
        ("apps", "v1", "Deployment", "deployment.json"),
        ("apps", "v1", "StatefulSet", "statefulset.json"),
        ("apps", "v1", "DaemonSet", "daemonset.json"),
        ("batch", "v1", "Job", "job.json"),
        ("batch", "v1", "CronJob", "cronjob.json"),
        ("", "v1", "Pod", "pod.json"),
        ("", "v1", "Service", "service.json"),
        ("", "v1", "Namespace", "namespace.json"),
    ] {
        let want = fixture(file);
        let mut got = want.clone();
        apply_defaults(g, v, k, &mut got);
        assert_eq!(got, want, "{file}");
    }
}

/// Replace every value reachable in `v` with each JSON type in turn, and make sure
/// defaulting never panics.
#[test]
fn weird_input_never_panics() {
    let kinds: &[(&str, &str, &str)] = &[
        ("", "v1", "Pod"),
        ("", "v1", "PodTemplate"),
        ("", "v1", "ReplicationController"),
        ("", "v1", "Service"),
        ("", "v1", "Namespace"),
        ("", "v1", "Secret"),
        ("", "v1", "Endpoints"),
        ("", "v1", "Node"),
        ("", "v1", "PersistentVolume"),
        ("", "v1", "PersistentVolumeClaim"),
        ("", "v1", "LimitRange"),
        ("", "v1", "ResourceQuota"),
        ("apps", "v1", "Deployment"),
        ("apps", "v1", "ReplicaSet"),
        ("apps", "v1", "StatefulSet"),
        ("apps", "v1", "DaemonSet"),
        ("batch", "v1", "Job"),
        ("batch", "v1", "CronJob"),
        ("autoscaling", "v1", "HorizontalPodAutoscaler"),
        ("autoscaling", "v2", "HorizontalPodAutoscaler"),
        ("policy", "v1", "PodDisruptionBudget"),
        ("networking.k8s.io", "v1", "NetworkPolicy"),
        ("networking.k8s.io", "v1", "IngressClass"),
        ("discovery.k8s.io", "v1", "EndpointSlice"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("storage.k8s.io", "v1", "CSIDriver"),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ];
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {
        "hostNetwork": true, "resources": {"limits": {"cpu": "1"}},
        "containers": [{"image": "x", "ports": [{"containerPort": 1}],
            "resources": {"limits": {"cpu": "1", "memory": "1Mi"}},
            "livenessProbe": {"httpGet": {}, "grpc": {}},
            "lifecycle": {"postStart": {"httpGet": {}}},
            "env": [{"valueFrom": {"fieldRef": {}, "fileKeyRef": {}}}]}],
        "initContainers": [{"restartPolicy": "Always", "resources": {"limits": {"cpu": "1"}}}],
        "volumes": [{}, {"projected": {"sources": [{"downwardAPI": {"items": [{"fieldRef": {}}]},
            "serviceAccountToken": {}}]}},
            {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"emptyDir": {"sizeLimit": "1Gi"}}, {"image": {}}]
    }});
    let mut spec = json!({
        "names": {"kind": "K"}, "versions": [{"storage": true, "name": "v"}],
        "hard": {"cpu": "1"}, "limits": [{"type": "Container", "max": {"cpu": "1"}}],
        "clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": [], "selector": {},
        "ports": [{"port": 1}], "type": "LoadBalancer", "sessionAffinity": "ClientIP",
        "capacity": {"storage": "1Gi"}, "hostPath": {},
        "resources": {"limits": {"cpu": "1"}, "requests": {"hugepages-2Mi": "2Mi"}},
        "strategy": {}, "updateStrategy": {}, "behavior": {"scaleUp": {}},
        "metrics": [{"resource": {"target": {}}}]
    });
    let more = json!({
        "matchResources": {"resourceRules": [{}]},
        "limited": {"limitResponse": {"queuing": {}}}, "exempt": {},
        "devices": {"requests": [{"exactly": {"tolerations": [{}]}, "firstAvailable": [{}]}]},
        "spec": {"devices": {"requests": [{"exactly": {}}]}},
        "egress": [{"ports": [{}]}],
        "podFailurePolicy": {"rules": [{"onPodConditions": [{}]}]},
        "volumeClaimTemplates": [{"spec": {"resources": {}}}],
        "jobTemplate": {"spec": {"template": {"spec": {}}}},
        "containers": [{"image": "x", "resources": {"limits": {"cpu": "1"}}}]
    });
    if let (Some(s), Value::Object(m)) = (spec.as_object_mut(), more) {
        s.extend(m);
        s.insert("template".into(), template);
    }
    let mut seed = json!({
        "metadata": {"name": "n", "labels": {"a": "b"}, "annotations": {}},
        "roleRef": {}, "subjects": [{}],
        "webhooks": [{"rules": [{}], "clientConfig": {"service": {}}}],
        "items": [{"apiVersion": "v1", "kind": "Pod", "spec": {}}],
        "subsets": [{"ports": [{}]}], "ports": [{}], "limits": [{}],
        "status": {"capacity": {"cpu": "1"}, "loadBalancer": {"ingress": [{"ip": "1"}]}}
    });
    seed["spec"] = spec;
    let replacements = [
        Value::Null,
        json!(true),
        json!(7),
        json!(-1.5),
        json!("s"),
        json!([]),
        json!([1, "x", null]),
        json!({}),
    ];
    // Collect JSON pointers to every node of the seed.
    fn pointers(v: &Value, prefix: String, out: &mut Vec<String>) {
        out.push(prefix.clone());
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    pointers(c, format!("{prefix}/{k}"), out);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    pointers(c, format!("{prefix}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut ptrs = Vec::new();
    pointers(&seed, String::new(), &mut ptrs);
    for (g, v, k) in kinds {
        for ptr in &ptrs {
            for r in &replacements {
                let mut obj = seed.clone();
                if ptr.is_empty() {
                    obj = r.clone();
                } else if let Some(slot) = obj.pointer_mut(ptr) {
                    *slot = r.clone();
                }
                apply_defaults(g, v, k, &mut obj);
                apply_scheme_defaults(g, v, k, &mut obj);
            }
        }
        let mut obj = seed.clone();
        generate_job_selector(&mut obj, "u");
    }
}

/// The `DefaultTolerationSeconds` admission cases (upstream `TestForgivenessAdmission`):
/// the not-ready and unreachable `NoExecute` tolerations are appended unless the pod
/// already tolerates that taint (same or empty key, `NoExecute` or empty effect).
#[test]
fn default_toleration_seconds_admission() {
    let nr = |s: i64| {
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": s})
    };
    let ur = |s: i64| {
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute", "tolerationSeconds": s})
    };
    let foo = json!({"key": "foo", "operator": "Equal", "value": "bar",
        "effect": "NoSchedule", "tolerationSeconds": 700});
    let ur_any_effect = json!({"key": "node.kubernetes.io/unreachable",
        "operator": "Exists", "tolerationSeconds": 700});
    let wildcard = json!({"operator": "Exists", "tolerationSeconds": 700});
    let cases: Vec<(&str, Option<Value>, Value)> = vec![
        ("no tolerations", None, json!([nr(300), ur(300)])),
        (
            "an unrelated toleration",
            Some(json!([foo.clone()])),
            json!([foo, nr(300), ur(300)]),
        ),
        (
            "tolerates not-ready",
            Some(json!([nr(700)])),
            json!([nr(700), ur(300)]),
        ),
        (
            "tolerates unreachable",
            Some(json!([ur(700)])),
            json!([ur(700), nr(300)]),
        ),
        (
            "tolerates both",
            Some(json!([nr(700), ur(700)])),
            json!([nr(700), ur(700)]),
        ),
        (
            "unreachable with every effect",
            Some(json!([ur_any_effect.clone()])),
            json!([ur_any_effect, nr(300)]),
        ),
        (
            "wildcard",
            Some(json!([wildcard.clone()])),
            json!([wildcard]),
        ),
    ];
    for (name, given, want) in cases {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(t) = given {
            pod["spec"]["tolerations"] = t;
        }
        let mut updated = pod.clone();
        apply_defaults("", "v1", "Pod", &mut pod);
        assert_eq!(pod["spec"]["tolerations"], want, "{name}");
        // an admission plugin of creates: decoding an update adds nothing
        let before = updated["spec"].get("tolerations").cloned();
        apply_scheme_defaults("", "v1", "Pod", &mut updated);
        assert_eq!(
            updated["spec"].get("tolerations").cloned(),
            before,
            "{name}"
        );
    }
    // tolerations of the wrong JSON type are left for validation
    let mut bad = json!({"spec": {"tolerations": "x"}});
    apply_defaults("", "v1", "Pod", &mut bad);
    assert_eq!(bad["spec"]["tolerations"], "x");
}

/// The `TaintNodesByCondition` admission (upstream `nodetaint`): a new Node gets
/// `node.kubernetes.io/not-ready:NoSchedule` after its own taints unless one with that
/// key and effect is there; updates are left alone.
#[test]
fn taint_nodes_by_condition_admission() {
    let not_ready = json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"});
    let other = json!({"key": "example.com/x", "value": "y", "effect": "NoSchedule"});
    let not_ready_exec = json!({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"});
    let with_value = json!({"key": "node.kubernetes.io/not-ready", "value": "v",
        "effect": "NoSchedule"});
    let cases: Vec<(&str, Value, Value)> = vec![
        ("no spec", json!({}), json!([not_ready.clone()])),
        ("no taints", json!({"spec": {}}), json!([not_ready.clone()])),
        (
            "other taints",
            json!({"spec": {"taints": [other.clone()]}}),
            json!([other, not_ready.clone()]),
        ),
        (
            "not-ready with another effect",
            json!({"spec": {"taints": [not_ready_exec.clone()]}}),
            json!([not_ready_exec, not_ready.clone()]),
        ),
        (
            "already tainted (value ignored)",
            json!({"spec": {"taints": [with_value.clone()]}}),
            json!([with_value]),
        ),
    ];
    for (name, mut node, want) in cases {
        node["apiVersion"] = json!("v1");
        node["kind"] = json!("Node");
        node["metadata"] = json!({"name": "n"});
        let mut updated = node.clone();
        apply_defaults("", "v1", "Node", &mut node);
        assert_eq!(node["spec"]["taints"], want, "{name}");
        let before = updated.pointer("/spec/taints").cloned();
        apply_scheme_defaults("", "v1", "Node", &mut updated);
        assert_eq!(updated.pointer("/spec/taints").cloned(), before, "{name}");
    }
}
