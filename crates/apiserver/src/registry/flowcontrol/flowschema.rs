//! FlowSchema (`flowcontrol.apiserver.k8s.io/v1`): what it does differently from the
//! generic store (upstream `pkg/registry/flowcontrol/flowschema` and
//! `pkg/apis/flowcontrol/validation`).

use serde_json::Value;

use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `flowcontrol.apiserver.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&[], &FlowSchemaStrategy);

/// What FlowSchema does differently.
pub struct FlowSchemaStrategy;

impl Strategy for FlowSchemaStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.flow_schema(e, obj))
    }

    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        _sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        Ctx::new(def, Some(old)).check(|v, e| {
            v.meta(e, obj, apimachinery::names::NameRule::Subdomain, false);
            validation::status(e, obj);
        })
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::FLOW_SCHEMA)
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// `SetDefaults_FlowSchemaSpec`: matchingPrecedence 1000.
    pub(crate) fn apply(o: &mut Obj) {
        if let Some(spec) = child_or_insert(o, "spec") {
            default_nonzero(spec, "matchingPrecedence", 1000);
        }
    }
}

pub(crate) mod validation {
    use crate::registry::flowcontrol::{bootstrap, normalized, EXEMPT};
    use crate::registry::validation::prelude::*;

    /// `FlowSchemaMaxMatchingPrecedence`.
    const MAX_MATCHING_PRECEDENCE: i64 = 10000;
    /// `supportedVerbs`, sorted.
    pub(crate) const VERBS: &[&str] = &[
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "proxy",
        "update",
        "watch",
    ];
    const NS_ERR_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

    impl Ctx<'_> {
        /// `ValidateFlowSchema` (and `ValidateFlowSchemaUpdate`, the same checks).
        pub(crate) fn flow_schema(&self, e: &mut Errs, o: &Value) {
            self.meta(e, o, NameRule::Subdomain, false);
            let name = get(o, "metadata").and_then(|m| st(m, "name")).unwrap_or("");
            let empty = Value::Object(Map::new());
            let spec = get(o, "spec").unwrap_or(&empty);
            spec_checks(e, name, spec);
            if let Some(mand) = bootstrap::mandatory_spec("flowschemas", name) {
                if normalized(spec) != normalized(&mand) {
                    e.invalid(
                        "spec",
                        Bad::Json(spec.clone()),
                        &format!("spec of '{name}' must equal the fixed value"),
                    );
                }
            }
            status(e, o);
        }
    }

    /// `ValidateFlowSchemaSpec`.
    pub(crate) fn spec_checks(e: &mut Errs, name: &str, spec: &Value) {
        let precedence = int(spec, "matchingPrecedence").unwrap_or(0);
        if precedence <= 0 {
            e.invalid(
                "spec.matchingPrecedence",
                Bad::Int(precedence),
                "must be a positive value",
            );
        }
        if precedence > MAX_MATCHING_PRECEDENCE {
            e.invalid(
                "spec.matchingPrecedence",
                Bad::Int(precedence),
                &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
            );
        }
        if precedence == 1 && name != EXEMPT {
            e.invalid(
                "spec.matchingPrecedence",
                Bad::Int(precedence),
                "only the schema named 'exempt' may have matchingPrecedence 1",
            );
        }
        if let Some(dm) = get(spec, "distinguisherMethod") {
            let t = st(dm, "type").unwrap_or("");
            if t != "ByNamespace" && t != "ByUser" {
                e.not_supported(
                    "spec.distinguisherMethod.type",
                    Bad::Json(dm.clone()),
                    &["ByNamespace", "ByUser"],
                );
            }
        }
        let pl = get(spec, "priorityLevelConfiguration")
            .and_then(|p| st(p, "name"))
            .unwrap_or("");
        if pl.is_empty() {
            e.required(
                "spec.priorityLevelConfiguration.name",
                "must reference a priority level",
            );
        } else {
            e.each(
                "spec.priorityLevelConfiguration.name",
                pl,
                NameRule::Subdomain.check(pl, false),
            );
        }
        for (i, rule) in items(spec, "rules").iter().enumerate() {
            rule_checks(e, rule, &format!("spec.rules[{i}]"));
        }
    }

    fn strings(v: &Value, k: &str) -> Vec<String> {
        items(v, k)
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    }

    fn has_wildcard(list: &[String]) -> bool {
        list.iter().any(|s| s == "*")
    }

    /// `ValidateFlowSchemaPolicyRulesWithSubjects`.
    fn rule_checks(e: &mut Errs, rule: &Value, path: &str) {
        let subjects = items(rule, "subjects");
        if subjects.is_empty() {
            e.required(
                &format!("{path}.subjects"),
                "subjects must contain at least one value",
            );
        }
        for (i, s) in subjects.iter().enumerate() {
            subject_checks(e, s, &format!("{path}.subjects[{i}]"));
        }
        let resource_rules = items(rule, "resourceRules");
        let non_resource_rules = items(rule, "nonResourceRules");
        if resource_rules.is_empty() && non_resource_rules.is_empty() {
            e.required(
                path,
                "at least one of resourceRules and nonResourceRules has to be non-empty",
            );
        }
        for (i, r) in resource_rules.iter().enumerate() {
            resource_rule_checks(e, r, &format!("{path}.resourceRules[{i}]"));
        }
        for (i, r) in non_resource_rules.iter().enumerate() {
            non_resource_rule_checks(e, r, &format!("{path}.nonResourceRules[{i}]"));
        }
    }

    /// `ValidateFlowSchemaSubject`.
    fn subject_checks(e: &mut Errs, s: &Value, path: &str) {
        let kind = st(s, "kind").unwrap_or("");
        let has = |k: &str| get(s, k).is_some();
        let forbid = |e: &mut Errs, k: &str, other: &str| {
            e.forbidden(
                &format!("{path}.{k}"),
                &format!("{k} is forbidden when subject kind is not '{other}'"),
            )
        };
        // upstream checks the union's members in field order: serviceAccount, user, group
        match kind {
            "ServiceAccount" => {
                let p = format!("{path}.serviceAccount");
                match get(s, "serviceAccount") {
                    None => e.required(
                        &p,
                        "serviceAccount is required when subject kind is 'ServiceAccount'",
                    ),
                    Some(sa) => {
                        let name = st(sa, "name").unwrap_or("");
                        if name.is_empty() {
                            e.required(&format!("{p}.name"), "");
                        } else if name != "*" {
                            e.each(
                                &format!("{p}.name"),
                                name,
                                NameRule::Subdomain.check(name, false),
                            );
                        }
                        let ns = st(sa, "namespace").unwrap_or("");
                        if ns.is_empty() {
                            e.required(
                                &format!("{p}.namespace"),
                                "must specify namespace for service account",
                            );
                        } else {
                            e.each(
                                &format!("{p}.namespace"),
                                ns,
                                NameRule::Label.check(ns, false),
                            );
                        }
                    }
                }
                if has("user") {
                    forbid(e, "user", "User");
                }
                if has("group") {
                    forbid(e, "group", "Group");
                }
            }
            "User" => {
                if has("serviceAccount") {
                    forbid(e, "serviceAccount", "ServiceAccount");
                }
                named_subject(e, s, path, "user", "User");
                if has("group") {
                    forbid(e, "group", "Group");
                }
            }
            "Group" => {
                if has("serviceAccount") {
                    forbid(e, "serviceAccount", "ServiceAccount");
                }
                if has("user") {
                    forbid(e, "user", "User");
                }
                named_subject(e, s, path, "group", "Group");
            }
            other => e.not_supported(
                &format!("{path}.kind"),
                js(other),
                &["Group", "ServiceAccount", "User"],
            ),
        }
    }

    fn named_subject(e: &mut Errs, s: &Value, path: &str, field: &str, kind: &str) {
        let p = format!("{path}.{field}");
        match get(s, field) {
            None => e.required(
                &p,
                &format!("{field} is required when subject kind is '{kind}'"),
            ),
            Some(v) => {
                if st(v, "name").unwrap_or("").is_empty() {
                    e.required(&format!("{p}.name"), "");
                }
            }
        }
    }

    fn verbs_checks(e: &mut Errs, verbs: &[String], path: &str) {
        let p = format!("{path}.verbs");
        if verbs.is_empty() {
            e.required(&p, "verbs must contain at least one value");
        } else if has_wildcard(verbs) {
            if verbs.len() > 1 {
                e.invalid(
                    &p,
                    Bad::Json(serde_json::json!(verbs)),
                    "if '*' is present, must not specify other verbs",
                );
            }
        } else if !verbs.iter().all(|v| VERBS.contains(&v.as_str())) {
            e.not_supported(&p, Bad::Json(serde_json::json!(verbs)), VERBS);
        }
    }

    /// `ValidateFlowSchemaResourcePolicyRule`.
    fn resource_rule_checks(e: &mut Errs, r: &Value, path: &str) {
        verbs_checks(e, &strings(r, "verbs"), path);
        let groups = strings(r, "apiGroups");
        if groups.is_empty() {
            e.required(
                &format!("{path}.apiGroups"),
                "resource rules must supply at least one api group",
            );
        } else if groups.len() > 1 && has_wildcard(&groups) {
            e.invalid(
                &format!("{path}.apiGroups"),
                Bad::Json(serde_json::json!(groups)),
                "if '*' is present, must not specify other api groups",
            );
        }
        let resources = strings(r, "resources");
        if resources.is_empty() {
            e.required(
                &format!("{path}.resources"),
                "resource rules must supply at least one resource",
            );
        } else if resources.len() > 1 && has_wildcard(&resources) {
            e.invalid(
                &format!("{path}.resources"),
                Bad::Json(serde_json::json!(resources)),
                "if '*' is present, must not specify other resources",
            );
        }
        let namespaces = strings(r, "namespaces");
        let cluster_scope = boolean(r, "clusterScope").unwrap_or(false);
        if namespaces.is_empty() && !cluster_scope {
            e.required(
                &format!("{path}.namespaces"),
                "resource rules that are not cluster scoped must supply at least one namespace",
            );
        } else if has_wildcard(&namespaces) {
            if namespaces.len() > 1 {
                e.invalid(
                    &format!("{path}.namespaces"),
                    Bad::Json(serde_json::json!(namespaces)),
                    "if '*' is present, must not specify other namespaces",
                );
            }
        } else {
            for (i, ns) in namespaces.iter().enumerate() {
                for m in NameRule::Label.check(ns, false) {
                    e.invalid(
                        &format!("{path}.namespaces[{i}]"),
                        Bad::str(ns),
                        &format!("{NS_ERR_INTRO}{m}"),
                    );
                }
            }
        }
    }

    /// `ValidateFlowSchemaNonResourcePolicyRule`.
    fn non_resource_rule_checks(e: &mut Errs, r: &Value, path: &str) {
        verbs_checks(e, &strings(r, "verbs"), path);
        let urls = strings(r, "nonResourceURLs");
        let p = format!("{path}.nonResourceURLs");
        if urls.is_empty() {
            e.required(&p, "nonResourceURLs must contain at least one value");
        } else if has_wildcard(&urls) {
            if urls.len() > 1 {
                e.invalid(
                    &p,
                    Bad::Json(serde_json::json!(urls)),
                    "if '*' is present, must not specify other non-resource URLs",
                );
            }
        } else {
            for (i, u) in urls.iter().enumerate() {
                if let Some(m) = non_resource_url_error(u) {
                    e.invalid(&format!("{p}[{i}]"), Bad::str(u), m);
                }
            }
        }
    }

    /// `ValidateNonResourceURLPath`: what is wrong with a non-resource URL, if anything.
    pub(crate) fn non_resource_url_error(path: &str) -> Option<&'static str> {
        if path.is_empty() {
            return Some("must not be empty");
        }
        if path == "/" {
            return None;
        }
        if !path.starts_with('/') {
            return Some("must start with slash");
        }
        if path.contains(' ') {
            return Some("must not contain white-space");
        }
        if path.contains("//") {
            return Some("must not contain double slash");
        }
        let wildcards = path.matches('*').count();
        if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
            return Some("wildcard can only do suffix matching");
        }
        None
    }

    /// `ValidateFlowSchemaStatus`: condition types present and unique.
    pub(crate) fn status(e: &mut Errs, o: &Value) {
        conditions(e, o);
    }

    /// The status checks FlowSchema and PriorityLevelConfiguration share.
    pub(crate) fn conditions(e: &mut Errs, o: &Value) {
        let empty = Value::Object(Map::new());
        let status = get(o, "status").unwrap_or(&empty);
        let mut seen: Vec<&str> = Vec::new();
        for (i, c) in items(status, "conditions").iter().enumerate() {
            let t = st(c, "type").unwrap_or("");
            if seen.contains(&t) {
                e.duplicate(&format!("status.conditions[{i}].type"), js(t));
            }
            seen.push(t);
            if t.is_empty() {
                e.required(&format!("status.conditions[{i}].type"), "must not be empty");
            }
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const REF_DEF: &str = "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference";
    const SPEC_DEF: &str = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec";

    /// FlowSchemas (upstream `printFlowSchema`).
    pub(crate) static FLOW_SCHEMA: Printer = Printer {
        columns: &[
            NAME,
            string("PriorityLevel", field(REF_DEF, "name")),
            string("MatchingPrecedence", field(SPEC_DEF, "matchingPrecedence")),
            string(
                "DistinguisherMethod",
                field(SPEC_DEF, "distinguisherMethod"),
            ),
            AGE,
            string(
                "MissingPL",
                text("references a broken or non-existent PriorityLevelConfiguration"),
            ),
        ],
        print: |v, now| {
            let method = opt_s(v, "/spec/distinguisherMethod/type").unwrap_or("<none>");
            let missing = arr(v, "/status/conditions")
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
                .and_then(|c| c.get("status").and_then(Value::as_str))
                .unwrap_or("?");
            Row::of(vec![
                name(v),
                json!(s(v, "/spec/priorityLevelConfiguration/name")),
                json!(int(v, "/spec/matchingPrecedence")),
                json!(method),
                age(v, now),
                json!(missing),
            ])
        },
    };
}

#[cfg(test)]
mod tests {
    use super::validation::non_resource_url_error;

    /// Upstream's `TestValidateNonResourceURLPath`.
    #[test]
    fn non_resource_url_paths() {
        for (path, ok) in [
            ("", false),
            ("/", true),
            ("/*", true),
            ("/apis", true),
            ("/apis/", true),
            ("/apis/*", true),
            ("/healthz", true),
            ("/healthz/*", true),
            ("/apis/foo", true),
            ("apis", false),
            ("/foo/bar/*", true),
            ("/foo/*/bar", false),
            ("/foo*", false),
            ("/*/*", false),
            ("/foo bar", false),
            ("//", false),
            ("/foo//bar", false),
        ] {
            assert_eq!(non_resource_url_error(path).is_none(), ok, "{path:?}");
        }
    }
}
