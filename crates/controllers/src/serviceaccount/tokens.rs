//! The legacy token controller: the data of `kubernetes.io/service-account-token`
//! Secrets.
//!
//! After kube-controller-manager's `serviceaccount-token-controller`
//! (kubernetes/kubernetes `pkg/controller/serviceaccount/tokens_controller.go`), which
//! runs only when `--service-account-private-key-file` is given and, as upstream, with
//! the controller manager's own (root) client even under
//! `--use-service-account-credentials`. Two queues, as upstream:
//!
//! - **service accounts** (key: namespace, name, UID): when the account is gone from the
//!   cache (or has another UID now), its token Secrets are deleted (UID precondition);
//! - **token Secrets** (key: namespace, name, UID, the account's name and UID from the
//!   Secret's annotations): a Secret whose account does not exist (cache, then a live
//!   read; a different UID counts as missing) is deleted; otherwise missing `token`
//!   (a legacy JWT signed with the private key), `namespace`, or a `ca.crt` that differs
//!   from `--root-ca-file` are filled in on a fresh read of the Secret, skipped when the
//!   cached copy is stale (the update event brings it back), and the account's name and
//!   UID annotations set; a deleted token Secret is removed from its account's
//!   `secrets` list (retried on conflicts with upstream's `RemoveTokenBackoff`).
//!
//! Retries are upstream's, but for conflicts: NotFound answers are not retried, other
//! API failures are requeued with backoff at most ten times (`MaxRetries`), failures to
//! read the cache or to sign are not. Upstream does not retry a 409 either, trusting that
//! whoever changed the Secret causes an event; a 409 nobody else caused (an admission
//! webhook's, or a refused write under the fault harness) then leaves the token unfilled
//! or the orphan undeleted for good, so a conflict is retried here: the next sync reads
//! the Secret again and skips it while the cache is behind.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::cache::{Cache, Change};
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::ObjectKey;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, PostParams};
use tokio_util::sync::CancellationToken;

/// The Secret type this controller fills (`v1.SecretTypeServiceAccountToken`).
pub const SECRET_TYPE: &str = "kubernetes.io/service-account-token";
/// Annotation naming the account (`v1.ServiceAccountNameKey`).
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";
/// Annotation holding the account's UID (`v1.ServiceAccountUIDKey`).
pub const SERVICE_ACCOUNT_UID_KEY: &str = "kubernetes.io/service-account.uid";
/// Data key of the token (`v1.ServiceAccountTokenKey`).
pub const TOKEN_KEY: &str = "token";
/// Data key of the namespace (`v1.ServiceAccountNamespaceKey`).
pub const NAMESPACE_KEY: &str = "namespace";
/// Data key of the root CA (`v1.ServiceAccountRootCAKey`).
pub const ROOT_CA_KEY: &str = "ca.crt";

/// Retries of one key before it is dropped (upstream's default `MaxRetries`).
pub const MAX_RETRIES: u32 = 10;

/// Makes the legacy token of an account kept in a Secret (upstream
/// `TokenGenerator.GenerateToken(LegacyClaims(sa, secret))`).
pub type TokenGenerator =
    Arc<dyn Fn(&ServiceAccount, &Secret) -> Result<String, String> + Send + Sync>;

/// What the controller needs besides the cache.
#[derive(Clone)]
pub struct TokensControllerOptions {
    /// Signs the tokens.
    pub generator: TokenGenerator,
    /// `--root-ca-file` (or the client configuration's CA), put in `ca.crt`.
    pub root_ca: Option<Vec<u8>>,
    /// Workers per queue (`--concurrent-serviceaccount-token-syncs`, 5).
    pub workers: usize,
}

/// Service account queue key (upstream `serviceAccountQueueKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceAccountKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

impl std::fmt::Display for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ({})", self.namespace, self.name, self.uid)
    }
}

/// Secret queue key (upstream `secretQueueKey`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SecretKey {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// The account the Secret names.
    pub sa_name: String,
    /// The account's UID the Secret records (empty when it records none).
    pub sa_uid: String,
}

impl std::fmt::Display for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} ({})", self.namespace, self.name, self.uid)
    }
}

fn annotation<'a>(s: &'a Secret, key: &str) -> &'a str {
    s.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
        .unwrap_or("")
}

/// The key of an account (upstream `makeServiceAccountKey`); `None` when it lacks a
/// namespace, name or UID (upstream `parseServiceAccountKey` refuses those).
pub fn service_account_key(sa: &ServiceAccount) -> Option<ServiceAccountKey> {
    let key = ServiceAccountKey {
        namespace: sa.metadata.namespace.clone().unwrap_or_default(),
        name: sa.metadata.name.clone().unwrap_or_default(),
        uid: sa.metadata.uid.clone().unwrap_or_default(),
    };
    (!key.namespace.is_empty() && !key.name.is_empty() && !key.uid.is_empty()).then_some(key)
}

