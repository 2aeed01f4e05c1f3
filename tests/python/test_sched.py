"""ks.sched: graphs, cost models, policies, the simulator and the real executor (Suzuki, Ishimaki and Yamana)."""

import json

import numpy as np
import pytest

import kasoku as ks
from kasoku import sched


def test_graph_builders_and_levels():
    g = sched.Graph()
    x = g.input("x", level=7)
    x2 = g.square(x)
    x3 = g.multiply(x2, x)
    t = g.multiply_plain(x3, 1 / 6)
    y = g.add(x, t)
    g.output(y)
    assert [n["level"] for n in g.nodes] == [7, 6, 5, 4, 4]
    assert g.task_nq(x3) == 7 and g.task_nq(y) == 5
    assert g.aligns(x3) and g.aligns(y) and not g.aligns(x2) and not g.aligns(t)
    assert g.outputs == [(y, "out0")]
    with pytest.raises(ks.LevelError):
        h = sched.Graph()
        h.square(h.square(h.input("x", 1)))


def test_graph_from_nodes_rejects_a_cycle():
    nodes = [{"op": "input", "name": "x", "level": 3}, {"op": "square", "inputs": [2]}, {"op": "add", "inputs": [1, 0]}]
    with pytest.raises(ks.ParameterError, match="cycle"):
        sched.Graph.from_nodes(nodes, [(2, "y")])
    g = sched.maclaurin_exp()
    again = sched.Graph.from_nodes(g.nodes, g.outputs)
    assert again.nodes == g.nodes
    with pytest.raises(ks.ParameterError, match="unknown operation"):
        sched.Graph.from_nodes([{"op": "divide"}])


def test_cost_model_paper_save_load(tmp_path):
    cm = sched.CostModel.from_paper()
    assert cm.time_ms("multiply", 8, 1) == 55 + 349 + 162
    assert cm.time_ms("square", 8, 8) == pytest.approx(39 / 8 + 47 + 35)
    p = tmp_path / "cm.json"
    cm.save(str(p))
    back = sched.CostModel.load(str(p))
    assert back.time_ms("rotate", 5, 3) == cm.time_ms("rotate", 5, 3)
    d = cm.to_dict()
    d["overhead_ms"] = 1.5
    assert sched.CostModel.from_dict(d).overhead_ms == 1.5
    assert "align" not in d and cm.align_ms(8) == 0  # the source's ModDrop: no scale fix, folded into the task
    d["align"] = {"nq_min": 2, "ms": [[4.0, 2.0], [6.0, 3.0]]}
    aligned = sched.CostModel.from_dict(d)
    assert aligned.align_ms(3, 1) == 6 and aligned.align_ms(3, 8) == 3
    assert sched.CostModel.from_dict(aligned.to_dict()).align_ms(2, 2) == 2
    assert cm.job_slowdown == 0 and sched.CostModel.from_dict(cm.with_job_slowdown(0.01).to_dict()).job_slowdown == 0.01
    with pytest.raises(ks.ParameterError):
        cm.with_job_slowdown(float("nan"))
    d["ops"]["add"]["ms"] = [[-1.0]]
    with pytest.raises(ks.SerializationError):
        sched.CostModel.from_dict(d)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ks.SerializationError):
        sched.CostModel.load(str(tmp_path / "bad.json"))


def test_median_model_is_entrywise():
    """median_model: each time, alignment entry, load factor and overhead is the median of the models'; models of other
    shapes or machines are refused."""
    cm = sched.CostModel.from_paper()
    d = cm.to_dict()
    d["overhead_ms"] = 0.5
    models = [sched.CostModel.from_dict(d).scaled(f) for f in (0.9, 1.0, 1.3)]
    m = sched.median_model(models)
    for op, nq, t in (("multiply", 8, 1), ("rotate", 5, 3), ("add_plain", 2, 12)):
        assert m.time_ms(op, nq, t) == pytest.approx(cm.time_ms(op, nq, t))
    assert m.overhead_ms == pytest.approx(0.5)
    loads = []
    for f in (1.0, 1.2, 5.0):  # one load factor changed per model: the median takes the middle one
        e = cm.to_dict()
        e["load"]["rotate"][0][1][1][1] *= f
        loads.append(sched.CostModel.from_dict(e))
    assert sched.median_model(loads).load_factor("rotate", 4, 1) == pytest.approx(1.2 * cm.load_factor("rotate", 4, 1))
    assert sched.median_model([cm]).to_json() == cm.to_json()
    with pytest.raises(ks.ParameterError, match="no cost models"):
        sched.median_model([])
    short = cm.to_dict()
    short["ops"]["add"]["ms"] = short["ops"]["add"]["ms"][:3]
    with pytest.raises(ks.ParameterError, match="shape"):
        sched.median_model([cm, sched.CostModel.from_dict(short)])
    other = cm.to_dict()
    other["machine"] = "another machine"
    with pytest.raises(ks.ParameterError, match="machine"):
        sched.median_model([cm, sched.CostModel.from_dict(other)])


