"""Experiment drivers: ESA JCT simulation and InArt sending rates."""
