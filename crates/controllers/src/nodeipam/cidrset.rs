//! A set of equal-sized blocks carved from one cluster CIDR (upstream
//! `pkg/controller/nodeipam/ipam/cidrset`): allocate the next free block round robin,
//! mark ranges occupied, release them. IPv4 and IPv6 addresses are both held as `u128`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IP network: the address (masked to the prefix) and the prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cidr {
    addr: u128,
    prefix: u8,
    v6: bool,
}

impl Cidr {
    /// Parse `a.b.c.d/n` or `x:y::/n` (the address is masked to the prefix, as Go's
    /// `net.ParseCIDR`).
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let invalid = || format!("invalid CIDR address: {s}");
        let (ip, len) = s.trim().split_once('/').ok_or_else(invalid)?;
        let ip: IpAddr = ip.parse().map_err(|_| invalid())?;
        if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        let prefix: u8 = len.parse().map_err(|_| invalid())?;
        let (addr, v6) = match ip {
            IpAddr::V4(a) => (u128::from(u32::from(a)), false),
            IpAddr::V6(a) => (u128::from(a), true),
        };
        let c = Cidr { addr, prefix, v6 };
        if prefix > c.bits() {
            return Err(invalid());
        }
        Ok(Cidr {
            addr: addr & c.mask(),
            ..c
        })
    }

    /// Whether this is an IPv6 network.
    pub fn is_ipv6(&self) -> bool {
        self.v6
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    fn bits(&self) -> u8 {
        if self.v6 {
            128
        } else {
            32
        }
    }

    fn all_ones(bits: u8) -> u128 {
        if bits == 128 {
            u128::MAX
        } else {
            (1u128 << bits) - 1
        }
    }

    fn mask_of(bits: u8, prefix: u8) -> u128 {
        let all = Self::all_ones(bits);
        let host = if prefix >= bits { 0 } else { all >> prefix };
        all & !host
    }

    fn mask(&self) -> u128 {
        Self::mask_of(self.bits(), self.prefix)
    }

    /// Whether `addr` (of the same family) is inside this network.
    fn contains(&self, addr: u128) -> bool {
        addr & self.mask() == self.addr
    }

    /// Whether the two networks overlap (one contains the other).
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.v6 == other.v6 && (self.contains(other.addr) || other.contains(self.addr))
    }

    /// The last address of the network.
    fn last(&self) -> u128 {
        self.addr | (!self.mask() & Self::all_ones(self.bits()))
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.v6 {
            write!(f, "{}/{}", Ipv6Addr::from(self.addr), self.prefix)
        } else {
            write!(f, "{}/{}", Ipv4Addr::from(self.addr as u32), self.prefix)
        }
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        Cidr::parse(s)
    }
}

/// The node blocks may be at most this many bits longer than an IPv6 cluster CIDR
/// (upstream `clusterSubnetMaxDiff`: the bitmap is uncompressed).
pub const CLUSTER_SUBNET_MAX_DIFF: u8 = 16;

/// Why a set could not be made or a block not be given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CidrSetError {
    /// Every block is taken (upstream `ErrCIDRRangeNoCIDRsRemaining`).
    #[error("CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range")]
    NoCidrsRemaining,
    /// The node blocks are too small for the cluster CIDR (upstream
    /// `ErrCIDRSetSubNetTooBig`).
    #[error("New CIDR set failed; the node CIDR size is too big")]
    SubNetTooBig,
    /// The node mask is shorter than the cluster's or longer than the address.
    #[error("node CIDR mask size {node} is invalid for cluster CIDR {cluster}")]
    BadMask {
        /// The cluster CIDR.
        cluster: String,
        /// The node mask size.
        node: u8,
    },
    /// A range outside the cluster CIDR.
    #[error("cidr {cidr} is out the range of cluster cidr {cluster}")]
    OutOfRange {
        /// The range.
        cidr: String,
        /// The cluster CIDR.
        cluster: String,
    },
}

/// The blocks of one cluster CIDR (upstream `CidrSet`).
#[derive(Debug, Clone)]
pub struct CidrSet {
    cluster: Cidr,
    node_mask: u8,
    max_cidrs: usize,
    allocated: usize,
    next_candidate: usize,
    used: Vec<u64>,
}

impl CidrSet {
    /// Blocks of `/node_mask` from `cluster` (upstream `NewCIDRSet`).
    pub fn new(cluster: Cidr, node_mask: u8) -> Result<CidrSet, CidrSetError> {
        if node_mask < cluster.prefix || node_mask > cluster.bits() {
            return Err(CidrSetError::BadMask {
                cluster: cluster.to_string(),
                node: node_mask,
            });
        }
        let diff = node_mask - cluster.prefix;
        if cluster.v6 && diff > CLUSTER_SUBNET_MAX_DIFF {
            return Err(CidrSetError::SubNetTooBig);
        }
        if diff >= usize::BITS as u8 - 1 {
            return Err(CidrSetError::SubNetTooBig);
        }
        Ok(CidrSet {
            cluster,
            node_mask,
            max_cidrs: 1usize << diff,
            allocated: 0,
            next_candidate: 0,
            used: Vec::new(),
        })
    }