/// The key of a token Secret (upstream `makeSecretQueueKey`); `None` when it lacks a
/// namespace, name, UID or account name (upstream `parseSecretQueueKey`).
pub fn secret_key(s: &Secret) -> Option<SecretKey> {
    let key = SecretKey {
        namespace: s.metadata.namespace.clone().unwrap_or_default(),
        name: s.metadata.name.clone().unwrap_or_default(),
        uid: s.metadata.uid.clone().unwrap_or_default(),
        sa_name: annotation(s, SERVICE_ACCOUNT_NAME_KEY).to_string(),
        sa_uid: annotation(s, SERVICE_ACCOUNT_UID_KEY).to_string(),
    };
    (!key.namespace.is_empty()
        && !key.name.is_empty()
        && !key.uid.is_empty()
        && !key.sa_name.is_empty())
    .then_some(key)
}

/// Whether `secret` is a token of the account `name` with UID `uid` (upstream
/// `serviceaccount.IsServiceAccountToken`: the type, the name annotation, and the UID
/// annotation when it has one).
pub fn is_service_account_token(secret: &Secret, name: &str, uid: &str) -> bool {
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return false;
    }
    let sa_uid = annotation(secret, SERVICE_ACCOUNT_UID_KEY);
    annotation(secret, SERVICE_ACCOUNT_NAME_KEY) == name && (sa_uid.is_empty() || sa_uid == uid)
}

/// What a token Secret lacks: (`ca.crt` differs from the root CA, `namespace` empty,
/// `token` empty) (upstream `secretUpdateNeeded`).
pub fn update_needed(secret: &Secret, root_ca: Option<&[u8]>) -> (bool, bool, bool) {
    let data = secret.data.as_ref();
    let value = |k: &str| data.and_then(|d| d.get(k)).map(|b| b.0.as_slice());
    let needs_ca = root_ca.is_some_and(|ca| !ca.is_empty() && value(ROOT_CA_KEY) != Some(ca));
    let needs_namespace = value(NAMESPACE_KEY).is_none_or(<[u8]>::is_empty);
    let needs_token = value(TOKEN_KEY).is_none_or(<[u8]>::is_empty);
    (needs_ca, needs_namespace, needs_token)
}

/// Whether the UID `want` (empty: any) matches `have`.
fn uid_matches(want: &str, have: Option<&str>) -> bool {
    want.is_empty() || Some(want) == have
}

