//! The `coxswain` binary: `up`, `apiserver`, `controller-manager`, `sim` and `snapshot`
//! sub-commands.

#![forbid(unsafe_code)]

mod controller_manager;
mod snapshot;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// mimalloc: allocation was a quarter of the API server's CPU under load with glibc's
/// malloc; with mimalloc the simulator's 100,000 pods are Ready in 49 s instead of 74 s
/// (`cargo run --release -p coxswain-sim --example scale`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// coxswain: a Kubernetes controller runtime, controller manager and embedded API server.
#[derive(Parser)]
#[command(name = "coxswain", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Log filter (tracing `EnvFilter` syntax), e.g. `info` or `coxswain_apiserver=debug`.
    #[arg(long, global = true, default_value = "info", env = "COXSWAIN_LOG")]
    log: String,
}

#[derive(clap::Args, Clone)]
struct ServerArgs {
    /// Directory for the database, TLS material and the kubeconfig.
    #[arg(long, default_value = ".coxswain")]
    data_dir: PathBuf,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    bind: SocketAddr,
    /// Keep objects in memory only (nothing written under --data-dir but TLS material).
    #[arg(long)]
    in_memory: bool,
    /// Serve plain HTTP (loopback only).
    #[arg(long)]
    insecure_no_tls: bool,
    /// Accept requests without the bearer token (loopback only).
    #[arg(long)]
    insecure_no_auth: bool,
    /// How requests are authorized, as kube-apiserver's flag: `RBAC` (roles and
    /// bindings; members of `system:masters`, such as the kubeconfig's admin, may do
    /// anything) or `AlwaysAllow` (every authenticated request).
    #[arg(long, default_value = "RBAC", value_parser = ["RBAC", "AlwaysAllow"])]
    authorization_mode: String,
    /// Changes kept for resuming watches and paging consistent lists; older
    /// resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    watch_history: usize,
    /// Serve metrics.k8s.io/v1beta1 (NodeMetrics, PodMetrics) from the usage simulated
    /// pods report, as metrics-server would (always on with `up`).
    #[arg(long)]
    metrics_api: bool,
    /// Where a Service reference (an APIService's or a webhook's) is served, as
    /// `NAMESPACE/NAME:PORT=HOST:PORT` (coxswain runs no cluster network); repeatable.
    #[arg(long, value_name = "NAMESPACE/NAME:PORT=HOST:PORT",
          value_parser = coxswain_apiserver::server::servicemap::parse)]
    service_proxy_map: Vec<coxswain_apiserver::server::servicemap::ServiceMapping>,
    /// Start afresh with an empty cluster when the database file exists but is empty
    /// (0 bytes); without it such a file is refused, never silently replaced.
    #[arg(long)]
    allow_empty_database: bool,
    /// Built-in admission plugins to turn off, comma-separated, by kube-apiserver's
    /// names: `LimitRanger`, `ServiceAccount`, `RuntimeClass`, `ResourceQuota` (all run
    /// by default). A server without a controller manager to create the namespaces'
    /// `default` service accounts admits pods only with `ServiceAccount` off.
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS",
          value_parser = coxswain_apiserver::server::AdmissionPlugin::parse)]
    disable_admission_plugins: Vec<coxswain_apiserver::server::AdmissionPlugin>,
    /// Verify the database in --data-dir and exit (0: sound, 1: damaged): it opens,
    /// passes redb's integrity check, every object is JSON stored under its
    /// namespace/name with a resourceVersion at most the database's.
    #[arg(long)]
    check: bool,
    #[command(flatten)]
    authn: AuthnArgs,
}

/// kube-apiserver's authentication flags.
#[derive(clap::Args, Clone)]
struct AuthnArgs {
    /// A CSV file of static bearer tokens: `token,user,uid,"group1,group2"`.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// PEM file(s) of public (or private) keys service account tokens are verified
    /// with; the signing key's public key is always one.
    #[arg(long)]
    service_account_key_file: Vec<PathBuf>,
    /// PEM private key service account tokens are signed with (default: `sa.key` in
    /// --data-dir, generated on first start).
    #[arg(long)]
    service_account_signing_key_file: Option<PathBuf>,
    /// Issuer of service account tokens (repeatable: the first signs, all are
    /// accepted).
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    service_account_issuer: Vec<String>,
    /// Audiences of the API server: a token's audiences must include one (default:
    /// the issuers).
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// Longest lifetime a TokenRequest may get; longer requests are shortened.
    #[arg(long, value_parser = go_duration)]
    service_account_max_token_expiration: Option<std::time::Duration>,
    /// Give the kubelet's projected tokens (pod-bound, 3607s) a year, warning after
    /// the hour they asked for.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    service_account_extend_token_expiration: bool,
    /// Check that a legacy token's Secret and service account still exist.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    service_account_lookup: bool,
    /// The `jwks_uri` of the OpenID configuration (default:
    /// `https://<server address>/openid/v1/jwks`).
    #[arg(long)]
    service_account_jwks_uri: Option<String>,
    /// Accept bootstrap tokens (`bootstrap-token-<id>` Secrets in kube-system).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_value = "false", default_missing_value = "true")]
    enable_bootstrap_token_auth: bool,
    /// CA bundle client certificates are verified against (default: the CA in
    /// --data-dir, `ca.crt`, whose key `ca.key` signs client certificates).
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// Serve requests without credentials as `system:anonymous` (forced off with
    /// --authorization-mode=AlwaysAllow, as kube-apiserver does).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_value = "true", default_missing_value = "true")]
    anonymous_auth: bool,
}

