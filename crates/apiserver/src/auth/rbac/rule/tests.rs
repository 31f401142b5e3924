//! Upstream's tables: `pkg/apis/rbac/validation/policy_comparator_test.go` (Covers) and
//! the rule-matching cases of `plugin/pkg/auth/authorizer/rbac/rbac_test.go`
//! (`TestRuleMatches`).

use super::*;

fn r(groups: &[&str], verbs: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule::resource(verbs, groups, resources)
}

fn rn(groups: &[&str], verbs: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
    r(groups, verbs, resources).names(names)
}

fn u(urls: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule::urls(verbs, urls)
}

fn same_set(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

#[test]
#[allow(clippy::type_complexity)]
fn covers_table() {
    // (name, owner, servant, covered, uncovered)
    let cases: Vec<(
        &str,
        Vec<PolicyRule>,
        Vec<PolicyRule>,
        bool,
        Vec<PolicyRule>,
    )> = vec![
        (
            "ExactMatch",
            vec![r(&["v1"], &["get"], &["builds"])],
            vec![r(&["v1"], &["get"], &["builds"])],
            true,
            vec![],
        ),
        (
            "MultipleRulesCoveringSingleRule",
            vec![
                r(&["v1"], &["delete"], &["deployments"]),
                r(&["v1"], &["delete"], &["builds"]),
                r(&["v1"], &["update"], &["builds", "deployments"]),
            ],
            vec![r(
                &["v1"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            true,
            vec![],
        ),
        (
            "MultipleAPIGroupsCoveringSingleRule",
            vec![
                r(&["group1"], &["delete"], &["deployments"]),
                r(&["group1"], &["delete"], &["builds"]),
                r(&["group1"], &["update"], &["builds", "deployments"]),
                r(&["group2"], &["delete"], &["deployments"]),
                r(&["group2"], &["delete"], &["builds"]),
                r(&["group2"], &["update"], &["builds", "deployments"]),
            ],
            vec![r(
                &["group1", "group2"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            true,
            vec![],
        ),
        (
            "SingleAPIGroupsCoveringMultiple",
            vec![r(
                &["group1", "group2"],
                &["delete", "update"],
                &["builds", "deployments"],
            )],
            vec![
                r(&["group1"], &["delete"], &["deployments"]),
                r(&["group1"], &["delete"], &["builds"]),
                r(&["group1"], &["update"], &["builds", "deployments"]),
                r(&["group2"], &["delete"], &["deployments"]),
                r(&["group2"], &["delete"], &["builds"]),
                r(&["group2"], &["update"], &["builds", "deployments"]),
            ],
            true,
            vec![],
        ),
        (
            "MultipleRulesMissingSingleVerbResourceCombination",
            vec![
                r(&["v1"], &["delete", "update"], &["builds", "deployments"]),
                r(&["v1"], &["delete"], &["pods"]),
            ],
            vec![r(
                &["v1"],
                &["delete", "update"],
                &["builds", "deployments", "pods"],
            )],
            false,
            vec![r(&["v1"], &["update"], &["pods"])],
        ),
        (
            "APIGroupStarCoveringMultiple",
            vec![r(&["*"], &["get"], &["roles"])],
            vec![r(&["group1", "group2"], &["get"], &["roles"])],
            true,
            vec![],
        ),
        (
            "EnumerationNotCoveringAPIGroupStar",
            vec![r(&["dummy-group"], &["get"], &["roles"])],
            vec![r(&["*"], &["get"], &["roles"])],
            false,
            vec![r(&["*"], &["get"], &["roles"])],
        ),
        (
            "APIGroupStarCoveringStar",
            vec![r(&["*"], &["get"], &["roles"])],
            vec![r(&["*"], &["get"], &["roles"])],
            true,
            vec![],
        ),
        (
            "VerbStarCoveringMultiple",
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![r(&["v1"], &["watch", "list"], &["roles"])],
            true,
            vec![],
        ),
        (
            "EnumerationNotCoveringVerbStar",
            vec![r(
                &["v1"],
                &["get", "list", "watch", "create", "update", "delete", "exec"],
                &["roles"],
            )],
            vec![r(&["v1"], &["*"], &["roles"])],
            false,
            vec![r(&["v1"], &["*"], &["roles"])],
        ),
        (
            "VerbStarCoveringStar",
            vec![r(&["v1"], &["*"], &["roles"])],
            vec![r(&["v1"], &["*"], &["roles"])],
            true,
            vec![],
        ),
        (
            "ResourceStarCoveringMultiple",
            vec![r(&["v1"], &["get"], &["*"])],
            vec![r(&["v1"], &["get"], &["resourcegroup:deployments"])],
            true,
            vec![],
        ),
        (
            "EnumerationNotCoveringResourceStar",
            vec![r(
                &["v1"],
                &["get"],
                &["roles", "resourcegroup:deployments"],
            )],
            vec![r(&["v1"], &["get"], &["*"])],
            false,
            vec![r(&["v1"], &["get"], &["*"])],
        ),
        (
            "ResourceStarCoveringStar",
            vec![r(&["v1"], &["get"], &["*"])],
            vec![r(&["v1"], &["get"], &["*"])],
            true,
            vec![],
        ),
        (
            "ResourceNameEmptyCoveringMultiple",
            vec![r(&["v1"], &["get"], &["pods"])],
            vec![rn(&["v1"], &["get"], &["pods"], &["foo", "bar"])],
            true,
            vec![],
        ),
        (
            "EnumerationNotCoveringResourceNameEmpty",
            vec![rn(&["v1"], &["get"], &["pods"], &["foo", "bar"])],
            vec![r(&["v1"], &["get"], &["pods"])],
            false,
            vec![r(&["v1"], &["get"], &["pods"])],
        ),
        (
            "NonResourceURLs",
            vec![u(&["/apis"], &["*"])],
            vec![u(&["/apis"], &["*"])],
            true,
            vec![],
        ),
        (
            "NonResourceURLsStar",
            vec![u(&["*"], &["*"])],
            vec![u(&["/apis", "/apis/v1", "/"], &["*"])],
            true,
            vec![],
        ),
        (
            "NonResourceURLsStarAfterPrefixDoesntCover",
            vec![u(&["/apis/*"], &["*"])],
            vec![u(&["/apis", "/apis/v1"], &["get"])],
            false,
            vec![u(&["/apis"], &["get"])],
        ),
        (
            "NonResourceURLsStarAfterPrefix",
            vec![u(&["/apis/*"], &["*"])],
            vec![u(&["/apis/v1/foo", "/apis/v1"], &["get"])],
            true,
            vec![],
        ),
        (
            "NonResourceURLsWithOtherFields",
            vec![PolicyRule {
                non_resource_urls: vec!["/apis".into()],
                ..r(&["v1"], &["get"], &["builds"])
            }],
            vec![PolicyRule {
                non_resource_urls: vec!["/apis".into()],
                ..r(&["v1"], &["get"], &["builds"])
            }],
            true,
            vec![],
        ),
        (
            "NonResourceURLsWithOtherFieldsFailure",
            vec![r(&["v1"], &["get"], &["builds"])],
            vec![PolicyRule {
                non_resource_urls: vec!["/apis".into()],
                ..r(&["v1"], &["get"], &["builds"])
            }],
            false,
            vec![u(&["/apis"], &["get"])],
        ),
        // subresources: `*/sub` covers any resource's sub, `res/*` is only itself
        (
            "StarSubresourceCovers",
            vec![r(&[""], &["get"], &["*/status"])],
            vec![r(&[""], &["get"], &["pods/status", "nodes/status"])],
            true,
            vec![],
        ),
        (
            "ResourceStarSubresourceIsLiteral",
            vec![r(&[""], &["get"], &["pods/*"])],
            vec![r(&[""], &["get"], &["pods/log"])],
            false,
            vec![r(&[""], &["get"], &["pods/log"])],
        ),
    ];
    for (name, owner, servant, covered, uncovered) in cases {
        let (got, missing) = covers(&owner, &servant);
        assert_eq!(got, covered, "{name}");
        assert!(same_set(&missing, &uncovered), "{name}: {missing:?}");
    }
}

fn resource_req(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> RequestInfo {
    RequestInfo {
        resource_request: true,
        verb: verb.into(),
        api_group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        ..RequestInfo::default()
    }
}

fn url_req(verb: &str, path: &str) -> RequestInfo {
    RequestInfo {
        verb: verb.into(),
        path: path.into(),
        ..RequestInfo::default()
    }
}

#[test]
fn rule_matches_table() {
    // upstream TestRuleMatches: (name, rule, requests that match, requests that do not)
    let star_all = r(&["*"], &["*"], &["*"]);
    let cases: Vec<(&str, PolicyRule, Vec<RequestInfo>, Vec<RequestInfo>)> = vec![
        (
            "star verb, exact match other",
            r(&["group1"], &["*"], &["resource1"]),
            vec![
                resource_req("get", "group1", "resource1", "", ""),
                resource_req("update", "group1", "resource1", "", ""),
            ],
            vec![
                resource_req("get", "group2", "resource1", "", ""),
                resource_req("get", "group1", "resource2", "", ""),
                resource_req("get", "group1", "resource1", "subresource1", ""),
            ],
        ),
        (
            "star group, exact match other",
            r(&["*"], &["get"], &["resource1"]),
            vec![
                resource_req("get", "group1", "resource1", "", ""),
                resource_req("get", "group2", "resource1", "", ""),
            ],
            vec![
                resource_req("update", "group1", "resource1", "", ""),
                resource_req("get", "group1", "resource2", "", ""),
            ],
        ),
        (
            "star resource, exact match other",
            r(&["group1"], &["get"], &["*"]),
            vec![
                resource_req("get", "group1", "resource1", "", ""),
                resource_req("get", "group1", "resource2", "", ""),
                resource_req("get", "group1", "resource1", "subresource1", ""),
            ],
            vec![
                resource_req("update", "group1", "resource1", "", ""),
                resource_req("get", "group2", "resource1", "", ""),
            ],
        ),
        (
            "tuple expansion",
            r(
                &["group1", "group2"],
                &["get", "update"],
                &["resource1", "resource2"],
            ),
            vec![
                resource_req("get", "group1", "resource1", "", ""),
                resource_req("get", "group2", "resource2", "", ""),
                resource_req("update", "group1", "resource2", "", ""),
                resource_req("update", "group2", "resource1", "", ""),
            ],
            vec![
                resource_req("delete", "group1", "resource1", "", ""),
                resource_req("get", "group3", "resource1", "", ""),
                resource_req("get", "group1", "resource3", "", ""),
            ],
        ),
        (
            "subresource expansion",
            r(&["*"], &["get", "update"], &["resource1/subresource1"]),
            vec![
                resource_req("get", "group1", "resource1", "subresource1", ""),
                resource_req("update", "group2", "resource1", "subresource1", ""),
            ],
            vec![
                resource_req("get", "group1", "resource1", "", ""),
                resource_req("get", "group1", "resource1", "subresource2", ""),
                resource_req("get", "group1", "resource2", "subresource1", ""),
            ],
        ),
        (
            "star nonresource, exact match other",
            u(&["*"], &["get"]),
            vec![
                url_req("get", "/foo"),
                url_req("get", "/foo/bar"),
                url_req("get", "/"),
            ],
            vec![url_req("post", "/foo")],
        ),
        (
            "star nonresource subpath",
            u(&["/foo/*"], &["get"]),
            vec![
                url_req("get", "/foo/"),
                url_req("get", "/foo/bar"),
                url_req("get", "/foo/bar/baz"),
            ],
            vec![
                url_req("get", "/foo"),
                url_req("get", "/food"),
                url_req("post", "/foo/bar"),
            ],
        ),
        (
            "star verb, exact nonresource",
            u(&["/foo", "/foo/bar/one"], &["*"]),
            vec![url_req("get", "/foo"), url_req("post", "/foo/bar/one")],
            vec![url_req("get", "/foo/bar"), url_req("get", "/foo/bar/two")],
        ),
        (
            "star subresource",
            r(&[""], &["get"], &["*/status"]),
            vec![
                resource_req("get", "", "pods", "status", ""),
                resource_req("get", "", "nodes", "status", ""),
            ],
            vec![
                resource_req("get", "", "pods", "", ""),
                resource_req("get", "", "pods", "log", ""),
            ],
        ),
        (
            "resource names",
            rn(&[""], &["get"], &["configmaps"], &["a", "b"]),
            vec![
                resource_req("get", "", "configmaps", "", "a"),
                resource_req("get", "", "configmaps", "", "b"),
            ],
            vec![
                resource_req("get", "", "configmaps", "", "c"),
                resource_req("get", "", "configmaps", "", ""),
            ],
        ),
        (
            "resource rule never matches a path",
            star_all.clone(),
            vec![resource_req("get", "x", "y", "z", "n")],
            vec![url_req("get", "/healthz")],
        ),
    ];
    for (name, rule, yes, no) in cases {
        for req in yes {
            assert!(
                rule_allows(&req, &rule),
                "{name}: expected match for {req:?}"
            );
        }
        for req in no {
            assert!(
                !rule_allows(&req, &rule),
                "{name}: expected no match for {req:?}"
            );
        }
    }
}

#[test]
fn compact_merges_simple_rules() {
    let rules = vec![
        r(&[""], &["get"], &["pods"]),
        r(&[""], &["list"], &["pods"]),
        rn(&[""], &["get"], &["pods"], &["a"]),
        r(&[""], &["get"], &["pods", "services"]),
        u(&["/x"], &["get"]),
    ];
    let c = compact(&rules);
    assert_eq!(c.len(), 4);
    assert!(c.contains(&r(&[""], &["get", "list"], &["pods"])));
    assert!(c.contains(&rn(&[""], &["get"], &["pods"], &["a"])));
}

#[test]
fn compact_string_as_upstream() {
    assert_eq!(
        r(&[""], &["get", "list"], &["pods"]).compact_string(),
        r#"{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}"#
    );
    assert_eq!(
        u(&["/healthz"], &["get"]).compact_string(),
        r#"{NonResourceURLs:["/healthz"], Verbs:["get"]}"#
    );
    assert_eq!(
        rn(&["apps"], &["get"], &["deployments"], &["x"]).compact_string(),
        r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["x"], Verbs:["get"]}"#
    );
}
