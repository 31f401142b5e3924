//! The replica calculator (upstream `replica_calculator.go` and
//! `metrics/utilization.go`): from the metrics of the target's pods (or of an object, or
//! an external metric) to a replica count.
//!
//! The functions are pure: the controller fetches the metrics and lists the pods, then
//! hands both in, so the upstream tables run without a cluster. Errors carry upstream's
//! texts; the caller wraps them as upstream does (`unable to get metrics for resource
//! cpu: ...`).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use apimachinery::quantity;
use k8s_openapi::api::core::v1::{Container, Pod};
use k8s_openapi::jiff::Timestamp;

/// One pod's value of a metric, in milli-units, with the sample's time and window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PodMetric {
    /// The value in thousandths (`250m` cpu is 250).
    pub value: i64,
    /// The end of the sample's window.
    pub timestamp: Timestamp,
    /// How long the sample was collected over.
    pub window: Duration,
}

/// Metric values by pod name (upstream `PodMetricsInfo`).
pub type PodMetricsInfo = BTreeMap<String, PodMetric>;

/// How far the usage ratio may stray from 1 before the replica count changes, per
/// direction (upstream `Tolerances`); both are `--horizontal-pod-autoscaler-tolerance`
/// unless the HPA's behavior sets its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerances {
    /// Allowed ratio below 1.
    pub scale_down: f64,
    /// Allowed ratio above 1.
    pub scale_up: f64,
}

impl Tolerances {
    /// The same tolerance both ways.
    pub fn symmetric(t: f64) -> Tolerances {
        Tolerances {
            scale_down: t,
            scale_up: t,
        }
    }

    /// Whether `ratio` is close enough to 1 to keep the current count (inclusive).
    pub fn is_within(&self, ratio: f64) -> bool {
        (1.0 - self.scale_down) <= ratio && ratio <= (1.0 + self.scale_up)
    }
}

/// The pod readiness settings of the calculator
/// (`--horizontal-pod-autoscaler-cpu-initialization-period`,
/// `--horizontal-pod-autoscaler-initial-readiness-delay`).
#[derive(Clone, Copy, Debug)]
pub struct ReadinessConfig {
    /// CPU samples of pods younger than this count only once the pod is ready and a full
    /// window was collected since.
    pub cpu_initialization_period: Duration,
    /// After the initialization period, a not-ready pod counts as never ready when its
    /// Ready condition last changed within this delay of its start.
    pub delay_of_initial_readiness_status: Duration,
}

/// Go's zero `time.Time` (year 1): what an unset time compares as upstream.
pub fn go_zero_time() -> Timestamp {
    Timestamp::new(-62_135_596_800, 0).expect("year 1 is representable")
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(d).unwrap_or(Timestamp::MAX)
}

fn pod_name(p: &Pod) -> &str {
    p.metadata.name.as_deref().unwrap_or_default()
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// Upstream `podutil.IsPodReady`.
pub fn is_pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// The pods sorted into groups (upstream `groupPods`).
#[derive(Debug, Default, PartialEq)]
pub struct PodGroups {
    /// Ready pods with a metric.
    pub ready_count: usize,
    /// Pending pods, and (for cpu) pods not ready or still initialising.
    pub unready: BTreeSet<String>,
    /// Pods without a metric.
    pub missing: BTreeSet<String>,
    /// Pods being deleted or failed.
    pub ignored: BTreeSet<String>,
}

/// Upstream `groupPods`.
pub fn group_pods(
    pods: &[&Pod],
    metrics: &PodMetricsInfo,
    resource: &str,
    cfg: &ReadinessConfig,
    now: Timestamp,
) -> PodGroups {
    let mut g = PodGroups::default();
    for pod in pods {
        let name = pod_name(pod).to_string();
        if pod.metadata.deletion_timestamp.is_some() || phase(pod) == "Failed" {
            g.ignored.insert(name);
            continue;
        }
        if phase(pod) == "Pending" {
            g.unready.insert(name);
            continue;
        }
        let Some(metric) = metrics.get(&name) else {
            g.missing.insert(name);
            continue;
        };
        if resource == "cpu" {
            let status = pod.status.as_ref();
            let condition = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
            let start = status.and_then(|s| s.start_time.as_ref()).map(|t| t.0);
            let unready = match (condition, start) {
                (Some(c), Some(start)) => {
                    let transition = c
                        .last_transition_time
                        .as_ref()
                        .map(|t| t.0)
                        .unwrap_or_else(go_zero_time);
                    if plus(start, cfg.cpu_initialization_period) > now {
                        c.status == "False" || metric.timestamp < plus(transition, metric.window)
                    } else {
                        c.status == "False"
                            && plus(start, cfg.delay_of_initial_readiness_status) > transition
                    }
                }
                _ => true,
            };
            if unready {
                g.unready.insert(name);
                continue;
            }
        }
        g.ready_count += 1;
    }
    g
}

fn request_milli(c: &Container, resource: &str) -> Option<i64> {
    c.resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get(resource))
        .and_then(|q| quantity::parse_milli(&q.0))
        .map(|v| v as i64)
}

