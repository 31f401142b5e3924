//! A webhook's namespaceSelector and objectSelector (upstream
//! `admission/plugin/webhook/predicates/{namespace,object}/matcher.go`).

use serde_json::{Map, Value};

use apimachinery::selector::LabelSelector;
use apimachinery::status::{ApiError, ApiResult};

/// The request as the namespace matcher sees it.
#[derive(Clone, Copy, Debug)]
pub struct NamespaceRequest<'a> {
    /// Whether the resource is core `namespaces`.
    pub namespaces: bool,
    /// The subresource (`""` for none).
    pub subresource: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    pub operation: &'a str,
    /// The request's namespace (a Namespace's name on requests on it).
    pub namespace: &'a str,
    /// The request's object.
    pub object: Option<&'a Value>,
}

fn labels_of(obj: &Value) -> Option<Map<String, Value>> {
    let meta = obj.get("metadata")?.as_object()?;
    Some(
        meta.get("labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    )
}

/// The labels of the request's namespace (upstream `GetNamespaceLabels`): a Namespace's
/// own object on its create or update (the stored one is not there yet or is older),
/// otherwise the stored namespace `lookup` finds (404 when it does not).
pub fn namespace_labels(
    r: &NamespaceRequest<'_>,
    lookup: impl Fn(&str) -> Option<Value>,
) -> ApiResult<Map<String, Value>> {
    if r.namespaces && r.subresource.is_empty() && matches!(r.operation, "CREATE" | "UPDATE") {
        return Ok(r.object.and_then(labels_of).unwrap_or_default());
    }
    match lookup(r.namespace) {
        Some(ns) => Ok(labels_of(&ns).unwrap_or_default()),
        None => Err(ApiError::not_found("", "namespaces", r.namespace)),
    }
}

/// Whether the webhook's namespaceSelector selects the request (upstream
/// `MatchNamespaceSelector`): cluster-scoped requests other than on Namespaces always.
pub fn match_namespace_selector(
    selector: &Result<LabelSelector, String>,
    r: &NamespaceRequest<'_>,
    lookup: impl Fn(&str) -> Option<Value>,
) -> ApiResult<bool> {
    if r.namespace.is_empty() && !r.namespaces {
        return Ok(true);
    }
    let sel = selector
        .as_ref()
        .map_err(|e| ApiError::internal(e.clone()))?;
    if sel.is_empty() {
        return Ok(true);
    }
    let labels = namespace_labels(r, lookup)?;
    Ok(sel.matches_map(&labels))
}

fn match_object(selector: &LabelSelector, obj: Option<&Value>) -> bool {
    // an object without metadata (an options object) is never selected
    match obj.and_then(labels_of) {
        Some(labels) => selector.matches_map(&labels),
        None => false,
    }
}

/// Whether the webhook's objectSelector selects the new or the old object (upstream
/// `MatchObjectSelector`).
pub fn match_object_selector(
    selector: &Result<LabelSelector, String>,
    object: Option<&Value>,
    old_object: Option<&Value>,
) -> ApiResult<bool> {
    let sel = selector
        .as_ref()
        .map_err(|e| ApiError::internal(e.clone()))?;
    if sel.is_empty() {
        return Ok(true);
    }
    Ok(match_object(sel, object) || match_object(sel, old_object))
}

#[cfg(test)]
mod tests {
    //! Upstream's `namespace/matcher_test.go` and `object/matcher_test.go`.
    use super::*;
    use serde_json::json;

    /// name, selector, object, old object, whether it matches
    type Case<'a> = (
        &'a str,
        &'a Result<LabelSelector, String>,
        Option<&'a Value>,
        Option<&'a Value>,
        bool,
    );

    fn sel(v: Value) -> Result<LabelSelector, String> {
        LabelSelector::from_label_selector_json(&v).map_err(|e| e.to_string())
    }

    fn lookup(name: &str) -> Option<Value> {
        (name == "1").then(|| json!({"metadata": {"name": "1", "labels": {"runlevel": "1"}}}))
    }

    fn req<'a>(
        namespaces: bool,
        sub: &'a str,
        op: &'a str,
        ns: &'a str,
        obj: Option<&'a Value>,
    ) -> NamespaceRequest<'a> {
        NamespaceRequest {
            namespaces,
            subresource: sub,
            operation: op,
            namespace: ns,
            object: obj,
        }
    }

    #[test]
    fn namespace_labels_come_from_the_object_or_the_store() {
        let ns2 = json!({"metadata": {"name": "2", "labels": {"runlevel": "2"}}});
        let two = json!({"runlevel": "2"});
        let one = json!({"runlevel": "1"});
        let cases = [
            // creating a namespace: the labels of the object itself
            (req(true, "", "CREATE", "", Some(&ns2)), &two),
            // updating one: the new object's
            (req(true, "", "UPDATE", "2", Some(&ns2)), &two),
            // deleting one: the stored namespace's
            (req(true, "", "DELETE", "1", Some(&ns2)), &one),
            // a namespace's subresource: the stored namespace's
            (req(true, "finalizers", "CREATE", "1", None), &one),
            // a pod: its namespace's
            (req(false, "", "CREATE", "1", None), &one),
        ];
        for (r, want) in cases {
            let got = namespace_labels(&r, lookup).expect("labels");
            assert_eq!(&Value::Object(got), want, "{r:?}");
        }
        let e = namespace_labels(&req(false, "", "CREATE", "missing", None), lookup)
            .expect_err("missing namespace");
        assert_eq!(
            (e.code, e.message.as_str()),
            (404, "namespaces \"missing\" not found")
        );
    }

    #[test]
    fn cluster_scoped_resources_are_not_exempt() {
        let r = req(false, "", "CREATE", "", None);
        let s = sel(json!({"matchLabels": {"a": "b"}}));
        assert_eq!(match_namespace_selector(&s, &r, |_| None), Ok(true));
        let r = req(false, "", "CREATE", "1", None);
        assert_eq!(match_namespace_selector(&s, &r, lookup), Ok(false));
        let s = sel(json!({"matchLabels": {"runlevel": "1"}}));
        assert_eq!(match_namespace_selector(&s, &r, lookup), Ok(true));
    }

    #[test]
    fn object_selectors_match_the_new_or_the_old_object() {
        let level1 = json!({"metadata": {"labels": {"runlevel": "1"}}});
        let level2 = json!({"metadata": {"labels": {"runlevel": "2"}}});
        let options = json!({"kind": "NodeProxyOptions", "path": "/"});
        let excluder = sel(json!({"matchExpressions": [
            {"key": "runlevel", "operator": "NotIn", "values": ["1"]}]}));
        let everything = sel(json!({}));
        let cases: [Case<'_>; 7] = [
            (
                "empty object selector matches everything",
                &everything,
                None,
                None,
                true,
            ),
            ("matches new object", &excluder, Some(&level2), None, true),
            ("matches old object", &excluder, None, Some(&level2), true),
            (
                "does not match new object",
                &excluder,
                Some(&level1),
                None,
                false,
            ),
            (
                "does not match old object",
                &excluder,
                None,
                Some(&level1),
                false,
            ),
            (
                "does not match an object without metadata",
                &excluder,
                Some(&options),
                None,
                false,
            ),
            (
                "empty selector matches an object without metadata",
                &everything,
                Some(&options),
                None,
                true,
            ),
        ];
        for (name, s, obj, old, want) in cases {
            assert_eq!(match_object_selector(s, obj, old), Ok(want), "{name}");
        }
    }
}
