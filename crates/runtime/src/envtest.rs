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
/// address are set already, and the `ServiceAccount` admission plugin is off, as in
/// controller-runtime's envtest: no controller creates the namespaces' `default`
/// accounts, and the plugin refuses pods whose account does not exist; `adjust` may
/// turn it back on).
pub async fn start_with(
    adjust: impl FnOnce(&mut coxswain_apiserver::server::Config),
) -> Result<TestEnv, EnvError> {
    let dir = tempfile::tempdir()?;
    let mut config = coxswain_apiserver::server::Config::new(dir.path());
    config.bind = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    config.persist = false;
    config
        .admission_plugins
        .disable(coxswain_apiserver::server::AdmissionPlugin::ServiceAccount);
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
/// controllers see pods become available. Runs until `cancel` fires. The same as
/// [`FakeKubelet`] with only `delay` set.
pub fn fake_kubelet(
    client: kube::Client,
    delay: Option<std::time::Duration>,
    cancel: tokio_util::sync::CancellationToken,
) -> tokio::task::JoinHandle<()> {
    FakeKubelet {
        delay,
        ..FakeKubelet::default()
    }
    .run(client, cancel)
}

/// A stand-in for the kubelets of a cluster whose pods start and stop at once (the
/// "stand-in nodes" of controller benchmarks).
///
/// It watches pods in all namespaces with its own informer (no polling) and:
/// - binds each new unscheduled pod to one of [`nodes`](Self::nodes) stand-in nodes (round
///   robin, through the `binding` subresource), when there are any;
/// - marks it `Running` and `Ready` (after [`delay`](Self::delay), when given) through the
///   `status` subresource: phase, `PodScheduled`/`Initialized`/`ContainersReady`/`Ready`
///   conditions, `startTime`, a pod IP, one running container status per container;
/// - with [`delete_terminating`](Self::delete_terminating), removes every pod that has a
///   `deletionTimestamp` at once (a delete with grace period 0 and the pod's UID as
///   precondition), as a kubelet does once the containers stopped.
///
/// The API server deletes an unscheduled pod at once, so pods get a `deletionTimestamp`
/// (and wait for their kubelet) only when they are bound to a node. The stand-in nodes
/// are `Node` objects named `fake-node-<i>` that report `Ready` and renew their Lease in
/// `kube-node-lease` every 10 s, so that the node lifecycle controller keeps them healthy
/// and the pod garbage collector does not take their pods for orphans.
#[derive(Clone, Debug, Default)]
pub struct FakeKubelet {
    /// How long a pod waits before it runs (default: not at all).
    pub delay: Option<std::time::Duration>,
    /// Remove pods that are being deleted at once (default: leave them to whoever else).
    pub delete_terminating: bool,
    /// Stand-in nodes to bind new pods to (default 0: pods stay unscheduled and are
    /// deleted by the API server without grace period).
    pub nodes: usize,
}

/// What the stand-in kubelet does to one pod.
enum KubeletWork {
    Start(std::sync::Arc<k8s_openapi::api::core::v1::Pod>),
    Remove(crate::ObjectKey, String),
}

/// Name of the `i`-th stand-in node.
fn fake_node_name(i: usize) -> String {
    format!("fake-node-{i}")
}

impl FakeKubelet {
    /// Start the stand-in with `client`; it runs until `cancel` fires.
    pub fn run(
        self,
        client: kube::Client,
        cancel: tokio_util::sync::CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        use k8s_openapi::api::core::v1::Pod;
        tokio::spawn(async move {
            for i in 0..self.nodes {
                if let Err(e) = register_node(&client, &fake_node_name(i)).await {
                    tracing::warn!(error = %e, "fake kubelet: node registration failed");
                }
            }
            let cache = crate::cache::Cache::new(client.clone(), cancel.clone());
            let informer = cache.informer::<Pod>();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<KubeletWork>();
            // pods already being started (by UID), so that the updates a start causes
            // do not start them again
            let starting = std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::<
                String,
            >::new()));
            let seen = starting.clone();
            let delete_terminating = self.delete_terminating;
            informer.add_handler(move |change| {
                let lock = || seen.lock().unwrap_or_else(|e| e.into_inner());
                let p = match change {
                    crate::cache::Change::Added(p)
                    | crate::cache::Change::Updated { new: p, .. } => p,
                    crate::cache::Change::Deleted(p) => {
                        if let Some(uid) = &p.metadata.uid {
                            lock().remove(uid);
                        }
                        return;
                    }
                };
                let uid = p.metadata.uid.clone().unwrap_or_default();
                if p.metadata.deletion_timestamp.is_some() {
                    if delete_terminating {
                        let _ = tx.send(KubeletWork::Remove(crate::ObjectKey::of(p.as_ref()), uid));
                    }
                    return;
                }
                let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
                if matches!(phase, None | Some("Pending")) && lock().insert(uid) {
                    let _ = tx.send(KubeletWork::Start(p.clone()));
                }
            });
            let mut seq: u32 = 0;
            let mut next_node = 0usize;
            let mut heartbeat = tokio::time::interval(std::time::Duration::from_secs(10));
            heartbeat.tick().await;
            loop {
                let work = tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = heartbeat.tick() => {
                        for i in 0..self.nodes {
                            let client = client.clone();
                            tokio::spawn(async move {
                                if let Err(e) = renew_lease(&client, &fake_node_name(i)).await {
                                    tracing::warn!(error = %e, "fake kubelet: lease renewal failed");
                                }
                            });
                        }
                        continue;
                    }
                    w = rx.recv() => match w { Some(w) => w, None => return },
                };
                let client = client.clone();
                match work {
                    KubeletWork::Remove(key, uid) => {
                        tokio::spawn(async move {
                            let api: kube::Api<Pod> =
                                kube::Api::namespaced(client, key.namespace().unwrap_or("default"));
                            let dp = kube::api::DeleteParams {
                                grace_period_seconds: Some(0),
                                preconditions: Some(kube::api::Preconditions {
                                    uid: Some(uid),
                                    resource_version: None,
                                }),
                                ..Default::default()
                            };
                            let _ = api.delete(key.name(), &dp).await;
                        });
                    }
                    KubeletWork::Start(pod) => {
                        seq = seq.wrapping_add(1);
                        let ip = format!("10.244.{}.{}", (seq >> 8) & 0xff, seq & 0xff);
                        let node = (self.nodes > 0).then(|| {
                            next_node = (next_node + 1) % self.nodes;
                            fake_node_name(next_node)
                        });
                        let delay = self.delay;
                        let starting = starting.clone();
                        tokio::spawn(async move {
                            if let Some(d) = delay {
                                tokio::time::sleep(d).await;
                            }
                            if let Err(e) = start_pod(&client, &pod, node, &ip).await {
                                tracing::debug!(error = %e, "fake kubelet: pod not started");
                                // a later update of the pod tries again
                                if let Some(uid) = &pod.metadata.uid {
                                    starting
                                        .lock()
                                        .unwrap_or_else(|e| e.into_inner())
                                        .remove(uid);
                                }
                            }
                        });
                    }
                }
            }
        })
    }
}

