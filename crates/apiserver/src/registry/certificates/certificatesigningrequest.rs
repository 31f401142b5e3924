//! CertificateSigningRequest (`certificates.k8s.io/v1`): what it does differently from the
//! generic store (upstream `pkg/registry/certificates/certificates/strategy.go` and
//! `pkg/apis/certificates/validation`).
//!
//! A create records who asked (`spec.username`, `uid`, `groups`, `extra` from the
//! request's user) and starts with an empty status; the spec never changes after; the
//! `/approval` subresource writes only the conditions (Approved, Denied, and the others
//! as sent), `/status` everything but the spec and the Approved/Denied conditions. Who
//! may approve or sign is decided by [`crate::auth::signer`] on the write path.

use serde_json::{json, Value};

use crate::registry::catalog::{Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::status::{ApiError, ApiResult};

/// The `certificates.k8s.io/v1` kind.
pub static KIND: Kind = Kind::new(&["csr"], &CertificateSigningRequestStrategy);

/// What CertificateSigningRequest does differently.
pub struct CertificateSigningRequestStrategy;

impl Strategy for CertificateSigningRequestStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Approval, Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        // SetDefaults_CertificateSigningRequestCondition: a condition's status is True
        if let Some(conds) = obj
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        {
            for c in conds.iter_mut().filter_map(Value::as_object_mut) {
                if c.get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    c.insert("status".into(), json!("True"));
                }
            }
        }
    }

    fn prepare_for_create(&self, _def: &ResourceDef, obj: &mut Value) {
        let user = crate::machinery::user::current();
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            for f in ["username", "uid", "groups", "extra"] {
                spec.remove(f);
            }
            if let Some(u) = user {
                spec.insert("username".into(), json!(u.name));
                spec.insert("uid".into(), json!(u.uid));
                spec.insert("groups".into(), json!(u.groups));
                if !u.extra.is_empty() {
                    spec.insert("extra".into(), json!(u.extra));
                }
            }
        }
        // users cannot create pre-approved certificate requests
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), json!({}));
        }
    }

    fn prepare_for_update(&self, old: &Value, new: &mut Value) {
        // the spec is immutable; the status changes only through the subresources
        if let Some(o) = new.as_object_mut() {
            match old.get("spec") {
                Some(spec) => o.insert("spec".into(), spec.clone()),
                None => o.remove("spec"),
            };
        }
    }

    fn status_update_metadata(&self) -> StatusMeta {
        // the status and approval strategies keep the request's metadata
        StatusMeta::KeepExcept(&[])
    }

    fn prepare_for_subresource_update(&self, sub: Subresource, old: &Value, new: &mut Value) {
        let now = apimachinery::time::now_rfc3339();
        match sub {
            Subresource::Approval => {
                populate_condition_timestamps(new, old, &now);
                let conditions = new.pointer("/status/conditions").cloned();
                let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
                if let Some(st) = status.as_object_mut() {
                    match conditions {
                        Some(c) => st.insert("conditions".into(), c),
                        None => st.remove("conditions"),
                    };
                }
                if let Some(o) = new.as_object_mut() {
                    o.insert("status".into(), status);
                }
            }
            _ => {
                preserve_condition_instances(new, old, "Approved");
                preserve_condition_instances(new, old, "Denied");
                populate_condition_timestamps(new, old, &now);
            }
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.csr(e, obj, None))
    }

    fn validate_subresource_update(
        &self,
        def: &ResourceDef,
        sub: Subresource,
        obj: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        Ctx::new(def, Some(old)).check(|v, e| v.csr(e, obj, Some(sub)))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CSR)
    }
}

fn conditions(v: &Value) -> &[Value] {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn cond_str<'a>(c: &'a Value, f: &str) -> &'a str {
    c.get(f).and_then(Value::as_str).unwrap_or("")
}

/// `preserveConditionInstances`: when `new` has as many conditions of `ty` as `old`,
/// they are `old`'s.
fn preserve_condition_instances(new: &mut Value, old: &Value, ty: &str) {
    let old_c: Vec<Value> = conditions(old)
        .iter()
        .filter(|c| cond_str(c, "type") == ty)
        .cloned()
        .collect();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let idx: Vec<usize> = (0..list.len())
        .filter(|i| cond_str(&list[*i], "type") == ty)
        .collect();
    if idx.len() != old_c.len() {
        return;
    }
    for (i, c) in idx.into_iter().zip(old_c) {
        list[i] = c;
    }
}

