//! TLS client configurations for the servers the API server calls (admission and
//! conversion webhooks, aggregated APIs): roots from a `caBundle`, and a client that
//! trusts only them.

use std::sync::Arc;

use base64::Engine as _;

/// The certificates of a PEM bundle as trust roots; the error is the parser's text.
pub fn roots_from_pem(pem: &[u8]) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    let mut reader = std::io::Cursor::new(pem);
    for cert in rustls_pemfile::certs(&mut reader) {
        let cert = cert.map_err(|e| e.to_string())?;
        roots.add(cert).map_err(|e| e.to_string())?;
    }
    Ok(roots)
}

/// The roots of a `caBundle` as JSON carries it (base64 PEM):
/// `caBundle is not base64: ...` or `caBundle: ...` when it is not one.
pub fn ca_bundle_roots(b64: &str) -> Result<rustls::RootCertStore, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| format!("caBundle is not base64: {e}"))?;
    roots_from_pem(&pem).map_err(|e| format!("caBundle: {e}"))
}

/// A client configuration (ring, safe default protocol versions, no client
/// certificate) that trusts only `roots`.
pub fn client_config(roots: rustls::RootCertStore) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}
