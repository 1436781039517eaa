"""How fast does the service answer: REST latency, start-up, the dashboard under load."""
