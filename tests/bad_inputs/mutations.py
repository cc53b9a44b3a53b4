"""Mutations of real files, one at a time, for the fuzzer (``test_mutations.py``).

Each mutation takes a file's bytes and returns damaged bytes (or None to delete the file). They
are the damage a careless or hostile user does: a column dropped or renamed, a cell of the wrong
type, a row duplicated or removed, two names swapped, a JSON value edited or removed, a file cut
short, an array of another type or shape, a tensor holding NaN, infinity, a negative variance or a
row too few. :func:`mutations_of` draws them from a seeded RNG, so a
failure names a reproducible mutation. :func:`unusable_numbers` and :func:`unusable_cells` are not
drawn: they put a number no program can use (10**400, NaN, infinity, -1 where the file's schema
says a count) in every numeric field of a file, one at a time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Mutation:
    file: str
    what: str
    apply: Callable[[bytes], bytes | None]

    @property
    def id(self) -> str:
        return f"{self.file}: {self.what}"


# ------------------------------------------------------------------ CSV
def csv_rows(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def csv_bytes(rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode("utf-8")


def _csv_mutations(name: str, data: bytes, rng: np.random.Generator) -> list[Mutation]:
    rows = csv_rows(data)
    header, body = rows[0], rows[1:]
    col = int(rng.integers(len(header)))
    out = [
        Mutation(name, f"column {header[col]!r} dropped",
                 lambda d, c=col: csv_bytes([[v for k, v in enumerate(r) if k != c] for r in csv_rows(d)])),
        Mutation(name, f"column {header[col]!r} renamed",
                 lambda d, c=col: csv_bytes([[*r[:c], r[c] + "_x", *r[c + 1:]] if i == 0 else r
                                        for i, r in enumerate(csv_rows(d))])),
        Mutation(name, "cut in the middle", lambda d: d[: len(d) // 2]),
        Mutation(name, "emptied", lambda d: b""),
        Mutation(name, "deleted", lambda d: None),
        Mutation(name, "header only", lambda d: csv_bytes(csv_rows(d)[:1])),
    ]
    if body:
        row, other = int(rng.integers(len(body))) + 1, int(rng.integers(len(body))) + 1
        for value, label in (("x", "text"), ("", "empty"), ("1e400", "a huge number"), ("-7", "a negative number"),
                             ("True", "a boolean")):
            out.append(Mutation(name, f"line {row + 1}, column {header[col]!r} set to {label}",
                                lambda d, r=row, c=col, v=value: csv_bytes([[*x[:c], v, *x[c + 1:]] if i == r else x
                                                                      for i, x in enumerate(csv_rows(d))])))
        out += [
            Mutation(name, f"line {row + 1} duplicated",
                     lambda d, r=row: csv_bytes((lambda x: x[: r + 1] + [x[r]] + x[r + 1:])(csv_rows(d)))),
            Mutation(name, f"line {row + 1} removed", lambda d, r=row: csv_bytes([x for i, x in enumerate(csv_rows(d))
                                                                             if i != r])),
            Mutation(name, f"column {header[col]!r} swapped between lines {row + 1} and {other + 1}",
                     lambda d, r=row, o=other, c=col: csv_bytes(_swap_cells(csv_rows(d), r, o, c))),
            Mutation(name, f"line {row + 1} cut short", lambda d, r=row: csv_bytes([x[:-1] if i == r else x
                                                                               for i, x in enumerate(csv_rows(d))])),
        ]
    return out + _score_column_mutations(name, header)


def _swap_cells(rows: list[list[str]], a: int, b: int, col: int) -> list[list[str]]:
    rows[a][col], rows[b][col] = rows[b][col], rows[a][col]
    return rows


# ------------------------------------------------------------------ JSON
def _paths(value, prefix=()) -> list[tuple]:
    """Paths to every scalar of a JSON document (dict keys and list indices)."""
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for k, v in enumerate(value[:50]):
            out += _paths(v, (*prefix, k))
    else:
        out.append(prefix)
    return out


def _edit(data: bytes, path: tuple, change: Callable) -> bytes:
    doc = json.loads(data)
    target = doc
    for key in path[:-1]:
        target = target[key]
    result = change(target[path[-1]])
    if result is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = result
    return json.dumps(doc, indent=1).encode("utf-8")


_DELETE = object()


def _other_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.5
    return value + 1 if isinstance(value, int) else value * 0.9 + 0.01


def _json_mutations(name: str, data: bytes, rng: np.random.Generator, count: int) -> list[Mutation]:
    doc = json.loads(data)
    paths = _paths(doc)
    out = [Mutation(name, "cut in the middle", lambda d: d[: len(d) // 2]),
           Mutation(name, "a list instead of an object", lambda d: b"[1, 2]")]
    names = doc.get("hierarchy", {}).get("names") if isinstance(doc.get("hierarchy"), dict) else None
    if names and len(names) > 1:
        out.append(Mutation(name, "two class names swapped in the tree",
                            lambda d: _edit(d, ("hierarchy", "names"), lambda n: [n[1], n[0], *n[2:]])))
    for k in rng.choice(len(paths), size=min(count, len(paths)), replace=False):
        path = paths[int(k)]
        shown = ".".join(map(str, path))
        kind = int(rng.integers(4))
        if kind == 0:
            out.append(Mutation(name, f"'{shown}' changed", lambda d, p=path: _edit(d, p, _other_number)))
        elif kind == 1:
            out.append(Mutation(name, f"'{shown}' made a string", lambda d, p=path: _edit(d, p, lambda v: "oops")))
        elif kind == 2:
            out.append(Mutation(name, f"'{shown}' removed", lambda d, p=path: _edit(d, p, lambda v: _DELETE)))
        else:
            out.append(Mutation(name, f"'{shown}' made null", lambda d, p=path: _edit(d, p, lambda v: None)))
    return out


# ------------------------------------------------------------------ .npz
def _npz(data: bytes, change: Callable[[dict], None]) -> bytes:
    with np.load(io.BytesIO(data)) as archive:
        arrays = {k: archive[k] for k in archive.files}
    change(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npz_mutations(name: str, data: bytes, rng: np.random.Generator) -> list[Mutation]:
    with np.load(io.BytesIO(data)) as archive:
        members = list(archive.files)
    member = members[int(rng.integers(len(members)))]
    return [
        Mutation(name, "cut in the middle", lambda d: d[: len(d) // 2]),
        Mutation(name, f"'{member}' removed", lambda d, m=member: _npz(d, lambda a: a.pop(m))),
        Mutation(name, f"'{member}' as float", lambda d, m=member: _npz(d, lambda a: a.update({m: a[m] * 1.5}))),
        Mutation(name, f"'{member}' one row shorter", lambda d, m=member: _npz(d, lambda a: a.update({m: a[m][:-1]}))),
        Mutation(name, f"'{member}' negated", lambda d, m=member: _npz(d, lambda a: a.update({m: -a[m] - 1}))),
        *_score_mutations(name, members, rng),
    ]


# ------------------------------------------------------------------ .safetensors
def _tensors(data: bytes, change: Callable[[dict], None]) -> bytes:
    from safetensors.torch import load, save  # torch: only for the tensor files

    tensors = load(data)
    change(tensors)
    return save(tensors)


def _set_first(tensors: dict, key: str, value: float) -> None:
    tensors[key] = tensors[key].clone()
    tensors[key].view(-1)[0] = value


def _tensor_mutations(name: str, data: bytes, rng: np.random.Generator) -> list[Mutation]:
    from safetensors.torch import load  # torch: only for the tensor files

    tensors = load(data)
    floats = sorted(k for k, v in tensors.items() if v.is_floating_point() and v.numel())
    key = floats[int(rng.integers(len(floats)))]
    out = [Mutation(name, f"'{key}' holds a NaN", lambda d, k=key: _tensors(d, lambda t: _set_first(t, k, np.nan))),
           Mutation(name, f"'{key}' holds infinity", lambda d, k=key: _tensors(d, lambda t: _set_first(t, k, np.inf))),
           Mutation(name, f"'{key}' negated", lambda d, k=key: _tensors(d, lambda t: t.update({k: -t[k]}))),
           Mutation(name, f"'{key}' one row shorter", lambda d, k=key: _tensors(d, lambda t: t.update({k: t[k][:-1]}))),
           Mutation(name, f"'{key}' removed", lambda d, k=key: _tensors(d, lambda t: t.pop(k)))]
    variances = sorted(k for k in tensors if k.endswith("running_var"))
    if variances:
        var = variances[int(rng.integers(len(variances)))]
        out.append(Mutation(name, f"'{var}' below 0", lambda d, k=var: _tensors(d, lambda t: _set_first(t, k, -0.5))))
    return out


# ------------------------------------------------------------------ what a prediction file's scores are
def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _score_mutations(name: str, members: list[str], rng: np.random.Generator) -> list[Mutation]:
    """A prediction file's scores said to be the other kind, or turned into it, or probabilities a
    little off (rounded, or one row scaled)."""
    kind = next((m for m in ("logits", "probs") if m in members), None)
    if kind is None:
        return []
    other = "probs" if kind == "logits" else "logits"
    row = int(rng.integers(4))
    scale = float(rng.choice([0.995, 1.02, 1.2]))
    return [
        Mutation(name, f"'{kind}' renamed '{other}'", lambda d: _npz(d, lambda a: a.update({other: a.pop(kind)}))),
        Mutation(name, f"'{kind}' replaced by {'its softmax' if kind == 'logits' else 'their log'}",
                 lambda d: _npz(d, lambda a: a.update({kind: _softmax(a[kind]) if kind == "logits" else
                                                       np.log(np.maximum(a[kind], 1e-12))}))),
        Mutation(name, f"'{kind}' rounded to 2 decimals",
                 lambda d: _npz(d, lambda a: a.update({kind: a[kind].round(2)}))),
        Mutation(name, f"'{kind}' row {row} scaled by {scale}",
                 lambda d: _npz(d, lambda a: a[kind].__setitem__(row, a[kind][row] * scale))),
    ]


def _score_column_mutations(name: str, header: list[str]) -> list[Mutation]:
    """A prediction CSV's score columns renamed to another kind (prob_ to logit_, or to score_)."""
    prefixes = {h.split("_")[0] for h in header if h.startswith(("logit_", "prob_", "score_"))}
    out = []
    for old in prefixes:
        for new in ("logit", "prob", "score"):
            if new != old:
                out.append(Mutation(name, f"columns {old}_<i> renamed {new}_<i>",
                                    lambda d, o=old, n=new: d.replace(f"{o}_".encode(), f"{n}_".encode())))
    return out


