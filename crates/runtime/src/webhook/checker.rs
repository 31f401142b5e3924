//! The readiness check of the webhook server (controller-runtime's `StartedChecker`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::server::Shared;
use super::Error;
#[cfg(doc)]
use super::WebhookServer;

/// Readiness check of a [`WebhookServer`] (controller-runtime's `StartedChecker`): passes
/// when the server is serving and a TLS connection to it succeeds.
///
/// The certificate is not verified (the check is about the listener, not about trust).
#[derive(Clone, Debug)]
pub struct StartedChecker {
    shared: Arc<Shared>,
}

impl StartedChecker {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        StartedChecker { shared }
    }

    /// Runs the check: [`Error::NotStarted`] before the server serves, [`Error::Unreachable`]
    /// when the TLS connection fails (within 10 seconds).
    pub async fn check(&self) -> Result<(), Error> {
        let mut addr = *self.shared.serving_at.get().ok_or(Error::NotStarted)?;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr.ip() {
                IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
            });
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(apimachinery::tls::AcceptAnyServerCert(
                provider,
            )))
            .with_no_client_auth();
        let connector = TlsConnector::from(Arc::new(config));
        let dial = async {
            let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
            connector
                .connect(ServerName::IpAddress(addr.ip().into()), tcp)
                .await
                .map_err(|e| e.to_string())
        };
        match tokio::time::timeout(Duration::from_secs(10), dial).await {
            Ok(Ok(_tls)) => Ok(()),
            Ok(Err(e)) => Err(Error::Unreachable(format!("{addr}: {e}"))),
            Err(_) => Err(Error::Unreachable(format!("{addr}: timed out"))),
        }
    }
}
