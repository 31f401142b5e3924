//! Which requests a webhook's `rules` select (upstream
//! `admission/plugin/webhook/predicates/rules/rules.go`).

use serde_json::Value;

/// One `RuleWithOperations`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// `operations` (`CREATE`, ..., `*`).
    pub operations: Vec<String>,
    /// `apiGroups` (`""` for core, `*`).
    pub groups: Vec<String>,
    /// `apiVersions` (`*`).
    pub versions: Vec<String>,
    /// `resources` (`pods`, `pods/status`, `pods/*`, `*/status`, `*`, `*/*`).
    pub resources: Vec<String>,
    /// `scope` (`Cluster`, `Namespaced`, `*`; absent = `*`).
    pub scope: Option<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The request as the rules see it: the resource (possibly an equivalent one, for
/// `matchPolicy: Equivalent`), the subresource, the namespace and the operation.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// API group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Resource (plural).
    pub resource: &'a str,
    /// Subresource (`""` for none).
    pub subresource: &'a str,
    /// Namespace (`""` for cluster-scoped requests; a Namespace's own name for a
    /// request on a Namespace, as upstream's attributes carry it).
    pub namespace: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub operation: &'a str,
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

fn split_resource(s: &str) -> (&str, &str) {
    s.split_once('/').unwrap_or((s, ""))
}

impl Rule {
    /// A rule from its JSON form.
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            operations: strings(v.get("operations")),
            groups: strings(v.get("apiGroups")),
            versions: strings(v.get("apiVersions")),
            resources: strings(v.get("resources")),
            scope: v.get("scope").and_then(Value::as_str).map(str::to_string),
        }
    }

    /// Whether the rule selects the request.
    pub fn matches(&self, r: &Request<'_>) -> bool {
        self.scope(r) && self.operation(r) && self.group(r) && self.version(r) && self.resource(r)
    }

    fn scope(&self, r: &Request<'_>) -> bool {
        let is_namespace = r.group.is_empty() && r.version == "v1" && r.resource == "namespaces";
        match self.scope.as_deref() {
            None | Some("*") => true,
            // a Namespace is cluster-scoped, though its requests carry its name as
            // their namespace
            Some("Namespaced") => !is_namespace && !r.namespace.is_empty(),
            Some("Cluster") => is_namespace || r.namespace.is_empty(),
            Some(_) => false,
        }
    }

    fn group(&self, r: &Request<'_>) -> bool {
        exact_or_wildcard(&self.groups, r.group)
    }

    fn version(&self, r: &Request<'_>) -> bool {
        exact_or_wildcard(&self.versions, r.version)
    }

    fn operation(&self, r: &Request<'_>) -> bool {
        exact_or_wildcard(&self.operations, r.operation)
    }

    fn resource(&self, r: &Request<'_>) -> bool {
        self.resources.iter().any(|res| {
            let (res, sub) = split_resource(res);
            (res == "*" || res == r.resource) && (sub == "*" || sub == r.subresource)
        })
    }
}

