"""Reading a saved case: every part checked before it is read.

The parts read are those the marker lists (never a directory listing, never
a glob: a folder named ``case*`` reads nothing of its sibling ``caseB``),
each a regular file (a link or a named pipe in its place is refused without
being opened) of the size and digest the marker records.  Every problem is
one :class:`~sarsleuth.errors.CaseError` naming the part; DuckDB is handed
Arrow datasets of those files, never a path.  A case written before parts
were listed is read from its folders, each Parquet footer checked, and a
query that fails on a part names it.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pandas as pd

from sarsleuth.errors import CaseError, UsageError
from sarsleuth.saved_cases.folder import digest
from sarsleuth.saved_cases.layout import MARKER, PARTITIONED, TABLES
from sarsleuth.inputs.named_paths import Unreadable, read_named
#: A marker is a few KB per host; past this it is not one.
MAX_MARKER_BYTES = 256 << 20


def case_dir_of(path) -> Path:
    base = Path(path)
    if not (base / MARKER).is_file():
        raise CaseError(path, f"not a saved case (no {MARKER}; write one with analyze --save)")
    return base


def read_marker(base: Path) -> dict:
    try:
        info = json.loads(read_named(base / MARKER, MAX_MARKER_BYTES, "case marker"))
    except Unreadable as exc:
        raise CaseError(exc.name, exc.reason) from None
    except ValueError as exc:
        raise CaseError(base / MARKER, f"damaged case marker ({exc})") from None
    if not isinstance(info, dict) or not isinstance(info.get("parts", {}), dict):
        raise CaseError(base / MARKER, "damaged case marker (not the object sarsleuth writes)")
    return info


def table_parts(base: Path, info: dict, name: str) -> list:
    """The checked Parquet files of table ``name`` (empty when it has none)."""
    listed = info.get("parts")
    if listed is None:              # a case written before parts were listed
        return [_checked(p, base) for p in _found(base, name)]
    out = []
    for rel, facts in sorted(listed.items()):
        if rel == f"{name}.parquet" or (name in PARTITIONED and rel.startswith(f"{name}/")):
            out.append(_checked(_inside(base, rel), base, facts))
    return out


def _inside(base: Path, rel: str) -> Path:
    """The file a marker's part name stands for, only ever inside the case:
    sarsleuth writes ``TABLE.parquet`` or ``TABLE/KEY=VALUE/PART.parquet``,
    so a name that climbs out (``..``), starts at the root or holds an
    empty step is no part of it."""
    steps = rel.split("/")
    if any(step in ("", ".", "..") or "\\" in step or "\x00" in step for step in steps) or len(steps) > 3:
        raise CaseError(base / MARKER, f"damaged case marker: part {rel!r} is not a file of the case folder; "
                                       "nothing read")
    return base.joinpath(*steps)


def _found(base: Path, name: str) -> list:
    single = base / f"{name}.parquet"
    if os.path.lexists(single):
        return [single]
    folder = base / name
    if not folder.is_dir() or folder.is_symlink():
        return []
    parts = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            parts += [Path(e.path) for e in sorted(os.scandir(entry.path), key=lambda e: e.name)
                      if e.name.endswith(".parquet")]
        else:
            parts.append(Path(entry.path))
    return parts


def _checked(part: Path, base: Path, facts: dict | None = None) -> Path:
    """``part`` when it is the regular file written there, else CaseError."""
    for folder in part.parents:
        if folder == base:
            break
        if folder.is_symlink():
            raise CaseError(folder, "folder of the saved case is a symbolic link, not the folder sarsleuth "
                                    "wrote; not read")
    try:
        st = os.lstat(part)
    except FileNotFoundError:
        raise CaseError(part, "part of the saved case is missing") from None
    except OSError as exc:
        raise CaseError(part, f"part of the saved case cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        what = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "a named pipe" if stat.S_ISFIFO(st.st_mode)
                else "not a regular file")
        raise CaseError(part, f"part of the saved case is {what}, not the file sarsleuth wrote; not read")
    if facts is not None:
        if not isinstance(facts, dict):
            raise CaseError(part, "damaged case marker: no size and digest recorded for this part")
        if st.st_size != facts.get("bytes"):
            raise CaseError(part, f"part of the saved case is damaged: {st.st_size} bytes where "
                                  f"{facts.get('bytes')} were written (cut or replaced)")
        if digest(part) != facts.get("blake2b"):
            raise CaseError(part, "part of the saved case is damaged: its bytes are not those written "
                                  "(a BLAKE2b digest differs)")
    return part


def _parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CaseError(None, "reading a saved case needs pyarrow: pip install 'sarsleuth[parquet]'") from None
    return pq


def read_part(part: Path):
    """One part as an Arrow table; a part that is no readable Parquet file
    is a CaseError naming it."""
    pq = _parquet()
    try:
        return pq.read_table(part)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several kinds for a damaged file
        raise CaseError(part, f"part of the saved case is damaged: {_first_line(exc)}") from None


def part_schema(part: Path):
    pq = _parquet()
    try:
        return pq.read_schema(part)
    except Exception as exc:  # noqa: BLE001
        raise CaseError(part, f"part of the saved case is damaged: {_first_line(exc)}") from None


def _plain(schema):
    """A part's schema with categories as their values: parts of one table
    may hold them with indexes of different widths, as SQL sees text."""
    # an extra: the core works without it
    import pyarrow as pa
    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema])


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class StoredCase:
    """A saved case, reopened: each table a pandas DataFrame, read on first
    use.  Everything wrong with the case is a :class:`~sarsleuth.errors.CaseError`."""

    def __init__(self, path):
        self.path = case_dir_of(path)
        self.info = read_marker(self.path)
        self._tables: dict = {}

    @property
    def tables(self) -> list:
        return [t for t in TABLES if _has(self.path, self.info, t)]

    def table(self, name: str):
        if name not in TABLES:
            raise KeyError(f"no table {name!r} (have: {', '.join(self.tables)})")
        if name not in self._tables:
            frames = [read_part(p).to_pandas() for p in table_parts(self.path, self.info, name)]
            self._tables[name] = (pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]) \
                if frames else pd.DataFrame()
        return self._tables[name]

    def __getattr__(self, name):
        if name in TABLES:
            return self.table(name)
        raise AttributeError(name)

    def sql(self, query: str):
        """Run SQL (DuckDB) over the case's tables; a DataFrame."""
        return run_sql(self.path, query)

    def __repr__(self) -> str:
        return f"<StoredCase {self.path} {len(self.info.get('hosts', []))} hosts, tables: {', '.join(self.tables)}>"


