//! Where a Service reference points: coxswain runs no cluster network, so a
//! `{namespace, name, port}` reference (an APIService's `spec.service`, a webhook's
//! `clientConfig.service`) is turned into a reachable `host:port` by an explicit
//! mapping, given on the command line as `--service-proxy-map NAMESPACE/NAME:PORT=HOST:PORT`.

use std::fmt;

/// One mapping entry: the Service port `namespace/name:port` is reached at `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceMapping {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service port the reference names (443 when a reference leaves it out).
    pub port: u16,
    /// Where that port is served: `host:port` (a name or an IP address; IPv6 in brackets).
    pub target: String,
}

/// The mapping of Service references to addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceMap {
    entries: Vec<ServiceMapping>,
}

/// A `--service-proxy-map` value that does not read `NAMESPACE/NAME:PORT=HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

impl ServiceMap {
    /// An empty map (nothing resolves).
    pub fn new() -> ServiceMap {
        ServiceMap::default()
    }

    /// Adds (or replaces) the entry for `namespace/name:port`.
    pub fn insert(&mut self, namespace: &str, name: &str, port: u16, target: impl Into<String>) {
        let target = target.into();
        match self
            .entries
            .iter_mut()
            .find(|e| e.namespace == namespace && e.name == name && e.port == port)
        {
            Some(e) => e.target = target,
            None => self.entries.push(ServiceMapping {
                namespace: namespace.to_string(),
                name: name.to_string(),
                port,
                target,
            }),
        }
    }

    /// Adds a parsed entry (see [`parse`]).
    pub fn push(&mut self, m: ServiceMapping) {
        let ServiceMapping {
            namespace,
            name,
            port,
            target,
        } = m;
        self.insert(&namespace, &name, port, target);
    }

    /// The `host:port` serving the Service port `namespace/name:port`, if mapped.
    pub fn resolve(&self, namespace: &str, name: &str, port: u16) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.namespace == namespace && e.name == name && e.port == port)
            .map(|e| e.target.as_str())
    }

    /// Whether any port of the Service `namespace/name` is mapped (a reference to an
    /// unmapped port of a mapped Service is upstream's "no endpoints" case, an unmapped
    /// Service its "service not found").
    pub fn has_service(&self, namespace: &str, name: &str) -> bool {
        self.entries
            .iter()
            .any(|e| e.namespace == namespace && e.name == name)
    }

    /// The entries, in the order given.
    pub fn entries(&self) -> &[ServiceMapping] {
        &self.entries
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl FromIterator<ServiceMapping> for ServiceMap {
    fn from_iter<I: IntoIterator<Item = ServiceMapping>>(iter: I) -> ServiceMap {
        let mut m = ServiceMap::new();
        for e in iter {
            m.push(e);
        }
        m
    }
}

/// Parses one `--service-proxy-map` value, `NAMESPACE/NAME:PORT=HOST:PORT`
/// (e.g. `kube-system/metrics-server:443=127.0.0.1:4443`; the host may be a bracketed
/// IPv6 address, `[::1]:4443`).
pub fn parse(s: &str) -> Result<ServiceMapping, ParseError> {
    let bad = |why: &str| {
        ParseError(format!(
            "invalid service mapping {s:?}: {why} (want NAMESPACE/NAME:PORT=HOST:PORT)"
        ))
    };
    let (service, target) = s.split_once('=').ok_or_else(|| bad("missing '='"))?;
    let (namespace, rest) = service
        .split_once('/')
        .ok_or_else(|| bad("missing '/' between namespace and name"))?;
    let (name, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| bad("missing ':PORT' after the service name"))?;
    if namespace.is_empty() || name.is_empty() {
        return Err(bad("empty namespace or name"));
    }
    let port = parse_port(port).ok_or_else(|| bad("service port must be 1-65535"))?;
    let (host, tport) = target
        .rsplit_once(':')
        .ok_or_else(|| bad("missing ':PORT' after the target host"))?;
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        inner
            .strip_suffix(']')
            .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
    } else {
        !host.is_empty() && !host.contains(['/', '[', ']', ':', ' '])
    };
    if !host_ok {
        return Err(bad("invalid target host"));
    }
    parse_port(tport).ok_or_else(|| bad("target port must be 1-65535"))?;
    Ok(ServiceMapping {
        namespace: namespace.to_string(),
        name: name.to_string(),
        port,
        target: target.to_string(),
    })
}

fn parse_port(s: &str) -> Option<u16> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u16>().ok().filter(|p| *p != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_flag_syntax() {
        let m = parse("kube-system/metrics-server:443=127.0.0.1:4443").unwrap();
        assert_eq!(
            m,
            ServiceMapping {
                namespace: "kube-system".into(),
                name: "metrics-server".into(),
                port: 443,
                target: "127.0.0.1:4443".into(),
            }
        );
        assert_eq!(parse("a/b:1=[::1]:2").unwrap().target, "[::1]:2");
        assert_eq!(parse("a/b:1=localhost:2").unwrap().target, "localhost:2");
    }

    #[test]
    fn refuses_malformed_values() {
        for bad in [
            "",
            "a/b:443",
            "a:443=h:1",
            "/b:443=h:1",
            "a/:443=h:1",
            "a/b=h:1",
            "a/b:0=h:1",
            "a/b:70000=h:1",
            "a/b:x=h:1",
            "a/b:443=h",
            "a/b:443=:1",
            "a/b:443=h:0",
            "a/b:443=[zz]:1",
            "a/b:443=::1:1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn resolves_by_namespace_name_and_port() {
        let map: ServiceMap = [
            parse("ns/svc:443=127.0.0.1:1000").unwrap(),
            parse("ns/svc:8443=127.0.0.1:2000").unwrap(),
        ]
        .into_iter()
        .collect();
        assert_eq!(map.resolve("ns", "svc", 443), Some("127.0.0.1:1000"));
        assert_eq!(map.resolve("ns", "svc", 8443), Some("127.0.0.1:2000"));
        assert_eq!(map.resolve("ns", "svc", 80), None);
        assert_eq!(map.resolve("other", "svc", 443), None);
        assert!(map.has_service("ns", "svc"));
        assert!(!map.has_service("ns", "other"));
        let mut map = map;
        map.insert("ns", "svc", 443, "127.0.0.1:3000");
        assert_eq!(map.resolve("ns", "svc", 443), Some("127.0.0.1:3000"));
        assert_eq!(map.entries().len(), 2);
    }
}
