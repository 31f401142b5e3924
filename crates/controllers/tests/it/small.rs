//! The service account, root CA publisher and cluster role aggregation controllers
//! against the embedded API server.

use std::collections::BTreeMap;

use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions, Registry};
use coxswain_controllers::{clusterroleaggregation, rootcacertpublisher, serviceaccount};
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{Manager, ManagerOptions};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{AggregationRule, ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::common::wait_for;
use kube::api::{DeleteParams, PostParams};
use kube::Api;
use tokio_util::sync::CancellationToken;

/// A running manager with the controllers `names` (registry names or aliases) built
/// through their descriptors; stops when the token is cancelled.
struct Running {
    env: TestEnv,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn start(names: &[&str]) -> Running {
        Running::start_on(envtest::start().await.expect("test server"), names).await
    }

    async fn start_on(env: TestEnv, names: &[&str]) -> Running {
        let config = env.kube_config().await.expect("client config");
        let root_ca = rootcacertpublisher::root_ca_of(&config);
        let manager = Manager::new(
            config,
            ManagerOptions {
                metrics_bind_address: "0".into(),
                ..Default::default()
            },
        )
        .expect("manager");
        let registry = Registry::new(vec![
            serviceaccount::descriptor(),
            rootcacertpublisher::descriptor(),
            clusterroleaggregation::descriptor(),
        ]);
        let flags: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut options = ControllerManagerOptions::default();
        options.service_account.root_ca = root_ca;
        let ctx = ControllerContext::new(&manager, &options);
        for d in registry.select(&flags).expect("known controllers") {
            let runnable = (d.constructor)(&ctx)
                .expect("controller constructs")
                .expect("controller enabled");
            manager.add(runnable).expect("runnable added");
        }
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let task = tokio::spawn(async move {
            manager.start(token).await.expect("manager runs");
        });
        Running { env, cancel, task }
    }

    fn client(&self) -> kube::Client {
        self.env.client.clone()
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.expect("manager task");
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

/// The PEM bundle of the test server's CA (what the publisher is given).
async fn publish_root_ca_file(env: &TestEnv) -> String {
    let config = env.kube_config().await.expect("client config");
    rootcacertpublisher::root_ca_of(&config).expect("the test server has a CA")
}

#[tokio::test]
async fn namespaces_get_a_default_service_account_and_the_root_ca() {
    let env = envtest::start().await.expect("test server");
    // the server's CA, as the controller manager's client trusts it
    let pem = publish_root_ca_file(&env).await;
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"), "{pem}");
    let run = Running::start_on(env, &["serviceaccount", "root-ca-cert-publisher"]).await;
    let client = run.client();
    let want_data = BTreeMap::from([("ca.crt".to_string(), pem.clone())]);

    // the bootstrap namespaces are served too
    let system_sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "kube-system");
    wait_for("kube-system/default", || {
        let a = system_sas.clone();
        async move { a.get_opt("default").await.ok().flatten() }
    })
    .await;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta("team-a"),
                ..Default::default()
            },
        )
        .await
        .expect("namespace created");
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "team-a");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let sa = wait_for("team-a/default service account", || {
        let a = sas.clone();
        async move { a.get_opt("default").await.ok().flatten() }
    })
    .await;
    let cm = wait_for("team-a/kube-root-ca.crt", || {
        let a = cms.clone();
        async move { a.get_opt("kube-root-ca.crt").await.ok().flatten() }
    })
    .await;
    assert_eq!(cm.data.as_ref(), Some(&want_data));
    assert_eq!(
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kubernetes.io/description"))
            .map(String::as_str),
        Some(rootcacertpublisher::DESCRIPTION)
    );

    // deleted: recreated (a new object)
    sas.delete("default", &DeleteParams::default())
        .await
        .expect("sa deleted");
    let old_uid = sa.metadata.uid.clone();
    wait_for("default service account recreated", || {
        let a = sas.clone();
        let old = old_uid.clone();
        async move {
            a.get_opt("default")
                .await
                .ok()
                .flatten()
                .filter(|s| s.metadata.uid != old)
        }
    })
    .await;
    cms.delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect("cm deleted");
    let old_uid = cm.metadata.uid.clone();
    let cm = wait_for("kube-root-ca.crt recreated", || {
        let a = cms.clone();
        let old = old_uid.clone();
        async move {
            a.get_opt("kube-root-ca.crt")
                .await
                .ok()
                .flatten()
                .filter(|c| c.metadata.uid != old)
        }
    })
    .await;
    assert_eq!(cm.data.as_ref(), Some(&want_data));

    // edited: the bundle is restored, an added key dropped, the description put back
    let mut tampered = cm.clone();
    tampered.data = Some(BTreeMap::from([
        ("ca.crt".to_string(), "not a CA".to_string()),
        ("extra".to_string(), "x".to_string()),
    ]));
    tampered.metadata.annotations = None;
    let tampered = cms
        .replace("kube-root-ca.crt", &PostParams::default(), &tampered)
        .await
        .expect("cm edited");
    let tampered_rv = tampered.metadata.resource_version.clone();
    let fixed = wait_for("kube-root-ca.crt corrected", || {
        let a = cms.clone();
        let rv = tampered_rv.clone();
        async move {
            a.get_opt("kube-root-ca.crt")
                .await
                .ok()
                .flatten()
                .filter(|c| c.metadata.resource_version != rv)
        }
    })
    .await;
    assert_eq!(fixed.data.as_ref(), Some(&want_data));
    assert!(fixed
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/description")));

    // other ConfigMaps and service accounts are left alone
    let other = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: meta("other"),
                data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
                ..Default::default()
            },
        )
        .await
        .expect("other cm");
    sas.create(
        &PostParams::default(),
        &ServiceAccount {
            metadata: meta("builder"),
            ..Default::default()
        },
    )
    .await
    .expect("other sa");
    sas.delete("builder", &DeleteParams::default())
        .await
        .expect("other sa deleted");
    // a later namespace is served after those events (one worker, in order)
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta("team-b"),
                ..Default::default()
            },
        )
        .await
        .expect("namespace created");
    let later: Api<ConfigMap> = Api::namespaced(client.clone(), "team-b");
    wait_for("team-b/kube-root-ca.crt", || {
        let a = later.clone();
        async move { a.get_opt("kube-root-ca.crt").await.ok().flatten() }
    })
    .await;
    let other_now = cms.get("other").await.expect("other cm");
    assert_eq!(
        other_now.metadata.resource_version,
        other.metadata.resource_version
    );
    assert!(sas.get_opt("builder").await.expect("read").is_none());
    run.stop().await;
}

