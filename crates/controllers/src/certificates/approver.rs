//! The CSR approving controller: kube-controller-manager's
//! `certificatesigningrequest-approving-controller` (upstream
//! `pkg/controller/certificates/approver/sarapprove.go`).
//!
//! A pending request without a certificate that is a kubelet client request
//! (`kubernetes.io/kube-apiserver-client-kubelet`, organization `system:nodes`, common
//! name `system:node:<name>`, no alternative names, client usages) is approved when a
//! SubjectAccessReview for its requester allows `create` on
//! `certificatesigningrequests/selfnodeclient` (a node renewing its own: the requester is
//! the common name) or `certificatesigningrequests/nodeclient` (any node's, as a
//! bootstrap token may). A recognised request the reviews do not allow is retried with
//! backoff, as upstream's ignorable error.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::x509::CertificateRequest;
use coxswain_runtime::builder::ControllerBuilder;
use coxswain_runtime::cache::Store;
use coxswain_runtime::controller::{
    Action, Context, Controller, ControllerOptions, ReconcileError, ReconcileResult, Reconciler,
};
use coxswain_runtime::ObjectKey;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition, CertificateSigningRequestStatus,
};
use kube::api::PostParams;
use kube::Api;

use super::{
    certificate, has_condition, parse_request, usage_set, validate_kubelet_client_csr,
    KUBE_APISERVER_CLIENT_KUBELET,
};
use crate::registry::Descriptor;

/// Canonical controller name.
pub const NAME: &str = "certificatesigningrequest-approving-controller";

/// The service account the controller runs as with `--use-service-account-credentials`
/// (upstream `ClientOrDie("certificate-controller")`).
pub const SERVICE_ACCOUNT: &str = "certificate-controller";

/// The registry entry: `certificatesigningrequest-approving-controller`, alias
/// `csrapproving`, on by default.
pub fn descriptor() -> Descriptor {
    Descriptor {
        name: NAME,
        aliases: &["csrapproving"],
        disabled_by_default: false,
        constructor: |ctx| {
            Ok(Some(Box::new(new_controller(
                &ctx.clients(SERVICE_ACCOUNT)?,
            ))))
        },
    }
}

/// One kind of request the approver recognises (upstream `csrRecognizer`).
#[derive(Clone, Copy, Debug)]
pub struct Recognizer {
    /// Whether the request is of this kind.
    pub recognize: fn(&CertificateSigningRequest, &CertificateRequest) -> bool,
    /// The subresource of `certificatesigningrequests` the requester must be allowed to
    /// `create`.
    pub subresource: &'static str,
    /// The approval condition's message.
    pub success_message: &'static str,
}

/// Upstream `isNodeClientCert`.
pub fn is_node_client_cert(csr: &CertificateSigningRequest, req: &CertificateRequest) -> bool {
    csr.spec.signer_name == KUBE_APISERVER_CLIENT_KUBELET
        && validate_kubelet_client_csr(req, &usage_set(csr)).is_ok()
}

/// Upstream `isSelfNodeClientCert`: a node client request made by the node itself.
pub fn is_self_node_client_cert(csr: &CertificateSigningRequest, req: &CertificateRequest) -> bool {
    is_node_client_cert(csr, req) && csr.spec.username.as_deref() == Some(req.common_name.as_str())
}

/// Upstream's recognizers, in order.
pub const RECOGNIZERS: [Recognizer; 2] = [
    Recognizer {
        recognize: is_self_node_client_cert,
        subresource: "selfnodeclient",
        success_message:
            "Auto approving self kubelet client certificate after SubjectAccessReview.",
    },
    Recognizer {
        recognize: is_node_client_cert,
        subresource: "nodeclient",
        success_message: "Auto approving kubelet client certificate after SubjectAccessReview.",
    },
];

