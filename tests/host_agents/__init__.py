"""Tests of the host agents (hostlib.worker, hostlib.ps, hostlib.drivers)."""
