"""kasoku.nn: PyTorch models compiled for encrypted inference, every layer kind against PyTorch in the clear."""

import numpy as np
import pytest
import torch
import torch.nn as nn

import kasoku as ks
import kasoku.nn as ksnn
import kasoku.nn.probe
import kasoku.nn.runtime
from kasoku.nn.activations import sign_stages
from conftest import batchnorm as _bn, small_boot_params


def _layers():
    torch.manual_seed(1)
    return {
        # name: (model, input shape, asserted max error)
        "linear": (nn.Sequential(nn.Flatten(), nn.Linear(36, 12)), (1, 6, 6), 2e-3),
        "conv_stride_padding": (nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1)), (2, 8, 8), 2e-3),
        "conv_groups": (nn.Sequential(nn.Conv2d(4, 4, 3, padding=1, groups=2)), (4, 6, 6), 2e-3),
        "conv1d": (nn.Sequential(nn.Conv1d(2, 3, 3, padding=1)), (2, 16), 2e-3),
        "avgpool": (nn.Sequential(nn.AvgPool2d(2)), (2, 8, 8), 2e-3),
        "adaptive_avgpool": (nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()), (3, 6, 6), 2e-3),
        "batchnorm": (
            nn.Sequential(nn.Conv2d(1, 2, 3), _bn(2), nn.Flatten(), nn.Linear(32, 4), _bn(4, 1)),
            (1, 6, 6),
            2e-3,
        ),
        "square": (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), ksnn.Square()), (1, 4, 4), 2e-3),
        "polynomial": (
            nn.Sequential(nn.Flatten(), nn.Linear(16, 8), ksnn.Polynomial([0.1, 0.5, 0.25, -0.05])),
            (1, 4, 4),
            2e-3,
        ),
        "silu": (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.SiLU()), (1, 4, 4), 1e-2),
        "gelu": (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.GELU()), (1, 4, 4), 1e-2),
        # (a sigmoid last would run on the client: test_the_models_last_softmax_or_sigmoid_runs_on_the_client)
        "sigmoid": (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.Sigmoid(), nn.Linear(8, 4)), (1, 4, 4), 1e-2),
        "tanh": (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.Tanh()), (1, 4, 4), 1e-2),
    }


@pytest.mark.parametrize("name", list(_layers()))
def test_every_layer_kind_matches_pytorch(name):
    model, shape, tol = _layers()[name]
    model.eval()
    torch.manual_seed(2)
    calibration = torch.randn(64, *shape)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        # the plan's own arithmetic (folding, packing, the activations' polynomials), then encrypted
        assert np.max(np.abs(plan.forward_clear(x) - want)) < (1e-5 if tol < 1e-2 else 2e-3)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) < tol, name


def _runs_on_its_levels(plan, model, x, tol=1e-2):
    """The encrypted plan on x ends on its last level and within tol of the model."""
    out = plan.run(plan.encrypt(x))
    assert out.level == plan.ctx.user_level - plan.depth
    want = model(x[None]).detach().numpy().reshape(-1)
    assert np.max(np.abs(plan.decrypt(out) - want)) < tol


