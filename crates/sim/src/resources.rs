//! Resource quantities and pod resource requests, as the scheduler counts them.
//!
//! Quantities are parsed into milli-units (`"100m"` cpu is 100, `"1Gi"` memory is
//! 1 073 741 824 000), rounded up as `Quantity.MilliValue()` does. A pod's request is
//! computed as upstream `resourcehelper.PodRequests`: the sum of the containers, at
//! least the largest init container (restartable "sidecar" init containers add to
//! everything that starts after them), plus the pod overhead; pod-level
//! `spec.resources.requests` replace the aggregate for the resources they name.

use std::collections::BTreeMap;

use apimachinery::quantity::parse_milli;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// cpu assumed for a container without a cpu request when scoring (upstream
/// `DefaultMilliCPURequest`, 100m).
pub(crate) const DEFAULT_MILLI_CPU: i128 = 100;
/// memory assumed for a container without a memory request when scoring (upstream
/// `DefaultMemoryRequest`, 200 MiB), in milli-bytes.
pub(crate) const DEFAULT_MEMORY_MILLI: i128 = 200 * 1024 * 1024 * 1000;

/// A set of resource amounts in milli-units, by resource name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources(pub BTreeMap<String, i128>);

impl Resources {
    /// Parse a resource list; malformed quantities count as zero (the API server
    /// validates them, so this only guards against a lenient server).
    pub fn from_list(list: Option<&BTreeMap<String, Quantity>>) -> Resources {
        let mut out = Resources::default();
        for (k, q) in list.into_iter().flatten() {
            out.0.insert(k.clone(), parse_milli(&q.0).unwrap_or(0));
        }
        out
    }

    /// The amount of `name` (zero when absent).
    pub fn get(&self, name: &str) -> i128 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Add `other` to `self`.
    pub fn add(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// Subtract `other` from `self`.
    pub fn sub(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_insert(0) -= v;
        }
    }

    /// Raise each amount of `self` to at least the one in `other`.
    pub fn max_with(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            let e = self.0.entry(k.clone()).or_insert(0);
            if *v > *e {
                *e = *v;
            }
        }
    }
}

fn container_requests(c: &Container) -> Resources {
    Resources::from_list(c.resources.as_ref().and_then(|r| r.requests.as_ref()))
}

/// What a pod asks of a node: the requests the fit check uses, and the cpu and memory
/// (milli-units) the least-allocated score uses, where containers without a request
/// count the upstream defaults (100m cpu, 200Mi memory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// Requests, as `resourcehelper.PodRequests`.
    pub requests: Resources,
    /// cpu for scoring (milli-cores).
    pub nonzero_cpu: i128,
    /// memory for scoring (milli-bytes).
    pub nonzero_memory: i128,
    /// Host ports the pod binds: (protocol, host IP, port).
    pub host_ports: Vec<(String, String, i32)>,
}

fn aggregate(spec: &PodSpec, nonzero: bool) -> Resources {
    let with_defaults = |c: &Container| {
        let mut r = container_requests(c);
        if nonzero {
            let mut out = Resources::default();
            // the defaults stand in for an absent request, not for an explicit zero
            let cpu = r.0.remove("cpu");
            let mem = r.0.remove("memory");
            out.0.insert("cpu".into(), cpu.unwrap_or(DEFAULT_MILLI_CPU));
            out.0
                .insert("memory".into(), mem.unwrap_or(DEFAULT_MEMORY_MILLI));
            out
        } else {
            r
        }
    };
    let mut reqs = Resources::default();
    for c in &spec.containers {
        reqs.add(&with_defaults(c));
    }
    let mut restartable = Resources::default();
    let mut init_max = Resources::default();
    for c in spec.init_containers.iter().flatten() {
        let r = with_defaults(c);
        let effective = if c.restart_policy.as_deref() == Some("Always") {
            reqs.add(&r);
            restartable.add(&r);
            restartable.clone()
        } else {
            let mut tmp = r;
            tmp.add(&restartable);
            tmp
        };
        init_max.max_with(&effective);
    }
    reqs.max_with(&init_max);
    // pod-level requests replace the aggregate for the resources they name
    if let Some(pod_level) = spec.resources.as_ref().and_then(|r| r.requests.as_ref()) {
        for (k, v) in Resources::from_list(Some(pod_level)).0 {
            if k == "cpu" || k == "memory" {
                reqs.0.insert(k, v);
            }
        }
    }
    reqs.add(&Resources::from_list(spec.overhead.as_ref()));
    reqs
}