# ------------------------------------------------------------------ numbers no program can use
UNUSABLE = (("10**400", 10**400), ("NaN", math.nan), ("Infinity", math.inf))


def number_paths(doc, prefix: tuple = ()) -> list[tuple]:
    """Paths to every number of a JSON-like document (of a list, its first item: the others are
    the same field)."""
    if isinstance(doc, dict):
        return [p for k, v in doc.items() for p in number_paths(v, (*prefix, k))]
    if isinstance(doc, list):
        return number_paths(doc[0], (*prefix, 0)) if doc else []
    return [prefix] if isinstance(doc, (int, float)) and not isinstance(doc, bool) else []


def schemas_at(schema: dict, path: tuple, root: dict | None = None) -> list[dict]:
    """The sub-schemas of the JSON Schema ``schema`` that may describe the value at ``path``."""
    root = root or schema
    if "$ref" in schema:
        return schemas_at(root["$defs"][schema["$ref"].rsplit("/", 1)[1]], path, root)
    if "anyOf" in schema:
        return [s for option in schema["anyOf"] for s in schemas_at(option, path, root)]
    if not path:
        return [schema]
    key, rest = path[0], path[1:]
    if isinstance(key, int):
        return schemas_at(schema["items"], rest, root) if "items" in schema else []
    found = [schema["properties"][key]] if key in schema.get("properties", {}) else []
    found += [s for p, s in schema.get("patternProperties", {}).items() if re.search(p, key)]
    if not found and isinstance(schema.get("additionalProperties"), dict):
        found = [schema["additionalProperties"]]
    return [s for sub in found for s in schemas_at(sub, rest, root)]