class EveryLayer(nn.Module):
    """Every layer kind kasoku.nn compiles, in one chain."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, stride=1, padding=1)
        self.bn1 = _bn(4)
        self.act1 = nn.SiLU()
        self.pool = nn.AvgPool2d(2)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, groups=2)
        self.fc1 = nn.Linear(64, 16)
        self.act3 = ksnn.Polynomial([0.0, 1.0, 0.1])
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool(self.act1(self.bn1(self.conv1(x))))
        x = self.conv2(x)
        x = x * x
        x = torch.flatten(x, 1)
        return self.fc2(self.act3(self.fc1(x)))


def test_a_model_of_every_layer_kind_runs_end_to_end_on_its_levels():
    torch.manual_seed(3)
    model = EveryLayer().eval()
    calibration = torch.randn(64, 2, 8, 8)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    kinds = [type(s).__name__ + ("" if isinstance(s, ksnn.Affine) else ":" + s.kind) for s in plan.steps]
    assert kinds == [
        "Affine",
        "Activation:chebyshev",
        "Affine",
        "Activation:square",
        "Affine",
        "Activation:power",
        "Affine",
    ]
    # BatchNorm folded into conv1, the pool and conv2 into one transform: one level each; x^2 one level
    assert plan.depth == sum(s.depth for s in plan.steps) == 4 + 1 + plan.steps[1].poly.depth + plan.steps[5].poly.depth
    assert plan.ctx.user_level >= plan.depth
    level = plan.ctx.user_level
    for s in plan.steps:
        assert s.level == level
        level -= s.depth
    text = repr(plan)
    assert "no bootstrap" in text and "Galois keys" in text and "conv1" in text and "Chebyshev" in text
    plan.keygen()
    _runs_on_its_levels(plan, model, calibration[5])


class ResidualConv(nn.Module):
    """A residual block (conv, x^2, conv, plus the block's input) and a concatenation of two branches."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 2, 3, padding=1)
        self.bn1 = _bn(2)
        self.conv2 = nn.Conv2d(2, 2, 3, padding=1)
        self.fc_a = nn.Linear(72, 6)
        self.fc_b = nn.Linear(72, 4)
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        h = self.bn1(self.conv1(x))
        h = self.conv2(h * h) + x  # the skip: x is the input, held since the activation's branch reads it too
        h = torch.flatten(torch.tanh(h), 1)
        return self.head(torch.cat([self.fc_a(h) ** 2, self.fc_b(h)], dim=1))


def test_residual_additions_and_concatenations_join_branches_in_one_transform():
    torch.manual_seed(8)
    model = ResidualConv().eval()
    calibration = torch.randn(64, 2, 6, 6)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    affine = [s for s in plan.steps if isinstance(s, ksnn.Affine)]
    # conv2 + skip: one transform of two inputs (the x^2 branch and the input); fc_b, cat and the head: one transform
    # of the two branches
    assert [len(s.inputs) for s in affine] == [1, 2, 1, 2]
    # a hybrid step reads every input by the hybrid rule: at most p_out diagonals each, whatever the input's layout
    # (read straight onto the output slots, the head's second input took 8 where p_out is 4)
    assert all(len(offs) <= s.p_out for s in affine if s.mode == "hybrid" for offs in s.offsets)
    joined = affine[1]
    assert joined.level == plan.steps[plan.steps.index(joined) - 1].level - 1  # the skip dropped to the branch's level
    assert plan.depth == 1 + 1 + 1 + plan.steps[3].poly.depth + 1 + 1 + 1
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        assert np.max(np.abs(plan.forward_clear(x) - want)) < 2e-3
    plan.keygen()
    _runs_on_its_levels(plan, model, calibration[2])


def test_the_server_runs_on_evaluation_keys_alone():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), ksnn.Square(), nn.Linear(4, 3)).eval()
    calibration = torch.randn(16, 1, 4, 4)
    client = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    keys = client.keygen()
    # the plan travels as bytes (no key in them, no PyTorch needed to load them): what the service stores
    server = ksnn.load(client.to_bytes(), threads=2)
    assert server.galois_elements() == client.galois_elements() and server.params.to_bytes() == client.params.to_bytes()
    (s_depth, s_steps), (c_depth, c_steps) = (repr(p).split("\n  depth ")[1].split("\n", 1) for p in (server, client))
    assert s_depth.endswith("loaded from bytes") and s_steps == c_steps
    with pytest.raises(ks.MissingKeyError, match="evaluation keys"):
        server.run(client.encrypt(calibration[0]))
    with pytest.raises(ks.MissingKeyError, match="keygen"):
        server.encrypt(calibration[0])
    # the server's context is its own: ciphertexts and keys travel as bytes, as through the service
    server.use(ks.EvaluationKeys.from_bytes(server.ctx, keys.evaluation().to_bytes()))
    ct = client.encrypt(calibration[0])
    out = server.run(ks.Ciphertext.from_bytes(server.ctx, ct.to_bytes()))
    got = client.decrypt(ks.Ciphertext.from_bytes(client.ctx, out.to_bytes()))
    want = model(calibration[:1]).detach().numpy().reshape(-1)
    assert np.max(np.abs(got - want)) < 2e-3
    assert out.to_bytes() == client.run(ct).to_bytes()  # the loaded plan computes what the compiled one does
    # the loaded weights are sparse (their sums in another order)
    np.testing.assert_allclose(server.forward_clear(calibration[0]), client.forward_clear(calibration[0]), rtol=1e-12)
    low = server.evaluator.drop_level(ks.Ciphertext.from_bytes(server.ctx, ct.to_bytes()), 0)
    with pytest.raises(ks.LevelError, match="reads its input at level"):
        server.run(low)


