"""What every benchmark repeats, in one place: alternating A/B samples, whole-process and
in-process timing, the machine, its load and the package versions, and the results file
(`benchmarks/results/<stem>.json` and `.md`). docs/benchmarks/index.md says how they measure."""

from benchmarks.harness.alternate import alternate, cell, summarize, summary
from benchmarks.harness.machine import (
    cpu_model,
    load1,
    load_averages,
    machine,
    machine_line,
    package_versions,
    uptime,
    versions,
    wait_for_quiet,
)
from benchmarks.harness.marks import all_cpu, parse_marks, phases, roles
from benchmarks.harness.results import (
    RESULTS,
    command_entry,
    command_line,
    header,
    merge_previous,
    write_results,
)
from benchmarks.harness.timing import (
    ROOT,
    Launched,
    ProcessFailed,
    children_cpu_s,
    descendants,
    live_children_cpu_s,
    measured,
    peak_rss_mib,
    process_cpu_s,
    run_process,
    timed,
)

__all__ = [
    "RESULTS",
    "ROOT",
    "Launched",
    "ProcessFailed",
    "all_cpu",
    "alternate",
    "cell",
    "children_cpu_s",
    "command_entry",
    "command_line",
    "cpu_model",
    "descendants",
    "header",
    "live_children_cpu_s",
    "load1",
    "load_averages",
    "machine",
    "machine_line",
    "measured",
    "merge_previous",
    "package_versions",
    "parse_marks",
    "peak_rss_mib",
    "phases",
    "process_cpu_s",
    "roles",
    "run_process",
    "summarize",
    "summary",
    "timed",
    "uptime",
    "versions",
    "wait_for_quiet",
    "write_results",
]
