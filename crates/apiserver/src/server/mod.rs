//! Starting the server: storage, TLS, kubeconfig, bootstrap objects and the accept loop.

pub mod aggregator;
mod apf;
mod crd_controller;
mod policy;
mod policy_status;
pub mod servicemap;
mod tls;
mod webhook_resolver;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, Method};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::endpoints::http::{router, HttpState};
use crate::endpoints::request::{Query, Target};
use crate::endpoints::Api;
use crate::registry::catalog::Catalog;
use crate::storage::persist::Committer;
use crate::storage::store::{Store, StoredObject, Table};

/// The built-in admission plugins `--disable-admission-plugins` turns off.
pub use crate::admission::builtin::{Plugin as AdmissionPlugin, Plugins as AdmissionPlugins};
pub use crate::auth::authn::AuthnOptions;
/// Fault injection in the storage layer (tests only).
#[cfg(feature = "failpoints")]
pub use crate::storage::failpoints;
/// The database: its file name, format version, errors and `--check`.
pub use crate::storage::persist;
/// Snapshots of a running cluster and their restore.
pub use crate::storage::snapshot;

/// Server options.
#[derive(Clone, Debug)]
pub struct Config {
    /// Directory for the database, TLS material and the kubeconfig. `None`: memory
    /// only, TLS material in a temporary directory is not kept.
    pub data_dir: PathBuf,
    /// Keep objects on disk (redb) under `data_dir`.
    pub persist: bool,
    /// Address to listen on (port 0 picks a free port).
    pub bind: SocketAddr,
    /// Serve HTTPS (default). Plain HTTP is refused for non-loopback binds.
    pub tls: bool,
    /// Require authentication (default). Refused off for non-loopback binds.
    pub auth: bool,
    /// How requests are authorized (`--authorization-mode`).
    pub authorization_mode: AuthorizationMode,
    /// How requests are authenticated (token file, service account tokens, client
    /// certificates, anonymous requests).
    pub authn: AuthnOptions,
    /// Events kept for watch resumption and consistent paging.
    pub history: usize,
    /// Idle interval between BOOKMARK events.
    pub bookmark_interval: Duration,
    /// Serve `metrics.k8s.io/v1beta1` NodeMetrics and PodMetrics from the usage simulated
    /// pods report (`crate::registry::metrics`), as metrics-server would. Off by
    /// default: a bare kube-apiserver does not serve the group.
    pub metrics_api: bool,
    /// More bearer tokens and their users, besides the admin token (tests' second
    /// identities; a static token file feeds the same list).
    pub extra_tokens: Vec<(String, crate::auth::UserInfo)>,
    /// Where Service references (APIService `spec.service`, webhook
    /// `clientConfig.service`) are served: `--service-proxy-map`.
    pub service_map: servicemap::ServiceMap,
    /// Start afresh when the database file exists but is empty (0 bytes), instead of
    /// refusing (`--allow-empty-database`).
    pub allow_empty_database: bool,
    /// Which built-in admission plugins run (all by default; `--disable-admission-plugins`).
    pub admission_plugins: AdmissionPlugins,
    /// Faults injected into the storage layer (tests only).
    #[cfg(feature = "failpoints")]
    pub failpoints: Option<Arc<crate::storage::failpoints::Failpoints>>,
}

impl Config {
    /// Defaults: persistent, TLS, token, 127.0.0.1:6443.
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            data_dir: data_dir.into(),
            persist: true,
            bind: SocketAddr::from(([127, 0, 0, 1], 6443)),
            tls: true,
            auth: true,
            authorization_mode: AuthorizationMode::Rbac,
            authn: AuthnOptions::default(),
            history: 100_000,
            bookmark_interval: Duration::from_secs(10),
            metrics_api: false,
            extra_tokens: Vec::new(),
            service_map: servicemap::ServiceMap::new(),
            allow_empty_database: false,
            admission_plugins: AdmissionPlugins::default(),
            #[cfg(feature = "failpoints")]
            failpoints: None,
        }
    }

    /// How the database of this configuration is opened.
    pub fn storage(&self) -> persist::OpenOptions {
        let mut o = persist::OpenOptions::new(self.data_dir.join(persist::DB_FILE));
        o.allow_empty = self.allow_empty_database;
        #[cfg(feature = "failpoints")]
        {
            o.failpoints = self.failpoints.clone();
        }
        o
    }
}

