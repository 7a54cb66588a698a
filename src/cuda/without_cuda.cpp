// The tessera::cuda library in a build without nvcc: the same entry points, which say so.
#include <tessera/core/error.hpp>
#include <tessera/models/open_gpt2_cuda.hpp>

namespace tessera {

std::unique_ptr<LanguageModel> open_gpt2_cuda(const std::filesystem::path&, int) {
    throw BackendError("no CUDA device: this tessera was built without CUDA (nvcc was not found when it was configured)");
}

int cuda_devices() noexcept { return 0; }

}  // namespace tessera
