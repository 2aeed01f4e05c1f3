// Big-integer multiplication through the NTT (Kawamura et al.): the byte-level entries under ks.bigmul /
// ks.bigmul_decimal.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstring>

#include "bindings_internal.hpp"
#include "kasoku/hls/bigmul.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kasoku_py {

namespace {
std::vector<std::uint32_t> limbs(const nb::bytes& b) {
    std::vector<std::uint32_t> v((b.size() + 3) / 4, 0);
    if (b.size()) std::memcpy(v.data(), b.c_str(), b.size());  // little-endian bytes = little-endian limbs (x86)
    return v;
}
}  // namespace

void bind_hls(nb::module_& m) {
    nb::class_<kasoku::hls::Multiplier>(
        m, "_BigMultiplier", "Keeps the NTT tables of the last sizes it multiplied at (ks.bigmul holds one).")
        .def(nb::init<>())
        .def(
            "bytes",
            [](const kasoku::hls::Multiplier& mult, nb::bytes a, nb::bytes b, int threads) {
                const auto x = limbs(a), y = limbs(b);
                std::vector<std::uint32_t> p;
                {
                    nb::gil_scoped_release release;
                    p = mult.multiply(x, y, threads);
                }
                return nb::bytes(reinterpret_cast<const char*>(p.data()), p.size() * 4);
            },
            "a"_a, "b"_a, "threads"_a = 1,
            "The product of two little-endian magnitudes (bytes), as bytes: use ks.bigmul.");
    m.def(
        "bigmul_decimal",
        [](const std::string& a, const std::string& b) { return kasoku::hls::multiply_decimal(a, b); }, "a"_a, "b"_a,
        "The product of two decimal strings by Kawamura et al.'s scheme (base-10 digits, the M-point NTT over its "
        "smallest "
        "prime P >= 81 M), up to 32,768 digits each, e.g. bigmul_decimal('123', '-4') == '-492'.",
        ReleaseGil());
}

}  // namespace kasoku_py
