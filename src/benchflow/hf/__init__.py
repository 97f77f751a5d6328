"""Hugging Face: dataset task trees, trace datasets, hf:// views and publishing a job's artifacts.

Everything goes through the ``huggingface_hub`` library against the endpoint in
``HF_ENDPOINT`` (default ``https://huggingface.co``), with the token in
``HF_TOKEN`` only (:mod:`.client`); nothing here reads or writes a token file.
"""