/// The SubjectAccessReview asking whether the requester of `csr` may `create`
/// `certificatesigningrequests/<subresource>`.
pub fn review(csr: &CertificateSigningRequest, subresource: &str) -> SubjectAccessReview {
    let extra: Option<BTreeMap<String, Vec<String>>> = csr.spec.extra.clone();
    SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: csr.spec.username.clone(),
            uid: csr.spec.uid.clone(),
            groups: csr.spec.groups.clone(),
            extra,
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                verb: Some("create".into()),
                subresource: Some(subresource.into()),
                version: Some("*".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The recognizers that apply to `csr`, or `None` when the approver leaves it alone
/// (issued, approved or denied already, unparsable: the error).
pub fn applicable(csr: &CertificateSigningRequest) -> Result<Vec<Recognizer>, String> {
    if certificate(csr).is_some() || has_condition(csr, "Approved") || has_condition(csr, "Denied")
    {
        return Ok(Vec::new());
    }
    let name = csr.metadata.name.as_deref().unwrap_or("");
    let req = parse_request(csr).map_err(|e| {
        format!(
            "unable to parse csr {}: {e}",
            apimachinery::gofmt::quote(name)
        )
    })?;
    Ok(RECOGNIZERS
        .iter()
        .filter(|r| (r.recognize)(csr, &req))
        .copied()
        .collect())
}

/// `csr` with upstream's approval condition appended.
pub fn approved(csr: &CertificateSigningRequest, message: &str) -> CertificateSigningRequest {
    let mut out = csr.clone();
    out.status
        .get_or_insert_with(CertificateSigningRequestStatus::default)
        .conditions
        .get_or_insert_with(Vec::new)
        .push(CertificateSigningRequestCondition {
            type_: "Approved".into(),
            status: "True".into(),
            reason: Some("AutoApproved".into()),
            message: Some(message.into()),
            ..Default::default()
        });
    out
}

/// The approving controller as a runnable of `mgr`.
pub fn new_controller(
    mgr: &impl crate::clientbuilder::ClusterAccess,
) -> Controller<ApprovingReconciler> {
    let reconciler = ApprovingReconciler {
        csrs: mgr
            .cache()
            .informer::<CertificateSigningRequest>()
            .store()
            .clone(),
        client: mgr.kube_client().clone(),
    };
    ControllerBuilder::new(mgr.cache())
        .named(NAME)
        .with_options(ControllerOptions::workers(5))
        .for_::<CertificateSigningRequest>()
        .build(reconciler)
}

/// Approves kubelet client requests their requesters may make.
pub struct ApprovingReconciler {
    csrs: Arc<Store<CertificateSigningRequest>>,
    client: kube::Client,
}

impl Reconciler for ApprovingReconciler {
    async fn reconcile(&self, _ctx: Context, key: ObjectKey) -> ReconcileResult {
        let Some(csr) = self.csrs.get(&key) else {
            return Ok(Action::Done);
        };
        let recognizers = applicable(&csr).map_err(ReconcileError::msg)?;
        if recognizers.is_empty() {
            return Ok(Action::Done);
        }
        let reviews = Api::<SubjectAccessReview>::all(self.client.clone());
        let mut tried = Vec::new();
        for r in recognizers {
            tried.push(r.subresource);
            let answer = reviews
                .create(&PostParams::default(), &review(&csr, r.subresource))
                .await
                .map_err(|e| ReconcileError::from(e).context("creating a SubjectAccessReview"))?;
            if answer.status.is_some_and(|s| s.allowed) {
                Api::<CertificateSigningRequest>::all(self.client.clone())
                    .replace_subresource(
                        "approval",
                        key.name(),
                        &PostParams::default(),
                        &approved(&csr, r.success_message),
                    )
                    .await
                    .map_err(|e| {
                        ReconcileError::from(e).context("error updating approval for csr")
                    })?;
                return Ok(Action::Done);
            }
        }
        Err(ReconcileError::msg(format!(
            "recognized csr {} as [{}] but subject access review was not approved",
            apimachinery::gofmt::quote(key.name()),
            tried.join(" ")
        )))
    }
}
