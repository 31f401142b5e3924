//! The HTTPS server that serves registered webhooks (controller-runtime's `webhook.Server`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prometheus_client::registry::Registry;
use rustls::crypto::CryptoProvider;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::admission::{self, BodyError};
use super::certs::CertWatcher;
use super::checker::StartedChecker;
use super::conversion::{self, ConversionWebhook};
use super::handlers::AdmissionWebhook;
use super::metrics::WebhookMetrics;
use super::{Error, DEFAULT_PORT};

/// The lowest TLS version the server accepts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 and 1.3 (the default, as controller-runtime's).
    #[default]
    Tls12,
    /// TLS 1.3 only.
    Tls13,
}

/// How a [`WebhookServer`] listens and where it finds its certificate.
#[derive(Clone, Debug)]
pub struct WebhookServerOptions {
    /// Address to listen on; `0.0.0.0:9443` by default. Port 0 picks a free port (see
    /// [`BoundWebhookServer::local_addr`]).
    pub bind_address: SocketAddr,
    /// Directory holding the serving certificate and key;
    /// `<tmp>/k8s-webhook-server/serving-certs` by default.
    pub cert_dir: PathBuf,
    /// File name of the PEM certificate (chain) in `cert_dir`; `tls.crt` by default.
    pub cert_name: String,
    /// File name of the PEM private key in `cert_dir`; `tls.key` by default.
    pub key_name: String,
    /// File name of a PEM CA bundle in `cert_dir`; when set, clients must present a
    /// certificate signed by it.
    pub client_ca_name: Option<String>,
    /// Lowest TLS version accepted; TLS 1.2 by default.
    pub tls_min_version: TlsVersion,
    /// How often the certificate files are checked for changes; 1 s by default.
    pub cert_poll_interval: Duration,
    /// How long a shutdown waits for requests in flight; 1 minute by default.
    pub shutdown_timeout: Duration,
}

impl Default for WebhookServerOptions {
    fn default() -> Self {
        WebhookServerOptions {
            bind_address: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), DEFAULT_PORT),
            cert_dir: std::env::temp_dir()
                .join("k8s-webhook-server")
                .join("serving-certs"),
            cert_name: "tls.crt".to_string(),
            key_name: "tls.key".to_string(),
            client_ca_name: None,
            tls_min_version: TlsVersion::Tls12,
            cert_poll_interval: Duration::from_secs(1),
            shutdown_timeout: Duration::from_secs(60),
        }
    }
}

/// What can be registered on a [`WebhookServer`]: an admission or a conversion webhook.
#[derive(Clone, Debug)]
pub enum Webhook {
    /// An `AdmissionReview` webhook (validating or mutating).
    Admission(AdmissionWebhook),
    /// A `ConversionReview` webhook.
    Conversion(ConversionWebhook),
}

impl From<AdmissionWebhook> for Webhook {
    fn from(hook: AdmissionWebhook) -> Self {
        Webhook::Admission(hook)
    }
}

impl From<ConversionWebhook> for Webhook {
    fn from(hook: ConversionWebhook) -> Self {
        Webhook::Conversion(hook)
    }
}

/// The state a [`StartedChecker`] looks at.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set once the server accepts connections.
    pub(crate) serving_at: OnceLock<SocketAddr>,
}

/// The webhook server: register webhooks at paths, then [`start`](Self::start) it.
#[derive(Debug)]
pub struct WebhookServer {
    options: WebhookServerOptions,
    routes: HashMap<String, Webhook>,
    metrics: WebhookMetrics,
    shared: Arc<Shared>,
}

impl WebhookServer {
    /// A server with `options` and no webhooks.
    pub fn new(options: WebhookServerOptions) -> Self {
        WebhookServer {
            options,
            routes: HashMap::new(),
            metrics: WebhookMetrics::default(),
            shared: Arc::default(),
        }
    }

    /// The options the server was made with.
    pub fn options(&self) -> &WebhookServerOptions {
        &self.options
    }

    /// Serves `hook` at `path` (exact match). Fails on a path registered before or not
    /// starting with `/`.
    pub fn register(
        &mut self,
        path: impl Into<String>,
        hook: impl Into<Webhook>,
    ) -> Result<(), Error> {
        let path = path.into();
        if !path.starts_with('/') {
            return Err(Error::InvalidPath(path));
        }
        if self.routes.contains_key(&path) {
            return Err(Error::DuplicatePath(path));
        }
        tracing::info!(%path, "registering webhook");
        self.metrics.init_webhook(&path);
        self.routes.insert(path, hook.into());
        Ok(())
    }

    /// Adds the webhook metrics (`controller_runtime_webhook_requests_total`,
    /// `controller_runtime_webhook_requests_in_flight`,
    /// `controller_runtime_webhook_latency_seconds`, the panic counters and the certificate
    /// watcher counters) to `registry`. May be called before or after the server starts.
    pub fn register_metrics(&self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    /// A check for readiness probes that passes once the server accepts TLS connections.
    pub fn started_checker(&self) -> StartedChecker {
        StartedChecker::new(Arc::clone(&self.shared))
    }

    /// Loads the certificate and opens the listening socket, without serving yet.
    pub async fn bind(self) -> Result<BoundWebhookServer, Error> {
        let o = &self.options;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let certs = Arc::new(CertWatcher::with_counters(
            o.cert_dir.join(&o.cert_name),
            o.cert_dir.join(&o.key_name),
            Arc::clone(&provider),
            self.metrics.cert_reads.clone(),
            self.metrics.cert_read_errors.clone(),
        )?);
        let tls = server_config(o, &provider, Arc::clone(&certs))?;
        let listener = TcpListener::bind(o.bind_address)
            .await
            .map_err(|source| Error::Bind {
                addr: o.bind_address,
                source,
            })?;
        let local_addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: o.bind_address,
            source,
        })?;
        Ok(BoundWebhookServer {
            listener,
            local_addr,
            acceptor: TlsAcceptor::from(Arc::new(tls)),
            certs,
            routes: Arc::new(Routes {
                routes: self.routes,
                metrics: self.metrics,
            }),
            options: self.options,
            shared: self.shared,
        })
    }

    /// Binds and serves until `cancel` fires, then shuts down gracefully.
    pub async fn start(self, cancel: CancellationToken) -> Result<(), Error> {
        self.bind().await?.serve(cancel).await
    }
}

