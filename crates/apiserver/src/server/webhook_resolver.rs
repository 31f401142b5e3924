//! Where the admission webhooks' `service` references are dialled: the
//! `--service-proxy-map` entries first (`NAMESPACE/NAME:PORT=HOST:PORT`, as envtest
//! rewrites a webhook's Service to its local server), then the cluster itself, since
//! coxswain runs no cluster network: a Service of type `ExternalName` is dialled at its
//! `externalName` and the port, any other Service at a ready loopback address
//! (`127.0.0.0/8`, `::1`) of its EndpointSlices (or Endpoints), on the endpoint port of
//! the Service port's name. So a webhook run on the host of `coxswain up` is reached
//! either by a flag or by an EndpointSlice (or Endpoints object) pointing at
//! `127.0.0.1:<port>`.

use std::sync::Arc;

use serde_json::Value;

use crate::admission::webhook::ServiceResolver;
use crate::server::servicemap::ServiceMap;
use crate::storage::store::Store;

/// The map, then the stored Services and their endpoints.
pub struct Resolver {
    /// `--service-proxy-map`.
    pub map: ServiceMap,
    /// The store holding Services, EndpointSlices and Endpoints.
    pub store: Arc<Store>,
}

fn is_loopback(ip: &str) -> bool {
    ip.parse::<std::net::IpAddr>()
        .is_ok_and(|a| a.is_loopback())
}

fn join(host: &str, port: u64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

impl Resolver {
    fn in_cluster(&self, namespace: &str, name: &str, port: u16) -> Result<String, String> {
        let not_found = || format!("service \"{name}\" not found");
        let svc = self
            .store
            .get("/services", &format!("{namespace}/{name}"))
            .and_then(|o| o.value().ok())
            .ok_or_else(not_found)?;
        let spec = svc.get("spec").cloned().unwrap_or(Value::Null);
        if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
            let host = spec
                .get("externalName")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Ok(join(host, u64::from(port)));
        }
        let ports = spec
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(svc_port) = ports
            .iter()
            .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
        else {
            return Err(format!(
                "no service port {port} found for service \"{name}\""
            ));
        };
        let port_name = svc_port.get("name").and_then(Value::as_str).unwrap_or("");
        let no_endpoints = || format!("no endpoints available for service \"{name}\"");
        // EndpointSlices labelled with the service's name
        let slices = self.store.snapshot("discovery.k8s.io/endpointslices").table;
        let prefix = format!("{namespace}/");
        for (key, o) in slices.iter() {
            if !key.starts_with(&prefix) {
                continue;
            }
            let Ok(slice) = o.value() else { continue };
            if slice
                .pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                != Some(name)
            {
                continue;
            }
            let Some(p) = slice
                .get("ports")
                .and_then(Value::as_array)
                .and_then(|ps| {
                    ps.iter()
                        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
                })
                .and_then(|p| p.get("port").and_then(Value::as_u64))
            else {
                continue;
            };
            for ep in slice
                .get("endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if ep.pointer("/conditions/ready").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                if let Some(ip) = ep
                    .get("addresses")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .find(|a| is_loopback(a))
                {
                    return Ok(join(ip, p));
                }
            }
        }
        // a legacy Endpoints object
        let eps = self
            .store
            .get("/endpoints", &format!("{namespace}/{name}"))
            .and_then(|o| o.value().ok())
            .ok_or_else(no_endpoints)?;
        for subset in eps
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(p) = subset
                .get("ports")
                .and_then(Value::as_array)
                .and_then(|ps| {
                    ps.iter()
                        .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
                })
                .and_then(|p| p.get("port").and_then(Value::as_u64))
            else {
                continue;
            };
            if let Some(ip) = subset
                .get("addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.get("ip").and_then(Value::as_str))
                .find(|a| is_loopback(a))
            {
                return Ok(join(ip, p));
            }
        }
        Err(no_endpoints())
    }
}

impl ServiceResolver for Resolver {
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<String, String> {
        if let Some(target) = self.map.resolve(namespace, name, port) {
            return Ok(target.to_string());
        }
        self.in_cluster(namespace, name, port)
    }
}
