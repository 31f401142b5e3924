//! Request targets and options: what a URL names and what its query asks for.
//!
//! `/api/v1/namespaces/ns/pods/name/status?dryRun=All` becomes a [`Target`] (resource,
//! namespace, name, subresource) and typed options ([`ListOptions`], [`WriteOptions`]).
//! Option combinations upstream forbids are rejected here with upstream's messages.

use crate::registry::catalog::{Catalog, ResourceDef, Subresource};
use apimachinery::status::{ApiError, ApiResult, Cause};

/// What a resource URL names.
#[derive(Debug)]
pub struct Target {
    /// The resource.
    pub resource: &'static ResourceDef,
    /// Namespace from the URL (namespaced resources only; `None` = all namespaces).
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource.
    pub subresource: Option<Subresource>,
    /// `/api/v1/watch/...` legacy watch path.
    pub legacy_watch: bool,
}

/// What a path is.
#[derive(Debug)]
pub enum Route {
    /// A resource, collection or subresource.
    Resource(Target),
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`.
    ResourceList(String, String),
}

/// Parse a request path against the built-in catalogue.
#[cfg(test)]
pub fn route(path: &str) -> ApiResult<Route> {
    route_in(Catalog::builtin(), path)
}

/// Parse a request path against `catalog` (built-in kinds and custom resources).
pub fn route_in(catalog: &Catalog, path: &str) -> ApiResult<Route> {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        ["api"] => return Ok(Route::CoreVersions),
        ["apis"] => return Ok(Route::Groups),
        ["apis", g] => return Ok(Route::Group((*g).to_string())),
        ["api", v, rest @ ..] => ("", v, rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Err(ApiError::path_not_found()),
    };
    if catalog.versions(group).is_empty() || !catalog.versions(group).contains(&version) {
        return Err(ApiError::path_not_found());
    }
    if rest.is_empty() {
        return Ok(Route::ResourceList(group.to_string(), version.to_string()));
    }
    let (legacy_watch, rest) = match rest {
        ["watch", r @ ..] if !r.is_empty() => (true, r),
        _ => (false, rest),
    };
    let lookup = |plural: &str| {
        catalog
            .lookup(group, version, plural)
            .ok_or_else(ApiError::path_not_found)
    };
    let (resource, namespace, name, sub) = match rest {
        // namespaced collection / object / subresource
        ["namespaces", ns, plural, tail @ ..]
            if !matches!(*plural, "status" | "finalize") || !tail.is_empty() =>
        {
            let r = lookup(plural)?;
            if !r.namespaced {
                return Err(ApiError::path_not_found());
            }
            match tail {
                [] => (r, Some(*ns), None, None),
                [name] => (r, Some(*ns), Some(*name), None),
                [name, sub] => (r, Some(*ns), Some(*name), Some(*sub)),
                _ => return Err(ApiError::path_not_found()),
            }
        }
        [plural] => (lookup(plural)?, None, None, None),
        [plural, name] => {
            let r = lookup(plural)?;
            if r.namespaced {
                return Err(ApiError::path_not_found());
            }
            (r, None, Some(*name), None)
        }
        [plural, name, sub] => {
            let r = lookup(plural)?;
            if r.namespaced {
                return Err(ApiError::path_not_found());
            }
            (r, None, Some(*name), Some(*sub))
        }
        _ => return Err(ApiError::path_not_found()),
    };
    let subresource = match sub {
        None => None,
        Some(s) => {
            let found = resource
                .subresources
                .iter()
                .copied()
                .find(|x| x.name() == s);
            Some(found.ok_or_else(ApiError::path_not_found)?)
        }
    };
    Ok(Route::Resource(Target {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource,
        legacy_watch,
    }))
}

/// Parsed query string.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parse `a=b&c=d`.
    pub fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
            .unwrap_or_default();
        Query { pairs }
    }

    /// Every value of a repeated parameter (`command=a&command=b`), in order.
    pub fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Last value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter (`1`, `true`).
    pub fn flag(&self, key: &str) -> ApiResult<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some("1") | Some("true") | Some("True") => Ok(Some(true)),
            Some("0") | Some("false") | Some("False") | Some("") => Ok(Some(false)),
            Some(v) => Err(ApiError::bad_request(format!(
                "invalid value for {key}: strconv.ParseBool: parsing \"{v}\": invalid syntax"
            ))),
        }
    }

    /// An integer parameter.
    pub fn int(&self, key: &str) -> ApiResult<Option<i64>> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for {key}: strconv.ParseInt: parsing \"{v}\": invalid syntax"
                ))
            }),
        }
    }
}

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RvMatch {
    /// `NotOlderThan`.
    NotOlderThan,
    /// `Exact`.
    Exact,
}

/// Options of LIST and WATCH.
#[derive(Debug, Default)]
pub struct ListOptions {
    /// `watch`.
    pub watch: bool,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub rv_match: Option<RvMatch>,
    /// `limit`.
    pub limit: Option<i64>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `allowWatchBookmarks`.
    pub allow_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<i64>,
}

fn forbidden_opt(field: &str, msg: &str) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        vec![Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {msg}"),
            field: field.into(),
        }],
    )
}

impl ListOptions {
    /// Parse and check list/watch options the way upstream's `ValidateListOptions` does.
    pub fn parse(q: &Query, legacy_watch: bool) -> ApiResult<ListOptions> {
        let rv_match = match q.get("resourceVersionMatch") {
            None | Some("") => None,
            Some("NotOlderThan") => Some(RvMatch::NotOlderThan),
            Some("Exact") => Some(RvMatch::Exact),
            Some(other) => {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "ListOptions",
                    "",
                    vec![Cause {
                        reason: "FieldValueNotSupported".into(),
                        message: format!("Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
                        field: "resourceVersionMatch".into(),
                    }],
                ))
            }
        };
        let o = ListOptions {
            watch: legacy_watch || q.flag("watch")?.unwrap_or(false),
            label_selector: q
                .get("labelSelector")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            field_selector: q
                .get("fieldSelector")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            resource_version: q
                .get("resourceVersion")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            rv_match,
            limit: q.int("limit")?.filter(|l| *l > 0),
            continue_token: q
                .get("continue")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            allow_bookmarks: q.flag("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: q.flag("sendInitialEvents")?,
            timeout_seconds: q.int("timeoutSeconds")?,
        };
        if let Some(sie) = o.send_initial_events {
            if !o.watch {
                return Err(forbidden_opt(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
            if o.rv_match != Some(RvMatch::NotOlderThan) {
                return Err(forbidden_opt(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            let _ = sie;
        } else if o.watch && o.rv_match.is_some() {
            return Err(forbidden_opt(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if o.rv_match.is_some() && o.resource_version.is_none() && o.send_initial_events.is_none() {
            return Err(forbidden_opt(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if o.rv_match.is_some() && o.continue_token.is_some() {
            return Err(forbidden_opt(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if o.rv_match == Some(RvMatch::Exact) && o.resource_version.as_deref() == Some("0") {
            return Err(forbidden_opt(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if o.continue_token.is_some() && o.resource_version.as_deref().is_some_and(|r| r != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(o)
    }

    /// The resourceVersion as a number (`None` when unset); 400 when not a number.
    pub fn rv_number(&self) -> ApiResult<Option<u64>> {
        parse_rv(self.resource_version.as_deref())
    }
}

/// Parse a resourceVersion string.
pub fn parse_rv(rv: Option<&str>) -> ApiResult<Option<u64>> {
    match rv {
        None | Some("") => Ok(None),
        Some(s) => s
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}"))),
    }
}

/// `fieldValidation`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (the default).
    #[default]
    Warn,
    /// Reject unknown fields.
    Strict,
}

/// Options of create, update, patch and delete.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (apply).
    pub force: bool,
    /// Set by the server: the write is a server-side apply whose managed fields are
    /// already computed.
    pub applied: bool,
}

impl WriteOptions {
    /// Parse write options.
    pub fn parse(q: &Query) -> ApiResult<WriteOptions> {
        let dry_run = match q.get("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "Invalid dry run value: {other}: supported values: \"All\""
                )))
            }
        };
        let field_validation = match q.get("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got \"{other}\""
                )))
            }
        };
        Ok(WriteOptions {
            dry_run,
            field_validation,
            field_manager: q.get("fieldManager").map(str::to_string),
            applied: false,
            force: q.flag("force")?.unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(p: &str) -> Target {
        match route(p) {
            Ok(Route::Resource(t)) => t,
            other => panic!("{p}: {other:?}"),
        }
    }

    #[test]
    fn routes() {
        let t = target("/api/v1/namespaces/default/pods/p/status");
        assert_eq!(t.resource.plural, "pods");
        assert_eq!(t.namespace.as_deref(), Some("default"));
        assert_eq!(t.name.as_deref(), Some("p"));
        assert_eq!(t.subresource, Some(Subresource::Status));
        let t = target("/api/v1/namespaces/demo");
        assert_eq!(t.resource.plural, "namespaces");
        assert_eq!(t.name.as_deref(), Some("demo"));
        let t = target("/api/v1/namespaces/demo/finalize");
        assert_eq!(t.subresource, Some(Subresource::Finalize));
        let t = target("/apis/apps/v1/deployments");
        assert!(t.namespace.is_none() && t.name.is_none());
        let t = target("/api/v1/watch/namespaces/x/configmaps");
        assert!(t.legacy_watch);
        assert!(route("/api/v1/namespaces/x/nodes").is_err());
        assert!(route("/apis/apps/v9/deployments").is_err());
        assert!(route("/api/v1/namespaces/x/pods/p/proxy").is_err());
        let t = target("/api/v1/namespaces/x/pods/p/exec");
        assert_eq!(t.subresource, Some(Subresource::Exec));
        let t = target("/api/v1/namespaces/x/pods/p/log");
        assert_eq!(t.subresource, Some(Subresource::Log));
        assert!(matches!(
            route("/apis/apps/v1"),
            Ok(Route::ResourceList(..))
        ));
    }

    #[test]
    fn forbidden_list_options() {
        let e = ListOptions::parse(
            &Query::parse(Some("resourceVersionMatch=NotOlderThan")),
            false,
        )
        .expect_err("forbidden");
        assert_eq!(e.message, "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided");
        let e = ListOptions::parse(&Query::parse(Some("sendInitialEvents=true")), false)
            .expect_err("forbidden");
        assert_eq!(e.message, "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
        assert!(ListOptions::parse(
            &Query::parse(Some(
                "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            )),
            false
        )
        .is_ok());
        assert!(ListOptions::parse(
            &Query::parse(Some("resourceVersion=0&resourceVersionMatch=Exact")),
            false
        )
        .is_err());
    }
}
