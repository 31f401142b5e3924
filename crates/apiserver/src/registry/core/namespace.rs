//! Namespace (`core/v1`): what it does differently from the generic store.

use serde_json::Value;

use crate::registry::catalog::{
    DeleteRequest, Deletion, Kind, Phase, ResourceDef, StatusMeta, Strategy, Subresource,
};
use crate::registry::rest;
use crate::registry::table::Printer;
use crate::registry::validation::Ctx;
use apimachinery::field::Cause;
use serde_json::json;

/// The `core/v1` kind.
pub static KIND: Kind = Kind::new(&["ns"], &NamespaceStrategy);

/// What Namespace does differently.
pub struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn subresources(&self) -> &'static [Subresource] {
        &[Subresource::Finalize, Subresource::Status]
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.phase"]
    }

    fn status_update_metadata(&self) -> StatusMeta {
        StatusMeta::KeepExcept(&[])
    }

    fn default(&self, _def: &ResourceDef, obj: &mut Value, phase: Phase) {
        if let Some(o) = obj.as_object_mut() {
            defaults::apply(o, phase);
        }
    }

    fn validate(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        Ctx::new(def, old).check(|v, e| v.namespace(e, obj))
    }

    fn delete_collection(&self) -> bool {
        false
    }

    /// `spec.finalizers` change only through `/finalize`.
    fn prepare_for_update(&self, old: &Value, new: &mut Value) {
        if let (Some(o), Some(f)) = (new.as_object_mut(), old.pointer("/spec/finalizers")) {
            let spec = o.entry("spec").or_insert_with(|| json!({}));
            if let Some(s) = spec.as_object_mut() {
                s.insert("finalizers".into(), f.clone());
            }
        }
    }

    /// Upstream's namespace REST `Delete`: gone at once without finalizers; otherwise
    /// `Terminating` with a deletion timestamp (and the propagation finalizer) until the
    /// namespace controller empties it and removes `kubernetes` from `spec.finalizers`.
    fn delete(&self, obj: &mut Value, req: &DeleteRequest<'_>) -> Deletion {
        let has = |ptr: &str| {
            obj.pointer(ptr)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        if !has("/spec/finalizers") && !has("/metadata/finalizers") {
            return Deletion::Now;
        }
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Deletion::Unchanged;
        }
        if let Some(m) = rest::meta_mut(obj) {
            m.insert(
                "deletionTimestamp".into(),
                json!(apimachinery::time::now_rfc3339()),
            );
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        match req.propagation {
            Some("Orphan") => rest::add_finalizer(obj, "orphan"),
            Some("Foreground") => rest::add_finalizer(obj, "foregroundDeletion"),
            _ => {}
        }
        if let Some(o) = obj.as_object_mut() {
            let status = o.entry("status").or_insert_with(|| json!({}));
            if let Some(s) = status.as_object_mut() {
                s.insert("phase".into(), json!("Terminating"));
            }
        }
        Deletion::Keep
    }

    fn held_by_spec(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    }

    fn printer(&self) -> Option<&'static Printer> {
        Some(&printer::NAMESPACE)
    }
}

pub(crate) mod validation {
    use crate::registry::validation::prelude::*;

    impl Ctx<'_> {
        pub(crate) fn namespace(&self, e: &mut Errs, o: &Value) {
            if let Some(old) = self.old {
                self.meta_update(e, o, old, true);
                return;
            }
            self.meta_create(e, o, NameRule::Label, true);
            if let Some(spec) = get(o, "spec") {
                for f in items(spec, "finalizers").iter().filter_map(|v| v.as_str()) {
                    e.each("spec.finalizers", f, qualified_name_errs(f));
                    kube_finalizer_name(e, f, "spec.finalizers");
                }
            }
        }
    }
}

pub(crate) mod defaults {
    use crate::registry::defaults::prelude::*;

    /// The kind's defaults in `phase`.
    pub(crate) fn apply(o: &mut Obj, phase: Phase) {
        namespace(o, phase);
    }

    pub(crate) fn namespace(o: &mut Obj, phase: Phase) {
        let name = o
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !name.is_empty() {
            if let Some(meta) = child_or_insert(o, "metadata") {
                if let Some(labels) = child_or_insert(meta, "labels") {
                    labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
                }
            }
        }
        if phase.create() {
            if let Some(spec) = child_or_insert(o, "spec") {
                match spec.get_mut("finalizers") {
                    None | Some(Value::Null) => {
                        spec.insert("finalizers".into(), json!(["kubernetes"]));
                    }
                    Some(Value::Array(f))
                        if !f.iter().any(|v| v.as_str() == Some("kubernetes")) =>
                    {
                        f.push(json!("kubernetes"));
                    }
                    _ => {}
                }
            }
        }
        if let Some(status) = child_or_insert(o, "status") {
            default_str(status, "phase", "Active");
        }
    }
}

pub(crate) mod printer {
    use crate::registry::table::prelude::*;

    /// Namespaces.
    pub(crate) static NAMESPACE: Printer = Printer {
        columns: &[
            NAME,
            string("Status", text("The status of the namespace")),
            AGE,
        ],
        print: |v, now| Row::of(vec![name(v), json!(s(v, "/status/phase")), age(v, now)]),
    };
}
