//! The fault-injection harness: run controllers on the embedded API server under a
//! [`Plan`] of faults, check invariants on every change, and explore plans systematically.
//!
//! A [`Scenario`] says which controllers run (added to a fresh [`Manager`] for every
//! controller process, since a crash drops everything a process held), what the world
//! needs besides them (a kubelet stand-in, say), the workload script, the safety
//! [`Invariant`]s checked after every change an observer sees, and the convergence
//! conditions that must hold once the workload is done. [`run`] runs it once under one
//! plan on a fresh server; [`check`] explores: a run without faults counts the controller
//! process's writes W, then every fault kind is tried at steps of `1..=W` (all of them, or
//! a seeded sample), then random multi-fault plans. A failing plan is shrunk to the
//! smallest that still fails and reported with its seed and the command that replays it.
//!
//! ```no_run
//! # use coxswain_runtime::testing::{check, Invariant, Scenario, World};
//! # use futures::FutureExt;
//! # async fn demo() {
//! let scenario = Scenario::new("configmap-to-secret")
//!     .controllers(|mgr| { /* add the controller to mgr */ Ok(()) })
//!     .observe::<k8s_openapi::api::core::v1::Secret>()
//!     .workload(|w: World| async move { /* create, update, delete */ Ok(()) }.boxed())
//!     .converged("a secret per configmap", |w| Ok(()));
//! check(&scenario).await;
//! # }
//! ```
//!
//! The runtime's own example controller runs so in `tests/it/faults.rs` (with a broken
//! controller the harness catches); the built-in controllers' scenarios are in
//! `crates/controllers/tests/it/faults/`.
//!
//! Environment: `COXSWAIN_FAULT_SEED` (default 1), `COXSWAIN_FAULT_STEPS` (`all`, or how
//! many steps per fault kind, default 2), `COXSWAIN_FAULT_RANDOM` (random plans, default
//! 0), `COXSWAIN_FAULT_PLAN` (replay only this plan, e.g. `crash@3,delay@5`).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cache::{Cache, CachedKind};
pub use crate::fault::{Fault, FaultKind, Plan};
use crate::fault::{Incarnation, Injector, Signal};
use crate::manager::{BoxError, Manager, ManagerOptions};

/// The namespace every run's workload works in (each run has its own server).
pub const NAMESPACE: &str = "faults";

/// How long the controllers must be quiet (no write, no held watch event) with the
/// convergence conditions holding for a run to end.
pub const SETTLE: Duration = Duration::from_millis(300);

/// The Lease replicas elect a leader with, in `kube-system`.
pub const LEASE: &str = "fault-harness";

type SetupFn = Arc<dyn Fn(&Manager) -> Result<(), BoxError> + Send + Sync>;
type ObserveFn =
    Arc<dyn Fn(&Cache, Arc<dyn Fn() + Send + Sync>) -> BoxFuture<'static, ()> + Send + Sync>;
type ScriptFn = Arc<dyn Fn(World) -> BoxFuture<'static, Result<(), String>> + Send + Sync>;
type CheckFn = Arc<dyn Fn(&World) -> Result<(), String> + Send + Sync>;
type ComponentFn =
    Arc<dyn Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// A safety property: checked after every change an observer sees, during the whole run.
#[derive(Clone)]
pub struct Invariant {
    name: String,
    check: CheckFn,
    except: Vec<FaultKind>,
}

impl Invariant {
    /// The property `name`, true when `check` returns `Ok`.
    pub fn new(
        name: &str,
        check: impl Fn(&World) -> Result<(), String> + Send + Sync + 'static,
    ) -> Invariant {
        Invariant {
            name: name.to_string(),
            check: Arc::new(check),
            except: Vec::new(),
        }
    }

    /// Do not check it in runs whose plan has any of `kinds`: faults under which
    /// upstream's controller does not keep this property either (an ambiguous create, a
    /// stale view after a restart).
    pub fn except(mut self, kinds: &[FaultKind]) -> Invariant {
        self.except.extend_from_slice(kinds);
        self
    }

    fn applies(&self, plan: &Plan) -> bool {
        !self.except.iter().any(|k| plan.has(*k))
    }
}

