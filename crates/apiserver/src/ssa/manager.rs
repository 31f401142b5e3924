//! Ownership bookkeeping over field sets, following
//! `structured-merge-diff/merge/update.go` (the `Updater`): recording
//! updates, applying configurations with conflict detection, and pruning
//! fields an applier stopped applying.
//!
//! Managers are identified by opaque strings (kube-apiserver uses a JSON
//! identifier, see [`crate::ssa::fieldmanager`]). All API versions are assumed to
//! share one schema: no conversion happens between versions.

use crate::ssa::fieldpath::{path_to_string, Path, Set};
use crate::ssa::merge::{compare, field_set, merge, Comparison};
use crate::ssa::remove::{ensure_named_fields_are_members, reconcile_field_set, remove_items};
use crate::ssa::schema::Schema;
use serde_json::Value;
use std::collections::BTreeMap;

/// The fields a manager owns, at an API version, and whether they were
/// applied (as opposed to updated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionedSet {
    /// Owned fields.
    pub set: Set,
    /// API version the fields were set with.
    pub api_version: String,
    /// Whether the set comes from an apply operation.
    pub applied: bool,
}

/// Managers and their field sets.
pub type ManagedFields = BTreeMap<String, VersionedSet>;

/// A field owned by another manager that an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The manager identifier owning the field.
    pub manager: String,
    /// The conflicting field.
    pub path: Path,
}

impl Conflict {
    /// The path printed as upstream does, e.g. `.spec.replicas`.
    pub fn path_string(&self) -> String {
        path_to_string(&self.path)
    }
}

/// Errors of the updater.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpdateError {
    /// The apply conflicts with other managers.
    Conflicts(Vec<Conflict>),
    /// The objects are invalid for the schema (or the merge failed).
    Invalid(String),
}

/// Upstream `merge.Conflicts.Error()`, with raw manager names.
pub fn conflicts_string(conflicts: &[Conflict]) -> String {
    if conflicts.len() == 1 {
        return format!(
            "conflict with {:?}: {}",
            conflicts[0].manager,
            conflicts[0].path_string()
        );
    }
    let mut by: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in conflicts {
        by.entry(&c.manager).or_default().push(c.path_string());
    }
    let mut lines = Vec::new();
    for (m, paths) in by {
        lines.push(format!("conflicts with {m:?}:"));
        lines.extend(paths.into_iter().map(|p| format!("- {p}")));
    }
    lines.join("\n")
}

/// The structured-merge-diff updater.
#[derive(Clone, Copy, Debug)]
pub struct Updater<'s, 'a> {
    /// Schema of the objects.
    pub schema: &'s Schema<'a>,
    /// Fields never owned by any operation (upstream's `IgnoreFilter`,
    /// built from the strategy's reset fields); removed recursively.
    pub ignore: Option<&'s Set>,
}

impl<'s, 'a> Updater<'s, 'a> {
    /// A new updater without ignored fields.
    pub fn new(schema: &'s Schema<'a>) -> Self {
        Updater {
            schema,
            ignore: None,
        }
    }

    fn filter(&self, s: Set) -> Set {
        match self.ignore {
            Some(f) => s.recursive_difference(f),
            None => s,
        }
    }

