//! Per-thread performance counters with honest fallbacks, and the run-time profile sampler.