impl AuthnArgs {
    fn options(&self) -> coxswain_apiserver::server::AuthnOptions {
        coxswain_apiserver::server::AuthnOptions {
            token_auth_file: self.token_auth_file.clone(),
            service_account_key_files: self.service_account_key_file.clone(),
            service_account_signing_key_file: self.service_account_signing_key_file.clone(),
            service_account_issuers: self.service_account_issuer.clone(),
            api_audiences: self.api_audiences.clone(),
            service_account_max_token_expiration: self.service_account_max_token_expiration,
            service_account_extend_token_expiration: self.service_account_extend_token_expiration,
            service_account_lookup: self.service_account_lookup,
            enable_bootstrap_token_auth: self.enable_bootstrap_token_auth,
            client_ca_file: self.client_ca_file.clone(),
            anonymous_auth: self.anonymous_auth,
            service_account_jwks_uri: self.service_account_jwks_uri.clone(),
        }
    }
}

/// A Go `time.ParseDuration` string.
fn go_duration(s: &str) -> Result<std::time::Duration, String> {
    apimachinery::duration::parse_std(s)
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded Kubernetes-compatible API server.
    Apiserver(Box<ServerArgs>),
    /// Run a whole cluster in this process: the API server, the controller manager and
    /// simulated nodes.
    Up(Box<UpArgs>),
    /// Run the built-in controllers against a cluster (kube-controller-manager's flags).
    #[command(name = "controller-manager")]
    ControllerManager(Box<controller_manager::Command>),
    /// Simulate nodes, a scheduler and kubelets against a cluster (like kwok).
    Sim(SimArgs),
    /// Save a snapshot of a running cluster, or restore one into a new data directory.
    #[command(subcommand)]
    Snapshot(snapshot::Command),
}

#[derive(clap::Args, Clone)]
struct UpArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Simulated nodes (0: none; pods then stay Pending).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    #[command(flatten)]
    load_balancers: LoadBalancerArgs,
    /// The controller manager's flags, as `coxswain controller-manager` takes them
    /// (`--controllers`, `--node-monitor-grace-period=8s`, ...); those about connecting,
    /// leader election, client rate limits and serving are the embedded cluster's own.
    #[command(flatten)]
    controller_manager: controller_manager::Args,
}

/// The simulated cloud's service load balancers.
#[derive(clap::Args, Clone)]
struct LoadBalancerArgs {
    /// IPv4 CIDR that `type: LoadBalancer` Services get their external address from.
    #[arg(long, default_value = "172.18.255.0/24")]
    load_balancer_ip_range: String,
    /// Do not give LoadBalancer Services addresses (a real cloud provider or another
    /// load balancer implementation serves them).
    #[arg(long)]
    no_load_balancers: bool,
}

impl LoadBalancerArgs {
    fn apply(&self, config: &mut coxswain_sim::SimConfig) {
        config.load_balancers = !self.no_load_balancers;
        config.load_balancer_ip_range = self.load_balancer_ip_range.clone();
    }
}

#[derive(clap::Args, Clone)]
struct SimArgs {
    /// Path to a kubeconfig file (default: $KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Simulated nodes to create (or adopt).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Do not schedule pods (next to a real kube-scheduler).
    #[arg(long)]
    no_scheduler: bool,
    #[command(flatten)]
    load_balancers: LoadBalancerArgs,
    /// Leave the nodes' pod CIDRs to the controller manager's node IPAM controller
    /// (kube-controller-manager --allocate-node-cidrs) and wait for them: a node's pods
    /// stay Pending without an IP until its spec.podCIDR is set.
    #[arg(long)]
    wait_for_pod_cidr: bool,
    /// Nodes whose heartbeats (Lease, status) and kubelet are stopped from the start,
    /// unless their `sim.coxswain.dev/heartbeat` annotation says otherwise (`running`).
    #[arg(long, value_delimiter = ',')]
    stop_heartbeats: Vec<String>,
}

