"""Shared test helpers live beside this file (``netns``, ``mininet_guard``): pytest puts the
directory of a rootdir conftest on ``sys.path``, so test modules in subdirectories import them
by name too."""
