//! HorizontalPodAutoscaler (`autoscaling/v2`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `autoscaling/v2` kind.
pub static KIND: Kind = Kind::new(&["hpa"], &HorizontalPodAutoscalerStrategy).in_all();

/// `autoscaling/v1`, served from `autoscaling/v2` storage.
pub static KIND_V1: Kind = Kind::new(&["hpa"], &HorizontalPodAutoscalerStrategy)
    .in_all()
    .stored_as("autoscaling", "v2");

/// What HorizontalPodAutoscaler does differently.
pub struct HorizontalPodAutoscalerStrategy;

impl Strategy for HorizontalPodAutoscalerStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("autoscaling", "HorizontalPodAutoscaler")
    }

    fn convert(&self, obj: Value, from: &str, to: &str) -> Result<Value, String> {
        crate::registry::conversion::convert("HorizontalPodAutoscaler", from, to, obj)
    }
}
