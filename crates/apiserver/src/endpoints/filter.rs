//! Which stored objects a LIST or WATCH returns: namespace scope plus label and field
//! selectors, checked against the values kept beside each stored object.

use crate::registry::catalog::ResourceDef;
use crate::storage::store::StoredObject;
use apimachinery::selector::{FieldSelector, LabelSelector};
use apimachinery::status::{ApiError, ApiResult};

/// A compiled LIST/WATCH filter.
pub struct Filter {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Filter {
    /// Build from the request; bad selectors and unknown fields are 400s.
    pub fn new(
        def: &ResourceDef,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> ApiResult<Filter> {
        let labels = match label_selector {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match field_selector {
            Some(s) => {
                let f =
                    FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
                for r in f.requirements() {
                    if !def.selectable_fields().any(|k| k == r.field) {
                        let known: Vec<String> = def
                            .selectable_fields()
                            .map(|k| format!("\"{k}\""))
                            .collect();
                        return Err(ApiError::bad_request(format!(
                            "\"{}\" is not a known field selector: only {}",
                            r.field,
                            known.join(", ")
                        )));
                    }
                }
                Some(f)
            }
            None => None,
        };
        Ok(Filter {
            namespace: if def.namespaced {
                namespace.map(str::to_string)
            } else {
                None
            },
            labels: labels.filter(|l| !l.is_empty()),
            fields: fields.filter(|f| !f.is_empty()),
        })
    }

    /// The filter a LIST, WATCH or DELETECOLLECTION request asks for.
    pub fn for_request(
        target: &crate::endpoints::request::Target,
        opts: &crate::endpoints::request::ListOptions,
    ) -> ApiResult<Filter> {
        Filter::new(
            target.resource,
            target.namespace.as_deref(),
            opts.label_selector.as_deref(),
            opts.field_selector.as_deref(),
        )
    }

    /// The key prefix (`ns/`) objects must have, if any.
    pub fn key_prefix(&self) -> Option<String> {
        self.namespace.as_ref().map(|n| format!("{n}/"))
    }

    /// Whether the object at `key` passes.
    pub fn matches(&self, key: &str, obj: &StoredObject) -> bool {
        let (ns, name) = match key.split_once('/') {
            Some((ns, name)) => (ns, name),
            None => ("", key),
        };
        if let Some(want) = &self.namespace {
            if ns != want {
                return false;
            }
        }
        if let Some(l) = &self.labels {
            if !l.matches(|k| obj.label(k)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            let ok = f.matches(|field| match field {
                "metadata.name" => Some(name.to_string()),
                "metadata.namespace" => Some(ns.to_string()),
                other => obj.field(other).map(str::to_string),
            });
            if !ok {
                return false;
            }
        }
        true
    }
}
