//! POST on `pods/<name>/eviction`: a pod deleted as its PodDisruptionBudget allows, as
//! upstream's `EvictionREST.Create`. The decisions (which pods skip the budget, the
//! budget's check and decrement, the `DisruptionTarget` condition) are
//! [`crate::registry::policy::eviction`]'s; this reads and writes the store.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::{json, Value};

use super::body::{decode, Expected};
use super::delete::DeleteOptions;
use super::{Api, Reply};
use crate::endpoints::request::{Query, Target, WriteOptions};
use crate::registry::catalog::{Catalog, ResourceDef};
use crate::registry::policy::eviction as rules;
use crate::registry::rest;
use crate::storage::store::{object_key, StoredObject, WriteAction};
use apimachinery::status::{ApiError, ApiResult};

/// Upstream `EvictionsRetry`: attempts on conflicts, and the pause between them.
const RETRY_STEPS: usize = 20;
const RETRY_PAUSE: Duration = Duration::from_millis(500);

fn is_conflict(e: &ApiError) -> bool {
    e.code == 409 && e.reason == "Conflict"
}

/// Upstream `propagateDryRun`: the request's `dryRun` goes into the Eviction's delete
/// options; both given and different is an error.
fn propagate_dry_run(eviction: &Value, query_dry_run: Option<&str>) -> ApiResult<Value> {
    let query: Vec<Value> = query_dry_run
        .filter(|d| !d.is_empty())
        .map(|d| vec![json!(d)])
        .unwrap_or_default();
    let mut opts = match eviction.get("deleteOptions") {
        Some(o @ Value::Object(_)) => o.clone(),
        _ => return Ok(json!({"dryRun": query})),
    };
    let given: Vec<Value> = opts
        .get("dryRun")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if given.is_empty() {
        opts["dryRun"] = json!(query);
    } else if !query.is_empty() && query != given {
        let show = |v: &[Value]| {
            let items: Vec<&str> = v.iter().filter_map(Value::as_str).collect();
            format!("[{}]", items.join(" "))
        };
        return Err(ApiError::new(
            500,
            "InternalError",
            format!(
                "Non-matching dry-run options in request and content: {} and {}",
                show(&query),
                show(&given)
            ),
        ));
    }
    Ok(opts)
}

impl Api {
    /// POST on `pods/<name>/eviction`.
    pub(super) async fn evict(
        &self,
        target: &Target,
        query: &Query,
        headers: &HeaderMap,
        body: &Bytes,
    ) -> ApiResult<Reply> {
        let pods = target.resource;
        let ns = target.namespace.clone().unwrap_or_default();
        let name = target.name.clone().unwrap_or_default();
        let write_opts = WriteOptions::parse(query)?;
        let (mut eviction, _) = decode(
            headers,
            body,
            &Expected::object("Eviction", "policy/v1", true),
        )?;
        rules::check_body(&name, &eviction)?;
        // dynamic admission: a CREATE of pods/eviction with the Eviction as its object
        self.admit_subresource_create(
            target,
            &write_opts,
            ("policy", "v1", "Eviction"),
            &mut eviction,
        )
        .await?;
        let given = propagate_dry_run(&eviction, write_opts.dry_run.then_some("All"))?;
        let given = serde_json::from_value(given)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
        let original = DeleteOptions::from_given(given)?;
        let key = object_key(Some(&ns), &name);

        // terminal, pending and terminating pods go without asking their budget
        let retry_conflicts = original.resource_version.is_none();
        let mut attempt = 0;
        let pod = loop {
            attempt += 1;
            let Some(stored) = self.store.get(&pods.storage_key(), &key) else {
                return Err(ApiError::not_found("", "pods", &name));
            };
            let pod = stored.value()?;
            if !rules::can_ignore_pdb(&pod) {
                break pod;
            }
            let mut opts = original.clone();
            if rules::should_enforce_resource_version(&pod) && original.resource_version.is_none() {
                opts.resource_version = Some(stored.rv.to_string());
            }
            match self.mark_and_delete(pods, &ns, &name, opts).await {
                Ok(()) => return Ok(super::write::created_success()),
                Err(e) if retry_conflicts && is_conflict(&e) && attempt < RETRY_STEPS => {
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(e) => return Err(e),
            }
        };

        let pdb_def = Catalog::builtin()
            .lookup("policy", "v1", "poddisruptionbudgets")
            .ok_or_else(|| ApiError::internal("poddisruptionbudgets are not served"))?;
        let snapshot = self.store.snapshot(&pdb_def.storage_key());
        let prefix = format!("{ns}/");
        let mut budgets = Vec::new();
        for (k, o) in snapshot.table.iter() {
            if k.starts_with(&prefix) {
                budgets.push(o.value()?);
            }
        }
        let matching = rules::matching_budgets(&pod, budgets.iter());
        if matching.len() > 1 {
            return Ok(Reply::json(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": rules::MULTIPLE_BUDGETS,
                    "code": 500,
                }),
            ));
        }
        let mut conditional = false;
        let mut pdb_name = String::new();
        if let Some(pdb) = matching.first() {
            pdb_name = pdb
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if rules::unhealthy_pod_may_go(&pod, pdb) {
                conditional = true;
            } else {
                self.check_and_decrement(pdb_def, &ns, &pdb_name, &name, original.dry_run)
                    .await?;
            }
        }

