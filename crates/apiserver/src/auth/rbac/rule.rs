//! Policy rules and how they match requests (upstream `rbac/v1/helpers` `VerbMatches`,
//! `APIGroupMatches`, `ResourceMatches`, `ResourceNameMatches`, `NonResourceURLMatches`,
//! `plugin/pkg/auth/authorizer/rbac.RuleAllows`), and how one set of rules covers
//! another (upstream `pkg/apis/rbac/validation/policy_comparator.go`, `Covers`;
//! `pkg/registry/rbac/validation/compact.go`, `CompactRules`; `CompactString`).

use serde_json::{json, Map, Value};

use crate::auth::RequestInfo;

/// `*`: every verb, group, resource or URL.
pub const ALL: &str = "*";

/// One `rbac.authorization.k8s.io/v1` PolicyRule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// Verbs (`get`, `*`, ...).
    pub verbs: Vec<String>,
    /// API groups (`""` is core).
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/log`, `*/scale`, `*`).
    pub resources: Vec<String>,
    /// Object names (empty: any).
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/api/*`).
    pub non_resource_urls: Vec<String>,
}

/// The strings of the array under `key` (non-strings skipped; none when missing).
pub(crate) fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

impl PolicyRule {
    /// A rule granting `verbs` on `resources` of `groups`.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: s(verbs),
            api_groups: s(groups),
            resources: s(resources),
            ..PolicyRule::default()
        }
    }

    /// The same rule limited to `names`.
    pub fn names(mut self, names: &[&str]) -> PolicyRule {
        self.resource_names = s(names);
        self
    }

    /// A rule granting `verbs` on non-resource `urls`.
    pub fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: s(verbs),
            non_resource_urls: s(urls),
            ..PolicyRule::default()
        }
    }

    /// A rule as stored (`{"verbs": [...], "apiGroups": [...], ...}`).
    pub fn from_json(v: &Value) -> PolicyRule {
        PolicyRule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn of_role(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    /// The rule as JSON (empty lists left out, as upstream's `omitempty`; verbs always).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("verbs".into(), json!(self.verbs));
        for (k, v) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), json!(v));
            }
        }
        Value::Object(m)
    }

    /// Upstream's `CompactString`: `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let q = |v: &[String]| {
            let items: Vec<String> = v.iter().map(|x| format!("{x:?}")).collect();
            format!("[{}]", items.join(" "))
        };
        let mut parts = Vec::new();
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:{}", q(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:{}", q(&self.resources)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!("NonResourceURLs:{}", q(&self.non_resource_urls)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:{}", q(&self.resource_names)));
        }
        if !self.verbs.is_empty() {
            parts.push(format!("Verbs:{}", q(&self.verbs)));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

fn has(set: &[String], e: &str) -> bool {
    set.iter().any(|x| x == e)
}

fn has_all(set: &[String], contains: &[String]) -> bool {
    contains.iter().all(|c| has(set, c))
}

/// Whether the rule names `verb` (or `*`).
pub fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// Whether the rule names the API group (or `*`).
pub fn api_group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// Whether the rule names the resource: `combined` is `resource` or
/// `resource/subresource`; `*` matches everything, `*/sub` any resource's `sub`.
pub fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// Whether the rule allows the object name (no names: every object).
pub fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == name)
}

/// Whether the rule names the URL: exactly, `*`, or a prefix ending in `*`.
pub fn non_resource_url_matches(rule: &PolicyRule, url: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| {
        u == ALL || u == url || (u.ends_with('*') && url.starts_with(u.trim_end_matches('*')))
    })
}

/// Whether the rule allows the request (upstream `RuleAllows`).
pub fn rule_allows(r: &RequestInfo, rule: &PolicyRule) -> bool {
    if r.resource_request {
        let combined = if r.subresource.is_empty() {
            r.resource.clone()
        } else {
            format!("{}/{}", r.resource, r.subresource)
        };
        verb_matches(rule, &r.verb)
            && api_group_matches(rule, &r.api_group)
            && resource_matches(rule, &combined, &r.subresource)
            && resource_name_matches(rule, &r.name)
    } else {
        verb_matches(rule, &r.verb) && non_resource_url_matches(rule, &r.path)
    }
}

/// A rule broken down into rules of one group, one resource, one verb and at most one
/// name, or one URL and one verb (upstream `BreakdownRule`).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for g in &rule.api_groups {
        for r in &rule.resources {
            for v in &rule.verbs {
                let one = PolicyRule {
                    verbs: vec![v.clone()],
                    api_groups: vec![g.clone()],
                    resources: vec![r.clone()],
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(one);
                } else {
                    for n in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: vec![n.clone()],
                            ..one.clone()
                        });
                    }
                }
            }
        }
    }
    for u in &rule.non_resource_urls {
        for v in &rule.verbs {
            out.push(PolicyRule {
                verbs: vec![v.clone()],
                non_resource_urls: vec![u.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        if has(set, path) {
            return true;
        }
        match path.split_once('/') {
            None => false,
            Some((_, sub)) => has(set, &format!("*/{sub}")),
        }
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

fn non_resource_urls_cover_all(set: &[String], covers: &[String]) -> bool {
    covers
        .iter()
        .all(|p| set.iter().any(|o| non_resource_url_covers(o, p)))
}

/// Whether `owner` grants everything `sub` (a broken-down rule) grants.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = non_resource_urls_cover_all(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Whether `owner` rules grant everything `servant` rules grant; the broken-down rules
/// they do not cover (upstream `Covers`).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// Rules of one group, one resource and at most one name merged into one rule with
/// all their verbs (upstream `CompactRules`); other rules are kept as they are.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    // (group, resource, name) → the merged rule
    type Key = (String, String, Option<String>);
    let mut simple: Vec<(Key, PolicyRule)> = Vec::new();
    for r in rules {
        let is_simple = r.resource_names.len() <= 1
            && r.non_resource_urls.is_empty()
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r.clone());
            continue;
        }
        let key = (
            r.api_groups[0].clone(),
            r.resources[0].clone(),
            r.resource_names.first().cloned(),
        );
        match simple.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => existing.verbs.extend(r.verbs.iter().cloned()),
            None => simple.push((key, r.clone())),
        }
    }
    out.extend(simple.into_iter().map(|(_, r)| r));
    out
}

#[cfg(test)]
mod tests;