def test_poisson_is_seeded():
    a, b = sched.poisson(mean_ms=80, jobs=5000, seed=1), sched.poisson(mean_ms=80, jobs=5000, seed=1)
    assert isinstance(a, np.ndarray) and np.array_equal(a, b)
    assert np.all(np.diff(a) >= 0)
    assert a[-1] / a.size == pytest.approx(80, rel=0.05)


def test_policies_on_constructed_states():
    cm = sched.CostModel.from_paper()
    d = sched.decide_threads
    assert d("fixed-half", cm, 126, 0, "multiply", 8) == 4
    # The source's four rules, two other ready products (r = 2, n_r = 4).
    others = [("square", 8), ("multiply", 7)]
    assert [d("dynamic", cm, 126, n_c, "multiply", 8, others) for n_c in (100, 115, 121, 123, 126)] == [8, 4, 2, 1, 0]
    assert d("kasoku", cm, 126, 0, "multiply", 8) == 8
    # a backlog is charged the thread-milliseconds: 2 threads with 40 jobs in the system, 1 with 400
    assert d("kasoku", cm, 126, 20, "multiply", 8, running_tasks=20, jobs_in_system=40) == 2
    assert d("kasoku", cm, 126, 20, "multiply", 8, running_tasks=20, jobs_in_system=400) == 1
    with pytest.raises(ks.ParameterError, match="policy"):
        d("greedy", cm, 126, 0, "multiply", 8)


def test_simulate_paper_experiment_short():
    g, cm = sched.maclaurin_exp(), sched.CostModel.from_paper()
    arr = sched.poisson(mean_ms=60, jobs=600, seed=2)
    res = {p: sched.simulate(g, cm, threads=126, policy=p, arrivals=arr, window=(101, 500)) for p in sched.POLICIES}
    r = res["kasoku"]
    assert r.latencies_ms.shape == (400,) and r.window == (101, 500)
    assert r.p50_ms <= r.p95_ms <= r.p99_ms
    assert r.p95_ms == pytest.approx(np.percentile(r.latencies_ms, 95))
    # Overloaded (D = 60): ours beats the source's four policies on makespan and p95.
    assert r.makespan_ms < min(res[p].makespan_ms for p in sched.POLICIES if p != "kasoku")
    assert r.p95_ms < min(res[p].p95_ms for p in sched.POLICIES if p != "kasoku")
    json.dumps(r.to_dict())
    # One job alone on one thread: in flight for its whole span.
    one = sched.simulate(g, cm, threads=1, policy="fixed-1", arrivals=[0.0])
    assert one.mean_jobs_in_flight == pytest.approx(1.0) and one.mean_busy_threads == pytest.approx(1.0)
    with pytest.raises(ks.ParameterError, match="window"):
        sched.simulate(g, cm, threads=126, arrivals=arr, window=(0, 700))


@pytest.fixture(scope="module")
def small():
    params = ks.Parameters(log_n=11, first_bits=60, scale_bits=40, levels=5, security=None)
    ctx = ks.Context(params)
    keys = ctx.keygen()
    ev = ctx.evaluator(keys.evaluation())
    x = np.random.default_rng(3).uniform(-1, 1, ctx.slots)
    return ctx, keys, ev, x, ctx.encrypt(x, keys.public)


def test_run_concurrent_jobs_decrypt_to_exp(small):
    ctx, keys, ev, x, ct = small
    g = sched.maclaurin_exp(order=6, level=5)
    arr = [0, 0, 0, 2, 2, 4]
    for pol in ("dynamic", "kasoku"):
        r = sched.run(g, ctx, ev, {"x": ct}, threads=2, policy=pol, arrivals=arr, keep_outputs=6)
        assert len(r.outputs) == 6 and r.executor == "real"
        for out in r.outputs:
            got = ctx.decrypt(out["exp"], keys.secret).real
            assert np.max(np.abs(got - np.exp(x))) < 3e-4  # Maclaurin remainder 2.3e-4 at x = 1
        assert np.all(r.finish_ms >= r.arrival_ms)


