"""Interop with other task formats: export to Harbor and Terminal-Bench 1, a Hugging Face dataset of
task trees, and import of Harbor and Terminal-Bench 1 tasks written elsewhere."""
