//! An admission webhook server written with the runtime's `webhook` module: a
//! validating webhook at `/validate-configmap` that refuses ConfigMaps carrying a
//! `forbidden` data key, and a mutating (defaulting) webhook at `/default-configmap` that
//! labels every ConfigMap `defaulted-by=webhook`.
//!
//! It makes its own CA and serving certificate (for `127.0.0.1`, `localhost` and the
//! DNS names given, e.g. `webhook.demo.svc`), writes the CA to `<dir>/ca.crt` (the
//! webhook configurations' `caBundle`) and, once listening, the port to `<dir>/port`:
//!
//! ```text
//! cargo run -p coxswain-runtime --example admission_webhook -- /tmp/hook webhook.demo.svc
//! ```
//!
//! Register it with a `ValidatingWebhookConfiguration` / `MutatingWebhookConfiguration`
//! whose `clientConfig.service` names a Service the API server reaches at
//! `127.0.0.1:<port>` (`coxswain up --service-proxy-map demo/webhook:443=127.0.0.1:<port>`,
//! or a Service of type ExternalName `localhost` on that port).

use std::net::SocketAddr;
use std::path::PathBuf;

use coxswain_runtime::webhook::{self, Denial, WebhookServer, WebhookServerOptions};
use k8s_openapi::api::core::v1::ConfigMap;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tokio_util::sync::CancellationToken;

fn certificates(dir: &PathBuf, names: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "admission-webhook-example-ca");
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca.self_signed(&ca_key)?;
    let mut sans = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    sans.extend(names.iter().cloned());
    let mut params = CertificateParams::new(sans)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "admission-webhook-example");
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &Issuer::new(ca, ca_key))?;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("tls.crt"), cert.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    std::fs::write(dir.join("ca.crt"), ca_cert.pem())?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: admission_webhook DIR [DNS-NAME...]")?,
    );
    let names: Vec<String> = args.collect();
    certificates(&dir, &names)?;

    let mut server = WebhookServer::new(WebhookServerOptions {
        bind_address: SocketAddr::from(([127, 0, 0, 1], 0)),
        cert_dir: dir.clone(),
        ..WebhookServerOptions::default()
    });
    server.register(
        "/validate-configmap",
        webhook::validating(|cm: &ConfigMap, _old: Option<&ConfigMap>, _op| {
            if cm
                .data
                .as_ref()
                .is_some_and(|d| d.contains_key("forbidden"))
            {
                return Err(Denial::new("the data key \"forbidden\" is not allowed"));
            }
            Ok(Vec::new())
        }),
    )?;
    server.register(
        "/default-configmap",
        webhook::defaulting(|cm: &mut ConfigMap| {
            cm.metadata
                .labels
                .get_or_insert_with(Default::default)
                .entry("defaulted-by".into())
                .or_insert_with(|| "webhook".into());
        }),
    )?;
    let bound = server.bind().await?;
    let port = bound.local_addr().port();
    std::fs::write(dir.join("port"), port.to_string())?;
    println!("serving admission webhooks on 127.0.0.1:{port}");
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        stop.cancel();
    });
    bound.serve(cancel).await?;
    Ok(())
}
