"""host_progress.RunTrackers keeps a bounded number of a run's finished requests, whatever
the request rate (issue 30 item 4: one tracker per request was kept for a minute, so a fast
cycle of requests grew the list without bound), and always its requests in flight."""

from __future__ import annotations

from tb_profile_plugin.analysis.hosts import host_progress


def test_a_busy_minute_keeps_the_newest_finished_and_every_running_request() -> None:
    trackers = host_progress.RunTrackers()
    running = trackers.start("run")  # never finishes
    for _ in range(1000):
        trackers.start("run").finish()
    newest = trackers.start("run")
    kept = trackers._runs["run"]
    finished = [t for t in kept if t.finished_at is not None]
    assert len(finished) == host_progress.MAX_FINISHED_PER_RUN
    assert running in kept and newest in kept
    assert trackers.newest("run") is newest
