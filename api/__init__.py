"""api: the FastAPI REST service around ppo_platform (routes, auth, schemas).

Imports flow one way: api -> ppo_platform -> trainers.
"""
