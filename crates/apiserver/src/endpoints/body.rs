//! Request bodies: the media types a body may come in and their decoding into JSON
//! values. Every endpoint that reads a body (create, update, the status, scale,
//! finalize and approval subresources, bindings, DeleteOptions of delete and
//! deletecollection, the bodies of webhook-converted custom resources) goes through
//! [`decode`]; PATCH bodies are patches, read by `PatchBody`.
//!
//! As upstream's `NegotiateInputSerializer`: no `Content-Type` means JSON; JSON, YAML
//! and, for what has a protobuf encoding (built-in kinds, `Scale`, `Binding`,
//! `DeleteOptions`; not custom resources), Kubernetes protobuf are read; anything else
//! is a 415 listing the accepted types. A body that does not decode is a 400 in
//! upstream's words (`transformDecodeError` for objects, the decoder's own error for
//! DeleteOptions).

use axum::http::HeaderMap;
use serde_json::Value;

use crate::machinery::protobuf::PROTOBUF_MEDIA_TYPE;
use apimachinery::status::{ApiError, ApiResult};

/// The media type of a request body, without parameters, in lower case.
pub fn content_type(headers: &HeaderMap) -> String {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(|s| {
            s.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}

/// What a body must hold.
#[derive(Clone, Debug)]
pub struct Expected<'a> {
    /// The kind decoded into (`ConfigMap`, `Scale`, `DeleteOptions`).
    pub kind: &'a str,
    /// Its `apiVersion`, which a protobuf envelope without one stands for.
    pub api_version: String,
    /// Whether the kind has a protobuf encoding (custom resources have none).
    pub protobuf: bool,
    /// An options body (DeleteOptions): errors are the decoder's own words, as upstream
    /// answers them, rather than an object's "cannot be handled as" message.
    pub options: bool,
}

impl<'a> Expected<'a> {
    /// An object of `kind` in `api_version`.
    pub fn object(kind: &'a str, api_version: impl Into<String>, protobuf: bool) -> Self {
        Expected {
            kind,
            api_version: api_version.into(),
            protobuf,
            options: false,
        }
    }

    /// `DeleteOptions` (of any group version: client-go sends its own group's).
    pub fn delete_options() -> Self {
        Expected {
            kind: "DeleteOptions",
            api_version: "meta.k8s.io/v1".into(),
            protobuf: true,
            options: true,
        }
    }
}

/// The serializers a body can be read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Media {
    Json,
    Yaml,
    Protobuf,
}

/// The serializer for the request's `Content-Type`, or upstream's 415.
fn media(headers: &HeaderMap, protobuf: bool) -> ApiResult<Media> {
    match content_type(headers).as_str() {
        "" | "application/json" => Ok(Media::Json),
        "application/yaml" => Ok(Media::Yaml),
        PROTOBUF_MEDIA_TYPE if protobuf => Ok(Media::Protobuf),
        _ => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml{}",
                if protobuf { ", application/vnd.kubernetes.protobuf" } else { "" }
            ),
        )),
    }
}

/// Why a body did not decode: the decoder's message, and whether it got as far as the
/// body's kind (upstream words the two cases differently).
struct Failure {
    message: String,
    kind_known: bool,
}

/// Decode a request body into a JSON object; also return the paths of duplicated JSON
/// keys (for `fieldValidation`).
pub fn decode(
    headers: &HeaderMap,
    body: &[u8],
    expected: &Expected<'_>,
) -> ApiResult<(Value, Vec<String>)> {
    if body.len() > super::MAX_BODY {
        return Err(ApiError::too_large());
    }
    let media = media(headers, expected.protobuf)?;
    let parsed = match media {
        Media::Json => crate::machinery::json_dups::parse(body).map_err(|e| Failure {
            message: format!("couldn't get version/kind; json parse error: {e}"),
            kind_known: false,
        }),
        Media::Yaml => serde_yaml::from_slice::<Value>(body)
            .map(|v| (v, Vec::new()))
            .map_err(|e| Failure {
                message: format!("error converting YAML to JSON: {e}"),
                kind_known: false,
            }),
        Media::Protobuf => {
            crate::machinery::protobuf::decode_as(body, &expected.api_version, expected.kind)
                .map(|v| (v, Vec::new()))
                .map_err(|e| Failure {
                    kind_known: e.kind_known,
                    message: e.message,
                })
        }
    };
    let failure = match parsed {
        Ok((v @ Value::Object(_), dups)) => return Ok((v, dups)),
        Ok(_) => Failure {
            message: "couldn't get version/kind; json parse error: expected an object".into(),
            kind_known: false,
        },
        Err(f) => f,
    };
    if expected.options {
        return Err(ApiError::bad_request(failure.message));
    }
    if failure.kind_known {
        // the protobuf envelope named its kind; upstream reports the body as that kind
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {}",
            expected.kind,
            expected
                .api_version
                .rsplit_once('/')
                .map_or(expected.api_version.as_str(), |(_, v)| v),
            expected.kind,
            failure.message
        )));
    }
    Err(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {}): {} ({})",
        expected.kind,
        failure.message,
        summarize(body)
    )))
}