/// The client configuration of `kubeconfig`, or the inferred one (`KUBECONFIG`, in-cluster).
async fn kube_config(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Config> {
    match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .context("loading the kubeconfig")
        }
        None => kube::Config::infer()
            .await
            .context("no Kubernetes configuration (pass --kubeconfig)"),
    }
}

/// The node simulator's client: its writes appear in managedFields as the kubelet's.
async fn kube_client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Client> {
    let mut config = kube_config(kubeconfig).await?;
    coxswain_runtime::client::set_user_agent(
        &mut config,
        &coxswain_runtime::client::user_agent("kubelet"),
    );
    kube::Client::try_from(config).context("building the client")
}

async fn run_sim(args: SimArgs) -> anyhow::Result<i32> {
    let client = kube_client(args.kubeconfig.as_deref()).await?;
    let mut config = coxswain_sim::SimConfig {
        nodes: args.nodes,
        scheduler: !args.no_scheduler,
        wait_for_pod_cidr: args.wait_for_pod_cidr,
        stopped_heartbeats: args.stop_heartbeats.into_iter().collect(),
        ..Default::default()
    };
    args.load_balancers.apply(&mut config);
    let cancel = coxswain_runtime::manager::shutdown_signal();
    match coxswain_sim::run(client, config, cancel).await {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("error: {e}");
            Ok(1)
        }
    }
}

fn config(args: &ServerArgs) -> coxswain_apiserver::server::Config {
    let mut c = coxswain_apiserver::server::Config::new(&args.data_dir);
    c.bind = args.bind;
    c.persist = !args.in_memory;
    c.tls = !args.insecure_no_tls;
    c.auth = !args.insecure_no_auth;
    c.authorization_mode = match args.authorization_mode.as_str() {
        "AlwaysAllow" => coxswain_apiserver::server::AuthorizationMode::AlwaysAllow,
        _ => coxswain_apiserver::server::AuthorizationMode::Rbac,
    };
    c.history = args.watch_history;
    c.metrics_api = args.metrics_api;
    c.service_map = args.service_proxy_map.iter().cloned().collect();
    c.authn = args.authn.options();
    c.allow_empty_database = args.allow_empty_database;
    c.admission_plugins = coxswain_apiserver::server::AdmissionPlugins::without(
        args.disable_admission_plugins.iter().copied(),
    );
    c
}

