"""The strict case loader: every error names the file and the key path; nothing runs on error."""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

from harness import UsageError
from harness.corpus.catalogue import Scenario, load_catalogue
from harness.corpus.forks import may_fork
from harness.corpus.schema import MAX_LABELS, Case, contract_keys, did_you_mean
from harness.corpus.sessions import UNLABELLED_KEY, UNLABELLED_MESSAGE, is_unlabelled, unscored_case_data


@dataclass(frozen=True)
class CaseError:
    file: str
    key_path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.key_path or '<root>'}: {self.message}"


class CorpusError(UsageError):
    """One or more case files are broken; `errors` lists each with file and key path."""

    def __init__(self, errors: Sequence[CaseError]) -> None:
        self.errors = list(errors)
        lines = "\n".join(f"  {e}" for e in self.errors[:50])
        more = f"\n  ... and {len(self.errors) - 50} more" if len(self.errors) > 50 else ""
        super().__init__(f"{len(self.errors)} error(s) in the case files:\n{lines}{more}")


T = TypeVar("T")
R = TypeVar("R")

_BaseSafeLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DEFAULT_MAX_CASE_BYTES = 1_000_000
"""The size limit of one case file (the largest case in the corpus is ~25 KB)."""
MAX_CASE_BYTES_ENV = "VBENCH_MAX_CASE_BYTES"
"""The environment variable that sets another limit (a positive number of bytes) for validate and run alike."""


class CaseFileError(UsageError):
    """A case file refused before it is parsed (too big) or while it is built (an alias)."""


def max_case_bytes() -> int:
    """The case-file size limit: `$VBENCH_MAX_CASE_BYTES`, else `DEFAULT_MAX_CASE_BYTES`."""
    raw = os.environ.get(MAX_CASE_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_CASE_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise CorpusError([CaseError(f"${MAX_CASE_BYTES_ENV}", "", f"{raw!r} is not a positive number of bytes")])
    return value


class _StrictSafeLoader(_BaseSafeLoader):  # type: ignore[misc,valid-type]
    """The safe loader (libyaml's C parser when present) that refuses a repeated key and any alias.

    An alias (`*name`) lets a few KB stand for billions of nodes once something walks the data (the
    billion-laughs pattern), so a case file may not use one; every node is built exactly once.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node in self.constructed_objects or node in self.recursive_objects:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "YAML anchors and aliases are not allowed in case files (the node here is used again by an alias)",
                node.start_mark,
            )
        return super().construct_object(node, deep=deep)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        """The tag of a node, remembered for short scalars: a corpus repeats its keys and small values across
        every file, and the resolver's regular expressions ran once per scalar of each."""
        if kind is not yaml.ScalarNode or len(value) > _RESOLVED_LENGTH:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            if len(_RESOLVED) >= _RESOLVED_ENTRIES:
                _RESOLVED.clear()
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return tag

    def construct_document(self, node: yaml.Node) -> Any:
        """The document built by `_build` (plain strings, mappings and sequences directly, every other node by
        its constructor), then the constructor's own clean-up."""
        try:
            return self._build(node)
        finally:
            self.constructed_objects: dict[Any, Any] = {}
            self.recursive_objects: dict[Any, Any] = {}
            self.state_generators: list[Any] = []
            self.deep_construct = False

    def _build(self, node: yaml.Node) -> Any:
        """`construct_object` for the nodes a case is made of, without its per-node bookkeeping: a case file has
        some 150 nodes, and building them was most of loading one. Each node is registered as built, so a node
        met twice (an alias) is refused here or in `construct_object` alike."""
        if node in self.constructed_objects:
            return self.construct_object(node)  # refuses it: the node is used again by an alias
        tag = node.tag
        value: Any
        if tag == _STR_TAG and type(node) is yaml.ScalarNode:
            value = node.value
        elif tag == _MAP_TAG and type(node) is yaml.MappingNode:
            value = {}
            self.constructed_objects[node] = value
            for key_node, value_node in node.value:
                key = self._build(key_node)
                _refuse_repeat(key, value, key_node)
                value[key] = self._build(value_node)
            return value
        elif tag == _SEQ_TAG and type(node) is yaml.SequenceNode:
            value = []
            self.constructed_objects[node] = value
            for child in node.value:  # a loop, not a generator: one stack frame per level of nesting
                value.append(self._build(child))
            return value
        else:
            return self.construct_object(node, deep=True)
        self.constructed_objects[node] = value
        return value


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}
"""Tags of short scalars already resolved (`_StrictSafeLoader.resolve`); emptied when it holds `_RESOLVED_ENTRIES`."""
_RESOLVED_LENGTH, _RESOLVED_ENTRIES = 64, 50_000
_STR_TAG, _MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _refuse_repeat(key: Any, mapping: dict[Any, Any], key_node: yaml.Node) -> None:
    """A key that cannot be a key (unhashable) or is already in `mapping`: the file is refused."""
    try:
        repeated = key in mapping
    except TypeError:
        raise yaml.constructor.ConstructorError(
            None, None, f"unhashable key {type(key).__name__}", key_node.start_mark
        ) from None
    if repeated:
        raise yaml.constructor.ConstructorError(None, None, f"repeated key {key!r}", key_node.start_mark)


