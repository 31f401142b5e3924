//! Validation of the built-in kinds through their strategies, against upstream's
//! validation tests and a real kube-apiserver's recorded answers.

/// The messages the kind's name rule gives for `metadata.name` (through the kind's
/// validation).
fn object_name_errors(kind: &str, group: &str, name: &str) -> Vec<String> {
    let def = crate::registry::catalog::Catalog::builtin()
        .by_kind(group, "v1", kind)
        .expect("known kind");
    let mut obj = json!({"metadata": {"name": name}});
    if def.namespaced {
        obj["metadata"]["namespace"] = json!("ns");
    }
    let prefix = format!("Invalid value: {}: ", go_quote(name));
    def.strategy
        .validate(def, &obj, None)
        .into_iter()
        .filter(|c| c.field == "metadata.name")
        .filter_map(|c| c.message.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

use crate::registry::validation::prelude::*;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// Validates `obj` (already defaulted) of the built-in kind `group`/`version`/`kind`
/// through its strategy; `old` is the stored object on update.
pub fn validate(
    group: &str,
    version: &str,
    kind: &str,
    _namespaced: bool,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<Cause> {
    let def = crate::registry::catalog::Catalog::builtin()
        .by_kind(group, version, kind)
        .unwrap_or_else(|| panic!("no built-in kind {group}/{version} {kind}"));
    def.strategy.validate(def, obj, old)
}
use serde_json::json;

fn msgs(c: &[Cause]) -> Vec<String> {
    c.iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

fn good_deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "golden"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePolicy": "File"}],
                    "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30
                }
            }
        }
    })
}

/// The recorded kube-apiserver answer `errors/invalid-deployment.json`.
#[test]
fn invalid_deployment_fixture() {
    let mut d = good_deployment();
    d["metadata"]["name"] = json!("Bad_Name");
    d["spec"]["replicas"] = json!(-1);
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "y"});
    d["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    let got = validate("apps", "v1", "Deployment", true, &d, None);
    let want = vec![
        Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"),
            field: "metadata.name".into(),
        },
        Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: -1: must be greater than or equal to 0".into(),
            field: "spec.replicas".into(),
        },
        Cause {
            reason: "FieldValueInvalid".into(),
            message: "Invalid value: {\"app\":\"y\"}: `selector` does not match template `labels`"
                .into(),
            field: "spec.template.metadata.labels".into(),
        },
        Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "spec.template.spec.containers[0].image".into(),
        },
    ];
    assert_eq!(got, want);
    // The recorded answer agrees cause for cause.
    {
        let v = crate::reference::fixture("errors/invalid-deployment.json");
        let causes = v["body"]["details"]["causes"].as_array().unwrap();
        assert_eq!(causes.len(), got.len());
        for (c, g) in causes.iter().zip(&got) {
            assert_eq!(c["field"], g.field.as_str());
            assert_eq!(c["message"], g.message.as_str());
            assert_eq!(c["reason"], g.reason.as_ref());
        }
    }
}

