"""The app's services: the job store, status snapshots, intake workers and the dispatcher.

They open in a thread after the server starts listening, so `/healthz` answers as soon as the
process is up (opening the store runs its Alembic migrations, and the intake workers import the
spec machinery: about a second together). A request that needs them waits until they are open;
`/readyz` says 503 until then.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass

from ppo_platform.api.present import experiment_json
from ppo_platform.errors import UnavailableError
from ppo_platform.jobs import Dispatcher, JobStore, ServiceSettings
from ppo_platform.jobs.intake_pool import IntakePool
from ppo_platform.jobs.snapshots import StatusSnapshots
from ppo_platform.settings import Settings

log = logging.getLogger("api")
WARM_UP_SECONDS = 120


@dataclass
class Services:
    store: JobStore
    dispatcher: Dispatcher
    snapshots: StatusSnapshots[bytes]
    intake: IntakePool

    def close(self) -> None:
        self.dispatcher.stop()
        self.intake.close()
        self.snapshots.close()
        self.store.close()


def open_services(settings: Settings, service: ServiceSettings) -> Services:
    """Open (and migrate) the store, start the intake workers and the dispatcher."""
    home = settings.ensure_home()
    intake = IntakePool(service.intake_workers, queue_limit=service.intake_queue)
    warming = intake.start()  # the workers import and warm up while the store migrates
    try:
        store = JobStore(service.database_url(settings), home)
    except BaseException:
        intake.close()
        raise
    intake.share_store(store)
    dispatcher = Dispatcher(
        store, service, home / "dispatcher.lock", torch_threads=settings.torch_threads
    )
    dispatcher.start()
    for future in warming:  # ready means a submission is answered without a cold start
        future.result(timeout=WARM_UP_SECONDS)
    return Services(store, dispatcher, StatusSnapshots(store, experiment_json), intake)


class ServiceOpener:
    """Opens the services in a thread; `wait()` hands them to requests once they are open."""

    def __init__(self, settings: Settings, service: ServiceSettings) -> None:
        self.settings, self.service = settings, service
        self.future: Future[Services] = Future()
        self._thread = threading.Thread(target=self._open, name="open-services", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _open(self) -> None:
        try:
            services = open_services(self.settings, self.service)
            # What exists now (modules, routes, models, the store's engine) lives as long as the
            # process: out of the collector's sight, a full collection scans only what requests
            # leave behind. Before, one took about 95 ms with the event loop stopped, the
            # slowest status reads at 50 clients (docs/design/job-service.md).
            gc.freeze()
            self.future.set_result(services)
        except BaseException as error:  # /readyz says 503, every other request too
            log.exception("the job service did not open")
            self.future.set_exception(error)

    def opened(self) -> Services | None:
        """The services if they are open (None while opening or if opening failed)."""
        if self.future.done() and self.future.exception() is None:
            return self.future.result()
        return None

    async def wait(self) -> Services:
        services = self.opened()
        if services is not None:
            return services
        try:
            return await asyncio.wrap_future(self.future)
        except UnavailableError:
            raise
        except Exception as error:
            raise UnavailableError(f"the job service did not start: {error}") from error

    def close(self) -> None:
        self._thread.join()
        services = self.opened()
        if services is not None:
            services.close()
