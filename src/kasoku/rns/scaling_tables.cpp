#include "kasoku/rns/scaling_tables.hpp"

namespace kasoku::rns {

using arith::Modulus;

ScalingTables::ScalingTables(const RnsContext& R) {
    const std::vector<u64>& q = R.q_primes();
    const std::vector<u64>& p = R.p_primes();
    std::vector<Modulus> mods;
    for (std::size_t i = 0; i < q.size() + p.size(); ++i) mods.push_back(R.modulus(i));
    const std::size_t L = q.size() - 1;
    rescale_inv.resize(L + 1);
    rescale_inv_shoup.resize(L + 1);
    rescale_half.resize(L + 1);
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
    p_to_q.resize(p.size() + 1);
    p_inv.resize(p.size() + 1);
    p_inv_shoup.resize(p.size() + 1);
    std::vector<u64> pk(L + 1, 1);  // P_k mod q_i
    for (std::size_t k = 1; k <= p.size(); ++k) {
        p_to_q[k] = BaseConverter(std::vector<Modulus>(pm.begin(), pm.begin() + static_cast<std::ptrdiff_t>(k)), qm);
        for (std::size_t i = 0; i <= L; ++i) {
            pk[i] = arith::mul_mod(pk[i], p[k - 1] % q[i], mods[i]);
            p_inv[k].push_back(arith::inv_mod(pk[i], mods[i]));
            p_inv_shoup[k].push_back(arith::shoup(p_inv[k].back(), q[i]));
        }
    }
    const std::vector<u64>& full_inv = p_inv[p.size()];
    for (std::size_t i = 0; i <= L; ++i) {
        p_mod_q.push_back(pk[i]);
        p_mod_q_shoup.push_back(arith::shoup(pk[i], q[i]));
        p0_half.push_back((p[0] >> 1) % q[i]);
    }
    pq_to_q.resize(L + 1);
    pq_inv.resize(L + 1);
    for (std::size_t l = 1; l <= L; ++l) {
        std::vector<Modulus> src = pm;
        src.push_back(mods[l]);
        pq_to_q[l] = BaseConverter(src, std::vector<Modulus>(mods.begin(), mods.begin() + l));
        for (std::size_t i = 0; i < l; ++i) {
            pq_inv[l].push_back(arith::mul_mod(full_inv[i], rescale_inv[l][i], mods[i]));
        }
    }
}

}  // namespace kasoku::rns
