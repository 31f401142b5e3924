//! The cluster role aggregation controller: aggregated ClusterRoles hold the union of the
//! rules of the ClusterRoles they select.
//!
//! After kube-controller-manager's `clusterrole-aggregation-controller`
//! (kubernetes/kubernetes
//! `pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go`): for a
//! ClusterRole with an `aggregationRule`, each of its `clusterRoleSelectors` in turn
//! selects ClusterRoles (itself excluded), taken in name order; their rules are appended
//! in order, skipping a rule equal to one already taken (nil and empty lists are equal,
//! as `equality.Semantic`). When the result differs from the role's rules, the role is
//! replaced with the new rules on its resourceVersion; a conflict is retried on a fresh
//! copy (client-go's `RetryOnConflict` steps). Upstream writes with server-side apply
//! (field manager `clusterrole-aggregation-controller`, falling back to an update); here
//! the update is the only path.
//!
//! Upstream enqueues every aggregated role on any ClusterRole change; here a change
//! enqueues the aggregated roles whose selectors match the changed role's old or new
//! labels (and an aggregated role itself when it changes), which reaches the same roles
//! that can be affected. Five workers, as upstream.

use crate::clientbuilder::ClusterAccess;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::registry::{ControllerContext, Descriptor};
use apimachinery::selector::{LabelSelector, SelectorError};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Change;
use coxswain_runtime::client::{Client, ListOptions};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::handler::EventHandler;
use coxswain_runtime::manager::Runnable;
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

/// Canonical controller name (upstream `names.ClusterRoleAggregationController`).
pub const NAME: &str = "clusterrole-aggregation-controller";

/// Update attempts on conflict (client-go `retry.DefaultRetry`: 5 steps of 10 ms).
const CONFLICT_ATTEMPTS: usize = 5;

/// The controller's service account with `--use-service-account-credentials`
/// (upstream `ClientOrDie("clusterrole-aggregation-controller")`).
pub const SERVICE_ACCOUNT: &str = "clusterrole-aggregation-controller";

/// The registry entry: `clusterrole-aggregation-controller`, alias
/// `clusterrole-aggregation`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["clusterrole-aggregation"],
        disabled_by_default: false,
        constructor: construct,
    }
}

fn construct(ctx: &ControllerContext<'_>) -> Result<Option<Box<dyn Runnable>>, String> {
    Ok(Some(Box::new(new_controller(
        &ctx.clients(SERVICE_ACCOUNT)?,
    ))))
}

/// Builds the controller on the manager's shared ClusterRole informer.
pub fn new_controller(manager: &impl ClusterAccess) -> Controller<AggregationReconciler> {
    let client = manager.client();
    ControllerBuilder::new(manager.cache())
        .named(NAME)
        .for_::<ClusterRole>()
        // an aggregated role syncs when it changes itself ...
        .with_event_filter(|c: &Change<ClusterRole>| match c {
            Change::Added(r) | Change::Deleted(r) => r.aggregation_rule.is_some(),
            Change::Updated { old, new } => {
                old.aggregation_rule.is_some() || new.aggregation_rule.is_some()
            }
        })
        // ... and when a role it selects (or selected) changes
        .watches_with::<ClusterRole>(EnqueueAggregators::default(), Vec::new())
        .with_options(ControllerOptions {
            max_concurrent_reconciles: 5,
            ..ControllerOptions::default()
        })
        .build(AggregationReconciler {
            fresh: client.clone().uncached::<ClusterRole>(),
            client,
        })
}

/// The compiled selectors of an aggregated role (invalid ones are left out: the role's
/// own sync reports them).
fn selectors_of(role: &ClusterRole) -> Option<Vec<LabelSelector>> {
    let rule = role.aggregation_rule.as_ref()?;
    Some(
        rule.cluster_role_selectors
            .iter()
            .flatten()
            .filter_map(|s| LabelSelector::from_meta(s).ok())
            .collect(),
    )
}

