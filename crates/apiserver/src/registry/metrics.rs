//! `metrics.k8s.io/v1beta1` (NodeMetrics, PodMetrics) as metrics-server serves it, from
//! the usage simulated pods report.
//!
//! Nothing runs in the containers of simulated nodes, so their usage is described by pod
//! annotations and evaluated on every request (the same rule answers every client alike):
//!
//! * `sim.coxswain.dev/cpu-usage` and `sim.coxswain.dev/memory-usage`: the pod's usage,
//!   shared evenly by the containers that have no annotation of their own;
//! * `sim.coxswain.dev/cpu-usage.<container>` and `sim.coxswain.dev/memory-usage.<container>`:
//!   one container's usage (preferred over the pod's).
//!
//! A value is a load curve over the time since the container started (its
//! `state.running.startedAt`, else the pod's `status.startTime`):
//!
//! ```text
//! curve := step ("," step)*
//! step  := quantity | duration "=" quantity      (only the first step may omit the duration)
//! ```
//!
//! `400m` is 400 millicores from the start; `100m,2m=800m,10m=200m` is 100m, 800m from
//! two minutes after the start, 200m from ten minutes. Durations are Go durations
//! (`90s`, `1m30s`), strictly increasing; quantities are non-negative Kubernetes
//! quantities (cpu in cores, memory in bytes: `64Mi`). Before a curve's first step (when
//! it names a duration) the container uses the default. A value that does not parse is
//! ignored (the default applies) and the metrics response carries a `Warning` naming it.
//!
//! Without annotations a container uses [`DEFAULT_CPU_NANOCORES`] and
//! [`DEFAULT_MEMORY_BYTES`]. Only Running pods bound to a node whose Ready condition is
//! True report usage (metrics-server only has samples for those); a node reports the sum of
//! its reporting pods plus [`NODE_OVERHEAD_CPU_NANOCORES`] and
//! [`NODE_OVERHEAD_MEMORY_BYTES`] for its system daemons.

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use apimachinery::quantity::{self, Format, Quantity};

/// The API group.
pub const GROUP: &str = "metrics.k8s.io";
/// Its only version.
pub const VERSION: &str = "v1beta1";
/// Pod cpu usage annotation (every container without its own).
pub const CPU_USAGE: &str = "sim.coxswain.dev/cpu-usage";
/// Pod memory usage annotation (every container without its own).
pub const MEMORY_USAGE: &str = "sim.coxswain.dev/memory-usage";
/// Cpu of a container without annotations: 1m.
pub const DEFAULT_CPU_NANOCORES: i128 = 1_000_000;
/// Memory of a container without annotations: 8Mi.
pub const DEFAULT_MEMORY_BYTES: i128 = 8 * 1024 * 1024;
/// Cpu a node's system daemons use: 100m.
pub const NODE_OVERHEAD_CPU_NANOCORES: i128 = 100_000_000;
/// Memory a node's system daemons use: 512Mi.
pub const NODE_OVERHEAD_MEMORY_BYTES: i128 = 512 * 1024 * 1024;
/// The window a sample covers (metrics-server's default `--metric-resolution`).
pub const WINDOW: &str = "15s";

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// A resource metrics-server reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// `cpu`, in nanocores.
    Cpu,
    /// `memory`, in bytes.
    Memory,
}

impl Resource {
    /// The pod annotation.
    pub fn annotation(self) -> &'static str {
        match self {
            Resource::Cpu => CPU_USAGE,
            Resource::Memory => MEMORY_USAGE,
        }
    }

    fn default_usage(self) -> i128 {
        match self {
            Resource::Cpu => DEFAULT_CPU_NANOCORES,
            Resource::Memory => DEFAULT_MEMORY_BYTES,
        }
    }

    /// The amount a quantity stands for: nanocores for cpu, whole bytes (rounded up)
    /// for memory.
    fn amount(self, q: Quantity) -> i128 {
        match self {
            Resource::Cpu => q.nanos(),
            Resource::Memory => q.value(),
        }
    }

    /// The quantity metrics-server writes for an amount: cpu
    /// `NewScaledQuantity(nanocores, Nano)`, memory `NewQuantity(bytes, BinarySI)`.
    pub fn quantity(self, amount: i128) -> Quantity {
        match self {
            Resource::Cpu => Quantity::from_nanos(amount, Format::DecimalSi),
            Resource::Memory => Quantity::from_nanos(amount * NANOS_PER_UNIT, Format::BinarySi),
        }
    }
}

/// A parsed usage annotation: steps of (offset from the start in nanoseconds, amount).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Curve {
    steps: Vec<(i64, i128)>,
}

