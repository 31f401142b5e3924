//! The certificate controllers of kube-controller-manager (upstream
//! `pkg/controller/certificates`): [`signer`] (`certificatesigningrequest-signing-controller`:
//! the `kubernetes.io` signers issue certificates for approved requests), [`approver`]
//! (`certificatesigningrequest-approving-controller`: kubelet client requests approved
//! after a SubjectAccessReview) and [`cleaner`]
//! (`certificatesigningrequest-cleaner-controller`: old requests deleted).
//!
//! What they share is here: reading a CertificateSigningRequest's conditions and
//! request, and upstream's checks of kubelet client and serving requests
//! (`pkg/apis/certificates/helpers.go`).

pub mod approver;
pub mod cleaner;
pub mod signer;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use apimachinery::x509::CertificateRequest;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;

/// `kubernetes.io/kube-apiserver-client`.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// `kubernetes.io/kube-apiserver-client-kubelet`.
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// `kubernetes.io/kubelet-serving`.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";
/// `kubernetes.io/legacy-unknown`.
pub const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// Whether the request has a condition of type `ty` (any status for Approved/Denied, as
/// upstream's `GetCertApprovalCondition`; `True` for the others, `HasTrueCondition`).
pub fn has_condition(csr: &CertificateSigningRequest, ty: &str) -> bool {
    conditions(csr)
        .iter()
        .any(|c| c.type_ == ty && (matches!(ty, "Approved" | "Denied") || c.status == "True"))
}

/// The request's conditions.
pub fn conditions(
    csr: &CertificateSigningRequest,
) -> &[k8s_openapi::api::certificates::v1::CertificateSigningRequestCondition] {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}

/// Whether the request is approved and not denied (`IsCertificateRequestApproved`).
pub fn is_approved(csr: &CertificateSigningRequest) -> bool {
    has_condition(csr, "Approved") && !has_condition(csr, "Denied")
}

/// The issued certificate, when there is one.
pub fn certificate(csr: &CertificateSigningRequest) -> Option<&[u8]> {
    csr.status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .map(|b| b.0.as_slice())
        .filter(|b| !b.is_empty())
}

/// The request's usages as a set.
pub fn usage_set(csr: &CertificateSigningRequest) -> BTreeSet<String> {
    csr.spec
        .usages
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The parsed `spec.request` (upstream `ParseCSR`).
pub fn parse_request(csr: &CertificateSigningRequest) -> Result<CertificateRequest, String> {
    apimachinery::x509::parse_csr(&csr.spec.request.0)
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Go's `%v` of a `[]string`.
fn go_list(items: &BTreeSet<String>) -> String {
    format!("[{}]", items.iter().cloned().collect::<Vec<_>>().join(" "))
}

fn subject_is_system_nodes(req: &CertificateRequest) -> Result<(), String> {
    if req.organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    Ok(())
}

const NOT_SYSTEM_NODE: &str = "subject common name does not begin with system:node:";

/// Upstream `ValidateKubeletServingCSR`: organization `system:nodes`, DNS or IP names
/// and no others, usages exactly {digital signature, (key encipherment,) server auth},
/// common name `system:node:<name>`.
pub fn validate_kubelet_serving_csr(
    req: &CertificateRequest,
    usages: &BTreeSet<String>,
) -> Result<(), String> {
    subject_is_system_nodes(req)?;
    if req.dns_names.is_empty() && req.ip_addresses.is_empty() {
        return Err("DNS or IP subjectAltName is required".into());
    }
    if !req.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    let required = set(&["digital signature", "key encipherment", "server auth"]);
    let no_rsa = set(&["digital signature", "server auth"]);
    if *usages != required && *usages != no_rsa {
        return Err(format!("usages did not match {}", go_list(&required)));
    }
    if !req.common_name.starts_with("system:node:") {
        return Err(NOT_SYSTEM_NODE.into());
    }
    Ok(())
}

/// Upstream `ValidateKubeletClientCSR`: organization `system:nodes`, no alternative
/// names, common name `system:node:<name>`, usages exactly {digital signature, (key
/// encipherment,) client auth}.
pub fn validate_kubelet_client_csr(
    req: &CertificateRequest,
    usages: &BTreeSet<String>,
) -> Result<(), String> {
    subject_is_system_nodes(req)?;
    if !req.dns_names.is_empty() {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if !req.email_addresses.is_empty() {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if !req.ip_addresses.is_empty() {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if !req.uris.is_empty() {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !req.common_name.starts_with("system:node:") {
        return Err(NOT_SYSTEM_NODE.into());
    }
    let required = set(&["digital signature", "key encipherment", "client auth"]);
    let no_rsa = set(&["digital signature", "client auth"]);
    if *usages != required && *usages != no_rsa {
        return Err(format!("usages did not match {}", go_list(&required)));
    }
    Ok(())
}

/// Upstream `validAPIServerClientUsages`: `client auth`, optionally `digital signature`
/// and `key encipherment`, nothing else.
pub fn validate_apiserver_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for u in usages {
        match u.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// Whether the signer `signer_name` recognises the request, and the error that fails it
/// when it does but the request is not acceptable (upstream's `isKubeletServing`,
/// `isKubeletClient`, `isKubeAPIServerClient`, `isLegacyUnknown`).
pub fn is_request_for_signer(
    signer_name: &str,
    req: &CertificateRequest,
    usages: &[String],
    csr_signer: &str,
) -> Result<bool, String> {
    if signer_name != csr_signer {
        return Ok(false);
    }
    let set: BTreeSet<String> = usages.iter().cloned().collect();
    match signer_name {
        KUBELET_SERVING => validate_kubelet_serving_csr(req, &set).map(|_| true),
        KUBE_APISERVER_CLIENT_KUBELET => validate_kubelet_client_csr(req, &set).map(|_| true),
        KUBE_APISERVER_CLIENT => validate_apiserver_client_usages(usages).map(|_| true),
        LEGACY_UNKNOWN => Ok(true),
        other => Err(format!(
            "unrecognized signerName: {}",
            apimachinery::gofmt::quote(other)
        )),
    }
}
