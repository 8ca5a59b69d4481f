"""The control-plane vocabulary shared by the controller (client side) and p4sim (server side).

What a control plane says to a P4 switch, independent of any switch implementation:

- :mod:`p4control.model`: a program's control-plane view (``ProgramInfo``: tables, actions,
  registers, ...) and what is written into it (``TableEntry``, ``ActionCall``, match values);
- :mod:`p4control.errors`: the refusals, one class per gRPC status code;
- :mod:`p4control.p4runtime`: P4Info files, the P4Info index and P4Runtime message conversions;
- :mod:`p4control.bfrt`: the BfRuntime bf-rt.json schema, field codec and protobuf bindings;
- :mod:`p4control.protobuf_env`: the protobuf backend every binding needs (imported first).

It imports nothing else of this project (a leaf: ``tests/test_import_graph.py`` checks), so the
controller deploys onto real switches without the simulator, and p4sim's servers speak the same
vocabulary.
"""
