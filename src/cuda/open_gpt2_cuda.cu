// The tessera::cuda library: GPT-2 on the CUDA backend behind the LanguageModel interface, for
// host code (see tessera/models/open_gpt2_cuda.hpp). Instantiates GPT2<GPT2Dynamic, Cuda>, which
// runs every GPT-2 shape.
#include <memory>

#include <tessera/backend/cuda/cuda.cuh>
#include <tessera/models/load_gpt2.hpp>
#include <tessera/models/open_gpt2_cuda.hpp>

namespace tessera {

std::unique_ptr<LanguageModel> open_gpt2_cuda(const std::filesystem::path& dir, int device) {
    auto backend = std::make_shared<Cuda>(device);
    return open_gpt2(*backend, dir, backend);
}

int cuda_devices() noexcept { return cuda_device_count(); }

}  // namespace tessera