def _construct_mapping(loader: _StrictSafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        _refuse_repeat(key, out, key_node)
        out[key] = loader.construct_object(value_node, deep=deep)
    return out


_StrictSafeLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path, max_bytes: int | None = None) -> Any:
    """Safe-load one case file of at most `max_bytes` (default: `max_case_bytes()`), refusing repeated keys and
    aliases. Raises `CaseFileError` for a file over the limit, `yaml.YAMLError` for one that is not a case's YAML."""
    limit = max_case_bytes() if max_bytes is None else max_bytes
    with path.open("rb") as fh:
        data = fh.read(limit + 1)  # never more than the limit in memory, whatever stat says
    if len(data) > limit:
        raise CaseFileError(f"the file is over the size limit of {limit:,} bytes (${MAX_CASE_BYTES_ENV})")
    return strict_yaml(data.decode("utf-8"))


MAX_FLOW_DEPTH = 500
"""The deepest `[`/`{` nesting a YAML file may have: libyaml's C composer recurses once per level on the C stack,
so a file of 100,000 `[` kills the process with a segmentation fault before Python's recursion limit can act."""

_FLOW = re.compile(r"[\[\]{}]")


def flow_depth(text: str) -> int:
    """The deepest nesting of flow brackets in `text`, counted over every bracket character (those inside quoted
    strings too, so it can only overstate): a cheap bound taken before the parser sees the text."""
    depth = deepest = 0
    for match in _FLOW.finditer(text):
        depth = depth + 1 if match.group() in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def strict_yaml(text: str) -> Any:
    """Safe-load YAML text refusing repeated keys and aliases (`yaml.YAMLError`); for every YAML file a run
    reads (cases, study files, price tables), so none can stand for more data than it holds."""
    openers = text.count("[") + text.count("{")  # the depth is at most this: most files need no walk
    if openers > MAX_FLOW_DEPTH and flow_depth(text) > MAX_FLOW_DEPTH:
        raise CaseFileError(f"the YAML is nested too deeply (over {MAX_FLOW_DEPTH} levels of [ or {{)")
    loader = _StrictSafeLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise CaseFileError("the YAML is nested too deeply") from None
    finally:
        loader.dispose()


def case_files(paths: Iterable[Path]) -> list[Path]:
    """Every `*.yaml` below each path (or the path itself when it is a file), sorted."""
    files: list[Path] = []
    for path in paths:
        files.extend([path] if path.is_file() else sorted(path.rglob("*.yaml")))
    return files


