//! Upstream disruption_test.go tables over the calculations, with a fake finder for
//! the pods' controllers.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::calc::*;

/// Controllers by UID with their scale.
#[derive(Default)]
struct Fake(HashMap<String, i32>);

impl ScaleFinder for Fake {
    async fn find(
        &self,
        r: &OwnerReference,
        _ns: &str,
    ) -> Result<Option<ControllerAndScale>, String> {
        Ok(self.0.get(&r.uid).map(|s| ControllerAndScale {
            uid: r.uid.clone(),
            scale: *s,
        }))
    }
}

fn now() -> Timestamp {
    "2026-01-01T00:10:00Z".parse().unwrap()
}

fn ago(secs: i64) -> Time {
    Time(now().checked_sub(SignedDuration::from_secs(secs)).unwrap())
}

fn pdb(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("foobar".into()),
            namespace: Some("default".into()),
            generation: Some(1),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: min,
            max_unavailable: max,
            selector: Some(LabelSelector {
                match_labels: Some(BTreeMap::from([("foo".into(), "bar".into())])),
                ..LabelSelector::default()
            }),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    }
}

fn pod(name: &str, ready: bool, controller: Option<&str>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([("foo".into(), "bar".into())])),
            owner_references: controller.map(|uid| {
                vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: uid.into(),
                    uid: uid.into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        },
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
        ..Pod::default()
    }
}

/// (disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods) after one sync
/// (the status written, or the one kept), as upstream's `VerifyPdbStatus`; the budget
/// is updated in place.
async fn sync(
    f: &Fake,
    b: &mut PodDisruptionBudget,
    all: &[Pod],
) -> Result<(i32, i32, i32, i32), String> {
    let pods = pods_for_pdb(b, all)?;
    let (expected, desired, _unmanaged) = expected_pod_count(f, b, &pods).await?;
    let disrupted = build_disrupted_pod_map(b, &pods, now());
    let healthy = count_healthy_pods(&pods, &disrupted.kept, now());
    if let Some(s) = new_status(b, healthy, desired, expected, disrupted.kept, now()) {
        b.status = Some(s);
    }
    let s = b.status.clone().unwrap_or_default();
    Ok((
        s.disruptions_allowed.unwrap_or(0),
        s.current_healthy.unwrap_or(0),
        s.desired_healthy.unwrap_or(0),
        s.expected_pods.unwrap_or(0),
    ))
}

fn condition(b: &PodDisruptionBudget) -> (String, String) {
    let c = b.status.as_ref().unwrap().conditions.as_ref().unwrap()[0].clone();
    (c.status, c.reason)
}

#[test]
fn percent_rounding_as_intstr() {
    let s = |v: &str| IntOrString::String(v.into());
    assert_eq!(scaled_value(&s("34%"), 3, true), Ok(2));
    assert_eq!(scaled_value(&s("34%"), 3, false), Ok(1));
    assert_eq!(scaled_value(&s("50%"), 5, true), Ok(3));
    assert_eq!(scaled_value(&s("100%"), 7, true), Ok(7));
    assert_eq!(scaled_value(&s("1%"), 0, true), Ok(0));
    assert_eq!(scaled_value(&s("28%"), 1, true), Ok(1));
    assert_eq!(scaled_value(&IntOrString::Int(3), 10, true), Ok(3));
    assert!(scaled_value(&s("34"), 3, true).is_err());
    assert!(scaled_value(&s("x%"), 3, true).is_err());
}

/// Upstream TestNoSelector: an empty selector selects every pod of the namespace.
#[tokio::test]
async fn no_selector() {
    let f = Fake::default();
    let mut b = pdb(Some(IntOrString::Int(3)), None);
    b.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
    assert_eq!(sync(&f, &mut b, &[]).await, Ok((0, 0, 3, 0)));
    let mut other = pod("yo-yo-yo", true, None);
    other.metadata.labels = None;
    assert_eq!(sync(&f, &mut b, &[other]).await, Ok((0, 1, 3, 1)));
    // no selector at all selects nothing
    b.spec.as_mut().unwrap().selector = None;
    assert_eq!(
        sync(&f, &mut b, &[pod("p", true, None)]).await,
        Ok((0, 0, 3, 0))
    );
}

