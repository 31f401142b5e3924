//! Upstream's `ValidateCertificateSigningRequestCreate`, `...Update`, `...StatusUpdate`
//! and `...ApprovalUpdate` (`pkg/apis/certificates/validation`), with the
//! compatibility options it derives from the stored object.

use base64::Engine;

use crate::registry::catalog::Subresource;
use crate::registry::validation::prelude::*;
use apimachinery::status::Cause;

/// Condition types that may only be `True`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];
/// Every key usage upstream knows, sorted as `sets.String.List()`.
pub(crate) const VALID_USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];
/// The signer name the v1 API no longer accepts on create.
pub(crate) const LEGACY_UNKNOWN: &str = "kubernetes.io/legacy-unknown";

/// `certificateValidationOptions`.
#[derive(Default)]
struct Options {
    allow_setting_approval_conditions: bool,
    allow_setting_certificate: bool,
    allow_both_approved_and_denied: bool,
    allow_legacy_signer_name: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

/// A byte field of the object (`encoding/json`'s base64), empty when absent.
pub(crate) fn bytes_field(o: &Value, pointer: &str) -> Option<Vec<u8>> {
    let s = o.pointer(pointer)?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

/// Go's `%#v` of a `[]byte`.
fn go_bytes(b: Option<&[u8]>) -> String {
    match b {
        None => "[]byte(nil)".into(),
        Some(b) => {
            let parts: Vec<String> = b.iter().map(|x| format!("0x{x:x}")).collect();
            format!("[]byte{{{}}}", parts.join(", "))
        }
    }
}

fn conds(o: &Value) -> &[Value] {
    o.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn ctype(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or("")
}

fn of_type<'a>(o: &'a Value, ty: &str) -> Vec<&'a Value> {
    conds(o).iter().filter(|c| ctype(c) == ty).collect()
}

fn usages(o: &Value) -> Vec<&str> {
    o.pointer("/spec/usages")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|u| u.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

fn options(new: &Value, old: Option<&Value>) -> Options {
    let Some(old) = old else {
        return Options::default();
    };
    let types: Vec<&str> = conds(old).iter().map(ctype).collect();
    let has_dup_types = types
        .iter()
        .enumerate()
        .any(|(i, t)| types[..i].contains(t));
    let old_cert = bytes_field(old, "/status/certificate").unwrap_or_default();
    let new_cert = bytes_field(new, "/status/certificate").unwrap_or_default();
    let old_usages = usages(old);
    Options {
        allow_both_approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
        allow_legacy_signer_name: old.pointer("/spec/signerName").and_then(Value::as_str)
            == Some(LEGACY_UNKNOWN),
        allow_duplicate_condition_types: has_dup_types,
        allow_empty_condition_type: types.contains(&""),
        allow_arbitrary_certificate: old_cert == new_cert
            || apimachinery::x509::validate_certificate_pem(&old_cert).is_err(),
        allow_unknown_usages: old_usages.iter().any(|u| !VALID_USAGES.contains(u)),
        allow_duplicate_usages: old_usages
            .iter()
            .enumerate()
            .any(|(i, u)| old_usages[..i].contains(u)),
        ..Options::default()
    }
}

impl Ctx<'_> {
    /// A CSR on create (`old` unset), or its update through `sub` (`None`: the main
    /// resource).
    pub(crate) fn csr(&self, e: &mut Errs, o: &Value, sub: Option<Subresource>) {
        let mut opts = options(o, self.old);
        opts.allow_setting_approval_conditions = sub == Some(Subresource::Approval);
        opts.allow_setting_certificate = sub == Some(Subresource::Status);
        self.meta_create(e, o, NameRule::PathSegment, false);
        csr_object(e, o, &opts);
        if let Some(old) = self.old {
            csr_update(e, o, old, &opts);
            self.meta_update(e, o, old, false);
        }
    }
}

/// `validateCertificateSigningRequest` after the metadata.
fn csr_object(e: &mut Errs, o: &Value, opts: &Options) {
    let request = bytes_field(o, "/spec/request");
    let checked = apimachinery::x509::parse_csr(request.as_deref().unwrap_or_default())
        .and_then(|r| apimachinery::x509::check_signature(&r));
    if let Err(err) = checked {
        e.push(Cause {
            reason: apimachinery::field::INVALID.into(),
            message: format!(
                "Invalid value: {}: {err}",
                go_bytes(request.as_deref().filter(|r| !r.is_empty()))
            ),
            field: "spec.request".into(),
        });
    }
    let us = usages(o);
    if us.is_empty() {
        e.required("spec.usages", "");
    }
    if !opts.allow_unknown_usages {
        for (i, u) in us.iter().enumerate() {
            if !VALID_USAGES.contains(u) {
                e.not_supported(&format!("spec.usages[{i}]"), js(u), VALID_USAGES);
            }
        }
    }
    if !opts.allow_duplicate_usages {
        for (i, u) in us.iter().enumerate() {
            if us[..i].contains(u) {
                e.duplicate(&format!("spec.usages[{i}]"), js(u));
            }
        }
    }
    let signer = o
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !opts.allow_legacy_signer_name && signer == LEGACY_UNKNOWN {
        e.invalid(
            "spec.signerName",
            s(signer),
            "the legacy signerName is not allowed via this API version",
        );
    } else {
        signer_name(e, "spec.signerName", signer);
    }
    if let Some(secs) = o.pointer("/spec/expirationSeconds").and_then(Value::as_i64) {
        if secs < 600 {
            e.invalid(
                "spec.expirationSeconds",
                Bad::Int(secs),
                "may not specify a duration less than 600 seconds (10 minutes)",
            );
        }
    }
    conditions(e, o, opts);
    if !opts.allow_arbitrary_certificate {
        let cert = bytes_field(o, "/status/certificate").unwrap_or_default();
        if let Err(err) = apimachinery::x509::validate_certificate_pem(&cert) {
            e.invalid("status.certificate", s("<certificate data>"), &err);
        }
    }
}

/// `validateConditions`.
fn conditions(e: &mut Errs, o: &Value, opts: &Options) {
    let path = "status.conditions";
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conds(o).iter().enumerate() {
        let ty = ctype(c);
        if !opts.allow_empty_condition_type && ty.is_empty() {
            e.required(&format!("{path}[{i}].type"), "");
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&ty) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        let status = c.get("status").and_then(Value::as_str).unwrap_or("");
        if status.is_empty() {
            e.required(&format!("{path}[{i}].status"), "");
        } else if !allowed.contains(&status) {
            e.not_supported(&format!("{path}[{i}].status"), js(status), allowed);
        }
        if !opts.allow_both_approved_and_denied {
            match ty {
                "Approved" => {
                    approved = true;
                    if denied {
                        e.invalid(
                            path,
                            js(ty),
                            "Approved and Denied conditions are mutually exclusive",
                        );
                    }
                }
                "Denied" => {
                    denied = true;
                    if approved {
                        e.invalid(
                            path,
                            js(ty),
                            "Approved and Denied conditions are mutually exclusive",
                        );
                    }
                }
                _ => {}
            }
        }
        if !opts.allow_duplicate_condition_types {
            if seen.contains(&ty) {
                e.duplicate(&format!("{path}[{i}].type"), js(ty));
            }
            seen.push(ty);
        }
    }
}

/// The update rules of `validateCertificateSigningRequestUpdate`.
fn csr_update(e: &mut Errs, new: &Value, old: &Value, opts: &Options) {
    for t in ["Approved", "Denied", "Failed"] {
        if of_type(new, t).len() < of_type(old, t).len() {
            e.forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {}", go_q(t)),
            );
        }
    }
    if !opts.allow_setting_approval_conditions {
        for t in ["Approved", "Denied"] {
            let (o, n) = (of_type(old, t), of_type(new, t));
            if n.len() > o.len() {
                e.forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {}", go_q(t)),
                );
            } else if n.len() == o.len() && o != n {
                let render = |v: &[&Value]| serde_json::to_string(v).unwrap_or_default();
                e.forbidden(
                    "status.conditions",
                    &format!(
                        "updates may not modify a condition of type {}\n- {}\n+ {}",
                        go_q(t),
                        render(&o),
                        render(&n)
                    ),
                );
            }
        }
    }
    let (oc, nc) = (
        bytes_field(old, "/status/certificate").unwrap_or_default(),
        bytes_field(new, "/status/certificate").unwrap_or_default(),
    );
    if oc != nc {
        if !opts.allow_setting_certificate {
            e.forbidden(
                "status.certificate",
                "updates may not set certificate content",
            );
        } else if !oc.is_empty() {
            e.forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            );
        }
    }
}

