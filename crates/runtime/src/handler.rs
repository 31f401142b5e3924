//! Event handlers: which reconcile requests a change produces, and when.
//!
//! Like controller-runtime's `pkg/handler`: [`EnqueueObject`] asks to reconcile the
//! changed object itself, [`EnqueueOwner`] its owner (from owner references, optionally
//! only the controlling one), [`EnqueueMapped`] whatever a function maps the object to
//! (the old and the new object of an update, deduplicated), and [`Funcs`] runs a closure
//! per kind of change with the queue in hand. A handler says *what* to enqueue with
//! [`EventHandler::keys`]; one that also decides *when* (after a delay, or rate limited)
//! overrides [`EventHandler::handle`], and any handler can be delayed as a whole with
//! [`EventHandlerExt::after`].

use std::any::TypeId;
use std::time::Duration;

use kube::Resource;

use crate::cache::Change;
use crate::controller::Request;
use crate::object::ObjectKey;
use crate::workqueue::RateLimitedQueue;

/// The queue as a handler sees it: add now, later, or after the rate limiter's delay.
pub struct Requests<'q, R> {
    queue: &'q RateLimitedQueue<R>,
}

impl<'q, R: Request> Requests<'q, R> {
    /// A view of `queue`.
    pub fn new(queue: &'q RateLimitedQueue<R>) -> Self {
        Requests { queue }
    }

    /// Reconcile `request` as soon as a worker is free.
    pub fn add(&self, request: R) {
        self.queue.add(request);
    }

    /// Reconcile `request` after `delay` (at once for a zero delay; a request already
    /// waiting keeps the earlier of its two deadlines).
    pub fn add_after(&self, request: R, delay: Duration) {
        self.queue.add_after(request, delay);
    }

    /// Reconcile `request` after the rate limiter's delay for it.
    pub fn add_rate_limited(&self, request: R) {
        self.queue.add_rate_limited(request);
    }
}

/// Turns a change into reconcile requests.
pub trait EventHandler<K, R = ObjectKey>: Send + Sync {
    /// The requests to make at once for `change` (default: none).
    fn keys(&self, change: &Change<K>) -> Vec<R> {
        let _ = change;
        Vec::new()
    }

    /// Enqueue what `change` calls for (default: every request of [`EventHandler::keys`],
    /// at once). Override to delay or rate-limit.
    fn handle(&self, change: &Change<K>, queue: &Requests<'_, R>)
    where
        R: Request,
    {
        for r in self.keys(change) {
            queue.add(r);
        }
    }
}

impl<K, R, H: EventHandler<K, R> + ?Sized> EventHandler<K, R> for Box<H> {
    fn keys(&self, change: &Change<K>) -> Vec<R> {
        (**self).keys(change)
    }

    fn handle(&self, change: &Change<K>, queue: &Requests<'_, R>)
    where
        R: Request,
    {
        (**self).handle(change, queue)
    }
}

/// Adapters for every handler.
pub trait EventHandlerExt<K, R>: EventHandler<K, R> + Sized {
    /// The same requests, each enqueued after `delay` (the namespace controller waits a
    /// moment after a change so that racing creations are seen).
    fn after(self, delay: Duration) -> Delayed<Self> {
        Delayed { inner: self, delay }
    }
}

impl<K, R, H: EventHandler<K, R>> EventHandlerExt<K, R> for H {}

/// A handler whose requests are enqueued after a delay ([`EventHandlerExt::after`]).
#[derive(Clone, Debug)]
pub struct Delayed<H> {
    inner: H,
    delay: Duration,
}

impl<K, R: Request, H: EventHandler<K, R>> EventHandler<K, R> for Delayed<H> {
    fn keys(&self, change: &Change<K>) -> Vec<R> {
        self.inner.keys(change)
    }

