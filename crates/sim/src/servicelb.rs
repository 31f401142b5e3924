//! The simulated cloud's service load balancers: what a cloud provider's service
//! controller does (upstream `k8s.io/cloud-provider/controllers/service`), with
//! addresses from a configured pool instead of a real cloud.
//!
//! A Service of `type: LoadBalancer` without `spec.loadBalancerClass` (the default
//! cloud's, [`wants_load_balancer`]) gets the `service.kubernetes.io/load-balancer-cleanup`
//! finalizer first, then one `status.loadBalancer.ingress` address (`ipMode: VIP`) from
//! [`crate::SimConfig::load_balancer_ip_range`] — `spec.loadBalancerIP` when it is in the
//! pool and free, else the lowest free address — with upstream's events
//! (`EnsuringLoadBalancer`, `EnsuredLoadBalancer`). When the pool is exhausted the status
//! stays empty, a `SyncLoadBalancerFailed` warning says why and the Service is retried
//! with back-off. A Service that stops wanting a load balancer (another type) or is
//! deleted gets `DeletingLoadBalancer` / `DeletedLoadBalancer`: its address is released
//! for reuse, its status cleared and the finalizer removed ([`needs_cleanup`]), so the
//! deletion completes. Allocations are read back from the Services' statuses, so a
//! restarted simulator keeps every address where it was. Nothing here talks to a real
//! cloud.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::controller::{Action, ReconcileResult};
use coxswain_runtime::events::{object_reference, EventRecorder, EventType};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::core::v1::{Service, ServicePort};
use kube::api::{Patch, PatchParams};
use kube::Api;
use serde_json::json;

/// The finalizer that keeps a Service until its load balancer is gone (upstream
/// `servicehelper.LoadBalancerCleanupFinalizer`).
pub const LB_FINALIZER: &str = "service.kubernetes.io/load-balancer-cleanup";

/// Upstream `wantsLoadBalancer`: `type: LoadBalancer` and no `loadBalancerClass` (a class
/// means another implementation serves it).
pub fn wants_load_balancer(svc: &Service) -> bool {
    let spec = svc.spec.as_ref();
    spec.and_then(|s| s.type_.as_deref()) == Some("LoadBalancer")
        && spec.and_then(|s| s.load_balancer_class.as_ref()).is_none()
}

fn has_finalizer(svc: &Service) -> bool {
    svc.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == LB_FINALIZER)
}

/// Upstream `needsCleanup`: the Service holds the finalizer and is being deleted or no
/// longer of type `LoadBalancer`.
pub fn needs_cleanup(svc: &Service) -> bool {
    if !has_finalizer(svc) {
        return false;
    }
    svc.metadata.deletion_timestamp.is_some()
        || svc.spec.as_ref().and_then(|s| s.type_.as_deref()) != Some("LoadBalancer")
}

fn port_equal_for_lb(x: &ServicePort, y: &ServicePort) -> bool {
    x.name == y.name
        && x.protocol == y.protocol
        && x.port == y.port
        && x.node_port == y.node_port
        && x.target_port == y.target_port
}

/// Upstream `portsEqualForLB`: the same ports, in the same order, by name, protocol,
/// port, node port and target port.
pub fn ports_equal_for_lb(x: &Service, y: &Service) -> bool {
    let ports = |s: &Service| {
        s.spec
            .as_ref()
            .and_then(|s| s.ports.clone())
            .unwrap_or_default()
    };
    let (a, b) = (ports(x), ports(y));
    a.len() == b.len() && a.iter().zip(&b).all(|(p, q)| port_equal_for_lb(p, q))
}

/// Why no address could be given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// Every address of the pool is taken.
    #[error("no available IP addresses in load balancer pool {0}")]
    Exhausted(String),
    /// `spec.loadBalancerIP` is outside the pool.
    #[error("requested load balancer IP {0} is not in pool {1}")]
    NotInPool(Ipv4Addr, String),
    /// `spec.loadBalancerIP` belongs to another Service.
    #[error("requested load balancer IP {0} is already allocated to service {1}")]
    Taken(Ipv4Addr, String),
}

/// An IPv4 address pool (a CIDR; without its network and broadcast addresses when it
/// has more than two) and who holds which address.
#[derive(Clone, Debug)]
pub struct IpPool {
    cidr: String,
    first: u32,
    last: u32,
    by_ip: BTreeMap<u32, String>,
    by_owner: BTreeMap<String, u32>,
}