/// Upstream TestUnavailable: an integer minAvailable over naked pods.
#[tokio::test]
async fn unavailable() {
    let f = Fake::default();
    let mut b = pdb(Some(IntOrString::Int(3)), None);
    let mut pods: Vec<Pod> = (0..3)
        .map(|i| pod(&format!("yo-yo-yo {i}"), true, None))
        .collect();
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 3, 3, 3)));
    assert_eq!(condition(&b), ("False".into(), INSUFFICIENT_PODS.into()));
    pods.push(pod("yo-yo-yo 3", true, None));
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((1, 4, 3, 4)));
    assert_eq!(condition(&b), ("True".into(), SUFFICIENT_PODS.into()));
    pods[0] = pod("yo-yo-yo 0", false, None);
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 3, 3, 4)));
}

/// Upstream TestIntegerMaxUnavailable and TestIntegerMaxUnavailableWithScaling.
#[tokio::test]
async fn integer_max_unavailable() {
    let f = Fake(HashMap::from([("rs".to_string(), 7)]));
    let mut b = pdb(None, Some(IntOrString::Int(1)));
    // a naked pod: unmanaged, no expected pods
    assert_eq!(
        sync(&f, &mut b, &[pod("naked", true, None)]).await,
        Ok((0, 1, 0, 0))
    );
    let mut b = pdb(None, Some(IntOrString::Int(2)));
    let pods = vec![pod("p0", true, Some("rs"))];
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 1, 5, 7)));
    let f = Fake(HashMap::from([("rs".to_string(), 2)]));
    let pods = vec![pod("p0", true, Some("rs")), pod("p1", true, Some("rs"))];
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((2, 2, 0, 2)));
    // percent maxUnavailable rounds up
    let mut b = pdb(None, Some(IntOrString::String("30%".into())));
    let f = Fake(HashMap::from([("rs".to_string(), 7)]));
    let pods: Vec<Pod> = (0..7)
        .map(|i| pod(&format!("p{i}"), true, Some("rs")))
        .collect();
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((3, 7, 4, 7)));
}

/// Upstream TestNakedPod: a percentage over a pod without a controller.
#[tokio::test]
async fn naked_pod() {
    let mut b = pdb(Some(IntOrString::String("28%".into())), None);
    assert_eq!(
        sync(&Fake::default(), &mut b, &[pod("naked", true, None)]).await,
        Ok((0, 1, 0, 0))
    );
}

/// Upstream TestReplicaSet.
#[tokio::test]
async fn replica_set() {
    let f = Fake(HashMap::from([("rs".to_string(), 10)]));
    let mut b = pdb(Some(IntOrString::String("20%".into())), None);
    assert_eq!(
        sync(&f, &mut b, &[pod("p0", true, Some("rs"))]).await,
        Ok((0, 1, 2, 10))
    );
}

/// Upstream TestMultipleControllers: the scales of the pods' controllers add up.
#[tokio::test]
async fn multiple_controllers() {
    let f = Fake(HashMap::from([
        ("rc1".to_string(), 1),
        ("rc2".to_string(), 1),
    ]));
    let mut b = pdb(Some(IntOrString::String("1%".into())), None);
    let mut pods: Vec<Pod> = (0..2)
        .map(|i| pod(&format!("p{i}"), true, Some("rc1")))
        .collect();
    // one controller of scale 1: desired ceil(0.01) = 1, two healthy
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((1, 2, 1, 1)));
    pods.push(pod("p2", true, Some("rc2")));
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((2, 3, 1, 2)));
}

/// Upstream TestReplicationController / TestStatefulSetController: 34% of 3 pods.
#[tokio::test]
async fn controller_of_three() {
    let f = Fake(HashMap::from([("rc".to_string(), 3)]));
    let mut b = pdb(Some(IntOrString::String("34%".into())), None);
    let mut pods = Vec::new();
    for (i, want) in [(0, (0, 1, 2, 3)), (1, (0, 2, 2, 3)), (2, (1, 3, 2, 3))] {
        pods.push(pod(&format!("foobar {i}"), true, Some("rc")));
        assert_eq!(sync(&f, &mut b, &pods).await, Ok(want), "{i}");
    }
    pods.pop();
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 2, 2, 3)));
}

