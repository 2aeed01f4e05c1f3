"""The encrypted-compute service (python -m kasoku serve) started for real on loopback, reached by ks.Client over
HTTP: results, tokens, bad input, a restart with jobs in flight and overload (docs/SERVING.md)."""

from __future__ import annotations

import concurrent.futures
import signal

import numpy as np
import pytest

import kasoku as ks

httpx = pytest.importorskip("httpx", reason="the service tests need httpx (make venv installs it)")
pytest.importorskip("fastapi", reason="the service tests need FastAPI and uvicorn (make venv installs them)")

from kasoku.service import wire  # noqa: E402
from kasoku.service.process import ServerProcess  # noqa: E402

# Small parameters (tests only): e^x to order 6 at level 7 in well under a second.
PARAMS = ks.Parameters(log_n=12, first_bits=60, scale_bits=40, levels=7, security=None)


def make_server(data, *args: str) -> ServerProcess:
    """A server of PARAMS (a parameters file in its data directory) with 2 threads."""
    data.mkdir(parents=True, exist_ok=True)
    pf = data / "params.bin"
    pf.write_bytes(PARAMS.to_bytes())
    return ServerProcess(data, "--params-file", str(pf), "--threads", "2", *args)


@pytest.fixture
def server(tmp_path):
    s = make_server(tmp_path / "srv", "--cost", "paper").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def alice_keys():
    ctx = ks.Context(PARAMS, threads=2)
    keys = ctx.keygen(rotations=[1])
    return ctx, keys


def exp_input(ctx, keys, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, 16)
    return x, ctx.encrypt(x, keys.public)


def test_jobs_compute_what_the_client_asked(server, alice_keys):
    ctx, keys = alice_keys
    with ks.Client.register(server.url, server.admin_token) as c:
        assert c.health()["status"] == "ok"
        assert c.parameters().to_bytes() == PARAMS.to_bytes()
        kid = c.register_keys(keys.evaluation())
        x, ct = exp_input(ctx, keys)
        job = c.submit({"x": ct}, keys=kid, computation="exp")
        got = ctx.decrypt(c.result(job, ctx)["exp"], keys.secret)[:16].real
        assert np.max(np.abs(got - np.exp(x))) < 3e-4  # the order-6 Maclaurin remainder
        assert c.status(job)["status"] == "done" and c.status(job)["runs"] == 1
        # a submission repeated with its Idempotency-Key (its answer was lost) is the same job, not a second one
        body = wire.job_request(kid, {"x": ct.to_bytes()}, computation={"name": "exp"})
        hdr = {"Authorization": f"Bearer {c.token}", "Idempotency-Key": "once"}
        first, again = (httpx.post(server.url + "/v1/jobs", content=body, headers=hdr).json()["job"] for _ in range(2))
        assert first == again != job
        c.result_bytes(first)
        # a graph of the client's: rotate, multiply, add a constant; the same as computing it here
        g = ks.sched.Graph()
        a = g.input("a", ct.level)
        g.output(g.add_plain(g.multiply(g.rotate(a, 1), a), 0.5), "y")
        out = c.run({"a": ct}, kid, ctx, graph=g)["y"]
        ev = ctx.evaluator(keys.evaluation())
        want = ks.sched.run(g, ctx, ev, {"a": ct}, threads=1, cost=ks.sched.CostModel.from_paper()).outputs[0]["y"]
        assert out.to_bytes() == want.to_bytes()
        m = c.metrics()
        assert m["completed"] == 3 and m["accepted"] == 3 and m["queue_length"] == 0 and m["latency_ms"]["count"] == 3
        c.delete(job)
        with pytest.raises(ks.ServiceError) as e:
            c.status(job)
        assert e.value.status == 404
    spec = httpx.get(server.url + "/openapi.json").json()
    assert {"/v1/jobs", "/v1/keys", "/v1/jobs/{jid}/result", "/health", "/metrics"} <= set(spec["paths"])