def load_case_file(
    path: Path, catalogue: dict[str, Scenario], max_bytes: int | None = None, unscored: bool = False
) -> tuple[Case | None, list[CaseError]]:
    """One case, or the errors that name its file and key paths (`max_bytes`: see `read_yaml`). With `unscored`
    an imported, unlabelled session is an unscored case (`corpus.sessions.unscored_case_data`), not an error."""
    name = str(path)
    try:
        data = read_yaml(path, max_bytes)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = str(getattr(exc, "problem", None) or exc)
        if problem.startswith("repeated key") and mark is not None:
            key_path = _repeated_key_path(path, mark.line, mark.column)
            return None, [CaseError(name, key_path or where, f"{problem} ({where})")]
        if problem.startswith("YAML anchors and aliases"):
            return None, [CaseError(name, where, problem)]
        return None, [CaseError(name, where, f"YAML syntax error: {problem}")]
    except CaseFileError as exc:
        return None, [CaseError(name, "", str(exc))]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [CaseError(name, "", f"cannot read: {exc}")]
    if not isinstance(data, dict):
        return None, [CaseError(name, "", f"a case file holds a mapping, not {type(data).__name__}")]
    if is_unlabelled(data):
        if not unscored:
            return None, [CaseError(name, f"meta.{UNLABELLED_KEY}", UNLABELLED_MESSAGE)]
        try:
            data = unscored_case_data(data)
        except ValueError as exc:
            return None, [CaseError(name, "", str(exc))]
    try:
        case = Case.model_validate(data)
    except ValidationError as exc:
        return None, _validation_errors(name, exc, data)
    errors = [
        CaseError(name, f"spec[{i}]", f"unknown scenario id {sid!r}{did_you_mean(sid, catalogue)}")
        for i, sid in enumerate(case.spec)
        if sid not in catalogue
    ]
    seen = {case.session_id}
    for i, other in enumerate(case.session.other_sessions):
        if other.id in seen:
            what = "this case's own session id" if other.id == case.session_id else "an earlier other session's id"
            errors.append(CaseError(name, f"session.other_sessions[{i}].id", f"{other.id!r} is {what}"))
        seen.add(other.id)
    return (None if errors else case), errors


def load_cases(paths: Iterable[Path | str], catalogue: dict[str, Scenario] | None = None) -> list[Case]:
    """Load every case below `paths`; raise `CorpusError` naming every broken file."""
    return [case for case, _ in load_cases_with_files(paths, catalogue)]


def load_cases_with_files(
    paths: Iterable[Path | str], catalogue: dict[str, Scenario] | None = None
) -> list[tuple[Case, str]]:
    """`load_cases`, each case with the file it was read from (for messages that name the file)."""
    return list(iter_cases_with_files(paths, catalogue))


def iter_cases_with_files(
    paths: Iterable[Path | str], catalogue: dict[str, Scenario] | None = None
) -> Iterator[tuple[Case, str]]:
    """`load_cases_with_files` one case at a time, for a caller that keeps less than the whole case (a run).

    The `CorpusError` naming every broken file comes at the end, after the good cases: a caller must not act
    on what it was given before the iteration finished (nothing runs on a broken case file).
    """
    for case, _, name in iter_loaded(paths, _same, catalogue):
        yield case, name


def _same(case: Case) -> Case:
    return case


def iter_loaded(
    paths: Iterable[Path | str],
    convert: Callable[[Case], T],
    catalogue: dict[str, Scenario] | None = None,
    parallel: bool = False,
    meanwhile: Callable[[], object] | None = None,
    unscored: bool = False,
) -> Iterator[tuple[T, str, str]]:
    """`(convert(case), case id, file)` for every good case below `paths`, in file order, under the rules of
    `iter_cases_with_files` (whose `CorpusError` comes at the end). With `parallel`, a large corpus is read and
    converted by worker processes (`read_in_workers`, which calls `meanwhile` here while they read), and only what
    `convert` returns comes back."""
    catalogue = load_catalogue() if catalogue is None else catalogue
    limit = max_case_bytes()
    errors: list[CaseError] = []
    first_file: dict[str, str] = {}
    given = [Path(p) for p in paths]
    errors.extend(CaseError(str(p), "", "no such file or folder") for p in given if not p.exists())
    files = case_files(p for p in given if p.exists())

    def read(path: Path) -> tuple[T | None, str, list[CaseError]]:
        case, errs = load_case_file(path, catalogue, limit, unscored)
        return (None, "", errs) if case is None else (convert(case), case.id, errs)

    for path, (converted, case_id, errs) in zip(files, read_in_workers(files, read, parallel, meanwhile), strict=True):
        errors.extend(errs)
        if converted is None:
            continue
        if case_id in first_file:
            errors.append(CaseError(str(path), "id", f"repeated id {case_id!r}, first in {first_file[case_id]}"))
            continue
        first_file[case_id] = str(path)
        yield converted, case_id, str(path)
    if errors:
        raise CorpusError(errors)


PARALLEL_FROM = 200
"""The fewest case files worth worker processes: below it, starting them costs more than they save."""
_CHUNK = 50