def test_run_bsgs_polynomial_decrypts_to_the_polynomial(small):
    ctx, keys, ev, x, ct = small
    g = sched.bsgs_polynomial(degree=7, level=5)  # sum_j x^j / (j + 1): baby steps x..x^3, giant x^4
    assert [n["name"] for n in g.nodes if n["op"] == "input"] == ["x"] and g.outputs[0][1] == "poly"
    r = sched.run(g, ctx, ev, {"x": ct}, threads=2, policy="kasoku", arrivals=[0, 0, 1], keep_outputs=3)
    want = sum(x**j / (j + 1) for j in range(8))
    for out in r.outputs:
        assert np.max(np.abs(ctx.decrypt(out["poly"], keys.secret).real - want)) < 1e-4
    with pytest.raises(ks.LevelError):
        sched.bsgs_polynomial(degree=31, level=5)


def test_more_graphs_in_simulation_and_cli(tmp_path, capsys):
    from kasoku.__main__ import main

    cm = sched.CostModel.from_paper()
    for g in (sched.matmul_like(d=3), sched.random_dag(tasks=20, seed=4), sched.bsgs_polynomial(15)):
        r = sched.simulate(g, cm, threads=126, policy="kasoku", arrivals=sched.poisson(100, 50, 1))
        assert np.all(r.finish_ms > r.arrival_ms)
    assert sched.random_dag(tasks=20, seed=4).nodes == sched.random_dag(tasks=20, seed=4).nodes
    table = tmp_path / "t.md"
    assert (
        main(
            [
                "schedule",
                "--D",
                "120",
                "--jobs",
                "100",
                "--window",
                "11,90",
                "--graph",
                "poly:15,matmul:3@4",
                "--table",
                str(table),
            ]
        )
        == 0
    )
    rows = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert {r["graph"] for r in rows} == {"poly:15", "matmul:3@4"} and len(rows) == 2 * len(sched.POLICIES)
    text = table.read_text()
    assert "Graph `matmul:3@4`" in text and "| `poly:15` |" in text and "kasoku vs best of the others" in text
    assert main(["schedule", "--graph", "poly:x"]) == 2
    assert "must be integers" in capsys.readouterr().err
    assert main(["schedule", "--graph", "cube"]) == 2


def test_run_rejects_a_wrong_level_and_missing_keys(small):
    ctx, keys, ev, x, ct = small
    with pytest.raises(ks.LevelError, match="level"):
        sched.run(sched.maclaurin_exp(level=4), ctx, ev, {"x": ct}, threads=2, cost=sched.CostModel.from_paper())
    g = sched.Graph()
    x5 = g.input("x", 5)
    g.output(g.add(g.rotate(x5, 3), g.rotate(g.rotate(x5, -2), 3)))
    assert g.rotation_steps() == [-2, 3]
    with pytest.raises(ks.MissingKeyError, match=r"rotates by -2, 3 slot\(s\) without their Galois keys"):
        sched.run(g, ctx, ev, {"x": ct}, threads=2, cost=sched.CostModel.from_paper())


@pytest.mark.parametrize("name", ["matmul", "random"])
def test_graphs_with_rotations_run_for_real_with_their_keys(small, name):
    """Every graph runs on the real executor once the keys of its rotation steps are made: the outputs of the
    matrix-product and random graphs equal a plain evaluation of the same nodes on the decrypted inputs."""
    ctx, _, _, x, _ = small
    g = sched.matmul_like(d=3, level=5) if name == "matmul" else sched.random_dag(tasks=24, seed=2, level=5)
    assert g.rotation_steps()  # both rotate
    keys = ctx.keygen(rotations=g.rotation_steps())
    ev, ct = ctx.evaluator(keys.evaluation()), ctx.encrypt(x, keys.public)
    inputs = {n["name"]: ct for n in g.nodes if n["op"] == "input"}
    r = sched.run(g, ctx, ev, inputs, threads=2, policy="kasoku", arrivals=[0, 0], keep_outputs=2)
    # the same graph in the clear: slot vectors through the same nodes
    vals: list = []
    for n in g.nodes:
        a = [vals[i] for i in n["inputs"]]
        op = n["op"]
        vals.append(
            x
            if op == "input"
            else a[0] * a[1]
            if op == "multiply"
            else a[0] * a[0]
            if op == "square"
            else a[0] * n["constant"]
            if op == "multiply_plain"
            else a[0] + a[1]
            if op == "add"
            else a[0] + n["constant"]
            if op == "add_plain"
            else np.roll(a[0], -n["step"])
        )
    for out in r.outputs:
        for node, oname in g.outputs:
            got = ctx.decrypt(out[oname], keys.secret)
            assert np.max(np.abs(got - vals[node])) < 1e-3 * max(1.0, np.max(np.abs(vals[node])))


