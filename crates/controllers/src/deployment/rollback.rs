//! Rollback through the deprecated `deprecated.deployment.rollback.to` annotation.
//!
//! After upstream `pkg/controller/deployment/rollback.go`. extensions/v1beta1 and
//! apps/v1beta1 had `spec.rollbackTo`; apps/v1 round-trips it as this annotation. The
//! controller copies the template (without `pod-template-hash`) and the annotations of
//! the ReplicaSet with that revision (0: the previous revision) into the Deployment and
//! clears the annotation; the next sync then finds that ReplicaSet as the new one and
//! gives it the next revision.
//!
//! `kubectl rollout undo` no longer uses this path: it patches the template (and the
//! annotations) itself, which is an ordinary template change for the controller — the
//! matching old ReplicaSet is found as the new one and gets a new revision (see
//! [`super::sync`]).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use coxswain_runtime::controller::Action;
use coxswain_runtime::events::EventType;

use super::util::*;
use super::{DeploymentReconciler, Error};

/// The revision the deprecated annotation asks for (`None` when absent or not a number).
pub fn get_rollback_to(d: &Deployment) -> Option<i64> {
    annotation(&d.metadata, DEPRECATED_ROLLBACK_TO)?
        .parse()
        .ok()
}

/// What a rollback did to the Deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RollbackOutcome {
    /// The template of this revision was copied in.
    RolledBack(i64),
    /// The revision has the current template: nothing to do.
    TemplateUnchanged,
    /// No ReplicaSet has the revision (the message says which case).
    RevisionNotFound(&'static str),
}

/// Apply the rollback to `d` (template, annotations, the rollback annotation cleared) from
/// the Deployment's ReplicaSets `all`.
pub fn apply_rollback(d: &mut Deployment, all: &[&ReplicaSet]) -> RollbackOutcome {
    let mut to = get_rollback_to(d).unwrap_or(0);
    let outcome = 'found: {
        if to == 0 {
            to = last_revision(all);
            if to == 0 {
                break 'found RollbackOutcome::RevisionNotFound("Unable to find last revision.");
            }
        }
        let Some(rs) = all
            .iter()
            .find(|rs| revision(&rs.metadata).ok() == Some(to))
        else {
            break 'found RollbackOutcome::RevisionNotFound(
                "Unable to find the revision to rollback to.",
            );
        };
        if equal_ignore_hash(&template(d), &rs_template(rs)) {
            break 'found RollbackOutcome::TemplateUnchanged;
        }
        set_from_replica_set_template(d, &rs_template(rs));
        // the Deployment takes the annotations of the revision it returns to, so that the
        // ReplicaSet keeps its own change-cause when they are copied back
        set_deployment_annotations_to(d, rs);
        RollbackOutcome::RolledBack(to)
    };
    if let Some(ann) = d.metadata.annotations.as_mut() {
        ann.remove(DEPRECATED_ROLLBACK_TO);
    }
    outcome
}

