"""What p4sim knows about each architecture, in one module per architecture.

Constants and layouts that both the code generators (backend) and the runtime pipelines
need live here, below both, so neither has to import the other for them.
"""