def test_cli_schedule_sim(tmp_path, capsys):
    from kasoku.__main__ import main

    table, plot = tmp_path / "t.md", tmp_path / "p.png"
    assert (
        main(
            [
                "schedule",
                "--D",
                "70,120",
                "--jobs",
                "300",
                "--window",
                "51,250",
                "--table",
                str(table),
                "--plot",
                str(plot),
            ]
        )
        == 0
    )
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2 * len(sched.POLICIES)
    assert "source's Table 6" in table.read_text() and plot.stat().st_size > 10000


def test_cli_schedule_cost_scale(capsys):
    """--cost-scale F: the what-if of a model F times off; each line says so, and a stream's p95 moves with it."""
    from kasoku.__main__ import main

    base = ["schedule", "--D", "60", "--jobs", "200", "--window", "21,180", "--policy", "fixed-1", "--threads", "8"]
    assert main(base) == 0
    (plain,) = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert main([*base, "--cost-scale", "1.1"]) == 0
    (slow,) = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert "cost_scale" not in plain and slow["cost_scale"] == 1.1
    assert slow["p95_ms"] > 1.05 * plain["p95_ms"] and slow["makespan_ms"] > plain["makespan_ms"]
    assert main([*base, "--cost-scale", "0"]) != 0
    assert "scale factor" in capsys.readouterr().err


def test_cli_schedule_policy_list(tmp_path, capsys):
    from kasoku.__main__ import main

    assert main(["schedule", "--D", "120", "--jobs", "100", "--window", "11,90", "--policy", "fixed-1,kasoku"]) == 0
    lines = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert [r["policy"] for r in lines] == ["fixed-1", "kasoku"]
    # a policy listed twice (an A/A pass) runs twice and is one row of the table
    table = tmp_path / "t.md"
    assert (
        main(
            [
                "schedule",
                "--D",
                "120",
                "--jobs",
                "100",
                "--window",
                "11,90",
                "--policy",
                "fixed-1,kasoku,fixed-1",
                "--table",
                str(table),
            ]
        )
        == 0
    )
    assert [json.loads(s)["policy"] for s in capsys.readouterr().out.splitlines()] == ["fixed-1", "kasoku", "fixed-1"]
    assert table.read_text().count("| fixed-1 |") == 2  # one row in each of the two tables
    assert main(["schedule", "--policy", "fixed-1,fastest"]) == 2
    assert "unknown policy fastest" in capsys.readouterr().err
    # extending a pass: seeds 5 and 6, each starting the policies where the rotation of seeds 1..6 would
    assert (
        main(
            [
                "schedule",
                "--D",
                "120",
                "--jobs",
                "100",
                "--window",
                "11,90",
                "--policy",
                "fixed-1,kasoku",
                "--seeds",
                "2",
                "--first-seed",
                "5",
            ]
        )
        == 0
    )
    got = [(r["seed"], r["policy"]) for r in map(json.loads, capsys.readouterr().out.splitlines())]
    assert got == [(5, "fixed-1"), (5, "kasoku"), (6, "kasoku"), (6, "fixed-1")]
    # one seed: each stream (graph, D) starts at the next policy, so that none always runs first
    assert (
        main(
            [
                "schedule",
                "--D",
                "120,150,200",
                "--graph",
                "exp,poly:3",
                "--jobs",
                "20",
                "--window",
                "3,18",
                "--policy",
                "fixed-1,kasoku,dynamic",
            ]
        )
        == 0
    )
    got = [(r["graph"], r["D_ms"], r["policy"]) for r in map(json.loads, capsys.readouterr().out.splitlines())]
    firsts = [got[i][2] for i in range(0, len(got), 3)]
    assert firsts == ["fixed-1", "kasoku", "dynamic", "fixed-1", "kasoku", "dynamic"]
    assert all(sorted(p for _, _, p in got[i : i + 3]) == ["dynamic", "fixed-1", "kasoku"] for i in range(0, 18, 3))
    assert main(["schedule", "--seeds", "2", "--first-seed", "0"]) == 2
    assert "must be >= 1, got 2 and 0" in capsys.readouterr().err