def test_keys_are_made_for_the_levels_the_plan_rotates_at():
    """plan.keygen makes each Galois key for the highest level the plan rotates by it (a transform's steps at its
    level, its rotate-and-sum one below, bootstrapping's at the top): smaller keys, the same results; key_bytes (in
    repr before any key is made) is the memory keygen's keys take; a key set made for lower levels is refused by the
    service's check and raises LevelError above them."""
    from kasoku.service.core.models import missing_keys

    torch.manual_seed(13)
    for model, params in (
        (
            nn.Sequential(
                nn.Flatten(), nn.Linear(16, 8), ksnn.Square(), nn.Linear(8, 8), ksnn.Square(), nn.Linear(8, 4)
            ),
            None,
        ),
        (nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)), small_boot_params(4)),
    ):
        model.eval()
        x = torch.randn(16, 1, 4, 4)
        plan = ksnn.compile(model, x[:1], calibration=x, params=params, threads=2, relu_eps=1 / 16)
        levels = plan.galois_levels()
        affine = [s for s in plan.steps if isinstance(s, ksnn.Affine)]
        assert any(lv < plan.ctx.max_level for lv in levels.values())
        for s in affine:
            for g in s.plans[0][2]:
                assert levels[g] >= s.level
        assert f"{plan.key_bytes() / 1e9:.2f} GB of evaluation keys" in repr(plan)
        keys = plan.keygen()
        ev = keys.evaluation()
        assert plan.key_bytes() == ev.nbytes
        assert {g: lv for g, lv in ev.galois_levels.items()} == levels
        assert missing_keys(plan, ev) is None
        got = plan.decrypt(plan.run(plan.encrypt(x[0])))
        assert np.max(np.abs(got - model(x[:1]).detach().numpy().reshape(-1))) < 0.05
        g, lv = min(levels.items(), key=lambda item: item[1])
        if params is not None:  # bootstrapping: every transform below the user level, far below the top
            assert (
                plan.input_level < plan.ctx.user_level
                and max(lv for g, lv in levels.items() if g not in plan.bootstrapper.galois_elements())
                < plan.ctx.user_level
            )
            continue
        assert lv < plan.ctx.user_level  # the last transforms' keys serve only the levels below the input's
        fewer = plan.ctx.keygen(galois_levels={**levels, g: lv - 1} if lv > 0 else {h: 0 for h in levels})
        assert "lower levels" in missing_keys(plan, fewer.evaluation())
        step = next(k for k in range(1, plan.ctx.slots) if plan.ctx.galois_element(k) == g)
        with pytest.raises(ks.LevelError, match=f"serves levels up to {lv}"):
            plan.evaluator.rotate(plan.encrypt(x[0]), step)


