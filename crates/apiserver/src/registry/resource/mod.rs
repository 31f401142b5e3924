//! `resource.k8s.io`: dynamic resource allocation (DRA): DeviceClasses, ResourceClaims
//! (with their status), ResourceClaimTemplates and ResourceSlices. `deviceTaintRules`
//! are alpha in 1.36 and not served by default, so they are not here.

pub mod deviceclass;
pub mod resourceclaim;
pub mod resourceclaimtemplate;
pub mod resourceslice;
pub(crate) mod validation;

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// `SetDefaults_ExactDeviceRequest` / `SetDefaults_DeviceSubRequest`: allocation mode
    /// `ExactCount` with a count of 1; request tolerations' operator `Equal`.
    fn request(r: &mut Obj) {
        default_str(r, "allocationMode", "ExactCount");
        if str_at(r, "allocationMode") == "ExactCount" && is_zero_num(r, "count") {
            r.insert("count".into(), json!(1));
        }
        each_obj(r, "tolerations", |t| default_str(t, "operator", "Equal"));
    }

    /// The defaults of a `DeviceClaim` (`spec.devices` of a claim or template).
    pub(crate) fn device_claim(claim_spec: &mut Obj) {
        let Some(devices) = child(claim_spec, "devices") else {
            return;
        };
        each_obj(devices, "requests", |req| {
            if let Some(exactly) = child(req, "exactly") {
                request(exactly);
            }
            each_obj(req, "firstAvailable", request);
        });
    }
}
