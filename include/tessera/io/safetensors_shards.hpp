#pragma once
// A Hugging Face checkpoint's weights: one model.safetensors, or the shards its
// model.safetensors.index.json names ({"weight_map": {"tensor name": "model-00001-of-00002.safetensors",
// ...}}), each opened once. As transformers does, a directory with model.safetensors reads that
// file and ignores any index. The index is checked before any weight is read: a shard named
// by a path rather than a file name of the directory (no '/', not "." or ".."), a shard that is
// missing, or a tensor the index puts in a shard that does not hold it is a FormatError naming
// the index, the shard and the tensor.
#include <filesystem>   // std::filesystem::path, exists
#include <map>          // std::map
#include <set>          // std::set
#include <memory>       // std::unique_ptr
#include <span>         // std::span
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include <tessera/core/error.hpp>       // FormatError
#include <tessera/io/json.hpp>          // parse_json
#include <tessera/io/read_only_file.hpp>  // read_whole_file
#include <tessera/io/safetensors.hpp>   // SafetensorsFile, TensorInfo

namespace tessera::io {

inline constexpr const char* safetensors_single = "model.safetensors";
inline constexpr const char* safetensors_index = "model.safetensors.index.json";

// The shard file names the index at `index` maps the tensors to: {tensor name, shard} in the
// index's order. Each is checked to be a plain file name (a path would read outside the
// model's directory).
inline std::vector<std::pair<std::string, std::string>> read_safetensors_index(const std::filesystem::path& index) {
    const std::string where = index.string();
    const JsonValue root = parse_json(read_whole_file(index, std::size_t{64} << 20), where);
    const JsonValue* map = root.is_object() ? root.find("weight_map") : nullptr;
    if (!map || !map->is_object()) throw FormatError(where + ": no \"weight_map\" object mapping tensor names to shard files");
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [name, shard] : map->members()) {
        if (!shard.is_string()) throw FormatError(where + ": weight_map[\"" + name + "\"] is " + shard.describe() + ", not a file name");
        const std::string& file = shard.as_string();
        if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
            file.find('\0') != std::string::npos) {
            throw FormatError(where + ": weight_map[\"" + name + "\"] is " + shard.describe() +
                              ", not the name of a file in the model's directory");
        }
        out.emplace_back(name, file);
    }
    if (out.empty()) throw FormatError(where + ": the weight_map names no tensors");
    return out;
}

// The weight files of the checkpoint in `dir`: model.safetensors where it exists, else the
// index and each shard it names once (for io/output_file.hpp's never-overwrite list).
inline std::vector<std::filesystem::path> safetensors_files(const std::filesystem::path& dir) {
    if (std::filesystem::exists(dir / safetensors_single) || !std::filesystem::exists(dir / safetensors_index)) {
        return {dir / safetensors_single};
    }
    std::vector<std::filesystem::path> files{dir / safetensors_index};
    std::set<std::string> seen;
    for (const auto& [_, shard] : read_safetensors_index(dir / safetensors_index)) {
        if (seen.insert(shard).second) files.push_back(dir / shard);
    }
    return files;
}

class SafetensorsShards {
public:
    // One file opened elsewhere (it must outlive this).
    explicit SafetensorsShards(const SafetensorsFile& one) : path_(one.path()) {
        shards_.push_back(&one);
        for (const std::string& name : one.names()) where_[name] = 0;
    }
    explicit SafetensorsShards(const std::filesystem::path& dir) {
        if (std::filesystem::exists(dir / safetensors_single) || !std::filesystem::exists(dir / safetensors_index)) {
            open(dir / safetensors_single);
            for (const std::string& name : shards_[0]->names()) where_[name] = 0;
            path_ = shards_[0]->path();
            return;
        }
        path_ = (dir / safetensors_index).string();
        std::map<std::string, std::size_t> opened;  // shard file name -> index in shards_
        for (const auto& [name, shard] : read_safetensors_index(dir / safetensors_index)) {
            auto it = opened.find(shard);
            if (it == opened.end()) {
                if (!std::filesystem::exists(dir / shard)) {
                    throw FormatError(path_ + ": shard '" + shard + "' (of tensor '" + name + "') does not exist in " + dir.string());
                }
                open(dir / shard);
                it = opened.emplace(shard, shards_.size() - 1).first;
            }
            if (!shards_[it->second]->contains(name)) {
                throw FormatError(path_ + ": puts tensor '" + name + "' in " + shards_[it->second]->path() + ", which does not hold it");
            }
            where_[name] = it->second;
        }
    }

    // model.safetensors, or the index: what messages about the checkpoint as a whole name.
    const std::string& path() const noexcept { return path_; }
    bool contains(std::string_view name) const { return where_.find(std::string(name)) != where_.end(); }
    // The file that holds tensor `name` (FormatError naming the checkpoint when none does).
    const SafetensorsFile& file_of(std::string_view name) const {
        const auto it = where_.find(std::string(name));
        if (it == where_.end()) throw FormatError(path_ + ": tensor '" + std::string(name) + "' is missing");
        return *shards_[it->second];
    }
    const TensorInfo& info(std::string_view name) const { return file_of(name).info(name); }
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        for (const auto& [name, _] : where_) out.push_back(name);
        return out;
    }
    std::size_t shard_count() const noexcept { return shards_.size(); }

private:
    void open(const std::filesystem::path& file) {
        owned_.push_back(std::make_unique<SafetensorsFile>(file));
        shards_.push_back(owned_.back().get());
    }

    std::string path_;
    std::vector<std::unique_ptr<SafetensorsFile>> owned_;
    std::vector<const SafetensorsFile*> shards_;
    std::map<std::string, std::size_t> where_;  // tensor name -> its shard
};

}  // namespace tessera::io
