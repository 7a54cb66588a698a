// tessera::cuda in a CUDA build: open_gpt2_cuda() and cuda_devices() load the CUDA backend's
// module (libtessera_cuda_gpt2.so: the backend, the CUDA runtime, cuBLAS) on first use. Linked
// directly, libcublas alone put ~200 MB into every process's resident memory at start (its
// relocations touch its pages), CPU runs included. Found through the program's run path (set by
// tessera::cuda's link options, for the build tree and for an installed tessera) or named by
// the environment variable TESSERA_CUDA_MODULE; loaded once and kept for the process's life
// (the models it makes run its code).
#include <dlfcn.h>  // dlopen, dlsym, dlerror

#include <cstdlib>     // std::getenv
#include <cstring>     // std::strcmp
#include <filesystem>  // std::filesystem::path
#include <memory>      // std::unique_ptr
#include <string>      // std::string

#include <tessera/core/error.hpp>             // BackendError
#include <tessera/models/open_gpt2_cuda.hpp>  // open_gpt2_cuda, cuda_devices

#include "cuda_module.hpp"  // generated: file_name, build_id, the entry points

namespace tessera {
namespace {

struct CudaModule {
    std::string error;  // why it could not be used; empty when it can
    cuda_module::DeviceCount device_count = nullptr;
    cuda_module::OpenGpt2 open_gpt2 = nullptr;
};

template <class Function>
Function entry_point(void* handle, const char* name) {
    return reinterpret_cast<Function>(dlsym(handle, name));
}

CudaModule load_cuda_module() {
    const char* named = std::getenv("TESSERA_CUDA_MODULE");
    const std::string file = named != nullptr && *named != '\0' ? named : cuda_module::file_name;
    void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        return {.error = "the CUDA backend's module could not be loaded: " + std::string(why != nullptr ? why : file)};
    }
    const auto build_id = entry_point<cuda_module::BuildId>(handle, cuda_module::build_id_symbol);
    CudaModule module{.error = {},
                      .device_count = entry_point<cuda_module::DeviceCount>(handle, cuda_module::device_count_symbol),
                      .open_gpt2 = entry_point<cuda_module::OpenGpt2>(handle, cuda_module::open_gpt2_symbol)};
    if (build_id == nullptr || module.device_count == nullptr || module.open_gpt2 == nullptr) {
        module = {.error = "the CUDA backend's module " + file + " lacks its entry points (not tessera's module?)"};
    } else if (std::strcmp(build_id(), cuda_module::build_id) != 0) {
        module = {.error = "the CUDA backend's module " + file + " is from another build of tessera (build " + build_id() +
                           ", this program's " + cuda_module::build_id + "); use the module built with this program"};
    }
    if (!module.error.empty()) dlclose(handle);
    return module;
}

const CudaModule& cuda_module_once() {
    static const CudaModule module = load_cuda_module();  // thread-safe, once
    return module;
}

}  // namespace

std::unique_ptr<LanguageModel> open_gpt2_cuda(const std::filesystem::path& dir, int device) {
    const CudaModule& module = cuda_module_once();
    if (!module.error.empty()) throw BackendError(module.error);
    return std::unique_ptr<LanguageModel>(module.open_gpt2(&dir, device));
}

int cuda_devices() noexcept {
    const CudaModule& module = cuda_module_once();
    return module.error.empty() ? module.device_count() : 0;
}

}  // namespace tessera
