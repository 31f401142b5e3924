//! CronJob (`batch/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Subresource};
use crate::registry::catalog::{Phase, StatusMeta, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;

/// The `batch/v1` kind.
pub static KIND: Kind = Kind::new(&["cj"], &CronJobStrategy).in_all();

/// What CronJob does differently.
pub struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Status]
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    fn default(&self, def: &ResourceDef, obj: &mut Value, phase: Phase) {
        crate::registry::defaults::legacy(def, obj, phase);
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).legacy(obj)
    }

    fn printer(&self) -> Option<&'static Printer> {
        crate::registry::table::legacy("batch", "CronJob")
    }
}
