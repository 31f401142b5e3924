//! MutatingWebhookConfiguration (`admissionregistration.k8s.io/v1`): what it does differently from the generic store:
//! the webhook validation, defaults (plus `reinvocationPolicy: Never`) and table it
//! shares with ValidatingWebhookConfiguration.

use serde_json::Value;

use super::validatingwebhookconfiguration::webhook;
use crate::registry::catalog::{Kind, Phase, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `admissionregistration.k8s.io/v1` kind.
pub static KIND: Kind =
    Kind::new(&[], &MutatingWebhookConfigurationStrategy).in_categories(&["api-extensions"]);

/// What MutatingWebhookConfiguration does differently.
pub struct MutatingWebhookConfigurationStrategy;

impl Strategy for MutatingWebhookConfigurationStrategy {
    fn uses_generation(&self) -> bool {
        true
    }

    /// Upstream's `PrepareForUpdate`: the generation moves when `webhooks` changes.
    fn bumps_generation(&self, _def: &ResourceDef, old: &Value, new: &Value) -> bool {
        old.get("webhooks") != new.get("webhooks")
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, _phase: Phase) {
        webhook::defaults(obj, true);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.webhook_configuration(e, obj, true))
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&webhook::PRINTER)
    }
}
