"""kasoku.nn: PyTorch models compiled for encrypted inference, every layer kind against PyTorch in the clear."""

import math
import pathlib

import re

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import kasoku as ks
import kasoku.nn as ksnn
import kasoku.nn.probe
import kasoku.nn.runtime
from kasoku.nn.ir import Bootstrap
from kasoku.nn.activations import sign_stages
from conftest import small_boot_params


def _bn(c: int, dims: int = 2) -> nn.Module:
    """A BatchNorm in eval mode with statistics and affine parameters away from the identity."""
    bn = nn.BatchNorm2d(c) if dims == 2 else nn.BatchNorm1d(c)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.2, 0.2)
    return bn.eval()


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


def test_dropped_diagonals_are_rebuilt_bit_for_bit(monkeypatch):
    """The packing keeps each affine step's offsets and drops its diagonals' values; rebuilt from the weights (a
    hybrid step's first input by the hybrid packing, the rest by the layout's placement) they are the packing's own,
    bit for bit, for a hybrid step, a layout step and a join of two inputs."""
    import kasoku.nn.packing as packing

    made = {}
    summarize = packing._summarize

    def keep(step):
        made[step.name] = [dict(d) for d in step.diags]
        summarize(step)

    monkeypatch.setattr(packing, "_summarize", keep)

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
        rebuilt = packing._diagonals_of(s)
        assert [sorted(d) for d in rebuilt] == [sorted(d) for d in made[s.name]]
        for got, want in zip(rebuilt, made[s.name]):
            assert all(np.array_equal(got[r], want[r]) for r in want)


def test_bad_models_are_refused_naming_the_layer(monkeypatch):
    x = torch.randn(1, 1, 4, 4)
    leaky = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.LeakyReLU())
    with pytest.raises(ks.ParameterError, match=r"layer 1 \(LeakyReLU\): .*not built yet"):
        ksnn.compile(leaky, x)

    class Product(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            x = torch.flatten(x, 1)
            return x * self.fc(x)

    with pytest.raises(
        ks.ParameterError, match=r"layer mul \(mul\) \(test_nn.py:\d+: return x \* self.fc\(x\)\): a product of two val"
    ):
        ksnn.compile(Product(), x)

    deep = nn.Sequential(nn.Flatten(), *[ksnn.Square() for _ in range(70)])
    with pytest.raises(ks.ParameterError, match=r"layer \d+ \(Square\) is past the .*bootstrap=False"):
        ksnn.compile(deep, torch.rand(1, 1, 4, 4), bootstrap=False)
    with pytest.raises(ks.ParameterError, match=r"layer 4 \(Square\): .*2\^\d+.*scale"):
        ksnn.compile(deep, 4 + torch.rand(1, 1, 4, 4))  # x^16 of 4..5: above 2^32

    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), ksnn.Square(), nn.Linear(4, 4), ksnn.Square())
    with pytest.raises(ks.ParameterError, match=r"layer 2 \(Square\) is past the last of the parameters' 1 levels"):
        ksnn.compile(model, x, params=ks.Parameters.for_circuit(1, slots=16))

    # a batch as the example input (what a new user passes first): the error says to pass one sample and the batch
    # as calibration=, and that works
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(16, 4), ksnn.Square())
    batch = torch.rand(256, 1, 4, 4)
    with pytest.raises(ks.ParameterError, match=r"batch of 256 samples.*example_input\[0\].*calibration="):
        ksnn.compile(mlp, batch)
    with pytest.raises(ks.ParameterError, match=r"does not run on example_input \(shape \(3, 3\)\) as one sample"):
        ksnn.compile(mlp, torch.rand(3, 3))
    assert ksnn.compile(mlp, batch[0], calibration=batch).in_shape == (4, 4)  # its leading 1 taken as the batch

    # an affine part with more weights than kasoku.nn holds (the bound lowered here: a 64 x 64 layer has 4096)
    monkeypatch.setattr(kasoku.nn.probe, "_PROBE_NONZEROS", 1000)
    wide = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), ksnn.Square())
    with pytest.raises(
        ks.ParameterError, match=r"layer 0 \(Flatten\), 1 \(Linear\): an affine part from 64 to 64 .* more than 1000"
    ):
        ksnn.compile(wide, torch.rand(1, 1, 8, 8))


class _Idioms(nn.Module):
    """The forms everyday PyTorch code takes: shapes read in forward, products, sums and quotients by parameters,
    buffers and literals, functional forms of layers, dropout and identity, a clipped ReLU."""

    def __init__(self, form):
        super().__init__()
        self.form = form
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.fc = nn.Linear(32, 3)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 32))
        self.register_buffer("shift", torch.linspace(-0.2, 0.2, 32))
        self.drop, self.same, self.six = nn.Dropout2d(0.3), nn.Identity(), nn.ReLU6()

    def forward(self, x):
        h = self.same(self.drop(self.conv(x)))
        h = h * h
        if self.form == "view":
            h = h.view(h.size(0), -1)
        elif self.form == "reshape":
            h = h.reshape(h.shape[0], -1)
        elif self.form == "len":
            h = h.reshape(len(h), -1)
        elif self.form == "flatten":
            h = torch.flatten(h, 1)
        elif self.form == "constants":
            h = (self.scale * h.flatten(1) + self.shift) / 2.0 - 0.1
        elif self.form == "functional":
            h = F.dropout(F.conv2d(x, self.conv.weight, self.conv.bias, padding=1), 0.1, training=False)
            return F.linear(F.relu6(4 * h).flatten(1), self.fc.weight, self.fc.bias)
        elif self.form == "relu6":
            h = self.six(8 * h).flatten(1)
        return self.fc(h)