/// Upstream's `summarizeData(body, 30)`: JSON-looking text as is, anything else in hex.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let head = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// `DeleteOptions` from a DELETE's body (JSON, YAML or protobuf; upstream ignores the
/// query when there is a body) or, without one, from its query.
pub fn delete_options(
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>> {
    if body.is_empty() {
        return Ok(None);
    }
    let (v, _) = decode(headers, body, &Expected::delete_options())?;
    if v.get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "DeleteOptions")
    {
        return Err(ApiError::bad_request(
            "decoded object cannot be converted to DeleteOptions",
        ));
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(ct: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if !ct.is_empty() {
            h.insert("content-type", HeaderValue::from_str(ct).unwrap());
        }
        h
    }

    #[test]
    fn media_types_as_upstream_negotiates_them() {
        let cm = Expected::object("ConfigMap", "v1", true);
        for ct in [
            "",
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
        ] {
            assert!(decode(&headers(ct), b"{}", &cm).is_ok(), "{ct}");
        }
        assert!(decode(&headers("application/yaml"), b"a: 1", &cm).is_ok());
        for ct in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/x-yaml",
        ] {
            let e = decode(&headers(ct), b"{}", &cm).unwrap_err();
            assert_eq!((e.code, e.reason), (415, "UnsupportedMediaType"), "{ct}");
            assert!(e.message.ends_with("application/vnd.kubernetes.protobuf"));
        }
        // custom resources have no protobuf encoding
        let custom = Expected::object("Widget", "example.com/v1", false);
        let e = decode(&headers(PROTOBUF_MEDIA_TYPE), b"k8s\0", &custom).unwrap_err();
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
        );
    }

    #[test]
    fn malformed_bodies_are_bad_requests_in_upstream_words() {
        let cm = Expected::object("ConfigMap", "v1", true);
        let e = decode(&headers("application/json"), b"{\"metadata\":", &cm).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.starts_with("the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: ")
                && e.message.ends_with(" ({\"metadata\":)"),
            "{}",
            e.message
        );
        let e = decode(&headers(PROTOBUF_MEDIA_TYPE), b"nope", &cm).unwrap_err();
        assert_eq!(
            e.message,
            "the object provided is unrecognized (must be of type ConfigMap): provided data does not appear to be a protobuf message, expected prefix [107 56 115 0] (6e6f7065)"
        );
        let e = decode(&headers(PROTOBUF_MEDIA_TYPE), b"", &cm).unwrap_err();
        assert!(e.message.ends_with("empty data (<empty>)"), "{}", e.message);
        // DeleteOptions: the decoder's own words
        let e = decode(
            &headers(PROTOBUF_MEDIA_TYPE),
            b"nope",
            &Expected::delete_options(),
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]")
        );
    }

    #[test]
    fn delete_options_bodies() {
        let json = headers("application/json");
        assert!(delete_options(&json, b"").unwrap().is_none());
        let o = delete_options(
            &json,
            br#"{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":5}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(o.grace_period_seconds, Some(5));
        let yaml = headers("application/yaml");
        let o = delete_options(&yaml, b"propagationPolicy: Orphan\n")
            .unwrap()
            .unwrap();
        assert_eq!(o.propagation_policy.as_deref(), Some("Orphan"));
        let e = delete_options(&json, br#"{"kind":"Pod"}"#).unwrap_err();
        assert_eq!(
            e.message,
            "decoded object cannot be converted to DeleteOptions"
        );
        let e = delete_options(&json, br#"{"gracePeriodSeconds":"soon"}"#).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn eviction_bodies_in_protobuf() {
        // what `kubectl drain` and client-go's EvictV1 send when configured for protobuf,
        // encoded by an independent encoder (k8s-pb with prost); the subresource that
        // takes it is served by the eviction work, this is the decoding it relies on
        use k8s_pb::api::policy::v1::Eviction;
        use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
        use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
        use prost::Message;
        let eviction = Eviction {
            metadata: Some(meta::ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("default".into()),
                ..Default::default()
            }),
            delete_options: Some(meta::DeleteOptions {
                grace_period_seconds: Some(0),
                preconditions: Some(meta::Preconditions {
                    uid: Some("u-1".into()),
                    resource_version: None,
                }),
                dry_run: vec!["All".into()],
                ..Default::default()
            }),
        };
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("policy/v1".into()),
                kind: Some("Eviction".into()),
            }),
            raw: Some(eviction.encode_to_vec()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let mut body = b"k8s\0".to_vec();
        body.extend(unknown.encode_to_vec());
        let expected = Expected::object("Eviction", "policy/v1", true);
        let (v, _) = decode(&headers(PROTOBUF_MEDIA_TYPE), &body, &expected).unwrap();
        assert_eq!(v["kind"], "Eviction");
        assert_eq!(v["apiVersion"], "policy/v1");
        assert_eq!(v["metadata"]["name"], "web-0");
        let opts = &v["deleteOptions"];
        // a pointer keeps its zero: gracePeriodSeconds 0 means "now", not "default"
        assert_eq!(opts["gracePeriodSeconds"], 0);
        assert_eq!(opts["preconditions"]["uid"], "u-1");
        assert_eq!(opts["dryRun"], serde_json::json!(["All"]));
        // a truncated body is a clear 400, not a panic or a partial eviction
        let e = decode(
            &headers(PROTOBUF_MEDIA_TYPE),
            &body[..body.len() - 3],
            &expected,
        );
        assert_eq!(e.unwrap_err().code, 400);
    }
}