def test_the_openapi_file_in_docs_is_the_servers():
    import json
    import pathlib

    from pydantic import BaseModel

    from kasoku.service import app, schemas

    path = pathlib.Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
    committed, current = json.loads(path.read_text()), json.loads(json.dumps(app.openapi()))
    ours = [
        n for n, v in vars(schemas).items() if isinstance(v, type) and issubclass(v, BaseModel) and v is not BaseModel
    ]
    stale = "docs/openapi.json is stale: python -m kasoku serve --write-openapi docs/openapi.json"
    for part in ("info", "paths"):  # ours; the shared schemas (validation errors) are FastAPI's and follow its version
        assert committed[part] == current[part], stale
    assert committed["components"]["securitySchemes"] == current["components"]["securitySchemes"], stale
    for name in ours:  # every JSON body is described
        assert committed["components"]["schemas"][name] == current["components"]["schemas"][name], stale
    for route, path_item in current["paths"].items():  # no JSON answer without its schema; all but /health secured
        for method, op in path_item.items():
            assert (route == "/health") == ("security" not in op), (route, method)
            for code, r in op["responses"].items():
                assert r.get("content", {}).get("application/json", {}).get("schema", {"ok": 1}) != {}, (method, code)


def test_the_graph_schema_is_the_librarys():
    """One schema (ks.sched.op_schema, from the C++ graph): the client writes it, the service checks it, the library
    reads it back to the same graph; a field another operation has is refused."""
    from kasoku.service.client import graph_dict

    schema = ks.sched.op_schema()
    assert wire.OPS == tuple(schema) == ("input", "multiply", "square", "multiply_plain", "add", "add_plain", "rotate")
    g = ks.sched.Graph()
    a = g.input("a", 5)
    b = g.rotate(g.multiply_plain(g.square(a), 0.5 - 0.25j), -3)
    g.output(g.add_plain(g.add(g.multiply(a, a), b), 2.0), "y")
    nodes, outs = wire._graph(graph_dict(g))
    assert {n["op"] for n in nodes} == set(schema)
    back = ks.sched.Graph.from_nodes(nodes, outs)
    assert back.nodes == g.nodes and back.outputs == g.outputs
    with pytest.raises(wire.BadRequest, match=r"node 0 \(input\): unknown field\(s\) step"):
        wire._graph({"nodes": [{"op": "input", "name": "a", "level": 3, "step": 1}], "outputs": [[0, "y"]]})


