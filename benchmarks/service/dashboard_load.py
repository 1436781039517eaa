"""The dashboard under load: the experiments page with 500 experiments, and how fast the
experiment page answers a click while a training run streams its events into it.

    python -m benchmarks.service.dashboard_load [--experiments 500 --rounds 15]

Whole processes: a real `ppo-platform serve` on loopback over a fresh home whose job store is
seeded with finished experiments (written through JobStore, as the service would), and
Debian's headless Chromium driven by Playwright. Page load = navigation start -> load event
(performance.getEntriesByType("navigation")), also the server's HTML alone over httpx. Click
latency = the click event's timestamp -> the first animation frame after its handler ran (the
`<details>` toggle of the resolved spec), during streaming and after the run stopped; long tasks
(> 50 ms on the page's main thread) are counted over the streaming window. Writes
benchmarks/results/dashboard_load.{md,json} with the load average beside every number.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.harness import (
    ROOT,
    command_line,
    load1,
    machine,
    machine_line,
    measured,
    write_results,
)
from benchmarks.harness import (
    versions as package_versions,
)
from benchmarks.harness.services import API_KEY as KEY
from benchmarks.harness.services import api_server

SEED_SPEC = (
    "name: seeded-{n}\nenv: {{id: CartPole-v1, n_envs: 1}}\nrollout: {{n_steps: 64}}\n"
    "update: {{epochs: 2, minibatch_size: 64}}\nbudget: {{total_timesteps: 1024}}\n"
)
STREAM_SPEC = (
    "name: streaming\nenv: {id: CartPole-v1, n_envs: 8}\nrollout: {n_steps: 32}\n"
    "update: {epochs: 20, minibatch_size: 256}\nbudget: {total_timesteps: 400000}\n"
    "evaluation: {every_timesteps: 20000, episodes: 5}\n"
)
CLICK_PROBE = """() => {
  window.__lat = []; window.__long = 0; window.__longMs = 0;
  new PerformanceObserver((list) => list.getEntries().forEach((e) => {
    window.__long += 1; window.__longMs += e.duration; })).observe({type: "longtask"});
  document.querySelector("details summary").addEventListener("click", (e) => {
    const t0 = e.timeStamp;
    requestAnimationFrame(() => window.__lat.push(performance.now() - t0));
  });
}"""


def seed_history(store: Any, events: int) -> str:
    """A finished run with `events` progress events: its page replays them all at once."""
    from ppo_platform.jobs import prepare_submission

    row, _ = store.submit(
        "bench", prepare_submission(SEED_SPEC.format(n="history"), 10**9), None, 10**6
    )
    store.mark_running(row.id)
    total = 1000 * events
    for n in range(events):
        data = {
            "timesteps": 1000 * n,
            "total_timesteps": total,
            "fps": 900.0,
            "ep_rew_mean": 20.0 + n % 480,
            "approx_kl": 0.01 + 0.001 * (n % 7),
            "clip_fraction": 0.1 + 0.01 * (n % 9),
            "explained_variance": 0.5,
            "kl_beta": None,
        }
        store.append_event(row.id, "progress", data)
    store.finish(row.id, "succeeded", result={"final_eval_mean": 500.0, "final_eval_std": 0.0})
    return str(row.id)


def seed(home: Path, count: int, events: int) -> str:
    """`count` finished experiments for the benchmark key, oldest first, and one run with a
    history of `events` progress events (its id)."""
    os.environ["PPO_PLATFORM_HOME"] = str(home)
    from ppo_platform.jobs import JobStore, get_service_settings, prepare_submission
    from ppo_platform.settings import get_settings

    settings, service = get_settings(), get_service_settings()
    store = JobStore(service.database_url(settings), settings.ensure_home())
    for n in range(count):
        row, _ = store.submit(
            "bench", prepare_submission(SEED_SPEC.format(n=n), 10**9), None, 10**6
        )
        store.mark_running(row.id)
        status = {8: "failed", 9: "cancelled"}.get(n % 10, "succeeded")
        result = {"final_eval_mean": 100.0 + n % 400, "final_eval_std": 3.0}
        store.finish(row.id, status, result=result, error="boom" if status == "failed" else None)
    history = seed_history(store, events)
    store.close()
    return history


def stats(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
        "n": len(values),
    }


def measure_list_page(page: Any, url: str, cookie: str, rounds: int) -> dict[str, Any]:
    browser_ms, response_ms, server_ms, loads = [], [], [], []
    with httpx.Client(base_url=url, cookies={"ppo_session": cookie}, timeout=30) as http:
        for _ in range(rounds):
            loads.append(load1())
            page.goto(url + "/")
            timing = page.evaluate("() => performance.getEntriesByType('navigation')[0].toJSON()")
            browser_ms.append(timing["loadEventEnd"] - timing["startTime"])
            response_ms.append(timing["responseEnd"] - timing["startTime"])
            html, took = measured(lambda: http.get("/").text)
            server_ms.append(took["wall_s"] * 1000)
    rows = page.locator("table.experiments tbody tr").count()
    return {
        "rows": rows,
        "html_bytes": len(html),
        "browser_load_ms": stats(browser_ms),
        "browser_response_end_ms": stats(response_ms),
        "server_html_ms": stats(server_ms),
        "load_1min": stats(loads),
    }


def click_latency(page: Any, clicks: int, probed: bool = False) -> dict[str, Any]:
    if not probed:
        page.evaluate(CLICK_PROBE)
    load = load1()
    summary = page.locator("details summary")
    for _ in range(clicks):
        summary.click()
        time.sleep(0.25)
    values = page.evaluate("() => window.__lat")
    long_tasks = page.evaluate("() => [window.__long, window.__longMs]")
    points = page.evaluate("() => Number(document.getElementById('chart-kl').dataset.points || 0)")
    return {
        "click_to_frame_ms": stats(values),
        "long_tasks": long_tasks[0],
        "long_task_ms": round(long_tasks[1], 1),
        "kl_points_at_end": points,
        "load_1min": round(load, 2),
    }


def replay_page(page: Any, url: str, history: str, events: int, clicks: int) -> dict[str, Any]:
    """Click latency while the page receives a long history at once (SSE replays every event)."""
    page.goto(f"{url}/experiments/{history}", wait_until="commit")
    page.wait_for_selector("details summary", state="attached")
    page.evaluate(CLICK_PROBE)

    def clicked_until_drawn() -> dict[str, Any]:
        clicked = click_latency(page, clicks, probed=True)
        page.wait_for_function(
            f"() => Number(document.getElementById('chart-kl').dataset.points || 0) >= {events}",
            timeout=300_000,
        )
        return clicked

    result, took = measured(clicked_until_drawn)
    result["all_points_s"] = round(took["wall_s"], 2)
    result["events"] = events
    return result


def streaming_page(page: Any, url: str, clicks: int) -> dict[str, Any]:
    """Click latency on a run's page while it streams, then on the same page once cancelled."""
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        job = http.post("/v1/experiments", content=STREAM_SPEC).json()
        page.goto(f"{url}/experiments/{job['id']}")
        page.wait_for_function(
            "() => Number(document.getElementById('chart-kl').dataset.points || 0) >= 3",
            timeout=300_000,
        )
        streaming = click_latency(page, clicks)
        http.post(f"/v1/experiments/{job['id']}/cancel")
        page.wait_for_function(
            "() => document.getElementById('status').textContent.trim() === 'cancelled'",
            timeout=120_000,
        )
        time.sleep(1.0)  # the page reloads once to show the final state
        page.wait_for_load_state()
        page.wait_for_selector("details summary")
        idle = click_latency(page, clicks)
    return {"streaming": streaming, "after_cancel": idle}


