"""Fidelity profiles: the paper's method vs the official code's behaviour.

`resolve(spec)` turns the spec's optional knobs (declared once in `fedgen.knobs`)
into one frozen `Fidelity` with every value concrete: a knob set in the spec
wins, otherwise its default (`default_value`: the profile's value, per dataset or
algorithm where declared: `AlgorithmDecl.knob_defaults`). `markdown_table` is the
table of docs/fidelity.md. A knob that lives with FedGen's
parameters is resolved only for FedGen runs. Provenance: docs/fidelity.md;
reference numbers are from ../shared/reference/fedgen-method.md §6.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from pydantic import BaseModel

from fedgen.algorithms.registry import algorithms, find_algorithm
from fedgen.knobs import KNOBS, Home, Knob, Profile
from fedgen.spec import ExperimentSpec


def algorithm_defaults(knob: Knob) -> dict[str, Any]:
    """Algorithm -> the value `knob` takes for it under either profile, unless set: what the
    algorithm registry declares (`AlgorithmDecl.knob_defaults`)."""
    return {
        d.name: dict(d.knob_defaults)[knob.name]
        for d in algorithms()
        if knob.name in dict(d.knob_defaults)
    }


def default_value(knob: Knob, profile: Profile, dataset: str, algorithm: str) -> Any:
    """The value a knob takes when the spec leaves it None."""
    by_algorithm = algorithm_defaults(knob)
    if algorithm in by_algorithm:
        return by_algorithm[algorithm]
    if profile == "official":
        return knob.official_by_dataset.get(dataset, knob.official)
    return knob.paper


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return f"`{value}`"
    return f"{value:g}"


def markdown_table() -> str:
    """The knob table of docs/fidelity.md, generated from `KNOBS`."""
    rows = [
        "| knob | spec field | paper | official code | paper profile | official profile | why |",
        "|---|---|---|---|---|---|---|",
    ]
    for k in KNOBS:
        name = f"`{k.name}`" + (f" {k.label}" if k.label else "")
        official = " / ".join(
            [_shown(k.official)] + [f"{_shown(v)} {d}" for d, v in k.official_by_dataset.items()]
        )
        if by_algorithm := algorithm_defaults(k):
            official += " (" + ", ".join(f"{a}: {_shown(v)}" for a, v in by_algorithm.items()) + ")"
        rows.append(
            f"| {name} | `{k.path}` | {k.paper_text} | {k.official_text} | {_shown(k.paper)} "
            f"| {official} | {k.why} |"
        )
    return "\n".join(rows) + "\n"


class Fidelity:
    """Every knob that applies to the run, resolved; read as attributes (`fid.aggregation`)."""

    __slots__ = ("_values", "profile")

    def __init__(self, profile: Literal["paper", "official"], values: dict[str, Any]) -> None:
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no fidelity knob {name!r} applies to this run") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Fidelity is frozen")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fidelity) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.as_dict().items())))

    def __repr__(self) -> str:
        return f"Fidelity({self.as_dict()!r})"

    def as_dict(self) -> dict[str, Any]:
        """The profile and every resolved knob, in declaration order."""
        return {"profile": self.profile, **self._values}


def _sections(spec: ExperimentSpec) -> dict[Home, BaseModel]:
    """Where each home's knobs sit in this spec (FedGen's only for a FedGen run)."""
    sections: dict[Home, BaseModel] = {
        "fidelity": spec.fidelity,
        "partition": spec.partition,
        "model": spec.model,
        "run": spec,
    }
    decl = find_algorithm(spec.algorithm.name)
    if decl is not None and decl.knob_home is not None:  # FedGen's knobs in FedGen's section
        sections[cast(Home, decl.knob_home)] = spec.algorithm
    return sections


def resolve(spec: ExperimentSpec) -> Fidelity:
    """Resolve every applicable knob: the spec's value if set, else its default."""
    profile = spec.fidelity.profile
    sections = _sections(spec)
    values: dict[str, Any] = {}
    for knob in KNOBS:
        if knob.home not in sections:
            continue
        explicit = getattr(sections[knob.home], knob.name)
        values[knob.name] = (
            explicit
            if explicit is not None
            else default_value(knob, profile, spec.data.name, spec.algorithm.name)
        )
    return Fidelity(profile, values)
