//! The ResourceQuota admission plugin (upstream
//! `apiserver/pkg/admission/plugin/resourcequota` and
//! `plugin/pkg/admission/resourcequota`): the last validating plugin. A create (or an
//! update that changes what an object uses) is checked against every quota of its
//! namespace that matches it; when allowed, each such quota's `status.used` is charged
//! with a resourceVersion-checked write, retried on conflict as upstream.
//!
//! [`check_request`] is the decision (pure, tested with upstream's tables); [`admit`]
//! and [`charge`] do the reads and writes the write endpoints call.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::registry::catalog::{Catalog, ResourceDef};
use crate::storage::store::{object_key, Store, StoredObject, Table, WriteAction};
use apimachinery::quota::resources::{self, ResourceList};
use apimachinery::quota::{Evaluator, Operation, Quota};
use apimachinery::status::{ApiError, ApiResult};

/// How often a conflicting quota write is retried (upstream `checkQuotas(..., 3)`).
const RETRIES: usize = 3;

/// What an admitted request charges one quota.
#[derive(Clone, Debug)]
pub(crate) struct Charge {
    /// Index of the quota in the list [`check_request`] was given.
    pub index: usize,
    /// The usage the request adds (masked to the quota's hard names).
    pub requested: ResourceList,
    /// The quota's `status.used` with the request charged.
    pub new_used: ResourceList,
}

/// `hasUsageStats`: whether every restricted name of `status.hard` has a `status.used`
/// value (a quota the controller has not yet counted blocks what it restricts).
pub(crate) fn has_usage_stats(quota: &Quota, restricted: &[String]) -> bool {
    quota
        .status_hard
        .keys()
        .filter(|k| restricted.contains(k))
        .all(|k| quota.status_used.contains_key(k))
}

/// `CheckRequest`: the charges of a request on `quotas`, or the reason it is forbidden
/// (the text after `<resource> "<name>" is forbidden: `). `old` is the stored object of
/// an update.
pub(crate) fn check_request(
    quotas: &[Quota],
    evaluator: &Evaluator,
    op: Operation,
    subresource: Option<&str>,
    obj: &Value,
    old: Option<&Value>,
    now: DateTime<Utc>,
) -> Result<Vec<Charge>, String> {
    if !evaluator.handles(op, subresource, obj, old) {
        return Ok(Vec::new());
    }
    let mut interesting = Vec::new();
    for (i, q) in quotas.iter().enumerate() {
        if !evaluator.matches(q, obj)? {
            continue;
        }
        let hard = resources::resource_names(&q.status_hard);
        let restricted = evaluator.matching_resources(&hard);
        if let Err(e) = evaluator.constraints(&restricted, obj) {
            return Err(format!("failed quota: {}: {e}", q.name));
        }
        if !has_usage_stats(q, &restricted) {
            let mut names = restricted.clone();
            names.sort();
            names.dedup();
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                q.name,
                names.join(",")
            ));
        }
        interesting.push(i);
    }
    let mut delta = evaluator.usage(obj, now);
    let negative = resources::is_negative(&delta);
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    if op == Operation::Update {
        let Some(old) = old else {
            return Err(
                "unable to get previous usage since prior version of object was not found".into(),
            );
        };
        // charge the difference unless this is a create-on-update
        let has_rv = old
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty());
        if has_rv {
            delta = resources::subtract_non_negative(&delta, &evaluator.usage(old, now));
        }
    }
    let delta = resources::remove_zeros(&delta);
    if resources::is_zero(&delta) || interesting.is_empty() {
        return Ok(Vec::new());
    }
    let mut charges = Vec::new();
    for i in interesting {
        let q = &quotas[i];
        let hard = resources::resource_names(&q.status_hard);
        let requested = resources::mask(&delta, &hard);
        let new_used = resources::add(&q.status_used, &requested);
        let masked = resources::mask(&new_used, &resources::resource_names(&requested));
        let (allowed, exceeded) = resources::less_than_or_equal(&masked, &q.status_hard);
        if !allowed {
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                q.name,
                resources::pretty_print(&resources::mask(&requested, &exceeded)),
                resources::pretty_print(&resources::mask(&q.status_used, &exceeded)),
                resources::pretty_print(&resources::mask(&q.status_hard, &exceeded)),
            ));
        }
        charges.push(Charge {
            index: i,
            requested,
            new_used,
        });
    }
    Ok(charges)
}

/// `admission.NewForbidden`: 403 `<resource>[.<group>] "<name>" is forbidden: <why>`.
pub(crate) fn forbidden(def: &ResourceDef, name: &str, why: &str) -> ApiError {
    let name = if name.is_empty() { "Unknown" } else { name };
    let mut e = ApiError::forbidden(format!(
        "{} \"{name}\" is forbidden: {why}",
        def.qualified_plural()
    ));
    e.name = Some(name.to_string());
    e.kind = Some(def.plural.to_string());
    if !def.group.is_empty() {
        e.group = Some(def.group.to_string());
    }
    e
}

/// The storage key of ResourceQuotas.
pub(crate) fn quota_table() -> String {
    quota_def().storage_key()
}

fn quota_def() -> &'static ResourceDef {
    Catalog::builtin()
        .lookup("", "v1", "resourcequotas")
        .expect("resourcequotas are served")
}

/// The quotas of namespace `ns` in `table`, sorted by name.
pub(crate) fn namespace_quotas(table: Option<&Table>, ns: &str) -> ApiResult<Vec<Quota>> {
    let Some(table) = table else {
        return Ok(Vec::new());
    };
    let prefix = format!("{ns}/");
    let mut out = Vec::new();
    for (key, obj) in table.range(prefix.clone()..) {
        if !key.starts_with(&prefix) {
            break;
        }
        out.push(Quota::from_json(&obj.value()?));
    }
    Ok(out)
}

