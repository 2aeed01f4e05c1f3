"""kasoku (加速): fast RNS-CKKS homomorphic encryption::

    import numpy as np, kasoku as ks
    ctx = ks.Context(ks.Parameters.named("T13"))
    keys = ctx.keygen(rotations=[1])
    ev = ctx.evaluator(keys.evaluation())
    ct = ctx.encrypt(np.array([1.0, 2.0]), keys.public)
    print(ctx.decrypt(ct * ct + 1.0, keys.secret)[:2].real)

The guides (docs/) and README.md say how the pieces fit together.
"""

from typing import Any

from .errors import (  # noqa: F401
    DeviceError,
    Error,
    InternalError,
    LevelError,
    MissingKeyError,
    ParameterError,
    RetryLater,
    ScaleError,
    SerializationError,
    ServiceError,
)
from ._kasoku import (  # noqa: F401
    Bootstrapper,
    Ciphertext,
    Context,
    Decomposition,
    EncryptedMatrix,
    EvaluationKeys,
    Evaluator,
    FloodedDecryption,
    Flooding,
    GpuKernelsSkipped,
    KeyPair,
    LazyCiphertext,
    LinearTransform,
    MatrixEncoder,
    Parameters,
    Plaintext,
    Polynomial,
    PublicKey,
    SecretKey,
    SwitchKey,
    build_info,
    chebyshev,
    chebyshev_nodes,
    cuda_info,
    flooding_precision_bits,
    flooding_sigma,
    hardware_threads,
    inverse_depth,
    memory_pool_limit,
    matmul,
    matmul_schoolbook,
    set_memory_pool_limit,
    sign_depth,
    simd_active,
    simd_available,
    simd_cpu_supports,
    trace_doubling_steps,
    trace_galois_elements,
    trace_group_sizes,
)

from . import multiparty, sched  # noqa: E402,F401  (ks.multiparty, ks.sched)
from .bigint import bigmul, bigmul_decimal  # noqa: E402

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """ks.Client, the client of the encrypted-compute service (kasoku.service.client), loaded at its first use: the
    library is the package's lowest floor and imports nothing of the service above it at import time."""
    if name == "Client":
        from .service.client import Client  # the one import of a higher floor, asked for by name (test_import_graph)

        globals()["Client"] = Client
        return Client
    raise AttributeError(f"module 'kasoku' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"Client"})


__all__ = [
    "Bootstrapper",
    "Ciphertext",
    "Context",
    "Decomposition",
    "DeviceError",
    "EncryptedMatrix",
    "Error",
    "EvaluationKeys",
    "Evaluator",
    "FloodedDecryption",
    "Flooding",
    "GpuKernelsSkipped",
    "InternalError",
    "KeyPair",
    "LazyCiphertext",
    "LevelError",
    "LinearTransform",
    "MatrixEncoder",
    "matmul",
    "matmul_schoolbook",
    "MissingKeyError",
    "ParameterError",
    "Parameters",
    "RetryLater",
    "ServiceError",
    "Client",
    "Plaintext",
    "Polynomial",
    "PublicKey",
    "ScaleError",
    "SecretKey",
    "SerializationError",
    "SwitchKey",
    "build_info",
    "chebyshev",
    "chebyshev_nodes",
    "cuda_info",
    "flooding_precision_bits",
    "flooding_sigma",
    "inverse_depth",
    "sign_depth",
    "hardware_threads",
    "memory_pool_limit",
    "set_memory_pool_limit",
    "simd_active",
    "simd_available",
    "simd_cpu_supports",
    "trace_doubling_steps",
    "trace_galois_elements",
    "trace_group_sizes",
    "sched",
    "multiparty",
    "bigmul",
    "bigmul_decimal",
    "__version__",
]
