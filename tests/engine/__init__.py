"""Tests of the hook engine: hooks as configuration (DESIGN §7)."""