/// Does a failed call warrant a retry (everything but NotFound: see the module's note on
/// conflicts)?
fn retriable(e: &kube::Error) -> bool {
    !is_not_found(e)
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// The work both queues share.
struct Tokens {
    cache: Arc<Cache>,
    kube: kube::Client,
    generator: TokenGenerator,
    root_ca: Option<Vec<u8>>,
}

/// Upstream `retryOrForget`: requeue with backoff while under [`MAX_RETRIES`].
fn retry_or_forget(ctx: &Context, retry: bool, error: Option<String>) -> ReconcileResult {
    if let Some(e) = &error {
        tracing::error!(controller = %ctx.controller, error = %e, "syncing a token");
    }
    if retry && ctx.retries < MAX_RETRIES {
        return Err(ReconcileError::msg(
            error.unwrap_or_else(|| "retrying".to_string()),
        ));
    }
    Ok(Action::Done)
}

impl Tokens {
    fn secrets(&self, ns: &str) -> Api<Secret> {
        Api::namespaced(self.kube.clone(), ns)
    }

    fn accounts(&self, ns: &str) -> Api<ServiceAccount> {
        Api::namespaced(self.kube.clone(), ns)
    }

    /// Upstream `getServiceAccount`: the cached account with a matching UID, else (when
    /// `live`) the server's.
    async fn service_account(
        &self,
        ns: &str,
        name: &str,
        uid: &str,
        live: bool,
    ) -> Result<Option<ServiceAccount>, kube::Error> {
        if let Some(sa) = self
            .cache
            .get::<ServiceAccount>(&ObjectKey::namespaced(ns, name))
            .await
        {
            if uid_matches(uid, sa.metadata.uid.as_deref()) {
                return Ok(Some((*sa).clone()));
            }
        }
        if !live {
            return Ok(None);
        }
        match self.accounts(ns).get(name).await {
            Ok(sa) if uid_matches(uid, sa.metadata.uid.as_deref()) => Ok(Some(sa)),
            Ok(_) => Ok(None),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Upstream `deleteToken`: (retry, error).
    async fn delete_token(&self, ns: &str, name: &str, uid: &str) -> (bool, Option<String>) {
        let mut params = DeleteParams::default();
        if !uid.is_empty() {
            params.preconditions = Some(kube::api::Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            });
        }
        match self.secrets(ns).delete(name, &params).await {
            Ok(_) => (false, None),
            Err(e) if !retriable(&e) => (false, None),
            Err(e) => (true, Some(format!("deleting token {ns}/{name}: {e}"))),
        }
    }

    async fn sync_service_account(&self, key: &ServiceAccountKey) -> (bool, Option<String>) {
        match self
            .service_account(&key.namespace, &key.name, &key.uid, false)
            .await
        {
            Err(e) => (true, Some(e.to_string())),
            Ok(Some(_)) => (false, None),
            Ok(None) => {
                // the account is gone: delete its tokens
                let secrets = self
                    .cache
                    .informer::<Secret>()
                    .store()
                    .list_namespace(&key.namespace);
                let mut retry = false;
                let mut errors = Vec::new();
                for s in secrets
                    .iter()
                    .filter(|s| is_service_account_token(s, &key.name, &key.uid))
                {
                    let (r, e) = self
                        .delete_token(
                            &key.namespace,
                            s.metadata.name.as_deref().unwrap_or(""),
                            s.metadata.uid.as_deref().unwrap_or(""),
                        )
                        .await;
                    retry |= r;
                    errors.extend(e);
                }
                (retry, (!errors.is_empty()).then(|| errors.join("; ")))
            }
        }
    }

    async fn sync_secret(&self, key: &SecretKey) -> (bool, Option<String>) {
        let cached = self
            .cache
            .get::<Secret>(&ObjectKey::namespaced(&key.namespace, &key.name))
            .await
            .filter(|s| uid_matches(&key.uid, s.metadata.uid.as_deref()));
        let Some(secret) = cached else {
            // the Secret is gone: drop it from its account's list
            if let Ok(Some(_)) = self
                .service_account(&key.namespace, &key.sa_name, &key.sa_uid, false)
                .await
            {
                if let Err(e) = self.remove_reference_retrying(key).await {
                    return (false, Some(e.to_string()));
                }
            }
            return (false, None);
        };
        match self
            .service_account(&key.namespace, &key.sa_name, &key.sa_uid, true)
            .await
        {
            Err(e) => (true, Some(e.to_string())),
            Ok(None) => self.delete_token(&key.namespace, &key.name, &key.uid).await,
            Ok(Some(sa)) => self.generate_token_if_needed(&sa, &secret).await,
        }
    }

    /// Upstream `generateTokenIfNeeded`: (retry, error).
    async fn generate_token_if_needed(
        &self,
        sa: &ServiceAccount,
        cached: &Secret,
    ) -> (bool, Option<String>) {
        let root_ca = self.root_ca.as_deref();
        if update_needed(cached, root_ca) == (false, false, false) {
            return (false, None);
        }
        let ns = cached.metadata.namespace.as_deref().unwrap_or("");
        let name = cached.metadata.name.as_deref().unwrap_or("");
        let api = self.secrets(ns);
        let mut live = match api.get(name).await {
            Ok(s) => s,
            Err(e) => return (!is_not_found(&e), Some(e.to_string())),
        };
        if live.metadata.resource_version != cached.metadata.resource_version {
            // our view is stale: the update event brings the Secret back
            tracing::debug!(
                namespace = ns,
                secret = name,
                "secret is not up to date, skipping token population"
            );
            return (false, None);
        }
        let (needs_ca, needs_namespace, needs_token) = update_needed(&live, root_ca);
        if !needs_ca && !needs_namespace && !needs_token {
            return (false, None);
        }
        let data = live.data.get_or_insert_with(BTreeMap::new);
        if needs_ca {
            if let Some(ca) = root_ca {
                data.insert(ROOT_CA_KEY.to_string(), ByteString(ca.to_vec()));
            }
        }
        if needs_namespace {
            data.insert(
                NAMESPACE_KEY.to_string(),
                ByteString(ns.as_bytes().to_vec()),
            );
        }
        if needs_token {
            match (self.generator)(sa, &live) {
                Ok(token) => {
                    live.data
                        .get_or_insert_with(BTreeMap::new)
                        .insert(TOKEN_KEY.to_string(), ByteString(token.into_bytes()));
                }
                Err(e) => {
                    return (
                        false,
                        Some(format!("generating the token of {ns}/{name}: {e}")),
                    )
                }
            }
        }
        let annotations = live.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(
            SERVICE_ACCOUNT_NAME_KEY.to_string(),
            sa.metadata.name.clone().unwrap_or_default(),
        );
        annotations.insert(
            SERVICE_ACCOUNT_UID_KEY.to_string(),
            sa.metadata.uid.clone().unwrap_or_default(),
        );
        match api.replace(name, &PostParams::default(), &live).await {
            Ok(_) => (false, None),
            Err(e) if !retriable(&e) => (false, None),
            Err(e) => (true, Some(format!("populating token {ns}/{name}: {e}"))),
        }
    }

    /// Upstream `RetryOnConflict(RemoveTokenBackoff, removeSecretReference)`: ten tries,
    /// 100 ms with full jitter between them.
    async fn remove_reference_retrying(&self, key: &SecretKey) -> Result<(), kube::Error> {
        let mut last = None;
        for attempt in 0..10 {
            if attempt > 0 {
                let jitter: f64 = rand::random::<f64>();
                tokio::time::sleep(Duration::from_millis(100).mul_f64(1.0 + jitter)).await;
            }
            match self.remove_reference(key).await {
                Err(kube::Error::Api(s)) if s.code == 409 => last = Some(kube::Error::Api(s)),
                other => return other,
            }
        }
        last.map_or(Ok(()), Err)
    }

    /// Upstream `removeSecretReference`.
    async fn remove_reference(&self, key: &SecretKey) -> Result<(), kube::Error> {
        let api = self.accounts(&key.namespace);
        let mut sa = match api.get(&key.sa_name).await {
            Ok(sa) => sa,
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(e),
        };
        if !uid_matches(&key.sa_uid, sa.metadata.uid.as_deref()) {
            return Ok(());
        }
        let Some(secrets) = sa.secrets.as_mut() else {
            return Ok(());
        };
        if !secrets
            .iter()
            .any(|r| r.name.as_deref() == Some(key.name.as_str()))
        {
            return Ok(());
        }
        secrets.retain(|r| r.name.as_deref() != Some(key.name.as_str()));
        match api.replace(&key.sa_name, &PostParams::default(), &sa).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

struct AccountSync(Arc<Tokens>);
struct SecretSync(Arc<Tokens>);

impl Reconciler<ServiceAccountKey> for AccountSync {
    async fn reconcile(&self, ctx: Context, key: ServiceAccountKey) -> ReconcileResult {
        let (retry, error) = self.0.sync_service_account(&key).await;
        retry_or_forget(&ctx, retry, error)
    }
}

impl Reconciler<SecretKey> for SecretSync {
    async fn reconcile(&self, ctx: Context, key: SecretKey) -> ReconcileResult {
        let (retry, error) = self.0.sync_secret(&key).await;
        retry_or_forget(&ctx, retry, error)
    }
}

/// Canonical controller name (upstream `names.ServiceAccountTokenController`).
pub const NAME: &str = "serviceaccount-token-controller";

/// The controller: its two queues and their informers.
pub struct TokensController {
    cache: Arc<Cache>,
    accounts: Controller<AccountSync, ServiceAccountKey>,
    secrets: Controller<SecretSync, SecretKey>,
}

/// Builds the controller over `cache` (informers of ServiceAccounts and Secrets),
/// writing with `kube`.
pub fn tokens_controller(
    cache: &Arc<Cache>,
    kube: kube::Client,
    options: TokensControllerOptions,
) -> TokensController {
    let tokens = Arc::new(Tokens {
        cache: cache.clone(),
        kube,
        generator: options.generator,
        root_ca: options.root_ca,
    });
    let workers = options.workers.max(1);
    let accounts = Controller::new(
        "serviceaccount_tokens_service",
        AccountSync(tokens.clone()),
        ControllerOptions::workers(workers),
    );
    let secrets = Controller::new(
        "serviceaccount_tokens_secret",
        SecretSync(tokens),
        ControllerOptions::workers(workers),
    );
    let queue = accounts.queue().clone();
    cache
        .informer::<ServiceAccount>()
        .add_handler(move |c: &Change<ServiceAccount>| {
            let sa = match c {
                Change::Added(o) | Change::Deleted(o) => o,
                Change::Updated { new, .. } => new,
            };
            if let Some(key) = service_account_key(sa) {
                queue.add(key);
            }
        });
    let queue = secrets.queue().clone();
    cache
        .informer::<Secret>()
        .add_handler(move |c: &Change<Secret>| {
            let s = match c {
                Change::Added(o) | Change::Deleted(o) => o,
                Change::Updated { new, .. } => new,
            };
            if s.type_.as_deref() != Some(SECRET_TYPE) {
                return;
            }
            if let Some(key) = secret_key(s) {
                queue.add(key);
            }
        });
    TokensController {
        cache: cache.clone(),
        accounts,
        secrets,
    }
}

impl Runnable for TokensController {
    fn name(&self) -> String {
        format!("controller {NAME}")
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            let TokensController {
                cache,
                accounts,
                secrets,
            } = *self;
            let sa = cache.informer::<ServiceAccount>();
            let s = cache.informer::<Secret>();
            tokio::select! {
                _ = async { sa.wait_for_sync().await; s.wait_for_sync().await } => {}
                _ = cancel.cancelled() => return Ok(()),
            }
            tokio::join!(accounts.run(cancel.clone()), secrets.run(cancel));
            Ok(())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn token_secret(annotations: &[(&str, &str)], data: &[(&str, &[u8])]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("token-secret-1".into()),
                namespace: Some("default".into()),
                uid: Some("23456".into()),
                resource_version: Some("1".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.into()),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    // After upstream TestTokenCreation's cases on secretUpdateNeeded: a Secret missing
    // its token, namespace or CA (or with another CA) needs an update; a complete one
    // does not.
    #[test]
    fn secrets_need_what_they_lack() {
        let ca: &[u8] = b"CA Data";
        let full = token_secret(
            &[],
            &[
                (TOKEN_KEY, b"ABC"),
                (NAMESPACE_KEY, b"default"),
                (ROOT_CA_KEY, ca),
            ],
        );
        assert_eq!(update_needed(&full, Some(ca)), (false, false, false));
        let no_token = token_secret(&[], &[(NAMESPACE_KEY, b"default"), (ROOT_CA_KEY, ca)]);
        assert_eq!(update_needed(&no_token, Some(ca)), (false, false, true));
        let no_ns = token_secret(&[], &[(TOKEN_KEY, b"ABC"), (ROOT_CA_KEY, ca)]);
        assert_eq!(update_needed(&no_ns, Some(ca)), (false, true, false));
        let no_ca = token_secret(&[], &[(TOKEN_KEY, b"ABC"), (NAMESPACE_KEY, b"default")]);
        assert_eq!(update_needed(&no_ca, Some(ca)), (true, false, false));
        let other_ca = token_secret(
            &[],
            &[
                (TOKEN_KEY, b"ABC"),
                (NAMESPACE_KEY, b"default"),
                (ROOT_CA_KEY, b"old"),
            ],
        );
        assert_eq!(update_needed(&other_ca, Some(ca)), (true, false, false));
        // no root CA configured: ca.crt is left alone
        assert_eq!(update_needed(&no_ca, None), (false, false, false));
        let empty_token = token_secret(&[], &[(TOKEN_KEY, b""), (NAMESPACE_KEY, b"default")]);
        assert_eq!(update_needed(&empty_token, None), (false, false, true));
    }

    // upstream IsServiceAccountToken
    #[test]
    fn tokens_belong_to_the_account_they_name() {
        let s = token_secret(
            &[
                (SERVICE_ACCOUNT_NAME_KEY, "default"),
                (SERVICE_ACCOUNT_UID_KEY, "12345"),
            ],
            &[],
        );
        assert!(is_service_account_token(&s, "default", "12345"));
        assert!(!is_service_account_token(&s, "default", "54321"));
        assert!(!is_service_account_token(&s, "other", "12345"));
        let no_uid = token_secret(&[(SERVICE_ACCOUNT_NAME_KEY, "default")], &[]);
        assert!(is_service_account_token(&no_uid, "default", "anything"));
        let mut opaque = s.clone();
        opaque.type_ = Some("Opaque".into());
        assert!(!is_service_account_token(&opaque, "default", "12345"));
    }

    // upstream parseSecretQueueKey / parseServiceAccountKey refuse incomplete keys
    #[test]
    fn keys_need_names_and_uids() {
        let s = token_secret(&[(SERVICE_ACCOUNT_NAME_KEY, "default")], &[]);
        let k = secret_key(&s).expect("a key");
        assert_eq!((k.sa_name.as_str(), k.sa_uid.as_str()), ("default", ""));
        let unnamed = token_secret(&[], &[]);
        assert!(secret_key(&unnamed).is_none());
        let mut sa = ServiceAccount::default();
        sa.metadata.namespace = Some("default".into());
        sa.metadata.name = Some("default".into());
        assert!(service_account_key(&sa).is_none());
        sa.metadata.uid = Some("12345".into());
        assert!(service_account_key(&sa).is_some());
    }
}