    /// The cluster CIDR.
    pub fn cluster(&self) -> &Cidr {
        &self.cluster
    }

    /// How many blocks there are.
    pub fn max_cidrs(&self) -> usize {
        self.max_cidrs
    }

    /// How many blocks are taken.
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    fn bit(&self, i: usize) -> bool {
        self.used
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set_bit(&mut self, i: usize, on: bool) {
        let word = i / 64;
        if word >= self.used.len() {
            if !on {
                return;
            }
            self.used.resize(word + 1, 0);
        }
        if on {
            self.used[word] |= 1 << (i % 64);
        } else {
            self.used[word] &= !(1 << (i % 64));
        }
    }

    /// The block of index `index` (upstream `indexToCIDRBlock`).
    pub fn index_to_cidr(&self, index: usize) -> Cidr {
        let shift = self.cluster.bits() - self.node_mask;
        let offset = if shift >= 128 {
            0
        } else {
            (index as u128) << shift
        };
        Cidr {
            addr: self.cluster.addr | offset,
            prefix: self.node_mask,
            v6: self.cluster.v6,
        }
    }

    /// Take the next free block, round robin from the last one given (upstream
    /// `AllocateNext`).
    pub fn allocate_next(&mut self) -> Result<Cidr, CidrSetError> {
        if self.allocated == self.max_cidrs {
            return Err(CidrSetError::NoCidrsRemaining);
        }
        let mut candidate = self.next_candidate;
        for _ in 0..self.max_cidrs {
            if !self.bit(candidate) {
                break;
            }
            candidate = (candidate + 1) % self.max_cidrs;
        }
        self.next_candidate = (candidate + 1) % self.max_cidrs;
        self.set_bit(candidate, true);
        self.allocated += 1;
        Ok(self.index_to_cidr(candidate))
    }

    /// The index of the block holding `addr` (upstream `getIndexForIP`).
    pub fn index_for_ip(&self, addr: u128) -> Result<usize, String> {
        let shift = self.cluster.bits() - self.node_mask;
        let x = self.cluster.addr ^ addr;
        let index = if shift >= 128 { 0 } else { x >> shift };
        if index >= self.max_cidrs as u128 {
            let ip = Cidr {
                addr,
                prefix: self.node_mask,
                v6: self.cluster.v6,
            };
            return Err(format!(
                "CIDR: {} is out of the range of CIDR allocator",
                ip
            ));
        }
        Ok(index as usize)
    }

    /// The first and last block index `cidr` covers (upstream
    /// `getBeginningAndEndIndices`): every block when it contains the cluster CIDR.
    pub fn begin_end(&self, cidr: &Cidr) -> Result<(usize, usize), CidrSetError> {
        if !self.cluster.overlaps(cidr) {
            return Err(CidrSetError::OutOfRange {
                cidr: cidr.to_string(),
                cluster: self.cluster.to_string(),
            });
        }
        if self.cluster.prefix >= cidr.prefix {
            return Ok((0, self.max_cidrs - 1));
        }
        let node = Cidr::mask_of(self.cluster.bits(), self.node_mask);
        let out = |e: String| CidrSetError::OutOfRange {
            cidr: e,
            cluster: self.cluster.to_string(),
        };
        let begin = self.index_for_ip(cidr.addr & node).map_err(out)?;
        let end = self.index_for_ip(cidr.last() & node).map_err(out)?;
        Ok((begin, end))
    }

    /// Mark every block `cidr` covers as taken; fine if some already are (upstream
    /// `Occupy`).
    pub fn occupy(&mut self, cidr: &Cidr) -> Result<(), CidrSetError> {
        let (begin, end) = self.begin_end(cidr)?;
        for i in begin..=end {
            if !self.bit(i) {
                self.set_bit(i, true);
                self.allocated += 1;
            }
        }
        Ok(())
    }

    /// Free every block `cidr` covers (upstream `Release`).
    pub fn release(&mut self, cidr: &Cidr) -> Result<(), CidrSetError> {
        let (begin, end) = self.begin_end(cidr)?;
        for i in begin..=end {
            if self.bit(i) {
                self.set_bit(i, false);
                self.allocated -= 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Upstream `cidr_set_test.go`.
    use super::*;

    fn set(cluster: &str, mask: u8) -> CidrSet {
        CidrSet::new(Cidr::parse(cluster).unwrap(), mask).unwrap()
    }

    fn cidr(s: &str) -> Cidr {
        Cidr::parse(s).unwrap()
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(cidr("127.123.3.0/16").to_string(), "127.123.0.0/16");
        assert_eq!(
            cidr("2001:0db8:85a3::8a2e:0370:7334/50").to_string(),
            "2001:db8:85a3::/50"
        );
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "x/8",
            "10.0.0.0/-1",
            "::/129",
            "",
        ] {
            assert!(Cidr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fully_allocated() {
        for (cluster, mask, want) in [
            ("127.123.234.0/30", 30, "127.123.234.0/30"),
            ("beef:1234::/30", 30, "beef:1234::/30"),
        ] {
            let mut a = set(cluster, mask);
            let p = a.allocate_next().unwrap();
            assert_eq!(p.to_string(), want);
            assert_eq!(a.allocate_next(), Err(CidrSetError::NoCidrsRemaining));
            a.release(&p).unwrap();
            let p = a.allocate_next().unwrap();
            assert_eq!(p.to_string(), want);
            assert!(a.allocate_next().is_err());
        }
    }

    #[test]
    fn index_to_cidr_block() {
        let cases = [
            ("127.123.3.0/16", 24, 0, "127.123.0.0/24"),
            ("127.123.0.0/16", 24, 15, "127.123.15.0/24"),
            ("192.168.5.219/28", 32, 5, "192.168.5.213/32"),
            ("2001:0db8:1234:3::/48", 64, 0, "2001:db8:1234::/64"),
            ("2001:0db8:1234::/48", 64, 15, "2001:db8:1234:f::/64"),
            (
                "2001:0db8:85a3::8a2e:0370:7334/50",
                63,
                6425,
                "2001:db8:85a3:3232::/63",
            ),
            ("2001:0db8::/32", 48, 0, "2001:db8::/48"),
            ("2001:0db8::/32", 48, 15, "2001:db8:f::/48"),
            (
                "2001:0db8:85a3::8a2e:0370:7334/32",
                48,
                6425,
                "2001:db8:1919::/48",
            ),
            ("2001:0db8:1234:ff00::/56", 72, 0, "2001:db8:1234:ff00::/72"),
            (
                "2001:0db8:1234:ff00::/56",
                72,
                15,
                "2001:db8:1234:ff00:f00::/72",
            ),
            (
                "2001:0db8:1234:ff00::0370:7334/56",
                72,
                6425,
                "2001:db8:1234:ff19:1900::/72",
            ),
            (
                "2001:0db8:1234:0:1234::/80",
                96,
                0,
                "2001:db8:1234:0:1234::/96",
            ),
            (
                "2001:0db8:1234:0:1234::/80",
                96,
                15,
                "2001:db8:1234:0:1234:f::/96",
            ),
            (
                "2001:0db8:1234:ff00::0370:7334/80",
                96,
                6425,
                "2001:db8:1234:ff00:0:1919::/96",
            ),
        ];
        for (cluster, mask, index, want) in cases {
            assert_eq!(
                set(cluster, mask).index_to_cidr(index).to_string(),
                want,
                "{cluster} {index}"
            );
        }
    }

    #[test]
    fn randomish_allocation_and_occupied() {
        for cluster in ["127.123.234.0/16", "beef:1234::/16"] {
            let mut a = set(cluster, 24);
            let cidrs: Vec<Cidr> = (0..256).map(|_| a.allocate_next().unwrap()).collect();
            assert!(a.allocate_next().is_err());
            for c in &cidrs {
                a.release(c).unwrap();
            }
            let again: Vec<Cidr> = (0..256).map(|_| a.allocate_next().unwrap()).collect();
            assert!(a.allocate_next().is_err());
            assert_eq!(cidrs, again, "{cluster}");

            // AllocationOccupied
            for c in &cidrs {
                a.release(c).unwrap();
            }
            for c in &cidrs[128..] {
                a.occupy(c).unwrap();
            }
            a.occupy(&cidrs[128]).unwrap();
            let mut got: Vec<Cidr> = (0..128).map(|_| a.allocate_next().unwrap()).collect();
            assert!(a.allocate_next().is_err());
            got.extend_from_slice(&cidrs[128..]);
            assert_eq!(cidrs, got, "{cluster}");
        }
    }

    #[test]
    fn double_occupy_release() {
        let mut a = set("10.42.0.0/16", 24);
        let ops = [
            ("10.42.5.0/24", true, 1),
            ("10.42.9.0/24", true, 2),
            ("10.42.8.0/22", true, 5),
            ("10.42.9.0/24", true, 5),
            ("10.42.9.0/24", false, 4),
            ("10.42.9.0/24", false, 4),
            ("10.42.4.0/22", false, 3),
        ];
        for (c, occupy, n) in ops {
            if occupy {
                a.occupy(&cidr(c)).unwrap();
            } else {
                a.release(&cidr(c)).unwrap();
            }
            assert_eq!(a.allocated(), n, "{c}");
        }
        for _ in 0..(256 - 3) {
            a.allocate_next().unwrap();
        }
        assert!(a.allocate_next().is_err());
    }

    #[test]
    fn index_for_cidr() {
        let cases = [
            ("127.0.0.0/8", 16, "127.0.0.0/16", Some(0)),
            ("be00::/8", 16, "be00::/16", Some(0)),
            ("127.0.0.0/8", 16, "127.123.0.0/16", Some(123)),
            ("be00::/8", 16, "beef::/16", Some(0xef)),
            ("127.0.0.0/8", 16, "127.168.0.0/16", Some(168)),
            ("be00::/8", 16, "be68::/16", Some(0x68)),
            ("127.0.0.0/8", 16, "127.224.0.0/16", Some(224)),
            ("be00::/8", 16, "be24::/16", Some(0x24)),
            ("192.168.0.0/16", 24, "192.168.12.0/24", Some(12)),
            ("beef::/16", 24, "beef:1200::/24", Some(0x12)),
            ("192.168.0.0/16", 24, "192.168.151.0/24", Some(151)),
            ("beef::/16", 24, "beef:9700::/24", Some(0x97)),
            ("192.168.0.0/16", 24, "127.168.224.0/24", None),
            ("beef::/16", 24, "2001:db00::/24", None),
        ];
        for (cluster, mask, sub, want) in cases {
            let got = set(cluster, mask).index_for_ip(cidr(sub).addr).ok();
            assert_eq!(got, want, "{cluster} {sub}");
        }
    }

    #[test]
    fn occupy_marks_ranges() {
        let cases = [
            ("127.0.0.0/8", 16, "127.0.0.0/8", 0, 255),
            ("2001:beef:1200::/40", 48, "2001:beef:1200::/40", 0, 255),
            ("127.0.0.0/8", 16, "127.0.0.0/2", 0, 255),
            ("2001:beef:1200::/40", 48, "2001:beef:1234::/34", 0, 255),
            ("127.0.0.0/8", 16, "127.0.0.0/16", 0, 0),
            ("2001:beef:1200::/40", 48, "2001:beef:1200::/48", 0, 0),
            ("127.0.0.0/8", 32, "127.0.0.0/16", 0, 65535),
            ("2001:beef:1200::/48", 64, "2001:beef:1200::/48", 0, 65535),
            ("127.0.0.0/7", 16, "127.0.0.0/15", 256, 257),
            ("2001:beef:7f00::/39", 48, "2001:beef:7f00::/47", 256, 257),
            ("127.0.0.0/7", 15, "127.0.0.0/15", 128, 128),
            ("2001:beef:7f00::/39", 47, "2001:beef:7f00::/47", 128, 128),
            ("127.0.0.0/7", 18, "127.0.0.0/15", 1024, 1031),
            ("2001:beef:7f00::/39", 50, "2001:beef:7f00::/47", 1024, 1031),
        ];
        for (cluster, mask, sub, begin, end) in cases {
            let mut a = set(cluster, mask);
            a.occupy(&cidr(sub)).unwrap();
            let used: Vec<usize> = (0..a.max_cidrs()).filter(|i| a.bit(*i)).collect();
            let want: Vec<usize> = (begin..=end).collect();
            assert!(used == want, "{cluster} {sub}: {} used", used.len());
            assert_eq!(a.allocated(), end - begin + 1);
        }
        // out of range
        let mut a = set("10.0.0.0/16", 24);
        assert!(matches!(
            a.occupy(&cidr("10.1.0.0/24")),
            Err(CidrSetError::OutOfRange { .. })
        ));
        assert!(a.occupy(&cidr("beef::/24")).is_err());
    }

    #[test]
    fn cidr_set_v6() {
        let mut a = set("127.0.0.0/8", 32);
        assert_eq!(a.allocate_next().unwrap().to_string(), "127.0.0.0/32");
        assert_eq!(a.allocate_next().unwrap().to_string(), "127.0.0.1/32");
        assert_eq!(
            CidrSet::new(cidr("beef:1234::/32"), 49).err(),
            Some(CidrSetError::SubNetTooBig)
        );
        let mut a = set("2001:beef:1234:369b::/60", 64);
        assert_eq!(
            a.allocate_next().unwrap().to_string(),
            "2001:beef:1234:3690::/64"
        );
        assert_eq!(
            a.allocate_next().unwrap().to_string(),
            "2001:beef:1234:3691::/64"
        );
        // a node mask shorter than the cluster's is refused, not a panic
        assert!(CidrSet::new(cidr("10.0.0.0/16"), 8).is_err());
    }
}