/// The request of each pod for `resource` in milli-units (upstream `calculateRequests`):
/// the named container's, or the pod-level request when the pod sets one, or the sum of
/// the containers' and sidecars' (restartable init containers).
pub fn calculate_requests(
    pods: &[&Pod],
    container: Option<&str>,
    resource: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let mut out = BTreeMap::new();
    for pod in pods {
        let name = pod_name(pod);
        let spec = pod.spec.as_ref();
        let pod_level = spec
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .filter(|r| r.contains_key("cpu") || r.contains_key("memory"));
        let request = match (pod_level, container) {
            (Some(reqs), None) => reqs
                .get(resource)
                .and_then(|q| quantity::parse_milli(&q.0))
                .map(|v| v as i64)
                .ok_or_else(|| format!("missing pod-level request for {resource} in Pod {name}"))?,
            _ => {
                let mut all: Vec<&Container> = spec
                    .map(|s| s.containers.iter().collect())
                    .unwrap_or_default();
                if let Some(inits) = spec.and_then(|s| s.init_containers.as_ref()) {
                    all.extend(
                        inits
                            .iter()
                            .filter(|c| c.restart_policy.as_deref() == Some("Always")),
                    );
                }
                let mut sum = 0i64;
                let mut found = false;
                for c in all {
                    if container.is_none_or(|n| n == c.name) {
                        sum += request_milli(c, resource).ok_or_else(|| {
                            format!(
                                "missing request for {resource} in container {} of Pod {name}",
                                c.name
                            )
                        })?;
                    }
                    if container == Some(c.name.as_str()) {
                        found = true;
                        break;
                    }
                }
                if let Some(n) = container {
                    if !found {
                        return Err(format!("container {n} not found in Pod {name}"));
                    }
                }
                sum
            }
        };
        out.insert(name.to_string(), request);
    }
    Ok(out)
}

/// Upstream `GetResourceUtilizationRatio`: (ratio, utilization %, raw average).
pub fn resource_utilization_ratio(
    metrics: &PodMetricsInfo,
    requests: &BTreeMap<String, i64>,
    target_utilization: i32,
) -> Result<(f64, i32, i64), String> {
    let mut total = 0i64;
    let mut requests_total = 0i64;
    let mut n = 0i64;
    for (pod, m) in metrics {
        let Some(r) = requests.get(pod) else { continue };
        total += m.value;
        requests_total += r;
        n += 1;
    }
    if requests_total == 0 {
        return Err("no metrics returned matched known pods".into());
    }
    let utilization = ((total * 100) / requests_total) as i32;
    Ok((
        f64::from(utilization) / f64::from(target_utilization),
        utilization,
        total / n,
    ))
}

/// Upstream `GetMetricUsageRatio`: (ratio, average usage).
pub fn metric_usage_ratio(metrics: &PodMetricsInfo, target: i64) -> (f64, i64) {
    let total: i64 = metrics.values().map(|m| m.value).sum();
    let n = metrics.len().max(1) as i64;
    let usage = total / n;
    (usage as f64 / target as f64, usage)
}

fn ceil_i32(v: f64) -> i32 {
    let c = v.ceil();
    if c >= f64::from(i32::MAX) {
        i32::MAX
    } else {
        c as i32
    }
}

/// The pods' values padded for missing and unready pods, shared by the resource and
/// plain-metric calculations.
struct Rebalance<'a> {
    groups: &'a PodGroups,
    usage_ratio: f64,
    current: i32,
}

