//! The cluster-wide roles and bindings of upstream `bootstrappolicy/policy.go`: the
//! user-facing roles (`cluster-admin` and the aggregated `admin`, `edit`, `view`), what
//! every user may discover, the node's and the components' roles, and their bindings.

use super::{
    event_rule, rule, Binding, ClusterRole, Subject, LEGACY, READ, READ_UPDATE, READ_WRITE, WRITE,
};

/// Every bootstrap ClusterRole of `policy.go` (upstream `ClusterRoles()`).
pub fn cluster_roles() -> Vec<ClusterRole> {
    let mut roles = user_facing_roles();
    roles.extend(discovery_roles());
    roles.extend(node_roles());
    roles.extend(component_roles());
    roles.extend(signer_approver_roles());
    roles
}

/// `cluster-admin`, and `admin`, `edit` and `view` aggregated from the
/// `system:aggregate-to-*` roles (the aggregation controller fills their rules).
pub fn user_facing_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "cluster-admin",
            vec![
                rule(&["*"]).groups(&["*"]).resources(&["*"]),
                rule(&["*"]).urls(&["*"]),
            ],
        ),
        ClusterRole::new("admin", vec![]).aggregated_from("admin"),
        ClusterRole::new("edit", vec![])
            .aggregate_to("admin")
            .aggregated_from("edit"),
        ClusterRole::new("view", vec![])
            .aggregate_to("edit")
            .aggregated_from("view"),
        ClusterRole::new(
            "system:aggregate-to-admin",
            vec![
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["localsubjectaccessreviews"]),
                rule(READ_WRITE)
                    .groups(&["rbac.authorization.k8s.io"])
                    .resources(&["rolebindings", "roles"]),
            ],
        )
        .aggregate_to("admin"),
        ClusterRole::new(
            "system:aggregate-to-edit",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&[
                    "pods/attach",
                    "pods/exec",
                    "pods/portforward",
                    "pods/proxy",
                    "secrets",
                    "services/proxy",
                ]),
                rule(&["impersonate"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts"]),
                rule(WRITE).groups(&[LEGACY]).resources(&[
                    "pods",
                    "pods/attach",
                    "pods/exec",
                    "pods/portforward",
                    "pods/proxy",
                ]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["pods/eviction"]),
                rule(WRITE).groups(&[LEGACY]).resources(&[
                    "configmaps",
                    "persistentvolumeclaims",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "secrets",
                    "serviceaccounts",
                    "services",
                    "services/proxy",
                ]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts/token"]),
                rule(WRITE)
                    .groups(&[LEGACY, "events.k8s.io"])
                    .resources(&["events"]),
                rule(WRITE).groups(&["apps"]).resources(&[
                    "daemonsets",
                    "deployments",
                    "deployments/rollback",
                    "deployments/scale",
                    "replicasets",
                    "replicasets/scale",
                    "statefulsets",
                    "statefulsets/scale",
                ]),
                rule(WRITE)
                    .groups(&["autoscaling"])
                    .resources(&["horizontalpodautoscalers"]),
                rule(WRITE)
                    .groups(&["batch"])
                    .resources(&["cronjobs", "jobs"]),
                rule(WRITE).groups(&["extensions"]).resources(&[
                    "daemonsets",
                    "deployments",
                    "deployments/rollback",
                    "deployments/scale",
                    "ingresses",
                    "networkpolicies",
                    "replicasets",
                    "replicasets/scale",
                    "replicationcontrollers/scale",
                ]),
                rule(WRITE)
                    .groups(&["policy"])
                    .resources(&["poddisruptionbudgets"]),
                rule(WRITE)
                    .groups(&["networking.k8s.io"])
                    .resources(&["ingresses", "networkpolicies"]),
                rule(READ_WRITE)
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(WRITE)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims", "resourceclaimtemplates"]),
            ],
        )
        .aggregate_to("edit"),
        ClusterRole::new(
            "system:aggregate-to-view",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&[
                    "configmaps",
                    "endpoints",
                    "persistentvolumeclaims",
                    "persistentvolumeclaims/status",
                    "pods",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/status",
                ]),
                rule(READ).groups(&[LEGACY]).resources(&[
                    "bindings",
                    "limitranges",
                    "namespaces/status",
                    "pods/log",
                    "pods/status",
                    "replicationcontrollers/status",
                    "resourcequotas",
                    "resourcequotas/status",
                ]),
                rule(READ).groups(&[LEGACY]).resources(&["namespaces"]),
                rule(READ)
                    .groups(&[LEGACY, "events.k8s.io"])
                    .resources(&["events"]),
                rule(READ)
                    .groups(&["discovery.k8s.io"])
                    .resources(&["endpointslices"]),
                rule(READ).groups(&["apps"]).resources(&[
                    "controllerrevisions",
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "statefulsets",
                    "statefulsets/scale",
                    "statefulsets/status",
                ]),
                rule(READ).groups(&["autoscaling"]).resources(&[
                    "horizontalpodautoscalers",
                    "horizontalpodautoscalers/status",
                ]),
                rule(READ).groups(&["batch"]).resources(&[
                    "cronjobs",
                    "cronjobs/status",
                    "jobs",
                    "jobs/status",
                ]),
                rule(READ).groups(&["extensions"]).resources(&[
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "ingresses",
                    "ingresses/status",
                    "networkpolicies",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "replicationcontrollers/scale",
                ]),
                rule(READ)
                    .groups(&["policy"])
                    .resources(&["poddisruptionbudgets", "poddisruptionbudgets/status"]),
                rule(READ).groups(&["networking.k8s.io"]).resources(&[
                    "ingresses",
                    "ingresses/status",
                    "networkpolicies",
                ]),
                rule(READ).groups(&["resource.k8s.io"]).resources(&[
                    "resourceclaims",
                    "resourceclaims/status",
                    "resourceclaimtemplates",
                ]),
            ],
        )
        .aggregate_to("view"),
    ]
}

