//! The aggregation layer (upstream `kube-aggregator`): APIServices for the group
//! versions the server serves itself (its built-in groups with kube-apiserver's
//! priorities, `onstart`; the groups of CustomResourceDefinitions, as the crdregistration
//! controller keeps them), the `Available` condition of every APIService (local ones
//! always; those with a `spec.service` when the service answers discovery), and the
//! proxying of requests under `/apis/<group>/<version>` to the service of an available
//! non-local APIService, with the user's identity in `X-Remote-User`/`X-Remote-Group`
//! headers. A Service reference becomes an address through [`ServiceMap`] (coxswain runs
//! no cluster network).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::endpoints::request::{Query, Target};
use crate::endpoints::{Api, WriteHook};
use crate::machinery::user::{self, UserInfo};
use crate::registry::catalog::{Catalog, ResourceDef, Subresource};
use crate::server::servicemap::ServiceMap;

/// The label the aggregator's auto-registration puts on the APIServices it manages:
/// `onstart` (the server's own groups) or `true` (groups of CRDs).
pub const AUTO_MANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// How long a discovery check may take (upstream: 5 s client timeout).
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// How often every APIService is checked again without a change to trigger it.
const RESYNC: Duration = Duration::from_secs(10);
/// How often the controller looks whether the served group versions changed.
const CATALOG_POLL: Duration = Duration::from_secs(1);
/// Largest discovery document read.
const MAX_DISCOVERY: usize = 8 * 1024 * 1024;

/// kube-apiserver's `apiVersionPriorities` (group priority, version priority) for the
/// group versions it serves itself; `None` for a group version it would not register.
pub fn builtin_priority(group: &str, version: &str) -> Option<(i64, i64)> {
    Some(match (group, version) {
        ("", "v1") => (18000, 1),
        ("apiregistration.k8s.io", "v1") => (18000, 15),
        ("apps", "v1") => (17800, 15),
        ("events.k8s.io", "v1") => (17750, 15),
        ("authentication.k8s.io", "v1") => (17700, 15),
        ("authorization.k8s.io", "v1") => (17600, 15),
        ("autoscaling", "v2") => (17500, 30),
        ("autoscaling", "v1") => (17500, 15),
        ("batch", "v1") => (17400, 15),
        ("certificates.k8s.io", "v1") => (17300, 15),
        ("networking.k8s.io", "v1") => (17200, 15),
        ("policy", "v1") => (17100, 15),
        ("rbac.authorization.k8s.io", "v1") => (17000, 15),
        ("storage.k8s.io", "v1") => (16800, 15),
        ("admissionregistration.k8s.io", "v1") => (16700, 15),
        ("apiextensions.k8s.io", "v1") => (16700, 15),
        ("scheduling.k8s.io", "v1") => (16600, 15),
        ("coordination.k8s.io", "v1") => (16500, 15),
        ("node.k8s.io", "v1") => (16300, 15),
        ("discovery.k8s.io", "v1") => (16200, 15),
        ("resource.k8s.io", "v1") => (16200, 21),
        ("flowcontrol.apiserver.k8s.io", "v1") => (16100, 21),
        _ => return None,
    })
}

/// The name of the APIService of a group version (`v1.apps`, `v1.` for core).
pub fn api_service_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// An available APIService served elsewhere: where its service is and what it serves.
#[derive(Clone)]
struct Remote {
    name: String,
    group: String,
    version: String,
    group_priority: i64,
    version_priority: i64,
    /// `host:port` the service reference maps to.
    address: String,
    /// The name the service's certificate is verified for (`<name>.<namespace>.svc`).
    server_name: String,
    tls: Arc<rustls::ClientConfig>,
    /// The `APIResourceList` it answered discovery with.
    resources: Value,
    /// Its `/openapi/v3` index entry for the group version: (path, serverRelativeURL).
    openapi: Option<(String, String)>,
}

/// The aggregator's state, shared by the HTTP layer (proxy, discovery) and the
/// availability controller.
pub struct Aggregator {
    service_map: ServiceMap,
    metrics_api: bool,
    remotes: RwLock<BTreeMap<(String, String), Remote>>,
    wake: tokio::sync::Notify,
}

impl WriteHook for Arc<Aggregator> {
    fn after_write<'a>(
        &'a self,
        _api: &'a Arc<Api>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        self.wake.notify_one();
        Box::pin(async {})
    }
}

