"""Data-parallel training over INA: an all-reduce, a DDP communication hook and an example.

* :mod:`training.allreduce` — :class:`~training.allreduce.InaAllReduce`, one worker's
  all-reduce of flat float32 vectors through the INA network (hostlib's Worker over UDP),
  with a per-call fixed-point scale that cannot overflow int32 for the job's worker count;
  :func:`~training.allreduce.serve_ps` runs the job's parameter server.
* :mod:`training.ddp_hook` — a ``DistributedDataParallel`` communication hook on top of it.
* :mod:`training.train_digits` — an MLP or a CNN (``--model``) on scikit-learn's digits, ``--allreduce ina|gloo``.
* :mod:`training.local` — PS and workers on loopback addresses (no switch): quick checks.

``emulation.train`` runs the same example in Mininet hosts through p4sim switches.
"""