/// Upstream TestTwoControllers: a Deployment's pods (scale 11) plus a
/// ReplicationController's (scale 11), minAvailable 28%.
#[tokio::test]
async fn two_controllers() {
    let f = Fake(HashMap::from([
        ("d".to_string(), 11),
        ("rc".to_string(), 11),
    ]));
    let mut b = pdb(Some(IntOrString::String("28%".into())), None);
    let mut pods = Vec::new();
    // minimumOne = ceil(0.28 * 11) = 4, minimumTwo = ceil(0.28 * 22) = 7
    for i in 0..4 {
        pods.push(pod(&format!("d{i}"), true, Some("d")));
    }
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 4, 4, 11)));
    pods.push(pod("d4", true, Some("d")));
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((1, 5, 4, 11)));
    for i in 0..2 {
        pods.push(pod(&format!("rc{i}"), true, Some("rc")));
    }
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 7, 7, 22)));
    pods.push(pod("rc2", true, Some("rc")));
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((1, 8, 7, 22)));
    pods[0] = pod("d0", false, Some("d"));
    assert_eq!(sync(&f, &mut b, &pods).await, Ok((0, 7, 7, 22)));
}

/// A pod whose controller is not found is an error (the fail-safe follows).
#[tokio::test]
async fn missing_controller_is_an_error() {
    let mut b = pdb(Some(IntOrString::String("50%".into())), None);
    let e = sync(&Fake::default(), &mut b, &[pod("p0", true, Some("gone"))]).await;
    assert_eq!(e, Err("found no controllers for pod \"p0\"".into()));
    let s = fail_safe_status(&b, "found no controllers for pod \"p0\"", now());
    assert_eq!(s.disruptions_allowed, Some(0));
    let c = &s.conditions.unwrap()[0];
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", SYNC_FAILED)
    );
    assert_eq!(c.message, "found no controllers for pod \"p0\"");
}

/// Upstream TestInvalidSelectors: the sync fails, and the fail-safe allows nothing.
#[tokio::test]
async fn invalid_selectors() {
    for req in [
        LabelSelectorRequirement {
            key: "k".into(),
            operator: "Bogus".into(),
            values: None,
        },
        LabelSelectorRequirement {
            key: "k".into(),
            operator: "In".into(),
            values: None,
        },
    ] {
        let mut b = pdb(Some(IntOrString::Int(3)), None);
        b.spec.as_mut().unwrap().selector = Some(LabelSelector {
            match_expressions: Some(vec![req]),
            match_labels: None,
        });
        assert!(sync(&Fake::default(), &mut b, &[pod("p", true, None)])
            .await
            .is_err());
    }
}

/// Upstream TestUpdateDisruptedPods.
#[tokio::test]
async fn update_disrupted_pods() {
    let mut b = pdb(Some(IntOrString::Int(1)), None);
    b.status = Some(Default::default());
    b.status.as_mut().unwrap().disrupted_pods = Some(BTreeMap::from([
        ("p1".to_string(), ago(0)),   // removed: deletion started
        ("p2".to_string(), ago(180)), // removed: expired
        ("p3".to_string(), ago(60)),  // kept: untouched
        ("notthere".to_string(), ago(0)),
    ]));
    let mut p1 = pod("p1", true, None);
    p1.metadata.deletion_timestamp = Some(ago(0));
    let pods = vec![p1, pod("p2", true, None), pod("p3", true, None)];
    let selected: Vec<&Pod> = pods.iter().collect();
    let d = build_disrupted_pod_map(&b, &selected, now());
    assert_eq!(d.kept, BTreeMap::from([("p3".to_string(), ago(60))]));
    assert_eq!(d.not_deleted, vec!["p2".to_string()]);
    // recheck when p3's entry expires
    assert_eq!(
        d.recheck,
        Some(
            ago(60)
                .0
                .checked_add(SignedDuration::from_secs(120))
                .unwrap()
        )
    );
    assert_eq!(
        sync(&Fake::default(), &mut b, &pods).await,
        Ok((0, 1, 1, 3))
    );
    assert_eq!(
        b.status.as_ref().unwrap().disrupted_pods,
        Some(BTreeMap::from([("p3".to_string(), ago(60))]))
    );
}