def test_many_images_in_flight_give_each_ones_result():
    """run_many: images in flight on several workers give, each, the bytes run gives it alone."""
    torch.manual_seed(15)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), ksnn.Square(), nn.Linear(8, 3)).eval()
    x = torch.randn(6, 1, 4, 4)
    plan = ksnn.compile(model, x[:1], calibration=x, threads=2)
    plan.keygen()
    cts = [plan.encrypt(v) for v in x[:4]]
    alone = [plan.run(ct, threads=1).to_bytes() for ct in cts]
    assert [out.to_bytes() for out in plan.run_many(cts, workers=2)] == alone
    with pytest.raises(ks.LevelError):
        plan.run_many([cts[0], plan.evaluator.drop_level(cts[1], 0)])


def test_a_damaged_plan_is_refused_with_a_clear_error():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), ksnn.Square(), nn.Linear(4, 3)).eval()
    x = torch.randn(4, 1, 4, 4)
    data = ksnn.compile(model, x[:1], calibration=x).to_bytes()
    for bad, why in [
        (b"", "not a kasoku.nn plan"),
        (b"PK\x03\x04" + data[20:], "not a kasoku.nn plan"),
        (data[: len(data) // 2], "damaged or incomplete"),
        (data[:-30] + bytes(30), "damaged or incomplete"),
        (data[:200] + bytes([data[200] ^ 0x55]) + data[201:], "damaged or incomplete"),
    ]:
        with pytest.raises(ks.SerializationError, match=why):
            ksnn.load(bad)
    with pytest.raises(ks.SerializationError, match="max_bytes"):
        ksnn.load(data, max_bytes=1000)  # what decompression would take is bounded before it starts
    plan = ksnn.load(data)  # the bytes themselves were fine
    assert plan.out_dim == 3
    again = ksnn.load(plan.to_bytes())  # a loaded plan saves as it was loaded
    assert again.galois_elements() == plan.galois_elements() and repr(again) == repr(plan)
    np.testing.assert_array_equal(again.forward_clear(x[0]), plan.forward_clear(x[0]))


def test_digits_mlp_takes_the_clear_decisions():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    y = torch.tensor(d.target)
    torch.manual_seed(5)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), _bn(32, 1), ksnn.Square(), nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(60):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x[:1000]), y[:1000]).backward()
        opt.step()
    model.eval()
    plan = ksnn.compile(model, x[:1], calibration=x[:256], threads=2)
    plan.keygen()
    for i in range(1000, 1008):
        want = model(x[i : i + 1]).detach().numpy().reshape(-1)
        got = plan.decrypt(plan.run(plan.encrypt(x[i])))
        assert np.max(np.abs(got - want)) < 1e-2
        assert got.argmax() == want.argmax()
        assert np.max(np.abs(got - want)) <= plan.expected_error  # stated before keygen (kasoku.nn.noise)


def test_a_convolution_is_packed_by_its_layout():
    """A strided 2x2 convolution over 5 channels (LoLA's) reads one pattern per channel: about 4 diagonals per channel,
    not one per output slot as a dense matrix would."""
    torch.manual_seed(6)
    model = nn.Sequential(nn.Conv2d(1, 5, 2, stride=2), ksnn.Square(), nn.Flatten(), nn.Linear(980, 4)).eval()
    calibration = torch.randn(4, 1, 28, 28)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    conv = plan.steps[0]
    assert conv.mode == "layout" and conv.count == len(conv.offsets[0]) <= 20
    plan.keygen()
    want = model(calibration[:1]).detach().numpy().reshape(-1)
    assert np.max(np.abs(plan.decrypt(plan.run(plan.encrypt(calibration[0]))) - want)) < 2e-3