/// `populateConditionTimestamps`: a condition without `lastUpdateTime` gets now; one
/// without `lastTransitionTime` the old one of the same type and status, else now.
fn populate_condition_timestamps(new: &mut Value, old: &Value, now: &str) {
    let old_c = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for c in list.iter_mut() {
        let (ty, status) = (
            cond_str(c, "type").to_string(),
            cond_str(c, "status").to_string(),
        );
        let Some(m) = c.as_object_mut() else { continue };
        if m.get("lastUpdateTime").is_none_or(Value::is_null) {
            m.insert("lastUpdateTime".into(), json!(now));
        }
        if m.get("lastTransitionTime").is_none_or(Value::is_null) {
            let t = old_c
                .iter()
                .find(|o| {
                    cond_str(o, "type") == ty
                        && cond_str(o, "status") == status
                        && !cond_str(o, "lastTransitionTime").is_empty()
                })
                .map_or(now, |o| cond_str(o, "lastTransitionTime"));
            m.insert("lastTransitionTime".into(), json!(t));
        }
    }
}

pub(crate) mod validation;

/// Upstream's `CertificateSubjectRestriction` admission plugin (on by default): a CSR
/// created for `kubernetes.io/kube-apiserver-client` may not ask for the
/// `system:masters` group; answered 403 as upstream.
pub(crate) fn subject_restriction(def: &ResourceDef, obj: &Value) -> ApiResult<()> {
    const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
    if def.group != "certificates.k8s.io" || def.plural != "certificatesigningrequests" {
        return Ok(());
    }
    if obj.pointer("/spec/signerName").and_then(Value::as_str) != Some(SIGNER) {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let forbidden = |why: String| {
        Err(ApiError::forbidden(format!(
            "certificatesigningrequests.certificates.k8s.io {} is forbidden: {why}",
            apimachinery::gofmt::quote(name)
        ))
        .with_details(def.group, def.plural, name))
    };
    let request = validation::bytes_field(obj, "/spec/request").unwrap_or_default();
    match apimachinery::x509::parse_csr(&request) {
        Err(e) => forbidden(format!("failed to parse CSR: {e}")),
        Ok(r) if r.organizations.iter().any(|o| o == "system:masters") => forbidden(format!(
            "use of {SIGNER} signer with system:masters group is not allowed"
        )),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests;

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    const CSR_SPEC: &str = "io.k8s.api.certificates.v1.CertificateSigningRequestSpec";

    fn csr_condition(v: &Value) -> String {
        let has = |ty: &str| {
            arr(v, "/status/conditions")
                .iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        };
        let mut status = if has("Denied") {
            "Denied".to_string()
        } else if has("Approved") {
            "Approved".to_string()
        } else {
            "Pending".to_string()
        };
        if has("Failed") {
            status.push_str(",Failed");
        }
        if !s(v, "/status/certificate").is_empty() {
            status.push_str(",Issued");
        }
        status
    }

    /// CertificateSigningRequests.
    pub(crate) static CSR: Printer = Printer {
        columns: &[
            NAME,
            AGE,
            string("SignerName", field(CSR_SPEC, "signerName")),
            string("Requestor", field(CSR_SPEC, "request")),
            string("RequestedDuration", field(CSR_SPEC, "expirationSeconds")),
            string(
                "Condition",
                field(
                    "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
                    "conditions",
                ),
            ),
        ],
        print: |v, now| {
            let signer = opt_s(v, "/spec/signerName")
                .filter(|x| !x.is_empty())
                .unwrap_or("<none>");
            let duration = v
                .pointer("/spec/expirationSeconds")
                .and_then(Value::as_i64)
                .map_or_else(
                    || "<none>".to_string(),
                    |secs| human_duration(secs.saturating_mul(1_000_000_000)),
                );
            Row::of(vec![
                name(v),
                age(v, now),
                json!(signer),
                json!(s(v, "/spec/username")),
                json!(duration),
                json!(csr_condition(v)),
            ])
        },
    };
}
