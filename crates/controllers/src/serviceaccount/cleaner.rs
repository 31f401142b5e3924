//! The legacy service account token cleaner: unused auto-generated token Secrets are
//! labelled invalid, then deleted.
//!
//! After kube-controller-manager's `legacy-serviceaccount-token-cleaner`
//! (kubernetes/kubernetes
//! `pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go`). Every sync
//! interval (a day) it reads when the API server started tracking legacy token use (the
//! `since` date of the ConfigMap `kube-apiserver-legacy-service-account-token-tracking`
//! in `kube-system`) and does nothing until `--legacy-service-account-token-clean-up-period`
//! (a year) has passed since the day after. Then every `kubernetes.io/service-account-token`
//! Secret created before the period, not being deleted, whose
//! `kubernetes.io/legacy-token-last-used` date (absent: unused) is older than the period,
//! referenced by its (existing, same UID) service account's `secrets` list (so
//! auto-generated) and mounted by no pod of its namespace, is first labelled
//! `kubernetes.io/legacy-token-invalid-since: <today>` (a merge patch carrying its UID),
//! and deleted (resourceVersion precondition) once that date is older than the period
//! too. Dates are `YYYY-MM-DD` in UTC, compared as strings as upstream does.

use std::sync::Arc;
use std::time::Duration;

use coxswain_runtime::cache::Cache;
use coxswain_runtime::manager::{BoxError, Runnable};
use coxswain_runtime::ObjectKey;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, ServiceAccount};
use k8s_openapi::jiff::civil::Date;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use tokio_util::sync::CancellationToken;

use super::tokens::{SECRET_TYPE, SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_UID_KEY};

/// Canonical controller name (upstream `names.LegacyServiceAccountTokenCleanerController`).
pub const NAME: &str = "legacy-serviceaccount-token-cleaner-controller";

/// The controller's service account (upstream
/// `ClientOrDie("legacy-service-account-token-cleaner")`).
pub const SERVICE_ACCOUNT: &str = "legacy-service-account-token-cleaner";

/// Label with the date a legacy token was last used (upstream
/// `serviceaccount.LastUsedLabelKey`).
pub const LAST_USED_LABEL_KEY: &str = "kubernetes.io/legacy-token-last-used";

/// Label with the date a legacy token was marked invalid (upstream
/// `serviceaccount.InvalidSinceLabelKey`).
pub const INVALID_SINCE_LABEL_KEY: &str = "kubernetes.io/legacy-token-invalid-since";

/// The ConfigMap recording since when legacy token use is tracked (upstream
/// `legacytokentracking.ConfigMapName`), in `kube-system`.
pub const TRACKING_CONFIG_MAP: &str = "kube-apiserver-legacy-service-account-token-tracking";

/// Its data key (upstream `legacytokentracking.ConfigMapDataKey`).
pub const TRACKING_SINCE_KEY: &str = "since";

/// How often the tokens are evaluated (upstream `DefaultCleanerSyncInterval`).
pub const DEFAULT_SYNC_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// The cleaner's options (upstream `LegacySATokenCleanerConfiguration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LegacySaTokenCleanerOptions {
    /// `--legacy-service-account-token-clean-up-period` (one year): how long a token must
    /// be unused before it is invalidated, and invalid before it is deleted.
    pub clean_up_period: Duration,
}

impl Default for LegacySaTokenCleanerOptions {
    fn default() -> Self {
        LegacySaTokenCleanerOptions {
            clean_up_period: Duration::from_secs(365 * 24 * 3600),
        }
    }
}

/// A date as upstream writes it (`2006-01-02`, UTC).
pub fn format_date(t: Timestamp) -> String {
    t.strftime("%Y-%m-%d").to_string()
}

/// A `2006-01-02` date, strictly (upstream `time.Parse(dateFormat, s)`).
pub fn parse_date(s: &str) -> Option<Date> {
    Date::strptime("%Y-%m-%d", s).ok()
}

