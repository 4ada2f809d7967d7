// The whole public API of brain::core in one include (the conformance kit, brain::conformance, has its own).
#pragma once

#include <brain/accelerator.hpp>
#include <brain/backend.hpp>
#include <brain/callbacks.hpp>
#include <brain/csv_stream.hpp>
#include <brain/csv_table.hpp>
#include <brain/dataset.hpp>
#include <brain/error.hpp>
#include <brain/interrupt.hpp>
#include <brain/limits.hpp>
#include <brain/matrix.hpp>
#include <brain/metrics.hpp>
#include <brain/network.hpp>
#include <brain/npy_file.hpp>
#include <brain/plugins.hpp>
#include <brain/predictor.hpp>
#include <brain/random.hpp>
#include <brain/safe_file.hpp>
#include <brain/schedule.hpp>
#include <brain/session_descriptor.hpp>
#include <brain/stats.hpp>
#include <brain/streaming_dataset.hpp>
#include <brain/training_checkpoint.hpp>
#include <brain/training_session.hpp>
#include <brain/types.hpp>
#include <brain/version.hpp>
