//! Resource lists and the arithmetic quota does on them (upstream
//! `k8s.io/apiserver/pkg/quota/v1/resources.go`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::quantity::{self, Quantity};

/// A `ResourceList`: resource name → quantity, ordered by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The resource list a JSON object holds (`{"cpu": "100m", ...}`); entries that are not
/// quantities are skipped (validation rejects them before quota sees them).
pub fn from_json(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, q)| quantity::from_json(q).map(|q| (k.clone(), q)))
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON form of a resource list, each quantity in its canonical string.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.canonical())))
            .collect::<Map<String, Value>>(),
    )
}

/// `Equals`: the same names with equal values (`1` equals `1000m`).
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, q)| b.get(k).is_some_and(|o| o.cmp_value(q).is_eq()))
}

/// `LessThanOrEqual`: whether every name of `b` that `a` also has is at most `b`'s
/// value; also the names where it is not, sorted.
pub fn less_than_or_equal(a: &ResourceList, b: &ResourceList) -> (bool, Vec<String>) {
    let exceeded: Vec<String> = b
        .iter()
        .filter(|(k, bq)| a.get(*k).is_some_and(|aq| aq.cmp_value(bq).is_gt()))
        .map(|(k, _)| k.clone())
        .collect();
    (exceeded.is_empty(), exceeded)
}

/// `Max`: per name, the larger value.
pub fn max(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, q) in b {
        match out.get(k) {
            Some(have) if have.cmp_value(q).is_ge() => {}
            _ => {
                out.insert(k.clone(), *q);
            }
        }
    }
    out
}

/// `Add`: the sum over the union of names.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, q) in b {
        let sum = match out.get(k) {
            Some(have) => *have + *q,
            None => *q,
        };
        out.insert(k.clone(), sum);
    }
    out
}

/// `Subtract`: `a - b` over the union of names (names only in `b` become negative).
pub fn subtract(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, q) in b {
        let diff = match out.get(k) {
            Some(have) => *have - *q,
            None => Quantity::zero() - *q,
        };
        out.insert(k.clone(), diff);
    }
    out
}

/// `SubtractWithNonNegativeResult`: `a - b`, each value at least zero (names only in
/// `b` become zero).
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    subtract(a, b)
        .into_iter()
        .map(|(k, q)| {
            if q.is_negative() {
                (k, Quantity::zero())
            } else {
                (k, q)
            }
        })
        .collect()
}

/// `Mask`: only the entries whose names are in `names`.
pub fn mask(list: &ResourceList, names: &[String]) -> ResourceList {
    list.iter()
        .filter(|(k, _)| names.contains(k))
        .map(|(k, q)| (k.clone(), *q))
        .collect()
}

/// `ResourceNames`: the names of a list (sorted).
pub fn resource_names(list: &ResourceList) -> Vec<String> {
    list.keys().cloned().collect()
}

/// `Contains`.
pub fn contains(names: &[String], name: &str) -> bool {
    names.iter().any(|n| n == name)
}

/// `ContainsPrefix`: whether `name` starts with one of `prefixes`.
pub fn contains_prefix(prefixes: &[&str], name: &str) -> bool {
    prefixes.iter().any(|p| name.starts_with(p))
}

/// `Intersection`: the names in both, deduplicated and sorted.
pub fn intersection(a: &[String], b: &[String]) -> Vec<String> {
    let b: BTreeSet<&String> = b.iter().collect();
    a.iter()
        .filter(|n| b.contains(n))
        .cloned()
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect()
}

/// `Difference`: the names of `a` not in `b`, deduplicated and sorted.
pub fn difference(a: &[String], b: &[String]) -> Vec<String> {
    let b: BTreeSet<&String> = b.iter().collect();
    a.iter()
        .filter(|n| !b.contains(n))
        .cloned()
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect()
}

/// `IsZero`: every value is zero (true for an empty list).
pub fn is_zero(list: &ResourceList) -> bool {
    list.values().all(|q| q.is_zero())
}

/// `RemoveZeros`: the list without its zero entries.
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, q)| !q.is_zero())
        .map(|(k, q)| (k.clone(), *q))
        .collect()
}

