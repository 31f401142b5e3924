//! `Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-*`
//! (upstream `endpoints/filters/impersonation.go`): the requester must be allowed the
//! verb `impersonate` on each `users`, `groups`, `serviceaccounts`, `uids` and
//! `userextras/<key>` it names; the request is then served as that user.

use axum::http::HeaderMap;

use crate::auth::{forbidden, Attributes, Auth, Decision, RequestInfo};
use crate::machinery::user::{UserInfo, ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, ANONYMOUS};
use apimachinery::serviceaccount::{make_group_names, make_username, split_username};
use apimachinery::status::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One thing a request asks to impersonate (upstream builds `ObjectReference`s).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Request {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Request {
    /// Go's `%v` of the `ObjectReference` upstream builds (its error messages show it).
    fn go_value(&self) -> String {
        let (kind, ns, name, api_version, field_path) = match self {
            Request::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Request::User(n) => ("User", "", n.as_str(), "", ""),
            Request::Group(n) => ("Group", "", n.as_str(), "", ""),
            Request::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Request::Uid(u) => ("UID", "", u.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field_path}}}")
    }
}

/// Upstream `unescapeExtraKey`: extra keys are percent-encoded in header names.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

fn requests(headers: &HeaderMap) -> Result<Vec<Request>, ApiError> {
    let mut out = Vec::new();
    let user = headers
        .get(USER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let has_user = !user.is_empty();
    if has_user {
        out.push(match split_username(user) {
            Some((ns, name)) => Request::ServiceAccount {
                namespace: ns.to_string(),
                name: name.to_string(),
            },
            None => Request::User(user.to_string()),
        });
    }
    let mut others = false;
    for g in headers.get_all(GROUP) {
        others = true;
        out.push(Request::Group(g.to_str().unwrap_or("").to_string()));
    }
    let mut extras: Vec<(&str, Vec<String>)> = Vec::new();
    for name in headers.keys() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let values = headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap_or("").to_string())
                .collect();
            extras.push((key, values));
        }
    }
    for (key, values) in extras {
        others = true;
        for value in values {
            out.push(Request::Extra {
                key: unescape(key),
                value,
            });
        }
    }
    let uid = headers.get(UID).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !uid.is_empty() {
        others = true;
        out.push(Request::Uid(uid.to_string()));
    }
    if others && !has_user {
        let list: Vec<String> = out.iter().map(Request::go_value).collect();
        return Err(ApiError::internal(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        )));
    }
    Ok(out)
}

