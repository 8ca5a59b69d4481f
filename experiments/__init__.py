"""Paper reproductions and simulators; each module is runnable with python -m experiments.<name>."""