def test_a_convolution_after_a_convolution_shares_its_diagonals_across_channels():
    """The second convolution's output channels are placed where they read their inputs at the same offsets (the
    fewest new diagonals for each): 4 input channels x 3 x 3 = 36 diagonals for all 8 output channels, where a dense
    packing needs 128 (and the first free places, more)."""
    torch.manual_seed(7)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, stride=2),
        ksnn.Square(),
        nn.Conv2d(4, 8, 3, padding=1, stride=2),
        ksnn.Square(),
        nn.Flatten(),
        nn.Linear(8 * 4 * 4, 4),
    ).eval()
    calibration = torch.randn(4, 1, 16, 16)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    conv2 = [s for s in plan.steps if isinstance(s, ksnn.Affine)][1]
    assert conv2.mode == "layout" and conv2.count == len(conv2.offsets[0]) <= 4 * 3 * 3
    plan.keygen()
    want = model(calibration[:1]).detach().numpy().reshape(-1)
    assert np.max(np.abs(plan.decrypt(plan.run(plan.encrypt(calibration[0]))) - want)) < 2e-3


def test_the_packing_keeps_the_offsets_its_diagonals_have():
    """The packing keeps each affine step's offsets and count from the weights' entries and never builds the dense
    diagonals (a wide step's are GB); diagonals_of rebuilds them from the weights (a hybrid step's inputs by the
    hybrid packing, a layout step's by its placement): their nonzero offsets and their number are the kept ones,
    for a hybrid step, a layout step and a join of two inputs, and two rebuilds are the same bits."""
    import kasoku.nn.packing as packing

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(2, 4, 3, padding=1), nn.Conv2d(4, 2, 3, padding=1)
            self.fc = nn.Linear(2 * 8 * 8, 5)

        def forward(self, x):
            y = self.c1(x)
            return self.fc((self.c2(y * y) + x).flatten(1))

    torch.manual_seed(14)
    x = torch.randn(8, 2, 8, 8)
    plan = ksnn.compile(Net().eval(), x[:1], calibration=x, threads=2)
    steps = [s for s in plan.steps if isinstance(s, ksnn.Affine)]
    assert {s.mode for s in steps} == {"layout", "hybrid"} and max(len(s.Ws) for s in steps) == 2
    for s in steps:
        assert s.diags is None
        rebuilt = packing.diagonals_of(s)
        assert s.offsets == [sorted(r for r, d in ds.items() if np.any(d)) for ds in rebuilt]
        assert s.count == sum(len(ds) for ds in rebuilt)
        for got, want in zip(packing.diagonals_of(s), rebuilt):
            assert sorted(got) == sorted(want) and all(np.array_equal(got[r], want[r]) for r in want)
    # an (offset, slot) whose weights cancel exactly is no diagonal, as np.any sees the dense one
    offs, count = packing._offsets(np.array([3, 3, 5]), np.array([1, 1, 2]), np.array([0.5, -0.5, 1.0]), 8)
    assert (offs, count) == ([5], 2)


def test_max_pooling_is_pairwise_maxima_by_relu():
    """MaxPool2d(2) is max(a, b) = b + relu(a - b) over the window in pairs: two ReLUs deep (three maxima, each its
    sign stages), within relu_eps times its input's unit of the exact maximum; padding is refused."""
    torch.manual_seed(12)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3)).eval()
    params = small_boot_params(4)
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, threads=2, relu_eps=1 / 16)
    signs = [s for s in plan.steps if isinstance(s, ksnn.Activation) and s.kind == "sign"]
    assert len(signs) == 3 * len(sign_stages(1 / 16, 10, 4))  # three maxima
    assert "0_diff" in repr(plan) or "1_diff" in repr(plan)
    plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - plan.forward_clear(x))) < 1e-4
        assert np.max(np.abs(got - want)) < 0.1

    # the functional form compiles the same way; padding pads with -infinity, which is refused
    class Functional(nn.Module):
        def forward(self, x):
            return nn.functional.max_pool2d(x, 2).flatten(1)

    assert ksnn.compile(Functional(), calibration[:1], calibration=calibration, params=params).depth > 0
    padded = nn.Sequential(nn.MaxPool2d(2, padding=1), nn.Flatten()).eval()
    with pytest.raises(ks.ParameterError, match=r"layer 0 \(MaxPool2d\): max-pooling with padding"):
        ksnn.compile(padded, calibration[:1], calibration=calibration, params=params)


