"""tmax: a toolkit for training terminal agents with reinforcement learning."""

__version__ = "0.1.0"
