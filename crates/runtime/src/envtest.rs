//! envtest: the embedded API server in-process on a free port, with a client for it, so
//! that runtime and controller tests are one line to set up.
//!
//! ```no_run
//! # async fn demo() {
//! let env = coxswain_runtime::envtest::start().await.expect("server");
//! let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::default_namespaced(env.client.clone());
//! # }
//! ```

use std::path::PathBuf;

use kube::config::{KubeConfigOptions, Kubeconfig};

/// A running test server and a client for it. Stops when dropped.
pub struct TestEnv {
    /// A client for the server (namespace `default`).
    pub client: kube::Client,
    server: Option<coxswain_apiserver::server::Running>,
    /// The server's configuration (to restart it on the same port and data).
    pub config: coxswain_apiserver::server::Config,
    dir: tempfile::TempDir,
}

/// Errors starting the test environment.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// The server did not start.
    #[error("starting the API server: {0}")]
    Start(#[from] coxswain_apiserver::server::StartError),
    /// The client could not be built.
    #[error("building the client: {0}")]
    Client(String),
    /// I/O.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Start a server with default options (in-memory storage, TLS, token).
pub async fn start() -> Result<TestEnv, EnvError> {
    start_with(|_| {}).await
}

/// Start a server after `adjust` changed its configuration (data directory and bind
/// address are set already).
pub async fn start_with(
    adjust: impl FnOnce(&mut coxswain_apiserver::server::Config),
) -> Result<TestEnv, EnvError> {
    let dir = tempfile::tempdir()?;
    let mut config = coxswain_apiserver::server::Config::new(dir.path());
    config.bind = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    config.persist = false;
    adjust(&mut config);
    let server = coxswain_apiserver::server::start(config.clone()).await?;
    // a restart must come back on the same port
    config.bind = server.addr;
    let client = client_for(&server.kubeconfig).await?;
    Ok(TestEnv {
        client,
        server: Some(server),
        config,
        dir,
    })
}

async fn config_for(kubeconfig: &std::path::Path) -> Result<kube::Config, EnvError> {
    let kc = Kubeconfig::read_from(kubeconfig).map_err(|e| EnvError::Client(e.to_string()))?;
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|e| EnvError::Client(e.to_string()))
}

async fn client_for(kubeconfig: &std::path::Path) -> Result<kube::Client, EnvError> {
    let cfg = config_for(kubeconfig).await?;
    kube::Client::try_from(cfg).map_err(|e| EnvError::Client(e.to_string()))
}

impl TestEnv {
    /// The client configuration for the server (to build more clients, or a manager).
    pub async fn kube_config(&self) -> Result<kube::Config, EnvError> {
        config_for(&self.server().kubeconfig).await
    }

    /// Where the server keeps its data.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The running server.
    ///
    /// # Panics
    /// Never after [`start`] returned; only between a failed [`TestEnv::restart`] and drop.
    pub fn server(&self) -> &coxswain_apiserver::server::Running {
        self.server.as_ref().expect("the test server is running")
    }

    /// Stop the server (connections close, watches end, storage is released).
    pub async fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown.cancel();
            let _ = s.task.await;
        }
    }

    /// Start the server again on the same port and data directory (requires
    /// `config.persist` for the objects to survive).
    pub async fn restart(&mut self) -> Result<(), EnvError> {
        self.stop().await;
        let mut last = None;
        for _ in 0..50 {
            match coxswain_apiserver::server::start(self.config.clone()).await {
                Ok(s) => {
                    self.server = Some(s);
                    return Ok(());
                }
                Err(e) => {
                    last = Some(e);
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
        Err(last
            .map(EnvError::Start)
            .unwrap_or_else(|| EnvError::Client("restart failed".into())))
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if let Some(s) = &self.server {
            s.shutdown.cancel();
        }
    }
}

/// A stand-in for kubelets until the node simulator: marks every pod that has no phase
/// yet as scheduled, `Running` and `Ready` (after `delay`, when given), so that workload
/// controllers see pods become available. Runs until `cancel` fires.
///
/// It watches pods in all namespaces with its own informer and writes the `status`
/// subresource (phase, `PodScheduled`/`Initialized`/`ContainersReady`/`Ready` conditions,
/// `startTime`, a pod IP, one running container status per container); `spec.nodeName`
/// is left alone (the workload controllers do not need a bound node).
pub fn fake_kubelet(
    client: kube::Client,
    delay: Option<std::time::Duration>,
    cancel: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    use k8s_openapi::api::core::v1::Pod;
    tokio::spawn(async move {
        let cache = crate::cache::Cache::new(client.clone(), cancel.clone());
        let informer = cache.informer::<Pod>();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::ObjectKey>();
        informer.add_handler(move |change| {
            if let crate::cache::Change::Added(p) | crate::cache::Change::Updated { new: p, .. } =
                change
            {
                let pending = p.status.as_ref().and_then(|s| s.phase.as_deref()).is_none()
                    || p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending");
                if pending && p.metadata.deletion_timestamp.is_none() {
                    let _ = tx.send(crate::ObjectKey::of(p.as_ref()));
                }
            }
        });
        let mut seq: u32 = 0;
        loop {
            let key = tokio::select! {
                _ = cancel.cancelled() => return,
                k = rx.recv() => match k { Some(k) => k, None => return },
            };
            let client = client.clone();
            seq = seq.wrapping_add(1);
            let ip = format!("10.244.{}.{}", (seq >> 8) & 0xff, seq & 0xff);
            tokio::spawn(async move {
                if let Some(d) = delay {
                    tokio::time::sleep(d).await;
                }
                let api: kube::Api<Pod> =
                    kube::Api::namespaced(client, key.namespace().unwrap_or("default"));
                let Ok(pod) = api.get(key.name()).await else {
                    return;
                };
                let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::now(),
                );
                let containers: Vec<serde_json::Value> = pod
                    .spec
                    .as_ref()
                    .map(|s| {
                        s.containers
                            .iter()
                            .map(|c| {
                                serde_json::json!({
                                    "name": c.name,
                                    "image": c.image.clone().unwrap_or_default(),
                                    "imageID": "",
                                    "ready": true,
                                    "started": true,
                                    "restartCount": 0,
                                    "state": {"running": {"startedAt": now}},
                                })
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let condition = |t: &str| serde_json::json!({"type": t, "status": "True", "lastTransitionTime": now});
                let status = serde_json::json!({"status": {
                    "phase": "Running",
                    "startTime": now,
                    "podIP": ip,
                    "podIPs": [{"ip": ip}],
                    "hostIP": "10.0.0.1",
                    "conditions": [
                        condition("PodScheduled"),
                        condition("Initialized"),
                        condition("ContainersReady"),
                        condition("Ready"),
                    ],
                    "containerStatuses": containers,
                }});
                let _ = api
                    .patch_status(
                        key.name(),
                        &kube::api::PatchParams::default(),
                        &kube::api::Patch::Merge(&status),
                    )
                    .await;
            });
        }
    })
}
