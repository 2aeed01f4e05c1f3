#include "kasoku/hls/ntt.hpp"

#include <memory>
#include <string>
#include <utility>

#include "kasoku/arith/primes.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::hls {

int Field::bits() const {
    int b = 0;
    for (word v = p; v; v >>= 1) ++b;
    return b;
}

Field seed_field(int m) {
    if (m < 2 || m > kMaxLogPoints)
        throw ParameterError("hls: the seed's NTT has M = 2^m points with m in 2.." + std::to_string(kMaxLogPoints) +
                             ", got m = " + std::to_string(m));
    const word M = word(1) << m;
    Field f;
    f.m = m;
    f.s = 81;  // P = s*M + 1 >= 81*M: the smallest s >= 81 that makes P prime
    while (!arith::is_prime(wide(f.s) * M + 1)) ++f.s;
    f.p = f.s * M + 1;
    f.alpha = static_cast<word>(arith::primitive_root_2n(f.p, M / 2));  // order 2 * (M/2) = M
    return f;
}

const char* structure_name(Structure s) {
    switch (s) {
        case Structure::nested: return "nested (Fig. 4)";
        case Structure::inner_flattened: return "inner loops flattened (Fig. 5)";
        case Structure::fully_flattened: return "fully flattened (Fig. 6)";
        case Structure::two_butterflies: return "two butterflies per iteration (Fig. 7)";
    }
    return "?";
}

namespace {

template <int m>
std::vector<word> run(Structure structure, const Field& f, const std::vector<word>& in) {
    auto rom = std::make_unique<Rom<m>>();
    auto st = std::make_unique<Stages<m>>();
    make_rom<m>(f, *rom);
    for (int i = 0; i < (1 << m); ++i) st->data[0][i] = in[i];
    switch (structure) {
        case Structure::nested: ntt_nested<m>(*st, *rom, f.p); break;
        case Structure::inner_flattened: ntt_inner_flattened<m>(*st, *rom, f.p); break;
        case Structure::fully_flattened: ntt_fully_flattened<m>(*st, *rom, f.p); break;
        case Structure::two_butterflies: ntt_two_butterflies<m>(*st, *rom, f.p); break;
        default: throw ParameterError("hls::ntt: unknown loop structure");
    }
    return std::vector<word>(st->data[m], st->data[m] + (1 << m));
}

template <int... ms>
std::vector<word> dispatch(std::integer_sequence<int, ms...>, Structure structure, const Field& f,
                           const std::vector<word>& in) {
    std::vector<word> out;
    ((f.m == ms + 2 ? (out = run<ms + 2>(structure, f, in), 0) : 0), ...);
    return out;
}

void check(const Field& f, const std::vector<word>& in, const char* what) {
    if (f.m < 2 || f.m > kMaxLogPoints || f.p == 0)
        throw ParameterError(std::string("hls::") + what + ": the field is not one of seed_field(2.." +
                             std::to_string(kMaxLogPoints) + ")");
    if (in.size() != (std::size_t(1) << f.m))
        throw ParameterError(std::string("hls::") + what + ": expected " + std::to_string(1 << f.m) +
                             " residues, got " + std::to_string(in.size()));
    for (word v : in)
        if (v >= f.p)
            throw ParameterError(std::string("hls::") + what + ": residue " + std::to_string(v) +
                                 " is not below P = " + std::to_string(f.p));
}

}  // namespace

std::vector<word> ntt(Structure structure, const Field& f, const std::vector<word>& in) {
    check(f, in, "ntt");
    return dispatch(std::make_integer_sequence<int, kMaxLogPoints - 1>{}, structure, f, in);
}

std::vector<word> dft(const Field& f, const std::vector<word>& in) {
    check(f, in, "dft");
    const std::size_t M = in.size();
    std::vector<word> out(M);
    word root_k = 1;  // alpha^k
    for (std::size_t k = 0; k < M; ++k) {
        word acc = 0, w = 1;  // w = alpha^(tk)
        for (std::size_t t = 0; t < M; ++t) {
            acc = add_mod(acc, mul_mod(in[t], w, f.p), f.p);
            w = mul_mod(w, root_k, f.p);
        }
        out[k] = acc;
        root_k = mul_mod(root_k, f.alpha, f.p);
    }
    return out;
}

}  // namespace kasoku::hls