def versions(browser: Any) -> dict[str, str]:
    return {
        "chromium": browser.version,
        **package_versions("playwright", "fastapi", "jinja2", "sqlalchemy"),
    }


def markdown(report: dict[str, Any]) -> str:
    lp, st = report["list_page"], report["experiment_page"]

    def cell(s: dict[str, float]) -> str:
        return f"{s['median']} ({s['min']}-{s['max']}, n={s['n']})"

    lines = [
        "# Dashboard load",
        "",
        machine_line(report["machine"]),
        f"Versions: {json.dumps(report['versions'])}",
        f"Command: `{report['command']}`",
        "",
        f"## Experiments page, {lp['rows']} experiments ({lp['html_bytes']:,} bytes of HTML)",
        "",
        "| measure | median ms (min-max) | load avg 1 min, median (min-max) |",
        "|---|---|---|",
        f"| Chromium: navigation start -> load event | {cell(lp['browser_load_ms'])} | "
        f"{cell(lp['load_1min'])} |",
        f"| Chromium: navigation start -> last byte of the HTML | "
        f"{cell(lp['browser_response_end_ms'])} | same rounds |",
        f"| server HTML alone (httpx, cookie) | {cell(lp['server_html_ms'])} | same rounds |",
        "",
        "## Experiment page while a CartPole run streams events (SSE)",
        "",
        "| phase | click -> next frame, median ms (min-max) | long tasks (total ms) | "
        "KL points | load avg |",
        "|---|---|---|---|---|",
    ]
    for phase in ("streaming", "after_cancel", "replay"):
        p = st[phase]
        lines.append(
            f"| {phase} | {cell(p['click_to_frame_ms'])} | {p['long_tasks']} "
            f"({p['long_task_ms']}) | {p['kl_points_at_end']} | {p['load_1min']} |"
        )
    replay = st["replay"]
    lines += [
        "",
        f"replay: the page of a finished run with {replay['events']:,} progress events, clicked "
        f"while the stream delivers them; all points drawn after {replay['all_points_s']} s.",
        "",
        report["note"],
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--history", type=int, default=5000, help="Events of the replayed run.")
    parser.add_argument("--no-streaming", action="store_true", help="Only the list page.")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="dashboard-bench-"))
    history = seed(home, args.experiments, args.history)
    process, url, _healthz, _readyz = api_server(home, ROOT)
    try:
        cookie = httpx.post(f"{url}/login", data={"api_key": KEY}).cookies["ppo_session"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=args.chromium, args=["--no-sandbox"]
            )
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": "ppo_session", "value": cookie, "url": url}])
            page = context.new_page()
            report = {
                "machine": machine(),
                "versions": versions(browser),
                "command": command_line("benchmarks.service.dashboard_load"),
                "list_page": measure_list_page(page, url, cookie, args.rounds),
                "experiment_page": None
                if args.no_streaming
                else {
                    **streaming_page(page, url, args.clicks),
                    "replay": replay_page(page, url, history, args.history, args.clicks),
                },
                "note": "The machine is shared (2 cores, other engineers' jobs): see the load "
                "column. Progress events are written at most once a second per run.",
            }
            browser.close()
    finally:
        process.terminate()
        process.wait(30)
    if report["experiment_page"] is not None:
        write_results(report, "dashboard_load", markdown, echo=False)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