fn rule(verb: &str, resource: &str) -> PolicyRule {
    PolicyRule {
        verbs: vec![verb.into()],
        resources: Some(vec![resource.into()]),
        api_groups: Some(vec![String::new()]),
        ..PolicyRule::default()
    }
}

fn labels(l: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn cluster_role(name: &str, l: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labels(l),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

fn aggregated(
    name: &str,
    l: &[(&str, &str)],
    selectors: &[&[(&str, &str)]],
    rules: Vec<PolicyRule>,
) -> ClusterRole {
    let mut r = cluster_role(name, l, rules);
    r.aggregation_rule = Some(AggregationRule {
        cluster_role_selectors: Some(
            selectors
                .iter()
                .map(|s| LabelSelector {
                    match_labels: labels(s),
                    match_expressions: None,
                })
                .collect(),
        ),
    });
    r
}

/// Wait until `name`'s rules are `want`.
async fn rules_become(api: &Api<ClusterRole>, name: &str, want: Vec<PolicyRule>) {
    let what = format!("{name} to hold {want:?}");
    wait_for(&what, || {
        let a = api.clone();
        let want = want.clone();
        async move {
            let r = a.get_opt(name).await.ok().flatten()?;
            (r.rules.unwrap_or_default() == want).then_some(())
        }
    })
    .await;
}

#[tokio::test]
async fn aggregated_cluster_roles_follow_the_roles_they_select() {
    let run = Running::start(&["clusterrole-aggregation"]).await;
    let roles: Api<ClusterRole> = Api::all(run.client());
    let pp = PostParams::default();
    let to_mon = [("rbac.example.com/aggregate-to-monitoring", "true")];
    roles
        .create(
            &pp,
            &cluster_role(
                "mon-b",
                &to_mon,
                vec![rule("list", "services"), rule("get", "pods")],
            ),
        )
        .await
        .expect("mon-b");
    roles
        .create(
            &pp,
            &cluster_role("mon-a", &to_mon, vec![rule("get", "pods")]),
        )
        .await
        .expect("mon-a");
    roles
        .create(
            &pp,
            &cluster_role("unrelated", &[("x", "y")], vec![rule("*", "*")]),
        )
        .await
        .expect("unrelated");
    // its own rules are replaced; it matches its own selector but is not a source
    roles
        .create(
            &pp,
            &aggregated(
                "monitoring",
                &to_mon,
                &[&to_mon],
                vec![rule("stale", "things")],
            ),
        )
        .await
        .expect("monitoring");
    // by name, each rule once
    rules_become(
        &roles,
        "monitoring",
        vec![rule("get", "pods"), rule("list", "services")],
    )
    .await;

    // a new matching role joins (sorted first by name)
    roles
        .create(
            &pp,
            &cluster_role("mon-0", &to_mon, vec![rule("watch", "nodes")]),
        )
        .await
        .expect("mon-0");
    rules_become(
        &roles,
        "monitoring",
        vec![
            rule("watch", "nodes"),
            rule("get", "pods"),
            rule("list", "services"),
        ],
    )
    .await;

    // a source's rules change
    let mut a = roles.get("mon-a").await.expect("mon-a");
    a.rules = Some(vec![rule("delete", "pods")]);
    roles
        .replace("mon-a", &pp, &a)
        .await
        .expect("mon-a updated");
    rules_become(
        &roles,
        "monitoring",
        vec![
            rule("watch", "nodes"),
            rule("delete", "pods"),
            rule("list", "services"),
            rule("get", "pods"),
        ],
    )
    .await;

    // a source relabelled away and one deleted leave
    let mut b = roles.get("mon-b").await.expect("mon-b");
    b.metadata.labels = labels(&[("x", "y")]);
    roles
        .replace("mon-b", &pp, &b)
        .await
        .expect("mon-b relabelled");
    roles
        .delete("mon-0", &DeleteParams::default())
        .await
        .expect("mon-0 deleted");
    rules_become(&roles, "monitoring", vec![rule("delete", "pods")]).await;

    // hand edits of the aggregate are reverted
    let mut m = roles.get("monitoring").await.expect("monitoring");
    m.rules = Some(vec![rule("escalate", "everything")]);
    roles
        .replace("monitoring", &pp, &m)
        .await
        .expect("monitoring edited");
    rules_become(&roles, "monitoring", vec![rule("delete", "pods")]).await;

    // aggregates chain: a role selecting the aggregate follows it
    roles
        .create(
            &pp,
            &aggregated(
                "super",
                &[],
                &[
                    &[("rbac.example.com/aggregate-to-monitoring", "true")],
                    &[("x", "y")],
                ],
                vec![],
            ),
        )
        .await
        .expect("super");
    let chained = vec![
        rule("delete", "pods"),
        rule("list", "services"),
        rule("get", "pods"),
        rule("*", "*"),
    ];
    rules_become(&roles, "super", chained).await;
    let mut a = roles.get("mon-a").await.expect("mon-a");
    a.rules = Some(vec![rule("patch", "pods")]);
    roles
        .replace("mon-a", &pp, &a)
        .await
        .expect("mon-a updated");
    rules_become(&roles, "monitoring", vec![rule("patch", "pods")]).await;
    rules_become(
        &roles,
        "super",
        vec![
            rule("patch", "pods"),
            rule("list", "services"),
            rule("get", "pods"),
            rule("*", "*"),
        ],
    )
    .await;
    run.stop().await;
}

/// Upstream TestSyncClusterRole's cases (but "no diff skip", which is about requests
/// not sent: see the unit table), each in its own label space on one server.
#[tokio::test]
async fn upstream_sync_cluster_role_cases() {
    let run = Running::start(&["clusterrole-aggregation-controller"]).await;
    let roles: Api<ClusterRole> = Api::all(run.client());
    let pp = PostParams::default();
    let hammer = || vec![rule("hammer", "nails"), rule("hammer", "wedges")];
    let chisel = || vec![rule("chisel", "mortises")];
    let saw = || vec![rule("saw", "boards")];
    type Case<'a> = (
        &'a str,
        Vec<(&'a str, &'a str, Vec<PolicyRule>)>,
        Vec<&'a str>,
        Vec<PolicyRule>,
        Vec<PolicyRule>,
    );
    // (case, sources (name, foo label, rules), selector foo values, starting rules, expected)
    let cases: Vec<Case> = vec![
        (
            "dead",
            vec![("hammer", "bar", hammer())],
            vec!["bar"],
            saw(),
            hammer(),
        ),
        (
            "strip",
            vec![("hammer", "not-bar", hammer())],
            vec!["bar"],
            hammer(),
            vec![],
        ),
        (
            "order",
            vec![
                ("hammer", "bar", hammer()),
                ("chisel", "bar", chisel()),
                ("saw", "not-bar", saw()),
            ],
            vec!["bar"],
            vec![],
            [chisel(), hammer()].concat(),
        ),
        (
            "multi",
            vec![
                ("hammer", "bar", hammer()),
                ("chisel", "bar", chisel()),
                ("saw", "not-bar", saw()),
            ],
            vec!["bar", "not-bar"],
            vec![],
            [chisel(), hammer(), saw()].concat(),
        ),
        (
            "dups",
            vec![
                ("hammer", "bar", hammer()),
                ("chisel", "bar", chisel()),
                ("saw", "bar", saw()),
                ("other-saw", "not-bar", saw()),
            ],
            vec!["bar", "not-bar"],
            vec![],
            [chisel(), hammer(), saw()].concat(),
        ),
    ];
    for (case, sources, selectors, start, _) in &cases {
        for (name, foo, rules) in sources {
            roles
                .create(
                    &pp,
                    &cluster_role(
                        &format!("{case}-{name}"),
                        &[("case", case), ("foo", foo)],
                        rules.clone(),
                    ),
                )
                .await
                .expect("source role");
        }
        let sels: Vec<[(&str, &str); 2]> = selectors
            .iter()
            .map(|foo| [("case", *case), ("foo", *foo)])
            .collect();
        let sels: Vec<&[(&str, &str)]> = sels.iter().map(|s| s.as_slice()).collect();
        roles
            .create(
                &pp,
                &aggregated(&format!("{case}-combined"), &[], &sels, start.clone()),
            )
            .await
            .expect("combined role");
    }
    for (case, _, _, _, want) in cases {
        rules_become(&roles, &format!("{case}-combined"), want).await;
    }
    run.stop().await;
}

/// The refusal the controllers swallow in a terminating namespace is recognised from the
/// server's `Status` (cause `NamespaceTerminating`), and other errors are not.
#[tokio::test]
async fn creates_in_terminating_namespaces_are_recognised() {
    let env = envtest::start().await.expect("test server");
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: meta("leaving"),
                ..Default::default()
            },
        )
        .await
        .expect("namespace created");
    namespaces
        .delete("leaving", &DeleteParams::default())
        .await
        .expect("namespace deleted");
    let ns = namespaces
        .get("leaving")
        .await
        .expect("terminating namespace");
    assert!(!serviceaccount::namespace_active(&ns), "{:?}", ns.status);
    let sas: Api<ServiceAccount> = Api::namespaced(env.client.clone(), "leaving");
    let sa = ServiceAccount {
        metadata: meta("default"),
        ..Default::default()
    };
    let refused = sas
        .create(&PostParams::default(), &sa)
        .await
        .expect_err("no new content in a terminating namespace");
    assert!(
        serviceaccount::namespace_terminating_error(&refused),
        "{refused:?}"
    );
    let missing: Api<ServiceAccount> = Api::namespaced(env.client.clone(), "nowhere");
    let not_found = missing
        .create(&PostParams::default(), &sa)
        .await
        .expect_err("no namespace");
    assert!(
        !serviceaccount::namespace_terminating_error(&not_found),
        "{not_found:?}"
    );
}