#[test]
fn valid_objects_have_no_causes() {
    assert!(validate("apps", "v1", "Deployment", true, &good_deployment(), None).is_empty());
    let cm = json!({"metadata": {"name": "cm1", "namespace": "ns"}, "data": {"a.b": "x"}});
    assert!(validate("", "v1", "ConfigMap", true, &cm, None).is_empty());
    let ns = json!({"metadata": {"name": "golden"}, "spec": {"finalizers": ["kubernetes"]}});
    assert!(validate("", "v1", "Namespace", false, &ns, None).is_empty());
    let svc = json!({"metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}], "type": "ClusterIP",
                 "sessionAffinity": "None", "internalTrafficPolicy": "Cluster", "selector": {"app": "x"}}});
    assert!(validate("", "v1", "Service", true, &svc, None).is_empty());
    let cj = json!({"metadata": {"name": "cj", "namespace": "ns"}, "spec": {"schedule": "*/5 * * * *",
        "concurrencyPolicy": "Allow",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
            "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    assert!(
        validate("batch", "v1", "CronJob", true, &cj, None).is_empty(),
        "{:?}",
        validate("batch", "v1", "CronJob", true, &cj, None)
    );
    let role = json!({"metadata": {"name": "system:Anything_Goes", "namespace": "n"}});
    assert!(validate("rbac.authorization.k8s.io", "v1", "Role", true, &role, None).is_empty());
    // custom resources: DNS-1123 subdomain names
    let cr = json!({"metadata": {"name": "Bad_Name"}});
    let any = crate::registry::catalog::Catalog::builtin()
        .by_kind("", "v1", "Node")
        .expect("nodes");
    assert_eq!(
        msgs(&Ctx::new(any, None).meta_only(&cr, NameRule::Subdomain)),
        vec![format!(
            "metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"
        )]
    );
}

#[test]
fn object_names_follow_each_kinds_rule() {
    assert_eq!(
        object_name_errors("Role", "rbac.authorization.k8s.io", "a/b%"),
        vec![
            "may not contain '/'".to_string(),
            "may not contain '%'".to_string()
        ]
    );
    assert_eq!(
        object_name_errors("ClusterRole", "rbac.authorization.k8s.io", ".."),
        vec!["may not be '..'".to_string()]
    );
    assert!(object_name_errors("Role", "rbac.authorization.k8s.io", "system:admin").is_empty());
    assert_eq!(
        object_name_errors("Namespace", "", "a.b"),
        vec!["must not contain dots".to_string()]
    );
    assert_eq!(
        object_name_errors("Service", "", "1abc"),
        vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string()]
    );
    assert_eq!(
        object_name_errors("ConfigMap", "", &"a".repeat(254)),
        vec!["must be no more than 253 characters".to_string()]
    );
}

// Ported from TestValidateObjectMeta* in
// staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta_test.go.
#[test]
fn object_meta() {
    let cm = json!({"metadata": {"generateName": "x-", "namespace": "ns"}});
    assert_eq!(
        msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
        vec!["metadata.name: Required value: name or generateName is required"]
    );
    let cm = json!({"metadata": {"name": "a", "namespace": "Bad", "generation": -2,
        "labels": {"bad key!": "ok", "k": "-bad"},
        "finalizers": ["orphan", "foregroundDeletion", "x/y", "custom"],
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "2", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "3", "controller": true}]}});
    let got = validate("", "v1", "ConfigMap", true, &cm, None);
    let fields: Vec<&str> = got.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "metadata.namespace",
            "metadata.generation",
            "metadata.labels",
            "metadata.labels",
            "metadata.ownerReferences",
            "metadata.ownerReferences",
            "metadata.finalizers",
            "metadata.finalizers[3]"
        ]
    );
    assert_eq!(
        got[1].message,
        "Invalid value: -2: must be greater than or equal to 0"
    );
    assert!(got[4]
        .message
        .ends_with(": /v1, Kind=Event is disallowed from being an owner"));
    assert!(got[4]
        .message
        .starts_with("Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\""));
    assert!(got[5]
        .message
        .ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/a and ReplicaSet/b"));
    assert_eq!(
        got[6].message,
        "Invalid value: [\"orphan\",\"foregroundDeletion\",\"x/y\",\"custom\"]: finalizer orphan and foregroundDeletion cannot be both set"
    );
    assert_eq!(
        got[7].message,
        "Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
    );
    // Cluster-scoped kinds forbid a namespace.
    let ns = json!({"metadata": {"name": "a", "namespace": "b"}});
    assert_eq!(
        msgs(&validate("", "v1", "Namespace", false, &ns, None)),
        vec!["metadata.namespace: Forbidden: not allowed on this type"]
    );
    // Annotation size limit (TestValidateAnnotations "too big").
    let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
    let cm = json!({"metadata": {"name": "a", "namespace": "n", "annotations": {"a": big}}});
    assert_eq!(
        msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
        vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
    );
    // generateName with a trailing dash is accepted (maskTrailingDash).
    let cm = json!({"metadata": {"name": "x-abcde", "generateName": "x-", "namespace": "n"}});
    assert!(validate("", "v1", "ConfigMap", true, &cm, None).is_empty());
}