/// An up-to-date status is not written again; a new generation is.
#[tokio::test]
async fn unchanged_status_is_not_rewritten() {
    let f = Fake::default();
    let mut b = pdb(Some(IntOrString::Int(1)), None);
    let pods = vec![pod("p0", true, None), pod("p1", true, None)];
    sync(&f, &mut b, &pods).await.unwrap();
    let pods_ref: Vec<&Pod> = pods.iter().collect();
    assert_eq!(new_status(&b, 2, 1, 2, BTreeMap::new(), now()), None);
    b.metadata.generation = Some(2);
    let s = new_status(&b, 2, 1, 2, BTreeMap::new(), now()).unwrap();
    assert_eq!(s.observed_generation, Some(2));
    assert_eq!(count_healthy_pods(&pods_ref, &BTreeMap::new(), now()), 2);
    // a pod recently evicted does not count as healthy
    let recent = BTreeMap::from([("p0".to_string(), ago(10))]);
    assert_eq!(count_healthy_pods(&pods_ref, &recent, now()), 1);
}

#[test]
fn budgets_select_pods_as_the_lister() {
    let b = pdb(Some(IntOrString::Int(1)), None);
    assert!(selects_pod(&b, &pod("p", true, None)));
    let mut unlabelled = pod("p", true, None);
    unlabelled.metadata.labels = None;
    let mut all = b.clone();
    all.spec.as_mut().unwrap().selector = Some(LabelSelector::default());
    assert!(!selects_pod(&all, &unlabelled));
    let mut other_ns = pod("p", true, None);
    other_ns.metadata.namespace = Some("x".into());
    assert!(!selects_pod(&b, &other_ns));
}

/// Upstream TestStalePodDisruption.
#[test]
fn stale_pod_disruption() {
    let timeout = Duration::from_secs(120);
    let with = |status: &str, reason: &str, secs: i64| {
        let mut p = pod("p", true, None);
        p.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
            type_: "DisruptionTarget".into(),
            status: status.into(),
            reason: Some(reason.into()),
            last_transition_time: Some(ago(secs)),
            ..PodCondition::default()
        }]);
        p
    };
    // recent: wait for the rest of the timeout
    assert_eq!(
        stale_disruption_wait(&with("True", "EvictionByEvictionAPI", 30), now(), timeout),
        Some(Duration::from_secs(90))
    );
    // stale: now
    let mut stale = with("True", "EvictionByEvictionAPI", 300);
    assert_eq!(
        stale_disruption_wait(&stale, now(), timeout),
        Some(Duration::ZERO)
    );
    assert!(reset_disruption_target(&mut stale, now()));
    let c = &stale.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
    assert_eq!(c.status, "False");
    assert_eq!(c.reason, None);
    assert_eq!(c.last_transition_time, Some(Time(now())));
    assert!(!reset_disruption_target(&mut stale, now()));
    assert_eq!(stale_disruption_wait(&stale, now(), timeout), None);
    // set by the kubelet, terminal or terminating: never stale
    assert_eq!(
        stale_disruption_wait(&with("True", "TerminationByKubelet", 300), now(), timeout),
        None
    );
    let mut terminal = with("True", "EvictionByEvictionAPI", 300);
    terminal.status.as_mut().unwrap().phase = Some("Failed".into());
    assert_eq!(stale_disruption_wait(&terminal, now(), timeout), None);
    let mut deleting = with("True", "EvictionByEvictionAPI", 300);
    deleting.metadata.deletion_timestamp = Some(ago(0));
    assert_eq!(stale_disruption_wait(&deleting, now(), timeout), None);
    assert_eq!(
        stale_disruption_wait(&pod("p", true, None), now(), timeout),
        None
    );
}
