// brain::Predictor: a network's weights held on a backend, mapping input rows to outputs there.
#pragma once

#include <brain/backend.hpp>
#include <brain/export.hpp>
#include <brain/matrix.hpp>
#include <brain/network.hpp>
#include <cstddef>
#include <memory>

namespace brain {

// Host memory page-locked for a backend's transfers (Predictor::pin): while it lives, rows inside it reach the
// device without a staging copy. The memory it was made for (a Matrix's storage, or what a view shows) must stay
// where it is (no resize, no move-assign, no free) until the guard is released or destroyed. Unpins on
// destruction; movable, not copyable.
class BRAIN_API PinnedRows {
public:
    PinnedRows() noexcept;
    ~PinnedRows();
    PinnedRows(PinnedRows&&) noexcept;
    PinnedRows& operator=(PinnedRows&&) noexcept;
    PinnedRows(const PinnedRows&) = delete;
    PinnedRows& operator=(const PinnedRows&) = delete;

    // True while the backend holds the memory page-locked; false for a backend without transfers (the CPU's).
    bool pinned() const noexcept;
    // Unpin now; idempotent.
    void release() noexcept;

    struct State;

private:
    friend class Predictor;
    std::shared_ptr<State> m_state;
};

// Prediction on a backend through its plugin's predictor (ABI 1.2): the weights are uploaded once, without any
// optimizer state, and predict() streams any number of rows through the backend in batches of at most
// batch_rows(). The predictor copies what it needs of the network at construction. Not thread-safe: use one
// predictor from one thread at a time. Movable, not copyable. After a failed call the predictor is closed and
// further calls throw InvalidState.
class BRAIN_API Predictor {
public:
    // Default for max_batch_rows = 0: at most this many rows per call into the backend.
    static constexpr std::size_t default_batch_rows = 16384;

    // Open a predictor for `network` on `backend` (its precision included) taking at most `max_batch_rows` rows
    // per call into the backend (0: default_batch_rows). When the backend's memory budget cannot hold that many,
    // the batch is halved until it fits; BudgetExceeded only when not even one row fits. Throws Unsupported
    // naming the plugin and its ABI version when the plugin has no predictor (plugins built against ABI 1.0 or
    // 1.1), and the plugin's own error (e.g. Unsupported naming a precision it does not run) otherwise.
    Predictor(const Network& network, const TrainingBackend& backend, std::size_t max_batch_rows = 0);
    ~Predictor();
    Predictor(Predictor&&) noexcept;
    Predictor& operator=(Predictor&&) noexcept;
    Predictor(const Predictor&) = delete;
    Predictor& operator=(const Predictor&) = delete;

    // Outputs for raw input rows (the network's standardisation is applied), as Network::predict computes them,
    // the rows streamed through the backend batch by batch. InvalidArgument for a wrong column count, InvalidData
    // for a non-finite input, NumericalError naming the row for a non-finite output. Reads a view (a Matrix, a
    // NumPy array) in place.
    Matrix predict(MatrixView inputs);
    // Page-lock `rows`' storage for this backend's transfers, so that predict(rows) hands them to the device
    // without copying them on the host (a network with standardisation still stages its standardised rows).
    // A no-op guard (pinned() false) on a backend whose plugin offers no pinning (host backends; plugins built
    // against ABI 1.2 or older). Throws the backend's error when it cannot page-lock the memory.
    PinnedRows pin(MatrixView rows);
    // The most rows one call into the backend takes (what the budget allowed of the request).
    std::size_t batch_rows() const noexcept;
    // The backend this predictor runs on.
    const TrainingBackend& backend() const;
    // Release the backend's resources; idempotent. Later calls throw InvalidState.
    void close() noexcept;
    bool is_open() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace brain
