"""The model as torch.fx sees it: the activation modules of this package, the graph traced with them kept as leaves,
max-pooling rewritten as pairwise maxima, each node classified (affine, an activation, or refused with a reason), and
graph nodes run on tensors."""

from __future__ import annotations

import operator

import numpy as np

import kasoku as ks


def _torch():
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:  # pragma: no cover - the CI venv has torch
        raise ks.ParameterError("kasoku.nn.compile needs PyTorch: pip install 'kasoku[nn]' (or torch)") from e
    return torch


try:  # the activation modules of this package, when PyTorch is there
    import torch as _t

    class Square(_t.nn.Module):
        """x^2, the activation CKKS evaluates exactly in one level."""

        def forward(self, x):
            """x * x, element by element."""
            return x * x

    class Polynomial(_t.nn.Module):
        """sum_i coeffs[i] x^i, evaluated as written (power basis) on the encrypted values."""

        def __init__(self, coeffs):
            super().__init__()
            self.coeffs = [float(c) for c in coeffs]

        def forward(self, x):
            """The polynomial at every element of x (Horner)."""
            out = _t.zeros_like(x)
            for c in reversed(self.coeffs):
                out = out * x + c
            return out
except ImportError:  # pragma: no cover
    Square = Polynomial = None  # type: ignore[assignment,misc]


