#include "kasoku/rns/scaling_tables.hpp"

namespace kasoku::rns {

using arith::Modulus;

ScalingTables::ScalingTables(const RnsContext& R) {
    const std::vector<u64>& q = R.q_primes();
    const std::vector<u64>& p = R.p_primes();
    std::vector<Modulus> mods;
    for (std::size_t i = 0; i < q.size() + p.size(); ++i) mods.push_back(R.modulus(i));
    const std::size_t L = q.size() - 1;
    rescale_inv.resize(L + 1); rescale_inv_shoup.resize(L + 1); rescale_half.resize(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
        for (std::size_t i = 0; i < l; ++i) {
            u64 inv = arith::inv_mod(q[l] % q[i], mods[i]);
            rescale_inv[l].push_back(inv);
            rescale_inv_shoup[l].push_back(arith::shoup(inv, q[i]));
            rescale_half[l].push_back((q[l] >> 1) % q[i]);
        }
    }
    const std::size_t alpha = R.alpha(), digits = R.dnum();
    digit_conv.resize(digits * alpha);
    for (std::size_t j = 0; j < digits; ++j) {
        const std::size_t begin = R.digit_begin(j), full = R.digit_size(j, q.size());
        for (std::size_t m = 1; m <= full; ++m) {
            std::vector<Modulus> src(mods.begin() + begin, mods.begin() + begin + m);
            digit_conv[j * alpha + m - 1] = BaseConverter(src, mods);
        }
    }
    if (p.empty()) return;
    std::vector<Modulus> pm(mods.begin() + q.size(), mods.end());
    std::vector<Modulus> qm(mods.begin(), mods.begin() + q.size());
    p_to_q = BaseConverter(pm, qm);
    for (std::size_t i = 0; i <= L; ++i) {
        u64 pi = 1;
        for (u64 pj : p) pi = arith::mul_mod(pi, pj % q[i], mods[i]);
        p_mod_q.push_back(pi);
        p_mod_q_shoup.push_back(arith::shoup(pi, q[i]));
        p_inv.push_back(arith::inv_mod(pi, mods[i]));
        p_inv_shoup.push_back(arith::shoup(p_inv.back(), q[i]));
        p0_inv.push_back(arith::inv_mod(p[0] % q[i], mods[i]));
        p0_inv_shoup.push_back(arith::shoup(p0_inv.back(), q[i]));
        p0_half.push_back((p[0] >> 1) % q[i]);
    }
    pq_to_q.resize(L + 1); pq_inv.resize(L + 1); pq_inv_shoup.resize(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
        std::vector<Modulus> src = pm;
        src.push_back(mods[l]);
        pq_to_q[l] = BaseConverter(src, std::vector<Modulus>(mods.begin(), mods.begin() + l));
        for (std::size_t i = 0; i < l; ++i) {
            u64 v = arith::mul_mod(p_inv[i], rescale_inv[l][i], mods[i]);
            pq_inv[l].push_back(v);
            pq_inv_shoup[l].push_back(arith::shoup(v, q[i]));
        }
    }
}

}  // namespace kasoku::rns
