// Cases after upstream plugin/pkg/admission/resourcequota/admission_test.go.

use chrono::Utc;
use serde_json::{json, Value};

use super::*;

fn quota(name: &str, scopes: &[&str], hard: Value, used: Value) -> Quota {
    Quota::from_json(&json!({
        "metadata": {"name": name, "namespace": "test", "resourceVersion": "124"},
        "spec": {"hard": hard.clone(), "scopes": scopes},
        "status": {"hard": hard, "used": used},
    }))
}

fn pod(name: &str, requests: Value, limits: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "test"},
        "spec": {"containers": [{"name": "ctr", "image": "image",
            "resources": {"requests": requests, "limits": limits}}]}})
}

fn create(quotas: &[Quota], e: &Evaluator, obj: &Value) -> Result<Vec<Charge>, String> {
    check_request(quotas, e, Operation::Create, None, obj, None, Utc::now())
}

fn update(
    quotas: &[Quota],
    e: &Evaluator,
    obj: &Value,
    old: &Value,
) -> Result<Vec<Charge>, String> {
    check_request(
        quotas,
        e,
        Operation::Update,
        None,
        obj,
        Some(old),
        Utc::now(),
    )
}

fn used_of(charges: &[Charge], index: usize) -> String {
    let c = charges
        .iter()
        .find(|c| c.index == index)
        .expect("the quota is charged");
    resources::pretty_print(&c.new_used)
}

fn compute_quota() -> Quota {
    quota(
        "quota",
        &[],
        json!({"cpu": "3", "memory": "100Gi", "pods": "5"}),
        json!({"cpu": "1", "memory": "50Gi", "pods": "3"}),
    )
}

// TestAdmitBelowQuotaLimit
#[test]
fn admit_below_quota_limit() {
    let charges = create(
        &[compute_quota()],
        &Evaluator::Pods,
        &pod(
            "allowed-pod",
            json!({"cpu": "100m", "memory": "2Gi"}),
            json!({}),
        ),
    )
    .unwrap();
    assert_eq!(used_of(&charges, 0), "cpu=1100m,memory=52Gi,pods=4");
}

