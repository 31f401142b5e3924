//! Conversion webhooks: a `ConversionReview` posted to the CRD's
//! `spec.conversion.webhook.clientConfig` (an `https` URL verified with its `caBundle`),
//! and the checks upstream's `webhookConverter` makes of the answer.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use apimachinery::status::{ApiError, ApiResult};

/// Upstream's fixed conversion webhook timeout.
const TIMEOUT: Duration = Duration::from_secs(30);
/// Largest answer read (upstream limits responses to 3 MiB bodies too).
const MAX_RESPONSE: usize = 3 * 1024 * 1024;

fn gvk_of(obj: &Value) -> String {
    let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{av}, Kind={kind}")
}

/// Convert `objects` to `desired` (`group/version`) through the webhook `config`
/// (`spec.conversion.webhook`). Objects already in `desired` are not sent.
pub async fn convert(config: &Value, objects: Vec<Value>, desired: &str) -> ApiResult<Vec<Value>> {
    let todo: Vec<usize> = objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.get("apiVersion").and_then(Value::as_str) != Some(desired))
        .map(|(i, _)| i)
        .collect();
    if todo.is_empty() {
        return Ok(objects);
    }
    let what = gvk_of(&objects[todo[0]]);
    let fail = |detail: String| {
        ApiError::internal(format!("conversion webhook for {what} failed: {detail}"))
    };
    let sent: Vec<Value> = todo.iter().map(|&i| objects[i].clone()).collect();
    let review_version = match config
        .get("conversionReviewVersions")
        .and_then(Value::as_array)
    {
        Some(vs) if vs.iter().any(|v| v == "v1") => "v1",
        Some(vs) if vs.iter().any(|v| v == "v1beta1") => "v1beta1",
        _ => {
            return Err(fail(
                "no supported conversionReviewVersions (v1, v1beta1)".into(),
            ))
        }
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let review = json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
    });
    let body = serde_json::to_vec(&review).map_err(|e| fail(e.to_string()))?;
    let client_config = config.get("clientConfig").cloned().unwrap_or(Value::Null);
    let answer = tokio::time::timeout(TIMEOUT, post(&client_config, body))
        .await
        .map_err(|_| fail("the webhook did not answer within 30s".into()))?
        .map_err(fail)?;
    let response = answer
        .get("response")
        .ok_or_else(|| fail("no response in the ConversionReview".into()))?;
    if response.get("uid").and_then(Value::as_str) != Some(uid.as_str()) {
        return Err(fail(format!(
            "expected response uid {uid:?}, got {}",
            response.get("uid").unwrap_or(&Value::Null)
        )));
    }
    if response.pointer("/result/status").and_then(Value::as_str) != Some("Success") {
        let msg = response
            .pointer("/result/message")
            .and_then(Value::as_str)
            .unwrap_or("conversion failed");
        return Err(fail(msg.to_string()));
    }
    let converted = response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .ok_or_else(|| fail("no convertedObjects".into()))?;
    if converted.len() != todo.len() {
        return Err(fail(format!(
            "expected {} converted objects, got {}",
            todo.len(),
            converted.len()
        )));
    }
    let mut out = objects;
    for (&i, c) in todo.iter().zip(converted) {
        let original = &out[i];
        if c.get("apiVersion").and_then(Value::as_str) != Some(desired) {
            return Err(fail(format!(
                "invalid converted object: expected apiVersion {desired:?}, got {}",
                c.get("apiVersion").unwrap_or(&Value::Null)
            )));
        }
        if c.get("kind") != original.get("kind") {
            return Err(fail(format!(
                "invalid converted object: expected kind {}, got {}",
                original.get("kind").unwrap_or(&Value::Null),
                c.get("kind").unwrap_or(&Value::Null)
            )));
        }
        out[i] = restore_metadata(original, c.clone());
    }
    Ok(out)
}

