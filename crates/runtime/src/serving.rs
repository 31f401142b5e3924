//! HTTPS serving of the manager's metrics (and, on a shared port, health) server.
//!
//! kube-controller-manager serves `--secure-port` over TLS with a certificate from
//! `--tls-cert-file`/`--tls-private-key-file`, or a self-signed one generated at start
//! (kept in `--cert-dir` when given), and asks clients for a certificate signed by
//! `--client-ca-file` without requiring one; controller-runtime's metrics server with
//! `SecureServing` does the same with `CertDir`. [`SecureServing`] says which;
//! `serve` runs an axum router behind it and hands a verified client certificate to
//! the [`crate::authfilter`] through the request (never from anything the client sends).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::authfilter::PeerCertificate;
use crate::webhook::CertWatcher;

const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often certificate files are looked at again.
const CERT_POLL_INTERVAL: Duration = Duration::from_secs(10);

/// Where the serving certificate comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ServingCertificate {
    /// A self-signed certificate (for `localhost` and `127.0.0.1`, signed by a CA made for
    /// it) generated in memory at start (the default).
    #[default]
    SelfSigned,
    /// A PEM certificate (chain) and key, reloaded when they change
    /// (`--tls-cert-file`/`--tls-private-key-file`, controller-runtime's `CertDir`).
    Files {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
    /// As `Files`, but generated there (self-signed) when they cannot be read
    /// (kube-controller-manager's `--cert-dir`, `kube-controller-manager.crt`/`.key`).
    SelfSignedIn {
        /// The certificate chain.
        cert: PathBuf,
        /// The private key.
        key: PathBuf,
    },
}

/// How a server of the manager serves HTTPS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SecureServing {
    /// The serving certificate.
    pub certificate: ServingCertificate,
    /// A PEM CA bundle: clients may present a certificate signed by it, which
    /// authenticates them as its common name (`--client-ca-file`); default none.
    pub client_ca_file: Option<PathBuf>,
    /// The same CA bundle given as PEM (e.g. read from a ConfigMap); added to the file's.
    pub client_ca_pem: Option<String>,
}

/// Why HTTPS serving could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServingError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A certificate or key could not be made or used.
    #[error("serving certificate: {0}")]
    Certificate(String),
}

fn cert_err(e: impl std::fmt::Display) -> ServingError {
    ServingError::Certificate(e.to_string())
}

/// A self-signed serving certificate as client-go's
/// `GenerateSelfSignedCertKeyWithFixtures(host, ips, dns)`: a CA named `<host>-ca@<unix
/// time>` signs a certificate named `<host>@<unix time>` for `host`, `ips` and `dns`, valid
/// for a year. Returns the PEM chain (certificate then CA) and the PEM key.
pub fn generate_self_signed(
    host: &str,
    ips: &[std::net::IpAddr],
    dns: &[&str],
) -> Result<(String, String), ServingError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(cert_err)?
        .as_secs();
    let (y, m, d) = day_of(now.saturating_sub(24 * 3600));
    let not_before = rcgen::date_time_ymd(y, m, d);
    let (y, m, d) = day_of(now + 365 * 24 * 3600);
    let not_after = rcgen::date_time_ymd(y, m, d);
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca.distinguished_name
        .push(DnType::CommonName, format!("{host}-ca@{now}"));
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    ca.not_before = not_before;
    ca.not_after = not_after;
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(cert_err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{host}@{now}"));
    let mut sans = Vec::new();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => sans.push(SanType::IpAddress(ip)),
        Err(_) => sans.push(SanType::DnsName(host.try_into().map_err(cert_err)?)),
    }
    for ip in ips {
        sans.push(SanType::IpAddress(*ip));
    }
    for name in dns {
        let san = SanType::DnsName((*name).try_into().map_err(cert_err)?);
        if !sans.contains(&san) {
            sans.push(san);
        }
    }
    params.subject_alt_names = sans;
    params.key_usages = vec![
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = not_before;
    params.not_after = not_after;
    let key = KeyPair::generate().map_err(cert_err)?;
    let issuer = Issuer::new(ca, ca_key);
    let cert = params.signed_by(&key, &issuer).map_err(cert_err)?;
    Ok((
        format!("{}{}", cert.pem(), ca_cert.pem()),
        key.serialize_pem(),
    ))
}