def _counts(schemas: list[dict]) -> bool:
    """Whether a value described by ``schemas`` is a count: every number it may be is at least 0."""
    numbers = [s for s in schemas if s.get("type") in ("integer", "number")]
    return bool(numbers) and all(s.get("minimum", -1) >= 0 or s.get("exclusiveMinimum", -1) >= 0 for s in numbers)


def _set(doc, path: tuple, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def unusable_numbers(name: str, doc, schema: dict, encode: Callable[[object], bytes],
                     decode: Callable[[bytes], object]) -> list[Mutation]:
    """Every number of ``doc`` (a file ``name`` whose record has the JSON Schema ``schema``; read
    with ``decode``, written with ``encode``) set to each of :data:`UNUSABLE`, and to -1 where the
    schema makes it a count."""
    out = []
    for path in number_paths(doc):
        shown = "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path).lstrip(".")
        values = [*UNUSABLE, *([("-1", -1)] if _counts(schemas_at(schema, path)) else [])]
        out += [Mutation(name, f"'{shown}' set to {label}", lambda d, p=path, v=value: encode(_set(decode(d), p, v)))
                for label, value in values]
    return out


def unusable_cells(name: str, data: bytes, table) -> list[Mutation]:
    """Every numeric column of the CSV file ``name`` (read as ``table``, a
    :class:`hseval.io.tables.Table`) given, on its first line, 1e400, nan, inf, and -1 where the
    table makes it a count."""
    header, *body = csv_rows(data)
    out = []
    for col, column in enumerate(table.column(h) for h in header if body):
        if column.kind not in (int, float):
            continue
        count = column.kind is int and column.low is not None and column.low >= 0
        values = ["1e400", "nan", "inf", *(["-1"] if count else [])]
        out += [Mutation(name, f"line 2, column {column.name!r} set to {value}",
                         lambda d, c=col, v=value: csv_bytes([[*x[:c], v, *x[c + 1:]] if i == 1 else x
                                                              for i, x in enumerate(csv_rows(d))]))
                for value in values]
    return out


def mutations_of(name: str, data: bytes, rng: np.random.Generator, *, json_edits: int = 8) -> list[Mutation]:
    """The mutations of a file called ``name`` holding ``data``."""
    if name.endswith(".safetensors"):
        return _tensor_mutations(name, data, rng) + _byte_mutations(name, data, rng)
    if name.endswith(".csv"):
        return _csv_mutations(name, data, rng)
    if name.endswith(".json"):
        return _json_mutations(name, data, rng, json_edits)
    if name.endswith(".npz"):
        return _npz_mutations(name, data, rng)
    return _byte_mutations(name, data, rng)


def stream_flips(name: str, data: bytes, per_member: int) -> list[Mutation]:
    """A byte changed inside the stored or compressed bytes of each member of a zip archive (an
    ``.npz``), at ``per_member`` places spread over it: damage only the CRC-32 can tell."""
    import zipfile

    out = []
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            extra = int.from_bytes(data[info.header_offset + 28: info.header_offset + 30], "little")
            start = info.header_offset + 30 + len(info.filename.encode()) + extra
            for k in range(per_member):
                at = start + k * info.compress_size // per_member
                out.append(Mutation(name, f"byte {at - start} of {info.filename}'s data changed",
                                    lambda d, at=at: d[:at] + bytes([d[at] ^ 0x5A]) + d[at + 1:]))
    return out


def _byte_mutations(name: str, data: bytes, rng: np.random.Generator) -> list[Mutation]:
    flip = int(rng.integers(len(data)))
    return [Mutation(name, "cut in the middle", lambda d: d[: len(d) // 2]),
            Mutation(name, f"byte {flip} changed", lambda d, k=flip: d[:k] + bytes([d[k] ^ 0x5A]) + d[k + 1:]),
            Mutation(name, "deleted", lambda d: None)]
