"""What do sweeps and tuning gain from more workers, and what do they pay: parallelism, a
sweep's time line, tuning trials per hour, Ray against local workers."""
