"""Host side of INA: the wire format (protocol), Scapy layers, workers and the parameter server."""
