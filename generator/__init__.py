"""kernel-report generator: profiler outputs → normalized tables → analyses → bilingual site."""