def test_the_settings_come_from_the_environment(tmp_path, monkeypatch):
    """uvicorn --factory kasoku.service.app:from_env: Config from KASOKU_* variables; a missing or wrong one is
    named."""
    import warnings

    from kasoku.service import app

    monkeypatch.setenv("KASOKU_PARAMS", "T12")
    monkeypatch.setenv("KASOKU_COST", "paper")
    monkeypatch.setenv("KASOKU_THREADS", "1")
    monkeypatch.setenv("KASOKU_ADMIN_TOKEN", "admin-from-env")
    with pytest.raises(ks.ParameterError, match="KASOKU_DATA: Field required"):
        app.from_env()
    monkeypatch.setenv("KASOKU_DATA", str(tmp_path))
    monkeypatch.setenv("KASOKU_CAPACITY", "0")
    with pytest.raises(ks.ParameterError, match="KASOKU_CAPACITY"):
        app.from_env()
    monkeypatch.setenv("KASOKU_CAPACITY", "3")
    application = app.from_env()
    cfg = application.state.service.cfg
    assert (cfg.data, cfg.capacity, cfg.threads, cfg.params.log_n) == (tmp_path, 3, 1, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's TestClient on httpx
        from fastapi.testclient import TestClient
    with TestClient(application) as c:
        assert c.get("/health").json()["status"] == "ok"
        assert c.get("/metrics").status_code == 401
        made = c.post("/v1/clients", headers={"Authorization": "Bearer admin-from-env"})
        assert made.status_code == 201
        m = c.get("/metrics", headers={"Authorization": f"Bearer {made.json()['token']}"}).json()
        assert m["capacity"] == 3 and m["executor"] == "local" and m["threads"] == 1


def test_tokens_keep_clients_apart(server, alice_keys):
    ctx, keys = alice_keys
    alice = ks.Client.register(server.url, server.admin_token)
    bob = ks.Client.register(server.url, server.admin_token)
    kid = alice.register_keys(keys.evaluation())
    _, ct = exp_input(ctx, keys)
    job = alice.submit({"x": ct}, keys=kid, computation="exp")
    alice.result_bytes(job)
    for call in (
        lambda: bob.status(job),
        lambda: bob.result_bytes(job, timeout=0),
        lambda: bob.submit({"x": ct}, keys=kid, computation="exp"),
    ):
        with pytest.raises(ks.ServiceError) as e:  # another client's job and keys are invisible
            call()
        assert e.value.status == 404
    for headers in (
        {},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": f"Bearer {alice.token[:-1]}"},
        {"Authorization": alice.token},
    ):
        r = httpx.get(f"{server.url}/v1/jobs/{job}", headers=headers)
        assert r.status_code == 401 and "token" in r.json()["detail"]
    with pytest.raises(ks.ServiceError) as e:
        ks.Client.register(server.url, alice.token)  # a client's token is not the admin's
    assert e.value.status == 401
    # the store keeps tokens hashed: neither client's token is in it
    store = b"".join(f.read_bytes() for f in server.data.rglob("*") if f.is_file())
    assert alice.token.encode() not in store and bob.token.encode() not in store
    alice.close()
    bob.close()


def test_bad_input_gets_a_clear_4xx_and_the_server_goes_on(tmp_path, alice_keys):
    srv = make_server(tmp_path / "srv", "--cost", "paper", "--max-job-mb", "1").start()
    ctx, keys = alice_keys
    try:
        c = ks.Client.register(srv.url, srv.admin_token)
        kid = c.register_keys(keys.evaluation())
        x, ct = exp_input(ctx, keys)
        good = ct.to_bytes()

        def post(body: bytes):
            return httpx.post(srv.url + "/v1/jobs", content=body, headers={"Authorization": f"Bearer {c.token}"})

        def expect(status: int, body: bytes, words: str):
            r = post(body)
            assert r.status_code == status, r.text
            assert words in r.json()["detail"], r.json()["detail"]

        corrupt = bytearray(good)
        corrupt[len(corrupt) // 2] ^= 1
        expect(400, wire.job_request(kid, {"x": bytes(corrupt)}, computation={"name": "exp"}), "")
        other = ks.Context(ks.Parameters.named("T12"))
        okeys = other.keygen()
        expect(
            400,
            wire.job_request(kid, {"x": other.encrypt(x, okeys.public).to_bytes()}, computation={"name": "exp"}),
            "",
        )
        node = {
            "nodes": [{"op": "input", "name": "x", "level": 7}, {"op": "frobnicate", "inputs": [0]}],
            "outputs": [[1, "y"]],
        }
        expect(400, wire.job_request(kid, {"x": good}, graph=node), "'op' must be one of")
        dangling = {
            "nodes": [{"op": "input", "name": "x", "level": 7}, {"op": "square", "inputs": [5]}],
            "outputs": [[1, "y"]],
        }
        expect(400, wire.job_request(kid, {"x": good}, graph=dangling), "operand")
        # a graph is bounded in tasks (413) and in depth (422), and must be acyclic, before it runs
        x0 = {"op": "input", "name": "x", "level": 7}
        big = {"nodes": [x0] * (wire.MAX_NODES + 1), "outputs": [[0, "y"]]}
        expect(413, wire.job_request(kid, {"x": good}, graph=big), "at most")
        chain = [x0] + [{"op": "add", "inputs": [i, i]} for i in range(wire.MAX_DEPTH + 1)]
        expect(
            422, wire.job_request(kid, {"x": good}, graph={"nodes": chain, "outputs": [[len(chain) - 1, "y"]]}), "deep"
        )
        loop = {"nodes": [x0, {"op": "add", "inputs": [0, 2]}, {"op": "add", "inputs": [1, 0]}], "outputs": [[2, "y"]]}
        expect(400, wire.job_request(kid, {"x": good}, graph=loop), "cycle")
        low = {
            "nodes": [{"op": "input", "name": "x", "level": 3}, {"op": "square", "inputs": [0]}],
            "outputs": [[1, "y"]],
        }
        expect(422, wire.job_request(kid, {"x": good}, graph=low), "level")
        rot = {
            "nodes": [{"op": "input", "name": "x", "level": 7}, {"op": "rotate", "inputs": [0], "step": 5}],
            "outputs": [[1, "y"]],
        }
        expect(422, wire.job_request(kid, {"x": good}, graph=rot), "Galois key")
        expect(404, wire.job_request("k0000", {"x": good}, computation={"name": "exp"}), "unknown key set")
        expect(400, b"GET / HTTP/1.1", "envelope")
        expect(400, wire.MAGIC + b"\xff\xff\xff\x00", "header length")
        for path in ("/v1/jobs/99999999999999999999999", "/v1/jobs/0", "/v1/jobs/1/result?wait=-1"):
            r = httpx.get(srv.url + path, headers={"Authorization": f"Bearer {c.token}"})
            assert r.status_code == 422, (path, r.status_code)
        r = post(b"\0" * (2 << 20))
        assert r.status_code == 413 and "limit" in r.json()["detail"]
        r = httpx.post(srv.url + "/v1/keys", content=b"not keys", headers={"Authorization": f"Bearer {c.token}"})
        assert r.status_code == 400 and "cannot be read" in r.json()["detail"]
        # none of that was accepted, and the server still computes
        got = ctx.decrypt(c.run({"x": ct}, kid, ctx, computation="exp")["exp"], keys.secret)[:16].real
        assert np.max(np.abs(got - np.exp(x))) < 3e-4
        assert c.metrics()["accepted"] == 1
    finally:
        srv.stop()


def test_restart_with_jobs_in_flight_loses_none_and_runs_each_once(tmp_path, alice_keys):
    ctx, keys = alice_keys
    srv = make_server(tmp_path / "srv", "--cost", "paper", "--capacity", "100").start()
    c = ks.Client.register(srv.url, srv.admin_token)
    kid = c.register_keys(keys.evaluation())
    cts = [exp_input(ctx, keys, seed)[1] for seed in range(3)]
    ev = ctx.evaluator(keys.evaluation())
    g = ks.sched.bsgs_polynomial(degree=63, level=cts[0].level)  # ~0.1 s a job here: 24 of them outlast submitting
    want = [
        ks.sched.run(g, ctx, ev, {"x": ct}, threads=1, cost=ks.sched.CostModel.from_paper())
        .outputs[0]["poly"]
        .to_bytes()
        for ct in cts
    ]
    bodies = [ct.to_bytes() for ct in cts]
    jobs = [
        c.submit({"x": bodies[i % 3]}, keys=kid, computation={"name": "polynomial", "degree": 63}) for i in range(24)
    ]
    srv.stop(signal.SIGKILL)  # jobs queued and running: the process dies without a word
    srv.start()
    c2 = ks.Client(srv.url, c.token)
    try:
        got = {job: c2.result_bytes(job)["poly"] for job in jobs}
        assert len(got) == len(set(jobs)) == 24
        for i, job in enumerate(jobs):
            assert got[job] == want[i % 3]  # bit for bit what the client would compute, whenever it ran
        reruns = [j for j in jobs if c2.status(j)["runs"] == 2]
        m = c2.metrics()
        assert len(reruns) == m["recovered_after_restart"] >= 1
        assert m["completed"] == m["recovered_after_restart"] and m["queue_length"] == 0  # each ended once
    finally:
        srv.stop()


def test_overload_answers_retry_later_and_loses_nothing(tmp_path, alice_keys):
    ctx, keys = alice_keys
    capacity = 4
    srv = make_server(tmp_path / "srv", "--cost", "paper", "--capacity", str(capacity)).start()
    try:
        c = ks.Client.register(srv.url, srv.admin_token)
        kid = c.register_keys(keys.evaluation())
        x, ct = exp_input(ctx, keys)
        body = ct.to_bytes()
        # e^x and, beside it, 96 rotations of x in a row (a second output): a job runs long enough that a burst of
        # submissions finds the queue full. With e^x alone the server could end each job before the next request
        # reached it, and no burst was refused in 2 of 6 tries (2 threads, Zen 5).
        graph = ks.sched.maclaurin_exp(order=6, level=ct.level)
        busy = next(i for i, n in enumerate(graph.nodes) if n["op"] == "input")
        for _ in range(96):
            busy = graph.rotate(busy, 1)
        graph.output(busy, "busy")
        offered = 2 * capacity
        accepted, refused, queue = [], 0, []
        # twice the capacity at once, again and again (until the server has refused some): the queue never holds
        # more than `capacity`
        for _ in range(10):
            if refused and len(queue) >= 3:
                break
            with concurrent.futures.ThreadPoolExecutor(offered) as pool:
                futs = [
                    pool.submit(
                        lambda: ks.Client(srv.url, c.token).submit({"x": body}, keys=kid, graph=graph, retry_for=0)
                    )
                    for _ in range(offered)
                ]
                for f in futs:
                    try:
                        accepted.append(f.result())
                    except ks.RetryLater as e:
                        assert e.retry_after > 0
                        refused += 1
            queue.append(c.metrics()["queue_length"])
        assert refused > 0 and len(accepted) >= capacity
        assert max(queue) <= capacity
        # a client that retries as told gets in
        accepted.append(c.submit({"x": body}, keys=kid, graph=graph, retry_for=120))
        outs = {j: c.result_bytes(j)["exp"] for j in accepted}
        assert len(outs) == len(accepted) == len(set(accepted))
        assert len(set(outs.values())) == 1  # the same job, the same bytes, every time
        got = ctx.decrypt(ks.Ciphertext.from_bytes(ctx, next(iter(outs.values()))), keys.secret)[:16].real
        assert np.max(np.abs(got - np.exp(x))) < 3e-4
        m = c.metrics()
        assert m["accepted"] == m["completed"] == len(accepted)
        assert m["rejected_busy"] >= refused  # the last submit's own tries count too
    finally:
        srv.stop()


def test_a_stored_model_runs_on_encrypted_samples_and_survives_a_restart(tmp_path, alice_keys):
    """kasoku.nn's client/server split through the service: the client stores its compiled plan (no key in it) and
    the evaluation keys made for its parameters, sends encrypted samples, and decrypts the logits; the server loads
    the plan without PyTorch and runs it as a job (durable like every job)."""
    torch = pytest.importorskip("torch", reason="compiling a model needs PyTorch (kasoku[nn])")
    import kasoku.nn as ksnn

    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), ksnn.Square(), torch.nn.Linear(8, 3)).eval()
    x = torch.randn(8, 1, 4, 4)
    plan = ksnn.compile(model, x[:1], calibration=x, threads=2)
    keys = plan.keygen()
    srv = make_server(tmp_path / "srv", "--cost", "paper").start()
    try:
        c = ks.Client.register(srv.url, srv.admin_token)
        rec = c.store_model(plan)
        mid = rec["model"]
        assert rec["galois_elements"] == plan.galois_elements() and rec["input_shape"] == [1, 4, 4]
        assert rec["outputs"] == 3 and "affine 16 -> 8" in rec["plan"]
        kid = c.register_model_keys(mid, keys.evaluation())
        cts = [plan.encrypt(xi) for xi in x[:3]]
        jobs = [c.submit({"x": ct}, keys=kid, model=mid) for ct in cts]
        srv.stop(signal.SIGKILL)  # model jobs are kept like the others
        srv.start()
        c = ks.Client(srv.url, c.token)
        for job, ct, xi in zip(jobs, cts, x):
            out = ks.Ciphertext.from_bytes(plan.ctx, c.result_bytes(job)["logits"])
            assert out.to_bytes() == plan.run(ct).to_bytes()  # bit for bit what the plan computes locally
            want = model(xi[None]).detach().numpy().reshape(-1)
            assert np.max(np.abs(plan.decrypt(out) - want)) < 2e-3
        got = plan.decrypt(c.infer(mid, cts[0], kid, plan.ctx))
        assert np.max(np.abs(got - model(x[:1]).detach().numpy().reshape(-1))) < 2e-3
        assert c.metrics()["completed"] >= 4

        def post(path: str, body: bytes, token: str = c.token):
            return httpx.post(srv.url + path, content=body, headers={"Authorization": f"Bearer {token}"})

        r = post("/v1/models", plan.to_bytes()[:-100])
        assert r.status_code == 400 and "damaged" in r.json()["detail"]
        few = plan.ctx.keygen(rotations=[1]).evaluation().to_bytes()
        r = post(f"/v1/models/{mid}/keys", few)
        assert r.status_code == 422 and "Galois keys" in r.json()["detail"]
        ctx, skeys = alice_keys  # a key set of the server's parameters is not one of the model's
        server_kid = c.register_keys(skeys.evaluation())
        r = post("/v1/jobs", wire.job_request(server_kid, {"x": cts[0].to_bytes()}, model=mid))
        assert r.status_code == 400, r.text
        low = plan.evaluator.drop_level(cts[0], 1).to_bytes()
        r = post("/v1/jobs", wire.job_request(kid, {"x": low}, model=mid))
        assert r.status_code == 422 and "level" in r.json()["detail"]
        r = post("/v1/jobs", wire.job_request(kid, {"x": cts[0].to_bytes(), "y": cts[0].to_bytes()}, model=mid))
        assert r.status_code == 400 and "one input named 'x'" in r.json()["detail"]
        bob = ks.Client.register(srv.url, srv.admin_token)
        for call in (lambda: bob.infer(mid, cts[0], kid), lambda: bob.register_model_keys(mid, keys.evaluation())):
            with pytest.raises(ks.ServiceError) as e:  # another client's model is invisible
                call()
            assert e.value.status == 404
        assert httpx.get(f"{srv.url}/v1/models/{mid}", headers={"Authorization": f"Bearer {c.token}"}).json() == rec
    finally:
        srv.stop()