fn apiservice_def() -> Option<&'static ResourceDef> {
    Catalog::builtin().lookup("apiregistration.k8s.io", "v1", "apiservices")
}

/// The storage key of APIServices (their writes wake the controller).
pub(crate) fn storage_key() -> Option<String> {
    apiservice_def().map(ResourceDef::storage_key)
}

impl Aggregator {
    /// An aggregator resolving Service references through `service_map`; `metrics_api`:
    /// `metrics.k8s.io/v1beta1` is served locally.
    pub fn new(service_map: ServiceMap, metrics_api: bool) -> Aggregator {
        Aggregator {
            service_map,
            metrics_api,
            remotes: RwLock::new(BTreeMap::new()),
            wake: tokio::sync::Notify::new(),
        }
    }

    fn remotes(&self) -> Vec<Remote> {
        match self.remotes.read() {
            Ok(r) => r.values().cloned().collect(),
            Err(p) => p.into_inner().values().cloned().collect(),
        }
    }

    fn remote(&self, group: &str, version: &str) -> Option<Remote> {
        let r = match self.remotes.read() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        r.get(&(group.to_string(), version.to_string())).cloned()
    }

    fn no_remotes(&self) -> bool {
        match self.remotes.read() {
            Ok(r) => r.is_empty(),
            Err(p) => p.into_inner().is_empty(),
        }
    }

    fn has_remote(&self, group: &str, version: &str) -> bool {
        let r = match self.remotes.read() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        !r.is_empty() && r.contains_key(&(group.to_string(), version.to_string()))
    }

    fn set_remote(&self, key: (String, String), remote: Option<Remote>) {
        let mut r = match self.remotes.write() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        match remote {
            Some(x) => r.insert(key, x),
            None => r.remove(&key),
        };
    }

    /// Run the controller until `stop` (or the API is dropped): local APIServices kept
    /// in sync with what is served, every APIService's `Available` condition checked
    /// after APIService or CRD writes and every [`RESYNC`].
    pub(crate) fn spawn(self: &Arc<Self>, api: Weak<Api>, stop: CancellationToken) {
        let this = Arc::clone(self);
        tokio::spawn(async move {
            // the catalogue a pass saw: a CRD's served versions change it without a
            // write through the API (its cleanup ends inside the server)
            let mut seen: Option<Arc<Catalog>> = None;
            let mut last = tokio::time::Instant::now();
            let mut woken = true;
            loop {
                {
                    let Some(api) = api.upgrade() else {
                        return;
                    };
                    let catalog = api.catalog();
                    let changed = seen.as_ref().is_none_or(|c| !Arc::ptr_eq(c, &catalog));
                    if woken || changed || last.elapsed() >= RESYNC {
                        woken = false;
                        seen = Some(catalog);
                        last = tokio::time::Instant::now();
                        this.reconcile(&api).await;
                    }
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = this.wake.notified() => woken = true,
                    _ = tokio::time::sleep(CATALOG_POLL) => {}
                }
            }
        });
    }

    /// One pass: local APIServices, then every APIService's availability.
    pub(crate) async fn reconcile(&self, api: &Arc<Api>) {
        self.pass(api, true).await;
    }

    /// The pass at start: local APIServices and their condition only, so that a
    /// slow aggregated server does not hold the start (the controller checks it next).
    pub(crate) async fn reconcile_local(&self, api: &Arc<Api>) {
        self.pass(api, false).await;
    }

    async fn pass(&self, api: &Arc<Api>, remote: bool) {
        user::scope(Arc::new(UserInfo::apiserver()), async {
            self.sync_local(api).await;
            self.check_all(api, remote).await;
        })
        .await;
    }

