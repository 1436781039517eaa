"""Finding 6: no setting's password appears in a page or a response; the MLflow link carries
no credentials."""

from __future__ import annotations

import sqlite3

import httpx

from ppo_platform.api.dashboard.details import mlflow_link
from ppo_platform.settings import Settings, masked_url
from tests.api_tests.conftest import wait_for

PASSWORD = "s3cret-pw"


def test_masked_url_hides_every_password_shape() -> None:
    cases = {
        f"postgresql://mlflow:{PASSWORD}@db:5432/runs": "postgresql://mlflow:***@db:5432/runs",
        f"http://u:{PASSWORD}@h:5000": "http://u:***@h:5000",
        f"https://u:p@ss/{PASSWORD}@h/x": "https://u:***@h/x",  # '@' and '/' in the password
        "sqlite:////home/a@b/mlflow.db": "sqlite:////home/a@b/mlflow.db",
        "http://h:5000": "http://h:5000",
    }
    for url, shown in cases.items():
        assert masked_url(url) == shown


def test_the_mlflow_link_drops_user_and_password() -> None:
    settings = Settings(MLFLOW_TRACKING_URI=f"https://u:{PASSWORD}@mlflow.example:5000/")
    link = mlflow_link(settings, "a" * 32)
    assert link == f"https://mlflow.example:5000/#/runs/{'a' * 32}"


def test_no_page_or_response_shows_the_tracking_password(server_factory, tmp_path, keys) -> None:
    # A database tracking store (trusted to the first run by /readyz) with a password.
    uri = f"postgresql://mlflow:{PASSWORD}@127.0.0.1:9/runs"
    server = server_factory(tmp_path, MLFLOW_TRACKING_URI=uri)
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert http.post("/login", data={"api_key": keys["alice"]}).status_code == 303
            headers = {"Authorization": f"Bearer {keys['alice']}"}
            spec = (
                "name: m\nenv: CartPole-v1\nrollout: {n_steps: 64}\nbudget: {total_timesteps: 64}"
            )
            job = http.post(
                "/v1/experiments",
                content=spec,
                headers={**headers, "Content-Type": "application/yaml"},
            ).json()
            # The page names the store beside a run id, by kind only: no user, host or password
            # (planted: this store cannot run).
            with sqlite3.connect(server.home / "jobs.db") as database:
                database.execute(
                    "UPDATE experiments SET mlflow_run_id = ? WHERE id = ?", ("b" * 32, job["id"])
                )
            page = http.get(f"/experiments/{job['id']}")
            assert page.status_code == 200
            assert "tracking store, a PostgreSQL database" in page.text
            assert "127.0.0.1:9/runs" not in page.text
            for response in (
                page,
                http.get(f"/v1/experiments/{job['id']}", headers=headers),
                http.get("/readyz"),
                http.get("/v1/experiments", headers=headers),
            ):
                assert PASSWORD not in response.text, response.url
            # The run fails on the store it cannot reach: its error, events and page name the
            # store without the password.
            with server.client("alice") as api:
                failed = wait_for(api, job["id"])
            assert failed["status"] == "failed", failed
            for response in (
                http.get(f"/v1/experiments/{job['id']}", headers=headers),
                http.get(f"/v1/experiments/{job['id']}/events", headers=headers),
                http.get(f"/experiments/{job['id']}"),
                http.get("/"),
            ):
                assert response.status_code == 200 and PASSWORD not in response.text, response.url
    finally:
        server.kill()
