# nanobind stubgen patterns: the signatures that a C++ signature cannot express.
# matmul and matmul_schoolbook return a pair when return_counts=True.
kasoku\._kasoku\.matmul$:
    \from typing import Literal, overload
    @overload
    def matmul(ev: Evaluator, a: EncryptedMatrix, b: EncryptedMatrix, threads: int | None = None, return_counts: Literal[False] = False) -> EncryptedMatrix:
        \doc
    @overload
    def matmul(ev: Evaluator, a: EncryptedMatrix, b: EncryptedMatrix, threads: int | None = None, *, return_counts: Literal[True]) -> tuple[EncryptedMatrix, dict[str, int]]: ...

kasoku\._kasoku\.matmul_schoolbook$:
    \from typing import Literal, overload
    @overload
    def matmul_schoolbook(ev: Evaluator, a: Sequence[Ciphertext], b: Sequence[Ciphertext], d: int, threads: int | None = None, return_counts: Literal[False] = False) -> list[Ciphertext]:
        \doc
    @overload
    def matmul_schoolbook(ev: Evaluator, a: Sequence[Ciphertext], b: Sequence[Ciphertext], d: int, threads: int | None = None, *, return_counts: Literal[True]) -> tuple[list[Ciphertext], dict[str, int]]: ...

# Context.decrypt returns the values, or a FloodedDecryption when flood is True or a Flooding.
kasoku\._kasoku\.Context\.decrypt$:
    @overload
    def decrypt(self, ct: Ciphertext, secret_key: SecretKey, slots: int | None = None, threads: int | None = None, flood: Literal[False] | None = None) -> numpy.typing.NDArray[numpy.complex128]:
        \doc
    @overload
    def decrypt(self, ct: Ciphertext, secret_key: SecretKey, slots: int | None = None, threads: int | None = None, *, flood: Literal[True] | Flooding) -> FloodedDecryption: ...