impl PodRequests {
    /// The requests of a pod with `spec`.
    pub fn of(spec: &PodSpec) -> PodRequests {
        let requests = aggregate(spec, false);
        let nonzero = aggregate(spec, true);
        // containers and restartable init containers hold their host ports
        let restartable = spec
            .init_containers
            .iter()
            .flatten()
            .filter(|c| c.restart_policy.as_deref() == Some("Always"));
        let host_ports = spec
            .containers
            .iter()
            .chain(restartable)
            .flat_map(|c| c.ports.iter().flatten())
            .filter(|p| p.host_port.is_some_and(|h| h > 0))
            .map(|p| {
                (
                    p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    p.host_ip
                        .clone()
                        .filter(|ip| !ip.is_empty())
                        .unwrap_or_else(|| "0.0.0.0".into()),
                    p.host_port.unwrap_or(0),
                )
            })
            .collect();
        PodRequests {
            requests,
            nonzero_cpu: nonzero.get("cpu"),
            nonzero_memory: nonzero.get("memory"),
            host_ports,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ResourceRequirements;

    fn container(name: &str, cpu: Option<&str>, mem: Option<&str>) -> Container {
        let mut req = BTreeMap::new();
        if let Some(c) = cpu {
            req.insert("cpu".to_string(), Quantity(c.into()));
        }
        if let Some(m) = mem {
            req.insert("memory".to_string(), Quantity(m.into()));
        }
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: Some(req),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn pod_requests_sum_containers_and_take_max_of_init_plus_overhead() {
        let mut init_big = container("init", Some("3"), None);
        init_big.restart_policy = None;
        let mut sidecar = container("sidecar", Some("500m"), Some("64Mi"));
        sidecar.restart_policy = Some("Always".into());
        let spec = PodSpec {
            containers: vec![
                container("a", Some("1"), Some("1Gi")),
                container("b", Some("500m"), None),
            ],
            init_containers: Some(vec![sidecar, init_big]),
            overhead: Some(BTreeMap::from([(
                "cpu".to_string(),
                Quantity("100m".into()),
            )])),
            ..Default::default()
        };
        let r = PodRequests::of(&spec);
        // containers 1.5 + sidecar 0.5 = 2; init 3 + sidecar 0.5 = 3.5 wins; + 0.1 overhead
        assert_eq!(r.requests.get("cpu"), 3600);
        assert_eq!(
            r.requests.get("memory"),
            ((1i128 << 30) + 64 * (1 << 20)) * 1000
        );
        // container b has no memory request: 200Mi counts for scoring
        assert_eq!(
            r.nonzero_memory,
            ((1i128 << 30) + 64 * (1 << 20)) * 1000 + DEFAULT_MEMORY_MILLI
        );
    }

    #[test]
    fn explicit_zero_requests_are_not_replaced_by_the_defaults() {
        let spec = PodSpec {
            containers: vec![container("a", Some("0"), None)],
            ..Default::default()
        };
        let r = PodRequests::of(&spec);
        assert_eq!(r.nonzero_cpu, 0);
        assert_eq!(r.nonzero_memory, DEFAULT_MEMORY_MILLI);
    }

    #[test]
    fn empty_pod_requests_nothing_but_scores_defaults() {
        let spec = PodSpec {
            containers: vec![Container {
                name: "x".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let r = PodRequests::of(&spec);
        assert_eq!(r.requests.get("cpu"), 0);
        assert_eq!(r.nonzero_cpu, DEFAULT_MILLI_CPU);
        assert_eq!(r.nonzero_memory, DEFAULT_MEMORY_MILLI);
    }
}