impl Curve {
    /// Parse a value of the grammar in the module docs.
    pub fn parse(value: &str, resource: Resource) -> Result<Curve, String> {
        let mut steps: Vec<(i64, i128)> = Vec::new();
        for (i, step) in value.split(',').enumerate() {
            let step = step.trim();
            let (offset, q) = match step.split_once('=') {
                Some((d, q)) => {
                    let d = d.trim();
                    let nanos = apimachinery::duration::parse(d)
                        .map_err(|_| format!("{d:?} is not a duration"))?;
                    if nanos < 0 {
                        return Err(format!("duration {d:?} is negative"));
                    }
                    (nanos, q.trim())
                }
                None if i == 0 => (0, step),
                None => {
                    return Err(format!(
                        "step {step:?} needs a duration (<duration>=<quantity>)"
                    ))
                }
            };
            let parsed = quantity::parse(q).ok_or_else(|| format!("{q:?} is not a quantity"))?;
            if parsed.nanos() < 0 {
                return Err(format!("quantity {q:?} is negative"));
            }
            if let Some((last, _)) = steps.last() {
                if offset <= *last {
                    return Err("step durations must increase".into());
                }
            }
            steps.push((offset, resource.amount(parsed)));
        }
        Ok(Curve { steps })
    }

    /// The amount `since_start` nanoseconds after the start; `None` before the first step.
    pub fn at(&self, since_start: i64) -> Option<i128> {
        self.steps
            .iter()
            .take_while(|(offset, _)| *offset <= since_start)
            .last()
            .map(|(_, amount)| *amount)
    }
}

/// One container's usage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerUsage {
    /// The container's name.
    pub name: String,
    /// Nanocores.
    pub cpu: i128,
    /// Bytes.
    pub memory: i128,
}

/// A pod's usage, and the annotations that were ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// Its running containers (regular containers, then sidecar init containers).
    pub containers: Vec<ContainerUsage>,
    /// Why annotations were ignored (one message per annotation).
    pub warnings: Vec<String>,
}

impl PodUsage {
    /// Sum over the containers: (nanocores, bytes).
    pub fn total(&self) -> (i128, i128) {
        self.containers
            .iter()
            .fold((0, 0), |(c, m), u| (c + u.cpu, m + u.memory))
    }
}

fn nanos_since(start: Option<&str>, now: DateTime<Utc>) -> i64 {
    let Some(start) = start.and_then(apimachinery::time::parse_time) else {
        return 0;
    };
    (now - start).num_nanoseconds().unwrap_or(i64::MAX).max(0)
}

/// Whether metrics-server has samples of the pod: Running and on a node.
pub fn pod_reports(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
}

/// Whether metrics-server has samples of the node: its Ready condition is True (a
/// kubelet that stopped answering has none).
pub fn node_reports(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// The usage of the pod's running containers at `now`, from its annotations.
pub fn pod_usage(pod: &Value, now: DateTime<Utc>) -> PodUsage {
    let annotations = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object);
    let annotation = |key: &str| annotations.and_then(|a| a.get(key)).and_then(Value::as_str);
    let pod_start = pod.pointer("/status/startTime").and_then(Value::as_str);
    let started_at = |name: &str| -> Option<&str> {
        ["containerStatuses", "initContainerStatuses"]
            .iter()
            .filter_map(|k| pod.get("status")?.get(k)?.as_array())
            .flatten()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|s| s.pointer("/state/running/startedAt"))
            .and_then(Value::as_str)
    };
    let mut names: Vec<&str> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    // sidecars (init containers that keep running) report usage as containers do
    names.extend(
        pod.pointer("/spec/initContainers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
            .filter_map(|c| c.get("name").and_then(Value::as_str)),
    );
    let mut out = PodUsage::default();
    let mut columns: Vec<Vec<i128>> = Vec::new();
    for resource in [Resource::Cpu, Resource::Memory] {
        let mut warn = |key: &str, value: &str, why: String| {
            out.warnings.push(format!(
                "annotation {key}={value:?} of pod {}/{} is ignored: {why}",
                pod.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                pod.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ));
        };
        let mut amounts: Vec<Option<i128>> = Vec::with_capacity(names.len());
        for name in &names {
            let key = format!("{}.{name}", resource.annotation());
            let own = annotation(&key).and_then(|v| match Curve::parse(v, resource) {
                Ok(c) => Some(c),
                Err(why) => {
                    warn(&key, v, why);
                    None
                }
            });
            amounts.push(own.map(|c| {
                c.at(nanos_since(started_at(name).or(pod_start), now))
                    .unwrap_or(resource.default_usage())
            }));
        }
        let shared =
            annotation(resource.annotation()).and_then(|v| match Curve::parse(v, resource) {
                Ok(c) => Some(c),
                Err(why) => {
                    warn(resource.annotation(), v, why);
                    None
                }
            });
        let shared = shared.and_then(|c| c.at(nanos_since(pod_start, now)));
        let sharing = amounts.iter().filter(|a| a.is_none()).count() as i128;
        let mut first = true;
        let column = amounts
            .into_iter()
            .map(|a| match (a, shared) {
                (Some(a), _) => a,
                (None, Some(total)) => {
                    let share = total / sharing;
                    if std::mem::take(&mut first) {
                        share + total % sharing
                    } else {
                        share
                    }
                }
                (None, None) => resource.default_usage(),
            })
            .collect();
        columns.push(column);
    }
    out.containers = names
        .iter()
        .enumerate()
        .map(|(i, name)| ContainerUsage {
            name: (*name).to_string(),
            cpu: columns[0][i],
            memory: columns[1][i],
        })
        .collect();
    out
}