    /// The local APIServices wanted: every served group version (custom ones labelled
    /// `true` with upstream's CRD priorities 1000/100), `metrics.k8s.io/v1beta1` when
    /// served locally.
    fn wanted_local(&self, api: &Api) -> BTreeMap<String, (Value, &'static str)> {
        let catalog = api.catalog();
        let mut out = BTreeMap::new();
        for group in catalog.groups() {
            for version in catalog.versions(group) {
                let custom = catalog
                    .group_version(group, version)
                    .iter()
                    .all(|r| r.custom.is_some());
                let (gp, vp, managed) = if custom {
                    (1000, 100, "true")
                } else {
                    match builtin_priority(group, version) {
                        Some((g, v)) => (g, v, "onstart"),
                        None => continue,
                    }
                };
                let name = api_service_name(group, version);
                out.insert(
                    name.clone(),
                    (
                        local_api_service(&name, group, version, gp, vp, managed),
                        managed,
                    ),
                );
            }
        }
        if self.metrics_api {
            let name = api_service_name("metrics.k8s.io", "v1beta1");
            out.insert(
                name.clone(),
                (
                    local_api_service(&name, "metrics.k8s.io", "v1beta1", 100, 100, "onstart"),
                    "onstart",
                ),
            );
        }
        out
    }