/// Maps a ClusterRole change to the aggregated roles whose selectors match the changed
/// role's labels (before or after). It learns the aggregated roles from the changes it
/// sees, which include every cached role as added when it is registered.
#[derive(Default)]
pub struct EnqueueAggregators {
    aggregators: Mutex<HashMap<String, Vec<LabelSelector>>>,
}

impl EventHandler<ClusterRole> for EnqueueAggregators {
    fn keys(&self, change: &Change<ClusterRole>) -> Vec<ObjectKey> {
        let (old, new) = match change {
            Change::Added(r) => (None, Some(r)),
            Change::Deleted(r) => (Some(r), None),
            Change::Updated { old, new } => (Some(old), Some(new)),
        };
        let Some(name) = new.or(old).and_then(|r| r.metadata.name.clone()) else {
            return Vec::new();
        };
        let mut aggregators = self.aggregators.lock().unwrap_or_else(|e| e.into_inner());
        match new.and_then(|r| selectors_of(r)) {
            Some(selectors) => {
                aggregators.insert(name.clone(), selectors);
            }
            None => {
                aggregators.remove(&name);
            }
        }
        let empty = BTreeMap::new();
        let label_sets: Vec<&BTreeMap<String, String>> = old
            .into_iter()
            .chain(new)
            .map(|r| r.metadata.labels.as_ref().unwrap_or(&empty))
            .collect();
        let mut keys: Vec<ObjectKey> = aggregators
            .iter()
            .filter(|(agg, selectors)| {
                **agg != name
                    && selectors
                        .iter()
                        .any(|s| label_sets.iter().any(|l| s.matches_labels(l)))
            })
            .map(|(agg, _)| ObjectKey::cluster(agg))
            .collect();
        keys.sort();
        keys
    }
}

/// A rule with nil and empty lists alike, for comparison and deduplication.
type RuleKey = [Vec<String>; 5];

fn rule_key(r: &PolicyRule) -> RuleKey {
    let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
    [
        list(&r.api_groups),
        list(&r.resources),
        list(&r.resource_names),
        list(&r.non_resource_urls),
        r.verbs.clone(),
    ]
}

/// Whether two rule lists are equal as `equality.Semantic.DeepEqual` says (order
/// matters; a missing list equals an empty one).
pub fn same_rules(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| rule_key(x) == rule_key(y))
}