#[test]
fn object_meta_update() {
    let old = json!({"metadata": {"name": "a", "namespace": "n", "uid": "1", "generation": 3,
        "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["x/a"]}});
    let new = json!({"metadata": {"name": "b", "namespace": "n", "uid": "2", "generation": 2,
        "finalizers": ["x/a", "x/b"]}});
    assert_eq!(
        msgs(&validate("", "v1", "Namespace", false, &new, Some(&old))),
        vec![
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x/b\"}",
            "metadata.generation: Invalid value: 2: must not be decremented",
            "metadata.name: Invalid value: \"b\": field is immutable",
            "metadata.uid: Invalid value: \"2\": field is immutable",
        ]
    );
}

// Ported from TestValidateDeployment / TestValidateDeploymentUpdate (pkg/apis/apps/validation).
#[test]
fn deployment_cases() {
    let mut d = good_deployment();
    d["spec"]["selector"] = json!({});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
    );
    let mut d = good_deployment();
    d["spec"].as_object_mut().unwrap().remove("selector");
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec![
            "spec.selector: Required value",
            "spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`"
        ]
    );
    let mut d = good_deployment();
    d["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "Bogus"}]});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec![
            "spec.selector.matchExpressions[0].operator: Invalid value: \"Bogus\": not a valid selector operator",
            "spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Bogus\"}]}: invalid label selector"
        ]
    );
    let mut d = good_deployment();
    d["spec"]["strategy"] = json!({"type": "Foo"});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec!["spec.strategy: Unsupported value: {\"Type\":\"Foo\",\"RollingUpdate\":null}: supported values: \"Recreate\", \"RollingUpdate\""]
    );
    let mut d = good_deployment();
    d["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {}});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec!["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]
    );
    let mut d = good_deployment();
    d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "110%", "maxSurge": 0});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"110%\": must not be greater than 100%"]
    );
    let mut d = good_deployment();
    d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec!["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"]
    );
    let mut d = good_deployment();
    d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": "abc", "maxSurge": -1});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec![
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"abc\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"
        ]
    );
    let mut d = good_deployment();
    d["spec"]["progressDeadlineSeconds"] = json!(5);
    d["spec"]["minReadySeconds"] = json!(5);
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec![
            "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds"
        ]
    );
    let mut d = good_deployment();
    d["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    d["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(10);
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, None)),
        vec![
            "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"
        ]
    );
    // Immutable selector for apps/v1.
    let old = good_deployment();
    let mut d = good_deployment();
    d["spec"]["selector"] = json!({"matchLabels": {"app": "x", "tier": "b"}});
    d["spec"]["template"]["metadata"]["labels"] = json!({"tier": "b", "app": "x"});
    assert_eq!(
        msgs(&validate("apps", "v1", "Deployment", true, &d, Some(&old))),
        vec!["spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\",\"tier\":\"b\"}}: field is immutable"]
    );
    assert!(validate(
        "apps",
        "v1",
        "Deployment",
        true,
        &good_deployment(),
        Some(&old)
    )
    .is_empty());
}