/// Bind `pod` to `node` (when given and the pod is not bound yet), then report it
/// running and ready.
async fn start_pod(
    client: &kube::Client,
    pod: &k8s_openapi::api::core::v1::Pod,
    node: Option<String>,
    ip: &str,
) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::Resource;
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let api: kube::Api<Pod> = kube::Api::namespaced(
        client.clone(),
        pod.metadata.namespace.as_deref().unwrap_or("default"),
    );
    let bound = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if let (Some(node), false) = (node, bound) {
        let binding = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let body = serde_json::to_vec(&binding).map_err(kube::Error::SerdeError)?;
        let req = kube::core::Request::new(Pod::url_path(&(), pod.metadata.namespace.as_deref()))
            .create_subresource("binding", name, &kube::api::PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        match client.request_text(req).await {
            // bound already (by an earlier attempt)
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
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
    let condition =
        |t: &str| serde_json::json!({"type": t, "status": "True", "lastTransitionTime": now});
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
    api.patch_status(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await
    .map(|_| ())
}

/// Create the stand-in node `name` (if missing), report it `Ready` and create its Lease.
async fn register_node(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    use k8s_openapi::api::core::v1::Node;
    let api: kube::Api<Node> = kube::Api::all(client.clone());
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
    }))
    .map_err(kube::Error::SerdeError)?;
    match api.create(&kube::api::PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e),
    }
    let now =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now());
    let status = serde_json::json!({"status": {
        "capacity": {"cpu": "1000", "memory": "4000Gi", "pods": "100000"},
        "allocatable": {"cpu": "1000", "memory": "4000Gi", "pods": "100000"},
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        }],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
    }});
    api.patch_status(
        name,
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(&status),
    )
    .await?;
    renew_lease(client, name).await
}

/// Create or renew the Lease of stand-in node `name` in `kube-node-lease`.
async fn renew_lease(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    use k8s_openapi::api::coordination::v1::Lease;
    let api: kube::Api<Lease> = kube::Api::namespaced(client.clone(), "kube-node-lease");
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    );
    let spec = serde_json::json!({
        "holderIdentity": name,
        "leaseDurationSeconds": 40,
        "renewTime": now,
    });
    let patch = serde_json::json!({"spec": spec});
    match api
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            let lease: Lease = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name}, "spec": spec,
            }))
            .map_err(kube::Error::SerdeError)?;
            api.create(&kube::api::PostParams::default(), &lease)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    }
}
