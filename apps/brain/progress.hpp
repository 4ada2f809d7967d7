// brain::app::EpochProgress: the per-epoch progress display of `brain train`.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <ostream>

namespace brain::app {

// On a terminal: one line redrawn in place with a bar; otherwise (a pipe, a log file, CI) one plain line per
// epoch, so logs stay readable.
class EpochProgress {
public:
    // `interactive` selects the redrawn bar; see stdout_is_terminal().
    EpochProgress(std::ostream& out, std::size_t total_epochs, bool interactive);
    // Report epoch `epoch` (1-based, counted over the model's life) with its mean training loss, the validation
    // loss when a split was asked for, and the learning rate of its last step.
    void update(std::size_t epoch, float loss, std::optional<float> validation_loss,
                std::optional<float> learning_rate = std::nullopt);
    // End the redrawn line (before other output, including an error). Idempotent.
    void finish();

private:
    // Throws Error(IoError) when m_out could not take the last line.
    void require_output() const;

    std::ostream& m_out;
    std::size_t m_total;
    bool m_interactive;
    bool m_line_open = false;
    std::chrono::steady_clock::time_point m_start;
};

// True when standard output is a terminal.
bool stdout_is_terminal() noexcept;

} // namespace brain::app
