"""kasoku.nn: what compiles and what is refused (the forms of everyday PyTorch code, docs/NN.md's table), the client's
last softmax, the calibration check and outputs to share."""

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
from conftest import batchnorm as _bn, small_boot_params


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
        ks.ParameterError,
        match=r"layer mul \(mul\) \(test_nn_forms.py:\d+: return x \* self.fc\(x\)\): a product of two val",
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
    ReLU6 (test_relu6_is_a_clipped_relu_on_one_ciphertext): each compiles, its plain arithmetic is the model's and the
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


def test_relu6_is_a_clipped_relu_on_one_ciphertext():
    """ReLU6 (module, F.relu6, F.hardtanh(x, 0, 6)) is relu(x) - relu(x - 6) on x's one ciphertext: a second sign chain
    on x - 6 (its first stage reads x's ciphertext minus 6 / unit, no level) and one join of the three, so a network of
    ReLU6s has one transform per affine part, as one of ReLUs; where the calibration never takes x past 6 (margin
    included) it is a ReLU there. The clear arithmetic, the encrypted run and a saved and loaded plan give the
    model's outputs, values past 6 clipped."""
    torch.manual_seed(21)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.c2 = nn.Conv2d(1, 3, 3, padding=1), nn.Conv2d(3, 3, 3, padding=1)
            self.fc, self.six = nn.Linear(48, 3), nn.ReLU6()

        def forward(self, x):
            h = self.six(6 * self.c1(x))  # past 6: clipped
            h = F.hardtanh(self.c2(h) / 64, 0.0, 6.0)  # below 6 on the calibration: a ReLU there
            return self.fc(F.relu6(h).flatten(1) * 8)

    model = Net().eval()
    calibration = torch.randn(32, 1, 4, 4)
    with torch.no_grad():
        assert (6 * model.c1(calibration)).max() > 8  # the first ReLU6 clips
    plan = ksnn.compile(model, calibration[:1], calibration=calibration, threads=2)
    affine = [s for s in plan.steps if isinstance(s, ksnn.Affine)]
    joins = [s for s in plan.steps if isinstance(s, ksnn.ReluJoin)]
    assert [len(s.inputs) for s in affine] == [1, 1, 1]  # one transform each, one input: no x - 6 transform, no join
    assert [s.clip for s in joins][0] == 6.0 and [len(s.inputs) for s in joins][0] == 3
    assert sum(1 for s in joins if not s.clip) >= 1 and "as ReLU: below 6" in repr(plan)
    for x in calibration[:4]:
        want = model(x[None]).detach().numpy().reshape(-1)
        assert np.max(np.abs(plan.forward_clear(x) - want)) < 5e-2
    keys = plan.keygen()
    x = calibration[1]
    want = model(x[None]).detach().numpy().reshape(-1)
    ct = plan.encrypt(x)
    got = plan.decrypt(plan.run(ct))
    assert np.max(np.abs(got - want)) < 5e-2
    server = ksnn.load(plan.to_bytes(), threads=2)
    assert repr(server).split("\n  depth ")[1].split("\n", 1)[1] == repr(plan).split("\n  depth ")[1].split("\n", 1)[1]
    server.use(ks.EvaluationKeys.from_bytes(server.ctx, keys.evaluation().to_bytes()))
    out = server.run(ks.Ciphertext.from_bytes(server.ctx, ct.to_bytes()))
    again = plan.decrypt(ks.Ciphertext.from_bytes(plan.ctx, out.to_bytes()))
    assert np.max(np.abs(again - got)) < 1e-6


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

    with pytest.raises(
        ks.ParameterError, match=r"test_nn_forms.py:\d+: return self.fc2\(torch.softmax.*last operation"
    ):
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
        "F.hardtanh(x, 0, m)": (
            lambda s, x: s.head(F.hardtanh(4 * x, 0, 3).flatten(1)),
            dict(head=head),
            (2, 4, 4),
            relu,
        ),
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
