"""The lab as Python objects: `Lab` (a connection: submit, sweep, study, runs, compare,
difference), `Run` (one run: wait, follow, metrics, users, info, checkpoints, model, cancel,
delete, annotate) and `Sweep` (its runs, summary, plot data), all on `LabApi` (the endpoints, one method each).
Every answer is the API's own response model (vocab.schemas) or a pandas DataFrame built from
one."""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import httpx
import pandas as pd
import yaml

from fedgen.stats import format_acc
from fedgen_lab import frames, rundir
from fedgen_lab.endpoints import LabApi, open_api
from fedgen_lab.errors import LabError, RunFailed
from vocab.run_status import TERMINAL, RunStatus
from vocab.schemas.analysis import Difference
from vocab.schemas.checkpoints import CheckpointPublic
from vocab.schemas.runs import STREAM_RUN_GONE, RunInfoPublic, RunPublic
from vocab.schemas.sweeps import SweepPublic
from vocab.schemas.users import UserPublic

if TYPE_CHECKING:
    import torch

    from fedgen.models.cnn import SplitModel
    from fedgen.models.generator import Generator

PAGE_SIZE = 200  # runs per request while `Lab.runs` pages through the lab (the API's cap: 500)


def _load_spec(spec: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    """A spec given as a mapping, or as the path of a YAML or JSON file."""
    if isinstance(spec, Mapping):
        return dict(spec)
    data = yaml.safe_load(Path(spec).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise LabError(f"{spec}: a spec file holds a mapping of fields")
    return data


class Progress:
    """A one-line progress bar of a run's rounds on `out` (tqdm-style: redrawn in place on a
    terminal, one line per round elsewhere)."""

    def __init__(self, label: str, rounds: int, out: IO[str]) -> None:
        self.label, self.rounds, self.out = label, rounds, out
        self.tty = out.isatty()
        self.t0 = time.monotonic()
        self.first: int | None = None

    def update(self, rnd: int, metrics: Mapping[str, Any]) -> None:
        """Draw round `rnd` with its test accuracy and the time left."""
        if self.first is None:
            self.first, self.t0 = rnd, time.monotonic()
        done = rnd - self.first + 1
        eta = (time.monotonic() - self.t0) / done * (self.rounds - rnd)
        width = 24
        filled = int(width * rnd / max(self.rounds, 1))
        bar = "#" * filled + "." * (width - filled)
        acc = metrics.get("test_acc")
        line = (
            f"{self.label} [{bar}] round {rnd}/{self.rounds}  "
            f"test acc {format_acc(acc if isinstance(acc, float) else None)}"
            f"  {float(metrics.get('time_total_ms', 0.0)):.0f} ms/round  ETA {eta:.0f}s"
        )
        if self.tty:  # redraw in place; \x1b[K clears what a longer previous line left
            self.out.write("\r" + line + "\x1b[K")
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def close(self) -> None:
        """End the bar's line on a terminal."""
        if self.tty and self.first is not None:
            self.out.write("\n")
            self.out.flush()


class Run:
    """One lab run: `state` is its last fetched RunPublic (`refresh()` fetches it again)."""

    def __init__(self, lab: Lab, state: RunPublic) -> None:
        self.lab = lab
        self.state = state

    def __repr__(self) -> str:
        return f"<Run {self.id} {self.status} round {self.state.current_round}/{self.rounds}>"

    @property
    def id(self) -> str:
        """The run's id."""
        return self.state.id

    @property
    def status(self) -> RunStatus:
        """The status when last fetched."""
        return self.state.status

    @property
    def rounds(self) -> int:
        """The spec's number of rounds."""
        return self.state.rounds

    @property
    def spec(self) -> dict[str, Any]:
        """The run's normalised spec."""
        return self.state.spec

    @property
    def summary(self) -> dict[str, Any] | None:
        """The end-of-run summary once succeeded (accuracies as fractions)."""
        return self.state.summary

    @property
    def url(self) -> str:
        """The run's address on the API."""
        return f"{self.lab.api.base_url}/runs/{self.id}"

    def refresh(self) -> Run:
        """Fetch the run's state again."""
        self.state = self.lab.api.get_run(self.id)
        return self

    @property
    def info(self) -> RunInfoPublic:
        """GET /runs/{id}/info: partition histogram, sizes, device, fidelity, data files."""
        return self.lab.api.info(self.id)

    # -- following -------------------------------------------------------------
    def follow(self, since_round: int = -1) -> Iterator[tuple[int, dict[str, float]]]:
        """(round, metrics) of each round after `since_round` as it lands, until the run
        ends; the run's state is fetched again at the end."""
        last = since_round
        while True:
            ended = False
            for name, data in self.lab.api.events(self.id, last):
                if name == "round":
                    last = int(data["round"])
                    yield last, dict(data.get("metrics", {}))
                elif name == "status" and data.get("status") in {*TERMINAL, STREAM_RUN_GONE}:
                    ended = True
                elif name == "error":
                    raise LabError(f"The run's event stream ended: {data.get('detail')}")
            self.refresh()
            if ended or self.status in TERMINAL:
                return
            # The server ends a stream after FEDGEN_SSE_MAX_S: open it again where it stopped.

    def wait(
        self,
        timeout: float | None = None,
        progress: bool | None = None,
        *,
        check: bool = False,
        out: IO[str] | None = None,
    ) -> Run:
        """Block until the run ends (or `timeout` seconds pass: a TimeoutError) and return it.

        progress: a one-line bar on stderr from the event stream (default: only when stderr is
        a terminal, so off in scripts and CI). check: raise RunFailed unless it succeeded.
        """
        stream = out if out is not None else sys.stderr
        show = stream.isatty() if progress is None else progress
        bar = Progress(self.id[:8], self.rounds, stream) if show else None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            if deadline is None:
                for rnd, metrics in self.follow():
                    if bar is not None:
                        bar.update(rnd, metrics)
            else:
                self._wait_until(deadline, bar)
        finally:
            if bar is not None:
                bar.close()
        if check and self.status != RunStatus.SUCCEEDED:
            raise RunFailed(f"run {self.id} {self.status}: {self.state.error or ''}".strip(), self)
        return self

    def _wait_until(self, deadline: float, bar: Progress | None) -> None:
        last = -1
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"run {self.id} still {self.refresh().status} after the wait")
            for name, data in self.lab.api.events(self.id, last, read_timeout=min(left, 20.0)):
                if name == "round":
                    last = int(data["round"])
                    if bar is not None:
                        bar.update(last, data.get("metrics", {}))
                if time.monotonic() > deadline:
                    break
            if self.refresh().status in TERMINAL:
                return

    # -- results ---------------------------------------------------------------
    def metrics(self, since_round: int | None = None) -> pd.DataFrame:
        """One row per stored round: `round` and a column per metric (every round)."""
        body = self.lab.api.metrics(self.id, since_round=since_round, max_points=0)
        return frames.curves_frame(body)

    def users(self, round_from: int | None = None, round_to: int | None = None) -> pd.DataFrame:
        """One row per (round, user): per-user test accuracy, loss, selection, training."""
        return frames.users_frame(self.lab.api.users(self.id, round_from, round_to))

    def cancel(self) -> Run:
        """Ask the run to stop (cooperative, between rounds); a queued run stops at once."""
        self.state = self.lab.api.cancel_run(self.id)
        return self

    def delete(self) -> None:
        """Move the run to the trash (restorable for FEDGEN_TRASH_DAYS)."""
        self.lab.api.delete_run(self.id)

    def annotate(self, tags: list[str] | None = None, note: str | None = None) -> Run:
        """Replace the run's tags and/or note (owner or admin)."""
        self.state = self.lab.api.annotate_run(self.id, tags=tags, note=note)
        return self

    def pull(self, out: str | Path, checkpoints: str = "final", *, force: bool = False) -> Path:
        """Write the run as a local run folder under `out` (as `fedgen run` writes one), with
        none, the final (last round's) or all of its checkpoints: `fedgen resume` continues it."""
        if checkpoints not in rundir.CHECKPOINT_CHOICES:
            raise LabError(
                f"checkpoints {checkpoints!r}: one of {', '.join(rundir.CHECKPOINT_CHOICES)}"
            )
        return rundir.pull(self, Path(out), checkpoints, force)

    # -- checkpoints and models --------------------------------------------------
    def checkpoints(self) -> list[CheckpointPublic]:
        """The run's stored checkpoints (id, round, kind, size, sha256), oldest first."""
        body = self.lab.api.checkpoints(self.id)
        return sorted(body.data, key=lambda c: (c.round, c.kind))

    def _checkpoint(self, kind: str, round: int | None) -> CheckpointPublic:  # noqa: A002
        found = [c for c in self.checkpoints() if c.kind == kind]
        if round is not None:
            found = [c for c in found if c.round == round]
        if not found:
            at = f" at round {round}" if round is not None else ""
            raise LabError(f"run {self.id} has no {kind!r} checkpoint{at}")
        return found[-1]

    def download_checkpoint(
        self,
        checkpoint: CheckpointPublic | str | None = None,
        *,
        kind: str = "model",
        round: int | None = None,  # noqa: A002 - the checkpoint's round, as the API names it
        path: str | Path | None = None,
    ) -> bytes:
        """A checkpoint's bytes (the newest of `kind`, at `round` when given, unless one is
        named), checked against the sha256 the lab stored; written to `path` when given."""
        if checkpoint is None:
            checkpoint = self._checkpoint(kind, round)
        elif isinstance(checkpoint, str):
            checkpoint = next((c for c in self.checkpoints() if c.id == checkpoint), None) or (
                self._checkpoint(checkpoint, round)
            )
        data = self.lab.api.download_checkpoint(self.id, checkpoint.id)
        digest = hashlib.sha256(data).hexdigest()
        if digest != checkpoint.sha256:
            raise LabError(
                f"checkpoint {checkpoint.kind}@{checkpoint.round} of run {self.id}: sha256 "
                f"{digest} of the download differs from the lab's {checkpoint.sha256}"
            )
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_bytes(data)
        return data

    def model(self, device: str | torch.device = "cpu") -> SplitModel:
        """The final global model as a torch.nn.Module of the run's model, weights loaded, in
        eval mode (from the run's `model` checkpoint, written at its last round)."""
        from fedgen_lab.models import model_from_checkpoint

        return model_from_checkpoint(self.download_checkpoint(kind="model"), self.spec, device)

    def generator(
        self,
        round: int | None = None,  # noqa: A002 - the checkpoint's round
        device: str | torch.device = "cpu",
    ) -> Generator:
        """A FedGen run's generator (the newest, or the one of `round`), in eval mode."""
        from fedgen_lab.models import generator_from_checkpoint

        data = self.download_checkpoint(kind="generator", round=round)
        return generator_from_checkpoint(data, device)


class Sweep:
    """A sweep: `state` is its last fetched SweepPublic."""

    def __init__(self, lab: Lab, state: SweepPublic) -> None:
        self.lab = lab
        self.state = state

    def __repr__(self) -> str:
        return f"<Sweep {self.id} {self.state.name!r} {self.state.count} runs>"

    @property
    def id(self) -> str:
        """The sweep's id."""
        return self.state.id

    def refresh(self) -> Sweep:
        """Fetch the sweep's state again."""
        self.state = self.lab.api.get_sweep(self.id)
        return self

    def runs(self) -> pd.DataFrame:
        """The sweep's runs, one row each (as `Lab.runs`)."""
        return self.lab.runs(sweep=self.id)

    def run_objects(self) -> list[Run]:
        """The sweep's runs as Run objects."""
        return [self.lab.run(i) for i in self.state.run_ids]

    def wait(self, timeout: float | None = None) -> Sweep:
        """Block until every run of the sweep has ended."""
        for run in self.run_objects():
            start = time.monotonic()
            run.wait(timeout=timeout, progress=False)
            if timeout is not None:
                timeout = max(0.001, timeout - (time.monotonic() - start))
        return self.refresh()

    def summary(
        self,
        statistic: str | None = None,
        group_by: list[str] | str | None = None,
        tune: list[str] | str | None = None,
    ) -> pd.DataFrame:
        """One row per group of runs (all fields but the seed, or `group_by`'s dotted fields):
        n and mean ± std of final, best, top-5 and val_best accuracy and the cost columns;
        with `statistic` ("final", "best", "top5", "val_best") only that statistic's mean
        and std columns beside the group's. `tune` (swept fields): per group of the other
        fields, the values chosen by validation (`statistic`'s counterpart, default
        val_best), the budget, and that configuration's figures (docs/metrics.md)."""
        by = ",".join(group_by) if isinstance(group_by, list) else group_by
        tuned = ",".join(tune) if isinstance(tune, list) else tune
        body = self.lab.api.sweep_summary(
            self.id, group_by=by, statistic=statistic if tuned else None, tune=tuned
        )
        frame = frames.summary_frame(body)
        if statistic is None:
            return frame
        wanted = {"final", "best", "top5", "val_best"}
        if statistic not in wanted:
            raise LabError(f"statistic {statistic!r}: one of {sorted(wanted)}")
        drop = [f"{s}_{m}" for s in wanted - {statistic} for m in ("mean", "std")]
        return frame.drop(columns=[c for c in drop if c in frame.columns])

    def plot_data(
        self,
        x: str,
        by: str = "algorithm",
        statistic: str = "top5",
        interval: str = "std",
        target: float | None = None,
    ) -> pd.DataFrame:
        """A statistic against the swept field `x`, one series per `by` value: one row per
        point with mean, std and the interval's ends."""
        body = self.lab.api.plot_data(self.id, x, by, statistic, interval, target)
        return frames.plot_frame(body)


class Lab:
    """A connection to a lab server (see `fedgen_lab.connect`)."""

    def __init__(self, api: LabApi) -> None:
        self.api = api

    def __repr__(self) -> str:
        return f"<Lab {self.api.base_url}>"

    def close(self) -> None:
        """Release the connection pool."""
        self.api.close()

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def me(self) -> UserPublic:
        """Who the token belongs to."""
        return self.api.me()

    # -- submitting --------------------------------------------------------------
    def submit(self, spec: Mapping[str, Any] | str | Path) -> Run:
        """Queue one run of `spec` (a mapping, or a YAML/JSON file's path)."""
        return Run(self, self.api.submit_run(_load_spec(spec)))

    def sweep(
        self, name: str, base: Mapping[str, Any] | str | Path, grid: Mapping[str, list[Any]]
    ) -> Sweep:
        """Queue a sweep: the `base` spec times a grid of dotted-field values."""
        return Sweep(self, self.api.create_sweep(name, _load_spec(base), dict(grid)))

    def study(
        self,
        name: str,
        dataset: str | None = None,
        seeds: int | None = None,
        rounds: int | None = None,
    ) -> Sweep:
        """Launch one of the paper's studies (`fedgen study list`) as a sweep."""
        launched = self.api.launch_study(name, dataset=dataset, seeds=seeds, rounds=rounds)
        return self.get_sweep(launched.sweep.id)

    def push(
        self, folder: str | Path, tags: list[str] | None = None, checkpoints: str = "final"
    ) -> tuple[Run, bool]:
        """Upload a local run folder (what `fedgen run` writes) as a lab run of this token's
        member, marked as pushed: (the run, whether it is new; a folder pushed before answers
        its first run). checkpoints: the final round's (default), all, or none (the final
        model alone)."""
        if checkpoints not in rundir.CHECKPOINT_CHOICES:
            raise LabError(
                f"checkpoints {checkpoints!r}: one of {', '.join(rundir.CHECKPOINT_CHOICES)}"
            )
        body = rundir.push_body(Path(folder), list(tags or []), checkpoints)
        pushed = self.api.push_run(body)
        return Run(self, pushed.run), pushed.created

    # -- reading -----------------------------------------------------------------
    def run(self, run_id: str) -> Run:
        """One run by id."""
        return Run(self, self.api.get_run(run_id))

    def get_sweep(self, sweep_id: str) -> Sweep:
        """One sweep by id."""
        return Sweep(self, self.api.get_sweep(sweep_id))

    def iter_runs(self, limit: int | None = None, **filters: Any) -> Iterator[RunPublic]:
        """Every run under the filters, newest first, page by page (by cursor)."""
        cursor: str | None = None
        seen = 0
        while True:
            size = PAGE_SIZE if limit is None else min(PAGE_SIZE, limit - seen)
            if size <= 0:
                return
            page = self.api.list_runs(**filters, limit=size, cursor=cursor)
            yield from page.data
            seen += len(page.data)
            cursor = page.next_cursor
            if cursor is None or not page.data:
                return

    def runs(
        self,
        status: str | None = None,
        algorithm: str | None = None,
        tag: str | None = None,
        where: list[str] | str | None = None,
        q: str | None = None,
        sweep: Sweep | str | None = None,
        *,
        dataset: str | None = None,
        owner: str | None = None,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """The lab's runs under the filters as a DataFrame, one row per run (newest first):
        the run's fields, `spec.<dotted field>` columns and `summary.<statistic>` numbers.

        where: `field=value` clauses (e.g. "partition.alpha=0.1"); limit: at most this many
        runs (default: every run, paged through by cursor)."""
        filters = {
            "status": status,
            "algorithm": algorithm,
            "tag": tag,
            "where": [where] if isinstance(where, str) else where,
            "q": q,
            "sweep_id": sweep.id if isinstance(sweep, Sweep) else sweep,
            "dataset": dataset,
            "owner": owner,
        }
        return frames.runs_frame(self.iter_runs(limit, **filters))

    # -- comparing ---------------------------------------------------------------
    def compare(self, ids: list[str] | list[Run], metrics: list[str] | None = None) -> pd.DataFrame:
        """Several runs' curves in long form: one row per (run, round, metric, value)."""
        names = [r.id if isinstance(r, Run) else r for r in ids]
        return frames.compare_frame(self.api.compare(names, max_points=0, metrics=metrics))

    def difference(
        self,
        a: list[str] | str,
        b: list[str] | str,
        statistic: str = "final",
        order: str | None = None,
    ) -> Difference:
        """Group a − group b on a per-run statistic, with Welch's 95 % CI and p-value."""
        # One id or a list (the API reads a comma-separated list).
        group_a = a.split(",") if isinstance(a, str) else a
        group_b = b.split(",") if isinstance(b, str) else b
        return self.api.difference(group_a, group_b, statistic, order)


def connect(
    url: str | None = None,
    token: str | None = None,
    *,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
) -> Lab:
    """A connection to the lab at `url` with `token` (else FEDGEN_API_URL / FEDGEN_TOKEN)."""
    return Lab(open_api(url, token, timeout=timeout, transport=transport))