        let mut opts = original.clone();
        if conditional {
            // the pod must not have become ready since it was judged
            opts.resource_version = pod
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        match self.mark_and_delete(pods, &ns, &name, opts).await {
            Ok(()) => Ok(super::write::created_success()),
            Err(e) if is_conflict(&e) && conditional && original.resource_version.is_none() => {
                Err(rules::still_processing(&pdb_name))
            }
            Err(e) => Err(e),
        }
    }

    /// Verify and decrement the budget `pdb_name` for the pod `pod` in one store write
    /// (the read and the write are atomic, so upstream's retry on conflicting budget
    /// updates has nothing to retry); a dry run writes nothing.
    async fn check_and_decrement(
        &self,
        def: &'static ResourceDef,
        ns: &str,
        pdb_name: &str,
        pod: &str,
        dry_run: bool,
    ) -> ApiResult<()> {
        let selectable: Vec<&str> = def.field_selectors.to_vec();
        let now = apimachinery::time::now_rfc3339();
        self.store
            .write(
                &def.storage_key(),
                &object_key(Some(ns), pdb_name),
                &selectable,
                dry_run,
                |current, _| {
                    let Some(current) = current else {
                        return Err(ApiError::not_found(
                            "policy",
                            "poddisruptionbudgets",
                            pdb_name,
                        ));
                    };
                    let pdb = current.value()?;
                    match rules::check_and_decrement(&pdb, pod, dry_run, &now)? {
                        None => Ok(WriteAction::Unchanged(Arc::clone(current))),
                        Some(mut new) => {
                            rest::go_roundtrip(def, &mut new, rest::Mode::Storage);
                            super::managed::record_update(
                                def,
                                Some(crate::registry::catalog::Subresource::Status),
                                "kube-apiserver",
                                Some(&pdb),
                                &mut new,
                            );
                            Ok(WriteAction::Put(new))
                        }
                    }
                },
            )
            .await?;
        Ok(())
    }

    /// Upstream `addConditionAndDeletePod`: unless a dry run, set the pod's
    /// `DisruptionTarget` condition (checking the preconditions first, and moving a
    /// resourceVersion precondition on to the version this write makes), then delete
    /// the pod with `opts`.
    async fn mark_and_delete(
        &self,
        pods: &'static ResourceDef,
        ns: &str,
        name: &str,
        mut opts: DeleteOptions,
    ) -> ApiResult<()> {
        if !opts.dry_run {
            let selectable: Vec<&str> = pods.field_selectors.to_vec();
            let now = apimachinery::time::now_rfc3339();
            let check = opts.clone();
            let outcome = self
                .store
                .write(
                    &pods.storage_key(),
                    &object_key(Some(ns), name),
                    &selectable,
                    false,
                    |current, _| {
                        let Some(current) = current else {
                            return Err(ApiError::not_found("", "pods", name));
                        };
                        let pod = current.value()?;
                        precondition_conflict(&check, current, &pod, name)?;
                        let mut new = pod.clone();
                        rules::set_disruption_target(&mut new, &now);
                        rest::go_roundtrip(pods, &mut new, rest::Mode::Storage);
                        if new == pod {
                            return Ok(WriteAction::Unchanged(Arc::clone(current)));
                        }
                        Ok(WriteAction::Put(new))
                    },
                )
                .await?;
            if opts.resource_version.is_some() {
                opts.resource_version = Some(outcome.object.rv.to_string());
            }
        }
        self.delete_one(pods, Some(ns), name, &opts).await?;
        Ok(())
    }
}

/// The conflicts upstream's `getLatestPod` reports for unmet preconditions.
fn precondition_conflict(
    opts: &DeleteOptions,
    current: &StoredObject,
    pod: &Value,
    name: &str,
) -> ApiResult<()> {
    if let Some(uid) = opts.uid.as_deref().filter(|u| !u.is_empty()) {
        let have = rest::meta_str(pod, "uid").unwrap_or("");
        if uid != have {
            return Err(ApiError::conflict(
                "",
                "Pod",
                name,
                &format!("the UID in the precondition ({uid}) does not match the UID in record ({have}). The object might have been deleted and then recreated"),
            ));
        }
    }
    if let Some(rv) = opts.resource_version.as_deref().filter(|r| !r.is_empty()) {
        if rv != current.rv.to_string() {
            return Err(ApiError::conflict(
                "",
                "Pod",
                name,
                &format!("the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified", current.rv),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dry_run_propagation_as_upstream() {
        let none = json!({"metadata": {"name": "p"}});
        assert_eq!(
            propagate_dry_run(&none, None).unwrap(),
            json!({"dryRun": []})
        );
        assert_eq!(
            propagate_dry_run(&none, Some("All")).unwrap(),
            json!({"dryRun": ["All"]})
        );
        let given = json!({"deleteOptions": {"gracePeriodSeconds": 0}});
        assert_eq!(
            propagate_dry_run(&given, Some("All")).unwrap(),
            json!({"gracePeriodSeconds": 0, "dryRun": ["All"]})
        );
        let both = json!({"deleteOptions": {"dryRun": ["All"]}});
        assert_eq!(
            propagate_dry_run(&both, None).unwrap()["dryRun"],
            json!(["All"])
        );
        assert!(propagate_dry_run(&both, Some("All")).is_ok());
        let odd = json!({"deleteOptions": {"dryRun": ["Other"]}});
        let e = propagate_dry_run(&odd, Some("All")).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "Non-matching dry-run options in request and content: [All] and [Other]"
        );
    }
}
