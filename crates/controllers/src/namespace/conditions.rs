//! The namespace deletion conditions.
//!
//! Upstream `pkg/controller/namespace/deletion/status_condition_utils.go`: each pass of
//! the deleter collects what failed, and [`ConditionUpdater::update`] writes all five
//! condition types, `True` with the failure's reason and message, or `False` with the
//! upstream "everything is fine" reason and message. A condition's
//! `lastTransitionTime` only changes when its status does.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NamespaceCondition, NamespaceStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use coxswain_runtime::discovery::Gvr;

/// `NamespaceDeletionDiscoveryFailure`.
pub const DISCOVERY_FAILURE: &str = "NamespaceDeletionDiscoveryFailure";
/// `NamespaceDeletionGroupVersionParsingFailure`.
pub const GV_PARSING_FAILURE: &str = "NamespaceDeletionGroupVersionParsingFailure";
/// `NamespaceDeletionContentFailure`.
pub const CONTENT_FAILURE: &str = "NamespaceDeletionContentFailure";
/// `NamespaceContentRemaining`.
pub const CONTENT_REMAINING: &str = "NamespaceContentRemaining";
/// `NamespaceFinalizersRemaining`.
pub const FINALIZERS_REMAINING: &str = "NamespaceFinalizersRemaining";

/// The condition types the namespace controller maintains, in upstream order.
pub const CONDITION_TYPES: [&str; 5] = [
    DISCOVERY_FAILURE,
    GV_PARSING_FAILURE,
    CONTENT_FAILURE,
    CONTENT_REMAINING,
    FINALIZERS_REMAINING,
];

