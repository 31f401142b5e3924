//! Eviction (`pods/<name>/eviction`, bodies in `policy/v1` or `policy/v1beta1`): the
//! decisions of upstream's `EvictionREST` (`pkg/registry/core/pod/storage/eviction.go`)
//! over stored JSON, kept free of storage so that they are tested as tables. The
//! endpoint that reads, writes and deletes is `crate::endpoints::eviction`.

use serde_json::{json, Map, Value};

use crate::registry::validation::{parse_selector, selects};
use apimachinery::status::{ApiError, ApiResult, Cause};

/// Upstream's answer when a budget forbids the eviction.
pub const VIOLATES_BUDGET: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";

/// Upstream's answer when more than one budget selects the pod (a 500 `Status`).
pub const MULTIPLE_BUDGETS: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// Upstream `MaxDisruptedPodSize`: evictions not yet confirmed by the disruption
/// controller beyond which the budget refuses more.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// The `StatusCause` type upstream gives budget refusals (`policyv1.DisruptionBudgetCause`).
pub const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";

/// The Eviction group versions the subresource accepts (upstream `AcceptsGroupVersion`).
pub const ACCEPTED_VERSIONS: &[&str] = &["policy/v1", "policy/v1beta1"];

/// Check an Eviction body posted for the pod `name`: the kind, the group version and
/// the name must match (upstream: `name in URL does not match name in Eviction object`).
pub fn check_body(name: &str, eviction: &Value) -> ApiResult<()> {
    if let Some(kind) = eviction.get("kind").and_then(Value::as_str) {
        if !kind.is_empty() && kind != "Eviction" {
            return Err(ApiError::bad_request(format!(
                "not a Eviction object: {kind}"
            )));
        }
    }
    if let Some(v) = eviction.get("apiVersion").and_then(Value::as_str) {
        if !v.is_empty() && !ACCEPTED_VERSIONS.contains(&v) {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version (policy/v1)"
            )));
        }
    }
    let body_name = eviction
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    Ok(())
}

fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn deleting(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Upstream `canIgnorePDB`: a pod that is terminal, not yet running (Pending) or
/// already being deleted is deleted without asking its budgets.
pub fn can_ignore_pdb(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || deleting(pod)
}

/// Upstream `shouldEnforceResourceVersion`: the deletion of a pod that may still become
/// ready is made conditional on the version that was judged.
pub fn should_enforce_resource_version(pod: &Value) -> bool {
    !(matches!(phase(pod), "Succeeded" | "Failed") || deleting(pod))
}

/// Upstream `podutil.IsPodReady`: the pod's `Ready` condition is `True`.
pub fn is_pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// The budgets among `pdbs` (all of the pod's namespace) that select the pod; a budget
/// with an invalid, missing or empty selector selects nothing (upstream
/// `getPodDisruptionBudgets`).
pub fn matching_budgets<'a>(
    pod: &Value,
    pdbs: impl IntoIterator<Item = &'a Value>,
) -> Vec<&'a Value> {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    pdbs.into_iter()
        .filter(|pdb| {
            let sel = pdb.pointer("/spec/selector");
            let parsed = parse_selector(sel);
            !parsed.is_empty() && !parsed.matches_nothing() && selects(&parsed, labels)
        })
        .collect()
}

