//! HTTP routing: authentication, health, version, discovery, OpenAPI and the resource
//! API, as one axum handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use http_body_util::BodyExt;

use crate::auth::{request_info, PeerCertificate, UserInfo};
use crate::endpoints::negotiate::Format;
use crate::endpoints::request::{route_in, Query, Route};
use crate::endpoints::{discovery, metrics};
use crate::endpoints::{error_response, error_response_as, Api, Reply, MAX_BODY};
use crate::registry::catalog::Catalog;
use apimachinery::status::ApiError;

/// What the HTTP layer needs.
pub struct HttpState {
    /// The resource API.
    pub api: Arc<Api>,
    /// `host:port` clients use (for `/api`).
    pub server_address: String,
    /// Serve `metrics.k8s.io/v1beta1` ([`crate::endpoints::metrics`]).
    pub metrics_api: bool,
    /// The aggregation layer: discovery and proxying of APIServices served elsewhere.
    pub aggregator: Option<Arc<dyn Aggregation>>,
}

/// What the HTTP layer asks of the aggregation layer (`crate::server::aggregator`):
/// the groups and versions other API servers serve, and the proxying of their requests.
pub trait Aggregation: Send + Sync {
    /// `/apis/<group>` of a group only other servers serve.
    fn group(&self, catalog: &Catalog, group: &str) -> Option<serde_json::Value>;
    /// Whether requests under `/apis/<group>/<version>` go to another server.
    fn proxies(&self, catalog: &Catalog, group: &str, version: &str) -> bool;
    /// Add the groups of other servers to a legacy `/apis` list.
    fn extend_group_list(&self, catalog: &Catalog, list: &mut serde_json::Value);
    /// Add the groups of other servers to an aggregated `/apis` answer.
    fn extend_aggregated(&self, catalog: &Catalog, list: &mut serde_json::Value);
    /// The `/openapi/v3` index entries (path, `serverRelativeURL`) of aggregated group
    /// versions.
    fn openapi_paths(&self) -> Vec<(String, String)>;
    /// The aggregated group version whose server answers `/openapi/v3/<doc>`, if any.
    fn openapi_proxies(&self, catalog: &Catalog, doc: &str) -> Option<(String, String)>;
    /// Proxy the request to the server of `group`/`version` as `user`.
    fn proxy<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
        parts: &'a axum::http::request::Parts,
        body: Body,
        user: &'a UserInfo,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send + 'a>>;
}

/// The router serving everything.
pub fn router(state: Arc<HttpState>) -> Router {
    Router::new().fallback(handle).with_state(state)
}

fn public_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/livez" | "/readyz" | "/version")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

/// Who sends the request and whether they may make it: the user, or the 401/403 to
/// answer. Public paths are served to anyone without credentials (upstream binds them
/// to `system:unauthenticated` through `system:public-info-viewer`), but credentials
/// that are present and invalid are refused (401) there too, as upstream.
fn admit(
    state: &HttpState,
    method: &Method,
    path: &str,
    raw_query: Option<&str>,
    parts: &axum::http::request::Parts,
) -> Result<UserInfo, ApiError> {
    let auth = &state.api.auth;
    let peer = parts.extensions.get::<PeerCertificate>();
    let user = match auth.authenticate(&parts.headers, peer) {
        Ok(u) => u,
        // a public path is served without credentials, but invalid ones are 401
        Err(_) if public_path(path) && !parts.headers.contains_key("authorization") => {
            UserInfo::new(
                crate::machinery::user::ANONYMOUS,
                &[crate::machinery::user::ALL_UNAUTHENTICATED],
            )
        }
        Err(e) => return Err(e),
    };
    if public_path(path) {
        return Ok(user);
    }
    let user = crate::auth::authn::impersonation::impersonate(auth, user, &parts.headers)?;
    let info = request_info::parse(method, path, raw_query).map_err(ApiError::bad_request)?;
    auth.authorize(&user, &info)?;
    Ok(user)
}

fn json(v: &serde_json::Value) -> Response {
    Reply::json(StatusCode::OK, v).into_response()
}

