"""p4sim runtime."""
