//! Keeping the RBAC bootstrap policy on start (upstream `pkg/registry/rbac/rest/
//! storage_rbac.go`'s `rbac/bootstrap-roles` post-start hook): every ClusterRole,
//! ClusterRoleBinding, Role and RoleBinding of [`crate::auth::rbac::bootstrap`] is
//! reconciled with what is stored ([`crate::auth::rbac::bootstrap::reconcile`]) and the
//! difference written through the ordinary write path, as the API server itself
//! (`system:apiserver` in `system:masters`, field manager `kube-apiserver`).

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method};
use serde_json::Value;

use crate::auth::rbac::bootstrap::reconcile::{reconcile_binding, reconcile_role, Action};
use crate::auth::rbac::bootstrap::{bootstrap_policy, RBAC_GROUP};
use crate::endpoints::request::{Query, Target};
use crate::endpoints::Api;
use crate::machinery::user::{self, UserInfo};
use crate::registry::catalog::Catalog;

/// Create or update the bootstrap policy's objects (never removing a rule or subject;
/// objects annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` are left as
/// they are).
pub(crate) async fn reconcile(api: &Arc<Api>) {
    let policy = bootstrap_policy();
    user::scope(Arc::new(UserInfo::apiserver()), async {
        for role in &policy.cluster_roles {
            apply(api, "clusterroles", role, reconcile_role).await;
        }
        for binding in &policy.cluster_role_bindings {
            apply(api, "clusterrolebindings", binding, reconcile_binding).await;
        }
        for role in &policy.roles {
            apply(api, "roles", role, reconcile_role).await;
        }
        for binding in &policy.role_bindings {
            apply(api, "rolebindings", binding, reconcile_binding).await;
        }
    })
    .await;
}

async fn apply(
    api: &Arc<Api>,
    plural: &str,
    expected: &Value,
    reconcile: fn(Option<&Value>, &Value) -> Action,
) {
    let c = Catalog::builtin();
    let Some(def) = c.lookup(RBAC_GROUP, "v1", plural) else {
        return;
    };
    let name = expected["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = expected["metadata"]["namespace"].as_str();
    let key = match namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    };
    let existing = api
        .store
        .get(&def.storage_key(), &key)
        .and_then(|o| o.value().ok());
    let target = |name: Option<&str>| Target {
        resource: def,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
        subresource: None,
        legacy_watch: false,
    };
    let (method, object, named) = match reconcile(existing.as_ref(), expected) {
        Action::None => return,
        Action::Protected => {
            tracing::info!(%plural, %key, "bootstrap policy object is not auto-updated (rbac.authorization.kubernetes.io/autoupdate=false)");
            return;
        }
        Action::Create(o) => (Method::POST, o, false),
        Action::Update(o) => (Method::PUT, o, true),
        Action::Recreate(o) => {
            write(api, Method::DELETE, target(Some(name)), None, plural, &key).await;
            (Method::POST, o, false)
        }
    };
    let t = target(named.then_some(name));
    write(api, method, t, Some(object), plural, &key).await;
}

async fn write(
    api: &Arc<Api>,
    method: Method,
    target: Target,
    body: Option<Value>,
    plural: &str,
    key: &str,
) {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    headers.insert(
        "user-agent",
        HeaderValue::from_static("kube-apiserver/v1.36.0"),
    );
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    match api
        .serve(&method, target, &Query::default(), &headers, body.into())
        .await
    {
        Ok(_) => tracing::debug!(%method, %plural, %key, "bootstrap policy"),
        Err(e) => tracing::warn!(%method, %plural, %key, error = %e, "bootstrap policy"),
    }
}
