//! The namespaced roles of upstream `bootstrappolicy/namespace_policy.go`: leader
//! election locks and the extension API server authentication reader in `kube-system`,
//! the bootstrap signer's and token cleaner's roles, and the cloud provider's.

use super::{event_rule, rule, Binding, Role, Subject, LEGACY, READ};

/// Every bootstrap Role (upstream `NamespaceRoles()`).
pub fn namespace_roles() -> Vec<Role> {
    vec![
        Role::new(
            "kube-public",
            "system:controller:bootstrap-signer",
            vec![
                rule(READ).groups(&[LEGACY]).resources(&["configmaps"]),
                rule(&["update"])
                    .groups(&[LEGACY])
                    .resources(&["configmaps"])
                    .names(&["cluster-info"]),
                event_rule(),
            ],
        ),
        Role::new(
            "kube-system",
            "extension-apiserver-authentication-reader",
            vec![rule(READ)
                .groups(&[LEGACY])
                .resources(&["configmaps"])
                .names(&["extension-apiserver-authentication"])],
        ),
        Role::new(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            vec![
                rule(&["create", "get", "list", "update", "watch"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(&["create", "get", "list", "update", "watch"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leasecandidates"]),
            ],
        ),
        Role::new(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            vec![
                rule(&["create", "get", "list", "update", "watch"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leases"]),
                rule(&["create", "get", "list", "update", "watch"])
                    .groups(&["coordination.k8s.io"])
                    .resources(&["leasecandidates"]),
            ],
        ),
        Role::new(
            "kube-system",
            "system:controller:bootstrap-signer",
            vec![rule(READ).groups(&[LEGACY]).resources(&["secrets"])],
        ),
        Role::new(
            "kube-system",
            "system:controller:cloud-provider",
            vec![rule(&["create", "get", "list", "watch"])
                .groups(&[LEGACY])
                .resources(&["configmaps"])],
        ),
        Role::new(
            "kube-system",
            "system:controller:token-cleaner",
            vec![
                rule(&["delete", "get", "list", "watch"])
                    .groups(&[LEGACY])
                    .resources(&["secrets"]),
                event_rule(),
            ],
        ),
    ]
}

/// Every bootstrap RoleBinding (upstream `NamespaceRoleBindings()`).
pub fn namespace_role_bindings() -> Vec<Binding> {
    let kcm = || Subject::user("system:kube-controller-manager");
    let scheduler = || Subject::user("system:kube-scheduler");
    let sa = |name: &str| Subject::service_account("kube-system", name);
    vec![
        Binding::namespaced(
            "kube-system",
            "extension-apiserver-authentication-reader",
            vec![kcm(), scheduler()],
        )
        .named("system::extension-apiserver-authentication-reader"),
        Binding::namespaced(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            vec![
                kcm(),
                sa("kube-controller-manager"),
                sa("leader-election-controller"),
            ],
        ),
        Binding::namespaced(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            vec![scheduler(), sa("kube-scheduler")],
        ),
        Binding::namespaced(
            "kube-system",
            "system:controller:bootstrap-signer",
            vec![sa("bootstrap-signer")],
        ),
        Binding::namespaced(
            "kube-system",
            "system:controller:cloud-provider",
            vec![sa("cloud-provider")],
        ),
        Binding::namespaced(
            "kube-system",
            "system:controller:token-cleaner",
            vec![sa("token-cleaner")],
        ),
        Binding::namespaced(
            "kube-public",
            "system:controller:bootstrap-signer",
            vec![sa("bootstrap-signer")],
        ),
    ]
}