fn usage_json(cpu: i128, memory: i128) -> Value {
    json!({
        "cpu": Resource::Cpu.quantity(cpu).canonical(),
        "memory": Resource::Memory.quantity(memory).canonical(),
    })
}

fn metadata(obj: &Value, now: &str) -> Value {
    let mut m = Map::new();
    for f in ["name", "namespace"] {
        if let Some(v) = obj.pointer(&format!("/metadata/{f}")) {
            m.insert(f.into(), v.clone());
        }
    }
    m.insert("creationTimestamp".into(), json!(now));
    if let Some(l) = obj.pointer("/metadata/labels") {
        m.insert("labels".into(), l.clone());
    }
    Value::Object(m)
}

/// The `PodMetrics` of a pod with `usage` at `now`.
pub fn pod_metrics(pod: &Value, usage: &PodUsage, now: DateTime<Utc>) -> Value {
    let ts = apimachinery::time::format_time(now);
    let containers: Vec<Value> = usage
        .containers
        .iter()
        .map(|c| json!({"name": c.name, "usage": usage_json(c.cpu, c.memory)}))
        .collect();
    json!({
        "kind": "PodMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": metadata(pod, &ts),
        "timestamp": ts,
        "window": WINDOW,
        "containers": containers,
    })
}

/// The `NodeMetrics` of a node whose reporting pods use `pods` (nanocores, bytes) at
/// `now`; the node's own daemons are added.
pub fn node_metrics(node: &Value, pods: (i128, i128), now: DateTime<Utc>) -> Value {
    let ts = apimachinery::time::format_time(now);
    json!({
        "kind": "NodeMetrics",
        "apiVersion": "metrics.k8s.io/v1beta1",
        "metadata": metadata(node, &ts),
        "timestamp": ts,
        "window": WINDOW,
        "usage": usage_json(
            pods.0 + NODE_OVERHEAD_CPU_NANOCORES,
            pods.1 + NODE_OVERHEAD_MEMORY_BYTES,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        apimachinery::time::parse_time(s).unwrap()
    }

    fn pod(annotations: Value, containers: &[&str]) -> Value {
        let cs: Vec<Value> = containers.iter().map(|n| json!({"name": n})).collect();
        json!({
            "metadata": {"name": "web", "namespace": "ns", "annotations": annotations,
                         "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": cs},
            "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"},
        })
    }

    #[test]
    fn curve_grammar() {
        let c = Curve::parse("400m", Resource::Cpu).unwrap();
        assert_eq!(c.at(0), Some(400_000_000));
        assert_eq!(c.at(1_000_000_000_000), Some(400_000_000));
        let c = Curve::parse("100m, 2m=800m,10m=200m", Resource::Cpu).unwrap();
        let min = 60_000_000_000;
        assert_eq!(c.at(0), Some(100_000_000));
        assert_eq!(c.at(2 * min - 1), Some(100_000_000));
        assert_eq!(c.at(2 * min), Some(800_000_000));
        assert_eq!(c.at(11 * min), Some(200_000_000));
        let late = Curve::parse("30s=1", Resource::Cpu).unwrap();
        assert_eq!(late.at(29_000_000_000), None);
        assert_eq!(late.at(30_000_000_000), Some(1_000_000_000));
        // memory in whole bytes, rounded up
        assert_eq!(
            Curve::parse("64Mi", Resource::Memory).unwrap().at(0),
            Some(64 * 1024 * 1024)
        );
        assert_eq!(
            Curve::parse("1500m", Resource::Memory).unwrap().at(0),
            Some(2)
        );
        for (bad, why) in [
            ("", "\"\" is not a quantity"),
            ("abc", "\"abc\" is not a quantity"),
            ("-1", "quantity \"-1\" is negative"),
            ("1,2", "step \"2\" needs a duration (<duration>=<quantity>)"),
            ("1,5x=2", "\"5x\" is not a duration"),
            ("1,-5s=2", "duration \"-5s\" is negative"),
            ("1,1m=2,30s=3", "step durations must increase"),
            ("1m=2,1m=3", "step durations must increase"),
        ] {
            assert_eq!(
                Curve::parse(bad, Resource::Cpu),
                Err(why.to_string()),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn pod_annotation_is_shared_by_containers_without_their_own() {
        let now = at("2026-01-01T00:05:00Z");
        let p = pod(
            json!({CPU_USAGE: "1", "sim.coxswain.dev/cpu-usage.b": "250m",
                   MEMORY_USAGE: "100Mi"}),
            &["a", "b", "c"],
        );
        let u = pod_usage(&p, now);
        assert!(u.warnings.is_empty());
        let cpu: Vec<i128> = u.containers.iter().map(|c| c.cpu).collect();
        assert_eq!(cpu, [500_000_000, 250_000_000, 500_000_000]);
        let mem: Vec<i128> = u.containers.iter().map(|c| c.memory).collect();
        // 100Mi over three: the remainder goes to the first
        let third = 100 * 1024 * 1024 / 3;
        assert_eq!(mem, [third + 100 * 1024 * 1024 % 3, third, third]);
        assert_eq!(u.total().1, 100 * 1024 * 1024);
    }

    #[test]
    fn defaults_warnings_and_curves_from_the_start() {
        let p = pod(
            json!({CPU_USAGE: "lots", MEMORY_USAGE: "16Mi,1m=32Mi"}),
            &["app"],
        );
        let u = pod_usage(&p, at("2026-01-01T00:00:30Z"));
        assert_eq!(u.containers[0].cpu, DEFAULT_CPU_NANOCORES);
        assert_eq!(u.containers[0].memory, 16 * 1024 * 1024);
        assert_eq!(
            u.warnings,
            ["annotation sim.coxswain.dev/cpu-usage=\"lots\" of pod ns/web is ignored: \"lots\" is not a quantity"]
        );
        let later = pod_usage(&p, at("2026-01-01T00:01:00Z"));
        assert_eq!(later.containers[0].memory, 32 * 1024 * 1024);
        // a container's curve runs from its own start (a restart starts it again)
        let mut restarted = pod(
            json!({"sim.coxswain.dev/cpu-usage.app": "0,1m=2"}),
            &["app"],
        );
        restarted["status"]["containerStatuses"] = json!([
            {"name": "app", "state": {"running": {"startedAt": "2026-01-01T00:00:40Z"}}}
        ]);
        let u = pod_usage(&restarted, at("2026-01-01T00:01:30Z"));
        assert_eq!(u.containers[0].cpu, 0);
        assert_eq!(u.containers[0].memory, DEFAULT_MEMORY_BYTES);
        let u = pod_usage(&restarted, at("2026-01-01T00:01:40Z"));
        assert_eq!(u.containers[0].cpu, 2_000_000_000);
    }

    #[test]
    fn sidecars_report_plain_init_containers_do_not() {
        let mut p = pod(json!({}), &["app"]);
        p["spec"]["initContainers"] = json!([
            {"name": "setup"},
            {"name": "proxy", "restartPolicy": "Always"}
        ]);
        let names: Vec<String> = pod_usage(&p, at("2026-01-01T00:01:00Z"))
            .containers
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["app", "proxy"]);
    }

    #[test]
    fn objects_as_metrics_server_writes_them() {
        let now = at("2026-01-01T00:05:00Z");
        let p = pod(
            json!({CPU_USAGE: "250m", MEMORY_USAGE: "1234567"}),
            &["app"],
        );
        let m = pod_metrics(&p, &pod_usage(&p, now), now);
        assert_eq!(
            m,
            json!({
                "kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "web", "namespace": "ns",
                             "creationTimestamp": "2026-01-01T00:05:00Z", "labels": {"app": "web"}},
                "timestamp": "2026-01-01T00:05:00Z", "window": "15s",
                "containers": [{"name": "app", "usage": {"cpu": "250m", "memory": "1234567"}}],
            })
        );
        let node = json!({"metadata": {"name": "n1", "labels": {"a": "b"}}});
        let n = node_metrics(&node, (1_234_567, 4096), now);
        assert_eq!(
            n["usage"],
            json!({"cpu": "101234567n", "memory": "524292Ki"})
        );
        assert_eq!(n["metadata"]["labels"], json!({"a": "b"}));
        assert!(n["metadata"].get("namespace").is_none());
    }

    #[test]
    fn who_reports() {
        let p = pod(json!({}), &["app"]);
        assert!(pod_reports(&p));
        let mut pending = p.clone();
        pending["status"]["phase"] = json!("Pending");
        assert!(!pod_reports(&pending));
        let mut unbound = p.clone();
        unbound["spec"]["nodeName"] = json!("");
        assert!(!pod_reports(&unbound));
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let unknown = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert!(node_reports(&ready));
        assert!(!node_reports(&unknown));
        assert!(!node_reports(&json!({})));
    }
}
