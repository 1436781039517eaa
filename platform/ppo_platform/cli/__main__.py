"""`python -m ppo_platform.cli ...`: the same as the `ppo-platform` script."""

from ppo_platform.cli.app import main

if __name__ == "__main__":
    main()
