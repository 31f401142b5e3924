//! The `coxswain` binary: `apiserver` and `up` sub-commands.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

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
    /// Changes kept for resuming watches and paging consistent lists; older
    /// resourceVersions get 410 Gone.
    #[arg(long, default_value_t = 100_000)]
    watch_history: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Run the embedded Kubernetes-compatible API server.
    Apiserver(ServerArgs),
    /// Run a whole cluster in this process (for now: the API server).
    Up(ServerArgs),
}

fn config(args: &ServerArgs) -> coxswain_apiserver::server::Config {
    let mut c = coxswain_apiserver::server::Config::new(&args.data_dir);
    c.bind = args.bind;
    c.persist = !args.in_memory;
    c.tls = !args.insecure_no_tls;
    c.auth = !args.insecure_no_auth;
    c.history = args.watch_history;
    c
}

async fn run_server(args: ServerArgs, what: &str) -> anyhow::Result<()> {
    let running = coxswain_apiserver::server::start(config(&args))
        .await
        .with_context(|| format!("starting the API server on {}", args.bind))?;
    let kubeconfig =
        std::fs::canonicalize(&running.kubeconfig).unwrap_or(running.kubeconfig.clone());
    println!("coxswain {what}: API server listening on {}", running.url);
    println!("kubeconfig written to {}", kubeconfig.display());
    println!("export KUBECONFIG={}", kubeconfig.display());
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    tracing::info!("shutting down: interrupt received");
    running.shutdown.cancel();
    let _ = running.task.await;
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_new(&cli.log)
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Apiserver(a) => run_server(a, "apiserver").await,
            Command::Up(a) => run_server(a, "up").await,
        }
    })
}
