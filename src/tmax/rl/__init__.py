"""Outcome-only RL: losses, advantages, the FP32 head, token-in-token-out rollouts, the trainer.
torch and transformers are needed (the ``ml`` extra)."""
