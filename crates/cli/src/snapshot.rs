//! `coxswain snapshot save` and `coxswain snapshot restore` (etcdctl's `snapshot save`
//! and etcdutl's `snapshot restore`), and `coxswain apiserver --check`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use coxswain_apiserver::server::{persist, snapshot};

/// `coxswain snapshot`.
#[derive(Subcommand)]
pub enum Command {
    /// Save a consistent snapshot of a running cluster (every object as of its last
    /// durable resourceVersion) to FILE; writes go on meanwhile.
    Save(SaveArgs),
    /// Write the snapshot FILE as the database of a new data directory (refused when
    /// DIR already holds a database); start `coxswain apiserver --data-dir DIR` on it.
    Restore(RestoreArgs),
}

/// `coxswain snapshot save`.
#[derive(clap::Args)]
pub struct SaveArgs {
    /// Where to write the snapshot (written to FILE.partial, renamed when complete).
    file: PathBuf,
    /// Path to a kubeconfig file (default: $KUBECONFIG or ~/.kube/config); its user
    /// must be allowed to GET /coxswain/v1/snapshot (system:masters, cluster-admin).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The API server's address (overrides the kubeconfig's server).
    #[arg(long)]
    server: Option<String>,
}

/// `coxswain snapshot restore`.
#[derive(clap::Args)]
pub struct RestoreArgs {
    /// The snapshot to restore.
    file: PathBuf,
    /// The data directory to create the database in (created when missing).
    #[arg(long)]
    data_dir: PathBuf,
}

/// Run `coxswain snapshot ...`.
pub async fn run(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Save(a) => save(a).await,
        Command::Restore(a) => {
            let (rv, objects) = snapshot::restore(&a.file, &a.data_dir)
                .map_err(anyhow::Error::msg)
                .context("restoring the snapshot")?;
            println!(
                "restored {objects} objects at resourceVersion {rv} into {}",
                a.data_dir.join(persist::DB_FILE).display()
            );
            println!(
                "start it with: coxswain apiserver --data-dir {}",
                a.data_dir.display()
            );
            Ok(0)
        }
    }
}

async fn client(args: &SaveArgs) -> anyhow::Result<kube::Client> {
    let mut config = crate::kube_config(args.kubeconfig.as_deref()).await?;
    if let Some(server) = &args.server {
        config.cluster_url = server.parse().context("parsing --server")?;
    }
    kube::Client::try_from(config).context("building the client")
}

async fn save(args: SaveArgs) -> anyhow::Result<i32> {
    use futures::AsyncBufRead;
    let client = client(&args).await?;
    let request = http::Request::get(snapshot::PATH)
        .body(Vec::new())
        .context("building the request")?;
    let body = client
        .request_stream(request)
        .await
        .context("requesting the snapshot")?;
    let mut body: std::pin::Pin<Box<dyn AsyncBufRead + Send>> = Box::pin(body);
    let partial = partial_path(&args.file);
    let file = std::fs::File::create(&partial)
        .with_context(|| format!("creating {}", partial.display()))?;
    let mut out = futures::io::AllowStdIo::new(std::io::BufWriter::new(file));
    let copied = futures::io::copy_buf(&mut body, &mut out).await;
    let finished = copied.and_then(|_| {
        use std::io::Write;
        let mut w = out.into_inner();
        w.flush()?;
        w.get_ref().sync_all()
    });
    if let Err(e) = finished {
        let _ = std::fs::remove_file(&partial);
        return Err(e).context("receiving the snapshot");
    }
    let verified = match snapshot::read(&partial) {
        Ok(v) => v,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            anyhow::bail!("the snapshot received is incomplete: {e}");
        }
    };
    std::fs::rename(&partial, &args.file)
        .with_context(|| format!("renaming {} to {}", partial.display(), args.file.display()))?;
    println!(
        "saved a snapshot of {} objects at resourceVersion {} to {}",
        verified.objects.len(),
        verified.rv,
        args.file.display()
    );
    Ok(0)
}

fn partial_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    file.with_file_name(name)
}

/// `coxswain apiserver --check`: verify the database of `data_dir` and print a report;
/// the exit code is 0 when it is sound, 1 otherwise.
pub fn check(data_dir: &Path) -> i32 {
    let path = data_dir.join(persist::DB_FILE);
    match persist::check(&path) {
        Ok(report) if report.problems.is_empty() => {
            for n in &report.notes {
                println!("note: {n}");
            }
            println!(
                "{}: ok: {} objects, resourceVersion {}, storage format version {}",
                path.display(),
                report.objects,
                report.rv,
                persist::FORMAT_VERSION
            );
            0
        }
        Ok(report) => {
            println!(
                "{}: {} problem(s) in {} objects (resourceVersion {}):",
                path.display(),
                report.problems.len(),
                report.objects,
                report.rv
            );
            for p in &report.problems {
                println!("  {p}");
            }
            1
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