#[test]
fn replicaset_daemonset_statefulset() {
    let mut rs = good_deployment();
    rs["spec"].as_object_mut().unwrap().remove("strategy");
    rs["spec"]["replicas"] = json!(-3);
    assert_eq!(
        msgs(&validate("apps", "v1", "ReplicaSet", true, &rs, None)),
        vec!["spec.replicas: Invalid value: -3: must be greater than or equal to 0"]
    );
    let mut ds = good_deployment();
    ds["spec"].as_object_mut().unwrap().remove("strategy");
    ds["spec"].as_object_mut().unwrap().remove("replicas");
    ds["spec"]["updateStrategy"] = json!({"type": "Bogus"});
    ds["spec"]["selector"] = json!({"matchLabels": {"app": "z"}});
    assert_eq!(
        msgs(&validate("apps", "v1", "DaemonSet", true, &ds, None)),
        vec![
            "spec.template.metadata.labels: Invalid value: {\"app\":\"x\"}: `selector` does not match template `labels`",
            "spec.updateStrategy: Unsupported value: {\"Type\":\"Bogus\",\"RollingUpdate\":null}: supported values: \"RollingUpdate\", \"OnDelete\""
        ]
    );
    let mut ss = good_deployment();
    ss["spec"].as_object_mut().unwrap().remove("strategy");
    ss["metadata"]["name"] = json!("a.b");
    ss["spec"]["podManagementPolicy"] = json!("Sometimes");
    ss["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    assert_eq!(
        msgs(&validate("apps", "v1", "StatefulSet", true, &ss, None)),
        vec![
            "metadata.name: Invalid value: \"a.b\": must not contain dots",
            "spec.podManagementPolicy: Invalid value: \"Sometimes\": must be 'OrderedReady' or 'Parallel'"
        ]
    );
    let mut old = ss.clone();
    old["metadata"]["name"] = json!("ab");
    old["spec"]["podManagementPolicy"] = json!("Parallel");
    let mut new = old.clone();
    new["spec"]["serviceName"] = json!("other");
    assert_eq!(
        msgs(&validate("apps", "v1", "StatefulSet", true, &new, Some(&old))),
        vec!["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
    );
}

// Ported from TestValidatePodSpec / TestValidateContainers (pkg/apis/core/validation).
#[test]
fn pod_cases() {
    let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
        "containers": [
            {"name": "Bad", "image": " img", "ports": [{"containerPort": 70000, "protocol": "HTTP", "name": "a--b"}],
             "env": [{"name": "A=B"}], "volumeMounts": [{"name": "missing", "mountPath": "/x"}]},
            {"name": "dup", "image": "x", "imagePullPolicy": "Sometimes"},
            {"name": "dup", "image": "x", "terminationMessagePolicy": "Nope"}],
        "restartPolicy": "Sometimes", "dnsPolicy": "Bogus", "activeDeadlineSeconds": 0}});
    assert_eq!(
        msgs(&validate("", "v1", "Pod", true, &pod, None)),
        vec![
            "spec.containers[0].name: Invalid value: \"Bad\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[0].ports[0].name: Invalid value: \"a--b\": must not contain consecutive hyphens",
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
            "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
            "spec.containers[1].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
            "spec.containers[2].terminationMessagePolicy: Unsupported value: \"Nope\": supported values: \"File\", \"FallbackToLogsOnError\"",
            "spec.containers[2].name: Duplicate value: \"dup\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
            "spec.dnsPolicy: Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
            "spec.containers[0].image: Invalid value: \" img\": must not have leading or trailing whitespace",
        ]
    );
    let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"containers": []}});
    assert_eq!(
        msgs(&validate("", "v1", "Pod", true, &pod, None)),
        vec!["spec.containers: Required value"]
    );
    let pod = json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {
        "volumes": [{"name": "v", "emptyDir": {}, "hostPath": {"path": "/"}}, {"name": "w"}],
        "containers": [{"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 80}]},
                       {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 80}]}]}});
    assert_eq!(
        msgs(&validate("", "v1", "Pod", true, &pod, None)),
        vec![
            "spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
            "spec.volumes[1]: Required value: must specify a volume type",
            "spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//80\"",
        ]
    );
}

