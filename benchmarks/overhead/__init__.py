"""What does the platform add to a plain stable-baselines3 script: whole processes, the fixed
cost, the training loop, a warm worker's member, the planner's probe."""
