#pragma once
// What the fixture scripts write for the model tests (tools/make_gpt2_fixtures.sh,
// tools/make_llama_fixtures.sh): a token list as comma-separated ids, reference results as raw
// float64 arrays.
#include <fstream>
#include <string>
#include <vector>

#include <tessera/core/token_id.hpp>

namespace tessera::test {

// "1,2,3" -> {1, 2, 3}.
inline std::vector<TokenId> read_token_list(const std::string& path) {
    std::ifstream in(path);
    std::vector<TokenId> ids;
    std::string item;
    while (std::getline(in, item, ',')) ids.push_back(std::stoi(item));
    return ids;
}

// The file's doubles, in order (native byte order, as numpy's tofile writes them).
inline std::vector<double> read_float64(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<double> v;
    double x;
    while (in.read(reinterpret_cast<char*>(&x), sizeof x)) v.push_back(x);
    return v;
}

}  // namespace tessera::test
