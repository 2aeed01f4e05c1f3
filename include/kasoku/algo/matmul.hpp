// Encrypted matrix multiplication (Jiang, Kim, Lauter, Song, CCS 2018; Manabe et al.) with g matrices packed per
// ciphertext (Manabe et al. Alg. 1):
//
//   V[g*j + i] = M_i[j / d][j mod d]  (j < d*d, i < g), tiled to fill the slots,
//   AB = sum_{k<d} phi^k(sigma(A)) (.) psi^k(tau(B))  (depth 3),
//
// sigma (2d-1 diagonals) and tau (d diagonals) are BSGS linear transforms; phi^k (two masked rotations) of all k
// share one decomposition of sigma(A), and psi^k (one rotation by d*k) of all k one decomposition of tau(B); the
// d tensor products are summed before one relinearisation and one rescale. Matrices with d*d > slots are split into
// blocks (several ciphertexts); an l x d left operand (l | d) gives the rectangular product of Jiang et al. §3.3.
//
// Errors: ParameterError for shapes that do not fit (d or g zero, g*d*d above the slots, rows not dividing d, matrices
// of the wrong number or size, non-finite entries, an unknown transform name, operands packed differently or of
// another context); LevelError for fewer than 3 levels; MissingKeyError for a missing Galois or relinearisation key
// (matmul checks every key before any work).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/ckks/crypto.hpp"

namespace kasoku::algo {

class MatmulPlan;  // geometry plus the transforms and masks of each level, built on first use

// g encrypted matrices of shape rows x d (several block ciphertexts when d*d > slots).
struct EncryptedMatrix {
    std::vector<ckks::Ciphertext> blocks;  // grid x grid block ciphertexts, row major
    std::size_t rows = 0;
    std::shared_ptr<const MatmulPlan> plan;
    std::size_t d() const;
    std::size_t g() const;
    std::size_t grid() const;
    int level() const { return blocks.empty() ? -1 : blocks[0].level(); }
};

class MatrixEncoder {
public:
    // d x d matrices, g of them per ciphertext (g * d * d <= slots; with g = 1 and d * d > slots the matrix is split
    // into blocks of the largest power of two b with b * b <= slots). rows (0 = d): the rows of the left operands of
    // rectangular products (rows | d); only galois_elements() depends on it.
    // @throws ParameterError for d or g zero, g > 1 with g * d * d above the slots, or rows that do not divide d (or
    //     rows < d with blocks)
    MatrixEncoder(ckks::ContextPtr ctx, std::size_t d, std::size_t g = 1, std::size_t rows = 0);

    std::size_t d() const;
    std::size_t g() const;
    std::size_t rows() const { return rows_; }
    std::size_t block() const;  // dimension of one packed block
    std::size_t grid() const;   // blocks per side

    // g matrices, each `rows` x d, row major (rows = d, or rows | d when grid() == 1) -> one slot vector per block.
    // @throws ParameterError for other than g matrices, a rows that is neither d nor such a divisor, a matrix of
    //     another size than rows x d, or non-finite entries
    std::vector<cvec> pack(const std::vector<std::vector<double>>& mats, std::size_t rows) const;
    // The inverse of pack (real parts).
    // @throws ParameterError for other than grid() x grid() blocks, rows outside 1..d, or a block of fewer values than
    //     it packs (g block^2)
    std::vector<std::vector<double>> unpack(const std::vector<cvec>& blocks, std::size_t rows) const;
    // pack, then each block encoded at `level` (-1: the user level) with its canonical scale and encrypted.
    // @throws LevelError if `level` is outside 3..max_level
    // @throws ParameterError as pack, for a public key of another context, or a negative thread count
    // @throws ScaleError if the entries, encoded, do not fit the modulus at `level`
    // @throws Error if the OS has no randomness to give
    EncryptedMatrix encrypt(const std::vector<std::vector<double>>& mats, std::size_t rows, const ckks::PublicKey& pk,
                            int level = -1, Exec exec = {}) const;
    // Each block decrypted, then unpack.
    // @throws ParameterError for a matrix made with another encoder (d, g or context), blocks of another secret key,
    //     malformed blocks or the wrong number of them, or a negative thread count
    std::vector<std::vector<double>> decrypt(const EncryptedMatrix& m, const ckks::SecretKey& sk, Exec exec = {}) const;
    // Exactly the Galois elements matmul needs (square products, and rectangular ones with `rows` rows).
    std::vector<std::uint64_t> galois_elements() const;
    // One of the maps of a block as a linear transform at `level` (-1: top): "sigma" (row i shifted left by i), "tau"
    // (column j shifted up by j), "phi" (columns shifted left by k) or "psi" (rows shifted up by k), applied to every
    // packed matrix. matmul uses the same diagonals (and psi^k as a plain rotation when the slots hold whole tiles).
    // @throws ParameterError for k >= block(), an unknown name, or a negative thread count
    // @throws LevelError if `level` is outside 1..max_level
    LinearTransform transform(const std::string& which, std::size_t k = 0, int level = -1, Exec exec = {}) const;

private:
    std::shared_ptr<const MatmulPlan> plan_;
    std::size_t rows_;
};

// The products A_i B_i of the g packed pairs (a: rows x d, b: d x d), three levels below the operands. progress,
// when given, is called after each of the grid x block steps (a block row of A times a block diagonal of B).
// @throws ParameterError for an empty operand, operands packed differently or of another context than ev's, a right
//     operand that is not d x d, the wrong number of blocks, a bad block, or a negative thread count
// @throws LevelError if the lower operand is below level 3
// @throws MissingKeyError if ev's keys lack a Galois key of galois_elements() or the relinearisation key (all checked
//     before any work)
// @throws what `progress` throws
EncryptedMatrix matmul(const ckks::Evaluator& ev, const EncryptedMatrix& a, const EncryptedMatrix& b, Exec exec = {},
                       OpCounts* counts = nullptr, const Progress& progress = {});

// Schoolbook baseline: a and b hold one ciphertext per element (row major, d x d); C_ij = sum_k A_ik B_kj with
// d^3 tensor products, one relinearisation and one rescale per element.
// @throws ParameterError for operands of other than d * d ciphertexts, and as Evaluator::tensor and add (a bad
//     operand or exec, size-3 operands, operands under different keys)
// @throws MissingKeyError if ev's keys have no relinearisation key
// @throws LevelError if an operand is at level 0
// @throws ScaleError if a product's scale no longer fits the modulus, or the products' scales differ
std::vector<ckks::Ciphertext> matmul_schoolbook(const ckks::Evaluator& ev, const std::vector<ckks::Ciphertext>& a,
                                                const std::vector<ckks::Ciphertext>& b, std::size_t d, Exec exec = {},
                                                OpCounts* counts = nullptr);

}  // namespace kasoku::algo
