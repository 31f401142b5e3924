//! Taints and tolerations (upstream `k8s.io/api/core/v1` `Toleration.ToleratesTaint`),
//! shared by the scheduler's filters and the DaemonSet controller.

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// Whether `t` tolerates `taint`: an empty effect matches every effect; an empty key
/// with `Exists` matches every taint; `Exists` matches any value of its key, `Equal`
/// (the default) only the same value.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if effect != taint.effect {
            return false;
        }
    }
    let key = t.key.as_deref().unwrap_or("");
    let op = t.operator.as_deref().unwrap_or("");
    if key.is_empty() {
        return op == "Exists";
    }
    if key != taint.key {
        return false;
    }
    match op {
        "Exists" => true,
        "Equal" | "" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}