def test_an_input_outside_the_fitted_range_is_refused_before_encryption():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), nn.Tanh()).eval()
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    plan.keygen()
    plan.encrypt(calibration[3])
    with pytest.raises(ks.ParameterError, match=r"layer 2 \(Tanh\): .*outside the interval.*calibration"):
        plan.encrypt(100 * calibration[3])
    with pytest.raises(ks.ParameterError, match="compiled for 16"):
        plan.encrypt(torch.randn(2, 1, 4, 4))


class _Block(nn.Module):
    """A residual block with a strided 1x1 shortcut, a 5x5 convolution and global average pooling: the probes' hard
    cases (spacings 3 and 5, a pooling every position of a plane reads)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.short = nn.Conv2d(4, 8, 1, stride=2)
        self.wide = nn.Conv2d(8, 4, 5, padding=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(4, 3)
        self.sq1, self.sq2 = ksnn.Square(), ksnn.Square()

    def forward(self, x):
        y = self.sq1(self.bn(self.conv(x)) + self.short(x))
        return self.fc(torch.flatten(self.pool(self.sq2(self.wide(y))), 1))


def test_feature_maps_probed_by_groups_give_the_unit_vectors_weights(monkeypatch):
    """Above _PROBE_UNITS values a feature map is probed by groups of inputs (a channel's positions congruent modulo a
    spacing) and the weights read off the responses: bit for bit those of one probe per input, for every spacing the
    layers need and where none serves (global pooling: unit vectors)."""
    torch.manual_seed(11)
    model = _Block().eval()
    x = torch.randn(8, 4, 16, 16)
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    served = []  # the spacings whose groups gave a matrix
    grouped_probe = kasoku.nn.probe.probe_groups

    def probe_groups(linear, shape, spacing, out_dim):
        W = grouped_probe(linear, shape, spacing, out_dim)
        served.append((spacing, W is not None))
        return W

    monkeypatch.setattr(kasoku.nn.probe, "probe_groups", probe_groups)
    weights = {}
    for units in (1 << 30, 0):
        monkeypatch.setattr(kasoku.nn.probe, "_PROBE_UNITS", units)
        plan = ksnn.compile(model, x[:1], calibration=x, params=ks.Parameters.for_circuit(6, slots=2048))
        weights[units] = [W.toarray() for s in plan.steps if isinstance(s, ksnn.Affine) for W in s.Ws]
    assert len(weights[0]) == 3  # conv + shortcut (one map of x), the 5x5, pool + linear
    # conv + shortcut by spacing 3; the 5x5 refuses 3 and takes 5; the pooling reads whole planes: unit vectors
    assert served == [(3, True), (3, False), (5, True), (3, False), (5, False)]
    for grouped, units in zip(weights[0], weights[1 << 30]):
        assert np.array_equal(grouped, units)
    plan.keygen()
    want = model(x[:1]).detach().numpy().reshape(-1)
    assert np.max(np.abs(plan.decrypt(plan.run(plan.encrypt(x[0]))) - want)) < 1e-3


def test_transforms_encoded_at_use_give_the_same_results():
    """A plan whose transforms exceed the memory it may keep encoded encodes them at each use: the same ciphertext bit
    for bit, the same rotation keys, and repr says which."""
    torch.manual_seed(12)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), ksnn.Square(), nn.Flatten(), nn.Linear(4 * 64, 4)).eval()
    x = torch.randn(4, 1, 8, 8)
    plan = ksnn.compile(model, x[:1], calibration=x)
    plan.keygen()
    ct = plan.encrypt(x[0])
    kept, galois = plan.run(ct).to_bytes(), plan.galois_elements()
    kasoku.nn.runtime.encode(plan.steps, plan.ctx, None, budget=0)
    assert all(s.lts is None for s in plan.steps if isinstance(s, ksnn.Affine))
    assert "encoded at use" in repr(plan) and plan.galois_elements() == galois
    assert plan.run(ct).to_bytes() == kept