/// `--authorization-mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every authenticated request is allowed (the server's behaviour before RBAC).
    AlwaysAllow,
    /// `system:masters` may do anything; everyone else what RBAC roles grant.
    #[default]
    Rbac,
}

/// The authorizer of a mode: RBAC asks the privileged groups first (the admin never
/// reaches RBAC), then the RBAC objects of `store`.
fn authorizer(mode: AuthorizationMode, store: &Arc<Store>) -> Arc<dyn crate::auth::Authorizer> {
    match mode {
        AuthorizationMode::AlwaysAllow => Arc::new(crate::auth::AlwaysAllow),
        AuthorizationMode::Rbac => Arc::new(crate::auth::Union(vec![
            Arc::new(crate::auth::PrivilegedGroups),
            Arc::new(crate::auth::rbac::RbacAuthorizer::new(Arc::clone(store))),
        ])),
    }
}

/// The user of the data dir's admin token (kubeadm's admin kubeconfig user).
pub const ADMIN_USER: &str = "kubernetes-admin";

/// Error starting the server.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Configuration refused.
    #[error("{0}")]
    Config(String),
    /// I/O.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// Storage (its message is complete: no source follows it).
    #[error("storage: {0}")]
    Storage(persist::PersistError),
    /// TLS.
    #[error("tls: {0}")]
    Tls(#[from] crate::server::tls::TlsError),
}

impl From<persist::PersistError> for StartError {
    fn from(e: persist::PersistError) -> StartError {
        StartError::Storage(e)
    }
}

/// A running server.
pub struct Running {
    /// The address it listens on.
    pub addr: SocketAddr,
    /// `https://127.0.0.1:port`.
    pub url: String,
    /// Path of the kubeconfig written for it.
    pub kubeconfig: PathBuf,
    /// The bearer token.
    pub token: Option<String>,
    /// CA certificate (PEM).
    pub ca_pem: Option<String>,
    store: Arc<Store>,
    /// Cancel to stop accepting connections.
    pub shutdown: CancellationToken,
    /// The accept loop.
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Number of open watches on the server (all resources): a test's view of how
    /// many informers a process runs.
    pub fn watcher_count(&self) -> usize {
        self.store.watcher_count()
    }
}

fn load_tables(
    objects: Vec<(String, String, Vec<u8>)>,
    catalog: &Catalog,
    file: &std::path::Path,
) -> Result<HashMap<Arc<str>, Table>, persist::PersistError> {
    // stored objects index the selectable fields of their storage version (custom
    // resources: those their CRD declares)
    let by_storage: HashMap<String, &crate::registry::catalog::ResourceDef> = catalog
        .resources()
        .iter()
        .map(|r| (r.storage_key(), catalog.storage_def(r)))
        .collect();
    let mut tables: HashMap<Arc<str>, Table> = HashMap::new();
    for (resource, key, json) in objects {
        let value = serde_json::from_slice::<serde_json::Value>(&json).map_err(|e| {
            persist::PersistError::Damaged {
                path: file.to_path_buf(),
                found: format!("the stored object {resource} {key} is not JSON ({e})"),
            }
        })?;
        let rv = value
            .pointer("/metadata/resourceVersion")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        let selectable: Vec<&str> = by_storage
            .get(&resource)
            .map(|d| d.field_selectors.to_vec())
            .unwrap_or_default();
        let obj = StoredObject::with_json(rv, bytes::Bytes::from(json), &value, &selectable);
        tables
            .entry(Arc::from(resource.as_str()))
            .or_default()
            .insert(key, Arc::new(obj));
    }
    Ok(tables)
}

/// Create the bootstrap namespaces and the `kubernetes` service when missing, and keep the
/// RBAC bootstrap policy.
async fn bootstrap(api: &Arc<Api>) {
    let c = Catalog::builtin();
    let (Some(ns_def), Some(svc_def)) = (
        c.lookup("", "v1", "namespaces"),
        c.lookup("", "v1", "services"),
    ) else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        "user-agent",
        axum::http::HeaderValue::from_static("kube-apiserver/v1.36.0"),
    );
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        if api.store.get("/namespaces", ns).is_some() {
            continue;
        }
        let t = Target {
            resource: ns_def,
            namespace: None,
            name: None,
            subresource: None,
            legacy_watch: false,
        };
        let body =
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}).to_string();
        if let Err(e) = api
            .serve(&Method::POST, t, &Query::default(), &headers, body.into())
            .await
        {
            tracing::warn!(namespace = ns, error = %e, "bootstrap namespace");
        }
    }
    if api.store.get("/services", "default/kubernetes").is_none() {
        let t = Target {
            resource: svc_def,
            namespace: Some("default".into()),
            name: None,
            subresource: None,
            legacy_watch: false,
        };
        let body = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}
        })
        .to_string();
        if let Err(e) = api
            .serve(&Method::POST, t, &Query::default(), &headers, body.into())
            .await
        {
            tracing::warn!(error = %e, "bootstrap kubernetes service");
        }
    }
    // RBAC bootstrap policy (upstream's rbac/bootstrap-roles post-start hook): create the
    // default roles and bindings, add what is missing to those marked autoupdate
    policy::reconcile(api).await;
}

