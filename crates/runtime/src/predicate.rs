//! Predicates: which changes reach a controller's queue.
//!
//! A [`Predicate`] answers for a create, an update (old and new) and a delete. The
//! built-in ones mirror controller-runtime's `pkg/predicate`; they compose with
//! [`and`], [`or`] and [`not`], and any closure over the change is a predicate too.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::Resource;

use crate::cache::Change;
use apimachinery::selector::LabelSelector;

/// Decides whether a change is interesting.
pub trait Predicate<K>: Send + Sync {
    /// Whether `change` passes.
    fn accept(&self, change: &Change<K>) -> bool;
}

impl<K, F> Predicate<K> for F
where
    F: Fn(&Change<K>) -> bool + Send + Sync,
{
    fn accept(&self, change: &Change<K>) -> bool {
        self(change)
    }
}

/// A shareable predicate.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

fn on_update<K>(change: &Change<K>, f: impl Fn(&K, &K) -> bool) -> bool {
    match change {
        Change::Updated { old, new } => f(old, new),
        _ => true,
    }
}

/// Passes updates that change `metadata.generation` (spec changes), and every create
/// and delete (controller-runtime's `GenerationChangedPredicate`).
pub fn generation_changed<K: Resource>() -> impl Predicate<K> {
    |c: &Change<K>| on_update(c, |o, n| o.meta().generation != n.meta().generation)
}

/// Passes updates that change labels.
pub fn labels_changed<K: Resource>() -> impl Predicate<K> {
    |c: &Change<K>| on_update(c, |o, n| o.meta().labels != n.meta().labels)
}

/// Passes updates that change annotations.
pub fn annotations_changed<K: Resource>() -> impl Predicate<K> {
    |c: &Change<K>| on_update(c, |o, n| o.meta().annotations != n.meta().annotations)
}

/// Passes updates that change `metadata.resourceVersion` (drops resync no-ops).
pub fn resource_version_changed<K: Resource>() -> impl Predicate<K> {
    |c: &Change<K>| {
        on_update(c, |o, n| {
            o.meta().resource_version != n.meta().resource_version
        })
    }
}

/// Passes objects whose labels match `selector` (for updates: the new object).
pub fn label_selector<K: Resource>(selector: LabelSelector) -> impl Predicate<K> {
    move |c: &Change<K>| {
        let obj = match c {
            Change::Added(o) | Change::Deleted(o) => o,
            Change::Updated { new, .. } => new,
        };
        let empty = BTreeMap::new();
        selector.matches_labels(obj.meta().labels.as_ref().unwrap_or(&empty))
    }
}

/// Passes when every predicate passes.
pub fn and<K>(ps: Vec<BoxPredicate<K>>) -> impl Predicate<K> {
    move |c: &Change<K>| ps.iter().all(|p| p.accept(c))
}

/// Passes when any predicate passes.
pub fn or<K>(ps: Vec<BoxPredicate<K>>) -> impl Predicate<K> {
    move |c: &Change<K>| ps.iter().any(|p| p.accept(c))
}

/// Passes when `p` does not.
pub fn not<K>(p: BoxPredicate<K>) -> impl Predicate<K> {
    move |c: &Change<K>| !p.accept(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(generation: i64, rv: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.generation = Some(generation);
        c.metadata.resource_version = Some(rv.into());
        c.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        Arc::new(c)
    }

    fn upd(old: Arc<ConfigMap>, new: Arc<ConfigMap>) -> Change<ConfigMap> {
        Change::Updated { old, new }
    }

    #[test]
    fn builtins() {
        let g = generation_changed::<ConfigMap>();
        assert!(!g.accept(&upd(cm(1, "1", &[]), cm(1, "2", &[]))));
        assert!(g.accept(&upd(cm(1, "1", &[]), cm(2, "2", &[]))));
        assert!(g.accept(&Change::Added(cm(1, "1", &[]))));
        let l = labels_changed::<ConfigMap>();
        assert!(l.accept(&upd(cm(1, "1", &[("a", "1")]), cm(1, "2", &[("a", "2")]))));
        assert!(!l.accept(&upd(cm(1, "1", &[("a", "1")]), cm(1, "2", &[("a", "1")]))));
        let r = resource_version_changed::<ConfigMap>();
        assert!(!r.accept(&upd(cm(1, "1", &[]), cm(1, "1", &[]))));
    }

    #[test]
    fn combinators_and_selector() {
        let sel = LabelSelector::from_match_labels([("app", "web")]);
        let s: BoxPredicate<ConfigMap> = Arc::new(label_selector::<ConfigMap>(sel));
        let g: BoxPredicate<ConfigMap> = Arc::new(generation_changed::<ConfigMap>());
        let both = and(vec![s.clone(), g.clone()]);
        let either = or(vec![s.clone(), g.clone()]);
        let neither = not(Arc::new(either) as BoxPredicate<ConfigMap>);
        let web_same_gen = upd(cm(1, "1", &[("app", "web")]), cm(1, "2", &[("app", "web")]));
        assert!(!both.accept(&web_same_gen));
        assert!(!neither.accept(&web_same_gen));
        let db_new_gen = upd(cm(1, "1", &[("app", "db")]), cm(2, "2", &[("app", "db")]));
        assert!(!both.accept(&db_new_gen));
        let custom = |c: &Change<ConfigMap>| matches!(c, Change::Deleted(_));
        assert!(custom.accept(&Change::Deleted(cm(1, "1", &[]))));
    }
}
