"""Helpers for tests that drive real components: scripted agents, Prometheus, Alertmanager."""