# Multiparty parameters (tests only): 55-bit levels, so that the smudged decryption keeps its bits.
MP_PARAMS = ks.Parameters(
    log_n=12, first_bits=60, scale_bits=55, levels=2, special_bits=60, special_primes=2, security=None
)


def test_the_service_aggregates_multiparty_keys(tmp_path):
    """Three clients, one per party, make the collective keys through the server (it holds only public shares), a job
    runs under them, and the parties decrypt its result together."""
    from kasoku import multiparty as mp

    data = tmp_path / "mp"
    data.mkdir()
    (data / "params.bin").write_bytes(MP_PARAMS.to_bytes())
    srv = ServerProcess(data, "--params-file", str(data / "params.bin"), "--threads", "2", "--cost", "paper").start()
    try:
        clients = [ks.Client.register(srv.url, srv.admin_token) for _ in range(3)]
        sid, session = clients[0].open_multiparty(parties=3)
        ctx = clients[0].context()
        parties = []
        for i, c in enumerate(clients, 1):
            joined = c.join_multiparty(sid)
            assert joined.crs == session.crs and joined.key_id == session.key_id
            parties.append(mp.Party(ctx, joined, i))  # each in its own process in practice
        clients[0].send_share(sid, parties[0].public_key_share())
        with pytest.raises(ks.ServiceError, match="parties \\[2, 3\\]"):
            clients[0].multiparty_public_key(sid, ctx)
        for c, p in zip(clients[1:], parties[1:]):
            c.send_share(sid, p.public_key_share())
        with pytest.raises(ks.ServiceError, match="already sent"):
            clients[0].send_share(sid, parties[0].public_key_share())
        pk = clients[1].multiparty_public_key(sid, ctx)
        for c, p in zip(clients, parties):
            c.send_share(sid, p.relin_round1())
        r1 = clients[2].multiparty_relin_round1(sid, ctx)
        g = ctx.galois_element(1)
        for c, p in zip(clients, parties):
            c.send_share(sid, p.relin_round2(r1))
            c.send_share(sid, p.galois_key_share(g))
        status = clients[0].multiparty_status(sid)
        assert status["received"]["relin_round2"] == [1, 2, 3] and status["received"]["galois"] == {str(g): [1, 2, 3]}
        kid = clients[0].multiparty_keys(sid)
        x = np.random.default_rng(5).uniform(-1, 1, 64)
        ct = ctx.encrypt(x, pk)
        graph = ks.sched.Graph()
        a = graph.input("a", ct.level)
        graph.output(graph.multiply(graph.rotate(a, 1), a), "y")
        out = clients[0].run({"a": ct}, kid, ctx, graph=graph)["y"]
        z = mp.decrypt(ctx, session, out, [p.decryption_share(out) for p in parties]).real[:63]
        want = (np.roll(x, -1) * x)[:63]
        assert np.max(np.abs(z - want)) < 2.0 ** -(mp.decryption_precision_bits(ctx, session, out.scale, 3) - 4)
        # The server refuses to aggregate what would show it a result, and shares of another session.
        with pytest.raises(ks.ServiceError, match="key shares only"):
            clients[0].send_share(sid, parties[0].decryption_share(out))
        other = mp.Party(ctx, mp.Session(parties=3), 1)
        with pytest.raises(ks.ServiceError, match="another session"):
            clients[0].send_share(sid, other.public_key_share())
    finally:
        srv.stop()
