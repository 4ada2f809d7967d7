#include <brain/error.hpp>
#include <brain/network.hpp>
#include <brain/training_session.hpp>

namespace brain {

FitReport Network::fit(const Dataset& data, const TrainConfig& config, const Dataset* validation) {
    return fit_with_backend(data, config, TrainingBackend::cpu(), validation);
}

FitReport Network::fit_with_backend(const Dataset& data, const TrainConfig& config, const TrainingBackend& backend,
                                    const Dataset* validation) {
    BRAIN_CHECK_ARG(config.epochs > 0, "epochs is 0; expected at least 1");
    // Train a copy: this network changes only when every epoch succeeded, so an error leaves the last good
    // weights in place.
    Network trained = *this;
    FitReport report;
    {
        TrainingSession session(trained, data, config, backend);
        report.epoch_losses.reserve(config.epochs);
        for (std::uint32_t epoch = 0; epoch < config.epochs; ++epoch) {
            report.epoch_losses.push_back(session.train_epoch());
            if (validation) {
                // Validation needs the weights on the host; this is the one per-epoch copy fit makes, and
                // only when a validation set was asked for.
                Network snapshot = trained;
                snapshot.restore_checkpoint(session.checkpoint());
                if (data.standardization()) snapshot.m_standardization = data.standardization();
                report.validation_losses.push_back(snapshot.evaluate(*validation).loss);
            }
        }
        trained.restore_checkpoint(session.checkpoint());
        report.stats = session.stats();
    }
    const auto previous_standardization = trained.m_standardization;
    trained.adopt_dataset_metadata(data);
    if (!data.standardization()) trained.m_standardization = previous_standardization;
    *this = std::move(trained);
    return report;
}

} // namespace brain