    async fn sync_local(&self, api: &Arc<Api>) {
        let Some(def) = apiservice_def() else {
            return;
        };
        let wanted = self.wanted_local(api);
        let stored = stored(api, def);
        for (name, (obj, _)) in &wanted {
            let current = stored
                .iter()
                .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name));
            match current {
                None => {
                    write(api, def, Method::POST, None, None, obj).await;
                }
                Some(cur) => {
                    // the auto-registration controller keeps the spec of what it manages
                    let managed = label(cur).is_some();
                    if managed && spec_of(cur) != spec_of(obj) {
                        let mut new = cur.clone();
                        new["spec"] = obj["spec"].clone();
                        write(api, def, Method::PUT, Some(name), None, &new).await;
                    }
                }
            }
        }
        // CRD group versions that went away: their APIServices go too
        for cur in &stored {
            let name = cur
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if label(cur) == Some("true") && !wanted.contains_key(name) {
                delete(api, def, name).await;
            }
        }
    }

    async fn check_all(&self, api: &Arc<Api>, remote: bool) {
        let Some(def) = apiservice_def() else {
            return;
        };
        let all = stored(api, def);
        let mut seen = Vec::new();
        for svc in all {
            if svc.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            let group = str_at(&svc, "/spec/group").to_string();
            let version = str_at(&svc, "/spec/version").to_string();
            let key = (group.clone(), version.clone());
            let condition = if svc.pointer("/spec/service").is_none_or(|s| s.is_null()) {
                self.set_remote(key.clone(), None);
                (
                    "True",
                    "Local",
                    "Local APIServices are always available".to_string(),
                )
            } else {
                seen.push(key.clone());
                if !remote {
                    continue;
                }
                match self.check_remote(api, &svc).await {
                    Ok(remote) => {
                        self.set_remote(key, Some(remote));
                        ("True", "Passed", "all checks passed".to_string())
                    }
                    Err((status, reason, message)) => {
                        self.set_remote(key, None);
                        (status, reason, message)
                    }
                }
            };
            if let Some(new) = with_available(&svc, condition) {
                let name = str_at(&svc, "/metadata/name").to_string();
                write(
                    api,
                    def,
                    Method::PUT,
                    Some(&name),
                    Some(Subresource::Status),
                    &new,
                )
                .await;
            }
        }
        // remotes whose APIService is gone
        let gone: Vec<(String, String)> = self
            .remotes()
            .into_iter()
            .map(|r| (r.group, r.version))
            .filter(|k| !seen.contains(k))
            .collect();
        for k in gone {
            self.set_remote(k, None);
        }
    }

    /// Upstream's remote availability checks: the Service exists and has the port,
    /// it has an address (here: the port is mapped), and it answers discovery for the
    /// group version over TLS verified as `<name>.<namespace>.svc`.
    async fn check_remote(
        &self,
        api: &Api,
        svc: &Value,
    ) -> Result<Remote, (&'static str, &'static str, String)> {
        let ns = str_at(svc, "/spec/service/namespace").to_string();
        let name = str_at(svc, "/spec/service/name").to_string();
        let port = svc
            .pointer("/spec/service/port")
            .and_then(Value::as_i64)
            .unwrap_or(443);
        let service = api
            .store
            .get("/services", &format!("{ns}/{name}"))
            .and_then(|o| o.value().ok());
        let Some(service) = service else {
            return Err((
                "False",
                "ServiceNotFound",
                format!("service/{name} in {} is not present", go_quote(&ns)),
            ));
        };
        let ty = service
            .pointer("/spec/type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let mut port_name = String::new();
        if ty == "ClusterIP" {
            let found = service
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .and_then(|ps| {
                    ps.iter()
                        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
                });
            match found {
                None => {
                    return Err((
                        "False",
                        "ServicePortError",
                        format!(
                            "service/{name} in {} is not listening on port {port}",
                            go_quote(&ns)
                        ),
                    ))
                }
                Some(p) => {
                    port_name = p
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                }
            }
        }
        let address = u16::try_from(port)
            .ok()
            .and_then(|p| self.service_map.resolve(&ns, &name, p))
            .map(str::to_string);
        let Some(address) = address else {
            return Err((
                "False",
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{name} in {} have no addresses with port name {}",
                    go_quote(&ns),
                    go_quote(&port_name)
                ),
            ));
        };
        let group = str_at(svc, "/spec/group").to_string();
        let version = str_at(svc, "/spec/version").to_string();
        let server_name = format!("{name}.{ns}.svc");
        let insecure = svc
            .pointer("/spec/insecureSkipTLSVerify")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let ca = svc.pointer("/spec/caBundle").and_then(Value::as_str);
        let discovery_path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let url = format!("https://{server_name}:{port}{discovery_path}");
        let fail = |e: String| {
            (
                "False",
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: {e}"),
            )
        };
        let tls = tls_config(ca, insecure).map_err(fail)?;
        let mut headers = HeaderMap::new();
        headers.insert("accept", HeaderValue::from_static("application/json"));
        headers.insert(
            "x-remote-user",
            HeaderValue::from_static("system:kube-aggregator"),
        );
        headers.insert("x-remote-group", HeaderValue::from_static("system:masters"));
        let answer = tokio::time::timeout(
            CHECK_TIMEOUT,
            send(
                &address,
                &server_name,
                &tls,
                Method::GET,
                &discovery_path,
                headers,
                Body::empty(),
            ),
        )
        .await
        .map_err(|_| {
            (
                "False",
                "FailedDiscoveryCheck",
                format!("timed out waiting for {url}"),
            )
        })?
        .map_err(fail)?;
        let status = answer.status();
        if !status.is_success() && !status.is_redirection() {
            return Err((
                "False",
                "FailedDiscoveryCheck",
                format!("bad status from {url}: {}", status.as_u16()),
            ));
        }
        let body = http_body_util::Limited::new(answer.into_body(), MAX_DISCOVERY)
            .collect()
            .await
            .map_err(|e| fail(e.to_string()))?
            .to_bytes();
        let resources: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let openapi = openapi_entry(&address, &server_name, &tls, &group, &version).await;
        Ok(Remote {
            openapi,
            name: str_at(svc, "/metadata/name").to_string(),
            group,
            version,
            group_priority: svc
                .pointer("/spec/groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            version_priority: svc
                .pointer("/spec/versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            address,
            server_name,
            tls,
            resources,
        })
    }

    /// Whether `group` is served only by other servers (its `/apis/<group>` is answered
    /// from the APIServices).
    fn remote_versions(&self, group: &str) -> Vec<Remote> {
        let mut vs: Vec<Remote> = self
            .remotes()
            .into_iter()
            .filter(|r| r.group == group)
            .collect();
        vs.sort_by(|a, b| {
            b.version_priority.cmp(&a.version_priority).then_with(|| {
                crate::registry::catalog::compare_kube_versions(&b.version, &a.version)
            })
        });
        vs
    }

    fn group_entry(&self, group: &str) -> Option<(i64, String, Value)> {
        let vs = self.remote_versions(group);
        let first = vs.first()?;
        let versions: Vec<Value> = vs
            .iter()
            .map(
                |r| json!({"groupVersion": format!("{group}/{}", r.version), "version": r.version}),
            )
            .collect();
        let priority = vs.iter().map(|r| r.group_priority).max().unwrap_or(0);
        Some((
            priority,
            first.name.clone(),
            json!({"name": group, "versions": versions, "preferredVersion": versions[0].clone()}),
        ))
    }

    fn remote_groups(&self, catalog: &Catalog) -> Vec<String> {
        let mut gs: Vec<String> = self
            .remotes()
            .into_iter()
            .map(|r| r.group)
            .filter(|g| catalog.versions(g).is_empty())
            .collect();
        gs.sort();
        gs.dedup();
        gs
    }

    /// Add the groups of available remote APIServices to a legacy `/apis` list, after
    /// the groups of higher priority (built-in groups, then CRD groups at 1000).
    fn extend_group_list_impl(&self, catalog: &Catalog, list: &mut Value) {
        let entries: Vec<(i64, String, Value)> = self
            .remote_groups(catalog)
            .iter()
            .filter_map(|g| self.group_entry(g))
            .collect();
        if let Some(groups) = list["groups"].as_array_mut() {
            merge_by_priority(groups, entries, |v| {
                v["name"].as_str().unwrap_or("").to_string()
            });
        }
    }

    /// Add the groups of available remote APIServices to an aggregated
    /// (`APIGroupDiscoveryList`) `/apis` answer.
    fn extend_aggregated_impl(&self, catalog: &Catalog, list: &mut Value) {
        let entries: Vec<(i64, String, Value)> = self
            .remote_groups(catalog)
            .iter()
            .filter_map(|g| {
                let (p, name, _) = self.group_entry(g)?;
                let versions: Vec<Value> = self
                    .remote_versions(g)
                    .iter()
                    .map(|r| aggregated_version(&r.version, &r.resources))
                    .collect();
                Some((
                    p,
                    name,
                    json!({"metadata": {"name": g}, "versions": versions}),
                ))
            })
            .collect();
        if let Some(items) = list["items"].as_array_mut() {
            merge_by_priority(items, entries, |v| {
                v.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            });
        }
    }

    /// `/apis/<group>` of a group only remote APIServices serve.
    fn group_impl(&self, catalog: &Catalog, group: &str) -> Option<Value> {
        if self.no_remotes() || !catalog.versions(group).is_empty() {
            return None;
        }
        let (_, _, mut g) = self.group_entry(group)?;
        g["kind"] = json!("APIGroup");
        g["apiVersion"] = json!("v1");
        Some(g)
    }

    /// Whether requests under `/apis/<group>/<version>` go to another server.
    fn proxies_impl(&self, catalog: &Catalog, group: &str, version: &str) -> bool {
        // the map is checked first: it is empty unless APIServices are served elsewhere
        self.has_remote(group, version) && !catalog.versions(group).contains(&version)
    }

    /// Proxy a request to the service of the available APIService of
    /// `group`/`version`, as `user` (upstream's `proxyHandler`): its credentials are not
    /// passed on, its identity is, in `X-Remote-*` headers.
    async fn proxy_impl(
        &self,
        group: &str,
        version: &str,
        parts: &axum::http::request::Parts,
        body: Body,
        who: &UserInfo,
    ) -> Response {
        let headers = &parts.headers;
        let method = parts.method.clone();
        let path_and_query = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or_else(|| parts.uri.path());
        let Some(remote) = self.remote(group, version) else {
            return status_response(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        };
        let mut out = HeaderMap::new();
        for (k, v) in headers {
            let n = k.as_str();
            if n == "authorization"
                || n == "host"
                || n == "connection"
                || n == "proxy-connection"
                || n == "keep-alive"
                || n == "transfer-encoding"
                || n == "upgrade"
                || n.starts_with("impersonate-")
                || n.starts_with("x-remote-")
            {
                continue;
            }
            out.append(k.clone(), v.clone());
        }
        if let Ok(v) = HeaderValue::from_str(&who.name) {
            out.insert("x-remote-user", v);
        }
        if !who.uid.is_empty() {
            if let Ok(v) = HeaderValue::from_str(&who.uid) {
                out.insert("x-remote-uid", v);
            }
        }
        for g in &who.groups {
            if let Ok(v) = HeaderValue::from_str(g) {
                out.append("x-remote-group", v);
            }
        }
        for (k, vs) in &who.extra {
            let key = format!("x-remote-extra-{}", percent_encode(k));
            if let Ok(name) = axum::http::HeaderName::from_bytes(key.as_bytes()) {
                for v in vs {
                    if let Ok(v) = HeaderValue::from_str(v) {
                        out.append(name.clone(), v);
                    }
                }
            }
        }
        match send(
            &remote.address,
            &remote.server_name,
            &remote.tls,
            method,
            path_and_query,
            out,
            body,
        )
        .await
        {
            Ok(resp) => {
                let (parts, incoming) = resp.into_parts();
                let mut r = Response::new(Body::new(incoming));
                *r.status_mut() = parts.status;
                for (k, v) in &parts.headers {
                    if matches!(
                        k.as_str(),
                        "connection" | "transfer-encoding" | "keep-alive"
                    ) {
                        continue;
                    }
                    r.headers_mut().append(k.clone(), v.clone());
                }
                r
            }
            Err(e) => {
                tracing::warn!(apiservice = %remote.name, error = %e, "proxying to an aggregated API server");
                status_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("error trying to reach service: {e}"),
                )
            }
        }
    }
}

/// The aggregated server's `/openapi/v3` index entry for `group`/`version`, if it
/// publishes one (its absence does not make the APIService unavailable).
async fn openapi_entry(
    address: &str,
    server_name: &str,
    tls: &Arc<rustls::ClientConfig>,
    group: &str,
    version: &str,
) -> Option<(String, String)> {
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("application/json"));
    headers.insert(
        "x-remote-user",
        HeaderValue::from_static("system:kube-aggregator"),
    );
    headers.insert("x-remote-group", HeaderValue::from_static("system:masters"));
    let answer = tokio::time::timeout(
        CHECK_TIMEOUT,
        send(
            address,
            server_name,
            tls,
            Method::GET,
            "/openapi/v3",
            headers,
            Body::empty(),
        ),
    )
    .await
    .ok()?
    .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let body = http_body_util::Limited::new(answer.into_body(), MAX_DISCOVERY)
        .collect()
        .await
        .ok()?
        .to_bytes();
    let index: Value = serde_json::from_slice(&body).ok()?;
    let path = if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    };
    let url = index
        .pointer(&format!(
            "/paths/{}",
            path.replace('~', "~0").replace('/', "~1")
        ))
        .and_then(|p| p.get("serverRelativeURL"))
        .and_then(Value::as_str)?
        .to_string();
    Some((path, url))
}