    fn handle(&self, change: &Change<K>, queue: &Requests<'_, R>) {
        for r in self.inner.keys(change) {
            queue.add_after(r, self.delay);
        }
    }
}

type ChangeFn<K, R> = Box<dyn Fn(&K, &Requests<'_, R>) + Send + Sync>;
type UpdateFn<K, R> = Box<dyn Fn(&K, &K, &Requests<'_, R>) + Send + Sync>;

/// A closure per kind of change, each with the queue in hand (controller-runtime's
/// `handler.Funcs`); a change without a closure enqueues nothing.
pub struct Funcs<K, R = ObjectKey> {
    added: Option<ChangeFn<K, R>>,
    updated: Option<UpdateFn<K, R>>,
    deleted: Option<ChangeFn<K, R>>,
}

impl<K, R> Default for Funcs<K, R> {
    fn default() -> Self {
        Funcs {
            added: None,
            updated: None,
            deleted: None,
        }
    }
}

impl<K, R> Funcs<K, R> {
    /// No closure yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What an added object enqueues.
    pub fn on_add(mut self, f: impl Fn(&K, &Requests<'_, R>) + Send + Sync + 'static) -> Self {
        self.added = Some(Box::new(f));
        self
    }

    /// What an update (old, new) enqueues; resyncs arrive as updates with old = new.
    pub fn on_update(
        mut self,
        f: impl Fn(&K, &K, &Requests<'_, R>) + Send + Sync + 'static,
    ) -> Self {
        self.updated = Some(Box::new(f));
        self
    }

    /// What a deleted object (its last known state) enqueues.
    pub fn on_delete(mut self, f: impl Fn(&K, &Requests<'_, R>) + Send + Sync + 'static) -> Self {
        self.deleted = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync, R: Send + Sync> EventHandler<K, R> for Funcs<K, R> {
    fn handle(&self, change: &Change<K>, queue: &Requests<'_, R>)
    where
        R: Request,
    {
        match change {
            Change::Added(o) => {
                if let Some(f) = &self.added {
                    f(o, queue)
                }
            }
            Change::Updated { old, new } => {
                if let Some(f) = &self.updated {
                    f(old, new, queue)
                }
            }
            Change::Deleted(o) => {
                if let Some(f) = &self.deleted {
                    f(o, queue)
                }
            }
        }
    }
}

fn object_of<K>(change: &Change<K>) -> &K {
    match change {
        Change::Added(o) | Change::Deleted(o) => o,
        Change::Updated { new, .. } => new,
    }
}

/// Enqueue the changed object.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueObject;

impl<K: Resource> EventHandler<K> for EnqueueObject {
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        vec![ObjectKey::of(object_of(change))]
    }
}

/// Whether kind `K` is namespaced.
pub fn is_namespaced<K: Resource>() -> bool
where
    K::Scope: 'static,
{
    TypeId::of::<K::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>()
}

/// Enqueue the owner of kind `group`/`kind` named in the changed object's owner
/// references (for an update: of the old and the new object, so a released child still
/// wakes its former owner).
#[derive(Clone, Debug)]
pub struct EnqueueOwner {
    group: String,
    kind: String,
    owner_namespaced: bool,
    only_controller: bool,
}

impl EnqueueOwner {
    /// Owners of kind `O`; `only_controller` keeps only `controller: true` references.
    pub fn of<O: Resource<DynamicType = ()>>(only_controller: bool) -> Self
    where
        O::Scope: 'static,
    {
        EnqueueOwner {
            group: O::group(&()).to_string(),
            kind: O::kind(&()).to_string(),
            owner_namespaced: is_namespaced::<O>(),
            only_controller,
        }
    }

    fn owners_of<K: Resource>(&self, obj: &K, out: &mut Vec<ObjectKey>) {
        let meta = obj.meta();
        for r in meta.owner_references.iter().flatten() {
            if self.only_controller && r.controller != Some(true) {
                continue;
            }
            let group = r.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
            if group != self.group || r.kind != self.kind {
                continue;
            }
            let namespace = if self.owner_namespaced {
                meta.namespace.as_deref()
            } else {
                None
            };
            let key = ObjectKey::from_parts(namespace, &r.name);
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
}

impl<K: Resource> EventHandler<K> for EnqueueOwner {
    fn keys(&self, change: &Change<K>) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        match change {
            Change::Added(o) | Change::Deleted(o) => self.owners_of(o.as_ref(), &mut out),
            Change::Updated { old, new } => {
                self.owners_of(old.as_ref(), &mut out);
                self.owners_of(new.as_ref(), &mut out);
            }
        }
        out
    }
}

/// Enqueue whatever a function maps the changed object to: for an update, what it maps
/// the old object to, then the new one, each request once (controller-runtime's
/// `EnqueueRequestsFromMapFunc`).
pub struct EnqueueMapped<F>(pub F);

impl<K, R, F> EventHandler<K, R> for EnqueueMapped<F>
where
    F: Fn(&K) -> Vec<R> + Send + Sync,
    R: Eq + std::hash::Hash + Clone,
{
    fn keys(&self, change: &Change<K>) -> Vec<R> {
        match change {
            Change::Added(o) | Change::Deleted(o) => (self.0)(o),
            Change::Updated { old, new } => {
                let mut out = (self.0)(old);
                let next = (self.0)(new);
                if next == out {
                    // the usual update: it maps to the same requests
                    return out;
                }
                let seen: std::collections::HashSet<R> = out.iter().cloned().collect();
                out.extend(next.into_iter().filter(|r| !seen.contains(r)));
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use std::sync::Arc;

    fn rs_owned_by(owner: &str, controller: bool) -> Arc<ReplicaSet> {
        let mut rs = ReplicaSet::default();
        rs.metadata.namespace = Some("ns".into());
        rs.metadata.name = Some("rs".into());
        rs.metadata.owner_references = Some(vec![
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: owner.into(),
                uid: "u".into(),
                controller: Some(controller),
                block_owner_deletion: None,
            },
            OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: "n1".into(),
                uid: "u2".into(),
                controller: None,
                block_owner_deletion: None,
            },
        ]);
        Arc::new(rs)
    }

    #[test]
    fn owner_handler_follows_owner_references() {
        let h = EnqueueOwner::of::<Deployment>(true);
        assert_eq!(
            h.keys(&Change::Added(rs_owned_by("web", true))),
            vec![ObjectKey::namespaced("ns", "web")]
        );
        assert!(h.keys(&Change::Added(rs_owned_by("web", false))).is_empty());
        let any = EnqueueOwner::of::<Deployment>(false);
        assert_eq!(any.keys(&Change::Added(rs_owned_by("web", false))).len(), 1);
        let moved = Change::Updated {
            old: rs_owned_by("a", true),
            new: rs_owned_by("b", true),
        };
        assert_eq!(
            h.keys(&moved),
            vec![
                ObjectKey::namespaced("ns", "a"),
                ObjectKey::namespaced("ns", "b")
            ]
        );
        let node = EnqueueOwner::of::<Node>(false);
        assert_eq!(
            node.keys(&Change::Added(rs_owned_by("web", true))),
            vec![ObjectKey::cluster("n1")]
        );
        assert!(is_namespaced::<ReplicaSet>() && !is_namespaced::<Node>());
    }

    #[test]
    fn object_and_mapped_handlers() {
        let rs = rs_owned_by("web", true);
        assert_eq!(
            EnqueueObject.keys(&Change::Deleted(rs.clone())),
            vec![ObjectKey::namespaced("ns", "rs")]
        );
        let m = EnqueueMapped(|r: &ReplicaSet| {
            vec![ObjectKey::cluster(format!(
                "x-{}",
                r.metadata.name.as_deref().unwrap_or("")
            ))]
        });
        assert_eq!(m.keys(&Change::Added(rs)), vec![ObjectKey::cluster("x-rs")]);
        // an update maps the old object, then the new one, each request once
        let by_owner = EnqueueMapped(|r: &ReplicaSet| {
            let owner = r.metadata.owner_references.as_ref().unwrap()[0]
                .name
                .clone();
            vec![ObjectKey::cluster(owner), ObjectKey::cluster("always")]
        });
        let moved = Change::Updated {
            old: rs_owned_by("a", true),
            new: rs_owned_by("b", true),
        };
        assert_eq!(
            by_owner.keys(&moved),
            vec![
                ObjectKey::cluster("a"),
                ObjectKey::cluster("always"),
                ObjectKey::cluster("b")
            ]
        );
    }

    #[tokio::test]
    async fn funcs_and_delays_reach_the_queue() {
        let q: RateLimitedQueue<ObjectKey> = RateLimitedQueue::new();
        let requests = Requests::new(&q);
        // only the closures given run
        let f = Funcs::<ReplicaSet>::new().on_update(|old, new, q| {
            if old.metadata.owner_references != new.metadata.owner_references {
                q.add(ObjectKey::cluster("moved"));
            }
        });
        f.handle(&Change::Added(rs_owned_by("a", true)), &requests);
        assert_eq!(q.len(), 0);
        let moved = Change::Updated {
            old: rs_owned_by("a", true),
            new: rs_owned_by("b", true),
        };
        f.handle(&moved, &requests);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some(ObjectKey::cluster("moved")));
        // a delayed handler's request is not ready at once
        let delayed = EventHandlerExt::<ReplicaSet, ObjectKey>::after(
            EnqueueObject,
            Duration::from_secs(3600),
        );
        delayed.handle(&Change::Added(rs_owned_by("a", true)), &requests);
        assert_eq!(q.len(), 0);
        // while its keys are the inner handler's
        assert_eq!(
            delayed.keys(&Change::Added(rs_owned_by("a", true))),
            vec![ObjectKey::namespaced("ns", "rs")]
        );
    }
}
