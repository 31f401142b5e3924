//! The two kinds the controller drives: apps/v1 ReplicaSet and core/v1
//! ReplicationController. As upstream (`pkg/controller/replication`, which converts an
//! RC to a ReplicaSet on the way in and back on the way out), both are seen through
//! one view of their spec and one status type, `ReplicaSetStatus`; an RC's map selector
//! is a `matchLabels` selector.

use std::collections::BTreeMap;

use apimachinery::selector::LabelSelector;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    PodTemplateSpec, ReplicationController, ReplicationControllerCondition,
    ReplicationControllerStatus,
};
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;

use coxswain_runtime::cache::CachedKind;

/// What the controller needs from a ReplicaSet's spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    /// Desired pods (`spec.replicas`, default 1).
    pub replicas: i32,
    /// Seconds a pod must be ready to count as available.
    pub min_ready_seconds: i32,
    /// The pod selector; `None` selects nothing (an RC without a selector).
    pub selector: Option<LabelSelector>,
    /// The pod template (empty when missing: creations then fail with an event).
    pub template: PodTemplateSpec,
}

impl Spec {
    /// Whether the selector selects `labels`.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector
            .as_ref()
            .is_some_and(|s| s.matches_labels(labels))
    }
}

/// Why a spec cannot be acted on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpecError {
    /// Event reason.
    pub reason: &'static str,
    /// What is wrong.
    pub message: String,
}

/// A kind managed by the ReplicaSet controller.
pub trait ReplicaSetKind:
    CachedKind + Resource<DynamicType = (), Scope = NamespaceResourceScope>
{
    /// The controller's name (logs, metrics).
    const CONTROLLER_NAME: &'static str;
    /// The reporting controller of its events.
    const EVENT_COMPONENT: &'static str;
    /// Whether its status has `terminatingReplicas`.
    const TERMINATING_REPLICAS: bool;

    /// The spec, or why it cannot be used.
    fn spec_view(&self) -> Result<Spec, SpecError>;
    /// The status, as a ReplicaSet status.
    fn status_view(&self) -> ReplicaSetStatus;
    /// Replace the status.
    fn set_status(&mut self, status: ReplicaSetStatus);
}

impl ReplicaSetKind for ReplicaSet {
    const CONTROLLER_NAME: &'static str = "replicaset";
    const EVENT_COMPONENT: &'static str = "replicaset-controller";
    const TERMINATING_REPLICAS: bool = true;

    fn spec_view(&self) -> Result<Spec, SpecError> {
        let spec = &self.spec;
        let selector = LabelSelector::from_meta(&spec.selector).map_err(|e| SpecError {
            reason: "InvalidSelector",
            message: format!("error converting pod selector to selector: {e}"),
        })?;
        Ok(Spec {
            replicas: spec.replicas.unwrap_or(1).max(0),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            selector: Some(selector),
            template: spec.template.clone().unwrap_or_default(),
        })
    }

    fn status_view(&self) -> ReplicaSetStatus {
        self.status.clone().unwrap_or_default()
    }

    fn set_status(&mut self, status: ReplicaSetStatus) {
        self.status = Some(status);
    }
}

impl ReplicaSetKind for ReplicationController {
    const CONTROLLER_NAME: &'static str = "replicationcontroller";
    const EVENT_COMPONENT: &'static str = "replication-controller";
    const TERMINATING_REPLICAS: bool = false;

    fn spec_view(&self) -> Result<Spec, SpecError> {
        let spec = self.spec.as_ref().ok_or_else(|| SpecError {
            reason: "InvalidSpec",
            message: "the ReplicationController has no spec".into(),
        })?;
        Ok(Spec {
            replicas: spec.replicas.unwrap_or(1).max(0),
            min_ready_seconds: spec.min_ready_seconds.unwrap_or(0),
            selector: spec.selector.as_ref().map(|m| {
                LabelSelector::from_match_labels(m.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            }),
            template: spec.template.clone().unwrap_or_default(),
        })
    }

    fn status_view(&self) -> ReplicaSetStatus {
        let s = self.status.clone().unwrap_or_default();
        ReplicaSetStatus {
            available_replicas: s.available_replicas,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicaSetCondition {
                        last_transition_time: c.last_transition_time,
                        message: c.message,
                        reason: c.reason,
                        status: c.status.into(),
                        type_: c.type_.into(),
                    })
                    .collect()
            }),
            fully_labeled_replicas: s.fully_labeled_replicas,
            observed_generation: s.observed_generation,
            ready_replicas: s.ready_replicas,
            replicas: s.replicas,
            terminating_replicas: None,
        }
    }

    fn set_status(&mut self, s: ReplicaSetStatus) {
        self.status = Some(ReplicationControllerStatus {
            available_replicas: s.available_replicas,
            conditions: s.conditions.map(|cs| {
                cs.into_iter()
                    .map(|c| ReplicationControllerCondition {
                        last_transition_time: c.last_transition_time,
                        message: c.message,
                        reason: c.reason,
                        status: c.status.unwrap_or_default(),
                        type_: c.type_.unwrap_or_default(),
                    })
                    .collect()
            }),
            fully_labeled_replicas: s.fully_labeled_replicas,
            observed_generation: s.observed_generation,
            ready_replicas: s.ready_replicas,
            replicas: s.replicas,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::ReplicationControllerSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

    fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn rc_selector_is_match_labels_and_missing_selects_nothing() {
        let mut rc = ReplicationController {
            spec: Some(ReplicationControllerSpec {
                selector: Some(labels(&[("app", "web")])),
                ..Default::default()
            }),
            ..Default::default()
        };
        let spec = rc.spec_view().expect("spec");
        assert_eq!(spec.replicas, 1);
        assert!(spec.selects(&labels(&[("app", "web"), ("x", "y")])));
        assert!(!spec.selects(&labels(&[("app", "db")])));
        if let Some(s) = rc.spec.as_mut() {
            s.selector = None;
        }
        assert!(!rc
            .spec_view()
            .expect("spec")
            .selects(&labels(&[("app", "web")])));
    }

    #[test]
    fn rs_bad_selector_is_an_error_not_a_panic() {
        let rs = ReplicaSet {
            spec: ReplicaSetSpec {
                selector: meta::LabelSelector {
                    match_expressions: Some(vec![meta::LabelSelectorRequirement {
                        key: "k".into(),
                        operator: "Bogus".into(),
                        values: None,
                    }]),
                    match_labels: None,
                },
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(rs.spec_view().map_err(|e| e.reason), Err("InvalidSelector"));
        assert_eq!(
            ReplicationController::default()
                .spec_view()
                .map_err(|e| e.reason),
            Err("InvalidSpec")
        );
    }

    #[test]
    fn rc_status_round_trips() {
        let status = ReplicaSetStatus {
            available_replicas: Some(2),
            conditions: Some(vec![ReplicaSetCondition {
                type_: Some("ReplicaFailure".into()),
                status: Some("True".into()),
                reason: Some("FailedCreate".into()),
                message: Some("quota".into()),
                last_transition_time: None,
            }]),
            fully_labeled_replicas: Some(3),
            observed_generation: Some(4),
            ready_replicas: Some(2),
            replicas: 3,
            terminating_replicas: None,
        };
        let mut rc = ReplicationController::default();
        rc.set_status(status.clone());
        assert_eq!(rc.status_view(), status);
    }
}