impl crate::endpoints::http::Aggregation for Aggregator {
    fn openapi_paths(&self) -> Vec<(String, String)> {
        self.remotes()
            .into_iter()
            .filter_map(|r| r.openapi)
            .collect()
    }

    fn openapi_proxies(&self, catalog: &Catalog, doc: &str) -> Option<(String, String)> {
        let rest = doc.strip_prefix("apis/")?;
        let (g, v) = rest.split_once('/')?;
        (!v.contains('/') && self.proxies_impl(catalog, g, v))
            .then(|| (g.to_string(), v.to_string()))
    }

    fn group(&self, catalog: &Catalog, group: &str) -> Option<Value> {
        self.group_impl(catalog, group)
    }

    fn proxies(&self, catalog: &Catalog, group: &str, version: &str) -> bool {
        self.proxies_impl(catalog, group, version)
    }

    fn extend_group_list(&self, catalog: &Catalog, list: &mut Value) {
        self.extend_group_list_impl(catalog, list)
    }

    fn extend_aggregated(&self, catalog: &Catalog, list: &mut Value) {
        self.extend_aggregated_impl(catalog, list)
    }

    fn proxy<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
        parts: &'a axum::http::request::Parts,
        body: Body,
        user: &'a UserInfo,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send + 'a>> {
        Box::pin(self.proxy_impl(group, version, parts, body, user))
    }
}