@pytest.mark.parametrize("form", ["view", "reshape", "len", "flatten", "constants", "functional", "relu6"])
def test_the_idioms_of_everyday_code_compile(form):
    """x.view(x.size(0), -1), x.reshape(x.shape[0], -1), len(x), torch.flatten(x, 1), products and sums with parameters,
    buffers and literals (plaintext operations), F.* forms with the model's weights, Dropout2d and Identity folded,
    ReLU6 as the clipped ReLU relu(x) - relu(x - 6): each compiles, its plain arithmetic is the model's and the
    encrypted run too."""
    torch.manual_seed(11)
    model = _Idioms(form).eval()
    calibration = torch.randn(32, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    relu = form in ("functional", "relu6")
    for x in calibration[:3]:
        want = model(x[None]).detach().numpy().reshape(-1)
        assert np.max(np.abs(plan.forward_clear(x) - want)) < (5e-2 if relu else 1e-6), form
    plan.keygen()
    x = calibration[0]
    want = model(x[None]).detach().numpy().reshape(-1)
    got = plan.decrypt(plan.run(plan.encrypt(x)))
    assert np.max(np.abs(got - want)) < (5e-2 if relu else 1e-3), form


def test_the_models_last_softmax_or_sigmoid_runs_on_the_client():
    """A classifier saved with its last softmax (or log-softmax, or sigmoid): the plan computes the logits, the same
    decisions, and decrypt applies the last operation exactly on the client (output="model", the default), or gives
    the logits (output="logits"); repr says which, and the choice travels with the plan. Elsewhere a softmax is
    refused with where it stands and what to do."""
    torch.manual_seed(12)
    body = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), ksnn.Square(), nn.Linear(8, 4))
    calibration = torch.randn(32, 1, 4, 4)
    x = calibration[0]
    logits = body.eval()(x[None]).detach().numpy().reshape(-1)
    for last, want in [
        (nn.Softmax(dim=1), np.exp(logits) / np.exp(logits).sum()),
        (nn.LogSoftmax(dim=-1), logits - np.log(np.exp(logits).sum())),
        (nn.Sigmoid(), 1 / (1 + np.exp(-logits))),
    ]:
        model = nn.Sequential(body, last).eval()
        plan = ksnn.compile(model, calibration[:1], calibration=calibration)
        assert f"last {type(last).__name__.lower().replace('logsoftmax', 'log_softmax')}" in repr(plan)
        assert np.max(np.abs(plan.forward_clear(x) - want)) < 1e-6
        plan.keygen()
        out = plan.run(plan.encrypt(x))
        assert np.max(np.abs(plan.decrypt(out) - want)) < 1e-3 and np.argmax(plan.decrypt(out)) == np.argmax(logits)
        loaded = ksnn.load(plan.to_bytes())
        assert loaded.final == plan.final and loaded.output_kind == "model"
    raw = ksnn.compile(nn.Sequential(body, nn.Softmax(dim=1)).eval(), x[None], calibration=calibration, output="logits")
    raw.keygen()
    assert np.max(np.abs(raw.decrypt(raw.run(raw.encrypt(x))) - logits)) < 1e-3 and "output='logits'" in repr(raw)

    class Middle(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 4), nn.Linear(4, 2)

        def forward(self, x):
            return self.fc2(torch.softmax(self.fc1(x.flatten(1)), dim=1))

    with pytest.raises(ks.ParameterError, match=r"test_nn.py:\d+: return self.fc2\(torch.softmax.*last operation"):
        ksnn.compile(Middle().eval(), x[None], calibration=calibration)
    with pytest.raises(ks.ParameterError, match="LayerNorm .*BatchNorm"):
        ksnn.compile(nn.Sequential(nn.Flatten(), nn.LayerNorm(16)).eval(), x[None])
    with pytest.raises(ks.ParameterError, match='output must be "model" or "logits"'):
        ksnn.compile(body, x[None], output="probabilities")


class _Form(nn.Module):
    """A model of one form of the supported table: forward(x) = fn(self, x), with the layers and constants given."""

    def __init__(self, fn, **parts):
        super().__init__()
        self.fn = fn
        for name, part in parts.items():
            if isinstance(part, torch.Tensor):
                self.register_buffer(name, part)
            else:
                setattr(self, name, part)

    def forward(self, x):
        return self.fn(self, x)


