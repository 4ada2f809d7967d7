// Internal: the target columns of a CSV data set, read region by region (csv_region.hpp). A column with a cell
// that is not a number holds class labels (one-hot encoded, labels sorted byte-wise); any other is numbers. The
// rules and messages are Dataset::from_csv's, for the in-memory and the streamed data set alike.
#pragma once

#include "csv_region.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace brain::detail::csv {

// Up to 12 names quoted, comma-separated ("... (N in all)" past that).
std::string quoted_names(const std::vector<std::string>& names);

// The columns of the targets named (in that order) and of the features (the others, in file order).
// InvalidArgument, prefixed by `caller` ("Dataset::from_csv"), naming a missing or repeated target, or a file left
// with no feature.
std::pair<std::vector<std::size_t>, std::vector<std::size_t>>
split_columns(const std::vector<std::string>& header, const std::vector<std::string>& targets,
              const std::string& file, std::string_view caller);

class TargetColumns {
public:
    // `columns`: the file columns of the targets, in the order asked for; `class_columns`: the names of those read
    // as class labels even when every cell is a number (classes ordered by value, each named as its first cell).
    TargetColumns(const std::vector<std::string>& header, std::vector<std::size_t> columns, std::size_t max_classes,
                  std::string origin, const std::vector<std::string>& class_columns = {});

    // Folds in a parsed region whose first line is `first_line`. Returns, per piece and target, each piece label
    // id's merged id (for label_ids written by that region's parse).
    std::vector<std::vector<std::vector<std::uint32_t>>> add(const Region& region, std::uint64_t first_line);
    // After the last region of `rows` rows: throws InvalidData for a label column with one class or more than the
    // limit, a non-finite number in a number column, and InvalidArgument for a label column among several targets.
    void finish(std::uint64_t rows);

    bool is_labels(std::size_t t) const noexcept { return m_columns[t].labels; }
    bool any_labels() const noexcept;
    // Output units of target t (its classes, or 1), and of all together.
    std::size_t width(std::size_t t) const noexcept;
    std::size_t width() const noexcept;
    // The first output unit of target t.
    std::size_t offset(std::size_t t) const noexcept;
    // For target t's merged label id, its class index (sorted position).
    const std::vector<std::uint32_t>& class_of_merged(std::size_t t) const noexcept { return m_columns[t].position; }
    // For a label's text, its class index; nullopt for a label the file did not have when opened.
    std::optional<std::uint32_t> class_of(std::size_t t, std::string_view label) const;

    std::vector<std::string> target_names() const;
    std::vector<std::string> class_labels() const;

private:
    struct Column {
        std::size_t file_column = 0;
        bool labels = false;
        bool text = false; // a cell that is not a number was seen
        std::optional<Fault> not_finite;
        std::uint64_t not_finite_line = 0; // the absolute line where not_finite's scan began
        LabelMerge merge;
        std::vector<std::uint32_t> position;  // merged id -> class index
        std::vector<std::string> sorted;      // the classes, sorted
        std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> index; // label -> class
        explicit Column(std::size_t max) : merge(max) {}
    };
    const std::vector<std::string>& m_header;
    std::string m_origin;
    std::size_t m_max_classes;
    std::vector<Column> m_columns;
};

} // namespace brain::detail::csv
