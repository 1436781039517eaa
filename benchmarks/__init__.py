"""The project's benchmarks, grouped by the question they answer; run them from the repository
root as modules (`python -m benchmarks.overhead.whole_process --help`). `benchmarks.harness`
does what every one of them repeats: docs/benchmarks/index.md."""