impl Rebalance<'_> {
    fn scale_up_with_unready(&self) -> bool {
        !self.groups.unready.is_empty() && self.usage_ratio > 1.0
    }

    /// Fill in the missing (`fallback` on scale-down) and unready pods, then decide
    /// with `new_ratio` of the padded metrics.
    fn finish(
        &self,
        metrics: &mut PodMetricsInfo,
        fallback: impl Fn(&str) -> i64,
        new_ratio: impl Fn(&PodMetricsInfo) -> Result<f64, String>,
        tolerances: &Tolerances,
    ) -> Result<i32, String> {
        let zero = PodMetric {
            value: 0,
            timestamp: go_zero_time(),
            window: Duration::ZERO,
        };
        if !self.groups.missing.is_empty() {
            if self.usage_ratio < 1.0 {
                for p in &self.groups.missing {
                    metrics.insert(
                        p.clone(),
                        PodMetric {
                            value: fallback(p),
                            ..zero
                        },
                    );
                }
            } else if self.usage_ratio > 1.0 {
                for p in &self.groups.missing {
                    metrics.insert(p.clone(), zero);
                }
            }
        }
        if self.scale_up_with_unready() {
            for p in &self.groups.unready {
                metrics.insert(p.clone(), zero);
            }
        }
        let new = new_ratio(metrics)?;
        let r = self.usage_ratio;
        if tolerances.is_within(new) || (r < 1.0 && new > 1.0) || (r > 1.0 && new < 1.0) {
            return Ok(self.current);
        }
        let replicas = ceil_i32(new * metrics.len() as f64);
        if (new < 1.0 && replicas > self.current) || (new > 1.0 && replicas < self.current) {
            return Ok(self.current);
        }
        Ok(replicas)
    }
}

fn drop_pods(metrics: &mut PodMetricsInfo, pods: &BTreeSet<String>) {
    for p in pods {
        metrics.remove(p);
    }
}

/// What a resource utilization calculation found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResourceReplicas {
    /// The proposed replica count.
    pub replicas: i32,
    /// Utilization in percent of the requests (before padding).
    pub utilization: i32,
    /// Average usage per pod in milli-units (before padding).
    pub raw_average: i64,
}

/// Upstream `GetResourceReplicas` after the metrics were fetched: `target_utilization`
/// percent of the requests of `resource` (of `container`, or the whole pod).
#[allow(clippy::too_many_arguments)]
pub fn resource_replicas(
    current: i32,
    target_utilization: i32,
    resource: &str,
    tolerances: &Tolerances,
    pods: &[&Pod],
    mut metrics: PodMetricsInfo,
    container: Option<&str>,
    cfg: &ReadinessConfig,
    now: Timestamp,
) -> Result<ResourceReplicas, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let groups = group_pods(pods, &metrics, resource, cfg, now);
    drop_pods(&mut metrics, &groups.ignored);
    drop_pods(&mut metrics, &groups.unready);
    if metrics.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let requests = calculate_requests(pods, container, resource)?;
    let (ratio, utilization, raw_average) =
        resource_utilization_ratio(&metrics, &requests, target_utilization)?;
    let rb = Rebalance {
        groups: &groups,
        usage_ratio: ratio,
        current,
    };
    let result = |replicas| ResourceReplicas {
        replicas,
        utilization,
        raw_average,
    };
    if !rb.scale_up_with_unready() && groups.missing.is_empty() {
        if tolerances.is_within(ratio) {
            return Ok(result(current));
        }
        return Ok(result(ceil_i32(ratio * groups.ready_count as f64)));
    }
    let fallback_utilization = i64::from(target_utilization.max(100));
    let replicas = rb.finish(
        &mut metrics,
        |p| requests.get(p).copied().unwrap_or(0) * fallback_utilization / 100,
        |m| resource_utilization_ratio(m, &requests, target_utilization).map(|r| r.0),
        tolerances,
    )?;
    Ok(result(replicas))
}

