"""The verifier in a sandbox of its own (``verifier.sandbox_mode = "separate"``, ``--verifier-sandbox
separate``): a fresh sandbox that receives only the frozen workspace and the declared artifacts (:mod:`.phase`).
A run feature (:mod:`.feature`, ``jobs.extensions``).
"""
