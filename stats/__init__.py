"""stats package."""