fn status_i64(pdb: &Value, field: &str) -> i64 {
    pdb.pointer(&format!("/status/{field}"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether an unready pod may go without taking from the budget (upstream: the pod
/// does not count as healthy, and either the budget's `unhealthyPodEvictionPolicy` is
/// `AlwaysAllow` or, by default and with `IfHealthyBudget`, the budget is met:
/// `currentHealthy >= desiredHealthy > 0`). The deletion is then conditional on the
/// pod's resourceVersion. `false` for a ready pod.
pub fn unhealthy_pod_may_go(pod: &Value, pdb: &Value) -> bool {
    if is_pod_ready(pod) {
        return false;
    }
    if pdb
        .pointer("/spec/unhealthyPodEvictionPolicy")
        .and_then(Value::as_str)
        == Some("AlwaysAllow")
    {
        return true;
    }
    let desired = status_i64(pdb, "desiredHealthy");
    status_i64(pdb, "currentHealthy") >= desired && desired > 0
}

/// Upstream `createTooManyRequestsError`: the budget has not been processed since its
/// last change (429, retry after 10 seconds).
pub fn still_processing(pdb_name: &str) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", VIOLATES_BUDGET);
    e.retry_after = Some(10);
    e.causes.push(Cause {
        reason: DISRUPTION_BUDGET_CAUSE.into(),
        message: format!(
            "The disruption budget {pdb_name} is still being processed by the server."
        ),
        field: String::new(),
    });
    e
}

fn forbidden(pdb_name: &str, why: &str) -> ApiError {
    let mut e = ApiError::forbidden(format!(
        "poddisruptionbudget.policy \"{pdb_name}\" is forbidden: {why}"
    ));
    e.group = Some("policy".into());
    e.kind = Some("poddisruptionbudget".into());
    e.name = Some(pdb_name.to_string());
    e
}

/// Upstream `checkAndDecrement`: whether `pdb` allows one more disruption; if so the
/// budget as it is to be stored, with `disruptionsAllowed` one less, the
/// `DisruptionAllowed` condition updated when that reaches zero and, unless `dry_run`,
/// the pod in `disruptedPods` at `now`. `Ok(None)` when a dry run would succeed (the
/// budget is not written).
pub fn check_and_decrement(
    pdb: &Value,
    pod_name: &str,
    dry_run: bool,
    now: &str,
) -> ApiResult<Option<Value>> {
    let name = pdb
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let generation = pdb
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if status_i64(pdb, "observedGeneration") < generation {
        return Err(still_processing(name));
    }
    let allowed = status_i64(pdb, "disruptionsAllowed");
    if allowed < 0 {
        return Err(forbidden(name, "pdb disruptions allowed is negative"));
    }
    let disrupted = pdb
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, Map::len);
    if disrupted > MAX_DISRUPTED_POD_SIZE {
        return Err(forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let mut e = ApiError::new(429, "TooManyRequests", VIOLATES_BUDGET);
        e.causes.push(Cause {
            reason: DISRUPTION_BUDGET_CAUSE.into(),
            message: format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status_i64(pdb, "desiredHealthy"),
                status_i64(pdb, "currentHealthy")
            ),
            field: String::new(),
        });
        return Err(e);
    }
    if dry_run {
        return Ok(None);
    }
    let mut new = pdb.clone();
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    new["status"]["disruptionsAllowed"] = json!(allowed - 1);
    if allowed - 1 == 0 {
        update_disruption_allowed_condition(&mut new, now);
    }
    if !new["status"]["disruptedPods"].is_object() {
        new["status"]["disruptedPods"] = json!({});
    }
    new["status"]["disruptedPods"][pod_name] = json!(now);
    Ok(Some(new))
}

/// Upstream `pdbhelper.UpdateDisruptionAllowedCondition` (with `meta.SetStatusCondition`):
/// `DisruptionAllowed` True/`SufficientPods` when disruptions are allowed, else
/// False/`InsufficientPods`; the transition time changes only with the status.
pub fn update_disruption_allowed_condition(pdb: &mut Value, now: &str) {
    let allowed = status_i64(pdb, "disruptionsAllowed") > 0;
    let observed = status_i64(pdb, "observedGeneration");
    let (status, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    if !pdb["status"].is_object() {
        pdb["status"] = json!({});
    }
    let conditions = &mut pdb["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    match list.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
        Some(c) => {
            if c["status"] != status {
                c["status"] = json!(status);
                c["lastTransitionTime"] = json!(now);
            }
            c["reason"] = json!(reason);
            c["message"] = json!("");
            c["observedGeneration"] = json!(observed);
        }
        None => list.push(json!({
            "type": "DisruptionAllowed",
            "status": status,
            "reason": reason,
            "message": "",
            "observedGeneration": observed,
            "lastTransitionTime": now,
        })),
    }
}

/// Set the pod's `DisruptionTarget` condition to True with reason
/// `EvictionByEvictionAPI` (upstream `addConditionAndDeletePod`, through
/// `podutil.UpdatePodCondition`: the transition time changes only with the status).
pub fn set_disruption_target(pod: &mut Value, now: &str) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let wanted = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    match list.iter_mut().find(|c| c["type"] == "DisruptionTarget") {
        Some(c) => {
            if c["status"] != "True" {
                c["lastTransitionTime"] = json!(now);
            }
            c["status"] = wanted["status"].clone();
            c["reason"] = wanted["reason"].clone();
            c["message"] = wanted["message"].clone();
        }
        None => {
            let mut c = wanted;
            c["lastProbeTime"] = Value::Null;
            c["lastTransitionTime"] = json!(now);
            list.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn pod(phase: &str, ready: Option<bool>) -> Value {
        let mut p = json!({
            "metadata": {"name": "t1", "namespace": "default", "labels": {"a": "true"}},
            "status": {"phase": phase},
        });
        if let Some(r) = ready {
            p["status"]["conditions"] =
                json!([{"type": "Ready", "status": if r { "True" } else { "False" }}]);
        }
        p
    }

    fn pdb(allowed: i64, current: i64, desired: i64) -> Value {
        json!({
            "metadata": {"name": "foo", "namespace": "default", "generation": 1},
            "spec": {"selector": {"matchLabels": {"a": "true"}}},
            "status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                       "currentHealthy": current, "desiredHealthy": desired},
        })
    }

    /// Upstream TestEviction / TestEvictionIgnorePDB: which pods skip the budget.
    #[test]
    fn pods_that_ignore_budgets() {
        for (phase, ignore) in [
            ("Running", false),
            ("Pending", true),
            ("Succeeded", true),
            ("Failed", true),
            ("Unknown", false),
        ] {
            assert_eq!(can_ignore_pdb(&pod(phase, None)), ignore, "{phase}");
        }
        let mut terminating = pod("Running", Some(true));
        terminating["metadata"]["deletionTimestamp"] = json!(NOW);
        assert!(can_ignore_pdb(&terminating));
        assert!(!should_enforce_resource_version(&terminating));
        assert!(should_enforce_resource_version(&pod("Pending", None)));
        assert!(!should_enforce_resource_version(&pod("Failed", None)));
    }

    /// Upstream TestEvictionIgnorePDB's unhealthy cases and the unhealthyPodEvictionPolicy
    /// table of TestEvictionPDBStatus.
    #[test]
    fn unready_pods_and_the_unhealthy_pod_eviction_policy() {
        // our pod healthy: the budget decides
        assert!(!unhealthy_pod_may_go(
            &pod("Running", Some(true)),
            &pdb(0, 2, 2)
        ));
        // our pod unhealthy, the budget is met: deleted without decrement
        assert!(unhealthy_pod_may_go(
            &pod("Running", Some(false)),
            &pdb(0, 2, 2)
        ));
        assert!(unhealthy_pod_may_go(&pod("Running", None), &pdb(0, 3, 2)));
        // the budget is not met: checked (and refused)
        assert!(!unhealthy_pod_may_go(
            &pod("Running", Some(false)),
            &pdb(0, 1, 2)
        ));
        // a budget that desires nothing does not let it go either
        assert!(!unhealthy_pod_may_go(
            &pod("Running", Some(false)),
            &pdb(0, 0, 0)
        ));
        let mut if_healthy = pdb(0, 1, 2);
        if_healthy["spec"]["unhealthyPodEvictionPolicy"] = json!("IfHealthyBudget");
        assert!(!unhealthy_pod_may_go(
            &pod("Running", Some(false)),
            &if_healthy
        ));
        let mut always = pdb(0, 1, 2);
        always["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
        assert!(unhealthy_pod_may_go(&pod("Running", Some(false)), &always));
        assert!(!unhealthy_pod_may_go(&pod("Running", Some(true)), &always));
    }

    #[test]
    fn budgets_that_select_the_pod() {
        let p = pod("Running", Some(true));
        let other = json!({"metadata": {"name": "b"}, "spec": {"selector": {"matchLabels": {"b": "true"}}}});
        let empty = json!({"metadata": {"name": "e"}, "spec": {"selector": {}}});
        let none = json!({"metadata": {"name": "n"}, "spec": {}});
        let bad = json!({"metadata": {"name": "x"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}});
        let all = [pdb(1, 0, 0), other, empty, none, bad];
        let m = matching_budgets(&p, all.iter());
        assert_eq!(m.len(), 1);
        assert_eq!(m[0]["metadata"]["name"], "foo");
        let unlabelled = json!({"metadata": {"name": "t"}});
        assert!(matching_budgets(&unlabelled, all.iter()).is_empty());
    }

    /// Upstream TestEvictionPDBStatus: decrement, condition and disruptedPods.
    #[test]
    fn check_and_decrement_as_upstream() {
        let new = check_and_decrement(&pdb(2, 3, 1), "t1", false, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(new["status"]["disruptionsAllowed"], 1);
        assert_eq!(new["status"]["disruptedPods"]["t1"], NOW);
        // the condition is only touched when the budget is exhausted
        assert!(new["status"]["conditions"].is_null());
        let new = check_and_decrement(&new, "t2", false, NOW)
            .unwrap()
            .unwrap();
        assert_eq!(new["status"]["disruptionsAllowed"], 0);
        let c = &new["status"]["conditions"][0];
        assert_eq!(
            (
                c["type"].as_str(),
                c["status"].as_str(),
                c["reason"].as_str()
            ),
            (
                Some("DisruptionAllowed"),
                Some("False"),
                Some("InsufficientPods")
            )
        );
        assert_eq!(new["status"]["disruptedPods"].as_object().unwrap().len(), 2);
        // exhausted: 429 with the budget's numbers
        let e = check_and_decrement(&new, "t3", false, NOW).unwrap_err();
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (429, "TooManyRequests", VIOLATES_BUDGET)
        );
        assert_eq!(e.retry_after, None);
        assert_eq!(e.causes[0].reason, DISRUPTION_BUDGET_CAUSE);
        assert_eq!(
            e.causes[0].message,
            "The disruption budget foo needs 1 healthy pods and has 3 currently"
        );
        // dry run: allowed but nothing to write
        assert_eq!(
            check_and_decrement(&pdb(1, 3, 1), "t1", true, NOW).unwrap(),
            None
        );
        assert!(check_and_decrement(&pdb(0, 3, 1), "t1", true, NOW).is_err());
        // not yet processed: 429, retry after 10 s
        let mut stale = pdb(5, 3, 1);
        stale["metadata"]["generation"] = json!(2);
        let e = check_and_decrement(&stale, "t1", false, NOW).unwrap_err();
        assert_eq!((e.code, e.retry_after), (429, Some(10)));
        assert_eq!(
            e.causes[0].message,
            "The disruption budget foo is still being processed by the server."
        );
        // negative and overfull budgets are forbidden
        let e = check_and_decrement(&pdb(-1, 0, 0), "t1", false, NOW).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, "poddisruptionbudget.policy \"foo\" is forbidden: pdb disruptions allowed is negative")
        );
        let mut full = pdb(1, 0, 0);
        full["status"]["disruptedPods"] = Value::Object(
            (0..=MAX_DISRUPTED_POD_SIZE)
                .map(|i| (format!("p{i}"), json!(NOW)))
                .collect(),
        );
        assert_eq!(
            check_and_decrement(&full, "t1", false, NOW)
                .unwrap_err()
                .code,
            403
        );
    }

    #[test]
    fn eviction_bodies() {
        let ok = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "t1"}});
        assert!(check_body("t1", &ok).is_ok());
        let beta =
            json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "t1"}});
        assert!(check_body("t1", &beta).is_ok());
        let e = check_body("t1bad-name", &ok).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "name in URL does not match name in Eviction object")
        );
        let wrong = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t1"}});
        assert_eq!(check_body("t1", &wrong).unwrap_err().code, 400);
    }

    #[test]
    fn disruption_target_condition() {
        let mut p = pod("Running", Some(true));
        set_disruption_target(&mut p, NOW);
        let c = p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "DisruptionTarget")
            .unwrap()
            .clone();
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], "EvictionByEvictionAPI");
        assert_eq!(c["message"], "Eviction API: evicting");
        assert_eq!(c["lastTransitionTime"], NOW);
        // already True: the transition time stays
        set_disruption_target(&mut p, "2030-01-01T00:00:00Z");
        assert_eq!(p["status"]["conditions"][1]["lastTransitionTime"], NOW);
    }
}
