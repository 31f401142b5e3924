//! Pod IP addresses from each node's pod CIDR, as a host-local IPAM plug-in hands them
//! out: round robin over the usable addresses (the network address, the gateway `.1`
//! and the broadcast address are never given), released when the pod ends or goes.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Mutex;

use coxswain_runtime::ObjectKey;

/// Parse `a.b.c.d/len` (IPv4 only) into the network address and prefix length.
pub fn parse_cidr(cidr: &str) -> Option<(u32, u8)> {
    let (ip, len) = cidr.trim().split_once('/')?;
    let ip: Ipv4Addr = ip.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    if len > 30 {
        return None;
    }
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    Some((u32::from(ip) & mask, len))
}

/// The `/24` of node index `i` from `base`.
pub fn node_cidr(base: Ipv4Addr, i: u32) -> String {
    let net = u32::from(base).wrapping_add(i.wrapping_mul(256));
    format!("{}/24", Ipv4Addr::from(net))
}

/// The address `i` after `base`.
pub fn nth_address(base: Ipv4Addr, i: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(base).wrapping_add(i))
}

struct Pool {
    network: u32,
    size: u32,
    used: HashSet<u32>,
    next: u32,
}

impl Pool {
    fn new(network: u32, len: u8) -> Pool {
        Pool {
            network,
            size: 1u32 << (32 - u32::from(len)),
            used: HashSet::new(),
            next: 2,
        }
    }

    fn contains(&self, ip: u32) -> Option<u32> {
        let off = ip.wrapping_sub(self.network);
        (off >= 2 && off < self.size - 1).then_some(off)
    }

    fn take(&mut self) -> Option<u32> {
        let usable = self.size - 3;
        for _ in 0..usable {
            let off = self.next;
            self.next = if self.next + 1 >= self.size - 1 {
                2
            } else {
                self.next + 1
            };
            if self.used.insert(off) {
                return Some(self.network + off);
            }
        }
        None
    }
}

struct Lease {
    uid: String,
    node: String,
    ip: u32,
}

#[derive(Default)]
struct Inner {
    pools: HashMap<String, Pool>,
    by_pod: HashMap<ObjectKey, Lease>,
}

/// Pod addresses of every simulated node.
#[derive(Default)]
pub struct Ipam {
    inner: Mutex<Inner>,
}

/// A pod that already holds an address (to seed a node's pool).
pub struct Held {
    /// The pod.
    pub key: ObjectKey,
    /// Its uid.
    pub uid: String,
    /// Its IP.
    pub ip: String,
}

impl Ipam {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The address of pod `key` (uid `uid`) on `node` with pod CIDR `cidr`: the one it
    /// holds, or a free one. `seed` lists the pods already holding addresses on the
    /// node; it is called once, when the node's pool is first used. `None` when the
    /// CIDR is bad or full.
    pub fn assign(
        &self,
        key: &ObjectKey,
        uid: &str,
        node: &str,
        cidr: &str,
        seed: impl FnOnce() -> Vec<Held>,
    ) -> Option<Ipv4Addr> {
        let (network, len) = parse_cidr(cidr)?;
        let mut inner = self.lock();
        if let Some(l) = inner.by_pod.get(key) {
            if l.uid == uid && l.node == node {
                return Some(Ipv4Addr::from(l.ip));
            }
        }
        Self::release_locked(&mut inner, key);
        let fresh = match inner.pools.get(node) {
            Some(p) => p.network != network || p.size != 1u32 << (32 - u32::from(len)),
            None => true,
        };
        if fresh {
            inner
                .pools
                .insert(node.to_string(), Pool::new(network, len));
            for h in seed() {
                let Ok(ip) = h.ip.parse::<Ipv4Addr>() else {
                    continue;
                };
                let ip = u32::from(ip);
                let Some(pool) = inner.pools.get_mut(node) else {
                    break;
                };
                if let Some(off) = pool.contains(ip) {
                    if h.key != *key && pool.used.insert(off) {
                        inner.by_pod.insert(
                            h.key,
                            Lease {
                                uid: h.uid,
                                node: node.to_string(),
                                ip,
                            },
                        );
                    }
                }
            }
        }
        let ip = inner.pools.get_mut(node)?.take()?;
        inner.by_pod.insert(
            key.clone(),
            Lease {
                uid: uid.to_string(),
                node: node.to_string(),
                ip,
            },
        );
        Some(Ipv4Addr::from(ip))
    }

