"""A scripted coding agent that exercises every lifecycle point, no model needed."""

from hookscope.demo.agent import DemoAgent, DemoResult, demo_policies

__all__ = ["DemoAgent", "DemoResult", "demo_policies"]