def _forms() -> dict:
    """Each form docs/NN.md's table lists: a model that uses it, its input shape, and how close the plan's plain
    arithmetic must be to it (exact maps, interpolated functions, ReLU's sign)."""
    torch.manual_seed(21)
    exact, smooth, relu = 1e-6, 5e-3, 6e-2
    c = nn.Conv2d(2, 2, 3, padding=1)
    head = nn.Linear(32, 3)  # after a 2 x 4 x 4 map
    m = {
        "Linear": (lambda s, x: s.a(x.flatten(1)), dict(a=nn.Linear(32, 4)), (2, 4, 4), exact),
        "Conv1d": (lambda s, x: s.a(x), dict(a=nn.Conv1d(2, 3, 3, padding=1, stride=2)), (2, 8), exact),
        "Conv2d": (lambda s, x: s.a(x), dict(a=nn.Conv2d(2, 4, 3, groups=2)), (2, 4, 4), exact),
        "BatchNorm1d": (lambda s, x: s.a(x), dict(a=_bn(2, 1)), (2, 8), exact),
        "BatchNorm2d": (lambda s, x: s.a(x), dict(a=_bn(2)), (2, 4, 4), exact),
        "AvgPool1d": (lambda s, x: s.a(x), dict(a=nn.AvgPool1d(2)), (2, 8), exact),
        "AvgPool2d": (lambda s, x: s.a(x), dict(a=nn.AvgPool2d(2)), (2, 4, 4), exact),
        "AdaptiveAvgPool1d": (lambda s, x: s.a(x), dict(a=nn.AdaptiveAvgPool1d(2)), (2, 8), exact),
        "AdaptiveAvgPool2d": (lambda s, x: s.a(x).flatten(1), dict(a=nn.AdaptiveAvgPool2d(1)), (2, 4, 4), exact),
        "Flatten": (lambda s, x: s.a(x), dict(a=nn.Flatten()), (2, 4, 4), exact),
        "Unflatten": (lambda s, x: s.a(x.flatten(1)), dict(a=nn.Unflatten(1, (4, 8))), (2, 4, 4), exact),
        "Dropout": (lambda s, x: s.a(x), dict(a=nn.Dropout(0.5)), (2, 4, 4), exact),
        "Dropout2d": (lambda s, x: s.a(x), dict(a=nn.Dropout2d(0.5)), (2, 4, 4), exact),
        "Identity": (lambda s, x: s.a(x) + 1, dict(a=nn.Identity()), (2, 4, 4), exact),
        "ZeroPad2d": (lambda s, x: s.a(x), dict(a=nn.ZeroPad2d(1)), (2, 4, 4), exact),
        "F.linear": (lambda s, x: F.linear(x.flatten(1), s.a.weight, s.a.bias), dict(a=head), (2, 4, 4), exact),
        "F.conv2d": (lambda s, x: F.conv2d(x, s.a.weight, s.a.bias, padding=1), dict(a=c), (2, 4, 4), exact),
        "F.pad": (lambda s, x: F.pad(x, (1, 0, 0, 1)), {}, (2, 4, 4), exact),
        "F.dropout": (lambda s, x: F.dropout(x, 0.3, training=False), {}, (2, 4, 4), exact),
        "torch.cat": (lambda s, x: torch.cat([x, s.a(x)], 1), dict(a=c), (2, 4, 4), exact),
        "x + y": (lambda s, x: s.a(x) + x, dict(a=c), (2, 4, 4), exact),
        "x.permute(0, 2, 3, 1)": (lambda s, x: x.permute(0, 2, 3, 1), {}, (2, 4, 4), exact),
        "x.mean(dim)": (lambda s, x: x.mean(dim=(2, 3)), {}, (2, 4, 4), exact),
        "x.view(x.size(0), -1)": (lambda s, x: s.a(x.view(x.size(0), -1)), dict(a=head), (2, 4, 4), exact),
        "x.reshape(x.shape[0], -1)": (lambda s, x: s.a(x.reshape(x.shape[0], -1)), dict(a=head), (2, 4, 4), exact),
        "x.reshape(len(x), -1)": (lambda s, x: s.a(x.reshape(len(x), -1)), dict(a=head), (2, 4, 4), exact),
        "torch.flatten(x, 1)": (lambda s, x: s.a(torch.flatten(x, 1)), dict(a=head), (2, 4, 4), exact),
        "x.flatten(1)": (lambda s, x: s.a(x.flatten(1)), dict(a=head), (2, 4, 4), exact),
        "w * x": (lambda s, x: s.w * x.flatten(1), dict(w=nn.Parameter(torch.randn(32))), (2, 4, 4), exact),
        "x / 4": (lambda s, x: x / 4, {}, (2, 4, 4), exact),
        "x + b": (lambda s, x: x.flatten(1) + s.b, dict(b=torch.randn(32)), (2, 4, 4), exact),
        "x @ W": (lambda s, x: x.flatten(1) @ s.w, dict(w=nn.Parameter(torch.randn(32, 5))), (2, 4, 4), exact),
        "x * x": (lambda s, x: (lambda h: h * h)(s.a(x)), dict(a=c), (2, 4, 4), exact),
        "x ** 2": (lambda s, x: s.a(x) ** 2, dict(a=c), (2, 4, 4), exact),
        "torch.square": (lambda s, x: torch.square(s.a(x)), dict(a=c), (2, 4, 4), exact),
        "kasoku.nn.Square": (lambda s, x: s.sq(s.a(x)), dict(a=c, sq=ksnn.Square()), (2, 4, 4), exact),
        "kasoku.nn.Polynomial(coeffs)": (lambda s, x: s.p(x), dict(p=ksnn.Polynomial([0.1, 1, 0.3])), (2, 4, 4), exact),
        "ReLU": (lambda s, x: s.head(s.act(x).flatten(1)), dict(act=nn.ReLU(), head=head), (2, 4, 4), relu),
        "F.relu": (lambda s, x: s.head(F.relu(x).flatten(1)), dict(head=head), (2, 4, 4), relu),
        "torch.relu": (lambda s, x: s.head(torch.relu(x).flatten(1)), dict(head=head), (2, 4, 4), relu),
        "ReLU6": (lambda s, x: s.head(s.act(4 * x).flatten(1)), dict(act=nn.ReLU6(), head=head), (2, 4, 4), relu),
        "F.relu6": (lambda s, x: s.head(F.relu6(4 * x).flatten(1)), dict(head=head), (2, 4, 4), relu),
        "MaxPool1d": (lambda s, x: s.a(x), dict(a=nn.MaxPool1d(2)), (2, 8), relu),
        "MaxPool2d": (
            lambda s, x: s.a(s.b(F.relu(x))),
            dict(a=nn.MaxPool2d(2), b=nn.MaxPool2d(3, 1, 1)),
            (2, 4, 4),
            relu,
        ),
        "F.max_pool2d": (lambda s, x: F.max_pool2d(x, 2), {}, (2, 4, 4), relu),
        **{
            name: (lambda s, x: s.head(s.act(x).flatten(1)), dict(act=act, head=head), (2, 4, 4), smooth)
            for name, act in [
                ("SiLU", nn.SiLU()),
                ("GELU", nn.GELU()),
                ("Sigmoid", nn.Sigmoid()),
                ("Tanh", nn.Tanh()),
                ("Softplus", nn.Softplus()),
            ]
        },
        "F.silu": (lambda s, x: s.head(F.silu(x).flatten(1)), dict(head=head), (2, 4, 4), smooth),
        "torch.tanh": (lambda s, x: s.head(torch.tanh(x).flatten(1)), dict(head=head), (2, 4, 4), smooth),
        "Softmax": (lambda s, x: s.last(s.head(x.flatten(1))), dict(head=head, last=nn.Softmax(1)), (2, 4, 4), exact),
        "LogSoftmax": (
            lambda s, x: s.last(s.head(x.flatten(1))),
            dict(head=head, last=nn.LogSoftmax(1)),
            (2, 4, 4),
            exact,
        ),
    }
    return m