/// Whether a request is on one of the admission configuration kinds, which webhooks
/// never see (upstream `IsExemptAdmissionConfigurationResource`, by the request's kind).
pub fn is_exempt(group: &str, kind: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

#[cfg(test)]
mod tests {
    //! Upstream's `rules_test.go` tables.
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// upstream's `a(...)`/`namespacedAttributes(...)`: namespace "ns"
    fn a<'a>(g: &'a str, v: &'a str, r: &'a str, sub: &'a str, op: &'a str) -> Request<'a> {
        Request {
            group: g,
            version: v,
            resource: r,
            subresource: sub,
            namespace: "ns",
            operation: op,
        }
    }

    /// upstream's `clusterScopedAttributes(...)`: no namespace
    fn c<'a>(g: &'a str, v: &'a str, r: &'a str, sub: &'a str, op: &'a str) -> Request<'a> {
        Request {
            namespace: "",
            ..a(g, v, r, sub, op)
        }
    }

    fn check(
        name: &str,
        f: impl Fn(&Request<'_>) -> bool,
        matches: &[Request<'_>],
        no: &[Request<'_>],
    ) {
        for m in matches {
            assert!(f(m), "{name}: expected match {m:?}");
        }
        for m in no {
            assert!(!f(m), "{name}: expected no match {m:?}");
        }
    }

    #[test]
    fn group() {
        let r = Rule {
            groups: s(&["*"]),
            ..Rule::default()
        };
        check(
            "wildcard",
            |x| r.group(x),
            &[a("g", "v", "r", "", "CREATE")],
            &[],
        );
        let r = Rule {
            groups: s(&["g1", "g2"]),
            ..Rule::default()
        };
        check(
            "exact",
            |x| r.group(x),
            &[
                a("g1", "v", "r", "", "CREATE"),
                a("g2", "v2", "r3", "", "CREATE"),
            ],
            &[
                a("g3", "v", "r", "", "CREATE"),
                a("g4", "v", "r", "", "CREATE"),
            ],
        );
    }

    #[test]
    fn version() {
        let r = Rule {
            versions: s(&["*"]),
            ..Rule::default()
        };
        check(
            "wildcard",
            |x| r.version(x),
            &[a("g", "v", "r", "", "CREATE")],
            &[],
        );
        let r = Rule {
            versions: s(&["v1", "v2"]),
            ..Rule::default()
        };
        check(
            "exact",
            |x| r.version(x),
            &[
                a("g1", "v1", "r", "", "CREATE"),
                a("g2", "v2", "r", "", "CREATE"),
            ],
            &[
                a("g1", "v3", "r", "", "CREATE"),
                a("g2", "v4", "r", "", "CREATE"),
            ],
        );
    }

    #[test]
    fn operation() {
        let all = ["CREATE", "UPDATE", "DELETE", "CONNECT"];
        let case = |ops: &[&str], yes: &[&str]| {
            let r = Rule {
                operations: s(ops),
                ..Rule::default()
            };
            let m: Vec<Request<'_>> = yes.iter().map(|o| a("g", "v", "r", "", o)).collect();
            let n: Vec<Request<'_>> = all
                .iter()
                .filter(|o| !yes.contains(o))
                .map(|o| a("g", "v", "r", "", o))
                .collect();
            check(&format!("{ops:?}"), |x| r.operation(x), &m, &n);
        };
        case(&["*"], &all);
        case(&["CREATE"], &["CREATE"]);
        case(&["UPDATE"], &["UPDATE"]);
        case(&["DELETE"], &["DELETE"]);
        case(&["CONNECT"], &["CONNECT"]);
        case(&["UPDATE", "DELETE"], &["UPDATE", "DELETE"]);
    }

    #[test]
    fn resource() {
        let rule = |res: &[&str]| Rule {
            resources: s(res),
            ..Rule::default()
        };
        let r = rule(&["*"]);
        check(
            "no subresources",
            |x| r.resource(x),
            &[
                a("g", "v", "r", "", "CREATE"),
                a("2", "v", "r2", "", "CREATE"),
            ],
            &[
                a("g", "v", "r", "exec", "CREATE"),
                a("2", "v", "r2", "proxy", "CREATE"),
            ],
        );
        let r = rule(&["r/*"]);
        check(
            "r & subresources",
            |x| r.resource(x),
            &[
                a("g", "v", "r", "", "CREATE"),
                a("g", "v", "r", "exec", "CREATE"),
            ],
            &[
                a("2", "v", "r2", "", "CREATE"),
                a("2", "v", "r2", "proxy", "CREATE"),
            ],
        );
        let r = rule(&["r/*", "r2"]);
        check(
            "r & subresources or r2",
            |x| r.resource(x),
            &[
                a("g", "v", "r", "", "CREATE"),
                a("g", "v", "r", "exec", "CREATE"),
                a("2", "v", "r2", "", "CREATE"),
            ],
            &[a("2", "v", "r2", "proxy", "CREATE")],
        );
        let r = rule(&["*/proxy", "*/exec"]);
        check(
            "proxy or exec",
            |x| r.resource(x),
            &[
                a("g", "v", "r", "exec", "CREATE"),
                a("2", "v", "r2", "proxy", "CREATE"),
                a("2", "v", "r3", "proxy", "CREATE"),
            ],
            &[
                a("g", "v", "r", "", "CREATE"),
                a("2", "v", "r2", "", "CREATE"),
                a("2", "v", "r4", "scale", "CREATE"),
            ],
        );
        let r = rule(&["*/*"]);
        check(
            "everything",
            |x| r.resource(x),
            &[
                a("g", "v", "r", "", "CREATE"),
                a("g", "v", "r", "status", "CREATE"),
            ],
            &[],
        );
    }

    #[test]
    fn scope() {
        let rule = |scope: &str| Rule {
            resources: s(&["*"]),
            scope: Some(scope.to_string()),
            ..Rule::default()
        };
        let namespaces = [
            c("", "v1", "namespaces", "", "CREATE"),
            c("", "v1", "namespaces", "finalize", "CREATE"),
            a("", "v1", "namespaces", "", "CREATE"),
            a("", "v1", "namespaces", "finalize", "CREATE"),
        ];
        let cluster = [
            c("g", "v", "r", "", "CREATE"),
            c("g", "v", "r", "exec", "CREATE"),
        ];
        let namespaced = [
            a("g", "v", "r", "", "CREATE"),
            a("g", "v", "r", "exec", "CREATE"),
        ];
        let r = rule("Cluster");
        let yes: Vec<_> = cluster.iter().chain(&namespaces).copied().collect();
        check("cluster scope", |x| r.scope(x), &yes, &namespaced);
        let r = rule("Namespaced");
        let no: Vec<_> = namespaces.iter().chain(&cluster).copied().collect();
        check("namespace scope", |x| r.scope(x), &namespaced, &no);
        let r = rule("*");
        let all: Vec<_> = namespaced
            .iter()
            .chain(&cluster)
            .chain(&namespaces)
            .copied()
            .collect();
        check("all scopes", |x| r.scope(x), &all, &[]);
    }

    #[test]
    fn admission_configuration_kinds_are_exempt() {
        assert!(is_exempt(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration"
        ));
        assert!(is_exempt(
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicyBinding"
        ));
        assert!(!is_exempt("admissionregistration.k8s.io", "Other"));
        assert!(!is_exempt("", "Pod"));
    }
}
