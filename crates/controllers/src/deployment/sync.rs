//! Syncing a Deployment outside a rollout: finding or creating the new ReplicaSet (and
//! its revision), proportional scaling, history cleanup and the status.
//!
//! After upstream `pkg/controller/deployment/sync.go`:
//!
//! * **The new ReplicaSet** (`get_new_replica_set`): the oldest
//!   owned ReplicaSet whose template equals the Deployment's (ignoring
//!   `pod-template-hash`). Its revision becomes `max(old revisions) + 1` when lower (a
//!   rollback reuses the old ReplicaSet and remembers its former revision in
//!   `revision-history`); the Deployment's `deployment.kubernetes.io/revision` follows.
//!   When there is none it is created as `<name>-<hash>`, the hash of the template and
//!   `status.collisionCount`; a name taken by a ReplicaSet with another template is a hash
//!   collision: `collisionCount` is bumped and the next sync tries the next name.
//! * **Proportional scaling** ([`plan_scale`]): when `spec.replicas` changes while
//!   several ReplicaSets are active, the difference is shared in proportion to their
//!   sizes (from the `max-replicas` annotation), leftovers to the largest.
//! * **Cleanup** ([`plan_cleanup`]): old ReplicaSets scaled to zero beyond
//!   `revisionHistoryLimit` are deleted, lowest revisions first.
//! * **Status** ([`calculate_status`]): counts from the ReplicaSets' statuses and the
//!   `Available` condition.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet, ReplicaSetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::api::DeleteParams;

use coxswain_runtime::controller::Action;
use coxswain_runtime::events::EventType;
use coxswain_runtime::ObjectKey;

use super::util::*;
use super::{is_not_found, put_rs, DeploymentReconciler, Error};

/// The status as a server stores it: zero counts and empty lists omitted.
pub fn normalized(s: &DeploymentStatus) -> DeploymentStatus {
    let nz = |v: Option<i32>| v.filter(|x| *x != 0);
    DeploymentStatus {
        available_replicas: nz(s.available_replicas),
        collision_count: s.collision_count,
        conditions: s.conditions.clone().filter(|c| !c.is_empty()),
        observed_generation: s.observed_generation.filter(|g| *g != 0),
        ready_replicas: nz(s.ready_replicas),
        replicas: nz(s.replicas),
        terminating_replicas: s.terminating_replicas,
        unavailable_replicas: nz(s.unavailable_replicas),
        updated_replicas: nz(s.updated_replicas),
    }
}

/// Whether the Deployment's status already is `new` (semantically).
pub fn status_unchanged(d: &Deployment, new: &DeploymentStatus) -> bool {
    normalized(&d.status.clone().unwrap_or_default()) == normalized(new)
}

