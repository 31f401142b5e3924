//! Health probes: named checks served on `/healthz` and `/readyz`.
//!
//! As controller-runtime's `pkg/healthz` (itself the API server's healthz): a probe path
//! runs every named check; all pass → `200 ok` (with `?verbose`, one `[+]name ok` line per
//! check then `healthz check passed`); any fails → `500` with the per-check lines, failures
//! as `[-]name failed: reason withheld` (the endpoint is public: details go to the log and
//! to `/<path>/<name>`), then `healthz check failed`. `?exclude=name` (repeatable) skips a
//! check. Each check also has its own path, `/<path>/<name>`, which shows its error. A
//! probe with no checks gets the built-in `ping` check.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, RwLock};

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::future::BoxFuture;
use futures::FutureExt;

/// A named check: `Ok` when healthy, `Err(reason)` when not.
pub type Check = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// A check from an async closure.
pub fn check<F, Fut>(f: F) -> Check
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Arc::new(move || f().boxed())
}

/// The check that always passes.
pub fn ping() -> Check {
    check(|| async { Ok(()) })
}

/// The named checks of one probe path.
#[derive(Clone, Default)]
pub struct Probe {
    checks: Arc<RwLock<Vec<(String, Check)>>>,
}

/// Why a check could not be added.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Two checks with one name.
    #[error("a health check named {0:?} already exists")]
    Duplicate(String),
    /// A name that cannot be a path segment.
    #[error("invalid health check name {0:?}: use letters, digits, '-', '_' and '.'")]
    InvalidName(String),
}

impl Probe {
    /// Add a named check.
    pub fn add(&self, name: &str, check: Check) -> Result<(), ProbeError> {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(ProbeError::InvalidName(name.to_string()));
        }
        let mut checks = self.checks.write().unwrap_or_else(|e| e.into_inner());
        if checks.iter().any(|(n, _)| n == name) {
            return Err(ProbeError::Duplicate(name.to_string()));
        }
        checks.push((name.to_string(), check));
        Ok(())
    }

    fn snapshot(&self) -> Vec<(String, Check)> {
        let checks = self.checks.read().unwrap_or_else(|e| e.into_inner());
        if checks.is_empty() {
            vec![("ping".to_string(), ping())]
        } else {
            checks.clone()
        }
    }

    /// Run every check (minus `excluded`) and render the answer.
    pub async fn run(&self, query: Option<&str>) -> (StatusCode, String) {
        let (verbose, mut excluded) = parse_query(query);
        let mut out = String::new();
        let mut failed = false;
        for (name, check) in self.snapshot() {
            if excluded.remove(&name) {
                out.push_str(&format!("[+]{name} excluded: ok\n"));
                continue;
            }
            match check().await {
                Ok(()) => out.push_str(&format!("[+]{name} ok\n")),
                Err(reason) => {
                    tracing::debug!(check = %name, %reason, "health check failed");
                    out.push_str(&format!("[-]{name} failed: reason withheld\n"));
                    failed = true;
                }
            }
        }
        if !excluded.is_empty() {
            let names: Vec<String> = excluded.iter().map(|n| format!("{n:?}")).collect();
            out.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                names.join(",")
            ));
        }
        if failed {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{out}healthz check failed\n"),
            )
        } else if verbose {
            (StatusCode::OK, format!("{out}healthz check passed\n"))
        } else {
            (StatusCode::OK, "ok".to_string())
        }
    }

    /// Run one check by name (`None`: no such check).
    pub async fn run_one(&self, name: &str) -> Option<(StatusCode, String)> {
        let (_, check) = self.snapshot().into_iter().find(|(n, _)| n == name)?;
        Some(match check().await {
            Ok(()) => (StatusCode::OK, "ok".to_string()),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {e}\n"),
            ),
        })
    }
}

fn parse_query(query: Option<&str>) -> (bool, BTreeSet<String>) {
    let mut verbose = false;
    let mut excluded = BTreeSet::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "verbose" => verbose = true,
            "exclude" => {
                excluded.insert(percent_decode(v));
            }
            _ => {}
        }
    }
    (verbose, excluded)
}

fn percent_decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match bytes[i] {
            b'%' => bytes
                .get(i + 1)
                .and_then(|&h| hex(h))
                .zip(bytes.get(i + 2).and_then(|&l| hex(l)))
                .map(|(h, l)| h * 16 + l),
            _ => None,
        };
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn text(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// Routes for a probe at `path` (`/healthz`) and `path/<name>`.
pub fn routes(path: &str, probe: Probe) -> Router {
    let path = format!("/{}", path.trim_matches('/'));
    Router::new()
        .route(
            &path,
            get(|State(p): State<Probe>, RawQuery(q): RawQuery| async move {
                let (status, body) = p.run(q.as_deref()).await;
                text(status, body)
            }),
        )
        .route(
            &format!("{path}/{{name}}"),
            get(
                |State(p): State<Probe>, Path(name): Path<String>| async move {
                    match p.run_one(&name).await {
                        Some((status, body)) => text(status, body),
                        None => text(StatusCode::NOT_FOUND, "404 page not found\n".to_string()),
                    }
                },
            ),
        )
        .with_state(probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(reason: &'static str) -> Check {
        check(move || async move { Err(reason.to_string()) })
    }

    #[tokio::test]
    async fn answers_like_controller_runtime() {
        let p = Probe::default();
        assert_eq!(p.run(None).await, (StatusCode::OK, "ok".into()));
        assert_eq!(
            p.run(Some("verbose")).await.1,
            "[+]ping ok\nhealthz check passed\n"
        );
        p.add("cache", ping()).expect("add");
        p.add("db", failing("connection refused")).expect("add");
        assert!(matches!(p.add("db", ping()), Err(ProbeError::Duplicate(_))));
        assert!(matches!(
            p.add("a/b", ping()),
            Err(ProbeError::InvalidName(_))
        ));
        let (status, body) = p.run(Some("verbose=1")).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            body,
            "[+]cache ok\n[-]db failed: reason withheld\nhealthz check failed\n"
        );
        let (status, body) = p.run(Some("exclude=db&exclude=nope&verbose")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]cache ok\n[+]db excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nhealthz check passed\n"
        );
        assert_eq!(
            p.run_one("db").await,
            Some((
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error: connection refused\n".into()
            ))
        );
        assert_eq!(
            p.run_one("cache").await,
            Some((StatusCode::OK, "ok".into()))
        );
        assert_eq!(p.run_one("ping").await, None);
        assert_eq!(percent_decode("a%2Db+c%zz"), "a-b c%zz");
    }
}
