"""Coverage-guided fuzzing (atheris) of the service's request and response bodies (kasoku.service.wire): job
envelopes, their headers and graphs, the input ciphertexts they carry (parsed as the server parses them), and stored
models (kasoku.nn.load, as POST /v1/models reads them). Anything but BadRequest or SerializationError for a bad body
is a finding. Run by scripts/fuzz.sh:
    python tests/fuzz/fuzz_service_bodies.py -runs=N CORPUS_DIR SEED_DIR
    python tests/fuzz/fuzz_service_bodies.py --seeds SEED_DIR      (writes valid bodies to start from)
"""

import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["kasoku"]):
    import kasoku as ks
    import kasoku.nn as ksnn
    from kasoku.service import wire

PARAMS = ks.Parameters(log_n=12, first_bits=60, scale_bits=40, levels=2, security=None)
CTX = ks.Context(PARAMS, threads=1)


def one_input(data: bytes) -> None:
    try:
        spec, blobs = wire.parse_job(data)
    except wire.BadRequest:
        pass
    else:
        if spec.nodes is not None:
            try:
                ks.sched.Graph.from_nodes(spec.nodes, spec.outputs)
            except (ks.ParameterError, ks.LevelError):
                pass
        for b in blobs:
            try:
                ks.Ciphertext.from_bytes(CTX, bytes(b))
            except ks.SerializationError:
                pass
    try:
        wire.parse_result(data)
    except wire.BadRequest:
        pass
    try:
        ksnn.load(data, threads=1)
    except ks.SerializationError:
        pass


def seeds(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keys = CTX.keygen()
    ct = CTX.encrypt([0.5, -0.25], keys.public).to_bytes()
    g = ks.sched.Graph()
    x = g.input("x", 2)
    g.output(g.add_plain(g.multiply_plain(g.rotate(g.square(x), 1), 0.5), 1.0), "y")
    from kasoku.service.client import graph_dict

    bodies = {
        "exp": wire.job_request("k1", {"x": ct}, computation={"name": "exp", "order": 6}),
        "poly": wire.job_request("k1", {"x": ct}, computation={"name": "polynomial", "degree": 7}),
        "graph": wire.job_request("k1", {"x": ct}, graph=graph_dict(g)),
        "result": wire.result_body({"y": ct}),
    }
    try:  # a model (compiling one needs PyTorch; the loader does not)
        import torch

        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(4, 2), ksnn.Square(), torch.nn.Linear(2, 2)).eval()
        x = torch.randn(4, 4)
        bodies["model"] = ksnn.compile(net, x[:1], calibration=x, threads=1).to_bytes()
    except ImportError:
        pass
    for name, b in bodies.items():
        (out / name).write_bytes(b)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--seeds":
        seeds(Path(sys.argv[2]))
    else:
        atheris.Setup(sys.argv, one_input)
        atheris.Fuzz()
