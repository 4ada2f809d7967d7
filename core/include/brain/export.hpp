// BRAIN_API marks the core's exported symbols (everything else is hidden).
#pragma once

#if defined(_WIN32)
#if defined(BRAIN_CORE_BUILDING)
#define BRAIN_API __declspec(dllexport)
#else
#define BRAIN_API __declspec(dllimport)
#endif
#else
#define BRAIN_API __attribute__((visibility("default")))
#endif
