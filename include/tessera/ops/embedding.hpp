#pragma once
// The embedding lookup: rows of a table chosen by token ids.
#include <cstddef>  // std::size_t
#include <span>     // std::span
#include <string>   // std::to_string
#include <type_traits>  // std::is_same_v

#include <tessera/backend/backend.hpp>  // Backend
#include <tessera/core/error.hpp>       // ArgumentError
#include <tessera/core/extents.hpp>     // dims_may_match, check_dim
#include <tessera/core/token_id.hpp>    // TokenId
#include <tessera/core/weight_formats.hpp>  // WeightFormat
#include <tessera/ops/operands.hpp>     // input_operand, output_operand

namespace tessera {

namespace detail {
// gather_rows' checks, then read(table operand, out operand) gathers.
template <Backend B, TensorLike Table, TensorLike Out, class Read>
void checked_gather(const Table& table, std::span<const TokenId> ids, Out&& out, Read&& read) {
    using ET = extents_of_t<Table>;
    using EO = extents_of_t<Out>;
    using Stored = value_type_of_t<Table>;
    constexpr std::size_t block = WeightFormat<Stored>::block;
    static_assert(ET::rank() == 2 && EO::rank() == 2, "gather_rows: table and out must be matrices (rows, channels).");
    static_assert(ET::static_extent(1) == dyn || EO::static_extent(1) == dyn ||
                      ET::static_extent(1) * block == EO::static_extent(1),
                  "gather_rows: out must have as many columns as the table.");
    const auto tv = [&] {
        if constexpr (std::is_same_v<Stored, float>) {
            return input_operand<2, B>(table);
        } else {
            static_assert(HasGatherRowsWith<B, Stored>, "gather_rows: this backend cannot read tables stored in this format.");
            return stored_weight_operand<B>(table);
        }
    }();
    const auto ov = output_operand<2, B>(out);
    check_dim(ov.extent(1), tv.extent(1) * block, "gather_rows", "out's column count", "the table's column count");
    check_dim(ov.extent(0), ids.size(), "gather_rows", "out's row count", "the number of ids");
    const std::size_t v = tv.extent(0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || static_cast<std::size_t>(ids[i]) >= v) {
            throw ArgumentError("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                " is outside the model's vocabulary of " + std::to_string(v));
        }
    }
    read(tv, ov);
}
}  // namespace detail

// out(T, C) = table(V, C) rows ids[0..T), widened to float when the table is stored in a
// narrower format (then it holds V rows of C / block elements). An id outside [0, V) is an
// ArgumentError naming it and its position; nothing is written then.
template <Backend B, TensorLike Table, TensorLike Out>
void gather_rows(B& backend, const Table& table, std::span<const TokenId> ids, Out&& out) {
    detail::checked_gather<B>(table, ids, out, [&](const auto& tv, const auto& ov) { backend.gather_rows(tv, ids, ov); });
}

// The same from a table the backend arranged in place (ArrangesTables).
template <Backend B, TensorLike Table, TensorLike Out>
    requires ArrangesTables<B, value_type_of_t<Table>>
void gather_rows(B& backend, const Table& table, const typename B::template ArrangedWeights<value_type_of_t<Table>>& arranged,
                 std::span<const TokenId> ids, Out&& out) {
    detail::checked_gather<B>(table, ids, out, [&](const auto& tv, const auto& ov) { backend.gather_rows(tv, arranged, ids, ov); });
}

}  // namespace tessera
