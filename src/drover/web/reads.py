"""What each page shows, asked of the controller through the client as the dashboard's user.

Each function returns the page's live part as HTML; a refusal or an unreachable controller is
shown in its place, in the controller's own words, as the CLI would print it.
"""

from __future__ import annotations

import time

from drover.web import pages

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import Event, JobInfo

LIST_LIMIT = 500  # jobs or ended attempts a listing shows
HISTORY_DEFAULT_DAYS = 7.0


def cluster(api: Client) -> str:
    waiting = api.jobs(states=["pending", "held"], limit=LIST_LIMIT)
    return pages.cluster_live(api.nodes(), api.queues(), waiting)


def jobs(api: Client, filters: pages.Filters) -> str:
    listed = api.jobs(states=[filters.state] if filters.state else None, user=filters.user or None,
                      name=filters.name or None, include_ended=filters.include_ended, limit=LIST_LIMIT)
    return pages.jobs_live(listed, filters, time.time())


def history(api: Client, filters: pages.Filters) -> str:
    days = HISTORY_DEFAULT_DAYS if filters.since_days is None else filters.since_days
    since = time.time() - days * 86400
    chosen = {key: value for key, value in (("state", filters.state), ("name", filters.name),
                                            ("queue", filters.queue)) if value}
    rows = api.history(user=filters.user or None, limit=LIST_LIMIT, since=since, **chosen)
    summary = api.history_summary(by=filters.by, user=filters.user or None, since=since, **chosen)
    return pages.history_live(rows, summary, filters)


class JobView:
    """One job's page, kept between updates: its events are read once and then only the new
    ones, and the long poll on them is what paces the updates."""

    def __init__(self, job_id: int) -> None:
        self.job_id = job_id
        self.events: list[Event] = []
        self.job: JobInfo | None = None

    def render(self, api: Client) -> str:
        self.job = api.job(self.job_id)
        self.events += self._new_events(api, 0)
        samples = api.samples(self.job_id) if self.job.state in ("running", "suspended", "completing") else None
        return pages.job_live(self.job, self.events, samples, time.time())

    def wait(self, api: Client, seconds: int) -> None:
        """Return once the job has a new event, or after `seconds`."""
        self.events += self._new_events(api, seconds)

    def _new_events(self, api: Client, wait_s: int) -> list[Event]:
        after = self.events[-1].seq if self.events else 0
        found: list[Event] = []
        while True:
            page = api.events(self.job_id, after=after, wait_s=wait_s if not found else 0)
            found += page
            if len(page) < 1000:
                return found
            after = page[-1].seq