/// The status the ReplicaSets call for (upstream `calculateStatus`): counts, the
/// Deployment's conditions, and `Available` from `replicas - maxUnavailable`.
pub fn calculate_status(
    all: &[&ReplicaSet],
    new: Option<&ReplicaSet>,
    d: &Deployment,
    now: Timestamp,
) -> DeploymentStatus {
    let available = available_replica_count(all.iter().copied());
    let total = replica_count(all.iter().copied());
    let unavailable = (total - available).max(0);
    let current = d.status.clone().unwrap_or_default();
    let mut status = normalized(&DeploymentStatus {
        observed_generation: d.metadata.generation,
        replicas: Some(actual_replica_count(all.iter().copied())),
        updated_replicas: Some(new.map(rs_status_replicas).unwrap_or(0)),
        ready_replicas: Some(ready_replica_count(all.iter().copied())),
        available_replicas: Some(available),
        unavailable_replicas: Some(unavailable),
        collision_count: current.collision_count,
        conditions: current.conditions,
        terminating_replicas: None,
    });
    let cond = if available >= replicas(d) - max_unavailable(d) {
        new_condition(
            AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    } else {
        new_condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    };
    set_condition(&mut status, cond);
    status
}

/// The sizes proportional scaling gives the ReplicaSets (upstream `scale`), in the order
/// they are to be written; a ReplicaSet whose size and replicas annotations are already
/// right is left alone by the writer.
pub fn plan_scale(
    d: &Deployment,
    new: Option<&ReplicaSet>,
    old: &[ReplicaSet],
) -> Vec<(String, i32)> {
    let want = replicas(d);
    // one active ReplicaSet (or none: the newest) takes the whole size
    if let Some(rs) = find_active_or_latest(new, old) {
        if rs_replicas(rs) == want {
            return Vec::new();
        }
        return vec![(name(&rs.metadata).to_string(), want)];
    }
    // a saturated new ReplicaSet: the old ones go
    if new.is_some_and(|n| is_saturated(d, n)) {
        return filter_active(old)
            .iter()
            .map(|rs| (name(&rs.metadata).to_string(), 0))
            .collect();
    }
    if !is_rolling_update(d) {
        return Vec::new();
    }
    let mut all: Vec<&ReplicaSet> = filter_active(&old.iter().chain(new).collect::<Vec<_>>());
    let all_replicas = replica_count(all.iter().copied());
    let allowed = if want > 0 { want + max_surge(d) } else { 0 };
    let to_add = allowed - all_replicas;
    // larger first; on ties newer first when growing, older first when shrinking
    if to_add > 0 {
        sort_by_size_newer(&mut all);
    } else if to_add < 0 {
        sort_by_size_older(&mut all);
    }
    let mut added = 0;
    let mut sizes: Vec<i32> = Vec::with_capacity(all.len());
    for rs in &all {
        if to_add != 0 {
            let p = get_proportion(rs, d, to_add, added);
            sizes.push(rs_replicas(rs) + p);
            added += p;
        } else {
            sizes.push(rs_replicas(rs));
        }
    }
    if to_add != 0 {
        if let Some(first) = sizes.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
    }
    all.iter()
        .zip(sizes)
        .map(|(rs, n)| (name(&rs.metadata).to_string(), n))
        .collect()
}

/// The old ReplicaSets to delete beyond `revisionHistoryLimit` (upstream
/// `cleanupDeployment`): lowest revisions first, only those scaled to zero, without pods,
/// observed by their controller and not being deleted.
pub fn plan_cleanup(old: &[ReplicaSet], d: &Deployment) -> Vec<String> {
    if !has_revision_history_limit(d) {
        return Vec::new();
    }
    let limit = d.spec.revision_history_limit.unwrap_or(i32::MAX);
    let mut cleanable: Vec<&ReplicaSet> = old
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .collect();
    let diff = cleanable.len() as i64 - i64::from(limit);
    if diff <= 0 {
        return Vec::new();
    }
    sort_by_revision(&mut cleanable);
    cleanable
        .into_iter()
        .take(diff as usize)
        .filter(|rs| {
            let observed = rs
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            rs_status_replicas(rs) == 0
                && rs_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= observed
        })
        .map(|rs| name(&rs.metadata).to_string())
        .collect()
}

fn status_mut(d: &mut Deployment) -> &mut DeploymentStatus {
    d.status.get_or_insert_with(Default::default)
}

/// All ReplicaSets: the old ones and the new one.
pub(crate) fn all_of<'a>(
    old: &'a [ReplicaSet],
    new: Option<&'a ReplicaSet>,
) -> Vec<&'a ReplicaSet> {
    old.iter().chain(new).collect()
}

impl DeploymentReconciler {
    /// The new ReplicaSet (created when `create` and missing) and all old ones, with the
    /// revisions synced (upstream `getAllReplicaSetsAndSyncRevision`). Writes are
    /// reflected in `rs_list`.
    pub(crate) async fn get_all_replica_sets_and_sync_revision(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
        create: bool,
    ) -> Result<(Option<ReplicaSet>, Vec<ReplicaSet>), Error> {
        let (_, all_old) = find_old_replica_sets(d, rs_list);
        let old: Vec<ReplicaSet> = all_old.into_iter().cloned().collect();
        let new = self.get_new_replica_set(d, rs_list, &old, create).await?;
        Ok((new, old))
    }

