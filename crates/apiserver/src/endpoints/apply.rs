//! PATCH with `application/apply-patch+yaml`: server-side apply, creating the object
//! when it does not exist.

use axum::http::HeaderMap;
use serde_json::Value;

use super::write::{check_body, ensure_name_matches, Decoded};
use super::{managed, Api, Reply};
use crate::endpoints::request::{Query, Target};
use crate::registry::catalog::Subresource;
use apimachinery::status::{ApiError, ApiResult};

impl Api {
    pub(super) async fn server_side_apply(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        config: Value,
    ) -> ApiResult<Reply> {
        let def = target.resource;
        let sub = target.subresource;
        if matches!(
            sub,
            Some(
                Subresource::Scale
                    | Subresource::Binding
                    | Subresource::Eviction
                    | Subresource::Token
                    | Subresource::Finalize
                    | Subresource::Approval
            )
        ) {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "server-side apply is not supported on the {} subresource",
                    sub.map(Subresource::name).unwrap_or_default()
                ),
            ));
        }
        let mut opts = managed::write_options(query, headers, "PatchOptions", true)?;
        let Decoded {
            obj: mut config,
            warnings,
        } = check_body(def, config, Vec::new(), &opts)?;
        ensure_name_matches(target, &mut config)?;
        let manager = opts.field_manager.clone().unwrap_or_default();
        let force = opts.force;
        opts.applied = true;
        let updated = self
            .apply_update(target, &opts, None, |old| {
                managed::apply(def, sub, &manager, Some(old), &config, force)
            })
            .await;
        match updated {
            Err(e) if e.code == 404 && sub.is_none() && e.reason == "NotFound" => {
                let obj = type_first(managed::apply(def, None, &manager, None, &config, force)?);
                self.create_object(target, &opts, obj, warnings, true).await
            }
            Err(e) => Err(e),
            Ok(reply) => Ok(reply.with_warnings(warnings)),
        }
    }
}

/// `kind` and `apiVersion` lead, as upstream serialises objects (a merge onto nothing
/// builds the object in the applied configuration's field order).
fn type_first(mut obj: Value) -> Value {
    if let Some(o) = obj.as_object_mut() {
        let rest: Vec<(String, Value)> = std::mem::take(o).into_iter().collect();
        for key in ["kind", "apiVersion"] {
            if let Some((_, v)) = rest.iter().find(|(k, _)| k == key) {
                o.insert(key.to_string(), v.clone());
            }
        }
        o.extend(
            rest.into_iter()
                .filter(|(k, _)| k != "kind" && k != "apiVersion"),
        );
    }
    obj
}