fn go_q(s: &str) -> String {
    apimachinery::gofmt::quote(s)
}

/// `ValidateSignerName`: `<domain>/<path>`, the domain of DNS-1123 labels with at least
/// one dot, the path of DNS-1123 subdomains, 571 characters at most.
pub(crate) fn signer_name(e: &mut Errs, path: &str, name: &str) {
    if name.is_empty() {
        e.required(path, "");
        return;
    }
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() != 2 {
        e.invalid(
            path,
            s(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        );
        return;
    }
    let (domain, rest) = (segments[0], segments[1]);
    if domain.len() > 253 {
        e.too_long(path, 253);
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for l in &labels {
        let errs = dns1123_label_errs(l);
        if !errs.is_empty() {
            for m in errs {
                e.invalid(
                    path,
                    s(domain),
                    &format!("validating label {}: {m}", go_q(l)),
                );
            }
            break;
        }
    }
    if labels.len() < 2 {
        e.invalid(
            path,
            s(domain),
            "should be a domain with at least two segments separated by dots",
        );
    }
    for l in rest.split('.') {
        let errs = dns1123_subdomain_errs(l);
        if !errs.is_empty() {
            for m in errs {
                e.invalid(path, s(rest), &format!("validating label {}: {m}", go_q(l)));
            }
            break;
        }
    }
    let max = 253 + (253 + 63 + 1) + 1;
    if name.len() > max {
        e.too_long(path, max);
    }
}