/// The user a request is served as: `user` itself without `Impersonate-*` headers,
/// else the impersonated user once `user` may impersonate every part of it (403
/// otherwise, upstream's message for the first refused part).
pub fn impersonate(auth: &Auth, user: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let reqs = requests(headers)?;
    if reqs.is_empty() {
        return Ok(user);
    }
    let groups_specified = headers.contains_key(GROUP);
    let mut name = String::new();
    let mut groups: Vec<String> = Vec::new();
    let mut uid = String::new();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for r in &reqs {
        let mut info = RequestInfo {
            resource_request: true,
            verb: "impersonate".into(),
            api_version: "v1".into(),
            ..RequestInfo::default()
        };
        match r {
            Request::ServiceAccount { namespace, name: n } => {
                info.resource = "serviceaccounts".into();
                info.namespace = namespace.clone();
                info.name = n.clone();
                name = make_username(namespace, n);
                if !groups_specified {
                    groups = make_group_names(namespace);
                }
            }
            Request::User(n) => {
                info.resource = "users".into();
                info.name = n.clone();
                name = n.clone();
            }
            Request::Group(g) => {
                info.resource = "groups".into();
                info.name = g.clone();
                groups.push(g.clone());
            }
            Request::Extra { key, value } => {
                info.api_group = "authentication.k8s.io".into();
                info.resource = "userextras".into();
                info.subresource = key.clone();
                info.name = value.clone();
                extra.entry(key.clone()).or_default().push(value.clone());
            }
            Request::Uid(u) => {
                info.api_group = "authentication.k8s.io".into();
                info.resource = "uids".into();
                info.name = u.clone();
                uid = u.clone();
            }
        }
        let (decision, reason) = auth.authorizer.authorize(&Attributes {
            user: &user,
            request: &info,
        });
        if decision != Decision::Allow {
            return Err(forbidden(&user, &info, &reason));
        }
    }
    if name != ANONYMOUS {
        if !groups
            .iter()
            .any(|g| g == ALL_AUTHENTICATED || g == ALL_UNAUTHENTICATED)
        {
            groups.push(ALL_AUTHENTICATED.to_string());
        }
    } else if !groups.iter().any(|g| g == ALL_UNAUTHENTICATED) {
        groups.push(ALL_UNAUTHENTICATED.to_string());
    }
    tracing::debug!(user = %user.name, as_user = %name, "impersonating");
    Ok(UserInfo {
        name,
        uid,
        groups,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Authorizer, PrivilegedGroups};
    use axum::http::HeaderValue;
    use std::sync::Arc;

    /// Allows impersonating what upstream's test authorizer allows: members of
    /// `wheel` anything, `sa-impersonater` service accounts, `regular-impersonater`
    /// users, `extra-setter-scopes` the `scopes` extra.
    struct TestAuthorizer;

    impl Authorizer for TestAuthorizer {
        fn authorize(&self, a: &Attributes<'_>) -> (Decision, String) {
            let r = a.request;
            let u = a.user;
            if u.in_group("wheel") && r.verb == "impersonate" {
                return (Decision::Allow, String::new());
            }
            if u.in_group("sa-impersonater") && r.resource == "serviceaccounts" {
                return (Decision::Allow, String::new());
            }
            if u.in_group("regular-impersonater") && r.resource == "users" {
                return (Decision::Allow, String::new());
            }
            if u.name == "extra-setter-scopes"
                && r.resource == "userextras"
                && r.subresource == "scopes"
            {
                return (Decision::Allow, String::new());
            }
            (Decision::NoOpinion, "deny by default".into())
        }
    }

    fn auth() -> Auth {
        Auth {
            authenticator: None,
            anonymous: false,
            authorizer: Arc::new(crate::auth::Union(vec![
                Arc::new(PrivilegedGroups),
                Arc::new(TestAuthorizer),
            ])),
            service_accounts: None,
        }
    }

    fn headers(h: &[(&str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in h {
            m.append(
                axum::http::HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        m
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo::new(name, groups)
    }

    /// upstream impersonation_test.go TestImpersonationFilter
    #[test]
    fn upstreams_cases() {
        let a = auth();
        let run = |u: UserInfo, h: &[(&str, &str)]| impersonate(&a, u, &headers(h));
        // not impersonating
        assert_eq!(run(user("tester", &[]), &[]).unwrap().name, "tester");
        // impersonating-error: groups without a user
        let e = run(user("tester", &[]), &[("Impersonate-Group", "some-group")]).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "Internal error occurred: requested [{Group  some-group    }] without impersonating a user"
        );
        // disallowed user
        let e = run(user("tester", &[]), &[("Impersonate-User", "system:admin")]).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "users \"system:admin\" is forbidden: User \"tester\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope: deny by default"
        );
        // allowed group impersonation
        let u = run(
            user("dev", &["wheel"]),
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "some-group"),
            ],
        )
        .unwrap();
        assert_eq!(u.name, "system:admin");
        assert_eq!(u.groups, ["some-group", "system:authenticated"]);
        // regular impersonater may impersonate users but not groups
        let u = run(
            user("dev", &["regular-impersonater"]),
            &[("Impersonate-User", "tester")],
        )
        .unwrap();
        assert_eq!(u.groups, ["system:authenticated"]);
        assert_eq!(
            run(
                user("dev", &["regular-impersonater"]),
                &[
                    ("Impersonate-User", "tester"),
                    ("Impersonate-Group", "some-group")
                ]
            )
            .unwrap_err()
            .code,
            403
        );
        // extras need their own grant
        let u = run(
            user("extra-setter-scopes", &["regular-impersonater"]),
            &[
                ("Impersonate-User", "tester"),
                ("Impersonate-Extra-scopes", "scope-a"),
                ("Impersonate-Extra-scopes", "scope-b"),
            ],
        )
        .unwrap();
        assert_eq!(u.extra["scopes"], ["scope-a", "scope-b"]);
        let e = run(
            user("dev", &["regular-impersonater"]),
            &[
                ("Impersonate-User", "tester"),
                ("Impersonate-Extra-foo", "bar"),
            ],
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "userextras.authentication.k8s.io \"bar\" is forbidden: User \"dev\" cannot impersonate resource \"userextras/foo\" in API group \"authentication.k8s.io\" at the cluster scope: deny by default"
        );
        // escaped extra keys
        let u = run(
            user("dev", &["wheel"]),
            &[
                ("Impersonate-User", "tester"),
                ("Impersonate-Extra-example.com%2fkey", "v"),
            ],
        )
        .unwrap();
        assert_eq!(u.extra["example.com/key"], ["v"]);
        // service accounts get their groups unless groups are given
        let u = run(
            user("dev", &["sa-impersonater"]),
            &[("Impersonate-User", "system:serviceaccount:foo:default")],
        )
        .unwrap();
        assert_eq!(u.name, "system:serviceaccount:foo:default");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:foo",
                "system:authenticated"
            ]
        );
        let e = run(
            user("dev", &["regular-impersonater"]),
            &[("Impersonate-User", "system:serviceaccount:foo:default")],
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "serviceaccounts \"default\" is forbidden: User \"dev\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"foo\": deny by default"
        );
        // anonymous gets system:unauthenticated; explicit system:authenticated is kept
        let u = run(
            user("dev", &["wheel"]),
            &[("Impersonate-User", "system:anonymous")],
        )
        .unwrap();
        assert_eq!(u.groups, ["system:unauthenticated"]);
        let u = run(
            user("dev", &["wheel"]),
            &[
                ("Impersonate-User", "x"),
                ("Impersonate-Group", "system:authenticated"),
            ],
        )
        .unwrap();
        assert_eq!(u.groups, ["system:authenticated"]);
        // uid
        let u = run(
            user("dev", &["wheel"]),
            &[("Impersonate-User", "x"), ("Impersonate-Uid", "1234")],
        )
        .unwrap();
        assert_eq!(u.uid, "1234");
        // system:masters may impersonate anyone
        let u = run(
            user("admin", &["system:masters"]),
            &[("Impersonate-User", "jane"), ("Impersonate-Group", "g")],
        )
        .unwrap();
        assert_eq!((u.name.as_str(), u.groups.len()), ("jane", 2));
    }
}
