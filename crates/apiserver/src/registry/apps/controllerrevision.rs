//! ControllerRevision (`apps/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{Kind, ResourceDef, Strategy};
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use apimachinery::names::NameRule;

/// The `apps/v1` kind.
pub static KIND: Kind = Kind::new(&[], &ControllerRevisionStrategy);

/// What ControllerRevision does differently.
pub struct ControllerRevisionStrategy;

impl Strategy for ControllerRevisionStrategy {
    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).meta_only(obj, NameRule::Subdomain)
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::CONTROLLER_REVISION)
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// `kind.group/name` (lower-cased kind and group) of the controlling owner, `<none>`.
    fn controller_name(v: &Value) -> String {
        let Some(owner) = arr(v, "/metadata/ownerReferences")
            .iter()
            .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        else {
            return "<none>".into();
        };
        let api_version = owner
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let group = api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default();
        let kind = owner.get("kind").and_then(Value::as_str).unwrap_or("");
        let owner_name = owner.get("name").and_then(Value::as_str).unwrap_or("");
        let group_kind = match (kind, group) {
            ("", "") => return owner_name.to_string(),
            (k, "") => k.to_string(),
            (k, g) => format!("{k}.{g}"),
        };
        format!("{}/{owner_name}", group_kind.to_lowercase())
    }

    /// ControllerRevisions (`apps/v1`).
    pub(crate) static CONTROLLER_REVISION: Printer = Printer {
        columns: &[
            NAME,
            string("Controller", text("Controller of the object")),
            string(
                "Revision",
                field("io.k8s.api.apps.v1.ControllerRevision", "revision"),
            ),
            AGE,
        ],
        print: |v, now| {
            Row::of(vec![
                name(v),
                json!(controller_name(v)),
                json!(int(v, "/revision")),
                age(v, now),
            ])
        },
    };
}