/// Reason and message of a condition type when nothing is wrong.
fn ok(t: &str) -> (&'static str, &'static str) {
    match t {
        DISCOVERY_FAILURE => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        GV_PARSING_FAILURE => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        CONTENT_FAILURE => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        _ => ("ContentRemoved", "All content successfully removed"),
    }
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

fn condition(t: &str, status: &str, reason: &str, message: String) -> NamespaceCondition {
    NamespaceCondition {
        type_: t.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: Some(now()),
    }
}

/// Collects one deletion pass's failures and turns them into conditions.
#[derive(Debug, Default)]
pub struct ConditionUpdater {
    new_conditions: Vec<NamespaceCondition>,
    delete_content_errors: Vec<String>,
}

impl ConditionUpdater {
    /// Discovery failed; `failed_groups` is the number of group versions that failed when
    /// it was partial (upstream `ErrGroupDiscoveryFailed`), `None` for a total failure.
    pub fn discovery_failed(&mut self, err: &str, failed_groups: Option<usize>) {
        let message = match failed_groups {
            Some(n) => format!("Discovery failed for some groups, {n} failing: {err}"),
            None => err.to_string(),
        };
        self.new_conditions.push(condition(
            DISCOVERY_FAILURE,
            "True",
            "DiscoveryFailed",
            message,
        ));
    }

    /// A group version did not parse.
    pub fn group_version_failed(&mut self, err: &str) {
        self.new_conditions.push(condition(
            GV_PARSING_FAILURE,
            "True",
            "GroupVersionParsingFailed",
            err.to_string(),
        ));
    }

    /// Deleting the content of one resource failed.
    pub fn delete_content_failed(&mut self, err: String) {
        self.delete_content_errors.push(err);
    }

    /// What remains: instances per resource and per finalizer (upstream
    /// `ProcessContentTotals`).
    pub fn content_totals(
        &mut self,
        remaining: &BTreeMap<Gvr, usize>,
        finalizers: &BTreeMap<String, usize>,
    ) {
        if !remaining.is_empty() {
            let mut parts: Vec<String> = remaining
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(g, n)| format!("{}.{} has {n} resource instances", g.resource, g.group))
                .collect();
            parts.sort();
            self.new_conditions.push(condition(
                CONTENT_REMAINING,
                "True",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", parts.join(", ")),
            ));
        }
        if !finalizers.is_empty() {
            let mut parts: Vec<String> = finalizers
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            parts.sort();
            self.new_conditions.push(condition(
                FINALIZERS_REMAINING,
                "True",
                "SomeFinalizerRemain",
                format!("Some finalizers are remaining: {}", parts.join(", ")),
            ));
        }
    }

    /// Write the conditions into `status`; whether anything changed.
    pub fn update(mut self, status: &mut NamespaceStatus) -> bool {
        if !self
            .new_conditions
            .iter()
            .any(|c| c.type_ == CONTENT_FAILURE)
            && !self.delete_content_errors.is_empty()
        {
            let mut msgs = std::mem::take(&mut self.delete_content_errors);
            msgs.sort();
            self.new_conditions.push(condition(
                CONTENT_FAILURE,
                "True",
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    msgs.len(),
                    msgs.join(", ")
                ),
            ));
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let mut changed = false;
        for t in CONDITION_TYPES {
            let new = self
                .new_conditions
                .iter()
                .find(|c| c.type_ == t)
                .cloned()
                .unwrap_or_else(|| {
                    let (reason, message) = ok(t);
                    condition(t, "False", reason, message.to_string())
                });
            match conditions.iter_mut().find(|c| c.type_ == t) {
                None => {
                    conditions.push(new);
                    changed = true;
                }
                Some(old)
                    if old.status != new.status
                        || old.message != new.message
                        || old.reason != new.reason =>
                {
                    if old.status != new.status {
                        old.last_transition_time = Some(now());
                    }
                    old.status = new.status;
                    old.reason = new.reason;
                    old.message = new.message;
                    changed = true;
                }
                Some(_) => {}
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(s: &'a NamespaceStatus, t: &str) -> &'a NamespaceCondition {
        s.conditions
            .as_ref()
            .and_then(|c| c.iter().find(|c| c.type_ == t))
            .expect("condition present")
    }

    #[test]
    fn all_types_are_written_ok_when_nothing_failed() {
        let mut status = NamespaceStatus::default();
        assert!(ConditionUpdater::default().update(&mut status));
        let types: Vec<&str> = status
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(types, CONDITION_TYPES);
        let c = get(&status, CONTENT_FAILURE);
        assert_eq!(c.status, "False");
        assert_eq!(c.reason.as_deref(), Some("ContentDeleted"));
        assert_eq!(
            c.message.as_deref(),
            Some("All content successfully deleted, may be waiting on finalization")
        );
        assert_eq!(
            get(&status, FINALIZERS_REMAINING).reason.as_deref(),
            Some("ContentRemoved")
        );
        // the same again changes nothing
        assert!(!ConditionUpdater::default().update(&mut status));
    }

    #[test]
    fn failures_become_true_conditions_with_upstream_messages() {
        let mut status = NamespaceStatus::default();
        let mut u = ConditionUpdater::default();
        u.discovery_failed(
            "unable to retrieve the complete list of server APIs: a/v1: boom",
            Some(1),
        );
        u.group_version_failed("unexpected GroupVersion string: a/b/c");
        u.delete_content_failed("zeta failed".into());
        u.delete_content_failed("alpha failed".into());
        let gvr = |g: &str, r: &str| Gvr {
            group: g.into(),
            version: "v1".into(),
            resource: r.into(),
        };
        let remaining = BTreeMap::from([
            (gvr("", "configmaps"), 2),
            (gvr("apps", "deployments"), 1),
            (gvr("", "secrets"), 0),
        ]);
        let finalizers = BTreeMap::from([("example.com/hold".to_string(), 2)]);
        u.content_totals(&remaining, &finalizers);
        assert!(u.update(&mut status));
        let d = get(&status, DISCOVERY_FAILURE);
        assert_eq!(
            (d.status.as_str(), d.reason.as_deref()),
            ("True", Some("DiscoveryFailed"))
        );
        assert_eq!(
            d.message.as_deref(),
            Some("Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: a/v1: boom")
        );
        assert_eq!(
            get(&status, GV_PARSING_FAILURE).reason.as_deref(),
            Some("GroupVersionParsingFailed")
        );
        let c = get(&status, CONTENT_FAILURE);
        assert_eq!(c.reason.as_deref(), Some("ContentDeletionFailed"));
        assert_eq!(
            c.message.as_deref(),
            Some("Failed to delete all resource types, 2 remaining: alpha failed, zeta failed")
        );
        let r = get(&status, CONTENT_REMAINING);
        assert_eq!(r.reason.as_deref(), Some("SomeResourcesRemain"));
        assert_eq!(
            r.message.as_deref(),
            Some("Some resources are remaining: configmaps. has 2 resource instances, deployments.apps has 1 resource instances")
        );
        let f = get(&status, FINALIZERS_REMAINING);
        assert_eq!(f.reason.as_deref(), Some("SomeFinalizerRemain"));
        assert_eq!(
            f.message.as_deref(),
            Some("Some finalizers are remaining: example.com/hold in 2 resource instances")
        );
        // recovery flips them back to False, with a new transition time
        let before = get(&status, CONTENT_REMAINING).last_transition_time.clone();
        assert!(ConditionUpdater::default().update(&mut status));
        let after = get(&status, CONTENT_REMAINING);
        assert_eq!(after.status, "False");
        assert_eq!(
            after.message.as_deref(),
            Some("All content successfully removed")
        );
        assert!(after.last_transition_time >= before);
    }

    #[test]
    fn transition_time_is_kept_when_only_the_message_changes() {
        let mut status = NamespaceStatus::default();
        let mut u = ConditionUpdater::default();
        u.content_totals(&BTreeMap::new(), &BTreeMap::from([("a".to_string(), 1)]));
        u.update(&mut status);
        let first = get(&status, FINALIZERS_REMAINING)
            .last_transition_time
            .clone();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut u = ConditionUpdater::default();
        u.content_totals(&BTreeMap::new(), &BTreeMap::from([("a".to_string(), 2)]));
        assert!(u.update(&mut status));
        let c = get(&status, FINALIZERS_REMAINING);
        assert_eq!(
            c.message.as_deref(),
            Some("Some finalizers are remaining: a in 2 resource instances")
        );
        assert_eq!(c.last_transition_time, first);
    }
}
