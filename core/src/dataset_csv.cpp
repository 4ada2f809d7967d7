// Dataset::from_csv: a CSV file parsed on every core straight into the feature matrix (csv_region.hpp), its target
// columns read as numbers or as class labels (csv_targets.hpp).
#include "csv_input.hpp"
#include "csv_region.hpp"
#include "csv_targets.hpp"
#include "host_memory.hpp"
#include "parallel.hpp"

#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <chrono>
#include <limits>
#include <new>

namespace brain {

Dataset Dataset::from_csv(const std::filesystem::path& path, const CsvOptions& options) {
    namespace csv = detail::csv;
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const std::string file = path.string();
    BRAIN_CHECK_ARG(!options.target_columns.empty(), "Dataset::from_csv('", file,
                    "'): no target columns given; name at least one column of the header as the target");
    const char delimiter = options.delimiter;
    BRAIN_CHECK_ARG(delimiter != '"' && delimiter != '\n' && delimiter != '\r' && delimiter != '\0',
                    "CSV delimiter must not be a quote, a line break or NUL; use ',', ';' or '\\t'");
    detail::CsvInput input(path, options.limits);
    const csv::Rules rules{delimiter, options.limits};
    const csv::Header header = csv::read_header(input, rules, file);
    const auto [target_index, feature_index] = detail::csv::split_columns(header.names, options.target_columns, file, "Dataset::from_csv");

    csv::ColumnPlan plan(header.names.size());
    for (const std::size_t c : feature_index) plan.number(c, "a feature");
    for (const std::size_t c : target_index) plan.target(c);
    plan.max_labels = options.limits.max_classes;

    csv::read_all_bounded(input, header, rules, plan, file); // a pipe: the whole text (a mapping has it already)
    csv::Region region(input, rules, header.names, plan, detail::load_threads());
    region.count(static_cast<std::size_t>(header.data_offset - input.offset()), input.text().size());
    const std::uint64_t rows = region.rows();
    BRAIN_CHECK(rows > 0, ErrorCode::InvalidData, file, ":", header.line,
                ": the file has a header but no data rows; add at least one row of values");

    const std::size_t f = feature_index.size(), t = target_index.size();
    // Features, the targets' numbers and their label ids are checked against the memory available before any is
    // allocated.
    const std::uint64_t bytes = detail::saturating_mul(rows, detail::saturating_add(f, 2 * t)) * 4;
    detail::require_host_memory(bytes,
                                "the data set of " + file + " (" + std::to_string(rows) + " rows of " +
                                    std::to_string(f) + " features and " + std::to_string(t) + " targets)",
                                "use fewer rows or columns, or free memory");
    std::vector<float> features, numbers;
    std::vector<std::uint32_t> label_ids;
    try {
        features.resize(rows * f);
        numbers.resize(rows * t);
        label_ids.resize(rows * t);
    } catch (const std::bad_alloc&) {
        BRAIN_THROW(ErrorCode::AllocationFailed, "not enough host memory for the data set of ", file, " (",
                    detail::format_bytes(bytes), "); free memory or use a smaller file");
    }
    csv::ProgressFn progress;
    if (options.progress)
        progress = [&](std::uint64_t bytes_done, std::uint64_t rows_done) {
            options.progress(LoadProgress{bytes_done, input.size(), rows_done,
                                          std::chrono::duration<double>(Clock::now() - start).count()});
        };
    region.parse(csv::RowOutputs{features.data(), numbers.data(), label_ids.data(), nullptr, nullptr},
                 header.data_line, file, progress);

    csv::TargetColumns targets(header.names, target_index, options.limits.max_classes, file, options.class_columns);
    const auto merged = targets.add(region, header.data_line);
    targets.finish(rows);

    Dataset data;
    data.m_features = Matrix(rows, f, std::move(features));
    if (!targets.any_labels()) {
        data.m_targets = Matrix(rows, t, std::move(numbers));
    } else {
        // One label column, the only target: one-hot rows from each piece's label ids.
        const std::size_t width = targets.width();
        detail::require_host_memory(detail::saturating_mul(rows, width) * 4,
                                    "the one-hot targets of " + file + " (" + std::to_string(width) + " classes)",
                                    "use fewer rows or classes, or free memory");
        numbers = {};
        std::vector<float> onehot(rows * width, 0.0f);
        const auto& position = targets.class_of_merged(0);
        const auto& pieces = region.pieces();
        for (std::size_t p = 0; p < pieces.size(); ++p)
            for (std::uint64_t r = pieces[p].first_row; r < pieces[p].first_row + pieces[p].count.records; ++r) {
                const std::uint32_t merged_id = merged[p][0][label_ids[r]];
                onehot[r * width + position[merged_id]] = 1.0f;
            }
        data.m_targets = Matrix(rows, width, std::move(onehot));
    }
    std::vector<std::string> feature_names;
    for (const std::size_t c : feature_index) feature_names.push_back(header.names[c]);
    data.m_feature_names = std::move(feature_names);
    data.m_target_names = targets.target_names();
    data.m_class_labels = targets.class_labels();
    return data;
}

} // namespace brain
