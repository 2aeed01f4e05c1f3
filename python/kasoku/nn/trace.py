"""The model as torch.fx sees it: the activation modules of this package, the graph traced with them kept as leaves,
max-pooling rewritten as pairwise maxima, each node classified (affine, an activation, or refused with a reason), and
graph nodes run on tensors."""

from __future__ import annotations

import operator

import numpy as np

import kasoku as ks


def import_torch():
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


# Functions, methods and modules that are affine in their one tensor input (their other arguments constants: weights,
# shapes, dimensions), with the names the error messages use for what is not.
_AFFINE_METHODS = {
    "view", "reshape", "flatten", "contiguous", "squeeze", "unsqueeze", "permute", "transpose", "t", "mean", "sum",
    "expand", "expand_as", "repeat", "neg", "add", "sub", "mul", "div", "truediv", "__getitem__",
    "size", "dim", "numel", "ndimension",  # shapes: evaluated with the region, the input's own at each run
}  # fmt: skip


_HARDTANH = ((1, "min_val", -1.0), (2, "max_val", 1.0))  # F.hardtanh's bounds: position, keyword, default


def classify(torch, node, modules):
    """'affine', 'square', ('smooth', name), ('power', coeffs), ('relu',), ('relu', m) (ReLU6 and hardtanh(x, 0, m):
    min(max(x, 0), m)) or ('unsupported', why) for a node of the graph. A node computed from the model's constants
    alone (parameters, buffers, literals) is 'affine': it is evaluated with the region that reads it."""
    nn, F = torch.nn, torch.nn.functional
    if node.meta.get("kasoku_const") or node.meta.get("kasoku_shape"):
        return "affine"
    args = tensor_inputs(node)
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
            nn.modules.dropout._DropoutNd,
            nn.ZeroPad2d,
            nn.ConstantPad1d,
            nn.ConstantPad2d,
        )
        if isinstance(m, affine) and (not isinstance(m, (nn.ConstantPad1d, nn.ConstantPad2d)) or m.value == 0):
            return "affine"
        smooth = {nn.SiLU: "silu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh", nn.GELU: "gelu", nn.Softplus: "softplus"}
        for t, name in smooth.items():
            if isinstance(m, t):
                return ("smooth", name)
        if type(m) is nn.ReLU:
            return ("relu",)
        if isinstance(m, nn.Hardtanh) and m.min_val == 0 and m.max_val > 0:  # nn.ReLU6 is Hardtanh(0, 6)
            return ("relu", float(m.max_val))
        if isinstance(m, nn.LeakyReLU):
            return ("unsupported", "LeakyReLU is not built yet: use ReLU, x^2 (kasoku.nn.Square), SiLU, GELU or tanh")
        if isinstance(m, (nn.Softmax, nn.LogSoftmax)):
            return (
                "unsupported",
                f"{type(m).__name__} is taken only as the model's last operation (compile's output=)",
            )
        if isinstance(m, (nn.LayerNorm, nn.GroupNorm, nn.InstanceNorm1d, nn.InstanceNorm2d)):
            return (
                "unsupported",
                f"{type(m).__name__} divides by each sample's own standard deviation, an encrypted inverse square "
                "root, which kasoku.nn does not build: use BatchNorm (eval mode: affine, folded into its neighbours "
                "for free), or normalise the inputs before encrypting them",
            )
        return ("unsupported", f"layer type {type(m).__name__} is not supported")
    if node.op == "call_function":
        f = node.target
        if f in (operator.mul, torch.mul) and len(node.args) == 2 and node.args[0] is node.args[1]:
            return "square"
        if f in (torch.square,) or (f in (operator.pow, torch.pow) and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        linear_in_one = (
            operator.mul, operator.truediv, operator.add, operator.sub, operator.neg, operator.matmul, torch.mul,
            torch.div, torch.true_divide, torch.add, torch.sub, torch.neg, torch.matmul, F.linear, F.conv1d, F.conv2d,
            F.batch_norm, F.dropout, F.dropout1d, F.dropout2d, F.alpha_dropout, torch.mean, torch.sum,
        )  # fmt: skip
        if f in (
            torch.flatten,
            torch.reshape,
            torch.permute,
            torch.transpose,
            torch.squeeze,
            torch.unsqueeze,
            F.avg_pool1d,
            F.avg_pool2d,
            F.adaptive_avg_pool1d,
            F.adaptive_avg_pool2d,
            operator.getitem,
            getattr,  # x.shape, x.ndim: evaluated with the region
        ) or (f in linear_in_one and len(args) == 1):
            return "affine"
        if (
            f is F.pad
            and len(args) == 1
            and (node.kwargs.get("value", node.args[3] if len(node.args) > 3 else 0) or 0) == 0
        ):
            if node.kwargs.get("mode", node.args[2] if len(node.args) > 2 else "constant") == "constant":
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
        if f in (operator.mul, torch.mul, operator.matmul, torch.matmul) and len(args) == 2:
            return (
                "unsupported",
                "a product of two values computed from the input (a ciphertext by a ciphertext) is supported only as "
                "x * x; products by constants (parameters, buffers, literals) are plaintext products and compile",
            )
        if f in (torch.relu, F.relu):
            return ("relu",)
        if f is F.relu6:
            return ("relu", 6.0)
        if f is F.hardtanh:
            low, high = (node.kwargs.get(k, node.args[i] if len(node.args) > i else d) for i, k, d in _HARDTANH)
            if low == 0 and high > 0:
                return ("relu", float(high))
            return ("unsupported", f"hardtanh({low}, {high}) is not built: hardtanh(x, 0, m) (a clipped ReLU) is")
        if f in (torch.softmax, F.softmax, torch.log_softmax, F.log_softmax):
            return ("unsupported", f"{f.__name__} is taken only as the model's last operation (compile's output=)")
        if f in (F.layer_norm, F.group_norm, F.instance_norm):
            return ("unsupported", f"{f.__name__}: an encrypted inverse square root, not built: use BatchNorm")
        return ("unsupported", f"function {getattr(f, '__name__', f)} is not supported")
    if node.op == "call_method":
        if node.target in ("mul", "__mul__") and len(node.args) == 2 and node.args[0] is node.args[1]:
            return "square"
        if node.target in _AFFINE_METHODS and len(args) == 1:
            return "affine"
        if node.target in ("add", "sub") and len(args) == 2:
            return "affine"  # a residual connection
        if node.target == "square" or (node.target == "pow" and len(node.args) == 2 and node.args[1] == 2):
            return "square"
        if node.target in ("sigmoid", "tanh"):
            return ("smooth", node.target)
        if node.target == "relu":
            return ("relu",)
        if node.target in ("softmax", "log_softmax"):
            return ("unsupported", f".{node.target}() is taken only as the model's last operation (compile's output=)")
        if node.target in ("mul", "matmul", "__matmul__") and len(args) == 2:
            return ("unsupported", "a product of two values computed from the input is supported only as x * x")
        return ("unsupported", f"method .{node.target}() is not supported")
    return ("unsupported", f"graph node {node.op} {node.target}")


def source_line(node) -> str:
    """Where the node stands in the model's own source, from the trace's stack: " (models.py:42: h = x * w)", or ""."""
    import os

    lines = (node.stack_trace or "").splitlines()
    torch_dir = os.path.dirname(import_torch().__file__)
    here = os.path.dirname(os.path.dirname(__file__))
    for i, line in enumerate(lines):
        line = line.strip()
        if not line.startswith('File "'):
            continue
        path = line[6 : line.index('"', 6)]
        if path.startswith(torch_dir) or path.startswith(here):
            continue
        number = line.split(", line ")[1].split(",")[0] if ", line " in line else "?"
        code = lines[i + 1].strip() if i + 1 < len(lines) else ""
        return f" ({os.path.basename(path)}:{number}: {code})"
    return ""


def layer_name(node, modules) -> str:
    """A layer's name as its model says it: the module's path and type, or the function traced."""
    if node.op == "call_module":
        return f"{node.target} ({type(modules[node.target]).__name__})"
    if node.op == "call_function":
        return f"{node.name} ({getattr(node.target, '__name__', node.target)})"
    return f"{node.name} (.{node.target}())"


def trace_model(torch, model):
    """torch.fx's graph of the model, with this package's activations kept as modules (not traced into), each node's
    place in the model's source recorded (source_line), and the nodes computed from constants alone marked
    (meta["kasoku_const"]). Shapes read in forward (x.size(0), x.shape[0], x.dim()) stay nodes of the graph, evaluated
    on each run's own input: the calibration batch, the probes, one sample (tracing with the example's concrete shapes,
    as torch.export does, would fix the batch of one in every reshape)."""

    class Tracer(torch.fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, (Square, Polynomial)) or super().is_leaf_module(m, qualname)

    tracer = Tracer()
    tracer.record_stack_traces = True
    # len(x) in a forward: recorded as a node (a shape) instead of refused, as torch.fx.wrap("len") in the model's own
    # modules would (torch.fx's table of wrapped functions, private: without it len stays refused, with a hint)
    table = getattr(torch.fx._symbolic_trace, "_wrapped_fns_to_patch", None)
    added = []
    if isinstance(table, dict):
        for g in {id(f.__globals__): f.__globals__ for f in (type(m).forward for m in model.modules())}.values():
            if (id(g), "len") not in table:
                table[(id(g), "len")] = g
                added.append((id(g), "len"))
    try:
        graph = tracer.trace(model)
    except (RuntimeError, NameError, torch.fx.proxy.TraceError) as e:
        text = str(e)
        hint = (
            "len(x) of a traced tensor: write x.shape[0] or x.size(0)"
            if "'len'" in text
            else "a module made inside forward: make it in __init__ (self.act = nn.ReLU()), or call its function "
            "(F.relu)"
            if "not installed as a submodule" in text
            else "forward takes a branch on a value or a shape computed from the input: kasoku.nn traces one path "
            "of the model; write the branch's condition from constants (or take the branch outside forward)"
            if "control flow" in text
            else text
        )
        raise ks.ParameterError(f"kasoku.nn could not trace the model: {hint} ({type(e).__name__})") from None
    finally:
        for key in added:
            table.pop(key, None)
    for n in graph.nodes:
        if n.op == "get_attr" or (
            n.op.startswith("call_") and all(a.meta.get("kasoku_const") for a in n.all_input_nodes)
        ):
            n.meta["kasoku_const"] = True
    return torch.fx.GraphModule(model, graph)


def _is_relu(torch, node, modules) -> bool:
    """Whether a node's values are a ReLU's (module, function or method: never negative)."""
    F = torch.nn.functional
    return (
        (node.op == "call_module" and type(modules.get(node.target)) in (torch.nn.ReLU, torch.nn.ReLU6))
        or (node.op == "call_function" and node.target in (torch.relu, F.relu, F.relu6))
        or (node.op == "call_method" and node.target == "relu")
    )


def lower_max_pools(torch, gm, x) -> None:
    """Each max-pooling (MaxPool1d/2d, F.max_pool1d/2d) rewritten in the graph as what the plan evaluates: the window's
    elements as strided slices (affine), reduced in pairs by max(a, b) = b + relu(a - b), so that a k x k window costs
    ceil(log2(k^2)) ReLUs one after the other (ReLU's sign stages, levels and precision). Padding, which is -infinity,
    becomes zeros where the pooled values are a ReLU's (torchvision's ResNets pool so). Raises ks.ParameterError for
    other padding, dilation, ceil_mode or return_indices."""
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
    shapes = {n: tuple(n.args[0].meta["tensor_meta"].shape) for n, _, _ in pools}  # before any pool is rewritten
    for n, dims, o in pools:
        tup = lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * dims  # noqa: E731
        k = tup(o["kernel_size"])
        s = tup(o["stride"] if o["stride"] not in (None, [], ()) else o["kernel_size"])
        src = n.args[0]
        pad = tup(o["padding"])
        # padding is -infinity; after a ReLU (values >= 0, so a window's max is >= 0) zeros give the same maxima
        if any(pad) and not _is_relu(torch, src, modules):
            raise ks.ParameterError(
                f"layer {layer_name(n, modules)}{source_line(n)}: max-pooling with padding pads with -infinity, which "
                "CKKS cannot hold: pool the output of a ReLU (where zeros give the same maxima), pad with zeros first "
                "(F.pad), or pool without padding"
            )
        if any(d != 1 for d in tup(o["dilation"])) or o["ceil_mode"] or o["return_indices"]:
            raise ks.ParameterError(
                f"layer {layer_name(n, modules)}{source_line(n)}: max-pooling with dilation, ceil_mode or "
                "return_indices is not built: pool without them"
            )
        if any(pad):
            with gm.graph.inserting_before(n):
                spec = tuple(v for p_ in reversed(pad) for v in (p_, p_))  # F.pad's order: last dimension first
                src = gm.graph.create_node("call_function", F.pad, (src, spec), name=f"{n.name}_zeros")
        size = tuple(sz + 2 * p_ for sz, p_ in zip(shapes[n][-dims:], pad))
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


def mark_shapes(torch, gm, x) -> None:
    """Marks the nodes whose values are shapes, not tensors (x.size(0), x.shape[0], x.dim(), and what is computed from
    them), by running the graph on the sample x as a batch of one: meta["kasoku_shape"]. They are evaluated where a
    node reads them, from that run's own input."""
    nodes = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    placeholder = next(n for n in gm.graph.nodes if n.op == "placeholder")
    with torch.no_grad():
        env = run_nodes(torch, gm, nodes, {placeholder: x[None]})
    for n in nodes:
        if not n.meta.get("kasoku_const") and not isinstance(env[n], torch.Tensor):
            n.meta["kasoku_shape"] = True


def strip_final(torch, gm):
    """The model's last operation when it is a softmax, log-softmax or sigmoid (module, function or method): removed
    from the graph, so that the plan computes what it reads (the logits), and returned as (name, dim) for the client to
    apply after decryption; else None. These keep the decision (argmax) and cost nothing in the clear."""
    nn, F = torch.nn, torch.nn.functional
    modules = dict(gm.named_modules())
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    last = out.args[0]
    if not isinstance(last, torch.fx.Node) or len(last.users) != 1:
        return None
    final = None
    if last.op == "call_module":
        m = modules[last.target]
        if isinstance(m, (nn.Softmax, nn.LogSoftmax)):
            final = ("softmax" if isinstance(m, nn.Softmax) else "log_softmax", m.dim)
        elif isinstance(m, nn.Sigmoid):
            final = ("sigmoid", None)
    elif last.op == "call_function" and last.target in (torch.softmax, F.softmax, torch.log_softmax, F.log_softmax):
        dim = last.kwargs.get("dim", last.args[1] if len(last.args) > 1 else None)
        final = ("softmax" if last.target in (torch.softmax, F.softmax) else "log_softmax", dim)
    elif last.op == "call_function" and last.target in (torch.sigmoid, F.sigmoid):
        final = ("sigmoid", None)
    elif last.op == "call_method" and last.target in ("softmax", "log_softmax", "sigmoid"):
        dim = last.kwargs.get("dim", last.args[1] if len(last.args) > 1 else None)
        final = (last.target, dim if last.target != "sigmoid" else None)
    if final is None:
        return None
    out.args = (last.args[0],)
    gm.graph.erase_node(last)
    gm.graph.lint()
    gm.recompile()
    return final


def tensor_inputs(node) -> list:
    """The graph nodes a node reads its values from (constants: parameters, buffers and what is computed from them
    alone, and shapes do not count)."""
    return [a for a in node.all_input_nodes if not (a.meta.get("kasoku_const") or a.meta.get("kasoku_shape"))]


def run_nodes(torch, gm, nodes, env: dict) -> dict:
    """Runs graph nodes in order on the values of env (node -> tensor) and returns env with theirs added."""
    modules = dict(gm.named_modules())
    env = dict(env)

    def value(n):
        if n.op == "get_attr":
            v = gm
            for part in n.target.split("."):
                v = getattr(v, part)
            return v
        if n not in env and (n.meta.get("kasoku_const") or n.meta.get("kasoku_shape")):
            env.update(run_nodes(torch, gm, [n], env))  # a constant or a shape, computed where it is read
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


def affine_region(node, held, kinds):
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
        todo.extend(tensor_inputs(n))
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    return sorted(region, key=order.get), sorted(ins, key=order.get)