def _classify(torch, node, modules):
    """'affine', 'square', ('smooth', name), ('power', coeffs) or ('unsupported', why) for a node of the graph."""
    nn, F = torch.nn, torch.nn.functional
    args = [a for a in node.args if isinstance(a, torch.fx.Node)]
    if node.op == "call_module":
        m = modules[node.target]
        if Square is not None and isinstance(m, Square):
            return "square"
        if Polynomial is not None and isinstance(m, Polynomial):
            return ("power", m.coeffs)
        affine = (
            nn.Linear,
            nn.Conv1d,
            nn.Conv2d,
            nn.BatchNorm1d,
            nn.BatchNorm2d,
            nn.AvgPool1d,
            nn.AvgPool2d,
            nn.AdaptiveAvgPool1d,
            nn.AdaptiveAvgPool2d,
            nn.Flatten,
            nn.Unflatten,
            nn.Identity,
            nn.Dropout,
        )
        if isinstance(m, affine):
            return "affine"
        smooth = {nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.GELU: "gelu", nn.Softplus: "softplus"}
        for t, name in smooth.items():
            if isinstance(m, t):
                return ("smooth", name)
        if type(m) is nn.ReLU:
            return ("relu",)
        if isinstance(m, (nn.ReLU6, nn.LeakyReLU)):
            return (
                "unsupported",
                f"{type(m).__name__} is not built yet: use ReLU, x^2 (kasoku.nn.Square), SiLU, GELU, sigmoid or tanh",
            )
        return ("unsupported", f"layer type {type(m).__name__} is not supported")
    if node.op == "call_function":
        f = node.target
        if f in (operator.mul,) and len(args) == 2 and args[0] is args[1]:
            return "square"
        if f in (torch.square,) or (f in (operator.pow, torch.pow) and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if f in (
            torch.flatten,
            torch.reshape,
            F.avg_pool1d,
            F.avg_pool2d,
            F.adaptive_avg_pool1d,
            F.adaptive_avg_pool2d,
            operator.neg,
            operator.getitem,
        ) or (
            f in (operator.mul, operator.truediv, operator.add, operator.sub, torch.mul, torch.add) and len(args) == 1
        ):
            return "affine"
        smooth = {
            F.silu: "silu",
            torch.sigmoid: "sigmoid",
            F.sigmoid: "sigmoid",
            torch.tanh: "tanh",
            F.tanh: "tanh",
            F.gelu: "gelu",
            F.softplus: "softplus",
        }
        if f in smooth:
            return ("smooth", smooth[f])
        if f in (operator.add, operator.sub, torch.add, torch.sub) and len(args) == 2:
            return "affine"  # a residual connection: affine in both operands
        if f in (torch.cat, torch.concat):
            return "affine"
        if f in (operator.mul, torch.mul) and len(args) == 2:
            return ("unsupported", "products of two different tensors are not supported (only x * x)")
        if f in (torch.relu, F.relu):
            return ("relu",)
        return ("unsupported", f"function {getattr(f, '__name__', f)} is not supported")
    if node.op == "call_method":
        if node.target in ("view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze"):
            return "affine"
        if node.target in ("add", "sub") and len(args) <= 2:
            return "affine"
        if node.target == "square" or (node.target == "pow" and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if node.target in ("sigmoid", "tanh"):
            return ("smooth", node.target)
        if node.target == "relu":
            return ("relu",)
        return ("unsupported", f"method .{node.target}() is not supported")
    return ("unsupported", f"graph node {node.op} {node.target}")


def _name(node, modules) -> str:
    """A layer's name as its model says it: the module's path and type, or the function traced."""
    if node.op == "call_module":
        return f"{node.target} ({type(modules[node.target]).__name__})"
    if node.op == "call_function":
        return f"{node.name} ({getattr(node.target, '__name__', node.target)})"
    return f"{node.name} (.{node.target}())"


def _trace(torch, model):
    """torch.fx's graph of the model, with this package's activations kept as modules (not traced into)."""

    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, (Square, Polynomial)) or super().is_leaf_module(m, qualname)

    return torch.fx.GraphModule(model, Tracer().trace(model))


def _lower_max_pools(torch, gm, x) -> None:
    """Each max-pooling (MaxPool1d/2d, F.max_pool1d/2d) rewritten in the graph as what the plan evaluates: the window's
    elements as strided slices (affine), reduced in pairs by max(a, b) = b + relu(a - b), so that a k x k window costs
    ceil(log2(k^2)) ReLUs one after the other (ReLU's sign stages, levels and precision). Raises ks.ParameterError for
    padding (max-pooling pads with -infinity), dilation, ceil_mode or return_indices."""
    nn, F = torch.nn, torch.nn.functional
    modules = dict(gm.named_modules())
    pools = []
    for n in gm.graph.nodes:
        if n.op == "call_module" and isinstance(modules[n.target], (nn.MaxPool1d, nn.MaxPool2d)):
            m = modules[n.target]
            dims = 1 if isinstance(m, nn.MaxPool1d) else 2
            opts = dict(
                kernel_size=m.kernel_size,
                stride=m.stride,
                padding=m.padding,
                dilation=m.dilation,
                ceil_mode=m.ceil_mode,
                return_indices=m.return_indices,
            )
        elif n.op == "call_function" and n.target in (F.max_pool1d, F.max_pool2d):
            dims = 1 if n.target is F.max_pool1d else 2
            names = ["kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
            opts = dict(stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
            opts.update(zip(names, n.args[1:]))
            opts.update(n.kwargs)
        else:
            continue
        pools.append((n, dims, opts))
    if not pools:
        return
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(x[None])
    for n, dims, o in pools:
        tup = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * dims  # noqa: E731
        k = tup(o["kernel_size"])
        s = tup(o["stride"] if o["stride"] not in (None, [], ()) else o["kernel_size"])
        if any(tup(o["padding"])) or any(d != 1 for d in tup(o["dilation"])) or o["ceil_mode"] or o["return_indices"]:
            raise ks.ParameterError(
                f"layer {_name(n, modules)}: max-pooling with padding, dilation, ceil_mode or return_indices is not "
                "built (padding is -infinity, which CKKS cannot hold): pad the input with zeros before it (F.pad), "
                "or pool without them"
            )
        src = n.args[0]
        size = tuple(src.meta["tensor_meta"].shape[-dims:])
        out = [(sz - kk) // ss + 1 for sz, kk, ss in zip(size, k, s)]
        g = gm.graph
        with g.inserting_before(n):
            parts = []
            for offs in np.ndindex(*k):
                index = (Ellipsis,) + tuple(
                    slice(int(i), int(i) + ss * (oo - 1) + 1, ss) for i, ss, oo in zip(offs, s, out)
                )
                parts.append(g.create_node("call_function", operator.getitem, (src, index), name=f"{n.name}_at"))
            while len(parts) > 1:  # max(a, b) = b + relu(a - b), pairwise
                nxt = []
                for a, b in zip(parts[0::2], parts[1::2]):
                    d = g.create_node("call_function", operator.sub, (a, b), name=f"{n.name}_diff")
                    r = g.create_node("call_function", F.relu, (d,), name=f"{n.name}_relu")
                    nxt.append(g.create_node("call_function", operator.add, (b, r), name=f"{n.name}_max"))
                parts = nxt + parts[len(parts) - len(parts) % 2 :]
        n.replace_all_uses_with(parts[0])
        g.erase_node(n)
    gm.graph.lint()
    gm.recompile()


def _tensor_inputs(node) -> list:
    """The graph nodes a node reads its tensors from (constants fetched with get_attr do not count)."""
    return [a for a in node.all_input_nodes if a.op != "get_attr"]


def _run_nodes(torch, gm, nodes, env: dict) -> dict:
    """Runs graph nodes in order on the values of env (node -> tensor) and returns env with theirs added."""
    modules = dict(gm.named_modules())
    env = dict(env)

    def value(n):
        if n.op == "get_attr":
            v = gm
            for part in n.target.split("."):
                v = getattr(v, part)
            return v
        return env[n]

    for node in nodes:
        args = torch.fx.node.map_arg(node.args, value)
        kwargs = torch.fx.node.map_arg(node.kwargs, value)
        if node.op == "call_module":
            env[node] = modules[node.target](*args, **kwargs)
        elif node.op == "call_function":
            env[node] = node.target(*args, **kwargs)
        else:
            env[node] = getattr(args[0], node.target)(*args[1:], **kwargs)
    return env


def _region(node, held, kinds):
    """The affine nodes that compute `node` from held values (in graph order) and the held non-affine values they
    read (the placeholder, activations)."""
    region, ins, todo, seen = [], [], [node], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n is not node and (n.op == "placeholder" or kinds.get(n) != "affine"):
            ins.append(n)
            continue
        region.append(n)
        todo.extend(_tensor_inputs(n))
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return sorted(region, key=order.get), sorted(ins, key=order.get)