/// The UTC date (year, month, day) of a Unix time (Howard Hinnant's civil-from-days).
fn day_of(unix: u64) -> (i32, u8, u8) {
    let days = (unix / 86400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}

fn read(path: &Path) -> Result<Vec<u8>, ServingError> {
    std::fs::read(path).map_err(|source| ServingError::File {
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: &Path, data: &str, mode: u32) -> Result<(), ServingError> {
    let err = |source| ServingError::File {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    std::fs::write(path, data).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(())
}

/// A TLS acceptor for `serving` (h2 and HTTP/1.1), and the watcher of its certificate
/// files when they are files.
pub(crate) fn acceptor(
    serving: &SecureServing,
) -> Result<(TlsAcceptor, Option<Arc<CertWatcher>>), ServingError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(cert_err)?;
    let mut roots = rustls::RootCertStore::empty();
    let mut ca_pem = Vec::new();
    if let Some(path) = &serving.client_ca_file {
        ca_pem.push((path.display().to_string(), read(path)?));
    }
    if let Some(pem) = &serving.client_ca_pem {
        ca_pem.push(("client CA".to_string(), pem.as_bytes().to_vec()));
    }
    for (what, pem) in &ca_pem {
        let mut found = false;
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            let cert = cert.map_err(|e| cert_err(format!("{what}: {e}")))?;
            roots
                .add(cert)
                .map_err(|e| cert_err(format!("{what}: {e}")))?;
            found = true;
        }
        if !found {
            return Err(cert_err(format!("{what}: no CERTIFICATE block found")));
        }
    }
    let builder = if roots.is_empty() {
        builder.with_no_client_auth()
    } else {
        // ask for a certificate, accept requests without one (tokens, anonymous)
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .map_err(cert_err)?;
        builder.with_client_cert_verifier(verifier)
    };
    let files = match &serving.certificate {
        ServingCertificate::SelfSigned => None,
        ServingCertificate::Files { cert, key } => Some((cert, key)),
        ServingCertificate::SelfSignedIn { cert, key } => {
            if CertWatcher::new(cert, key).is_err() {
                let (c, k) = generate_self_signed(
                    "localhost",
                    &[std::net::IpAddr::from([127, 0, 0, 1])],
                    &["localhost"],
                )?;
                write(cert, &c, 0o644)?;
                write(key, &k, 0o600)?;
                tracing::info!(cert = %cert.display(), key = %key.display(), "generated self-signed cert");
            }
            Some((cert, key))
        }
    };
    let (mut config, watcher) = match files {
        Some((cert, key)) => {
            let watcher = Arc::new(CertWatcher::new(cert, key).map_err(cert_err)?);
            (builder.with_cert_resolver(watcher.clone()), Some(watcher))
        }
        None => {
            let (cert, key) = generate_self_signed(
                "localhost",
                &[std::net::IpAddr::from([127, 0, 0, 1])],
                &["localhost"],
            )?;
            tracing::info!("generated self-signed cert in-memory");
            let chain: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(cert_err)?;
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key.as_bytes())
                .map_err(cert_err)?
                .ok_or_else(|| cert_err("no private key generated"))?;
            (
                builder.with_single_cert(chain, key).map_err(cert_err)?,
                None,
            )
        }
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), watcher))
}

/// Serve `router` over TLS on `listener` until `cancel` fires, then let requests in
/// flight finish.
pub(crate) async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    watcher: Option<Arc<CertWatcher>>,
    router: axum::Router,
    cancel: CancellationToken,
) {
    if let Some(w) = watcher {
        tokio::spawn(w.watch(CERT_POLL_INTERVAL, cancel.child_token()));
    }
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = cancel.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    connections.spawn(connection(tcp, peer, acceptor.clone(), router.clone(), cancel.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// The TLS handshake of an accepted connection, bounded by `TLS_HANDSHAKE_TIMEOUT` and
/// given up on shutdown; `None` (logged at debug with `what` before the message) when it
/// fails. Shared by the metrics server and the webhook server.
pub(crate) async fn tls_handshake(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: &TlsAcceptor,
    cancel: &CancellationToken,
    what: &str,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    tokio::select! {
        _ = cancel.cancelled() => None,
        tls = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(tcp)) => match tls {
            Ok(Ok(tls)) => Some(tls),
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "{what}TLS handshake failed");
                None
            }
            Err(_) => {
                tracing::debug!(%peer, "{what}TLS handshake timed out");
                None
            }
        },
    }
}

async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    router: axum::Router,
    cancel: CancellationToken,
) {
    let Some(tls) = tls_handshake(tcp, peer, &acceptor, &cancel, "").await else {
        return;
    };
    // only a certificate the verifier accepted is here
    let cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| PeerCertificate(Arc::new(c.as_ref().to_vec())));
    let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
        let router = router.clone();
        match &cert {
            Some(c) => {
                req.extensions_mut().insert(c.clone());
            }
            None => {
                req.extensions_mut().remove::<PeerCertificate>();
            }
        }
        async move {
            Ok::<_, Infallible>(
                router
                    .oneshot(req.map(axum::body::Body::new))
                    .await
                    .unwrap_or_else(|e| match e {}),
            )
        }
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
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_days() {
        // 2026-12-02 00:00:00 UTC and 2000-02-29
        assert_eq!(day_of(1_796_169_600), (2026, 12, 2));
        assert_eq!(day_of(951_782_400), (2000, 2, 29));
        assert_eq!(day_of(0), (1970, 1, 1));
        assert_eq!(day_of(1_796_169_599), (2026, 12, 1));
    }

    #[test]
    fn self_signed_certificates_chain_to_their_ca() {
        let (chain, key) = generate_self_signed(
            "localhost",
            &[std::net::IpAddr::from([127, 0, 0, 1])],
            &["localhost"],
        )
        .expect("generated");
        let certs: Vec<_> = rustls_pemfile::certs(&mut chain.as_bytes())
            .collect::<Result<_, _>>()
            .expect("PEM");
        assert_eq!(certs.len(), 2, "certificate then CA");
        assert!(rustls_pemfile::private_key(&mut key.as_bytes())
            .expect("PEM")
            .is_some());
        let (_, leaf) = x509_parser::parse_x509_certificate(&certs[0]).expect("DER");
        let cn = leaf.subject().iter_common_name().next().expect("CN");
        assert!(cn.as_str().expect("utf-8").starts_with("localhost@"));
        let (_, ca) = x509_parser::parse_x509_certificate(&certs[1]).expect("DER");
        assert_eq!(leaf.issuer(), ca.subject());
        assert!(ca.is_ca());
        let sans = leaf
            .subject_alternative_name()
            .expect("parsed")
            .expect("present");
        let names: Vec<String> = sans
            .value
            .general_names
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert_eq!(names, ["DNSName(localhost)", "IPAddress(7f:00:00:01)"]);
    }
}