fn server_config(
    o: &WebhookServerOptions,
    provider: &Arc<CryptoProvider>,
    certs: Arc<CertWatcher>,
) -> Result<rustls::ServerConfig, Error> {
    let versions: &[&'static rustls::SupportedProtocolVersion] = match o.tls_min_version {
        TlsVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(provider))
        .with_protocol_versions(versions)?;
    let builder = match &o.client_ca_name {
        None => builder.with_no_client_auth(),
        Some(name) => {
            let path = o.cert_dir.join(name);
            let pem = std::fs::read(&path).map_err(|source| Error::ReadFile {
                path: path.clone(),
                source,
            })?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut &pem[..]) {
                let cert = cert.map_err(|e| Error::Pem {
                    path: path.clone(),
                    what: e.to_string(),
                })?;
                roots.add(cert)?;
            }
            if roots.is_empty() {
                return Err(Error::Pem {
                    path,
                    what: "no CERTIFICATE block found".to_string(),
                });
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::clone(provider),
            )
            .build()
            .map_err(|e| Error::ClientVerifier(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_cert_resolver(certs);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A [`WebhookServer`] with its socket open: learn the address, then [`serve`](Self::serve).
pub struct BoundWebhookServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    acceptor: TlsAcceptor,
    certs: Arc<CertWatcher>,
    routes: Arc<Routes>,
    options: WebhookServerOptions,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for BoundWebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundWebhookServer")
            .field("local_addr", &self.local_addr)
            .field("routes", &self.routes)
            .finish_non_exhaustive()
    }
}

impl BoundWebhookServer {
    /// The address the server listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The certificate watcher serving this server's certificate.
    pub fn cert_watcher(&self) -> &Arc<CertWatcher> {
        &self.certs
    }

    /// Serves until `cancel` fires; then stops accepting, lets requests in flight finish (up
    /// to the shutdown timeout) and returns.
    pub async fn serve(self, cancel: CancellationToken) -> Result<(), Error> {
        let watcher = tokio::spawn(
            Arc::clone(&self.certs).watch(self.options.cert_poll_interval, cancel.child_token()),
        );
        let _ = self.shared.serving_at.set(self.local_addr);
        tracing::info!(address = %self.local_addr, "serving webhook server");
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((tcp, peer)) => {
                        connections.spawn(serve_connection(
                            tcp, peer, self.acceptor.clone(), Arc::clone(&self.routes), cancel.clone(),
                        ));
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: wait rather than spin.
                        tracing::warn!(error = %e, "webhook server failed to accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(self.listener);
        tracing::info!(timeout = ?self.options.shutdown_timeout, "shutting down webhook server: shutdown requested");
        let drained = tokio::time::timeout(self.options.shutdown_timeout, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                open = connections.len(),
                "webhook server shutdown timed out, closing connections"
            );
            connections.shutdown().await;
        }
        let _ = watcher.await;
        tracing::info!("webhook server stopped");
        Ok(())
    }
}

async fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    routes: Arc<Routes>,
    cancel: CancellationToken,
) {
    let Some(tls) = crate::serving::tls_handshake(tcp, peer, &acceptor, &cancel, "webhook ").await
    else {
        return;
    };
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let routes = Arc::clone(&routes);
        async move { Ok::<_, Infallible>(routes.dispatch(req).await) }
    });
    let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(TokioIo::new(tls), service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = cancel.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "webhook connection ended with an error");
    }
}

/// The registered webhooks and their metrics, shared by all connections.
#[derive(Debug)]
struct Routes {
    routes: HashMap<String, Webhook>,
    metrics: WebhookMetrics,
}

fn respond(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_TYPE, value);
    }
    response
}

async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge(limit)),
        Err(e) => Err(BodyError::Read(format!(
            "unable to read the request body: {e}"
        ))),
    }
}

impl Routes {
    async fn dispatch(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_string();
        let Some(hook) = self.routes.get(&path) else {
            return respond(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "404 page not found\n",
            );
        };
        let in_flight = self.metrics.start(&path);
        let content_type = req
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let response = match hook {
            Webhook::Admission(hook) => {
                let body = read_body(req.into_body(), admission::MAX_REQUEST_BYTES).await;
                let json = hook
                    .serve(
                        content_type.as_deref(),
                        body,
                        &self.metrics.admission_panics,
                    )
                    .await;
                respond(StatusCode::OK, "application/json", json)
            }
            Webhook::Conversion(hook) => {
                let body = read_body(req.into_body(), conversion::MAX_REQUEST_BYTES).await;
                match hook.serve(body, &self.metrics.conversion_panics) {
                    Ok(json) => respond(StatusCode::OK, "application/json", json),
                    Err(code) => respond(
                        StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST),
                        "text/plain; charset=utf-8",
                        Bytes::new(),
                    ),
                }
            }
        };
        in_flight.finish(response.status().as_u16());
        response
    }
}