/// One controller (or several) under test: what runs, the workload, the invariants.
#[derive(Clone)]
pub struct Scenario {
    name: String,
    controllers: SetupFn,
    observers: Vec<ObserveFn>,
    components: Vec<ComponentFn>,
    setup: Option<ScriptFn>,
    workload: Option<ScriptFn>,
    invariants: Vec<Invariant>,
    converged: Vec<(String, CheckFn)>,
    bound: Duration,
    kinds: Vec<FaultKind>,
    options: Arc<dyn Fn(&mut ManagerOptions) + Send + Sync>,
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Scenario {
    /// A scenario named `name` (no controllers, no workload yet).
    pub fn new(name: &str) -> Scenario {
        Scenario {
            name: name.to_string(),
            controllers: Arc::new(|_| Ok(())),
            observers: Vec::new(),
            components: Vec::new(),
            setup: None,
            workload: None,
            invariants: Vec::new(),
            converged: Vec::new(),
            bound: Duration::from_secs(30),
            kinds: FaultKind::ALL.to_vec(),
            options: Arc::new(|_| {}),
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Add the controllers under test to `mgr`, a fresh manager (not started) for each
    /// controller process: the first, one after every crash, and standby replicas.
    pub fn controllers(
        mut self,
        add: impl Fn(&Manager) -> Result<(), BoxError> + Send + Sync + 'static,
    ) -> Scenario {
        self.controllers = Arc::new(add);
        self
    }

    /// Adjust the options of the controller processes' managers.
    pub fn manager_options(
        mut self,
        f: impl Fn(&mut ManagerOptions) + Send + Sync + 'static,
    ) -> Scenario {
        self.options = Arc::new(f);
        self
    }

    /// Watch kind `K` (all namespaces) with the observer: invariants are checked after each
    /// of its changes, and [`World::list`] reads it.
    pub fn observe<K: CachedKind>(mut self) -> Scenario
    where
        K::Scope: 'static,
    {
        self.observers.push(Arc::new(|cache: &Cache, on_change| {
            let informer = cache.informer::<K>();
            informer.add_handler(move |_| on_change());
            async move { informer.wait_for_sync().await }.boxed()
        }));
        self
    }

    /// Something the world needs besides the controllers (a kubelet stand-in, the node
    /// simulator): started once per run with the admin client, before the setup; it must
    /// return when the token is cancelled.
    pub fn component(
        mut self,
        start: impl Fn(kube::Client, CancellationToken) -> BoxFuture<'static, ()>
            + Send
            + Sync
            + 'static,
    ) -> Scenario {
        self.components.push(Arc::new(start));
        self
    }

    /// Runs before the controllers start (objects they find at their first sync).
    pub fn setup(
        mut self,
        f: impl Fn(World) -> BoxFuture<'static, Result<(), String>> + Send + Sync + 'static,
    ) -> Scenario {
        self.setup = Some(Arc::new(f));
        self
    }

    /// The workload script, run once the controllers started.
    pub fn workload(
        mut self,
        f: impl Fn(World) -> BoxFuture<'static, Result<(), String>> + Send + Sync + 'static,
    ) -> Scenario {
        self.workload = Some(Arc::new(f));
        self
    }

    /// A safety property checked after every observed change.
    pub fn invariant(mut self, invariant: Invariant) -> Scenario {
        self.invariants.push(invariant);
        self
    }

    /// A condition that must hold (with every other one, at once) within the bound after
    /// the workload returned.
    pub fn converged(
        mut self,
        name: &str,
        check: impl Fn(&World) -> Result<(), String> + Send + Sync + 'static,
    ) -> Scenario {
        self.converged.push((name.to_string(), Arc::new(check)));
        self
    }

    /// The bound on every wait and on convergence (default 30 s).
    pub fn bound(mut self, bound: Duration) -> Scenario {
        self.bound = bound;
        self
    }

    /// Only these fault kinds (default: all).
    pub fn faults(mut self, kinds: &[FaultKind]) -> Scenario {
        self.kinds = kinds.to_vec();
        self
    }
}

struct WorldInner {
    client: kube::Client,
    cache: Arc<Cache>,
    changes: watch::Sender<u64>,
    violation: Mutex<Option<String>>,
    failed: CancellationToken,
    state: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    bound: Duration,
}

/// The world of one run, as the workload and the invariants see it: an admin client
/// (never faulted) and the observer's view.
#[derive(Clone)]
pub struct World {
    inner: Arc<WorldInner>,
}

impl fmt::Debug for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World").finish_non_exhaustive()
    }
}

impl World {
    /// The admin client (never faulted).
    pub fn client(&self) -> kube::Client {
        self.inner.client.clone()
    }

    /// The run's namespace ([`NAMESPACE`]).
    pub fn namespace(&self) -> &str {
        NAMESPACE
    }

