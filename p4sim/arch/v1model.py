"""The v1model architecture's constants (bmv2 simple_switch), shared by the generators and
the pipelines."""
from __future__ import annotations

# V1Switch's block parameters, in order.
ROLES = ["parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser"]

DROP_PORT = 511
# standard_metadata.instance_type values, as bmv2 sets them
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_PASSES = 64            # resubmit/recirculate loops beyond this are dropped
