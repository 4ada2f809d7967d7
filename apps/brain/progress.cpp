#include "progress.hpp"

#include "app_support.hpp"

#include <cstdio>
#include <string>
#include <unistd.h>

namespace brain::app {

EpochProgress::EpochProgress(std::ostream& out, std::size_t total_epochs, bool interactive)
    : m_out(out), m_total(total_epochs), m_interactive(interactive), m_start(std::chrono::steady_clock::now()) {}

void EpochProgress::update(std::size_t epoch, float loss, std::optional<float> validation_loss,
                           std::optional<float> learning_rate) {
    const double elapsed = seconds_since(m_start);
    char text[160];
    const int width = static_cast<int>(std::to_string(m_total).size());
    int n = std::snprintf(text, sizeof text, "epoch %*zu/%zu  loss %.6f", width, epoch, m_total, loss);
    if (validation_loss && n > 0 && n < static_cast<int>(sizeof text))
        n +=
            std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "  val_loss %.6f", *validation_loss);
    if (learning_rate && n > 0 && n < static_cast<int>(sizeof text))
        n += std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "  lr %.4g",
                           static_cast<double>(*learning_rate));
    if (n > 0 && n < static_cast<int>(sizeof text))
        std::snprintf(text + n, sizeof text - static_cast<std::size_t>(n), "  %.2fs", elapsed);
    if (!m_interactive) {
        m_out << text << "\n" << std::flush;
        require_output();
        return;
    }
    constexpr std::size_t bar_width = 28;
    const std::size_t filled = m_total == 0 ? bar_width : bar_width * epoch / m_total;
    const std::string bar = str("[", std::string(filled, '#'), std::string(bar_width - filled, '.'), "] ");
    // \r plus trailing spaces redraw the line in place even when the new text is shorter.
    m_out << "\r" << bar << text << "    " << std::flush;
    m_line_open = true;
    require_output();
}

void EpochProgress::require_output() const {
    // Training on after its output is gone would only end in the same error, minutes later.
    BRAIN_CHECK(m_out, ErrorCode::IoError,
                "writing to standard output failed (the disk is full or the pipe was closed); training stops "
                "here, and the output files are left as they were");
}

void EpochProgress::finish() {
    if (m_line_open) m_out << "\n" << std::flush;
    m_line_open = false;
}

bool stdout_is_terminal() noexcept {
    return ::isatty(STDOUT_FILENO) == 1;
}

} // namespace brain::app
