"""Regenerate the dashboard screenshots in this folder (a few minutes on 2 cores).

    PYTHONPATH=platform:. python docs/screenshots/take_screenshots.py

Starts a real `ppo-platform serve` on a fresh home, trains a short CartPole run that trips the
KL alert, a tiny sweep and a tiny study, then photographs every page in headless Chromium
(Debian's `chromium`, driven by Playwright) at 1280 px and the main two at 390 px.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KEY = "screenshot-key-0123456789"
GRID = (
    "env: {id: ppo_platform/GridWorld-v0, n_envs: 1}\nrollout: {n_steps: 64}\n"
    "update: {epochs: 2, minibatch_size: 64}\nbudget: {total_timesteps: 512}\n"
    "evaluation: {every_timesteps: 256, episodes: 2}\n"
)
SPECS = {
    "run": "name: cartpole-kl-alert\nenv: {id: CartPole-v1, n_envs: 4}\nrollout: {n_steps: 64}\n"
    "update: {epochs: 10, minibatch_size: 64}\nbudget: {total_timesteps: 30000}\n"
    "evaluation: {every_timesteps: 5000, episodes: 3}\n"
    "diagnostics: {kl_healthy_max: 0.004, kl_alert: 0.004}\n",
    "sweep": "name: epochs-sweep\n"
    + GRID
    + "sweep: {grid: {update.epochs: [1, 4]}, seeds: [0, 1]}\n",
    "tune": "name: epochs-study\n" + GRID + "tune:\n  n_trials: 4\n  seeds_per_trial: 1\n"
    "  sampler: {type: random, seed: 0}\n  space:\n"
    "    update.epochs: {type: int, low: 1, high: 8}\n"
    "    update.learning_rate.start: {type: float, low: 1.0e-4, high: 3.0e-3, log: true}\n",
}
K31 = (
    "name: too-many-epochs\nenv: {id: CartPole-v1, n_envs: 2}\nrollout: {n_steps: 64}\n"
    "update:\n  minibatch_size: 64\n  epochs: 31\nbudget: {total_timesteps: 2048}\n"
)


def serve(home: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)]),
        "PPO_PLATFORM_HOME": str(home),
        "PPO_PLATFORM_API_KEYS": json.dumps({"demo": KEY}),
        "PPO_PLATFORM_MAX_RUNNING": "2",
    }
    command = [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("the server did not start")


def run_jobs(url: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        ids = {
            kind: http.post("/v1/experiments", content=text).json()["id"]
            for kind, text in SPECS.items()
        }
        cancelled = http.post(
            "/v1/experiments", content=SPECS["run"].replace("kl-alert", "cancelled")
        )
        http.post(f"/v1/experiments/{cancelled.json()['id']}/cancel")
        for job_id in ids.values():
            while http.get(f"/v1/experiments/{job_id}").json()["status"] in ("queued", "running"):
                time.sleep(1)
    return ids


def shoot(page: Any, url: str, name: str, full: bool = True) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle") if "experiments/" not in url else time.sleep(2.5)
    page.screenshot(path=str(HERE / f"{name}.png"), full_page=full)
    print("wrote", name)


def main() -> None:
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="screenshots-"))
    process, url = serve(home)
    try:
        ids = run_jobs(url)
        with sync_playwright() as playwright:
            chromium = shutil.which("chromium") or "/usr/bin/chromium"
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            for width, suffix in ((1280, ""), (390, "-narrow")):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{url}/login")
                if not suffix:
                    page.screenshot(path=str(HERE / "login.png"))
                page.get_by_label("API key").fill(KEY)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(f"{url}/")
                shoot(page, f"{url}/", f"experiments{suffix}")
                shoot(page, f"{url}/experiments/{ids['run']}", f"experiment-run{suffix}")
                if suffix:
                    continue
                shoot(page, f"{url}/experiments/{ids['sweep']}", "experiment-sweep")
                shoot(page, f"{url}/experiments/{ids['tune']}", "experiment-study")
                page.goto(f"{url}/submit")
                page.get_by_label("Spec (YAML)").fill(K31)
                page.wait_for_selector("#notes li.bad")
                page.screenshot(path=str(HERE / "submit-refusal.png"), full_page=True)
                page.goto(f"{url}/plan")
                page.get_by_label("Env id").fill("CartPole-v1")
                page.get_by_label("Budget (env steps)").fill("100000")
                page.get_by_role("button", name="Plan").click()
                page.wait_for_selector("#plan-spec")
                page.screenshot(path=str(HERE / "plan.png"), full_page=True)
            browser.close()
    finally:
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    main()