    /// See the module documentation.
    pub(crate) async fn get_new_replica_set(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
        old: &[ReplicaSet],
        create: bool,
    ) -> Result<Option<ReplicaSet>, Error> {
        let now = Timestamp::now();
        let existing = find_new_replica_set(d, rs_list).cloned();
        let new_revision = (max_revision(old) + 1).to_string();
        let min_ready = d.spec.min_ready_seconds.unwrap_or(0);

        if let Some(mut rs) = existing {
            let annotations_updated = set_new_replica_set_annotations(
                d,
                &mut rs,
                &new_revision,
                true,
                MAX_REV_HISTORY_LENGTH_IN_CHARS,
            );
            let spec = &mut rs.spec;
            let min_ready_changed = spec.min_ready_seconds.unwrap_or(0) != min_ready;
            if annotations_updated || min_ready_changed {
                spec.min_ready_seconds = Some(min_ready).filter(|m| *m != 0);
                let updated = self.update_rs(&rs).await?;
                put_rs(rs_list, &updated);
                return Ok(Some(updated));
            }
            let rev = annotation(&rs.metadata, REVISION_ANNOTATION)
                .unwrap_or("")
                .to_string();
            let mut needs_update = set_deployment_revision(d, &rev);
            if has_progress_deadline(d) && deployment_condition(d, PROGRESSING).is_none() {
                let msg = format!("Found new replica set {:?}", name(&rs.metadata));
                set_condition(
                    status_mut(d),
                    new_condition(PROGRESSING, "True", FOUND_NEW_RS_REASON, &msg, now),
                );
                needs_update = true;
            }
            if needs_update {
                self.update_status(d).await?;
            }
            return Ok(Some(rs));
        }
        if !create {
            return Ok(None);
        }

        let new_rs = new_replica_set_for(d, old, &new_revision)
            .map_err(|e| self.invalid(d, "InvalidRollingUpdate", e))?;
        let new_replicas = rs_replicas(&new_rs);
        let rs_name = name(&new_rs.metadata).to_string();
        let (created, already_exists) = match self.client.create(&new_rs).await {
            Ok(rs) => (rs, false),
            Err(kube::Error::Api(s)) if s.is_already_exists() => {
                let rs = self.fetch_rs(d, &rs_name).await?;
                let uid = d.metadata.uid.as_deref().unwrap_or_default();
                if is_controlled_by(&rs.metadata, uid)
                    && equal_ignore_hash(&template(d), &rs_template(&rs))
                {
                    // a slow cache: it is ours already
                    (rs, true)
                } else {
                    let status = status_mut(d);
                    let before = status.collision_count.unwrap_or(0);
                    status.collision_count = Some(before.saturating_add(1));
                    if self.update_status(d).await.is_ok() {
                        tracing::info!(
                            deployment = %name(&d.metadata),
                            old_collision_count = before,
                            new_collision_count = before.saturating_add(1),
                            "found a hash collision for deployment - bumping collisionCount to resolve it"
                        );
                    }
                    return Err(Error::Other(format!(
                        "replicaset {rs_name:?} already exists with another template (hash collision)"
                    )));
                }
            }
            Err(e) if super::namespace_terminating(&e) => return Err(e.into()),
            Err(e) => {
                let msg = format!("Failed to create new replica set {rs_name:?}: {e}");
                if has_progress_deadline(d) {
                    set_condition(
                        status_mut(d),
                        new_condition(PROGRESSING, "False", FAILED_RS_CREATE_REASON, &msg, now),
                    );
                    // the creation error is what matters; a failed status write is retried with it
                    let _ = self.update_status(d).await;
                }
                self.event(
                    d,
                    EventType::Warning,
                    FAILED_RS_CREATE_REASON,
                    "CreateReplicaSet",
                    &msg,
                );
                return Err(e.into());
            }
        };
        if !already_exists && new_replicas > 0 {
            self.event(
                d,
                EventType::Normal,
                "ScalingReplicaSet",
                "ScaleReplicaSet",
                &format!("Scaled up replica set {rs_name} from 0 to {new_replicas}"),
            );
        }
        let mut needs_update = set_deployment_revision(d, &new_revision);
        if !already_exists && has_progress_deadline(d) {
            let msg = format!("Created new replica set {rs_name:?}");
            set_condition(
                status_mut(d),
                new_condition(PROGRESSING, "True", NEW_REPLICA_SET_REASON, &msg, now),
            );
            needs_update = true;
        }
        put_rs(rs_list, &created);
        if needs_update {
            self.update_status(d).await?;
        }
        Ok(Some(created))
    }