def test_cli_compare_pairs_runs_of_one_stream(tmp_path, capsys):
    from kasoku.cli import schedule_cli
    from kasoku.__main__ import main

    def row(d, seed, pol, mk, p95):
        return {"D_ms": d, "seed": seed, "policy": pol, "makespan_ms": mk, "p95_ms": p95}

    rows = [
        row(60, 1, "fixed-1", 100, 10),
        row(60, 1, "kasoku", 110, 8),
        row(60, 1, "fixed-1", 121, 10),
        row(60, 2, "kasoku", 90, 5),
        row(60, 2, "fixed-1", 100, 5),
        row(60, 2, "fixed-1", 100, 5),
        row(80, 1, "fixed-1", 50, 4),
        row(80, 1, "dynamic", 60, 2),
    ]
    res = schedule_cli.paired(rows, "fixed-1", "makespan_ms")
    # the baseline's reference is the geometric mean of its runs: sqrt(100 * 121) = 110
    assert res["kasoku"][60] == pytest.approx([0.0, np.log(0.9)])
    assert res["fixed-1 (A/A)"][60] == pytest.approx([np.log(1.21), 0.0])
    assert 80 not in res["fixed-1 (A/A)"] and res["dynamic"][80] == pytest.approx([np.log(1.2)])
    assert schedule_cli.paired(rows, "fixed-1", "p95_ms")["dynamic"][80] == pytest.approx([np.log(0.5)])
    # streams of two graphs at one D and seed pair within their graph, not across
    two = [dict(r, graph=g, makespan_ms=r["makespan_ms"] * f) for g, f in (("exp", 1), ("matmul:3", 7)) for r in rows]
    both = schedule_cli.paired(two, "fixed-1", "makespan_ms")
    assert both["kasoku"][60] == pytest.approx([0.0, np.log(0.9)] * 2)
    assert both["fixed-1 (A/A)"][60] == pytest.approx([np.log(1.21), 0.0] * 2)

    path, plot = tmp_path / "runs.jsonl", tmp_path / "aa.png"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["schedule", "--compare", str(path), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "| fixed-1 (A/A) | +10.0 (+21 / +0) |" in out and "| dynamic |  | +20.0 (+20) |" in out
    assert plot.stat().st_size > 10000
    assert main(["schedule", "--compare", str(path), "--baseline", "fixed-half"]) == 2
    assert "no runs of the baseline policy 'fixed-half'" in capsys.readouterr().err
    assert main(["schedule", "--compare", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read the runs" in capsys.readouterr().err
    path.write_text('{"D_ms": 60, "policy": "fixed-1"}\n')
    assert main(["schedule", "--compare", str(path)]) == 2
    assert "line 1: not a run of `schedule`" in capsys.readouterr().err


def test_cli_compare_with_the_simulated_runs(tmp_path, capsys):
    """--compare REAL --simulated SIM: each real run's p95 against the simulator's of its stream and policy, the counts
    within 10, 15 and 20 %, and the spread of the repeated (A/A) runs."""
    from kasoku.__main__ import main

    def row(g, d, pol, p95):
        return {"graph": g, "D_ms": d, "seed": 1, "policy": pol, "makespan_ms": 1000.0, "p95_ms": p95}

    real = [
        row("exp", 100, "dynamic", 100.0),
        row("exp", 100, "kasoku", 200.0),
        row("exp", 100, "dynamic", 125.0),
        row("exp", 150, "dynamic", 80.0),
        row("exp", 150, "kasoku", 50.0),
    ]
    sim = [row("exp", 100, "dynamic", 110.0), row("exp", 100, "kasoku", 170.0), row("exp", 150, "dynamic", 100.0)]
    rp, sp = tmp_path / "real.jsonl", tmp_path / "sim.jsonl"
    rp.write_text("".join(json.dumps(r) + "\n" for r in real))
    sp.write_text("".join(json.dumps(r) + "\n" for r in sim))
    assert main(["schedule", "--compare", str(rp), "--baseline", "dynamic", "--simulated", str(sp)]) == 0
    out = capsys.readouterr().out
    # 110/100 = 1.10 (within 10 %), 110/125 = 0.88, 170/200 = 0.85, 100/80 = 1.25; kasoku at D = 150 not simulated
    assert "| exp | 100 | 1 | 100 / 125, 1.10 / 0.88 | 200, 0.85 |" in out
    assert "| exp | 150 | 1 | 80, 1.25 | 50, not simulated |" in out
    assert "All 4 runs: 1 within 10 %, 3 within 15 %, 3 within 20 % (simulated / real 0.85-1.25)." in out
    assert "- dynamic, 3 runs: 1 within 10 %, 2 within 15 %, 2 within 20 %." in out
    assert "real p95 apart by 25.0 % (median), up to 25.0 %." in out
    assert "1 real runs have no simulated run" in out
    assert main(["schedule", "--simulated", str(sp)]) == 2
    assert "--simulated goes with --compare" in capsys.readouterr().err
    sp.write_text(json.dumps(row("poly:15", 100, "dynamic", 1.0)) + "\n")
    assert main(["schedule", "--compare", str(rp), "--baseline", "dynamic", "--simulated", str(sp)]) == 2
    assert "no real run has a simulated run" in capsys.readouterr().err


def test_cli_trace_and_its_report(tmp_path, capsys):
    """--trace writes every task of every run; --trace-report sets measured against expected times per task kind, and
    of two traces of the same streams names the first task whose start differs."""
    from kasoku.__main__ import main

    trace, shifted = tmp_path / "trace.jsonl", tmp_path / "shifted.jsonl"
    assert (
        main(
            [
                "schedule",
                "--D",
                "70",
                "--jobs",
                "40",
                "--window",
                "11,30",
                "--policy",
                "dynamic,kasoku",
                "--trace",
                str(trace),
            ]
        )
        == 0
    )
    capsys.readouterr()
    runs = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["policy"] for r in runs] == ["dynamic", "kasoku"]
    g = ks.sched.maclaurin_exp(6, 7)
    per_job = sum(n["op"] != "input" for n in g.nodes)
    for r in runs:
        assert r["columns"][:3] == ["job", "node", "op"] and len(r["tasks"]) == 40 * per_job
        starts = [t[6] for t in r["tasks"]]
        assert starts == sorted(starts) and all(t[5] <= t[6] <= t[7] for t in r["tasks"])
    # the same simulated streams agree with themselves; a copy with one task started late diverges there
    runs[0]["tasks"][5][6] += 50.0
    shifted.write_text("\n".join(json.dumps(r) for r in runs) + "\n")
    assert main(["schedule", "--trace-report", str(shifted), str(trace)]) == 0
    report = capsys.readouterr().out
    assert "| multiply | 1 |" in report or "| square | 1 |" in report
    job, node = runs[0]["tasks"][5][:2]
    assert f"| exp, 70.0, 1, dynamic | job {job} node {node} " in report
    assert "| exp, 70.0, 1, kasoku | none" in report
    (tmp_path / "bad.jsonl").write_text('{"x": 1}\n')
    assert main(["schedule", "--trace-report", str(tmp_path / "bad.jsonl")]) != 0
    assert "not a trace of `schedule --trace`" in capsys.readouterr().err


def test_cli_real_executor_makes_the_keys_of_the_graphs_rotations(capsys):
    """python -m kasoku schedule --executor real runs graphs that rotate: it makes their Galois keys."""
    from kasoku.__main__ import main

    args = ["schedule", "--executor", "real", "--graph", "matmul:3,random:24:2", "--cost", "paper", "--D", "50"]
    assert main([*args, "--jobs", "2", "--window", "1,2", "--policy", "kasoku", "--threads", "2"]) == 0
    rows = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert [r["graph"] for r in rows] == ["matmul:3", "random:24:2"] and all(r["executor"] == "real" for r in rows)


def test_cli_remeasure_takes_the_median_of_the_measurements(tmp_path, capsys):
    """--remeasure: the cost model measured again after each stream, the next streams and --save-cost on the median of
    the measurements so far; only with --executor real --cost measure."""
    from kasoku.__main__ import main

    saved = tmp_path / "cost.json"
    args = ["schedule", "--executor", "real", "--params", "T12", "--graph", "exp:2", "--D", "50,60", "--jobs", "2"]
    args += ["--window", "1,2", "--policy", "fixed-1", "--threads", "2", "--reps", "1", "--save-cost", str(saved)]
    assert main([*args, "--remeasure"]) == 0
    rows = [json.loads(s) for s in capsys.readouterr().out.splitlines()]
    assert [r["cost_measurements"] for r in rows] == [1, 2]
    assert all(0 <= r["cpu_steal_pct"] <= 100 for r in rows)  # this Linux's /proc/stat
    assert sched.CostModel.load(str(saved)).name == "measured T12"
    assert main([*args[:2], "sim", *args[3:], "--remeasure"]) == 2
    assert "--remeasure goes with --executor real --cost measure" in capsys.readouterr().err


def test_bench_sched_model_noise_spreads(monkeypatch):
    """bench/sched_model_noise.py: each table entry's spread over the models, and its summary by kind."""
    import importlib.util
    import pathlib

    bench = pathlib.Path(__file__).resolve().parents[2] / "bench"
    monkeypatch.syspath_prepend(str(bench))
    spec = importlib.util.spec_from_file_location("sched_model_noise", bench / "sched_model_noise.py")
    noise = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noise)

    def model(mul, add):
        return {"ops": {"multiply": {"nq_min": 2, "ms": [[mul, mul / 2]]}, "add": {"nq_min": 2, "ms": [[add, add]]}}}

    models = [model(10.0, 1.0), model(11.0, 1.5), model(10.5, 1.2)]
    s = noise.spreads(models)
    assert [(k, nq, t) for _, k, nq, t in s] == [("multiply", 2, 1), ("multiply", 2, 2), ("add", 2, 1), ("add", 2, 2)]
    assert [round(x[0], 6) for x in s] == [0.1, 0.1, 0.5, 0.5]
    got = noise.summary(models)
    assert got["heavy_median_pct"] == got["heavy_max_pct"] == 10.0
    assert got["all_max_pct"] == 50.0 and got["all_median_pct"] == 30.0


def test_bench_sched_sim_vs_real_pools_studies(tmp_path, monkeypatch, capsys):
    """bench/sched_sim_vs_real.py: each study's real p95 against its own simulation, pooled per stream and policy."""
    import importlib.util
    import pathlib

    bench = pathlib.Path(__file__).resolve().parents[2] / "bench"
    monkeypatch.syspath_prepend(str(bench))
    spec = importlib.util.spec_from_file_location("sched_sim_vs_real", bench / "sched_sim_vs_real.py")
    pool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pool)

    def row(pol, p95, d=100):
        return {"graph": "exp", "D_ms": d, "seed": 1, "policy": pol, "makespan_ms": 1.0, "p95_ms": p95}

    # study 1: dynamic twice (A/A) against one simulation; study 2 has its own simulation; kasoku at D = 150 has none
    one = ([row("dynamic", 100.0), row("dynamic", 125.0), row("kasoku", 200.0, 150)], [row("dynamic", 110.0)])
    two = ([row("dynamic", 80.0)], [row("dynamic", 90.0)])
    res = pool.ratios([one, two])
    assert res == {("exp", 100, "dynamic"): pytest.approx([1.1, 0.88, 1.125])}
    text = pool.table(res)
    assert "| exp | 100 | dynamic | 3 | 1.029 | 0.88-1.12 |" in text  # (1.1 * 0.88 * 1.125) ** (1 / 3)
    assert "Geometric means within 10 %: 1 of 1; single runs within 10 %: 1 of 3." in text
    files = []
    for i, (real, sim) in enumerate((one, two)):
        for name, rows in (("real", real), ("sim", sim)):
            p = tmp_path / f"{name}{i}.jsonl"
            p.write_text("".join(json.dumps(r) + "\n" for r in rows))
            files.append(str(p))
    out = tmp_path / "t.md"
    assert pool.main([f"{files[0]}:{files[1]}", f"{files[2]}:{files[3]}", "--table", str(out)]) == 0
    assert out.read_text() == capsys.readouterr().out == text
    assert pool.main([files[0]]) == 2
    assert "give each study as REAL.jsonl:SIM.jsonl" in capsys.readouterr().err
    assert pool.main([f"{files[0]}:{files[0]}".replace("real0", "missing")]) == 2
    assert "cannot read the runs" in capsys.readouterr().err