fn health(path: &str, query: &Query) -> Response {
    let name = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("healthz");
    let body = if query.get("verbose").is_some() {
        format!("[+]ping ok\n[+]etcd ok\n[+]poststarthook/start-apiextensions-informers ok\n{name} check passed\n")
    } else {
        "ok".to_string()
    };
    let mut r = Response::new(Body::from(body));
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn handle(State(state): State<Arc<HttpState>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = Query::parse(parts.uri.query());
    let accept = parts
        .headers
        .get("accept")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let user = match admit(&state, &parts.method, &path, parts.uri.query(), &parts) {
        Ok(u) => Arc::new(u),
        // upstream writes 401 and 403 in the negotiated format too
        Err(e) => return error_response_as(&e, Format::for_accept(&accept, false)),
    };
    match path.as_str() {
        "/healthz" | "/livez" | "/readyz" => return health(&path, &query),
        p if p.starts_with("/healthz/")
            || p.starts_with("/livez/")
            || p.starts_with("/readyz/") =>
        {
            return health(&path, &query)
        }
        "/version" | "/version/" => return json(&discovery::version()),
        crate::storage::snapshot::PATH if parts.method == Method::GET => {
            return crate::storage::snapshot::response(&state.api.store)
        }
        crate::endpoints::oidc::CONFIGURATION_PATH | crate::endpoints::oidc::JWKS_PATH => {
            return crate::endpoints::oidc::serve(
                state.api.auth.service_accounts.as_deref(),
                &state.server_address,
                &path,
                &parts.method,
            );
        }
        "/openapi/v2" => {
            // No v2 document: an empty protobuf body tells kubectl there is nothing to
            // validate against, so it relies on v3 and server-side field validation.
            // The media type is the one kube-openapi answers with (`.v1.0`; the `@v1.0`
            // form clients may ask for is no valid media type for Go's parser, and a
            // kind without PATCH, like the reviews, makes kubectl read this document).
            let mut r = Response::new(Body::empty());
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static(
                    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
                ),
            );
            return r;
        }
        "/openapi/v3" | "/openapi/v3/" => {
            let mut index = state.api.openapi().index.clone();
            if let Some(agg) = &state.aggregator {
                // the documents of aggregated group versions, as the aggregator merges them
                let extra = agg.openapi_paths();
                if let (false, Ok(mut v)) = (
                    extra.is_empty(),
                    serde_json::from_slice::<serde_json::Value>(&index),
                ) {
                    for (path, url) in extra {
                        v["paths"][path] = serde_json::json!({ "serverRelativeURL": url });
                    }
                    index = serde_json::to_vec(&v).unwrap_or_default().into();
                }
            }
            let mut r = Response::new(Body::from(index));
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/json"));
            return r;
        }
        p if p.starts_with("/openapi/v3/") => {
            let doc = p["/openapi/v3/".len()..].trim_end_matches('/');
            if let Some((g, v)) = state
                .aggregator
                .as_ref()
                .and_then(|a| a.openapi_proxies(&state.api.catalog(), doc))
            {
                if let Some(agg) = &state.aggregator {
                    return agg.proxy(&g, &v, &parts, body, &user).await;
                }
            }
            return openapi_document(&state, doc, &query, &parts.headers);
        }
        _ => {}
    }
    if state.metrics_api && metrics::is_metrics_path(&path) {
        return match metrics::serve(&state.api.store, &parts.method, &path, &query, &accept) {
            Ok(reply) => reply.into_response(),
            Err(e) => error_response(&e),
        };
    }
    let catalog = state.api.catalog();
    if let Some(agg) = &state.aggregator {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        match segs.as_slice() {
            ["apis", g] => {
                if let Some(v) = agg.group(&catalog, g) {
                    return json(&v);
                }
            }
            ["apis", g, v, ..] if agg.proxies(&catalog, g, v) => {
                let (g, v) = (g.to_string(), v.to_string());
                return agg.proxy(&g, &v, &parts, body, &user).await;
            }
            _ => {}
        }
    }
    let target = match route_in(&catalog, &path) {
        Ok(Route::CoreVersions) => {
            return if discovery::wants_aggregated(&accept) {
                aggregated(discovery::aggregated(&catalog, true))
            } else {
                json(&discovery::core_versions(&state.server_address))
            }
        }
        Ok(Route::Groups) => {
            return if discovery::wants_aggregated(&accept) {
                let mut list = discovery::aggregated(&catalog, false);
                if state.metrics_api {
                    if let Some(items) = list["items"].as_array_mut() {
                        items.push(metrics::aggregated_group());
                    }
                }
                if let Some(agg) = &state.aggregator {
                    agg.extend_aggregated(&catalog, &mut list);
                }
                aggregated(list)
            } else {
                let mut list = discovery::group_list(&catalog);
                if state.metrics_api {
                    // metrics-server's APIService has groupPriorityMinimum 100: after
                    // every built-in group
                    if let Some(groups) = list["groups"].as_array_mut() {
                        groups.push(metrics::group_entry());
                    }
                }
                if let Some(agg) = &state.aggregator {
                    agg.extend_group_list(&catalog, &mut list);
                }
                json(&list)
            };
        }
        Ok(Route::Group(g)) => {
            return match discovery::group(&catalog, &g) {
                Some(v) => json(&v),
                None => error_response(&ApiError::path_not_found()),
            }
        }
        Ok(Route::ResourceList(g, v)) => return json(&discovery::resource_list(&catalog, &g, &v)),
        Ok(Route::Resource(t)) => t,
        Err(e) => return error_response(&e),
    };
    // objects and errors in the negotiated format (protobuf for built-in kinds when the
    // client prefers it)
    let format = Format::for_accept(
        &accept,
        crate::endpoints::negotiate::json_only(target.resource),
    );
    let body = match read_body(body, &parts.method).await {
        Ok(b) => b,
        Err(e) => return error_response_as(&e, format),
    };
    let served = state
        .api
        .serve(&parts.method, target, &query, &parts.headers, body);
    let (answer, warnings) =
        crate::admission::collect_warnings(crate::machinery::user::scope(user, served)).await;
    match answer {
        Ok(reply) => reply.with_warnings(warnings).into_response_as(format).await,
        Err(e) => {
            let mut r = error_response_as(&e, format);
            super::append_warnings(r.headers_mut(), warnings);
            r
        }
    }
}