    /// A ReplicaSet by name: from the cache, else from the server.
    async fn fetch_rs(&self, d: &Deployment, rs_name: &str) -> Result<ReplicaSet, Error> {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        if let Some(rs) = self
            .client
            .get::<ReplicaSet>(&ObjectKey::namespaced(ns, rs_name))
            .await?
        {
            return Ok((*rs).clone());
        }
        let api: kube::Api<ReplicaSet> = kube::Api::namespaced(self.kube.clone(), ns);
        Ok(api.get(rs_name).await?)
    }

    /// Set the size of a ReplicaSet and its replicas annotations (upstream
    /// `scaleReplicaSet`); whether the size changed, and the stored ReplicaSet.
    pub(crate) async fn scale_replica_set(
        &self,
        rs: &ReplicaSet,
        to: i32,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        let from = rs_replicas(rs);
        let size_changes = from != to;
        let desired = replicas(d);
        let max = desired + max_surge(d);
        if !size_changes && !replicas_annotations_need_update(rs, desired, max) {
            return Ok((false, rs.clone()));
        }
        let mut copy = rs.clone();
        set_rs_replicas(&mut copy, to);
        set_replicas_annotations(&mut copy, desired, max);
        let updated = self.update_rs(&copy).await?;
        if size_changes {
            let op = if from < to { "up" } else { "down" };
            self.event(
                d,
                EventType::Normal,
                "ScalingReplicaSet",
                "ScaleReplicaSet",
                &format!(
                    "Scaled {op} replica set {} from {from} to {to}",
                    name(&rs.metadata)
                ),
            );
        }
        Ok((size_changes, updated))
    }

    /// As [`Self::scale_replica_set`], but nothing at all when the size is right (upstream
    /// `scaleReplicaSetAndRecordEvent`).
    pub(crate) async fn scale_replica_set_and_record_event(
        &self,
        rs: &ReplicaSet,
        to: i32,
        d: &Deployment,
    ) -> Result<(bool, ReplicaSet), Error> {
        if rs_replicas(rs) == to {
            return Ok((false, rs.clone()));
        }
        self.scale_replica_set(rs, to, d).await
    }

    /// Proportional scaling: write [`plan_scale`], stopping at the first failure.
    pub(crate) async fn scale(
        &self,
        d: &Deployment,
        new: &mut Option<ReplicaSet>,
        old: &mut [ReplicaSet],
    ) -> Result<(), Error> {
        for (rs_name, to) in plan_scale(d, new.as_ref(), old) {
            let slot = new
                .iter_mut()
                .chain(old.iter_mut())
                .find(|rs| name(&rs.metadata) == rs_name);
            if let Some(slot) = slot {
                let (_, updated) = self.scale_replica_set(slot, to, d).await?;
                *slot = updated;
            }
        }
        Ok(())
    }