// TestAdmitExceedQuotaLimit
#[test]
fn admit_exceed_quota_limit() {
    let err = create(
        &[compute_quota()],
        &Evaluator::Pods,
        &pod(
            "not-allowed-pod",
            json!({"cpu": "3", "memory": "2Gi"}),
            json!({}),
        ),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3"
    );
    // the message kubectl shows for `pods: 2`
    let pods = quota("q", &[], json!({"pods": "2"}), json!({"pods": "2"}));
    let err = create(&[pods], &Evaluator::Pods, &pod("c", json!({}), json!({}))).unwrap_err();
    assert_eq!(
        err,
        "exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
    let e = forbidden(
        crate::registry::catalog::Catalog::builtin()
            .lookup("", "v1", "pods")
            .unwrap(),
        "c",
        &err,
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods \"c\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
    );
}

// TestAdmitEnforceQuotaConstraints
#[test]
fn admit_enforce_quota_constraints() {
    let q = quota(
        "quota",
        &[],
        json!({"cpu": "3", "memory": "100Gi", "limits.cpu": "4", "limits.memory": "100Gi", "pods": "5"}),
        json!({"cpu": "1", "memory": "50Gi", "limits.cpu": "2", "limits.memory": "50Gi", "pods": "3"}),
    );
    // requests set, limits missing
    let err = create(
        &[q],
        &Evaluator::Pods,
        &pod(
            "not-allowed-pod",
            json!({"cpu": "100m", "memory": "200Mi"}),
            json!({}),
        ),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "failed quota: quota: must specify limits.cpu for: ctr; limits.memory for: ctr"
    );
}

// TestAdmitPodInNamespaceWithoutQuota
#[test]
fn admit_pod_in_namespace_without_quota() {
    let charges = create(
        &[],
        &Evaluator::Pods,
        &pod("allowed-pod", json!({"cpu": "100m"}), json!({})),
    )
    .unwrap();
    assert!(charges.is_empty());
}

// TestAdmitBelowTerminatingQuotaLimit
#[test]
fn admit_below_terminating_quota_limit() {
    let non_terminating = quota(
        "quota-non-terminating",
        &["NotTerminating"],
        json!({"cpu": "3", "memory": "100Gi", "pods": "5"}),
        json!({"cpu": "1", "memory": "50Gi", "pods": "3"}),
    );
    let terminating = quota(
        "quota-terminating",
        &["Terminating"],
        json!({"cpu": "3", "memory": "100Gi", "pods": "4"}),
        json!({"cpu": "1", "memory": "50Gi", "pods": "2"}),
    );
    let mut p = pod(
        "allowed-pod",
        json!({"cpu": "100m", "memory": "2Gi"}),
        json!({}),
    );
    p["spec"]["activeDeadlineSeconds"] = json!(60);
    let charges = create(&[non_terminating, terminating], &Evaluator::Pods, &p).unwrap();
    assert_eq!(charges.len(), 1);
    assert_eq!(used_of(&charges, 1), "cpu=1100m,memory=52Gi,pods=3");
}

// TestAdmitBelowBestEffortQuotaLimit, TestAdmitBestEffortQuotaLimitIgnoresBurstable
#[test]
fn admit_best_effort_scopes() {
    let best_effort = quota(
        "quota-besteffort",
        &["BestEffort"],
        json!({"pods": "5"}),
        json!({"pods": "3"}),
    );
    let not_best_effort = quota(
        "quota-not-besteffort",
        &["NotBestEffort"],
        json!({"pods": "5"}),
        json!({"pods": "3"}),
    );
    let quotas = [best_effort, not_best_effort];
    let charges = create(
        &quotas,
        &Evaluator::Pods,
        &pod("allowed-pod", json!({}), json!({})),
    )
    .unwrap();
    assert_eq!(charges.len(), 1);
    assert_eq!(used_of(&charges, 0), "pods=4");
    let burstable = pod("allowed-pod", json!({"cpu": "100m"}), json!({"cpu": "1"}));
    let charges = create(&quotas[..1], &Evaluator::Pods, &burstable).unwrap();
    assert!(charges.is_empty());
}

// TestHasUsageStats
#[test]
fn has_usage_stats_table() {
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases = [
        (
            "empty",
            quota("q", &[], json!({}), json!({})),
            names(&["memory"]),
            true,
        ),
        (
            "hard-only",
            quota("q", &[], json!({"memory": "1Gi"}), json!({})),
            names(&["memory"]),
            false,
        ),
        (
            "hard-used",
            quota(
                "q",
                &[],
                json!({"memory": "1Gi"}),
                json!({"memory": "500Mi"}),
            ),
            names(&["memory"]),
            true,
        ),
        (
            "hard-used-relevant",
            quota(
                "q",
                &[],
                json!({"memory": "1Gi", "pods": "1"}),
                json!({"memory": "500Mi"}),
            ),
            names(&["memory"]),
            true,
        ),
    ];
    for (name, q, relevant, want) in cases {
        assert_eq!(has_usage_stats(&q, &relevant), want, "{name}");
    }
}

// a quota the controller has not counted yet blocks what it restricts
#[test]
fn admit_status_unknown() {
    let q = Quota::from_json(&json!({
        "metadata": {"name": "q", "namespace": "test"},
        "spec": {"hard": {"pods": "2", "requests.cpu": "1"}},
        "status": {"hard": {"pods": "2", "requests.cpu": "1"}},
    }));
    let err = create(
        &[q],
        &Evaluator::Pods,
        &pod("p", json!({"cpu": "100m"}), json!({})),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "status unknown for quota: q, resources: pods,requests.cpu"
    );
    // an empty status (never synced) matches nothing: allowed
    let fresh = Quota::from_json(&json!({
        "metadata": {"name": "q", "namespace": "test"},
        "spec": {"hard": {"pods": "2"}},
    }));
    assert!(
        create(&[fresh], &Evaluator::Pods, &pod("p", json!({}), json!({})))
            .unwrap()
            .is_empty()
    );
}

// TestAdmitHandlesOldObjects: a LoadBalancer becomes a NodePort service
#[test]
fn admit_handles_old_objects() {
    let q = quota(
        "quota",
        &[],
        json!({"services": "10", "services.loadbalancers": "10", "services.nodeports": "10"}),
        json!({"services": "1", "services.loadbalancers": "1", "services.nodeports": "0"}),
    );
    let old = json!({"metadata": {"name": "service", "namespace": "test", "resourceVersion": "1"},
        "spec": {"type": "LoadBalancer"}});
    let new = json!({"metadata": {"name": "service", "namespace": "test", "resourceVersion": "1"},
        "spec": {"type": "NodePort", "ports": [{"port": 1234}]}});
    let charges = update(&[q], &Evaluator::Services, &new, &old).unwrap();
    assert_eq!(
        used_of(&charges, 0),
        "services=1,services.loadbalancers=1,services.nodeports=1"
    );
}

fn claim(storage: &str, rv: &str) -> Value {
    json!({"metadata": {"name": "claim", "namespace": "test", "resourceVersion": rv},
        "spec": {"resources": {"requests": {"storage": storage}}}})
}

fn storage_quota() -> Quota {
    quota(
        "quota",
        &[],
        json!({"persistentvolumeclaims": "10", "requests.storage": "100Gi"}),
        json!({"persistentvolumeclaims": "1", "requests.storage": "10Gi"}),
    )
}

// TestAdmitHandlesPVCUpdates, TestAdmitHandlesNegativePVCUpdates
#[test]
fn admit_handles_pvc_updates() {
    let e = Evaluator::PersistentVolumeClaims;
    let charges = update(
        &[storage_quota()],
        &e,
        &claim("15Gi", "1"),
        &claim("10Gi", "1"),
    )
    .unwrap();
    assert_eq!(
        used_of(&charges, 0),
        "persistentvolumeclaims=1,requests.storage=15Gi"
    );
    let charges = update(
        &[storage_quota()],
        &e,
        &claim("10Gi", "1"),
        &claim("20Gi", "1"),
    )
    .unwrap();
    assert!(charges.is_empty(), "shrinking charges nothing");
    let err = update(
        &[storage_quota()],
        &e,
        &claim("200Gi", "1"),
        &claim("10Gi", "1"),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "exceeded quota: quota, requested: requests.storage=190Gi, used: requests.storage=10Gi, limited: requests.storage=100Gi"
    );
}

// TestAdmitHandlesCreatingUpdates: an old object without resourceVersion is billed in full
#[test]
fn admit_handles_creating_updates() {
    let e = Evaluator::PersistentVolumeClaims;
    let charges = update(
        &[storage_quota()],
        &e,
        &claim("15Gi", ""),
        &claim("10Gi", ""),
    )
    .unwrap();
    assert_eq!(
        used_of(&charges, 0),
        "persistentvolumeclaims=2,requests.storage=25Gi"
    );
}

// TestAdmitRejectsNegativeUsage
#[test]
fn admit_rejects_negative_usage() {
    let q = quota(
        "quota",
        &[],
        json!({"persistentvolumeclaims": "3", "requests.storage": "100Gi"}),
        json!({"persistentvolumeclaims": "1", "requests.storage": "10Gi"}),
    );
    let err = create(
        std::slice::from_ref(&q),
        &Evaluator::PersistentVolumeClaims,
        &claim("-1", ""),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "quota usage is negative for resource(s): requests.storage"
    );
    let charges = create(&[q], &Evaluator::PersistentVolumeClaims, &claim("1Gi", "")).unwrap();
    assert_eq!(
        used_of(&charges, 0),
        "persistentvolumeclaims=2,requests.storage=11Gi"
    );
}

// TestAdmitWhenUnrelatedResourceExceedsQuota
#[test]
fn admit_when_unrelated_resource_exceeds_quota() {
    let q = quota(
        "quota",
        &[],
        json!({"services": "3", "pods": "4"}),
        json!({"services": "4", "pods": "1"}),
    );
    let charges = create(&[q], &Evaluator::Pods, &pod("p", json!({}), json!({}))).unwrap();
    assert_eq!(used_of(&charges, 0), "pods=2,services=4");
}

// TestAdmissionIgnoresSubresources, object counts, and updates that change nothing
#[test]
fn admit_handles_only_what_the_evaluator_handles() {
    let q = quota(
        "quota",
        &[],
        json!({"memory": "2Gi"}),
        json!({"memory": "1Gi"}),
    );
    let big = pod("p", json!({"memory": "2Gi"}), json!({}));
    assert!(create(std::slice::from_ref(&q), &Evaluator::Pods, &big).is_err());
    let on_sub = check_request(
        &[q],
        &Evaluator::Pods,
        Operation::Update,
        Some("status"),
        &big,
        Some(&big),
        Utc::now(),
    )
    .unwrap();
    assert!(on_sub.is_empty());
    let deployments = Evaluator::for_resource("apps", "deployments").unwrap();
    let counts = quota(
        "count",
        &[],
        json!({"count/deployments.apps": "1"}),
        json!({"count/deployments.apps": "1"}),
    );
    let err = create(&[counts], &deployments, &json!({"metadata": {"name": "d"}})).unwrap_err();
    assert_eq!(
        err,
        "exceeded quota: count, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1"
    );
}