def _table_forms() -> list[str]:
    """The forms in the first column of docs/NN.md's table of what kasoku.nn compiles."""
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "NN.md").read_text()
    table = text[text.index("## What it compiles") :].split("\n\n")[2]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith(("| ---", "| in the model"))]
    return [f for r in rows for f in re.findall(r"`([^`]+)`", r.split(" | ")[0])]


def test_every_form_the_table_lists_compiles():
    """docs/NN.md's table of what kasoku.nn compiles cannot drift: each form it lists compiles into a plan whose plain
    arithmetic is the model's (exactly for maps, within the approximations for the rest), and every form built here
    is in the table."""
    listed, forms = _table_forms(), _forms()
    assert sorted(set(listed)) == sorted(forms), set(listed) ^ set(forms)
    for form, (fn, parts, shape, tol) in forms.items():
        model = _Form(fn, **parts).eval()
        torch.manual_seed(22)
        calibration = torch.randn(16, *shape)
        plan = ksnn.compile(model, calibration[:1], calibration=calibration)
        for x in calibration[:2]:
            want = model(x[None]).detach().numpy().reshape(-1)
            assert np.max(np.abs(plan.forward_clear(x) - want)) <= tol * max(1.0, np.max(np.abs(want))), form


def test_relu_is_made_finer_until_the_calibration_decisions_hold():
    """compile runs the plan's clear arithmetic on the calibration inputs and makes ReLU's approximation finer until
    every decision is the model's. Here one input's ReLU value, 0.015 (of a unit of 2), lies below relu_eps 1/64 and
    comes out 0.0133 with (1/64, 10 bits), under the other output's constant 0.014; (1/128, 12) keeps it. The check is
    the plan's own arithmetic (forward_clear), and plan.calibration and repr(plan) say what it gave."""

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(2, 1), nn.Linear(1, 2)
            with torch.no_grad():
                self.l1.weight[:] = torch.tensor([[1.0, 0.0]])
                self.l1.bias[:] = 0
                self.l2.weight[:] = torch.tensor([[1.0], [0.0]])
                self.l2.bias[:] = torch.tensor([0.0, 0.014])

        def forward(self, x):
            return self.l2(torch.relu(self.l1(x)))

    model = Tiny().eval()
    calibration = torch.tensor([[1.0, 0.0], [0.015, 0.0], [-1.0, 0.0], [0.5, 0.0]])
    want = model(calibration).detach().numpy()
    coarse = ksnn.compile(model, calibration[:1], calibration=calibration, relu_eps=1 / 64, relu_bits=10)
    assert coarse.calibration["decisions"] == 3 and coarse.calibration["relu"] == (1 / 64, 10)
    got = np.array([coarse.forward_clear(x) for x in calibration])
    assert np.argmax(got[1]) == 1 and np.argmax(want[1]) == 0
    assert abs(np.max(np.abs(got - want)) - coarse.calibration["logit_error"]) < 1e-9
    plan = ksnn.compile(model, calibration[:1], calibration=calibration)  # relu_eps, relu_bits chosen
    c = plan.calibration
    assert c["inputs"] == 4 and c["decisions"] == 4 and c["relu"] == (1 / 128, 12)
    assert abs(c["smallest_margin"] - 0.001) < 1e-6 and c["logit_error"] < 1e-4
    assert "4 of 4 decisions the model's" in repr(plan) and "2^-12 beyond 0.0078125" in repr(plan)
    plan.keygen()
    out = plan.decrypt(plan.run(plan.encrypt(calibration[1])))
    assert np.argmax(out) == 0 and np.max(np.abs(out - want[1])) < c["logit_error"] + 1e-4