    /// The observer cache.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.inner.cache
    }

    /// The observer's objects of `K`: in the run's namespace for namespaced kinds, all of
    /// them for cluster-scoped ones (observe `K` with [`Scenario::observe`]).
    pub fn list<K: CachedKind>(&self) -> Vec<Arc<K>>
    where
        K::Scope: 'static,
    {
        let store = self.inner.cache.informer::<K>().store().clone();
        if crate::handler::is_namespaced::<K>() {
            store.list_namespace(NAMESPACE)
        } else {
            store.list()
        }
    }

    /// The observer's objects of `K` in every namespace.
    pub fn list_all<K: CachedKind>(&self) -> Vec<Arc<K>>
    where
        K::Scope: 'static,
    {
        self.inner.cache.informer::<K>().store().list()
    }

    /// The observer's `K` named `name` (in the run's namespace when namespaced).
    pub fn get<K: CachedKind>(&self, name: &str) -> Option<Arc<K>>
    where
        K::Scope: 'static,
    {
        let key = if crate::handler::is_namespaced::<K>() {
            crate::ObjectKey::namespaced(NAMESPACE, name)
        } else {
            crate::ObjectKey::cluster(name)
        };
        self.inner.cache.informer::<K>().store().get(&key)
    }

    /// Per-run shared state of type `T` (created on first use).
    pub fn state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()) as Arc<dyn Any + Send + Sync>)
            .clone();
        drop(map);
        entry
            .downcast::<T>()
            .unwrap_or_else(|_| Arc::new(T::default()))
    }

    /// Wait until `check` holds (re-checked on every observed change and every 100 ms);
    /// `Err` after the scenario's bound or once an invariant was violated.
    pub async fn wait(
        &self,
        what: &str,
        mut check: impl FnMut(&World) -> Result<(), String>,
    ) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.inner.bound;
        let mut changes = self.inner.changes.subscribe();
        loop {
            if let Some(v) = self.violation() {
                return Err(v);
            }
            let last = match check(self) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            tokio::select! {
                _ = changes.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = self.inner.failed.cancelled() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(format!("{what}: not reached within {:?}: {last}", self.inner.bound));
                }
            }
        }
    }

    fn violation(&self) -> Option<String> {
        self.inner
            .violation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, why: String) {
        let mut v = self
            .inner
            .violation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if v.is_none() {
            *v = Some(why);
            self.inner.failed.cancel();
        }
    }
}

/// What one run found.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The plan.
    pub plan: Plan,
    /// The controller processes' writes counted.
    pub writes: u64,
    /// Why the run failed (`None`: it passed).
    pub failure: Option<String>,
    /// The faults that were injected (those past the last write never happen).
    pub injected: Vec<String>,
    /// Controller processes started (1 without crashes).
    pub incarnations: u64,
    /// Wall time.
    pub elapsed: Duration,
}

/// A controller process the harness runs.
struct Process {
    incarnation: Incarnation,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Starts controller processes for one run.
struct Launcher {
    scenario: Scenario,
    config: kube::Config,
    injector: Arc<Injector>,
    leader_election: bool,
    next: u64,
    exited: mpsc::UnboundedSender<u64>,
}

impl Launcher {
    async fn start(&mut self, stale: Option<u64>) -> Result<Process, String> {
        let id = self.next;
        self.next += 1;
        let incarnation = Incarnation::new(id, stale);
        let mut config = self.config.clone();
        crate::client::set_user_agent(&mut config, &crate::client::user_agent("fault-harness"));
        let base = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let client = self.injector.client(base, incarnation.clone());
        let mut options = ManagerOptions {
            metrics_bind_address: "0".into(),
            graceful_shutdown_timeout: Duration::from_secs(2),
            ..Default::default()
        };
        if self.leader_election {
            options.leader_election = true;
            options.leader_election_id = LEASE.to_string();
            options.leader_election_namespace = Some("kube-system".to_string());
            options.lease_duration = Duration::from_secs(2);
            options.renew_deadline = Duration::from_millis(1500);
            options.retry_period = Duration::from_millis(100);
        }
        (self.scenario.options)(&mut options);
        let mgr = Manager::with_client(client, options);
        (self.scenario.controllers)(&mgr).map_err(|e| format!("adding the controllers: {e}"))?;
        let elected = mgr.elected();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let exited = self.exited.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = mgr.start(c).await {
                tracing::info!(incarnation = id, error = %e, "controller process stopped");
            }
            let _ = exited.send(id);
        });
        if self.leader_election && id == 0 {
            // the first replica leads; the others stand by
            let _ = tokio::time::timeout(Duration::from_secs(10), elected).await;
        }
        Ok(Process {
            incarnation,
            cancel,
            task,
        })
    }
}

