"""Campaigns on Spark: the requested work split into shards, one campaign per task on the
executors, the records and reproducers handed back as rows and written by Spark's committer.

* :mod:`.shards`: what a shard is and how a run is split into them.
* :mod:`.task`: one shard on an executor: its broker (a throwaway one of its own, or a URL),
  the unchanged engine, its records and reproducers as rows.
* :mod:`.job`: the driver's side: the job, its progress, the output where the nightly report
  reads it.
"""

from .job import SparkRun, run_on_spark
from .shards import Shard, plan
from .task import run_shard

__all__ = ["Shard", "SparkRun", "plan", "run_on_spark", "run_shard"]