def test_outputs_to_share_are_flooded():
    """plan.decrypt(ct, flood=True): outputs safe to share (docs/NN.md, 'Results to share'). compile(shareable=True)
    sizes the parameters so that the flood leaves bits: each flooded output within 6 deviations of the clear model's,
    at the precision it states or more; a plan compiled without it refuses a flood that would leave none and says
    what to do; a model that must bootstrap cannot be shareable."""
    torch.manual_seed(9)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), ksnn.Square(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2, shareable=True)
    assert plan.shareable.statistical_security == 40 and plan.shareable_bits >= 6
    assert "outputs to share" in repr(plan)
    loaded = ksnn.load(plan.to_bytes())  # the sizing and the calibration check travel with the plan
    assert loaded.shareable_bits == plan.shareable_bits and loaded.calibration == plan.calibration
    assert loaded.shareable.statistical_security == 40
    plan.keygen()
    for x in calibration[:3]:
        out = plan.run(plan.encrypt(x))
        want = model(x[None]).detach().numpy().reshape(-1)
        shared = plan.decrypt(out, flood=True)
        assert isinstance(shared, ksnn.FloodedOutput) and shared.precision_bits >= plan.shareable_bits
        assert np.max(np.abs(shared.values - want)) < 6 * 2.0**-shared.precision_bits
        assert np.max(np.abs(plan.decrypt(out) - want)) < 2.0**-20  # exact: for the key holder only
        again = plan.decrypt(out, flood=ks.Flooding(queries=2))  # a fresh flood, sized for two queries
        assert not np.array_equal(again.values, shared.values) and again.sigma > shared.sigma
    plain = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    plain.keygen()
    with pytest.raises(ks.ParameterError, match="would leave .*shareable"):
        plain.decrypt(plain.run(plain.encrypt(calibration[0])), flood=True)
    with pytest.raises(ks.ParameterError, match="shareable must be"):
        ksnn.compile(model, calibration[:1], shareable="yes")
    deep = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.SiLU(), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 4)).eval()
    with pytest.raises(ks.ParameterError, match="bootstrap"):
        ksnn.compile(deep, calibration[:1], calibration=calibration, params=small_boot_params(4), shareable=True)


def test_bootstraps_are_placed_where_the_levels_run_out():
    """Layers of 8 or more levels on parameters with four user levels between bootstraps (research parameters at
    N = 2^10, no security claim: fast): a bootstrap before each layer that would fall below level 0, the bootstrapped
    values held in [-1, 1]."""
    torch.manual_seed(9)
    model = nn.Sequential(
        nn.Flatten(),
        nn.Linear(16, 8),
        ksnn.Square(),
        nn.Linear(8, 8),
        nn.SiLU(),
        nn.Linear(8, 8),
        ksnn.Square(),
        nn.Linear(8, 4),
    ).eval()
    params = small_boot_params(4)
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, threads=2)
    kinds = [type(s).__name__ for s in plan.steps]
    silu = next(s for s in plan.steps if isinstance(s, ksnn.Activation) and s.kind == "chebyshev")
    assert silu.depth <= 4
    # linear, x^2, linear: level 4 -> 1; SiLU needs its depth: a bootstrap first; ... every step at or above level 0
    assert plan.bootstraps == kinds.count("Bootstrap") >= 2 and kinds[0] == "Affine"
    level = plan.ctx.user_level
    for s in plan.steps:
        level = plan.ctx.user_level if isinstance(s, ksnn.Bootstrap) else s.level - s.depth
        assert level >= 0
    assert "bootstraps" in repr(plan)
    # each bootstrap's failure probability is the default bootstrapper's, and the plan states the inference's
    assert plan.bootstrapper.failure_probability <= 2.0**-128
    assert re.search(r"each fails with probability <= 2\^-1[2-9]\d\.\d", repr(plan)), repr(plan)
    with pytest.raises(ks.ParameterError, match=r"layer 4 \(SiLU\) is past the last .*bootstrap=False"):
        ksnn.compile(model, calibration[:1], calibration=calibration, params=params, bootstrap=False)
    keys = plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - want)) < 1e-2
    # saved and loaded, bootstraps included: the same bytes out
    loaded = ksnn.load(plan.to_bytes(), threads=2)
    assert loaded.bootstraps == plan.bootstraps and loaded.bootstrapper.slots == plan.bootstrapper.slots
    loaded.use(ks.EvaluationKeys.from_bytes(loaded.ctx, keys.evaluation().to_bytes()))
    ct = plan.encrypt(calibration[0])
    out = loaded.run(ks.Ciphertext.from_bytes(loaded.ctx, ct.to_bytes()))
    assert out.to_bytes() == plan.run(ct).to_bytes()