/// The authenticators of `config` (upstream `BuiltInAuthenticationOptions`): the
/// admin token, `--token-auth-file`, service account tokens, bootstrap tokens, client
/// certificates, and anonymous requests unless `--anonymous-auth=false` or
/// `--authorization-mode=AlwaysAllow`.
fn authentication(
    config: &Config,
    creds: &crate::server::tls::Credentials,
    store: &Arc<Store>,
    legacy_used: tokio::sync::mpsc::UnboundedSender<crate::auth::authn::serviceaccount::LegacyUse>,
) -> Result<crate::auth::Auth, StartError> {
    use crate::auth::authn::{self, serviceaccount as sa};
    let o = &config.authn;
    let audiences = o.audiences();
    let token_file = match &o.token_auth_file {
        Some(path) => Some(authn::tokenfile::TokenFile::read(path).map_err(StartError::Config)?),
        None => None,
    };
    // test users given in code, as if they were lines of a token file
    let token_file = if config.extra_tokens.is_empty() {
        token_file
    } else {
        let mut file = token_file.unwrap_or_default();
        for (token, user) in &config.extra_tokens {
            file.insert(token.clone(), user.clone());
        }
        Some(file)
    };
    let (signing, public) = sa::load_keys(&sa::KeyOptions {
        signing_key_file: o.service_account_signing_key_file.clone(),
        key_files: o.service_account_key_files.clone(),
        data_dir: config.data_dir.clone(),
    })
    .map_err(StartError::Config)?;
    if o.service_account_issuers.is_empty() {
        return Err(StartError::Config(
            "--service-account-issuer: at least one issuer is required".into(),
        ));
    }
    let mut tokens = sa::ServiceAccountTokens::new(
        signing,
        public,
        o.service_account_issuers.clone(),
        audiences.clone(),
        o.service_account_max_token_expiration
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
        o.service_account_extend_token_expiration,
        o.service_account_lookup,
        sa::StoreGetter::new(Arc::clone(store), Some(legacy_used)),
    );
    tokens.jwks_uri = o.service_account_jwks_uri.clone();
    let tokens = Arc::new(tokens);
    let chain = authn::Chain {
        admin: Some(crate::auth::StaticToken {
            token: creds.token.clone(),
            user: crate::machinery::user::UserInfo::new(
                ADMIN_USER,
                &[crate::machinery::user::SYSTEM_PRIVILEGED_GROUP],
            ),
        }),
        token_file,
        service_accounts: Some(Arc::clone(&tokens)),
        bootstrap: o.enable_bootstrap_token_auth.then(|| Arc::clone(store)),
        client_certificates: config.tls,
        api_audiences: audiences,
    };
    let mut anonymous = o.anonymous_auth;
    if anonymous && config.authorization_mode == AuthorizationMode::AlwaysAllow {
        tracing::warn!("AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting AnonymousAuth to false. You should use a different authorizer");
        anonymous = false;
    }
    Ok(crate::auth::Auth {
        authenticator: Some(Arc::new(chain)),
        anonymous,
        authorizer: authorizer(config.authorization_mode, store),
        service_accounts: Some(tokens),
    })
}

