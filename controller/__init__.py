"""Control plane: placement/routing algorithms (pure) and the installers that push plans to switches."""
