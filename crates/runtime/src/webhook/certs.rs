//! Serving certificate loaded from PEM files and reloaded when they change.
//!
//! The counterpart of controller-runtime's `certwatcher`: cert-manager and kubelet-mounted
//! Secrets rotate `tls.crt`/`tls.key` on disk, and the server must pick the new pair up
//! without a restart. [`CertWatcher`] is a rustls [`ResolvesServerCert`]: every new TLS
//! handshake gets the current pair. [`CertWatcher::watch`] polls both files and swaps in the
//! new pair once both parse and match; while they do not (a broken file, or a half-written
//! rotation where the certificate is new and the key still old), the error is logged and
//! the previous pair goes on being served.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

use super::Error;

/// The serving certificate and key, read from two PEM files and reloaded when they change.
#[derive(Debug)]
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    /// The file contents `current` was built from, to skip re-parsing unchanged files.
    loaded: Mutex<(Vec<u8>, Vec<u8>)>,
    reads: Counter,
    read_errors: Counter,
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })
}

fn parse_pair(
    cert_path: &Path,
    cert_pem: &[u8],
    key_path: &Path,
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, Error> {
    let pem_error = |path: &Path, what: String| Error::Pem {
        path: path.to_path_buf(),
        what,
    };
    let chain = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(cert_path, format!("invalid PEM: {e}")))?;
    if chain.is_empty() {
        return Err(pem_error(
            cert_path,
            "no CERTIFICATE block found".to_string(),
        ));
    }
    let key = rustls_pemfile::private_key(&mut &key_pem[..])
        .map_err(|e| pem_error(key_path, format!("invalid PEM: {e}")))?
        .ok_or_else(|| pem_error(key_path, "no private key block found".to_string()))?;
    // Checks that the key is usable and belongs to the first certificate.
    Ok(CertifiedKey::from_der(chain, key, provider)?)
}

impl CertWatcher {
    /// Reads the pair once; fails when a file is missing or the pair is not usable.
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> Result<Self, Error> {
        Self::with_counters(
            cert_path.into(),
            key_path.into(),
            Arc::new(rustls::crypto::ring::default_provider()),
            Counter::default(),
            Counter::default(),
        )
    }

    pub(crate) fn with_counters(
        cert_path: PathBuf,
        key_path: PathBuf,
        provider: Arc<CryptoProvider>,
        reads: Counter,
        read_errors: Counter,
    ) -> Result<Self, Error> {
        reads.inc();
        let loaded = read(&cert_path)
            .and_then(|cert| Ok((cert, read(&key_path)?)))
            .and_then(|(cert, key)| {
                let pair = parse_pair(&cert_path, &cert, &key_path, &key, &provider)?;
                Ok((pair, cert, key))
            });
        let (pair, cert, key) = loaded.inspect_err(|_| {
            read_errors.inc();
        })?;
        Ok(CertWatcher {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Arc::new(pair)),
            loaded: Mutex::new((cert, key)),
            reads,
            read_errors,
        })
    }

    /// The pair being served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Reads both files now and swaps in their pair if it changed: `Ok(true)` when swapped,
    /// `Ok(false)` when unchanged, `Err` (and the old pair kept) when the files are missing
    /// or do not make a usable pair.
    pub fn reload(&self) -> Result<bool, Error> {
        self.reads.inc();
        let result = self.reload_inner();
        if result.is_err() {
            self.read_errors.inc();
        }
        result
    }

    fn reload_inner(&self) -> Result<bool, Error> {
        let cert = read(&self.cert_path)?;
        let key = read(&self.key_path)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if loaded.0 == cert && loaded.1 == key {
            return Ok(false);
        }
        let pair = parse_pair(&self.cert_path, &cert, &self.key_path, &key, &self.provider)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(pair);
        *loaded = (cert, key);
        Ok(true)
    }

    /// Polls the files every `interval` until `cancel` fires, swapping in changed pairs.
    ///
    /// A failed reload is logged once per distinct failure and the old pair is kept.
    pub async fn watch(self: Arc<Self>, interval: Duration, cancel: CancellationToken) {
        tracing::info!(
            cert = %self.cert_path.display(), key = %self.key_path.display(), ?interval,
            "starting certificate watcher"
        );
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await; // the first tick is immediate, and the pair was just read
        let mut last_error: Option<String> = None;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = ticker.tick() => {}
            }
            let this = Arc::clone(&self);
            let outcome = match tokio::task::spawn_blocking(move || this.reload()).await {
                Ok(outcome) => outcome,
                Err(join_error) => Err(Error::Pem {
                    path: self.cert_path.clone(),
                    what: format!("reload task failed: {join_error}"),
                }),
            };
            match outcome {
                Ok(true) => {
                    last_error = None;
                    tracing::info!(cert = %self.cert_path.display(), "updated current TLS certificate");
                }
                Ok(false) => last_error = None,
                Err(e) => {
                    let message = e.to_string();
                    if last_error.as_deref() != Some(message.as_str()) {
                        tracing::error!(error = %message, "failed to reload certificate, keeping the current one");
                    } else {
                        tracing::debug!(error = %message, "certificate still unusable");
                    }
                    last_error = Some(message);
                }
            }
        }
        tracing::info!(cert = %self.cert_path.display(), "certificate watcher stopped: shutdown requested");
    }

    /// Adds `certwatcher_read_certificate_total` and
    /// `certwatcher_read_certificate_errors_total` to `registry`.
    pub fn register_metrics(&self, registry: &mut Registry) {
        register_counters(registry, &self.reads, &self.read_errors);
    }
}

pub(crate) fn register_counters(registry: &mut Registry, reads: &Counter, read_errors: &Counter) {
    // prometheus-client appends `_total` to counter names.
    registry.register(
        "certwatcher_read_certificate",
        "Total number of certificate reads",
        reads.clone(),
    );
    registry.register(
        "certwatcher_read_certificate_errors",
        "Total number of certificate read errors",
        read_errors.clone(),
    );
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}