impl IpPool {
    /// The pool of `cidr` (`172.18.255.0/24`).
    pub fn parse(cidr: &str) -> Result<IpPool, String> {
        let bad = || {
            format!("invalid load balancer IP range {cidr:?}: want an IPv4 CIDR such as 172.18.255.0/24")
        };
        let (addr, bits) = cidr.trim().split_once('/').ok_or_else(bad)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let bits: u32 = bits.parse().map_err(|_| bad())?;
        if bits > 32 {
            return Err(bad());
        }
        let mask = if bits == 0 {
            0
        } else {
            u32::MAX << (32 - bits)
        };
        let network = u32::from(addr) & mask;
        let broadcast = network | !mask;
        let (first, last) = if bits <= 30 {
            (network + 1, broadcast - 1)
        } else {
            (network, broadcast)
        };
        Ok(IpPool {
            cidr: format!("{}/{bits}", Ipv4Addr::from(network)),
            first,
            last,
            by_ip: BTreeMap::new(),
            by_owner: BTreeMap::new(),
        })
    }

    /// Whether `ip` is one of the pool's addresses.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        (self.first..=self.last).contains(&u32::from(ip))
    }

    /// The address `owner` holds.
    pub fn address_of(&self, owner: &str) -> Option<Ipv4Addr> {
        self.by_owner.get(owner).map(|ip| Ipv4Addr::from(*ip))
    }

    /// Record that `owner` holds `ip` (read back from a status after a restart); false
    /// when `ip` is outside the pool or someone else holds it.
    pub fn record(&mut self, owner: &str, ip: Ipv4Addr) -> bool {
        if !self.contains(ip) {
            return false;
        }
        match self.by_ip.get(&u32::from(ip)) {
            Some(o) => o == owner,
            None => {
                self.release(owner);
                self.by_ip.insert(u32::from(ip), owner.to_string());
                self.by_owner.insert(owner.to_string(), u32::from(ip));
                true
            }
        }
    }

    /// An address for `owner`: the one it holds, else `wanted` (which must be in the pool
    /// and free), else the lowest free one.
    pub fn allocate(
        &mut self,
        owner: &str,
        wanted: Option<Ipv4Addr>,
    ) -> Result<Ipv4Addr, AllocError> {
        if let Some(w) = wanted {
            if !self.contains(w) {
                return Err(AllocError::NotInPool(w, self.cidr.clone()));
            }
            if let Some(o) = self.by_ip.get(&u32::from(w)).filter(|o| *o != owner) {
                return Err(AllocError::Taken(w, o.clone()));
            }
            self.record(owner, w);
            return Ok(w);
        }
        if let Some(ip) = self.address_of(owner) {
            return Ok(ip);
        }
        // the lowest address not in use
        let mut candidate = self.first;
        for used in self.by_ip.range(self.first..=self.last).map(|(ip, _)| *ip) {
            if used != candidate {
                break;
            }
            candidate = match candidate.checked_add(1) {
                Some(c) => c,
                None => return Err(AllocError::Exhausted(self.cidr.clone())),
            };
        }
        if candidate > self.last {
            return Err(AllocError::Exhausted(self.cidr.clone()));
        }
        let ip = Ipv4Addr::from(candidate);
        self.record(owner, ip);
        Ok(ip)
    }

    /// Give back what `owner` holds; the address it held, if any.
    pub fn release(&mut self, owner: &str) -> Option<Ipv4Addr> {
        let ip = self.by_owner.remove(owner)?;
        self.by_ip.remove(&ip);
        Some(Ipv4Addr::from(ip))
    }
}

fn owner(key: &ObjectKey) -> String {
    format!("{}/{}", key.namespace().unwrap_or(""), key.name())
}

fn ingress_ips(svc: &Service) -> Vec<Ipv4Addr> {
    svc.status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|i| i.ip.as_deref()?.parse().ok())
        .collect()
}

/// The simulated cloud's service controller.
pub struct LoadBalancers {
    cache: Arc<Cache>,
    client: kube::Client,
    recorder: EventRecorder,
    pool: Mutex<IpPool>,
    recovered: std::sync::atomic::AtomicBool,
}

