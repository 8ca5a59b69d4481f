"""p4sim frontend."""
