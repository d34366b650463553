"""Imports every built-in environment module so that each registers itself."""
