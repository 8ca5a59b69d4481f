"""Mininet emulation: p4sim switches (``python -m p4sim serve``) under Mininet hosts.

net.py builds the network, install.py programs a plan over P4Runtime, agents.py runs the
worker/PS agents inside hosts, run.py is the fat-tree experiment (``make run-fattree``).
"""