fn stop(p: Process) {
    p.incarnation.dead.cancel();
    p.cancel.cancel();
    let task = p.task;
    tokio::spawn(async move {
        let abort = task.abort_handle();
        if tokio::time::timeout(Duration::from_secs(3), task)
            .await
            .is_err()
        {
            abort.abort();
        }
    });
}

/// Release the leader's lease so that a standby takes it and the leader notices it lost.
async fn move_leadership(client: &kube::Client) -> Result<(), String> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    for _ in 0..20 {
        let mut lease = leases.get(LEASE).await.map_err(|e| e.to_string())?;
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = Some(String::new());
        }
        match leases.replace(LEASE, &PostParams::default(), &lease).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("the lease kept changing".into())
}

/// Run `scenario` once under `plan` on a fresh server.
pub async fn run(scenario: &Scenario, plan: &Plan) -> RunReport {
    let started = Instant::now();
    let (injector, signals) = Injector::new(plan.clone());
    let mut report = RunReport {
        plan: plan.clone(),
        writes: 0,
        failure: None,
        injected: Vec::new(),
        incarnations: 0,
        elapsed: Duration::ZERO,
    };
    let result = run_inner(scenario, plan, &injector, signals, &mut report).await;
    report.writes = injector.writes();
    report.injected = injector.log();
    report.failure = result.err();
    report.elapsed = started.elapsed();
    report
}

async fn run_inner(
    scenario: &Scenario,
    plan: &Plan,
    injector: &Arc<Injector>,
    mut signals: mpsc::UnboundedReceiver<Signal>,
    report: &mut RunReport,
) -> Result<(), String> {
    let env = crate::envtest::start()
        .await
        .map_err(|e| format!("test server: {e}"))?;
    let config = env.kube_config().await.map_err(|e| e.to_string())?;
    let admin = env.client.clone();
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}}))
            .map_err(|e| e.to_string())?;
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .map_err(|e| format!("creating namespace {NAMESPACE}: {e}"))?;

    let stop_all = CancellationToken::new();
    let _guard = stop_all.clone().drop_guard();
    let cache = Arc::new(Cache::new(admin.clone(), stop_all.child_token()));
    let world = World {
        inner: Arc::new(WorldInner {
            client: admin.clone(),
            cache: cache.clone(),
            changes: watch::channel(0).0,
            violation: Mutex::new(None),
            failed: CancellationToken::new(),
            state: Mutex::new(HashMap::new()),
            bound: scenario.bound,
        }),
    };
    let active: Vec<Invariant> = scenario
        .invariants
        .iter()
        .filter(|i| i.applies(plan))
        .cloned()
        .collect();
    let checker = {
        let w = world.clone();
        let active = Arc::new(active);
        Arc::new(move || {
            w.inner.changes.send_modify(|n| *n += 1);
            if w.inner.failed.is_cancelled() {
                return;
            }
            for inv in active.iter() {
                if let Err(e) = (inv.check)(&w) {
                    w.fail(format!("invariant {:?} violated: {e}", inv.name));
                    return;
                }
            }
        }) as Arc<dyn Fn() + Send + Sync>
    };
    for observe in &scenario.observers {
        observe(&cache, checker.clone()).await;
    }
    for component in &scenario.components {
        tokio::spawn(component(admin.clone(), stop_all.child_token()));
    }
    if let Some(setup) = &scenario.setup {
        setup(world.clone())
            .await
            .map_err(|e| format!("setup: {e}"))?;
    }

    let leader_election = plan.has(FaultKind::LeaderMove);
    let (exited_tx, mut exited) = mpsc::unbounded_channel();
    let mut launcher = Launcher {
        scenario: scenario.clone(),
        config,
        injector: injector.clone(),
        leader_election,
        next: 0,
        exited: exited_tx,
    };
    let mut processes: Vec<Process> = vec![launcher.start(None).await?];
    if leader_election {
        processes.push(launcher.start(None).await?);
    }

    let workload = {
        let w = world.clone();
        let script = scenario.workload.clone();
        let bound = scenario.bound;
        let converged = scenario.converged.clone();
        let injector = injector.clone();
        async move {
            if let Some(script) = script {
                match tokio::time::timeout(bound * 4, script(w.clone())).await {
                    Ok(r) => r.map_err(|e| format!("workload: {e}"))?,
                    Err(_) => return Err(format!("workload: not done within {:?}", bound * 4)),
                }
            }
            let all = |w: &World| {
                for (name, check) in &converged {
                    check(w).map_err(|e| format!("{name}: {e}"))?;
                }
                Ok(())
            };
            // converged, and still so once the controllers went quiet (no write, no
            // watch event held back) for SETTLE: a late write must not escape the checks
            let deadline = tokio::time::Instant::now() + bound;
            loop {
                w.wait("convergence", all).await?;
                let quiet = injector.quiet_for();
                match quiet {
                    Some(q) if q >= SETTLE => match all(&w) {
                        Ok(()) => return Ok(()),
                        Err(_) => continue,
                    },
                    _ => {}
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(format!("the controllers did not settle within {bound:?}"));
                }
                let wait = quiet.map_or(Duration::from_millis(50), |q| SETTLE.saturating_sub(q));
                tokio::time::sleep(wait.max(Duration::from_millis(10))).await;
            }
        }
    };
    let mut workload = std::pin::pin!(workload);
    let mut restarts = 0u32;
    let outcome = loop {
        tokio::select! {
            r = &mut workload => break r,
            Some(signal) = signals.recv() => {
                match signal.kind {
                    FaultKind::Crash | FaultKind::CrashStale => {
                        let stale = (signal.kind == FaultKind::CrashStale)
                            .then(|| signal.resource_version.map(|rv| rv.saturating_sub(1)))
                            .flatten();
                        if let Some(i) = processes.iter().position(|p| p.incarnation.id == signal.incarnation) {
                            stop(processes.remove(i));
                        }
                        processes.push(launcher.start(stale).await?);
                    }
                    FaultKind::LeaderMove => {
                        if let Err(e) = move_leadership(&admin).await {
                            break Err(format!("moving leadership: {e}"));
                        }
                    }
                    _ => {}
                }
            }
            Some(id) = exited.recv() => {
                // a process that stopped by itself (lost leadership, a failed runnable)
                // is restarted, as a kubelet restarts a container
                if let Some(i) = processes.iter().position(|p| p.incarnation.id == id) {
                    stop(processes.remove(i));
                    restarts += 1;
                    if restarts > 20 {
                        break Err("the controller process keeps exiting".into());
                    }
                    processes.push(launcher.start(None).await?);
                }
            }
        }
    };
    report.incarnations = launcher.next;
    for p in processes.drain(..) {
        stop(p);
    }
    if let Some(v) = world.violation() {
        return Err(v);
    }
    outcome
}

