//! Fixtures of the unit tests, after upstream `deployment_controller_test.go`
//! (`newDeployment`, `rs`, `newRSWithStatus`) and `util/deployment_util_test.go`
//! (`generateDeployment`, `generateRS`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, ReplicaSet, ReplicaSetSpec, ReplicaSetStatus,
    RollingUpdateDeployment,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

use super::util;

pub fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
    l.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A time `secs` seconds after 2016-05-20T00:00:00Z.
pub fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(1_463_702_400 + secs).expect("valid"))
}

/// Upstream `newDeployment`: a rolling update with maxSurge and maxUnavailable 0 unless
/// given.
pub fn new_deployment(
    name: &str,
    replicas: i32,
    revision_history_limit: Option<i32>,
    max_surge: Option<IntOrString>,
    max_unavailable: Option<IntOrString>,
    selector: &[(&str, &str)],
) -> Deployment {
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            annotations: Some(BTreeMap::new()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            revision_history_limit,
            selector: LabelSelector {
                match_labels: Some(labels(selector)),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some(util::ROLLING_UPDATE.into()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(max_surge.unwrap_or(IntOrString::Int(0))),
                    max_unavailable: Some(max_unavailable.unwrap_or(IntOrString::Int(0))),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(selector)),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "foo".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        status: None,
    }
}

/// Upstream `rs`: a ReplicaSet of `replicas` created at `created`.
pub fn rs(
    name: &str,
    replicas: i32,
    selector: &[(&str, &str)],
    created: Option<Time>,
) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            creation_timestamp: created,
            ..Default::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(selector)),
                ..Default::default()
            },
            template: Some(PodTemplateSpec::default()),
            ..Default::default()
        },
        status: None,
    }
}

/// Upstream `newRSWithStatus`.
pub fn rs_with_status(name: &str, spec_replicas: i32, status_replicas: i32) -> ReplicaSet {
    let mut r = rs(name, spec_replicas, &[("foo", "bar")], None);
    r.status = Some(ReplicaSetStatus {
        replicas: status_replicas,
        ..Default::default()
    });
    r
}

/// A ReplicaSet with `available` available replicas.
pub fn rs_with_available(name: &str, spec: i32, status: i32, available: i32) -> ReplicaSet {
    let mut r = rs(name, spec, &[], None);
    r.status = Some(ReplicaSetStatus {
        replicas: status,
        available_replicas: Some(available),
        ..Default::default()
    });
    r
}

/// Upstream `generateDeployment`: one container named and imaged `image`.
pub fn generate_deployment(image: &str) -> Deployment {
    let mut d = new_deployment(image, 1, None, None, None, &[("name", image)]);
    if let Some(spec) = d.spec.template.spec.as_mut() {
        spec.containers = vec![Container {
            name: image.into(),
            image: Some(image.into()),
            image_pull_policy: Some("Always".into()),
            termination_message_path: Some("/dev/termination-log".into()),
            ..Default::default()
        }];
        spec.dns_policy = Some("ClusterFirst".into());
        spec.termination_grace_period_seconds = Some(30);
        spec.restart_policy = Some("Always".into());
    }
    d
}

/// Upstream `generateRS`: a ReplicaSet with the Deployment's template, owned by it.
pub fn generate_rs(d: &Deployment, name: &str) -> ReplicaSet {
    let t = util::template(d);
    let labels = t.metadata.as_ref().and_then(|m| m.labels.clone());
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            labels: labels.clone(),
            owner_references: Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
                d,
            )]),
            ..Default::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(0),
            selector: LabelSelector {
                match_labels: labels,
                ..Default::default()
            },
            template: Some(t),
            ..Default::default()
        },
        status: None,
    }
}