    /// Record that pod `key` holds `ip` on `node` (a pod seen with an address), when
    /// that node's pool is in use and the address is free.
    pub fn note(&self, key: &ObjectKey, uid: &str, node: &str, ip: &str) {
        let Ok(ip) = ip.parse::<Ipv4Addr>() else {
            return;
        };
        let ip = u32::from(ip);
        let mut inner = self.lock();
        if inner.by_pod.get(key).is_some_and(|l| l.uid == uid) {
            return;
        }
        let Some(pool) = inner.pools.get_mut(node) else {
            return;
        };
        if let Some(off) = pool.contains(ip) {
            if pool.used.insert(off) {
                inner.by_pod.insert(
                    key.clone(),
                    Lease {
                        uid: uid.to_string(),
                        node: node.to_string(),
                        ip,
                    },
                );
            }
        }
    }

    fn release_locked(inner: &mut Inner, key: &ObjectKey) {
        if let Some(l) = inner.by_pod.remove(key) {
            if let Some(pool) = inner.pools.get_mut(&l.node) {
                if let Some(off) = pool.contains(l.ip) {
                    pool.used.remove(&off);
                }
            }
        }
    }

    /// Give back the address of pod `key`.
    pub fn release(&self, key: &ObjectKey) {
        Self::release_locked(&mut self.lock(), key);
    }

    /// Forget a node's pool (the node is gone or no longer simulated).
    pub fn forget_node(&self, node: &str) {
        let mut inner = self.lock();
        inner.pools.remove(node);
        inner.by_pod.retain(|_, l| l.node != node);
    }

    /// Addresses in use (for tests and metrics).
    pub fn in_use(&self) -> usize {
        self.lock().by_pod.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs_and_addresses() {
        assert_eq!(
            parse_cidr("10.244.3.0/24"),
            Some((u32::from(Ipv4Addr::new(10, 244, 3, 0)), 24))
        );
        assert_eq!(
            parse_cidr("10.244.3.7/24"),
            Some((u32::from(Ipv4Addr::new(10, 244, 3, 0)), 24))
        );
        assert_eq!(parse_cidr("fd00::/64"), None);
        assert_eq!(parse_cidr("10.0.0.0/31"), None);
        assert_eq!(node_cidr(Ipv4Addr::new(10, 244, 0, 0), 3), "10.244.3.0/24");
        assert_eq!(
            node_cidr(Ipv4Addr::new(10, 244, 0, 0), 300),
            "10.245.44.0/24"
        );
        assert_eq!(
            nth_address(Ipv4Addr::new(172, 18, 0, 2), 300),
            Ipv4Addr::new(172, 18, 1, 46)
        );
    }

    #[test]
    fn addresses_are_unique_round_robin_and_released() {
        let ipam = Ipam::default();
        let k = |n: &str| ObjectKey::namespaced("ns", n);
        let seeded = || {
            vec![Held {
                key: k("old"),
                uid: "u-old".into(),
                ip: "10.244.1.2".into(),
            }]
        };
        let a = ipam.assign(&k("a"), "ua", "n1", "10.244.1.0/24", seeded);
        assert_eq!(
            a,
            Some(Ipv4Addr::new(10, 244, 1, 3)),
            "the seeded .2 is taken"
        );
        // the same pod keeps its address
        assert_eq!(
            ipam.assign(&k("a"), "ua", "n1", "10.244.1.0/24", Vec::new),
            a
        );
        // a new pod with the same name gets a new one
        let a2 = ipam.assign(&k("a"), "ua2", "n1", "10.244.1.0/24", Vec::new);
        assert_eq!(a2, Some(Ipv4Addr::new(10, 244, 1, 4)));
        ipam.release(&k("a"));
        ipam.release(&k("old"));
        // fill the rest: 253 usable addresses in a /24
        let mut got = HashSet::new();
        for i in 0..253 {
            let ip = ipam.assign(&k(&format!("p{i}")), "u", "n1", "10.244.1.0/24", Vec::new);
            let ip = ip.unwrap_or_else(|| panic!("address {i}"));
            assert!(got.insert(ip));
            let last = ip.octets()[3];
            assert!((2..=254).contains(&last), "{ip}");
        }
        assert_eq!(
            ipam.assign(&k("full"), "u", "n1", "10.244.1.0/24", Vec::new),
            None
        );
        ipam.release(&k("p7"));
        assert!(ipam
            .assign(&k("full"), "u", "n1", "10.244.1.0/24", Vec::new)
            .is_some());
    }
}
