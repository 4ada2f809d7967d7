// brain_bench --data-load: the time and peak memory of loading one CSV file into a brain::Dataset.
#pragma once

#include <string>
#include <vector>

namespace bench {

// Loads `path` (target columns `targets`) `reps` times with Dataset::from_csv and prints one JSON line: the best
// wall time, bytes/s and rows/s, the matrix bytes and the process's peak resident memory. Returns an exit status.
int run_data_load(const std::string& path, const std::vector<std::string>& targets, unsigned reps);

} // namespace bench
