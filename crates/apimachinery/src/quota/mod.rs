//! Resource quota: what objects use, which quotas they match, and the usage of a
//! namespace (upstream `k8s.io/apiserver/pkg/quota/v1` and the core evaluators of
//! `pkg/quota/v1/evaluator/core`).
//!
//! The API server's ResourceQuota admission and the resourcequota controller both count
//! with these evaluators, so a quota's `status.used` means the same to both. Objects are
//! the JSON the API serves (`serde_json::Value`), so the controllers can pass typed
//! objects serialised and the API server its stored values.
//!
//! ```
//! use coxswain_apimachinery::quota::{Evaluator, resources};
//! use serde_json::json;
//! let pod = json!({"spec": {"containers": [{"name": "app",
//!     "resources": {"requests": {"cpu": "100m"}}}]}});
//! let usage = Evaluator::Pods.usage(&pod, chrono::Utc::now());
//! assert_eq!(resources::pretty_print(&usage), "count/pods=1,cpu=100m,pods=1,requests.cpu=100m");
//! ```

use chrono::{DateTime, Utc};
use serde_json::Value;

pub mod pods;
pub mod pvc;
pub mod resources;
pub mod services;

use resources::ResourceList;

/// One requirement of a quota's scope: a `spec.scopes` entry (operator `Exists`) or a
/// `spec.scopeSelector.matchExpressions` entry (`ScopedResourceSelectorRequirement`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeSelector {
    /// The scope (`Terminating`, `BestEffort`, `PriorityClass`, ...).
    pub scope_name: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In`/`NotIn`.
    pub values: Vec<String>,
}

impl ScopeSelector {
    /// A scope as `spec.scopes` names it (operator `Exists`).
    pub fn exists(scope: &str) -> ScopeSelector {
        ScopeSelector {
            scope_name: scope.to_string(),
            operator: "Exists".into(),
            values: Vec::new(),
        }
    }

    /// Whether the selector, as a label selector over `{scope_name: value}` (no label
    /// when `value` is `None`), matches (`ScopedResourceSelectorRequirementsAsSelector`).
    pub fn matches_value(&self, value: Option<&str>) -> Result<bool, String> {
        let bad = |why: &str| {
            Err(format!(
                "failed to parse and convert selector: {why} for operator {}",
                self.operator
            ))
        };
        match self.operator.as_str() {
            "In" | "NotIn" if self.values.is_empty() => bad("values must be specified"),
            "Exists" | "DoesNotExist" if !self.values.is_empty() => {
                bad("values must not be specified")
            }
            "In" => Ok(value.is_some_and(|v| self.values.iter().any(|x| x == v))),
            "NotIn" => Ok(!value.is_some_and(|v| self.values.iter().any(|x| x == v))),
            "Exists" => Ok(value.is_some()),
            "DoesNotExist" => Ok(value.is_none()),
            other => Err(format!(
                "failed to parse and convert selector: {other:?} is not a valid scope selector operator"
            )),
        }
    }
}

/// What a ResourceQuota says, as quota needs it.
#[derive(Clone, Debug, Default)]
pub struct Quota {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
    /// `spec.hard`.
    pub spec_hard: ResourceList,
    /// `spec.scopes` (as `Exists`) followed by `spec.scopeSelector.matchExpressions`
    /// (upstream `getScopeSelectorsFromQuota`).
    pub selectors: Vec<ScopeSelector>,
    /// `spec.scopes` as written.
    pub scopes: Vec<String>,
    /// `status.hard`.
    pub status_hard: ResourceList,
    /// `status.used`.
    pub status_used: ResourceList,
}

impl Quota {
    /// Read a ResourceQuota object.
    pub fn from_json(v: &Value) -> Quota {
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let scopes: Vec<String> = v
            .pointer("/spec/scopes")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut selectors: Vec<ScopeSelector> =
            scopes.iter().map(|s| ScopeSelector::exists(s)).collect();
        for e in v
            .pointer("/spec/scopeSelector/matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            selectors.push(ScopeSelector {
                scope_name: e["scopeName"].as_str().unwrap_or("").to_string(),
                operator: e["operator"].as_str().unwrap_or("").to_string(),
                values: e["values"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        Quota {
            name: s("/metadata/name"),
            namespace: s("/metadata/namespace"),
            resource_version: s("/metadata/resourceVersion"),
            spec_hard: resources::from_json(v.pointer("/spec/hard")),
            selectors,
            scopes,
            status_hard: resources::from_json(v.pointer("/status/hard")),
            status_used: resources::from_json(v.pointer("/status/used")),
        }
    }
}

/// The API operation an admission request performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update (also patches and applies of existing objects).
    Update,
}

/// Group-resources quota never counts (upstream `install.ignoredResources`): virtual
/// resources that are never stored, and events.
pub const IGNORED_RESOURCES: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("", "events"),
    ("events.k8s.io", "events"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

/// Whether quota ignores a group-resource.
pub fn is_ignored(group: &str, resource: &str) -> bool {
    IGNORED_RESOURCES.contains(&(group, resource))
}

/// `count/<resource>[.<group>]`, the object-count name of a group-resource
/// (`generic.ObjectCountQuotaResourceNameFor`).
pub fn object_count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The core resources that the legacy object-count names (`configmaps`, `secrets`, ...)
/// also count.
const LEGACY_COUNTED: &[&str] = &[
    "configmaps",
    "resourcequotas",
    "replicationcontrollers",
    "secrets",
];

/// Knows how one group-resource uses quota (`quota.Evaluator`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evaluator {
    /// `pods`: object count, compute resources, hugepages, extended resources.
    Pods,
    /// `services`: object count, load balancers and node ports.
    Services,
    /// `persistentvolumeclaims`: object count and storage, also per storage class.
    PersistentVolumeClaims,
    /// Any other group-resource: `count/<resource>.<group>` (and the legacy bare name
    /// for configmaps, resourcequotas, replicationcontrollers and secrets).
    ObjectCount {
        /// API group (empty for core).
        group: String,
        /// Resource (plural).
        resource: String,
    },
}

impl Evaluator {
    /// The evaluator of a group-resource; `None` for the ignored ones.
    pub fn for_resource(group: &str, resource: &str) -> Option<Evaluator> {
        if is_ignored(group, resource) {
            return None;
        }
        Some(match (group, resource) {
            ("", "pods") => Evaluator::Pods,
            ("", "services") => Evaluator::Services,
            ("", "persistentvolumeclaims") => Evaluator::PersistentVolumeClaims,
            _ => Evaluator::ObjectCount {
                group: group.to_string(),
                resource: resource.to_string(),
            },
        })
    }

    /// The evaluators registered at start (`core.NewEvaluators`): pods, services,
    /// claims and the four legacy object counts.
    pub fn builtin() -> Vec<Evaluator> {
        let mut out = vec![
            Evaluator::Pods,
            Evaluator::Services,
            Evaluator::PersistentVolumeClaims,
        ];
        out.extend(LEGACY_COUNTED.iter().map(|r| Evaluator::ObjectCount {
            group: String::new(),
            resource: r.to_string(),
        }));
        out
    }

    /// The group-resource it counts.
    pub fn group_resource(&self) -> (&str, &str) {
        match self {
            Evaluator::Pods => ("", "pods"),
            Evaluator::Services => ("", "services"),
            Evaluator::PersistentVolumeClaims => ("", "persistentvolumeclaims"),
            Evaluator::ObjectCount { group, resource } => (group, resource),
        }
    }

    fn object_count_names(&self) -> Vec<String> {
        let (group, resource) = self.group_resource();
        let mut names = vec![object_count_name(group, resource)];
        if group.is_empty() && LEGACY_COUNTED.contains(&resource) {
            names.push(resource.to_string());
        }
        names
    }

    /// Of `input`, the resource names this evaluator tracks (`MatchingResources`).
    pub fn matching_resources(&self, input: &[String]) -> Vec<String> {
        match self {
            Evaluator::Pods => pods::matching_resources(input),
            Evaluator::Services => services::matching_resources(input),
            Evaluator::PersistentVolumeClaims => pvc::matching_resources(input),
            Evaluator::ObjectCount { .. } => {
                resources::intersection(input, &self.object_count_names())
            }
        }
    }

    /// What the object uses (`Usage`); `now` decides whether a deleted pod's grace
    /// period has passed.
    pub fn usage(&self, obj: &Value, now: DateTime<Utc>) -> ResourceList {
        match self {
            Evaluator::Pods => pods::usage(obj, now),
            Evaluator::Services => services::usage(obj),
            Evaluator::PersistentVolumeClaims => pvc::usage(obj),
            Evaluator::ObjectCount { .. } => {
                let one =
                    crate::quantity::Quantity::from_value(1, crate::quantity::Format::DecimalSi);
                self.object_count_names()
                    .into_iter()
                    .map(|n| (n, one))
                    .collect()
            }
        }
    }

    /// Whether the object carries what a quota tracking `required` needs
    /// (`Constraints`): pods must state cpu and memory when those are quota'd.
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        match self {
            Evaluator::Pods => pods::constraints(required, obj),
            _ => Ok(()),
        }
    }

    /// Whether the object matches one scope requirement.
    pub fn matches_scope(&self, selector: &ScopeSelector, obj: &Value) -> Result<bool, String> {
        match self {
            Evaluator::Pods => pods::matches_scope(selector, obj),
            Evaluator::PersistentVolumeClaims => pvc::matches_scope(selector, obj),
            // MatchesNoScopeFunc
            _ => Ok(false),
        }
    }

    /// Whether the quota applies to the object (`generic.Matches`): it tracks one of
    /// this evaluator's resources in `status.hard`, and the object matches every scope.
    pub fn matches(&self, quota: &Quota, obj: &Value) -> Result<bool, String> {
        let hard = resources::resource_names(&quota.status_hard);
        if self.matching_resources(&hard).is_empty() {
            return Ok(false);
        }
        for s in &quota.selectors {
            if !self.matches_scope(s, obj)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether admission checks this request (`Handles`); `old` is the stored object
    /// of an update.
    pub fn handles(
        &self,
        op: Operation,
        subresource: Option<&str>,
        new: &Value,
        old: Option<&Value>,
    ) -> bool {
        match self {
            Evaluator::Pods => match subresource {
                None => op == Operation::Create,
                Some("resize") => op == Operation::Update,
                Some(_) => false,
            },
            Evaluator::Services => true,
            Evaluator::PersistentVolumeClaims => match (op, subresource) {
                (Operation::Create, _) => true,
                (Operation::Update, None) => true,
                (Operation::Update, Some("status")) => {
                    old.is_some_and(|old| pvc::requires_quota_replenish(new, old))
                }
                _ => false,
            },
            Evaluator::ObjectCount { .. } => op == Operation::Create,
        }
    }

    /// The usage of `objects` (a namespace's objects of this resource) that match
    /// every selector, for the resources `resources` (`UsageStats`): every requested
    /// resource starts at zero.
    pub fn usage_stats<'a>(
        &self,
        objects: impl IntoIterator<Item = &'a Value>,
        selectors: &[ScopeSelector],
        requested: &[String],
        now: DateTime<Utc>,
    ) -> Result<ResourceList, String> {
        let mut used: ResourceList = requested
            .iter()
            .map(|r| (r.clone(), crate::quantity::Quantity::zero()))
            .collect();
        if let Evaluator::ObjectCount { .. } = self {
            // the object-count evaluator counts every object, scopes aside
            let count = objects.into_iter().count() as i64;
            for name in self.object_count_names() {
                used.insert(
                    name,
                    crate::quantity::Quantity::from_value(
                        count,
                        crate::quantity::Format::DecimalSi,
                    ),
                );
            }
            return Ok(used);
        }
        'objects: for obj in objects {
            for s in selectors {
                if !self.matches_scope(s, obj)? {
                    continue 'objects;
                }
            }
            used = resources::add(&used, &self.usage(obj, now));
        }
        Ok(used)
    }
}

/// The usage a quota's status should show (`quota.CalculateUsage`): for every
/// evaluator tracking something of `hard`, the usage of the objects `list` gives for
/// its group-resource; only the names of `hard` that some evaluator tracks. Errors of
/// one evaluator leave its resources out and are returned along with the rest.
pub fn calculate_usage<'a, L, I>(
    evaluators: &[Evaluator],
    quota: &Quota,
    mut list: L,
    now: DateTime<Utc>,
) -> (ResourceList, Vec<String>)
where
    L: FnMut(&Evaluator) -> Result<I, String>,
    I: IntoIterator<Item = &'a Value>,
{
    let hard = resources::resource_names(&quota.spec_hard);
    let mut potential = Vec::new();
    for e in evaluators {
        potential.extend(e.matching_resources(&hard));
    }
    let matched = resources::intersection(&hard, &potential);
    let mut errors = Vec::new();
    let mut usage = ResourceList::new();
    for e in evaluators {
        let interesting = e.matching_resources(&matched);
        if interesting.is_empty() {
            continue;
        }
        let stats =
            list(e).and_then(|objs| e.usage_stats(objs, &quota.selectors, &interesting, now));
        match stats {
            Ok(used) => usage = resources::add(&usage, &used),
            Err(err) => errors.push(err),
        }
    }
    (resources::mask(&usage, &matched), errors)
}

pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