/// `now - period`, saturating.
fn minus(now: Timestamp, period: Duration) -> Timestamp {
    SignedDuration::try_from(period)
        .ok()
        .and_then(|d| now.checked_sub(d).ok())
        .unwrap_or(Timestamp::MIN)
}

/// Whether tracking started long enough ago: the day after `since` plus the period is
/// not after `now` (upstream `latestPossibleTrackedSinceTime` and its check). An absent
/// or malformed date is an error, as upstream.
pub fn tracked_long_enough(
    since: Option<&str>,
    now: Timestamp,
    period: Duration,
) -> Result<bool, String> {
    let since = since.ok_or("configMap does not have since label")?;
    let date =
        parse_date(since).ok_or_else(|| format!("error parsing trackedSince time: {since:?}"))?;
    let start = date
        .tomorrow()
        .ok()
        .and_then(|d| d.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC).ok())
        .map(|z| z.timestamp())
        .ok_or_else(|| format!("error parsing trackedSince time: {since:?}"))?;
    Ok(minus(now, period) >= start)
}

/// What the cleaner does with one Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing.
    Keep,
    /// Label it invalid since this date.
    Invalidate(String),
    /// Delete it.
    Delete,
}

fn label<'a>(s: &'a Secret, key: &str) -> Option<&'a str> {
    s.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .map(String::as_str)
}

/// The verdict on `secret` (upstream `evaluateSATokens`'s loop body): `account` is the
/// account it names (`None` when missing or another UID, see [`account_of`]), `mounted`
/// whether a pod of its namespace uses it.
pub fn verdict(
    secret: &Secret,
    account: Option<&ServiceAccount>,
    mounted: bool,
    now: Timestamp,
    period: Duration,
) -> Verdict {
    if secret.type_.as_deref() != Some(SECRET_TYPE) {
        return Verdict::Keep;
    }
    let preserve_created = minus(now, period);
    let created = secret.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if created.is_none_or(|c| c >= preserve_created) {
        return Verdict::Keep;
    }
    if secret.metadata.deletion_timestamp.is_some() {
        return Verdict::Keep;
    }
    let preserve_used = format_date(preserve_created);
    if let Some(last_used) = label(secret, LAST_USED_LABEL_KEY) {
        if parse_date(last_used).is_none() || last_used >= preserve_used.as_str() {
            return Verdict::Keep;
        }
    }
    let name = secret.metadata.name.as_deref().unwrap_or("");
    let Some(sa) = account else {
        return Verdict::Keep;
    };
    let referenced = sa
        .secrets
        .iter()
        .flatten()
        .any(|r| r.name.as_deref() == Some(name));
    if !referenced || mounted {
        return Verdict::Keep;
    }
    match label(secret, INVALID_SINCE_LABEL_KEY) {
        Some(since) if parse_date(since).is_some() => {
            if since >= preserve_used.as_str() {
                Verdict::Keep
            } else {
                Verdict::Delete
            }
        }
        _ => Verdict::Invalidate(format_date(now)),
    }
}

/// The account a token Secret names, if it exists with the recorded UID (upstream
/// `getServiceAccount`); `lookup` finds an account by name in the Secret's namespace.
pub fn account_of<'a>(
    secret: &Secret,
    lookup: impl FnOnce(&str) -> Option<&'a ServiceAccount>,
) -> Option<&'a ServiceAccount> {
    let annotations = secret.metadata.annotations.as_ref();
    let get = |k: &str| {
        annotations
            .and_then(|a| a.get(k))
            .map(String::as_str)
            .unwrap_or("")
    };
    let name = get(SERVICE_ACCOUNT_NAME_KEY);
    if name.is_empty() {
        return None;
    }
    let uid = get(SERVICE_ACCOUNT_UID_KEY);
    lookup(name).filter(|sa| uid.is_empty() || sa.metadata.uid.as_deref() == Some(uid))
}

