//! Which requests a policy or binding matches (upstream
//! `staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/matching` with the rule
//! matching of `.../webhook/predicates/rules` and the selectors of
//! `.../webhook/predicates/{namespace,object}`): `matchConstraints` / `matchResources`
//! (`resourceRules`, `excludeResourceRules`, `namespaceSelector`, `objectSelector`,
//! `matchPolicy`).

use serde_json::Value;

use crate::admission::{Attributes, Operation};
use apimachinery::selector::LabelSelector;

/// One `NamedRuleWithOperations`.
#[derive(Clone, Debug, Default)]
pub struct Rule {
    /// `resourceNames` (empty: any name).
    pub resource_names: Vec<String>,
    /// `operations` (`CREATE`, ..., `*`).
    pub operations: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `apiVersions`.
    pub api_versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `*`, `*/*`, `*/scale`).
    pub resources: Vec<String>,
    /// `scope` (`*`, `Cluster`, `Namespaced`).
    pub scope: String,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// A rule from its JSON.
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            resource_names: strings(v.get("resourceNames")),
            operations: strings(v.get("operations")),
            api_groups: strings(v.get("apiGroups")),
            api_versions: strings(v.get("apiVersions")),
            resources: strings(v.get("resources")),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
        }
    }

    fn has(list: &[String], v: &str) -> bool {
        list.iter().any(|x| x == "*" || x == v)
    }

    fn resource_matches(&self, resource: &str, sub: Option<&str>) -> bool {
        let full = match sub {
            Some(s) => format!("{resource}/{s}"),
            None => resource.to_string(),
        };
        self.resources.iter().any(|r| {
            if r == "*/*" || *r == full {
                return true;
            }
            match r.split_once('/') {
                None => r == "*" && sub.is_none(),
                Some((res, s)) => match sub {
                    Some(sub) => (res == "*" && s == sub) || (res == resource && s == "*"),
                    None => false,
                },
            }
        })
    }

    /// Whether the rule covers the request; `any_version`: compare group and resource
    /// only (`matchPolicy: Equivalent` finds the request's resource in another version).
    pub fn matches(&self, attrs: &Attributes, any_version: bool) -> bool {
        let op = attrs.operation.as_str();
        if !Rule::has(&self.operations, op) {
            return false;
        }
        let def = attrs.resource;
        if !Rule::has(&self.api_groups, def.group) {
            return false;
        }
        if !any_version && !Rule::has(&self.api_versions, def.version) {
            return false;
        }
        if !self.resource_matches(def.plural, attrs.subresource) {
            return false;
        }
        match self.scope.as_str() {
            "Cluster" if def.namespaced => return false,
            "Namespaced" if !def.namespaced => return false,
            _ => {}
        }
        if !self.resource_names.is_empty() && !self.resource_names.contains(&attrs.name) {
            return false;
        }
        true
    }
}

/// `matchConstraints` of a policy or `matchResources` of a binding, compiled.
#[derive(Clone, Debug)]
pub struct Matcher {
    /// `resourceRules` (empty: every resource).
    pub rules: Vec<Rule>,
    /// `excludeResourceRules`.
    pub exclude: Vec<Rule>,
    /// `namespaceSelector` (`None`: invalid selector, matches nothing).
    pub namespace_selector: Option<LabelSelector>,
    /// `objectSelector`.
    pub object_selector: Option<LabelSelector>,
    /// `matchPolicy: Equivalent` (the default).
    pub equivalent: bool,
}

fn selector(v: Option<&Value>) -> Option<LabelSelector> {
    match v {
        None | Some(Value::Null) => Some(LabelSelector::everything()),
        Some(s) => LabelSelector::from_label_selector_json(s).ok(),
    }
}

impl Matcher {
    /// From a `MatchResources` JSON object (`None`: everything).
    pub fn from_json(v: Option<&Value>) -> Matcher {
        let null = Value::Null;
        let v = v.unwrap_or(&null);
        let rules = |k: &str| -> Vec<Rule> {
            v.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Rule::from_json).collect())
                .unwrap_or_default()
        };
        Matcher {
            rules: rules("resourceRules"),
            exclude: rules("excludeResourceRules"),
            namespace_selector: selector(v.get("namespaceSelector")),
            object_selector: selector(v.get("objectSelector")),
            equivalent: v.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }

    /// Whether the resource rules cover the request (the cheap part of matching).
    pub fn matches_rules(&self, attrs: &Attributes) -> bool {
        if self.exclude.iter().any(|r| r.matches(attrs, false)) {
            return false;
        }
        if self.rules.is_empty() {
            return true;
        }
        self.rules.iter().any(|r| r.matches(attrs, false))
            || (self.equivalent && self.rules.iter().any(|r| r.matches(attrs, true)))
    }

    /// Whether the selectors admit the request: `namespace_labels` are the labels of
    /// the request's namespace (`None` for cluster-scoped resources other than
    /// namespaces, which every namespace selector matches); the object selector
    /// matches if the new or the old object's labels match.
    pub fn matches_selectors(
        &self,
        attrs: &Attributes,
        namespace_labels: Option<&serde_json::Map<String, Value>>,
        obj: Option<&Value>,
    ) -> bool {
        let empty = serde_json::Map::new();
        let Some(ns_sel) = &self.namespace_selector else {
            return false;
        };
        let is_namespace = attrs.resource.group.is_empty() && attrs.resource.plural == "namespaces";
        if is_namespace {
            let own = obj
                .or(attrs.old_object.as_ref())
                .and_then(|o| o.pointer("/metadata/labels"))
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if !ns_sel.matches_map(own) {
                return false;
            }
        } else if attrs.resource.namespaced
            && !ns_sel.is_empty()
            && !ns_sel.matches_map(namespace_labels.unwrap_or(&empty))
        {
            return false;
        }
        let Some(obj_sel) = &self.object_selector else {
            return false;
        };
        if obj_sel.is_empty() {
            return true;
        }
        // an absent object (the new one of a delete, the old one of a create) matches
        // nothing
        let matches = |o: Option<&Value>| {
            o.filter(|o| !o.is_null()).is_some_and(|o| {
                let labels = o
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                obj_sel.matches_map(&labels)
            })
        };
        matches(obj) || matches(attrs.old_object.as_ref())
    }
}