def test_bootstrapping_parameters_are_chosen_for_the_plan():
    """A plan no 128-bit ring holds gets N = 2^16 bootstrapping parameters with the fewest user levels that give the
    fewest bootstraps: every set 128-bit secure, every prime but q_0 below 2^50 (2^48 for AVX2's kernels), the fewest
    key-switching digits that fit; a chain of ReLU blocks of 11 levels takes 11 (one bootstrap a block), not 14."""
    from kasoku.nn.ir import Activation, Affine, ReluJoin
    from kasoku.nn.placement import _BOOT_LEVELS, _bootstrapping_params, _choose_params, _prime_bits

    for levels in range(6, 15):
        p = _bootstrapping_params(levels)
        assert p.levels == levels and p.security == 128 and p.log_qp <= 1772
        assert p.boot_bits == p.special_bits == 50 and max(p.scale_bits, p.boot_bits, p.special_bits) <= 50
        fewer = p.dnum - 1
        if fewer >= 2:  # one digit fewer leaves no room for 50-bit bootstrapping primes
            alpha = -(-(1 + levels + _BOOT_LEVELS) // fewer)
            assert 60 + 40 * levels + _BOOT_LEVELS * 50 + alpha * 50 > 1772
    assert _bootstrapping_params(7).dnum == 2 and _bootstrapping_params(8).dnum == 3
    assert _bootstrapping_params(10).dnum == 3 and _bootstrapping_params(12).dnum == 4

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    steps, v = [], 0
    for block in range(6):  # affine, ReLU (sign stages of 4 and 5 levels, the join): 11 levels a block
        a = Affine(f"a{block}", [v], v + 1, [], np.zeros(1), [], 1, diags=[{0: np.ones(1)}])
        steps += [a, sign(15, v + 1, v + 2), sign(31, v + 2, v + 3), ReluJoin(f"r{block}", [v + 1, v + 3], v + 4)]
        v += 4
    p = _choose_params(steps, 66, 1 << 15, None, True, 20)
    assert p.levels == 11 and p.log_n == 16
    # three blocks (33 levels) fit one N = 2^16 chain at 8 bits, with every key over its 34 primes: bootstrapped too
    assert ks.Parameters.for_circuit(33, 8, slots=1 << 15, integer_bits=20).log_n == 16
    assert _choose_params(steps[:12], 33, 1 << 15, None, True, 20).boot_levels == _BOOT_LEVELS
    assert _choose_params(steps[:12], 33, 1 << 15, None, False, 20).boot_levels == 0
    # for AVX2's kernels, primes below 2^48 (their double-precision path); the same plan shape, 128-bit
    assert _prime_bits("avx2") == 48 and _prime_bits("ifma") == _prime_bits("avx512") == _prime_bits("cuda") == 50
    p48 = _choose_params(steps, 66, 1 << 15, None, True, 20, prime_bits=48)
    assert p48.boot_bits == p48.special_bits == 48 and p48.levels == 11 and p48.log_qp <= 1772
    for levels in range(6, 15):
        assert _bootstrapping_params(levels, 48).log_qp <= 1772
    with pytest.raises(ks.ParameterError, match="simd must be one of"):
        ksnn.compile(nn.Sequential(nn.Flatten(), nn.Linear(4, 2)), torch.rand(1, 2, 2), simd="neon")


def test_bootstrapping_parameters_fit_the_memory_asked():
    """With an estimate of each candidate's peak, params=None takes the fewest bootstraps among the parameters that fit
    max_memory, or the smallest memory class any fits (4, 8, 16 GiB), or else the smallest estimate; without one, the
    fewest bootstraps. Candidates: for each number of bootstraps, the fewest user levels that give it."""
    from kasoku.nn.ir import Activation, Affine, ReluJoin
    from kasoku.nn.placement import _choose_params, _place_bootstraps

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    steps, v = [], 0
    for block in range(6):  # 11 levels a block, as above
        a = Affine(f"a{block}", [v], v + 1, [], np.zeros(1), [], 1, diags=[{0: np.ones(1)}])
        steps += [a, sign(15, v + 1, v + 2), sign(31, v + 2, v + 3), ReluJoin(f"r{block}", [v + 1, v + 3], v + 4)]
        v += 4

    def boots(p):
        return sum(isinstance(st, Bootstrap) for st in _place_bootstraps(steps, p.levels)[0])

    gib = 1 << 30
    seen = []

    def estimate(p):  # a peak growing with the levels: 3 GiB at 5 levels, 0.5 GiB more a level
        seen.append(p.levels)
        return 3 * gib + (p.levels - 5) * gib // 2

    def choose(*memory):
        return _choose_params(steps, 66, 1 << 15, None, True, 20, *memory)

    # candidates (levels: bootstraps): 5: 17, 6: 11, 9: 9, 10: 7, 11: 5 (7 and 8 give 11 too, with larger keys)
    assert choose().levels == 11 and boots(choose()) == 5
    lean = choose(estimate)
    assert sorted(seen) == [5, 6, 9, 10, 11]  # one estimate per candidate
    assert lean.levels == 6 and boots(lean) == 11  # 3.5 GiB: the 4 GiB class
    assert choose(estimate, 6 * gib).levels == 11
    assert choose(estimate, 5 * gib + gib // 4).levels == 9
    assert choose(estimate, gib).levels == 5  # none fits: the smallest


def test_the_memory_estimate_counts_the_keys_keygen_makes():
    """The estimate compile makes of each candidate's keys (runtime._galois_levels with the steps' levels given and
    their transforms' plans made for it) is the compiled plan's: the same Galois elements at the same levels."""
    from kasoku.nn.runtime import _galois_levels

    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(
        model, calibration[:1], calibration=calibration, params=small_boot_params(4), threads=2, relu_eps=1 / 16
    )
    assert plan.bootstraps > 0
    at = [getattr(s, "level", None) for s in plan.steps]
    assert _galois_levels(plan.steps, plan.ctx, plan.bootstrapper, at, {}) == plan.galois_levels()


def test_relu_by_sign_stages_with_bootstraps_between_them():
    """ReLU is u (1 + sign u) / 2 on its input held in [-1, 1], the sign a composite of minimax polynomials: on four
    levels between bootstraps, stages of at most four levels each (eps 1/16: degrees 3, 7, 7), three bootstraps (the
    fewest); the encrypted result is the plan's arithmetic, within relu_eps times the input's unit of the exact
    ReLU."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    params = small_boot_params(4)
    calibration = torch.randn(64, 1, 4, 4)
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, params=params, threads=2, relu_eps=1 / 16)
    signs = [s for s in plan.steps if isinstance(s, ksnn.Activation) and s.kind == "sign"]
    assert [s.poly.degree for s in signs] == [len(c) - 1 for c in sign_stages(1 / 16, 10, 4)] == [3, 7, 7]
    assert plan.bootstraps == 3 and "u (1 + sign u)" in repr(plan)
    plan.keygen()
    for x in calibration[:2]:
        want = model(x[None]).detach().numpy().reshape(-1)
        clear = plan.forward_clear(x)
        got = plan.decrypt(plan.run(plan.encrypt(x)))
        assert np.max(np.abs(got - clear)) < 1e-5
        assert np.max(np.abs(got - want)) < 0.05


def test_a_zero_encoding_budget_encodes_every_transform_and_the_bootstraps_at_use():
    """max_encoded_bytes=0: no transform kept encoded and the bootstrapper's transforms encoded at each bootstrap (a
    plan of their values, a fraction of the encodings), in compile and in load; the same results, within the
    encryption's noise."""
    torch.manual_seed(10)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 4)).eval()
    calibration = torch.randn(64, 1, 4, 4)
    options = dict(calibration=calibration, params=small_boot_params(4), threads=2, relu_eps=1 / 16)
    kept = ksnn.compile(model, calibration[:1], **options)
    lean = ksnn.compile(model, calibration[:1], max_encoded_bytes=0, **options)
    assert kept.memory()["transforms"] > 0 and lean.memory()["transforms"] == 0
    assert 4 * lean.memory()["bootstrap_plan"] < kept.memory()["bootstrap_plan"]
    loaded = ksnn.load(lean.to_bytes(), threads=2, max_encoded_bytes=0)
    assert loaded.memory()["bootstrap_plan"] == lean.memory()["bootstrap_plan"]
    keys = lean.keygen()
    loaded.use(ks.EvaluationKeys.from_bytes(loaded.ctx, keys.evaluation().to_bytes()))
    x = calibration[3]
    clear = lean.forward_clear(x)
    ct = lean.encrypt(x)
    assert np.max(np.abs(lean.decrypt(lean.run(ct)) - clear)) < 1e-5
    out = loaded.run(ks.Ciphertext.from_bytes(loaded.ctx, ct.to_bytes()))
    assert np.max(np.abs(lean.decrypt(ks.Ciphertext.from_bytes(lean.ctx, out.to_bytes())) - clear)) < 1e-5