// Ported from TestValidateService (pkg/apis/core/validation).
#[test]
fn service_cases() {
    let svc = json!({"metadata": {"name": "1svc", "namespace": "n"}, "spec": {"type": "Bogus",
        "ports": [{"port": 0, "protocol": "TCP"}, {"name": "a", "port": 80, "protocol": "XYZ", "targetPort": "a_b"},
                  {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30000}],
        "sessionAffinity": "Sticky"}});
    assert_eq!(
        msgs(&validate("", "v1", "Service", true, &svc, None)),
        vec![
            "metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "spec.ports[0].name: Required value",
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[1].protocol: Unsupported value: \"XYZ\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.ports[1].targetPort: Invalid value: \"a_b\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "spec.ports[2].name: Duplicate value: \"a\"",
            "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
            "spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
        ]
    );
    let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "NodePort",
        "ports": [{"name": "a", "port": 80, "nodePort": 30000}, {"name": "b", "port": 80, "nodePort": 30000}]}});
    assert_eq!(
        msgs(&validate("", "v1", "Service", true, &svc, None)),
        vec![
            "spec.ports[1].nodePort: Duplicate value: 30000",
            "spec.ports[1]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
        ]
    );
    let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "ClusterIP", "ports": []}});
    assert_eq!(
        msgs(&validate("", "v1", "Service", true, &svc, None)),
        vec!["spec.ports: Required value"]
    );
    let svc = json!({"metadata": {"name": "svc", "namespace": "n"}, "spec": {"type": "ExternalName", "externalName": "Bad_Name."}});
    assert_eq!(
        msgs(&validate("", "v1", "Service", true, &svc, None)),
        vec![format!(
            "spec.externalName: Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}"
        )]
    );
}

// Ported from TestValidateConfigMap / TestValidateSecret / TestValidateNamespace.
#[test]
fn configmap_secret_namespace() {
    let cm = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"a b": "x", "k": "v"},
        "binaryData": {"k": "eA=="}});
    assert_eq!(
        msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
        vec![
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
            "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
        ]
    );
    let cm = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"..x": "y".repeat(MAX_SECRET_SIZE + 1)}});
    assert_eq!(
        msgs(&validate("", "v1", "ConfigMap", true, &cm, None)),
        vec![
            "data[..x]: Invalid value: \"..x\": must not start with '..'",
            ": Too long: may not be more than 1048576 bytes",
        ]
    );
    let old = json!({"metadata": {"name": "cm", "namespace": "n"}, "immutable": true, "data": {"a": "1"}});
    let new = json!({"metadata": {"name": "cm", "namespace": "n"}, "data": {"a": "2"}});
    assert_eq!(
        msgs(&validate("", "v1", "ConfigMap", true, &new, Some(&old))),
        vec![
            "immutable: Forbidden: field is immutable when `immutable` is set",
            "data: Forbidden: field is immutable when `immutable` is set",
        ]
    );
    let sec = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
    assert_eq!(
        msgs(&validate("", "v1", "Secret", true, &sec, None)),
        vec!["data[tls.key]: Required value"]
    );
    let old = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "Opaque"});
    let new = json!({"metadata": {"name": "s", "namespace": "n"}, "type": "kubernetes.io/basic-auth", "data": {"username": ""}});
    assert_eq!(
        msgs(&validate("", "v1", "Secret", true, &new, Some(&old))),
        vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
    );
    let ns = json!({"metadata": {"name": "Bad.Ns"}, "spec": {"finalizers": ["custom"]}});
    let got = msgs(&validate("", "v1", "Namespace", false, &ns, None));
    assert_eq!(got.len(), 2);
    assert!(
        got[0].starts_with("metadata.name: Invalid value: \"Bad.Ns\": a lowercase RFC 1123 label")
    );
    assert_eq!(
        got[1],
        "spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
    );
}