/// How much of the plan space [`explore`] covers.
#[derive(Clone, Debug)]
pub struct Exploration {
    /// Seed of the step samples and random plans.
    pub seed: u64,
    /// Steps tried per fault kind: `None` = every step of `1..=W`.
    pub steps: Option<usize>,
    /// Random multi-fault plans after the systematic ones.
    pub random: usize,
    /// Replay only this plan.
    pub replay: Option<Plan>,
}

impl Default for Exploration {
    fn default() -> Self {
        Exploration {
            seed: 1,
            steps: Some(2),
            random: 0,
            replay: None,
        }
    }
}

impl Exploration {
    /// From `COXSWAIN_FAULT_SEED`, `COXSWAIN_FAULT_STEPS`, `COXSWAIN_FAULT_RANDOM` and
    /// `COXSWAIN_FAULT_PLAN` (defaults: seed 1, 2 steps, no random plans).
    ///
    /// # Panics
    /// On a malformed value (a test configuration error).
    pub fn from_env() -> Exploration {
        let mut e = Exploration::default();
        if let Ok(s) = std::env::var("COXSWAIN_FAULT_SEED") {
            e.seed = s.trim().parse().expect("COXSWAIN_FAULT_SEED is a number");
        }
        if let Ok(s) = std::env::var("COXSWAIN_FAULT_STEPS") {
            e.steps = match s.trim() {
                "all" => None,
                n => Some(
                    n.parse()
                        .expect("COXSWAIN_FAULT_STEPS is `all` or a number"),
                ),
            };
        }
        if let Ok(s) = std::env::var("COXSWAIN_FAULT_RANDOM") {
            e.random = s.trim().parse().expect("COXSWAIN_FAULT_RANDOM is a number");
        }
        if let Ok(s) = std::env::var("COXSWAIN_FAULT_PLAN") {
            e.replay = Some(
                s.parse()
                    .expect("COXSWAIN_FAULT_PLAN is a plan: kind@step,..."),
            );
        }
        e
    }
}