@pytest.mark.parametrize("eps, bits, levels", [(1 / 64, 10, 9), (1 / 16, 10, 8), (1 / 128, 12, 11), (0.25, 12, 5)])
def test_sign_stages_are_within_their_bound_in_the_fewest_levels(eps, bits, levels):
    """The composite minimax sign: within 2^-bits of sign(x) where eps <= |x| <= 1, never above 1 + 2^-bits in
    magnitude, odd, in the levels found (Cheon, Kim and Kim's f_3 takes 3 levels a step: 21 levels for 1/64 and 10
    bits, ks.sign_depth); one level fewer does not reach the bound with any stages."""
    from numpy.polynomial import chebyshev

    stages = sign_stages(eps, bits)
    assert sum(math.ceil(math.log2(len(c))) for c in stages) == levels <= ks.sign_depth(eps, bits)
    x = np.linspace(-1, 1, 200001)
    y = x.copy()
    for c in stages:
        assert np.all(c[0::2] == 0)  # odd
        y = chebyshev.chebval(y, c)
    far = np.abs(x) >= eps
    assert np.max(np.abs(y[far] - np.sign(x[far]))) <= 2.0**-bits
    assert np.max(np.abs(y)) <= 1 + 2.0**-bits
    # no sequence of stages (each the minimax polynomial of degree 2^k - 1 on what the ones before leave) in one
    # level fewer reaches the bound
    from kasoku.nn.activations import _minimax_stage

    def reach(a, depths):  # the error of the composite of these stage depths
        for j, k in enumerate(depths):
            _, lo, hi = _minimax_stage(round(a, 12), (1 << k) - 1)
            if j == len(depths) - 1:
                return max(1 - lo, hi - 1)
            a = lo / hi

    def sequences(total):
        if total == 0:
            yield ()
        for k in range(2, min(6, total) + 1):
            for rest in sequences(total - k):
                yield (k, *rest)

    assert all(reach(eps, s) > 2.0**-bits for d in range(2, levels) for s in sequences(d))
    with pytest.raises(ks.ParameterError, match="at least 2"):
        sign_stages(eps, bits, 1)


