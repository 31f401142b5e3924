//! What a request asks, parsed from its method, path and query alone (upstream
//! `k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory`): the verb, API group and
//! version, namespace, resource, subresource and name an authorizer decides on.

use axum::http::Method;

/// A parsed request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// Whether the path names an API resource (`/api/v1/...`, `/apis/g/v/...`); `false`
    /// for everything else (`/healthz`, `/version`, `/apis/apps`), authorized by path.
    pub resource_request: bool,
    /// The URL path.
    pub path: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`; for non-resource requests the lower-cased method.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    /// API group (`""`: core).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Namespace (`""`: cluster scope or all namespaces).
    pub namespace: String,
    /// Resource (plural).
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Object name.
    pub name: String,
    /// The path segments from the resource on.
    pub parts: Vec<String>,
}

const SPECIAL_VERBS: &[&str] = &["proxy", "watch"];
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// The value of `key` in a raw query string (percent-decoded).
fn query_param(query: Option<&str>, key: &str) -> Option<String> {
    query?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (percent_decode(k) == key).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x`), when it
/// requires one and the value is a valid path segment.
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let term = term.trim();
        let (k, v) = term
            .split_once("==")
            .or_else(|| term.split_once('='))
            .filter(|(k, _)| !k.ends_with('!'))?;
        (k.trim() == "metadata.name"
            && !v.is_empty()
            && v != "."
            && v != ".."
            && !v.contains('/')
            && !v.contains('%'))
        .then(|| v.to_string())
    })
}