/// What [`explore`] ran.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Runs, the fault-free one included.
    pub runs: usize,
    /// Writes of the fault-free run (the steps faults are placed at).
    pub writes: u64,
    /// Wall time of all runs.
    pub elapsed: Duration,
}

/// A failing plan, shrunk.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The scenario.
    pub scenario: String,
    /// The seed of the exploration.
    pub seed: u64,
    /// The plan that failed first.
    pub plan: Plan,
    /// The smallest plan found that still fails.
    pub shrunk: Plan,
    /// Why the shrunk plan's run failed.
    pub reason: String,
    /// The faults injected in that run.
    pub injected: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "scenario {:?} failed under plan {} (seed {})",
            self.scenario, self.plan, self.seed
        )?;
        writeln!(f, "smallest failing plan: {}", self.shrunk)?;
        writeln!(f, "why: {}", self.reason)?;
        for line in &self.injected {
            writeln!(f, "  injected {line}")?;
        }
        write!(
            f,
            "replay: COXSWAIN_FAULT_PLAN='{}' cargo test <the test of scenario {:?}>",
            self.shrunk, self.scenario
        )
    }
}

/// Run the fault-free plan, then the systematic single-fault plans and random plans of
/// `exploration`; the first failing plan is shrunk and returned.
pub async fn explore(scenario: &Scenario, exploration: &Exploration) -> Result<Summary, Failure> {
    let started = Instant::now();
    let mut summary = Summary::default();
    let fail = |plan: &Plan, shrunk: &RunReport| Failure {
        scenario: scenario.name.clone(),
        seed: exploration.seed,
        plan: plan.clone(),
        shrunk: shrunk.plan.clone(),
        reason: shrunk.failure.clone().unwrap_or_default(),
        injected: shrunk.injected.clone(),
    };
    if let Some(plan) = &exploration.replay {
        let r = run(scenario, plan).await;
        summary.runs = 1;
        summary.writes = r.writes;
        summary.elapsed = started.elapsed();
        tracing::info!(scenario = %scenario.name, plan = %plan, ?r.injected, "replayed");
        return match r.failure {
            Some(_) => Err(fail(plan, &r)),
            None => Ok(summary),
        };
    }
    let baseline = run(scenario, &Plan::none()).await;
    summary.runs += 1;
    summary.writes = baseline.writes;
    if baseline.failure.is_some() {
        return Err(fail(&Plan::none(), &baseline));
    }
    let mut rng = crate::fault::rng(exploration.seed);
    let mut plans = Vec::new();
    for kind in &scenario.kinds {
        let steps = match exploration.steps {
            None => (1..=baseline.writes).collect(),
            Some(n) => crate::fault::sample_steps(&mut rng, baseline.writes, n),
        };
        plans.extend(steps.into_iter().map(|n| Plan::one(*kind, n)));
    }
    for _ in 0..exploration.random {
        plans.push(Plan::random(
            &mut rng,
            &scenario.kinds,
            baseline.writes.max(1),
        ));
    }
    for plan in plans {
        let r = run(scenario, &plan).await;
        summary.runs += 1;
        tracing::debug!(scenario = %scenario.name, %plan, elapsed = ?r.elapsed, "run");
        if r.failure.is_some() {
            let shrunk = shrink(scenario, r).await;
            return Err(fail(&plan, &shrunk));
        }
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

/// The smallest plan (by removing faults one at a time) that still fails.
pub async fn shrink(scenario: &Scenario, failing: RunReport) -> RunReport {
    let mut best = failing;
    'outer: loop {
        if best.plan.faults.len() <= 1 {
            break;
        }
        for candidate in best.plan.without_each() {
            let r = run(scenario, &candidate).await;
            if r.failure.is_some() {
                best = r;
                continue 'outer;
            }
        }
        break;
    }
    best
}

/// [`explore`] with [`Exploration::from_env`]; panics with the shrunk plan, the seed and
/// the replay command when a plan fails. The one call a test makes.
pub async fn check(scenario: &Scenario) -> Summary {
    let exploration = Exploration::from_env();
    match explore(scenario, &exploration).await {
        Ok(s) => {
            eprintln!(
                "scenario {:?}: {} runs, W = {} writes, {:.1} s",
                scenario.name,
                s.runs,
                s.writes,
                s.elapsed.as_secs_f64()
            );
            s
        }
        Err(f) => panic!("{f}"),
    }
}