/// A `Status` failure answer.
fn status_response(code: StatusCode, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message,
        "reason": if code == StatusCode::SERVICE_UNAVAILABLE { "ServiceUnavailable" } else { "InternalError" },
        "code": code.as_u16(),
    });
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

/// Insert `entries` (priority, APIService name, entry) among `items`, whose built-in
/// groups rank above every APIService and whose custom groups have priority 1000:
/// higher priority first, then by APIService name.
fn merge_by_priority(
    items: &mut Vec<Value>,
    entries: Vec<(i64, String, Value)>,
    name_of: impl Fn(&Value) -> String,
) {
    if entries.is_empty() {
        return;
    }
    let builtin = Catalog::builtin().groups();
    let mut ranked: Vec<(i64, String, Value)> = items
        .drain(..)
        .map(|v| {
            let g = name_of(&v);
            let p = if builtin.contains(&g.as_str()) || g.is_empty() {
                i64::MAX
            } else if g == "metrics.k8s.io" {
                100
            } else {
                1000
            };
            (p, format!("v.{g}"), v)
        })
        .collect();
    let fixed = ranked.iter().take_while(|e| e.0 == i64::MAX).count();
    let mut rest: Vec<(i64, String, Value)> = ranked.split_off(fixed);
    rest.extend(entries);
    rest.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    items.extend(ranked.into_iter().map(|e| e.2));
    items.extend(rest.into_iter().map(|e| e.2));
}