def read_in_workers(
    files: Sequence[Path],
    read: Callable[[Path], R],
    parallel: bool = True,
    meanwhile: Callable[[], object] | None = None,
) -> Iterator[R]:
    """`read(file)` for each file, in order. Parsing YAML and validating a case is CPU work the GIL keeps on
    one core; a large corpus is therefore split among forked processes, one per core, which return what `read`
    made. Forking is only safe while this process runs
    no other thread (a lock another thread held would stay held in the child), so then, off Linux, on one
    core or for a small corpus, the files are read here. `meanwhile`: work for this process while the workers
    read (it is not called when the files are read here)."""
    workers = min(os.cpu_count() or 1, 4)
    if not parallel or len(files) < PARALLEL_FROM or workers < 2 or not may_fork():
        yield from map(read, files)
        return
    chunks = [files[i : i + _CHUNK] for i in range(0, len(files), _CHUNK)]
    context = multiprocessing.get_context("fork")
    with context.Pool(workers, initializer=_set_reader, initargs=(read,)) as pool:
        results = pool.imap(_read_chunk, chunks)
        if meanwhile is not None:
            meanwhile()
        for done in results:
            yield from done


_reader: Callable[[Path], Any] | None = None
"""A forked worker's `read` (inherited from the parent through fork, never pickled)."""


def _set_reader(read: Callable[[Path], Any]) -> None:
    global _reader
    _reader = read


def _read_chunk(files: Sequence[Path]) -> list[Any]:
    assert _reader is not None
    return [_reader(path) for path in files]


def _validation_errors(name: str, exc: ValidationError, data: Any) -> list[CaseError]:
    """One error per key path. Pydantic names union members in its paths
    (`C1.str-enum[Derivability]`); they are dropped, and of a union's failing
    members only the one that got deepest into the input is reported."""
    found: list[tuple[tuple[Any, ...], tuple[Any, ...] | None, Any]] = []
    for err in exc.errors():
        real, union_at = _real_loc(err["loc"], data)
        found.append((real, union_at, err))
    deepest: dict[tuple[Any, ...], int] = {}
    for real, union_at, _ in found:
        if union_at is not None:
            deepest[union_at] = max(deepest.get(union_at, 0), len(real))
    out: list[CaseError] = []
    for real, union_at, err in found:
        if union_at is not None and len(real) < deepest[union_at]:
            continue
        scalar_branch = err.get("type") in ("enum", "literal_error") and isinstance(err.get("input"), list)
        if union_at is not None and (str(err.get("type", "")).endswith("_type") or scalar_branch) and len(found) > 1:
            if any(u == union_at and e is not err for _, u, e in found):
                continue
        error = CaseError(name, _loc(real), _message(err))
        if error not in out:
            out.append(error)
    return out


def _real_loc(loc: tuple[Any, ...], data: Any) -> tuple[tuple[Any, ...], tuple[Any, ...] | None]:
    """The parts of `loc` that are keys or indexes of the input, and where a union tag was dropped."""
    real: list[Any] = []
    union_at: tuple[Any, ...] | None = None
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif isinstance(part, str) and ("[" in part or "-" in part):
            union_at = union_at or tuple(real)
            continue
        else:
            node = None
        real.append(part)
    return tuple(real), union_at


def _repeated_key_path(path: Path, line: int, column: int) -> str | None:
    """The key path of the mapping key on `line` that repeats (found by walking the composed nodes)."""

    def walk(node: yaml.Node, parts: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value
                if (key_node.start_mark.line, key_node.start_mark.column) == (line, column):
                    return (*parts, key)
                if (hit := walk(value_node, (*parts, key))) is not None:
                    return hit
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                if (hit := walk(item, (*parts, index))) is not None:
                    return hit
        return None

    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    found = walk(root, ()) if root is not None else None
    return _loc(found) if found else None


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _message(err: Any) -> str:
    """Pydantic's message, with a "did you mean" for an unknown key or a value outside a fixed set."""
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err.get("type") == "too_long" and "claims" in err["loc"][:2]:
        return f"at most {MAX_LABELS} labels per claim, got {len(err['input'])}: decide, or keep the two a reviewer could defend"
    if err.get("type") == "extra_forbidden":
        return f"unknown key{did_you_mean(str(err['loc'][-1]), contract_keys())}"
    if err.get("type") in ("enum", "literal_error") and isinstance(err.get("input"), str):
        options = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        close = get_close_matches(err["input"], options, n=1, cutoff=0.6)
        return f"{msg}, got {err['input']!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
    return msg
