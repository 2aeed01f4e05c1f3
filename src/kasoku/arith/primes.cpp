#include "kasoku/arith/primes.hpp"

#include <algorithm>
#include <string>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::arith {

namespace {
u64 mulm(u64 a, u64 b, u64 n) { return static_cast<u64>(static_cast<u128>(a) * b % n); }
u64 powm(u64 b, u64 e, u64 n) {
    u64 r = 1;
    b %= n;
    while (e) {
        if (e & 1) r = mulm(r, b, n);
        b = mulm(b, b, n);
        e >>= 1;
    }
    return r;
}
}  // namespace

bool is_prime(u64 n) {
    if (n < 2) return false;
    for (u64 p : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
        if (n % p == 0) return n == p;
    }
    u64 d = n - 1;
    int s = 0;
    while ((d & 1) == 0) {
        d >>= 1;
        ++s;
    }
    for (u64 a : {2ull, 3ull, 5ull, 7ull, 11ull, 13ull, 17ull, 19ull, 23ull, 29ull, 31ull, 37ull}) {
        u64 x = powm(a, d, n);
        if (x == 1 || x == n - 1) continue;
        bool composite = true;
        for (int r = 1; r < s; ++r) {
            x = mulm(x, x, n);
            if (x == n - 1) {
                composite = false;
                break;
            }
        }
        if (composite) return false;
    }
    return true;
}

std::vector<u64> generate_ntt_primes(int bits, int count, u64 n, const std::vector<u64>& exclude) {
    if (bits < 10 || bits > kMaxModulusBits)
        throw ParameterError("prime size must be 10.." + std::to_string(kMaxModulusBits) + " bits, got " +
                             std::to_string(bits));
    const u64 step = 2 * n;
    const u64 lo = 1ull << (bits - 1), hi = 1ull << bits;
    std::vector<u64> out;
    // Search downward from 2^bits (SEAL's choice): scales are tracked exactly, so the primes need not
    // be balanced around 2^bits.
    u64 cand = (hi - 1) / step * step + 1;
    while (static_cast<int>(out.size()) < count && cand > lo) {
        if (is_prime(cand) && std::find(exclude.begin(), exclude.end(), cand) == exclude.end()) out.push_back(cand);
        if (cand < step) break;
        cand -= step;
    }
    if (static_cast<int>(out.size()) < count)
        throw ParameterError("not enough " + std::to_string(bits) + "-bit primes q = 1 mod " + std::to_string(step) +
                             ": needed " + std::to_string(count) + ", found " + std::to_string(out.size()) +
                             "; use larger prime sizes or a smaller ring degree");
    return out;
}

u64 primitive_root_2n(u64 q, u64 n) {
    const u64 order = 2 * n;
    if ((q - 1) % order != 0) throw ParameterError("modulus is not 1 mod 2n");
    // g^((q-1)/2n) is a primitive 2n-th root iff its n-th power is q-1 (order is a power of two).
    for (u64 g = 2; g < q; ++g) {
        u64 r = powm(g, (q - 1) / order, q);
        if (powm(r, n, q) == q - 1) {
            return r;
        }
    }
    throw ParameterError("no primitive 2n-th root of unity");
}

}  // namespace kasoku::arith
