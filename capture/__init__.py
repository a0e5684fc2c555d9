"""capture: run a workload under nsys and ncu and write a run directory."""
