//! Posting an AdmissionReview to a webhook (upstream `pkg/util/webhook` ClientManager
//! and the REST client it builds): `https` only, the server certificate verified with
//! the webhook's `caBundle` (the server's trust roots when it has none: none here, so a
//! webhook without a `caBundle` must be reached through a CA the bundle names), a
//! `service` reference dialled through the [`ServiceResolver`], `?timeout=Ns` on the
//! URL, and errors worded as Go's `net/http` words them (`Post "https://...": ...`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::config::ClientConfig;

/// Largest answer read (upstream's REST client reads any size; 3 MiB as elsewhere).
const MAX_RESPONSE: usize = 3 * 1024 * 1024;

/// Where a Service reference is served (upstream `webhookutil.ServiceResolver`):
/// `Ok("host:port")`, or why it cannot be reached (`service "x" not found`).
pub trait ServiceResolver: Send + Sync {
    /// The address serving port `port` of Service `namespace/name`.
    fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<String, String>;
}

/// A resolver that knows no Service.
#[cfg(test)]
pub struct NoServices;

#[cfg(test)]
impl ServiceResolver for NoServices {
    fn resolve(&self, _namespace: &str, name: &str, _port: u16) -> Result<String, String> {
        Err(format!("service \"{name}\" not found"))
    }
}

/// Why a call failed: the transport (`failed to call webhook: ...`) or the answer.
#[derive(Debug, PartialEq, Eq)]
pub enum CallError {
    /// Reaching the webhook failed (connection, TLS, timeout, HTTP status).
    Transport(String),
    /// The webhook's configuration does not allow a call (bad URL).
    Config(String),
}

/// The URL a webhook is posted to (without the timeout parameter) and, for a Service,
/// its server name and where it is dialled.
struct Endpoint {
    url: String,
    server_name: String,
    dial: Result<String, String>,
    path_and_query: String,
}

fn endpoint(
    cc: &ClientConfig,
    resolver: &dyn ServiceResolver,
    timeout: Duration,
) -> Result<Endpoint, CallError> {
    let secs = timeout.as_secs().max(1);
    if let Some(s) = &cc.service {
        let server_name = format!("{}.{}.svc", s.name, s.namespace);
        let path = if s.path.is_empty() { "/" } else { &s.path };
        let path_and_query = format!("{path}?timeout={secs}s");
        return Ok(Endpoint {
            url: format!("https://{server_name}:{}{path_and_query}", s.port),
            server_name,
            dial: resolver.resolve(&s.namespace, &s.name, s.port),
            path_and_query,
        });
    }
    let Some(url) = &cc.url else {
        return Err(CallError::Config(
            "webhook clientConfig has neither url nor service".into(),
        ));
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e| CallError::Config(format!("Unparsable URL: {e}")))?;
    if uri.scheme_str() != Some("https") {
        return Err(CallError::Config(format!(
            "Unparsable URL: scheme {:?} is not https",
            uri.scheme_str().unwrap_or("")
        )));
    }
    let host = uri
        .host()
        .ok_or_else(|| CallError::Config("Unparsable URL: no host".into()))?
        .to_string();
    let port = uri.port_u16().unwrap_or(443);
    let path = uri.path();
    let path = if path.is_empty() { "/" } else { path };
    let path_and_query = format!("{path}?timeout={secs}s");
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or(&host);
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let dial_host = if bare.contains(':') {
        format!("[{bare}]:{port}")
    } else {
        format!("{bare}:{port}")
    };
    Ok(Endpoint {
        url: format!("https://{authority}{path_and_query}"),
        server_name: bare,
        dial: Ok(dial_host),
        path_and_query,
    })
}

fn tls_config(ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = match ca_bundle {
        Some(pem) => crate::machinery::tls::roots_from_pem(pem)
            .map_err(|e| format!("unable to load root certificates: {e}"))?,
        None => rustls::RootCertStore::empty(),
    };
    crate::machinery::tls::client_config(roots)
}

/// Go's wording of a TLS failure.
fn tls_error(e: &std::io::Error, server_name: &str) -> String {
    let text = e.to_string();
    if text.contains("UnknownIssuer")
        || text.contains("unknown issuer")
        || text.contains("BadSignature")
    {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_string()
    } else if text.contains("NotValidForName") || text.contains("not valid for name") {
        format!(
            "tls: failed to verify certificate: x509: certificate is not valid for {server_name}"
        )
    } else if text.contains("Expired") {
        "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
            .to_string()
    } else {
        format!("tls: {text}")
    }
}

/// Go's wording of a dial failure.
fn dial_error(addr: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        _ => format!("dial tcp {addr}: {e}"),
    }
}

/// Connect to `addr` (`host:port`), each resolved address in turn, as Go's dialer: the
/// error names the last address tried.
async fn dial(addr: &str) -> Result<tokio::net::TcpStream, String> {
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| format!("dial tcp: lookup {addr}: {e}"))?
        .collect();
    let mut last = format!("dial tcp: lookup {addr}: no such host");
    for a in addrs {
        match tokio::net::TcpStream::connect(a).await {
            Ok(s) => return Ok(s),
            Err(e) => last = dial_error(&a.to_string(), &e),
        }
    }
    Err(last)
}

