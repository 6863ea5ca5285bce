"""A release on disk: one parquet file per config and split, under ``data/CONFIG/``, typed
by an explicit schema (so an empty split still says its columns), beside the card; written
into a hidden folder next to the destination and renamed into place, so a release is there
whole or not at all.

pyarrow comes with the ``release`` extra (``pip install 'stereorank[release]'``; the test
lock holds it, the runtime lock does not): ``require_pyarrow`` refuses in one line without it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from training.errors import ReleaseError

EXTRA = "release"
STRINGS = ("annotator", "task", "occupation")


def require_pyarrow():
    """pyarrow's parquet writer, or ``ReleaseError`` naming the extra to install."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ReleaseError(
            f"the {EXTRA} extra is not installed: pip install 'stereorank[{EXTRA}]' "
            "(bin/_venv.sh's install_locked test holds it)"
        ) from None
    return pyarrow


def path_of(config: str, split: str) -> str:
    """Where a config's split lies in the release (the card's ``data_files``)."""
    return f"data/{config}/{split}-00000-of-00001.parquet"


def _schema(pa, config: str, columns: Sequence[str]):
    text, whole = pa.string(), pa.int64()
    fields = {
        "rankings": [
            *((name, text) for name in STRINGS),
            ("tiers", pa.list_(pa.list_(whole))),
            ("items", pa.int32()),
        ],
        "items": [
            ("item_id", whole),
            ("text", text),
            ("occupation", text),
            ("prompt_type", text),
            ("prompt_group", text),
        ],
        "labels": [("item_id", whole), ("label", pa.float64()), ("rankings", pa.int32())],
        "pairs": [
            ("prompt", text),
            ("chosen", text),
            ("rejected", text),
            ("margin", pa.float64()),
            ("chosen_item", whole),
            ("rejected_item", whole),
            ("chosen_prompt_type", text),
            ("rejected_prompt_type", text),
            *((name, text) for name in STRINGS),
        ],
    }[config]
    if config in ("rankings", "pairs"):
        fields += [(column, text) for column in columns]
    return pa.schema(fields)


def base_columns(config: str) -> list[str]:
    """A config's own columns (the demographic columns come after them)."""
    pa = require_pyarrow()
    return _schema(pa, config, ()).names


def write_release(
    out: Path, rows: Mapping[str, Mapping[str, list[dict]]], columns: Sequence[str], card: str
) -> None:
    """Write ``rows`` (``{config: {split: rows}}``) and the card ``README.md`` to ``out``,
    which must not exist or be empty; ``ReleaseError`` otherwise, and nothing written."""
    pa = require_pyarrow()
    import pyarrow.parquet as pq

    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReleaseError(
            f"{out} exists and is not an empty folder: name a new one (a release is "
            "written whole, never over another)"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for config, splits in rows.items():
            schema = _schema(pa, config, columns)
            for split, split_rows in splits.items():
                path = partial / path_of(config, split)
                path.parent.mkdir(parents=True, exist_ok=True)
                table = pa.Table.from_pylist(split_rows, schema=schema)
                pq.write_table(table, path)
        (partial / "README.md").write_text(card, encoding="utf-8")
        if out.exists():
            out.rmdir()
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
