//! Fault-injection scenarios for the built-in controllers: each runs under the runtime's
//! harness (`coxswain_runtime::testing`), once without faults and then under the
//! systematic fault plans, with its invariants checked on every observed change.
//!
//! Replay a failing plan: `COXSWAIN_FAULT_PLAN='crash@3' cargo test -p
//! coxswain-controllers --test it faults::<file>::<test>`; explore every step:
//! `COXSWAIN_FAULT_STEPS=all`; add random plans: `COXSWAIN_FAULT_RANDOM=20
//! COXSWAIN_FAULT_SEED=<n>`.

#![allow(dead_code)]

mod batch_sets;
mod network_auth;
mod nodes_volumes;
mod workloads;

use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions, Descriptor};
use coxswain_runtime::manager::{runnable, BoxError, Manager};
use futures::future::BoxFuture;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

/// Adds the controllers of `descriptors` (with default options) to each controller process.
pub fn builtin(
    descriptors: Vec<Descriptor>,
) -> impl Fn(&Manager) -> Result<(), BoxError> + Send + Sync + 'static {
    builtin_with(descriptors, ControllerManagerOptions::default())
}

/// Adds the controllers of `descriptors` with `options` to each controller process.
pub fn builtin_with(
    descriptors: Vec<Descriptor>,
    options: ControllerManagerOptions,
) -> impl Fn(&Manager) -> Result<(), BoxError> + Send + Sync + 'static {
    move |mgr: &Manager| {
        for d in &descriptors {
            let ctx = ControllerContext::new(mgr, &options);
            let Some(inner) = (d.constructor)(&ctx)? else {
                continue;
            };
            let name = inner.name();
            mgr.add(runnable(&name, true, move |cancel| async move {
                inner.start(cancel).await?;
                Ok::<(), BoxError>(())
            }))?;
        }
        Ok(())
    }
}

/// The kubelet stand-in: marks new pods Running and Ready at once (no nodes).
pub fn kubelet(
) -> impl Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    |client, cancel| {
        async move {
            let _ = coxswain_runtime::envtest::fake_kubelet(client, None, cancel).await;
        }
        .boxed()
    }
}

/// The node simulator with `nodes` nodes (scheduler, kubelets, heartbeats), on the admin
/// client.
pub fn simulator(
    nodes: usize,
) -> impl Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync + 'static {
    move |client, cancel| {
        let config = coxswain_sim::SimConfig {
            nodes,
            ..Default::default()
        };
        async move {
            if let Err(e) = coxswain_sim::run(client, config, cancel).await {
                tracing::warn!(error = %e, "simulator stopped");
            }
        }
        .boxed()
    }
}

/// `Err(what)` unless `ok`.
pub fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}
