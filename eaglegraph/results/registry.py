"""One schema registry and one loader for every saved run.

Each run type is registered under its schema name (`eaglegraph.probe/1`, …); `load_run` reads
any of them back into its dataclass, and `document` writes one with its schema in front.
Schema names and versions never change meaning: a new incompatible shape gets a new version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from eaglegraph.errors import BadInput
from eaglegraph.results.capture import CAPTURE_SCHEMA, CaptureRun
from eaglegraph.results.codec import decode, json_type
from eaglegraph.results.env import ENV_SCHEMA, EnvReport
from eaglegraph.results.inspect import INSPECT_SCHEMA, InspectReport
from eaglegraph.results.memdiff import MEMDIFF_SCHEMA, MemdiffRun
from eaglegraph.results.memdiff_ranks import MEMDIFF_RANKS_SCHEMA, MemdiffRanksRun
from eaglegraph.results.probe import PROBE_SCHEMA, ProbeRun
from eaglegraph.results.rank_runs import RANKS_SCHEMA, RankedRun
from eaglegraph.results.scaffold import (
    PRESETS_SCHEMA,
    SCAFFOLD_SCHEMA,
    PresetList,
    ScaffoldResult,
)
from eaglegraph.results.stacks import STACKS_SCHEMA, StacksReport
from eaglegraph.results.triage import TRIAGE_SCHEMA, TriageResult
from eaglegraph.serial import document as _document
from eaglegraph.serial import read_json_file

# A saved run of any kind; a runtime alias, usable in isinstance.
Run = Union[  # noqa: UP007
    InspectReport,
    CaptureRun,
    MemdiffRun,
    ProbeRun,
    TriageResult,
    EnvReport,
    StacksReport,
    ScaffoldResult,
    PresetList,
    RankedRun,
    MemdiffRanksRun,
]

SCHEMAS: dict[str, type] = {
    INSPECT_SCHEMA: InspectReport,
    CAPTURE_SCHEMA: CaptureRun,
    MEMDIFF_SCHEMA: MemdiffRun,
    PROBE_SCHEMA: ProbeRun,
    TRIAGE_SCHEMA: TriageResult,
    ENV_SCHEMA: EnvReport,
    STACKS_SCHEMA: StacksReport,
    SCAFFOLD_SCHEMA: ScaffoldResult,
    PRESETS_SCHEMA: PresetList,
    RANKS_SCHEMA: RankedRun,
    MEMDIFF_RANKS_SCHEMA: MemdiffRanksRun,
}
_BY_TYPE = {cls: name for name, cls in SCHEMAS.items()}


def schema_of(run: Any) -> str:
    """The schema name a run is saved under."""
    try:
        return _BY_TYPE[type(run)]
    except KeyError:
        raise TypeError(f"{type(run).__name__} is not a registered run type") from None


def document(run: Any) -> dict[str, Any]:
    """The run as its versioned JSON document (schema and producing version first)."""
    return _document(schema_of(run), run)


def load_run(path: Path | str) -> Any:
    """Read any saved run back into its dataclass; any problem is a one-line `BadInput`."""
    path = Path(path)
    return run_from_document(read_json_file(path, "run file"), path.name)


def run_from_document(doc: Any, where: str = "run") -> Any:
    if not isinstance(doc, dict):
        raise BadInput(f"{where}: expected a JSON object, not a {json_type(doc)}")
    schema = doc.get("schema")
    if schema is None:
        raise BadInput(f"{where}: no 'schema' key; not an eaglegraph run file")
    cls = SCHEMAS.get(schema) if isinstance(schema, str) else None
    if cls is None:
        raise BadInput(f"{where}: {_schema_problem(schema)}")
    return decode(cls, doc, where)


def _schema_problem(schema: Any) -> str:
    known = ", ".join(SCHEMAS)
    if not isinstance(schema, str):
        return f"'schema' must be a string such as {CAPTURE_SCHEMA!r}"
    family = schema.split("/", 1)[0]
    if any(s.split("/", 1)[0] == family for s in SCHEMAS):
        return f"schema {schema!r} is not supported by this eaglegraph (reads {known})"
    return f"schema {schema!r} is not a saved run; report reads {known}"
