//! The CSR cleaner: kube-controller-manager's `certificatesigningrequest-cleaner-controller`
//! (upstream `pkg/controller/certificates/cleaner/cleaner.go`).
//!
//! Deletes requests that are done with: issued more than an hour after approval,
//! denied or failed for more than an hour, pending for more than a day, or whose issued
//! certificate has expired. Upstream polls every hour; here each request is checked
//! when it changes and again when its next deadline passes.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::DeleteParams;
use kube::Api;

use super::{certificate, conditions};
use crate::registry::Descriptor;

/// Canonical controller name.
pub const NAME: &str = "certificatesigningrequest-cleaner-controller";
/// How long an issued request is kept after its approval.
pub const APPROVED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a denied (or failed) request is kept.
pub const DENIED_EXPIRATION: Duration = Duration::from_secs(3600);
/// How long a request stays pending before it is deleted.
pub const PENDING_EXPIRATION: Duration = Duration::from_secs(24 * 3600);

/// The service account the controller runs as with `--use-service-account-credentials`
/// (upstream `ClientOrDie("certificate-controller")`).
pub const SERVICE_ACCOUNT: &str = "certificate-controller";

/// The registry entry: `certificatesigningrequest-cleaner-controller`, alias
/// `csrcleaner`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["csrcleaner"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(new_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

fn secs(t: &k8s_openapi::jiff::Timestamp) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(t.as_second(), t.subsec_nanosecond().max(0) as u32)
        .unwrap_or_default()
}

fn older_than(t: Option<&DateTime<Utc>>, d: Duration, now: DateTime<Utc>) -> bool {
    t.is_some_and(|t| {
        now.signed_duration_since(*t)
            .to_std()
            .is_ok_and(|age| age > d)
    })
}

/// Whether the cleaner deletes `csr` at `now` (upstream `handle`'s `isIssuedPastDeadline
/// || isDeniedPastDeadline || isFailedPastDeadline || isPendingPastDeadline ||
/// isIssuedExpired`).
pub fn should_delete(csr: &CertificateSigningRequest, now: DateTime<Utc>) -> bool {
    let conds = conditions(csr);
    let issued = certificate(csr).is_some();
    let updated = |c: &k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition| {
        c.last_update_time.as_ref().map(|t| secs(&t.0))
    };
    let issued_past = conds.iter().any(|c| {
        c.type_ == "Approved" && issued && older_than(updated(c).as_ref(), APPROVED_EXPIRATION, now)
    });
    let denied_past = conds
        .iter()
        .any(|c| c.type_ == "Denied" && older_than(updated(c).as_ref(), DENIED_EXPIRATION, now));
    let failed_past = conds
        .iter()
        .any(|c| c.type_ == "Failed" && older_than(updated(c).as_ref(), DENIED_EXPIRATION, now));
    let pending_past = conds.is_empty()
        && older_than(
            csr.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| secs(&t.0))
                .as_ref(),
            PENDING_EXPIRATION,
            now,
        );
    let expired = conds.iter().any(|c| c.type_ == "Approved")
        && certificate(csr)
            .and_then(apimachinery::x509::first_certificate_validity)
            .is_some_and(|(_, not_after)| now.timestamp() > not_after);
    issued_past || denied_past || failed_past || pending_past || expired
}

/// When `csr` is next worth checking after `now`: the earliest deadline still ahead.
pub fn next_check(csr: &CertificateSigningRequest, now: DateTime<Utc>) -> Option<Duration> {
    let mut times: Vec<DateTime<Utc>> = Vec::new();
    let conds = conditions(csr);
    let plus =
        |t: DateTime<Utc>, d: Duration| t + chrono::Duration::from_std(d).unwrap_or_default();
    for c in conds {
        if let Some(t) = c.last_update_time.as_ref().map(|t| secs(&t.0)) {
            match c.type_.as_str() {
                "Approved" => times.push(plus(t, APPROVED_EXPIRATION)),
                "Denied" | "Failed" => times.push(plus(t, DENIED_EXPIRATION)),
                _ => {}
            }
        }
    }
    if conds.is_empty() {
        if let Some(t) = csr.metadata.creation_timestamp.as_ref() {
            times.push(plus(secs(&t.0), PENDING_EXPIRATION));
        }
    }
    if let Some((_, not_after)) =
        certificate(csr).and_then(apimachinery::x509::first_certificate_validity)
    {
        if let Some(t) = DateTime::<Utc>::from_timestamp(not_after, 0) {
            times.push(t);
        }
    }
    times
        .into_iter()
        .filter(|t| *t > now)
        .min()
        .and_then(|t| (t - now).to_std().ok())
        // one second past the deadline: "older than" is strict
        .map(|d| d + Duration::from_secs(1))
}

/// The cleaner as a runnable of `mgr`.
pub fn new_controller(
    mgr: &impl crate::clientbuilder::ClusterAccess,
) -> Controller<CleanerReconciler> {
    let reconciler = CleanerReconciler {
        csrs: mgr
            .cache()
            .informer::<CertificateSigningRequest>()
            .store()
            .clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(NAME)
        .with_options(ControllerOptions::workers(1))
        .for_::<CertificateSigningRequest>()
        .build(reconciler)
}

/// Deletes requests past their deadlines.
pub struct CleanerReconciler {
    csrs: Arc<Store<CertificateSigningRequest>>,
    client: kube::Client,
}

impl Reconciler for CleanerReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(csr) = self.csrs.get(&key) else {
            return Ok(Action::Done);
        };
        let now = Utc::now();
        if should_delete(&csr, now) {
            match Api::<CertificateSigningRequest>::all(self.client.clone())
                .delete(key.name(), &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    return Err(ReconcileError::from(e).context(&format!(
                        "unable to delete CSR {}",
                        apimachinery::gofmt::quote(key.name())
                    )))
                }
            }
            return Ok(Action::Done);
        }
        Ok(next_check(&csr, now).map_or(Action::Done, Action::RequeueAfter))
    }
}
