//! The roles of kube-controller-manager's controllers (upstream
//! `bootstrappolicy/controller_policy.go`): one ClusterRole `system:controller:<name>` per
//! controller, bound to the service account `kube-system/<name>` the controller runs as
//! under `--use-service-account-credentials`.

use super::{event_rule, rule, Binding, ClusterRole, Subject, LEGACY, READ, READ_UPDATE};

/// The prefix of controller roles (upstream `saRolePrefix`).
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

/// The role of the controller whose service account is `kube-system/<name>`.
fn controller(name: &str, rules: Vec<super::Rule>) -> ClusterRole {
    ClusterRole::new(&format!("{CONTROLLER_ROLE_PREFIX}{name}"), rules)
}

/// Every controller role (upstream `ControllerRoles()`), in name order.
pub fn controller_roles() -> Vec<ClusterRole> {
    vec![
        controller(
            "attachdetach-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims", "persistentvolumes"]),
                rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
                rule(&["create", "delete", "get", "list", "watch"])
                    .groups(&["storage.k8s.io"])
                    .resources(&["volumeattachments"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csidrivers"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csinodes"]),
            ],
        ),
        controller(
            "certificate-controller",
            vec![
                rule(&["delete", "get", "list", "watch"])
                    .groups(&["certificates.k8s.io"])
                    .resources(&["certificatesigningrequests"]),
                rule(&["update"])
                    .groups(&["certificates.k8s.io"])
                    .resources(&[
                        "certificatesigningrequests/approval",
                        "certificatesigningrequests/status",
                    ]),
                rule(&["approve"])
                    .groups(&["certificates.k8s.io"])
                    .resources(&["signers"])
                    .names(&["kubernetes.io/kube-apiserver-client-kubelet"]),
                rule(&["sign"])
                    .groups(&["certificates.k8s.io"])
                    .resources(&["signers"])
                    .names(&[
                        "kubernetes.io/kube-apiserver-client",
                        "kubernetes.io/kube-apiserver-client-kubelet",
                        "kubernetes.io/kubelet-serving",
                        "kubernetes.io/legacy-unknown",
                    ]),
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["subjectaccessreviews"]),
                event_rule(),
            ],
        ),
        controller(
            "clusterrole-aggregation-controller",
            vec![
                rule(&["escalate", "get", "list", "patch", "update", "watch"])
                    .groups(&["rbac.authorization.k8s.io"])
                    .resources(&["clusterroles"]),
            ],
        ),
        controller(
            "cronjob-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&["batch"])
                    .resources(&["cronjobs"]),
                rule(&[
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ])
                .groups(&["batch"])
                .resources(&["jobs"]),
                rule(&["update"])
                    .groups(&["batch"])
                    .resources(&["cronjobs/status"]),
                rule(&["update"])
                    .groups(&["batch"])
                    .resources(&["cronjobs/finalizers"]),
                rule(&["delete", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "daemon-set-controller",
            vec![
                rule(READ)
                    .groups(&["apps", "extensions"])
                    .resources(&["daemonsets"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["daemonsets/status"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["daemonsets/finalizers"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["create", "delete", "list", "patch", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["pods/binding"]),
                rule(&[
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ])
                .groups(&["apps"])
                .resources(&["controllerrevisions"]),
                event_rule(),
            ],
        ),
        controller(
            "deployment-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&["apps", "extensions"])
                    .resources(&["deployments"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["deployments/status"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["deployments/finalizers"]),
                rule(&[
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ])
                .groups(&["apps", "extensions"])
                .resources(&["replicasets"]),
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "device-taint-eviction-controller",
            vec![
                rule(&["delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(READ)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims"]),
                rule(READ)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceslices"]),
                rule(READ)
                    .groups(&["resource.k8s.io"])
                    .resources(&["deviceclasses"]),
                event_rule(),
            ],
        ),
        controller(
            "disruption-controller",
            vec![
                rule(READ)
                    .groups(&["apps", "extensions"])
                    .resources(&["deployments"]),
                rule(READ)
                    .groups(&["apps", "extensions"])
                    .resources(&["replicasets"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers"]),
                rule(READ)
                    .groups(&["policy"])
                    .resources(&["poddisruptionbudgets"]),
                rule(READ).groups(&["apps"]).resources(&["statefulsets"]),
                rule(&["update"])
                    .groups(&["policy"])
                    .resources(&["poddisruptionbudgets/status"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(&["get"]).groups(&["*"]).resources(&["*/scale"]),
                event_rule(),
            ],
        ),
        controller(
            "endpoint-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["pods", "services"]),
                rule(&["create", "delete", "get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints/restricted"]),
                event_rule(),
            ],
        ),
        controller(
            "endpointslice-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["nodes", "pods", "services"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["services/finalizers"]),
                rule(&["create", "delete", "get", "list", "update", "watch"])
                    .groups(&["discovery.k8s.io"])
                    .resources(&["endpointslices"]),
                event_rule(),
            ],
        ),
        controller(
            "endpointslicemirroring-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["endpoints", "services"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["services/finalizers"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints/finalizers"]),
                rule(&["create", "delete", "get", "list", "update", "watch"])
                    .groups(&["discovery.k8s.io"])
                    .resources(&["endpointslices"]),
                event_rule(),
            ],
        ),
        controller(
            "ephemeral-volume-controller",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/finalizers"]),
                rule(&["create", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                event_rule(),
            ],
        ),
        controller(
            "expand-controller",
            vec![
                rule(READ_UPDATE)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                event_rule(),
            ],
        ),
        controller(
            "generic-garbage-collector",
            vec![
                rule(&["delete", "get", "list", "patch", "update", "watch"])
                    .groups(&["*"])
                    .resources(&["*"]),
                event_rule(),
            ],
        ),
        controller(
            "horizontal-pod-autoscaler",
            vec![
                rule(READ)
                    .groups(&["autoscaling"])
                    .resources(&["horizontalpodautoscalers"]),
                rule(&["update"])
                    .groups(&["autoscaling"])
                    .resources(&["horizontalpodautoscalers/status"]),
                rule(&["get", "update"])
                    .groups(&["*"])
                    .resources(&["*/scale"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["list", "watch"])
                    .groups(&["metrics.k8s.io"])
                    .resources(&["pods"]),
                rule(READ)
                    .groups(&["custom.metrics.k8s.io"])
                    .resources(&["*"]),
                rule(READ)
                    .groups(&["external.metrics.k8s.io"])
                    .resources(&["*"]),
                event_rule(),
            ],
        ),
        controller(
            "job-controller",
            vec![
                rule(READ_UPDATE).groups(&["batch"]).resources(&["jobs"]),
                rule(&["update"])
                    .groups(&["batch"])
                    .resources(&["jobs/status"]),
                rule(&["update"])
                    .groups(&["batch"])
                    .resources(&["jobs/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "legacy-service-account-token-cleaner",
            vec![
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["kube-apiserver-legacy-service-account-token-tracking"]),
                rule(&["delete", "patch"])
                    .groups(&[LEGACY])
                    .resources(&["secrets"]),
            ],
        ),
        controller(
            "namespace-controller",
            vec![
                rule(&["delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["namespaces"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["namespaces/finalize", "namespaces/status"]),
                rule(&["delete", "deletecollection", "get", "list", "watch"])
                    .groups(&["*"])
                    .resources(&["*"]),
            ],
        ),
        controller(
            "node-controller",
            vec![
                rule(&["delete", "get", "list", "patch", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(&["delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "persistent-volume-binder",
            vec![
                rule(&["create", "delete", "get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes/status"]),
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(&["create", "delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["storageclasses"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                event_rule(),
                rule(&["watch"]).groups(&[LEGACY]).resources(&["events"]),
            ],
        ),
        controller(
            "pod-garbage-collector",
            vec![
                rule(&["delete", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
            ],
        ),
        controller(
            "pv-protection-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                event_rule(),
            ],
        ),
        controller(
            "pvc-protection-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "replicaset-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&["apps", "extensions"])
                    .resources(&["replicasets"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["replicasets/status"]),
                rule(&["update"])
                    .groups(&["apps", "extensions"])
                    .resources(&["replicasets/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "replication-controller",
            vec![
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers/status"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers/finalizers"]),
                rule(&["create", "delete", "list", "patch", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                event_rule(),
            ],
        ),
        controller(
            "resource-claim-controller",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/finalizers"]),
                rule(&["create", "delete", "get", "list", "watch"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims"]),
                rule(&["patch", "update"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims", "resourceclaims/status"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                event_rule(),
                rule(&["patch", "update"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims/binding"]),
            ],
        ),
        controller(
            "resourcequota-controller",
            vec![
                rule(&["list", "watch"]).groups(&["*"]).resources(&["*"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["resourcequotas/status"]),
                event_rule(),
            ],
        ),
        controller(
            "root-ca-cert-publisher",
            vec![
                rule(&["create", "update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"]),
                event_rule(),
            ],
        ),
        controller(
            "route-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                event_rule(),
            ],
        ),
        controller(
            "selinux-warning-controller",
            vec![
                event_rule(),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csidrivers"]),
            ],
        ),
        controller(
            "service-account-controller",
            vec![
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts"]),
                event_rule(),
            ],
        ),
        controller(
            "service-cidrs-controller",
            vec![
                rule(READ_UPDATE)
                    .groups(&["networking.k8s.io"])
                    .resources(&["servicecidrs"]),
                rule(&["patch", "update"])
                    .groups(&["networking.k8s.io"])
                    .resources(&["servicecidrs/finalizers"]),
                rule(&["patch", "update"])
                    .groups(&["networking.k8s.io"])
                    .resources(&["servicecidrs/status"]),
                rule(READ)
                    .groups(&["networking.k8s.io"])
                    .resources(&["ipaddresses"]),
                event_rule(),
            ],
        ),
        controller(
            "service-controller",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["services"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["services/status"]),
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                event_rule(),
            ],
        ),
        controller(
            "statefulset-controller",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(READ).groups(&["apps"]).resources(&["statefulsets"]),
                rule(&["update"])
                    .groups(&["apps"])
                    .resources(&["statefulsets/status"]),
                rule(&["update"])
                    .groups(&["apps"])
                    .resources(&["statefulsets/finalizers"]),
                rule(&["create", "delete", "get", "patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&[
                    "create", "delete", "get", "list", "patch", "update", "watch",
                ])
                .groups(&["apps"])
                .resources(&["controllerrevisions"]),
                rule(&["create", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["delete", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/finalizers"]),
                event_rule(),
            ],
        ),
        controller(
            "ttl-after-finished-controller",
            vec![
                rule(&["delete", "get", "list", "watch"])
                    .groups(&["batch"])
                    .resources(&["jobs"]),
                event_rule(),
            ],
        ),
        controller(
            "ttl-controller",
            vec![
                rule(&["list", "patch", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                event_rule(),
            ],
        ),
        controller(
            "validatingadmissionpolicy-status-controller",
            vec![
                rule(READ)
                    .groups(&["admissionregistration.k8s.io"])
                    .resources(&["validatingadmissionpolicies"]),
                rule(&["get", "patch", "update"])
                    .groups(&["admissionregistration.k8s.io"])
                    .resources(&["validatingadmissionpolicies/status"]),
                event_rule(),
            ],
        ),
        controller(
            "volumeattributesclass-protection-controller",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["get", "list", "update", "watch"])
                    .groups(&["storage.k8s.io"])
                    .resources(&["volumeattributesclasses"]),
                event_rule(),
            ],
        ),
    ]
}

/// One binding per controller role to its service account (upstream
/// `ControllerRoleBindings()`, made by `addControllerRole` with each role).
pub fn controller_role_bindings() -> Vec<Binding> {
    controller_roles()
        .iter()
        .map(|r| {
            let sa = r.name.trim_start_matches(CONTROLLER_ROLE_PREFIX);
            Binding::cluster(&r.name, vec![Subject::service_account("kube-system", sa)])
        })
        .collect()
}
