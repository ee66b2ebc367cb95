"""The multi-host harness: a lab host and worker hosts, each a network namespace on this machine.

`Lab(tmp)` builds (as root, with iproute2 and util-linux):
- namespace `lab-<sfx>` holding a bridge at 10.77.N.1/24 (N = 0 unless the root namespace
  already uses it), with its loopback up;
- hosts `w1`, `w2`, `w3`: namespaces `w1-<sfx>`, ... each joined to the bridge by a veth pair
  (eth0 = 10.77.N.11, .12, .13), loopback up;
- a veth from the root namespace into the bridge (10.77.N.254): the test process reaches the
  API and Postgres over the same network as the hosts.
`<sfx>` is random, so a leftover of a crashed run never collides with a new one.

Every process runs as `ip netns exec NS unshare --uts --mount sh -c 'hostname H && exec ...'`:
the host's network, its own host name (w1, w2, w3, lab; a worker's node name carries it) and
its own mounts. On a host in `WITHOUT_DATASETS` (w3) the same mount namespace also hides
/usr/share/datasets under an empty tmpfs: no Debian Fashion-MNIST there.

`start()` brings up, on `lab`: a private Postgres (tests/support/pg_server.py) listening on 10.77.N.1
and trusting the subnet, Redis on 10.77.N.1, `fedgen-lab db upgrade`, then `fedgen-lab api`.
`start_worker(host)` runs `fedgen-lab worker --slots 1 --threads 1` there against the lab's
database and broker over the network (10.77.N.1 only), with its own FEDGEN_HOME and an empty
FEDGEN_DATA, fast liveness settings and a long lease (only the dead-holder rule can take a run
back), in its own process group, logging to `<host>/worker.log`. `kill_host(host)` SIGKILLs
that group and takes the host off the network. `close()` removes everything from any state;
`logs()` is what to print when a test failed.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from lab.config import Settings
from lab.db import make_engine, make_sessionmaker
from tests.support import pg_server
from tests.support.procs import wait_for

ROOT = Path(__file__).resolve().parents[2]
LAB_CLI = [sys.executable, "-m", "admin"]  # `fedgen-lab`, from this checkout
DATASETS = Path("/usr/share/datasets")  # Debian's datasets (Fashion-MNIST)
WORKER_HOSTS = {"w1": 11, "w2": 12, "w3": 13}  # host -> last octet of its address
WITHOUT_DATASETS = frozenset({"w3"})
TOOLS = ("ip", "unshare", "mount", "hostname", "runuser", "redis-server")
REDIS_PORT, API_PORT = 6379, 8000  # each namespace has its own ports: the standard ones
# Liveness as in tests/worker/test_dead_slot.py: a dead holder is seen within seconds, while a
# lease of 600 s cannot expire during a test.
LIVENESS = {"FEDGEN_HEARTBEAT_S": "1", "FEDGEN_REAPER_S": "1", "FEDGEN_LEASE_S": "600"}


def _run(*argv: str) -> str:
    """Run a set-up command; RuntimeError with its stderr when it fails."""
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` exited {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def _try(*argv: str) -> None:
    """Run a clean-up command whose failure (already gone) does not matter."""
    subprocess.run(argv, capture_output=True, check=False)


def available() -> str | None:
    """None when this machine can build the hosts, else what is missing."""
    if os.geteuid() != 0:
        return "root (network namespaces, mounts)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return "commands not on PATH: " + ", ".join(missing)
    why = pg_server.available()
    if why is not None:
        return why
    probe = f"fgprobe-{secrets.token_hex(3)}"
    try:
        _run("ip", "netns", "add", probe)
        _run("ip", "-n", probe, "link", "add", "br0", "type", "bridge")
    except RuntimeError as exc:
        return f"network namespaces with a bridge ({exc})"
    finally:
        _try("ip", "netns", "del", probe)
    return None


def _free_subnet() -> str:
    """10.77.N (N = 0 when free) that no address of the root namespace is in."""
    used = set(re.findall(r"inet 10\.77\.(\d+)\.", _run("ip", "-4", "addr")))
    for n in [0, *random.sample(range(1, 255), 254)]:
        if str(n) not in used:
            return f"10.77.{n}"
    raise RuntimeError("every 10.77.N.0/24 is in use in the root namespace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group `proc` leads (start_new_session) and reap `proc`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


@dataclass
class Host:
    """One namespace and its folder: `home` (FEDGEN_HOME), `data` (FEDGEN_DATA), logs."""

    name: str
    ns: str
    ip: str
    folder: Path
    without_datasets: bool = False
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    up: bool = True

    @property
    def home(self) -> Path:
        return self.folder / "home"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "worker.log"

    @property
    def checkpoint_root(self) -> Path:
        """Where Settings puts checkpoint files for this FEDGEN_HOME (the worker's own)."""
        s = Settings(
            home=self.home, checkpoint_dir=None, database_url="sqlite://", broker_url="memory://"
        )
        return s.checkpoint_root


class Lab:
    """The lab and worker hosts of one test; see the module docstring."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.sfx = secrets.token_hex(3)
        self.net = _free_subnet()
        self.ip = f"{self.net}.1"
        self.hosts: dict[str, Host] = {}
        self.lab = Host("lab", f"lab-{self.sfx}", self.ip, tmp / "lab")
        self.root_if = f"fg{self.sfx}r"  # the root namespace's leg into the bridge
        self.pg: pg_server.PgServer | None = None
        self.redis: subprocess.Popen[bytes] | None = None
        self.api: subprocess.Popen[bytes] | None = None
        self._engine: Engine | None = None
        self.db_url = ""
        self.broker_url = f"redis://{self.ip}:{REDIS_PORT}/0"
        self.api_url = f"http://{self.ip}:{API_PORT}/api/v1"
        self.start_s = 0.0  # how long start() took

    # -- network --------------------------------------------------------------------------
    def _network(self) -> None:
        lab = ["ip", "-n", self.lab.ns]
        self.lab.folder.mkdir(parents=True)
        _run("ip", "netns", "add", self.lab.ns)
        _run(*lab, "link", "set", "lo", "up")
        _run(*lab, "link", "add", "br0", "type", "bridge")
        _run(*lab, "addr", "add", f"{self.ip}/24", "dev", "br0")
        _run(*lab, "link", "set", "br0", "up")
        peer = f"fg{self.sfx}l"
        _run("ip", "link", "add", self.root_if, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", self.lab.ns)
        _run(*lab, "link", "set", peer, "master", "br0", "up")
        _run("ip", "addr", "add", f"{self.net}.254/24", "dev", self.root_if)
        _run("ip", "link", "set", self.root_if, "up")

    def add_host(self, name: str, octet: int, *, without_datasets: bool = False) -> Host:
        """Namespace `name-<sfx>` joined to the bridge at 10.77.N.<octet>."""
        host = Host(
            name, f"{name}-{self.sfx}", f"{self.net}.{octet}", self.tmp / name, without_datasets
        )
        host.home.mkdir(parents=True)
        host.data.mkdir()
        _run("ip", "netns", "add", host.ns)
        self.hosts[name] = host  # from here on close() removes it
        leg = f"v-{name}"  # its end on the bridge, inside the lab namespace
        _run("ip", "-n", host.ns, "link", "set", "lo", "up")
        peer = ("peer", "name", "eth0", "netns", host.ns)  # the pair's other end, in the host
        _run("ip", "-n", self.lab.ns, "link", "add", leg, "type", "veth", *peer)
        _run("ip", "-n", self.lab.ns, "link", "set", leg, "master", "br0", "up")
        _run("ip", "-n", host.ns, "addr", "add", f"{host.ip}/24", "dev", "eth0")
        _run("ip", "-n", host.ns, "link", "set", "eth0", "up")
        return host

    # -- processes ------------------------------------------------------------------------
    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """This process's environment without FEDGEN_* (and GPUs), plus the lab's settings."""
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("FEDGEN_") and k != "CUDA_VISIBLE_DEVICES"
        }
        return {
            **base,
            "PYTHONPATH": str(ROOT),
            "FEDGEN_DATABASE_URL": self.db_url,
            "FEDGEN_BROKER_URL": self.broker_url,
            "FEDGEN_HOME": str(home),
            **LIVENESS,
            **extra,
        }

    @staticmethod
    def on_host(host: Host, argv: Sequence[str]) -> list[str]:
        """`argv` as run on `host`: its namespace, its host name, its mounts."""
        script = f"hostname {host.name}"
        if host.without_datasets:
            script += f" && mount -t tmpfs -o size=1m none {DATASETS}"
        script += ' && exec "$@"'
        enter = ["ip", "netns", "exec", host.ns, "unshare", "--uts", "--mount"]
        return [*enter, "sh", "-c", script, host.name, *argv]

    def spawn(
        self, host: Host, argv: Sequence[str], env: dict[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        """Start `argv` on `host` in a process group of its own, output appended to `log`."""
        with log.open("ab") as fh:
            proc = subprocess.Popen(
                self.on_host(host, argv),
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        host.procs.append(proc)
        return proc

    def run_on(self, host: Host, argv: Sequence[str], env: dict[str, str] | None = None) -> str:
        """Run `argv` on `host` to the end; its stdout (AssertionError with stderr if it fails)."""
        out = subprocess.run(
            self.on_host(host, argv),
            env=env or self.env(host.home),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert out.returncode == 0, f"{' '.join(argv)} on {host.name}: {out.stderr[-3000:]}"
        return out.stdout

    # -- the lab ---------------------------------------------------------------------------
    def start(self) -> None:
        """Network, hosts w1..w3, then on `lab`: Postgres, Redis, db upgrade, the API."""
        t0 = time.monotonic()
        self._network()
        for name, octet in WORKER_HOSTS.items():
            self.add_host(name, octet, without_datasets=name in WITHOUT_DATASETS)
        env = self.env(self.lab.home)
        redis = f"redis-server --bind {self.ip} --port {REDIS_PORT} --protected-mode no"
        # --protected-mode no: clients come from the hosts, and this Redis has no password
        # (it listens only on the drill's private bridge).
        self.redis = self.spawn(
            self.lab,
            [*redis.split(), "--save", "", "--appendonly", "no", "--daemonize", "no"],
            env,
            self.lab.folder / "redis.log",
        )
        self.pg = pg_server.PgServer(
            host=self.ip,
            trust=[f"{self.net}.0/24"],
            wrap=["ip", "netns", "exec", self.lab.ns],
        )
        self.db_url = self.pg.url
        env = self.env(self.lab.home)
        wait_for(lambda: self._accepts(REDIS_PORT), "Redis on the lab", 30, 0.1)
        self.run_on(self.lab, [*LAB_CLI, "db", "upgrade"], env)
        self.api = self.spawn(
            self.lab,
            [*LAB_CLI, "api", "--host", self.ip, "--port", str(API_PORT), "--log-level", "warning"],
            env,
            self.lab.folder / "api.log",
        )
        wait_for(self._api_up, "the API on the lab", 60, 0.2)
        self.start_s = time.monotonic() - t0

    def _accepts(self, port: int) -> bool:
        with socket.socket() as s:
            s.settimeout(0.5)
            return s.connect_ex((self.ip, port)) == 0

    def _api_up(self) -> bool:
        assert self.api is not None
        assert self.api.poll() is None, f"the API exited ({self.api.returncode})"
        try:
            return httpx.get(f"{self.api_url}/health", timeout=2, trust_env=False).is_success
        except httpx.HTTPError:
            return False

    def create_user(self, name: str) -> str:
        """`fedgen-lab users create NAME` on the lab; the token it prints last."""
        out = self.run_on(self.lab, [*LAB_CLI, "users", "create", name])
        return out.strip().splitlines()[-1]

    def client(self, token: str) -> httpx.Client:
        """An HTTP client of the lab's API (over the bridge) with `token`."""
        return httpx.Client(
            base_url=self.api_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
            trust_env=False,
        )

    def sessions(self) -> sessionmaker[Session]:
        """Sessions on the lab's database, over the bridge (for checks the API does not show)."""
        if self._engine is None:
            self._engine = make_engine(self.db_url, pool_size=2)
        return make_sessionmaker(self._engine)

    # -- worker hosts ----------------------------------------------------------------------
    def start_worker(
        self, name: str, ready_s: float = 120, *, wait: bool = True
    ) -> subprocess.Popen[bytes]:
        """`fedgen-lab worker --slots 1 --threads 1` on host `name`; returns once Celery is ready
        (at once with `wait=False`: a run waiting for it may start before Celery says ready)."""
        host = self.hosts[name]
        assert host.up, f"{name} was killed"
        proc = self.spawn(
            host,
            [*LAB_CLI, "worker", "--slots", "1", "--threads", "1"],
            self.env(host.home, FEDGEN_DATA=str(host.data)),
            host.log,
        )

        def ready() -> bool:
            assert proc.poll() is None, f"the worker on {name} exited ({proc.returncode})"
            return " ready." in host.log.read_text(errors="replace")

        if wait:
            wait_for(ready, f"the worker on {name} to be ready", ready_s, 0.2)
        return proc

    def kill_host(self, name: str) -> None:
        """SIGKILL every process group started on `name`, then take the host off the network."""
        host = self.hosts[name]
        for proc in host.procs:
            _kill_group(proc)
        _run("ip", "-n", host.ns, "link", "set", "eth0", "down")
        _run("ip", "netns", "del", host.ns)
        host.up = False

    # -- the end ---------------------------------------------------------------------------
    def logs(self, lines: int = 60) -> str:
        """The last `lines` of every log: the workers', Redis', the API's, Postgres'."""
        paths = sorted(self.tmp.rglob("*.log"))
        if self.pg is not None:
            paths.append(self.pg.root / "server.log")
        out = []
        for path in paths:
            try:
                tail = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"----- {path} (last {len(tail)} lines) -----\n" + "\n".join(tail))
        return "\n".join(out)

    def close(self) -> None:
        """Stop every process, Postgres, then remove the namespaces and the root's veth."""
        if self._engine is not None:
            self._engine.dispose()
        for host in [*self.hosts.values(), self.lab]:
            for proc in host.procs:
                _kill_group(proc)
        if self.pg is not None:
            with contextlib.suppress(Exception):
                self.pg.close()  # through the lab namespace: before it goes
        for host in self.hosts.values():
            _try("ip", "netns", "del", host.ns)
        _try("ip", "netns", "del", self.lab.ns)
        _try("ip", "link", "del", self.root_if)  # gone with its peer, but not at once
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self.root_if in _run("ip", "-o", "link"):
            time.sleep(0.1)