/// One version of an aggregated discovery group from a legacy `APIResourceList`.
fn aggregated_version(version: &str, list: &Value) -> Value {
    let all = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut resources = Vec::new();
    for r in all.iter() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() || name.contains('/') {
            continue;
        }
        let mut entry = json!({
            "resource": name,
            "responseKind": {
                "group": r.get("group").and_then(Value::as_str).unwrap_or(""),
                "kind": r.get("kind").and_then(Value::as_str).unwrap_or(""),
                "version": r.get("version").and_then(Value::as_str).unwrap_or(""),
            },
            "scope": if r.get("namespaced").and_then(Value::as_bool).unwrap_or(false) { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").and_then(Value::as_str).unwrap_or(""),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for k in ["shortNames", "categories"] {
            if let Some(v) = r
                .get(k)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                entry[k] = v.clone();
            }
        }
        let prefix = format!("{name}/");
        let subs: Vec<Value> = all
            .iter()
            .filter_map(|s| {
                let n = s.get("name").and_then(Value::as_str)?;
                let sub = n.strip_prefix(&prefix)?;
                Some(json!({
                    "subresource": sub,
                    "responseKind": {
                        "group": s.get("group").and_then(Value::as_str).unwrap_or(""),
                        "kind": s.get("kind").and_then(Value::as_str).unwrap_or(""),
                        "version": s.get("version").and_then(Value::as_str).unwrap_or(""),
                    },
                    "verbs": s.get("verbs").cloned().unwrap_or(json!([])),
                }))
            })
            .collect();
        if !subs.is_empty() {
            entry["subresources"] = json!(subs);
        }
        resources.push(entry);
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

fn percent_encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn go_quote(s: &str) -> String {
    apimachinery::gofmt::quote(s)
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn label(v: &Value) -> Option<&str> {
    v.pointer("/metadata/labels")
        .and_then(|l| l.get(AUTO_MANAGED_LABEL))
        .and_then(Value::as_str)
}

fn spec_of(v: &Value) -> Value {
    crate::registry::flowcontrol::normalized(v.get("spec").unwrap_or(&Value::Null))
}

fn local_api_service(
    name: &str,
    group: &str,
    version: &str,
    group_priority: i64,
    version_priority: i64,
    managed: &str,
) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name, "labels": {AUTO_MANAGED_LABEL: managed}},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": version_priority,
        },
    })
}

/// The APIService with its `Available` condition set to `condition` (status, reason,
/// message); `None` when it already says so. The transition time changes only with the
/// status, as upstream's `SetAPIServiceCondition`.
fn with_available(svc: &Value, condition: (&str, &str, String)) -> Option<Value> {
    let (status, reason, message) = condition;
    let conditions = svc
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let current = conditions
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
    if current.is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(status)
            && c.get("reason").and_then(Value::as_str) == Some(reason)
            && c.get("message").and_then(Value::as_str) == Some(message.as_str())
    }) {
        return None;
    }
    let since = current
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(apimachinery::time::now_rfc3339()));
    let mut out: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some("Available"))
        .collect();
    out.push(json!({
        "type": "Available",
        "status": status,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    }));
    let mut new = svc.clone();
    new["status"] = json!({"conditions": out});
    Some(new)
}

fn stored(api: &Api, def: &ResourceDef) -> Vec<Value> {
    api.store
        .snapshot(&def.storage_key())
        .table
        .values()
        .filter_map(|o| o.value().ok())
        .collect()
}

async fn write(
    api: &Arc<Api>,
    def: &'static ResourceDef,
    method: Method,
    name: Option<&str>,
    subresource: Option<Subresource>,
    body: &Value,
) {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "user-agent",
        HeaderValue::from_static("kube-apiserver/v1.36.0"),
    );
    let target = Target {
        resource: def,
        namespace: None,
        name: name.map(str::to_string),
        subresource,
        legacy_watch: false,
    };
    let what = str_at(body, "/metadata/name").to_string();
    if let Err(e) = api
        .serve(
            &method,
            target,
            &Query::default(),
            &headers,
            body.to_string().into(),
        )
        .await
    {
        tracing::warn!(apiservice = %what, %method, error = %e, "aggregator");
    }
}