def _has(base: Path, info: dict, name: str) -> bool:
    listed = info.get("parts")
    if listed is None:
        return bool(_found(base, name))
    return any(rel == f"{name}.parquet" or (name in PARTITIONED and rel.startswith(f"{name}/")) for rel in listed)


def load_case(path) -> StoredCase:
    return StoredCase(path)


def run_sql(path, query: str):
    """The result of ``query`` over a saved case as a DataFrame (DuckDB over
    an Arrow dataset of each table's checked parts, times in UTC)."""
    try:
        import duckdb
        import pyarrow as pa
        import pyarrow.dataset as ds
    except ImportError:
        raise UsageError("sql needs DuckDB: pip install 'sarsleuth[sql]'") from None
    base = case_dir_of(path)
    info = read_marker(base)
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")     # times shown as stored, whatever this machine's zone
    except duckdb.Error:
        pass
    parts_of = {name: table_parts(base, info, name) for name in TABLES}
    try:
        for name, parts in parts_of.items():
            if parts:
                schema = pa.unify_schemas([_plain(part_schema(p)) for p in parts])
                con.register(name, ds.dataset([str(p) for p in parts], format="parquet", schema=schema))
        relation = con.sql(query)
        if relation is None:          # a statement, not a query: nothing to show
            import pandas as pd
            return pd.DataFrame()
        return relation.df()
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        if "parts" not in info:       # no digests: find the part the query tripped on
            for parts in parts_of.values():
                for p in parts:
                    read_part(p)
        raise UsageError(f"sql: {_first_line(exc)}") from None
    finally:
        con.close()
