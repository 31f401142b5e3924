//! Webhook server: admission (validating and mutating) and CRD conversion webhooks over HTTPS.
//!
//! The Kubernetes API server calls out to webhooks while it handles a request:
//!
//! * **admission webhooks** see every create/update/delete of the kinds they are registered
//!   for (through a `ValidatingWebhookConfiguration` or `MutatingWebhookConfiguration`) as an
//!   `AdmissionReview`. A *validating* webhook answers allowed or denied (with a code, a
//!   message and warnings); a *mutating* webhook may also answer with a JSON Patch that the
//!   API server applies to the object before it is stored.
//! * **conversion webhooks** convert custom resources between the versions of a CRD
//!   (`spec.conversion.strategy: Webhook`) through a `ConversionReview`.
//!
//! This module is controller-runtime's `pkg/webhook` for Rust. A [`WebhookServer`] serves
//! the webhooks registered on it at their paths over TLS (HTTP/1.1 and HTTP/2). Its serving
//! certificate and key are read from a directory ([`WebhookServerOptions::cert_dir`], by
//! default `<tmp>/k8s-webhook-server/serving-certs/tls.{crt,key}`, where cert-manager or a
//! mounted Secret put them) and are reloaded when they change on disk, with no restart: see
//! [`CertWatcher`].
//!
//! Webhooks are written as [`Validator`]s and [`Mutator`]s on the raw JSON object, or with
//! the typed helpers [`validating`] and [`defaulting`] for `k8s-openapi` and `kube-derive`
//! types, or as a whole [`AdmissionHandler`]; conversions as one function per kind on a
//! [`ConversionWebhook`]. A panicking handler is answered with a 500-coded denial
//! (admission) or a failed conversion; the server goes on.
//!
//! Every webhook is instrumented with controller-runtime's metrics
//! (`controller_runtime_webhook_requests_total{webhook,code}`,
//! `controller_runtime_webhook_requests_in_flight{webhook}`,
//! `controller_runtime_webhook_latency_seconds{webhook}`, plus the panic and certificate
//! watcher counters), added to a registry with [`WebhookServer::register_metrics`].
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use tokio_util::sync::CancellationToken;
//! # use coxswain_runtime::webhook;
//! use webhook::{defaulting, validating, Denial, WebhookServer, WebhookServerOptions};
//!
//! let mut server = WebhookServer::new(WebhookServerOptions::default());
//! server.register(
//!     "/mutate-v1-configmap",
//!     defaulting(|cm: &mut ConfigMap| {
//!         cm.data.get_or_insert_with(Default::default).entry("team".into()).or_insert("core".into());
//!     }),
//! )?;
//! server.register(
//!     "/validate-v1-configmap",
//!     validating(|cm: &ConfigMap, _old: Option<&ConfigMap>, _op| {
//!         if cm.data.as_ref().is_some_and(|d| d.contains_key("password")) {
//!             return Err(Denial::new("passwords belong in Secrets"));
//!         }
//!         Ok(vec![])
//!     }),
//! )?;
//! server.start(CancellationToken::new()).await?;
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;

mod admission;
mod certs;
mod checker;
mod conversion;
mod handlers;
mod metrics;
mod server;

pub use admission::{
    AdmissionRequest, AdmissionResponse, AdmissionReview, Denial, GroupVersionKind,
    GroupVersionResource, Operation, Status, PATCH_TYPE_JSON_PATCH,
};
pub use certs::CertWatcher;
pub use checker::StartedChecker;
pub use conversion::{
    ConversionRequest, ConversionResponse, ConversionReview, ConversionWebhook, Converter,
};
pub use handlers::{
    defaulting, validating, AdmissionHandler, AdmissionWebhook, Mutator, Validator,
};
pub use server::{BoundWebhookServer, TlsVersion, Webhook, WebhookServer, WebhookServerOptions};

/// The port a [`WebhookServer`] listens on unless told otherwise (controller-runtime's).
pub const DEFAULT_PORT: u16 = 9443;

/// The errors of the webhook server and its certificate watcher.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A certificate, key or CA file could not be read.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A PEM file held no usable item of the expected kind.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The certificate and key do not make a usable pair, or the TLS set-up failed.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// The client CA could not be used to verify client certificates.
    #[error("client certificate verifier: {0}")]
    ClientVerifier(String),
    /// The listening socket could not be opened.
    #[error("binding webhook server to {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A webhook path was registered twice.
    #[error("can't register duplicate webhook path {0:?}")]
    DuplicatePath(String),
    /// A webhook path does not start with `/`.
    #[error("webhook path {0:?} must start with '/'")]
    InvalidPath(String),
    /// The started check ran before the server was serving.
    #[error("webhook server has not been started yet")]
    NotStarted,
    /// The started check could not make a TLS connection to the server.
    #[error("webhook server is not reachable: {0}")]
    Unreachable(String),
}
