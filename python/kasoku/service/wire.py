"""The service's request and response bodies (docs/SERVING.md).

A body is an envelope: the magic b"KSW1", a little-endian u32 header length, a UTF-8 JSON header and the blobs the
header's "blobs" list sizes, back to back. Ciphertexts and keys travel as blobs in kasoku's compact wire format
(docs/SERIALIZATION.md), which carries its own integrity check and parameter fingerprint.

A job's header:  {"keys": "<key set id>", "inputs": ["x", ...], "blobs": [n, ...],
                  "graph": {"nodes": [{"op": "input", "name": "x", "level": 7}, ...], "outputs": [[id, "name"], ...]}
                  | "computation": {"name": "exp", "order": 6} | {"name": "polynomial", "degree": 31}
                  | "model": "<model id>"}
(input i's ciphertext is blob i; a computation's input is named "x" at the level of its ciphertext; a model's, "x",
is the sample the client encrypted with the plan (kasoku.nn), its output "logits").
A result's header: {"outputs": ["exp", ...], "blobs": [n, ...]}.

Everything here checks what it reads and raises BadRequest (a message for the client) on anything else; the fuzz
target tests/fuzz/fuzz_service_bodies.py feeds it arbitrary bytes.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass

import kasoku as ks

MAGIC = b"KSW1"
MAX_HEADER = 1 << 20  # bytes of JSON
MAX_BLOBS = 64
MAX_NODES = 4096  # a graph's tasks (413 beyond)
MAX_DEPTH = 1024  # its longest path of operations (422 beyond)
MAX_NAME = 64
MAX_ORDER = 32
MAX_DEGREE = 255
MAX_STEP = 1 << 20
SCHEMA = ks.sched.op_schema()  # the library's graph schema: op -> {"arity", "fields"}
OPS = tuple(SCHEMA)
COMPUTATIONS = ("exp", "polynomial")


class BadRequest(ValueError):
    """A body the service cannot use; the message says what is wrong (HTTP 400)."""


class TooLarge(BadRequest):
    """A job larger than the service takes (HTTP 413): more than MAX_NODES tasks."""


def pack(header: dict, blobs: list[bytes]) -> bytes:
    h = dict(header, blobs=[len(b) for b in blobs])
    text = json.dumps(h, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([MAGIC, struct.pack("<I", len(text)), text, *blobs])


def _no_constants(name: str):
    raise BadRequest(f"the header holds {name}, which is not a number JSON allows")


def unpack(body: bytes) -> tuple[dict, list[memoryview]]:
    """The header and the blobs of an envelope (views into body)."""
    if len(body) < 8 or body[:4] != MAGIC:
        raise BadRequest("the body is not a kasoku envelope (it must start with b'KSW1'); build it with ks.Client")
    (n,) = struct.unpack_from("<I", body, 4)
    if n > MAX_HEADER or 8 + n > len(body):
        raise BadRequest(f"the header length {n} exceeds the body ({len(body)} bytes) or {MAX_HEADER} bytes")
    try:
        header = json.loads(bytes(body[8 : 8 + n]).decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise BadRequest(f"the header is not UTF-8 JSON: {e}") from None
    if not isinstance(header, dict):
        raise BadRequest("the header must be a JSON object")
    sizes = header.get("blobs")
    if not isinstance(sizes, list) or len(sizes) > MAX_BLOBS or not all(_is_int(s) and s >= 0 for s in sizes):
        raise BadRequest(f"the header's 'blobs' must be a list of at most {MAX_BLOBS} sizes >= 0")
    if 8 + n + sum(sizes) != len(body):
        raise BadRequest(
            f"the blobs' sizes ({sum(sizes)} bytes) do not match the body after the header ({len(body) - 8 - n} bytes)"
        )
    view, at, blobs = memoryview(body), 8 + n, []
    for s in sizes:
        blobs.append(view[at : at + s])
        at += s
    return header, blobs


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _name(v, what: str) -> str:
    if not isinstance(v, str) or not 0 < len(v) <= MAX_NAME or not v.isprintable():
        raise BadRequest(f"{what} must be a printable string of 1..{MAX_NAME} characters")
    return v


def _int(v, what: str, lo: int, hi: int) -> int:
    if not _is_int(v) or not lo <= v <= hi:
        raise BadRequest(f"{what} must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def _constant(v, what: str) -> complex:
    if isinstance(v, list) and len(v) == 2:
        re, im = v
    else:
        re, im = v, 0.0
    for x in (re, im):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) >= 2.0**60:
            raise BadRequest(f"{what} must be a finite number (or [re, im]) below 2^60 in magnitude")
    return complex(re, im)


# How each field of the schema is read from a request (what the C++ side accepts, within the service's limits).
_FIELDS = {
    "name": _name,
    "level": lambda v, what: _int(v, what, 0, 64),
    "constant": _constant,
    "step": lambda v, what: _int(v, what, -MAX_STEP, MAX_STEP),
}


@dataclass
class JobSpec:
    keys: str
    inputs: list[str]  # names, in blob order
    nodes: list[dict] | None  # a graph's nodes (checked), or None for a computation
    outputs: list[tuple[int, str]]
    computation: dict | None  # {"name": ..., "order" | "degree": ...}
    model: str | None = None  # a stored kasoku.nn plan's id (POST /v1/models)


def _graph(g) -> tuple[list[dict], list[tuple[int, str]]]:
    if not isinstance(g, dict) or not isinstance(g.get("nodes"), list) or not isinstance(g.get("outputs"), list):
        raise BadRequest("'graph' must be an object with 'nodes' (a list) and 'outputs' (a list of [node id, name])")
    raw = g["nodes"]
    if len(raw) > MAX_NODES:
        raise TooLarge(f"a graph has at most {MAX_NODES} nodes, got {len(raw)}: split the job")
    if not raw:
        raise BadRequest("a graph has 1 or more nodes")
    nodes = []
    for i, n in enumerate(raw):
        if not isinstance(n, dict) or n.get("op") not in OPS:
            raise BadRequest(f"node {i}: 'op' must be one of {', '.join(OPS)}")
        op = n["op"]
        fields = SCHEMA[op]["fields"]
        extra = set(n) - {"op", "inputs", "level", *fields}
        if extra:
            raise BadRequest(f"node {i} ({op}): unknown field(s) {', '.join(sorted(map(str, extra)))}")
        ins = n.get("inputs", [])
        arity = SCHEMA[op]["arity"]
        if not isinstance(ins, list) or len(ins) != arity:
            raise BadRequest(f"node {i} ({op}): 'inputs' must list {arity} node id(s)")
        d = {"op": op, "inputs": [_int(j, f"node {i}: an operand", 0, len(raw) - 1) for j in ins]}
        for f in fields:
            d[f] = _FIELDS[f](n.get(f), f"node {i} ({op}): '{f}'")
        nodes.append(d)
    outs = []
    for o in g["outputs"]:
        if not isinstance(o, list) or len(o) != 2:
            raise BadRequest("each output must be [node id, name]")
        outs.append((_int(o[0], "an output's node id", 0, len(raw) - 1), _name(o[1], "an output's name")))
    if not 0 < len(outs) <= MAX_BLOBS or len({n for _, n in outs}) != len(outs):
        raise BadRequest(f"a graph has 1..{MAX_BLOBS} outputs with distinct names")
    _check_depth(nodes)
    return nodes, outs


def _check_depth(nodes: list[dict]) -> None:
    """The longest path of operations (Kahn's order, no recursion): a cycle is a BadRequest, a depth past MAX_DEPTH a
    ParameterError (422), both before anything runs."""
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(n["inputs"]) for n in nodes]
    for i, n in enumerate(nodes):
        for j in n["inputs"]:
            users[j].append(i)
    depth = [0] * len(nodes)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for u in users[i]:
            depth[u] = max(depth[u], depth[i] + 1)
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if done != len(nodes):
        raise BadRequest("the graph has a cycle: every node's inputs must come before it")
    if max(depth) > MAX_DEPTH:
        raise ks.ParameterError(f"the graph is {max(depth)} operations deep; the service takes at most {MAX_DEPTH}")


def parse_job(body: bytes) -> tuple[JobSpec, list[memoryview]]:
    """A job request: its checked spec and the input ciphertexts' bytes (not yet parsed)."""
    header, blobs = unpack(body)
    keys = _name(header.get("keys"), "'keys' (the key set id from register_keys)")
    inputs = header.get("inputs")
    if not isinstance(inputs, list) or len(inputs) != len(blobs) or not inputs:
        raise BadRequest("'inputs' must name each blob (one input ciphertext per blob)")
    names = [_name(x, "an input's name") for x in inputs]
    if len(set(names)) != len(names):
        raise BadRequest("input names must differ")
    if sum(k in header for k in ("graph", "computation", "model")) != 1:
        raise BadRequest("a job has one of 'graph', 'computation' or 'model'")
    if "model" in header:
        if names != ["x"]:
            raise BadRequest("a model takes one input named 'x' (the sample, encrypted with the plan)")
        return JobSpec(keys, names, None, [], None, _name(header["model"], "'model' (a model id)")), blobs
    if "graph" in header:
        nodes, outs = _graph(header["graph"])
        return JobSpec(keys, names, nodes, outs, None), blobs
    c = header["computation"]
    if not isinstance(c, dict) or c.get("name") not in COMPUTATIONS:
        raise BadRequest(f"'computation' must be an object whose 'name' is one of {', '.join(COMPUTATIONS)}")
    if names != ["x"]:
        raise BadRequest(f"the computation {c['name']!r} takes one input named 'x'")
    if c["name"] == "exp":
        if set(c) - {"name", "order"}:
            raise BadRequest("'exp' takes 'order' only")
        comp = {"name": "exp", "order": _int(c.get("order", 6), "'order'", 1, MAX_ORDER)}
    else:
        if set(c) - {"name", "degree"}:
            raise BadRequest("'polynomial' takes 'degree' only")
        comp = {"name": "polynomial", "degree": _int(c.get("degree", 31), "'degree'", 1, MAX_DEGREE)}
    return JobSpec(keys, names, None, [], comp), blobs


def job_request(
    keys: str,
    inputs: dict[str, bytes],
    graph: dict | None = None,
    computation: dict | None = None,
    model: str | None = None,
) -> bytes:
    header: dict = {"keys": keys, "inputs": list(inputs)}
    if graph is not None:
        header["graph"] = graph
    if computation is not None:
        header["computation"] = computation
    if model is not None:
        header["model"] = model
    return pack(header, list(inputs.values()))


def result_body(outputs: dict[str, bytes]) -> bytes:
    return pack({"outputs": list(outputs)}, list(outputs.values()))


def parse_result(body: bytes) -> dict[str, bytes]:
    header, blobs = unpack(body)
    names = header.get("outputs")
    if not isinstance(names, list) or len(names) != len(blobs) or not all(isinstance(n, str) for n in names):
        raise BadRequest("a result's 'outputs' must name each blob")
    return {n: bytes(b) for n, b in zip(names, blobs)}