/// Upstream `calcPlainMetricReplicas` (Resource AverageValue, Pods metrics): the
/// average per pod against `target` (milli-units); `resource` is `cpu` only for cpu
/// AverageValue targets (the cpu readiness rules apply).
#[allow(clippy::too_many_arguments)]
pub fn plain_metric_replicas(
    mut metrics: PodMetricsInfo,
    current: i32,
    target: i64,
    tolerances: &Tolerances,
    pods: &[&Pod],
    resource: &str,
    cfg: &ReadinessConfig,
    now: Timestamp,
) -> Result<(i32, i64), String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    let groups = group_pods(pods, &metrics, resource, cfg, now);
    drop_pods(&mut metrics, &groups.ignored);
    drop_pods(&mut metrics, &groups.unready);
    if metrics.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)".into());
    }
    let (ratio, usage) = metric_usage_ratio(&metrics, target);
    let rb = Rebalance {
        groups: &groups,
        usage_ratio: ratio,
        current,
    };
    if !rb.scale_up_with_unready() && groups.missing.is_empty() {
        if tolerances.is_within(ratio) {
            return Ok((current, usage));
        }
        return Ok((ceil_i32(ratio * groups.ready_count as f64), usage));
    }
    let replicas = rb.finish(
        &mut metrics,
        |_| target,
        |m| Ok(metric_usage_ratio(m, target).0),
        tolerances,
    )?;
    Ok((replicas, usage))
}

/// Upstream `getReadyPodsCount`: running and ready pods.
pub fn ready_pods_count(pods: &[&Pod]) -> Result<i64, String> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count".into());
    }
    Ok(pods
        .iter()
        .filter(|p| phase(p) == "Running" && is_pod_ready(p))
        .count() as i64)
}

/// Upstream `getUsageRatioReplicaCount` (Object Value, External Value): scale the ready
/// pods by the ratio; from zero replicas, `ceil(ratio)` without tolerance.
pub fn usage_ratio_replica_count(
    current: i32,
    usage_ratio: f64,
    tolerances: &Tolerances,
    pods: &[&Pod],
) -> Result<i32, String> {
    if current == 0 {
        return Ok(ceil_i32(usage_ratio));
    }
    if tolerances.is_within(usage_ratio) {
        return Ok(current);
    }
    let ready =
        ready_pods_count(pods).map_err(|e| format!("unable to calculate ready pods: {e}"))?;
    Ok(ceil_i32(usage_ratio * ready as f64))
}

/// Upstream `GetObjectMetricReplicas` after the fetch: (replicas, usage).
pub fn object_metric_replicas(
    current: i32,
    target: i64,
    usage: i64,
    tolerances: &Tolerances,
    pods: &[&Pod],
) -> Result<(i32, i64), String> {
    let ratio = usage as f64 / target as f64;
    Ok((
        usage_ratio_replica_count(current, ratio, tolerances, pods)?,
        usage,
    ))
}

/// Upstream `GetObjectPerPodMetricReplicas` / `GetExternalPerPodMetricReplicas` after
/// the fetch: the total against `target_per_pod` times the scale's status replicas;
/// returns (replicas, average per pod).
pub fn per_pod_replicas(
    status_replicas: i32,
    target_per_pod: i64,
    total: i64,
    tolerances: &Tolerances,
) -> (i32, i64) {
    let mut replicas = status_replicas;
    let ratio = total as f64 / (target_per_pod as f64 * f64::from(status_replicas));
    if !tolerances.is_within(ratio) {
        replicas = ceil_i32(total as f64 / target_per_pod as f64);
    }
    let average = if total == i64::MAX {
        i64::MAX
    } else {
        (total as f64 / f64::from(status_replicas)).ceil() as i64
    };
    (replicas, average)
}

/// The sum of an external metric's series, capped at `i64::MAX`.
pub fn sum_values(values: &[i64]) -> i64 {
    values.iter().fold(0i64, |acc, v| acc.saturating_add(*v))
}

/// Upstream `GetExternalMetricReplicas` after the fetch: (replicas, total usage).
pub fn external_metric_replicas(
    current: i32,
    target: i64,
    values: &[i64],
    tolerances: &Tolerances,
    pods: &[&Pod],
) -> Result<(i32, i64), String> {
    let usage = sum_values(values);
    let ratio = usage as f64 / target as f64;
    Ok((
        usage_ratio_replica_count(current, ratio, tolerances, pods)?,
        usage,
    ))
}

#[cfg(test)]
#[path = "replica_calculator_tests.rs"]
mod tests;