/// `IsNegative`: the names whose values are below zero, sorted.
pub fn is_negative(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, q)| q.is_negative())
        .map(|(k, _)| k.clone())
        .collect()
}

/// `k=v,k2=v2` of a list, sorted by name (upstream's `prettyPrint`).
pub fn pretty_print(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, q)| format!("{k}={}", q.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[(&str, &str)]) -> ResourceList {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), quantity::parse(v).unwrap()))
            .collect()
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    // upstream resources_test.go TestEquals
    #[test]
    fn equals_table() {
        let cases = [
            ("isEqualWithEmpty", list(&[]), list(&[]), true),
            (
                "isEqual",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                true,
            ),
            (
                "isEqualWithKeys",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi"), ("pods", "1")]),
                false,
            ),
            (
                "isNotEqualSameKeys",
                list(&[("cpu", "200m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                false,
            ),
            (
                "isNotEqualDiffKeys",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("pods", "1")]),
                false,
            ),
            (
                "sameValueDifferentFormat",
                list(&[("cpu", "1")]),
                list(&[("cpu", "1000m")]),
                true,
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(equals(&a, &b), want, "{name}");
        }
    }

    // TestLessThanOrEqual
    #[test]
    fn less_than_or_equal_table() {
        let cases = [
            ("isEmpty", list(&[]), list(&[]), true, vec![]),
            (
                "isEqual",
                list(&[("cpu", "100m")]),
                list(&[("cpu", "100m")]),
                true,
                vec![],
            ),
            (
                "isLessThan",
                list(&[("cpu", "100m")]),
                list(&[("cpu", "200m")]),
                true,
                vec![],
            ),
            (
                "isGreaterThan",
                list(&[("cpu", "200m")]),
                list(&[("cpu", "100m")]),
                false,
                vec!["cpu"],
            ),
            (
                "missingInA",
                list(&[]),
                list(&[("cpu", "100m")]),
                true,
                vec![],
            ),
            (
                "missingInB",
                list(&[("cpu", "200m")]),
                list(&[]),
                true,
                vec![],
            ),
            (
                "several",
                list(&[("cpu", "200m"), ("memory", "2Gi"), ("pods", "1")]),
                list(&[("cpu", "100m"), ("memory", "1Gi"), ("pods", "1")]),
                false,
                vec!["cpu", "memory"],
            ),
        ];
        for (name, a, b, want, exceeded) in cases {
            assert_eq!(
                less_than_or_equal(&a, &b),
                (want, names(&exceeded)),
                "{name}"
            );
        }
    }

    // TestMax
    #[test]
    fn max_table() {
        let cases = [
            ("noKeys", list(&[]), list(&[]), list(&[])),
            (
                "toEmpty",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
            ),
            (
                "matching",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "150m"), ("memory", "1Gi")]),
                list(&[("cpu", "150m"), ("memory", "1Gi")]),
            ),
            (
                "matching(reverse)",
                list(&[("cpu", "150m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "150m"), ("memory", "1Gi")]),
            ),
            (
                "matching-equal",
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
                list(&[("cpu", "100m"), ("memory", "1Gi")]),
            ),
        ];
        for (name, a, b, want) in cases {
            assert!(equals(&max(&a, &b), &want), "{name}");
        }
    }

    // TestAdd
    #[test]
    fn add_table() {
        let cases = [
            ("noKeys", list(&[]), list(&[]), list(&[])),
            (
                "toEmpty",
                list(&[("cpu", "100m")]),
                list(&[]),
                list(&[("cpu", "100m")]),
            ),
            (
                "matching",
                list(&[("cpu", "100m")]),
                list(&[("cpu", "100m")]),
                list(&[("cpu", "200m")]),
            ),
            (
                "union",
                list(&[("cpu", "100m")]),
                list(&[("memory", "100Mi")]),
                list(&[("cpu", "100m"), ("memory", "100Mi")]),
            ),
        ];
        for (name, a, b, want) in cases {
            assert!(equals(&add(&a, &b), &want), "{name}");
        }
        // the canonical forms upstream prints (TestAdmitBelowQuotaLimit's used values)
        let sum = add(
            &list(&[("cpu", "1"), ("memory", "50Gi")]),
            &list(&[("cpu", "100m"), ("memory", "2Gi")]),
        );
        assert_eq!(sum["cpu"].canonical(), "1100m");
        assert_eq!(sum["memory"].canonical(), "52Gi");
    }

    // TestSubtract and SubtractWithNonNegativeResult
    #[test]
    fn subtract_table() {
        let cases = [
            ("noKeys", list(&[]), list(&[]), list(&[])),
            (
                "value-empty",
                list(&[("cpu", "100m")]),
                list(&[]),
                list(&[("cpu", "100m")]),
            ),
            (
                "empty-value",
                list(&[]),
                list(&[("cpu", "100m")]),
                list(&[("cpu", "-100m")]),
            ),
            (
                "value-value",
                list(&[("cpu", "200m")]),
                list(&[("cpu", "100m")]),
                list(&[("cpu", "100m")]),
            ),
        ];
        for (name, a, b, want) in cases {
            assert!(equals(&subtract(&a, &b), &want), "{name}");
        }
        let non_negative = [
            (
                "empty-value",
                list(&[]),
                list(&[("cpu", "100m")]),
                list(&[("cpu", "0")]),
            ),
            (
                "value-larger",
                list(&[("cpu", "100m")]),
                list(&[("cpu", "200m")]),
                list(&[("cpu", "0")]),
            ),
            (
                "value-smaller",
                list(&[("cpu", "300m")]),
                list(&[("cpu", "200m")]),
                list(&[("cpu", "100m")]),
            ),
        ];
        for (name, a, b, want) in non_negative {
            assert!(equals(&subtract_non_negative(&a, &b), &want), "{name}");
        }
    }

    // TestResourceNames, TestContains, TestContainsPrefix, TestIntersection, TestDifference
    #[test]
    fn name_helpers() {
        assert!(resource_names(&list(&[])).is_empty());
        assert_eq!(
            resource_names(&list(&[("memory", "1Gi"), ("cpu", "100m")])),
            names(&["cpu", "memory"])
        );
        assert!(!contains(&[], "cpu"));
        assert!(contains(&names(&["cpu", "memory"]), "cpu"));
        assert!(!contains(&names(&["cpu", "memory"]), "pods"));
        assert!(contains_prefix(&["hugepages-"], "hugepages-2Mi"));
        assert!(!contains_prefix(&["hugepages-"], "memory"));
        assert!(!contains_prefix(&[], "hugepages-2Mi"));
        assert_eq!(
            intersection(&names(&["foo", "bar", "bar"]), &names(&["bar", "baz"])),
            names(&["bar"])
        );
        assert!(intersection(&names(&["foo"]), &[]).is_empty());
        assert_eq!(
            difference(&names(&["foo", "bar", "baz"]), &names(&["bar"])),
            names(&["baz", "foo"])
        );
    }

    // TestIsZero, TestRemoveZeros, TestIsNegative
    #[test]
    fn zero_and_negative() {
        assert!(is_zero(&list(&[])));
        assert!(is_zero(&list(&[("cpu", "0"), ("memory", "0")])));
        assert!(!is_zero(&list(&[("cpu", "0"), ("memory", "1")])));
        assert!(equals(
            &remove_zeros(&list(&[("cpu", "0"), ("memory", "1")])),
            &list(&[("memory", "1")])
        ));
        assert!(is_negative(&list(&[])).is_empty());
        assert!(is_negative(&list(&[("cpu", "100m")])).is_empty());
        assert_eq!(
            is_negative(&list(&[("cpu", "-100m"), ("memory", "1Gi")])),
            names(&["cpu"])
        );
    }

    #[test]
    fn json_round_trip() {
        let v = serde_json::json!({"cpu": "1000m", "memory": "1024Mi", "bad": {}});
        let l = from_json(Some(&v));
        assert_eq!(l.len(), 2);
        assert_eq!(
            to_json(&l),
            serde_json::json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(pretty_print(&l), "cpu=1,memory=1Gi");
    }
}