/// Every Secret name a pod refers to (upstream `podutil.VisitPodSecretNames`): image pull
/// secrets, `envFrom` and `env` references of every container (init and ephemeral too),
/// and the volumes' secrets (secret and projected sources, and the secret references of
/// the volume plugins that take one).
pub fn pod_secret_names(pod: &Pod) -> Vec<String> {
    let mut names = Vec::new();
    let Some(spec) = &pod.spec else {
        return names;
    };
    let mut add = |n: Option<&String>| {
        if let Some(n) = n.filter(|n| !n.is_empty()) {
            names.push(n.clone());
        }
    };
    for r in spec.image_pull_secrets.iter().flatten() {
        add(Some(&r.name));
    }
    let containers = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten());
    let ephemeral = spec.ephemeral_containers.iter().flatten();
    let envs = containers
        .map(|c| (c.env.as_ref(), c.env_from.as_ref()))
        .chain(ephemeral.map(|c| (c.env.as_ref(), c.env_from.as_ref())));
    for (env, env_from) in envs {
        for e in env_from.into_iter().flatten() {
            add(e.secret_ref.as_ref().map(|s| &s.name));
        }
        for e in env.into_iter().flatten() {
            add(e
                .value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref())
                .map(|s| &s.name));
        }
    }
    for v in spec.volumes.iter().flatten() {
        add(v.secret.as_ref().and_then(|s| s.secret_name.as_ref()));
        for source in v
            .projected
            .as_ref()
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
        {
            add(source.secret.as_ref().map(|s| &s.name));
        }
        add(v.azure_file.as_ref().map(|a| &a.secret_name));
        add(v
            .cephfs
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v
            .cinder
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v
            .flex_volume
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v
            .rbd
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v.scale_io.as_ref().map(|c| &c.secret_ref.name));
        add(v
            .iscsi
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v
            .storageos
            .as_ref()
            .and_then(|c| c.secret_ref.as_ref())
            .map(|s| &s.name));
        add(v
            .csi
            .as_ref()
            .and_then(|c| c.node_publish_secret_ref.as_ref())
            .map(|s| &s.name));
    }
    names
}

/// The cleaner: a periodic evaluation over the shared cache.
pub struct LegacySaTokenCleaner {
    cache: Arc<Cache>,
    kube: kube::Client,
    period: Duration,
    sync_interval: Duration,
}

/// Builds the cleaner over `cache`, writing with `kube`; a period or interval of zero is
/// refused as upstream (`invalid CleanUpPeriod`).
pub fn legacy_sa_token_cleaner(
    cache: &Arc<Cache>,
    kube: kube::Client,
    options: &LegacySaTokenCleanerOptions,
    sync_interval: Duration,
) -> Result<LegacySaTokenCleaner, String> {
    if options.clean_up_period.is_zero() {
        return Err(format!(
            "invalid CleanUpPeriod: {:?}",
            options.clean_up_period
        ));
    }
    if sync_interval.is_zero() {
        return Err(format!("invalid SyncInterval: {sync_interval:?}"));
    }
    Ok(LegacySaTokenCleaner {
        cache: cache.clone(),
        kube,
        period: options.clean_up_period,
        sync_interval,
    })
}