/// The rules `role` aggregates from `all` (upstream `syncClusterRole`): for each
/// selector in order, the matching roles other than `role` by name, their rules in
/// order, each rule once. A role without `aggregationRule` aggregates nothing.
pub fn aggregate(
    role: &ClusterRole,
    all: &[Arc<ClusterRole>],
) -> Result<Vec<PolicyRule>, SelectorError> {
    let mut rules = Vec::new();
    let Some(rule) = &role.aggregation_rule else {
        return Ok(rules);
    };
    let me = role.metadata.name.as_deref().unwrap_or("");
    let empty = BTreeMap::new();
    let mut seen: HashSet<RuleKey> = HashSet::new();
    for selector in rule.cluster_role_selectors.iter().flatten() {
        let selector = LabelSelector::from_meta(selector)?;
        let mut matched: Vec<&ClusterRole> = all
            .iter()
            .map(Arc::as_ref)
            .filter(|r| selector.matches_labels(r.metadata.labels.as_ref().unwrap_or(&empty)))
            .collect();
        matched.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        for other in matched {
            if other.metadata.name.as_deref().unwrap_or("") == me {
                continue;
            }
            for r in other.rules.iter().flatten() {
                if seen.insert(rule_key(r)) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok(rules)
}

/// Reconciles one aggregated ClusterRole.
pub struct AggregationReconciler {
    /// cached reads, writes to the server
    client: Client,
    /// ClusterRoles read from the server (after a conflict)
    fresh: Client,
}

impl AggregationReconciler {
    /// The rules `role` should hold, `None` when it holds them (or aggregates nothing).
    async fn wanted(&self, role: &ClusterRole) -> Result<Option<Vec<PolicyRule>>, ReconcileError> {
        if role.aggregation_rule.is_none() {
            return Ok(None);
        }
        let all = self
            .client
            .list::<ClusterRole>(&ListOptions::default())
            .await?;
        // a selector the server accepted but we cannot compile will not improve by retrying
        let rules = aggregate(role, &all).map_err(ReconcileError::terminal)?;
        let current = role.rules.as_deref().unwrap_or_default();
        Ok((!same_rules(&rules, current)).then_some(rules))
    }
}

impl Reconciler for AggregationReconciler {
    async fn reconcile(&self, ctx: Context, request: ObjectKey) -> ReconcileResult {
        let Some(cached) = self.client.get::<ClusterRole>(&request).await? else {
            return Ok(Action::Done);
        };
        let mut role = (*cached).clone();
        for attempt in 1..=CONFLICT_ATTEMPTS {
            let Some(rules) = self.wanted(&role).await? else {
                return Ok(Action::Done);
            };
            role.rules = Some(rules);
            match self.client.update(&role).await {
                Ok(_) => {
                    tracing::debug!(clusterrole = %request, "aggregated rules updated");
                    return Ok(Action::Done);
                }
                Err(kube::Error::Api(s)) if s.code == 409 && attempt < CONFLICT_ATTEMPTS => {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                        _ = ctx.cancel.cancelled() => return Ok(Action::Requeue),
                    }
                    match self.fresh.get::<ClusterRole>(&request).await? {
                        Some(latest) => role = (*latest).clone(),
                        None => return Ok(Action::Done),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ReconcileError::msg(format!(
            "updating {request}: still conflicting after {CONFLICT_ATTEMPTS} attempts"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as MetaSelector, ObjectMeta,
    };

    fn rule(verb: &str, resource: &str) -> PolicyRule {
        PolicyRule {
            verbs: vec![verb.into()],
            resources: Some(vec![resource.into()]),
            ..PolicyRule::default()
        }
    }
    fn hammer() -> Vec<PolicyRule> {
        vec![rule("hammer", "nails"), rule("hammer", "wedges")]
    }
    fn chisel() -> Vec<PolicyRule> {
        vec![rule("chisel", "mortises")]
    }
    fn saw() -> Vec<PolicyRule> {
        vec![rule("saw", "boards")]
    }
    fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> Arc<ClusterRole> {
        Arc::new(ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(rules),
            ..ClusterRole::default()
        })
    }
    fn combined(selectors: &[(&str, &str)], rules: Vec<PolicyRule>) -> Arc<ClusterRole> {
        let mut r = (*role("combined", &[], rules)).clone();
        r.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(
                selectors
                    .iter()
                    .map(|(k, v)| MetaSelector {
                        match_labels: Some(BTreeMap::from([(k.to_string(), v.to_string())])),
                        match_expressions: None,
                    })
                    .collect(),
            ),
        });
        Arc::new(r)
    }

    /// The port of upstream TestSyncClusterRole: (name, roles, expected rules of
    /// `combined`, or `None` for "no update").
    #[test]
    fn sync_cluster_role_table() {
        let cat = |v: Vec<Vec<PolicyRule>>| v.concat();
        type Case = (&'static str, Vec<Arc<ClusterRole>>, Option<Vec<PolicyRule>>);
        let cases: Vec<Case> = vec![
            (
                "remove dead rules",
                vec![
                    role("hammer", &[("foo", "bar")], hammer()),
                    combined(&[("foo", "bar")], saw()),
                ],
                Some(hammer()),
            ),
            (
                "strip rules",
                vec![
                    role("hammer", &[("foo", "not-bar")], hammer()),
                    combined(&[("foo", "bar")], hammer()),
                ],
                Some(vec![]),
            ),
            (
                "select properly and put in order",
                vec![
                    role("hammer", &[("foo", "bar")], hammer()),
                    role("chisel", &[("foo", "bar")], chisel()),
                    role("saw", &[("foo", "not-bar")], saw()),
                    combined(&[("foo", "bar")], vec![]),
                ],
                Some(cat(vec![chisel(), hammer()])),
            ),
            (
                "select properly with multiple selectors",
                vec![
                    role("hammer", &[("foo", "bar")], hammer()),
                    role("chisel", &[("foo", "bar")], chisel()),
                    role("saw", &[("foo", "not-bar")], saw()),
                    combined(&[("foo", "bar"), ("foo", "not-bar")], vec![]),
                ],
                Some(cat(vec![chisel(), hammer(), saw()])),
            ),
            (
                "select properly remove duplicates",
                vec![
                    role("hammer", &[("foo", "bar")], hammer()),
                    role("chisel", &[("foo", "bar")], chisel()),
                    role("saw", &[("foo", "bar")], saw()),
                    role("other-saw", &[("foo", "not-bar")], saw()),
                    combined(&[("foo", "bar"), ("foo", "not-bar")], vec![]),
                ],
                Some(cat(vec![chisel(), hammer(), saw()])),
            ),
            (
                "no diff skip",
                vec![
                    role("hammer", &[("foo", "bar")], hammer()),
                    combined(&[("foo", "bar")], hammer()),
                ],
                None,
            ),
        ];
        for (name, roles, expected) in cases {
            let target = roles
                .iter()
                .find(|r| r.metadata.name.as_deref() == Some("combined"))
                .cloned()
                .unwrap_or_else(|| panic!("{name}: no combined role"));
            let got = aggregate(&target, &roles).unwrap_or_else(|e| panic!("{name}: {e}"));
            let changed = !same_rules(&got, target.rules.as_deref().unwrap_or_default());
            match expected {
                Some(want) => {
                    assert!(changed, "{name}: expected an update");
                    assert_eq!(got, want, "{name}");
                }
                None => assert!(!changed, "{name}: expected no update, got {got:?}"),
            }
        }
    }

    #[test]
    fn semantic_equality_and_self_exclusion() {
        let mut empty_lists = rule("get", "pods");
        empty_lists.api_groups = Some(vec![]);
        assert!(same_rules(&[rule("get", "pods")], &[empty_lists.clone()]));
        assert!(!same_rules(&[rule("get", "pods")], &[rule("list", "pods")]));
        // a rule equal up to nil/empty lists is a duplicate
        let a = role("a", &[("x", "y")], vec![rule("get", "pods")]);
        let b = role("b", &[("x", "y")], vec![empty_lists]);
        // the aggregated role matches its own selector but is not its own source
        let mut me = (*combined(&[("x", "y")], vec![rule("own", "thing")])).clone();
        me.metadata.labels = Some(BTreeMap::from([("x".into(), "y".into())]));
        let me = Arc::new(me);
        let got = aggregate(&me, &[a, b, me.clone()]).unwrap_or_default();
        assert_eq!(got, vec![rule("get", "pods")]);
    }

    #[test]
    fn aggregators_are_woken_by_roles_they_select_before_or_after() {
        let h = EnqueueAggregators::default();
        assert!(h
            .keys(&Change::Added(combined(&[("foo", "bar")], vec![])))
            .is_empty());
        let wake = vec![ObjectKey::cluster("combined")];
        assert_eq!(
            h.keys(&Change::Added(role("hammer", &[("foo", "bar")], hammer()))),
            wake
        );
        assert!(h
            .keys(&Change::Added(role("saw", &[("foo", "nope")], saw())))
            .is_empty());
        // relabelled away: the old labels still wake it
        let moved = Change::Updated {
            old: role("hammer", &[("foo", "bar")], hammer()),
            new: role("hammer", &[("foo", "other")], hammer()),
        };
        assert_eq!(h.keys(&moved), wake);
        assert_eq!(
            h.keys(&Change::Deleted(role(
                "hammer",
                &[("foo", "bar")],
                hammer()
            ))),
            wake
        );
        // once the aggregated role is gone nothing is woken
        h.keys(&Change::Deleted(combined(&[("foo", "bar")], vec![])));
        assert!(h
            .keys(&Change::Added(role("chisel", &[("foo", "bar")], chisel())))
            .is_empty());
    }

    #[test]
    fn descriptor_names_follow_upstream() {
        let d = descriptor();
        assert_eq!(d.name, "clusterrole-aggregation-controller");
        assert_eq!(d.aliases, ["clusterrole-aggregation"]);
        assert!(!d.disabled_by_default);
    }
}
