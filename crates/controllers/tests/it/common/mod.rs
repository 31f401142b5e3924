//! Test harness: the embedded API server (envtest) and a manager running the controllers
//! of the given descriptors, built through their registry constructors.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use coxswain_controllers::registry::{ControllerContext, ControllerManagerOptions, Descriptor};
use coxswain_runtime::envtest::{self, TestEnv};
use coxswain_runtime::manager::{runnable, BoxError, Manager, ManagerOptions};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::Api;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Bound on every wait: far above what any step needs (not a timing assertion).
pub const WAIT: Duration = Duration::from_secs(90);

/// A server and a running manager.
pub struct Harness {
    /// The test server.
    pub env: TestEnv,
    cancel: CancellationToken,
    manager: Option<JoinHandle<()>>,
}

impl Harness {
    /// Start a server and a manager with the controllers of `descriptors`.
    pub async fn start(descriptors: &[Descriptor]) -> Harness {
        Self::start_with(descriptors, ControllerManagerOptions::default()).await
    }

    /// Start a server and a manager with the controllers of `descriptors` and these
    /// options.
    pub async fn start_with(
        descriptors: &[Descriptor],
        cm_options: ControllerManagerOptions,
    ) -> Harness {
        Self::start_serving(descriptors, cm_options, false).await
    }

    /// Start a server that also serves metrics.k8s.io (as `coxswain up`) and a manager
    /// with the controllers of `descriptors` and these options.
    pub async fn start_with_metrics_api(
        descriptors: &[Descriptor],
        cm_options: ControllerManagerOptions,
    ) -> Harness {
        Self::start_serving(descriptors, cm_options, true).await
    }

    async fn start_serving(
        descriptors: &[Descriptor],
        cm_options: ControllerManagerOptions,
        metrics_api: bool,
    ) -> Harness {
        let env = envtest::start_with(|c| c.metrics_api = metrics_api)
            .await
            .expect("test server");
        let options = ManagerOptions {
            metrics_bind_address: "0".into(),
            ..Default::default()
        };
        let mgr = Manager::new(env.kube_config().await.expect("config"), options).expect("manager");
        for d in descriptors {
            let ctx = ControllerContext::new(&mgr, &cm_options);
            let inner = (d.constructor)(&ctx)
                .expect("controller constructed")
                .expect("controller enabled");
            let name = inner.name();
            mgr.add(runnable(&name, true, move |cancel| async move {
                inner.start(cancel).await?;
                Ok::<(), BoxError>(())
            }))
            .expect("runnable added");
        }
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let manager = tokio::spawn(async move {
            if let Err(e) = mgr.start(c).await {
                panic!("manager failed: {e}");
            }
        });
        Harness {
            env,
            cancel,
            manager: Some(manager),
        }
    }

    /// A client for the server.
    pub fn client(&self) -> kube::Client {
        self.env.client.clone()
    }

    /// Create namespace `name`.
    pub async fn namespace(&self, name: &str) {
        let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
            .expect("namespace");
        Api::<Namespace>::all(self.client())
            .create(&PostParams::default(), &ns)
            .await
            .expect("namespace created");
    }

    /// Stop the manager, then the server.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(m) = self.manager.take() {
            let _ = tokio::time::timeout(WAIT, m).await;
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Poll `check` until it returns `Some`, failing with `what` after [`WAIT`].
pub async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Log to the test output when `RUST_LOG` is set.
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}