/// The evaluator of a request on `def`, when quota checks it.
pub(crate) fn evaluator_for(def: &ResourceDef) -> Option<Evaluator> {
    if !def.namespaced {
        return None;
    }
    let group = def.storage_of.map(|(g, _)| g).unwrap_or(def.group);
    Evaluator::for_resource(group, def.plural)
}

/// ResourceQuota admission of a create: check `obj` against the quotas of `ns` and
/// charge them before the object is stored (nothing with `dry_run`).
pub(crate) async fn admit(
    store: &Store,
    def: &'static ResourceDef,
    ns: Option<&str>,
    obj: &Value,
    dry_run: bool,
) -> ApiResult<()> {
    let (Some(ns), Some(evaluator)) = (ns, evaluator_for(def)) else {
        return Ok(());
    };
    if !evaluator.handles(Operation::Create, None, obj, None) {
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .or_else(|| {
            obj.pointer("/metadata/generateName")
                .and_then(Value::as_str)
        })
        .unwrap_or("");
    let qdef = quota_def();
    let key = qdef.storage_key();
    let mut quotas = namespace_quotas(Some(&store.snapshot(&key).table), ns)?;
    let mut retries = RETRIES;
    loop {
        if quotas.is_empty() {
            return Ok(());
        }
        let charges = check_request(
            &quotas,
            &evaluator,
            Operation::Create,
            None,
            obj,
            None,
            Utc::now(),
        )
        .map_err(|why| forbidden(def, name, &why))?;
        if dry_run || charges.is_empty() {
            return Ok(());
        }
        let mut failed = Vec::new();
        let mut last = None;
        for c in &charges {
            let q = &quotas[c.index];
            if let Err(e) = write_used(store, q, &c.new_used).await {
                failed.push(q.name.clone());
                last = Some(e);
            }
        }
        let Some(err) = last else {
            return Ok(());
        };
        if retries == 0 {
            return Err(err);
        }
        retries -= 1;
        // retry the quotas that conflicted, as they are now
        quotas = namespace_quotas(Some(&store.snapshot(&key).table), ns)?
            .into_iter()
            .filter(|q| failed.contains(&q.name))
            .collect();
    }
}

/// The decision for an update, taken while the store decides the write (`quotas` as the
/// store holds them): the charges to make once the object is stored, or 403.
pub(crate) fn admit_update(
    def: &'static ResourceDef,
    table: Option<&Table>,
    ns: Option<&str>,
    subresource: Option<&str>,
    new: &Value,
    old: &Value,
) -> ApiResult<Vec<(Quota, ResourceList)>> {
    let (Some(ns), Some(evaluator)) = (ns, evaluator_for(def)) else {
        return Ok(Vec::new());
    };
    if !evaluator.handles(Operation::Update, subresource, new, Some(old)) {
        return Ok(Vec::new());
    }
    let quotas = namespace_quotas(table, ns)?;
    if quotas.is_empty() {
        return Ok(Vec::new());
    }
    let name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let charges = check_request(
        &quotas,
        &evaluator,
        Operation::Update,
        subresource,
        new,
        Some(old),
        Utc::now(),
    )
    .map_err(|why| forbidden(def, name, &why))?;
    Ok(charges
        .into_iter()
        .map(|c| (quotas[c.index].clone(), c.requested))
        .collect())
}

/// Charge `requested` to each quota (after an update was stored), re-reading a quota
/// whose write conflicted.
pub(crate) async fn charge(store: &Store, charges: Vec<(Quota, ResourceList)>) -> ApiResult<()> {
    let key = quota_def().storage_key();
    for (mut q, requested) in charges {
        let mut retries = RETRIES;
        loop {
            let new_used = resources::add(&q.status_used, &requested);
            match write_used(store, &q, &new_used).await {
                Ok(()) => break,
                Err(e) if retries == 0 => return Err(e),
                Err(_) => {
                    retries -= 1;
                    let Some(current) = store.get(&key, &object_key(Some(&q.namespace), &q.name))
                    else {
                        break;
                    };
                    q = Quota::from_json(&current.value()?);
                }
            }
        }
    }
    Ok(())
}

/// Write `used` as `status.used` of `quota`, only if the quota is still at the
/// resourceVersion it was read at (409 otherwise).
async fn write_used(store: &Store, quota: &Quota, used: &ResourceList) -> ApiResult<()> {
    let def = quota_def();
    let selectable: Vec<&str> = crate::registry::versions::storage_def(def)
        .field_selectors
        .to_vec();
    let key = object_key(Some(&quota.namespace), &quota.name);
    store
        .write(
            &def.storage_key(),
            &key,
            &selectable,
            false,
            |current: Option<&Arc<StoredObject>>, _| {
                let Some(current) = current else {
                    return Err(ApiError::not_found("", "resourcequotas", &quota.name));
                };
                if current.rv.to_string() != quota.resource_version {
                    return Err(ApiError::stale("", "resourcequotas", &quota.name));
                }
                let mut v = current.value()?;
                let status = v
                    .as_object_mut()
                    .map(|o| o.entry("status").or_insert_with(|| serde_json::json!({})));
                if let Some(Value::Object(status)) = status {
                    status.insert("used".into(), resources::to_json(used));
                }
                Ok(WriteAction::Put(crate::registry::versions::to_storage(
                    def, v,
                )?))
            },
        )
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests;