/// Upstream keeps only label and annotation changes a webhook makes to metadata.
fn restore_metadata(original: &Value, mut converted: Value) -> Value {
    let mut meta = original.get("metadata").cloned().unwrap_or(json!({}));
    if let Some(m) = meta.as_object_mut() {
        for f in ["labels", "annotations"] {
            match converted.pointer(&format!("/metadata/{f}")) {
                Some(v) if !v.is_null() => {
                    m.insert(f.into(), v.clone());
                }
                _ => {
                    m.remove(f);
                }
            }
        }
    }
    if let Some(o) = converted.as_object_mut() {
        o.insert("metadata".into(), meta);
    }
    converted
}

fn tls_config(ca_bundle: Option<&str>) -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = match ca_bundle {
        Some(b64) => crate::machinery::tls::ca_bundle_roots(b64)?,
        None => rustls::RootCertStore::empty(),
    };
    if roots.is_empty() {
        return Err("no caBundle to verify the webhook's certificate with".into());
    }
    crate::machinery::tls::client_config(roots)
}

/// POST `body` to the webhook of `client_config` and parse the JSON answer.
async fn post(client_config: &Value, body: Vec<u8>) -> Result<Value, String> {
    if client_config.get("service").is_some_and(|s| !s.is_null()) {
        return Err(
            "service references cannot be reached from this server; use clientConfig.url".into(),
        );
    }
    let url = client_config
        .get("url")
        .and_then(Value::as_str)
        .ok_or("clientConfig.url is missing")?;
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("invalid url {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!("url {url:?} must use https"));
    }
    let host = uri.host().ok_or("url has no host")?.to_string();
    let port = uri.port_u16().unwrap_or(443);
    let tls = tls_config(client_config.get("caBundle").and_then(Value::as_str))?;
    let bare = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let server_name = rustls::pki_types::ServerName::try_from(bare.clone())
        .map_err(|e| format!("invalid host {host:?}: {e}"))?;
    let tcp = tokio::net::TcpStream::connect((bare.as_str(), port))
        .await
        .map_err(|e| format!("Post {url:?}: dial tcp {host}:{port}: {e}"))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("Post {url:?}: tls: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("Post {url:?}: {e}"))?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "conversion webhook connection ended");
        }
    });
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    let req = http::Request::post(path)
        .header("host", format!("{host}:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| format!("Post {url:?}: {e}"))?;
    let status = resp.status();
    let bytes = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE)
        .collect()
        .await
        .map_err(|e| format!("reading the webhook's answer: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "the server responded with status {}: {}",
            status.as_u16(),
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("invalid ConversionReview answer: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_changes_other_than_labels_and_annotations_are_undone() {
        let original = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "uid": "u", "labels": {"a": "1"}}});
        let converted = json!({"apiVersion": "a/v2", "kind": "K", "metadata": {"name": "changed", "labels": {"b": "2"}, "annotations": {"n": "v"}}, "spec": {}});
        let out = restore_metadata(&original, converted);
        assert_eq!(
            out["metadata"],
            json!({"name": "x", "uid": "u", "labels": {"b": "2"}, "annotations": {"n": "v"}})
        );
        assert_eq!(out["spec"], json!({}));
    }

    #[tokio::test]
    async fn unreachable_or_misconfigured_webhooks_fail_with_the_kind() {
        let objs =
            vec![json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "a"}})];
        let e = convert(&json!({"conversionReviewVersions": ["v1"], "clientConfig": {"url": "http://127.0.0.1:1/convert"}}), objs.clone(), "example.com/v2")
            .await
            .expect_err("http refused");
        assert_eq!(e.code, 500);
        assert!(
            e.message.starts_with(
                "Internal error occurred: conversion webhook for example.com/v1, Kind=W failed: "
            ),
            "{}",
            e.message
        );
        assert!(e.message.contains("must use https"));
        let e = convert(
            &json!({"conversionReviewVersions": ["v2"]}),
            objs.clone(),
            "example.com/v2",
        )
        .await
        .expect_err("no review version");
        assert!(e.message.contains("conversionReviewVersions"));
        // already in the desired version: nothing sent, nothing fails
        let same = convert(&json!({}), objs.clone(), "example.com/v1")
            .await
            .expect("no-op");
        assert_eq!(same, objs);
    }
}