    fn update_inner(
        &self,
        old: &Value,
        new: &Value,
        managers: &mut ManagedFields,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, UpdateError> {
        let mut cmp = compare(self.schema, old, new)
            .map_err(|e| UpdateError::Invalid(format!("failed to compare objects: {e}")))?;
        if let Some(f) = self.ignore {
            cmp.exclude(f);
        }
        let changed = cmp.modified.union(&cmp.added);
        let mut conflicts: Vec<(String, Set)> = Vec::new();
        for (m, vs) in managers.iter() {
            if m == workflow {
                continue;
            }
            let c = vs.set.intersection(&changed);
            if !c.is_empty() {
                conflicts.push((m.clone(), c));
            }
        }
        if !force && !conflicts.is_empty() {
            let list = conflicts
                .iter()
                .flat_map(|(m, s)| {
                    s.paths().into_iter().map(move |path| Conflict {
                        manager: m.clone(),
                        path,
                    })
                })
                .collect();
            return Err(UpdateError::Conflicts(list));
        }
        for (m, c) in conflicts {
            if let Some(vs) = managers.get_mut(&m) {
                vs.set = vs.set.difference(&c);
            }
        }
        if !cmp.removed.is_empty() {
            for (m, vs) in managers.iter_mut() {
                if m != workflow {
                    vs.set = vs.set.difference(&cmp.removed);
                }
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(cmp)
    }

    fn reconcile(&self, managers: &mut ManagedFields) {
        if self.schema.is_fixed() {
            return;
        }
        for vs in managers.values_mut() {
            if let Some(s) = reconcile_field_set(self.schema, &vs.set) {
                vs.set = s;
            }
        }
    }

    /// Records a non-apply change from `live` to `new` made by `manager`:
    /// the changed fields become owned by `manager` (and are taken from the
    /// others), removed fields are dropped from every set.
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        version: &str,
        mut managers: ManagedFields,
        manager: &str,
    ) -> Result<ManagedFields, UpdateError> {
        self.reconcile(&mut managers);
        let cmp = self.update_inner(live, new, &mut managers, manager, true)?;
        let prev = managers
            .get(manager)
            .map(|vs| vs.set.clone())
            .unwrap_or_default();
        let set = prev
            .difference(&cmp.removed)
            .union(&cmp.modified)
            .union(&cmp.added);
        let set = self.filter(set);
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers.insert(
                manager.into(),
                VersionedSet {
                    set,
                    api_version: version.into(),
                    applied: false,
                },
            );
        }
        Ok(managers)
    }

    /// Applies `config` to `live` for `manager`. Returns the new object
    /// (`None` when it equals `live`) and the new managers, or the
    /// conflicts (unless `force`).
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        version: &str,
        mut managers: ManagedFields,
        manager: &str,
        force: bool,
    ) -> Result<(Option<Value>, ManagedFields), UpdateError> {
        self.reconcile(&mut managers);
        let merged = merge(self.schema, live, config)
            .map_err(|e| UpdateError::Invalid(format!("failed to merge config: {e}")))?;
        let last = managers.get(manager).map(|vs| vs.set.clone());
        let set = self.filter(field_set(self.schema, config));
        managers.insert(
            manager.into(),
            VersionedSet {
                set,
                api_version: version.into(),
                applied: true,
            },
        );
        let new = self.prune(merged, &managers, last.as_ref());
        self.update_inner(live, &new, &mut managers, manager, force)?;
        if crate::ssa::fieldpath::value_equals(live, &new) {
            return Ok((None, managers));
        }
        Ok((Some(new), managers))
    }

    fn ensure(&self, s: &Set) -> Set {
        ensure_named_fields_are_members(self.schema, Some(self.schema.root()), s)
    }

    fn remove(&self, v: &Value, s: &Set) -> Value {
        remove_items(self.schema, self.schema.root(), v, s)
    }

    /// Removes fields the applier owned before and no longer applies, unless
    /// another manager owns them.
    fn prune(&self, merged: Value, managers: &ManagedFields, last: Option<&Set>) -> Value {
        let Some(last) = last.filter(|s| !s.is_empty()) else {
            return merged;
        };
        let pruned = self.remove(&merged, &self.ensure(last));
        // Add back items owned by any manager (including the applier).
        let managed = managers
            .values()
            .fold(Set::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = self.ensure(&field_set(self.schema, &merged));
        let pruned_set = self.ensure(&field_set(self.schema, &pruned));
        let keep = pruned_set.union(&self.ensure(&managed));
        let pruned = self.remove(&merged, &merged_set.difference(&keep));
        // Add back dangling items: only remove what was in the last applied set.
        let pruned_set = self.ensure(&field_set(self.schema, &pruned));
        let last = self.ensure(last);
        self.remove(
            &merged,
            &merged_set.difference(&pruned_set).intersection(&last),
        )
    }
}
