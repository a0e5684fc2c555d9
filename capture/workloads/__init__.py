"""Workload presets: callables that build a model and run NVTX-staged iterations."""