impl LoadBalancers {
    /// The controller over `pool`.
    pub fn new(
        cache: Arc<Cache>,
        client: kube::Client,
        recorder: EventRecorder,
        pool: IpPool,
    ) -> Arc<Self> {
        Arc::new(LoadBalancers {
            cache,
            client,
            recorder,
            pool: Mutex::new(pool),
            recovered: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn pool(&self) -> std::sync::MutexGuard<'_, IpPool> {
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record the addresses Services already hold (after a restart), so none is given
    /// twice; once, before the first Service is looked at (the cache is synced then).
    async fn recover(&self) {
        if self
            .recovered
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let all = self.cache.list::<Service>(None).await;
        let mut pool = self.pool();
        for svc in all.iter().filter(|s| has_finalizer(s)) {
            let key = format!(
                "{}/{}",
                svc.metadata.namespace.as_deref().unwrap_or(""),
                svc.metadata.name.as_deref().unwrap_or("")
            );
            if pool.address_of(&key).is_none() {
                if let Some(ip) = ingress_ips(svc).into_iter().find(|ip| pool.contains(*ip)) {
                    pool.record(&key, ip);
                }
            }
        }
    }

    fn event(&self, svc: &Service, type_: EventType, reason: &str, note: &str) {
        self.recorder
            .event(&object_reference(svc), None, type_, reason, "Sync", note);
    }

    /// Patch the Service (or its status); false on a conflict.
    async fn patch(
        &self,
        key: &ObjectKey,
        status: bool,
        body: serde_json::Value,
    ) -> Result<bool, kube::Error> {
        let api: Api<Service> =
            Api::namespaced(self.client.clone(), key.namespace().unwrap_or("default"));
        let res = if status {
            api.patch_status(key.name(), &PatchParams::default(), &Patch::Merge(body))
                .await
        } else {
            api.patch(key.name(), &PatchParams::default(), &Patch::Merge(body))
                .await
        };
        match res {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(true),
            // a newer version is on its way through the cache, which reconciles again
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn finalizers_without(svc: &Service) -> Vec<String> {
        svc.metadata
            .finalizers
            .iter()
            .flatten()
            .filter(|f| *f != LB_FINALIZER)
            .cloned()
            .collect()
    }

    /// Bring one Service's load balancer in line with its spec.
    pub async fn reconcile(&self, key: ObjectKey) -> ReconcileResult {
        self.recover().await;
        let who = owner(&key);
        let Some(svc) = self.cache.get::<Service>(&key).await else {
            self.pool().release(&who);
            return Ok(Action::Done);
        };
        if !wants_load_balancer(&svc) || needs_cleanup(&svc) {
            let held = self.pool().address_of(&who).is_some();
            // a status written by another implementation (a `loadBalancerClass`) is not ours
            if !held && !has_finalizer(&svc) {
                return Ok(Action::Done);
            }
            if held {
                self.event(
                    &svc,
                    EventType::Normal,
                    "DeletingLoadBalancer",
                    "Deleting load balancer",
                );
            }
            self.pool().release(&who);
            // as upstream: the finalizer goes first, then the status is cleared
            if has_finalizer(&svc) {
                let rv = svc.metadata.resource_version.clone();
                if !self
                    .patch(
                        &key,
                        false,
                        json!({"metadata": {"finalizers": Self::finalizers_without(&svc), "resourceVersion": rv}}),
                    )
                    .await?
                {
                    return Ok(Action::Done);
                }
                self.event(
                    &svc,
                    EventType::Normal,
                    "DeletedLoadBalancer",
                    "Deleted load balancer",
                );
            }
            if !ingress_ips(&svc).is_empty() && svc.metadata.deletion_timestamp.is_none() {
                self.patch(
                    &key,
                    true,
                    json!({"status": {"loadBalancer": {"ingress": null}}}),
                )
                .await?;
            }
            return Ok(Action::Done);
        }
        let wanted = svc
            .spec
            .as_ref()
            .and_then(|s| s.load_balancer_ip.as_deref())
            .filter(|s| !s.is_empty())
            .and_then(|s| s.parse::<Ipv4Addr>().ok());
        let current = ingress_ips(&svc);
        let ip = match self.pool().allocate(&who, wanted) {
            Ok(ip) => ip,
            Err(e) => {
                self.event(
                    &svc,
                    EventType::Normal,
                    "EnsuringLoadBalancer",
                    "Ensuring load balancer",
                );
                self.event(
                    &svc,
                    EventType::Warning,
                    "SyncLoadBalancerFailed",
                    &format!("Error syncing load balancer: failed to ensure load balancer: {e}"),
                );
                return Err(coxswain_runtime::controller::ReconcileError::msg(
                    e.to_string(),
                ));
            }
        };
        if has_finalizer(&svc) && current == [ip] {
            return Ok(Action::Done);
        }
        self.event(
            &svc,
            EventType::Normal,
            "EnsuringLoadBalancer",
            "Ensuring load balancer",
        );
        if !has_finalizer(&svc) {
            let mut finalizers = Self::finalizers_without(&svc);
            finalizers.push(LB_FINALIZER.to_string());
            let rv = svc.metadata.resource_version.clone();
            if !self
                .patch(
                    &key,
                    false,
                    json!({"metadata": {"finalizers": finalizers, "resourceVersion": rv}}),
                )
                .await?
            {
                return Ok(Action::Done);
            }
        }
        self.patch(
            &key,
            true,
            json!({"status": {"loadBalancer": {"ingress": [{"ip": ip.to_string(), "ipMode": "VIP"}]}}}),
        )
        .await?;
        self.event(
            &svc,
            EventType::Normal,
            "EnsuredLoadBalancer",
            "Ensured load balancer",
        );
        Ok(Action::Done)
    }
}

/// How long a Service whose load balancer could not be ensured waits at first; it
/// doubles per failure (upstream `minRetryDelay`, 5 s, up to `maxRetryDelay`, 300 s).
pub const RETRY_DELAYS: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(300));

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn svc(type_: &str, class: Option<&str>, finalizer: bool, deleting: bool) -> Service {
        let mut s = Service::default();
        s.metadata.name = Some("s".into());
        s.metadata.namespace = Some("default".into());
        if finalizer {
            s.metadata.finalizers = Some(vec![LB_FINALIZER.into()]);
        }
        if deleting {
            s.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        }
        let spec = s.spec.get_or_insert_with(Default::default);
        spec.type_ = Some(type_.into());
        spec.load_balancer_class = class.map(str::to_string);
        s
    }

    /// Upstream `TestNeedsCleanup`.
    #[test]
    fn needs_cleanup_table() {
        for (name, s, want) in [
            (
                "service without finalizer",
                svc("LoadBalancer", None, false, false),
                false,
            ),
            (
                "service with finalizer without timestamp without LB type",
                svc("ClusterIP", None, true, false),
                true,
            ),
            (
                "service with finalizer without timestamp with LB type",
                svc("LoadBalancer", None, true, false),
                false,
            ),
            (
                "service with finalizer with timestamp",
                svc("LoadBalancer", None, true, true),
                true,
            ),
            (
                "service without finalizer being deleted",
                svc("LoadBalancer", None, false, true),
                false,
            ),
        ] {
            assert_eq!(needs_cleanup(&s), want, "{name}");
        }
    }

    /// Upstream `TestWantsLoadBalancer` (and the `loadBalancerClass` cases).
    #[test]
    fn wants_load_balancer_table() {
        for (name, s, want) in [
            ("ClusterIP", svc("ClusterIP", None, false, false), false),
            ("NodePort", svc("NodePort", None, false, false), false),
            (
                "ExternalName",
                svc("ExternalName", None, false, false),
                false,
            ),
            (
                "LoadBalancer",
                svc("LoadBalancer", None, false, false),
                true,
            ),
            (
                "LoadBalancer with a class",
                svc("LoadBalancer", Some("example.com/lb"), false, false),
                false,
            ),
        ] {
            assert_eq!(wants_load_balancer(&s), want, "{name}");
        }
    }

    fn port(name: &str, protocol: &str, p: i32, node: Option<i32>, target: i32) -> ServicePort {
        ServicePort {
            name: Some(name.into()),
            protocol: Some(protocol.into()),
            port: p,
            node_port: node,
            target_port: Some(IntOrString::Int(target)),
            ..Default::default()
        }
    }

    fn with_ports(ports: Vec<ServicePort>) -> Service {
        let mut s = svc("LoadBalancer", None, false, false);
        if let Some(sp) = s.spec.as_mut() {
            sp.ports = Some(ports);
        }
        s
    }

    /// Upstream `TestPortEqualForLB` / `portsEqualForLB` cases.
    #[test]
    fn ports_equal_for_lb_table() {
        let base = || port("http", "TCP", 80, Some(30080), 8080);
        let cases: Vec<(&str, Vec<ServicePort>, Vec<ServicePort>, bool)> = vec![
            ("same", vec![base()], vec![base()], true),
            (
                "name differs",
                vec![base()],
                vec![port("web", "TCP", 80, Some(30080), 8080)],
                false,
            ),
            (
                "protocol differs",
                vec![base()],
                vec![port("http", "UDP", 80, Some(30080), 8080)],
                false,
            ),
            (
                "port differs",
                vec![base()],
                vec![port("http", "TCP", 81, Some(30080), 8080)],
                false,
            ),
            (
                "node port differs",
                vec![base()],
                vec![port("http", "TCP", 80, Some(30081), 8080)],
                false,
            ),
            (
                "target port differs",
                vec![base()],
                vec![port("http", "TCP", 80, Some(30080), 9090)],
                false,
            ),
            (
                "more ports",
                vec![base()],
                vec![base(), port("https", "TCP", 443, None, 8443)],
                false,
            ),
            (
                "order matters",
                vec![base(), port("https", "TCP", 443, None, 8443)],
                vec![port("https", "TCP", 443, None, 8443), base()],
                false,
            ),
            ("none", vec![], vec![], true),
        ];
        for (name, x, y, want) in cases {
            assert_eq!(
                ports_equal_for_lb(&with_ports(x), &with_ports(y)),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn the_pool_hands_out_the_lowest_free_address_and_reuses_released_ones() {
        let mut p = IpPool::parse("172.18.255.0/30").unwrap();
        // a /30 without network and broadcast: .1 and .2
        assert_eq!(p.allocate("a", None), Ok(Ipv4Addr::new(172, 18, 255, 1)));
        assert_eq!(
            p.allocate("a", None),
            Ok(Ipv4Addr::new(172, 18, 255, 1)),
            "stable"
        );
        assert_eq!(p.allocate("b", None), Ok(Ipv4Addr::new(172, 18, 255, 2)));
        assert_eq!(
            p.allocate("c", None),
            Err(AllocError::Exhausted("172.18.255.0/30".into()))
        );
        assert_eq!(p.release("a"), Some(Ipv4Addr::new(172, 18, 255, 1)));
        assert_eq!(p.release("a"), None);
        assert_eq!(p.allocate("c", None), Ok(Ipv4Addr::new(172, 18, 255, 1)));
        assert_eq!(
            p.allocate("d", None).unwrap_err().to_string(),
            "no available IP addresses in load balancer pool 172.18.255.0/30"
        );
    }

    #[test]
    fn a_requested_address_is_given_when_in_the_pool_and_free() {
        let mut p = IpPool::parse("10.0.0.0/24").unwrap();
        let want = Ipv4Addr::new(10, 0, 0, 50);
        assert_eq!(p.allocate("a", Some(want)), Ok(want));
        assert_eq!(
            p.allocate("b", Some(want)),
            Err(AllocError::Taken(want, "a".into()))
        );
        let outside = Ipv4Addr::new(10, 0, 1, 1);
        assert_eq!(
            p.allocate("b", Some(outside)),
            Err(AllocError::NotInPool(outside, "10.0.0.0/24".into()))
        );
        // changing the request moves the owner
        let other = Ipv4Addr::new(10, 0, 0, 60);
        assert_eq!(p.allocate("a", Some(other)), Ok(other));
        assert_eq!(p.allocate("b", Some(want)), Ok(want));
        // the lowest free address skips the network address
        assert_eq!(p.allocate("c", None), Ok(Ipv4Addr::new(10, 0, 0, 1)));
    }

    #[test]
    fn recorded_allocations_survive_a_restart() {
        let mut p = IpPool::parse("10.0.0.0/29").unwrap();
        assert!(p.record("a", Ipv4Addr::new(10, 0, 0, 1)));
        assert!(p.record("a", Ipv4Addr::new(10, 0, 0, 1)), "idempotent");
        assert!(!p.record("b", Ipv4Addr::new(10, 0, 0, 1)), "held by a");
        assert!(!p.record("b", Ipv4Addr::new(10, 0, 1, 1)), "outside");
        assert_eq!(p.allocate("b", None), Ok(Ipv4Addr::new(10, 0, 0, 2)));
    }

    #[test]
    fn bad_ranges_are_rejected() {
        for bad in ["", "10.0.0.0", "10.0.0.0/33", "x/24", "::1/64"] {
            assert!(IpPool::parse(bad).is_err(), "{bad}");
        }
        let p = IpPool::parse("10.0.0.7/24").unwrap();
        assert!(p.contains(Ipv4Addr::new(10, 0, 0, 254)));
        assert!(!p.contains(Ipv4Addr::new(10, 0, 0, 255)));
        assert!(!p.contains(Ipv4Addr::new(10, 0, 0, 0)));
    }
}