    /// Delete old ReplicaSets beyond the history limit ([`plan_cleanup`]).
    pub(crate) async fn cleanup_deployment(
        &self,
        old: &[ReplicaSet],
        d: &Deployment,
    ) -> Result<(), Error> {
        let ns = d.metadata.namespace.as_deref().unwrap_or_default();
        for rs_name in plan_cleanup(old, d) {
            tracing::debug!(deployment = %name(&d.metadata), replicaset = %rs_name, "cleaning up old replica set");
            match self
                .client
                .delete::<ReplicaSet>(
                    &ObjectKey::namespaced(ns, &rs_name),
                    &DeleteParams::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Write the status the ReplicaSets call for, when it changed.
    pub(crate) async fn sync_deployment_status(
        &self,
        all: &[&ReplicaSet],
        new: Option<&ReplicaSet>,
        d: &mut Deployment,
    ) -> Result<(), Error> {
        let status = calculate_status(all, new, d, Timestamp::now());
        if status_unchanged(d, &status) {
            return Ok(());
        }
        d.status = Some(status);
        self.update_status(d).await
    }

    /// Only the status (a Deployment being deleted).
    pub(crate) async fn sync_status_only(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
    ) -> Result<Action, Error> {
        let (new, old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        self.sync_deployment_status(&all_of(&old, new.as_ref()), new.as_ref(), d)
            .await?;
        Ok(Action::Done)
    }

    /// Scale (paused Deployments and scaling events), clean up a paused Deployment's
    /// history, and update the status (upstream `sync`).
    pub(crate) async fn sync(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
    ) -> Result<Action, Error> {
        let (mut new, mut old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        self.scale(d, &mut new, &mut old).await?;
        if is_paused(d) && super::rollback::get_rollback_to(d).is_none() {
            self.cleanup_deployment(&old, d).await?;
        }
        self.sync_deployment_status(&all_of(&old, new.as_ref()), new.as_ref(), d)
            .await?;
        Ok(Action::Done)
    }

    /// Whether `spec.replicas` changed since the active ReplicaSets were last scaled (their
    /// `desired-replicas` annotation).
    pub(crate) async fn is_scaling_event(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
    ) -> Result<bool, Error> {
        let (new, old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, false)
            .await?;
        let want = replicas(d);
        Ok(filter_active(&all_of(&old, new.as_ref()))
            .into_iter()
            .filter_map(desired_replicas_annotation)
            .any(|desired| desired != want))
    }

    /// Record pausing and resuming in the Progressing condition (upstream
    /// `checkPausedConditions`); a timed-out rollout keeps its condition.
    pub(crate) async fn check_paused_conditions(&self, d: &mut Deployment) -> Result<(), Error> {
        if !has_progress_deadline(d) {
            return Ok(());
        }
        let cond = deployment_condition(d, PROGRESSING);
        if cond.is_some_and(|c| c.reason.as_deref() == Some(TIMED_OUT_REASON)) {
            return Ok(());
        }
        let paused_cond = cond.is_some_and(|c| c.reason.as_deref() == Some(PAUSED_DEPLOY_REASON));
        let now = Timestamp::now();
        let cond = if is_paused(d) && !paused_cond {
            new_condition(
                PROGRESSING,
                "Unknown",
                PAUSED_DEPLOY_REASON,
                "Deployment is paused",
                now,
            )
        } else if !is_paused(d) && paused_cond {
            new_condition(
                PROGRESSING,
                "Unknown",
                RESUMED_DEPLOY_REASON,
                "Deployment is resumed",
                now,
            )
        } else {
            return Ok(());
        };
        set_condition(status_mut(d), cond);
        self.update_status(d).await
    }
}

/// The ReplicaSet to create for the Deployment's current template: named after the hash
/// of the template and `collisionCount`, hash label on labels, selector and template,
/// controlled by the Deployment, sized by [`new_rs_new_replicas`], annotated.
pub fn new_replica_set_for(
    d: &Deployment,
    old: &[ReplicaSet],
    new_revision: &str,
) -> Result<ReplicaSet, String> {
    let collision_count = d.status.as_ref().and_then(|s| s.collision_count);
    let mut tmpl = template(d);
    let hash = compute_hash(&tmpl, collision_count);
    let meta = tmpl.metadata.get_or_insert_with(Default::default);
    let labels = meta.labels.get_or_insert_with(Default::default);
    labels.insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), hash.clone());
    let labels = labels.clone();
    let mut selector = d.spec.selector.clone();
    selector
        .match_labels
        .get_or_insert_with(Default::default)
        .insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), hash.clone());
    let mut rs = ReplicaSet {
        metadata: ObjectMeta {
            name: Some(format!("{}-{hash}", name(&d.metadata))),
            namespace: d.metadata.namespace.clone(),
            owner_references: Some(vec![coxswain_runtime::controllerutil::new_controller_ref(
                d,
            )]),
            labels: Some(labels),
            ..Default::default()
        },
        spec: ReplicaSetSpec {
            replicas: Some(0),
            min_ready_seconds: d.spec.min_ready_seconds,
            selector,
            template: Some(tmpl),
        },
        status: None,
    };
    let all = all_of(old, Some(&rs));
    let n = new_rs_new_replicas(d, &all, &rs)?;
    set_rs_replicas(&mut rs, n);
    set_new_replica_set_annotations(
        d,
        &mut rs,
        new_revision,
        false,
        MAX_REV_HISTORY_LENGTH_IN_CHARS,
    );
    Ok(rs)
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
