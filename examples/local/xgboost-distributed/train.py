#!/usr/bin/env python3
"""Distributed XGBoost on the xgboost-distributed runtime (xgboost >= 2.1).

The runtime gives each node DMLC_TRACKER_URI and DMLC_TRACKER_PORT (node 0's address and
a port), DMLC_NUM_WORKER and DMLC_TASK_ID, and starts no tracker: worker 0 starts it, in a
thread of its own process, on that address and port, before joining it like every other
worker. Each worker trains on its shard; the histograms are all-reduced through the tracker's
ring, so every worker ends with the same model.
"""
import os
import random

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

uri, port = os.environ["DMLC_TRACKER_URI"], int(os.environ["DMLC_TRACKER_PORT"])
workers, rank = int(os.environ["DMLC_NUM_WORKER"]), int(os.environ["DMLC_TASK_ID"])
tracker = None
if rank == 0:
    tracker = RabitTracker(host_ip=uri, n_workers=workers, port=port, sortby="task")
    tracker.start()

rng = random.Random(rank)
x = np.array([[rng.random() for _ in range(4)] for _ in range(256)])
y = x @ np.array([1.0, -2.0, 3.0, 0.5])
args = {"dmlc_tracker_uri": uri, "dmlc_tracker_port": port, "dmlc_task_id": str(rank)}
with collective.CommunicatorContext(**args):
    booster = xgb.train({"max_depth": 3}, xgb.DMatrix(x, label=y), num_boost_round=10)
    print(f"worker {collective.get_rank()} of {collective.get_world_size()}: "
          f"{len(booster.get_dump())} trees")
if tracker:
    tracker.wait_for()
