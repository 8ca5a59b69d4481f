"""p4sim backend."""
