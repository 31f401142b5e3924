//! Who makes a request (upstream `k8s.io/apiserver/pkg/authentication/user`), and the
//! identity of the request being served, kept for its task as Go keeps it in the
//! request's context.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// The group of cluster administrators: every request of a member is allowed.
pub const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
/// Every authenticated user is in this group.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// Every anonymous request is in this group.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user name of anonymous requests.
pub const ANONYMOUS: &str = "system:anonymous";
/// The user the API server's own writes (bootstrap objects) are made as.
pub const APISERVER_USER: &str = "system:apiserver";

/// An authenticated identity: name, uid, groups and extra attributes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name (`system:serviceaccount:ns:name`, a certificate's CN, ...).
    pub name: String,
    /// A unique id, when the authenticator knows one (a service account's UID).
    pub uid: String,
    /// Groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes (a bound token's pod name, credential id, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with `name` in `groups`.
    pub fn new(name: impl Into<String>, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    /// The API server itself (bootstrap objects, in-process writes), in `system:masters`.
    pub fn apiserver() -> UserInfo {
        UserInfo::new(APISERVER_USER, &[SYSTEM_PRIVILEGED_GROUP])
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

tokio::task_local! {
    static CURRENT: Arc<UserInfo>;
}

/// The user of the request this task serves, when the HTTP layer set one (requests
/// that did not come through it, such as the server's own bootstrap writes, have none).
pub fn current() -> Option<Arc<UserInfo>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// Run `f` as a request of `user`: [`current`] answers `user` inside it.
pub async fn scope<F: Future>(user: Arc<UserInfo>, f: F) -> F::Output {
    CURRENT.scope(user, f).await
}
