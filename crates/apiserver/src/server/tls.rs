//! TLS material and the kubeconfig.
//!
//! On first start the server makes a CA and a serving certificate for `localhost`,
//! `127.0.0.1`, `::1` and the bind address (rcgen), and a random bearer token; all
//! are kept in the data directory so that a restart keeps the kubeconfig valid. The
//! CA's key is kept too (`ca.key`, PKCS#8 PEM, next to `ca.crt`): it signs client
//! certificates (the CSR signer's `--cluster-signing-cert-file`/`-key-file`), which
//! the server verifies against the client CA (`--client-ca-file`, default `ca.crt`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rand::Rng;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// Error of TLS set-up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Certificate generation or parsing failed.
    #[error("certificate: {0}")]
    Cert(String),
}

/// The server's credentials.
pub struct Credentials {
    /// CA certificate (PEM) clients trust.
    pub ca_pem: String,
    /// The CA's private key (PEM, `ca.key`).
    pub ca_key_pem: String,
    /// Serving certificate chain (PEM).
    pub cert_pem: String,
    /// Serving key (PEM).
    pub key_pem: String,
    /// Bearer token clients present.
    pub token: String,
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

fn write(path: &Path, contents: &str) -> Result<(), TlsError> {
    std::fs::write(path, contents).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

fn cert_err(e: impl std::fmt::Display) -> TlsError {
    TlsError::Cert(e.to_string())
}

/// Load the credentials from `dir`, creating what is missing. `extra_san` is the bind
/// host, added to the serving certificate.
pub fn load_or_create(dir: &Path, extra_san: &str) -> Result<Credentials, TlsError> {
    let (ca_path, ca_key_path, cert_path, key_path, token_path) = (
        dir.join(CA_CERT_FILE),
        dir.join(CA_KEY_FILE),
        dir.join("server.crt"),
        dir.join("server.key"),
        dir.join("token"),
    );
    let token = match read(&token_path) {
        Some(t) if !t.trim().is_empty() => t.trim().to_string(),
        _ => {
            let bytes: [u8; 32] = rand::rng().random();
            let t = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
            write(&token_path, &t)?;
            t
        }
    };
    match (
        read(&ca_path),
        read(&ca_key_path),
        read(&cert_path),
        read(&key_path),
    ) {
        (Some(ca), Some(ca_key), Some(cert), Some(key)) => {
            return Ok(Credentials {
                ca_pem: ca,
                ca_key_pem: ca_key,
                cert_pem: cert,
                key_pem: key,
                token,
            });
        }
        (Some(_), None, _, _) => {
            // a data dir of a version that did not keep the CA's key: a new CA, so
            // that client certificates can be signed (the kubeconfig is rewritten)
            tracing::warn!(dir = %dir.display(), "no ca.key in the data dir: making a new CA and serving certificate");
        }
        _ => {}
    }
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "coxswain-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let ca_key = KeyPair::generate().map_err(cert_err)?;
    let ca_key_pem = ca_key.serialize_pem();
    let ca_cert = ca_params.self_signed(&ca_key).map_err(cert_err)?;
    let mut sans = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    if !extra_san.is_empty()
        && !sans.iter().any(|s| s == extra_san)
        && extra_san != "0.0.0.0"
        && extra_san != "::"
    {
        sans.push(extra_san.to_string());
    }
    let mut params = CertificateParams::new(sans).map_err(cert_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "coxswain-apiserver");
    params.not_after = rcgen::date_time_ymd(2099, 1, 1);
    let key = KeyPair::generate().map_err(cert_err)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let cert = params.signed_by(&key, &issuer).map_err(cert_err)?;
    let creds = Credentials {
        ca_pem: ca_cert.pem(),
        ca_key_pem,
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        token,
    };
    write(&ca_path, &creds.ca_pem)?;
    write(&ca_key_path, &creds.ca_key_pem)?;
    write(&cert_path, &creds.cert_pem)?;
    write(&key_path, &creds.key_pem)?;
    Ok(creds)
}

/// The data dir's CA certificate.
pub const CA_CERT_FILE: &str = "ca.crt";
/// The data dir's CA key.
pub const CA_KEY_FILE: &str = "ca.key";

/// A rustls server configuration offering h2 and HTTP/1.1 through ALPN; with
/// `client_ca` (PEM), client certificates are asked for (not required) and verified
/// against it, as Go's `VerifyClientCertIfGiven`.
pub fn server_config(
    creds: &Credentials,
    client_ca: Option<&str>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs: Vec<rustls::pki_types::CertificateDer<'static>> =
        rustls_pemfile::certs(&mut creds.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(cert_err)?;
    let key = rustls_pemfile::private_key(&mut creds.key_pem.as_bytes())
        .map_err(cert_err)?
        .ok_or_else(|| TlsError::Cert("no private key found".into()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(cert_err)?;
    let builder = match client_ca {
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut pem.as_bytes()) {
                roots.add(c.map_err(cert_err)?).map_err(cert_err)?;
            }
            if roots.is_empty() {
                return Err(TlsError::Cert(
                    "the client CA file holds no certificate".into(),
                ));
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(cert_err)?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder.with_single_cert(certs, key).map_err(cert_err)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// A kubeconfig for `server` (URL) trusting `ca_pem` (None: plain HTTP) with `token`.
pub fn kubeconfig(server: &str, ca_pem: Option<&str>, token: Option<&str>) -> String {
    let mut cluster = format!("    server: {server}\n");
    if let Some(ca) = ca_pem {
        let b64 = base64::engine::general_purpose::STANDARD.encode(ca.as_bytes());
        cluster.push_str(&format!("    certificate-authority-data: {b64}\n"));
    }
    let user = match token {
        Some(t) => format!("    token: {t}\n"),
        None => "    {}\n".to_string(),
    };
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: coxswain\n  cluster:\n{cluster}contexts:\n- name: coxswain\n  context:\n    cluster: coxswain\n    user: coxswain\n    namespace: default\ncurrent-context: coxswain\nusers:\n- name: coxswain\n  user:\n{user}"
    )
}

/// Write the kubeconfig file (mode 0600).
pub fn write_kubeconfig(path: &Path, contents: &str) -> Result<(), TlsError> {
    write(path, contents)
}
