// Which devices a list of compiled CUDA architectures runs on (cuda.hpp); plain C++, built with and without CUDA.
#include <cctype>
#include <string>
#include <vector>

#include "kasoku/gpu/cuda.hpp"

namespace kasoku::gpu {

std::string architecture_mismatch(const std::string& architectures, int major, int minor) {
    const int device = 10 * major + minor;
    std::vector<std::string> entries;
    std::string cur;
    for (char c : architectures + ",") {
        if (c == ',' || c == ';' || c == ' ') {
            if (!cur.empty()) entries.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    bool any_number = false;
    for (const std::string& e : entries) {
        std::size_t digits = 0;
        while (digits < e.size() && std::isdigit(static_cast<unsigned char>(e[digits]))) ++digits;
        if (digits == 0) continue;  // native, all, all-major: decided by CUDA when it loads the kernels
        any_number = true;
        const int arch = std::stoi(e.substr(0, digits));
        const std::string suffix = e.substr(digits);
        const bool specific = !suffix.empty() && (suffix[0] == 'a' || suffix[0] == 'f');  // sm_90a, sm_100f: no PTX
        const bool real = suffix.find("-virtual") == std::string::npos;
        const bool ptx = !specific && suffix.find("-real") == std::string::npos;
        if (real && arch / 10 == device / 10 && arch <= device && (!specific || arch == device)) return {};
        if (ptx && arch <= device) return {};
    }
    if (!any_number) return {};
    return "this build has kernels for " + architectures +
           " (CMAKE_CUDA_ARCHITECTURES), none of which runs on compute "
           "capability " +
           std::to_string(major) + "." + std::to_string(minor) +
           "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(device);
}

}  // namespace kasoku::gpu
