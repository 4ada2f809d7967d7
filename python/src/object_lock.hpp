// Readers and writers of one library object (a Network, a Dataset) from several Python threads. Code that reads an
// object with the GIL released (predict, save_onnx, save_npz, ...) holds a shared lock on it; code that changes it
// (fit's assignment of the trained weights, set_parameters, standardize, ...) holds the exclusive lock and the
// GIL, so readers that keep the GIL need no lock at all. No thread ever waits for one of these locks while it holds
// the GIL: the GIL holder could be the thread it waits for, and Python threads waiting for the GIL could never run.
#pragma once

#include "bindings.hpp"

#include <mutex>
#include <shared_mutex>

namespace brain::python {

// The lock guarding the object at `object`: a fixed table of locks striped by address, so no lock lives in (or
// outlives) the object; two objects sharing a stripe only wait for each other, since no code holds two at once.
std::shared_mutex& object_mutex(const void* object) noexcept;

// A reader's lock, constructed with the GIL held: it releases the GIL, then takes the lock, and drops the lock
// before it takes the GIL back, so the scope it guards runs without the GIL.
class SharedObjectLock {
public:
    explicit SharedObjectLock(const void* object) : m_lock(object_mutex(object)) {}

private:
    py::gil_scoped_release m_release;           // first in, last out: the GIL comes back after the lock is dropped
    std::shared_lock<std::shared_mutex> m_lock; // held for this reader's lifetime
};

// A writer's lock, constructed with the GIL held: it releases the GIL while it waits for the lock and holds both
// afterwards, so the change is seen neither by readers without the GIL nor half-done by readers with it.
class ExclusiveObjectLock {
public:
    explicit ExclusiveObjectLock(const void* object) {
        py::gil_scoped_release release;
        m_lock = std::unique_lock<std::shared_mutex>(object_mutex(object));
    }

private:
    std::unique_lock<std::shared_mutex> m_lock; // held for this writer's lifetime (released with the GIL held)
};

} // namespace brain::python