/// Labels the Secrets of legacy tokens with the day they were last used (upstream's
/// legacy token tracking: `kubernetes.io/legacy-token-last-used`, at most daily).
///
/// It holds the API weakly: the sender lives in the API's authenticator, so the task ends
/// (its channel closes) when the server is dropped, releasing the database.
async fn mark_legacy_tokens_used(
    api: std::sync::Weak<Api>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<crate::auth::authn::serviceaccount::LegacyUse>,
) {
    let Some(def) = Catalog::builtin().lookup("", "v1", "secrets") else {
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/merge-patch+json"),
    );
    let user = Arc::new(crate::machinery::user::UserInfo::apiserver());
    let mut done: HashMap<(String, String), String> = HashMap::new();
    while let Some((ns, name, day)) = rx.recv().await {
        let key = (ns.clone(), name.clone());
        if done.get(&key) == Some(&day) {
            continue;
        }
        done.insert(key, day.clone());
        let target = Target {
            resource: def,
            namespace: Some(ns.clone()),
            name: Some(name.clone()),
            subresource: None,
            legacy_watch: false,
        };
        let body = json!({"metadata": {"labels": {
            apimachinery::serviceaccount::validate::LAST_USED_LABEL: day
        }}})
        .to_string();
        let query = Query::default();
        let Some(api) = api.upgrade() else {
            return;
        };
        let served = api.serve(&Method::PATCH, target, &query, &headers, body.into());
        if let Err(e) = crate::machinery::user::scope(Arc::clone(&user), served).await {
            tracing::debug!(namespace = %ns, secret = %name, error = %e, "labelling a legacy token as used");
        }
    }
}

fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