impl DeploymentReconciler {
    /// Roll back as the annotation asks, report it, clear the annotation.
    pub(crate) async fn rollback(
        &self,
        d: &mut Deployment,
        rs_list: &mut Vec<ReplicaSet>,
    ) -> Result<Action, Error> {
        let (new, old) = self
            .get_all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let all: Vec<&ReplicaSet> = old.iter().chain(new.as_ref()).collect();
        let outcome = apply_rollback(d, &all);
        self.update_deployment(d).await?;
        let dname = name(&d.metadata).to_string();
        match outcome {
            RollbackOutcome::RolledBack(rev) => self.event(
                d,
                EventType::Normal,
                ROLLBACK_DONE,
                "Rollback",
                &format!("Rolled back deployment {dname:?} to revision {rev}"),
            ),
            RollbackOutcome::TemplateUnchanged => self.event(
                d,
                EventType::Warning,
                ROLLBACK_TEMPLATE_UNCHANGED,
                "Rollback",
                &format!("The rollback revision contains the same template as current deployment {dname:?}"),
            ),
            RollbackOutcome::RevisionNotFound(msg) => {
                self.event(d, EventType::Warning, ROLLBACK_REVISION_NOT_FOUND, "Rollback", msg)
            }
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::testutil::*;

    fn with_revision(mut rs: ReplicaSet, rev: &str, cause: &str) -> ReplicaSet {
        let ann = rs.metadata.annotations.get_or_insert_with(Default::default);
        ann.insert(REVISION_ANNOTATION.into(), rev.into());
        ann.insert(CHANGE_CAUSE_ANNOTATION.into(), cause.into());
        rs
    }

    fn image_of(d: &Deployment) -> Option<String> {
        template(d).spec?.containers.first()?.image.clone()
    }

    // After upstream rollback.go (rollback / rollbackToTemplate) and the annotation example
    // in its comments.
    #[test]
    fn rollback_to_previous_and_named_revisions() {
        let v1 = generate_deployment("nginx");
        let mut v2 = v1.clone();
        if let Some(s) = v2.spec.template.spec.as_mut() {
            s.containers[0].image = Some("nginx:2".into());
        }
        let mut rs1 = with_revision(generate_rs(&v1, "nginx-1"), "1", "create");
        rs1.spec
            .template
            .as_mut()
            .and_then(|t| t.metadata.as_mut())
            .and_then(|m| m.labels.as_mut())
            .map(|l| l.insert(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY.into(), "h1".into()));
        let rs2 = with_revision(generate_rs(&v2, "nginx-2"), "2", "edit");

        // revision 0: the previous one; annotations come from that ReplicaSet
        let mut d = v2.clone();
        let ann = d.metadata.annotations.get_or_insert_with(Default::default);
        ann.insert(DEPRECATED_ROLLBACK_TO.into(), "0".into());
        ann.insert(CHANGE_CAUSE_ANNOTATION.into(), "edit".into());
        ann.insert(REVISION_ANNOTATION.into(), "2".into());
        assert_eq!(
            apply_rollback(&mut d, &[&rs1, &rs2]),
            RollbackOutcome::RolledBack(1)
        );
        assert_eq!(image_of(&d).as_deref(), Some("nginx"));
        assert_eq!(
            annotation(&d.metadata, CHANGE_CAUSE_ANNOTATION),
            Some("create")
        );
        assert_eq!(
            annotation(&d.metadata, REVISION_ANNOTATION),
            Some("2"),
            "skipped annotations stay"
        );
        assert_eq!(get_rollback_to(&d), None, "the request is cleared");
        let labels = template(&d)
            .metadata
            .and_then(|m| m.labels)
            .unwrap_or_default();
        assert!(!labels.contains_key(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY));

        // the revision with the current template
        let mut d = v2.clone();
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DEPRECATED_ROLLBACK_TO.into(), "2".into());
        assert_eq!(
            apply_rollback(&mut d, &[&rs1, &rs2]),
            RollbackOutcome::TemplateUnchanged
        );
        assert_eq!(get_rollback_to(&d), None);

        // a revision nobody has
        let mut d = v2.clone();
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DEPRECATED_ROLLBACK_TO.into(), "7".into());
        assert_eq!(
            apply_rollback(&mut d, &[&rs1, &rs2]),
            RollbackOutcome::RevisionNotFound("Unable to find the revision to rollback to.")
        );
        assert_eq!(image_of(&d).as_deref(), Some("nginx:2"));

        // no previous revision
        let mut d = v2.clone();
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DEPRECATED_ROLLBACK_TO.into(), "0".into());
        assert_eq!(
            apply_rollback(&mut d, &[&rs2]),
            RollbackOutcome::RevisionNotFound("Unable to find last revision.")
        );

        // not a number: no rollback requested
        let mut d = v2;
        d.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(DEPRECATED_ROLLBACK_TO.into(), "x".into());
        assert_eq!(get_rollback_to(&d), None);
    }
}
