"""kasoku.service.ray_executor on a Ray cluster of several nodes on this machine (a head and two worker nodes, each its
own raylet): a 200-job stream gives the local executor's results bit for bit, and the service runs its jobs there
(docs/SERVING.md)."""

from __future__ import annotations

import numpy as np
import pytest

import kasoku as ks

ray = pytest.importorskip("ray", reason="the distributed tests need Ray (make venv installs it)")
from ray.cluster_utils import Cluster as RayTestCluster  # noqa: E402

from kasoku.service import ray_executor  # noqa: E402

PARAMS = ks.Parameters(log_n=12, first_bits=60, scale_bits=40, levels=7, security=None)


@pytest.fixture(scope="module")
def ray_cluster():
    c = RayTestCluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(2):
        c.add_node(num_cpus=1)
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    yield c
    ray.shutdown()
    c.shutdown()


def test_a_200_job_stream_on_three_nodes_matches_the_local_executor_bit_for_bit(ray_cluster):
    ctx = ks.Context(PARAMS, threads=1)
    keys = ctx.keygen()
    ev = ctx.evaluator(keys.evaluation())
    rng = np.random.default_rng(7)
    cts = [ctx.encrypt(rng.uniform(-1, 1, 8), keys.public) for _ in range(200)]
    g = ks.sched.maclaurin_exp(order=6, level=cts[0].level)
    cost = ks.sched.CostModel.from_paper()

    local = ks.sched.Executor(cost, threads=2)
    ids = {local.submit(g, ev, {"x": ct}): n for n, ct in enumerate(cts)}
    want: dict[int, bytes] = {}
    while len(want) < len(cts):
        for d in local.collect(timeout_s=10):
            assert d["error"] is None
            want[ids[d["id"]]] = d["outputs"]["exp"].to_bytes()
    local.close()

    cl = ray_executor.Cluster(ctx, cost=cost)
    assert cl.nodes == 3
    kid = cl.add_keys(keys.evaluation())
    got = {n: out["exp"].to_bytes() for n, out in cl.stream(g, ({"x": ct} for ct in cts), keys=kid, window=32)}
    assert sorted(got) == list(range(200))
    assert all(got[n] == want[n] for n in range(200))
    assert sum(1 for s in cl.submitted if s > 0) >= 2 and sum(cl.submitted) == 200
    x = ctx.decrypt(cts[0], keys.secret)[:8].real
    assert (
        np.max(np.abs(ctx.decrypt(cl.map(g, [{"x": cts[0]}], keys=kid)[0]["exp"], keys.secret)[:8].real - np.exp(x)))
        < 3e-4
    )
    with pytest.raises(ks.ParameterError, match="unknown key set"):
        cl.submit(g, {"x": cts[0]}, keys="k-none")
    bad = ks.sched.Graph()
    bad.output(bad.rotate(bad.input("x", cts[0].level), 3), "y")
    with pytest.raises(ks.ParameterError, match="Galois key"):
        cl.map(bad, [{"x": cts[0]}], keys=kid)
    cl.shutdown()


def test_the_service_runs_its_jobs_on_the_ray_cluster(ray_cluster, tmp_path):
    from test_service import make_server

    srv = make_server(
        tmp_path / "srv", "--cost", "paper", "--executor", "ray", "--ray-address", ray_cluster.address
    ).start()
    try:
        ctx = ks.Context(PARAMS, threads=1)
        keys = ctx.keygen()
        c = ks.Client.register(srv.url, srv.admin_token)
        kid = c.register_keys(keys.evaluation())
        xs = [np.linspace(-1, 1, 8) * s for s in (0.3, 0.6, 0.9)]
        jobs = [c.submit({"x": ctx.encrypt(x, keys.public)}, keys=kid, computation="exp") for x in xs]
        for job, x in zip(jobs, xs):
            got = ctx.decrypt(c.result(job, ctx)["exp"], keys.secret)[:8].real
            assert np.max(np.abs(got - np.exp(x))) < 3e-4
        m = c.metrics()
        assert m["executor"] == "ray" and m["nodes"] == 3 and m["completed"] == 3
    finally:
        srv.stop()