impl LegacySaTokenCleaner {
    /// One evaluation of every token Secret (upstream `evaluateSATokens`).
    pub async fn evaluate(&self) {
        let now = Timestamp::now();
        let maps: Api<ConfigMap> = Api::namespaced(self.kube.clone(), "kube-system");
        let since = match maps.get(TRACKING_CONFIG_MAP).await {
            Ok(cm) => cm.data.and_then(|d| d.get(TRACKING_SINCE_KEY).cloned()),
            Err(e) => {
                tracing::error!(error = %e, "Getting lastest possible tracked_since time");
                return;
            }
        };
        match tracked_long_enough(since.as_deref(), now, self.period) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::error!(error = %e, "Getting lastest possible tracked_since time");
                return;
            }
        }
        let secrets = self.cache.list::<Secret>(None).await;
        let mut mounted_by_namespace: std::collections::HashMap<String, Vec<String>> =
            std::collections::HashMap::new();
        for secret in secrets {
            let ns = secret.metadata.namespace.clone().unwrap_or_default();
            let name = secret.metadata.name.clone().unwrap_or_default();
            let sa_name = secret
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME_KEY))
                .cloned()
                .unwrap_or_default();
            let sa = if sa_name.is_empty() {
                None
            } else {
                self.cache
                    .get::<ServiceAccount>(&ObjectKey::namespaced(&ns, &sa_name))
                    .await
            };
            let account = account_of(&secret, |_| sa.as_deref());
            if !mounted_by_namespace.contains_key(&ns) {
                let pods = self.cache.list::<Pod>(Some(&ns)).await;
                let names = pods.iter().flat_map(|p| pod_secret_names(p)).collect();
                mounted_by_namespace.insert(ns.clone(), names);
            }
            let mounted = mounted_by_namespace
                .get(&ns)
                .is_some_and(|n| n.contains(&name));
            let api: Api<Secret> = Api::namespaced(self.kube.clone(), &ns);
            match verdict(&secret, account, mounted, now, self.period) {
                Verdict::Keep => {}
                Verdict::Invalidate(date) => {
                    tracing::info!(namespace = %ns, secret = %name, invalid_since = %date, "Mark the auto-generated service account token as invalid");
                    let patch = serde_json::json!({
                        "kind": "Secret",
                        "apiVersion": "v1",
                        "metadata": {
                            "name": name,
                            "namespace": ns,
                            "uid": secret.metadata.uid,
                            "labels": {INVALID_SINCE_LABEL_KEY: date},
                        },
                    });
                    if let Err(e) = api
                        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        tracing::error!(error = %e, "Failed to label legacy service account token secret with invalid since date");
                    }
                }
                Verdict::Delete => {
                    tracing::info!(namespace = %ns, secret = %name, "Delete auto-generated service account token");
                    let params = DeleteParams {
                        preconditions: Some(kube::api::Preconditions {
                            resource_version: secret.metadata.resource_version.clone(),
                            uid: None,
                        }),
                        ..DeleteParams::default()
                    };
                    match api.delete(&name, &params).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                        Err(e) => {
                            tracing::error!(error = %e, namespace = %ns, secret = %name, "Deleting legacy service account token")
                        }
                    }
                }
            }
        }
    }
}

impl Runnable for LegacySaTokenCleaner {
    fn name(&self) -> String {
        format!("controller {NAME}")
    }