/// Whether requests on this resource are exempt from admission policies and webhooks
/// (upstream `IsExemptAdmissionConfigurationResource`: the webhook configurations and
/// the policies with their bindings).
pub fn exempt(attrs: &Attributes) -> bool {
    attrs.resource.group == "admissionregistration.k8s.io"
}

/// Whether a delete or connect carries no object to mutate.
pub fn has_object(op: Operation) -> bool {
    matches!(op, Operation::Create | Operation::Update)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::catalog::Catalog;
    use serde_json::json;

    fn attrs(group: &str, version: &str, plural: &str, sub: Option<&'static str>) -> Attributes {
        let def = Catalog::builtin()
            .lookup(group, version, plural)
            .expect("resource");
        let mut a = Attributes::new(
            Operation::Create,
            def,
            sub,
            def.namespaced.then(|| "ns".to_string()),
            "x".into(),
        );
        a.user = None;
        a
    }

    fn rule(v: Value) -> Rule {
        Rule::from_json(&v)
    }

    // upstream predicates/rules/rules_test.go: TestGroup, TestVersion, TestOperation,
    // TestResource, TestScope (the cases that apply to one request)
    #[test]
    fn rules() {
        let deploy = attrs("apps", "v1", "deployments", None);
        let scale = attrs("apps", "v1", "deployments", Some("scale"));
        let all = |res: &str| {
            rule(
                json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": [res]}),
            )
        };
        assert!(all("*").matches(&deploy, false));
        assert!(!all("*").matches(&scale, false));
        assert!(all("*/*").matches(&scale, false));
        assert!(all("*/scale").matches(&scale, false));
        assert!(!all("*/status").matches(&scale, false));
        assert!(all("deployments/*").matches(&scale, false));
        assert!(!all("deployments/*").matches(&deploy, false));
        assert!(all("deployments/scale").matches(&scale, false));
        assert!(!all("pods").matches(&deploy, false));
        let r = rule(
            json!({"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}),
        );
        assert!(!r.matches(&deploy, false));
        let r = rule(
            json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["deployments"]}),
        );
        assert!(!r.matches(&deploy, false));
        let r = rule(
            json!({"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1beta1"], "resources": ["deployments"]}),
        );
        assert!(!r.matches(&deploy, false));
        assert!(r.matches(&deploy, true), "Equivalent ignores the version");
        let mut cluster = all("*");
        cluster.scope = "Cluster".into();
        assert!(!cluster.matches(&deploy, false));
        assert!(cluster.matches(&attrs("", "v1", "namespaces", None), false));
        let mut namespaced = all("*");
        namespaced.scope = "Namespaced".into();
        assert!(namespaced.matches(&deploy, false));
        assert!(!namespaced.matches(&attrs("", "v1", "namespaces", None), false));
        let mut named = all("*");
        named.resource_names = vec!["y".into()];
        assert!(!named.matches(&deploy, false));
    }

    #[test]
    fn matchers() {
        let deploy = attrs("apps", "v1", "deployments", None);
        let m = Matcher::from_json(Some(&json!({
            "resourceRules": [{"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*"]}],
            "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
        })));
        assert!(!m.matches_rules(&deploy), "excluded");
        let m = Matcher::from_json(Some(&json!({
            "namespaceSelector": {"matchLabels": {"env": "test"}},
            "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]},
        })));
        assert!(m.matches_rules(&deploy), "no rules: everything");
        let env: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"env": "test"})).unwrap();
        let other: serde_json::Map<String, Value> =
            serde_json::from_value(json!({"env": "prod"})).unwrap();
        let obj = json!({"metadata": {"labels": {"a": "b"}}});
        let skip = json!({"metadata": {"labels": {"skip": "1"}}});
        assert!(m.matches_selectors(&deploy, Some(&env), Some(&obj)));
        assert!(!m.matches_selectors(&deploy, Some(&other), Some(&obj)));
        assert!(!m.matches_selectors(&deploy, Some(&env), Some(&skip)));
        // a namespace matches on its own labels
        let ns = attrs("", "v1", "namespaces", None);
        let own = json!({"metadata": {"labels": {"env": "test"}}});
        assert!(m.matches_selectors(&ns, None, Some(&own)));
        assert!(!m.matches_selectors(&ns, None, Some(&obj)));
    }
}
