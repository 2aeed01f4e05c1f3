"""ks.bigmul and ks.bigmul_decimal (Kawamura et al.'s NTT multiplication) against Python's int."""

import random
import sys

import pytest

import kasoku as ks


@pytest.mark.parametrize("digits", [1, 9, 50, 400, 3000, 20000, 100000])
def test_bigmul_equals_python_int(digits):
    rng = random.Random(digits)
    bits = max(1, int(digits * 3.3219))
    for sa, sb in ((1, 1), (-1, 1), (-1, -1)):
        a, b = sa * rng.getrandbits(bits), sb * rng.getrandbits(bits + 17)
        for threads in (None, 2):
            assert ks.bigmul(a, b, threads=threads) == a * b
    m = (1 << bits) - 1  # every limb all ones: the largest convolution values
    assert ks.bigmul(m, m) == m * m


def test_bigmul_edges_and_errors():
    assert ks.bigmul(0, 10**50) == 0 and ks.bigmul(-1, 1) == -1 and ks.bigmul(True, 7) == 7
    with pytest.raises(ks.ParameterError, match="Python ints"):
        ks.bigmul(1.5, 2)
    with pytest.raises(ks.ParameterError, match="threads"):
        ks.bigmul(3, 4, threads=0)


def test_bigmul_decimal_the_seeds_scheme():
    if hasattr(sys, "set_int_max_str_digits"):  # CPython >= 3.11 limits int <-> str to 4300 digits by default
        old = sys.get_int_max_str_digits()
        sys.set_int_max_str_digits(0)
    try:
        rng = random.Random(3)
        for digits in (1, 30, 1000, 32768):
            a = str(rng.randrange(10 ** (digits - 1), 10**digits))
            b = "-" + str(rng.randrange(10 ** (digits - 1), 10**digits))
            assert ks.bigmul_decimal(a, b) == str(int(a) * int(b))
    finally:
        if hasattr(sys, "set_int_max_str_digits"):
            sys.set_int_max_str_digits(old)
    nines = "9" * 32768
    assert ks.bigmul_decimal(nines, nines) == "9" * 32767 + "8" + "0" * 32767 + "1"
    with pytest.raises(ks.ParameterError, match="decimal integer"):
        ks.bigmul_decimal("12x", "3")
    with pytest.raises(ks.ParameterError, match="32768"):
        ks.bigmul_decimal("1" * 40000, "3")