def test_bootstraps_placed_over_the_graph_are_the_fewest():
    """Bootstrap placement against an exhaustive search on small random graphs of squares, sign stages and joins
    (each step may refresh any of its inputs first; a refreshed value serves every later reader): the fewest
    bootstraps every time, and never more than placing them at the last moment, which a fan-out defeats."""
    from kasoku.nn.ir import Activation, ReluJoin, _levels
    from kasoku.nn.placement import _place_bootstraps

    def greedy(steps, top):  # at the last moment: a value is refreshed where a reader needs more than it has
        level, count = {0: top}, 0
        for st in steps:
            for i in st.inputs:
                if level[i] < st.depth:
                    level[i], count = top, count + 1
            level[st.output] = min(level[i] for i in st.inputs) - st.depth
        return count

    def fewest(steps, top):
        pairs = [(t, i) for t, st in enumerate(steps) for i in sorted(set(st.inputs))]
        best = None
        for mask in range(1 << len(pairs)):
            level, ok, count = {0: top}, True, 0
            chosen = {pairs[b] for b in range(len(pairs)) if mask >> b & 1}
            for t, st in enumerate(steps):
                for i in sorted(set(st.inputs)):
                    if (t, i) in chosen:
                        level[i], count = top, count + 1
                at = min(level[i] for i in st.inputs)
                if at < st.depth:
                    ok = False
                    break
                level[st.output] = at - st.depth
            if ok and (best is None or count < best):
                best = count
        return best

    def sign(d, i, o):
        return Activation(f"s{o}", "sign", poly=ks.Polynomial([0.0] + [0.5] * d), degree=d, input=i, output=o)

    # a fan-out: v at level 2 of 3 feeds two squares each followed by a two-level sign; at the last moment both
    # squares' outputs are refreshed, where refreshing v once serves both branches
    fan = [Activation("v", "square", input=0, output=2), Activation("b", "square", input=2, output=3), sign(3, 3, 4)]
    fan += [Activation("c", "square", input=2, output=5), sign(3, 5, 6)]
    assert greedy(fan, 3) == 2 and fewest(fan, 3) == 1
    assert sum(type(s).__name__ == "Bootstrap" for s in _place_bootstraps(fan, 3)[0]) == 1
    rng = np.random.default_rng(7)
    for trial in range(40):
        top = int(rng.integers(3, 6))
        steps, values = [], [0]
        for o in range(1, 8):
            if len(values) > 1 and rng.random() < 0.3:
                a, b = rng.choice(values, 2, replace=False)
                steps.append(ReluJoin(f"j{o}", [int(a), int(b)], o))
            else:
                i = int(rng.choice(values))
                steps.append(
                    sign(int(rng.choice([1, 3, 7])), i, o)
                    if rng.random() < 0.6
                    else Activation(f"q{o}", "square", input=i, output=o)
                )
            values.append(o)
        placed, start = _place_bootstraps(steps, top)
        count = sum(type(s).__name__ == "Bootstrap" for s in placed)
        assert count == fewest(steps, top) <= greedy(steps, top)
        level, at = _levels(placed, top, start)
        assert all(a >= s.depth for s, a in zip(placed, at))


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
    grouped_probe = kasoku.nn.probe._probe_groups

    def probe_groups(linear, shape, spacing, out_dim):
        W = grouped_probe(linear, shape, spacing, out_dim)
        served.append((spacing, W is not None))
        return W

    monkeypatch.setattr(kasoku.nn.probe, "_probe_groups", probe_groups)
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
    kasoku.nn.runtime._encode(plan.steps, plan.ctx, None, budget=0)
    assert all(s.lts is None for s in plan.steps if isinstance(s, ksnn.Affine))
    assert "encoded at use" in repr(plan) and plan.galois_elements() == galois
    assert plan.run(ct).to_bytes() == kept