// Ported from TestValidateJob / TestValidateCronJob (pkg/apis/batch/validation).
#[test]
fn job_and_cronjob() {
    let job = json!({"metadata": {"name": "j", "namespace": "n"}, "spec": {"parallelism": -1, "backoffLimit": -1,
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"restartPolicy": "Always",
            "containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(
        msgs(&validate("batch", "v1", "Job", true, &job, None)),
        vec![
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.template.metadata.labels: Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`",
        ]
    );
    let cj = json!({"metadata": {"name": "cj", "namespace": "n"}, "spec": {"schedule": "",
        "concurrencyPolicy": "Sometimes",
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "i"}]}}}}}});
    assert_eq!(
        msgs(&validate("batch", "v1", "CronJob", true, &cj, None)),
        vec![
            "spec.schedule: Required value",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ]
    );
    let mut cj2 = cj.clone();
    cj2["spec"]["schedule"] = json!("* * *");
    cj2["spec"]["concurrencyPolicy"] = json!("Allow");
    assert_eq!(
        msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
        vec![
            "spec.schedule: Invalid value: \"* * *\": expected exactly 5 fields, found 3: [* * *]"
        ]
    );
    cj2["spec"]["schedule"] = json!("TZ=UTC 0 0 * * *");
    assert_eq!(
        msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
        vec!["spec.schedule: Invalid value: \"TZ=UTC 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"]
    );
    // the zone of a TZ= prefix is loaded as robfig does; without a space robfig panics
    // and Kubernetes reports the panic
    cj2["spec"]["schedule"] = json!("TZ=Mars/Olympus 0 0 * * *");
    assert_eq!(
        msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
        vec![
            "spec.schedule: Invalid value: \"TZ=Mars/Olympus 0 0 * * *\": provided bad location Mars/Olympus: unknown time zone Mars/Olympus",
            "spec.schedule: Invalid value: \"TZ=Mars/Olympus 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ]
    );
    cj2["spec"]["schedule"] = json!("TZ=UTC");
    assert_eq!(
        msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
        vec![
            "spec.schedule: Invalid value: \"TZ=UTC\": invalid schedule format: runtime error: slice bounds out of range [:-1]",
            "spec.schedule: Invalid value: \"TZ=UTC\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ]
    );
    // spec.timeZone must name a zone of the database (validateTimeZone's LoadLocation)
    cj2["spec"]["schedule"] = json!("0 0 * * *");
    for (tz, errs) in [
        ("America/New_York", vec![]),
        ("Etc/GMT+5", vec![]),
        (
            "Mars/Olympus",
            vec!["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"],
        ),
        (
            "america/new_york",
            vec!["spec.timeZone: Invalid value: \"america/new_york\": unknown time zone america/new_york"],
        ),
        (
            "local",
            vec![
                "spec.timeZone: Invalid value: \"local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
                "spec.timeZone: Invalid value: \"local\": unknown time zone local",
            ],
        ),
        (
            "Local",
            vec!["spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"],
        ),
        (
            "America/New York",
            vec!["spec.timeZone: Invalid value: \"America/New York\": unknown time zone America/New York"],
        ),
    ] {
        cj2["spec"]["timeZone"] = json!(tz);
        assert_eq!(
            msgs(&validate("batch", "v1", "CronJob", true, &cj2, None)),
            errs,
            "{tz}"
        );
    }
}

// Cron/duration parsing errors follow robfig/cron v3 and Go's time package.

#[test]
fn events_follow_the_strict_rules_only_through_events_k8s_io() {
    let ev = |extra: Value| {
        let mut o = json!({
            "metadata": {"name": "e1", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "eventTime": "2026-11-29T10:00:00.000000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Reconcile",
            "reason": "Done",
            "type": "Normal",
            "note": "ok",
        });
        if let (Some(m), Some(x)) = (o.as_object_mut(), extra.as_object()) {
            for (k, v) in x {
                if v.is_null() {
                    m.remove(k);
                } else {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        o
    };
    let strict = |o: &Value| msgs(&validate("events.k8s.io", "v1", "Event", true, o, None));
    assert!(strict(&ev(json!({}))).is_empty());
    assert_eq!(
        strict(&ev(
            json!({"action": null, "eventTime": null, "note": "x".repeat(1025)})
        )),
        ["eventTime: Required value"]
    );
    assert_eq!(
        strict(&ev(
            json!({"action": null, "note": "x".repeat(1025), "type": "Odd", "series": {"count": 1}})
        )),
        [
            "action: Required value",
            "message: Invalid value: \"\": can have at most 1024 characters",
            "series.count: Invalid value: \"\": should be at least 2",
            "series.lastObservedTime: Required value",
            "type: Invalid value: \"\": has invalid value: Odd",
        ]
    );
    // core/v1 keeps the legacy rules only: no eventTime, namespaces must agree
    let core = json!({
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"},
        "reason": "x",
    });
    assert_eq!(
        msgs(&validate("", "v1", "Event", true, &core, None)),
        ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
    );
    // updates through events.k8s.io: series may change, the rest is immutable
    let old = ev(json!({}));
    let bumped =
        ev(json!({"series": {"count": 3, "lastObservedTime": "2026-11-29T10:01:00.000000Z"}}));
    assert!(msgs(&validate(
        "events.k8s.io",
        "v1",
        "Event",
        true,
        &bumped,
        Some(&old)
    ))
    .is_empty());
    let changed = ev(json!({"reason": "Other"}));
    assert_eq!(
        msgs(&validate(
            "events.k8s.io",
            "v1",
            "Event",
            true,
            &changed,
            Some(&old)
        )),
        ["reason: Invalid value: \"Other\": field is immutable"]
    );
}

#[test]
fn lease_and_pdb() {
    let lease = json!({"metadata": {"name": "l", "namespace": "n"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
    assert_eq!(
        msgs(&validate(
            "coordination.k8s.io",
            "v1",
            "Lease",
            true,
            &lease,
            None
        )),
        vec![
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let pdb =
        json!({"metadata": {"name": "p", "namespace": "n"}, "spec": {"minAvailable": "120%"}});
    assert_eq!(
        msgs(&validate(
            "policy",
            "v1",
            "PodDisruptionBudget",
            true,
            &pdb,
            None
        )),
        vec!["spec.minAvailable: Invalid value: \"120%\": must not be greater than 100%"]
    );
}

#[test]
fn value_rendering() {
    use apimachinery::gofmt::json_ordered as go_json;
    assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    assert_eq!(
        go_json(&json!({"a": "<&>"})),
        "{\"a\":\"\\u003c\\u0026\\u003e\"}"
    );
    assert_eq!(
        go_json(&map_json(json!({"b": "1", "a": "2"}).as_object())),
        "{\"a\":\"2\",\"b\":\"1\"}"
    );
    assert_eq!(go_json(&map_json(None)), "null");
}

#[test]
fn never_panics_on_odd_types() {
    for v in [
        json!(null),
        json!(1),
        json!("x"),
        json!([]),
        json!({"metadata": 5, "spec": "x"}),
        json!({"metadata": {"name": 5, "labels": [1], "finalizers": "x"}, "spec": {"containers": {"a": 1},
                    "template": [], "selector": "x", "ports": 7, "strategy": 3}, "data": 4}),
    ] {
        for (g, k) in [
            ("", "Pod"),
            ("", "Service"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Namespace"),
            ("apps", "Deployment"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("apps", "ReplicaSet"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("policy", "PodDisruptionBudget"),
            ("coordination.k8s.io", "Lease"),
            ("", "ReplicationController"),
            ("", "PodTemplate"),
        ] {
            let _ = validate(g, "v1", k, true, &v, None);
            let _ = validate(g, "v1", k, true, &v, Some(&v));
        }
    }
}
