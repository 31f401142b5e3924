//! A port of upstream's `internal/fixture` State: runs apply/update
//! operations through the `Updater` and checks the live object and sets.

use crate::machinery::ssa::fieldpath::Set;
use crate::machinery::ssa::manager::{ManagedFields, UpdateError, Updater};
use crate::machinery::ssa::schema::Schema;
use serde_json::Value;

pub struct State<'s, 'a> {
    pub up: Updater<'s, 'a>,
    pub live: Value,
    pub managers: ManagedFields,
}

impl<'s, 'a> State<'s, 'a> {
    pub fn new(schema: &'s Schema<'a>) -> Self {
        State {
            up: Updater::new(schema),
            live: Value::Null,
            managers: ManagedFields::new(),
        }
    }

    pub fn try_apply(
        &mut self,
        manager: &str,
        version: &str,
        obj: Value,
        force: bool,
    ) -> Result<(), UpdateError> {
        let (new, m) = self.up.apply(
            &self.live,
            &obj,
            version,
            self.managers.clone(),
            manager,
            force,
        )?;
        self.managers = m;
        if let Some(n) = new {
            self.live = n;
        }
        Ok(())
    }

    pub fn apply(&mut self, manager: &str, version: &str, obj: Value) {
        self.try_apply(manager, version, obj, false).unwrap();
    }

    pub fn force_apply(&mut self, manager: &str, version: &str, obj: Value) {
        self.try_apply(manager, version, obj, true).unwrap();
    }

    /// Applies expecting exactly these (manager, path) conflicts.
    pub fn apply_conflicts(
        &mut self,
        manager: &str,
        version: &str,
        obj: Value,
        want: &[(&str, &str)],
    ) {
        match self.try_apply(manager, version, obj, false) {
            Err(UpdateError::Conflicts(c)) => {
                let mut got: Vec<(String, String)> = c
                    .iter()
                    .map(|c| (c.manager.clone(), c.path_string()))
                    .collect();
                let mut want: Vec<(String, String)> = want
                    .iter()
                    .map(|(m, p)| (m.to_string(), p.to_string()))
                    .collect();
                got.sort();
                want.sort();
                assert_eq!(got, want);
            }
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    pub fn update(&mut self, manager: &str, version: &str, obj: Value) {
        self.managers = self
            .up
            .update(&self.live, &obj, version, self.managers.clone(), manager)
            .unwrap();
        self.live = obj;
    }

    /// Checks the live object.
    pub fn expect_live(&self, want: Value) {
        assert_eq!(self.live, want, "live object");
    }

    /// Checks the managers: (name, version, FieldsV1 of the set).
    pub fn expect_managers(&self, want: &[(&str, &str, Value)]) {
        let mut got: Vec<(String, String, Value)> = self
            .managers
            .iter()
            .map(|(m, vs)| (m.clone(), vs.api_version.clone(), vs.set().to_fields_v1()))
            .collect();
        let mut want: Vec<(String, String, Value)> = want
            .iter()
            .map(|(m, v, f)| {
                (
                    m.to_string(),
                    v.to_string(),
                    Set::from_fields_v1(f).unwrap().to_fields_v1(),
                )
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "managers");
        for (m, vs) in &self.managers {
            assert!(!vs.set().is_empty(), "empty set for {m}");
        }
    }
}