async fn run_server(
    args: ServerArgs,
    what: &str,
    controllers: Option<controller_manager::Args>,
    nodes: usize,
    load_balancers: Option<LoadBalancerArgs>,
) -> anyhow::Result<i32> {
    if args.check {
        return Ok(snapshot::check(&args.data_dir));
    }
    let with_controllers = controllers.is_some();
    let wait_for_pod_cidr = controllers
        .as_ref()
        .is_some_and(controller_manager::Args::allocates_node_cidrs);
    let mut server_config = config(&args);
    // `up` is a whole cluster: its simulated pods' usage is served as metrics-server
    // would serve it (k3s bundles metrics-server), so `kubectl top` and the HPA work
    server_config.metrics_api |= with_controllers;
    let running = coxswain_apiserver::server::start(server_config)
        .await
        .with_context(|| format!("starting the API server on {}", args.bind))?;
    let kubeconfig =
        std::fs::canonicalize(&running.kubeconfig).unwrap_or(running.kubeconfig.clone());
    println!("coxswain {what}: API server listening on {}", running.url);
    let stop = coxswain_runtime::manager::shutdown_signal();
    let controllers = if let Some(mut cm) = controllers {
        // the legacy token controller signs with the API server's service account key
        // (`sa.key` of the data dir) unless --service-account-private-key-file names one
        cm.default_service_account_private_key_file(&args.data_dir.join("sa.key"));
        // kubeadm runs kube-controller-manager with --use-service-account-credentials
        // (a server without authentication has no tokens to give)
        cm.default_use_service_account_credentials(!args.insecure_no_auth);
        cm.default_cluster_signing(args.data_dir.join("ca.crt"), args.data_dir.join("ca.key"));
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(controller_manager::run_in_process(
            cm,
            kubeconfig.clone(),
            stop.clone(),
            addr_tx,
        ));
        if let Ok(Some(addr)) = addr_rx.await {
            println!("controller manager: health and metrics on https://{addr} (/healthz, /metrics, /debug/controllers)");
            println!("  scrape it with a token allowed to get /metrics (the kubeconfig's admin token, or a service account's bound to a role with nonResourceURLs [/metrics]):");
            println!("  curl -k -H \"Authorization: Bearer $(kubectl create token <service-account>)\" https://{addr}/metrics");
        }
        Some(task)
    } else {
        None
    };
    let sim = if with_controllers && nodes > 0 {
        let client = kube_client(Some(&kubeconfig)).await?;
        let mut config = coxswain_sim::SimConfig {
            nodes,
            wait_for_pod_cidr,
            ..Default::default()
        };
        if let Some(lb) = &load_balancers {
            lb.apply(&mut config);
        }
        println!("simulated nodes: {nodes} (kubectl get nodes)");
        Some(tokio::spawn(coxswain_sim::run(
            client,
            config,
            stop.clone(),
        )))
    } else {
        None
    };
    println!("kubeconfig written to {}", kubeconfig.display());
    println!("export KUBECONFIG={}", kubeconfig.display());
    stop.cancelled().await;
    tracing::info!("shutting down");
    let mut code = 0;
    if let Some(task) = controllers {
        code = match task.await {
            Ok(Ok(())) => 0,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "controller manager stopped");
                e.exit_code()
            }
            Err(_) => 1,
        };
    }
    if let Some(task) = sim {
        if let Ok(Err(e)) = task.await {
            tracing::error!(error = %e, "node simulator stopped");
        }
    }
    running.shutdown.cancel();
    let _ = running.task.await;
    Ok(code)
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let filter = match &cli.command {
        // kube-controller-manager's --v raises the default log level
        Command::ControllerManager(a) if cli.log == "info" => a.args.log_filter().to_string(),
        _ => cli.log.clone(),
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&filter)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // colours only on a terminal: a log redirected to a file (a service's journal,
        // a test's log) stays plain text, as kube-controller-manager's
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    let code = runtime.block_on(async move {
        match cli.command {
            Command::Apiserver(a) => run_server(*a, "apiserver", None, 0, None).await,
            Command::Up(a) => {
                let a = *a;
                run_server(
                    a.server,
                    "up",
                    Some(a.controller_manager),
                    a.nodes,
                    Some(a.load_balancers),
                )
                .await
            }
            Command::Sim(a) => run_sim(a).await,
            Command::ControllerManager(a) => controller_manager::run(*a).await,
            Command::Snapshot(a) => snapshot::run(a).await,
        }
    })?;
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn flags_are_unique() {
        // `up` flattens the API server's and the controller manager's flags
        Cli::command().debug_assert();
    }

    #[test]
    fn authentication_flags() {
        let cli = Cli::try_parse_from([
            "coxswain",
            "apiserver",
            "--token-auth-file=/t.csv",
            "--service-account-issuer=https://a",
            "--service-account-issuer=https://b",
            "--api-audiences=x,y",
            "--service-account-max-token-expiration=48h",
            "--anonymous-auth=false",
            "--enable-bootstrap-token-auth",
            "--service-account-key-file=/k1",
            "--service-account-key-file=/k2",
        ])
        .unwrap();
        let Command::Apiserver(a) = cli.command else {
            panic!("apiserver")
        };
        let o = config(&a).authn;
        assert_eq!(o.token_auth_file, Some(PathBuf::from("/t.csv")));
        assert_eq!(o.service_account_issuers, ["https://a", "https://b"]);
        assert_eq!(o.api_audiences, ["x", "y"]);
        assert_eq!(
            o.service_account_max_token_expiration,
            Some(std::time::Duration::from_secs(48 * 3600))
        );
        assert!(!o.anonymous_auth);
        assert!(o.enable_bootstrap_token_auth);
        assert_eq!(o.service_account_key_files.len(), 2);
        let Command::Apiserver(d) = Cli::try_parse_from(["coxswain", "apiserver"])
            .unwrap()
            .command
        else {
            panic!("apiserver")
        };
        let d = config(&d).authn;
        assert!(d.anonymous_auth && d.service_account_lookup);
        assert_eq!(
            d.service_account_issuers,
            ["https://kubernetes.default.svc.cluster.local"]
        );
        assert_eq!(d.audiences(), d.service_account_issuers);
    }

    #[test]
    fn service_proxy_map_flags() {
        let cli = Cli::try_parse_from([
            "coxswain",
            "apiserver",
            "--service-proxy-map=kube-system/metrics-server:443=127.0.0.1:4443",
            "--service-proxy-map",
            "wardle/api:8443=[::1]:9443",
        ])
        .unwrap();
        let Command::Apiserver(a) = cli.command else {
            panic!("apiserver")
        };
        let map = config(&a).service_map;
        assert_eq!(
            map.resolve("kube-system", "metrics-server", 443),
            Some("127.0.0.1:4443")
        );
        assert_eq!(map.resolve("wardle", "api", 8443), Some("[::1]:9443"));
        let bad = Cli::try_parse_from([
            "coxswain",
            "apiserver",
            "--service-proxy-map=kube-system/metrics-server=127.0.0.1:4443",
        ]);
        assert!(bad.is_err());
    }
}