/// Open storage, bootstrap and start serving.
pub async fn start(config: Config) -> Result<Running, StartError> {
    if !is_loopback(&config.bind) && (!config.tls || !config.auth) {
        return Err(StartError::Config(format!(
            "refusing to serve on non-loopback address {} without TLS and a bearer token",
            config.bind
        )));
    }
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| StartError::Io(config.data_dir.display().to_string(), e))?;
    let (db, loaded) = if config.persist {
        let (db, loaded) = persist::open(&config.storage())?;
        (Some(db), loaded)
    } else {
        (
            None,
            persist::Loaded {
                rv: 0,
                objects: Vec::new(),
            },
        )
    };
    // the resources stored CRDs define are known before their objects are loaded
    let crds = crate::registry::custom::Registry::default();
    let stored_crds: Vec<serde_json::Value> = loaded
        .objects
        .iter()
        .filter(|(resource, _, _)| resource == crate::registry::custom::CRD_RESOURCE)
        .filter_map(|(_, _, json)| serde_json::from_slice(json).ok())
        .collect();
    crds.sync(stored_crds.iter());
    let tables = load_tables(loaded.objects, &crds.catalog(), &config.storage().path)?;
    let committer = Committer::start(db);
    let store = Store::new(loaded.rv, tables, committer, config.history.max(1));
    store.attach_committer();
    let creds = if config.tls || config.auth {
        Some(crate::server::tls::load_or_create(
            &config.data_dir,
            &config.bind.ip().to_string(),
        )?)
    } else {
        None
    };
    let (legacy_used_tx, legacy_used_rx) = tokio::sync::mpsc::unbounded_channel();
    let auth = match (&creds, config.auth) {
        (Some(c), true) => authentication(&config, c, &store, legacy_used_tx)?,
        _ => crate::auth::Auth::none(),
    };
    let mut api = Api::new(store.clone(), config.bookmark_interval, crds, auth);
    api.builtin_admission = config.admission_plugins.clone();
    let api = Arc::new(api);
    // dynamic admission, in upstream's order (MutatingAdmissionPolicy,
    // MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook)
    let webhooks = {
        let weak = Arc::downgrade(&api);
        crate::admission::webhook::Webhooks::new(
            store.clone(),
            Arc::new(webhook_resolver::Resolver {
                map: config.service_map.clone(),
                store: store.clone(),
            }),
            Arc::new(move || weak.upgrade().map(|a| a.catalog())),
            Some(api.auth.authorizer.clone()),
        )
    };
    let crd_controller = Arc::new(crd_controller::CrdController::default());
    api.add_write_hook(
        crate::registry::custom::CRD_RESOURCE,
        Arc::new(Arc::clone(&crd_controller)),
    );
    let policy_server = {
        let weak = Arc::downgrade(&api);
        Arc::new(crate::admission::policy::Server {
            store: api.store.clone(),
            catalog: Box::new(move || weak.upgrade().map(|api| api.catalog())),
            authorizer: Some(api.auth.authorizer.clone()),
        })
    };
    api.admission
        .register(crate::admission::policy::MutatingPolicies::new(
            policy_server.clone(),
        ));
    api.admission.register(webhooks.mutating_plugin());
    api.admission
        .register(crate::admission::policy::ValidatingPolicies::new(
            policy_server,
        ));
    api.admission.register(webhooks.validating_plugin());
    if let Some(vap) = crate::registry::catalog::Catalog::builtin().lookup(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
    ) {
        api.add_write_hook(
            &vap.storage_key(),
            Arc::new(policy_status::PolicyStatusController),
        );
    }
    bootstrap(&api).await;
    crd_controller.reconcile(&api).await;
    // API Priority and Fairness: bootstrap configuration and FlowSchema status
    let apf = Arc::new(apf::ApfController::default());
    for key in apf::storage_keys() {
        api.add_write_hook(&key, Arc::new(Arc::clone(&apf)));
    }
    apf.reconcile(&api).await;
    // the aggregator: local APIServices, availability, proxying
    let aggregator = Arc::new(aggregator::Aggregator::new(
        config.service_map.clone(),
        config.metrics_api,
    ));
    if let Some(key) = aggregator::storage_key() {
        api.add_write_hook(&key, Arc::new(Arc::clone(&aggregator)));
    }
    api.add_write_hook(
        crate::registry::custom::CRD_RESOURCE,
        Arc::new(Arc::clone(&aggregator)),
    );
    aggregator.reconcile_local(&api).await;
    policy_status::reconcile(&api).await;
    tokio::spawn(mark_legacy_tokens_used(
        Arc::downgrade(&api),
        legacy_used_rx,
    ));

    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|e| StartError::Io(format!("bind {}", config.bind), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| StartError::Io("local address".into(), e))?;
    let host = match addr.ip() {
        std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".into(),
        ip => ip.to_string(),
    };
    let scheme = if config.tls { "https" } else { "http" };
    let url = format!("{scheme}://{host}:{}", addr.port());
    let (tls, ca_pem, token) = match &creds {
        Some(creds) => {
            let tls = if config.tls && config.auth {
                let client_ca = match &config.authn.client_ca_file {
                    Some(path) => std::fs::read_to_string(path)
                        .map_err(|e| StartError::Io(path.display().to_string(), e))?,
                    None => creds.ca_pem.clone(),
                };
                Some(crate::server::tls::server_config(creds, Some(&client_ca))?)
            } else if config.tls {
                Some(crate::server::tls::server_config(creds, None)?)
            } else {
                None
            };
            let ca = config.tls.then(|| creds.ca_pem.clone());
            let token = config.auth.then(|| creds.token.clone());
            (tls, ca, token)
        }
        None => (None, None, None),
    };
    let kubeconfig = config.data_dir.join("kubeconfig");
    crate::server::tls::write_kubeconfig(
        &kubeconfig,
        &crate::server::tls::kubeconfig(&url, ca_pem.as_deref(), token.as_deref()),
    )?;

    let state = Arc::new(HttpState {
        api,
        server_address: format!("{host}:{}", addr.port()),
        metrics_api: config.metrics_api,
        aggregator: Some(Arc::clone(&aggregator) as Arc<dyn crate::endpoints::http::Aggregation>),
    });
    let api_weak = Arc::downgrade(&state.api);
    let app = router(state);
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    aggregator.spawn(api_weak, shutdown.clone());
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let task = tokio::spawn(async move {
        loop {
            let (stream, _peer) = tokio::select! {
                _ = stop.cancelled() => {
                    tracing::info!("API server stops accepting connections: shutdown requested");
                    return;
                }
                r = listener.accept() => match r {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                }
            };
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let acceptor = acceptor.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                let result = match acceptor {
                    Some(acc) => match acc.accept(stream).await {
                        Ok(tls) => {
                            // the verified client certificate goes with every request
                            // of the connection
                            let peer = tls
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| crate::auth::PeerCertificate(Arc::new(c.to_vec())));
                            let app = tower::ServiceExt::map_request(
                                app,
                                move |mut req: axum::http::Request<hyper::body::Incoming>| {
                                    if let Some(p) = &peer {
                                        req.extensions_mut().insert(p.clone());
                                    }
                                    req
                                },
                            );
                            let service = TowerToHyperService::new(app);
                            let conn =
                                builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
                            tokio::select! { r = conn => r, _ = stop.cancelled() => Ok(()) }
                        }
                        Err(e) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            return;
                        }
                    },
                    None => {
                        let service = TowerToHyperService::new(app);
                        let conn =
                            builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        tokio::select! { r = conn => r, _ = stop.cancelled() => Ok(()) }
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
    });
    Ok(Running {
        addr,
        url,
        kubeconfig,
        token,
        ca_pem,
        store,
        shutdown,
        task,
    })
}
