//! Label selectors (`metav1.LabelSelector`: `matchLabels` and `matchExpressions` with
//! In, NotIn, Exists, DoesNotExist) evaluated against object labels.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `key in (values)` (also `key=value`).
    In(String, Vec<String>),
    /// `key notin (values)`.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A compiled label selector; empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// Why a `metav1.LabelSelector` cannot be compiled.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid label selector: {0}")]
pub struct SelectorError(pub String);

impl LabelSelector {
    /// A selector requiring each `key=value`.
    pub fn from_match_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        LabelSelector {
            requirements: labels
                .into_iter()
                .map(|(k, v)| Requirement::In(k.into(), vec![v.into()]))
                .collect(),
        }
    }

    /// Compile a `metav1.LabelSelector`.
    pub fn from_meta(sel: &meta::LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements: Vec<Requirement> = sel
            .match_labels
            .iter()
            .flatten()
            .map(|(k, v)| Requirement::In(k.clone(), vec![v.clone()]))
            .collect();
        for e in sel.match_expressions.iter().flatten() {
            let values = e.values.clone().unwrap_or_default();
            let r = match e.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(SelectorError(format!("values: Required value: must be specified when `operator` is 'In' or 'NotIn' (key {})", e.key)))
                }
                "In" => Requirement::In(e.key.clone(), values),
                "NotIn" => Requirement::NotIn(e.key.clone(), values),
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(SelectorError(format!("values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist' (key {})", e.key)))
                }
                "Exists" => Requirement::Exists(e.key.clone()),
                "DoesNotExist" => Requirement::DoesNotExist(e.key.clone()),
                other => return Err(SelectorError(format!("\"{other}\" is not a valid label selector operator"))),
            };
            requirements.push(r);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    /// Whether the selector has no requirement (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
        l.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    // Cases after apimachinery's TestLabelSelectorAsSelector / TestSelectorMatches.
    #[test]
    fn meta_selector_semantics() {
        let sel = meta::LabelSelector {
            match_labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            match_expressions: Some(vec![
                meta::LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["fe".into(), "be".into()]),
                },
                meta::LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "NotIn".into(),
                    values: Some(vec!["prod".into()]),
                },
                meta::LabelSelectorRequirement {
                    key: "team".into(),
                    operator: "Exists".into(),
                    values: None,
                },
                meta::LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let s = LabelSelector::from_meta(&sel).expect("valid");
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "fe"), ("team", "a")])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("tier", "fe"),
            ("team", "a"),
            ("env", "prod")
        ])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db"), ("team", "a")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "fe")])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("tier", "fe"),
            ("team", "a"),
            ("legacy", "")
        ])));
        assert!(LabelSelector::default().matches(&labels(&[])));
        let bad = meta::LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![meta::LabelSelectorRequirement {
                key: "k".into(),
                operator: "In".into(),
                values: None,
            }]),
        };
        assert!(LabelSelector::from_meta(&bad).is_err());
    }
}