/// Parse a request as upstream's `RequestInfoFactory.NewRequestInfo` does.
/// `Err` for malformed special-verb paths (`/api/v1/watch` with nothing after it).
pub fn parse(method: &Method, path: &str, query: Option<&str>) -> Result<RequestInfo, String> {
    let mut info = RequestInfo {
        path: path.to_string(),
        verb: method.as_str().to_ascii_lowercase(),
        ..RequestInfo::default()
    };
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let segs: Vec<&str> = if segs == [""] { Vec::new() } else { segs };
    if segs.len() < 3 || !matches!(segs[0], "api" | "apis") {
        return Ok(info);
    }
    info.api_prefix = segs[0].to_string();
    let mut cur: &[&str] = &segs[1..];
    if info.api_prefix != "api" {
        // one part (the prefix) is consumed: a group needs group/version/resource
        if cur.len() < 3 {
            return Ok(info);
        }
        info.api_group = cur[0].to_string();
        cur = &cur[1..];
    }
    info.resource_request = true;
    info.api_version = cur[0].to_string();
    cur = &cur[1..];
    if SPECIAL_VERBS.contains(&cur[0]) {
        if cur.len() < 2 {
            return Err(format!(
                "unable to determine kind and namespace from url, {path}"
            ));
        }
        info.verb = cur[0].to_string();
        cur = &cur[1..];
    } else {
        info.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
    }
    if cur[0] == "namespaces" && cur.len() > 1 {
        info.namespace = cur[1].to_string();
        if cur.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&cur[2]) {
            cur = &cur[2..];
        }
    }
    info.parts = cur.iter().map(|s| s.to_string()).collect();
    if info.parts.len() >= 3 && info.verb != "proxy" {
        info.subresource = info.parts[2].clone();
    }
    if info.parts.len() >= 2 {
        info.name = info.parts[1].clone();
    }
    if !info.parts.is_empty() {
        info.resource = info.parts[0].clone();
    }
    if info.name.is_empty() && info.verb == "get" {
        let watch = query_param(query, "watch")
            .is_some_and(|v| matches!(v.as_str(), "true" | "1" | "True" | "TRUE" | "t" | "T"));
        info.verb = if watch { "watch" } else { "list" }.to_string();
        if let Some(name) = query_param(query, "fieldSelector").and_then(|s| exact_name(&s)) {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".to_string();
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(method: Method, path: &str) -> RequestInfo {
        let (path, query) = match path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path, None),
        };
        parse(&method, path, query).unwrap()
    }

    /// Upstream `TestGetAPIRequestInfo`'s successful cases: method, path, then verb,
    /// prefix, group, version, namespace, resource, subresource, name, parts.
    #[test]
    #[allow(clippy::type_complexity)]
    fn upstream_request_info_table() {
        /// method, path, verb, prefix, group, version, namespace, resource, subresource,
        /// name, parts
        type Case = (
            Method,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static [&'static str],
        );
        #[rustfmt::skip]
        let cases: &[Case] = &[
            (Method::GET, "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
            (Method::GET, "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", &["namespaces", "other"]),
            (Method::GET, "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::HEAD, "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::GET, "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            (Method::HEAD, "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::GET, "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // special verbs
            (Method::GET, "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::GET, "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo", "subpath", "not", "a", "subresource"]),
            (Method::GET, "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            (Method::GET, "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // subresource identification
            (Method::GET, "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", &["pods", "foo", "status"]),
            (Method::GET, "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", &["pods", "foo", "proxy", "subpath"]),
            (Method::PUT, "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", &["namespaces", "other", "finalize"]),
            (Method::PUT, "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", &["namespaces", "other", "status"]),
            // verb identification
            (Method::PATCH, "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::DELETE, "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
            (Method::POST, "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            // deletecollection verb identification
            (Method::DELETE, "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", &["nodes"]),
            (Method::DELETE, "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
            (Method::DELETE, "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", &["pods"]),
            (Method::DELETE, "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
            // api group identification
            (Method::POST, "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
            // api version identification
            (Method::POST, "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions", "v1beta3", "other", "pods", "", "", &["pods"]),
        ];
        for (m, path, verb, prefix, group, version, ns, resource, sub, name, parts) in cases {
            let got = p(m.clone(), path);
            assert!(got.resource_request, "{m} {path}");
            assert_eq!(
                (
                    got.verb.as_str(),
                    got.api_prefix.as_str(),
                    got.api_group.as_str(),
                    got.api_version.as_str(),
                    got.namespace.as_str(),
                    got.resource.as_str(),
                    got.subresource.as_str(),
                    got.name.as_str(),
                ),
                (*verb, *prefix, *group, *version, *ns, *resource, *sub, *name),
                "{m} {path}"
            );
            assert_eq!(
                got.parts,
                parts.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                "{m} {path}"
            );
        }
    }

    /// Upstream `TestGetNonAPIRequestInfo`: which paths are resource requests.
    #[test]
    fn upstream_non_resource_table() {
        let cases = [
            ("/api/v1/namespaces/other/pods/foo", true),
            ("/api", false),
            ("/api/v1", false),
            ("/apis", false),
            ("/apis/foo", false),
            ("/apis/foo/v1", false),
            ("/apis/foo/v1/bar", true),
            ("/other", false),
            ("/healthz", false),
            ("/version", false),
        ];
        for (path, resource) in cases {
            let got = p(Method::GET, path);
            assert_eq!(got.resource_request, resource, "{path}");
            if !resource {
                assert_eq!(got.verb, "get", "{path}");
                assert_eq!(got.path, path);
            }
        }
        assert_eq!(p(Method::POST, "/healthz").verb, "post");
    }

    /// Upstream `TestGetAPIRequestInfo`'s error cases.
    #[test]
    fn malformed_special_verbs() {
        for path in ["/api/v1/watch", "/api/v1/proxy"] {
            assert!(parse(&Method::GET, path, None).is_err(), "{path}");
        }
    }

    /// Upstream `TestFieldSelectorParsing`: a `metadata.name` selector names the object.
    #[test]
    fn field_selector_names_the_object() {
        let cases = [
            (
                "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dfoo",
                "list",
                "foo",
            ),
            (
                "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3D%3Dfoo",
                "list",
                "foo",
            ),
            (
                "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%21%3Dfoo",
                "list",
                "",
            ),
            (
                "/api/v1/namespaces/ns/pods?watch=true&fieldSelector=metadata.name%3Dfoo",
                "watch",
                "foo",
            ),
            (
                "/api/v1/namespaces/ns/pods?fieldSelector=spec.nodeName%3Dn1",
                "list",
                "",
            ),
            (
                "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Da%2Fb",
                "list",
                "",
            ),
        ];
        for (path, verb, name) in cases {
            let got = p(Method::GET, path);
            assert_eq!(
                (got.verb.as_str(), got.name.as_str()),
                (verb, name),
                "{path}"
            );
        }
    }
}