async fn read_body(body: Body, method: &Method) -> Result<bytes::Bytes, ApiError> {
    if method == Method::GET {
        return Ok(bytes::Bytes::new());
    }
    let limited = http_body_util::Limited::new(body, MAX_BODY);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large())
            } else {
                Err(ApiError::bad_request(format!("reading request body: {e}")))
            }
        }
    }
}

fn aggregated(v: serde_json::Value) -> Response {
    let mut r = Reply::json(StatusCode::OK, &v).into_response();
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static(discovery::AGGREGATED_CONTENT_TYPE),
    );
    r.headers_mut()
        .insert("vary", HeaderValue::from_static("Accept"));
    r
}

fn openapi_document(state: &HttpState, path: &str, query: &Query, headers: &HeaderMap) -> Response {
    let api = state.api.openapi();
    let Some(doc) = api.documents.get(path.trim_end_matches('/')) else {
        return error_response(&ApiError::path_not_found());
    };
    if let Some(h) = query.get("hash") {
        if h != doc.hash {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
            if let Ok(v) = HeaderValue::from_str(&format!("/openapi/v3/{path}?hash={}", doc.hash)) {
                r.headers_mut().insert("location", v);
            }
            return r;
        }
    }
    let etag = format!("\"{}\"", doc.hash);
    if headers.get("if-none-match").and_then(|v| v.to_str().ok()) == Some(etag.as_str()) {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        return r;
    }
    let mut r = Response::new(Body::from(doc.bytes.clone()));
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        r.headers_mut().insert("etag", v);
    }
    r.headers_mut()
        .insert("vary", HeaderValue::from_static("Accept"));
    if query.get("hash").is_some() {
        r.headers_mut().insert(
            "cache-control",
            HeaderValue::from_static("public, immutable"),
        );
    }
    r
}
