"""Campaigns on Spark: the requested work split into shards, one campaign per task on the
executors, the records and reproducers handed back as rows and written by Spark's committer.

* :mod:`.shards`: what a shard is and how a run is split into them.
* :mod:`.task`: one shard on an executor: its broker (a throwaway one of its own, or a URL),
  the unchanged engine, its records and reproducers as rows.
* :mod:`.clients`: a client campaign's shards (a client library and a seed each) and their
  task: amqpfuzz playing a hostile broker to the client's shim on the executor.
* :mod:`.job`: the driver's side: the job, its progress, the output where the nightly report
  reads it.
"""

from .clients import ClientShard, plan_clients, run_client_shard
from .job import SparkRun, run_on_spark
from .shards import Shard, plan
from .task import run_shard

__all__ = [
    "ClientShard",
    "Shard",
    "SparkRun",
    "plan",
    "plan_clients",
    "run_client_shard",
    "run_on_spark",
    "run_shard",
]
