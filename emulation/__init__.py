"""Mininet emulation: p4sim switches (``python -m p4sim serve``) under Mininet hosts.

net.py builds the network, install.py programs a plan over P4Runtime, agents.py runs the
worker/PS agents inside hosts; jobs.py runs deployed jobs' agents on a network, schemes.py plans,
deploys and runs a scheme, bounds.py counts a plan's link-rate ideal, report.py writes the
results; run.py is the command line over them (``python -m emulation.run``, ``make run-fattree``).
"""
