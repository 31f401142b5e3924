//! coxswain's controller runtime: shared informer cache, delegating client, workqueue,
//! controllers, builder, manager, leader election, metrics, health probes, webhooks and
//! events (see `../shared/DESIGN.md`). It is built in the issues that follow the embedded
//! API server; this crate is empty until then.
