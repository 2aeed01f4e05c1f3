// Batches as one launch sequence (launch.hpp): the recording of a batch's operations and their merged issue.
#include <algorithm>

#include "gpu/launch.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace launch {

namespace {
thread_local Recorder* current = nullptr;
}

Recorder::Recorder() : outer_(current) { current = this; }

Recorder::~Recorder() {
    try {
        issue();
    } catch (...) {  // a destructor may not throw: what could not be issued is lost with the batch's results
    }
}

Recorder* Recorder::active() { return current; }

void Recorder::issue() {
    if (current != this) return;  // issued already
    current = outer_;             // what follows runs for real
    struct Release {              // the deferred memory goes back after the launches, even when one fails
        std::vector<Deferred>& d;
        ~Release() {
            for (const Deferred& x : d) x.mem->deallocate(x.p, x.words);
            d.clear();
        }
    } release{deferred_};
    std::vector<std::vector<Launch>> ops;
    ops.swap(ops_);
    const bool aligned = std::all_of(ops.begin(), ops.end(), [&](const auto& o) { return o.size() == ops[0].size(); });
    if (!aligned || ops.size() < 2) {
        for (const auto& op : ops)
            for (const Launch& l : op) l.fn(*l.mem, l.shared.data(), l.items.data(), l.items.size() / l.item_size);
        return;
    }
    for (std::size_t k = 0; k < ops[0].size(); ++k) {
        const Launch& first = ops[0][k];
        const bool same = std::all_of(ops.begin(), ops.end(), [&](const auto& o) {
            return o[k].fn == first.fn && o[k].mem == first.mem && o[k].shared == first.shared;
        });
        if (!same) {
            for (const auto& op : ops)
                op[k].fn(*op[k].mem, op[k].shared.data(), op[k].items.data(), op[k].items.size() / op[k].item_size);
            continue;
        }
        std::vector<char> items;
        for (const auto& op : ops) items.insert(items.end(), op[k].items.begin(), op[k].items.end());
        first.fn(*first.mem, first.shared.data(), items.data(), items.size() / first.item_size);
    }
}

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
