//! The success policy of Indexed Jobs (upstream `success_policy.go`): the Job succeeds
//! early when a rule's indexes all succeeded (`succeededIndexes`), or at least
//! `succeededCount` of them, or `succeededCount` indexes at all.

use k8s_openapi::api::batch::v1::SuccessPolicy;

use super::indexed::OrderedIntervals;

/// The message of the first rule `succeeded` satisfies (`Matched rules at index N`), if
/// any (upstream `matchSuccessPolicy`). A rule whose `succeededIndexes` holds no index
/// below `completions` is skipped.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded: &OrderedIntervals,
) -> Option<String> {
    let policy = policy?;
    if succeeded.is_empty() {
        return None;
    }
    for (index, rule) in policy.rules.iter().enumerate() {
        let matched = match &rule.succeeded_indexes {
            Some(indexes) => {
                let required = OrderedIntervals::parse(indexes, i64::from(completions));
                if required.is_empty() {
                    continue;
                }
                matches_indexes_rule(&required, succeeded, rule.succeeded_count)
            }
            None => rule
                .succeeded_count
                .is_some_and(|c| succeeded.total() >= i64::from(c)),
        };
        if matched {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// Whether `succeeded` covers all of `required`, or at least `count` of it.
fn matches_indexes_rule(
    required: &OrderedIntervals,
    succeeded: &OrderedIntervals,
    count: Option<i32>,
) -> bool {
    let (mut i, mut j, mut contains) = (0, 0, 0i64);
    let (r, s) = (&required.0, &succeeded.0);
    while i < r.len() && j < s.len() {
        let lo = r[i].first.max(s[j].first);
        let hi = r[i].last.min(s[j].last);
        if lo <= hi {
            contains += hi - lo + 1;
        }
        if r[i].last < s[j].last {
            i += 1;
        } else {
            j += 1;
        }
    }
    contains == required.total() || count.is_some_and(|c| contains >= i64::from(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::indexed::Interval;
    use k8s_openapi::api::batch::v1::SuccessPolicyRule;

    fn iv(pairs: &[(i64, i64)]) -> OrderedIntervals {
        OrderedIntervals(
            pairs
                .iter()
                .map(|&(first, last)| Interval { first, last })
                .collect(),
        )
    }

    fn rule(indexes: Option<&str>, count: Option<i32>) -> SuccessPolicyRule {
        SuccessPolicyRule {
            succeeded_indexes: indexes.map(str::to_string),
            succeeded_count: count,
        }
    }

    // Upstream TestMatchSuccessPolicy (success_policy_test.go); the gate-disabled cases
    // are left out.
    #[test]
    fn match_success_policy_table() {
        type Case = (
            &'static str,
            Vec<(i64, i64)>,
            Option<Vec<SuccessPolicyRule>>,
            Option<usize>,
        );
        let cases: Vec<Case> = vec![
            ("successPolicy is null", vec![(0, 0)], None, None),
            ("any rules are nothing", vec![(0, 0)], Some(vec![]), None),
            (
                "rules.succeededIndexes is invalid format",
                vec![(0, 0)],
                Some(vec![rule(Some("invalid-form"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes matched",
                vec![(0, 2), (4, 7)],
                Some(vec![rule(Some("0-2"), None)]),
                Some(0),
            ),
            (
                "rules.succeededIndexes isn't matched",
                vec![(0, 2)],
                Some(vec![rule(Some("3"), None)]),
                None,
            ),
            (
                "rules.succeededCount matched",
                vec![(0, 2)],
                Some(vec![rule(None, Some(2))]),
                Some(0),
            ),
            (
                "rules.succeededCount isn't matched",
                vec![(0, 2)],
                Some(vec![rule(None, Some(4))]),
                None,
            ),
            (
                "multiple rules; rules.succeededIndexes is matched",
                vec![(0, 2), (4, 7)],
                Some(vec![rule(Some("9"), None), rule(Some("4,6"), None)]),
                Some(1),
            ),
            (
                "multiple rules; both rules.succeededIndexes are matched",
                vec![(0, 2), (4, 7)],
                Some(vec![rule(Some("0,1"), None), rule(Some("5"), None)]),
                Some(0),
            ),
            (
                "rules.succeededIndexes and rules.succeededCount are matched",
                vec![(0, 2), (4, 7)],
                Some(vec![rule(Some("3-6"), Some(2))]),
                Some(0),
            ),
            (
                "rules.succeededIndexes and rules.succeededCount aren't matched",
                vec![(0, 2), (6, 7)],
                Some(vec![rule(Some("3-6"), Some(2))]),
                None,
            ),
            (
                "succeededIndexes is empty",
                vec![],
                Some(vec![rule(None, Some(4))]),
                None,
            ),
            (
                "rules.succeededIndexes is a proper subset of succeededIndexes",
                vec![(1, 5), (6, 9)],
                Some(vec![rule(Some("2-4,6-8"), None)]),
                Some(0),
            ),
            (
                "rules.succeededIndexes is an empty set",
                vec![(1, 3)],
                Some(vec![rule(Some(""), None)]),
                None,
            ),
            (
                "rules.succeededIndexes is equal to succeededIndexes",
                vec![(2, 4), (6, 9)],
                Some(vec![rule(Some("2-4,6-9"), None)]),
                Some(0),
            ),
            (
                "rules.succeededIndexes is a subset of succeededIndexes",
                vec![(2, 5), (7, 15)],
                Some(vec![rule(Some("2-4,8-12"), None)]),
                Some(0),
            ),
            (
                "succeededIndexes is an empty set",
                vec![],
                Some(vec![rule(Some(""), None)]),
                None,
            ),
            (
                "rules.succeededIndexes and succeededIndexes are empty sets",
                vec![],
                Some(vec![rule(Some(""), None)]),
                None,
            ),
            (
                "rules.succeededIndexes is not in succeededIndexes",
                vec![(1, 3), (5, 7)],
                Some(vec![rule(Some("10-12,14-16"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes overlaps at first, idx only",
                vec![(2, 4), (6, 8)],
                Some(vec![rule(Some("1-3,5-7"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes overlaps at first, with count",
                vec![(2, 4), (6, 8)],
                Some(vec![rule(Some("1-3,5-7"), Some(4))]),
                Some(0),
            ),
            (
                "rules.succeededIndexes overlaps at last, idx only",
                vec![(1, 3), (5, 7)],
                Some(vec![rule(Some("2-4,6-9"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes overlaps at last, with count",
                vec![(1, 3), (5, 7)],
                Some(vec![rule(Some("2-4,6-9"), Some(4))]),
                Some(0),
            ),
            (
                "rules.succeededIndexes completely overlaps, idx only",
                vec![(1, 3), (7, 8)],
                Some(vec![rule(Some("0-4,6-9"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes completely overlaps, with count",
                vec![(1, 3), (7, 8)],
                Some(vec![rule(Some("0-4,6-9"), Some(5))]),
                Some(0),
            ),
            (
                "rules.succeededIndexes overlaps multiple at the end, idx only",
                vec![(1, 3), (5, 9)],
                Some(vec![rule(Some("0-6,8-9"), None)]),
                None,
            ),
            (
                "rules.succeededIndexes overlaps multiple at the end, with count",
                vec![(1, 3), (5, 9)],
                Some(vec![rule(Some("0-6,8-9"), Some(7))]),
                Some(0),
            ),
            (
                "overlaps at first, equals at last, idx only",
                vec![(1, 5), (7, 10)],
                Some(vec![rule(Some("0-5,7-9"), None)]),
                None,
            ),
            (
                "overlaps at first, equals at last, with count",
                vec![(1, 5), (7, 10)],
                Some(vec![rule(Some("0-5,7-9"), Some(8))]),
                Some(0),
            ),
            (
                "first rule interval overlaps at first, idx only",
                vec![(1, 10)],
                Some(vec![rule(Some("0-3,6-9"), None)]),
                None,
            ),
            (
                "first rule interval overlaps at first, with count",
                vec![(1, 10)],
                Some(vec![rule(Some("0-3,6-9"), Some(7))]),
                Some(0),
            ),
        ];
        for (name, succeeded, rules, want) in cases {
            let policy = rules.map(|rules| SuccessPolicy { rules });
            let got = match_success_policy(policy.as_ref(), 10, &iv(&succeeded));
            assert_eq!(
                got,
                want.map(|i| format!("Matched rules at index {i}")),
                "{name}"
            );
        }
    }
}
