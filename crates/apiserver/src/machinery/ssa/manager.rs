//! Ownership bookkeeping over field sets, following
//! `structured-merge-diff/merge/update.go` (the `Updater`): recording
//! updates, applying configurations with conflict detection, and pruning
//! fields an applier stopped applying.
//!
//! Managers are identified by opaque strings (kube-apiserver uses a JSON
//! identifier, see [`crate::machinery::ssa::fieldmanager`]). All API versions are assumed to
//! share one schema: no conversion happens between versions.

use crate::machinery::ssa::fieldpath::{path_to_string, Path, Set};
use crate::machinery::ssa::merge::{compare, field_set, merge, Comparison};
use crate::machinery::ssa::remove::{
    ensure_named_fields_are_members, reconcile_field_set, remove_items,
};
use crate::machinery::ssa::schema::Schema;
use serde_json::Value;
use std::collections::BTreeMap;

/// The fields a manager owns, at an API version, and whether they were
/// applied (as opposed to updated).
///
/// A set read from a stored object is kept as its `FieldsV1` JSON and decoded only
/// when an operation needs it: most writes touch one or two managers' sets, and the
/// others are written back as they were read.
#[derive(Clone, Debug)]
pub struct VersionedSet {
    set: std::cell::OnceCell<Set>,
    /// The `FieldsV1` the set was read from, while the set is unchanged.
    raw: Option<Value>,
    /// API version the fields were set with.
    pub api_version: String,
    /// Whether the set comes from an apply operation.
    pub applied: bool,
}

impl PartialEq for VersionedSet {
    fn eq(&self, other: &Self) -> bool {
        self.api_version == other.api_version
            && self.applied == other.applied
            && self.set() == other.set()
    }
}

impl Eq for VersionedSet {}

impl VersionedSet {
    /// A decoded set.
    pub fn new(set: Set, api_version: impl Into<String>, applied: bool) -> Self {
        VersionedSet {
            set: std::cell::OnceCell::from(set),
            raw: None,
            api_version: api_version.into(),
            applied,
        }
    }

    /// A set kept as the `FieldsV1` JSON it was stored as (checked when it was
    /// stored; an undecodable one reads as empty).
    pub fn from_fields_v1(raw: Value, api_version: impl Into<String>, applied: bool) -> Self {
        VersionedSet {
            set: std::cell::OnceCell::new(),
            raw: Some(raw),
            api_version: api_version.into(),
            applied,
        }
    }

    /// The owned fields (decoded on first use).
    pub fn set(&self) -> &Set {
        self.set.get_or_init(|| {
            self.raw
                .as_ref()
                .and_then(|r| Set::from_fields_v1(r).ok())
                .unwrap_or_default()
        })
    }

    /// Replace the owned fields.
    pub fn replace(&mut self, set: Set) {
        self.set = std::cell::OnceCell::from(set);
        self.raw = None;
    }

    /// Whether no field is owned.
    pub fn is_empty(&self) -> bool {
        match (self.set.get(), &self.raw) {
            (Some(s), _) => s.is_empty(),
            (None, Some(Value::Object(m))) => m.is_empty(),
            (None, _) => true,
        }
    }

    /// Whether this set and `paths` share a path (without decoding a stored set).
    pub fn meets(&self, paths: &Set) -> bool {
        match (&self.raw, self.set.get()) {
            (Some(raw), _) => paths.meets_fields_v1(raw),
            (None, Some(s)) => !s.intersection(paths).is_empty(),
            (None, None) => false,
        }
    }

    /// The `FieldsV1` encoding: the stored JSON when the set is unchanged.
    pub fn into_fields_v1(self) -> Value {
        match self.raw {
            Some(raw) => raw,
            None => self.set().to_fields_v1(),
        }
    }
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
    #[cfg(test)]
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
            if m == workflow || !vs.meets(&changed) {
                continue;
            }
            let c = vs.set().intersection(&changed);
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
                let rest = vs.set().difference(&c);
                vs.replace(rest);
            }
        }
        if !cmp.removed.is_empty() {
            for (m, vs) in managers.iter_mut() {
                if m != workflow && vs.meets(&cmp.removed) {
                    let rest = vs.set().difference(&cmp.removed);
                    vs.replace(rest);
                }
            }
        }
        managers.retain(|_, vs| !vs.is_empty());
        Ok(cmp)
    }

    fn reconcile(&self, managers: &mut ManagedFields) {
        if self.schema.is_fixed() {
            return;
        }
        for vs in managers.values_mut() {
            if let Some(s) = reconcile_field_set(self.schema, vs.set()) {
                vs.replace(s);
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
            .map(|vs| vs.set().clone())
            .unwrap_or_default();
        let set = prev
            .difference(&cmp.removed)
            .union(&cmp.modified)
            .union(&cmp.added);
        let set = self.filter(set);
        if set.is_empty() {
            managers.remove(manager);
        } else {
            managers.insert(manager.into(), VersionedSet::new(set, version, false));
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
        let last = managers.get(manager).map(|vs| vs.set().clone());
        let set = self.filter(field_set(self.schema, config));
        managers.insert(manager.into(), VersionedSet::new(set, version, true));
        let new = self.prune(merged, &managers, last.as_ref());
        self.update_inner(live, &new, &mut managers, manager, force)?;
        if crate::machinery::ssa::fieldpath::value_equals(live, &new) {
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
            .fold(Set::new(), |acc, vs| acc.union(vs.set()));
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
