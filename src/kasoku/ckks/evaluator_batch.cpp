// Batches of independent operations (Takao et al.): each element is the single operation, run where the backend puts it
// (rns::Backend::for_each), so that element i equals the single operation's result bit for bit on every backend.
#include <exception>
#include <string>

#include "kasoku/ckks/evaluator.hpp"
#include "kasoku/support/error.hpp"

namespace kasoku::ckks {

namespace {

void check_batch(const Evaluator::Batch& a, const char* op) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!a[i]) throw ParameterError(std::string(op) + ": element " + std::to_string(i) + " is not a ciphertext");
}

void same_length(const Evaluator::Batch& a, std::size_t b, const char* op) {
    check_batch(a, op);
    if (a.size() != b)
        throw ParameterError(std::string(op) + ": the lists have different lengths (" + std::to_string(a.size()) +
                             " and " + std::to_string(b) + "); pass one element of each per operation");
}

// out[i] = op(i, e) for i < count through the backend's batch runner; the first failing element's error is rethrown.
template <class Op>
std::vector<Ciphertext> run(const Context& ctx, std::size_t count, Exec exec, Op op) {
    std::vector<Ciphertext> out(count);
    std::vector<std::exception_ptr> errors(count);
    ctx.backend().for_each(count, ctx.exec(exec), [&](std::size_t i, Exec e) {
        try {
            out[i] = op(i, e);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    });
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    return out;
}

}  // namespace

std::vector<Ciphertext> Evaluator::add_many(const Batch& a, const Batch& b, Exec exec) const {
    same_length(a, b.size(), "add_many");
    check_batch(b, "add_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return add(*a[i], *b[i], e); });
}

std::vector<Ciphertext> Evaluator::sub_many(const Batch& a, const Batch& b, Exec exec) const {
    same_length(a, b.size(), "sub_many");
    check_batch(b, "sub_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return sub(*a[i], *b[i], e); });
}

std::vector<Ciphertext> Evaluator::multiply_many(const Batch& a, const Batch& b, bool relin, bool rescale_,
                                                 Exec exec) const {
    same_length(a, b.size(), "multiply_many");
    check_batch(b, "multiply_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) {
        if (relin) return multiply(*a[i], *b[i], rescale_, e);
        Ciphertext t = tensor(*a[i], *b[i], e);
        return rescale_ ? rescale(t, e) : t;
    });
}

std::vector<Ciphertext> Evaluator::tensor_many(const Batch& a, const Batch& b, Exec exec) const {
    same_length(a, b.size(), "tensor_many");
    check_batch(b, "tensor_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return tensor(*a[i], *b[i], e); });
}

std::vector<Ciphertext> Evaluator::relinearize_many(const Batch& a, Exec exec) const {
    check_batch(a, "relinearize_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return relinearize(*a[i], e); });
}

std::vector<Ciphertext> Evaluator::rescale_many(const Batch& a, Exec exec) const {
    check_batch(a, "rescale_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return rescale(*a[i], e); });
}

std::vector<Ciphertext> Evaluator::rotate_many(const Batch& a, std::int64_t step, Exec exec) const {
    check_batch(a, "rotate_many");
    return run(*ctx_, a.size(), exec, [&](std::size_t i, Exec e) { return rotate(*a[i], step, e); });
}

std::vector<Ciphertext> Evaluator::multiply_plain_many(const Batch& a,
                                                       const std::vector<std::vector<std::complex<double>>>& values,
                                                       bool rescale_, Exec exec) const {
    same_length(a, values.size(), "multiply_plain_many");
    return run(*ctx_, a.size(), exec,
               [&](std::size_t i, Exec e) { return multiply_plain(*a[i], values[i], rescale_, e); });
}

}  // namespace kasoku::ckks