async fn delete(api: &Arc<Api>, def: &'static ResourceDef, name: &str) {
    let target = Target {
        resource: def,
        namespace: None,
        name: Some(name.to_string()),
        subresource: None,
        legacy_watch: false,
    };
    if let Err(e) = api
        .serve(
            &Method::DELETE,
            target,
            &Query::default(),
            &HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
    {
        tracing::warn!(apiservice = %name, error = %e, "aggregator: deleting");
    }
}

/// The TLS client configuration of an APIService: its `caBundle` (base64 PEM in JSON)
/// as the only roots, or no verification with `insecureSkipTLSVerify`.
fn tls_config(
    ca_bundle: Option<&str>,
    insecure: bool,
) -> Result<Arc<rustls::ClientConfig>, String> {
    if insecure {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(apimachinery::tls::AcceptAnyServerCert(
                provider,
            )))
            .with_no_client_auth();
        return Ok(Arc::new(config));
    }
    let roots = match ca_bundle.filter(|b| !b.is_empty()) {
        Some(b64) => crate::machinery::tls::ca_bundle_roots(b64)?,
        None => rustls::RootCertStore::empty(),
    };
    if roots.is_empty() {
        return Err("x509: certificate signed by unknown authority (no caBundle)".into());
    }
    crate::machinery::tls::client_config(roots)
}

/// One request to `address` over TLS verified for `server_name`.
async fn send(
    address: &str,
    server_name: &str,
    tls: &Arc<rustls::ClientConfig>,
    method: Method,
    path_and_query: &str,
    headers: HeaderMap,
    body: Body,
) -> Result<http::Response<hyper::body::Incoming>, String> {
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string())
        .map_err(|e| format!("invalid server name {server_name:?}: {e}"))?;
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| format!("dial tcp {address}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "aggregated API server connection ended");
        }
    });
    let mut req = http::Request::builder()
        .method(method)
        .uri(path_and_query)
        .header("host", server_name);
    for (k, v) in &headers {
        req = req.header(k, v);
    }
    let req = req.body(body).map_err(|e| e.to_string())?;
    sender.send_request(req).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_priorities_follow_discovery_order() {
        // kube-apiserver's /apis lists its groups by APIService priority, then name
        let catalog = Catalog::builtin();
        let mut ranked: Vec<(i64, String, &str)> = catalog
            .groups()
            .into_iter()
            .filter(|g| !g.is_empty())
            .map(|g| {
                let v = catalog.versions(g)[0];
                let (p, _) = builtin_priority(g, v).unwrap_or_else(|| panic!("{g}/{v}"));
                (p, api_service_name(g, v), g)
            })
            .collect();
        let in_catalog: Vec<&str> = ranked.iter().map(|r| r.2).collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let by_priority: Vec<&str> = ranked.iter().map(|r| r.2).collect();
        assert_eq!(in_catalog, by_priority);
    }

    #[test]
    fn available_condition_keeps_its_transition_time() {
        let svc = json!({"status": {"conditions": [{"type": "Available", "status": "False",
            "lastTransitionTime": "2020-01-01T00:00:00Z", "reason": "ServiceNotFound", "message": "m"}]}});
        assert!(with_available(&svc, ("False", "ServiceNotFound", "m".into())).is_none());
        let new = with_available(&svc, ("False", "MissingEndpoints", "n".into())).expect("changed");
        assert_eq!(
            new["status"]["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        let new =
            with_available(&svc, ("True", "Passed", "all checks passed".into())).expect("changed");
        assert_ne!(
            new["status"]["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
    }

    #[test]
    fn legacy_resource_lists_become_aggregated_versions() {
        let list = json!({"resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget", "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget", "verbs": ["get"]},
        ]});
        let v = aggregated_version("v1beta1", &list);
        assert_eq!(v["version"], "v1beta1");
        assert_eq!(v["resources"][0]["scope"], "Namespaced");
        assert_eq!(v["resources"][0]["shortNames"], json!(["wd"]));
        assert_eq!(
            v["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
        assert_eq!(v["resources"].as_array().map(Vec::len), Some(1));
    }
}