/// POST `body` (an AdmissionReview) to the webhook; the parsed JSON answer. The whole
/// call (dial, TLS, request, answer) is bounded by `timeout` (`context deadline
/// exceeded` after it).
pub async fn post(
    cc: &ClientConfig,
    resolver: &dyn ServiceResolver,
    timeout: Duration,
    body: Vec<u8>,
) -> Result<Value, CallError> {
    let ep = endpoint(cc, resolver, timeout)?;
    let url = ep.url.clone();
    match tokio::time::timeout(timeout, exchange(cc, ep, body)).await {
        Err(_) => Err(CallError::Transport(format!(
            "Post \"{url}\": context deadline exceeded"
        ))),
        Ok(Err(e)) => Err(CallError::Transport(e)),
        Ok(Ok(v)) => Ok(v),
    }
}

async fn exchange(cc: &ClientConfig, ep: Endpoint, body: Vec<u8>) -> Result<Value, String> {
    let url = &ep.url;
    let addr = ep.dial.map_err(|e| format!("Post \"{url}\": {e}"))?;
    let tls = tls_config(cc.ca_bundle.as_deref()).map_err(|e| format!("Post \"{url}\": {e}"))?;
    let name = ep.server_name.clone();
    let server_name = rustls::pki_types::ServerName::try_from(ep.server_name.clone())
        .map_err(|e| format!("Post \"{url}\": invalid server name: {e}"))?;
    let tcp = dial(&addr)
        .await
        .map_err(|e| format!("Post \"{url}\": {e}"))?;
    let _ = tcp.set_nodelay(true);
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("Post \"{url}\": {}", tls_error(&e, &name)))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("Post \"{url}\": {e}"))?;
    let conn = tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "admission webhook connection ended");
        }
    });
    let host = url
        .trim_start_matches("https://")
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    let req = http::Request::post(ep.path_and_query.as_str())
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, */*")
        .header("user-agent", "kube-apiserver-admission")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("Post \"{url}\": {e}"))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("Post \"{url}\": {e}"))?;
    let status = resp.status();
    let bytes = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| format!("Post \"{url}\": reading the answer: {e}"))?
        .to_bytes();
    conn.abort();
    if !status.is_success() {
        // upstream's REST client: a Status body's message, else the body itself
        let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
        if let Some(msg) = parsed
            .as_ref()
            .filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
            .and_then(|v| v.get("message"))
            .and_then(Value::as_str)
        {
            return Err(msg.to_string());
        }
        let text = String::from_utf8_lossy(&bytes).trim().to_string();
        return Err(format!(
            "an error on the server ({:?}) has prevented the request from succeeding",
            if text.is_empty() {
                status.canonical_reason().unwrap_or("unknown").to_string()
            } else {
                text
            }
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("decoding the webhook's answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::webhook::config::ServiceRef;

    struct One;
    impl ServiceResolver for One {
        fn resolve(&self, ns: &str, name: &str, port: u16) -> Result<String, String> {
            if (ns, name, port) == ("sys", "hook", 8443) {
                Ok("127.0.0.1:9999".into())
            } else {
                Err(format!("service \"{name}\" not found"))
            }
        }
    }

    #[test]
    fn service_references_become_svc_urls_dialled_through_the_resolver() {
        let cc = ClientConfig {
            service: Some(ServiceRef {
                namespace: "sys".into(),
                name: "hook".into(),
                path: "/validate".into(),
                port: 8443,
            }),
            ..ClientConfig::default()
        };
        let ep = endpoint(&cc, &One, Duration::from_secs(10)).expect("endpoint");
        assert_eq!(ep.url, "https://hook.sys.svc:8443/validate?timeout=10s");
        assert_eq!(ep.server_name, "hook.sys.svc");
        assert_eq!(ep.dial, Ok("127.0.0.1:9999".to_string()));
        let ep = endpoint(&cc, &NoServices, Duration::from_secs(3)).expect("endpoint");
        assert_eq!(ep.dial, Err("service \"hook\" not found".to_string()));
        assert_eq!(ep.url, "https://hook.sys.svc:8443/validate?timeout=3s");
    }

    #[test]
    fn urls_keep_their_host_and_get_the_timeout() {
        let cc = ClientConfig {
            url: Some("https://127.0.0.1:8443/mutate".into()),
            ..ClientConfig::default()
        };
        let ep = endpoint(&cc, &NoServices, Duration::from_secs(30)).expect("endpoint");
        assert_eq!(ep.url, "https://127.0.0.1:8443/mutate?timeout=30s");
        assert_eq!(ep.dial, Ok("127.0.0.1:8443".to_string()));
        let cc = ClientConfig {
            url: Some("http://127.0.0.1/".into()),
            ..ClientConfig::default()
        };
        assert!(matches!(
            endpoint(&cc, &NoServices, Duration::from_secs(1)),
            Err(CallError::Config(_))
        ));
    }

    #[tokio::test]
    async fn refused_connections_read_as_go_words_them() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        drop(l);
        let cc = ClientConfig {
            url: Some(format!("https://127.0.0.1:{port}/v")),
            ..ClientConfig::default()
        };
        let e = post(&cc, &NoServices, Duration::from_secs(5), b"{}".to_vec())
            .await
            .expect_err("refused");
        assert_eq!(
            e,
            CallError::Transport(format!(
                "Post \"https://127.0.0.1:{port}/v?timeout=5s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
            ))
        );
    }
}