    fn start(
        self: Box<Self>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), BoxError>> {
        async move {
            let sa = self.cache.informer::<ServiceAccount>();
            let secrets = self.cache.informer::<Secret>();
            let pods = self.cache.informer::<Pod>();
            tokio::select! {
                _ = async {
                    sa.wait_for_sync().await;
                    secrets.wait_for_sync().await;
                    pods.wait_for_sync().await;
                } => {}
                _ = cancel.cancelled() => return Ok(()),
            }
            loop {
                self.evaluate().await;
                tokio::select! {
                    _ = tokio::time::sleep(self.sync_interval) => {}
                    _ = cancel.cancelled() => return Ok(()),
                }
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ObjectReference, PodSpec, SecretVolumeSource, Volume};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

    fn day(s: &str) -> Timestamp {
        parse_date(s)
            .and_then(|d| d.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC).ok())
            .map(|z| z.timestamp())
            .expect("a date")
    }

    /// A fixed "now" for the table (upstream uses the wall clock).
    fn now() -> Timestamp {
        "2023-06-15T12:00:00Z".parse().expect("a time")
    }

    /// upstream configuredLegacyTokenCleanUpPeriod: from `start` until now.
    fn period_since(start: &str) -> Duration {
        Duration::try_from(now().duration_since(day(start))).expect("a period")
    }

    /// upstream configuredServiceAccountTokenSecret
    fn token_secret(
        last_used: &str,
        invalid_since: &str,
        created: &str,
        sa_name: &str,
        sa_uid: &str,
        deleted: bool,
    ) -> Secret {
        let mut labels = std::collections::BTreeMap::new();
        if !last_used.is_empty() {
            labels.insert(LAST_USED_LABEL_KEY.to_string(), last_used.to_string());
        }
        if !invalid_since.is_empty() {
            labels.insert(
                INVALID_SINCE_LABEL_KEY.to_string(),
                invalid_since.to_string(),
            );
        }
        Secret {
            metadata: ObjectMeta {
                name: Some("token-secret-1".into()),
                namespace: Some("default".into()),
                uid: Some("23456".into()),
                resource_version: Some("1".into()),
                labels: Some(labels),
                // an unparsable creation date is Go's zero time: long ago
                creation_timestamp: Some(Time(
                    parse_date(created).map_or(Timestamp::MIN, |_| day(created)),
                )),
                deletion_timestamp: deleted.then(|| Time(now())),
                annotations: Some(
                    [
                        (SERVICE_ACCOUNT_NAME_KEY.to_string(), sa_name.to_string()),
                        (SERVICE_ACCOUNT_UID_KEY.to_string(), sa_uid.to_string()),
                    ]
                    .into_iter()
                    .collect(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some(SECRET_TYPE.into()),
            ..Secret::default()
        }
    }

    fn opaque_secret() -> Secret {
        let mut s = token_secret("2022-12-27", "", "2022-12-27", "default", "12345", false);
        s.type_ = Some("Opaque".into());
        s
    }

    /// upstream serviceAccount(tokenSecretReferences()) / emptySecretReferences()
    fn account(referenced: bool) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some("default".into()),
                namespace: Some("default".into()),
                uid: Some("12345".into()),
                resource_version: Some("1".into()),
                ..ObjectMeta::default()
            },
            secrets: Some(if referenced {
                vec![ObjectReference {
                    name: Some("token-secret-1".into()),
                    ..ObjectReference::default()
                }]
            } else {
                Vec::new()
            }),
            ..ServiceAccount::default()
        }
    }

    fn pod(mounts: bool) -> Pod {
        Pod {
            spec: mounts.then(|| PodSpec {
                volumes: Some(vec![Volume {
                    name: "foo".into(),
                    secret: Some(SecretVolumeSource {
                        secret_name: Some("token-secret-1".into()),
                        ..SecretVolumeSource::default()
                    }),
                    ..Volume::default()
                }]),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    /// What one evaluation does: `None` when the tracking ConfigMap stops it (only its
    /// GET in upstream's expected actions), else the Secret's verdict.
    fn evaluate(
        tracked_since: Option<&str>,
        period: Duration,
        secret: &Secret,
        sa: Option<&ServiceAccount>,
        pod: &Pod,
    ) -> Option<Verdict> {
        if tracked_long_enough(tracked_since, now(), period) != Ok(true) {
            return None;
        }
        let account = account_of(secret, |name| {
            sa.filter(|a| a.metadata.name.as_deref() == Some(name))
        });
        let mounted = pod_secret_names(pod).iter().any(|n| n == "token-secret-1");
        Some(verdict(secret, account, mounted, now(), period))
    }

    /// name, tracked since, period, secret, its account, mounted by the pod, verdict
    type Case = (
        &'static str,
        Option<&'static str>,
        Duration,
        Secret,
        Option<ServiceAccount>,
        bool,
        Option<Verdict>,
    );

    // upstream TestLegacyServiceAccountTokenCleanUp, case by case (the expected actions
    // after the ConfigMap GET: none, a patch with today's invalid-since date, or a
    // delete with the resourceVersion precondition)
    #[test]
    fn legacy_tokens_are_invalidated_then_deleted_as_upstream() {
        let today = format_date(now());
        let ts = token_secret;
        let sa = account(true);
        let cases: Vec<Case> = vec![
            (
                "configmap does not exist (no since date)",
                None,
                period_since("2022-12-28"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                None,
            ),
            (
                "the time period since 'tracked-since' is smaller than the CleanUpPeriod",
                Some("2022-12-29"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                None,
            ),
            (
                "the 'tracked-since' cannot be parsed",
                Some("2022-12-27-1"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                None,
            ),
            (
                "secret is not SecretTypeServiceAccountToken type",
                Some("2022-12-28"),
                period_since("2022-12-29"),
                opaque_secret(),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "secret is not referenced by serviceaccount",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(account(false)),
                false,
                Some(Verdict::Keep),
            ),
            (
                "auto-generated secret has a late creation time",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-30", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "auto-generated secret has a deletion time",
                Some("2022-12-27"),
                period_since("2022-12-30"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", true),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "auto-generated secret has a late last-used time",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-30", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "auto-generated secret has a last-used label, but it can not be parsed",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27-1", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "secret-referenced service account does not exist",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                None,
                false,
                Some(Verdict::Keep),
            ),
            (
                "secret-referenced service account uid does not match",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "123456", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "secret-referenced service account name is empty",
                Some("2022-12-27"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "no 'last-used' label, not marked invalid",
                Some("2022-12-28"),
                period_since("2022-12-30"),
                ts("", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Invalidate(today.clone())),
            ),
            (
                "no 'last-used' label, invalid_since label can not be parsed",
                Some("2022-12-28"),
                period_since("2022-12-30"),
                ts("", "2022-12-29-1", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Invalidate(today.clone())),
            ),
            (
                "no 'last-used' label, invalid for less than the CleanUpPeriod",
                Some("2022-12-28"),
                period_since("2022-12-29"),
                ts("", "2023-01-01", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "no 'last-used' label, invalid for more than the CleanUpPeriod",
                Some("2022-12-28"),
                period_since("2023-01-01"),
                ts("", "2022-12-29", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Delete),
            ),
            (
                "auto-generated secret is mounted by the pod",
                Some("2022-12-28"),
                period_since("2022-12-29"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                true,
                Some(Verdict::Keep),
            ),
            (
                "last used before the CleanUpPeriod, not marked invalid",
                Some("2022-12-28"),
                period_since("2022-12-30"),
                ts("2022-12-27", "", "2022-12-27", "default", "12345", false),
                Some(sa.clone()),
                false,
                Some(Verdict::Invalidate(today.clone())),
            ),
            (
                "last used before the CleanUpPeriod, invalid for less than it",
                Some("2022-12-28"),
                period_since("2022-12-30"),
                ts(
                    "2022-12-27",
                    "2023-05-01",
                    "2022-12-27",
                    "default",
                    "12345",
                    false,
                ),
                Some(sa.clone()),
                false,
                Some(Verdict::Keep),
            ),
            (
                "last used before the CleanUpPeriod, invalid for more than it",
                Some("2022-12-28"),
                period_since("2023-05-01"),
                ts(
                    "2022-12-27",
                    "2023-01-05",
                    "2022-12-27",
                    "default",
                    "12345",
                    false,
                ),
                Some(sa.clone()),
                false,
                Some(Verdict::Delete),
            ),
        ];
        for (name, since, period, secret, sa, mounted, want) in cases {
            let got = evaluate(since, period, &secret, sa.as_ref(), &pod(mounted));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn dates_parse_strictly() {
        assert!(parse_date("2022-12-27").is_some());
        assert!(parse_date("2022-12-27-1").is_none());
        assert!(parse_date("").is_none());
        assert_eq!(format_date(day("2022-01-05")), "2022-01-05");
        assert_eq!(
            tracked_long_enough(Some("2022-12-28"), now(), Duration::ZERO),
            Ok(true)
        );
        assert!(tracked_long_enough(None, now(), Duration::ZERO).is_err());
    }
}
