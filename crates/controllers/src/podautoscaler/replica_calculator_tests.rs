//! Upstream `replica_calculator_test.go`, ported: each case builds the pods (two
//! containers each, named `test-pod-<i>`) and the metrics the fake clients return, then
//! checks the replicas, the utilization and the raw value or usage.

use super::*;
use k8s_openapi::api::core::v1::{
    Container, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

const PREFIX: &str = "test-pod";
const CONTAINERS: usize = 2;

fn cfg() -> ReadinessConfig {
    ReadinessConfig {
        cpu_initialization_period: Duration::from_secs(120),
        delay_of_initial_readiness_status: Duration::from_secs(10),
    }
}

fn tol() -> Tolerances {
    Tolerances::symmetric(0.1)
}

fn hot(now: Timestamp) -> Timestamp {
    now
}

fn cool(now: Timestamp) -> Timestamp {
    now.checked_sub(Duration::from_secs(180)).unwrap()
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Object,
    ObjectPerPod,
    External,
    ExternalPerPod,
    Pods,
}

struct Res {
    requests: Vec<&'static str>,
    levels: Vec<Vec<i64>>,
    pod_names: Vec<&'static str>,
    target: i32,
    utilization: i32,
    value: i64,
}

struct Met {
    levels: Vec<i64>,
    kind: Kind,
    target: i64,
    per_pod_target: i64,
    usage: i64,
}

#[derive(Default)]
struct Case {
    current: i32,
    expected: i32,
    error: Option<&'static str>,
    resource: Option<Res>,
    metric: Option<Met>,
    container: Option<&'static str>,
    readiness: Vec<bool>,
    start: Vec<fn(Timestamp) -> Timestamp>,
    phase: Vec<&'static str>,
    deleting: Vec<bool>,
}

fn levels(v: &[i64]) -> Vec<Vec<i64>> {
    v.iter().map(|l| vec![*l; CONTAINERS]).collect()
}

fn res(requests: &[&'static str], lv: Vec<Vec<i64>>, target: i32, util: i32, value: i64) -> Res {
    Res {
        requests: requests.to_vec(),
        levels: lv,
        pod_names: vec![],
        target,
        utilization: util,
        value,
    }
}

fn met(kind: Kind, levels: &[i64], target: i64, usage: i64) -> Met {
    let (t, pp) = match kind {
        Kind::ObjectPerPod | Kind::ExternalPerPod => (0, target),
        _ => (target, 0),
    };
    Met {
        levels: levels.to_vec(),
        kind,
        target: t,
        per_pod_target: pp,
        usage,
    }
}

fn ones(n: usize) -> Vec<&'static str> {
    vec!["1.0"; n]
}

impl Case {
    fn pods(&self, now: Timestamp) -> Vec<Pod> {
        let n = (self.current as usize).max(self.phase.len());
        (0..n)
            .map(|i| {
                let ready = self.readiness.get(i).copied().unwrap_or(true);
                let start = self
                    .start
                    .get(i)
                    .map(|f| f(now))
                    .unwrap_or_else(go_zero_time);
                let mut containers: Vec<Container> = (1..=CONTAINERS)
                    .map(|c| Container {
                        name: format!("container{c}"),
                        ..Default::default()
                    })
                    .collect();
                if let Some(r) = &self.resource {
                    if let Some(q) = r.requests.get(i) {
                        for c in &mut containers {
                            c.resources = Some(ResourceRequirements {
                                requests: Some(
                                    [("cpu".to_string(), Quantity(q.to_string()))].into(),
                                ),
                                ..Default::default()
                            });
                        }
                    }
                }
                Pod {
                    metadata: ObjectMeta {
                        name: Some(format!("{PREFIX}-{i}")),
                        namespace: Some("test-namespace".into()),
                        deletion_timestamp: self
                            .deleting
                            .get(i)
                            .copied()
                            .unwrap_or(false)
                            .then_some(Time(now)),
                        ..Default::default()
                    },
                    spec: Some(PodSpec {
                        containers,
                        ..Default::default()
                    }),
                    status: Some(PodStatus {
                        phase: Some(self.phase.get(i).copied().unwrap_or("Running").into()),
                        start_time: Some(Time(start)),
                        conditions: Some(vec![PodCondition {
                            type_: "Ready".into(),
                            status: if ready { "True" } else { "False" }.into(),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                }
            })
            .collect()
    }

    fn run(&self) {
        let now = Timestamp::now();
        let pods = self.pods(now);
        let refs: Vec<&Pod> = pods.iter().collect();
        let sample = |value| PodMetric {
            value,
            timestamp: go_zero_time(),
            window: Duration::from_secs(60),
        };
        if let Some(r) = &self.resource {
            // the resource metrics client: a pod's value is the sum of its containers'
            // (or the named container's; pods without it are left out)
            let mut metrics = PodMetricsInfo::new();
            for (i, lv) in r.levels.iter().enumerate() {
                let name = r
                    .pod_names
                    .get(i)
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| format!("{PREFIX}-{i}"));
                let value = match self.container {
                    Some(c) => {
                        let idx: usize = c.trim_start_matches("container").parse().unwrap();
                        match lv.get(idx - 1) {
                            Some(v) => *v,
                            None => continue,
                        }
                    }
                    None => lv.iter().sum(),
                };
                metrics.insert(name, sample(value));
            }
            let got = if metrics.is_empty() {
                Err("unable to get metrics for resource cpu: no metrics returned from resource metrics API".to_string())
            } else {
                resource_replicas(
                    self.current,
                    r.target,
                    "cpu",
                    &tol(),
                    &refs,
                    metrics,
                    self.container,
                    &cfg(),
                    now,
                )
            };
            match (self.error, got) {
                (Some(want), Err(e)) => assert!(e.contains(want), "{e} should contain {want}"),
                (Some(want), Ok(v)) => panic!("expected error {want}, got {v:?}"),
                (None, Err(e)) => panic!("unexpected error {e}"),
                (None, Ok(v)) => {
                    assert_eq!(v.replicas, self.expected, "replicas");
                    assert_eq!(v.utilization, r.utilization, "utilization");
                    assert_eq!(v.raw_average, r.value, "raw value");
                }
            }
            return;
        }
        let m = self.metric.as_ref().unwrap();
        let got = match m.kind {
            Kind::Object => {
                object_metric_replicas(self.current, m.target, m.levels[0], &tol(), &refs)
            }
            Kind::ObjectPerPod => Ok(per_pod_replicas(
                self.current,
                m.per_pod_target,
                m.levels[0],
                &tol(),
            )),
            Kind::External => {
                external_metric_replicas(self.current, m.target, &m.levels, &tol(), &refs)
            }
            Kind::ExternalPerPod => Ok(per_pod_replicas(
                self.current,
                m.per_pod_target,
                sum_values(&m.levels),
                &tol(),
            )),
            Kind::Pods => {
                let metrics: PodMetricsInfo = m
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (format!("{PREFIX}-{i}"), sample(*v)))
                    .collect();
                plain_metric_replicas(
                    metrics,
                    self.current,
                    m.target,
                    &tol(),
                    &refs,
                    "",
                    &cfg(),
                    now,
                )
            }
        };
        match (self.error, got) {
            (Some(want), Err(e)) => assert!(e.contains(want), "{e} should contain {want}"),
            (Some(want), Ok(v)) => panic!("expected error {want}, got {v:?}"),
            (None, Err(e)) => panic!("unexpected error {e}"),
            (None, Ok((replicas, usage))) => {
                assert_eq!(replicas, self.expected, "replicas");
                assert_eq!(usage, m.usage, "usage");
            }
        }
    }
}

const C: i64 = CONTAINERS as i64;

#[test]
fn disjoint_resources_metrics() {
    let mut r = res(&ones(1), levels(&[100]), 100, 0, 0);
    r.pod_names = vec!["an-older-pod-name"];
    Case {
        current: 1,
        error: Some("no metrics returned matched known pods"),
        resource: Some(r),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up() {
    Case {
        current: 3,
        expected: 5,
        resource: Some(res(&ones(3), levels(&[300, 500, 700]), 30, 50, C * 500)),
        ..Default::default()
    }
    .run();
}

#[test]
fn container_scale_up() {
    Case {
        current: 3,
        expected: 5,
        container: Some("container2"),
        resource: Some(res(
            &ones(3),
            vec![vec![1000, 300], vec![1000, 500], vec![1000, 700]],
            30,
            50,
            500,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_unready_less_scale() {
    Case {
        current: 3,
        expected: 4,
        readiness: vec![false, true, true],
        resource: Some(res(&ones(3), levels(&[300, 500, 700]), 30, 60, C * 600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_container_hot_cpu_less_scale() {
    Case {
        current: 3,
        expected: 4,
        container: Some("container2"),
        start: vec![hot, cool, cool],
        resource: Some(res(
            &ones(3),
            vec![vec![0, 300], vec![0, 500], vec![0, 700]],
            30,
            60,
            600,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_hot_cpu_less_scale() {
    Case {
        current: 3,
        expected: 4,
        start: vec![hot, cool, cool],
        resource: Some(res(&ones(3), levels(&[300, 500, 700]), 30, 60, C * 600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_unready_no_scale() {
    Case {
        current: 3,
        expected: 3,
        readiness: vec![true, false, false],
        resource: Some(res(&ones(3), levels(&[400, 500, 700]), 30, 40, C * 400)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_hot_cpu_no_scale() {
    Case {
        current: 3,
        expected: 3,
        readiness: vec![true, false, false],
        start: vec![cool, hot, hot],
        resource: Some(res(&ones(3), levels(&[400, 500, 700]), 30, 40, C * 400)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_ignores_failed_pods() {
    Case {
        current: 2,
        expected: 4,
        readiness: vec![true, true, false, false],
        phase: vec!["Running", "Running", "Failed", "Failed"],
        resource: Some(res(&ones(4), levels(&[500, 700]), 30, 60, C * 600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_container_metric_scale_up_ignores_failed_pods() {
    Case {
        current: 2,
        expected: 4,
        container: Some("container2"),
        readiness: vec![true, true, false, false],
        phase: vec!["Running", "Running", "Failed", "Failed"],
        resource: Some(res(
            &ones(4),
            vec![vec![1000, 500], vec![9000, 700], vec![1000], vec![9000]],
            30,
            60,
            600,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_ignores_deletion_pods() {
    Case {
        current: 2,
        expected: 4,
        readiness: vec![true, true, false, false],
        phase: vec!["Running"; 4],
        deleting: vec![false, false, true, true],
        resource: Some(res(&ones(4), levels(&[500, 700]), 30, 60, C * 600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm() {
    Case {
        current: 3,
        expected: 4,
        metric: Some(met(Kind::Pods, &[20000, 10000, 30000], 15000, 20000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_unready_hot_cpu_no_less_scale() {
    Case {
        current: 3,
        expected: 6,
        readiness: vec![true, true, false],
        start: vec![cool, cool, hot],
        metric: Some(met(Kind::Pods, &[50000, 10000, 30000], 15000, 30000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_unready_hot_cpu_scale_would_scale_down() {
    Case {
        current: 3,
        expected: 7,
        readiness: vec![false, true, false],
        start: vec![hot, cool, hot],
        metric: Some(met(Kind::Pods, &[50000, 15000, 30000], 15000, 31666)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_object() {
    Case {
        current: 3,
        expected: 4,
        metric: Some(met(Kind::Object, &[20000], 15000, 20000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_per_pod_object() {
    Case {
        current: 3,
        expected: 4,
        metric: Some(met(Kind::ObjectPerPod, &[20000], 5000, 6667)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_object_ignores_unready_pods() {
    // 15 replicas if the unready pods counted
    Case {
        current: 3,
        expected: 5,
        readiness: vec![false, true, false],
        metric: Some(met(Kind::Object, &[50000], 10000, 50000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_external() {
    Case {
        current: 1,
        expected: 2,
        metric: Some(met(Kind::Pods, &[8600], 4400, 8600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_cm_external_ignores_unready_pods() {
    // 6 if the unready pods counted
    Case {
        current: 3,
        expected: 2,
        readiness: vec![false, true, false],
        metric: Some(met(Kind::External, &[8600], 4400, 8600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_up_per_pod_cm_external() {
    Case {
        current: 3,
        expected: 4,
        metric: Some(met(Kind::ExternalPerPod, &[8600], 2150, 2867)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down() {
    Case {
        current: 5,
        expected: 3,
        resource: Some(res(
            &ones(5),
            levels(&[100, 300, 500, 250, 250]),
            50,
            28,
            C * 280,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn container_scale_down() {
    Case {
        current: 5,
        expected: 3,
        container: Some("container2"),
        resource: Some(res(
            &ones(5),
            vec![
                vec![1000, 100],
                vec![1000, 300],
                vec![1000, 500],
                vec![1000, 250],
                vec![1000, 250],
            ],
            50,
            28,
            280,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_cm() {
    Case {
        current: 5,
        expected: 3,
        metric: Some(met(Kind::Pods, &[12000; 5], 20000, 12000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_per_pod_cm_object() {
    Case {
        current: 5,
        expected: 3,
        metric: Some(met(Kind::ObjectPerPod, &[6000], 2000, 1200)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_cm_object() {
    Case {
        current: 5,
        expected: 3,
        metric: Some(met(Kind::Object, &[12000], 20000, 12000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_cm_external() {
    Case {
        current: 5,
        expected: 3,
        metric: Some(met(Kind::External, &[8600], 14334, 8600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_per_pod_cm_external() {
    Case {
        current: 5,
        expected: 3,
        metric: Some(met(Kind::ExternalPerPod, &[8600], 2867, 1720)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_exclude_unready_pods() {
    Case {
        current: 5,
        expected: 2,
        readiness: vec![true, true, true, false, false],
        resource: Some(res(
            &ones(5),
            levels(&[100, 300, 500, 250, 250]),
            50,
            30,
            C * 300,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_exclude_unscheduled_pods() {
    Case {
        current: 5,
        expected: 1,
        readiness: vec![true, false, false, false, false],
        phase: vec!["Running", "Pending", "Pending", "Pending", "Pending"],
        resource: Some(res(&ones(5), levels(&[100]), 50, 10, C * 100)),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_container_exclude_unscheduled_pods() {
    Case {
        current: 5,
        expected: 1,
        container: Some("container2"),
        readiness: vec![true, false, false, false, false],
        phase: vec!["Running", "Pending", "Pending", "Pending", "Pending"],
        resource: Some(res(
            &ones(5),
            vec![
                vec![1000, 100],
                vec![1000, 300],
                vec![1000, 500],
                vec![1000, 250],
                vec![1000, 250],
            ],
            50,
            10,
            100,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_ignore_hot_cpu_pods() {
    Case {
        current: 5,
        expected: 2,
        start: vec![cool, cool, cool, hot, hot],
        resource: Some(res(
            &ones(5),
            levels(&[100, 300, 500, 250, 250]),
            50,
            30,
            C * 300,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_container_ignore_hot_cpu_pods() {
    Case {
        current: 5,
        expected: 2,
        container: Some("container2"),
        start: vec![cool, cool, cool, hot, hot],
        resource: Some(res(
            &ones(5),
            vec![
                vec![1000, 100],
                vec![1000, 300],
                vec![1000, 500],
                vec![1000, 1000],
                vec![1000, 1000],
            ],
            50,
            30,
            300,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_ignores_failed_pods() {
    let mut phase = vec!["Running"; 5];
    phase.extend(["Failed", "Failed"]);
    Case {
        current: 5,
        expected: 3,
        readiness: vec![true, true, true, true, true, false, false],
        phase,
        resource: Some(res(
            &ones(7),
            levels(&[100, 300, 500, 250, 250]),
            50,
            28,
            C * 280,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_ignores_deletion_pods() {
    Case {
        current: 5,
        expected: 3,
        readiness: vec![true, true, true, true, true, false, false],
        phase: vec!["Running"; 7],
        deleting: vec![false, false, false, false, false, true, true],
        resource: Some(res(
            &ones(7),
            levels(&[100, 300, 500, 250, 250]),
            50,
            28,
            C * 280,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn scale_down_ignores_deletion_pods_still_running() {
    Case {
        current: 5,
        expected: 3,
        container: Some("container2"),
        readiness: vec![true, true, true, true, true, false, false],
        phase: vec!["Running"; 7],
        deleting: vec![false, false, false, false, false, true, true],
        resource: Some(res(
            &ones(7),
            vec![
                vec![1000, 100],
                vec![1000, 300],
                vec![1000, 500],
                vec![1000, 250],
                vec![1000, 250],
            ],
            50,
            28,
            280,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance() {
    Case {
        current: 3,
        expected: 3,
        resource: Some(res(
            &["0.9", "1.0", "1.1"],
            levels(&[1010, 1030, 1020]),
            100,
            102,
            C * 1020,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance_cm() {
    Case {
        current: 3,
        expected: 3,
        metric: Some(met(Kind::Pods, &[20000, 21000, 21000], 20000, 20666)),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance_cm_object() {
    Case {
        current: 3,
        expected: 3,
        metric: Some(met(Kind::Object, &[20666], 20000, 20666)),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance_per_pod_cm_object() {
    Case {
        current: 4,
        expected: 4,
        metric: Some(met(Kind::ObjectPerPod, &[20166], 5000, 5042)),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance_cm_external() {
    Case {
        current: 3,
        expected: 3,
        metric: Some(met(Kind::External, &[8600], 8888, 8600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerance_per_pod_cm_external() {
    Case {
        current: 3,
        expected: 3,
        metric: Some(met(Kind::ExternalPerPod, &[8600], 2900, 2867)),
        ..Default::default()
    }
    .run();
}

#[test]
fn superfluous_metrics() {
    Case {
        current: 4,
        expected: 24,
        resource: Some(res(
            &ones(4),
            levels(&[4000, 9500, 3000, 7000, 3200, 2000]),
            100,
            587,
            C * 5875,
        )),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_metrics() {
    Case {
        current: 4,
        expected: 3,
        resource: Some(res(&ones(4), levels(&[400, 95]), 100, 24, 495)),
        ..Default::default()
    }
    .run();
}

#[test]
fn empty_metrics() {
    Case {
        current: 4,
        error: Some(
            "unable to get metrics for resource cpu: no metrics returned from resource metrics API",
        ),
        resource: Some(res(&ones(3), levels(&[]), 100, 0, 0)),
        ..Default::default()
    }
    .run();
}

#[test]
fn empty_cpu_request() {
    Case {
        current: 1,
        error: Some("missing request for"),
        resource: Some(res(&[], levels(&[200]), 100, 0, 0)),
        ..Default::default()
    }
    .run();
}

#[test]
fn plain_metric_missing_metrics_no_change_eq() {
    Case {
        current: 5,
        expected: 5,
        metric: Some(met(Kind::Pods, &[20000, 19000, 21000], 20000, 20000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_metrics_no_change_eq() {
    Case {
        current: 2,
        expected: 2,
        resource: Some(res(&ones(2), levels(&[1000]), 100, 100, C * 1000)),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_metrics_no_change_gt() {
    Case {
        current: 2,
        expected: 2,
        resource: Some(res(&ones(2), levels(&[1900]), 100, 190, C * 1900)),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_metrics_no_change_lt() {
    Case {
        current: 2,
        expected: 2,
        resource: Some(res(&ones(2), levels(&[600]), 100, 60, C * 600)),
        ..Default::default()
    }
    .run();
}

#[test]
fn missing_metrics_unready_change() {
    Case {
        current: 3,
        expected: 3,
        readiness: vec![false, true, true],
        resource: Some(res(&ones(3), levels(&[100, 450]), 50, 45, C * 450)),
        ..Default::default()
    }
    .run();
}

#[test]
fn tolerances_are_inclusive_and_per_direction() {
    let t = Tolerances {
        scale_down: 0.5,
        scale_up: 0.05,
    };
    assert!(t.is_within(0.5));
    assert!(t.is_within(1.05));
    assert!(!t.is_within(1.06));
    assert!(!t.is_within(0.49));
}

#[test]
fn requests_count_sidecars_and_pod_level() {
    let mut pod = Case {
        current: 1,
        resource: Some(res(&["100m"], levels(&[0]), 50, 0, 0)),
        ..Default::default()
    }
    .pods(Timestamp::now())
    .remove(0);
    let spec = pod.spec.as_mut().unwrap();
    spec.init_containers = Some(vec![
        Container {
            name: "sidecar".into(),
            restart_policy: Some("Always".into()),
            resources: Some(ResourceRequirements {
                requests: Some([("cpu".to_string(), Quantity("50m".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        Container {
            name: "init".into(),
            ..Default::default()
        },
    ]);
    let got = calculate_requests(&[&pod], None, "cpu").unwrap();
    assert_eq!(got["test-pod-0"], 250);
    let got = calculate_requests(&[&pod], Some("container1"), "cpu").unwrap();
    assert_eq!(got["test-pod-0"], 100);
    let err = calculate_requests(&[&pod], Some("nope"), "cpu").unwrap_err();
    assert_eq!(err, "container nope not found in Pod test-pod-0");
    pod.spec.as_mut().unwrap().resources = Some(ResourceRequirements {
        requests: Some([("cpu".to_string(), Quantity("1".into()))].into()),
        ..Default::default()
    });
    let got = calculate_requests(&[&pod], None, "cpu").unwrap();
    assert_eq!(got["test-pod-0"], 1000);
    let err = calculate_requests(&[&pod], None, "memory").unwrap_err();
    assert_eq!(
        err,
        "missing pod-level request for memory in Pod test-pod-0"
    );
}