/// What users may discover about the cluster: API discovery, their own permissions,
/// health and version, metrics, the service account issuer's keys.
pub fn discovery_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "system:discovery",
            vec![rule(&["get"]).urls(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ])],
        ),
        ClusterRole::new(
            "system:monitoring",
            vec![
                rule(&["get"]).urls(&[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                    "/statusz",
                ]),
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/metrics"]),
            ],
        ),
        ClusterRole::new(
            "system:basic-user",
            vec![
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                rule(&["create"])
                    .groups(&["authentication.k8s.io"])
                    .resources(&["selfsubjectreviews"]),
            ],
        ),
        ClusterRole::new(
            "system:public-info-viewer",
            vec![rule(&["get"]).urls(&["/healthz", "/livez", "/readyz", "/version", "/version/"])],
        ),
        ClusterRole::new(
            "system:service-account-issuer-discovery",
            vec![rule(&["get"]).urls(&[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ])],
        ),
    ]
}

/// The kubelet's, kube-proxy's, the node problem detector's and node bootstrapping roles.
pub fn node_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "system:node",
            vec![
                rule(&["create"])
                    .groups(&["authentication.k8s.io"])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["localsubjectaccessreviews", "subjectaccessreviews"]),
                rule(READ).groups(&[LEGACY]).resources(&["services"]),
                rule(&["create", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["nodes"]),
                event_rule(),
                rule(READ).groups(&[LEGACY]).resources(&["pods"]),
                rule(&["create", "delete"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["pods/eviction"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["configmaps", "secrets"]),
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims", "persistentvolumes"]),
                rule(&["get"]).groups(&[LEGACY]).resources(&["endpoints"]),
                rule(&["create", "get", "list", "watch"])
                    .groups(&["certificates.k8s.io"])
                    .resources(&["certificatesigningrequests"]),
                rule(&["create", "delete", "get", "patch", "update"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(&["get"])
                    .groups(&["storage.k8s.io"])
                    .resources(&["volumeattachments"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts/token"]),
                rule(&["get", "patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims/status"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csidrivers"]),
                rule(&["create", "delete", "get", "patch", "update"])
                    .groups(&["storage.k8s.io"])
                    .resources(&["csinodes"]),
                rule(READ)
                    .groups(&["node.k8s.io"])
                    .resources(&["runtimeclasses"]),
                rule(&["get"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims"]),
                rule(&["deletecollection"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceslices"]),
                rule(&["get"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts"]),
            ],
        ),
        ClusterRole::new(
            "system:node-problem-detector",
            vec![
                rule(&["get"]).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["patch"])
                    .groups(&[LEGACY])
                    .resources(&["nodes/status"]),
                event_rule(),
            ],
        ),
        ClusterRole::new(
            "system:kubelet-api-admin",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["proxy"]).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["*"]).groups(&[LEGACY]).resources(&[
                    "nodes/log",
                    "nodes/metrics",
                    "nodes/proxy",
                    "nodes/stats",
                ]),
                rule(&["*"]).groups(&[LEGACY]).resources(&[
                    "nodes/configz",
                    "nodes/healthz",
                    "nodes/pods",
                ]),
            ],
        ),
        ClusterRole::new(
            "system:node-bootstrapper",
            vec![rule(&["create", "get", "list", "watch"])
                .groups(&["certificates.k8s.io"])
                .resources(&["certificatesigningrequests"])],
        ),
        ClusterRole::new(
            "system:node-proxier",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["endpoints", "services"]),
                rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
                event_rule(),
                rule(&["list", "watch"])
                    .groups(&["networking.k8s.io"])
                    .resources(&["servicecidrs"]),
                rule(&["list", "watch"])
                    .groups(&["discovery.k8s.io"])
                    .resources(&["endpointslices"]),
            ],
        ),
        ClusterRole::new(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![rule(&["create"])
                .groups(&["certificates.k8s.io"])
                .resources(&["certificatesigningrequests/nodeclient"])],
        ),
        ClusterRole::new(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![rule(&["create"])
                .groups(&["certificates.k8s.io"])
                .resources(&["certificatesigningrequests/selfnodeclient"])],
        ),
    ]
}

/// The roles of the control plane's components and add-ons.
pub fn component_roles() -> Vec<ClusterRole> {
    vec![
        ClusterRole::new(
            "system:heapster",
            vec![
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["events", "namespaces", "nodes", "pods"]),
                rule(READ)
                    .groups(&["extensions"])
                    .resources(&["deployments"]),
            ],
        ),
        ClusterRole::new(
            "system:auth-delegator",
            vec![
                rule(&["create"])
                    .groups(&["authentication.k8s.io"])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["subjectaccessreviews"]),
            ],
        ),
        ClusterRole::new(
            "system:kube-aggregator",
            vec![rule(READ)
                .groups(&[LEGACY])
                .resources(&["endpoints", "services"])],
        ),
        ClusterRole::new(
            "system:kube-controller-manager",
            vec![
                event_rule(),
                rule(&["create"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(&["get", "update"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"])
                    .names(&["kube-controller-manager"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["secrets", "serviceaccounts"]),
                rule(&["delete"]).groups(&[LEGACY]).resources(&["secrets"]),
                rule(&["get"]).groups(&[LEGACY]).resources(&[
                    "configmaps",
                    "namespaces",
                    "secrets",
                    "serviceaccounts",
                ]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["secrets", "serviceaccounts"]),
                rule(&["create"])
                    .groups(&["authentication.k8s.io"])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["subjectaccessreviews"]),
                rule(&["list", "watch"]).groups(&["*"]).resources(&["*"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["serviceaccounts/token"]),
            ],
        ),
        ClusterRole::new(
            "system:kube-dns",
            vec![rule(&["list", "watch"])
                .groups(&[LEGACY])
                .resources(&["endpoints", "services"])],
        ),
        ClusterRole::new(
            "system:persistent-volume-provisioner",
            vec![
                rule(&["create", "delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(&["get", "list", "update", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["storageclasses"]),
                rule(&["watch"]).groups(&[LEGACY]).resources(&["events"]),
                event_rule(),
            ],
        ),
        ClusterRole::new(
            "system:kube-scheduler",
            vec![
                event_rule(),
                rule(&["create"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(&["get", "list", "update", "watch"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"])
                    .names(&["kube-scheduler"]),
                rule(READ_WRITE)
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leasecandidates"]),
                rule(READ).groups(&[LEGACY]).resources(&["nodes"]),
                rule(&["delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["pods"]),
                rule(&["create"])
                    .groups(&[LEGACY])
                    .resources(&["bindings", "pods/binding"]),
                rule(&["patch", "update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/status"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["replicationcontrollers", "services"]),
                rule(READ)
                    .groups(&["apps", "extensions"])
                    .resources(&["replicasets"]),
                rule(READ).groups(&["apps"]).resources(&["statefulsets"]),
                rule(READ)
                    .groups(&["policy"])
                    .resources(&["poddisruptionbudgets"]),
                rule(READ)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims", "persistentvolumes"]),
                rule(&["create"])
                    .groups(&["authentication.k8s.io"])
                    .resources(&["tokenreviews"]),
                rule(&["create"])
                    .groups(&["authorization.k8s.io"])
                    .resources(&["subjectaccessreviews"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csinodes"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["volumeattachments"]),
                rule(READ).groups(&[LEGACY]).resources(&["namespaces"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csidrivers"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["csistoragecapacities"]),
                rule(READ)
                    .groups(&["resource.k8s.io"])
                    .resources(&["deviceclasses"]),
                rule(READ_UPDATE)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims"]),
                rule(READ_UPDATE)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims/status"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["pods/finalizers"]),
                rule(READ)
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceslices"]),
                rule(&["create", "delete"])
                    .groups(&["resource.k8s.io"])
                    .resources(&["resourceclaims"]),
            ],
        ),
        ClusterRole::new(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumes"]),
                rule(READ)
                    .groups(&["storage.k8s.io"])
                    .resources(&["storageclasses"]),
                rule(READ_UPDATE)
                    .groups(&[LEGACY])
                    .resources(&["persistentvolumeclaims"]),
            ],
        ),
    ]
}

/// One role per built-in signer that may approve its CertificateSigningRequests
/// (`system:certificates.k8s.io:<signer>-approver`).
pub fn signer_approver_roles() -> Vec<ClusterRole> {
    [
        "kube-apiserver-client",
        "kube-apiserver-client-kubelet",
        "kubelet-serving",
        "legacy-unknown",
    ]
    .iter()
    .map(|signer| {
        ClusterRole::new(
            &format!("system:certificates.k8s.io:{signer}-approver"),
            vec![rule(&["approve"])
                .groups(&["certificates.k8s.io"])
                .resources(&["signers"])
                .names(&[&format!("kubernetes.io/{signer}")])],
        )
    })
    .collect()
}

/// Every bootstrap ClusterRoleBinding of `policy.go` (upstream `ClusterRoleBindings()`).
pub fn cluster_role_bindings() -> Vec<Binding> {
    vec![
        Binding::cluster("cluster-admin", vec![Subject::group("system:masters")]),
        Binding::cluster(
            "system:monitoring",
            vec![Subject::group("system:monitoring")],
        ),
        Binding::cluster(
            "system:discovery",
            vec![Subject::group("system:authenticated")],
        ),
        Binding::cluster(
            "system:basic-user",
            vec![Subject::group("system:authenticated")],
        ),
        Binding::cluster(
            "system:public-info-viewer",
            vec![
                Subject::group("system:authenticated"),
                Subject::group("system:unauthenticated"),
            ],
        ),
        // the Node authorizer grants nodes what they need: the binding has no subjects
        Binding::cluster("system:node", vec![]),
        Binding::cluster(
            "system:node-proxier",
            vec![Subject::user("system:kube-proxy")],
        ),
        Binding::cluster(
            "system:kube-controller-manager",
            vec![Subject::user("system:kube-controller-manager")],
        ),
        Binding::cluster(
            "system:kube-dns",
            vec![Subject::service_account("kube-system", "kube-dns")],
        ),
        Binding::cluster(
            "system:kube-scheduler",
            vec![Subject::user("system:kube-scheduler")],
        ),
        Binding::cluster(
            "system:volume-scheduler",
            vec![Subject::user("system:kube-scheduler")],
        ),
        Binding::cluster(
            "system:service-account-issuer-discovery",
            vec![Subject::group("system:serviceaccounts")],
        ),
    ]
}
